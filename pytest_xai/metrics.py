"""Feature-attribution metrics, re-implemented from their definitions and vectorised over the batch.

Every metric is a plain function of numpy arrays and, where it needs the model, a ``predict``
callable (numpy rows in, (n,) outputs or (n, classes) probabilities out), so it works on any tabular
model.  Each returns a :class:`MetricResult`: one value per explained point, NaN where the metric
is undefined with the reason recorded, the direction, and the parameters used.  NaN values are
excluded from :attr:`MetricResult.mean` / :attr:`MetricResult.median` and counted in
:attr:`MetricResult.n_undefined`; they are never silently replaced by 0 (XAI-Bench defect D9).

Sources: Liu et al. 2021 (XAI-Bench) §3 for faithfulness, monotonicity, ROAR, GT-Shapley and
infidelity; Yeh et al. 2019 for infidelity; Agarwal et al. 2022 (OpenXAI) for FA/RA/SA/SRA/RC/PRA
and PGI/PGU; Hedström et al. 2023 (Quantus) for the localisation metrics.

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
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

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


def _result(name: str, values: np.ndarray, higher: bool, reason_masks: list[tuple[np.ndarray, str]],
            params: Mapping[str, Any]) -> MetricResult:
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
        raise ValueError(f"attributions have shape {np.shape(attributions)} but inputs have shape "
                         f"{np.shape(inputs)}; they must match")
    return A, X


def _constant(v: np.ndarray) -> np.ndarray:
    """Rows whose values are all equal (up to 1e-12 of their magnitude)."""
    spread = v.max(axis=-1) - v.min(axis=-1)
    return spread <= 1e-12 * np.maximum(np.abs(v).max(axis=-1), 1e-300)


def _correlation_result(name: str, a: np.ndarray, b: np.ndarray, what_a: str, what_b: str,
                        params: Mapping[str, Any]) -> MetricResult:
    return _result(name, pearson_rows(a, b), True,
                   [(_constant(a), f"{what_a} is constant: correlation undefined"),
                    (_constant(b), f"{what_b} is constant: correlation undefined")], params)


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


def expected_outputs(predict: Callable, inputs: Any, masks: np.ndarray, reference: Any, *,
                     n_samples: int = 100, seed: int = 0, target: Any = None) -> np.ndarray:
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
    return getattr(reference, "conditional", None) or (
        "baseline" if np.ndim(reference) == 1 else "interventional")


# ---------------------------------------------------------------------------------------------
# XAI-Bench metrics (Liu et al. 2021, §3.1)


def single_removal_effects(predict: Callable, inputs: Any, reference: Any, *, n_samples: int = 100, seed: int = 0,
                           target: Any = None) -> np.ndarray:
    """Delta[n, i] = f(x_n) - E_{F minus i}[f]: the output drop when feature i alone is resampled from
    ``reference``.  It does not depend on the attributions: pass it to :func:`faithfulness` as
    ``effects`` to score several explanations of the same points with one set of model calls."""
    X = _flat(inputs, "inputs")
    n, d = X.shape
    masks = np.broadcast_to(~np.eye(d, dtype=bool), (n, d, d))
    fx = outputs(predict, X, target)
    return fx[:, None] - expected_outputs(predict, X, masks, reference, n_samples=n_samples, seed=seed, target=target)


def faithfulness(predict: Callable, inputs: Any, attributions: Any, reference: Any, *, absolute: bool = True,
                 centred: bool = True, n_samples: int = 100, seed: int = 0, target: Any = None,
                 effects: Any = None) -> MetricResult:
    """Faithfulness (Alvarez-Melis & Jaakkola 2018; XAI-Bench eq. 2), higher is better, in [-1, 1].

    ``absolute=True`` (XAI-Bench's code): faith(x) = Pearson over features i of (|w_i|, |Delta_i|),
    Delta_i = f(x) - E_{F minus i}[f], the drop of the output when feature i alone is resampled from
    ``reference``.  It is blind to sign: -w scores exactly like w.  ``absolute=False`` is the signed
    form, Pearson(w_i, Delta_i): removing a feature with positive attribution should lower the
    output, so a sign-flipped map scores -faith.  ``centred=False`` replaces Pearson by the uncentred
    correlation (cosine) sum w_i Delta_i / (|w| |Delta|): w and Delta share their zero (a feature
    without effect should get no attribution), and Pearson's centring forgives a per-row offset w + c
    (which scores exactly like w).  NaN when the attribution row or the Delta row is constant (e.g.
    all zero; with ``centred=False`` only when it is all zero).  ``effects``: the Delta matrix from
    :func:`single_removal_effects` with the same arguments, to skip the model calls.
    """
    A, X = _pair(attributions, inputs)
    n, d = X.shape
    delta = (single_removal_effects(predict, X, reference, n_samples=n_samples, seed=seed, target=target)
             if effects is None else np.asarray(effects, dtype=float).reshape(n, d))
    w, delta = (np.abs(A), np.abs(delta)) if absolute else (A, delta)
    params = {"absolute": absolute, "centred": centred, "conditional": _conditional_name(reference),
              "n_samples": n_samples, "seed": seed}
    if not centred:
        norms = np.sqrt((w * w).sum(axis=1) * (delta * delta).sum(axis=1))
        cosine = np.clip(np.divide((w * delta).sum(axis=1), norms, out=np.zeros(n), where=norms > 0), -1.0, 1.0)
        return _result("faithfulness", cosine, True,
                       [(~(np.abs(w) > 0).any(axis=1), "attribution is all zero: correlation undefined"),
                        (~(np.abs(delta) > 0).any(axis=1), "Delta (feature effect) is all zero: correlation undefined")],
                       params)
    return _correlation_result("faithfulness", w, delta, "attribution", "Delta (feature effect)", params)


def importance_order(attributions: Any, seed: int = 0) -> np.ndarray:
    """Feature indices by decreasing |w|, ties broken at random (seeded), never by position.

    Breaking ties by feature index rewards a constant map whenever the important features come
    first (a zero map scored 0.73 to 0.78 monotonicity on the piecewise-constant cases, whose
    dummies are last); a seeded random order gives a tie what a random explainer would get.
    """
    a = -np.abs(_flat(attributions, "attributions"))
    key = np.random.default_rng(seed).random(a.shape)
    return np.lexsort((key, a), axis=1)


def monotonicity(predict: Callable, inputs: Any, attributions: Any, reference: Any, *, n_samples: int = 100,
                 seed: int = 0, target: Any = None, rtol: float = 1e-9) -> MetricResult:
    """Monotonicity (Luss et al. 2019; XAI-Bench eq. 3), higher is better, in [0, 1].

    Features are added in decreasing |w| without replacement, ties in |w| broken in a seeded random
    order (:func:`importance_order`), never by index: delta_k = |E_{S+(k)}[f] - E_{S+(k-1)}[f]|,
    k = 1..d, and mono(x) = (1/(d-1)) sum_k 1[delta_k >= delta_{k+1}] (tie rule >=, with ``rtol``
    times the largest delta absorbing float noise).  The differences are taken in insertion order
    (XAI-Bench D1 fixed).  NaN when d < 2, and when the attribution row is constant (all |w| equal):
    such a row orders nothing.  Sign plays no part: -w gives the same order as w.
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
    return _result("monotonicity", values, True, [(np.full(n, d < 2), "needs at least 2 features"),
                                                   (_constant(np.abs(A)), "all |attributions| are equal: no order")],
                   {"conditional": _conditional_name(reference), "n_samples": n_samples, "seed": seed,
                    "rtol": rtol})


def subset_removal_effects(predict: Callable, inputs: Any, reference: Any, *, n_perturb: int = 100,
                           p_remove: float = 0.5, n_samples: int = 100, seed: int = 0,
                           target: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The perturbations of subset :func:`infidelity` and their output changes, (removed (n, n_perturb,
    d) bool, Delta f (n, n_perturb)); independent of the attributions, so several explanations of the
    same points can be scored with one set of model calls (pass them as ``effects``)."""
    X = _flat(inputs, "inputs")
    n, d = X.shape
    removed = np.random.default_rng(seed).random((n, n_perturb, d)) < p_remove
    fx = outputs(predict, X, target)
    delta_f = fx[:, None] - expected_outputs(predict, X, ~removed, reference, n_samples=n_samples, seed=seed,
                                             target=target)
    return removed, delta_f


def infidelity(predict: Callable, inputs: Any, attributions: Any, reference: Any = None, *,
               perturbation: str = "subset", n_perturb: int = 100, sigma: float = 0.1, p_remove: float = 0.5,
               normalize: bool = True, relative: bool = False, n_samples: int = 100, seed: int = 0,
               target: Any = None, effects: Any = None) -> MetricResult:
    """Infidelity (Yeh et al. 2019; XAI-Bench §3.1), lower is better, >= 0.

    INFD(w, f, x) = E_I[(I^T w - Delta f)^2] over ``n_perturb`` perturbations per point:

    - ``perturbation="gaussian"``: I ~ N(0, sigma^2 I), Delta f = f(x) - f(x - I).  It scores
      local, gradient-like attributions (the optimum is the smoothed gradient).  The noise is
      ``sigma * default_rng(seed).standard_normal((n, n_perturb, d))``.
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
        I = sigma * rng.standard_normal((n, n_perturb, d))
        t = None if target is None else np.repeat(np.broadcast_to(np.asarray(target, dtype=int), (n,)), n_perturb)
        perturbed = outputs(predict, (X[:, None, :] - I).reshape(-1, d), t).reshape(n, n_perturb)
        delta_f = fx[:, None] - perturbed
    elif perturbation == "subset":
        removed, delta_f = (subset_removal_effects(predict, X, reference, n_perturb=n_perturb, p_remove=p_remove,
                                                   n_samples=n_samples, seed=seed, target=target)
                            if effects is None else effects)
        I = np.asarray(removed).astype(float)
    else:
        raise ValueError(f"perturbation must be 'gaussian' or 'subset', got {perturbation!r}")
    if normalize not in (True, False, "global"):
        raise ValueError(f"normalize must be True, False or 'global', got {normalize!r}")
    explained = np.einsum("npd,nd->np", I, A)
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
    return _result("infidelity", values, False, reasons,
                   {"perturbation": perturbation, "n_perturb": n_perturb, "sigma": sigma, "p_remove": p_remove,
                    "normalize": normalize, "relative": relative, "seed": seed, "beta": beta.tolist(),
                    "conditional": _conditional_name(reference) if perturbation == "subset" else "noise"})


def roar(make_model: Callable[[], Any], train_X: Any, train_y: Any, test_X: Any, test_y: Any,
         train_attributions: Any, test_attributions: Any, *, fill: Any = "mean", ks: Any = None,
         loss: str = "mae") -> MetricResult:
    """Remove-and-retrain, AUC version (Hooker et al. 2019; XAI-Bench App. E), higher is better.

    For k in ``ks`` (default 0..d): from every train and test row remove the k features with the
    largest |w| of *that row's own* attribution (D3 fixed), replacing them with the train mean
    (``fill="mean"``, interventional) or with E[x_T | x_S] (``fill`` = an object with
    ``conditional_mean_rows(X, present_masks)``, observational, e.g. a
    :class:`pytest_xai.cases.gaussian.Gaussian`); fit ``make_model()`` (a fresh, unfitted
    estimator with ``fit``/``predict``) on the modified train set and record the test loss L_k
    (MAE or MSE).  Score = trapezoidal area under (k/d, L_k): a good attribution removes useful
    features first, so the loss rises early.  One value (the whole test set); the curve is in
    ``params["losses"]``.  Slow: d + 1 retrainings and attributions for every train row.
    """
    Atr, Xtr = _pair(train_attributions, train_X)
    Ate, Xte = _pair(test_attributions, test_X)
    ytr, yte = np.asarray(train_y, dtype=float), np.asarray(test_y, dtype=float)
    d = Xtr.shape[1]
    ks = np.arange(d + 1) if ks is None else np.asarray(ks, dtype=int)
    if ks.min() < 0 or ks.max() > d:
        raise ValueError(f"ks must be within 0..{d}, got {ks.tolist()}")
    if loss not in ("mae", "mse"):
        raise ValueError(f"loss must be 'mae' or 'mse', got {loss!r}")
    mean = Xtr.mean(axis=0)

    def remove(X, A, k):
        present = np.ones_like(X, dtype=bool)
        np.put_along_axis(present, importance_order(A)[:, :k], False, axis=1)  # ties: seeded random
        if isinstance(fill, str):
            if fill != "mean":
                raise ValueError(f"fill must be 'mean' or a distribution, got {fill!r}")
            return np.where(present, X, mean)
        return fill.conditional_mean_rows(X, present)

    losses = []
    for k in ks:
        model = make_model().fit(remove(Xtr, Atr, k), ytr)
        err = np.asarray(model.predict(remove(Xte, Ate, k)), dtype=float).reshape(-1) - yte
        losses.append(float(np.mean(np.abs(err)) if loss == "mae" else np.mean(err**2)))
    x = ks / d
    auc = float(np.sum((x[1:] - x[:-1]) * (np.array(losses[1:]) + np.array(losses[:-1])) / 2))
    return _result("roar", np.array([auc]), True, [],
                   {"ks": ks.tolist(), "losses": losses, "loss": loss,
                    "conditional": "interventional" if isinstance(fill, str) else "observational"})


def gt_shapley_mse(attributions: Any, shapley: Any) -> MetricResult:
    """GT-Shapley MSE (XAI-Bench §3.1), lower is better, >= 0: mean over features of (w - phi*)^2
    per point.  Scale-dependent: compare in the output space (probability or logit) of phi*.
    Always defined."""
    A, S = _pair(attributions, shapley)
    return _result("gt_shapley_mse", ((A - S) ** 2).mean(axis=1), False, [], {})


def gt_shapley_error(attributions: Any, shapley: Any) -> MetricResult:
    """Normalised GT-Shapley error, lower is better, in [0, 1] on average: the squared error of the
    attributions, rescaled by one common beta* = max(0, <w, phi*> / <w, w>) over the whole matrix,
    relative to the truth's own energy.  Per point, err_n = ||beta* w_n - phi*_n||^2 / mean_m
    ||phi*_m||^2, so the mean over points is ||beta* W - Phi*||^2 / ||Phi*||^2 = 1 - cos^2(W, Phi*)
    (uncentred cosine over all points and features jointly; 1 when cos <= 0).

    Unlike the per-row Pearson of :func:`gt_shapley_corr` it sees a per-row offset w_n + c_n, a
    per-row rescaling and a sign flip (beta* >= 0: -phi* explains nothing, error 1), and it stays free
    of the scale of w (100 phi* scores 0).  NaN for every point when the truth is all zero.
    ``params["beta"]`` is the fitted scale."""
    A, S = _pair(attributions, shapley)
    energy_a, energy_s = float((A * A).sum()), float((S * S).sum())
    beta = max(0.0, float((A * S).sum()) / energy_a) if energy_a > 0 else 0.0
    scale = energy_s / len(S) if energy_s > 0 else 1.0
    values = ((beta * A - S) ** 2).sum(axis=1) / scale
    return _result("gt_shapley_error", values, False, [(np.full(len(S), energy_s == 0), "the truth is all zero")],
                   {"beta": beta})


def gt_shapley_corr(attributions: Any, shapley: Any) -> MetricResult:
    """GT-Shapley correlation (XAI-Bench's primary form), higher is better, in [-1, 1]: Pearson of
    w and phi* per point.  NaN when either row is constant (D9: never mapped to 0)."""
    A, S = _pair(attributions, shapley)
    return _correlation_result("gt_shapley_corr", A, S, "attribution", "ground-truth Shapley row", {})


# ---------------------------------------------------------------------------------------------
# OpenXAI ground-truth agreement (Agarwal et al. 2022) and predictive faithfulness


def _k_of(k: Any, d: int) -> int:
    """k as an int in 1..d; a float in (0, 1) is a fraction of d (rounded up)."""
    if isinstance(k, float) and 0 < k < 1:
        k = math.ceil(k * d)
    if int(k) != k or not 1 <= int(k) <= d:
        raise ValueError(f"k must be an int in 1..{d} or a fraction in (0, 1), got {k!r}")
    return int(k)


def _truth_rows(truth: Any, n: int, d: int) -> np.ndarray:
    g = np.asarray(truth, dtype=float)
    g = np.broadcast_to(g.reshape(-1) if g.ndim == 1 else g.reshape(len(g), -1), (n, d))
    return np.asarray(g)


def dense_ranks(v: Any) -> np.ndarray:
    """Dense ranks of -|v| per row: 1 = largest |v|, equal values share a rank."""
    a = -np.abs(np.asarray(v, dtype=float))
    order = np.argsort(a, axis=1, kind="stable")
    s = np.take_along_axis(a, order, axis=1)
    dense = np.cumsum(np.concatenate([np.ones((len(a), 1), bool), np.diff(s, axis=1) > 0], axis=1), axis=1)
    out = np.empty_like(dense)
    np.put_along_axis(out, order, dense, axis=1)
    return out


def _agreement(explanations: Any, truth: Any, k: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    E = _flat(explanations, "explanations")
    n, d = E.shape
    G = _truth_rows(truth, n, d)
    k = _k_of(k, d)
    return E, G, importance_order(E)[:, :k], importance_order(G)[:, :k], k


def feature_agreement(explanations: Any, truth: Any, k: Any) -> MetricResult:
    """FA, higher is better, in [0, 1]: |top_k(e) ∩ top_k(g)| / k (top-k by |.|).  Ties at the k-th
    place are averaged: the expected overlap over uniformly random tie-breaks (:func:`top_k_weights`),
    so a constant explanation gets k/d, what a random one gets on average, and never a win by
    feature position.  ``truth`` is one row (shared) or one row per explanation.  Always defined."""
    E, G, te, tg, k = _agreement(explanations, truth, k)
    overlap = (top_k_weights(np.abs(E), k) * top_k_weights(np.abs(G), k)).sum(axis=1)
    return _result("feature_agreement", overlap / k, True, [], {"k": k})


def rank_agreement(explanations: Any, truth: Any, k: Any) -> MetricResult:
    """RA, higher is better, in [0, 1]: fraction of positions r <= k holding the same feature in both
    top-k lists (ordered by |.|, ties broken in a seeded random order, :func:`importance_order`)."""
    E, G, te, tg, k = _agreement(explanations, truth, k)
    return _result("rank_agreement", (te == tg).mean(axis=1), True, [], {"k": k})


def _signs_at(V: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.sign(np.take_along_axis(V, idx, axis=1))


def sign_agreement(explanations: Any, truth: Any, k: Any) -> MetricResult:
    """SA, higher is better, in [0, 1]: (1/k) |{i in top_k(e) ∩ top_k(g): sign e_i = sign g_i}|."""
    E, G, te, tg, k = _agreement(explanations, truth, k)
    inter = (te[:, :, None] == tg[:, None, :]).any(axis=2)
    same = _signs_at(E, te) == _signs_at(G, te)
    return _result("sign_agreement", (inter & same).sum(axis=1) / k, True, [], {"k": k})


def signed_rank_agreement(explanations: Any, truth: Any, k: Any) -> MetricResult:
    """SRA, higher is better, in [0, 1]: fraction of positions r <= k with the same feature in both
    top-k lists and the same sign."""
    E, G, te, tg, k = _agreement(explanations, truth, k)
    same = (te == tg) & (_signs_at(E, te) == _signs_at(G, te))
    return _result("signed_rank_agreement", same.mean(axis=1), True, [], {"k": k})


def rank_correlation(explanations: Any, truth: Any) -> MetricResult:
    """RC, higher is better, in [-1, 1]: Pearson of the dense ranks of |e| and |g| over all
    features (Spearman-like).  NaN when all |e| (or all |g|) are equal."""
    E = _flat(explanations, "explanations")
    G = _truth_rows(truth, *E.shape)
    re, rg = dense_ranks(E).astype(float), dense_ranks(G).astype(float)
    return _correlation_result("rank_correlation", re, rg, "explanation ranks", "ground-truth ranks", {})


def pairwise_rank_agreement(explanations: Any, truth: Any, features: Any = None) -> MetricResult:
    """PRA, higher is better, in [0, 1]: fraction of pairs i < j (of ``features``, default all) on
    which 1[rank_e(i) < rank_e(j)] equals 1[rank_g(i) < rank_g(j)] (dense ranks of -|.|).  NaN
    with fewer than 2 features."""
    E = _flat(explanations, "explanations")
    n, d = E.shape
    G = _truth_rows(truth, n, d)
    idx = np.arange(d) if features is None else np.asarray(features, dtype=int)
    re, rg = dense_ranks(E)[:, idx], dense_ranks(G)[:, idx]
    i, j = np.triu_indices(idx.size, k=1)
    agree = (re[:, i] < re[:, j]) == (rg[:, i] < rg[:, j])
    values = agree.mean(axis=1) if i.size else np.full(n, np.nan)
    return _result("pairwise_rank_agreement", values, True, [(np.full(n, i.size == 0), "fewer than 2 features")],
                   {"features": idx.tolist()})


def agreement_auc(metric: Callable[..., MetricResult], explanations: Any, truth: Any, max_k: int) -> MetricResult:
    """The AUC option of OpenXAI: the mean of an agreement metric (FA, RA, SA, SRA) over k = 1..max_k."""
    runs = [metric(explanations, truth, k) for k in range(1, int(max_k) + 1)]
    return _result(f"{runs[0].name}_auc", np.mean([r.values for r in runs], axis=0), True, [],
                   {"max_k": int(max_k)})


def _prediction_gap(name: str, predict, inputs, attributions, k, important: bool, target, sigma, n_samples,
                    discrete, seed) -> MetricResult:
    A, X = _pair(attributions, inputs)
    n, d = X.shape
    k = _k_of(k, d)
    chosen = np.zeros((n, d), bool)
    np.put_along_axis(chosen, importance_order(A)[:, :k], True, axis=1)
    if not important:
        chosen = ~chosen
    probs = np.asarray(predict(X), dtype=float)
    if probs.ndim == 2 and target is None:
        target = probs.argmax(axis=1)  # the predicted class of each row
    fx = outputs(predict, X, target)
    rng = np.random.default_rng(seed)
    noise = sigma * rng.standard_normal((n, n_samples, d))
    flips = rng.random((n, n_samples, d)) < math.sqrt(2 / math.pi) * sigma
    discrete = np.zeros(d, bool) if discrete is None else np.asarray(discrete, dtype=bool).reshape(d)
    perturbed = np.where(discrete, np.where(flips, 1.0 - X[:, None, :], X[:, None, :]), X[:, None, :] + noise)
    perturbed = np.where(chosen[:, None, :], perturbed, X[:, None, :])
    t = None if target is None else np.repeat(np.broadcast_to(np.asarray(target, dtype=int), (n,)), n_samples)
    y = outputs(predict, perturbed.reshape(-1, d), t).reshape(n, n_samples)
    return _result(name, np.abs(y - fx[:, None]).mean(axis=1), important, [],
                   {"k": k, "sigma": sigma, "n_samples": n_samples, "seed": seed})


def prediction_gap_important(predict: Callable, inputs: Any, attributions: Any, k: Any, *, target: Any = None,
                             sigma: float = 0.1, n_samples: int = 100, discrete: Any = None,
                             seed: int = 0) -> MetricResult:
    """PGI (OpenXAI), higher is better, >= 0: E|p(x~) - p(x)| where x~ perturbs only the top-k
    features of |e|: continuous ones by + N(0, sigma^2), ``discrete`` (0/1) ones flipped with
    probability sqrt(2/pi) sigma.  p is the regression output or the probability of ``target``
    (default: each row's predicted class; OpenXAI reads class 0).  Noise from
    ``default_rng(seed)`` (normal (n, n_samples, d), then uniform for flips)."""
    return _prediction_gap("pgi", predict, inputs, attributions, k, True, target, sigma, n_samples,
                           discrete, seed)


def prediction_gap_unimportant(predict: Callable, inputs: Any, attributions: Any, k: Any, *, target: Any = None,
                               sigma: float = 0.1, n_samples: int = 100, discrete: Any = None,
                               seed: int = 0) -> MetricResult:
    """PGU (OpenXAI), lower is better, >= 0: as :func:`prediction_gap_important` but perturbing only
    the features outside the top k."""
    return _prediction_gap("pgu", predict, inputs, attributions, k, False, target, sigma, n_samples,
                           discrete, seed)


# ---------------------------------------------------------------------------------------------
# Localisation against a binary ground-truth mask (Quantus definitions)

PREPROCESS = ("raw", "abs", "positive")


def _localisation(attributions: Any, masks: Any, preprocess: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if preprocess not in PREPROCESS:
        raise ValueError(f"preprocess must be one of {PREPROCESS}, got {preprocess!r}")
    a = _flat(attributions, "attributions")
    s = np.asarray(masks)
    s = s.reshape(len(s), -1) if s.ndim > 1 else s[None]
    if s.shape != a.shape:
        raise ValueError(f"masks have shape {np.shape(masks)} but attributions {np.shape(attributions)}")
    if not np.isin(s, (0, 1)).all():
        raise ValueError("masks must be binary (0/1 or bool)")
    s = s.astype(bool)
    a = np.abs(a) if preprocess == "abs" else np.maximum(a, 0.0) if preprocess == "positive" else a
    return a, s, ~s.any(axis=1)


def pointing_game(attributions: Any, masks: Any, *, weighted: bool = False, preprocess: str = "raw") -> MetricResult:
    """Pointing game (Zhang et al. 2018), higher is better, in [0, 1]: 1 if the location of the
    maximum of a lies in the mask.  When several locations tie for the maximum the hit is the
    fraction of them inside the mask (the expected hit of a random pick among them), so a constant
    map scores |s|/N, not 1.  ``weighted``: a hit scores 1 - |s|/N (rewards small masks).
    NaN for an empty mask."""
    a, s, empty = _localisation(attributions, masks, preprocess)
    top = a == a.max(axis=1, keepdims=True)
    hit = (top & s).sum(axis=1) / top.sum(axis=1)
    if weighted:
        hit = hit * (1.0 - s.mean(axis=1))
    return _result("pointing_game", hit, True, [(empty, "empty ground-truth mask")],
                   {"weighted": weighted, "preprocess": preprocess})


def relevance_mass_accuracy(attributions: Any, masks: Any, *, preprocess: str = "positive") -> MetricResult:
    """Relevance mass accuracy (Arras et al. 2022), higher is better, in [0, 1]: sum of a inside the
    mask / sum of a.  Default: positive relevance only (CLEVR-XAI).  NaN for an empty mask, a
    non-positive total, or (with ``preprocess="raw"``) a ratio outside [0, 1]."""
    a, s, empty = _localisation(attributions, masks, preprocess)
    total = a.sum(axis=1)
    inside = (a * s).sum(axis=1)
    ratio = np.divide(inside, total, out=np.zeros(len(a)), where=total > 0)
    return _result("relevance_mass_accuracy", ratio, True,
                   [(empty, "empty ground-truth mask"), (total <= 0, "total relevance is not positive"),
                    ((ratio < 0) | (ratio > 1), "relevance ratio outside [0, 1] (negative relevance)")],
                   {"preprocess": preprocess})


def top_k_weights(a: Any, k: np.ndarray | int) -> np.ndarray:
    """Expected membership of each location in the top k of its row (k may vary per row) under a
    uniformly random tie-break: 1 above the k-th largest value, (k - #above) / #equal for the values
    equal to it, 0 below.  Ties are averaged, never broken by position, so a constant row gives every
    location k/N."""
    a = np.asarray(a, dtype=float)
    n, N = a.shape
    k = np.broadcast_to(np.reshape(k, (-1, 1)), (n, 1)).astype(int)
    kth = np.take_along_axis(-np.sort(-a, axis=1), np.clip(k - 1, 0, N - 1), axis=1)
    above = a > kth
    equal = a == kth
    share = np.divide(k - above.sum(axis=1, keepdims=True), equal.sum(axis=1, keepdims=True),
                      out=np.zeros((n, 1)), where=equal.any(axis=1, keepdims=True))
    weights = np.where(above, 1.0, np.where(equal, share, 0.0))
    return np.where(k > 0, weights, 0.0)


def relevance_rank_accuracy(attributions: Any, masks: Any, *, preprocess: str = "raw") -> MetricResult:
    """Relevance rank accuracy (Arras et al. 2022), higher is better, in [0, 1]: with K = |s|, the
    fraction of the K highest-ranked locations that lie in the mask (ties at the K-th place averaged,
    :func:`top_k_weights`).  NaN for an empty mask."""
    a, s, empty = _localisation(attributions, masks, preprocess)
    K = s.sum(axis=1)
    values = np.divide((top_k_weights(a, K) * s).sum(axis=1), K, out=np.zeros(len(a)), where=K > 0)
    return _result("relevance_rank_accuracy", values, True, [(empty, "empty ground-truth mask")],
                   {"preprocess": preprocess})


def top_k_intersection(attributions: Any, masks: Any, k: Any, *, preprocess: str = "raw",
                       concept_influence: bool = False) -> MetricResult:
    """Top-k intersection (Theiner et al. 2021), higher is better, in [0, 1]: |top_k(a) ∩ s| / k
    (ties at the k-th place averaged, :func:`top_k_weights`); ``k`` an int or a fraction of the number of features N.  ``concept_influence`` multiplies by
    N/|s| (no longer bounded by 1).  NaN for an empty mask."""
    a, s, empty = _localisation(attributions, masks, preprocess)
    k = _k_of(k, a.shape[1])
    values = (top_k_weights(a, k) * s).sum(axis=1) / k
    if concept_influence:
        values = np.divide(values * a.shape[1], s.sum(axis=1), out=np.zeros(len(a)), where=~empty)
    return _result("top_k_intersection", values, True, [(empty, "empty ground-truth mask")],
                   {"k": k, "preprocess": preprocess, "concept_influence": concept_influence})


def localisation_auc(attributions: Any, masks: Any, *, preprocess: str = "raw") -> MetricResult:
    """ROC-AUC (Fawcett 2006) per instance, mask as labels and a as scores, higher is better, in
    [0, 1] (0.5 = chance); ties count one half.  NaN when the mask is empty or covers everything."""
    a, s, empty = _localisation(attributions, masks, preprocess)
    order = np.argsort(a, axis=1, kind="stable")
    sa = np.take_along_axis(a, order, axis=1)
    n, N = a.shape
    # average ranks (1-based) with ties
    pos = np.arange(1, N + 1, dtype=float)[None].repeat(n, axis=0)
    starts = np.concatenate([np.ones((n, 1), bool), np.diff(sa, axis=1) != 0], axis=1)
    group = np.cumsum(starts, axis=1)
    avg = np.empty_like(pos)
    for r in range(n):  # group means per row; rows are independent and N-sized
        sums = np.bincount(group[r], weights=pos[r])
        counts = np.bincount(group[r])
        avg[r] = sums[group[r]] / counts[group[r]]
    ranks = np.empty_like(avg)
    np.put_along_axis(ranks, order, avg, axis=1)
    P = s.sum(axis=1)
    Q = N - P
    u = (ranks * s).sum(axis=1) - P * (P + 1) / 2
    values = np.divide(u, P * Q, out=np.zeros(n), where=(P > 0) & (Q > 0))
    return _result("localisation_auc", values, True,
                   [(empty, "empty ground-truth mask"), (Q == 0, "mask covers every feature: no negatives")],
                   {"preprocess": preprocess})
