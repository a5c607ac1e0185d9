"""The judge (``pytest_xai.engine.judge``): thresholds resolved, marker keywords checked, the arguments a
check asks for by name handed to it, in the engine, without pytest."""

from __future__ import annotations

import pytest

from pytest_xai import cases
from pytest_xai.cache import Cache
from pytest_xai.engine import contract
from pytest_xai.engine.judge import Judge, MarkerError, ReexplainError, check_marker, marker_thresholds
from pytest_xai.engine.runner import Runner
from tests.test_plugin import REF


@pytest.fixture
def judge() -> Judge:
    runner = Runner(seed=0, limits=None, cache=Cache(None), data_dir=None)  # in-process calls
    return Judge(runner, {"command line": {"symmetry": {"rtol": 0.3}}, "ini": {"symmetry": {"rtol": 0.2}}})


def _explained(judge: Judge, name: str = "cough_and_fever"):
    explainer = contract.load(f"{REF}:exact_shapley", option="test")
    case = cases.get(name, cache=Cache(None))
    outcome, _ = judge.runner.explain(explainer, case)
    return explainer, case, outcome.explanation


def test_a_marker_keyword_that_is_no_threshold_is_refused_naming_the_thresholds():
    with pytest.raises(
        MarkerError,
        match=r"^xai_symmetry got unknown keyword rtoll; its thresholds are rtol "
        r"\(did you mean rtol\?\)$",
    ):
        check_marker("xai_symmetry", {"rtoll": 0.9})
    check_marker("xai_symmetry", {"rtol": 0.9})


def test_a_shared_marker_takes_the_thresholds_of_every_check_that_shares_it():
    cases.infos()  # the families register their checks
    human = marker_thresholds("xai_human")
    assert {"min_precision", "min_recall", "max_relative_mae"} <= set(human)
    check_marker("xai_human", {"min_recall": 0.5, "min_precision": 0.4})
    with pytest.raises(MarkerError, match="unknown keywords min_recal, colour; its thresholds are min_precision"):
        check_marker("xai_human", {"min_recal": 0.5, "colour": 1})


def test_the_judge_takes_each_threshold_from_the_strongest_level(judge):
    _, case, explanation = _explained(judge)
    verdict = judge.score("symmetry", explanation, case)
    assert verdict.score.threshold == 0.3 and verdict.sources == {"rtol": "command line"}
    marked = judge.score(
        "symmetry", explanation, case, markers=[("xai_symmetry", {"rtol": 0.9}), ("xai_symmetry", {"rtol": 0.8})]
    )
    assert marked.score.threshold == 0.8 and marked.sources == {"rtol": "marker"}  # the closest wins
    called = judge.score("symmetry", explanation, case, call={"rtol": 0.7}, markers=[("xai_symmetry", {"rtol": 0.8})])
    assert called.score.threshold == 0.7 and called.sources == {"rtol": "call"}
    with pytest.raises(MarkerError):
        judge.score("symmetry", explanation, case, markers=[("xai_symmetry", {"rtoll": 0.9})])
    with pytest.raises(KeyError, match="did you mean symmetry"):
        judge.score("symetry", explanation, case)


def test_the_judge_re_explains_for_a_check_that_asks_and_names_a_failure(judge):
    explainer, case, explanation = _explained(judge)
    with pytest.raises(TypeError, match="re-runs the explainer: pass explainer="):
        judge.score("determinism", explanation, case)
    assert judge.score("determinism", explanation, case, explainer=explainer).score.passed
    broken = contract.load("tests.hostile:raises", option="test")
    with pytest.raises(
        ReexplainError, match=r"explainer 'raises' on a repeated call of case 'cough_and_fever': raised"
    ):
        judge.reexplainer(broken, case)()
