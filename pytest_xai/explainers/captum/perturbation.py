"""captum's perturbation methods (occlusion, feature ablation and permutation, Shapley value sampling)
and its surrogates (KernelShap, Lime) as pytest-xai explainers; conventions in
:mod:`pytest_xai.explainers.captum`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_xai.engine import budget as budgets
from pytest_xai.explainers.captum import recipe

if TYPE_CHECKING:  # torch is imported lazily, inside the calls; the annotations stay strings at run time
    import torch


def _one_example_at_a_time(explainer, x, baselines, target, groups=None, **kwargs):
    """Lime/KernelShap fit one surrogate per example; captum recommends calling them row by row."""
    import torch

    mask = recipe.feature_mask(x, groups)
    target = recipe.target_of(target)
    rows = [
        explainer.attribute(
            x[i : i + 1],
            baselines=baselines[i : i + 1],
            target=target[i] if isinstance(target, list) else target,
            feature_mask=mask,
            **kwargs,
        )
        for i in range(len(x))
    ]
    return torch.cat(rows)


def _surrogate(
    explainer, method: str, x, baseline, target, budget: int, groups, n_samples: int | None, perturbations_per_eval: int
):
    """captum's KernelShap or Lime on ``x``: :func:`surrogate_samples` for the G groups (or
    ``n_samples``), cut to the call's ``budget`` (at least G + 1), one example at a time."""
    g = int(recipe.feature_mask(x, groups).max()) + 1
    n = budgets.samples(budget, len(x), preferred=n_samples or surrogate_samples(g), minimum=g + 1, method=method)
    return _one_example_at_a_time(
        explainer,
        x,
        recipe.baselines(baseline, x),
        target,
        groups,
        n_samples=n,
        perturbations_per_eval=perturbations_per_eval,
    )


def occlusion(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    output=None,
    pad_token_id=None,
    *,
    window: tuple | None = None,
    perturbations_per_eval: int = 16,
) -> np.ndarray:
    """Occlusion (Zeiler & Fergus 2014): F(x) - F(x with a window set to the baseline).

    The default window is one element (stride 1) of the feature shape: for tabular and 1-D inputs
    this is the paper's Occlusion-1 (Mamalakis et al. 2022).  Pass ``window`` for patches.
    """
    from captum.attr import Occlusion

    return recipe.attribute(
        "occlusion",
        model,
        inputs,
        lambda m, x: Occlusion(m).attribute(
            x,
            sliding_window_shapes=tuple(window) if window is not None else (1,) * (x.dim() - 1),
            baselines=recipe.baselines(baseline, x),
            target=recipe.target_of(target),
            perturbations_per_eval=perturbations_per_eval,
        ),
        tokens=True,
        output=output,
        pad_token_id=pad_token_id,
    )


def feature_ablation(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    output=None,
    pad_token_id=None,
    *,
    perturbations_per_eval: int = 16,
) -> np.ndarray:
    """Feature ablation: each input element replaced by the baseline alone; captum ``FeatureAblation``."""
    from captum.attr import FeatureAblation

    return recipe.attribute(
        "feature_ablation",
        model,
        inputs,
        lambda m, x: FeatureAblation(m).attribute(
            x,
            baselines=recipe.baselines(baseline, x),
            target=recipe.target_of(target),
            feature_mask=recipe.feature_mask(x),
            perturbations_per_eval=perturbations_per_eval,
        ),
        tokens=True,
        output=output,
        pad_token_id=pad_token_id,
    )


def feature_permutation(
    inputs,
    model: torch.nn.Module,
    target=None,
    seed: int = 0,
    output=None,
    pad_token_id=None,
    *,
    perturbations_per_eval: int = 16,
) -> np.ndarray:
    """Permutation importance per example (Breiman 2001): each feature shuffled across the batch.

    captum ``FeaturePermutation``; needs at least two inputs; seeded with ``seed``.
    """
    from captum.attr import FeaturePermutation

    return recipe.attribute(
        "feature_permutation",
        model,
        inputs,
        lambda m, x: FeaturePermutation(m).attribute(
            x,
            target=recipe.target_of(target),
            feature_mask=recipe.feature_mask(x),
            perturbations_per_eval=perturbations_per_eval,
        ),
        seed=seed,
        tokens=True,
        output=output,
        pad_token_id=pad_token_id,
    )


def shapley_value_sampling(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    seed: int = 0,
    budget: int = budgets.DEFAULT,
    groups=None,
    output=None,
    pad_token_id=None,
    *,
    n_samples: int = 25,
    perturbations_per_eval: int = 16,
) -> np.ndarray:
    """Shapley values against the baseline by permutation sampling (Castro et al. 2009).

    captum ``ShapleyValueSampling`` with captum's default ``n_samples`` = 25 permutations, fewer
    when points x permutations x (G + 1) evaluations exceed the call's ``budget``; seeded.  The
    G features are the case's ``groups`` when it declares them (captum's ``feature_mask``), else
    every input element.
    """
    from captum.attr import ShapleyValueSampling

    def attribute(module: torch.nn.Module, x: torch.Tensor) -> Any:
        mask = recipe.feature_mask(x, groups)
        return ShapleyValueSampling(module).attribute(
            x,
            baselines=recipe.baselines(baseline, x),
            target=recipe.target_of(target),
            feature_mask=mask,
            n_samples=budgets.samples(
                budget,
                len(x),
                preferred=n_samples,
                minimum=1,
                per_sample=int(mask.max()) + 2,
                method="shapley_value_sampling",
            ),
            perturbations_per_eval=perturbations_per_eval,
        )

    return recipe.attribute(
        "shapley_value_sampling",
        model,
        inputs,
        attribute,
        seed=seed,
        tokens=True,
        output=output,
        pad_token_id=pad_token_id,
    )


def surrogate_samples(features: int) -> int:
    """Samples per point for captum's KernelShap and Lime: 2G + 200 for G features.

    captum draws, weighs and builds every sample in Python (~0.8 ms a sample on this project's
    2-core CI machine, against ~0.05 ms for shap's KernelExplainer), so shap's 2G + 2048 would take
    minutes a case (200 rows x 2,068 samples ~ 330 s on a 10-feature unit).  2G + 200 still
    determines the surrogate's G + 1 coefficients several times over; captum's own defaults (25 and
    50 samples) do not for G > 24.
    """
    return 2 * features + 200


def captum_kernel_shap(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    seed: int = 0,
    budget: int = budgets.DEFAULT,
    groups=None,
    output=None,
    pad_token_id=None,
    *,
    n_samples: int | None = None,
    perturbations_per_eval: int = 64,
) -> np.ndarray:
    """KernelSHAP (Lundberg & Lee 2017) against the baseline; captum ``KernelShap``.

    ``n_samples`` defaults to :func:`surrogate_samples` (captum's is 25), cut to the call's
    ``budget`` of model evaluations (at least G + 1); seeded.  The G features are the case's
    ``groups`` when it declares them (captum's ``feature_mask``), else every input element.
    """
    from captum.attr import KernelShap

    return recipe.attribute(
        "captum_kernel_shap",
        model,
        inputs,
        lambda m, x: _surrogate(
            KernelShap(m),
            "captum_kernel_shap",
            x,
            baseline,
            target,
            budget,
            groups,
            n_samples,
            perturbations_per_eval,
        ),
        seed=seed,
        tokens=True,
        output=output,
        pad_token_id=pad_token_id,
    )


def captum_lime(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    seed: int = 0,
    budget: int = budgets.DEFAULT,
    groups=None,
    output=None,
    pad_token_id=None,
    *,
    n_samples: int | None = None,
    perturbations_per_eval: int = 64,
) -> np.ndarray:
    """LIME (Ribeiro et al. 2016) with captum's defaults (Lasso alpha=0.01, cosine-distance kernel).

    Removed features take the baseline value; ``n_samples`` defaults to :func:`surrogate_samples`
    (captum's is 50), cut to the call's ``budget`` of model evaluations (at least G + 1); seeded.
    The G features are the case's ``groups`` when it declares them, else every input element.
    """
    from captum.attr import Lime

    return recipe.attribute(
        "captum_lime",
        model,
        inputs,
        lambda m, x: _surrogate(
            Lime(m),
            "captum_lime",
            x,
            baseline,
            target,
            budget,
            groups,
            n_samples,
            perturbations_per_eval,
        ),
        seed=seed,
        tokens=True,
        output=output,
        pad_token_id=pad_token_id,
    )


# What each sampling method estimates, for the estimator checks (pytest_xai.cases.games.checks):
# permutation sampling is unbiased at any budget; KernelSHAP's regression only asymptotically
# (Covert & Lee 2021); feature permutation and LIME estimate no Shapley value.
shapley_value_sampling.estimator = True  # type: ignore[attr-defined]
captum_kernel_shap.estimator = "consistent"  # type: ignore[attr-defined]
feature_permutation.estimator = captum_lime.estimator = False  # type: ignore[attr-defined]
