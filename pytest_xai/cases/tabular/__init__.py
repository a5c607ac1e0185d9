"""Compare-xAI's tabular toy problems, with corrected scoring (``docs/defects.md``).

Belaid et al., "Compare-xAI" (2022), tests 2.1-2.3 and 2.7; the defects CX-3, CX-4, CX-7 and CX-8 of the
original are fixed here and in the family's checks (:mod:`.checks`: ``symmetry``, ``symmetric_effect``,
``dummy``, ``ranking``, ``correlated``).  XGBoost models are fitted with ``reg_lambda=0`` (CX-7) and
verified at build time to reproduce the stated function exactly.
"""

from __future__ import annotations

from functools import reduce
from math import gcd

import numpy as np

from pytest_xai import shapley
from pytest_xai.case import Case, CaseInfo, Later
from pytest_xai.cases.tabular.checks import (
    correlated,
    dummy,
    explains_nothing,
    ranking,
    switch_pairs,
    symmetric_effect,
    symmetry,
)
from pytest_xai.registry import Family

__all__ = [
    "COMPARE_XAI",
    "FAMILY",
    "correlated",
    "dummy",
    "explains_nothing",
    "ranking",
    "summarise",
    "switch_pairs",
    "symmetric_effect",
    "symmetry",
    "torch_twin",
]

COMPARE_XAI = "Belaid et al. 2022, Compare-xAI"
FAMILY = Family(
    "tabular", source=COMPARE_XAI, smoke=("symmetry", "cough_and_fever"), libraries=("xgboost",)
)  # the torch twins are built on first use (Later)
MAX_BACKGROUND = 100


def summarise(X: np.ndarray, max_rows: int = MAX_BACKGROUND, seed: int = 0) -> np.ndarray:
    """A background of at most ``max_rows`` rows with the distribution of ``X``.

    Discrete data keep their exact distribution: unique rows repeated by their counts divided by
    the counts' gcd (20,000 rows of Cough & Fever become 4).  Otherwise proportional allocation over
    unique rows, and for continuous data a seeded sample (Compare-xAI passed all 20,000 rows to
    KernelSHAP, which is most of its 4 h run time).
    """
    rows, counts = np.unique(X, axis=0, return_counts=True)
    if len(rows) <= max_rows:
        counts = counts // reduce(gcd, counts.tolist())
        if counts.sum() > max_rows:
            exact = counts / counts.sum() * max_rows
            counts = np.maximum(1, np.floor(exact)).astype(int)
        return np.repeat(rows, counts, axis=0)
    pick = np.random.default_rng(seed).choice(len(X), size=max_rows, replace=False)
    return X[np.sort(pick)]


def _binary_grid(n_features: int, repeat: int) -> np.ndarray:
    """All binary points in lexicographic order (x0 slowest), each repeated ``repeat`` times."""
    points = ((np.arange(2**n_features)[:, None] >> np.arange(n_features)[::-1]) & 1).astype(float)
    return np.repeat(points, repeat, axis=0)


def _xgboost_model(
    info: CaseInfo, cache, X: np.ndarray, y: np.ndarray, points: np.ndarray, n_estimators: int, max_depth: int
):
    """XGBRegressor as in Compare-xAI (eta=1, base_score=0) but with reg_lambda=0 (CX-7), cached."""
    import xgboost

    params = {
        "objective": "reg:squarederror",
        "n_estimators": n_estimators,
        "max_depth": max_depth,
        "learning_rate": 1.0,
        "base_score": 0.0,
        "reg_lambda": 0.0,
        "min_child_weight": 0.0,
        "random_state": 0,
        "tree_method": "exact",
        "n_jobs": 1,
    }
    truth = np.array([y[np.all(X == p, axis=1)][0] for p in points])
    tolerance = 1e-6 * max(1.0, float(np.ptp(truth)))

    def build():
        return xgboost.XGBRegressor(**params).fit(X, y)

    def validate(model):
        error = np.abs(model.predict(points) - truth).max()
        if error > tolerance:
            raise ValueError(f"{info.name}: the fitted model misses the target function by {error:g}")

    return cache.xgboost(info.name, {"params": params, "n": len(X)}, build, validate)


def _predict_xgboost(model):
    def predict(X):
        return np.asarray(model.predict(np.asarray(X, dtype=float)), dtype=float)

    return predict


def torch_twin(formula) -> Later:
    """A parameter-free torch module computing ``formula`` (column arithmetic that works on numpy
    arrays and torch tensors alike), so gradient explainers run on these cases; None without torch.
    Built on first read (:class:`pytest_xai.case.Later`): an explainer that needs no twin never
    imports torch.

    On every data point the twin equals the case's model; between points it is the polynomial
    extension of the stated function (what Integrated Gradients integrates along its path).
    """

    def build():
        try:
            import torch
        except ImportError:
            return None

        class Formula(torch.nn.Module):
            def forward(self, x):
                return formula(x)

        return Formula().eval()

    return Later(build)


def _tabular_case(info, cache, X, formula, n_estimators, max_depth, feature_names, **fields) -> Case:
    """The XGBoost model fitted to y = formula(X), its torch twin, and exact Shapley values."""
    y = formula(X)
    points = np.unique(X, axis=0)
    model = _xgboost_model(info, cache, X, y, points, n_estimators, max_depth)
    predict = _predict_xgboost(model)
    background = summarise(X)
    return Case(
        info=info,
        inputs=points,
        predict=predict,
        model=model,
        background=background,
        torch_model=torch_twin(formula),
        baseline=np.zeros(X.shape[1]),
        feature_names=feature_names,
        truth={"shapley": shapley.interventional(predict, points, background)},
        meta={"full_background": X},
        **fields,
    )


@FAMILY.case(
    category="fidelity",
    source="test cough_and_fever",
    checks={"symmetry": {"features": (0, 1), "mirror": (0, 2, 1, 3)}},
)
def cough_and_fever(info, *, seed, cache) -> Case:
    """y = 80 (cough AND fever): the two symmetric features deserve equal, mirrored credit."""
    return _tabular_case(
        info, cache, _binary_grid(2, 5000), lambda x: 80.0 * x[:, 0] * x[:, 1], 2, 2, ["cough", "fever"]
    )


@FAMILY.case(category="fidelity", source="test cough_and_fever_10_90", checks={"ranking": {"feature": 0, "rows": (3,)}})
def cough_and_fever_10_90(info, *, seed, cache) -> Case:
    """y = 80 (cough AND fever) + 10 cough: cough matters more, globally and at (1, 1)."""
    return _tabular_case(
        info,
        cache,
        _binary_grid(2, 5000),
        lambda x: 80.0 * x[:, 0] * x[:, 1] + 10.0 * x[:, 0],
        2,
        2,
        ["cough", "fever"],
    )


@FAMILY.case(category="fidelity", source="test a_and_b_or_c", checks={"ranking": {"feature": 0}})
def a_and_b_or_c(info, *, seed, cache) -> Case:
    """y = A AND (B OR C): A is the most important feature (importance 0.375 vs 0.125, 0.125)."""
    a_and_b_or_c = lambda x: x[:, 0] * (x[:, 1] + x[:, 2] - x[:, 1] * x[:, 2])
    return _tabular_case(info, cache, _binary_grid(3, 2500), a_and_b_or_c, 1, 3, ["A", "B", "C"])


def _b_squared(X):
    return X[:, 1] ** 2


@FAMILY.case(
    category="fidelity",
    source="test counterexample_dummy_axiom (Sundararajan & Najmi 2020)",
    checks={"dummy": {"features": (0,)}},
    libraries=(),
)
def counterexample_dummy_axiom(info, *, seed, cache) -> Case:
    """f(a, b) = b^2 on a 6x6 grid: a is a dummy and must get zero attribution."""
    grid = np.array([(a, b) for a in range(6) for b in range(6)], dtype=float)
    X = np.repeat(grid, 555, axis=0)
    background = summarise(X)
    return Case(
        info=info,
        inputs=grid,
        predict=_b_squared,
        model=_b_squared,
        background=background,
        baseline=np.zeros(2),
        feature_names=["a", "b"],
        torch_model=torch_twin(_b_squared),
        truth={"shapley": shapley.interventional(_b_squared, grid, background)},
        meta={"full_background": X},
    )


# ------------------------------------------------ x0 + x1 under three distributions (2.4-2.6)


def _a_plus_b(X):
    """x0 + x1 (and a + b for correlated_features: column 2 is unused)."""
    return X[:, 0] + X[:, 1]


_X0_PLUS_X1_CHECKS = {"symmetry": {"features": (0, 1)}, "symmetric_effect": {"features": (0, 1)}}


def _x0_plus_x1_case(info, cache, counts) -> Case:
    """y = x0 + x1 on binary data whose cells (0,0), (1,1), (1,0), (0,1) have the given counts.

    The training set is also the background (summarised exactly: the counts divided by their gcd),
    the model an XGBoost tree (depth 2, reg_lambda=0) verified to reproduce x0 + x1 exactly (CX-7).
    Scored with importance symmetry (mean |phi| over the 4 points is 0.5 for both features under the
    interventional and baseline conventions, CX-6.1) and the offset-free ``symmetric_effect`` (CX-6.2),
    not the original mirrored attributions, which differ by |E[x0] - E[x1]| for correct
    interventional values.
    """
    cells = np.array([(0, 0), (1, 1), (1, 0), (0, 1)], dtype=float)
    X = np.repeat(cells, counts, axis=0)
    return _tabular_case(info, cache, X, _a_plus_b, 1, 2, ["x0", "x1"])


@FAMILY.case(
    category="stability",
    source="test x0_plus_x1_distrib_non_uniform_stat_dep (Janzing et al. 2020)",
    checks=_X0_PLUS_X1_CHECKS,
)
def x0_plus_x1_non_uniform_stat_dep(info, *, seed, cache) -> Case:
    """y = x0 + x1 on dependent, non-uniform data: (0,0)x50, (1,1)x100, (1,0)x450, (0,1)x1050.

    E[x0] = 1/3, E[x1] = 23/33.  Observational (conditional) Shapley is not importance-symmetric
    here; interventional and baseline values are."""
    return _x0_plus_x1_case(info, cache, [50, 100, 450, 1050])


@FAMILY.case(
    category="stability",
    source="test x0_plus_x1_distrib_uniform_stat_dep (Janzing et al. 2020)",
    checks=_X0_PLUS_X1_CHECKS,
)
def x0_plus_x1_uniform_stat_dep(info, *, seed, cache) -> Case:
    """y = x0 + x1 on dependent data with uniform marginals: (0,0)x4500, (1,1)x4500, (1,0)x500, (0,1)x500."""
    return _x0_plus_x1_case(info, cache, [4500, 4500, 500, 500])


@FAMILY.case(
    category="stability",
    source="test x0_plus_x1_distrib_non_uniform_stat_indep (Janzing et al. 2020)",
    checks=_X0_PLUS_X1_CHECKS,
)
def x0_plus_x1_non_uniform_stat_indep(info, *, seed, cache) -> Case:
    """y = x0 + x1 on independent data, P(x0=1) = 0.25, P(x1=1) = 0.75: (0,0)x1875, (1,1)x1875,
    (1,0)x625, (0,1)x5625.  Observational Shapley equals interventional here."""
    return _x0_plus_x1_case(info, cache, [1875, 1875, 625, 5625])


# ----------------------------------------------------------------- correlated features (2.8)


@FAMILY.case(
    category="fragility",
    source="test correlated_features (Kumar et al. 2020)",
    checks={"correlated": {"used": 1, "twin": 2}},
    libraries=(),
)
def correlated_features(info, *, seed, cache) -> Case:
    """f(a, b, c) = a + b on 6 points (a_k, k, k), k = 0..5: c is an exact copy of b but unused.

    a_k are seeded integers in 1..9 (unseeded in the original, CX-5).  The model is the plain function
    for every explainer (CX-11: no separate XGBoost for tree explainers, which may split on c instead
    of b, so tree explainers do not apply).  Interventional convention: phi_c = 0 and
    phi_b = b - E[b]; under observational Shapley phi_b = phi_c would be correct (see ``correlated``).
    a is itself a function of k, so it may legitimately share credit.
    """
    k = np.arange(6, dtype=float)
    a = np.random.default_rng(seed).integers(1, 10, size=6).astype(float)
    points = np.column_stack([a, k, k])
    X = np.repeat(points, 3333, axis=0)
    background = summarise(X)
    return Case(
        info=info,
        inputs=points,
        predict=_a_plus_b,
        model=_a_plus_b,
        background=background,
        baseline=np.zeros(3),
        feature_names=["a", "b", "c"],
        torch_model=torch_twin(_a_plus_b),
        truth={"shapley": shapley.interventional(_a_plus_b, points, background)},
        meta={"full_background": X},
    )
