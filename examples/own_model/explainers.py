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
        inputs, check_additivity=False)


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


def broken(inputs, model: "sklearn.base.BaseEstimator", background):
    """Deliberately broken: TreeSHAP, sign-flipped, normalised over the batch, plus noise that is
    drawn afresh on every call (no seed) and jumps with the input's bytes."""
    values = -tree_shap(inputs, model, background)
    values = values / np.abs(values).max()
    jitter = np.random.default_rng().standard_normal(values.shape)
    return values + jitter * np.abs(values).mean()


broken.completeness = "background"  # claimed, wrongly
