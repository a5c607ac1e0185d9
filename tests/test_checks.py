"""Each check passes a reference explainer, fails a broken one, and is scale-free."""

from dataclasses import replace

import numpy as np
import pytest

from pytest_xai import cases, checks, contract
from pytest_xai.explainers import baselines

from . import hostile


def score(check, attributions, case, **overrides):
    info = checks.CHECKS[check]
    return info.func(attributions, case, **{**info.thresholds, **case.info.checks[check], **overrides})


def explain(func, case):
    return contract.run(contract.load(f"{func.__module__}:{func.__name__}"), case, seed=3)


CONTROLS = {  # check -> (case, explainer that passes, explainers that fail)
    "symmetry": ("cough_and_fever", baselines.exact_shapley, [baselines.random, hostile.zeros]),
    "ranking": ("a_and_b_or_c", baselines.exact_shapley, [hostile.swapped_features, hostile.zeros]),
    "dummy": ("counterexample_dummy_axiom", baselines.exact_shapley, [baselines.random, hostile.zeros]),
}


@pytest.mark.parametrize("check", CONTROLS)
def test_check_passes_a_correct_explainer_and_fails_broken_ones(check):
    name, good, bads = CONTROLS[check]
    case = cases.get(name)
    passed = score(check, explain(good, case), case)
    assert passed.passed and passed.value == pytest.approx(1.0)
    for bad in bads:
        failed = score(check, explain(bad, case), case)
        assert not failed.passed and failed.value < 1.0 and failed.detail


def test_saabas_breaks_symmetry_on_cough_and_fever():
    """Lundberg et al. 2018: path-based credit depends on split order."""
    pytest.importorskip("xgboost")
    from pytest_xai.explainers.trees import saabas

    case = cases.get("cough_and_fever")
    assert not score("symmetry", saabas(case.inputs, case.model), case).passed


@pytest.mark.parametrize("check", CONTROLS)
def test_verdicts_do_not_depend_on_the_output_scale(check):
    """Multiplying the model by 100 changes no score (D3: relative tolerances)."""
    case = cases.get(CONTROLS[check][0])
    scaled = replace(case, predict=lambda X, f=case.predict: 100.0 * f(X))
    for attributions in (case.truth["shapley"], baselines.random(case.inputs, 0)):
        a, b = score(check, attributions, case), score(check, 100.0 * attributions, scaled)
        assert (a.passed, a.value) == (b.passed, pytest.approx(b.value))


def test_symmetry_tolerance_is_relative():
    case = cases.get("cough_and_fever")
    nudged = case.truth["shapley"] * np.array([1.0, 1.03])
    assert score("symmetry", nudged, case).passed
    assert not score("symmetry", nudged, case, rtol=0.01).passed


def test_dummy_tolerates_round_off_but_not_credit():
    case = cases.get("counterexample_dummy_axiom")
    phi = case.truth["shapley"].copy()
    phi[:, 0] = 1e-9
    assert score("dummy", phi, case).passed
    phi[:, 0] = 0.05 * np.abs(phi[:, 1]).max()
    result = score("dummy", phi, case)
    assert not result.passed and result.worst["feature"] == 0


def test_ranking_tie_is_not_a_win():
    case = cases.get("a_and_b_or_c")
    tie = np.ones(case.inputs.shape)
    result = score("ranking", tie, case)
    assert not result.passed and result.value == pytest.approx(0.5)


def test_ranks_use_average_ties():
    np.testing.assert_allclose(checks.ranks([3.0, 1.0, 3.0, 0.0]), [0.5, 2.0, 0.5, 3.0])


def test_score_value_must_be_in_unit_interval():
    with pytest.raises(ValueError):
        checks.Score("x", float("nan"), False, 0.0, "")
