"""Shapley axioms as properties: exact_shapley satisfies them on generated games, random does not."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_xai import strategies
from pytest_xai.explainers.baselines import exact_shapley, random

FAST = settings(max_examples=40, deadline=None)


def explain(explainer, case, seed=0):
    if explainer is random:
        return random(case.inputs, seed)
    return exact_shapley(case.inputs, case.predict, case.background, None)


def tolerance(case):
    return 1e-9 * (1.0 + np.abs(case.predict(case.inputs)).max())


def is_efficient(explainer, case):
    phi = explain(explainer, case)
    gap = case.predict(case.inputs) - case.predict(case.background).mean()
    return np.allclose(phi.sum(axis=1), gap, atol=tolerance(case))


def is_symmetric(explainer, case):
    phi = explain(explainer, case)
    i, j = case.truth["symmetric"]
    return np.allclose(phi[:, i], phi[list(case.truth["mirror"]), j], atol=tolerance(case))


def gives_dummies_zero(explainer, case):
    phi = explain(explainer, case)
    return np.allclose(phi[:, list(case.truth["dummies"])], 0.0, atol=tolerance(case))


PROPERTIES = [is_efficient, is_symmetric, gives_dummies_zero]


@FAST
@given(strategies.games())
def test_exact_shapley_satisfies_the_axioms_on_games(game):
    for prop in PROPERTIES:
        assert prop(exact_shapley, game), prop.__name__


@FAST
@given(strategies.additive_models())
def test_exact_shapley_matches_closed_form_on_additive_models(case):
    phi = exact_shapley(case.inputs, case.predict, case.background, None)
    np.testing.assert_allclose(phi, case.truth["shapley"], atol=tolerance(case))
    assert is_efficient(exact_shapley, case)


@FAST
@given(strategies.games(), st.sampled_from([-2.0, 0.5, 3.0]))
def test_exact_shapley_is_linear(game, scale):
    def combined(X):
        return scale * game.predict(X) + np.sin(np.asarray(X)[:, 0])

    phi_f = exact_shapley(game.inputs, game.predict, game.background, None)
    phi_g = exact_shapley(game.inputs, lambda X: np.sin(np.asarray(X)[:, 0]), game.background, None)
    phi_sum = exact_shapley(game.inputs, combined, game.background, None)
    np.testing.assert_allclose(phi_sum, scale * phi_f + phi_g, atol=10 * tolerance(game))


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.__name__)
def test_random_violates_each_axiom(prop):
    """Hypothesis must find a game on which the negative control breaks the property."""

    @settings(max_examples=50, deadline=None, database=None)
    @given(strategies.games())
    def holds_for_random(game):
        assert prop(random, game)

    with pytest.raises(AssertionError):
        holds_for_random()


@pytest.mark.parametrize("kwargs", [{"max_features": 2}, {"max_points": 0}, {"max_features": "6"}])
def test_strategy_arguments_are_validated(kwargs):
    with pytest.raises(ValueError):
        strategies.games(**kwargs)


@pytest.mark.parametrize("kwargs", [{"max_features": 2}, {"max_terms": 0}, {"max_points": 0}])
def test_unanimity_game_arguments_are_validated(kwargs):
    with pytest.raises(ValueError):
        strategies.unanimity_games(**kwargs)
