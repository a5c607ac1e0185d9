"""XAI-Bench synthetic tabular data with exact conditionals and exact Shapley ground truth.

Liu, Khandagale, White & Neiswanger, "Synthetic Benchmarks for Scientific Research in Explainable
Machine Learning" (NeurIPS 2021 Datasets & Benchmarks, arXiv 2106.12543), §4 and App. D/F; repo
``abacusai/xai-bench`` read as a specification only (its defects D1-D11 are not reproduced).

Feature distributions (each with ``sample``, ``conditional_sample``, ``conditional_mean``):
:class:`Gaussian` (any covariance; :meth:`Gaussian.equicorrelated` for the paper's
``Sigma = (1 - rho) I + rho 11^T``), :class:`GaussianMixture` and :class:`Multinomial`.

Label functions (:class:`Linear`, :class:`PiecewiseLinear`, :class:`PiecewiseConstant`,
:class:`NonlinearAdditive`) know their exact expectation under a Gaussian, so the Shapley values
of the value functions

- observational ("true to the data"):  v(S) = E[f(X) | X_S = x_S],
- interventional ("true to the model"): v(S) = E[f(x_S, X'_T)], X'_T from the marginal p(x_T),

are computed *exactly* for every Gaussian or mixture case by enumerating all 2^d coalitions
(:func:`exact_shapley`): given x_S, X_T is Gaussian (or a mixture of Gaussians with weights
computed in log space), and E[sin X], E|X|, E X^2, E exp(-X), step functions and the
piecewise-linear switch all have closed forms under a Gaussian.  Trained models (sklearn) have no
closed form: :func:`monte_carlo_shapley` uses seeded conditional samples with common random
numbers across coalitions.

Labels are standardised by one fixed affine map per dataset definition (D6 fixed): the mean is
exact, the standard deviation is computed from a fixed reference sample (seed
``STANDARDISATION_SEED``) or analytically for linear Gaussian data, and the label noise variance is
included so that the noisy training labels have unit variance.  The model of a case is the
standardised noise-free label function, or a model trained on noisy labels.
"""

from __future__ import annotations

import math
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from pytest_xai import metrics
from pytest_xai.case import Case, CaseInfo, Score
from pytest_xai.cases import register
from pytest_xai.checks import attributions_of, check
from pytest_xai.shapley import coalitions

SOURCE = "Liu, Khandagale, White & Neiswanger 2021 (XAI-Bench), §4, App. D/F"
CONDITIONALS = ("observational", "interventional")
RHOS = (0.0, 0.25, 0.5, 0.75, 0.99)  # the paper's correlation sweep (§5.1)
D = 5  # XAI-Bench default number of features
N_TRAIN = 1000
N_EXPLAINED = 100
N_BACKGROUND = 100
LABEL_NOISE = 0.01
STANDARDISATION_SEED = 20210623  # fixed: the affine map belongs to the dataset definition, not to a draw
STANDARDISATION_ROWS = 1 << 17
MAX_EXACT_FEATURES = 14
MC_SAMPLES = 500  # conditional samples per coalition for trained models' observational truth
STACKED_FEATURES = 10  # up to this d, conditional parameters of all 2^d coalitions are kept stacked

_SQRT2 = math.sqrt(2.0)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _normal_cdf(z: np.ndarray) -> np.ndarray:
    """Phi(z), accurate in both tails; z may be +-inf."""
    return 0.5 * _erfc(-np.asarray(z, dtype=float) / _SQRT2).astype(float)


def _normal_pdf(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * np.square(z)) / math.sqrt(2.0 * math.pi)


def _check_conditional(conditional: str) -> str:
    if conditional not in CONDITIONALS:
        raise ValueError(f"conditional must be one of {CONDITIONALS}, got {conditional!r}")
    return conditional


def _mask_of(S: Any, d: int) -> np.ndarray:
    """A boolean mask from a set of feature indices or a boolean mask."""
    S = np.asarray(S)
    if S.dtype == bool:
        if S.shape != (d,):
            raise ValueError(f"boolean feature mask must have shape ({d},), got {S.shape}")
        return S.copy()
    mask = np.zeros(d, dtype=bool)
    idx = S.astype(int).ravel()
    if idx.size and (idx.min() < 0 or idx.max() >= d):
        raise ValueError(f"feature indices must be in [0, {d}), got {idx.tolist()}")
    if len(set(idx.tolist())) != idx.size:
        raise ValueError(f"feature indices must be distinct, got {idx.tolist()}")
    mask[idx] = True
    return mask


def _full_rows(x_S: Any, S: Any, d: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Rows of length d holding x_S at the positions S (in the order S lists them)."""
    S_arr = np.asarray(S)
    mask = _mask_of(S_arr, d)
    idx = np.flatnonzero(mask) if S_arr.dtype == bool else S_arr.astype(int).ravel()
    x_S = np.asarray(x_S, dtype=float)
    single = x_S.ndim <= 1
    if single:
        x_S = x_S.reshape(1, -1)
    if x_S.shape[-1] != idx.size:
        raise ValueError(f"x_S has {x_S.shape[-1]} values per row but S names {idx.size} features")
    rows = np.zeros((x_S.shape[0], d))
    rows[:, idx] = x_S
    return rows, mask, single


class _Distribution:
    """Shared sampling interface; subclasses provide ``_sample_rows`` and ``coalition_moments``."""

    d: int
    mean: np.ndarray

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _sample_rows(self, rows, mask, n, rng, conditional) -> np.ndarray:
        raise NotImplementedError

    def coalition_moments(self, X, masks, conditional):
        raise NotImplementedError

    def _sample_masked(self, rows, masks, n, seed, conditional) -> np.ndarray:
        """(r, n, d) draws for rows with row-wise observed ``masks``; every mask pattern is drawn
        from a generator seeded with ``seed`` (common random numbers)."""
        out = np.empty((len(rows), n, self.d))
        codes = masks @ (1 << np.arange(self.d))
        for code in np.unique(codes):
            which = np.flatnonzero(codes == code)
            out[which] = self._sample_rows(rows[which], masks[which[0]], n, np.random.default_rng(seed), conditional)
        return out

    def conditional_sample(self, x_S, S, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of the full feature vector from p(x | X_S = x_S) (observational).

        ``S`` lists feature indices (``x_S`` in that order) or is a boolean mask; ``x_S`` may be one
        vector (returns (n, d)) or a batch (m, |S|) (returns (m, n, d)); the same random numbers
        are used for every row of a batch.
        """
        rows, mask, single = _full_rows(x_S, S, self.d)
        out = self._sample_rows(rows, mask, int(n), rng, "observational")
        return out[0] if single else out

    def conditional_mean(self, x_S, S) -> np.ndarray:
        """E[X | X_S = x_S] as a full vector (x_S on S); one vector or a batch (m, |S|)."""
        rows, mask, single = _full_rows(x_S, S, self.d)
        out = self.conditional_mean_rows(rows, np.broadcast_to(mask, rows.shape))
        return out[0] if single else out

    def conditional_mean_rows(self, X: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Row-wise E[X | X_S = x_S] where ``masks[r]`` marks the observed features of row r."""
        X = np.asarray(X, dtype=float)
        masks = np.asarray(masks, dtype=bool)
        out = np.empty_like(X)
        codes = masks @ (1 << np.arange(self.d))
        for code in np.unique(codes):
            rows = codes == code
            W, M, _ = self.coalition_moments(X[rows], masks[rows][:1], "observational")
            out[rows] = (W[..., None] * M).sum(axis=2)[:, 0]
        return out

    def imputer(self, conditional: str) -> "DistributionImputer":
        """An imputer for :mod:`pytest_xai.metrics` drawing absent features from this distribution."""
        return DistributionImputer(self, _check_conditional(conditional))


@dataclass(frozen=True)
class DistributionImputer:
    """Fills absent features with draws from the true conditional (observational) or marginal
    (interventional) distribution, for E_S[f] in :mod:`pytest_xai.metrics`.

    Common random numbers: every coalition pattern is sampled from a generator seeded with the same
    ``seed``, so differences E_S[f] - E_S'[f] are not blurred by independent noise.
    """

    distribution: _Distribution
    conditional: str

    def impute(self, inputs: np.ndarray, masks: np.ndarray, n_samples: int, seed: int) -> np.ndarray:
        """(n, m, n_samples, d) rows: ``inputs[r]`` on ``masks[r, j]``, sampled values elsewhere."""
        inputs = np.asarray(inputs, dtype=float)
        n, m, d = masks.shape
        rows = np.repeat(inputs, m, axis=0)
        out = self.distribution._sample_masked(rows, masks.reshape(n * m, d), n_samples, seed, self.conditional)
        return out.reshape(n, m, n_samples, d)


# ---------------------------------------------------------------------------------------------
# Distributions


class Gaussian(_Distribution):
    """x ~ N(mean, cov).  Conditionals by the Schur complement, solved with Cholesky:
    mu_T|S = mu_T + Sigma_TS Sigma_SS^-1 (x_S - mu_S), Sigma_T|S = Sigma_TT - Sigma_TS Sigma_SS^-1 Sigma_ST.
    Built by :meth:`equicorrelated`, the closed forms of the spec (§1) are used instead."""

    def __init__(self, mean: Any, cov: Any, *, rho: float | None = None):
        cov = np.asarray(cov, dtype=float)
        if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
            raise ValueError(f"covariance must be a square matrix, got shape {cov.shape}")
        d = cov.shape[0]
        mean = np.broadcast_to(np.asarray(mean, dtype=float), (d,)).copy()
        if not (np.isfinite(cov).all() and np.isfinite(mean).all()):
            raise ValueError("mean and covariance must be finite")
        if not np.allclose(cov, cov.T, rtol=0, atol=1e-12 * max(1.0, np.abs(cov).max())):
            raise ValueError("covariance must be symmetric")
        try:
            self.chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            smallest = float(np.linalg.eigvalsh(cov).min())
            raise ValueError(f"covariance is not positive definite (smallest eigenvalue {smallest:.3g}); "
                             "the Gaussian has no density and its conditionals are undefined") from None
        self.d, self.mean, self.cov, self.rho = d, mean, cov, rho
        self._params: dict[tuple[int, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._stacks: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def equicorrelated(cls, d: int, rho: float, mean: Any = 0.0) -> "Gaussian":
        """Unit variances and correlation ``rho``: positive definite iff -1/(d-1) < rho < 1."""
        if d < 1:
            raise ValueError(f"d must be >= 1, got {d}")
        low = -1.0 / (d - 1) if d > 1 else -math.inf
        if not (low < rho < 1.0):
            raise ValueError(
                f"rho={rho!r} makes the {d}x{d} equicorrelation matrix (1-rho) I + rho 11^T singular or "
                f"not positive semi-definite; valid range is {low:.6g} < rho < 1 (i.e. -1/(d-1) < rho < 1)")
        cov = (1.0 - rho) * np.eye(d) + rho * np.ones((d, d))
        return cls(mean, cov, rho=float(rho))

    def __repr__(self) -> str:
        what = f"rho={self.rho:g}" if self.rho is not None else "general covariance"
        return f"Gaussian(d={self.d}, {what})"

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.mean + rng.standard_normal((int(n), self.d)) @ self.chol.T

    def params(self, mask: np.ndarray, conditional: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(M, C, L) such that, given x, X ~ N(mean + M (x - mean), C) with C = L L^T.

        Observed features (``mask``) are fixed at x (rows/columns of C are zero there)."""
        key = (int(mask @ (1 << np.arange(self.d))), conditional)
        if key not in self._params:
            S, T = mask, ~mask
            M = np.diag(S.astype(float))
            C = np.zeros((self.d, self.d))
            if conditional == "interventional" or not S.any():
                C[np.ix_(T, T)] = self.cov[np.ix_(T, T)]
            elif self.rho is not None:
                s, rho = int(S.sum()), self.rho
                M[np.ix_(T, S)] = rho / (1.0 + (s - 1) * rho)
                C[np.ix_(T, T)] = (1.0 - rho) * np.eye(int(T.sum())) + (rho - s * rho**2 / (1.0 + (s - 1) * rho))
            else:
                L_SS = np.linalg.cholesky(self.cov[np.ix_(S, S)])
                Y = np.linalg.solve(L_SS, self.cov[np.ix_(S, T)])  # L^-1 Sigma_ST
                M[np.ix_(T, S)] = np.linalg.solve(L_SS.T, Y).T  # Sigma_TS Sigma_SS^-1
                C[np.ix_(T, T)] = self.cov[np.ix_(T, T)] - Y.T @ Y
            L = np.zeros_like(C)
            if T.any():
                L[np.ix_(T, T)] = np.linalg.cholesky(C[np.ix_(T, T)])
            self._params[key] = (M, C, L)
        return self._params[key]

    def coalition_moments(self, X, masks, conditional):
        """Given x_S, X is a mixture of Gaussians: weights (n, C, K), means (n, C, K, d), covariances
        (C, K, d, d).  K = 1 here."""
        M, C, _ = zip(*(self.params(mask, conditional) for mask in masks))
        M, C = np.stack(M), np.stack(C)
        X = np.asarray(X, dtype=float)
        means = np.where(masks[None], X[:, None, :], self.mean + np.einsum("cij,nj->nci", M, X - self.mean))
        return np.ones(means.shape[:2] + (1,)), means[:, :, None, :], C[:, None]

    def _sample_masked(self, rows, masks, n, seed, conditional):
        """Vectorised over mask patterns; the same draws as :meth:`_sample_rows` per pattern."""
        codes = masks @ (1 << np.arange(self.d))
        unique, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        if self.d <= STACKED_FEATURES:  # every coalition's parameters, computed once
            M, L = self._stacked(conditional)
            M, L = M[unique], L[unique]
        else:
            M, _, L = (np.stack(p) for p in zip(*(self.params(masks[i], conditional) for i in first)))
        z = np.random.default_rng(seed).standard_normal((n, self.d))
        means = self.mean + np.matmul(M[inverse], (rows - self.mean)[..., None])[..., 0]
        means = np.where(masks, rows, means)
        return means[:, None, :] + np.matmul(z, L.transpose(0, 2, 1))[inverse]  # matmul: BLAS, unlike einsum

    def _stacked(self, conditional: str) -> tuple[np.ndarray, np.ndarray]:
        """(2^d, d, d) stacks of M and L indexed by coalition code (bit j = feature j observed)."""
        if conditional not in self._stacks:
            masks, _ = coalitions(self.d)
            M, _, L = zip(*(self.params(mask, conditional) for mask in masks))
            self._stacks[conditional] = (np.stack(M), np.stack(L))
        return self._stacks[conditional]

    def _sample_rows(self, rows, mask, n, rng, conditional):
        M, _, L = self.params(mask, conditional)
        z = rng.standard_normal((n, self.d))
        means = np.where(mask, rows, self.mean + (rows - self.mean) @ M.T)  # x_S exactly, not round-tripped
        return means[:, None, :] + (z @ L.T)[None]


class GaussianMixture(_Distribution):
    """A mixture of Gaussians with priors ``weights``.  Given x_S the posterior component weights
    w_k ∝ pi_k N(x_S; mu_kS, Sigma_kSS) are computed in log space with logsumexp, and
    p(x_T | x_S) = sum_k w_k N(mu_kT|S, Sigma_kT|S) (interventional: w = pi, marginal components)."""

    def __init__(self, components: Sequence[Gaussian], weights: Any = None):
        if not components:
            raise ValueError("a mixture needs at least one component")
        d = components[0].d
        if any(c.d != d for c in components):
            raise ValueError("all mixture components must have the same dimension")
        K = len(components)
        weights = np.full(K, 1.0 / K) if weights is None else np.asarray(weights, dtype=float)
        if weights.shape != (K,) or (weights <= 0).any() or not np.isclose(weights.sum(), 1.0):
            raise ValueError(f"weights must be {K} positive numbers summing to 1, got {weights!r}")
        self.components, self.weights, self.d = list(components), weights, d
        self.mean = weights @ np.stack([c.mean for c in components])

    def __repr__(self) -> str:
        return f"GaussianMixture(K={len(self.components)}, d={self.d})"

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        which = rng.choice(len(self.components), size=int(n), p=self.weights)
        z = rng.standard_normal((int(n), self.d))
        out = np.empty((int(n), self.d))
        for k, comp in enumerate(self.components):
            out[which == k] = comp.mean + z[which == k] @ comp.chol.T
        return out

    def _log_weights(self, X: np.ndarray, mask: np.ndarray, conditional: str) -> np.ndarray:
        """Posterior log weights (n, K) of the components given X[:, mask]."""
        log_w = np.tile(np.log(self.weights), (len(X), 1))
        if conditional == "interventional" or not mask.any():
            return log_w
        for k, comp in enumerate(self.components):
            L = np.linalg.cholesky(comp.cov[np.ix_(mask, mask)])
            z = np.linalg.solve(L, (X[:, mask] - comp.mean[mask]).T)
            log_w[:, k] += (-0.5 * np.square(z).sum(axis=0) - np.log(np.diag(L)).sum()
                            - 0.5 * mask.sum() * math.log(2.0 * math.pi))
        top = log_w.max(axis=1, keepdims=True)
        return log_w - (top + np.log(np.exp(log_w - top).sum(axis=1, keepdims=True)))

    def coalition_moments(self, X, masks, conditional):
        X = np.asarray(X, dtype=float)
        weights = np.stack([np.exp(self._log_weights(X, mask, conditional)) for mask in masks], axis=1)
        parts = [comp.coalition_moments(X, masks, conditional) for comp in self.components]
        means = np.concatenate([p[1] for p in parts], axis=2)
        covs = np.concatenate([p[2] for p in parts], axis=1)
        return weights, means, covs

    def _sample_rows(self, rows, mask, n, rng, conditional):
        cum = np.cumsum(np.exp(self._log_weights(rows, mask, conditional)), axis=1)
        u = rng.random(n)
        z = rng.standard_normal((n, self.d))
        which = np.minimum((u[None, :, None] > cum[:, None, :]).sum(axis=2), len(self.components) - 1)
        out = np.empty((len(rows), n, self.d))
        for k, comp in enumerate(self.components):
            M, _, L = comp.params(mask, conditional)
            draw = np.where(mask, rows, comp.mean + (rows - comp.mean) @ M.T)[:, None, :] + (z @ L.T)[None]
            out = np.where((which == k)[..., None], draw, out)
        return out


class Multinomial(_Distribution):
    """x ~ Multinomial(n_trials, p): d counts summing to n_trials.  Given x_S,
    x_T ~ Multinomial(n_trials - sum x_S, p_T / sum p_T), so E[x_T | x_S] is linear in sum x_S.
    Only linear labels have an exact expectation here (no Gaussian conditional)."""

    def __init__(self, n_trials: int, p: Any):
        p = np.asarray(p, dtype=float)
        if p.ndim != 1 or (p <= 0).any() or not np.isclose(p.sum(), 1.0):
            raise ValueError(f"p must be a vector of positive probabilities summing to 1, got {p!r}")
        if int(n_trials) != n_trials or n_trials < 1:
            raise ValueError(f"n_trials must be a positive integer, got {n_trials!r}")
        self.n_trials, self.p, self.d = int(n_trials), p, p.size
        self.mean = self.n_trials * p

    def __repr__(self) -> str:
        return f"Multinomial(n={self.n_trials}, p={self.p.tolist()})"

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.multinomial(self.n_trials, self.p, size=int(n)).astype(float)

    def _remaining(self, X: np.ndarray, mask: np.ndarray) -> np.ndarray:
        left = self.n_trials - X[:, mask].sum(axis=1)
        if (left < -1e-9).any():
            raise ValueError(f"observed counts exceed n_trials={self.n_trials}")
        return np.maximum(left, 0.0)

    def coalition_moments(self, X, masks, conditional):
        X = np.asarray(X, dtype=float)
        means = np.empty((len(X), len(masks), 1, self.d))
        for c, mask in enumerate(masks):
            T = ~mask
            m = np.where(mask, X, self.mean)
            if conditional == "observational" and T.any():
                m[:, T] = self._remaining(X, mask)[:, None] * (self.p[T] / self.p[T].sum())
            means[:, c, 0] = m
        return np.ones((len(X), len(masks), 1)), means, None

    def _sample_rows(self, rows, mask, n, rng, conditional):
        T = ~mask
        out = np.repeat(rows[:, None, :], n, axis=1)
        if not T.any():
            return out
        if conditional == "interventional":
            out[:, :, T] = self.sample(n, rng)[None, :, T]
            return out
        left = self._remaining(rows, mask).astype(int)
        draws = rng.multinomial(left[:, None], self.p[T] / self.p[T].sum(), size=(len(rows), n))
        out[:, :, T] = draws
        return out


# ---------------------------------------------------------------------------------------------
# Label functions: raw y(x) and E[y(X)] for X ~ N(means, cov) (cov None: only the mean is known)


class Label:
    """A raw label function with its exact expectation under a Gaussian."""

    formula: str

    def __call__(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def expectation(self, means: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def _needs_cov(self, cov):
        if cov is None:
            raise ValueError(f"{type(self).__name__} has an exact expectation only under Gaussian "
                             "conditionals; use a Gaussian or mixture distribution, or monte_carlo_shapley")
        return np.diagonal(cov, axis1=-2, axis2=-1)


@dataclass(frozen=True)
class Linear(Label):
    """y = w^T x."""

    weights: tuple[float, ...]

    @property
    def formula(self) -> str:
        return f"y = w^T x, w = {list(self.weights)}"

    def __call__(self, X):
        return np.asarray(X, dtype=float) @ np.asarray(self.weights)

    def expectation(self, means, cov):
        return means @ np.asarray(self.weights)


@dataclass(frozen=True)
class PiecewiseLinear(Label):
    """y = w_pos^T x if sum_j x_j > 0 else w_neg^T x (paper §4; absent from the XAI-Bench code).

    Under N(m, C): with u = 1^T x and a = w^T x jointly Gaussian,
    E[a 1(u > 0)] = m_a Phi(m_u / s_u) + (c_au / s_u) phi(m_u / s_u)."""

    w_pos: tuple[float, ...]
    w_neg: tuple[float, ...]

    @property
    def formula(self) -> str:
        return f"y = w+^T x if sum(x) > 0 else w-^T x, w+ = {list(self.w_pos)}, w- = {list(self.w_neg)}"

    def __call__(self, X):
        X = np.asarray(X, dtype=float)
        return np.where(X.sum(axis=1) > 0, X @ np.asarray(self.w_pos), X @ np.asarray(self.w_neg))

    def expectation(self, means, cov):
        self._needs_cov(cov)
        a, b = np.asarray(self.w_pos), np.asarray(self.w_neg)
        ones = np.ones(cov.shape[-1])
        m_u = means.sum(axis=-1)
        s_u = np.sqrt(np.maximum(ones @ cov @ ones, 0.0))
        c_au, c_bu = cov @ ones @ a, cov @ ones @ b
        random_u = s_u > 1e-12
        safe = np.where(random_u, s_u, 1.0)
        z = np.where(random_u, m_u / safe, np.where(m_u > 0, np.inf, -np.inf))
        pdf = np.where(random_u, _normal_pdf(np.where(random_u, z, 0.0)), 0.0) / safe
        return (means @ a) * _normal_cdf(z) + c_au * pdf + (means @ b) * _normal_cdf(-z) - c_bu * pdf


def _g0(x):
    return np.where(x < 0, -1.0, 1.0)


def _g1(x):
    # D5 fixed: [-0.5, 0) maps to -1 (XAI-Bench coded it as x >= 0.5 and x < 0, always false).
    return np.select([x < -0.5, x < 0, x < 0.5], [-2.0, -1.0, 1.0], 2.0)


def _g2(x):
    out = np.trunc(2.0 * np.cos(np.pi * x))
    return np.where(out == 0, 1.0, out)


def _step_expectation(m, s, breaks, values):
    """E[g(X)], X ~ N(m, s^2), g = values[k] on [breaks[k-1], breaks[k])."""
    edges = np.concatenate([[-np.inf], breaks, [np.inf]])
    safe = np.where(s > 0, s, 1.0)
    cdf = _normal_cdf((edges[:, None] - m.ravel()[None]) / safe.ravel()[None])
    return (np.asarray(values)[:, None] * np.diff(cdf, axis=0)).sum(axis=0).reshape(m.shape)


@dataclass(frozen=True)
class PiecewiseConstant(Label):
    """y = g0(x0) + g1(x1) + g2(x2) (App. F; other features are dummies), with D5 fixed:
    g0 = -1 if x < 0 else 1; g1 = -2, -1, +1, +2 on (-inf,-.5), [-.5,0), [0,.5), [.5,inf);
    g2 = trunc(2 cos(pi x)) with 0 -> +1, i.e. -1 on [2j+2/3, 2j+4/3], +1 elsewhere up to a null set."""

    formula: str = ("y = g0(x0) + g1(x1) + g2(x2); g0 = sign step at 0; g1 = -2/-1/+1/+2 on bins "
                    "split at -0.5, 0, 0.5; g2 = trunc(2 cos(pi x)) with 0 -> +1")

    def __call__(self, X):
        X = np.asarray(X, dtype=float)
        return _g0(X[:, 0]) + _g1(X[:, 1]) + _g2(X[:, 2])

    def expectation(self, means, cov):
        var = self._needs_cov(cov)
        var = np.broadcast_to(var, means.shape)
        out = np.zeros(means.shape[:-1])
        m2, s2 = means[..., 2], np.sqrt(var[..., 2])
        span = int(np.ceil((np.abs(m2) + 12 * s2).max() / 2)) + 1
        js = np.arange(-span, span + 1)
        breaks2 = np.sort(np.concatenate([2 * js + 2 / 3, 2 * js + 4 / 3]))
        values2 = np.where(np.arange(breaks2.size + 1) % 2 == 1, -1.0, 1.0)
        specs = ((_g0, np.array([0.0]), [-1.0, 1.0]),
                 (_g1, np.array([-0.5, 0.0, 0.5]), [-2.0, -1.0, 1.0, 2.0]),
                 (_g2, breaks2, values2))
        for j, (g, breaks, values) in enumerate(specs):
            m, s = means[..., j], np.sqrt(var[..., j])
            out += np.where(s > 0, _step_expectation(m, s, breaks, values), g(m))
        return out


@dataclass(frozen=True)
class NonlinearAdditive(Label):
    """y = sin(x0) + |x1| + x2^2 + exp(-x3) (App. F, after L2X; the code uses sin where the paper's
    prose says cosine); other features are dummies.  Under N(m, s^2):
    E sin X = sin(m) e^{-s^2/2}, E|X| = s sqrt(2/pi) e^{-m^2/2s^2} + m (1 - 2 Phi(-m/s)),
    E X^2 = m^2 + s^2, E e^{-X} = e^{-m + s^2/2}."""

    formula: str = "y = sin(x0) + |x1| + x2^2 + exp(-x3)"

    def __call__(self, X):
        X = np.asarray(X, dtype=float)
        return np.sin(X[:, 0]) + np.abs(X[:, 1]) + X[:, 2] ** 2 + np.exp(-X[:, 3])

    def expectation(self, means, cov):
        var = np.broadcast_to(self._needs_cov(cov), means.shape)
        m, v = means[..., :4], var[..., :4]
        s = np.sqrt(v[..., 1])
        safe = np.where(s > 0, s, 1.0)
        folded = np.where(s > 0, s * math.sqrt(2 / math.pi) * np.exp(-0.5 * (m[..., 1] / safe) ** 2)
                          + m[..., 1] * (1 - 2 * _normal_cdf(-m[..., 1] / safe)), np.abs(m[..., 1]))
        return (np.sin(m[..., 0]) * np.exp(-0.5 * v[..., 0]) + folded + m[..., 2] ** 2 + v[..., 2]
                + np.exp(-m[..., 3] + 0.5 * v[..., 3]))


@dataclass(frozen=True)
class Standardised:
    """The model f(x) = (y(x) - shift) / scale: a fixed affine map of a label (D6 fixed)."""

    label: Label
    shift: float
    scale: float

    def __call__(self, X):
        return (self.label(np.asarray(X, dtype=float).reshape(len(X), -1)) - self.shift) / self.scale

    def expectation(self, means, cov):
        return (self.label.expectation(means, cov) - self.shift) / self.scale


def standardise(label: Label, distribution: _Distribution, noise: float = LABEL_NOISE) -> Standardised:
    """The fixed affine map of a dataset definition: shift = E y exactly (or from the reference
    sample), scale^2 = Var y + noise^2, analytic for linear labels on Gaussians, otherwise from
    ``STANDARDISATION_ROWS`` rows drawn with the fixed ``STANDARDISATION_SEED``."""
    if isinstance(label, Linear) and isinstance(distribution, Gaussian):
        w = np.asarray(label.weights)
        return Standardised(label, float(w @ distribution.mean), math.sqrt(w @ distribution.cov @ w + noise**2))
    X = distribution.sample(STANDARDISATION_ROWS, np.random.default_rng(STANDARDISATION_SEED))
    y = label(X)
    try:
        W, M, C = distribution.coalition_moments(distribution.mean[None], np.zeros((1, distribution.d), bool),
                                                 "interventional")
        shift = float((W * label.expectation(M, C[None] if C is not None else None)).sum())
    except ValueError:
        shift = float(y.mean())
    return Standardised(label, shift, math.sqrt(float(y.var()) + noise**2))


# ---------------------------------------------------------------------------------------------
# Exact and Monte-Carlo Shapley values


def coalition_values(model: Any, distribution: _Distribution, X: np.ndarray, conditional: str) -> np.ndarray:
    """Exact v(S) for every point and all 2^d coalitions, shape (n, 2^d) (bit j of the column
    index = feature j present).  ``model`` needs ``expectation(means, cov)`` (a :class:`Label` or
    :class:`Standardised`)."""
    _check_conditional(conditional)
    X = np.asarray(X, dtype=float)
    d = distribution.d
    if d > MAX_EXACT_FEATURES:
        raise ValueError(f"exact enumeration of 2^d coalitions is limited to d <= {MAX_EXACT_FEATURES}, got d={d}")
    masks, _ = coalitions(d)
    W, M, C = distribution.coalition_moments(X, masks, conditional)
    E = model.expectation(M, None if C is None else C[None])
    return (W * E).sum(axis=2)


def exact_shapley(model: Any, distribution: _Distribution, X: np.ndarray, conditional: str) -> np.ndarray:
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


def monte_carlo_shapley(predict: Callable, distribution: _Distribution, X: np.ndarray, conditional: str,
                        *, n_samples: int = MC_SAMPLES, seed: int = 0) -> np.ndarray:
    """Shapley values of any ``predict`` with v(S) estimated from ``n_samples`` draws of X_T given
    x_S (observational) or from the marginal (interventional).

    Common random numbers: every coalition uses the same seeded generator (same z, same uniform
    draws), so v(S + i) - v(S) has far less variance than with independent draws; the estimate is
    deterministic for a given ``seed``.  Cost: n * 2^d * n_samples model evaluations.
    """
    _check_conditional(conditional)
    X = np.asarray(X, dtype=float)
    masks, W = coalitions(distribution.d)
    values = np.empty((len(X), len(masks)))
    for c, mask in enumerate(masks):
        rows = distribution._sample_rows(X, mask, n_samples, np.random.default_rng(seed), conditional)
        values[:, c] = np.asarray(predict(rows.reshape(-1, distribution.d)), dtype=float).reshape(
            len(X), n_samples).mean(axis=1)
    return values @ W


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass
class Dataset:
    """One XAI-Bench dataset definition drawn with a seed: what a case is built from."""

    distribution: _Distribution
    model: Standardised
    train_X: np.ndarray
    train_y: np.ndarray
    inputs: np.ndarray
    background: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)


def make_dataset(distribution: _Distribution, label: Label, *, seed: int, n_train: int = N_TRAIN,
                 n_explained: int = N_EXPLAINED, n_background: int = N_BACKGROUND,
                 noise: float = LABEL_NOISE) -> Dataset:
    """Train rows with noisy standardised labels, points to explain and a background, all seeded."""
    model = standardise(label, distribution, noise)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
    train_X = distribution.sample(n_train, rng)
    train_y = (label(train_X) + noise * rng.standard_normal(n_train) - model.shift) / model.scale
    inputs = distribution.sample(n_explained, rng)
    background = distribution.sample(n_background, rng)
    return Dataset(distribution, model, train_X, train_y, inputs, background,
                   {"label": label.formula, "standardisation": (model.shift, model.scale), "noise": noise})


CHECKS = {
    "gt_shapley": {"convention": "interventional"},
    "faithfulness": {"conditional": "interventional"},
    "monotonicity": {"conditional": "interventional"},
    "infidelity": {"conditional": "interventional"},
}


def _case(info: CaseInfo, data: Dataset, predict: Callable, model: Any, truth: dict[str, np.ndarray],
          **meta: Any) -> Case:
    d = data.distribution.d
    return Case(
        info=info,
        inputs=data.inputs.copy(),
        predict=predict,
        feature_names=[f"x{j}" for j in range(d)],
        model=model,
        background=data.background.copy(),
        baseline=data.distribution.mean.copy(),
        truth=truth,
        meta={"distribution": data.distribution, **data.meta, **meta},
    )


def _exact_case(info: CaseInfo, distribution: _Distribution, label: Label, seed: int, **meta: Any) -> Case:
    data = make_dataset(distribution, label, seed=seed)
    truth = {f"shapley_{c}": exact_shapley(data.model, distribution, data.inputs, c) for c in CONDITIONALS}
    return _case(info, data, data.model, data.model, truth, model_kind="label function", **meta)


def paper_weights(d: int = D) -> tuple[float, ...]:
    """The paper's linear weights w = [0, 1, ..., d-1] (§5; the code's config uses the reverse)."""
    return tuple(float(j) for j in range(d))


def _rho_name(rho: float) -> str:
    return f"rho{int(round(rho * 100))}"


def _linear_builder(rho: float) -> Callable[..., Case]:
    def build(info: CaseInfo, *, seed: int, cache: Any) -> Case:
        return _exact_case(info, Gaussian.equicorrelated(D, rho), Linear(paper_weights()), seed,
                           rho=rho, weights=paper_weights())

    build.__name__ = build.__qualname__ = f"gaussian_linear_{_rho_name(rho)}"
    build.__doc__ = (f"Linear label w = [0..{D - 1}] on equicorrelated Gaussian features, rho = {rho:g} "
                     "(XAI-Bench §5.1 sweep); the model is the standardised label function.")
    return build


for _rho in RHOS:
    register(family="gaussian", category="fidelity", source=SOURCE + ", §5.1 rho sweep", checks=CHECKS)(
        _linear_builder(_rho))


@register(family="gaussian", category="fidelity", source=SOURCE + ", App. F", checks=CHECKS)
def gaussian_nonlinear_additive_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """y = sin(x0) + |x1| + x2^2 + exp(-x3), x4 a dummy, Gaussian rho = 0.5; exact Shapley truth."""
    return _exact_case(info, Gaussian.equicorrelated(D, 0.5), NonlinearAdditive(), seed, rho=0.5)


@register(family="gaussian", category="fidelity", source=SOURCE + ", App. F (bin bug D5 fixed)", checks=CHECKS)
def gaussian_piecewise_constant_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """Step functions of x0, x1, x2 (x3, x4 dummies), Gaussian rho = 0.5; exact Shapley truth."""
    return _exact_case(info, Gaussian.equicorrelated(D, 0.5), PiecewiseConstant(), seed, rho=0.5)


@register(family="gaussian", category="fidelity", source=SOURCE + ", §4 piecewise linear",
          checks=CHECKS)
def gaussian_piecewise_linear_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """w = [0..4] if sum(x) > 0 else [4..0], Gaussian rho = 0.5: not additive; exact Shapley truth."""
    label = PiecewiseLinear(paper_weights(), paper_weights()[::-1])
    return _exact_case(info, Gaussian.equicorrelated(D, 0.5), label, seed, rho=0.5)


@register(family="gaussian", category="fidelity", source=SOURCE + ", App. D mixture (D4 fixed)", checks=CHECKS)
def gaussian_mixture_linear(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """Linear w = [0..4] on a 2-component mixture at -1 and +1 (rho = 0.5 each, equal priors)."""
    components = [Gaussian.equicorrelated(D, 0.5, mean=m) for m in (-1.0, 1.0)]
    return _exact_case(info, GaussianMixture(components), Linear(paper_weights()), seed,
                       weights=paper_weights(), components=2)


@register(family="gaussian", category="fidelity", source=SOURCE + ", App. D multinomial", checks=CHECKS)
def multinomial_linear(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """Linear w = [0..4] on Multinomial(20, (.2, .3, .1, .1, .3)) counts (negatively dependent)."""
    distribution = Multinomial(20, (0.2, 0.3, 0.1, 0.1, 0.3))
    return _exact_case(info, distribution, Linear(paper_weights()), seed, weights=paper_weights())


# Trained models: interventional truth is exact against the case background (the marginal the
# explainer is given); observational truth is Monte Carlo with common random numbers, cached.


def _trained_case(info: CaseInfo, label: Label, make_model: Callable[[], Any], seed: int, cache: Any,
                  **meta: Any) -> Case:
    import sklearn
    from sklearn.exceptions import ConvergenceWarning

    from pytest_xai import shapley

    distribution = Gaussian.equicorrelated(D, 0.5)
    data = make_dataset(distribution, label, seed=seed)
    with warnings.catch_warnings():  # the iteration cap is deliberate; fit quality is in meta["train_r2"]
        warnings.simplefilter("ignore", category=ConvergenceWarning)
        model = make_model().fit(data.train_X, data.train_y)

    def predict(X):
        return model.predict(np.asarray(X, dtype=float).reshape(len(X), -1))

    def build_truth() -> dict[str, np.ndarray]:
        return {"shapley_interventional": shapley.interventional(predict, data.inputs, data.background),
                "shapley_observational": monte_carlo_shapley(predict, distribution, data.inputs,
                                                             "observational", seed=seed)}

    def validate(arrays: dict) -> None:
        for key in ("shapley_interventional", "shapley_observational"):
            if arrays[key].shape != data.inputs.shape or not np.isfinite(arrays[key]).all():
                raise ValueError(f"{key} has shape {arrays[key].shape} or non-finite values")

    params = {"case": info.name, "seed": seed, "mc_samples": MC_SAMPLES, "sklearn": sklearn.__version__}
    truth = build_truth() if cache is None else cache.arrays(info.name, params, build_truth, validate)
    r2 = float(1 - np.mean((predict(data.train_X) - data.train_y) ** 2) / np.var(data.train_y))
    return _case(info, data, predict, model, dict(truth), model_kind=type(model).__name__, train_r2=r2,
                 mc_samples=MC_SAMPLES, rho=0.5, **meta)


@register(family="gaussian", category="fidelity", source=SOURCE + ", §5 trained models", checks=CHECKS)
def gaussian_linear_regression_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """sklearn LinearRegression trained on noisy linear labels (w = [0..4]), Gaussian rho = 0.5."""
    from sklearn.linear_model import LinearRegression

    return _trained_case(info, Linear(paper_weights()), LinearRegression, seed, cache, weights=paper_weights())


@register(family="gaussian", category="fidelity", source=SOURCE + ", §5 trained models", checks=CHECKS)
def gaussian_piecewise_constant_tree_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """sklearn DecisionTreeRegressor (depth 6) trained on the piecewise-constant label, rho = 0.5."""
    from sklearn.tree import DecisionTreeRegressor

    return _trained_case(info, PiecewiseConstant(), lambda: DecisionTreeRegressor(max_depth=6, random_state=seed),
                         seed, cache)


@register(family="gaussian", category="fidelity", source=SOURCE + ", §5 trained models", checks=CHECKS)
def gaussian_nonlinear_additive_mlp_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """sklearn MLPRegressor (16, 16) trained on the nonlinear additive label, rho = 0.5."""
    from sklearn.neural_network import MLPRegressor

    return _trained_case(info, NonlinearAdditive(), lambda: MLPRegressor(
        hidden_layer_sizes=(16, 16), solver="lbfgs", max_iter=300, random_state=seed), seed, cache)


# ---------------------------------------------------------------------------------------------
# Checks (XAI-Bench metrics as pass/fail properties of an explanation on a case)


def _reference_for(case: Case, conditional: str) -> Any:
    distribution = case.meta.get("distribution")
    if distribution is not None:
        return distribution.imputer(conditional)
    if conditional == "interventional" and case.background is not None:
        return np.asarray(case.background, dtype=float).reshape(len(case.background), -1)
    raise ValueError(f"case {case.name!r} has no distribution for {conditional} expectations")


def _verdict(name: str, result: metrics.MetricResult, threshold_name: str, threshold: float, what: str,
             params: dict[str, Any]) -> Score:
    """Pass when the mean over defined points clears ``threshold`` in the metric's direction;
    undefined points are excluded and counted, and all undefined fails."""
    params = {**params, threshold_name: threshold}
    if not result.defined.any():
        reason = next(iter(result.reasons.values()), "undefined")
        return Score(name, 0.0, False, threshold, f"{what} is undefined for every point ({reason})", params)
    m, higher = result.mean, result.higher_is_better
    passed = bool(m >= threshold if higher else m <= threshold)
    vals = np.where(result.defined, result.values, np.inf if higher else -np.inf)
    row = int(np.argmin(vals) if higher else np.argmax(vals))
    undefined = (f"; {result.n_undefined}/{result.values.size} points undefined and excluded"
                 if result.n_undefined else "")
    sign = (">=" if passed else "<") if higher else ("<=" if passed else ">")
    return Score(name, float(np.clip(m if higher else 1.0 - m, 0.0, 1.0)), passed, threshold,
                 f"mean {what} {m:.3f} ({sign} {threshold:g}){undefined}", params,
                 {"row": row, result.name: float(result.values[row])})


def _shapley_reference(case: Case, params) -> np.ndarray:
    """The correct attributions of a gaussian check: the exact Shapley values of its convention."""
    return case.truth[f"shapley_{params.get('convention', params.get('conditional', 'interventional'))}"]


@check(marker="xai_gt_shapley", thresholds={"max_error": 0.05}, reference=_shapley_reference,
       passes_by_construction={"noisy_10": "10 % noise (cos 0.995 with the truth) is the sampling error of a "
                               "converged estimator; the 0.05 tolerance admits it and rejects 30 % noise"})
def gt_shapley(attributions, case: Case, *, convention: str = "interventional", max_error: float) -> Score:
    """Attributions equal the exact Shapley values of the declared convention, up to one common scale.

    XAI-Bench GT-Shapley (Liu et al. 2021, §3.1), in a form that cannot be fooled: the paper's
    per-point Pearson(w_n, phi*_n) forgives any per-row constant (w_n + c_n scored 1.0) and any
    per-row scale, and at rho = 0 a swap of two features barely moves it.  Here the error is
    :func:`pytest_xai.metrics.gt_shapley_error`: ||beta* W - Phi*||^2 / ||Phi*||^2 with one beta* >= 0
    for the whole case, phi* = ``case.truth["shapley_<convention>"]``; it is 1 - cos^2 of the two
    matrices, so a per-row offset, a swap, a sign flip (beta* = 0) and noise all count, while 100 w
    scores like w (scale-free).  Pass when the mean <= max_error.  Default 0.05 (cos >= 0.975), from
    the degenerate-explainer zoo on the 13 gaussian cases (seed 0; ``tests/test_zoo.py``, the zoo
    section of docs/verdicts.md): exact values score 0, exact Shapley values against the 100-row
    background (what KernelSHAP estimates) at most 0.015 against the true-marginal truth, the truth
    plus 10 % noise 0.01, plus 30 % noise 0.08, and every other zoo member at least 0.09 (two top
    features swapped at rho = 0.99).  Passes by construction: ``noisy_10`` (within tolerance).  The value is 1
    - mean error.
    """
    key = f"shapley_{convention}"
    if key not in case.truth:
        raise ValueError(f"case {case.name!r} has no truth {key!r}; it has {sorted(case.truth)}")
    result = metrics.gt_shapley_error(attributions_of(attributions), case.truth[key])
    score = _verdict("gt_shapley", result, "max_error", max_error,
                     f"normalised error against exact {convention} Shapley values", {"convention": convention})
    if result.defined.any():
        return Score(score.check, score.value, score.passed, score.threshold,
                     score.detail + f" (common scale beta* = {result.params['beta']:.3g})", score.params, score.worst)
    return score


_TRUTH_SCORES: "weakref.WeakKeyDictionary[Case, dict]" = weakref.WeakKeyDictionary()
_EFFECTS: "weakref.WeakKeyDictionary[Case, dict]" = weakref.WeakKeyDictionary()


def _effects(name: str, case: Case, conditional: str) -> Any:
    """The model's output changes behind faithfulness and infidelity (they do not depend on the
    attributions), computed once per case and conditional: every explainer scored on the case, and
    its exact Shapley values, see the same perturbations without repeating the model calls."""
    memo = _EFFECTS.setdefault(case, {})
    if (name, conditional) not in memo:
        reference = _reference_for(case, conditional)
        compute = metrics.single_removal_effects if name == "faithfulness" else metrics.subset_removal_effects
        memo[name, conditional] = compute(case.predict, case.inputs, reference, target=case.target)
    return memo[name, conditional]


def _metric(name: str, case: Case, attributions: Any, conditional: str) -> metrics.MetricResult:
    """The XAI-Bench metric behind check ``name``, in the form the check scores."""
    A, reference = attributions_of(attributions), _reference_for(case, conditional)
    if name == "faithfulness":  # signed and uncentred: sees sign and per-row offsets
        return metrics.faithfulness(case.predict, case.inputs, A, reference, absolute=False, centred=False,
                                    target=case.target, effects=_effects(name, case, conditional))
    if name == "monotonicity":
        return metrics.monotonicity(case.predict, case.inputs, A, reference, target=case.target)
    if name == "infidelity":  # one common beta* >= 0: sees sign and per-row rescaling
        return metrics.infidelity(case.predict, case.inputs, A, reference, relative="global", normalize="global",
                                  target=case.target, effects=_effects(name, case, conditional))
    raise KeyError(name)


def _truth_score(name: str, case: Case, conditional: str) -> float:
    """Mean metric of the case's exact Shapley values (``case.truth["shapley_<conditional>"]``), memoised."""
    scores = _TRUTH_SCORES.setdefault(case, {})
    if (name, conditional) not in scores:
        key = f"shapley_{conditional}"
        if key not in case.truth:
            raise ValueError(f"case {case.name!r} has no truth {key!r} to calibrate {name} against")
        scores[name, conditional] = _metric(name, case, case.truth[key], conditional).mean
    return scores[name, conditional]


def _relative_verdict(name: str, attributions: Any, case: Case, conditional: str, max_gap: float,
                      what: str, bar: tuple[str, float] | None = None) -> Score:
    """Pass when the mean metric is within ``max_gap`` of what the exact Shapley values of the case
    score (in the metric's direction; doing better than them passes).  Undefined points are excluded
    and counted; all undefined fails.  A case without exact Shapley values (a user's own model) is
    held to the absolute ``bar`` = (threshold name, value) instead."""
    if f"shapley_{conditional}" not in case.truth and bar is not None:
        return _verdict(name, _metric(name, case, attributions, conditional), bar[0], bar[1],
                        f"{what} (no exact Shapley values on this case: absolute bar)", {"conditional": conditional})
    result = _metric(name, case, attributions, conditional)
    truth = _truth_score(name, case, conditional)
    params = {"conditional": conditional, "max_gap": max_gap, "truth_score": truth}
    if not result.defined.any():
        reason = next(iter(result.reasons.values()), "undefined")
        return Score(name, 0.0, False, max_gap, f"{what} is undefined for every point ({reason})", params)
    m, higher = result.mean, result.higher_is_better
    gap = truth - m if higher else m - truth
    passed = bool(gap <= max_gap)
    vals = np.where(result.defined, result.values, np.inf if higher else -np.inf)
    row = int(np.argmin(vals) if higher else np.argmax(vals))
    undefined = (f"; {result.n_undefined}/{result.values.size} points undefined and excluded"
                 if result.n_undefined else "")
    extra = f"; common scale beta* = {result.params['beta'][0]:.3g}" if name == "infidelity" else ""
    return Score(name, float(np.clip(m if higher else 1.0 - m, 0.0, 1.0)), passed, max_gap,
                 f"mean {what} {m:.3f}, exact Shapley values score {truth:.3f}: "
                 f"{'within' if passed else 'more than'} {max_gap:g} of them{undefined}{extra}", params,
                 {"row": row, result.name: float(result.values[row])})


#: Why monotonicity passes some corrupted maps: it reads only the order of |w|.
_SAME_ORDER = ("monotonicity reads only the order of |w| (Luss et al. 2019; XAI-Bench eq. 3): a map with the "
               "truth's magnitudes has the truth's order; faithfulness and infidelity are the sign-aware checks")
_SMALL_NOISE = "10 % noise is the sampling error of a converged estimator; the tolerance admits it"


@check(marker="xai_faithfulness", reference=_shapley_reference, thresholds={"max_gap": 0.03, "min_score": 0.5},
       passes_by_construction={"noisy_10": _SMALL_NOISE})
def faithfulness(attributions, case: Case, *, conditional: str = "interventional", max_gap: float,
                 min_score: float = 0.5) -> Score:
    """w_i tracks, with its sign, the drop of the output when feature i alone is resampled.

    XAI-Bench faithfulness (Liu et al. 2021, eq. 2; Alvarez-Melis & Jaakkola 2018) in a signed,
    uncentred form (:func:`pytest_xai.metrics.faithfulness` with ``absolute=False, centred=False``):
    mean over points of cos(w, Delta), Delta_i = f(x) - E_{F minus i}[f] from 100 samples of the
    case's conditional with common random numbers.  Removing a feature with positive attribution
    should lower the output, so sign matters: XAI-Bench's Pearson of |w| and |Delta| passed -phi and
    |phi|, and the input itself on four linear cases (0.54 to 0.57).  Uncentred, because Pearson's
    centring forgives any per-row offset (phi + c scored like phi).  Calibrated on the case itself:
    pass when the mean is at least that of the exact Shapley values of the case minus max_gap
    (default 0.03).  On the 13 gaussian cases (seed 0) the exact values score 0.85 (MLP) to 1.00,
    exact values against the 100-row background within 0.008 of them, and the closest zoo member not
    declared (the truth plus 30 % noise) trails by 0.04 to 0.09; the input itself by 0.15 or more.
    Passes by construction: ``noisy_10`` (within tolerance).  On a case without exact Shapley values
    (a user's model, ``pytest_xai.make_case``; interventional against its background) the mean must
    be >= min_score (default 0.5: a sign flip scores below 0, noise about 0; exact Shapley values of
    a gradient-boosting model about 0.9, ``tests/test_generic_checks.py``).
    """
    return _relative_verdict("faithfulness", attributions, case, conditional, max_gap,
                             f"signed uncentred faithfulness ({conditional})", ("min_score", min_score))


@check(marker="xai_monotonicity", reference=_shapley_reference, thresholds={"max_gap": 0.05, "min_score": 0.6},
       passes_by_construction={
           "sign_flipped": _SAME_ORDER, "scaled_negative": _SAME_ORDER, "abs_of_exact": _SAME_ORDER,
           "noisy_10": _SMALL_NOISE,
           **dict.fromkeys(["input_itself@gaussian_piecewise_linear_rho50",
                            "input_minus_mean@gaussian_piecewise_linear_rho50",
                            "noisy_30@gaussian_piecewise_linear_rho50"],
                           "the exact Shapley values of this non-additive label are barely monotone (0.67; noise 0.52): "
                           "ordering by |x_i| or by the truth plus 30 % noise scores 0.62 to 0.65, within the 0.05 "
                           "the other cases need")})
def monotonicity(attributions, case: Case, *, conditional: str = "interventional", max_gap: float,
                 min_score: float = 0.6) -> Score:
    """Adding features in decreasing |w| gives non-increasing marginal gains (monotonicity, XAI-Bench eq. 3).

    Mean over points of the fraction of non-increasing steps (Liu et al. 2021, eq. 3; Luss et al.
    2019).  Ties in |w| are broken in a seeded random order, never by feature index (which gave a
    zero map 0.73 to 0.78 on the piecewise-constant cases, whose dummies come last), and a row whose
    |w| are all equal is undefined: it orders nothing.  Calibrated on the case itself: pass when the
    mean is at least that of the exact Shapley values of the case minus max_gap (default 0.05); an
    absolute threshold cannot work, since the exact values score 0.67 on the non-additive
    piecewise-linear label and 0.97 on the piecewise-constant one.  On the 13 gaussian cases (seed 0)
    exact values against the 100-row background trail the truth by at most 0.036 (rho = 0.99), and
    the closest zoo member not declared by 0.07 (shuffled rows at rho = 0.99).  Passes by
    construction ``sign_flipped``, ``scaled_negative`` and ``abs_of_exact`` (the metric reads only
    the order of |w|), ``noisy_10``, and on the piecewise-linear case, where nothing is monotone,
    the input (centred or not) and 30 % noise.  On a case without exact Shapley values the mean must
    be >= min_score (default 0.6; it reads only the order of |w|, so it is the weakest of the three).
    """
    return _relative_verdict("monotonicity", attributions, case, conditional, max_gap,
                             f"monotonicity ({conditional})", ("min_score", min_score))


@check(marker="xai_infidelity", reference=_shapley_reference, thresholds={"max_gap": 0.05, "max_score": 0.15},
       passes_by_construction={
           "noisy_10": _SMALL_NOISE,
           "noisy_30": "infidelity sums attributions over random subsets, which averages independent noise out: "
                       "30 % noise costs 0.045 to 0.049 of E[Delta f^2] on the correlated cases; gt_shapley bounds noise",
           "swapped@gaussian_linear_rho99": "at rho = 0.99 features 3 and 4 are nearly one variable, so swapping their "
                                            "attributions moves a subset's summed attribution by 2.6 % of E[Delta f^2]; "
                                            "gt_shapley catches the swap"})
def infidelity(attributions, case: Case, *, conditional: str = "interventional", max_gap: float,
               max_score: float = 0.15) -> Score:
    """The summed attribution of a removed feature set predicts the output change (infidelity).

    Yeh et al. 2019 (XAI-Bench §3.1, Liu et al. 2021) with subset removal: each feature removed with
    probability 1/2, 100 subsets per point, expectations over the case's conditional, divided by
    E[Delta f^2] so that it lies in [0, 1] (1 = explains nothing).  The attributions are rescaled by
    one common beta* >= 0 for the whole case (scale-free in w), not one per point as in Yeh et al.'s
    code: a per-point beta* may be negative, so -phi scored exactly like phi, and it forgives any
    per-row rescaling, so the model output copied to every feature passed on the correlated cases.
    Calibrated on the case itself: pass when the mean is at most that of the exact Shapley values of
    the case plus max_gap (default 0.05).  On the 13 gaussian cases (seed 0) the exact values score
    0.005 to 0.09, exact values against the 100-row background at most 0.033 more (rho = 0.99), and
    the closest zoo member not declared 0.078 more (the input itself at rho = 0.99).  The value is
    1 - mean.  Passes by construction ``noisy_10`` and ``noisy_30`` (subset sums average noise out)
    and, at rho = 0.99 only, two swapped features that are nearly one variable.  On a case without
    exact Shapley values the mean must be <= max_score (default 0.15 of E[Delta f^2]: exact values of
    a gradient-boosting model 0.02, the truth plus 100 % noise 0.21, ``tests/test_generic_checks.py``).
    """
    return _relative_verdict("infidelity", attributions, case, conditional, max_gap,
                             f"relative infidelity ({conditional})", ("max_score", max_score))
