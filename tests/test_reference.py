"""The reference of a case without a known truth (pytest_xai.reference): exact Shapley values agree
with pytest_xai.shapley and shapiq, the estimate's stated bounds hold, and the reference is per
target, per group, per convention, memoised, cached and can be turned off."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_xai
from pytest_xai import NotApplicable, cases, reference, shapley
from pytest_xai.cache import Cache
from pytest_xai.usercase import predict_of


def _network(d: int, seed: int):
    """A random two-layer tanh network with an interaction: a model no explainer is exact on by luck."""
    rng = np.random.default_rng(seed)
    W, w = rng.normal(size=(d, 8)), rng.normal(size=8)
    return lambda X: np.tanh(np.asarray(X, dtype=float) @ W) @ w + np.asarray(X)[:, 0] * np.asarray(X)[:, 1]


def test_exact_path_agrees_with_enumeration_and_shapiq_to_1e_9():
    shapiq = pytest.importorskip("shapiq")
    rng = np.random.default_rng(3)
    d = 7
    f = _network(d, 3)
    X, B = rng.normal(size=(4, d)), rng.normal(size=(11, d))
    ref = reference.compute(f, X, B)
    assert ref.method == "exact" and ref.max_error == 0.0 and ref.evaluations == 4 * 2**d * 11
    np.testing.assert_allclose(ref.values, shapley.interventional(f, X, B), atol=1e-9, rtol=0)
    for r, x in enumerate(X):

        def game(coalitions, x=x):
            hybrid = np.where(np.asarray(coalitions, bool)[:, None, :], x[None, None, :], B[None])
            return f(hybrid.reshape(-1, d)).reshape(len(coalitions), len(B)).mean(axis=1)

        values = shapiq.ExactComputer(game, n_players=d)("SV").get_n_order_values(1)
        np.testing.assert_allclose(ref.values[r], values, atol=1e-9, rtol=0)


def test_estimated_bounds_hold_in_at_least_95_percent_of_200_seeded_trials():
    rng = np.random.default_rng(4)
    d, n, m = 9, 5, 7
    f = _network(d, 4)
    X, B = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    truth = shapley.interventional(f, X, B)
    budget = n * m * (2 + 2 * reference.fewest_pairs(m) * (d - 1))  # the smallest estimate: 2 pairs per row
    within = within_rms = 0
    for seed in range(200):
        est = reference.compute(f, X, B, budget=budget, seed=seed)
        assert est.method == "permutation" and est.evaluations <= budget
        within += bool((np.abs(est.values - truth) <= est.max_error).all())
        within_rms += bool(np.sqrt(np.mean(np.square(est.values - truth))) <= est.rms_error)
    assert within >= 190 and within_rms >= 190, (within, within_rms)
    np.testing.assert_allclose(est.values.sum(axis=1), f(X) - f(B).mean(), atol=1e-9)  # each order is efficient


def test_the_estimate_is_unbiased_and_tightens_with_the_budget():
    rng = np.random.default_rng(5)
    d, n, m = 10, 3, 5
    f = _network(d, 5)
    X, B = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    truth = shapley.interventional(f, X, B)
    large = n * m * 2**d - 1  # one evaluation short of exact
    small = n * m * (2 + 2 * reference.fewest_pairs(m) * (d - 1))
    runs = [reference.compute(f, X, B, budget=large, seed=s) for s in range(40)]
    assert all(r.method == "permutation" and r.evaluations <= large for r in runs)
    assert np.abs(np.mean([r.values for r in runs], axis=0) - truth).max() < 0.25 * runs[0].max_error
    assert runs[0].max_error < reference.compute(f, X, B, budget=small, seed=0).max_error


def _plain_permutation(f, X, B, pairs, seed):
    """Antithetic permutation sampling of the interventional game itself (each coalition averaged
    over every background row): the estimator before the stratified one, for comparison."""
    game = reference._Game(f, X, B, None, None)
    n, G = game.n, game.d
    rng = np.random.default_rng(seed)
    estimate = np.zeros((n, G))
    for _ in range(pairs):
        order = rng.random((n, G)).argsort(axis=1)
        for orders in (order, order[:, ::-1]):
            masks = orders.argsort(axis=1)[:, None, :] < np.arange(G + 1)[None, :, None]
            gains = np.empty((n, G))
            np.put_along_axis(gains, orders, np.diff(game.values(np.arange(n), masks), axis=1), axis=1)
            estimate += gains
    return estimate / (2 * pairs), game.evaluations


def test_stratified_over_the_background_the_estimate_errs_less_than_plain_permutation_sampling():
    """At the same number of model evaluations, permutations of each background row's game (every
    row the same number) err less than permutations of the averaged game: a quarter less RMS error here."""
    rng = np.random.default_rng(11)
    d, n, m = 10, 3, 10
    f = _network(d, 11)
    X, B = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    truth = shapley.interventional(f, X, B)
    plain, stratified = [], []
    for seed in range(20):
        values, spent = _plain_permutation(f, X, B, 16, seed)
        est = reference.compute(f, X, B, budget=spent, seed=seed)
        assert est.method == "permutation" and est.evaluations <= spent
        plain.append(np.sqrt(np.mean(np.square(values - truth))))
        stratified.append(np.sqrt(np.mean(np.square(est.values - truth))))
    assert np.mean(stratified) < 0.85 * np.mean(plain), (np.mean(stratified), np.mean(plain))  # 0.039 vs 0.053


def test_per_row_targets_groups_and_the_baseline_game():
    rng = np.random.default_rng(6)
    d = 6
    g = _network(d, 6)

    def proba(X):
        p = 1 / (1 + np.exp(-g(X)))
        return np.stack([1 - p, p], axis=1)

    X, B = rng.normal(size=(4, d)), rng.normal(size=(6, d))
    targets = np.array([0, 1, 1, 0])
    ref = reference.compute(proba, X, B, target=targets)
    for r in range(4):
        np.testing.assert_allclose(
            ref.values[r], shapley.interventional(proba, X[r : r + 1], B, int(targets[r]))[0], atol=1e-12
        )
    baseline = np.zeros(d)
    np.testing.assert_allclose(
        reference.compute(g, X, baseline[None], convention="baseline").values,
        shapley.interventional(g, X, baseline[None]),
        atol=1e-12,
    )
    groups = np.array([0, 0, 1, 1, 2, 2])
    grouped = reference.compute(g, X, B, groups=groups)

    def pairs(Z):  # the same model as a function of the three groups, each group one player
        return g(np.repeat(Z, 2, axis=1))

    Xg, Bg = X[:, ::2], B[:, ::2]
    X2, B2 = np.repeat(Xg, 2, axis=1), np.repeat(Bg, 2, axis=1)
    np.testing.assert_allclose(
        reference.compute(g, X2, B2, groups=groups).values,
        np.repeat(shapley.interventional(pairs, Xg, Bg), 2, axis=1),
        atol=1e-12,
    )
    assert grouped.values.shape == X.shape and (grouped.values[:, 0] == grouped.values[:, 1]).all()


def _case(seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    f = _network(5, seed)
    return pytest_xai.make_case(
        rng.normal(size=(6, 5)),
        predict=f,
        background=rng.normal(size=(8, 5)),
        baseline=np.zeros(5),
        name="ref_case",
        **kwargs,
    )


def test_for_case_is_memoised_per_case_and_says_why_there_is_none():
    case = _case()
    first = reference.for_case(case)
    assert reference.for_case(case) is first and first.summary()["method"] == "exact"
    assert reference.for_case(case, "baseline").values.shape == case.inputs.shape
    with pytest.raises(NotApplicable, match=r"turned off .*reference=False"):
        reference.for_case(_case(reference=False))
    with pytest.raises(NotApplicable, match="needs 2 antithetic pairs of permutations per background row"):
        reference.for_case(_case(reference=100))
    with pytest.raises(ValueError, match="reference must be True, False or a positive number"):
        _case(reference=-1)


def test_the_disk_cache_stores_it_and_a_changed_model_recomputes(tmp_path, monkeypatch):
    calls = []
    compute = reference.compute

    def counting(*args, **kwargs):
        calls.append(1)
        return compute(*args, **kwargs)

    monkeypatch.setattr(reference, "compute", counting)
    cache = Cache(tmp_path)

    @pytest_xai.register_case(name="ref_cached", checks=["faithfulness"])
    def ref_cached(seed):
        return _case(seed)

    try:
        case = cases.get("ref_cached", cache=cache)
        one = reference.for_case(case)
        reference._MEMO.clear()  # as a new session would: read from disk
        np.testing.assert_array_equal(reference.for_case(case).values, one.values)
        assert len(calls) == 1
        other = reference.for_case(cases.get("ref_cached", seed=1, cache=cache))  # another model
        assert len(calls) == 2 and not np.allclose(other.values, one.values)
    finally:
        cases.CASES.pop("ref_cached", None)


def _models(d: int):
    """Tree ensembles and linear models of scikit-learn and xgboost on d features with an
    interaction, each with the output its case explains: (name, model, predict, target)."""
    import xgboost
    from sklearn import ensemble, linear_model, tree

    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, d))
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=300)
    label = (y > 0).astype(int)
    fitted = [
        ("decision tree", tree.DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y), "predict", None),
        ("forest proba", ensemble.RandomForestClassifier(15, max_depth=5, random_state=0).fit(X, label), "proba", 1),
        ("extra trees", ensemble.ExtraTreesRegressor(10, max_depth=6, random_state=0).fit(X, y), "predict", None),
        ("gbm", ensemble.GradientBoostingRegressor(n_estimators=20, random_state=0).fit(X, y), "predict", None),
        (
            "gbm margin",
            ensemble.GradientBoostingClassifier(n_estimators=20, random_state=0).fit(X, label),
            "margin",
            None,
        ),
        ("xgb", xgboost.XGBRegressor(n_estimators=20, max_depth=4, n_jobs=1).fit(X, y), "predict", None),
        ("xgb margin", xgboost.XGBClassifier(n_estimators=20, max_depth=4, n_jobs=1).fit(X, label), "margin", None),
        ("ridge", linear_model.Ridge().fit(X, y), "predict", None),
        ("logistic margin", linear_model.LogisticRegression().fit(X, label), "margin", None),
    ]
    out = []
    for name, model, kind, target in fitted:
        predict = predict_of(model, "logits" if kind == "margin" else "probabilities")
        out.append((name, model, predict, target))
    return out


def test_tree_ensembles_and_linear_models_get_an_exact_reference_equal_to_enumeration_to_1e_9():
    from pytest_xai import model_shapley

    d = 10
    rng = np.random.default_rng(8)
    X, B = rng.normal(size=(3, d)), rng.normal(size=(8, d))
    models = _models(d)
    for name, model, predict, target in models:
        ref = reference.compute(predict, X, B, target=target, model=model, budget=1000)  # enumeration would not fit
        assert ref.method == ("linear" if "ridge" in name or "logistic" in name else "tree"), name
        assert ref.max_error == 0.0 and ref.evaluations == 2 * len(X) + len(B), name
        # enumeration of the model's own sum of leaves (xgboost predicts in float32: 1e-7 apart)
        form = model_shapley.form_of(model)
        own = lambda Z, form=form, t=target: form.outputs(np.asarray(Z))[:, t or 0]
        np.testing.assert_allclose(ref.values, shapley.interventional(own, X, B), atol=1e-9, rtol=0, err_msg=name)
        tolerance = 1e-6 if "xgb" in name else 1e-9
        enumerated = reference.exact(reference._Game(predict, X, B, target, None))
        np.testing.assert_allclose(ref.values, enumerated, atol=tolerance, rtol=0, err_msg=name)
    forest = models[1][1]  # one column of its probabilities, without a target
    column = reference.compute(lambda Z: forest.predict_proba(Z)[:, 1], X, B, model=forest, budget=1000)
    assert column.method == "tree"
    np.testing.assert_allclose(column.values, reference.compute(forest.predict_proba, X, B, target=1).values, atol=1e-9)
    groups = np.repeat(np.arange(5), 2)  # a linear model's group gets the sum of its features' values
    ridge, predict = models[7][1:3]
    grouped = reference.compute(predict, X, B, groups=groups, model=ridge, budget=1000)
    assert grouped.method == "linear"
    np.testing.assert_allclose(grouped.values, reference.compute(predict, X, B, groups=groups).values, atol=1e-9)


def test_an_output_that_is_not_the_sum_of_the_trees_is_computed_from_the_outputs_instead():
    """A boosted classifier's probability is a sigmoid of its trees' sum, a logistic regression's of
    its linear function: neither is additive, so their references come from the model's outputs
    (enumerated here, estimated beyond the budget)."""
    import xgboost
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(9)
    X = rng.normal(size=(200, 6))
    label = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    for model in (xgboost.XGBClassifier(n_estimators=10, n_jobs=1).fit(X, label), LogisticRegression().fit(X, label)):
        ref = reference.compute(model.predict_proba, X[:3], X[100:110], target=1, model=model)
        assert ref.method == "exact", type(model).__name__  # coalition enumeration of predict_proba
        exact = reference.compute(model.predict_proba, X[:3], X[100:110], target=1)
        np.testing.assert_allclose(ref.values, exact.values, atol=1e-12)


@pytest.mark.parametrize("kind", ["forest", "xgboost"])
def test_a_40_feature_tree_model_explained_on_240_rows_gets_an_exact_reference(kind):
    """Issue 42: 240 rows of a 40-feature model against 100 background rows got no reference (8
    antithetic pairs need more than the budget); the trees give the exact values, as shap's own
    interventional TreeExplainer computes them."""
    shap = pytest.importorskip("shap")
    rng = np.random.default_rng(10)
    X = rng.normal(size=(600, 40))
    label = (X[:, :5].sum(axis=1) + X[:, 5] * X[:, 6] > 0).astype(int)
    if kind == "forest":
        from sklearn.ensemble import RandomForestClassifier

        model = RandomForestClassifier(20, max_depth=5, random_state=0, n_jobs=1).fit(X, label)
    else:
        import xgboost

        model = xgboost.XGBClassifier(n_estimators=20, max_depth=4, n_jobs=1).fit(X, label)
    case = pytest_xai.make_case(
        X[:240], model=model, background=X[300:400], output="probabilities" if kind == "forest" else "logits"
    )
    ref = reference.for_case(case)
    assert ref.method == "tree" and ref.max_error == 0.0 and ref.evaluations == 580
    values = np.asarray(
        shap.TreeExplainer(model, X[300:400], feature_perturbation="interventional").shap_values(X[:240])
    )
    np.testing.assert_allclose(ref.values, values[..., 1] if values.ndim == 3 else values, atol=1e-6)
