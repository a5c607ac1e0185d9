"""Label functions of XAI-Bench (Liu et al. 2021, §4 and App. F): :class:`Linear`,
:class:`PiecewiseLinear`, :class:`PiecewiseConstant` and :class:`NonlinearAdditive`, each with its
raw y(x) and its exact expectation E[y(X)] for X ~ N(means, cov) (cov None: only the mean is
known), and the fixed standardisation that makes a label "the model".

Labels are standardised by one fixed affine map per dataset definition (XB-6 fixed,
``docs/defects.md``): the mean is exact, the standard deviation is computed from a fixed reference
sample (seed ``STANDARDISATION_SEED``) or analytically for linear Gaussian data, and the label
noise variance is included so that the noisy training labels have unit variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pytest_xai.cases.gaussian.distributions import Distribution, Gaussian, normal_cdf, normal_pdf

LABEL_NOISE = 0.01
STANDARDISATION_SEED = 20210623  # fixed: the affine map belongs to the dataset definition, not to a draw
STANDARDISATION_ROWS = 1 << 17


class Label:
    """A raw label function with its exact expectation under a Gaussian."""

    @property
    def formula(self) -> str:
        """The label in words, for the case's metadata."""
        raise NotImplementedError

    def __call__(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def expectation(self, means: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def _needs_cov(self, cov):
        if cov is None:
            raise ValueError(
                f"{type(self).__name__} has an exact expectation only under Gaussian "
                "conditionals; use a Gaussian or mixture distribution, or monte_carlo_shapley"
            )
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
        pdf = np.where(random_u, normal_pdf(np.where(random_u, z, 0.0)), 0.0) / safe
        return (means @ a) * normal_cdf(z) + c_au * pdf + (means @ b) * normal_cdf(-z) - c_bu * pdf


def g0(x):
    """The piecewise-constant label's first component: the sign of x (0 counts as +1)."""
    return np.where(x < 0, -1.0, 1.0)


def g1(x):
    """Its second: -2, -1, 1, 2 on (-inf, -0.5), [-0.5, 0), [0, 0.5), [0.5, inf)."""
    # XB-5 fixed (docs/defects.md): [-0.5, 0) maps to -1 (XAI-Bench coded it as x >= 0.5 and x < 0, always false).
    return np.select([x < -0.5, x < 0, x < 0.5], [-2.0, -1.0, 1.0], 2.0)


def g2(x):
    """Its third: trunc(2 cos(pi x)), with 0 mapped to 1."""
    out = np.trunc(2.0 * np.cos(np.pi * x))
    return np.where(out == 0, 1.0, out)


def _step_expectation(m, s, breaks, values):
    """E[g(X)], X ~ N(m, s^2), g = values[k] on [breaks[k-1], breaks[k])."""
    edges = np.concatenate([[-np.inf], breaks, [np.inf]])
    safe = np.where(s > 0, s, 1.0)
    cdf = normal_cdf((edges[:, None] - m.ravel()[None]) / safe.ravel()[None])
    return (np.asarray(values)[:, None] * np.diff(cdf, axis=0)).sum(axis=0).reshape(m.shape)


@dataclass(frozen=True)
class PiecewiseConstant(Label):
    """y = g0(x0) + g1(x1) + g2(x2) (App. F; other features are dummies), with XB-5 fixed:
    g0 = -1 if x < 0 else 1; g1 = -2, -1, +1, +2 on (-inf,-.5), [-.5,0), [0,.5), [.5,inf);
    g2 = trunc(2 cos(pi x)) with 0 -> +1, i.e. -1 on [2j+2/3, 2j+4/3], +1 elsewhere up to a null set."""

    formula: str = (
        "y = g0(x0) + g1(x1) + g2(x2); g0 = sign step at 0; g1 = -2/-1/+1/+2 on bins "
        "split at -0.5, 0, 0.5; g2 = trunc(2 cos(pi x)) with 0 -> +1"
    )

    def __call__(self, X):
        X = np.asarray(X, dtype=float)
        return g0(X[:, 0]) + g1(X[:, 1]) + g2(X[:, 2])

    def expectation(self, means, cov):
        var = self._needs_cov(cov)
        var = np.broadcast_to(var, means.shape)
        out = np.zeros(means.shape[:-1])
        m2, s2 = means[..., 2], np.sqrt(var[..., 2])
        span = int(np.ceil((np.abs(m2) + 12 * s2).max() / 2)) + 1
        js = np.arange(-span, span + 1)
        breaks2 = np.sort(np.concatenate([2 * js + 2 / 3, 2 * js + 4 / 3]))
        values2 = np.where(np.arange(breaks2.size + 1) % 2 == 1, -1.0, 1.0)
        specs = (
            (g0, np.array([0.0]), [-1.0, 1.0]),
            (g1, np.array([-0.5, 0.0, 0.5]), [-2.0, -1.0, 1.0, 2.0]),
            (g2, breaks2, values2),
        )
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
        folded = np.where(
            s > 0,
            s * math.sqrt(2 / math.pi) * np.exp(-0.5 * (m[..., 1] / safe) ** 2)
            + m[..., 1] * (1 - 2 * normal_cdf(-m[..., 1] / safe)),
            np.abs(m[..., 1]),
        )
        return (
            np.sin(m[..., 0]) * np.exp(-0.5 * v[..., 0])
            + folded
            + m[..., 2] ** 2
            + v[..., 2]
            + np.exp(-m[..., 3] + 0.5 * v[..., 3])
        )


@dataclass(frozen=True)
class Standardised:
    """The model f(x) = (y(x) - shift) / scale: a fixed affine map of a label (XB-6 fixed)."""

    label: Label
    shift: float
    scale: float

    def __call__(self, X):
        return (self.label(np.asarray(X, dtype=float).reshape(len(X), -1)) - self.shift) / self.scale

    def expectation(self, means, cov):
        return (self.label.expectation(means, cov) - self.shift) / self.scale


def standardise(label: Label, distribution: Distribution, noise: float = LABEL_NOISE) -> Standardised:
    """The fixed affine map of a dataset definition: shift = E y exactly (or from the reference
    sample), scale^2 = Var y + noise^2, analytic for linear labels on Gaussians, otherwise from
    ``STANDARDISATION_ROWS`` rows drawn with the fixed ``STANDARDISATION_SEED``."""
    if isinstance(label, Linear) and isinstance(distribution, Gaussian):
        w = np.asarray(label.weights)
        return Standardised(label, float(w @ distribution.mean), math.sqrt(w @ distribution.cov @ w + noise**2))
    X = distribution.sample(STANDARDISATION_ROWS, np.random.default_rng(STANDARDISATION_SEED))
    y = label(X)
    try:
        W, M, C = distribution.coalition_moments(
            distribution.mean[None], np.zeros((1, distribution.d), bool), "interventional"
        )
        shift = float((W * label.expectation(M, C[None] if C is not None else None)).sum())
    except ValueError:
        shift = float(y.mean())
    return Standardised(label, shift, math.sqrt(float(y.var()) + noise**2))
