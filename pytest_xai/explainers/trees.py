"""Tree-path attributions read off xgboost itself (Saabas 2014; Lundberg et al. 2018)."""

from __future__ import annotations

import numpy as np

from pytest_xai.errors import NotApplicable


def saabas(inputs, model):
    """Saabas contributions (xgboost ``pred_contribs=True, approx_contribs=True``): each split's
    change of the expected value is credited to its feature along the decision path.  Depends on
    the split order, so it credits symmetric features unequally (the inconsistency Compare-xAI's
    cough_and_fever exposes): a negative control for symmetry."""
    if not hasattr(model, "get_booster"):
        raise NotApplicable(f"Saabas needs an xgboost model; this case's model is a {type(model).__name__}")
    import xgboost

    contributions = model.get_booster().predict(xgboost.DMatrix(inputs), pred_contribs=True, approx_contribs=True)
    return np.asarray(contributions)[:, :-1]  # the last column is the bias
