"""The benchmark's generator (Mamalakis et al. 2022; see :mod:`pytest_xai.cases.additive`): samples
on a 10-degree grid with an offline covariance substitute for the SST data, the piecewise-linear
local functions ``C_i`` (as ReLU units: :func:`relu_units`) and their exact contributions.
"""

from __future__ import annotations

import math

import numpy as np

GRID_LATS = 89.5 - 10.0 * np.arange(18)  # 89.5, 79.5, ..., -80.5
GRID_LONS = 0.5 + 10.0 * np.arange(36)  # 0.5, 10.5, ..., 350.5
PAPER_D = 458  # ocean cells of the paper's grid; offline a seeded subset of the 648 cells
PAPER_K = 5
PAPER_L = 20.0  # correlation length, degrees of arc (about 2,200 km)


def grid_cells(d: int = PAPER_D, *, seed: int = 0) -> np.ndarray:
    """Indices (row-major, latitude slowest) of ``d`` cells of the 18 x 36 grid: all 648 or a seeded subset."""
    n_cells = GRID_LATS.size * GRID_LONS.size
    if not 1 <= d <= n_cells:
        raise ValueError(f"d must be between 1 and {n_cells} (cells of the 10-degree grid), got {d}")
    if d == n_cells:
        return np.arange(n_cells)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    return np.sort(rng.choice(n_cells, size=d, replace=False))


def exponential_covariance(cells: np.ndarray, length_scale: float = PAPER_L) -> np.ndarray:
    """``Sigma_ij = exp(-D_ij / L)``, D the great-circle distance (degrees of arc) between cell centres.

    Unit diagonal; ``length_scale <= 0`` gives the identity (no spatial dependence).
    """
    if length_scale <= 0:
        return np.eye(len(cells))
    lat = np.radians(GRID_LATS[cells // GRID_LONS.size])
    lon = np.radians(GRID_LONS[cells % GRID_LONS.size])
    dlat = lat[:, None] - lat[None, :]
    dlon = lon[:, None] - lon[None, :]
    h = np.sin(dlat / 2) ** 2 + np.cos(lat)[:, None] * np.cos(lat)[None, :] * np.sin(dlon / 2) ** 2
    distance = np.degrees(2 * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0))))
    return np.exp(-distance / length_scale)


def _normal_cdf(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.asarray(np.frompyfunc(math.erf, 1, 1)(z / math.sqrt(2.0)), dtype=float))


def relu_units(breaks: np.ndarray, slopes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``C_i(x) = sum_u weight[i,u] * relu(sign[i,u] * (x - offset[i,u]))``: one unit per break point,
    pointing away from 0, plus a second unit at 0 for the left side.  Every unit is 0 at ``x = 0``.

    ``breaks`` (d, K') sorted with exactly one 0 per row; ``slopes`` (d, K'+1), piece b between
    breaks b-1 and b.  A unit at break b adds ``slopes[b+1] - slopes[b]`` to the slope beyond it.
    """
    d, _ = breaks.shape
    rows = np.arange(d)
    zero = np.argmax(breaks == 0.0, axis=1)
    sign = np.where(breaks < 0, -1.0, 1.0)
    weight = slopes[:, 1:] - slopes[:, :-1]
    weight[rows, zero] = slopes[rows, zero + 1]  # relu(x) carries the slope right of 0
    sign = np.concatenate([sign, -np.ones((d, 1))], axis=1)
    offset = np.concatenate([breaks, np.zeros((d, 1))], axis=1)
    weight = np.concatenate([weight, -slopes[rows, zero][:, None]], axis=1)  # relu(-x): left of 0
    return sign, offset, weight


def _pieces(breaks: np.ndarray, slopes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``C_i(x) = intercept[i,b] + slopes[i,b] * x`` on piece b: the intercepts, (d, K'+1), read off
    the units of :func:`relu_units` at one point inside each piece."""
    sign, offset, weight = relu_units(breaks, slopes)
    inner = (breaks[:, :-1] + breaks[:, 1:]) / 2
    points = np.concatenate([breaks[:, :1] - 1.0, inner, breaks[:, -1:] + 1.0], axis=1)
    at = (np.maximum(sign[:, None, :] * (points[:, :, None] - offset[:, None, :]), 0.0) * weight[:, None, :]).sum(-1)
    return at - slopes * points, slopes


def local_functions(
    X: np.ndarray, breaks: np.ndarray, slopes: np.ndarray, *, chunk: int = 512, summed: bool = False
) -> np.ndarray:
    """``C_i(x_ni)`` for every sample and pixel, shape (n, d), float64; with ``summed``, each row's
    sum over the pixels, (n,): the same numbers as ``local_functions(X).sum(axis=1)``, computed
    without storing the (n, d) array.

    Each x is placed on its piece (the number of breaks below it, counted one break at a time) and
    the piece's line evaluated: a lookup, not a sum over units, because perturbation explainers
    evaluate millions of rows.  Chunks of 512 rows stay in cache: on 458 pixels they were 1.4x
    faster than 2,048, and summing each chunk at once made the oracle's predict 2x faster.
    """
    intercept, slope = _pieces(breaks, slopes)
    d, pieces = slope.shape
    first = np.arange(d, dtype=np.intp) * pieces
    intercept, slope = intercept.ravel(), slope.ravel()
    X = np.asarray(X, dtype=float)
    out = np.empty(len(X) if summed else X.shape)
    for start in range(0, len(X), chunk):
        x = X[start : start + chunk]
        piece = np.broadcast_to(first, x.shape).copy()
        for column in breaks.T:
            piece += x > column
        part = slope.take(piece)
        part *= x
        part += intercept.take(piece)
        out[start : start + chunk] = part.sum(axis=1) if summed else part
    return out


def adjacent_to_zero(X: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """True where ``x_ni`` lies on a piece touching 0 (there Input x Gradient equals ``C_i(x_ni)``)."""
    upper = np.where(breaks > 0, breaks, np.inf).min(axis=1)
    lower = np.where(breaks < 0, breaks, -np.inf).max(axis=1)
    return (X > lower) & (X < upper)


def generate(
    *,
    seed: int = 0,
    n_samples: int = 1000,
    d: int = PAPER_D,
    n_breaks: int = PAPER_K,
    length_scale: float = PAPER_L,
) -> dict[str, np.ndarray]:
    """Samples, local functions and exact contributions of the benchmark (Mamalakis et al. 2022).

    Returns ``X`` (N, d) ~ MVN(0, Sigma); ``breaks`` (d, max(K,1)) with 0 always one of them (K = 0:
    a single linear piece, stored as a 0 break with equal slopes); ``slopes`` (d, max(K,1)+1);
    ``contribution`` = ``C_i(x_ni) / d`` and ``y`` = its row sum (no noise, no centring);
    ``cells`` (grid indices).  Slopes and the K-1 random break levels are drawn from
    MVN(0, Sigma) itself (the reference code re-estimates Sigma from X first; either is allowed).
    Levels Phi(z) are mapped to values by each pixel's inverse empirical CDF (linear interpolation).
    The streams are independent, so changing N changes only X (and, through quantiles, the breaks).
    """
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2, got {n_samples}")
    if n_breaks < 0:
        raise ValueError(f"n_breaks (K) must be >= 0, got {n_breaks}")
    cells = grid_cells(d, seed=seed)
    sigma = exponential_covariance(cells, length_scale)
    chol = np.linalg.cholesky(sigma + 1e-10 * np.eye(d))
    s_inputs, s_slopes, s_breaks = np.random.SeedSequence([seed, 2]).spawn(3)

    X = np.random.default_rng(s_inputs).standard_normal((n_samples, d)) @ chol.T
    slopes = (np.random.default_rng(s_slopes).standard_normal((n_breaks + 1, d)) @ chol.T).T
    if n_breaks == 0:
        slopes = np.repeat(slopes, 2, axis=1)

    ordered = np.sort(X, axis=0)
    rng = np.random.default_rng(s_breaks)
    while True:  # resample the measure-zero event of a repeated break point or one at 0
        levels = _normal_cdf(rng.standard_normal((max(n_breaks - 1, 0), d)) @ chol.T).T
        position = levels * (n_samples - 1)
        low = np.minimum(np.floor(position).astype(int), n_samples - 2)
        frac = position - low
        cols = np.arange(d)[:, None]
        random_breaks = ordered[low, cols] * (1 - frac) + ordered[low + 1, cols] * frac
        breaks = np.sort(np.concatenate([random_breaks, np.zeros((d, 1))], axis=1), axis=1)
        if np.all(np.diff(breaks, axis=1) > 0):
            break
    contribution = local_functions(X, breaks, slopes) / d
    return {
        "X": X,
        "y": contribution.sum(axis=1),
        "contribution": contribution,
        "breaks": breaks,
        "slopes": slopes,
        "cells": cells,
    }
