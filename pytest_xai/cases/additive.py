"""Additively separable piecewise-linear regression: an attribution benchmark with exact ground truth.

Mamalakis, Ebert-Uphoff & Barnes, "Neural network attribution methods for problems in
geoscience: a novel synthetic benchmark dataset", Environmental Data Science 1, e8 (2022),
doi:10.1017/eds.2022.7 (arXiv 2103.10005); reference code
``amamalak/Neural-Network-Attribution-Benchmark-for-Regression``.

``F(x) = sum_i C_i(x_i) / d`` with each ``C_i`` continuous, piecewise linear and ``C_i(0) = 0``, so
the contribution of pixel ``i`` to sample ``n`` is known exactly: ``Cnt[n, i] = C_i(x_ni) / d`` and
``y = Cnt.sum(1)``.  Offline, the paper's SST correlation matrix is replaced by
``Sigma_ij = exp(-D_ij / L)`` (haversine distance between the cells of its 10-degree grid); the
ground truth does not depend on Sigma.

Two cases: ``additive_oracle`` explains ``F`` itself (a torch twin built from Linear/ReLU layers
that computes ``F`` exactly), and ``additive_mlp`` explains the paper's fully connected network
trained on samples of ``F`` (a CPU recipe, see :func:`train_mlp`).  The check
:func:`additive_correlation` is the paper's metric: per-sample Pearson correlation across pixels
between the heatmap and the ground truth.

One module of ~600 lines for one paper: the generator, its exact contributions, the torch twin of
``F``, the training recipe of the paper's network and the check are each other's inputs and are
only ever read together.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from pytest_xai import metrics, stats
from pytest_xai.cache import NO_CACHE, Cache
from pytest_xai.case import Case, CaseInfo, Score
from pytest_xai.checks import attributions_of, check, truth_reference
from pytest_xai.errors import NotApplicable
from pytest_xai.extras import install_line
from pytest_xai.registry import Family

SOURCE = "Mamalakis, Ebert-Uphoff & Barnes 2022, Environ. Data Sci. 1:e8"
FAMILY = Family("additive", source=SOURCE, smoke=("additive_correlation", "additive_mlp"))
GRID_LATS = 89.5 - 10.0 * np.arange(18)  # 89.5, 79.5, ..., -80.5
GRID_LONS = 0.5 + 10.0 * np.arange(36)  # 0.5, 10.5, ..., 350.5
PAPER_D = 458  # ocean cells of the paper's grid; offline a seeded subset of the 648 cells
PAPER_K = 5
PAPER_L = 20.0  # correlation length, degrees of arc (about 2,200 km)
MLP_HIDDEN = (512, 256, 128, 64, 32, 16)
MLP_EPOCHS = 16
MAX_BACKGROUND = 100
#: Rows explained: the check's statistic is the mean per-row correlation, whose spread across rows
#: is 0.06-0.11 (KernelSHAP, Integrated Gradients), so the mean of 20 rows is known to about +-0.02
#: against a 0.5 threshold that separates >= 0.9 from ~0; a hundred rows sharpened nothing.
N_EXPLAINED = 20
#: Model evaluations per explainer call (pytest_xai.budget): a row costs 8 us here (the oracle's
#: 458 piece lookups) or 12 us (the network), so 5e5 keeps a KernelSHAP call near 10 CPU seconds.
BUDGET = 500_000


# --------------------------------------------------------------------------------------------
# Generation (Mamalakis et al. 2022; an offline covariance substitute for the SST data)


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


def _units(breaks: np.ndarray, slopes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    the units of :func:`_units` at one point inside each piece."""
    sign, offset, weight = _units(breaks, slopes)
    inner = (breaks[:, :-1] + breaks[:, 1:]) / 2
    points = np.concatenate([breaks[:, :1] - 1.0, inner, breaks[:, -1:] + 1.0], axis=1)
    at = (np.maximum(sign[:, None, :] * (points[:, :, None] - offset[:, None, :]), 0.0) * weight[:, None, :]).sum(-1)
    return at - slopes * points, slopes


def local_functions(X: np.ndarray, breaks: np.ndarray, slopes: np.ndarray, *, chunk: int = 512,
                    summed: bool = False) -> np.ndarray:
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
        x = X[start:start + chunk]
        piece = np.broadcast_to(first, x.shape).copy()
        for column in breaks.T:
            piece += x > column
        part = slope.take(piece)
        part *= x
        part += intercept.take(piece)
        out[start:start + chunk] = part.sum(axis=1) if summed else part
    return out


def adjacent_to_zero(X: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """True where ``x_ni`` lies on a piece touching 0 (there Input x Gradient equals ``C_i(x_ni)``)."""
    upper = np.where(breaks > 0, breaks, np.inf).min(axis=1)
    lower = np.where(breaks < 0, breaks, -np.inf).max(axis=1)
    return (X > lower) & (X < upper)


def generate(
    *, seed: int = 0, n_samples: int = 1000, d: int = PAPER_D, n_breaks: int = PAPER_K,
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
    return {"X": X, "y": contribution.sum(axis=1), "contribution": contribution,
            "breaks": breaks, "slopes": slopes, "cells": cells}


# --------------------------------------------------------------------------------------------
# Models: the analytic oracle and the paper's network


def oracle_module(breaks: np.ndarray, slopes: np.ndarray):
    """``F`` exactly, as ``Sequential(Linear(d, d*U), ReLU, Linear(d*U, 1, bias=False))`` (float32, eval).

    Hidden unit (i, u) is ``relu(sign * (x_i - offset))`` (see :func:`_units`), so every method that
    needs modules (DeepLift, LRP, guided backprop) runs on it; output shape (n, 1).  Because each
    hidden unit reads one pixel and is 0 at x = 0, DeepLift (rescale, zero baseline) is exact on it
    and LRP-z equals Input x Gradient.
    """
    import torch

    sign, offset, weight = _units(breaks, slopes)
    d, units = sign.shape
    first = np.zeros((d * units, d))
    first[np.arange(d * units), np.repeat(np.arange(d), units)] = sign.ravel()
    hidden, output = torch.nn.Linear(d, d * units), torch.nn.Linear(d * units, 1, bias=False)
    model = torch.nn.Sequential(hidden, torch.nn.ReLU(), output)
    with torch.no_grad():
        hidden.weight.copy_(torch.as_tensor(first))
        hidden.bias.copy_(torch.as_tensor(-(sign * offset).ravel()))
        output.weight.copy_(torch.as_tensor(weight.reshape(1, -1) / d))
    return model.requires_grad_(False).eval()


def paper_mlp(d: int, *, seed: int = 0):
    """The paper's network: d -> 512 -> 256 -> 128 -> 64 -> 32 -> 16 (ReLU) -> 1 (no bias).

    Initialisation as its Keras code: first kernel ~ N(0, (1/d)^2) with zero bias; the other
    kernels and the hidden biases He-normal (Keras: normal truncated at 2 sd, sd sqrt(2 / fan_in),
    a bias vector's fan_in being its length).  410,112 parameters for d = 458.
    """
    import torch

    layers, width = [], d
    for units in MLP_HIDDEN:
        layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
        width = units
    layers.append(torch.nn.Linear(width, 1, bias=False))
    model = torch.nn.Sequential(*layers)
    generator = torch.Generator().manual_seed(seed)

    def he_normal(tensor, fan_in):
        std = math.sqrt(2.0 / fan_in) / 0.87962566103423978  # Keras' truncation correction
        with torch.no_grad():
            tensor.copy_(torch.randn(tensor.shape, generator=generator).clamp_(-2, 2) * std)

    linear = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        linear[0].weight.copy_(torch.randn(linear[0].weight.shape, generator=generator) / d)
        linear[0].bias.zero_()
    for layer in linear[1:]:
        he_normal(layer.weight, layer.in_features)
        if layer.bias is not None:
            he_normal(layer.bias, layer.out_features)
    return model


def r_squared(y: np.ndarray, prediction: np.ndarray) -> float:
    """Coefficient of determination 1 - SSE / SST."""
    y = np.asarray(y, dtype=float)
    return float(1.0 - np.sum((y - prediction) ** 2) / np.sum((y - y.mean()) ** 2))


def torch_predict(module):
    """numpy (n, d) -> numpy (n,) float64 through ``module`` without gradients, one thread."""

    def predict(X):
        import torch

        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                out = module(torch.as_tensor(np.asarray(X, dtype=np.float32)))
        finally:
            torch.set_num_threads(previous)
        return out.reshape(len(out)).double().numpy()

    return predict


def train_mlp(
    model, X: np.ndarray, y: np.ndarray, *, seed: int = 0, epochs: int = MLP_EPOCHS, batch_size: int = 256,
    lr: float = 1e-3, patience: int = 3, validation: float = 0.1, recipe: str = "cpu",
) -> dict[str, Any]:
    """Train ``model`` on (X, y) with MSE; returns the history (held-out R^2 per epoch, seconds).

    ``recipe="cpu"`` (the default, a documented deviation from the paper): Adam (lr 1e-3, cosine
    decay to lr/100 over ``epochs``), batch 256; the target is divided by its standard deviation
    for training and the factor folded back into the bias-free output layer afterwards, so the
    network predicts ``y`` itself.  ``recipe="paper"``: plain SGD without momentum at constant
    ``lr`` on the raw target (the paper: lr 0.02, batch 32, 50 epochs; pass those).  Both shuffle
    each epoch with a seeded generator on one torch thread, hold out the last ``validation``
    fraction of the rows, keep the weights of the epoch with the best held-out R^2 and stop after
    ``patience`` epochs without improvement.
    """
    if recipe not in ("cpu", "paper"):
        raise ValueError(f"recipe must be 'cpu' or 'paper', got {recipe!r}")
    import torch

    start = time.perf_counter()
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        n_fit = round(len(X) * (1 - validation))
        scale = float(np.std(y[:n_fit])) if recipe == "cpu" else 1.0
        xs = torch.as_tensor(X, dtype=torch.float32)
        ys = torch.as_tensor(y / scale, dtype=torch.float32)
        x_fit, y_fit, x_val = xs[:n_fit], ys[:n_fit], xs[n_fit:]
        steps = epochs * math.ceil(n_fit / batch_size)
        optimiser: torch.optim.Optimizer
        schedule: torch.optim.lr_scheduler.LRScheduler
        if recipe == "cpu":
            optimiser = torch.optim.Adam(model.parameters(), lr=lr)
            schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps, eta_min=lr / 100)
        else:
            optimiser = torch.optim.SGD(model.parameters(), lr=lr)
            schedule = torch.optim.lr_scheduler.ConstantLR(optimiser, factor=1.0, total_iters=0)
        generator = torch.Generator().manual_seed(seed)
        best, best_state, history = -math.inf, None, []
        for _ in range(epochs):
            model.train()
            for batch in torch.randperm(n_fit, generator=generator).split(batch_size):
                optimiser.zero_grad()
                loss = torch.mean((model(x_fit[batch]).squeeze(1) - y_fit[batch]) ** 2)
                loss.backward()
                optimiser.step()
                schedule.step()
            model.eval()
            with torch.no_grad():
                r2 = r_squared(y[n_fit:] / scale, model(x_val).squeeze(1).double().numpy())
            history.append(r2)
            if r2 > best:
                best, best_state = r2, {k: v.clone() for k, v in model.state_dict().items()}
            elif len(history) - 1 - int(np.argmax(history)) >= patience:
                break
        model.load_state_dict(best_state)
        with torch.no_grad():
            model[-1].weight.mul_(scale)
    finally:
        torch.set_num_threads(previous)
    return {"validation_r2": history, "seconds": time.perf_counter() - start}


# --------------------------------------------------------------------------------------------
# Metric and check

TRUTHS = ("contribution", "contribution_centred", "contribution_positive", "contribution_absolute")


def per_sample_correlation(heatmaps: np.ndarray, truth: np.ndarray, *, method: str = "pearson") -> metrics.MetricResult:
    """Correlation across pixels between each heatmap row and its ground-truth row (one per sample).

    ``method`` is "pearson" (the paper's metric, :func:`pytest_xai.stats.pearson_rows`) or
    "spearman" (Pearson of average ranks, :func:`pytest_xai.stats.average_ranks`).  A row where
    either vector is constant has no correlation: NaN, with the reason recorded in the result.
    """
    a = np.asarray(heatmaps, dtype=float).reshape(len(heatmaps), -1)
    b = np.asarray(truth, dtype=float).reshape(len(truth), -1)
    if a.shape != b.shape:
        raise ValueError(f"heatmaps {a.shape} and truth {b.shape} must have the same shape")
    if method == "spearman":
        a, b = stats.average_ranks(a), stats.average_ranks(b)
    elif method != "pearson":
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    return metrics._correlation_result(f"{method} r", a, b, "heatmap", "ground truth", {"method": method})


def ground_truth(case: Case, truth: str = "contribution") -> tuple[np.ndarray, np.ndarray]:
    """The ground-truth rows for ``truth`` and the per-sample sign the correlation is multiplied by.

    "contribution" Cnt and "contribution_centred" (Cnt minus its mean over the case's background,
    what background-based methods such as interventional SHAP estimate) use sign +1.  For
    LRP-alpha1beta0, whose relevances all carry the sign of the prediction, the paper correlates
    with "contribution_positive" C+ = max(Cnt, 0) and "contribution_absolute" |Cnt|, each
    multiplied by -1 where the network's prediction is negative.
    """
    if truth not in TRUTHS:
        raise ValueError(f"truth must be one of {TRUTHS}, got {truth!r}")
    if truth in ("contribution", "contribution_centred"):
        return case.truth[truth], np.ones(len(case.inputs))
    contribution = case.truth["contribution"]
    rows = np.maximum(contribution, 0.0) if truth == "contribution_positive" else np.abs(contribution)
    return rows, np.where(np.asarray(case.predict(case.inputs)) < 0, -1.0, 1.0)


@check(marker="xai_additive", thresholds={"min_mean_r": 0.5}, reference=truth_reference("contribution"),
       passes_by_construction={
    "row_offset": "Pearson correlation, the paper's metric, is invariant to a constant added to a sample's heatmap",
    "swapped": "exchanging two of d >= 32 pixels moves a per-sample correlation over d pixels by about 2/d",
    "noisy_10": "noise at 10 % of the reference's RMS leaves r near 1/sqrt(1 + 0.1^2) = 0.995",
    "noisy_30": "noise at 30 % of the reference's RMS leaves r near 1/sqrt(1 + 0.3^2) = 0.96",
    "noisy_100": "noise at the reference's RMS leaves r near 1/sqrt(2) = 0.71, above 0.5, which must also pass "
                 "Input x Gradient (0.69-0.73: exact on the pieces adjacent to zero)",
})
def additive_correlation(attributions, case: Case, *, truth: str = "contribution", min_mean_r: float = 0.5) -> Score:
    """Mean per-sample Pearson r between heatmaps and the exact contributions (Mamalakis et al. 2022).

    Passes when the mean r over the explained samples is at least ``min_mean_r``; the score value
    is the mean r clipped to [0, 1].  Undefined correlations (constant rows) are excluded and
    counted.  Default 0.5, from the controls in ``tests/test_additive.py`` (captum explainers):
    on the oracle, Integrated Gradients, DeepLift and Occlusion-1 reach r > 0.999 and Input x
    Gradient (= LRP-z) 0.73, while the signed gradient, SmoothGrad, guided backprop and ``random``
    stay within 0.01 of 0; on the trained MLP, IG/DeepLift/Shapley sampling reach 0.98,
    Occlusion-1 0.92 and Input x Gradient 0.69, while gradient, SmoothGrad and guided backprop are
    at -0.10 to -0.14.  0.5 sits in the middle of the gap on both.
    Zoo (``tests/test_zoo.py``): zeros and constants have no correlation (undefined, fail), the
    input itself, the output copied, noise, sign flips and shuffled rows fail.  Passed by
    construction (declared): a per-row offset (Pearson is shift-invariant), exchanging two of d
    pixels, and noise up to the reference's RMS (r >= 0.71 by construction, and Input x Gradient,
    0.69-0.73, sits at that level).
    """
    heatmaps = attributions_of(attributions).reshape(len(case.inputs), -1)
    rows, sign = ground_truth(case, truth)
    pearson = per_sample_correlation(heatmaps, rows)
    r = pearson.values * sign
    spearman = per_sample_correlation(heatmaps, rows, method="spearman").values * sign
    defined = ~np.isnan(r)
    reasons = list(pearson.reasons.values())
    nan_note = "; ".join(f"{reasons.count(k)} x {k}" for k in sorted(set(reasons))) or "none"
    params = {"truth": truth, "min_mean_r": float(min_mean_r)}
    if not defined.any():
        return Score(check="additive_correlation", value=0.0, passed=False, threshold=float(min_mean_r),
                     detail=f"no sample has a defined correlation with {truth} ({nan_note})", params=params)
    mean, median = float(np.mean(r[defined])), float(np.median(r[defined]))
    worst = int(np.flatnonzero(defined)[np.argmin(r[defined])])
    z_h = heatmaps[worst] - heatmaps[worst].mean()
    z_t = rows[worst] - rows[worst].mean()
    mismatch = np.abs(z_h / np.linalg.norm(z_h) - sign[worst] * z_t / np.linalg.norm(z_t))
    top = np.argsort(-mismatch, kind="stable")[:5]
    passed = mean >= min_mean_r
    detail = (
        f"mean r = {mean:.3f} (median {median:.3f}, Spearman {float(np.nanmean(spearman)):.3f}) "
        f"against {truth} over {int(defined.sum())} samples; undefined: {nan_note}; "
        f"{'meets' if passed else 'below'} the minimum {min_mean_r:g}"
    )
    worst_info = {
        "row": worst, "r": float(r[worst]),
        "pixels": [{"feature": case.feature_names[i], "attribution": float(heatmaps[worst, i]),
                    "truth": float(rows[worst, i])} for i in top],
    }
    return Score(check="additive_correlation", value=float(np.clip(mean, 0.0, 1.0)), passed=bool(passed),
                 threshold=float(min_mean_r), detail=detail, params=params, worst=worst_info)


# --------------------------------------------------------------------------------------------
# Cases

ORACLE_N = 1000  # 900 train / 100 test rows: the 100 test rows are explained
MLP_D = 32  # the paper's d = 458 needs ~10^6 samples to reach R^2 0.99 (see build_mlp_case)
MLP_N = 200_000
MIN_R2 = 0.99


def _data(name: str, cache: Cache, *, seed: int, n_samples: int, d: int, n_breaks: int,
          length_scale: float) -> dict[str, np.ndarray]:
    """The arrays a case needs (function definition, test rows, background), cached as npz."""
    params = {"seed": seed, "n_samples": n_samples, "d": d, "n_breaks": n_breaks,
              "length_scale": length_scale, "recipe": 1}

    def build() -> dict[str, np.ndarray]:
        data = generate(seed=seed, n_samples=n_samples, d=d, n_breaks=n_breaks, length_scale=length_scale)
        n_train = round(0.9 * n_samples)
        return {"breaks": data["breaks"], "slopes": data["slopes"], "cells": data["cells"],
                "X_test": data["X"][n_train:], "y_test": data["y"][n_train:],
                "background": data["X"][:min(MAX_BACKGROUND, n_train)]}

    def validate(arrays: dict) -> None:
        k = max(n_breaks, 1)
        if arrays["breaks"].shape != (d, k) or arrays["slopes"].shape != (d, k + 1):
            raise ValueError(f"function arrays have shapes {arrays['breaks'].shape}, {arrays['slopes'].shape}")
        if arrays["X_test"].shape[1] != d or not np.all(np.isfinite(arrays["X_test"])):
            raise ValueError("test inputs have the wrong width or are not finite")

    return cache.arrays(name, params, build, validate)


def _case(info: CaseInfo, arrays: dict, model, predict, meta: dict) -> Case:
    breaks, slopes = arrays["breaks"], arrays["slopes"]
    d = breaks.shape[0]
    inputs = arrays["X_test"][:N_EXPLAINED].copy()
    background = arrays["background"]
    contribution = local_functions(inputs, breaks, slopes) / d
    centre = local_functions(background, breaks, slopes).mean(axis=0) / d
    cells = arrays["cells"]
    names = [f"lat{GRID_LATS[c // GRID_LONS.size]:+.1f}_lon{GRID_LONS[c % GRID_LONS.size]:.1f}" for c in cells]
    return Case(
        info=info, inputs=inputs, predict=predict, feature_names=names, model=model, target=None,
        background=background, baseline=np.zeros(d), torch_model=model,
        truth={"contribution": contribution, "contribution_centred": contribution - centre,
               "adjacent_to_zero": adjacent_to_zero(inputs, breaks)},
        meta={"breaks": breaks, "slopes": slopes, "cells": cells, "d": d, "budget": BUDGET, **meta},
        draw=draw_worst,
    )


def draw_worst(path, case: Case, attributions: np.ndarray, row: int):
    """Attribution and ground-truth contribution of sample ``row`` on the 10-degree map."""
    from pytest_xai.pictures import side_by_side_png

    def on_map(values: np.ndarray) -> np.ndarray:
        grid = np.full(GRID_LATS.size * GRID_LONS.size, np.nan)
        grid[case.meta["cells"]] = values
        return grid.reshape(GRID_LATS.size, GRID_LONS.size)

    panels = [("attribution", on_map(attributions[row])), ("ground truth C_i(x_i)/d", on_map(case.truth["contribution"][row]))]
    return side_by_side_png(path, panels, f"{case.name}, sample {row} (latitude 89.5 at the top)", diverging=(True, True))


def build_oracle_case(
    info: CaseInfo, *, seed: int = 0, cache: Cache = NO_CACHE, n_samples: int = ORACLE_N, d: int = PAPER_D,
    n_breaks: int = PAPER_K, length_scale: float = PAPER_L,
) -> Case:
    """The analytic ``F`` as the model: numpy ``predict`` (float64) and its exact torch twin.

    Without torch installed the native model is ``predict`` itself (no torch twin).
    """
    arrays = _data("additive_oracle", cache, seed=seed, n_samples=n_samples, d=d, n_breaks=n_breaks,
                   length_scale=length_scale)
    breaks, slopes = arrays["breaks"], arrays["slopes"]

    def predict(X):
        X = np.asarray(X, dtype=float)
        return local_functions(X, breaks, slopes, summed=True) / d

    try:
        oracle = oracle_module(breaks, slopes)
    except ImportError:
        oracle = None
    case = _case(info, arrays, oracle if oracle is not None else predict, predict,
                 {"n_samples": n_samples, "n_breaks": n_breaks, "length_scale": length_scale})
    case.torch_model = oracle
    return case


SHIPPED_MLP = Path(__file__).resolve().parents[1] / "data" / "additive_mlp.json"


def _load_shipped(model, params: dict) -> bool:
    """Load the state_dict shipped in the package when it was trained with exactly ``params``
    (so a fresh CI machine does not spend 90 s training); the R^2 gate still checks it."""
    import torch

    meta = json.loads(SHIPPED_MLP.read_text())
    if meta["params"] != params:
        return False
    model.load_state_dict(torch.load(SHIPPED_MLP.with_name(meta["file"]), weights_only=True))
    return True


def build_mlp_case(
    info: CaseInfo, *, seed: int = 0, cache: Cache = NO_CACHE, n_samples: int = MLP_N, d: int = MLP_D,
    n_breaks: int = PAPER_K, length_scale: float = PAPER_L, epochs: int = MLP_EPOCHS,
    min_r2: float = MIN_R2, recipe: str = "cpu",
) -> Case:
    """The paper's MLP trained on ``F`` (CPU recipe of :func:`train_mlp`), gated on test R^2.

    Default d = 32 cells, N = 200,000 (180,000 train, of which 18,000 held out for early
    stopping; 20,000 test), 16 epochs: on one CPU thread the network reaches test R^2 0.9945 in
    85-105 s (measured on a shared 2-core machine).  At the paper's d = 458, 10 epochs of this
    recipe stop at test R^2 0.963 (N = 200,000) or 0.94 (N = 50,000): the network overfits without
    the paper's 10^6 samples, so the full-size benchmark is ``d=458`` with a much larger
    ``n_samples`` (``recipe="paper"``: SGD lr 0.02, batch 32; pass ``epochs=50``).  The network is
    cached (state_dict) keyed by every parameter; a test R^2 below ``min_r2`` makes the case not
    applicable: :class:`NotApplicable` "model below quality gate (R^2=...)".
    """
    if recipe not in ("cpu", "paper"):
        raise ValueError(f"recipe must be 'cpu' or 'paper', got {recipe!r}")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise NotApplicable(f"{info.name} needs torch, which is not installed: {install_line('torch')}") from None

    arrays = _data("additive_mlp_data", cache, seed=seed, n_samples=n_samples, d=d, n_breaks=n_breaks,
                   length_scale=length_scale)
    params = {"seed": seed, "n_samples": n_samples, "d": d, "n_breaks": n_breaks,
              "length_scale": length_scale, "epochs": epochs,
              "recipe": "adam-cosine-1" if recipe == "cpu" else "paper-sgd-1"}
    lr, batch_size = (1e-3, 256) if recipe == "cpu" else (0.02, 32)
    trained: dict[str, Any] = {}

    def train(model) -> None:
        if _load_shipped(model, params):
            trained["seconds"] = 0.0
            return
        data = generate(seed=seed, n_samples=n_samples, d=d, n_breaks=n_breaks, length_scale=length_scale)
        n_train = round(0.9 * n_samples)
        trained.update(train_mlp(model, data["X"][:n_train], data["y"][:n_train], seed=seed,
                                 epochs=epochs, recipe=recipe, lr=lr, batch_size=batch_size))

    def validate(model) -> None:
        if not np.all(np.isfinite(torch_predict(model)(arrays["X_test"][:N_EXPLAINED]))):
            raise ValueError("the network predicts non-finite values")

    def make():
        return paper_mlp(d, seed=seed)

    model = cache.torch_module("additive_mlp", params, make, train, validate)
    predict = torch_predict(model)
    r2 = r_squared(arrays["y_test"], predict(arrays["X_test"]))
    if not r2 >= min_r2:
        raise NotApplicable(f"{info.name}: model below quality gate (R^2={r2:.4f} < {min_r2:g})")
    meta = {"n_samples": n_samples, "recipe": recipe, "n_breaks": n_breaks, "length_scale": length_scale,
            "test_r2": r2, "training_seconds": trained.get("seconds"), "validation_r2": trained.get("validation_r2")}
    return _case(info, arrays, model, predict, meta)


@FAMILY.case(category="fidelity", source="analytic F",
             checks={"additive_correlation": {"truth": "contribution"}})
def additive_oracle(info, *, seed, cache) -> Case:
    """Explain the exact additive piecewise-linear F (d=458, K=5, L=20 deg): IG and Occlusion-1 are exact."""
    return build_oracle_case(info, seed=seed, cache=cache)


@FAMILY.case(category="fidelity", source="trained network",
             checks={"additive_correlation": {"truth": "contribution"}})
def additive_mlp(info, *, seed, cache) -> Case:
    """Explain the paper's MLP trained on F (d=32, CPU recipe, test R^2 >= 0.99 or the case is skipped)."""
    return build_mlp_case(info, seed=seed, cache=cache)
