"""Exact and Monte-Carlo Shapley values: the ground truth of the gaussian cases.

The Shapley values of the value functions

- observational ("true to the data"):  v(S) = E[f(X) | X_S = x_S],
- interventional ("true to the model"): v(S) = E[f(x_S, X'_T)], X'_T from the marginal p(x_T),

are computed *exactly* for every Gaussian or mixture case by enumerating all 2^d coalitions
(:func:`exact_shapley`): given x_S, X_T is Gaussian (or a mixture of Gaussians with weights
computed in log space), and E[sin X], E|X|, E X^2, E exp(-X), step functions and the
piecewise-linear switch all have closed forms under a Gaussian (:mod:`.labels`).  Trained models
(sklearn) have no closed form: :func:`monte_carlo_shapley` uses seeded conditional samples with
common random numbers across coalitions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_xai.cases.gaussian.distributions import Distribution, check_conditional
from pytest_xai.shapley import coalitions

MAX_EXACT_FEATURES = 14
MC_SAMPLES = 500  # conditional samples per coalition for trained models' observational truth


def coalition_values(model: Any, distribution: Distribution, X: np.ndarray, conditional: str) -> np.ndarray:
    """Exact v(S) for every point and all 2^d coalitions, shape (n, 2^d) (bit j of the column
    index = feature j present).  ``model`` needs ``expectation(means, cov)`` (a :class:`Label` or
    :class:`Standardised`)."""
    check_conditional(conditional)
    X = np.asarray(X, dtype=float)
    d = distribution.d
    if d > MAX_EXACT_FEATURES:
        raise ValueError(f"exact enumeration of 2^d coalitions is limited to d <= {MAX_EXACT_FEATURES}, got d={d}")
    masks, _ = coalitions(d)
    W, M, C = distribution.coalition_moments(X, masks, conditional)
    E = model.expectation(M, None if C is None else C[None])
    return (W * E).sum(axis=2)


def exact_shapley(model: Any, distribution: Distribution, X: np.ndarray, conditional: str) -> np.ndarray:
    """Exact Shapley values (n, d) of ``model`` at the rows of ``X``, observational or interventional.

    phi_i = sum_{S not containing i} |S|!(d-|S|-1)!/d! [v(S + i) - v(S)], all 2^d coalitions, with
    the exact conditional expectations of :func:`coalition_values`.  For a linear model and
    interventional values this equals w_i (x_i - mu_i) (tested).  Efficiency holds exactly:
    sum_i phi_i = f(x) - E f(X).
    """
    _, W = coalitions(distribution.d)
    return coalition_values(model, distribution, X, conditional) @ W


def linear_interventional_shapley(weights: Any, X: np.ndarray, mean: Any) -> np.ndarray:
    """Closed form for f = w^T x + c with any feature distribution: phi_i = w_i (x_i - mu_i)."""
    return np.asarray(weights, dtype=float) * (np.asarray(X, dtype=float) - np.asarray(mean, dtype=float))


def monte_carlo_shapley(
    predict: Callable,
    distribution: Distribution,
    X: np.ndarray,
    conditional: str,
    *,
    n_samples: int = MC_SAMPLES,
    seed: int = 0,
) -> np.ndarray:
    """Shapley values of any ``predict`` with v(S) estimated from ``n_samples`` draws of X_T given
    x_S (observational) or from the marginal (interventional).

    Common random numbers: every coalition uses the same seeded generator (same z, same uniform
    draws), so v(S + i) - v(S) has far less variance than with independent draws; the estimate is
    deterministic for a given ``seed``.  Cost: n * 2^d * n_samples model evaluations.
    """
    check_conditional(conditional)
    X = np.asarray(X, dtype=float)
    masks, W = coalitions(distribution.d)
    values = np.empty((len(X), len(masks)))
    for c, mask in enumerate(masks):
        rows = distribution._sample_rows(X, mask, n_samples, np.random.default_rng(seed), conditional)
        values[:, c] = (
            np.asarray(predict(rows.reshape(-1, distribution.d)), dtype=float).reshape(len(X), n_samples).mean(axis=1)
        )
    return values @ W
