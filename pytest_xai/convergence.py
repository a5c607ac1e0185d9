"""Accuracy for a cost (``--xai-convergence``): each explainer at a ladder of budgets of model
evaluations on games with exact Shapley values, and its error against them for the evaluations it
spent, the comparison of approximators that shapiq's benchmark makes (Muschalik, Baniecki, Fumagalli,
Kolpaczki, Hammer & Hüllermeier, "shapiq: Shapley Interactions for Machine Learning", NeurIPS 2024
Datasets and Benchmarks), in one run.

A rung is one explainer call with the budget ``budget`` (the contract argument that perturbation
explainers size their samples from, :mod:`pytest_xai.engine.budget`); the engine counts the model
evaluations the call spent and its worker's CPU seconds, and the judge's worker, where the case
is built, scores the attributions with :func:`relative_rmse` against the case's exact values.  The
reference adapters keep their library's default sample count when it fits the budget, so the
ladder's budgets are below those defaults on :data:`CASES` (100 points of 5 features, 100 background
rows: KernelSHAP's 32 coalitions cost 3.2e5 evaluations, LIME's 5,000 samples 5e5, shap's
Permutation explainer 5e6).  Pure Python and numpy; no pytest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_xai.errors import NotApplicable

#: The budgets of model evaluations, half a decade apart, from the fewest any reference
#: perturbation explainer can use on :data:`CASES` (LIME's d + 1 samples a point) to shap's
#: Permutation explainer's default.
LADDER = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
#: Games with exact interventional Shapley values (XAI-Bench's Gaussian family, docs/reference.md):
#: a linear, an additive non-linear and a non-additive model.
CASES = ("gaussian_linear_rho50", "gaussian_nonlinear_additive_rho50", "gaussian_piecewise_linear_rho50")
#: What a rung's ``error`` is (the reports' label).
METRIC = "relative RMSE to the exact Shapley values"


def exact_values(case: Any) -> np.ndarray:
    """The case's exact interventional Shapley values ``(n, d)``: ``truth["shapley"]`` (the game
    over the case's background, as the Compare-xAI cases compute it) or
    ``truth["shapley_interventional"]`` (over the features' distribution, the Gaussian family's);
    NotApplicable for a case that has neither."""
    truth = getattr(case, "truth", None) or {}
    for key in ("shapley", "shapley_interventional"):
        if key in truth:
            return np.asarray(truth[key], dtype=float)
    raise NotApplicable(f"case {case.name!r} has no exact Shapley values to measure an error against")


def relative_rmse(attributions: Any, exact: np.ndarray) -> float:
    """``||phi - phi*||_F / ||phi*||_F`` over every point and feature: 0 for the exact values, 1 for
    all zeros, 2 for the exact values with their sign flipped; scale-free, so cases compare."""
    phi = np.asarray(attributions, dtype=float).reshape(exact.shape)
    return float(np.linalg.norm(phi - exact) / np.linalg.norm(exact))


def errors(case: Any, attributions: list[Any]) -> list[float]:
    """:func:`relative_rmse` of each of ``attributions`` against ``case``'s exact values."""
    exact = exact_values(case)
    return [relative_rmse(a, exact) for a in attributions]
