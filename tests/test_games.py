"""The games family (pytest_xai/cases/games/) and its checks: closed-form Shapley values at every
interaction order, exactness for explainers that claim it, and the estimator checks (convergence,
unbiasedness) with the reference estimators that pass them and the wrong estimators that fail."""

import numpy as np
import pytest
from hypothesis import given, settings

from pytest_xai import NotApplicable, cases, checks, strategies
from pytest_xai.cases.generic import reexplainer
from pytest_xai.explainers import degenerate, replay
from pytest_xai.explainers.baselines import exact_shapley
from pytest_xai.shapley import interventional

GAMES = ("games_products", "games_minima")


def score(check, explain, name="games_products", **call):
    """``check`` on ``explain``'s explanation of the case, re-explaining in this process, with the
    explainer's declarations as the judge gives them."""
    case = cases.get(name)
    info = checks.CHECKS[check]
    params = {**info.thresholds, **case.info.checks[check], **call}
    for declared in ("exact", "estimator"):
        if declared in info.func.__code__.co_varnames and declared not in params:
            params[declared] = getattr(explain, declared, None)
    if "reexplain" in info.func.__code__.co_varnames:
        params["reexplain"] = reexplainer(explain, case)
    first = reexplainer(explain, case)()
    return info.func(first, case, **params)


@pytest.mark.parametrize("name", GAMES)
def test_the_closed_form_equals_enumeration_over_every_coalition(name):
    case = cases.get(name)
    enumerated = interventional(case.predict, case.inputs, case.background)
    np.testing.assert_allclose(case.truth["shapley_interventional"], enumerated, rtol=1e-12, atol=1e-12)
    assert case.meta["order"] == 6  # a six-way dividend: beyond what pairwise-exact weights get right


@settings(max_examples=30, deadline=None)
@given(strategies.unanimity_games())
def test_the_unanimity_strategy_draws_closed_form_values_equal_to_enumeration(game):
    np.testing.assert_allclose(
        game.truth["shapley"], exact_shapley(game.inputs, game.predict, game.background, None), rtol=1e-9, atol=1e-9
    )


@settings(max_examples=20, deadline=None)
@given(strategies.unanimity_games())
def test_kernel_shap_over_every_coalition_is_exact_on_unanimity_games(game):
    right = replay.kernel_shap(game.inputs, game.predict, game.background, None)
    np.testing.assert_allclose(right, game.truth["shapley"], rtol=1e-8, atol=1e-8)


def test_exactness_holds_exact_explainers_to_float_precision_and_catches_the_kernel_weights():
    assert score("exactness", exact_shapley).passed
    assert score("exactness", replay.kernel_shap).passed
    wrong = score("exactness", replay.size_weighted_kernel_shap)
    assert not wrong.passed and "0.193" in wrong.detail, wrong.detail
    # the tolerance gt_shapley keeps for sampling noise forgives it
    case = cases.get("games_products")
    assert (
        checks.CHECKS["gt_shapley"]
        .func(replay.size_weighted_kernel_shap(case.inputs, case.predict, case.background, None), case, max_error=0.05)
        .passed
    )


def test_exactness_does_not_judge_explainers_that_do_not_claim_it():
    with pytest.raises(NotApplicable, match="does not claim exact"):
        score("exactness", degenerate.permutation_sampling)


@pytest.mark.parametrize("member", degenerate.MEMBERS)
def test_every_zoo_member_claiming_exactness_fails_it(member):
    case = cases.get("games_products")
    info = checks.CHECKS["exactness"]
    truth = case.truth["shapley_interventional"]
    output = case.predict(case.inputs)
    for seed in (0, 1):
        corrupted = degenerate.apply(member, truth, case.inputs, output, case.background, seed=seed)
        assert not info.func(corrupted, case, exact=True, **info.thresholds).passed, member


# --------------------------------------------------------------------------- the estimator checks


@pytest.mark.parametrize("name", GAMES)
def test_a_correct_permutation_sampler_passes_convergence_and_unbiasedness(name):
    for check in ("convergence", "unbiasedness"):
        result = score(check, degenerate.permutation_sampling, name)
        assert result.passed, (check, result.detail)


@pytest.mark.parametrize(
    ("member", "check"),
    [
        ("budget_ignored", "convergence"),
        ("shrunken", "convergence"),
        ("shrunken", "unbiasedness"),
        ("uniform_coalitions", "unbiasedness"),
    ],
)
@pytest.mark.parametrize("name", GAMES)
def test_a_wrong_estimator_fails_the_check_made_for_it(member, check, name):
    result = score(check, degenerate.ESTIMATORS[member], name)
    assert not result.passed, result.detail


def test_an_estimator_that_ignores_its_budget_is_unbiased_all_the_same():
    """budget_ignored fails convergence only: its mean over seeds is the exact values."""
    assert score("unbiasedness", degenerate.budget_ignored).passed


@pytest.mark.parametrize("explainer", ["shap_permutation", "shapley_value_sampling", "shap_kernel"])
def test_the_reference_estimators_converge(explainer):
    from pytest_xai import explainers

    result = score("convergence", getattr(explainers, explainer))
    assert result.passed, result.detail


@pytest.mark.parametrize("explainer", ["shap_permutation", "shapley_value_sampling"])
def test_the_reference_permutation_samplers_are_unbiased(explainer):
    from pytest_xai import explainers

    result = score("unbiasedness", getattr(explainers, explainer))
    assert result.passed, result.detail


def test_kernel_shap_is_not_held_to_unbiasedness():
    """Covert & Lee 2021: KernelSHAP is only asymptotically unbiased; it declares so."""
    from pytest_xai import explainers

    with pytest.raises(NotApplicable, match="asymptotically unbiased"):
        score("unbiasedness", explainers.shap_kernel)


def test_estimators_are_inferred_from_two_seeds_and_deterministic_explainers_are_not_judged():
    with pytest.raises(NotApplicable, match="same attributions under two seeds"):
        score("convergence", exact_shapley, estimator=None)
    assert not score("convergence", degenerate.noise, estimator=None).passed  # stochastic: inferred, and wrong
    with pytest.raises(NotApplicable, match="no estimator"):
        score("unbiasedness", degenerate.permutation_sampling, estimator=False)


# ------------------------------------------------------------------------------------- coverage


@pytest.mark.parametrize("name", GAMES)
def test_intervals_of_a_correct_estimator_cover_at_their_rate_and_overconfident_ones_do_not(name):
    assert score("coverage", degenerate.permutation_sampling, name).passed
    narrow = score("coverage", degenerate.overconfident, name)
    assert not narrow.passed and "overconfident" in narrow.detail, narrow.detail


@pytest.mark.parametrize("name", GAMES)
def test_variances_overstated_as_in_shap_4767_cover_too_much(name):
    assert score("coverage", replay.sampling_fixed, name).passed
    wide = score("coverage", replay.sampling_variance_root, name)
    assert not wide.passed and "overstated" in wide.detail, wide.detail


def test_coverage_needs_reported_standard_errors():
    with pytest.raises(NotApplicable, match="reports no standard errors"):
        score("coverage", degenerate.shrunken)


def test_through_the_plugin_the_calls_run_in_the_explainers_worker_with_their_budgets_and_stderr(pytester):
    """The suite's own run: every call at another seed or budget goes through the explainer's worker
    and its stderr comes back (a worker that dropped it made coverage an error)."""
    report = pytester.path / "r.json"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "-k",
        "games_products and coverage",
        "--xai-explainer=pytest_xai.explainers.degenerate:permutation_sampling",
        "--xai-explainer=pytest_xai.explainers.degenerate:overconfident",
        f"--xai-report={report}",
    )
    result.assert_outcomes(passed=1, failed=1)
    import json

    verdicts = {(r["check"], r["explainer"]): r["outcome"] for r in json.loads(report.read_text())["results"]}
    assert verdicts[("coverage", "overconfident")] == "failed", verdicts
