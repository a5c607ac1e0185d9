"""Exact interventional Shapley values by enumerating every coalition (Lundberg & Lee 2017;
Janzing et al. 2020 for the interventional value function).

v_x(S) = mean over background rows b of f(x_S, b_rest), and
phi_i(x) = sum over S not containing i of |S|!(d-|S|-1)!/d! [v_x(S + i) - v_x(S)].
All 2^d coalitions, all background rows and a block of points go through ``predict`` in one call,
so the cost is a few vectorised model evaluations; fine up to about 12 features.
"""

from __future__ import annotations

from functools import cache
from math import factorial

import numpy as np

MAX_FEATURES = 16
_ROWS_PER_CALL = 1 << 18


@cache
def coalitions(d: int) -> tuple[np.ndarray, np.ndarray]:
    """All 2^d coalitions as a bool matrix, and the (2^d, d) matrix W with phi = v @ W."""
    masks = ((np.arange(2**d)[:, None] >> np.arange(d)) & 1).astype(bool)
    sizes = masks.sum(axis=1)
    weight = np.array([factorial(s) * factorial(d - s - 1) / factorial(d) for s in range(d)] + [0.0])
    W = np.where(masks, weight[np.maximum(sizes - 1, 0)][:, None], -weight[sizes][:, None])
    return masks, W


def values(predict, x: np.ndarray, background: np.ndarray, target: int | None = None) -> np.ndarray:
    """v_x(S) for every point (rows of ``x``) and coalition: shape (n, 2^d)."""
    n, d = x.shape
    masks, _ = coalitions(d)
    m = len(background)
    block = max(1, _ROWS_PER_CALL // (len(masks) * m))
    out = np.empty((n, len(masks)))
    for start in range(0, n, block):
        xs = x[start : start + block]
        hybrid = np.where(masks[None, :, None, :], xs[:, None, None, :], background[None, None, :, :])
        y = np.asarray(predict(hybrid.reshape(-1, d)), dtype=float)
        if y.ndim == 2:
            y = y[:, 0 if target is None else target]
        out[start : start + len(xs)] = y.reshape(len(xs), len(masks), m).mean(axis=2)
    return out


def interventional(predict, inputs: np.ndarray, background: np.ndarray, target: int | None = None) -> np.ndarray:
    """Exact interventional Shapley values of ``predict`` at ``inputs`` against ``background``."""
    inputs = np.asarray(inputs, dtype=float)
    n = len(inputs)
    flat = inputs.reshape(n, -1)
    d = flat.shape[1]
    if d > MAX_FEATURES:
        raise ValueError(f"exact Shapley enumerates 2^d coalitions; d={d} > {MAX_FEATURES} is too many")
    shape = inputs.shape
    bg = np.asarray(background, dtype=float).reshape(len(background), d)
    predict_flat = (lambda rows: predict(rows.reshape((-1,) + shape[1:]))) if len(shape) > 2 else predict
    _, W = coalitions(d)
    return (values(predict_flat, flat, bg, target) @ W).reshape(shape)
