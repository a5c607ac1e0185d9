"""The checks that need no ground truth (pytest_xai.cases.generic, and faithfulness, monotonicity,
infidelity and the randomisation sanity checks on a user's case): each passes a correct explainer
and fails the degenerate zoo, except the members it declares, and a deliberately broken explainer."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pytest_xai
from pytest_xai import NotApplicable, cases, checks
from pytest_xai.cases import generic
from pytest_xai.engine import contract
from pytest_xai.explainers import degenerate

REF = "pytest_xai.explainers.baselines:exact_shapley"
NEW = ("completeness", "determinism", "batch_invariance", "max_sensitivity")

#: Zoo members the absolute bar admits on the toy case below when its reference is turned off
#: (``make_case(reference=False)``; faithfulness 0.67 for a per-row offset, 0.96 and 0.81 for 30 % and
#: 100 % noise; monotonicity 0.72 for 30 % noise).  Calibrated on the reference (the default), or on
#: exact Shapley values (the gaussian cases), the checks reject them.
ABSOLUTE_BAR_ADMITS = {
    ("faithfulness", "row_offset"),
    ("faithfulness", "noisy_30"),
    ("faithfulness", "noisy_100"),
    ("monotonicity", "noisy_30"),
}
#: What the calibrated checks admit on the toy case: 30 % noise on its 16 x 5 values keeps faithfulness
#: at 0.955 against the reference's 0.974 (seed 0; 0.90 to 0.94 on seeds 1 to 5); infidelity and
#: monotonicity reject it, and so does gt_shapley on larger cases.
CALIBRATED_ADMITS = {("faithfulness", "noisy_30")}


def f(X):
    X = np.asarray(X, dtype=float)
    return 2 * X[:, 0] + X[:, 1] ** 2 + np.sin(X[:, 2]) * X[:, 3] + 0.5 * X[:, 4]


@pytest.fixture(scope="module")
def toy():
    cases.infos()
    rng = np.random.default_rng(0)
    return pytest_xai.make_case(rng.normal(size=(16, 5)), predict=f, background=rng.normal(size=(16, 5)), name="toy")


@pytest.fixture(scope="module")
def toy_without_reference():
    rng = np.random.default_rng(0)
    return pytest_xai.make_case(
        rng.normal(size=(16, 5)), predict=f, background=rng.normal(size=(16, 5)), name="toy", reference=False
    )


def score(name, explain, case, seed=0, **extra):
    info = checks.CHECKS[name]
    wanted = inspect.signature(info.func).parameters
    A = contract.run(contract.load(explain) if isinstance(explain, str) else _loaded(explain), case, seed=seed)
    params = {**info.thresholds, **extra}
    if "reexplain" in wanted:
        params["reexplain"] = generic.reexplainer(explain, case, seed=seed)
    if "claim" in wanted and "claim" not in params:
        params["claim"] = "background"
    return info.func(A.attributions, case, **params)


def _loaded(func):
    return contract.from_function(func, where="test")


@pytest.mark.parametrize("name", NEW + ("faithfulness", "monotonicity", "infidelity"))
def test_exact_shapley_values_pass(toy, name):
    assert score(name, REF, toy).passed


@pytest.mark.parametrize("member", degenerate.MEMBERS)
@pytest.mark.parametrize("name", NEW + ("faithfulness", "monotonicity", "infidelity"))
def test_zoo_fails_unless_declared(toy, name, member):
    result = score(name, f"pytest_xai.explainers.degenerate:{member}", toy)
    declared = checks.CHECKS[name].exemption(member, toy.name) or (name, member) in CALIBRATED_ADMITS
    assert declared or not result.passed, f"{member} passes {name}: {result.detail}"


@pytest.mark.parametrize("member", degenerate.MEMBERS)
@pytest.mark.parametrize("name", ("faithfulness", "monotonicity", "infidelity"))
def test_without_a_reference_the_absolute_bar_decides_and_says_so(toy_without_reference, name, member):
    result = score(name, f"pytest_xai.explainers.degenerate:{member}", toy_without_reference)
    assert "absolute bar" in result.detail and "turned off" in result.detail
    declared = checks.CHECKS[name].exemption(member, "toy") or (name, member) in ABSOLUTE_BAR_ADMITS
    assert declared or not result.passed, f"{member} passes {name}: {result.detail}"
    assert score(name, REF, toy_without_reference).passed


def unseeded(inputs, predict, background, target):
    """Broken: exact values plus noise that ignores the seed."""
    exact = degenerate.exact_shapley(inputs, predict, background, target)
    return exact + 0.1 * np.random.default_rng().standard_normal(exact.shape)


def fragile(inputs, predict, background, target):
    """Broken: exact values plus noise seeded by the input's bytes (reproducible, but it jumps with x)."""
    exact = degenerate.exact_shapley(inputs, predict, background, target)
    rng = np.random.default_rng(abs(hash(np.asarray(inputs).tobytes())))
    return exact + np.abs(exact).mean() * rng.standard_normal(exact.shape)


def batch_normalised(inputs, predict, background, target):
    """Broken: exact values divided by their maximum over the batch."""
    exact = degenerate.exact_shapley(inputs, predict, background, target)
    return exact / np.abs(exact).max()


@pytest.mark.parametrize(
    ("name", "broken"),
    [
        ("determinism", unseeded),
        ("max_sensitivity", fragile),
        ("batch_invariance", batch_normalised),
        ("completeness", batch_normalised),
    ],
)
def test_broken_explainers_fail(toy, name, broken):
    result = score(name, broken, toy)
    assert not result.passed, result.detail


def test_determinism_reports_the_spread_across_seeds(toy):
    result = score("determinism", "pytest_xai.explainers.degenerate:noise", toy)
    assert result.passed and result.params["seed_spread"] > 1.0


STABILITY = ("local_lipschitz", "relative_input_stability", "relative_output_stability")


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", ["gaussian_linear_rho50", "gaussian_nonlinear_additive_rho50"])
def test_stability_checks_pass_the_exact_values_and_fail_noise(name, seed):
    """Re-explained at perturbed inputs under other seeds, the exact values score the reference's own
    stability; seeded noise, noise on the values and shuffled rows move several times more (10 % noise
    too: for RIS and ROS, on the dummy feature whose exact values are 0, float dust set to 0)."""
    case = cases.get(name, seed=seed)
    for check in STABILITY:
        assert score(check, REF, case, seed=seed).passed, check
        for member in ("noise", "noisy_10", "noisy_100", "shuffled_rows"):
            result = score(check, f"pytest_xai.explainers.degenerate:{member}", case, seed=seed)
            assert not result.passed, f"{member} passes {check}[{name}] at seed {seed}: {result.detail}"


@pytest.mark.parametrize("check", STABILITY)
def test_stability_checks_fail_the_zoo_unless_declared_and_need_a_reference(toy, toy_without_reference, check):
    for member in degenerate.MEMBERS:
        result = score(check, f"pytest_xai.explainers.degenerate:{member}", toy)
        assert checks.CHECKS[check].exemption(member, toy.name) or not result.passed, f"{member}: {result.detail}"
    with pytest.raises(NotApplicable, match="judged against the reference"):
        score(check, REF, toy_without_reference)


def test_completeness_needs_a_claim_and_knows_the_baseline_form(toy):
    A = contract.run(contract.load(REF), toy).attributions
    with pytest.raises(NotApplicable, match="does not claim completeness"):
        checks.CHECKS["completeness"].func(A, toy, rtol=0.01)
    linear = pytest_xai.make_case(
        toy.inputs, predict=lambda X: np.asarray(X) @ [1.0, -2.0, 0.5, 0.0, 3.0], baseline=np.zeros(5)
    )
    ig = linear.inputs * np.array([1.0, -2.0, 0.5, 0.0, 3.0])  # exact IG of a linear model from 0
    assert generic.completeness(ig, linear, claim="baseline", rtol=1e-9).passed
    assert not generic.completeness(ig + 0.1, linear, claim="baseline", rtol=0.01).passed


def test_checks_skip_with_what_they_need(toy):
    A = np.zeros(np.shape(toy.inputs))
    with pytest.raises(NotApplicable, match="randomise=lambda model, seed"):
        checks.CHECKS["model_randomisation"].func(A, toy, reexplain=lambda *a, **k: A)
    with pytest.raises(NotApplicable, match="train=\\(X, y\\)"):
        checks.CHECKS["data_randomisation"].func(A, toy, reexplain=lambda *a, **k: A)


def _diabetes(estimator):
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X = X[:, :6]
    model = estimator.fit(X[:300], y[:300])
    return pytest_xai.make_case(
        X[300:316],
        model=model,
        background=X[:16],
        train=(X[:300], y[:300]),
        randomise=lambda m, seed: _shuffled_leaves(m, seed),
    )


def _shuffled_leaves(model, seed):
    import copy

    out = copy.deepcopy(model)
    rng = np.random.default_rng(seed)
    for tree in getattr(out, "estimators_", np.empty(0)).ravel():
        tree.tree_.value[:] = rng.normal(0, tree.tree_.value.std() + 1e-12, size=tree.tree_.value.shape)
    return out


def _gbm():
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0)


def _xgb():
    xgboost = pytest.importorskip("xgboost")
    return xgboost.XGBRegressor(n_estimators=30, max_depth=3, random_state=0, n_jobs=1)


@pytest.mark.parametrize("make", [_gbm, _xgb], ids=["sklearn", "xgboost"])
def test_data_randomisation_refits_a_clone_on_permuted_labels(make):
    case = _diabetes(make())
    assert score("data_randomisation", REF, case).passed
    assert not score("data_randomisation", "pytest_xai.explainers.degenerate:input_itself", case).passed
    assert case.meta["label_randomised"] is not case.model
    assert type(case.meta["label_randomised"]) is type(case.model)


def test_model_randomisation_uses_the_users_randomise():
    case = _diabetes(_gbm())
    assert score("model_randomisation", REF, case).passed
    assert not score("model_randomisation", "pytest_xai.explainers.degenerate:input_minus_mean", case).passed


def test_unusable_model_type_names_the_type_and_the_annotation(toy):
    def wants_sklearn(inputs, model):
        return model.predict_proba(inputs)

    with pytest.raises(contract.ModelTypeError, match="model = a builtins.function.*annotate the parameter"):
        contract.run(_loaded(wants_sklearn), toy)


def test_per_row_targets_reach_the_explainer_and_the_checks():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))

    def proba(X):
        z = np.asarray(X) @ np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0], [0.5, 0.0, 0.5]])
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    predicted = proba(X).argmax(axis=1)
    case = pytest_xai.make_case(X, predict=proba, target=predicted, background=X)
    got = contract.arguments(_loaded(lambda inputs, targets: inputs), case, 0)["targets"]
    np.testing.assert_array_equal(got, predicted)
    np.testing.assert_allclose(case.outputs(), proba(X)[np.arange(12), predicted])
    assert score("completeness", per_row_exact, case).passed
    A = contract.run(_loaded(per_row_exact), case).attributions
    fixed = pytest_xai.make_case(X, predict=proba, target=0, background=X)  # the same values, class 0's sums
    assert not generic.completeness(A, fixed, claim="background", rtol=0.01).passed


def per_row_exact(inputs, predict, background, targets):
    """Exact Shapley values of each row's own class (an explainer taking Quantus-style targets)."""
    out = np.zeros(inputs.shape)
    for c in np.unique(targets):
        rows = np.broadcast_to(targets, (len(inputs),)) == c
        out[rows] = degenerate.exact_shapley(inputs[rows], predict, background, int(c))
    return out


def test_units_networks_accept_float32_input():
    torch = pytest.importorskip("torch")
    case = cases.get("units_weighted_features")
    x = np.asarray(case.inputs[:4])
    x32 = torch.as_tensor(x, dtype=torch.float32, device="cpu").requires_grad_(True)
    out = case.torch_model(x32)
    out.sum().backward()
    assert x32.grad.dtype == torch.float32
    np.testing.assert_allclose(out.detach().numpy(), case.torch_model(torch.as_tensor(x)).detach().numpy(), rtol=1e-6)
