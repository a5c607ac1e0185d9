"""Exact interventional Shapley values read from a model's structure, at any number of features.

The reference (:mod:`pytest_xai.reference`) enumerates coalitions up to 16 players and estimates
beyond; for the models users have most often, the values of the game v_x(S) = mean over rows b of
f(x_S, b_rest) are had exactly from the model itself:

- **tree ensembles** (scikit-learn's decision trees, random forests, extra trees and gradient
  boosting; xgboost's tree boosters) whose explained output is a sum of their trees' leaf values:
  interventional TreeSHAP (Lundberg et al. 2020, "From local explanations to global understanding
  with explainable AI for trees"; Laberge & Pequignot 2022).  For one explained row x and one
  background row b, the hybrid (x_S, b_rest) reaches a leaf exactly when each feature on its path
  that x fails is out of S (b passes it) and each that b fails is in S (x passes it): the leaf's
  game is v 1[S_x in S, S_b out of S], whose Shapley values are v (|S_x|-1)! |S_b|! / (|S_x|+|S_b|)!
  to each feature of S_x and -v |S_x|! (|S_b|-1)! / (|S_x|+|S_b|)! to each of S_b.  Every leaf of
  every tree is treated alike (a sum of games), vectorised over rows, background rows and leaves.
- **linear models** (``coef_``, ``intercept_``): phi_i = w_i (x_i - mean_b b_i).

An output that is not that sum, a probability of a boosted classifier (a sigmoid or softmax of the
summed margin) or of a logistic regression, has no such form: :func:`form_of` returns the model's
form whatever it explains, and the reference checks that the case's outputs are that form's up to a
constant before using it (else it estimates, ``docs/reference.md``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

_BLOCK = 1 << 22  # (rows, background rows, leaves) per vectorised step: memory stays bounded


@dataclass(frozen=True)
class Leaves:
    """Every leaf of an ensemble as a box over the features on its path: a row x reaches leaf l when
    lo[l, p] < x[feature[l, p]] <= hi[l, p] for every slot p (``lo <= x < hi`` when ``left_strict``,
    xgboost's rule); unused slots are unbounded.  ``value`` (leaves, outputs): what each adds to
    each output, its tree's weight included."""

    feature: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    value: np.ndarray
    left_strict: bool

    def passes(self, X: np.ndarray) -> np.ndarray:
        """(rows, leaves, slots): whether each row satisfies each slot of each leaf's box."""
        x = X.astype(np.float32).astype(float)[:, self.feature]  # both libraries compare float32 inputs
        if self.left_strict:
            return (x >= self.lo) & (x < self.hi)
        return (x > self.lo) & (x <= self.hi)

    def outputs(self, X: np.ndarray) -> np.ndarray:
        """(rows, outputs): the sum of the values of the leaves each row reaches."""
        return self.passes(X).all(axis=2) @ self.value

    def shapley(self, X: np.ndarray, B: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Interventional Shapley values (rows, features) of output ``target[r]`` at X against B."""
        n, d = X.shape
        L, D = self.feature.shape
        plus, minus = _weights(D)  # flat, by |S_x| (D + 1) + |S_b|; the last entry 0 for no leaf
        px, pb = self.passes(X), self.passes(B)
        bits = np.left_shift(np.int64(1), np.arange(D, dtype=np.int64))
        A, Bb = px @ bits, pb @ bits  # (n, L), (m, L): which slots each row passes, as bit masks
        full = np.int64((1 << D) - 1)
        # where the hybrid reaches the leaf, b passes every slot x fails: S_b = the slots x fails, and
        # S_x = the slots b fails (x passes them), so |S_x| is b's and |S_b| is x's
        k_x = (D - np.bitwise_count(Bb).astype(np.int64)) * (D + 1)  # (m, L)
        k_b = D - np.bitwise_count(A).astype(np.int64)  # (n, L)
        fails_b = (~pb).astype(float).transpose(1, 0, 2) / len(B)  # (L, m, D)
        V = self.value[:, target].T  # (n, L): each row's leaf values
        phi = np.zeros((n, d))
        order = np.argsort(self.feature.reshape(-1), kind="stable")  # slots grouped by their feature
        features, starts = np.unique(self.feature.reshape(-1)[order], return_index=True)
        step = max(1, _BLOCK // max(1, len(B) * L))
        for start in range(0, n, step):
            rows = slice(start, start + step)
            reach = (A[rows, None, :] | Bb[None]) == full  # (r, m, L): the hybrid can reach the leaf
            which = np.where(reach, k_x[None] + k_b[rows, None, :], len(plus) - 1)
            to_b = minus[which].mean(axis=1)  # (r, L): to each slot x fails
            # to each slot x passes: the mean over the b that fail it
            passed = np.matmul(plus[which].transpose(2, 0, 1), fails_b).transpose(1, 0, 2)  # (r, L, D)
            contrib = (px[rows] * passed - ~px[rows] * to_b[:, :, None]) * V[rows, :, None]
            phi[rows][:, features] = np.add.reduceat(contrib.reshape(len(contrib), -1)[:, order], starts, axis=1)
        return phi


def _weights(D: int) -> tuple[np.ndarray, np.ndarray]:
    """Shapley weights of the leaf game, flat by |S_x| (D + 1) + |S_b| and a last 0: to a member of
    S_x, (|S_x|-1)! |S_b|! / (|S_x|+|S_b|)!, and to one of S_b, |S_x|! (|S_b|-1)! / (|S_x|+|S_b|)!."""
    f = [math.factorial(k) for k in range(2 * D + 2)]
    plus, minus = np.zeros((D + 1) ** 2 + 1), np.zeros((D + 1) ** 2 + 1)
    for kx in range(D + 1):
        for kb in range(D + 1):
            if kx:
                plus[kx * (D + 1) + kb] = f[kx - 1] * f[kb] / f[kx + kb]
            if kb:
                minus[kx * (D + 1) + kb] = f[kx] * f[kb - 1] / f[kx + kb]
    return plus, minus


@dataclass(frozen=True)
class Linear:
    """f(x) = W x + c: ``weights`` (outputs, features)."""

    weights: np.ndarray

    def outputs(self, X: np.ndarray) -> np.ndarray:
        return X @ self.weights.T

    def shapley(self, X: np.ndarray, B: np.ndarray, target: np.ndarray) -> np.ndarray:
        return self.weights[target] * (X - B.mean(axis=0))


def _leaves(trees: list[tuple[Any, ...]], left_strict: bool) -> Leaves | None:
    """:class:`Leaves` of trees given as (left, right, feature, threshold, node values (nodes,
    outputs), weight) arrays, children -1 at a leaf; None beyond 62 distinct features on a path."""
    boxes, values = [], []
    for left, right, feature, threshold, value, weight in trees:
        stack: list[tuple[int, dict[int, tuple[float, float]]]] = [(0, {})]
        while stack:
            node, box = stack.pop()
            if left[node] < 0:
                boxes.append(box)
                values.append(weight * value[node])
                continue
            j, t = int(feature[node]), float(threshold[node])
            lo, hi = box.get(j, (-np.inf, np.inf))
            stack.append((int(left[node]), {**box, j: (lo, min(hi, t))}))
            stack.append((int(right[node]), {**box, j: (max(lo, t), hi)}))
    D = max(1, max(len(b) for b in boxes))
    if D > 62:
        return None
    L = len(boxes)
    slots, lower, upper = np.zeros((L, D), np.int64), np.full((L, D), -np.inf), np.full((L, D), np.inf)
    for leaf, box in enumerate(boxes):
        for slot, (j, bounds) in enumerate(sorted(box.items())):
            slots[leaf, slot], (lower[leaf, slot], upper[leaf, slot]) = j, bounds
    return Leaves(slots, lower, upper, np.asarray(values, dtype=float), left_strict)


def _sklearn_tree(tree: Any, weight: float, proba: bool) -> tuple[Any, ...]:
    value = tree.value[:, 0, :]  # (nodes, classes or 1); single-output trees only
    if proba:  # a classifier tree predicts the class fractions of its leaf
        value = value / value.sum(axis=1, keepdims=True)
    return tree.children_left, tree.children_right, tree.feature, tree.threshold, value, weight


def _sklearn(model: Any) -> Leaves | None:
    if getattr(model, "n_outputs_", 1) != 1:
        return None
    proba = hasattr(model, "classes_")
    if hasattr(model, "tree_"):
        return _leaves([_sklearn_tree(model.tree_, 1.0, proba)], left_strict=False)
    estimators = getattr(model, "estimators_", None)
    if isinstance(estimators, np.ndarray):  # gradient boosting: (stages, outputs) regression trees
        rate, K = float(model.learning_rate), estimators.shape[1]
        trees = []
        for stage in estimators:
            for k, est in enumerate(stage):
                left, right, feature, threshold, value, weight = _sklearn_tree(est.tree_, rate, False)
                column = np.zeros((len(value), K))
                column[:, k] = value[:, 0]
                trees.append((left, right, feature, threshold, column, weight))
        return _leaves(trees, left_strict=False)
    if isinstance(estimators, list) and estimators and all(hasattr(e, "tree_") for e in estimators):
        return _leaves([_sklearn_tree(e.tree_, 1.0 / len(estimators), proba) for e in estimators], left_strict=False)
    return None


def _xgboost(booster: Any) -> Leaves | None:
    learner = json.loads(bytes(booster.save_raw("json")))["learner"]
    model = learner["gradient_booster"]
    if model["name"] != "gbtree" or int(learner["learner_model_param"].get("num_target", 1)) != 1:
        return None
    K = max(1, int(learner["learner_model_param"]["num_class"]))
    trees = []
    for tree, group in zip(model["model"]["trees"], model["model"]["tree_info"]):
        if any(tree["split_type"]) or int(tree["tree_param"]["size_leaf_vector"]) > 1:
            return None  # categorical splits or vector leaves
        leaf_value = np.zeros((len(tree["split_conditions"]), K))
        leaf_value[:, group] = tree["split_conditions"]  # a leaf's value is stored as its condition
        trees.append(
            (
                np.asarray(tree["left_children"]),
                np.asarray(tree["right_children"]),
                np.asarray(tree["split_indices"]),
                np.asarray(tree["split_conditions"], dtype=np.float32),
                leaf_value,
                1.0,
            )
        )
    return _leaves(trees, left_strict=True)


def form_of(model: Any) -> Leaves | Linear | None:
    """The additive form of ``model``'s raw output (its trees' sum, or its linear function), or None
    when it has none here (another kind of model, categorical splits, vector leaves, a dart or
    linear booster)."""
    if model is None:
        return None
    if type(model).__module__.startswith("xgboost"):
        booster = model if type(model).__name__ == "Booster" else getattr(model, "get_booster", lambda: None)()
        return None if booster is None else _xgboost(booster)
    if not type(model).__module__.startswith("sklearn"):
        return None
    if hasattr(model, "tree_") or hasattr(model, "estimators_"):
        return _sklearn(model)
    coef = getattr(model, "coef_", None)
    if coef is not None and hasattr(model, "intercept_"):
        return Linear(np.atleast_2d(np.asarray(coef, dtype=float)))
    return None
