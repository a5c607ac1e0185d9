"""XAI-Bench synthetic tabular data with exact conditionals and exact Shapley ground truth.

Liu, Khandagale, White & Neiswanger, "Synthetic Benchmarks for Scientific Research in Explainable
Machine Learning" (NeurIPS 2021 Datasets & Benchmarks, arXiv 2106.12543), §4 and App. D/F; repo
``abacusai/xai-bench`` read as a specification only (its defects XB-1 to XB-11, listed in
``docs/defects.md``, are not reproduced).

The family's anatomy, one room per module:

- :mod:`.distributions`: the feature distributions (:class:`Gaussian`, :class:`GaussianMixture`,
  :class:`Multinomial`) with exact conditionals, and their imputer for :mod:`pytest_xai.metrics`;
- :mod:`.labels`: the label functions (:class:`Linear`, :class:`PiecewiseLinear`,
  :class:`PiecewiseConstant`, :class:`NonlinearAdditive`) with their exact expectation under a
  Gaussian, and the fixed standardisation (:func:`standardise`);
- :mod:`.truth`: exact (:func:`exact_shapley`) and Monte-Carlo (:func:`monte_carlo_shapley`)
  Shapley values, observational and interventional;
- :mod:`.datasets`: one dataset definition drawn with a seed (:func:`make_dataset`);
- :mod:`.checks`: ``gt_shapley``, ``faithfulness``, ``monotonicity`` and ``infidelity``, and the catalogue's
  ``deletion``, ``insertion`` and ``road`` curves and ``pgi`` and ``pgu`` (:mod:`pytest_xai.catalogue`);
- this module: the cases, registered here.  The model of a case is the standardised noise-free
  label function, or a model trained on noisy labels.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_xai.case import Case, CaseInfo
from pytest_xai.cases.gaussian.checks import (
    deletion,
    faithfulness,
    gt_shapley,
    infidelity,
    insertion,
    monotonicity,
    pgi,
    pgu,
    road,
)
from pytest_xai.cases.gaussian.datasets import N_BACKGROUND, N_EXPLAINED, N_TRAIN, Dataset, make_dataset
from pytest_xai.cases.gaussian.distributions import (
    CONDITIONALS,
    STACKED_FEATURES,
    Distribution,
    DistributionImputer,
    Gaussian,
    GaussianMixture,
    Multinomial,
)
from pytest_xai.cases.gaussian.labels import (
    LABEL_NOISE,
    STANDARDISATION_ROWS,
    STANDARDISATION_SEED,
    Label,
    Linear,
    NonlinearAdditive,
    PiecewiseConstant,
    PiecewiseLinear,
    Standardised,
    standardise,
)
from pytest_xai.cases.gaussian.truth import (
    MAX_EXACT_FEATURES,
    MC_SAMPLES,
    coalition_values,
    exact_shapley,
    linear_interventional_shapley,
    monte_carlo_shapley,
)
from pytest_xai.registry import Family

__all__ = [
    "CASE_CHECKS",
    "CONDITIONALS",
    "LABEL_NOISE",
    "MAX_EXACT_FEATURES",
    "MC_SAMPLES",
    "N_BACKGROUND",
    "N_EXPLAINED",
    "N_TRAIN",
    "RHOS",
    "SOURCE",
    "STACKED_FEATURES",
    "STANDARDISATION_ROWS",
    "STANDARDISATION_SEED",
    "D",
    "Dataset",
    "DistributionImputer",
    "Gaussian",
    "GaussianMixture",
    "Label",
    "Linear",
    "Multinomial",
    "NonlinearAdditive",
    "PiecewiseConstant",
    "PiecewiseLinear",
    "Standardised",
    "coalition_values",
    "deletion",
    "exact_shapley",
    "faithfulness",
    "gt_shapley",
    "infidelity",
    "insertion",
    "linear_interventional_shapley",
    "make_dataset",
    "monotonicity",
    "monte_carlo_shapley",
    "paper_weights",
    "pgi",
    "pgu",
    "road",
    "standardise",
]

SOURCE = "Liu, Khandagale, White & Neiswanger 2021 (XAI-Bench), §4, App. D/F"
FAMILY = Family(
    "gaussian", source=SOURCE, smoke=("gt_shapley", "gaussian_linear_rho50"), libraries=("scipy.stats",)
)  # its checks' t-test
RHOS = (0.0, 0.25, 0.5, 0.75, 0.99)  # the paper's correlation sweep (§5.1)
D = 5  # XAI-Bench default number of features
CASE_CHECKS = {
    "gt_shapley": {"convention": "interventional"},
    "faithfulness": {"conditional": "interventional"},
    "monotonicity": {"conditional": "interventional"},
    "infidelity": {"conditional": "interventional"},
    "deletion": {"conditional": "interventional"},
    "insertion": {"conditional": "interventional"},
    "road": {"conditional": "interventional"},
    "pgi": {"conditional": "interventional"},
    "pgu": {"conditional": "interventional"},
}


def _case(
    info: CaseInfo, data: Dataset, predict: Callable, model: Any, truth: dict[str, np.ndarray], **meta: Any
) -> Case:
    d = data.distribution.d
    return Case(
        info=info,
        inputs=data.inputs.copy(),
        predict=predict,
        feature_names=[f"x{j}" for j in range(d)],
        model=model,
        background=data.background.copy(),
        baseline=data.distribution.mean.copy(),
        truth=truth,
        meta={"distribution": data.distribution, **data.meta, **meta},
    )


def _exact_case(info: CaseInfo, distribution: Distribution, label: Label, seed: int, **meta: Any) -> Case:
    data = make_dataset(distribution, label, seed=seed)
    truth = {f"shapley_{c}": exact_shapley(data.model, distribution, data.inputs, c) for c in CONDITIONALS}
    return _case(info, data, data.model, data.model, truth, model_kind="label function", **meta)


def paper_weights(d: int = D) -> tuple[float, ...]:
    """The paper's linear weights w = [0, 1, ..., d-1] (§5; the code's config uses the reverse)."""
    return tuple(float(j) for j in range(d))


def _rho_name(rho: float) -> str:
    return f"rho{round(rho * 100)}"


def _linear_builder(rho: float) -> Callable[..., Case]:
    def build(info: CaseInfo, *, seed: int, cache: Any) -> Case:
        return _exact_case(
            info, Gaussian.equicorrelated(D, rho), Linear(paper_weights()), seed, rho=rho, weights=paper_weights()
        )

    build.__name__ = build.__qualname__ = f"gaussian_linear_{_rho_name(rho)}"
    build.__doc__ = (
        f"Linear label w = [0..{D - 1}] on equicorrelated Gaussian features, rho = {rho:g} "
        "(XAI-Bench §5.1 sweep); the model is the standardised label function."
    )
    return build


for _rho in RHOS:
    FAMILY.case(category="fidelity", source="§5.1 rho sweep", checks=CASE_CHECKS)(_linear_builder(_rho))


@FAMILY.case(category="fidelity", source="App. F", checks=CASE_CHECKS)
def gaussian_nonlinear_additive_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """y = sin(x0) + |x1| + x2^2 + exp(-x3), x4 a dummy, Gaussian rho = 0.5; exact Shapley truth."""
    return _exact_case(info, Gaussian.equicorrelated(D, 0.5), NonlinearAdditive(), seed, rho=0.5)


@FAMILY.case(category="fidelity", source="App. F (bin bug XB-5 fixed)", checks=CASE_CHECKS)
def gaussian_piecewise_constant_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """Step functions of x0, x1, x2 (x3, x4 dummies), Gaussian rho = 0.5; exact Shapley truth."""
    return _exact_case(info, Gaussian.equicorrelated(D, 0.5), PiecewiseConstant(), seed, rho=0.5)


@FAMILY.case(category="fidelity", source="§4 piecewise linear", checks=CASE_CHECKS)
def gaussian_piecewise_linear_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """w = [0..4] if sum(x) > 0 else [4..0], Gaussian rho = 0.5: not additive; exact Shapley truth."""
    label = PiecewiseLinear(paper_weights(), paper_weights()[::-1])
    return _exact_case(info, Gaussian.equicorrelated(D, 0.5), label, seed, rho=0.5)


@FAMILY.case(category="fidelity", source="App. D mixture (XB-4 fixed)", checks=CASE_CHECKS)
def gaussian_mixture_linear(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """Linear w = [0..4] on a 2-component mixture at -1 and +1 (rho = 0.5 each, equal priors)."""
    components = [Gaussian.equicorrelated(D, 0.5, mean=m) for m in (-1.0, 1.0)]
    return _exact_case(
        info, GaussianMixture(components), Linear(paper_weights()), seed, weights=paper_weights(), components=2
    )


@FAMILY.case(category="fidelity", source="App. D multinomial", checks=CASE_CHECKS)
def multinomial_linear(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """Linear w = [0..4] on Multinomial(20, (.2, .3, .1, .1, .3)) counts (negatively dependent)."""
    distribution = Multinomial(20, (0.2, 0.3, 0.1, 0.1, 0.3))
    return _exact_case(info, distribution, Linear(paper_weights()), seed, weights=paper_weights())


# Trained models: interventional truth is exact against the case background (the marginal the
# explainer is given); observational truth is Monte Carlo with common random numbers, cached.


def _trained_case(
    info: CaseInfo, label: Label, make_model: Callable[[], Any], seed: int, cache: Any, **meta: Any
) -> Case:
    import sklearn
    from sklearn.exceptions import ConvergenceWarning

    from pytest_xai import shapley

    distribution = Gaussian.equicorrelated(D, 0.5)
    data = make_dataset(distribution, label, seed=seed)
    with warnings.catch_warnings():  # the iteration cap is deliberate; fit quality is in meta["train_r2"]
        warnings.simplefilter("ignore", category=ConvergenceWarning)
        model = make_model().fit(data.train_X, data.train_y)

    def predict(X):
        return model.predict(np.asarray(X, dtype=float).reshape(len(X), -1))

    def build_truth() -> dict[str, np.ndarray]:
        return {
            "shapley_interventional": shapley.interventional(predict, data.inputs, data.background),
            "shapley_observational": monte_carlo_shapley(
                predict, distribution, data.inputs, "observational", seed=seed
            ),
        }

    def validate(arrays: dict) -> None:
        for key in ("shapley_interventional", "shapley_observational"):
            if arrays[key].shape != data.inputs.shape or not np.isfinite(arrays[key]).all():
                raise ValueError(f"{key} has shape {arrays[key].shape} or non-finite values")

    params = {"case": info.name, "seed": seed, "mc_samples": MC_SAMPLES, "sklearn": sklearn.__version__}
    truth = cache.arrays(info.name, params, build_truth, validate)
    r2 = float(1 - np.mean((predict(data.train_X) - data.train_y) ** 2) / np.var(data.train_y))
    return _case(
        info,
        data,
        predict,
        model,
        dict(truth),
        model_kind=type(model).__name__,
        train_r2=r2,
        mc_samples=MC_SAMPLES,
        rho=0.5,
        **meta,
    )


@FAMILY.case(
    category="fidelity",
    source="§5 trained models",
    checks=CASE_CHECKS,
    libraries=("scipy.stats", "sklearn.linear_model"),
)
def gaussian_linear_regression_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """sklearn LinearRegression trained on noisy linear labels (w = [0..4]), Gaussian rho = 0.5."""
    from sklearn.linear_model import LinearRegression

    return _trained_case(info, Linear(paper_weights()), LinearRegression, seed, cache, weights=paper_weights())


@FAMILY.case(
    category="fidelity", source="§5 trained models", checks=CASE_CHECKS, libraries=("scipy.stats", "sklearn.tree")
)
def gaussian_piecewise_constant_tree_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """sklearn DecisionTreeRegressor (depth 6) trained on the piecewise-constant label, rho = 0.5."""
    from sklearn.tree import DecisionTreeRegressor

    return _trained_case(
        info, PiecewiseConstant(), lambda: DecisionTreeRegressor(max_depth=6, random_state=seed), seed, cache
    )


@FAMILY.case(
    category="fidelity",
    source="§5 trained models",
    checks=CASE_CHECKS,
    libraries=("scipy.stats", "sklearn.neural_network"),
)
def gaussian_nonlinear_additive_mlp_rho50(info: CaseInfo, *, seed: int, cache: Any) -> Case:
    """sklearn MLPRegressor (16, 16) trained on the nonlinear additive label, rho = 0.5."""
    from sklearn.neural_network import MLPRegressor

    return _trained_case(
        info,
        NonlinearAdditive(),
        lambda: MLPRegressor(hidden_layer_sizes=(16, 16), solver="lbfgs", max_iter=300, random_state=seed),
        seed,
        cache,
    )
