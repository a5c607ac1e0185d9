"""The reference of a user case (pytest_xai.reference) against shap's own paths: exact on a 13-feature
forest (40 background rows, 24 explained rows) against shap's ExactExplainer, and estimated on a
30-feature model against shap's PermutationExplainer at about the same number of model evaluations;
exact from the trees of a 40-feature forest and xgboost model (240 rows, 100 background rows) against
shap's interventional TreeExplainer (C++) on the same rows.  Run with
``pytest benchmarks/test_bench_reference.py -p no:xdist``; read the ratios in the table."""

import numpy as np
import pytest

from pytest_xai import reference


@pytest.fixture(scope="module")
def forest13():
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier

    data = load_wine()
    order = np.random.default_rng(0).permutation(len(data.target))
    model = RandomForestClassifier(n_estimators=20, max_depth=5, random_state=0, n_jobs=1)
    model.fit(data.data[order[:120]], data.target[order[:120]])
    predict = lambda X: model.predict_proba(X)[:, 1]
    return predict, data.data[order[120:144]], data.data[order[:40]]


@pytest.fixture(scope="module")
def model30():
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier

    data = load_breast_cancer()
    order = np.random.default_rng(0).permutation(len(data.target))
    model = GradientBoostingClassifier(n_estimators=40, max_depth=3, random_state=0)
    model.fit(data.data[order[:400]], data.target[order[:400]])
    predict = lambda X: model.predict_proba(X)[:, 1]
    return predict, data.data[order[400:424]], data.data[order[:40]]


@pytest.mark.benchmark(group="reference, exact: 13-feature forest, 24 rows, 40 background rows")
@pytest.mark.parametrize("way", ["pytest_xai.reference", "shap ExactExplainer"])
def test_exact_reference_speed(benchmark, forest13, way):
    predict, X, B = forest13
    if way == "pytest_xai.reference":
        values = benchmark.pedantic(lambda: reference.compute(predict, X, B, budget=10_000_000).values, rounds=1)
    else:
        shap = pytest.importorskip("shap")
        explainer = shap.ExactExplainer(predict, shap.maskers.Independent(B, max_samples=len(B)))
        values = benchmark.pedantic(lambda: explainer(X).values, rounds=1)
    np.testing.assert_allclose(values, reference.compute(predict, X, B, budget=10_000_000).values, atol=1e-9)


@pytest.mark.benchmark(group="reference, estimated: 30 features, 24 rows, 40 background rows")
@pytest.mark.parametrize("way", ["pytest_xai.reference", "shap PermutationExplainer"])
def test_estimated_reference_speed(benchmark, model30, way):
    predict, X, B = model30
    budget = 2_000_000
    if way == "pytest_xai.reference":
        result = benchmark.pedantic(lambda: reference.compute(predict, X, B, budget=budget), rounds=1)
        benchmark.extra_info.update(evaluations=result.evaluations, max_error=result.max_error)
    else:
        shap = pytest.importorskip("shap")
        explainer = shap.PermutationExplainer(predict, shap.maskers.Independent(B, max_samples=len(B)), seed=0)
        evals_per_row = budget // len(X) // len(B)  # shap counts max_evals in coalitions, each over the background
        values = benchmark.pedantic(lambda: explainer(X, max_evals=evals_per_row).values, rounds=1)
        np.testing.assert_allclose(values.sum(axis=1), predict(X) - predict(B).mean(), atol=1e-6)


def _wide(kind):
    """A 40-feature model of 100 trees (a forest's probability, or an xgboost classifier's margin),
    240 rows to explain and 100 background rows: what got no reference before issue 42."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 40))
    label = (X[:, :5].sum(axis=1) + X[:, 5] * X[:, 6] + rng.normal(size=2000) > 0).astype(int)
    if kind == "forest":
        from sklearn.ensemble import RandomForestClassifier

        model = RandomForestClassifier(n_estimators=100, max_depth=8, random_state=0, n_jobs=1).fit(X, label)
        predict = lambda Z: model.predict_proba(Z)[:, 1]
    else:
        from xgboost import XGBClassifier

        model = XGBClassifier(n_estimators=100, max_depth=6, random_state=0, n_jobs=1).fit(X, label)
        predict = lambda Z: model.predict(Z, output_margin=True)
    return model, predict, X[:240], X[1000:1100]


@pytest.mark.benchmark(group="reference, exact TreeSHAP: 40 features, 100 trees, 240 rows, 100 background rows")
@pytest.mark.parametrize("kind", ["forest", "xgboost"])
@pytest.mark.parametrize("way", ["pytest_xai.reference", "shap TreeExplainer (interventional)"])
def test_exact_tree_reference_speed(benchmark, kind, way):
    model, predict, X, B = _wide(kind)
    if way == "pytest_xai.reference":
        result = benchmark.pedantic(lambda: reference.compute(predict, X, B, model=model), rounds=1)
        assert result.method == "tree"
        values = result.values
    else:
        shap = pytest.importorskip("shap")
        explainer = shap.TreeExplainer(model, B, feature_perturbation="interventional")
        values = np.asarray(benchmark.pedantic(lambda: explainer.shap_values(X), rounds=1))
        values = values[..., 1] if values.ndim == 3 else values
    np.testing.assert_allclose(values.sum(axis=1), predict(X) - predict(B).mean(), atol=1e-5)
