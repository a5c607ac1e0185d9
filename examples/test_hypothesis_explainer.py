"""Test-driven development of a new attribution method with Hypothesis.

    pytest examples/test_hypothesis_explainer.py --xai-no-suite --xai-explainer=mymod:explain

Hypothesis draws games whose Shapley values are known and shrinks any failure to the smallest game
that breaks the property.  ``contract.run`` calls the explainer exactly as the suite does (argument
injection and output validation), in-process so that Hypothesis can shrink quickly.
"""

import numpy as np
import pytest
from hypothesis import given, settings

from pytest_xai import NotApplicable, strategies
from pytest_xai.engine import contract


def _explain(explainer, case):
    try:
        return contract.run(explainer, case, seed=0).attributions
    except NotApplicable as exc:
        pytest.skip(str(exc))


@settings(max_examples=25, deadline=None)
@given(case=strategies.additive_models(max_features=4))
def test_matches_exact_shapley_on_additive_models(xai_explainer, case):
    np.testing.assert_allclose(_explain(xai_explainer, case), case.truth["shapley"], atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(game=strategies.games(max_features=5))
def test_ignores_dummy_players(xai_explainer, game):
    attributions = _explain(xai_explainer, game)
    np.testing.assert_allclose(attributions[:, list(game.truth["dummies"])], 0.0, atol=1e-6)
