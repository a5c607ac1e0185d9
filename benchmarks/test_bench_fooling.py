"""The fooling cases' detector (a 100-tree random forest, walked from its public ``tree_`` arrays) on
the rows KernelSHAP asks it about, against the naive way and against sklearn, in the same run.

- "this code": :meth:`pytest_xai.cases.fooling.Forest.in_distribution`: rows deduplicated on one
  integer key, then all trees walked together in cache-sized chunks of (row, tree) pairs;
- "row dedup, tree by tree": ``np.unique(rows, axis=0)`` (the dedup of the suite before the
  integer key) and one tree at a time (the walk before the chunks);
- "sklearn predict_proba": a forest trained here, in sklearn's compiled code, as the reference (the
  cases' own forests are not stored, only their arrays).

The scaffolds route a row by ``P >= 0.5`` alone: :meth:`~pytest_xai.cases.fooling.Forest.is_in_distribution`
(the trees that decide each row) against the full probability from every tree.

Every way gives the same probabilities to 1e-12, and the same routing.  Run with
``pytest benchmarks/test_bench_fooling.py -p no:xdist``.
"""

import numpy as np
import pytest

from pytest_xai import cases
from pytest_xai.cases import fooling

ROWS = 100_000  # about what one KernelSHAP call sends a scaffold (1,022 coalitions x 97 background rows)


def row_dedup_tree_by_tree(forest: fooling.Forest, X) -> np.ndarray:
    """The naive way: dedup whole rows, then walk each tree over them, one tree level per pass."""
    rows = np.ascontiguousarray(np.asarray(X, dtype=float)[:, forest.columns], dtype=np.float32)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    n, d = unique.shape
    flat, starts = unique.astype(np.float64).ravel(), np.arange(n) * d
    total = np.zeros(n)
    for root in forest.roots:
        node, active = np.full(n, root), np.arange(n)
        while active.size:
            at = node[active]
            at = forest.children[2 * at + (flat[starts[active] + forest.feature[at]] <= forest.threshold[at])]
            node[active] = at
            active = active[~forest.is_leaf[at]]
        total += forest.p_real[node]
    return (total / len(forest.roots))[inverse.reshape(-1)]


def hybrids(points, background, rng) -> np.ndarray:
    """KernelSHAP-like rows: each feature from an explained point or from a background row."""
    keep = rng.random((ROWS, points.shape[1])) < 0.5
    return np.where(
        keep, points[rng.integers(0, len(points), ROWS)], background[rng.integers(0, len(background), ROWS)]
    )


@pytest.fixture(scope="module", params=["compas_shap_scaffold", "compas_lime_scaffold"])
def scaffold(request):
    case = cases.get(request.param)
    return request.param, case.model.detector, hybrids(case.inputs, case.background, np.random.default_rng(0))


@pytest.mark.parametrize("way", ["this code", "row dedup, tree by tree"])
def test_scaffold_detector(benchmark, scaffold, way):
    name, forest, rows = scaffold
    benchmark.group = f"fooling detector on {ROWS:,} coalition rows: {name}"
    func = forest.in_distribution if way == "this code" else lambda X: row_dedup_tree_by_tree(forest, X)
    p = benchmark.pedantic(func, args=(rows,), rounds=3)
    np.testing.assert_allclose(p, row_dedup_tree_by_tree(forest, rows), rtol=0, atol=1e-12)


@pytest.mark.parametrize("way", ["the trees that decide", "every tree"])
def test_scaffold_routing(benchmark, scaffold, way):
    name, forest, rows = scaffold
    benchmark.group = f"fooling routing (P >= 0.5) on {ROWS:,} coalition rows: {name}"
    func = forest.is_in_distribution if way == "the trees that decide" else lambda X: forest.in_distribution(X) >= 0.5
    routed = benchmark.pedantic(func, args=(rows,), rounds=3)
    assert np.array_equal(routed, forest.in_distribution(rows) >= 0.5)


@pytest.fixture(scope="module")
def trained():
    """A forest of the detectors' shape (100 trees) trained here, so sklearn's own predict can run."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4_000, 6))
    y = (X[:, 0] + rng.normal(size=4_000) > 0).astype(int)
    forest = RandomForestClassifier(100, random_state=0, n_jobs=1).fit(X, y)
    return forest, hybrids(X[:50], X[50:150], rng)


@pytest.mark.parametrize("way", ["this code", "sklearn predict_proba"])
def test_trained_forest(benchmark, trained, way):
    forest, rows = trained
    benchmark.group = f"fooling detector on {ROWS:,} coalition rows: a forest trained here"
    walk = fooling.Forest(fooling.Forest.arrays_of(forest, list(range(rows.shape[1]))))
    func = walk.in_distribution if way == "this code" else lambda X: forest.predict_proba(X.astype(np.float32))[:, 1]
    p = benchmark.pedantic(func, args=(rows,), rounds=3)
    np.testing.assert_allclose(p, forest.predict_proba(rows.astype(np.float32))[:, 1], rtol=0, atol=1e-12)
