"""Games whose exact Shapley values are known in closed form at every interaction order.

A sum of unanimity games (Shapley 1953; Harsanyi 1963's dividends): f(x) = sum_T m_T g(x_T), with
g the product or the minimum of the features in the subset T and the zero row as the only
background row (and baseline).  With inputs > 0, g(x_T) vanishes as soon as one feature of T is
absent, so the value function of a row is v_x(S) = sum_{T within S} m_T g(x_T): a unanimity game
whose Moebius coefficients are a_T = m_T g(x_T), and the exact interventional Shapley value is
phi_i(x) = sum_{T containing i} a_T / |T| (:func:`closed_form_shapley`), cross-checked against
enumeration over every coalition in ``tests/test_games.py``.

The subsets go up to every feature (a six-way term), so an estimator or a weighting that is exact
only up to pairwise interactions (kernelshap#168, docs/bugs.md) is off here.  The features are
few (d = 6) and the rows a handful, so an estimator can be called at several budgets and seeds:
the statistical checks of :mod:`.checks` (convergence, unbiasedness, coverage) run here, with ``exactness``
for the explainers that claim exact values.  Inputs are multiples of 1/64, so a model run in
float32 (captum casts the inputs) sees them exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_xai.case import Case, CaseInfo
from pytest_xai.cases.games.checks import convergence, coverage, exactness, unbiasedness
from pytest_xai.registry import Family

__all__ = ["FAMILY", "closed_form_shapley", "convergence", "coverage", "exactness", "unbiasedness"]

SOURCE = "Shapley 1953; Harsanyi 1963 (unanimity games)"
FAMILY = Family("games", source=SOURCE, smoke=("exactness", "games_products"), libraries=("torch",))

D, N_ROWS = 6, 8
#: Model evaluations of the first of the three calls ``convergence`` makes (B, 4B, 16B): 14 a row,
#: where every reference estimator runs and none reaches its preferred sample count before 16B
#: (shap's Permutation needs 2d + 1 = 13 a row for one antithetic pair; captum's
#: ShapleyValueSampling spends d + 2 = 8 a permutation and stops at 25).  ``unbiasedness`` calls at
#: 16B, where one call's error is small enough for a bias of a tenth of the values to show.
ESTIMATOR_BUDGET = 14 * N_ROWS
#: No gt_shapley here: its tolerance is for estimators that converged on smooth models, and a
#: six-way dividend leaves captum's 25 permutations at a normalised error of 0.08; the estimator
#: checks judge estimators by what they claim instead.
_CHECKS: dict[str, dict[str, Any]] = {
    "exactness": {},
    "convergence": {"budget": ESTIMATOR_BUDGET},
    "unbiasedness": {"budget": 16 * ESTIMATOR_BUDGET},
    "coverage": {"budget": 16 * ESTIMATOR_BUDGET},
}


def closed_form_shapley(X: np.ndarray, masks: np.ndarray, coefficients: np.ndarray, kind: str) -> np.ndarray:
    """phi_i(x) = sum_{T containing i} m_T g(x_T) / |T| for f = sum_T m_T g(x_T) against the zero
    row (g the ``"product"`` or ``"minimum"`` over T; inputs > 0)."""
    X, masks = np.asarray(X, dtype=float), np.asarray(masks, dtype=bool)
    if (X <= 0).any():
        raise ValueError("the closed form needs inputs > 0 (g(x_T) must vanish only when a feature of T is absent)")
    inside = np.where(masks[None], X[:, None, :], 1.0 if kind == "product" else np.inf)
    g = inside.prod(axis=2) if kind == "product" else inside.min(axis=2)  # (n, K)
    dividends = g * np.asarray(coefficients, dtype=float)[None]
    return (dividends / masks.sum(axis=1)[None]) @ masks.astype(float)


def _masks(subsets: list[tuple[int, ...]]) -> np.ndarray:
    masks = np.zeros((len(subsets), D), dtype=bool)
    for k, subset in enumerate(subsets):
        masks[k, list(subset)] = True
    return masks


def _case(info: CaseInfo, seed: int, subsets: list[tuple[int, ...]], coefficients: list[float], kind: str) -> Case:
    from pytest_xai.cases.games.model import SubsetGame
    from pytest_xai.cases.units.networks import regression_predict

    rng = np.random.default_rng([seed, 43])
    X = np.round(rng.uniform(0.5, 2.0, (N_ROWS, D)) * 64) / 64
    masks, m = _masks(subsets), np.asarray(coefficients, dtype=float)
    model = SubsetGame(masks, m, kind).eval()
    shapley = closed_form_shapley(X, masks, m, kind)
    terms = " + ".join(f"{c:g} {kind[:3]}({','.join(map(str, s))})" for s, c in zip(subsets, coefficients))
    return Case(
        info=info,
        inputs=X,
        predict=regression_predict(model),
        feature_names=[f"x{i}" for i in range(D)],
        model=model,
        torch_model=model,
        background=np.zeros((1, D)),
        baseline=np.zeros(D),
        truth={"shapley_interventional": shapley, "shapley": shapley},
        meta={"game": terms, "order": int(masks.sum(axis=1).max())},
    )


@FAMILY.case(source="products over subsets", checks=_CHECKS)
def games_products(info, *, seed) -> Case:
    """f = x0 - 1.5 x1 x2 + 1.5 x0 x2 x3 - 2 x1 x3 x4 x5 + x0 x1 x2 x3 x4 x5: dividends up to order six."""
    subsets = [(0,), (1, 2), (0, 2, 3), (1, 3, 4, 5), (0, 1, 2, 3, 4, 5)]
    return _case(info, seed, subsets, [1.0, -1.5, 1.5, -2.0, 1.0], "product")


@FAMILY.case(source="minima over subsets", checks=_CHECKS)
def games_minima(info, *, seed) -> Case:
    """f = -x1 + min(x0, x1, x2) - 1.5 min(x2, x3, x4) + 0.5 min(x3, x5) + 1.5 min(all six)."""
    subsets = [(1,), (0, 1, 2), (2, 3, 4), (3, 5), (0, 1, 2, 3, 4, 5)]
    return _case(info, seed, subsets, [-1.0, 1.0, -1.5, 0.5, 1.5], "minimum")
