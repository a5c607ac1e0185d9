"""The explainer replays (see :mod:`pytest_xai.explainers.replay`): reference methods computed in numpy
through ``predict`` (the fixed counterparts: finite-difference path gradients for the gradient
methods, exact, kernel and permutation Shapley values), and the mutants, each written from one
published bug's description.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_xai.errors import NotApplicable
from pytest_xai.metrics import outputs

# ------------------------------------------------------------------------------- reference methods


def _rows(predict: Callable, X: np.ndarray, target: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Outputs of the explained class for flat rows ``X`` of inputs shaped ``shape``."""
    t = None if target is None else np.broadcast_to(np.asarray(target, dtype=int), (len(X),))
    return outputs(predict, X.reshape((len(X),) + shape), t)


def path_gradients(
    predict: Callable, inputs: Any, baseline: Any, target: Any = None, *, steps: int = 32, eps: float = 1e-5
) -> np.ndarray:
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
        np.shape(inputs)
    )


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
        np.shape(inputs)
    )


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
    "baseline": (
        first_row_multipliers,
        log_probability_multipliers,
        gradient_times_delta,
        times_input,
        without_step_size,
        divided_twice,
        batch_scaled_path,
    ),  # each claims what IG claims
    "background": (
        batch_normalised,
        size_weighted_kernel_shap,
        unseeded_permutation_shapley,
        permutation_shapley,
        kernel_shap,
        other_class,
        integrated_gradients_over_background,
        local_multipliers_over_background,
    ),
}
for _claim, _explainers in _CLAIMS.items():
    for _explain in _explainers:
        _explain.completeness = _claim  # type: ignore[attr-defined]
# Kernel SHAP solved over every coalition claims exact values, as kernelshap's exact mode does.
kernel_shap.exact = size_weighted_kernel_shap.exact = exact_shapley.exact = True  # type: ignore[attr-defined]


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
        before = order[: int(np.flatnonzero(order == j)[0])]
        rows_off[i] = Z[rng.integers(len(Z))]
        rows_off[i, before] = x[before]
        rows_on[i] = rows_off[i]
        rows_on[i, j] = x[j]
    t = None if target is None else np.full(k, int(target))
    return _rows(predict, rows_on, t, shape) - _rows(predict, rows_off, t, shape)


def _sampling_shapley(inputs, predict, background, target, seed, *, variance_root: bool):
    """shap's SamplingExplainer scheme: permutation samples per feature, more where the first round
    varied most, then the additivity gap spread in proportion to each estimate's variance of the
    mean (var / N; ``variance_root`` divides by sqrt(N), shap#4767).  The standard errors are
    reported too, from the same variances: v - v^2 / sum(v), the variance of each value once the
    gap is spread (the correction is a least-squares projection with those variances)."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    Z = np.asarray(background, dtype=float).reshape(len(background), -1)
    n, d = X.shape
    rng = np.random.default_rng(seed)
    shape = np.shape(inputs)[1:]
    targets = [None] * n if target is None else list(np.broadcast_to(np.asarray(target), (n,)))
    out, stderr = np.zeros((n, d)), np.zeros((n, d))
    for r in range(n):
        draws = [list(_marginals(predict, X[r], Z, j, 8, rng, targets[r], shape)) for j in range(d)]
        spread = np.array([np.var(draws[j]) for j in range(d)])
        extra = np.round(24 * d * spread / spread.sum()).astype(int) if spread.sum() > 0 else np.zeros(d, int)
        for j in np.flatnonzero(extra):
            draws[j].extend(_marginals(predict, X[r], Z, j, int(extra[j]), rng, targets[r], shape))
        phi = np.array([np.mean(draws[j]) for j in range(d)])
        count = np.array([len(draws[j]) for j in range(d)], dtype=float)
        var = np.array([np.var(draws[j]) for j in range(d)]) / (np.sqrt(count) if variance_root else count)
        f_x = _rows(predict, X[r : r + 1], targets[r], shape)[0]
        f_z = _rows(predict, Z, targets[r], shape).mean()
        gap = float(f_x - f_z - phi.sum())
        out[r] = phi + (var / var.sum() * gap if var.sum() > 0 else gap / d)
        stderr[r] = np.sqrt(np.clip(var - var**2 / var.sum(), 0.0, None)) if var.sum() > 0 else 0.0
    return {"attributions": out.reshape(np.shape(inputs)), "stderr": stderr.reshape(np.shape(inputs))}


def sampling_variance_root(inputs, predict, background, target, seed):
    """shap#4767: the SamplingExplainer's variance of the mean divided by sqrt(N), not N."""
    return _sampling_shapley(inputs, predict, background, target, seed, variance_root=True)


def sampling_fixed(inputs, predict, background, target, seed):
    """The SamplingExplainer scheme with the variance of the mean var / N."""
    return _sampling_shapley(inputs, predict, background, target, seed, variance_root=False)


sampling_variance_root.completeness = sampling_fixed.completeness = "background"  # type: ignore[attr-defined]
sampling_variance_root.estimator = sampling_fixed.estimator = True  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------------
# Language models (the llm family): occlusion of each prompt token by the padding, through predict
# (the next token's log-probabilities), as captum's LLMAttribution(FeatureAblation) computes it.


def _occluded(prompts: np.ndarray, value: Callable[[np.ndarray], np.ndarray], baseline) -> np.ndarray:
    """value(prompts) - value(prompts with token t replaced by the baseline's), per token t."""
    X = np.asarray(prompts, dtype=float)
    base = np.broadcast_to(np.asarray(baseline, dtype=float), X.shape)
    out = np.zeros(X.shape)
    full = value(X)
    for t in range(X.shape[1]):
        masked = X.copy()
        masked[:, t] = base[:, t]
        out[:, t] = full - value(masked)
    return out


def _column(predict, target) -> Callable[[np.ndarray], np.ndarray]:
    target = np.asarray(target, dtype=int)
    return lambda X: np.asarray(predict(X))[np.arange(len(X)), target]


def token_occlusion(inputs, predict, baseline, target):
    """The fixed counterpart: each prompt token replaced by the padding, the change in the target's
    log-probability (captum ``LLMAttribution(FeatureAblation)``)."""
    return _occluded(inputs, _column(predict, target), baseline)


def conditioned_on_output(inputs, predict, baseline, target):
    """shap#3217: the scores of the generated text were computed conditioned on the output itself:
    the target appended to the prompt (shifted left by one) and its log-probability read after it."""
    column = _column(predict, target)
    shifted = lambda X: column(np.concatenate([X[:, 1:], np.asarray(target, dtype=float)[:, None]], axis=1))
    return _occluded(inputs, shifted, baseline)


def target_one_position_early(inputs, predict, baseline, target):
    """TomFrederik/unseal#7: the target's logit selected at the wrong position: the distribution
    predicted one token early (after the prompt without its last token)."""
    column = _column(predict, target)
    early = lambda X: column(np.concatenate([np.zeros((len(X), 1)), X[:, :-1]], axis=1))
    return _occluded(inputs, early, baseline)


def tokens_misaligned(inputs, predict, baseline, target):
    """cdpierse/transformers-interpret#18: attributions misaligned with the tokens: each value
    shown on the token after the one it belongs to."""
    return np.roll(token_occlusion(inputs, predict, baseline, target), 1, axis=1)
