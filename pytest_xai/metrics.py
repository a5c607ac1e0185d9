"""Feature-attribution metrics, re-implemented from their definitions and vectorised over the batch.

Every metric is a plain function of numpy arrays and, where it needs the model, a ``predict``
callable (numpy rows in, (n,) outputs or (n, classes) probabilities out), so it works on any tabular
model.  Each returns a :class:`MetricResult`: one value per explained point, NaN where the metric
is undefined with the reason recorded, the direction, and the parameters used.  NaN values are
excluded from :attr:`MetricResult.mean` / :attr:`MetricResult.median` and counted in
:attr:`MetricResult.n_undefined`; they are never silently replaced by 0 (``docs/defects.md`` XB-9).

Sources: Liu et al. 2021 (XAI-Bench) §3 for faithfulness, monotonicity, GT-Shapley and infidelity;
Yeh et al. 2019 for infidelity.  These are the metrics the checks use (the Gaussian family's
faithfulness, monotonicity, infidelity and GT-Shapley error, the generic checks' faithfulness);
a metric no check reaches is not kept here.

Expectations E_S[f] = E[f(x')], x' agreeing with x on the "present" set S, are computed by a
``reference``:

- a 1-D array (one row): the plug-in baseline, absent features set to it;
- a 2-D array of background rows: interventional, absent features taken from every row in turn
  (the empirical marginal) and the outputs averaged;
- an *imputer*, any object with ``impute(inputs, masks, n_samples, seed) -> (n, m, n_samples, d)``
  and a ``conditional`` attribute, e.g. ``pytest_xai.cases.gaussian.Gaussian(...).imputer(
  "observational")`` for exact conditional sampling with common random numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from pytest_xai.stats import pearson_rows

_ROWS_PER_CALL = 1 << 15


@dataclass(frozen=True)
class MetricResult:
    """Per-point values of one metric with their NaN reasons.

    ``values[i]`` is NaN exactly when ``reasons`` has key ``i``; ``higher_is_better`` gives the
    direction; ``params`` records what the metric was computed with (k, conditional, ...).
    ``np.asarray(result)`` gives the values.
    """

    name: str
    values: np.ndarray
    higher_is_better: bool
    reasons: Mapping[int, str] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def defined(self) -> np.ndarray:
        return ~np.isnan(self.values)

    @property
    def n_undefined(self) -> int:
        return int(np.isnan(self.values).sum())

    @property
    def mean(self) -> float:
        """Mean over defined points (NaN when none is defined)."""
        return float(np.mean(self.values[self.defined])) if self.defined.any() else math.nan

    @property
    def median(self) -> float:
        return float(np.median(self.values[self.defined])) if self.defined.any() else math.nan

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)

    def summary(self) -> str:
        arrow = "higher" if self.higher_is_better else "lower"
        text = f"{self.name}: mean {self.mean:.4g}, median {self.median:.4g} ({arrow} is better)"
        if self.n_undefined:
            common = max(set(self.reasons.values()), key=list(self.reasons.values()).count)
            text += f"; {self.n_undefined}/{self.values.size} undefined (e.g. {common})"
        return text


def _result(
    name: str, values: np.ndarray, higher: bool, reason_masks: list[tuple[np.ndarray, str]], params: Mapping[str, Any]
) -> MetricResult:
    """Set values to NaN where a reason mask holds (first reason wins) and record why."""
    values = np.array(values, dtype=float, copy=True).reshape(-1)
    reasons: dict[int, str] = {}
    for mask, reason in reason_masks:
        for i in np.flatnonzero(np.asarray(mask).reshape(-1)):
            reasons.setdefault(int(i), reason)
    values[list(reasons)] = np.nan
    return MetricResult(name, values, higher, reasons, dict(params))


def _flat(array: Any, what: str) -> np.ndarray:
    array = np.asarray(array, dtype=float)
    if array.ndim == 0:
        raise ValueError(f"{what} must be an array of rows, got a scalar")
    return array.reshape(len(array), -1) if array.ndim > 1 else array[None]


def _pair(attributions: Any, inputs: Any) -> tuple[np.ndarray, np.ndarray]:
    A, X = _flat(attributions, "attributions"), _flat(inputs, "inputs")
    if A.shape != X.shape:
        raise ValueError(
            f"attributions have shape {np.shape(attributions)} but inputs have shape "
            f"{np.shape(inputs)}; they must match"
        )
    return A, X


def _constant(v: np.ndarray) -> np.ndarray:
    """Rows whose values are all equal (up to 1e-12 of their magnitude)."""
    spread = v.max(axis=-1) - v.min(axis=-1)
    return spread <= 1e-12 * np.maximum(np.abs(v).max(axis=-1), 1e-300)


def _silent(a: np.ndarray) -> np.ndarray:
    """Rows that are all zero: an explanation that says nothing about the row."""
    return np.asarray(~(np.abs(a) > 0).any(axis=-1))


def correlation_result(
    name: str, a: np.ndarray, b: np.ndarray, what_a: str, what_b: str, params: Mapping[str, Any]
) -> MetricResult:
    """Pearson per row of ``a`` (the explanation) and ``b`` (what it should follow).  A row of ``a``
    that is all zero where ``b`` varies scores 0 (it agrees with nothing; ``docs/defects.md`` XB-12);
    other constant rows, and rows where ``b`` is constant, are undefined."""
    silent = _silent(a) & ~_constant(b)
    values = np.where(silent, 0.0, pearson_rows(np.where(silent[:, None], 1.0, a), b))
    return _result(
        name,
        values,
        True,
        [
            (_constant(a) & ~silent, f"{what_a} is constant: correlation undefined"),
            (_constant(b), f"{what_b} is constant: correlation undefined"),
        ],
        params,
    )


# ---------------------------------------------------------------------------------------------
# Model outputs and E_S[f]


def outputs(predict: Callable, X: np.ndarray, target: Any = None) -> np.ndarray:
    """``predict(X)`` as a float vector: regression output, or the probability of ``target``
    (an int, or one class per row).  A (n, 1) output is squeezed."""
    out = np.asarray(predict(X), dtype=float)
    if out.ndim == 2 and out.shape[1] == 1 and target is None:
        out = out[:, 0]
    if out.ndim == 2:
        if target is None:
            raise ValueError(f"predict returned shape {out.shape} (class probabilities); pass target=")
        return out[np.arange(len(out)), np.broadcast_to(np.asarray(target, dtype=int), len(out))]
    if out.shape != (len(X),):
        raise ValueError(f"predict returned shape {out.shape} for {len(X)} rows; expected ({len(X)},)")
    return out


class BaselineImputer:
    """Absent features set to one reference row (plug-in; XAI-Bench's "interventional")."""

    conditional = "baseline"

    def __init__(self, baseline: Any):
        self.baseline = np.asarray(baseline, dtype=float).reshape(-1)

    def impute(self, inputs, masks, n_samples, seed):
        return np.where(masks[:, :, None, :], inputs[:, None, None, :], self.baseline)


class BackgroundImputer:
    """Absent features taken from each background row in turn: the interventional expectation
    over the empirical marginal (deterministic; ``n_samples`` and ``seed`` are unused)."""

    conditional = "interventional"

    def __init__(self, background: Any):
        self.background = np.asarray(background, dtype=float)

    def impute(self, inputs, masks, n_samples, seed):
        return np.where(masks[:, :, None, :], inputs[:, None, None, :], self.background[None, None])


def as_imputer(reference: Any, d: int) -> Any:
    """An imputer from a baseline row (1-D), background rows (2-D) or an imputer object."""
    if hasattr(reference, "impute"):
        return reference
    if reference is None:
        raise ValueError("reference is required: a baseline row, background rows, or an imputer")
    ref = np.asarray(reference, dtype=float)
    if ref.ndim == 1:
        if ref.size != d:
            raise ValueError(f"baseline has {ref.size} values but inputs have {d} features")
        return BaselineImputer(ref)
    if ref.ndim != 2 or ref.shape[1] != d:
        raise ValueError(f"background must be (rows, {d}) for inputs with {d} features, got shape {ref.shape}")
    return BackgroundImputer(ref)


def expected_outputs(
    predict: Callable,
    inputs: Any,
    masks: np.ndarray,
    reference: Any,
    *,
    n_samples: int = 100,
    seed: int = 0,
    target: Any = None,
) -> np.ndarray:
    """E_S[f] for every point and coalition: ``masks`` (n, m, d) marks present features; returns
    (n, m).  All points and coalitions go through ``predict`` in a few large calls."""
    X = _flat(inputs, "inputs")
    masks = np.asarray(masks, dtype=bool)
    n, m, d = masks.shape
    imputer = as_imputer(reference, d)
    tgt = None if target is None else np.broadcast_to(np.asarray(target, dtype=int), (n,))
    out = np.empty((n, m))
    probe = imputer.impute(X[:1], masks[:1, :1], n_samples, seed)
    block = max(1, _ROWS_PER_CALL // (m * probe.shape[2]))
    for start in range(0, n, block):
        stop = min(n, start + block)
        rows = imputer.impute(X[start:stop], masks[start:stop], n_samples, seed)
        s = rows.shape[2]
        t = None if tgt is None else np.repeat(tgt[start:stop], m * s)
        y = outputs(predict, rows.reshape(-1, d), t)
        out[start:stop] = y.reshape(stop - start, m, s).mean(axis=2)
    return out


def _conditional_name(reference: Any) -> str:
    return getattr(reference, "conditional", None) or ("baseline" if np.ndim(reference) == 1 else "interventional")


# ---------------------------------------------------------------------------------------------
# XAI-Bench metrics (Liu et al. 2021, §3.1)


def single_removal_effects(
    predict: Callable, inputs: Any, reference: Any, *, n_samples: int = 100, seed: int = 0, target: Any = None
) -> np.ndarray:
    """Delta[n, i] = f(x_n) - E_{F minus i}[f]: the output drop when feature i alone is resampled from
    ``reference``.  It does not depend on the attributions: pass it to :func:`faithfulness` as
    ``effects`` to score several explanations of the same points with one set of model calls."""
    X = _flat(inputs, "inputs")
    n, d = X.shape
    masks = np.broadcast_to(~np.eye(d, dtype=bool), (n, d, d))
    fx = outputs(predict, X, target)
    return fx[:, None] - expected_outputs(predict, X, masks, reference, n_samples=n_samples, seed=seed, target=target)


def faithfulness(
    predict: Callable,
    inputs: Any,
    attributions: Any,
    reference: Any,
    *,
    absolute: bool = True,
    centred: bool = True,
    n_samples: int = 100,
    seed: int = 0,
    target: Any = None,
    effects: Any = None,
) -> MetricResult:
    """Faithfulness (Alvarez-Melis & Jaakkola 2018; XAI-Bench eq. 2), higher is better, in [-1, 1].

    ``absolute=True`` (XAI-Bench's code): faith(x) = Pearson over features i of (|w_i|, |Delta_i|),
    Delta_i = f(x) - E_{F minus i}[f], the drop of the output when feature i alone is resampled from
    ``reference``.  It is blind to sign: -w scores exactly like w.  ``absolute=False`` is the signed
    form, Pearson(w_i, Delta_i): removing a feature with positive attribution should lower the
    output, so a sign-flipped map scores -faith.  ``centred=False`` replaces Pearson by the uncentred
    correlation (cosine) sum w_i Delta_i / (|w| |Delta|): w and Delta share their zero (a feature
    without effect should get no attribution), and Pearson's centring forgives a per-row offset w + c
    (which scores exactly like w).  NaN when the attribution row or the Delta row is constant (e.g.
    all zero; with ``centred=False`` only when it is all zero).  An all-zero attribution row where
    Delta is not constant scores 0: it explains nothing where the output depends on the features, and
    leaving it out let an explainer that explains one row in ten pass (``docs/defects.md`` XB-12).
    ``effects``: the Delta matrix from
    :func:`single_removal_effects` with the same arguments, to skip the model calls.
    """
    A, X = _pair(attributions, inputs)
    n, d = X.shape
    delta = (
        single_removal_effects(predict, X, reference, n_samples=n_samples, seed=seed, target=target)
        if effects is None
        else np.asarray(effects, dtype=float).reshape(n, d)
    )
    w, delta = (np.abs(A), np.abs(delta)) if absolute else (A, delta)
    params = {
        "absolute": absolute,
        "centred": centred,
        "conditional": _conditional_name(reference),
        "n_samples": n_samples,
        "seed": seed,
    }
    if not centred:
        norms = np.sqrt((w * w).sum(axis=1) * (delta * delta).sum(axis=1))
        cosine = np.clip(np.divide((w * delta).sum(axis=1), norms, out=np.zeros(n), where=norms > 0), -1.0, 1.0)
        return _result(
            "faithfulness",
            cosine,
            True,
            [(_silent(delta), "Delta (feature effect) is all zero: correlation undefined")],
            params,
        )
    return correlation_result("faithfulness", w, delta, "attribution", "Delta (feature effect)", params)


def importance_order(attributions: Any, seed: int = 0) -> np.ndarray:
    """Feature indices by decreasing |w|, ties broken at random (seeded), never by position.

    Breaking ties by feature index rewards a constant map whenever the important features come
    first (a zero map scored 0.73 to 0.78 monotonicity on the piecewise-constant cases, whose
    dummies are last); a seeded random order gives a tie what a random explainer would get.
    """
    a = -np.abs(_flat(attributions, "attributions"))
    key = np.random.default_rng(seed).random(a.shape)
    return np.lexsort((key, a), axis=1)


def monotonicity(
    predict: Callable,
    inputs: Any,
    attributions: Any,
    reference: Any,
    *,
    n_samples: int = 100,
    seed: int = 0,
    target: Any = None,
    rtol: float = 1e-9,
) -> MetricResult:
    """Monotonicity (Luss et al. 2019; XAI-Bench eq. 3), higher is better, in [0, 1].

    Features are added in decreasing |w| without replacement, ties in |w| broken in a seeded random
    order (:func:`importance_order`), never by index: delta_k = |E_{S+(k)}[f] - E_{S+(k-1)}[f]|,
    k = 1..d, and mono(x) = (1/(d-1)) sum_k 1[delta_k >= delta_{k+1}] (tie rule >=, with ``rtol``
    times the largest delta absorbing float noise).  The differences are taken in insertion order
    (XAI-Bench XB-1 fixed).  NaN when d < 2, when the output does not change as features are added,
    and when the attribution row is constant but not zero (all |w| equal): such a row orders nothing.
    An all-zero row scores 0, the worst value, where the output changes (``docs/defects.md`` XB-12).
    Sign plays no part: -w gives the same order as w.
    """
    A, X = _pair(attributions, inputs)
    n, d = X.shape
    order = importance_order(A, seed)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(d)[None].repeat(n, axis=0), axis=1)
    masks = rank[:, None, :] < np.arange(d + 1)[None, :, None]  # (n, d+1, d): first k present
    E = expected_outputs(predict, X, masks, reference, n_samples=n_samples, seed=seed, target=target)
    delta = np.abs(np.diff(E, axis=1))
    tol = rtol * delta.max(axis=1, keepdims=True)
    values = (delta[:, :-1] >= delta[:, 1:] - tol).mean(axis=1) if d > 1 else np.full(n, np.nan)
    moves = np.asarray((delta > 0).any(axis=1))
    values = np.where(_silent(A) & moves, 0.0, values)
    return _result(
        "monotonicity",
        values,
        True,
        [
            (np.full(n, d < 2), "needs at least 2 features"),
            (~moves, "the output does not change as features are added"),
            (_constant(np.abs(A)) & ~_silent(A), "all |attributions| are equal: no order"),
        ],
        {"conditional": _conditional_name(reference), "n_samples": n_samples, "seed": seed, "rtol": rtol},
    )


def subset_removal_effects(
    predict: Callable,
    inputs: Any,
    reference: Any,
    *,
    n_perturb: int = 100,
    p_remove: float = 0.5,
    n_samples: int = 100,
    seed: int = 0,
    target: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The perturbations of subset :func:`infidelity` and their output changes, (removed (n, n_perturb,
    d) bool, Delta f (n, n_perturb)); independent of the attributions, so several explanations of the
    same points can be scored with one set of model calls (pass them as ``effects``)."""
    X = _flat(inputs, "inputs")
    n, d = X.shape
    removed = np.random.default_rng(seed).random((n, n_perturb, d)) < p_remove
    fx = outputs(predict, X, target)
    delta_f = fx[:, None] - expected_outputs(
        predict, X, ~removed, reference, n_samples=n_samples, seed=seed, target=target
    )
    return removed, delta_f


def infidelity(
    predict: Callable,
    inputs: Any,
    attributions: Any,
    reference: Any = None,
    *,
    perturbation: str = "subset",
    n_perturb: int = 100,
    sigma: float = 0.1,
    p_remove: float = 0.5,
    normalize: bool | Literal["global"] = True,
    relative: bool | Literal["global"] = False,
    n_samples: int = 100,
    seed: int = 0,
    target: Any = None,
    effects: Any = None,
) -> MetricResult:
    """Infidelity (Yeh et al. 2019; XAI-Bench §3.1), lower is better, >= 0.

    INFD(w, f, x) = E_I[(I^T w - Delta f)^2] over ``n_perturb`` perturbations per point:

    - ``perturbation="gaussian"``: I ~ N(0, sigma^2 I), Delta f = f(x) - f(x - I).  It scores
      local, gradient-like attributions (the optimum is the smoothed gradient).  The noise is one
      block ``sigma * default_rng(seed).standard_normal((n_perturb, d))`` that every point shares
      (common random numbers: each point's estimate is unbiased, and the points are scored on the
      same draws), so drawing it costs nothing beside the model calls (captum draws one per row).
    - ``perturbation="subset"``: a random set R (each feature with probability ``p_remove``) is
      removed, I = 1_R (Captum's multiply_by_inputs form, for attributions that sum to the output
      change), Delta f = f(x) - E_{F minus R}[f] with E from ``reference``.  Exact Shapley values of
      an additive model score 0.  The masks are ``default_rng(seed).random((n, n_perturb, d)) <
      p_remove``.

    ``normalize=True`` (default; Yeh et al.'s code, Captum ``normalize=True``) rescales w per point
    by beta* = max(0, E[I^T w Delta f] / E[(I^T w)^2]) (beta* = 0 when I^T w is always 0), making
    the score invariant to the scale of w.  beta* is clipped at 0: the unclipped optimum may be
    negative, and then -w scores exactly like w; clipped, an attribution that predicts the output
    change with the wrong sign explains nothing (relative score 1).  ``normalize="global"`` fits one
    beta* >= 0 for all points (still free of the scale of w, but a per-row rescaling, e.g. the model
    output copied to every feature, is no longer forgiven); ``normalize=False`` gives the raw form.
    The beta* used are in ``params["beta"]``.  ``relative=True`` divides by E[Delta f^2], so the
    normalised score is in [0, 1] (1 = explains nothing) and free of the output scale; NaN then
    when f never changes under the perturbations.  ``relative="global"`` divides every point by the
    mean of E[Delta f^2] over all points instead, so that the mean is the case's total squared error
    relative to its total output change: points where f barely changes (near the mean, where a
    small offset of w is a large relative error) no longer dominate.  ``effects``: the output of
    :func:`subset_removal_effects` with the same arguments, to skip the model calls.
    """
    A, X = _pair(attributions, inputs)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    fx = outputs(predict, X, target)
    if perturbation == "gaussian":
        noise = sigma * rng.standard_normal((n_perturb, d))
        t = None if target is None else np.repeat(np.broadcast_to(np.asarray(target, dtype=int), (n,)), n_perturb)
        perturbed = outputs(predict, (X[:, None, :] - noise).reshape(-1, d), t).reshape(n, n_perturb)
        delta_f = fx[:, None] - perturbed
        explained = A @ noise.T  # (n, n_perturb): I^T w with the block shared by every point
    elif perturbation == "subset":
        removed, delta_f = (
            subset_removal_effects(
                predict,
                X,
                reference,
                n_perturb=n_perturb,
                p_remove=p_remove,
                n_samples=n_samples,
                seed=seed,
                target=target,
            )
            if effects is None
            else effects
        )
        explained = np.einsum("npd,nd->np", np.asarray(removed).astype(float), A)
    else:
        raise ValueError(f"perturbation must be 'gaussian' or 'subset', got {perturbation!r}")
    if normalize not in (True, False, "global"):
        raise ValueError(f"normalize must be True, False or 'global', got {normalize!r}")
    beta = np.ones(n)
    if normalize == "global":
        energy = float((explained**2).sum())
        beta = np.full(n, max(0.0, float((explained * delta_f).sum()) / energy) if energy > 0 else 0.0)
    elif normalize:
        energy = (explained**2).mean(axis=1)
        beta = np.divide((explained * delta_f).mean(axis=1), energy, out=np.zeros(n), where=energy > 0)
        beta = np.maximum(beta, 0.0)
    explained = beta[:, None] * explained
    values = ((explained - delta_f) ** 2).mean(axis=1)
    reasons = []
    if relative not in (True, False, "global"):
        raise ValueError(f"relative must be True, False or 'global', got {relative!r}")
    if relative:
        scale = (delta_f**2).mean(axis=1)
        if relative == "global":
            scale = np.full(n, scale.mean())
        flat = scale <= 1e-24 * np.maximum(fx**2, 1.0)
        values = np.divide(values, scale, out=np.zeros(n), where=~flat)
        reasons.append((flat, "model output does not change under the perturbations"))
    return _result(
        "infidelity",
        values,
        False,
        reasons,
        {
            "perturbation": perturbation,
            "n_perturb": n_perturb,
            "sigma": sigma,
            "p_remove": p_remove,
            "normalize": normalize,
            "relative": relative,
            "seed": seed,
            "beta": beta.tolist(),
            "conditional": _conditional_name(reference) if perturbation == "subset" else "noise",
        },
    )


def gt_shapley_error(attributions: Any, shapley: Any) -> MetricResult:
    """Normalised GT-Shapley error, lower is better, in [0, 1] on average: the squared error of the
    attributions, rescaled by one common beta* = max(0, <w, phi*> / <w, w>) over the whole matrix,
    relative to the truth's own energy.  Per point, err_n = ||beta* w_n - phi*_n||^2 / mean_m
    ||phi*_m||^2, so the mean over points is ||beta* W - Phi*||^2 / ||Phi*||^2 = 1 - cos^2(W, Phi*)
    (uncentred cosine over all points and features jointly; 1 when cos <= 0).

    Unlike XAI-Bench's per-row Pearson of w and phi* (its GT-Shapley correlation) it sees a per-row offset w_n + c_n, a
    per-row rescaling and a sign flip (beta* >= 0: -phi* explains nothing, error 1), and it stays free
    of the scale of w (100 phi* scores 0).  NaN for every point when the truth is all zero.
    ``params["beta"]`` is the fitted scale."""
    A, S = _pair(attributions, shapley)
    energy_a, energy_s = float((A * A).sum()), float((S * S).sum())
    beta = max(0.0, float((A * S).sum()) / energy_a) if energy_a > 0 else 0.0
    scale = energy_s / len(S) if energy_s > 0 else 1.0
    values = ((beta * A - S) ** 2).sum(axis=1) / scale
    return _result(
        "gt_shapley_error", values, False, [(np.full(len(S), energy_s == 0), "the truth is all zero")], {"beta": beta}
    )


def precision_at_truth_size(attributions: Any, truth: Any, *, seed: int = 0) -> MetricResult:
    """Per row, the precision of the k = |truth| features of largest |attribution| against a binary
    truth mask (R-precision; precision at the truth's size), higher is better, in [0, 1]: the
    fraction of the decisive tokens, or of the planted window, that the explanation ranks first.

    At the truth's own size precision equals recall, so one number says both.  Ties are broken at
    random (seeded, :func:`importance_order`), never by position, so a constant map scores what a
    random explainer scores (the mask's share of the row); zero scores are never selected, so a row
    explained as nothing scores 0 (``docs/defects.md`` XB-12).  NaN where the truth is empty."""
    A, T = _pair(attributions, np.asarray(truth, dtype=float))
    truth_mask = T > 0
    k = truth_mask.sum(axis=1)
    order = importance_order(A, seed)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(A.shape[1])[None].repeat(len(A), axis=0), axis=1)
    chosen = (rank < k[:, None]) & (np.abs(A) > 0)
    values = np.divide((chosen & truth_mask).sum(axis=1), k, out=np.zeros(len(A)), where=k > 0)
    return _result("precision_at_truth_size", values, True, [(k == 0, "the truth mask is empty")], {"seed": seed})
