"""Handcrafted units (XAI-Units, Lee et al. 2025): self-tests, ground truths, and which methods the
checks pass and fail.  Explainers are written here directly with captum, following the contract."""

import numpy as np
import pytest
import torch
from captum.attr import DeepLift, InputXGradient, IntegratedGradients, NoiseTunnel, Saliency, ShapleyValues
from torch import nn

from pytest_xai import cases
from pytest_xai.cache import Cache
from pytest_xai.cases import units
from pytest_xai.checks import CHECKS

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore:Setting forward, backward hooks:UserWarning")

UNITS = [
    "units_weighted_features",
    "units_conflicting_features",
    "units_interacting_features",
    "units_common_features",
    "units_shattered_gradients",
    "units_pertinent_negatives_zero",
    "units_pertinent_negatives_one",
    "units_boolean_and",
    "units_boolean_or",
]


def build(name, seed=0):
    info = cases.CASES[name]
    return info.build(info, seed=seed, cache=Cache(None))


@pytest.fixture(scope="module")
def built():
    return {name: build(name) for name in UNITS}


# -- explainers following the contract ----------------------------------------------------------


def _x(inputs):
    return torch.as_tensor(np.asarray(inputs, dtype=np.float64))


def _b(baseline, inputs):
    return _x(np.broadcast_to(baseline, np.shape(inputs)).copy())


def integrated_gradients(inputs, model, target, baseline):
    return (
        IntegratedGradients(model)
        .attribute(_x(inputs), _b(baseline, inputs), target=target, n_steps=256)
        .detach()
        .numpy()
    )


def deeplift(inputs, model, target, baseline):
    return DeepLift(model).attribute(_x(inputs).requires_grad_(), _b(baseline, inputs), target=target).detach().numpy()


def input_x_gradient(inputs, model, target):
    return InputXGradient(model).attribute(_x(inputs).requires_grad_(), target=target).detach().numpy()


def gradient(inputs, model, target):
    return Saliency(model).attribute(_x(inputs).requires_grad_(), target=target, abs=False).detach().numpy()


def exact_shapley(inputs, predict, target, baseline):
    f = predict if target is None else (lambda z: predict(z)[:, target])
    return units.baseline_shapley(f, inputs, np.broadcast_to(baseline, inputs.shape))


def random(inputs, seed):
    return np.random.default_rng(seed).standard_normal(inputs.shape)


EXPLAINERS = {
    "ig": integrated_gradients,
    "deeplift": deeplift,
    "ixg": input_x_gradient,
    "grad": gradient,
    "shapley": exact_shapley,
    "random": random,
}


def run(explainer, case, seed=0):
    import inspect

    available = {
        "inputs": case.inputs.copy(),
        "model": case.model,
        "predict": case.predict,
        "target": case.target,
        "baseline": case.baseline,
        "background": case.background,
        "seed": seed,
    }
    wanted = inspect.signature(explainer).parameters
    out = explainer(**{k: v for k, v in available.items() if k in wanted})
    assert out.shape == case.inputs.shape
    return out


def score(case, check_name, attributions):
    return CHECKS[check_name].func(attributions, case, **case.info.checks[check_name])


# -- construction and self-tests ----------------------------------------------------------------


def test_units_are_registered_with_their_checks():
    for name in UNITS:
        info = cases.CASES[name]
        assert info.family == "units" and "Lee et al. 2025" in info.source
    for name in ("units_mse", "units_shapley_mse", "units_common_mse", "units_sensitivity"):
        assert CHECKS[name].marker == "xai_units"


@pytest.mark.parametrize("name", UNITS)
def test_network_reproduces_labels_and_is_deterministic(built, name):
    case = built[name]
    labels = case.meta["labels"]
    out = units.forward(case.model, case.inputs).reshape(labels.shape)
    np.testing.assert_allclose(out, labels, rtol=1e-5, atol=0)
    np.testing.assert_allclose(case.predict(case.inputs).reshape(labels.shape), labels, rtol=1e-5, atol=0)
    again = build(name)
    np.testing.assert_array_equal(again.inputs, case.inputs)
    for key in case.truth:
        np.testing.assert_array_equal(again.truth[key], case.truth[key])
    assert not np.array_equal(build(name, seed=1).inputs, case.inputs)


@pytest.mark.parametrize("name", UNITS)
def test_model_is_plain_sequential_with_one_activation_per_position(built, name):
    model = built[name].model
    assert isinstance(model, nn.Sequential) and not model.training
    assert model is built[name].torch_model
    kinds = (nn.Linear, nn.ReLU, nn.Softmax)
    assert all(isinstance(m, kinds) for m in model)
    activations = [m for m in model if not isinstance(m, nn.Linear)]
    assert len({id(m) for m in activations}) == len(activations)


def test_self_test_and_gate_assertions_catch_broken_units(built):
    case = built["units_weighted_features"]
    with pytest.raises(AssertionError, match="does not reproduce its labels on .* row"):
        units.self_test("broken", case.model, case.inputs, case.meta["labels"] * 1.001)
    with pytest.raises(AssertionError, match="gate constant 100"):
        units.assert_gate("broken", np.array([3.0, -150.0]), units.CANCEL_GATE)


def test_gating_constants_are_never_exceeded(built):
    conflicting = built["units_conflicting_features"]
    n = len(conflicting.meta["weights"])
    assert np.abs(conflicting.meta["weights"] * conflicting.inputs[:, :n]).max() < units.CANCEL_GATE
    interacting = built["units_interacting_features"]
    for a, b in interacting.meta["pairs"]:
        delta = interacting.meta["weights"][b] - interacting.meta["weights_when_on"][b]
        assert np.abs(delta * interacting.inputs[:, b]).max() < units.INTERACTION_GATE


def test_baseline_shapley_matches_captum_exact_permutation_shapley(built):
    """The enumeration is checked against captum's ShapleyValues (all 720 permutations)."""
    case = built["units_interacting_features"]
    rows = case.inputs[:20]
    captum_values = ShapleyValues(case.model).attribute(_x(rows), _b(case.baseline, rows), target=0).numpy()
    np.testing.assert_allclose(case.truth["shapley"][:20], captum_values, rtol=1e-5, atol=1e-6)


def test_baseline_shapley_of_a_linear_function_is_w_times_x_minus_b():
    rng = np.random.default_rng(0)
    w, x, b = rng.normal(size=5), rng.normal(size=(7, 5)), rng.normal(size=5)
    np.testing.assert_allclose(units.baseline_shapley(lambda z: z @ w, x, b), w * (x - b), atol=1e-12)
    with pytest.raises(ValueError, match="d=13 > 12"):
        units.baseline_shapley(lambda z: z.sum(1), np.zeros((1, 13)), np.zeros(13))


def test_ground_truths_follow_the_unit_conventions(built):
    conflicting = built["units_conflicting_features"]
    n = 5
    flags = conflicting.inputs[:, n:] == 1
    assert flags.any() and (~flags).any()
    gt, shap = conflicting.truth["xai_units"], conflicting.truth["shapley"]
    np.testing.assert_allclose(gt.sum(axis=1), conflicting.meta["labels"], atol=1e-12)
    np.testing.assert_allclose(shap[:, :n][flags], gt[:, :n][flags] / 2, atol=1e-12)
    pn_zero, pn_one = built["units_pertinent_negatives_zero"], built["units_pertinent_negatives_one"]
    w = pn_zero.meta["weights"][0]
    present = pn_zero.inputs[:, 0] == 1
    np.testing.assert_allclose(pn_zero.truth["xai_units"][present, 0], -9 * w)
    np.testing.assert_allclose(pn_one.truth["xai_units"][~present, 0], 9 * w)
    for name in ("units_boolean_and", "units_boolean_or"):
        case = built[name]
        delta = case.meta["labels"] - units.forward(case.model, case.baseline).ravel()
        np.testing.assert_allclose(case.truth["xai_units"].sum(axis=1), delta, atol=1e-12)
        assert set(np.unique(np.abs(delta))) == {2.0}


# -- which methods pass which unit ---------------------------------------------------------------

PASS_FAIL = [
    # (unit, check, explainer, passes)
    ("units_weighted_features", "units_mse", "ig", True),
    ("units_weighted_features", "units_mse", "deeplift", True),
    ("units_weighted_features", "units_mse", "ixg", True),
    ("units_weighted_features", "units_mse", "shapley", True),
    ("units_weighted_features", "units_mse", "grad", False),
    ("units_conflicting_features", "units_mse", "ig", False),
    ("units_conflicting_features", "units_mse", "deeplift", False),
    ("units_conflicting_features", "units_mse", "ixg", False),
    ("units_conflicting_features", "units_mse", "shapley", False),
    ("units_conflicting_features", "units_shapley_mse", "shapley", True),
    ("units_conflicting_features", "units_shapley_mse", "ig", False),
    ("units_conflicting_features", "units_shapley_mse", "deeplift", False),
    ("units_conflicting_features", "units_shapley_mse", "ixg", False),
    ("units_interacting_features", "units_mse", "ig", True),
    ("units_interacting_features", "units_mse", "deeplift", True),
    ("units_interacting_features", "units_mse", "ixg", True),
    ("units_interacting_features", "units_mse", "shapley", False),
    ("units_interacting_features", "units_shapley_mse", "shapley", True),
    ("units_interacting_features", "units_shapley_mse", "ig", False),
    ("units_interacting_features", "units_shapley_mse", "ixg", False),
    ("units_interacting_features", "units_shapley_mse", "deeplift", False),
    ("units_common_features", "units_common_mse", "ig", True),
    ("units_common_features", "units_common_mse", "ixg", True),
    ("units_common_features", "units_common_mse", "shapley", True),
    ("units_common_features", "units_common_mse", "grad", True),
    ("units_common_features", "units_common_mse", "deeplift", False),
    ("units_pertinent_negatives_zero", "units_mse", "ig", True),
    ("units_pertinent_negatives_zero", "units_mse", "deeplift", True),
    ("units_pertinent_negatives_zero", "units_mse", "shapley", True),
    ("units_pertinent_negatives_zero", "units_mse", "ixg", False),
    ("units_pertinent_negatives_one", "units_mse", "ig", True),
    ("units_pertinent_negatives_one", "units_mse", "deeplift", True),
    ("units_pertinent_negatives_one", "units_mse", "shapley", True),
    ("units_pertinent_negatives_one", "units_mse", "ixg", False),
    ("units_boolean_and", "units_mse", "ig", True),
    ("units_boolean_and", "units_mse", "deeplift", True),
    ("units_boolean_and", "units_mse", "shapley", True),
    ("units_boolean_and", "units_mse", "ixg", False),
    ("units_boolean_or", "units_mse", "ig", True),
    ("units_boolean_or", "units_mse", "deeplift", True),
    ("units_boolean_or", "units_mse", "ixg", False),
    ("units_shattered_gradients", "units_sensitivity", "ig", False),
    ("units_shattered_gradients", "units_sensitivity", "deeplift", False),
    ("units_shattered_gradients", "units_sensitivity", "ixg", False),
    ("units_shattered_gradients", "units_sensitivity", "grad", False),
] + [(name, check, "random", False) for name in UNITS for check in cases.CASES[name].checks]


@pytest.mark.parametrize(
    "name,check_name,explainer,passes", PASS_FAIL, ids=[f"{c}[{u}-{e}]" for u, c, e, _ in PASS_FAIL]
)
def test_theory_predicts_which_methods_pass(built, name, check_name, explainer, passes):
    case = built[name]
    result = score(case, check_name, run(EXPLAINERS[explainer], case))
    assert result.passed is passes, result.detail
    assert 0.0 <= result.value <= 1.0
    if not passes and check_name != "units_sensitivity":
        assert result.worst["row"] >= 0 and len(result.worst["truth"]) == case.inputs.shape[1]


def test_exact_methods_are_exact_and_failures_are_far_from_the_threshold(built):
    """The 1e-3 relative-MSE default sits orders of magnitude from both groups of methods."""
    boolean = built["units_boolean_and"]
    exact = score(boolean, "units_mse", run(integrated_gradients, boolean))
    assert exact.params["median_relative_mse"] < 1e-4
    dead_path = score(
        built["units_conflicting_features"],
        "units_shapley_mse",
        run(integrated_gradients, built["units_conflicting_features"]),
    )
    assert dead_path.params["median_relative_mse"] > 0.1


def test_common_features_need_the_softmax_output(built):
    """IG on the logits (the network without its Softmax) credits x_c and fails."""
    case = built["units_common_features"]
    logits = case.model[0]
    attributions = integrated_gradients(case.inputs, logits, case.target, case.baseline)
    np.testing.assert_allclose(attributions[:, 5:], case.inputs[:, 5:], rtol=1e-6)
    assert not score(case, "units_common_mse", attributions).passed


def test_relative_mse_is_scale_free(built):
    case = built["units_weighted_features"]
    noisy = case.truth["xai_units"] * (1 + 0.02 * random(case.inputs, 1))
    rel = units.relative_mse(noisy, case.truth["xai_units"])
    np.testing.assert_allclose(units.relative_mse(100 * noisy, 100 * case.truth["xai_units"]), rel)
    with pytest.raises(ValueError, match="zero on every row"):
        units.relative_mse(noisy, np.zeros_like(noisy))


def test_wrong_shape_is_a_clear_error(built):
    case = built["units_weighted_features"]
    with pytest.raises(ValueError, match=r"units_mse: attributions have shape \(200, 9\)"):
        units.units_mse(np.zeros((200, 9)), case)


# -- shattered gradients: stability ------------------------------------------------------------


def smoothgrad(inputs, model, seed):
    torch.manual_seed(seed)
    return (
        NoiseTunnel(Saliency(model))
        .attribute(_x(inputs), nt_type="smoothgrad", nt_samples=100, stdevs=0.1, abs=False)
        .numpy()
    )


def shapley_on_background(inputs, predict, background):
    return np.mean([units.baseline_shapley(predict, inputs, row) for row in background[:20]], axis=0)


@pytest.mark.parametrize("explainer", [smoothgrad, shapley_on_background])
def test_smooth_explainers_are_stable_on_shattered_gradients(built, explainer):
    case = built["units_shattered_gradients"]
    result = score(case, "units_sensitivity", run(explainer, case))
    assert result.passed, result.detail


def test_shattered_gradients_straddle_the_kink_and_flip_the_gradient(built):
    case = built["units_shattered_gradients"]
    pre = case.inputs @ case.meta["weights"]
    assert (pre > 0).mean() > 0.2 and (pre < 0).mean() > 0.2
    assert abs(case.meta["weights"].sum()) < 1e-6 * np.abs(case.meta["weights"]).max()
    result = score(case, "units_sensitivity", run(gradient, case))
    assert result.worst["relative_change"] == pytest.approx(1.0)


def test_sensitivity_fails_maps_that_explain_nothing(built):
    """Zeros, a constant and the model output copied are perfectly stable: they fail as explaining nothing."""
    case = built["units_shattered_gradients"]
    output = case.predict(case.inputs)
    for bad in (np.zeros_like(case.inputs), np.ones_like(case.inputs), np.repeat(output[:, None], 6, axis=1)):
        result = score(case, "units_sensitivity", bad)
        assert not result.passed and result.value == 0.0 and "explains nothing" in result.detail


def test_sensitivity_fails_the_input_itself_through_the_dummy_feature(built):
    """The input moves only by the noise, so it is stable (0.95 of points before the guard); the
    unit never reads its dummy feature, which every model-derived map leaves at exactly 0."""
    case = built["units_shattered_gradients"]
    assert case.meta["weights"][5] == 0 and case.feature_names[5] == "dummy5"
    x = case.inputs
    for bad in (x.copy(), x - case.background.mean(axis=0)):
        result = score(case, "units_sensitivity", bad)
        assert not result.passed and "never reads" in result.detail, result.detail
    stable_part = units.relative_sensitivity(x[:, :5], case.meta["n_points"], case.meta["n_perturbations"])
    assert (stable_part <= 0.5).mean() >= 0.8  # without the guard the input itself would pass
    assert (run(smoothgrad, case)[:, 5] == 0).all() and (run(shapley_on_background, case)[:, 5] == 0).all()


def test_common_mse_fails_an_all_zero_map(built):
    """All zeros is 0 on the common features by doing nothing (it passed before the guard)."""
    case = built["units_common_features"]
    result = score(case, "units_common_mse", np.zeros_like(case.inputs))
    assert not result.passed and "explains nothing" in result.detail


def test_boolean_units_have_enough_special_rows_to_catch_a_sign_error(built):
    """|exact| differs from exact only on the rows with the special pattern (OR: all -1)."""
    case = built["units_boolean_or"]
    special = (case.inputs == -1).all(axis=1)
    assert special.mean() > 0.15
    assert not score(case, "units_mse", np.abs(case.truth["xai_units"])).passed
    assert score(case, "units_mse", case.truth["xai_units"]).passed


def test_relative_sensitivity_layout_is_checked():
    with pytest.raises(ValueError, match="expected 2 points x"):
        units.relative_sensitivity(np.zeros((5, 3)), 2, 1)
    a = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])  # point 1 is zero everywhere
    change = units.relative_sensitivity(a, 2, 1)
    assert change[0] == 0.0 and np.isnan(change[1])


ZOO_TRUTH = {"units_mse": "xai_units", "units_shapley_mse": "shapley", "units_common_mse": "shapley"}


@pytest.mark.parametrize("name", UNITS)
def test_every_zoo_member_fails_unless_declared(built, name):
    """The degenerate-explainer zoo applied to the unit's own ground truth (shattered gradients:
    to Shapley values against its wide background): only the declared members pass."""
    from pytest_xai.explainers import degenerate

    case = built[name]
    output = np.asarray(case.predict(case.inputs), dtype=float)
    output = output[:, case.target] if output.ndim == 2 and case.target is not None else output.reshape(len(output))
    for check_name in case.info.checks:
        if check_name == "units_sensitivity":
            reference = run(shapley_on_background, case)
        else:
            reference = case.truth[ZOO_TRUTH[check_name]]
        assert score(case, check_name, reference).passed
        for member in degenerate.MEMBERS:
            attributions = degenerate.apply(member, reference, case.inputs, output, case.background, seed=0)
            result = score(case, check_name, attributions)
            declared = CHECKS[check_name].exemption(member, name)
            assert result.passed == (declared is not None), (check_name, member, declared, result.detail)
