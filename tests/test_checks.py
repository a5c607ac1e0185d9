"""Each check passes a reference explainer, fails a broken one, and is scale-free."""

from dataclasses import replace

import numpy as np
import pytest

from pytest_xai import cases, checks
from pytest_xai.engine import contract
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
    """Multiplying the model by 100 changes no score (CX-3: relative tolerances)."""
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
    assert not result.passed and result.worst["rank"] == pytest.approx(1.0)  # a three-way tie: average rank 1


def test_score_value_must_be_in_unit_interval():
    with pytest.raises(ValueError):
        checks.Score("x", float("nan"), False, 0.0, "")


# ---------------------------------------------------------------------------------------------
# "Explains nothing" guards; each test failed before its guard existed


def _zoo(member, case, reference_key="shapley"):
    from pytest_xai import metrics
    from pytest_xai.explainers import degenerate

    return degenerate.apply(
        member,
        case.truth[reference_key],
        case.inputs,
        metrics.outputs(case.predict, case.inputs, case.target),
        case.background,
    )


@pytest.mark.parametrize("name", ["x0_plus_x1_uniform_stat_dep", "x0_plus_x1_non_uniform_stat_indep"])
def test_symmetric_effect_fails_the_model_output_copied_to_every_feature(name):
    """For f = x0 + x1 the output copied to both features has equal effects (1 and 1): it passed."""
    case = cases.get(name)
    result = score("symmetric_effect", _zoo("output_copied", case), case)
    assert not result.passed and "does not tell the features apart" in result.detail
    assert not score("symmetric_effect", _zoo("sign_flipped", case), case).passed
    assert score("symmetric_effect", _zoo("input_minus_mean", case), case).passed  # interventional Shapley here


def test_switch_pairs_finds_no_pair_on_a_constant_feature():
    """The one pair finder of the tabular checks, guarded: a feature at its max everywhere is also at
    its min, so without the guard every row paired with itself (and with each row sharing the rest)
    and ``symmetric_effect`` scored an effect of 0 instead of saying the case cannot be scored."""
    from pytest_xai.cases.tabular import switch_pairs

    X = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 1.0]])
    hi, lo = switch_pairs(X, 0)
    assert (hi.tolist(), lo.tolist()) == ([1, 1], [0, 2])
    assert [a.size for a in switch_pairs(X, 1)] == [0, 0]
    case = cases.get("x0_plus_x1_uniform_stat_dep")
    constant = replace(case, inputs=np.column_stack([case.inputs[:, 0], np.ones(len(case.inputs))]))
    with pytest.raises(ValueError, match="no two explained rows differ only in feature 1"):
        score("symmetric_effect", case.truth["shapley"], constant)


@pytest.mark.parametrize("member", ["constant", "sign_flipped", "scaled_negative", "abs_of_exact", "swapped"])
def test_symmetry_fails_maps_that_do_not_move_with_the_output(member):
    """All of these are symmetric, and all passed: none moves with the output when a feature is switched on."""
    case = cases.get("cough_and_fever")
    result = score("symmetry", _zoo(member, case), case)
    assert not result.passed and "explains nothing" in result.detail


@pytest.mark.parametrize("member", ["sign_flipped", "scaled_negative", "abs_of_exact"])
def test_ranking_reads_magnitudes_but_fails_sign_errors(member):
    case = cases.get("cough_and_fever_10_90")
    assert not score("ranking", _zoo(member, case), case).passed


@pytest.mark.parametrize("member", ["sign_flipped", "abs_of_exact", "swapped", "shuffled_rows"])
def test_correlated_fails_maps_that_keep_the_twin_at_zero_but_get_the_used_feature_wrong(member):
    case = cases.get("correlated_features")
    result = score("correlated", _zoo(member, case), case)
    assert not result.passed and "does not follow its own effect" in result.detail


@pytest.mark.parametrize("member", ["sign_flipped", "abs_of_exact", "row_offset", "swapped", "shuffled_rows"])
def test_stress_rank_fails_maps_with_the_right_mean_magnitudes_but_wrong_rows(member):
    """Mean |A| over rows is blind to sign, offsets and row order: these all passed rank and Spearman."""
    case = cases.get("stress_nb_features")
    result = score("stress_rank", _zoo(member, case, "logit_shap"), case)
    assert not result.passed and result.worst["cosine"] < 0.8, result.detail
    assert score("stress_rank", case.truth["logit_shap"], case).passed


def test_lime_credits_binary_features_with_the_outputs_sign():
    """The guard's finding was our adapter's: it read lime's negated regression weights (key 0 of
    ``as_map``), so at cough = fever = 1 (f = 80) cough got -49.  Read right, LIME passes symmetry."""
    pytest.importorskip("lime")
    from pytest_xai.explainers.lime import lime_tabular

    case = cases.get("cough_and_fever")
    attributions = lime_tabular(case.inputs, case.predict, case.background, None, case.feature_names, 0)
    assert score("symmetry", attributions, case).passed
    assert not score("symmetry", -attributions, case).passed
