"""The metric replays (see :mod:`pytest_xai.explainers.replay`): metrics as peers shipped them, with a
bug, beside the fixed ones, and the probes (:data:`PROBES`): properties any correct metric has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.metrics import outputs

# ---------------------------------------------------------------------------------------- metrics


def pgi(
    predict,
    inputs,
    attributions,
    *,
    k: int = 2,
    perturb_top: bool = True,
    sigma: float = 0.5,
    n_samples: int = 50,
    seed: int = 0,
    target: Any = None,
) -> np.ndarray:
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


def arya_monotonicity(
    predict, inputs, attributions, baseline, *, target: Any = None, baseline_only: bool = False
) -> np.ndarray:
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


def sensitivity_n(
    predict,
    inputs,
    attributions,
    reference,
    *,
    n_subsets: int = 40,
    size: int = 2,
    seed: int = 0,
    over_batch: bool = False,
    target: Any = None,
) -> np.ndarray:
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
    drop = fx[:, None] - outputs(
        predict, rows.reshape(-1, d), None if target is None else np.repeat(target, n_subsets)
    ).reshape(n, n_subsets)
    summed = A @ mask.T.astype(float)  # (n, subsets)
    if over_batch:
        with np.errstate(invalid="ignore", divide="ignore"):
            per_subset = [np.corrcoef(summed[:, s], drop[:, s])[0, 1] if n > 1 else math.nan for s in range(n_subsets)]
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


def sensitivity_max(
    explain: Callable, inputs, groups, perturbed: Sequence[np.ndarray], *, expand_mask: bool = True
) -> np.ndarray:
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
    reversed_map = reversed_order(truth)
    good = float(np.mean(metric(case.predict, case.inputs, truth)))
    bad = float(np.mean(metric(case.predict, case.inputs, reversed_map)))
    return _score(
        "pgi_prefers_truth", good > bad, f"PGI of the exact values {good:.4g}, of the reversed order {bad:.4g}"
    )


def probe_log_se_is_scale_free(metric: Callable) -> Score:
    """The standard error of log(scores) does not change when every score is multiplied by 1,000."""
    scores = np.random.default_rng(0).lognormal(0.0, 0.5, 64)
    se, se_scaled = metric(scores)[1], metric(1000.0 * scores)[1]
    return _score(
        "log_se_is_scale_free",
        bool(np.isclose(se, se_scaled)),
        f"standard error of log scores {se:.4g}, of log(1000 x scores) {se_scaled:.4g}",
    )


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


def reversed_order(truth: np.ndarray) -> np.ndarray:
    """The same |values| per row, given to the features in the reverse order of importance."""
    rank = np.argsort(np.argsort(-np.abs(truth), axis=1, kind="stable"), axis=1)
    return np.take_along_axis(np.sort(np.abs(truth), axis=1), rank, axis=1)


def probe_irof_prefers_truth(metric: Callable) -> Score:
    """Removing features in the order of the exact values leaves less of the output change than the
    reversed order: a higher IROF score (gaussian_linear_rho50, baseline 0)."""
    case = _linear_case()
    truth = case.truth["shapley_interventional"]
    good = float(np.nanmean(metric(case.predict, case.inputs, truth, case.baseline)))
    bad = float(np.nanmean(metric(case.predict, case.inputs, reversed_order(truth), case.baseline)))
    return _score("irof_prefers_truth", good > bad, f"IROF of the exact values {good:.4g}, reversed order {bad:.4g}")


def probe_monotonicity_prefers_truth(metric: Callable) -> Score:
    """The exact values score a higher monotonicity than the reversed order (gaussian_linear_rho50)."""
    case = _linear_case()
    truth = case.truth["shapley_interventional"]
    good = float(np.nanmean(metric(case.predict, case.inputs, truth, case.background)))
    bad = float(np.nanmean(metric(case.predict, case.inputs, reversed_order(truth), case.background)))
    return _score(
        "monotonicity_prefers_truth",
        good > bad,
        f"monotonicity of the exact values {good:.3g}, reversed order {bad:.3g}",
    )


def probe_faithfulness_constant_undefined(metric: Callable) -> Score:
    """A constant non-zero map has no faithfulness (NaN, left out of means), not a score of 0 that
    ranks it above maps that anti-correlate (gaussian_linear_rho50).  An all-zero map is no longer
    this case: it scores 0 where the output depends on the features (docs/defects.md XB-12)."""
    case = _linear_case()
    values = metric(case.predict, case.inputs[:10], np.ones((10, case.inputs.shape[1])), case.background)
    return _score(
        "faithfulness_constant_undefined",
        bool(np.isnan(values).all()),
        f"faithfulness of a constant map of ones: {np.unique(np.round(values, 6))}",
    )


def probe_rank_of_top_feature(metric: Callable) -> Score:
    """The most important feature has rank 0, the least important rank d - 1 (importance 3, 9, 1, 5)."""
    importance = np.array([3.0, 9.0, 1.0, 5.0])
    ranks = (metric(importance, 1), metric(importance, 2))
    return _score("rank_of_top_feature", ranks == (0, 3), f"ranks of features 1 (top) and 2 (last): {ranks}")


#: Metric probes: ``probe(metric) -> Score``, properties a correct metric has.
PROBES: dict[str, Callable[[Callable], Score]] = {
    f.__name__.removeprefix("probe_"): f
    for f in (
        probe_pgi_prefers_truth,
        probe_log_se_is_scale_free,
        probe_monotonicity_rejects_noise,
        probe_focus_perfect_map,
        probe_sensitivity_n_row_alone,
        probe_sensitivity_max_stable_grouped,
        probe_infidelity_scale_free,
        probe_irof_prefers_truth,
        probe_monotonicity_prefers_truth,
        probe_faithfulness_constant_undefined,
        probe_rank_of_top_feature,
    )
}
