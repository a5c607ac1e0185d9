"""The metric catalogue (pytest_xai.catalogue): conformance with Quantus on the same draws, ROAD's
imputation against a regression fitted by scikit-learn, and what the deletion and insertion checks
fail (their zoo runs in tests/test_zoo.py, their calibration in tests/test_gaussian.py)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_xai import cases, catalogue, checks


def _model(X):
    X = np.asarray(X, dtype=float)
    return 1.5 * X[:, 0] - X[:, 1] + 0.5 * X[:, 2] * X[:, 3] + 0.2 * X[:, 4] ** 2


@pytest.fixture(scope="module")
def draws():
    rng = np.random.default_rng(7)
    return rng.normal(size=(12, 6)).astype(np.float32), rng.normal(size=(12, 6)).astype(np.float32)


def test_the_deletion_curve_is_quantus_pixel_flipping_on_the_same_rows(draws):
    quantus = pytest.importorskip("quantus")
    torch = pytest.importorskip("torch")
    X, A = draws

    class TwoOutputs(torch.nn.Module):  # Quantus indexes a class: the model's output and its negation
        def forward(self, x):
            y = torch.as_tensor(_model(x.reshape(len(x), -1).detach().double().numpy()))
            return torch.stack([y, -y], dim=1).float()

    metric = quantus.PixelFlipping(
        perturb_baseline=0.0, normalise=False, abs=False, disable_warnings=True, display_progressbar=False
    )
    theirs = metric(
        model=TwoOutputs().eval(),
        x_batch=X[:, None, :],
        y_batch=np.zeros(len(X), dtype=int),
        a_batch=A[:, None, :],
        device="cpu",
        channel_first=True,
        softmax=False,
    )
    ours = catalogue.removal_curve(_model, X, A, np.zeros(X.shape[1]))
    np.testing.assert_allclose(np.asarray(theirs, dtype=float), ours[:, 1:], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["Sparseness", "Complexity"])
def test_sparseness_and_complexity_are_quantus_on_the_same_maps(draws, name):
    quantus = pytest.importorskip("quantus")
    X, A = draws
    metric = getattr(quantus, name)(normalise=False, abs=True, disable_warnings=True, display_progressbar=False)
    theirs = metric(model=None, x_batch=X, y_batch=np.zeros(len(X), dtype=int), a_batch=A.astype(float).copy())
    ours = catalogue.sparseness(A) if name == "Sparseness" else catalogue.complexity(A)
    np.testing.assert_allclose(np.asarray(theirs, dtype=float), ours, rtol=1e-6)


def test_road_imputes_the_regression_of_the_removed_features_on_the_kept_ones():
    """Noisy linear imputation without noise is ordinary least squares fitted on the background."""
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(3)
    B = rng.multivariate_normal(np.arange(4.0), np.eye(4) + 0.6, size=400)
    X = rng.normal(size=(3, 4))
    kept = np.array([True, False, True, False])
    imputer = catalogue.NoisyLinearImputer(B, noise=0.0, ridge=0.0)
    imputed = imputer.impute(X, np.broadcast_to(kept, (3, 1, 4)), 1, 0)[:, 0, 0]
    fit = LinearRegression().fit(B[:, kept], B[:, ~kept])
    np.testing.assert_allclose(imputed[:, ~kept], fit.predict(X[:, kept]), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(imputed[:, kept], X[:, kept])


def test_the_exact_values_order_the_deletion_curve_best_on_an_additive_model():
    """On an additive model with independent features, removing by exact Shapley values is optimal."""
    case = cases.get("gaussian_linear_rho0")
    phi = case.truth["shapley_interventional"]
    bg = case.background
    best = catalogue.deletion(case.predict, case.inputs, phi, bg).mean
    for other in (np.abs(phi), -phi, np.random.default_rng(0).standard_normal(phi.shape)):
        assert catalogue.deletion(case.predict, case.inputs, other, bg).mean < best
    assert catalogue.sparseness(phi).shape == catalogue.complexity(phi).shape == (len(phi),)


@pytest.mark.parametrize("name", ["deletion", "insertion"])
def test_the_curve_checks_pass_values_against_the_background_and_fail_a_swap(name):
    """Exact values against the 100-row background trail the truth by up to 0.017 in the true game
    (seed 1): their own game admits them; two swapped top features fail."""
    from pytest_xai.explainers import degenerate
    from pytest_xai.explainers.baselines import exact_shapley
    from pytest_xai.metrics import outputs

    info = checks.CHECKS[name]
    for seed in (0, 1):
        case = cases.get("gaussian_linear_rho99", seed=seed)
        params = {**info.thresholds, **case.info.checks[name]}
        background = exact_shapley(case.inputs, case.predict, case.background, case.target)
        assert info.func(background, case, **params).passed
        truth = case.truth["shapley_interventional"]
        swapped = degenerate.apply("swapped", truth, case.inputs, outputs(case.predict, case.inputs, case.target))
        assert not info.func(swapped, case, **params).passed
