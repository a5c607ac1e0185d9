"""What the README's contract table and score table promise, checked against behaviour."""

from __future__ import annotations

import numpy as np

from pytest_xai import cases
from pytest_xai.engine import contract
from pytest_xai.reports import report
from pytest_xai.reports.record import Record


def test_importance_of_an_array_explainer_is_its_mean_abs_attribution():
    case = cases.get("cough_and_fever")
    explainer = contract.load("pytest_xai.explainers:exact_shapley")
    explanation = contract.run(explainer, case)
    assert explanation.importance is not None
    np.testing.assert_allclose(explanation.importance, np.abs(explanation.attributions).mean(axis=0))
    given = contract.coerce({"attributions": explanation.attributions, "importance": np.ones(2)}, case)[1]
    assert given is not None and given.tolist() == [1.0, 1.0]


def test_boolean_units_cases_have_no_background_as_documented():
    for name in ("units_boolean_and", "units_boolean_or"):
        case = cases.get(name)
        assert case.background is None and case.baseline is not None


def test_mean_score_counts_only_scored_tests():
    """A user's test that passes without a check has no score: it is no 0 in the mean (was 0.167)."""
    records = [
        Record(explainer="e", status="PASS", row="t.py::test_plain"),
        Record(explainer="e", status="FAIL", score=0.5, check="symmetry", row="symmetry[c]"),
        Record(explainer="e", status="ERROR", score=0.0, check="dummy", row="dummy[c]"),
    ]
    overall = report.summary(records)["e"]["overall"]
    assert overall["mean_score"] == 0.25 and overall["passed"] == 1  # the error counts as 0, the unscored not at all
    assert report.summary(records[:1])["e"]["overall"]["mean_score"] is None
    assert report.table(records[:1])[-1].split() == ["overall", "1/1"]
