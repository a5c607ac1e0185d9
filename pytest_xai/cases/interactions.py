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

Scored by :func:`pytest_xai.checks.interaction_detection`; explainers that return no interactions
are not applicable.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from pytest_xai.case import Case
from pytest_xai.registry import Family

SOURCE = "Belaid et al. 2022, Compare-xAI (Tsang et al. 2020, Archipelago)"
FAMILY = Family("interactions", source=SOURCE, smoke=("interaction_detection", "detect_interaction0"))
P = 40
_AND_20 = (range(20), +1)
_AND_10_30 = (range(10, 30), +1)
#: function index -> (products: list of (index set I, index set J) adding sum_{i in I, j in J} x_i x_j,
#:                    ANDs: list of (index set, value every x_i must equal, or a per-index tuple of values))
TERMS: dict[int, tuple[list[tuple[Sequence[int], Sequence[int]]], list[tuple[Sequence[int], int | tuple[int, ...]]]]] = {
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
        info=info, inputs=x_star[None], predict=f, model=f, background=x_prime[None], baseline=x_prime,
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
