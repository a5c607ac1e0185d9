"""Pairwise interaction detection: Compare-xAI's detect_interaction0-4 (Archipelago's functions).

Belaid et al. 2022, Compare-xAI tests detect_interaction0..4 (shown on the website, disabled in the
final benchmark), on the synthetic functions of Tsang et al. 2020, "How does this interaction affect
me? Interpretable attribution for feature interactions" (Archipelago), with the corrections of CX-14:

- p = 40 features in {-1, +1}; every function is sum_i x_i plus interaction terms (``TERMS``).
  An AND term is +1 when its condition holds and -1 otherwise.
- The explained point is x* = all +1 (``inputs``, one row) and the reference is x' = all -1
  (``baseline``, and the one-row ``background``), fixed in the case (the original's Archipelago
  wrapper appears to swap them).
- Ground truth: the unordered pairs i < j inside one interaction term (``truth["interaction_pairs"]``,
  shape (k, 2)); F1's ordered and diagonal pairs are canonicalised.  F0 has none and is a
  "no false interaction" test against ``truth["main_effect_scale"]`` = max_i |f(x*) - f(x* with
  x_i = x'_i)| (= 2 for F0).
- The model is the plain function (``predict`` = ``model``, regression).  The 30,000 uniform rows
  the original offered to regression-based detectors are not built (no reference explainer uses them).

Scored by :func:`interaction_detection` (below); explainers that return no interactions
are not applicable.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pytest_xai.case import Case, Score
from pytest_xai.checks import check
from pytest_xai.errors import NotApplicable
from pytest_xai.registry import Family

Floats = NDArray[np.float64]
Indices = NDArray[np.intp]
SOURCE = "Belaid et al. 2022, Compare-xAI (Tsang et al. 2020, Archipelago)"
FAMILY = Family("interactions", source=SOURCE, smoke=("interaction_detection", "detect_interaction0"), libraries=())
P = 40
_AND_20 = (range(20), +1)
_AND_10_30 = (range(10, 30), +1)
#: function index -> (products: list of (index set I, index set J) adding sum_{i in I, j in J} x_i x_j,
#:                    ANDs: list of (index set, value every x_i must equal, or a per-index tuple of values))
TERMS: dict[
    int, tuple[list[tuple[Sequence[int], Sequence[int]]], list[tuple[Sequence[int], int | tuple[int, ...]]]]
] = {
    0: ([], []),
    1: ([(range(10), range(10)), (range(10, 20), range(20, 30))], []),
    2: ([], [_AND_20, _AND_10_30]),
    3: ([], [(range(20), -1), _AND_10_30]),
    4: ([], [((0, 1, 2), (+1, +1, -1)), _AND_10_30]),
}


def function(k: int):
    """F_k of Archipelago's synthetic suite, vectorised over rows of a (n, 40) array."""
    products, ands = TERMS[k]

    def f(X):
        X = np.asarray(X, dtype=float).reshape(-1, P)
        y = X.sum(axis=1)
        for I, J in products:
            y = y + X[:, list(I)].sum(axis=1) * X[:, list(J)].sum(axis=1)
        for index, value in ands:
            index = list(index)
            holds = np.all(X[:, index] == np.broadcast_to(np.asarray(value, dtype=float), (len(index),)), axis=1)
            y = y + np.where(holds, 1.0, -1.0)
        return y

    return f


def true_pairs(k: int) -> np.ndarray:
    """The unordered pairs (i < j) that share an interaction term of F_k, shape (n_pairs, 2)."""
    products, ands = TERMS[k]
    pairs = {(min(i, j), max(i, j)) for I, J in products for i in I for j in J if i != j}
    pairs |= {pair for index, _ in ands for pair in combinations(sorted(index), 2)}
    return np.array(sorted(pairs), dtype=int).reshape(-1, 2)


def _case(info, k: int) -> Case:
    f = function(k)
    x_star, x_prime = np.ones(P), -np.ones(P)
    flipped = np.where(np.eye(P, dtype=bool), x_prime, x_star)
    main_effect_scale = float(np.abs(f(x_star[None]) - f(flipped)).max())
    return Case(
        info=info,
        inputs=x_star[None],
        predict=f,
        model=f,
        background=x_prime[None],
        baseline=x_prime,
        feature_names=[f"x{i}" for i in range(P)],
        truth={"interaction_pairs": true_pairs(k), "main_effect_scale": main_effect_scale},
        meta={"function": k},
    )


_CHECKS: dict[str, dict[str, object]] = {"interaction_detection": {}}


@FAMILY.case(category="fidelity", source="test detect_interaction0", checks=_CHECKS)
def detect_interaction0(info, *, seed, cache) -> Case:
    """F0 = sum_i x_i: purely additive, every returned interaction should be (near) zero."""
    return _case(info, 0)


@FAMILY.case(category="fidelity", source="test detect_interaction1", checks=_CHECKS)
def detect_interaction1(info, *, seed, cache) -> Case:
    """F1 = sum x_i + sum_{i,j<10} x_i x_j + sum_{i in [10,20), j in [20,30)} x_i x_j (145 true pairs)."""
    return _case(info, 1)


@FAMILY.case(category="fidelity", source="test detect_interaction2", checks=_CHECKS)
def detect_interaction2(info, *, seed, cache) -> Case:
    """F2 = sum x_i + AND(x_0..x_19 = +1) + AND(x_10..x_29 = +1)."""
    return _case(info, 2)


@FAMILY.case(category="fidelity", source="test detect_interaction3", checks=_CHECKS)
def detect_interaction3(info, *, seed, cache) -> Case:
    """F3 = sum x_i + AND(x_0..x_19 = -1) + AND(x_10..x_29 = +1)."""
    return _case(info, 3)


@FAMILY.case(category="fidelity", source="test detect_interaction4", checks=_CHECKS)
def detect_interaction4(info, *, seed, cache) -> Case:
    """F4 = sum x_i + AND(x_0 = x_1 = +1, x_2 = -1) + AND(x_10..x_29 = +1)."""
    return _case(info, 4)


# ---------------------------------------------------------------------------------- the check


def interaction_strengths(interactions: ArrayLike, d: int) -> tuple[Floats, Indices, Indices]:
    """Canonical pair strengths: |M_ij| over all unordered pairs i < j (missing pairs count 0).

    ``interactions`` is d x d, or n x d x d (one matrix per explained row: mean |M| over rows).  An
    explainer may fill one triangle or both: a pair's strength is max(|M_ij|, |M_ji|); the diagonal
    (main effects) is ignored.
    """
    M = np.abs(np.asarray(interactions, dtype=float))
    if M.ndim == 3:
        M = M.mean(axis=0)
    if M.shape != (d, d):
        raise ValueError(f"interactions of shape {M.shape}; expected ({d}, {d}) or (n, {d}, {d})")
    i, j = np.triu_indices(d, k=1)
    return np.maximum(M[i, j], M[j, i]), i, j


def roc_auc(scores: ArrayLike, labels: ArrayLike) -> float:
    """ROC-AUC of ``scores`` for binary ``labels`` (Mann-Whitney, ties count one half); NaN if one class is empty."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    ascending = np.empty(len(scores))
    ascending[order] = np.arange(1, len(scores) + 1)
    # average ranks over ties
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    for start, count in zip(first[counts > 1], counts[counts > 1]):
        ascending[order[start : start + count]] = start + (count + 1) / 2.0
    return float((ascending[labels].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


@check(marker="xai_interaction", thresholds={"min_score": 0.8, "rtol": 0.05})
def interaction_detection(attributions: Any, case: Case, *, min_score: float, rtol: float) -> Score:
    """Returned pairwise interactions single out the pairs that truly interact, and only those.

    Compare-xAI detect_interaction (Archipelago functions, Tsang et al. 2020), corrected (CX-14).  The
    explainer must return ``interactions`` (d x d or n x d x d; otherwise the check raises
    :class:`pytest_xai.NotApplicable`).  They are canonicalised to all d(d-1)/2 unordered pairs with
    |strength| (:func:`interaction_strengths`).  With true pairs (``case.truth["interaction_pairs"]``)
    the score is max(0, 2 (ROC-AUC - 0.5)), pass when >= min_score (default 0.8, i.e. AUC >= 0.9:
    exact finite differences score 1, random strengths at most 0.09 over 20 seeds).  Without true pairs (F0,
    purely additive) the test is "no false interaction": max strength <= rtol * the main-effect scale
    ``case.truth["main_effect_scale"]`` (in output units, like Shapley interaction indices and
    finite differences); default 0.05.  Against the zoo (``tests/test_zoo.py``): constant, zero and
    noise interaction matrices fail every case with true pairs (ties give AUC 0.5, score 0); an
    all-zero matrix passes F0 by construction, since F0 has no interaction.  The strengths are
    |M_ij|, so the sign of an interaction plays no part by definition.
    """
    interactions = getattr(attributions, "interactions", None)
    if interactions is None:
        raise NotApplicable("explainer returned no interactions (return a dict with an 'interactions' entry)")
    d = int(np.prod(np.shape(case.inputs)[1:]))
    strengths, i, j = interaction_strengths(interactions, d)
    pairs = np.asarray(case.truth["interaction_pairs"], dtype=int).reshape(-1, 2)
    k = int(strengths.argmax())
    top: dict[str, Any] = {"pair": [int(i[k]), int(j[k])], "strength": float(strengths[k])}
    if len(pairs) == 0:
        scale = float(case.truth["main_effect_scale"])
        ratio = float(strengths.max()) / scale
        passed = bool(ratio <= rtol)
        return Score(
            "interaction_detection",
            1.0 - min(1.0, ratio),
            passed,
            rtol,
            f"no true interaction; the strongest returned pair ({top['pair'][0]}, {top['pair'][1]}) has "
            f"{ratio:.3g} of the main-effect scale {scale:g} (rtol={rtol:g})",
            {"rtol": rtol},
            top,
        )
    truth = np.zeros((d, d), dtype=bool)
    lo, hi = pairs.min(axis=1), pairs.max(axis=1)
    truth[lo[lo != hi], hi[lo != hi]] = True
    labels = truth[i, j]
    auc = roc_auc(strengths, labels)
    value = max(0.0, 2.0 * (auc - 0.5))
    passed = bool(value >= min_score)
    false = np.where(labels, -np.inf, strengths)
    f = int(false.argmax())
    return Score(
        "interaction_detection",
        value,
        passed,
        min_score,
        f"ROC-AUC {auc:.3f} over {len(labels)} pairs ({int(labels.sum())} true): score {value:.3f} "
        f"(min {min_score:g}); strongest false pair ({int(i[f])}, {int(j[f])}) = {float(strengths[f]):.3g}",
        {"min_score": min_score, "rtol": rtol},
        {"false_pair": [int(i[f]), int(j[f])], "strength": float(strengths[f])},
    )
