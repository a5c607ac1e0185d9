"""A user's own test file, written with pytest-xai's fixtures.

Run it against any explainer:

    pytest examples/test_my_explainer.py --xai-no-suite --xai-explainer=pytest_xai.explainers:shap_kernel

``xai_explainer`` is parametrised over every ``--xai-explainer``; ``xai_case`` builds a ground-truth
case by name; ``xai_explain`` runs the explainer through the contract (time limit, validation,
timing); ``xai_check`` scores the explanation, records the score and fails the test with the detail.
"""

import numpy as np
import pytest


def test_cough_and_fever_is_symmetric(xai_explainer, xai_case, xai_explain, xai_check):
    case = xai_case("cough_and_fever")
    xai_check("symmetry", xai_explain(xai_explainer, case), case)


@pytest.mark.xai_dummy(rtol=0.01)  # a looser tolerance than the default 1e-3, for this test only
def test_unused_feature_gets_no_credit(xai_explainer, xai_case, xai_explain, xai_check):
    case = xai_case("counterexample_dummy_axiom")
    score = xai_check("dummy", xai_explain(xai_explainer, case), case)
    assert score.threshold == 0.01


def test_attributions_add_up_to_the_prediction(xai_explainer, xai_case, xai_explain):
    """Efficiency, a property of our own: sum_i phi_i(x) = f(x) - E[f(background)]."""
    case = xai_case("a_and_b_or_c")
    explanation = xai_explain(xai_explainer, case)
    gap = case.predict(case.inputs) - case.predict(case.background).mean()
    np.testing.assert_allclose(explanation.attributions.sum(axis=1), gap, atol=1e-6 * case.output_range)
