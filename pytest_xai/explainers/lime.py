"""LIME adapter (Ribeiro et al. 2016): lime.lime_tabular with its defaults, seeded."""

from __future__ import annotations

import numpy as np
from lime.lime_tabular import LimeTabularExplainer

from pytest_xai.errors import NotApplicable


def lime_tabular(inputs, predict, background, target, feature_names, seed):
    """One LIME explanation per row over all features; the attribution of feature j is the weight
    of j's (discretised) indicator in LIME's local linear model."""
    if inputs.ndim != 2:
        raise NotApplicable("lime_tabular explains tabular (n, d) inputs")
    if background is None:
        raise NotApplicable("LIME needs training rows for its sampling statistics; this case has no background")
    classification = target is not None
    explainer = LimeTabularExplainer(
        background, mode="classification" if classification else "regression",
        feature_names=feature_names, random_state=seed,
    )
    d = inputs.shape[1]
    out = np.zeros(inputs.shape)
    for row, x in enumerate(inputs):
        if classification:
            explanation = explainer.explain_instance(x, predict, labels=(target,), num_features=d)
            pairs = explanation.as_map()[target]
        else:
            explanation = explainer.explain_instance(x, predict, num_features=d)
            pairs = next(iter(explanation.as_map().values()))
        for feature, weight in pairs:
            out[row, feature] = weight
    return out
