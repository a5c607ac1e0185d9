"""The additive piecewise-linear benchmark (Mamalakis, Ebert-Uphoff & Barnes 2022): generator, oracle,
metric, check and the trained-MLP case."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pytest_xai import NotApplicable, cases
from pytest_xai.cache import Cache
from pytest_xai.cases import additive

torch = pytest.importorskip("torch")
pytest.importorskip("captum")
from pytest_xai.explainers import captum as explainers


def direct_local_function(x, breaks, slopes):
    """C_i by integrating outward from 0 piece by piece (Mamalakis et al. 2022's construction)."""
    zero = int(np.flatnonzero(breaks == 0)[0])
    knots = np.zeros(len(breaks))
    for k in range(zero + 1, len(breaks)):
        knots[k] = knots[k - 1] + slopes[k] * (breaks[k] - breaks[k - 1])
    for k in range(zero - 1, -1, -1):
        knots[k] = knots[k + 1] - slopes[k + 1] * (breaks[k + 1] - breaks[k])
    inside = np.interp(x, breaks, knots)
    left = knots[0] + slopes[0] * (x - breaks[0])
    right = knots[-1] + slopes[-1] * (x - breaks[-1])
    return np.where(x < breaks[0], left, np.where(x > breaks[-1], right, inside))


def first_rows(case, n):
    """The case restricted to its first ``n`` explained samples (keeps tests fast)."""
    truth = {k: v[:n] for k, v in case.truth.items()}
    return dataclasses.replace(case, inputs=case.inputs[:n], truth=truth)


@pytest.fixture(scope="module")
def oracle():
    return additive.build_oracle_case(cases.info("additive_oracle"), seed=0)


# ---------------------------------------------------------------------------------- generator


def test_generation_is_deterministic_and_shaped_as_the_paper():
    a = additive.generate(seed=3, n_samples=500, d=458)
    b = additive.generate(seed=3, n_samples=500, d=458)
    for key in a:
        assert a[key].tobytes() == b[key].tobytes(), key
    assert a["X"].shape == (500, 458) and a["breaks"].shape == (458, 5) and a["slopes"].shape == (458, 6)
    assert not np.array_equal(a["X"], additive.generate(seed=4, n_samples=500, d=458)["X"])


def test_every_pixel_has_zero_among_k_distinct_sorted_break_points():
    breaks = additive.generate(seed=0, n_samples=300, d=100, n_breaks=7)["breaks"]
    assert breaks.shape == (100, 7)
    assert np.all((breaks == 0).sum(axis=1) == 1)
    assert np.all(np.diff(breaks, axis=1) > 0)


def test_contributions_are_the_local_functions_divided_by_d_and_sum_to_y():
    data = additive.generate(seed=1, n_samples=400, d=40)
    assert np.array_equal(data["y"], data["contribution"].sum(axis=1))
    for i in range(40):
        expected = direct_local_function(data["X"][:, i], data["breaks"][i], data["slopes"][i]) / 40
        np.testing.assert_allclose(data["contribution"][:, i], expected, atol=1e-12)
    at_zero = additive.local_functions(np.zeros((1, 40)), data["breaks"], data["slopes"])
    assert np.array_equal(at_zero, np.zeros((1, 40)))


def test_break_points_are_quantiles_of_each_pixels_samples():
    data = additive.generate(seed=2, n_samples=2000, d=30)
    nonzero = data["breaks"][data["breaks"] != 0].reshape(30, 4)
    lo, hi = data["X"].min(axis=0)[:, None], data["X"].max(axis=0)[:, None]
    assert np.all((nonzero > lo) & (nonzero < hi))


def test_k_zero_is_a_single_linear_piece():
    data = additive.generate(seed=0, n_samples=200, d=10, n_breaks=0)
    slope = data["slopes"][:, 0]
    np.testing.assert_allclose(data["contribution"], data["X"] * slope / 10, atol=1e-12)


def test_covariance_has_unit_diagonal_decays_with_distance_and_is_identity_at_zero_length():
    cells = additive.grid_cells(648)
    sigma = additive.exponential_covariance(cells, 20.0)
    assert np.all(np.diag(sigma) == 1.0) and np.all(sigma > 0)
    np.linalg.cholesky(sigma + 1e-10 * np.eye(648))
    # vertical neighbours (same longitude, latitudes 10 degrees apart) are 10 degrees of arc apart
    assert sigma[9 * 36, 10 * 36] == pytest.approx(np.exp(-10 / 20), rel=1e-9)
    assert sigma[0, 17 * 36] == pytest.approx(np.exp(-170 / 20), rel=1e-9)
    assert np.array_equal(additive.exponential_covariance(cells[:5], 0.0), np.eye(5))


def test_inputs_are_standardised_and_spatially_correlated():
    X = additive.generate(seed=0, n_samples=20_000, d=60)["X"]
    np.testing.assert_allclose(X.std(axis=0), 1.0, atol=0.03)
    independent = additive.generate(seed=0, n_samples=20_000, d=60, length_scale=0.0)["X"]
    off = ~np.eye(60, dtype=bool)
    assert np.abs(np.corrcoef(independent.T)[off]).max() < 0.05
    correlation = np.corrcoef(X.T)[off]
    assert correlation.mean() > 0.05 and correlation.max() > 0.9


def test_grid_subset_is_seeded_and_d_is_validated():
    assert np.array_equal(additive.grid_cells(458, seed=0), additive.grid_cells(458, seed=0))
    assert len(np.unique(additive.grid_cells(458))) == 458
    assert np.array_equal(additive.grid_cells(648), np.arange(648))
    with pytest.raises(ValueError, match="d must be between 1 and 648"):
        additive.grid_cells(700)


def test_adjacent_to_zero_marks_the_pieces_touching_zero():
    breaks = np.array([[-1.0, 0.0, 2.0], [0.0, 1.0, 3.0]])
    x = np.array([[-0.5, 0.5], [-1.5, 2.5], [1.0, -7.0]])
    expected = np.array([[True, True], [False, False], [True, True]])
    assert np.array_equal(additive.adjacent_to_zero(x, breaks), expected)


# ---------------------------------------------------------------------------------- oracle


def test_oracle_case_contents(oracle):
    assert oracle.inputs.shape == (20, 458) and oracle.background.shape == (100, 458)
    assert np.array_equal(oracle.baseline, np.zeros(458)) and oracle.target is None
    np.testing.assert_allclose(oracle.truth["contribution"].sum(1), oracle.predict(oracle.inputs), atol=1e-14)
    centre = additive.local_functions(oracle.background, oracle.meta["breaks"], oracle.meta["slopes"]).mean(0) / 458
    np.testing.assert_allclose(oracle.truth["contribution_centred"], oracle.truth["contribution"] - centre)
    assert oracle.truth["adjacent_to_zero"].dtype == bool and 0 < oracle.truth["adjacent_to_zero"].mean() < 1
    assert oracle.info.family == "additive" and oracle.info.category == "fidelity"


def test_oracle_torch_twin_computes_f(oracle):
    with torch.no_grad():
        out = oracle.model(torch.as_tensor(oracle.inputs, dtype=torch.float32)).numpy()
    assert out.shape == (20, 1)
    np.testing.assert_allclose(out[:, 0], oracle.predict(oracle.inputs), atol=1e-6)


def test_oracle_arrays_come_back_identical_from_the_cache(tmp_path):
    info = cases.info("additive_oracle")
    first = additive.build_oracle_case(info, seed=0, cache=Cache(tmp_path))
    assert len(list(tmp_path.glob("additive_oracle-*.npz"))) == 1
    second = additive.build_oracle_case(info, seed=0, cache=Cache(tmp_path))
    assert first.inputs.tobytes() == second.inputs.tobytes()
    assert first.truth["contribution"].tobytes() == second.truth["contribution"].tobytes()


def test_integrated_gradients_and_occlusion_are_exact_on_the_oracle(oracle):
    case = first_rows(oracle, 20)
    truth = case.truth["contribution"]
    ig = explainers.integrated_gradients(case.inputs, case.model, baseline=case.baseline, n_steps=256)
    occ = explainers.occlusion(case.inputs, case.model, baseline=case.baseline, perturbations_per_eval=64)
    r_ig = additive.per_sample_correlation(ig, truth).values
    r_occ = additive.per_sample_correlation(occ, truth).values
    assert r_ig.min() >= 0.999 and r_occ.min() >= 1 - 1e-5
    y = case.predict(case.inputs)  # completeness: sum IG = F(x) - F(0) = y; sum Occlusion-1 = y for additive F
    np.testing.assert_allclose(ig.sum(1), y, atol=2e-3 * np.abs(y).max())
    np.testing.assert_allclose(occ.sum(1), y, atol=1e-5)


def test_deeplift_is_exact_on_the_oracle(oracle):
    case = first_rows(oracle, 20)
    out = explainers.deeplift(case.inputs, case.model, baseline=case.baseline)
    np.testing.assert_allclose(out, case.truth["contribution"], atol=1e-6)


def test_input_x_gradient_is_exact_only_on_pieces_adjacent_to_zero(oracle):
    out = explainers.input_x_gradient(oracle.inputs, oracle.model)
    error = np.abs(out - oracle.truth["contribution"])
    mask = oracle.truth["adjacent_to_zero"]
    assert error[mask].max() < 1e-6
    assert np.median(error[~mask]) > 100 * error[mask].max()
    # LRP-z = Input x Gradient on ReLU networks, up to the float32 epsilon guard near break points
    np.testing.assert_allclose(explainers.lrp_z(oracle.inputs, oracle.model), out, atol=1e-5)


def test_gradient_is_uncorrelated_with_the_contributions_on_the_oracle(oracle):
    result = additive.per_sample_correlation(
        explainers.saliency(oracle.inputs, oracle.model), oracle.truth["contribution"]
    )
    assert abs(result.mean) < 0.2 and result.n_undefined == 0


# ---------------------------------------------------------------------------------- metric and check


def test_pearson_and_spearman_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    a = np.round(rng.normal(size=(6, 30)), 1)  # ties
    b = a + rng.normal(size=(6, 30))
    r = additive.per_sample_correlation(a, b).values
    rho = additive.per_sample_correlation(a, b, method="spearman").values
    for i in range(6):
        assert r[i] == pytest.approx(stats.pearsonr(a[i], b[i])[0], abs=1e-12)
        assert rho[i] == pytest.approx(stats.spearmanr(a[i], b[i])[0], abs=1e-12)


def test_constant_rows_are_nan_with_a_counted_reason():
    a = np.array([[1.0, 2, 3], [5, 5, 5], [1, 2, 3]])
    b = np.array([[1.0, 2, 4], [1, 2, 3], [7, 7, 7]])
    result = additive.per_sample_correlation(a, b)
    assert result.values[0] > 0.9 and np.isnan(result.values[1:]).all()
    assert result.reasons == {
        1: "heatmap is constant: correlation undefined",
        2: "ground truth is constant: correlation undefined",
    }


def test_check_passes_integrated_gradients_and_fails_gradient_and_random(oracle):
    case = first_rows(oracle, 16)
    good = additive.additive_correlation(
        explainers.integrated_gradients(case.inputs, case.model, baseline=case.baseline, n_steps=256), case
    )
    gradient = additive.additive_correlation(explainers.saliency(case.inputs, case.model), case)
    random = additive.additive_correlation(np.random.default_rng(0).normal(size=case.inputs.shape), case)
    assert good.passed and good.value > 0.999 and "over 16 samples" in good.detail
    assert not gradient.passed and not random.passed
    assert gradient.value < 0.1 and random.value < 0.1
    assert random.threshold == 0.5 and random.worst["row"] in range(16) and len(random.worst["pixels"]) == 5
    from pytest_xai.checks import CHECKS

    assert CHECKS["additive_correlation"].marker == "xai_additive"


@pytest.mark.filterwarnings("error::RuntimeWarning")  # an all-zero heatmap is scored without numpy warnings
def test_check_reports_undefined_samples_and_fails_when_none_is_defined(oracle):
    case = first_rows(oracle, 4)
    heat = case.truth["contribution"].copy()
    heat[1] = 1.0
    score = additive.additive_correlation(heat, case)
    assert score.passed and "3 samples" in score.detail and "1 x heatmap is constant" in score.detail
    heat[1] = 0.0  # XB-12: an all-zero heatmap agrees with nothing (r = 0), it is not left out
    score = additive.additive_correlation(heat, case)
    assert "4 samples" in score.detail and score.value == pytest.approx(0.75)
    empty = additive.additive_correlation(np.zeros(case.inputs.shape), case)
    assert not empty.passed and empty.value == 0.0
    constant = additive.additive_correlation(np.ones(case.inputs.shape), case)
    assert not constant.passed and "no sample has a defined correlation" in constant.detail


def test_lrp_alpha_beta_truths_flip_the_sign_of_negative_predictions(oracle):
    case = first_rows(oracle, 40)
    negative = case.predict(case.inputs) < 0
    assert negative.any() and (~negative).any()
    rows, sign = additive.ground_truth(case, "contribution_absolute")
    assert np.array_equal(rows, np.abs(case.truth["contribution"])) and np.array_equal(sign < 0, negative)
    rows, _ = additive.ground_truth(case, "contribution_positive")
    assert rows.min() == 0.0
    # a heatmap carrying the prediction's sign times |Cnt| is perfect for the |Cnt| variant
    heat = np.where(negative[:, None], -1.0, 1.0) * np.abs(case.truth["contribution"])
    assert additive.additive_correlation(heat, case, truth="contribution_absolute").value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="truth must be one of"):
        additive.ground_truth(case, "shapley")


def test_centred_truth_is_what_background_shapley_values_estimate(oracle):
    """Interventional Shapley values of additive F against the background: C_i(x_i) - mean C_i."""
    case = first_rows(oracle, 10)
    d = case.inputs.shape[1]
    b = additive.local_functions(case.background, case.meta["breaks"], case.meta["slopes"]) / d
    shapley = case.truth["contribution"] - b.mean(0)
    assert additive.additive_correlation(shapley, case, truth="contribution_centred").value == pytest.approx(1.0)


# ---------------------------------------------------------------------------------- trained MLP


def test_paper_network_has_410112_parameters_at_d_458():
    model = additive.paper_mlp(458)
    assert sum(p.numel() for p in model.parameters()) == 410_112
    assert model[-1].bias is None and float(model[0].bias.abs().max()) == 0.0
    assert float(model[0].weight.std()) == pytest.approx(1 / 458, rel=0.05)


@pytest.mark.parametrize("recipe", ["cpu", "paper"])
def test_an_undertrained_network_is_below_the_quality_gate(recipe):
    info = cases.info("additive_mlp")
    with pytest.raises(NotApplicable, match=r"model below quality gate \(R\^2=-?\d\.\d+ < 0\.99\)"):
        additive.build_mlp_case(info, n_samples=1000, d=8, epochs=1, recipe=recipe)


@pytest.fixture(scope="module")
def mlp(request, tmp_path_factory):
    cache = getattr(request.config, "cache", None)
    root = cache.mkdir("pytest-xai-additive") if cache is not None else tmp_path_factory.mktemp("cache")
    return additive.build_mlp_case(cases.info("additive_mlp"), seed=0, cache=Cache(root))


@pytest.mark.slow
def test_trained_mlp_passes_the_quality_gate(mlp):
    assert mlp.meta["test_r2"] >= 0.99
    assert mlp.inputs.shape == (20, 32)


@pytest.mark.slow
def test_attribution_methods_beat_gradients_on_the_trained_mlp(mlp):
    """The paper's ordering: {IG, Occlusion-1, Input x Gradient, LRP-z} >> {Gradient, SmoothGrad}."""
    x, m, b = mlp.inputs, mlp.model, mlp.baseline
    heatmaps = {
        "integrated_gradients": explainers.integrated_gradients(x, m, baseline=b, n_steps=256),
        "occlusion": explainers.occlusion(x, m, baseline=b),
        "input_x_gradient": explainers.input_x_gradient(x, m),
        "lrp_z": explainers.lrp_z(x, m),
        "saliency": explainers.saliency(x, m),
        "smoothgrad": explainers.smoothgrad(x, m, seed=0),
    }
    scores = {k: additive.additive_correlation(v, mlp) for k, v in heatmaps.items()}
    good = ["integrated_gradients", "occlusion", "input_x_gradient", "lrp_z"]
    worst_good = min(scores[k].value for k in good)
    best_bad = max(scores[k].value for k in ("saliency", "smoothgrad"))
    assert all(scores[k].passed for k in good) and not scores["saliency"].passed and not scores["smoothgrad"].passed
    assert worst_good > best_bad + 0.4
    np.testing.assert_allclose(
        heatmaps["lrp_z"], heatmaps["input_x_gradient"], atol=1e-5 * np.abs(heatmaps["input_x_gradient"]).max()
    )
