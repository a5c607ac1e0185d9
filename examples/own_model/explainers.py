"""Explainers under test: two correct ones, and a broken one every new check must fail."""

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # for linters and type checkers: pytest-xai reads the annotations as strings, imports lazily
    import sklearn.base
    import torch


def tree_shap(inputs, model: "sklearn.base.BaseEstimator", background):
    """Interventional TreeSHAP against the background: exact Shapley values of the trees."""
    import shap

    return shap.TreeExplainer(model, data=background, feature_perturbation="interventional").shap_values(
        inputs, check_additivity=False
    )


tree_shap.completeness = "background"  # Shapley values sum to f(x) - E f(background)


def integrated_gradients(inputs, model: "torch.nn.Module", target, baseline):
    """captum's Integrated Gradients in float32, the way a torch user writes it."""
    import torch
    from captum.attr import IntegratedGradients

    x = torch.as_tensor(inputs, dtype=torch.float32)
    base = torch.as_tensor(np.broadcast_to(baseline, inputs.shape).copy(), dtype=torch.float32)
    probability = lambda t: torch.softmax(model(t), dim=1)
    return IntegratedGradients(probability).attribute(x, baselines=base, target=target, n_steps=32).numpy()


integrated_gradients.completeness = "baseline"  # IG sums to f(x) - f(baseline)
integrated_gradients.reference = "baseline"  # IG plays the baseline game: judged against baseline Shapley values


def broken(inputs, model: "sklearn.base.BaseEstimator", background):
    """Deliberately broken: TreeSHAP with each row's order of importance reversed (the largest
    |value| becomes the smallest) and its sign flipped, normalised over the batch, plus noise that
    is drawn afresh on every call (no seed).  Without the reversal the noisy order passed the
    order-only monotonicity check in 4 of 40 calls; reversed it scored at most 0.53 against 0.6."""
    values = tree_shap(inputs, model, background)
    size = np.abs(values)
    values = -np.sign(values) * (size.max(axis=1, keepdims=True) + size.min(axis=1, keepdims=True) - size)
    values = values / np.abs(values).max()
    jitter = np.random.default_rng().standard_normal(values.shape)
    return values + jitter * np.abs(values).mean()


broken.completeness = "background"  # claimed, wrongly
