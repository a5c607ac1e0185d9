"""shap adapters: KernelSHAP and TreeSHAP used the way shap's users use them (Lundberg & Lee 2017;
Lundberg et al. 2020)."""

from __future__ import annotations

import numpy as np
import shap

from pytest_xai.errors import NotApplicable


def _output(values, target):
    """shap returns (n, d) for one output and (n, d, classes) for several: keep ``target``'s."""
    values = np.asarray(getattr(values, "values", values))
    if values.ndim == 3:
        values = values[..., 0 if target is None else target]
    return values


def _single_output(predict, target):
    def f(X):
        y = np.asarray(predict(X), dtype=float)
        return y[:, target] if y.ndim == 2 else y

    return f


def shap_kernel(inputs, predict, background, target, seed):
    """KernelSHAP (shap.KernelExplainer) with the case's summarised background and shap's default
    ``nsamples='auto'``; seeded through numpy's global generator, which shap draws from."""
    if inputs.ndim != 2:
        raise NotApplicable("KernelSHAP here explains tabular (n, d) inputs")
    explainer = shap.KernelExplainer(_single_output(predict, target), background)
    state = np.random.get_state()
    np.random.seed(seed % 2**32)
    try:
        return _output(explainer.shap_values(inputs, silent=True), None)
    finally:
        np.random.set_state(state)


def _tree_explainer(model, **kwargs):
    """shap.TreeExplainer, with shap's "model type not supported" turned into a skip."""
    try:
        return shap.TreeExplainer(model, **kwargs)
    except Exception as exc:
        if type(exc).__name__ != "InvalidModelError":
            raise
        raise NotApplicable(f"TreeSHAP needs a tree model; this case's model is a {type(model).__name__}") from None


def shap_tree(inputs, model, background, target):
    """Interventional TreeSHAP (shap.TreeExplainer with ``feature_perturbation='interventional'``)
    against the case's background: exact interventional Shapley values of the trees."""
    explainer = _tree_explainer(model, data=background, feature_perturbation="interventional")
    return _output(explainer.shap_values(inputs, check_additivity=False), target)


def shap_tree_path_dependent(inputs, model, target):
    """Path-dependent TreeSHAP (no background; the trees' cover stands in for the data)."""
    explainer = _tree_explainer(model, feature_perturbation="tree_path_dependent")
    return _output(explainer.shap_values(inputs, check_additivity=False), target)
