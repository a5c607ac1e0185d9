"""Feature distributions of XAI-Bench (Liu et al. 2021, §4 and App. D) with exact conditionals:
:class:`Gaussian` (any covariance; :meth:`Gaussian.equicorrelated` for the paper's
``Sigma = (1 - rho) I + rho 11^T``), :class:`GaussianMixture` and :class:`Multinomial`, each with
``sample``, ``conditional_sample`` and ``conditional_mean``, and the imputer that lets
:mod:`pytest_xai.metrics` draw absent features from them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_xai.shapley import coalitions

CONDITIONALS = ("observational", "interventional")
STACKED_FEATURES = 10  # up to this d, conditional parameters of all 2^d coalitions are kept stacked

_SQRT2 = math.sqrt(2.0)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def normal_cdf(z: np.ndarray) -> np.ndarray:
    """Phi(z), accurate in both tails; z may be +-inf."""
    return 0.5 * np.asarray(_erfc(-np.asarray(z, dtype=float) / _SQRT2), dtype=float)


def normal_pdf(z: np.ndarray) -> np.ndarray:
    """The standard normal density at ``z``."""
    return np.exp(-0.5 * np.square(z)) / math.sqrt(2.0 * math.pi)


def check_conditional(conditional: str) -> str:
    """``conditional`` if it is one of :data:`CONDITIONALS`, else a ValueError naming them."""
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


class Distribution:
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

    def imputer(self, conditional: str) -> DistributionImputer:
        """An imputer for :mod:`pytest_xai.metrics` drawing absent features from this distribution."""
        return DistributionImputer(self, check_conditional(conditional))


@dataclass(frozen=True)
class DistributionImputer:
    """Fills absent features with draws from the true conditional (observational) or marginal
    (interventional) distribution, for E_S[f] in :mod:`pytest_xai.metrics`.

    Common random numbers: every coalition pattern is sampled from a generator seeded with the same
    ``seed``, so differences E_S[f] - E_S'[f] are not blurred by independent noise.
    """

    distribution: Distribution
    conditional: str

    def impute(self, inputs: np.ndarray, masks: np.ndarray, n_samples: int, seed: int) -> np.ndarray:
        """(n, m, n_samples, d) rows: ``inputs[r]`` on ``masks[r, j]``, sampled values elsewhere."""
        inputs = np.asarray(inputs, dtype=float)
        n, m, d = masks.shape
        rows = np.repeat(inputs, m, axis=0)
        out = self.distribution._sample_masked(rows, masks.reshape(n * m, d), n_samples, seed, self.conditional)
        return out.reshape(n, m, n_samples, d)


class Gaussian(Distribution):
    """x ~ N(mean, cov).  Conditionals by the Schur complement, solved with Cholesky:
    mu_T|S = mu_T + Sigma_TS Sigma_SS^-1 (x_S - mu_S), Sigma_T|S = Sigma_TT - Sigma_TS Sigma_SS^-1 Sigma_ST.
    Built by :meth:`equicorrelated`, the closed forms for equicorrelation are used instead, with
    s = |S|: mu_T|S = mu_T + rho / (1 + (s - 1) rho) sum_{j in S} (x_j - mu_j) and
    Sigma_T|S = (1 - rho) I + (rho - s rho^2 / (1 + (s - 1) rho)) 11^T."""

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
            raise ValueError(
                f"covariance is not positive definite (smallest eigenvalue {smallest:.3g}); "
                "the Gaussian has no density and its conditionals are undefined"
            ) from None
        self.d, self.mean, self.cov, self.rho = d, mean, cov, rho
        self._params: dict[tuple[int, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._stacks: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def equicorrelated(cls, d: int, rho: float, mean: Any = 0.0) -> Gaussian:
        """Unit variances and correlation ``rho``: positive definite iff -1/(d-1) < rho < 1."""
        if d < 1:
            raise ValueError(f"d must be >= 1, got {d}")
        low = -1.0 / (d - 1) if d > 1 else -math.inf
        if not (low < rho < 1.0):
            raise ValueError(
                f"rho={rho!r} makes the {d}x{d} equicorrelation matrix (1-rho) I + rho 11^T singular or "
                f"not positive semi-definite; valid range is {low:.6g} < rho < 1 (i.e. -1/(d-1) < rho < 1)"
            )
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


class GaussianMixture(Distribution):
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
            log_w[:, k] += (
                -0.5 * np.square(z).sum(axis=0) - np.log(np.diag(L)).sum() - 0.5 * mask.sum() * math.log(2.0 * math.pi)
            )
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


class Multinomial(Distribution):
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
