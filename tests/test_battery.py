"""The Compare-xAI battery (Belaid et al. 2022, tests 2.4-2.6, 2.8 and 2.10-2.12):
each case builds offline and deterministically, and each new check passes a reference explainer and
fails broken ones."""

from dataclasses import replace
from itertools import combinations

import numpy as np
import pytest

from pytest_xai import NotApplicable, cases, checks
from pytest_xai.cache import Cache
from pytest_xai.cases import digits, interactions, stress
from pytest_xai.engine import contract
from pytest_xai.explainers import baselines

from . import hostile

X0_PLUS_X1 = ["x0_plus_x1_non_uniform_stat_dep", "x0_plus_x1_uniform_stat_dep", "x0_plus_x1_non_uniform_stat_indep"]


def score(check, attributions, case, **overrides):
    info = checks.CHECKS[check]
    return info.func(attributions, case, **{**info.thresholds, **case.info.checks[check], **overrides})


def explain(func, case, seed=3):
    return contract.run(contract.load(f"{func.__module__}:{func.__name__}"), case, seed=seed)


def kernel_shap(inputs, predict, background, target, seed):
    from pytest_xai.explainers.shap import shap_kernel

    return shap_kernel(inputs, predict, background, target, seed)


def observational_shapley(inputs, predict, background):
    """Exact observational (conditional) Shapley values on a discrete background:
    v_x(S) = mean of f over the background rows that agree with x on S."""
    n, d = inputs.shape
    y = predict(background)
    out = np.zeros((n, d))
    for r, x in enumerate(inputs):

        def v(S, x=x):  # x bound now: v is called only in this iteration
            match = np.all(background[:, list(S)] == x[list(S)], axis=1)
            return y[match].mean()

        for i in range(d):
            rest = [j for j in range(d) if j != i]
            for size in range(d):
                weight = 1.0 / (d * len(list(combinations(rest, size))))
                out[r, i] += sum(weight * (v(S + (i,)) - v(S)) for S in combinations(rest, size))
    return out


# ------------------------------------------------------------------------- x0 + x1 (2.4-2.6)


@pytest.mark.parametrize("name", X0_PLUS_X1)
def test_x0_plus_x1_model_and_background_are_exact(name):
    case = cases.get(name)
    np.testing.assert_allclose(case.predict(case.inputs), case.inputs.sum(axis=1), atol=1e-6)
    full = case.meta["full_background"]
    assert case.background.mean(axis=0) == pytest.approx(full.mean(axis=0), abs=1e-12)  # gcd summary is exact
    np.testing.assert_allclose(case.truth["shapley"], case.inputs - full.mean(axis=0), atol=1e-6)


@pytest.mark.parametrize("name", X0_PLUS_X1)
@pytest.mark.parametrize("check", ["symmetry", "symmetric_effect"])
def test_x0_plus_x1_checks_pass_interventional_shapley_and_fail_noise(name, check):
    case = cases.get(name)
    for good in (baselines.exact_shapley, kernel_shap):
        result = score(check, explain(good, case), case)
        assert result.passed and result.value == pytest.approx(1.0, abs=1e-6), result.detail
    for bad in (baselines.random, hostile.zeros):
        result = score(check, explain(bad, case), case)
        assert not result.passed and result.value < 1.0 and result.detail


def test_mirrored_attributions_reject_correct_interventional_values():
    """CX-6: the original mirrored comparison is off by |E[x0] - E[x1]| = 0.36 for exact values."""
    case = cases.get("x0_plus_x1_non_uniform_stat_dep")
    assert not score("symmetry", case.truth["shapley"], case, mirror=(0, 2, 1, 3)).passed
    assert score("symmetric_effect", case.truth["shapley"], case).passed


def test_baseline_zero_attributions_pass_the_effect_check():
    case = cases.get("x0_plus_x1_non_uniform_stat_dep")
    assert score("symmetric_effect", case.inputs.copy(), case).passed  # phi_i = x_i


def test_observational_shapley_is_not_importance_symmetric_on_dependent_data():
    """Janzing et al. 2020: conditional Shapley breaks importance symmetry on non_uniform_stat_dep
    and equals the interventional values on the independent distribution.  The gap (3.3 %) is inside
    the default rtol of sampling explainers, so it shows only at an exact method's tolerance."""
    dep, indep = cases.get("x0_plus_x1_non_uniform_stat_dep"), cases.get("x0_plus_x1_non_uniform_stat_indep")
    phi = observational_shapley(dep.inputs, dep.predict, dep.background)
    assert score("symmetry", phi, dep).value == pytest.approx(1 - 0.0101 / 0.3068, abs=1e-3)
    assert not score("symmetry", phi, dep, rtol=0.01).passed
    np.testing.assert_allclose(
        observational_shapley(indep.inputs, indep.predict, indep.background), indep.truth["shapley"], atol=1e-6
    )


def test_symmetric_effect_fails_swapped_and_scaled_features():
    case = cases.get("x0_plus_x1_uniform_stat_dep")
    assert not score("symmetric_effect", explain(hostile.swapped_features, case), case).passed
    phi = case.truth["shapley"] * np.array([1.0, 1.03])
    assert score("symmetric_effect", phi, case).passed
    assert not score("symmetric_effect", phi, case, rtol=0.01).passed
    scaled = replace(case, predict=lambda X, f=case.predict: 100.0 * f(X))
    a, b = score("symmetric_effect", phi, case), score("symmetric_effect", 100 * phi, scaled)
    assert (a.passed, a.value) == (b.passed, pytest.approx(b.value))


def test_symmetric_effect_needs_rows_that_flip_one_feature():
    case = cases.get("x0_plus_x1_uniform_stat_dep")
    diagonal = replace(case, inputs=case.inputs[[0, 3]])
    with pytest.raises(ValueError, match="no two explained rows differ only in feature 0"):
        score("symmetric_effect", case.truth["shapley"][[0, 3]], diagonal)


# ----------------------------------------------------------------- correlated features (2.8)


def test_correlated_features_data_is_seeded():
    a, b = cases.get("correlated_features", seed=0), cases.get("correlated_features", seed=1)
    np.testing.assert_array_equal(a.inputs[:, 1], a.inputs[:, 2])
    assert a.inputs[:, 0].min() >= 1 and a.inputs[:, 0].max() <= 9
    assert not np.array_equal(a.inputs, b.inputs)
    np.testing.assert_array_equal(
        a.inputs,
        cases.info("correlated_features").build(cases.info("correlated_features"), seed=0, cache=Cache(None)).inputs,
    )


def test_correlated_passes_interventional_explainers_and_fails_noise():
    case = cases.get("correlated_features")
    for good in (baselines.exact_shapley, kernel_shap):
        result = score("correlated", explain(good, case), case)
        assert result.passed and result.value == pytest.approx(1.0), result.detail
    for bad in (baselines.random, hostile.zeros):
        result = score("correlated", explain(bad, case), case)
        assert not result.passed and result.detail


def test_correlated_scores_zero_when_the_used_twin_gets_nothing():
    """CX-11: both twins zero scores 0 (the model uses b), and so does crediting c instead of b."""
    case = cases.get("correlated_features")
    phi = case.truth["shapley"].copy()
    both_zero = phi.copy()
    both_zero[:, 1:] = 0.0
    result = score("correlated", both_zero, case)
    assert not result.passed and result.value == 0.0
    swapped = phi[:, [0, 2, 1]]
    result = score("correlated", swapped, case)
    assert not result.passed and result.value == 0.0


def test_correlated_fails_the_observational_split():
    """Observational Shapley with b == c gives phi_b = phi_c: correct there, but not interventional."""
    case = cases.get("correlated_features")
    phi = observational_shapley(case.inputs, case.predict, case.background)
    np.testing.assert_allclose(phi[:, 1], phi[:, 2], atol=1e-9)
    result = score("correlated", phi, case)
    assert not result.passed and result.value == 0.0


def test_correlated_attribution_subtest_catches_per_row_credit():
    case = cases.get("correlated_features")
    phi = case.truth["shapley"].copy()
    phi[2, 2] = 0.2 * phi[2, 1]  # importance ratio stays below rtol, row 2 does not
    result = score("correlated", phi, case)
    assert not result.passed and result.worst["row"] == 2


# -------------------------------------------------------------------- digits dummies (2.10)


@pytest.fixture(scope="module")
def digits_cases(tmp_path_factory):
    cache = Cache(tmp_path_factory.mktemp("xai-digits"))
    built = {
        name: cases.info(name).build(cases.info(name), seed=0, cache=cache)
        for name in ("digits_data_dummy", "digits_function_dummy")
    }
    return built, cache


def test_digits_dummy_set_and_model(digits_cases):
    built, cache = digits_cases
    case = built["digits_data_dummy"]
    assert case.inputs.shape == (10, 144) and case.background.shape == (20, 144)
    assert len(digits.DUMMY_PIXELS) == 84 and case.meta["accuracy"] > 0.9
    dummies = list(digits.DUMMY_PIXELS)
    assert not case.inputs[:, dummies].any() and not case.background[:, dummies].any()
    # each row is explained for its predicted class (one target per row), several classes among them
    assert (case.predict(case.inputs).argmax(axis=1) == case.target).all() and len(set(case.target)) > 1
    # rebuilt from the cached weights: same function; the torch twin agrees
    again = cases.info("digits_data_dummy").build(cases.info("digits_data_dummy"), seed=0, cache=cache)
    np.testing.assert_array_equal(again.predict(again.inputs), case.predict(case.inputs))
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        twin = case.torch_model(torch.as_tensor(case.inputs)).numpy()
    np.testing.assert_allclose(twin, case.predict(case.inputs), atol=1e-12)


def test_digits_background_is_stratified(digits_cases):
    data = digits.split()
    labels = [data["y_train"][np.all(data["X_train"] == row, axis=1)][0] for row in data["background"]]
    assert np.bincount(labels, minlength=10).min() >= 1


def finite_difference_gradient(inputs, predict, target):
    """A sensitivity map (central differences of each row's target probability): credits what f reacts to."""
    eps = 1e-4
    n, d = inputs.shape
    steps = np.eye(d) * eps
    target = np.broadcast_to(target, (n,))[:, None, None]  # one class per row, or one for all
    up = predict((inputs[:, None, :] + steps).reshape(-1, d)).reshape(n, d, -1)
    down = predict((inputs[:, None, :] - steps).reshape(-1, d)).reshape(n, d, -1)
    return np.take_along_axis(up - down, target, axis=2)[..., 0] / (2 * eps)


def test_digits_data_dummy_separates_data_referenced_from_gradient_methods(digits_cases):
    """CX-9: KernelSHAP (background substitution) gives blank pixels zero; the network's weights on them
    are not zero, so a plain gradient legitimately credits them and fails the data-dummy variant."""
    case = digits_cases[0]["digits_data_dummy"]
    assert score("dummy", explain(kernel_shap, case), case).passed
    for bad in (finite_difference_gradient, baselines.random, hostile.zeros):
        assert not score("dummy", explain(bad, case), case).passed


def test_digits_function_dummy_passes_every_method_that_reads_the_function(digits_cases):
    case = digits_cases[0]["digits_function_dummy"]
    for good in (finite_difference_gradient, kernel_shap):
        result = score("dummy", explain(good, case), case)
        assert result.passed and result.value == pytest.approx(1.0), result.detail
    assert not score("dummy", explain(baselines.random, case), case).passed


def test_digits_function_dummy_separates_an_ignored_pixel_from_a_blank_one(digits_cases):
    """The masked pixels used to be 0 in every row, so any g(x) * x passed; now they carry ink
    the network never reads, and maps computed from the input alone credit them."""
    case = digits_cases[0]["digits_function_dummy"]
    dummies = list(digits.DUMMY_PIXELS)
    assert (case.inputs[:, dummies] >= digits.INK[0]).all() and (case.background[:, dummies] > 0).all()
    masked = case.inputs.copy()
    masked[:, dummies] = 0.0
    np.testing.assert_array_equal(case.predict(masked), case.predict(case.inputs))  # ignored
    ones_times_x = case.inputs * 1.0  # the input itself, or Input x Gradient of a g that is 1 there
    for bad in (ones_times_x, case.inputs + np.abs(explain(finite_difference_gradient, case).attributions)):
        assert not score("dummy", bad, case).passed
    data = digits_cases[0]["digits_data_dummy"]
    assert not data.inputs[:, dummies].any()  # the data-dummy case keeps them blank: that is its point


# ------------------------------------------------------------------- many features (2.11)


@pytest.fixture(scope="module")
def stress_case(tmp_path_factory):
    cache = Cache(tmp_path_factory.mktemp("xai-stress"))
    info = cases.info("stress_nb_features")
    case = info.build(info, seed=0, cache=cache)
    again = info.build(info, seed=0, cache=cache)  # from the npz entry
    np.testing.assert_array_equal(again.truth["importance"], case.truth["importance"])
    return case


def probability_shap(case):
    """Logit-scale linear SHAP rescaled per row to sum to p(x) - E[p] (efficiency on the probability):
    a control for a good explainer of ``predict``, whose rows are re-weighted but keep their order."""
    p, p0 = case.predict(case.inputs)[:, 1], case.predict(case.background)[:, 1].mean()
    phi = case.truth["logit_shap"]
    return phi * ((p - p0) / phi.sum(axis=1))[:, None]


def test_stress_case_is_large_and_its_truth_is_the_model(stress_case):
    case = stress_case
    d = len(case.feature_names)
    assert d >= 1000 and case.inputs.shape == (20, d) and case.background.shape == (100, d)
    assert case.meta["accuracy"] >= 0.85
    assert case.feature_names[int(case.truth["importance"].argmax())] == stress.PLANTED[0] == "best"
    p = case.predict(case.inputs)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    logit = np.log(p[:, 1] / p[:, 0])
    base = np.log(case.predict(case.background)[:, 1] / case.predict(case.background)[:, 0]).mean()
    np.testing.assert_allclose(case.truth["logit_shap"].sum(axis=1), logit - base, atol=1e-8)  # efficiency


def test_stress_rank_passes_exact_and_probability_scale_shap_and_fails_noise(stress_case):
    case = stress_case
    assert score("stress_rank", case.truth["logit_shap"], case).value == pytest.approx(1.0)
    result = score("stress_rank", probability_shap(case), case)
    assert result.passed and result.worst["spearman"] > 0.9, result.detail
    for seed in range(5):
        result = score("stress_rank", baselines.random(case.inputs, seed), case)
        assert not result.passed and result.worst["spearman"] < 0.4
    assert not score("stress_rank", np.zeros(case.inputs.shape), case).passed


def test_stress_rank_fails_when_the_planted_token_is_lost(stress_case):
    case = stress_case
    phi = case.truth["logit_shap"].copy()
    phi[:, case.feature_names.index("best")] *= 0.01
    result = score("stress_rank", phi, case)
    assert not result.passed and result.worst["token"] == "best" and result.worst["rank"] > 4


def test_corpus_is_seeded_and_balanced():
    docs, labels = stress.corpus(0)
    assert len(docs) == stress.N_DOCS and labels.mean() == 0.5
    assert docs[:3] == stress.corpus(0)[0][:3] and docs[:3] != stress.corpus(1)[0][:3]
    positive = " ".join(d for d, y in zip(docs, labels) if y == 1).split()
    negative = " ".join(d for d, y in zip(docs, labels) if y == 0).split()
    assert positive.count("best") > 5 * negative.count("best")


def test_quartile_rule_is_kept_for_comparison():
    assert [stress.quartile_score(r, 100) for r in (0, 24, 50, 76)] == [1.0, 1.0, 0.5, 0.0]


# ---------------------------------------------------------------- interaction detection (2.12)


INTERACTIONS = [f"detect_interaction{k}" for k in range(5)]


def test_interaction_ground_truth():
    assert [len(interactions.true_pairs(k)) for k in range(5)] == [0, 45 + 100, 335, 335, 3 + 190]
    f = interactions.function(4)
    x = np.ones((1, 40))
    assert f(x)[0] == 40 + (-1) + 1  # x2 = +1 breaks the first AND; the second holds
    x[0, 2] = -1
    assert f(x)[0] == 38 + 1 + 1


@pytest.mark.parametrize("name", INTERACTIONS)
def test_interaction_detection_passes_archdetect_and_fails_random(name):
    """ArchDetect (Tsang et al. 2020) is exact on these +-1 functions; noise interactions are not."""
    case = cases.get(name)
    result = score("interaction_detection", explain(baselines.archdetect, case), case)
    assert result.passed and result.value == pytest.approx(1.0), result.detail
    for seed in range(3):
        result = score("interaction_detection", explain(baselines.random_interactions, case, seed=seed), case)
        assert not result.passed and result.value < 0.3, result.detail


def test_interaction_detection_skips_explainers_without_interactions():
    case = cases.get("detect_interaction2")
    with pytest.raises(NotApplicable, match="no interactions"):
        score("interaction_detection", explain(baselines.random, case), case)


def test_interactions_are_canonicalised_to_unordered_pairs():
    case = cases.get("detect_interaction4")
    full = explain(baselines.archdetect, case)
    M = np.triu(full.interactions[0])  # upper triangle only
    for variant in (M, M + M.T, M.T, -M[None]):
        result = score("interaction_detection", replace(full, interactions=variant), case)
        assert result.value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="interactions of shape"):
        interactions.interaction_strengths(np.zeros((3, 3)), 40)


def test_false_interaction_on_the_additive_function_fails():
    case = cases.get("detect_interaction0")
    M = np.zeros((40, 40))
    M[3, 7] = 0.2 * case.truth["main_effect_scale"]
    result = score("interaction_detection", contract.Explanation(np.zeros((1, 40)), 0.0, interactions=M), case)
    assert not result.passed and result.worst["pair"] == [3, 7]


def test_roc_auc_matches_scikit_learn_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    scores, labels = rng.integers(0, 4, 200).astype(float), rng.random(200) < 0.3
    assert interactions.roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    assert np.isnan(interactions.roc_auc(scores, np.zeros(200, dtype=bool)))


def test_plugin_runs_the_interaction_suite_and_skips_explainers_without_interactions(pytester):
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-rs",
        "-k",
        "detect_interaction",
        "--xai-explainer=pytest_xai.explainers:archdetect",
        "--xai-explainer=pytest_xai.explainers:random",
    )
    result.assert_outcomes(passed=5, skipped=5)
    result.stdout.fnmatch_lines(["*interaction_detection on detect_interaction0: explainer returned no interactions*"])
