"""Self-tests run pytest in-process (pytester), which drops modules first imported by the inner run.
numpy and friends cannot be imported twice in one process, so import them once here."""

import contextlib

import numpy  # noqa: F401
import xgboost  # noqa: F401

import pytest_xai.cases  # noqa: F401
import pytest_xai.explainers.baselines  # noqa: F401
import pytest_xai.strategies  # noqa: F401

pytest_xai.cases.infos()
for optional in ("matplotlib.backends.backend_agg", "PIL.Image", "torch", "sklearn.ensemble", "sklearn.datasets",
                 "sklearn.model_selection", "sklearn.neural_network", "shap", "lime.lime_tabular", "captum.attr", "chess"):
    with contextlib.suppress(ImportError):
        __import__(optional)
