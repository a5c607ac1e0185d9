"""Replays of published explainer and metric bugs: does the suite catch what the field shipped?

:data:`REPLAYS` holds one :class:`Replay` per bug found in a peer's public tracker (or by us).  Each
has a *mutant*, an explainer (the contract of ``docs/design.md``) or a metric written here from the
bug's description (never from the peer's code) that reproduces the bug's effect on our contract,
and its *fixed* counterpart (the correct method).  :func:`run` puts both through the tests the bug
is about: built-in checks on small built-in cases for explainers, and metric probes (properties a
correct metric has, :data:`PROBES`) for metrics.  A replay is *caught* when the mutant fails at
least one of its tests and the fixed counterpart passes them all; a bug the suite cannot catch
carries ``uncaught`` (the reason, which names the check that would be needed).
``scripts/bugs_table.py`` writes ``docs/bugs.md`` from a run; ``tests/test_replay.py`` asserts it.

Methods are computed here in numpy through ``predict`` (finite-difference path gradients for the
gradient methods), so a replay runs in milliseconds and needs no torch or captum.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.errors import NotApplicable
from pytest_xai.metrics import outputs

# ------------------------------------------------------------------------------- reference methods


def _rows(predict: Callable, X: np.ndarray, target: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Outputs of the explained class for flat rows ``X`` of inputs shaped ``shape``."""
    t = None if target is None else np.broadcast_to(np.asarray(target, dtype=int), (len(X),))
    return outputs(predict, X.reshape((len(X),) + shape), t)


def path_gradients(predict: Callable, inputs: Any, baseline: Any, target: Any = None, *, steps: int = 32,
                   eps: float = 1e-5) -> np.ndarray:
    """Mean gradient along the straight path from ``baseline`` (one row, or one per input) to each
    input (midpoint rule, central differences through ``predict``): Integrated Gradients' average
    gradient."""
    X = np.asarray(inputs, dtype=float)
    n, shape = len(X), X.shape[1:]
    flat = X.reshape(n, -1)
    base, d = _baseline_of(flat, baseline), flat.shape[1]
    alphas = (np.arange(steps) + 0.5) / steps
    points = base[:, None, :] + alphas[None, :, None] * (flat - base)[:, None, :]  # (n, steps, d)
    step = eps * np.maximum(1.0, np.abs(points))
    plus = np.repeat(points[:, :, None, :], d, axis=2)
    minus = plus.copy()
    idx = np.arange(d)
    plus[:, :, idx, idx] += step
    minus[:, :, idx, idx] -= step
    tgt = None if target is None else np.repeat(np.broadcast_to(np.asarray(target, dtype=int), (n,)), steps * d)
    up = _rows(predict, plus.reshape(-1, d), tgt, shape).reshape(n, steps, d)
    down = _rows(predict, minus.reshape(-1, d), tgt, shape).reshape(n, steps, d)
    return ((up - down) / (2 * step)).mean(axis=1)


def _baseline_of(inputs: np.ndarray, baseline: Any) -> np.ndarray:
    """The baseline as one flat row per input (it is one row, or one per input)."""
    if baseline is None:
        raise NotApplicable("this method integrates from a baseline; the case has none")
    base, shape = np.asarray(baseline, dtype=float).reshape(-1), (len(inputs), inputs[0].size)
    return np.broadcast_to(base, shape) if base.size == shape[1] else base.reshape(shape)


def integrated_gradients(inputs, predict, baseline, target):
    """Integrated Gradients (Sundararajan et al. 2017) through ``predict``: complete by construction."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    return (path_gradients(predict, inputs, baseline, target) * (X - _baseline_of(X, baseline))).reshape(
        np.shape(inputs))


integrated_gradients.completeness = "baseline"  # type: ignore[attr-defined]


def _against_each_reference(method: Callable, inputs, predict, background, target) -> np.ndarray:
    """``method(inputs, predict, baseline, target)`` from every background row in turn, averaged:
    DeepLiftShap's (and expected gradients') form, complete against E f(background)."""
    if background is None:
        raise NotApplicable("this method averages over background rows; the case has none")
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    Z = np.asarray(background, dtype=float).reshape(len(background), -1)
    n, z = len(X), len(Z)
    t = None if target is None else np.repeat(np.broadcast_to(np.asarray(target), (n,)), z)
    out = method(np.repeat(X, z, axis=0), predict, np.tile(Z, (n, 1)), t)
    return np.asarray(out, dtype=float).reshape(n, z, -1).mean(axis=1).reshape(np.shape(inputs))


def integrated_gradients_over_background(inputs, predict, background, target):
    """Integrated Gradients from each background row, averaged (expected gradients, exact quadrature)."""
    return _against_each_reference(integrated_gradients, inputs, predict, background, target)


def permutation_shapley(inputs, predict, background, target, seed, n_permutations: int = 24, rng=None):
    """Interventional Shapley values by antithetic permutation sampling (Strumbelj & Kononenko 2014),
    each marginal contribution averaged over the background; the draws come from ``seed``."""
    if background is None:
        raise NotApplicable("permutation sampling needs a background")
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    Z = np.asarray(background, dtype=float).reshape(len(background), -1)
    n, d = X.shape
    rng = np.random.default_rng(seed) if rng is None else rng
    out = np.zeros((n, d))
    orders = [rng.permutation(d) for _ in range(n_permutations // 2)]
    orders += [o[::-1] for o in orders]
    for order in orders:
        rows = np.repeat(Z[None], n, axis=0)  # (n, z, d): all absent
        previous = _rows(predict, rows.reshape(-1, d), _per_z(target, n, len(Z)), np.shape(inputs)[1:])
        previous = previous.reshape(n, len(Z)).mean(axis=1)
        for j in order:
            rows[:, :, j] = X[:, None, j]
            now = _rows(predict, rows.reshape(-1, d), _per_z(target, n, len(Z)), np.shape(inputs)[1:])
            now = now.reshape(n, len(Z)).mean(axis=1)
            out[:, j] += now - previous
            previous = now
    return (out / len(orders)).reshape(np.shape(inputs))


def _per_z(target: Any, n: int, z: int) -> Any:
    return None if target is None else np.repeat(np.broadcast_to(np.asarray(target, dtype=int), (n,)), z)


def _coalition_values(inputs, predict, background, target) -> tuple[np.ndarray, np.ndarray]:
    """Every coalition (2^d, d) bool and v(S) = E_z f(x_S, z_rest) per row, (n, 2^d)."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    Z = np.asarray(background, dtype=float).reshape(len(background), -1)
    n, d = X.shape
    masks = np.array(list(itertools.product([False, True], repeat=d)))
    rows = np.where(masks[None, :, None, :], X[:, None, None, :], Z[None, None])
    v = _rows(predict, rows.reshape(-1, d), _per_z(target, n, len(masks) * len(Z)), np.shape(inputs)[1:])
    return masks, v.reshape(n, len(masks), len(Z)).mean(axis=2)


def kernel_shap(inputs, predict, background, target, *, per_coalition: bool = True):
    """Kernel SHAP solved exactly over all coalitions (Lundberg & Lee 2017, Theorem 2), efficiency
    imposed.  The Shapley kernel weighs one coalition of size s by (d-1) / (C(d,s) s (d-s));
    ``per_coalition=False`` gives that weight to every coalition of size s, dropping the 1/C(d,s)."""
    if background is None:
        raise NotApplicable("Kernel SHAP needs a background")
    masks, v = _coalition_values(inputs, predict, background, target)
    d = masks.shape[1]
    sizes = masks.sum(axis=1)
    inner = (sizes > 0) & (sizes < d)
    s = sizes[inner]
    w = (d - 1) / (s * (d - s)) / (np.array([math.comb(d, int(k)) for k in s]) if per_coalition else 1.0)
    M = masks[inner].astype(float)
    empty, full = v[:, 0], v[:, -1]
    # minimise sum_S w (v_S - v_0 - M_S phi)^2 subject to sum phi = v_full - v_0 (eliminate the last player)
    A = M[:, :-1] - M[:, -1:]
    b = v[:, inner] - empty[:, None] - M[:, -1][None] * (full - empty)[:, None]
    WA = A * w[:, None]
    head = np.linalg.solve(A.T @ WA, WA.T @ b.T).T
    phi = np.concatenate([head, (full - empty - head.sum(axis=1))[:, None]], axis=1)
    return phi.reshape(np.shape(inputs))


def exact_shapley(inputs, predict, background, target):
    """Exact interventional Shapley values by enumeration (our reference explainer)."""
    from pytest_xai.explainers.baselines import exact_shapley as exact

    return exact(inputs, predict, background, target)


exact_shapley.completeness = "background"  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------- mutants


def first_row_multipliers(inputs, predict, baseline, target):
    """captum#1276: every row's multipliers are the first row's (a batch index dropped)."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    grads = path_gradients(predict, inputs, baseline, target)
    return (grads[:1] * (X - _baseline_of(X, baseline))).reshape(np.shape(inputs))


def log_probability_multipliers(inputs, predict, baseline, target):
    """captum#519 (fixed with #1367): the softmax multipliers carry a normalisation the rescale rule
    does not have; the stand-in here is the multipliers of log p, whose contributions sum to the
    change of log p, not of the explained probability p."""
    def log_predict(x):
        return np.log(np.clip(np.asarray(predict(x), dtype=float), 1e-300, None))

    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    return (path_gradients(log_predict, inputs, baseline, target) * (X - _baseline_of(X, baseline))).reshape(
        np.shape(inputs))


def gradient_times_delta(inputs, predict, baseline, target):
    """captum#1085: the rescale rule does not hold through exp or products: the local gradient at x
    times (x - baseline), whose sum is not the output change of a nonlinear model."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    base = _baseline_of(X, baseline)
    grads = path_gradients(predict, inputs, base + (1.0 - 1e-9) * (X - base), target, steps=1)
    return (grads * (X - base)).reshape(np.shape(inputs))


def local_multipliers_over_background(inputs, predict, background, target):
    """captum#1104: DeepLiftShap whose multipliers stop following the path from each reference: the
    local gradient at x times (x - reference), averaged over the background."""
    return _against_each_reference(gradient_times_delta, inputs, predict, background, target)


def unseeded_permutation_shapley(inputs, predict, background, target, seed):
    """captum PR #775: the sampling draws from a fresh, unseeded generator."""
    return permutation_shapley(inputs, predict, background, target, seed, rng=np.random.default_rng())


def size_weighted_kernel_shap(inputs, predict, background, target):
    """kernelshap PR #168: Kernel SHAP with the per-size weight given to every coalition."""
    return kernel_shap(inputs, predict, background, target, per_coalition=False)


def batch_normalised(inputs, predict, background, target):
    """inseq#110: exact Shapley values divided by the batch's largest |attribution|."""
    A = np.asarray(exact_shapley(inputs, predict, background, target), dtype=float)
    top = np.abs(A).max()
    return A / top if top > 0 else A


def batch_scaled_path(inputs, predict, baseline, target):
    """inseq#113: Integrated Gradients whose gradients are rescaled by the batch's mean path length
    over the row's own."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    A = np.asarray(integrated_gradients(inputs, predict, baseline, target), dtype=float).reshape(len(X), -1)
    length = np.linalg.norm(X - _baseline_of(X, baseline), axis=1)
    scale = np.divide(length.mean(), length, out=np.ones_like(length), where=length > 0)
    return (A * scale[:, None]).reshape(np.shape(inputs))


def other_class(inputs, predict, background, target):
    """inseq#188: the contrastive attribution explains the other answer: exact Shapley values of
    class (target + 1) mod k."""
    k = np.asarray(predict(np.asarray(inputs)[:1])).shape[1]
    return exact_shapley(inputs, predict, background, (np.asarray(target) + 1) % k)


def class_template(inputs, target):
    """TSInterpret#57: the map depends on the class only: the first half of the features for even
    classes, the second half for odd ones, whatever the model and input."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    d = X.shape[1]
    odd = (np.broadcast_to(np.asarray(0 if target is None else target), (len(X),)) % 2).astype(bool)
    first = np.arange(d) < d // 2
    return np.where(odd[:, None], ~first, first).astype(float).reshape(np.shape(inputs))


def times_input(inputs, predict, baseline, target):
    """TianhongDai/integrated-gradient-pytorch#3: the average gradient times x, not x - baseline."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    return (path_gradients(predict, inputs, baseline, target) * X).reshape(np.shape(inputs))


def without_step_size(inputs, predict, baseline, target):
    """stellargraph#831: the Riemann sum without d-alpha: the gradients summed over the 32 steps."""
    return 32.0 * np.asarray(integrated_gradients(inputs, predict, baseline, target), dtype=float)


def divided_twice(inputs, predict, baseline, target):
    """PAIR-code/saliency#23: batched interpolation divides by the step count twice."""
    return np.asarray(integrated_gradients(inputs, predict, baseline, target), dtype=float) / 32.0


_CLAIMS: dict[str, tuple[Callable[..., Any], ...]] = {
    "baseline": (first_row_multipliers, log_probability_multipliers, gradient_times_delta, times_input,
                 without_step_size, divided_twice, batch_scaled_path),  # each claims what IG claims
    "background": (batch_normalised, size_weighted_kernel_shap, unseeded_permutation_shapley, permutation_shapley,
                   kernel_shap, other_class, integrated_gradients_over_background, local_multipliers_over_background),
}
for _claim, _explainers in _CLAIMS.items():
    for _explain in _explainers:
        _explain.completeness = _claim  # type: ignore[attr-defined]


def lime_key_zero(inputs, predict, background, target, feature_names, seed):
    """pytest-xai's own: lime_tabular read ``as_map()[0]`` for regression, LIME's negated weights."""
    from pytest_xai.explainers.lime import lime_tabular

    return -np.asarray(lime_tabular(inputs, predict, background, target, feature_names, seed), dtype=float)


def lime_fixed(inputs, predict, background, target, feature_names, seed):
    """The fixed adapter, pytest_xai.explainers:lime_tabular (``as_map()[1]``)."""
    from pytest_xai.explainers.lime import lime_tabular

    return lime_tabular(inputs, predict, background, target, feature_names, seed)


def shap_tree(inputs, model, background, target):
    """shap's interventional TreeExplainer, unmodified (its additivity check off, as in our adapter)."""
    from pytest_xai.explainers.shap import shap_tree as tree

    return tree(inputs, model, background, target)


shap_tree.completeness = "background"  # type: ignore[attr-defined]


def _marginals(predict, x, Z, j, k, rng, target, shape) -> np.ndarray:
    """k permutation samples of feature j's marginal contribution at row x (background row drawn too)."""
    d = len(x)
    rows_on, rows_off = np.empty((k, d)), np.empty((k, d))
    for i in range(k):
        order = rng.permutation(d)
        before = order[:int(np.flatnonzero(order == j)[0])]
        rows_off[i] = Z[rng.integers(len(Z))]
        rows_off[i, before] = x[before]
        rows_on[i] = rows_off[i]
        rows_on[i, j] = x[j]
    t = None if target is None else np.full(k, int(target))
    return _rows(predict, rows_on, t, shape) - _rows(predict, rows_off, t, shape)


def _sampling_shapley(inputs, predict, background, target, seed, *, variance_root: bool):
    """shap's SamplingExplainer scheme: permutation samples per feature, more where the first round
    varied most, then the additivity gap spread in proportion to each estimate's variance of the
    mean (var / N; ``variance_root`` divides by sqrt(N), shap#4767)."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    Z = np.asarray(background, dtype=float).reshape(len(background), -1)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    shape = np.shape(inputs)[1:]
    targets = [None] * n if target is None else list(np.broadcast_to(np.asarray(target), (n,)))
    out = np.zeros((n, d))
    for r in range(n):
        draws = [list(_marginals(predict, X[r], Z, j, 8, rng, targets[r], shape)) for j in range(d)]
        spread = np.array([np.var(draws[j]) for j in range(d)])
        extra = np.round(24 * d * spread / spread.sum()).astype(int) if spread.sum() > 0 else np.zeros(d, int)
        for j in np.flatnonzero(extra):
            draws[j].extend(_marginals(predict, X[r], Z, j, int(extra[j]), rng, targets[r], shape))
        phi = np.array([np.mean(draws[j]) for j in range(d)])
        count = np.array([len(draws[j]) for j in range(d)], dtype=float)
        var = np.array([np.var(draws[j]) for j in range(d)]) / (np.sqrt(count) if variance_root else count)
        f_x = _rows(predict, X[r:r + 1], targets[r], shape)[0]
        f_z = _rows(predict, Z, targets[r], shape).mean()
        gap = float(f_x - f_z - phi.sum())
        out[r] = phi + (var / var.sum() * gap if var.sum() > 0 else gap / d)
    return out.reshape(np.shape(inputs))


def sampling_variance_root(inputs, predict, background, target, seed):
    """shap#4767: the SamplingExplainer's variance of the mean divided by sqrt(N), not N."""
    return _sampling_shapley(inputs, predict, background, target, seed, variance_root=True)


def sampling_fixed(inputs, predict, background, target, seed):
    """The SamplingExplainer scheme with the variance of the mean var / N."""
    return _sampling_shapley(inputs, predict, background, target, seed, variance_root=False)


sampling_variance_root.completeness = sampling_fixed.completeness = "background"  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------- metrics


def pgi(predict, inputs, attributions, *, k: int = 2, perturb_top: bool = True, sigma: float = 0.5,
        n_samples: int = 50, seed: int = 0, target: Any = None) -> np.ndarray:
    """Prediction gap on important features (OpenXAI, Agarwal et al. 2022): mean |f(x) - f(x')| with
    Gaussian noise on the k features of largest |attribution|, per row (higher is better for a
    faithful map).  ``perturb_top=False`` perturbs the other features instead: PGU."""
    X = np.asarray(inputs, dtype=float)
    A = np.abs(np.asarray(attributions, dtype=float))
    n, d = X.shape
    top = np.zeros((n, d), bool)
    np.put_along_axis(top, np.argsort(-A, axis=1, kind="stable")[:, :k], True, axis=1)
    moved = top if perturb_top else ~top
    noise = sigma * np.random.default_rng(seed).standard_normal((n, n_samples, d))
    rows = X[:, None, :] + np.where(moved[:, None, :], noise, 0.0)
    fx = outputs(predict, X, target)
    out = outputs(predict, rows.reshape(-1, d), None if target is None else np.repeat(target, n_samples))
    return np.abs(fx[:, None] - out.reshape(n, n_samples)).mean(axis=1)


def pgi_as_pgu(predict, inputs, attributions, **kwargs) -> np.ndarray:
    """OpenXAI#28: the PGI mask keeps the top-k features fixed and perturbs the rest."""
    return pgi(predict, inputs, attributions, perturb_top=False, **kwargs)


def log_mean_and_se(scores: Sequence[float]) -> tuple[float, float]:
    """The mean and standard error of log(scores): (mean of log, std of log / sqrt(n))."""
    logs = np.log(np.asarray(scores, dtype=float))
    return float(logs.mean()), float(logs.std() / math.sqrt(len(logs)))


def log_of_se(scores: Sequence[float]) -> tuple[float, float]:
    """OpenXAI#32: log of the mean and log of the standard error of the raw scores."""
    s = np.asarray(scores, dtype=float)
    return float(np.log(s.mean())), float(np.log(s.std() / math.sqrt(len(s))))


def arya_monotonicity(predict, inputs, attributions, baseline, *, target: Any = None,
                      baseline_only: bool = False) -> np.ndarray:
    """Monotonicity (Arya et al. 2019; Quantus ``Monotonicity``): start from the baseline, insert
    the input's features in ascending order of attribution; 1 where every insertion raises (or
    keeps) the output.  ``baseline_only`` writes the baseline's own values at each step (Quantus
    0.5.3 and 0.6.0), so the input never enters."""
    X = np.asarray(inputs, dtype=float)
    n, d = X.shape
    order = np.argsort(np.asarray(attributions, dtype=float), axis=1, kind="stable")
    base = np.broadcast_to(np.asarray(baseline, dtype=float), (n, d))
    current = base.copy()
    source = base if baseline_only else X
    preds = []
    for step in range(d):
        idx = order[:, step]
        current[np.arange(n), idx] = source[np.arange(n), idx]
        preds.append(outputs(predict, current.copy(), target))
    return np.all(np.diff(np.stack(preds, axis=1), axis=1) >= 0, axis=1).astype(float)


def quantus_monotonicity(predict, inputs, attributions, baseline, *, target: Any = None) -> np.ndarray:
    """Quantus 0.5.3-0.6.0 Monotonicity: the baseline is perturbed with the baseline."""
    return arya_monotonicity(predict, inputs, attributions, baseline, target=target, baseline_only=True)


def focus(attributions: Any, target_quadrants: Sequence[int], *, swap_axes: bool = False) -> float:
    """Focus (Arya et al. 2021): share of positive relevance of a 2 x 2 mosaic (H x W map) in the
    quadrants (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right) holding the target class.
    ``swap_axes`` cuts the mosaic as if it were W x H (Quantus before PR #357)."""
    a = np.clip(np.asarray(attributions, dtype=float), 0.0, None)
    H, W = a.shape
    h, w = (W // 2, H // 2) if swap_axes else (H // 2, W // 2)
    blocks = [a[:h, :w], a[:h, w:], a[h:, :w], a[h:, w:]]
    total = a.sum()
    return float(sum(blocks[q].sum() for q in target_quadrants) / total) if total > 0 else math.nan


def focus_swapped(attributions: Any, target_quadrants: Sequence[int]) -> float:
    """Quantus before PR #357: Focus with the mosaic's width and height swapped."""
    return focus(attributions, target_quadrants, swap_axes=True)


def sensitivity_n(predict, inputs, attributions, reference, *, n_subsets: int = 40, size: int = 2, seed: int = 0,
                  over_batch: bool = False, target: Any = None) -> np.ndarray:
    """Sensitivity-n (Ancona et al. 2018): per row, Pearson over random subsets S of |S| = size of
    (sum of the attributions in S, f(x) - f(x with S set to the reference)).  ``over_batch`` takes
    the correlation across the rows of the batch for each subset instead (Quantus#150)."""
    X = np.asarray(inputs, dtype=float)
    A = np.asarray(attributions, dtype=float)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    subsets = np.array([rng.permutation(d)[:size] for _ in range(n_subsets)])
    mask = np.zeros((n_subsets, d), bool)
    np.put_along_axis(mask, subsets, True, axis=1)
    rows = np.where(mask[None], np.broadcast_to(np.asarray(reference, dtype=float), (d,)), X[:, None, :])
    fx = outputs(predict, X, target)
    drop = fx[:, None] - outputs(predict, rows.reshape(-1, d), None if target is None else
                                 np.repeat(target, n_subsets)).reshape(n, n_subsets)
    summed = A @ mask.T.astype(float)  # (n, subsets)
    if over_batch:
        with np.errstate(invalid="ignore", divide="ignore"):
            per_subset = [np.corrcoef(summed[:, s], drop[:, s])[0, 1] if n > 1 else math.nan
                          for s in range(n_subsets)]
        return np.full(n, float(np.mean(per_subset)))
    from pytest_xai.stats import pearson_rows

    return np.asarray(pearson_rows(summed, drop), dtype=float)


def sensitivity_n_over_batch(predict, inputs, attributions, reference, **kwargs) -> np.ndarray:
    """Quantus#150: Sensitivity-n correlated across the batch, undefined for one row."""
    return sensitivity_n(predict, inputs, attributions, reference, over_batch=True, **kwargs)


def grouped_occlusion(inputs, predict, baseline, groups):
    """Occlusion of each group (captum's ``feature_mask``): a group's members share its effect."""
    from pytest_xai.explainers.baselines import feature_occlusion

    return feature_occlusion(inputs, predict, baseline, None, groups=groups)


def sensitivity_max(explain: Callable, inputs, groups, perturbed: Sequence[np.ndarray], *,
                    expand_mask: bool = True) -> np.ndarray:
    """Max-sensitivity (Yeh et al. 2019; captum ``sensitivity_max``): per row, max over the
    perturbed copies of ||A(x') - A(x)|| / ||A(x)||.  ``explain(inputs, groups)``; with
    ``expand_mask=False`` the perturbed batch is explained without the feature groups (captum PR
    #1819: the mask was not repeated for it), as our max_sensitivity check would if its re-explained
    variants lost the case's groups."""
    A = np.asarray(explain(inputs, groups), dtype=float)
    norm = np.linalg.norm(A, axis=1)
    worst = np.zeros(len(A))
    for moved in perturbed:
        B = np.asarray(explain(moved, groups if expand_mask else None), dtype=float)
        worst = np.maximum(worst, np.linalg.norm(B - A, axis=1) / np.where(norm > 0, norm, np.inf))
    return worst


def sensitivity_max_unexpanded(explain: Callable, inputs, groups, perturbed) -> np.ndarray:
    """captum PR #1819: the perturbed batch is explained without the feature mask."""
    return sensitivity_max(explain, inputs, groups, perturbed, expand_mask=False)


def infidelity_raw(predict, inputs, attributions, **kwargs):
    """captum#613: infidelity without Yeh et al.'s optimal scaling beta, so it grows with |A|."""
    from pytest_xai.metrics import infidelity

    return infidelity(predict, inputs, attributions, perturbation="gaussian", normalize=False, **kwargs).values


def infidelity_normalised(predict, inputs, attributions, **kwargs):
    """Our infidelity (pytest_xai.metrics.infidelity, Gaussian perturbation, normalize=True)."""
    from pytest_xai.metrics import infidelity

    return infidelity(predict, inputs, attributions, perturbation="gaussian", normalize=True, **kwargs).values


def irof_aoc(predict, inputs, attributions, baseline, *, area_under: bool = False, target: Any = None) -> np.ndarray:
    """Iterative removal of features (Rieger & Hansen 2020; Quantus ``IterativeRemovalOfFeatures``):
    remove features in decreasing |attribution| (set to the baseline) and track the share of the
    output change left, |f(x_k) - f(b)| / |f(x) - f(b)|; the score is the area over that curve
    (higher: the map found what matters first).  ``area_under`` returns the area under it (Quantus#113)."""
    X = np.asarray(inputs, dtype=float)
    n, d = X.shape
    order = np.argsort(-np.abs(np.asarray(attributions, dtype=float)), axis=1, kind="stable")
    base = np.broadcast_to(np.asarray(baseline, dtype=float), (n, d))
    f_base, current = outputs(predict, base.copy(), target), X.copy()
    span = np.abs(outputs(predict, X, target) - f_base)
    curve = []
    for step in range(d):
        idx = order[:, step]
        current[np.arange(n), idx] = base[np.arange(n), idx]
        curve.append(np.abs(outputs(predict, current.copy(), target) - f_base) / np.where(span > 0, span, np.nan))
    auc = np.mean(np.stack(curve, axis=1), axis=1)
    return auc if area_under else 1.0 - auc


def irof_auc(predict, inputs, attributions, baseline, **kwargs) -> np.ndarray:
    """Quantus#113: IROF returned the area under the curve where it should return the area over it."""
    return irof_aoc(predict, inputs, attributions, baseline, area_under=True, **kwargs)


def monotonicity_by_feature_id(predict, inputs, attributions, reference) -> np.ndarray:
    """XAI-Bench XB-1 (docs/defects.md): Luss et al.'s monotonicity with each gain stored at its
    feature's id and the gains compared in id order, not in insertion order."""
    from pytest_xai.metrics import expected_outputs, importance_order

    X, A = np.asarray(inputs, dtype=float), np.asarray(attributions, dtype=float)
    n, d = X.shape
    order = importance_order(A)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(d)[None].repeat(n, axis=0), axis=1)
    masks = rank[:, None, :] < np.arange(d + 1)[None, :, None]
    gains = np.abs(np.diff(expected_outputs(predict, X, masks, reference), axis=1))  # insertion order
    by_id = np.empty_like(gains)
    np.put_along_axis(by_id, order, gains, axis=1)
    return (by_id[:, :-1] >= by_id[:, 1:]).mean(axis=1)


def monotonicity_ours(predict, inputs, attributions, reference) -> np.ndarray:
    """Our monotonicity (pytest_xai.metrics.monotonicity, gains in insertion order)."""
    from pytest_xai.metrics import monotonicity

    return monotonicity(predict, inputs, attributions, reference).values


def faithfulness_ours(predict, inputs, attributions, reference) -> np.ndarray:
    """Our faithfulness (pytest_xai.metrics.faithfulness): NaN with the reason where undefined."""
    from pytest_xai.metrics import faithfulness

    return faithfulness(predict, inputs, attributions, reference).values


def faithfulness_nan_as_zero(predict, inputs, attributions, reference) -> np.ndarray:
    """XAI-Bench XB-9 (docs/defects.md): an undefined correlation (constant map) reported as 0."""
    return np.nan_to_num(faithfulness_ours(predict, inputs, attributions, reference), nan=0.0)


def rank_of(importance: Any, feature: int) -> int:
    """The 0-based rank of ``feature`` by decreasing importance (ties: first come first)."""
    order = np.argsort(-np.asarray(importance, dtype=float), kind="stable")
    return int(np.flatnonzero(order == feature)[0])


def rank_by_argsort(importance: Any, feature: int) -> int:
    """Compare-xAI CX-2 (docs/defects.md): argsort's output read as the feature's rank."""
    return int(np.argsort(-np.asarray(importance, dtype=float), kind="stable")[feature])


# ----------------------------------------------------------------------------------- metric probes


def _score(name: str, passed: bool, detail: str) -> Score:
    return Score(name, 1.0 if passed else 0.0, bool(passed), 0.0, detail, {})


def _linear_case() -> Case:
    from pytest_xai import cases

    return cases.get("gaussian_linear_rho50")


def probe_pgi_prefers_truth(metric: Callable) -> Score:
    """A faithful map (exact Shapley values) scores a higher PGI than the same values with the
    order of importance reversed, on a linear model (gaussian_linear_rho50)."""
    case = _linear_case()
    truth = case.truth["shapley_interventional"]
    reversed_map = _reversed_order(truth)
    good = float(np.mean(metric(case.predict, case.inputs, truth)))
    bad = float(np.mean(metric(case.predict, case.inputs, reversed_map)))
    return _score("pgi_prefers_truth", good > bad, f"PGI of the exact values {good:.4g}, of the reversed order {bad:.4g}")


def probe_log_se_is_scale_free(metric: Callable) -> Score:
    """The standard error of log(scores) does not change when every score is multiplied by 1,000."""
    scores = np.random.default_rng(0).lognormal(0.0, 0.5, 64)
    se, se_scaled = metric(scores)[1], metric(1000.0 * scores)[1]
    return _score("log_se_is_scale_free", bool(np.isclose(se, se_scaled)),
                  f"standard error of log scores {se:.4g}, of log(1000 x scores) {se_scaled:.4g}")


def probe_monotonicity_rejects_noise(metric: Callable) -> Score:
    """On a linear model whose feature effects have both signs, a noise map is not monotone on every
    row (gaussian_linear_rho50, baseline 0)."""
    case = _linear_case()
    noise = np.random.default_rng(0).standard_normal(case.inputs.shape)
    share = float(np.mean(metric(case.predict, case.inputs, noise, case.baseline)))
    return _score("monotonicity_rejects_noise", share < 1.0, f"share of rows judged monotone for noise: {share:.3g}")


def probe_focus_perfect_map(metric: Callable) -> Score:
    """A map that puts all relevance on the two target quadrants (left column) of a 4 x 6 mosaic scores 1."""
    a = np.zeros((4, 6))
    a[:, :3] = 1.0
    value = metric(a, (0, 2))
    return _score("focus_perfect_map", bool(np.isclose(value, 1.0)), f"Focus of a perfect map: {value:.3g}")


def probe_sensitivity_n_row_alone(metric: Callable) -> Score:
    """A row's Sensitivity-n is defined when it is scored alone, and equals its value in a batch."""
    case = _linear_case()
    truth = case.truth["shapley_interventional"]
    batch = metric(case.predict, case.inputs[:8], truth[:8], case.baseline)
    alone = metric(case.predict, case.inputs[:1], truth[:1], case.baseline)
    ok = bool(np.isfinite(alone[0]) and np.isclose(alone[0], batch[0]))
    return _score("sensitivity_n_row_alone", ok, f"row 0 alone {alone[0]:.4g}, in a batch of 8 {batch[0]:.4g}")


def probe_sensitivity_max_stable_grouped(metric: Callable) -> Score:
    """Grouped occlusion of a linear model is stable: perturbing inputs by 0.01 moves it by < 0.5 of
    its norm (our max_sensitivity default), on gaussian_linear_rho50 with features in groups (0, 0, 0, 1, 1)."""
    case = _linear_case()
    X = case.inputs[:10]
    groups = np.array([0, 0, 0, 1, 1])
    rng = np.random.default_rng(0)
    moved = [X + 0.01 * rng.uniform(-1, 1, X.shape) for _ in range(3)]

    def explain(inputs, g):
        return grouped_occlusion(inputs, case.predict, case.baseline, g)

    value = float(np.mean(metric(explain, X, groups, moved)))
    return _score("sensitivity_max_stable_grouped", value < 0.5, f"mean max-sensitivity {value:.3g} (max 0.5)")


def probe_infidelity_scale_free(metric: Callable) -> Score:
    """Infidelity of 100 x the exact Shapley values equals that of the values (scale-free)."""
    case = _linear_case()
    truth = case.truth["shapley_interventional"]
    a = float(np.mean(metric(case.predict, case.inputs, truth)))
    b = float(np.mean(metric(case.predict, case.inputs, 100.0 * truth)))
    return _score("infidelity_scale_free", bool(np.isclose(a, b, rtol=1e-6)), f"infidelity {a:.4g}, of 100 x {b:.4g}")


def _reversed_order(truth: np.ndarray) -> np.ndarray:
    """The same |values| per row, given to the features in the reverse order of importance."""
    rank = np.argsort(np.argsort(-np.abs(truth), axis=1, kind="stable"), axis=1)
    return np.take_along_axis(np.sort(np.abs(truth), axis=1), rank, axis=1)


def probe_irof_prefers_truth(metric: Callable) -> Score:
    """Removing features in the order of the exact values leaves less of the output change than the
    reversed order: a higher IROF score (gaussian_linear_rho50, baseline 0)."""
    case = _linear_case()
    truth = case.truth["shapley_interventional"]
    good = float(np.nanmean(metric(case.predict, case.inputs, truth, case.baseline)))
    bad = float(np.nanmean(metric(case.predict, case.inputs, _reversed_order(truth), case.baseline)))
    return _score("irof_prefers_truth", good > bad, f"IROF of the exact values {good:.4g}, reversed order {bad:.4g}")


def probe_monotonicity_prefers_truth(metric: Callable) -> Score:
    """The exact values score a higher monotonicity than the reversed order (gaussian_linear_rho50)."""
    case = _linear_case()
    truth = case.truth["shapley_interventional"]
    good = float(np.nanmean(metric(case.predict, case.inputs, truth, case.background)))
    bad = float(np.nanmean(metric(case.predict, case.inputs, _reversed_order(truth), case.background)))
    return _score("monotonicity_prefers_truth", good > bad,
                  f"monotonicity of the exact values {good:.3g}, reversed order {bad:.3g}")


def probe_faithfulness_constant_undefined(metric: Callable) -> Score:
    """A constant non-zero map has no faithfulness (NaN, left out of means), not a score of 0 that
    ranks it above maps that anti-correlate (gaussian_linear_rho50).  An all-zero map is no longer
    this case: it scores 0 where the output depends on the features (docs/defects.md XB-12)."""
    case = _linear_case()
    values = metric(case.predict, case.inputs[:10], np.ones((10, case.inputs.shape[1])), case.background)
    return _score("faithfulness_constant_undefined", bool(np.isnan(values).all()),
                  f"faithfulness of a constant map of ones: {np.unique(np.round(values, 6))}")


def probe_rank_of_top_feature(metric: Callable) -> Score:
    """The most important feature has rank 0, the least important rank d - 1 (importance 3, 9, 1, 5)."""
    importance = np.array([3.0, 9.0, 1.0, 5.0])
    ranks = (metric(importance, 1), metric(importance, 2))
    return _score("rank_of_top_feature", ranks == (0, 3), f"ranks of features 1 (top) and 2 (last): {ranks}")


#: Metric probes: ``probe(metric) -> Score``, properties a correct metric has.
PROBES: dict[str, Callable[[Callable], Score]] = {
    f.__name__.removeprefix("probe_"): f for f in (
        probe_pgi_prefers_truth, probe_log_se_is_scale_free, probe_monotonicity_rejects_noise,
        probe_focus_perfect_map, probe_sensitivity_n_row_alone, probe_sensitivity_max_stable_grouped,
        probe_infidelity_scale_free, probe_irof_prefers_truth, probe_monotonicity_prefers_truth,
        probe_faithfulness_constant_undefined, probe_rank_of_top_feature)}


# -------------------------------------------------------------------------------- the replay corpus


@dataclass(frozen=True)
class Replay:
    """One published bug: ``issue`` ("owner/repo#N"), ``summary`` (one line, our words), ``mutant``
    and ``fixed`` (explainers or metrics), ``tests``: (check, case) pairs for an explainer,
    probe names (:data:`PROBES`) for a metric; ``uncaught``: why the suite cannot catch it."""

    name: str
    issue: str
    summary: str
    kind: str
    mutant: Callable[..., Any]
    fixed: Callable[..., Any]
    tests: tuple[Any, ...]
    uncaught: str | None = None

    @property
    def project(self) -> str:
        """The project's name: the repository of "owner/repo#N", or the word before "@" or " (" ."""
        return re.split(r"[#@ ]", self.issue)[0].split("/")[-1]


def _e(name, issue, summary, mutant, fixed, *tests, uncaught=None) -> Replay:
    return Replay(name, issue, summary, "explainer", mutant, fixed, tuple(tests), uncaught)


def _m(name, issue, summary, mutant, fixed, *tests) -> Replay:
    return Replay(name, issue, summary, "metric", mutant, fixed, tuple(tests))


_IG = integrated_gradients
REPLAYS: tuple[Replay, ...] = (
    _e("captum_deeplift_maxpool_first_row", "meta-pytorch/captum#1276",
       "DeepLIFT's max-pool fallback used the first example's gradient for the whole batch",
       first_row_multipliers, _IG, ("completeness", "units_interacting_features"),
       ("batch_invariance", "units_interacting_features")),
    _e("captum_deeplift_softmax_normalised", "meta-pytorch/captum#519",
       "DeepLift normalised the softmax multipliers: contributions no longer sum to the probability's change "
       "(large convergence delta; fixed with #1367)",
       log_probability_multipliers, _IG, ("completeness", "replay_softmax")),
    _e("captum_deeplift_exp_products", "meta-pytorch/captum#1085",
       "DeepLift/DeepLiftShap diverge when the model has exp or elementwise products: attributions do not "
       "sum to the output change",
       gradient_times_delta, _IG, ("completeness", "replay_softmax")),
    _e("captum_deepliftshap_relu_divergence", "meta-pytorch/captum#1104",
       "DeepLiftShap with ReLUs (captum 0.6) diverges from the output change it must sum to",
       local_multipliers_over_background, integrated_gradients_over_background, ("completeness", "replay_softmax")),
    _e("captum_shapley_unseeded", "meta-pytorch/captum#775",
       "Shapley value sampling without seeds: its own test failed 272 of 500 runs",
       unseeded_permutation_shapley, permutation_shapley, ("determinism", "replay_softmax")),
    _e("kernelshap_kernel_weights", "ModelOriented/kernelshap#168",
       "Kernel SHAP weighted coalitions wrongly: exact for interactions up to order two, off beyond",
       size_weighted_kernel_shap, kernel_shap, ("gt_shapley", "gaussian_piecewise_linear_rho50"),
       ("completeness", "gaussian_piecewise_linear_rho50"),
       uncaught="the wrong weights are exact for interactions up to order two; beyond, the error is a relative MSE "
                "of about 5e-4 (gaussian_piecewise_linear_rho50; 3e-3 for a six-way product), inside the tolerance "
                "every Shapley check keeps for sampling noise (gt_shapley 0.05). Catching it needs an exactness "
                "check for explainers that claim exact values on a case with interactions of order three or more "
                "whose truth uses the explainer's own background: gt_shapley at max_error=1e-6 on a six-way "
                "product does it (tests/test_replay.py); no built-in case is such a case yet"),
    _e("shap_sampling_variance_sqrt", "shap/shap#4767",
       "SamplingExplainer divided the variance of the mean by sqrt(N), misallocating the additivity correction",
       sampling_variance_root, sampling_fixed, ("gt_shapley", "gaussian_nonlinear_additive_rho50"),
       ("completeness", "gaussian_nonlinear_additive_rho50"),
       uncaught="the wrong variances only re-weight how the additivity gap is spread; the resulting bias is "
                "below the sampling noise every check must admit for sampling explainers. Catching it needs the "
                "explainer's reported variances (the contract has none) or a convergence check at growing budgets"),
    _e("shap_tree_forest_additivity", "shap/shap#1986",
       "TreeExplainer's values of a scikit-learn random forest miss its output on some rows (here shap 0.51, "
       "scikit-learn 1.9, wine)",
       shap_tree, exact_shapley, ("completeness", "replay_wine_forest")),
    _e("inseq_batched_attribution", "inseq-team/inseq#110",
       "attributions of a sentence changed with the other sentences in its batch, even for deterministic methods",
       batch_normalised, exact_shapley, ("batch_invariance", "gaussian_linear_rho50")),
    _e("inseq_dig_batch_scaling", "inseq-team/inseq#113",
       "Discretized IG still gave batch-dependent results: a faulty scaling of the gradients across the batch",
       batch_scaled_path, _IG, ("batch_invariance", "gaussian_nonlinear_additive_rho50"),
       ("completeness", "gaussian_nonlinear_additive_rho50")),
    _e("inseq_contrast_reversed", "inseq-team/inseq#188",
       "contrast_prob_diff returned the attribution of the false answer, not the true one",
       other_class, exact_shapley, ("gt_shapley", "replay_softmax"), ("completeness", "replay_softmax")),
    _e("tsinterpret_leftist_label_only", "fzi-forschungszentrum-informatik/TSInterpret#57",
       "LEFTIST's output was the first or last time steps depending on the class only, not the model or data",
       class_template, exact_shapley, ("gt_shapley", "replay_softmax"), ("gt_shapley", "gaussian_linear_rho50")),
    _e("ig_pytorch_wrong_delta", "TianhongDai/integrated-gradient-pytorch#3",
       "Integrated Gradients multiplied by the wrong input difference, so attributions did not sum to F(x) - F(x')",
       times_input, _IG, ("completeness", "multinomial_linear")),
    _e("stellargraph_ig_no_dalpha", "stellargraph/stellargraph#831",
       "Integrated Gradients forgot to multiply by d-alpha: node importances scale with the number of steps",
       without_step_size, _IG, ("completeness", "gaussian_linear_rho50")),
    _e("saliency_batched_ig_steps", "PAIR-code/saliency#23",
       "batched Integrated Gradients no longer summed to the confidence change: the sum fell as 1/steps",
       divided_twice, _IG, ("completeness", "gaussian_linear_rho50")),
    _e("pytest_xai_lime_key_zero", "pytest-xai (found here)",
       "our own lime_tabular read LIME's as_map() key 0 for regression, which holds the weights negated",
       lime_key_zero, lime_fixed, ("symmetry", "x0_plus_x1_uniform_stat_dep")),
    _m("openxai_pgi_is_pgu", "AI4LIFE-GROUP/OpenXAI#28",
       "PGI kept the top-k features fixed and perturbed the others: it computed PGU",
       pgi_as_pgu, pgi, "pgi_prefers_truth"),
    _m("openxai_log_standard_error", "AI4LIFE-GROUP/OpenXAI#32",
       "the reported log standard error was log(standard error), not the standard error of the logs",
       log_of_se, log_mean_and_se, "log_se_is_scale_free"),
    _m("quantus_monotonicity_baseline", "understandable-machine-intelligence-lab/Quantus@0.6.0",
       "Monotonicity (Arya et al.) perturbs the baseline with the baseline: every explanation scores as monotone "
       "(0.5.3 and 0.6.0; found here)",
       quantus_monotonicity, arya_monotonicity, "monotonicity_rejects_noise"),
    _m("quantus_focus_axes", "understandable-machine-intelligence-lab/Quantus#357",
       "Focus assumed the mosaic was B x C x W x H while it is B x C x H x W: quadrants cut on the wrong axes",
       focus_swapped, focus, "focus_perfect_map"),
    _m("quantus_sensitivity_n_batch_one", "understandable-machine-intelligence-lab/Quantus#150",
       "Sensitivity-n does not work for a batch of one, because of its similarity function",
       sensitivity_n_over_batch, sensitivity_n, "sensitivity_n_row_alone"),
    _m("captum_sensitivity_max_mask", "meta-pytorch/captum#1819",
       "sensitivity_max did not expand feature_mask for the perturbed batch (LIME, KernelSHAP with masks)",
       sensitivity_max_unexpanded, sensitivity_max, "sensitivity_max_stable_grouped"),
    _m("captum_infidelity_scale", "meta-pytorch/captum#613",
       "captum's infidelity grew with the scale of the attributions, unlike the authors' code, which rescales "
       "them (normalize= added; see also #1018)",
       infidelity_raw, infidelity_normalised, "infidelity_scale_free"),
    _m("quantus_irof_auc", "understandable-machine-intelligence-lab/Quantus#113",
       "IterativeRemovalOfFeatures computed the area under the curve instead of over it: the order reversed",
       irof_auc, irof_aoc, "irof_prefers_truth"),
    _m("xai_bench_monotonicity_order", "XAI-Bench (docs/defects.md XB-1)",
       "monotonicity compared each feature's gain in feature-id order, not in the order features were added",
       monotonicity_by_feature_id, monotonicity_ours, "monotonicity_prefers_truth"),
    _m("xai_bench_nan_as_zero", "XAI-Bench (docs/defects.md XB-9)",
       "a constant map's undefined faithfulness was reported as 0, ranking it above anti-correlated maps",
       faithfulness_nan_as_zero, faithfulness_ours, "faithfulness_constant_undefined"),
    _m("compare_xai_argsort_rank", "Compare-xAI (docs/defects.md CX-2)",
       "argsort's output was read as the feature's rank in the fooling score",
       rank_by_argsort, rank_of, "rank_of_top_feature"),
)


# ------------------------------------------------------------------------------------- the runner


def _softmax_case() -> Case:
    """Three classes, softmax of fixed linear logits over 4 features; each row explains its
    predicted class; the truth is the exact interventional Shapley values of that class."""
    from pytest_xai.usercase import make_case

    rng = np.random.default_rng(30)
    W, b = rng.normal(0.0, 1.0, (4, 3)), rng.normal(0.0, 0.3, 3)

    def predict(x):
        z = np.asarray(x, dtype=float) @ W + b
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    X, background = rng.normal(0.0, 1.0, (12, 4)), rng.normal(0.0, 1.0, (30, 4))
    target = predict(X).argmax(axis=1)
    truth = {"shapley_interventional": exact_shapley(X, predict, background, target)}
    return make_case(X, predict=predict, background=background, baseline=np.zeros(4), target=target, truth=truth,
                     name="replay_softmax", checks={"gt_shapley": {"convention": "interventional"}, "completeness": {}})


def _wine_forest_case() -> Case:
    """scikit-learn's bundled wine data and a 50-tree random forest (seed 0); rows 21 and 145, where
    shap 0.51's TreeExplainer misses one tree's vote, and four others; background every 6th row."""
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier

    from pytest_xai.usercase import make_case

    X, y = load_wine(return_X_y=True)
    model = RandomForestClassifier(n_estimators=50, random_state=0).fit(X, y)
    rows = X[[21, 145, 0, 60, 100, 170]]
    return make_case(rows, model=model, background=X[::6], target=model.predict(rows), name="replay_wine_forest",
                     checks={"completeness": {}})


#: Cases built here for replays that need them (name -> builder).
CASES: dict[str, Callable[[], Case]] = {"replay_softmax": _softmax_case, "replay_wine_forest": _wine_forest_case}


@dataclass(frozen=True)
class Verdict:
    """One test of a replay: the mutant's and the fixed counterpart's Score (None: skipped, with why)."""

    test: str
    mutant: Score | None
    fixed: Score | None
    skipped: str | None = None


@dataclass(frozen=True)
class Outcome:
    """A replay's run: ``caught`` when the mutant fails a test its fixed counterpart passes, and the
    fixed one passes every test."""

    replay: Replay
    verdicts: tuple[Verdict, ...]

    @property
    def fixed_passes(self) -> bool:
        return all(v.fixed is not None and v.fixed.passed for v in self.verdicts if v.skipped is None)

    @property
    def caught_by(self) -> list[str]:
        return [v.test for v in self.verdicts if v.mutant is not None and not v.mutant.passed]

    @property
    def caught(self) -> bool:
        return bool(self.caught_by) and self.fixed_passes


def get_case(name: str) -> Case:
    """A built-in case, or one of :data:`CASES`."""
    from pytest_xai import cases

    return CASES[name]() if name in CASES else cases.get(name)


def check_explainer(explain: Callable, check: str, case: Case, seed: int = 0) -> Score:
    """Run ``explain`` on ``case`` through the contract and score it with ``check`` in-process (the
    re-explaining checks get :func:`pytest_xai.cases.generic.reexplainer`; completeness the
    explainer's own ``completeness`` claim)."""
    import inspect

    from pytest_xai import checks, contract
    from pytest_xai.cases.generic import reexplainer

    info = checks.CHECKS[check]
    explainer = contract.Explainer(explain.__name__, repr(explain), explain, contract._wanted(explain, "replay"))
    explanation = contract.run(explainer, case, seed=seed)
    params = {**info.thresholds, **case.info.checks.get(check, {})}
    wanted = inspect.signature(info.func).parameters
    if "reexplain" in wanted:
        params["reexplain"] = reexplainer(explain, case, seed=seed)
    if check == "completeness":
        params.setdefault("claim", getattr(explain, "completeness", None))
    return info.func(explanation, case, **params)


def run(replay: Replay) -> Outcome:
    """Every test of ``replay`` on its mutant and its fixed counterpart."""
    from pytest_xai import cases

    cases.infos()  # the families' checks register when their modules load
    verdicts: list[Verdict] = []
    for test in replay.tests:
        if replay.kind == "metric":
            probe = PROBES[test]
            verdicts.append(Verdict(test, probe(replay.mutant), probe(replay.fixed)))
            continue
        check, name = test
        label = f"{check}[{name}]"
        try:
            case = get_case(name)
            verdicts.append(Verdict(label, check_explainer(replay.mutant, check, case),
                                    check_explainer(replay.fixed, check, case)))
        except NotApplicable as exc:
            verdicts.append(Verdict(label, None, None, skipped=str(exc)))
    return Outcome(replay, tuple(verdicts))


def run_all(replays: Sequence[Replay] = ()) -> list[Outcome]:
    """:func:`run` over ``replays`` (default: all of :data:`REPLAYS`)."""
    return [run(r) for r in (replays or REPLAYS)]
