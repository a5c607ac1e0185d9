"""Metrics against hand-made inputs whose answers are known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_xai import metrics as M
from pytest_xai.cases import gaussian as g

W = np.array([3.0, 2.0, 1.0])


def linear(X):
    return np.asarray(X) @ W


def sigmoid_on_x0(X):
    """Two-class probabilities depending on feature 0 only."""
    p = 1.0 / (1.0 + np.exp(-5.0 * np.asarray(X)[:, 0]))
    return np.stack([1 - p, p], axis=1)


# ---------------------------------------------------------------------------------------------
# Result type and NaN policy


def test_result_excludes_undefined_points_from_mean_and_counts_them():
    # Baseline 0 and x = 1: the effects Delta are W = (3, 2, 1); the middle attribution row is constant.
    r = M.faithfulness(
        linear, np.ones((3, 3)), [[1.0, 2.0, 3.0], [5.0, 5.0, 5.0], [3.0, 2.0, 1.0]], np.zeros(3), absolute=False
    )
    assert r.n_undefined == 1 and math.isnan(r.values[1])
    assert r.reasons == {1: "attribution is constant: correlation undefined"}
    assert r.values[[0, 2]] == pytest.approx([-1.0, 1.0]) and r.mean == pytest.approx(0.0)
    assert r.higher_is_better and "1/3 undefined" in r.summary()
    np.testing.assert_array_equal(np.asarray(r), r.values)


def test_all_undefined_gives_nan_mean_never_zero():
    flat = lambda X: np.zeros(len(X))  # the truth is zero: nothing to explain
    r = M.faithfulness(flat, np.ones((2, 3)), np.ones((2, 3)), np.zeros(3), absolute=False)
    assert math.isnan(r.mean) and r.n_undefined == 2


@pytest.mark.parametrize("centred", [True, False])
def test_an_all_zero_row_scores_no_agreement_where_the_output_depends_on_its_features(centred):
    """XB-12: one explained row and a zero row is not the score of the explained row alone."""
    X = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 3.0]])
    A = np.array([[3.0, 4.0, 3.0], [0.0, 0.0, 0.0]])  # row 0: its exact values
    r = M.faithfulness(linear, X, A, np.zeros(3), absolute=False, centred=centred)
    assert r.values[1] == 0.0 and r.n_undefined == 0 and r.mean < r.values[0]
    mono = M.monotonicity(linear, X, A, np.zeros(3))
    assert mono.values[1] == 0.0 and mono.values[0] == 1.0
    flat = M.monotonicity(lambda X: np.zeros(len(X)), X, A, np.zeros(3))
    assert np.isnan(flat.values[1])  # the output never changes: undefined, not wrong


def test_attributions_must_match_the_shape_of_what_they_are_compared_with():
    with pytest.raises(ValueError, match="must match"):
        M.gt_shapley_error(np.ones((1, 3)), np.ones((1, 4)))


def test_outputs_select_the_target_class_and_reject_ambiguous_probabilities():
    X = np.array([[0.0, 1.0, 2.0]])
    np.testing.assert_allclose(M.outputs(sigmoid_on_x0, X, 1), [0.5])
    with pytest.raises(ValueError, match="pass target="):
        M.outputs(sigmoid_on_x0, X)


# ---------------------------------------------------------------------------------------------
# XAI-Bench metrics


def test_faithfulness_of_linear_shap_is_one_and_of_constant_attributions_is_undefined():
    X = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0]])
    background = np.array([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]])  # mean (1, 1, 1)
    phi = W * (X - 1.0)  # Delta_i = |w_i (x_i - 1)| exactly
    r = M.faithfulness(linear, X, phi, background)
    np.testing.assert_allclose(r.values, [1.0, 1.0])
    assert r.params["conditional"] == "interventional"
    flat = M.faithfulness(linear, X, np.ones_like(X), background)
    assert flat.n_undefined == 2 and "attribution is constant" in flat.reasons[0]


def test_faithfulness_signed_option_correlates_signed_attributions():
    X = np.array([[2.0, 0.0, 3.0]])
    phi = W * X  # baseline 0: Delta = (6, 0, 3)
    assert M.faithfulness(linear, X, -phi, np.zeros(3)).values[0] == pytest.approx(1.0)
    assert M.faithfulness(linear, X, -phi, np.zeros(3), absolute=False).values[0] == pytest.approx(-1.0)


def test_signed_faithfulness_uses_the_signed_output_drop():
    """Removing a feature with positive attribution lowers the output: Delta_i = f(x) - E_{F-i}[f] keeps
    its sign, so |phi| of a row with mixed signs is not faithful though its magnitudes are right."""
    X = np.array([[2.0, -3.0, 1.0]])
    phi = W * X  # (6, -6, 1), Delta = phi
    assert M.faithfulness(linear, X, phi, np.zeros(3), absolute=False).values[0] == pytest.approx(1.0)
    assert M.faithfulness(linear, X, np.abs(phi), np.zeros(3)).values[0] == pytest.approx(1.0)
    assert M.faithfulness(linear, X, np.abs(phi), np.zeros(3), absolute=False).values[0] < 0


@pytest.mark.parametrize(
    "attributions,expected",
    [
        ([3.0, 2.0, 1.0], 1.0),  # gains 3, 2, 1: both steps non-increasing
        ([1.0, 2.0, 3.0], 0.0),  # order 2, 1, 0: gains 1, 2, 3
        ([2.0, 3.0, 1.0], 0.5),  # order 1, 0, 2: gains 2, 3, 1 (XB-1 would read 3, 2, 1 -> 1.0)
    ],
)
def test_monotonicity_by_hand_in_insertion_order(attributions, expected):
    X = np.ones((1, 3))
    r = M.monotonicity(linear, X, [attributions], np.zeros(3))
    assert r.values[0] == pytest.approx(expected)


def test_monotonicity_of_a_constant_map_is_undefined_not_won_by_feature_order():
    """Before the fix ties went by index: [1, 1, 1] scored 1.0 because the features were in order."""
    r = M.monotonicity(linear, np.ones((3, 3)), np.ones((3, 3)), np.zeros(3))
    assert r.n_undefined == 3 and "no order" in r.reasons[0]


def test_monotonicity_breaks_partial_ties_at_random_not_by_index():
    """[1, 1, 0] on gains (3, 2, 1): by index the order 0, 1, 2 would always score 1; a seeded random
    tie-break puts feature 1 first half the time (score 0.5), so the mean is about 0.75."""
    X = np.ones((400, 3))
    r = M.monotonicity(linear, X, np.tile([1.0, 1.0, 0.0], (400, 1)), np.zeros(3))
    assert 0.7 < r.mean < 0.8
    again = M.monotonicity(linear, X, np.tile([1.0, 1.0, 0.0], (400, 1)), np.zeros(3))
    np.testing.assert_array_equal(r.values, again.values)  # seeded


def test_monotonicity_tie_rule_counts_equal_gains_as_monotone():
    X = np.array([[1.0, 1.5, 3.0]])  # gains w*x = 3, 3, 3
    assert M.monotonicity(linear, X, [[3.0, 2.0, 1.0]], np.zeros(3)).values[0] == 1.0


def test_monotonicity_needs_two_features():
    r = M.monotonicity(lambda X: X[:, 0], np.ones((2, 1)), np.ones((2, 1)), np.zeros(1))
    assert r.n_undefined == 2 and r.reasons[0] == "needs at least 2 features"


def test_gaussian_infidelity_is_zero_for_the_gradient_and_raw_form_is_scale_dependent():
    X = np.random.default_rng(0).standard_normal((4, 3))
    grad = np.broadcast_to(W, X.shape)
    for normalize in (True, False):
        r = M.infidelity(linear, X, grad, perturbation="gaussian", normalize=normalize)
        np.testing.assert_allclose(r.values, 0.0, atol=1e-20)
    np.testing.assert_allclose(M.infidelity(linear, X, 2 * grad, perturbation="gaussian").values, 0.0, atol=1e-20)
    raw = M.infidelity(linear, X, 2 * grad, perturbation="gaussian", normalize=False, n_perturb=50, sigma=0.1)
    I = 0.1 * np.random.default_rng(0).standard_normal((50, 3))  # one block, the same for every row
    np.testing.assert_allclose(raw.values, np.full(4, ((I @ W) ** 2).mean()))  # (I^T 2w - I^T w)^2


def test_subset_infidelity_is_zero_for_exact_shapley_of_an_additive_model_and_relative_one_for_zero():
    X = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0]])
    baseline = np.array([0.5, 0.0, 1.0])
    phi = W * (X - baseline)
    np.testing.assert_allclose(M.infidelity(linear, X, phi, baseline).values, 0.0, atol=1e-20)
    zero = M.infidelity(linear, X, np.zeros_like(X), baseline, relative=True)
    np.testing.assert_allclose(zero.values, 1.0)  # beta* = 0: explains none of E[Delta f^2]
    assert zero.params["conditional"] == "baseline"


def test_infidelity_of_the_negated_attribution_is_that_of_zero_not_that_of_the_attribution():
    """Before the fix beta* could be negative: -phi scored exactly like phi (0)."""
    X = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0]])
    baseline = np.array([0.5, 0.0, 1.0])
    phi = W * (X - baseline)
    negated = M.infidelity(linear, X, -phi, baseline, relative=True)
    np.testing.assert_allclose(negated.values, 1.0)
    assert negated.params["beta"] == [0.0, 0.0]
    np.testing.assert_allclose(M.infidelity(linear, X, 7.0 * phi, baseline, relative=True).values, 0.0, atol=1e-20)


def test_global_infidelity_scale_forgives_a_common_scale_but_not_one_per_row():
    X = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0]])
    baseline = np.array([0.5, 0.0, 1.0])
    phi = W * (X - baseline)
    common = M.infidelity(linear, X, 100.0 * phi, baseline, relative=True, normalize="global")
    np.testing.assert_allclose(common.values, 0.0, atol=1e-20)
    per_row = phi * np.array([[1.0], [20.0]])
    assert M.infidelity(linear, X, per_row, baseline, relative=True).values.max() < 1e-20
    assert M.infidelity(linear, X, per_row, baseline, relative=True, normalize="global").values.max() > 0.1
    with pytest.raises(ValueError, match="normalize"):
        M.infidelity(linear, X, phi, baseline, normalize="row")


def test_relative_infidelity_is_undefined_when_the_model_never_changes():
    r = M.infidelity(lambda X: np.zeros(len(X)), np.ones((2, 3)), np.ones((2, 3)), np.zeros(3), relative=True)
    assert r.n_undefined == 2 and "does not change" in r.reasons[0]


def test_infidelity_rejects_unknown_perturbation():
    with pytest.raises(ValueError, match="perturbation must be"):
        M.infidelity(linear, np.ones((1, 3)), np.ones((1, 3)), np.zeros(3), perturbation="square")


def test_metrics_accept_an_exact_conditional_imputer():
    dist = g.Gaussian.equicorrelated(3, 0.5)
    X = dist.sample(5, np.random.default_rng(0))
    imputer = dist.imputer("observational")
    r = M.faithfulness(linear, X, W * X, imputer, n_samples=50)
    assert r.params["conditional"] == "observational" and np.isfinite(r.values).all()
    E = M.expected_outputs(linear, X, np.ones((5, 1, 3), bool), imputer)
    np.testing.assert_allclose(E[:, 0], linear(X))  # all features present: E_F[f] = f(x)
    E0 = M.expected_outputs(linear, X, np.zeros((5, 1, 3), bool), imputer, n_samples=4000)
    np.testing.assert_allclose(E0[:, 0], 0.0, atol=0.3)  # nothing present: E f(X) = 0


def test_reference_errors_name_the_problem():
    with pytest.raises(ValueError, match="baseline has 2 values"):
        M.faithfulness(linear, np.ones((1, 3)), np.ones((1, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="reference is required"):
        M.faithfulness(linear, np.ones((1, 3)), np.ones((1, 3)), None)


def test_precomputed_effects_give_the_same_faithfulness_and_infidelity():
    X = np.random.default_rng(1).standard_normal((6, 3))
    background = np.random.default_rng(2).standard_normal((10, 3))
    A = np.random.default_rng(3).standard_normal((6, 3))
    delta = M.single_removal_effects(linear, X, background)
    np.testing.assert_array_equal(
        M.faithfulness(linear, X, A, background, absolute=False, centred=False).values,
        M.faithfulness(linear, X, A, background, absolute=False, centred=False, effects=delta).values,
    )
    effects = M.subset_removal_effects(linear, X, background, n_perturb=20)
    np.testing.assert_array_equal(
        M.infidelity(linear, X, A, background, n_perturb=20, relative=True).values,
        M.infidelity(linear, X, A, background, n_perturb=20, relative=True, effects=effects).values,
    )


def test_uncentred_faithfulness_sees_a_per_row_offset_that_pearson_forgives():
    X = np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 2.0]])
    phi = W * X
    offset = phi + 5.0
    pearson = M.faithfulness(linear, X, offset, np.zeros(3), absolute=False)
    cosine = M.faithfulness(linear, X, offset, np.zeros(3), absolute=False, centred=False)
    np.testing.assert_allclose(pearson.values, 1.0)
    assert cosine.values.max() < 0.9
    np.testing.assert_allclose(M.faithfulness(linear, X, phi, np.zeros(3), absolute=False, centred=False).values, 1.0)
