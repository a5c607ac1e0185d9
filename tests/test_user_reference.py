"""Issue 27, done when: on the example project and on a user case of our own, each subtly wrong
variant of a correct explainer fails a declared check, and the correct explainer passes every one.

The variants are what a new user's explainer gets wrong (docs/your-model.md, "A reference
for your model"): two
features' credits swapped, one global map for every row, values squared or clipped at 0 (ReLU), a
per-row offset, 30 % noise, and zeros on nine rows in ten.  Each claims completeness as the correct
explainer does.  ``scripts/variant_table.py`` prints the passes per variant and case (also on an older
checkout, for the before/after table), from the same functions.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pytest

import pytest_xai
from pytest_xai import cases, checks
from pytest_xai.cases import generic
from pytest_xai.engine import contract

ROOT = Path(__file__).resolve().parents[1]
#: Checks a case declares that refit or re-initialise its model, left out here (minutes of refits;
#: a fixed corruption of the explanation does not change whether it depends on the model).
REFITS = ("model_randomisation", "data_randomisation")


def _top_two(A):
    return np.argsort(-np.abs(A).mean(axis=0), kind="stable")[:2]


def _swap(A, rng):
    A = A.copy()
    top = _top_two(A)
    A[:, top] = A[:, top[::-1]]
    return A


def _offset(A, rng):
    return A + rng.uniform(0.5, 1.5, (len(A), 1)) * np.sqrt(np.mean(A**2))


def _one_in_ten(A, rng):
    A = A.copy()
    A[np.arange(len(A)) % 10 != 0] = 0.0
    return A


#: name -> corruption of the correct attributions (n, d), given a seeded generator.
VARIANTS = {
    "swap": _swap,
    "global_map": lambda A, rng: np.broadcast_to(np.abs(A).mean(axis=0), A.shape).copy(),
    "squared": lambda A, rng: A**2,
    "relu": lambda A, rng: np.maximum(A, 0.0),
    "offset": _offset,
    "noise_30": lambda A, rng: A + 0.3 * np.sqrt(np.mean(A**2)) * rng.standard_normal(A.shape),
    "nine_in_ten_zero": _one_in_ten,
}


def exact_shapley(inputs, predict, background, target):
    """Exact interventional Shapley values by enumeration (the correct explainer of our own case)."""
    from pytest_xai.explainers.baselines import exact_shapley as exact

    return exact(inputs, predict, background, target)


exact_shapley.completeness = "background"


def variant(name, base):
    """``base`` (a contract callable) with its attributions corrupted by ``VARIANTS[name]``."""
    if name == "exact":
        return base

    def explain(inputs, model, predict, background, target, seed):
        given = {"inputs": inputs, "model": model, "predict": predict, "background": background, "target": target}
        A = np.asarray(base(**{k: given[k] for k in inspect.signature(base).parameters}), dtype=float)
        return VARIANTS[name](A, np.random.default_rng(seed))

    explain.__name__ = name
    explain.completeness = "background"
    return explain


def passes(case, explain, names, seed=0):
    """{check: passed} for ``explain`` on ``case``, the checks called as the suite calls them."""
    explainer = contract.from_function(explain, where="test")
    A = contract.run(explainer, case, seed=seed).attributions
    out = {}
    for name in names:
        info = checks.CHECKS[name]
        params = {**info.thresholds, **case.info.checks.get(name, {})}
        wanted = inspect.signature(info.func).parameters
        if "reexplain" in wanted:
            params["reexplain"] = generic.reexplainer(explain, case, seed=seed)
        if "claim" in wanted:
            params["claim"] = getattr(explain, "completeness", None)
        out[name] = bool(info.func(A, case, **params).passed)
    return out


def cancer_gbm(seed):
    """Our own case: gradient boosting on the first ten breast-cancer features (the "mean" ones),
    explaining the probability of a benign tumour for 16 held-out rows against 30 training rows."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier

    data = load_breast_cancer()
    X, y = data.data[:, :10], data.target
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:400], order[400:]
    model = GradientBoostingClassifier(n_estimators=40, max_depth=3, random_state=seed).fit(X[train], y[train])
    return pytest_xai.make_case(
        X[test][:16], model=model, background=X[train][:30], target=1, feature_names=list(data.feature_names[:10])
    )


OWN_CHECKS = [
    "faithfulness",
    "monotonicity",
    "infidelity",
    "gt_shapley",
    "completeness",
    "determinism",
    "batch_invariance",
    "max_sensitivity",
]


def load_example_project():
    """Import examples/own_model's conftest (it registers diabetes_gbm, diabetes_xgb, cancer_mlp) and
    its explainers; returns the explainers module."""
    folder = ROOT / "examples" / "own_model"
    for name in ("conftest", "explainers"):
        spec = importlib.util.spec_from_file_location(f"own_model_{name}", folder / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def subjects():
    """(case name, correct explainer, declared checks) of the example project and of our own case."""
    explainers = load_example_project()
    pytest_xai.register_case(name="cancer_gbm", checks=OWN_CHECKS, source="scikit-learn load_breast_cancer")(cancer_gbm)
    return [
        (name, explainers.tree_shap, [c for c in cases.info(name).checks if c not in REFITS])
        for name in ("diabetes_gbm", "diabetes_xgb")
    ] + [("cancer_gbm", exact_shapley, OWN_CHECKS)]


@pytest.fixture(scope="module")
def registered():
    before = set(cases.names())
    yield subjects()
    for name in set(cases.names()) - before:
        cases.CASES.pop(name, None)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["exact", *VARIANTS])
def test_each_wrong_variant_fails_a_declared_check_and_the_correct_explainer_passes_all(registered, name):
    for case_name, base, declared in registered:
        case = cases.get(case_name)
        verdicts = passes(case, variant(name, base), declared)
        if name == "exact":
            assert all(verdicts.values()), (case_name, verdicts)
        else:
            fidelity = [c for c in ("faithfulness", "monotonicity", "infidelity", "gt_shapley") if c in verdicts]
            assert not all(verdicts[c] for c in fidelity), (case_name, name, verdicts)


def tree_shap(inputs, model, background, target):
    """shap's interventional TreeExplainer, the explained class of a forest's probabilities."""
    import shap

    values = shap.TreeExplainer(model, data=background, feature_perturbation="interventional").shap_values(inputs)
    values = np.asarray(values)
    return values[..., target] if values.ndim == 3 else values


tree_shap.completeness = "background"


def cancer24(seed, kind):
    """A 24-feature model (breast cancer's first 24 features): a forest's probability of a benign
    tumour, or an xgboost classifier's margin; 60 held-out rows against 50 training rows."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X, y = data.data[:, :24], data.target
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:400], order[400:460]
    if kind == "forest":
        from sklearn.ensemble import RandomForestClassifier

        model = RandomForestClassifier(30, max_depth=6, random_state=seed, n_jobs=1).fit(X[train], y[train])
    else:
        from xgboost import XGBClassifier

        model = XGBClassifier(n_estimators=50, max_depth=4, random_state=seed, n_jobs=1).fit(X[train], y[train])
    return pytest_xai.make_case(
        X[test], model=model, background=X[train][:50], output="logits" if kind == "xgboost" else "probabilities"
    )


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", ["forest", "xgboost"])
def test_clipped_and_noisy_tree_shap_fail_a_calibrated_check_on_a_24_feature_model(kind, seed):
    """Issue 42: on a 24-feature model the estimated reference's error widened every gap, so TreeSHAP
    with negatives clipped or 30 % noise passed faithfulness, monotonicity and infidelity.  The
    reference of a tree model is now exact, and each fails one of them as well as gt_shapley, while
    TreeSHAP itself passes all four."""
    case = cancer24(seed, kind)
    fidelity = ["faithfulness", "monotonicity", "infidelity", "gt_shapley"]
    assert all(passes(case, tree_shap, fidelity, seed=seed).values())
    for name in ("relu", "noise_30"):
        verdicts = passes(case, variant(name, tree_shap), fidelity, seed=seed)
        assert not verdicts["gt_shapley"] and not all(verdicts[c] for c in fidelity[:3]), (name, verdicts)


def tree_shap_probability(inputs, model, background):
    """shap's interventional TreeExplainer of the probability (model_output="probability"): the
    correct explainer of a case that explains a boosted classifier's probability of class 1."""
    import shap

    explainer = shap.TreeExplainer(
        model, data=background, feature_perturbation="interventional", model_output="probability"
    )
    return explainer.shap_values(inputs)


tree_shap_probability.completeness = "background"


@pytest.mark.parametrize("seed", [0, 1])
def test_on_an_estimated_reference_clipped_and_noisy_tree_shap_fail_and_tree_shap_passes(seed):
    """Issue 42: a 24-feature xgboost classifier's probability has no exact reference (a sigmoid of
    the trees' sum).  Before, this budget gave none (8 pairs of the averaged game need 666,000
    evaluations) and the absolute bar failed the correct explainer on infidelity; a reference that
    fits widened the gaps by twice its relative error (0.5 here, 4 pairs per background row).  Judged
    against the interval of the reference's own score (0.003 to 0.012 here), clipped and 30 %-noise
    TreeSHAP fail faithfulness, and shap's TreeExplainer of the probability passes all three."""
    from sklearn.datasets import load_breast_cancer
    from xgboost import XGBClassifier

    data = load_breast_cancer()
    X, y = data.data[:, :24], data.target
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:400], order[400:460]
    model = XGBClassifier(n_estimators=50, max_depth=4, random_state=seed, n_jobs=1).fit(X[train], y[train])
    case = pytest_xai.make_case(X[test], model=model, background=X[train][:30], reference=400_000, seed=seed)
    calibrated = ["faithfulness", "monotonicity", "infidelity"]
    assert all(passes(case, tree_shap_probability, calibrated, seed=seed).values())
    for name in ("relu", "noise_30"):
        verdicts = passes(case, variant(name, tree_shap_probability), calibrated, seed=seed)
        assert not verdicts["faithfulness"], (name, verdicts)


def test_the_exact_values_pass_against_an_estimated_reference_in_95_of_100_seeded_trials():
    """The interval the checks judge against is wide enough: at the smallest estimate (two pairs per
    background row, relative error about 1) the exact Shapley values pass faithfulness, monotonicity
    and infidelity in at least 95 of 100 seeded trials (97 to 100 measured)."""
    from pytest_xai import reference

    rng = np.random.default_rng(14)
    d, n, m = 8, 12, 10
    W, w = rng.normal(size=(d, 8)), rng.normal(size=8)
    f = lambda X: np.tanh(np.asarray(X, dtype=float) @ W) @ w + np.asarray(X)[:, 0] * np.asarray(X)[:, 1]
    X, B = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    truth = reference.compute(f, X, B).values
    budget = n * m * (2 + 2 * reference.fewest_pairs(m) * (d - 1))
    passed = dict.fromkeys(("faithfulness", "monotonicity", "infidelity"), 0)
    for seed in range(100):
        case = pytest_xai.make_case(X, predict=f, background=B, reference=budget, seed=seed)
        assert reference.for_case(case).method == "permutation"
        for name in passed:
            info = checks.CHECKS[name]
            passed[name] += bool(info.func(truth, case, **info.thresholds).passed)
    assert min(passed.values()) >= 95, passed
