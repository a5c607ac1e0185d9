"""The metric catalogue: the perturbation metrics users pick Quantus and OpenXAI for, written from their
papers, and the complexity figures (docs/metrics.md says what each can and cannot tell apart).

Removal-based metrics (features set absent in the order an explanation gives, absent meaning the
expectation over a reference: a baseline row, background rows or an imputer, as in
:func:`pytest_xai.metrics.expected_outputs`):

- :func:`deletion`: AOPC of the most-relevant-first deletion curve (Samek et al. 2017; Quantus
  ``PixelFlipping`` / ``RegionPerturbation``), higher is better;
- :func:`insertion`: the same curve built up from nothing (Petsiuk et al. 2018), higher is better;
- :func:`road`: RemOve And Debias (Rong et al. 2022): the removed features are imputed from the kept
  ones by noisy linear imputation, here the conditional mean of a Gaussian fitted to the background
  plus noise of its conditional spread, so that the imputation does not betray which features were
  removed; the score is the mean gap between least- and most-relevant-first removal, higher is better;
- :func:`irof`: Iterative Removal Of Features (Rieger & Hansen 2020; Quantus ``IROF``): groups of
  features (superpixels) removed most relevant first, the area over the curve of the share of a
  class score left, each row divided by its own f(x) - f(nothing), higher is better;
- :func:`pgi` and :func:`pgu`: prediction gap on important / unimportant features (OpenXAI, Agarwal et
  al. 2022): Gaussian noise on the k features of largest |attribution| (PGI, higher is better) or on
  the others (PGU, lower is better).

Every curve but IROF's is divided by one scale for the whole batch, the mean |f(x) - f(nothing)|, so that a
score is free of the output's units and comparable with the correct map's score on the same case.

Stability metrics, from an explanation at the inputs and at perturbed copies of them (``perturbed``
and ``perturbed_attributions`` stacked (m, n, ...), m perturbations of the n rows); each is the max
over the perturbations per row, lower is better:

- :func:`local_lipschitz`: ||a(x) - a(x')||_2 / ||x - x'||_2 (Alvarez-Melis & Jaakkola 2018; Quantus
  ``LocalLipschitzEstimate``);
- :func:`relative_input_stability` and :func:`relative_output_stability` (RIS, ROS; Agarwal et al.
  2022, "Rethinking stability for attribution-based explanations"; Quantus ``RelativeInputStability``,
  ``RelativeOutputStability``): the relative change of the attributions, ||(a - a') / a||_2, over
  the relative change of the input, max(||(x - x') / x||_2, eps_min), or over the change of the
  model's outputs, max(||h(x) - h(x')||_2, eps_min).  A zero attribution or input is divided by
  eps_min instead; an attribution near zero is divided by itself, as the paper writes it, so one
  such feature can dominate a row.  ``keep`` ((m, n) booleans) restricts the max to the
  perturbations that count (the paper's: those that keep the predicted label).

Figures, not verdicts: :func:`sparseness` (Gini index of |a|, Chalasani et al. 2020) and
:func:`complexity` (entropy of the |a| shares, Bhatt et al. 2020), as Quantus computes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_xai.metrics import MetricResult, _flat, _result, expected_outputs, outputs


def relevance_order(attributions: Any, seed: int = 0) -> np.ndarray:
    """Feature indices by decreasing signed attribution (most relevant for the explained output
    first, Quantus' order), ties broken at random (seeded), never by position."""
    a = -_flat(attributions, "attributions")
    return np.lexsort((np.random.default_rng(seed).random(a.shape), a), axis=1)


def _present(order: np.ndarray, removed: np.ndarray) -> np.ndarray:
    """(n, len(removed), d) masks: True where a feature is still present after removing the first
    ``removed[j]`` features of ``order``."""
    d = order.shape[1]
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(d), order.shape), axis=1)
    return rank[:, None, :] >= np.asarray(removed)[None, :, None]


def removal_curve(
    predict, inputs, attributions, reference, *, insert: bool = False, target: Any = None, seed: int = 0
) -> np.ndarray:
    """(n, d + 1) outputs as the features are removed most relevant first (``insert``: added most
    relevant first, starting from none), one feature a step, absent features taken from ``reference``."""
    X = _flat(inputs, "inputs")
    order = relevance_order(attributions, seed)
    steps = np.arange(X.shape[1] + 1)
    masks = _present(order, steps)
    return expected_outputs(predict, X, ~masks if insert else masks, reference, seed=seed, target=target)


def _scale(curve: np.ndarray, insert: bool) -> float:
    """Mean |f(x) - f(nothing)| over the batch (1 when the model never moves)."""
    full, empty = (curve[:, -1], curve[:, 0]) if insert else (curve[:, 0], curve[:, -1])
    scale = float(np.abs(full - empty).mean())
    return scale if scale > 0 else 1.0


def deletion(predict, inputs, attributions, reference, *, target: Any = None, seed: int = 0) -> MetricResult:
    """AOPC of deletion (Samek et al. 2017): mean over k = 1..d of f(x) - f(x without its k most
    relevant features), over the batch's mean |f(x) - f(nothing)|; higher is better."""
    curve = removal_curve(predict, inputs, attributions, reference, target=target, seed=seed)
    values = (curve[:, :1] - curve[:, 1:]).mean(axis=1) / _scale(curve, insert=False)
    return _result("deletion", values, True, [], {"seed": seed})


def insertion(predict, inputs, attributions, reference, *, target: Any = None, seed: int = 0) -> MetricResult:
    """Insertion (Petsiuk et al. 2018) as an AOPC: mean over k = 1..d of f(the k most relevant
    features alone) - f(nothing), over the batch's mean |f(x) - f(nothing)|; higher is better."""
    curve = removal_curve(predict, inputs, attributions, reference, insert=True, target=target, seed=seed)
    values = (curve[:, 1:] - curve[:, :1]).mean(axis=1) / _scale(curve, insert=True)
    return _result("insertion", values, True, [], {"seed": seed})


class NoisyLinearImputer:
    """ROAD's noisy linear imputation for tabular rows: absent features get their conditional mean
    given the present ones under a Gaussian fitted to the background (a linear function of the
    present features), plus Gaussian noise of ``noise`` times their conditional standard deviation."""

    conditional = "noisy linear imputation"

    def __init__(self, background: Any, noise: float = 0.1, ridge: float = 1e-6):
        B = _flat(background, "background")
        self.mean = B.mean(axis=0)
        cov = np.atleast_2d(np.cov(B, rowvar=False))
        self.cov = cov + ridge * max(float(np.trace(cov)) / len(cov), 1e-12) * np.eye(len(cov))
        self.noise = noise

    def impute(self, inputs, masks, n_samples, seed):
        n, m, d = masks.shape
        rng = np.random.default_rng([seed, 41])
        out = np.empty((n, m, 1, d))
        solved: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}  # per mask: the gain and the spread
        for i in range(n):
            for j in range(m):
                kept = masks[i, j]
                row = inputs[i].copy()
                gone = ~kept
                if gone.any():
                    if kept.tobytes() not in solved:
                        solved[kept.tobytes()] = self._conditional(kept)
                    gain, spread = solved[kept.tobytes()]
                    row[gone] = self.mean[gone] + gain @ (inputs[i, kept] - self.mean[kept])
                    row[gone] += self.noise * np.sqrt(np.maximum(spread, 0.0)) * rng.standard_normal(gone.sum())
                out[i, j, 0] = row
        return out

    def _conditional(self, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The gain of the absent features' conditional mean on the present ones, and its variances."""
        S, gone = self.cov, ~kept
        if not kept.any():
            return np.zeros((gone.sum(), 0)), np.diag(S)[gone]
        gain = np.linalg.solve(S[np.ix_(kept, kept)], S[np.ix_(kept, gone)]).T
        return gain, np.diag(S[np.ix_(gone, gone)] - gain @ S[np.ix_(kept, gone)])


def road(predict, inputs, attributions, background, *, target: Any = None, seed: int = 0) -> MetricResult:
    """ROAD (Rong et al. 2022): for k = 1..d-1 removed features, imputed by :class:`NoisyLinearImputer`,
    the mean of f(least relevant removed) - f(most relevant removed), over the batch's mean
    |f(x) - f(all imputed)|; higher is better (a map that ranks what matters first loses most when
    its top goes and least when its bottom goes)."""
    X = _flat(inputs, "inputs")
    d = X.shape[1]
    imputer = NoisyLinearImputer(background)
    order = relevance_order(attributions, seed)
    steps = np.arange(d + 1)
    morf = expected_outputs(predict, X, _present(order, steps), imputer, seed=seed, target=target)
    lerf = expected_outputs(predict, X, _present(order[:, ::-1], steps), imputer, seed=seed, target=target)
    values = (lerf[:, 1:d] - morf[:, 1:d]).mean(axis=1) / _scale(morf, insert=False)
    return _result("road", values, True, [], {"seed": seed, "imputation": "noisy linear (Gaussian conditional)"})


def _prediction_gap(
    predict,
    inputs,
    attributions,
    background=None,
    *,
    top: bool,
    k: int | None = None,
    sigma: float = 0.1,
    n_samples: int = 50,
    seed: int = 0,
    target: Any = None,
) -> MetricResult:
    X = _flat(inputs, "inputs")
    n, d = X.shape
    chosen_k = max(1, round(0.25 * d)) if k is None else k
    A = np.abs(_flat(attributions, "attributions"))
    order = np.lexsort((np.random.default_rng(seed).random(A.shape), -A), axis=1)
    chosen = np.zeros((n, d), bool)
    np.put_along_axis(chosen, order[:, :chosen_k], True, axis=1)
    moved = chosen if top else ~chosen
    spread = _flat(background, "background").std(axis=0) if background is not None else np.ones(d)
    noise = sigma * spread * np.random.default_rng([seed, 42]).standard_normal((n, n_samples, d))
    rows = X[:, None, :] + np.where(moved[:, None, :], noise, 0.0)
    fx = outputs(predict, X, target)
    t = None if target is None else np.repeat(np.broadcast_to(np.asarray(target), (n,)), n_samples)
    values = np.abs(fx[:, None] - outputs(predict, rows.reshape(-1, d), t).reshape(n, n_samples)).mean(axis=1)
    params = {"k": chosen_k, "sigma": sigma, "n_samples": n_samples, "seed": seed}
    return _result("pgi" if top else "pgu", values, top, [], params)


def pgi(predict, inputs, attributions, background=None, **options: Any) -> MetricResult:
    """Prediction gap on important features (OpenXAI, Agarwal et al. 2022): per row, mean |f(x) - f(x')|
    with Gaussian noise (``sigma``, default 0.1, times each feature's background spread; ``n_samples``
    50, ``seed``) on the ``k`` features of largest |attribution| (default a quarter of them, at least
    one); higher is better."""
    return _prediction_gap(predict, inputs, attributions, background, top=True, **options)


def pgu(predict, inputs, attributions, background=None, **options: Any) -> MetricResult:
    """Prediction gap on unimportant features (OpenXAI): as :func:`pgi` with the noise on every feature
    but the k of largest |attribution|; lower is better."""
    return _prediction_gap(predict, inputs, attributions, background, top=False, **options)


def _over_perturbations(ratios: np.ndarray, keep: Any) -> np.ndarray:
    """Per row, the max of (m, n) ``ratios`` over the kept perturbations (NaN where none is kept)."""
    kept = np.ones(ratios.shape, bool) if keep is None else np.asarray(keep, bool)
    worst = np.where(kept, ratios, -np.inf).max(axis=0)
    return np.where(kept.any(axis=0), worst, np.nan)


def _stacked(arrays: Any) -> np.ndarray:
    a = np.asarray(arrays, dtype=float)
    return a.reshape(a.shape[0], a.shape[1], -1)


def local_lipschitz(inputs, perturbed, attributions, perturbed_attributions, *, keep: Any = None) -> np.ndarray:
    """Local Lipschitz estimate (Alvarez-Melis & Jaakkola 2018): per row, the max over perturbations
    of ||a(x) - a(x')||_2 / ||x - x'||_2, in attribution units per input unit."""
    X, A = _flat(inputs, "inputs"), _flat(attributions, "attributions")
    moved, moved_A = _stacked(perturbed), _stacked(perturbed_attributions)
    ratios = np.linalg.norm(moved_A - A, axis=2) / np.linalg.norm(moved - X, axis=2)
    return _over_perturbations(ratios, keep)


def _relative_change(moved: np.ndarray, base: np.ndarray, eps_min: float) -> np.ndarray:
    """||(base - moved) / base||_2 over the last axis, a zero of ``base`` replaced by eps_min."""
    return np.linalg.norm((base - moved) / np.where(base == 0, eps_min, base), axis=-1)


def relative_input_stability(
    inputs, perturbed, attributions, perturbed_attributions, *, eps_min: float = 1e-6, keep: Any = None
) -> np.ndarray:
    """Relative input stability (RIS, Agarwal et al. 2022): per row, the max over perturbations of
    ||(a - a') / a||_2 / max(||(x - x') / x||_2, eps_min)."""
    X, A = _flat(inputs, "inputs"), _flat(attributions, "attributions")
    moved, moved_A = _stacked(perturbed), _stacked(perturbed_attributions)
    change = _relative_change(moved_A, A, eps_min)
    return _over_perturbations(change / np.maximum(_relative_change(moved, X, eps_min), eps_min), keep)


def relative_output_stability(
    outputs, perturbed_outputs, attributions, perturbed_attributions, *, eps_min: float = 1e-6, keep: Any = None
) -> np.ndarray:
    """Relative output stability (ROS, Agarwal et al. 2022): per row, the max over perturbations of
    ||(a - a') / a||_2 / max(||h(x) - h(x')||_2, eps_min), h the model's outputs (n,) or logits (n, k)."""
    A = _flat(attributions, "attributions")
    moved_A = _stacked(perturbed_attributions)
    h = np.asarray(outputs, dtype=float).reshape(len(A), -1)
    moved_h = np.asarray(perturbed_outputs, dtype=float).reshape(len(moved_A), len(A), -1)
    change = _relative_change(moved_A, A, eps_min)
    return _over_perturbations(change / np.maximum(np.linalg.norm(moved_h - h, axis=2), eps_min), keep)


def sparseness(attributions: Any) -> np.ndarray:
    """Gini index of |a| per row (Chalasani et al. 2020; Quantus ``Sparseness``): 0 when every feature
    gets the same share, near 1 when one feature gets all."""
    a = np.sort(np.abs(_flat(attributions, "attributions")) + 1e-7, axis=1)
    d = a.shape[1]
    ranks = np.arange(1, d + 1)
    return ((2 * ranks - d - 1) * a).sum(axis=1) / (d * a.sum(axis=1))


def complexity(attributions: Any) -> np.ndarray:
    """Entropy of the shares |a_i| / sum |a| per row (Bhatt et al. 2020; Quantus ``Complexity``):
    log(d) when every feature gets the same share, 0 when one gets all."""
    a = np.abs(_flat(attributions, "attributions"))
    share = a / np.where(a.sum(axis=1, keepdims=True) > 0, a.sum(axis=1, keepdims=True), 1.0)
    return -(share * np.log(share + 1e-12)).sum(axis=1)


# ------------------------------------------------------------------------- IROF: groups removed


def group_removal_curve(
    predict, inputs, attributions, groups, reference, *, target: Any = None, seed: int = 0
) -> np.ndarray:
    """(n, G + 1) outputs as the G groups of ``groups`` (ids shaped like one input: superpixels, as
    captum's ``feature_mask``) are removed in decreasing mean attribution, one group a step, absent
    features taken from ``reference``; ties broken at random (seeded)."""
    X = _flat(inputs, "inputs")
    ids = np.unique(np.asarray(groups).reshape(-1), return_inverse=True)[1].reshape(-1)
    if ids.size != X.shape[1]:
        raise ValueError(f"groups has {ids.size} entries for {X.shape[1]} features")
    members = np.eye(ids.max() + 1)[ids]  # (d, G): which group each feature is in
    means = _flat(attributions, "attributions") @ members / members.sum(axis=0)
    order = relevance_order(means, seed)
    masks = _present(order, np.arange(len(members.T) + 1))[:, :, ids]
    return expected_outputs(predict, X, masks, reference, seed=seed, target=target)


def irof(predict, inputs, attributions, groups, reference, *, target: Any = None, seed: int = 0) -> MetricResult:
    """Iterative Removal Of Features (Rieger & Hansen 2020; Quantus ``IROF``): the groups removed most
    relevant first (:func:`group_removal_curve`), the area over the curve of the share of the output
    left, (f(x_k) - f(nothing)) / (f(x) - f(nothing)), over k = 1..G; higher is better.  It reads a
    class score that removal lowers, as the paper's does: a row whose output is not above its value
    with everything removed is undefined (there, removing its most relevant groups first moves the
    output away from that value, and the share left exceeds 1)."""
    curve = group_removal_curve(predict, inputs, attributions, groups, reference, target=target, seed=seed)
    span = curve[:, 0] - curve[:, -1]
    below = span <= 1e-9 * max(float(np.abs(span).mean()), 1e-300)
    share = (curve[:, 1:] - curve[:, -1:]) / np.where(below, 1.0, span)[:, None]
    reason = "the output is not above its value with every group removed"
    return _result("irof", 1.0 - share.mean(axis=1), True, [(below, reason)], {"seed": seed})
