"""The one record type (pytest_xai.reports.record): what a test sends through pytest comes back the same, the
verdict follows the error kind, and reports written before ``kind`` existed still read."""

from __future__ import annotations

import json

import numpy as np

from pytest_xai.__main__ import main
from pytest_xai.reports import baseline, htmlreport, merge
from pytest_xai.reports.record import Record

#: A record as version-1 reports wrote it before ``kind`` (every other field as they were).
OLD = {
    "nodeid": "xai_suite.py::symmetry[cough_and_fever-shap]",
    "row": "symmetry[cough_and_fever]",
    "test": "symmetry",
    "explainer": "shap",
    "case": "cough_and_fever",
    "family": "tabular",
    "category": "fidelity",
    "check": "symmetry",
    "outcome": "passed",
    "status": "PASS",
    "score": 0.98,
    "threshold": 0.05,
    "threshold_sources": {"rtol": "default"},
    "passed": True,
    "seconds": 0.5,
    "cpu_seconds": 0.4,
    "cached": False,
    "seed": 7,
    "detail": "ok",
    "error": None,
    "duration": 0.6,
    "picture": None,
    "repeat": None,
    "flaky": False,
    "regression": None,
}


def _old_report(*records: dict) -> dict:
    return {
        "schema": "pytest-xai/report",
        "version": 1,
        "created": "2026-01-01T00:00:00+00:00",
        "seed": 0,
        "options": {"thresholds": {}},
        "versions": {"python": "3.11"},
        "machine": {},
        "exitstatus": 1,
        "summary": {},
        "results": list(records),
    }


def test_properties_round_trip_as_builtin_values():
    rec = Record(
        explainer="shap",
        case="c",
        check="symmetry",
        score=np.float32(0.5),
        passed=True,
        cached=False,
        seed=np.int64(3),
        threshold_sources={"rtol": "default"},
    )
    properties = rec.to_properties()
    assert all(k.startswith("xai_") and type(v) in (str, float, int, bool, dict) for k, v in properties)
    back = Record.from_properties("t.py::test[shap]", "passed", 0.25, properties + [("other", 1), ("xai_nope", 2)])
    assert (back.explainer, back.score, back.seed, back.status, back.kind, back.row) == (
        "shap",
        0.5,
        3,
        "PASS",
        None,
        "t.py::test[shap]",
    )
    assert Record.from_properties("t.py::test", "passed", 0.0, [("xai_score", 1.0)]) is None  # no explainer


def test_the_error_kind_decides_timeout_or_error():
    def status(kind: str) -> str | None:
        rec = Record(explainer="e", kind=kind, passed=False, score=0.0, error="explainer 'e' on case 'c': ...")
        return Record.from_properties("n", "failed", 1.0, rec.to_properties()).status

    assert {kind: status(kind) for kind in ("timeout", "crash", "invalid", "raised")} == {
        "timeout": "TIMEOUT",
        "crash": "ERROR",
        "invalid": "ERROR",
        "raised": "ERROR",
    }
    words = Record(explainer="e", passed=False, error="did not return within the wall-clock backstop")
    assert Record.from_properties("n", "failed", 1.0, words.to_properties()).status == "FAIL"  # no word matching


def test_reports_written_before_the_kind_field_merge_render_and_gate(tmp_path):
    timeout = {
        **OLD,
        "nodeid": OLD["nodeid"].replace("shap", "lime"),
        "explainer": "lime",
        "outcome": "failed",
        "status": "TIMEOUT",
        "score": None,
        "passed": False,
        "error": "stopped",
    }
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(_old_report(OLD)))
    second.write_text(json.dumps(_old_report(timeout)))
    out = tmp_path / "all.json"
    assert main(["merge", str(first), str(second), "-o", str(out), "--html", str(tmp_path / "all.html")]) == 0
    merged = json.loads(out.read_text())
    assert [r["kind"] for r in merged["results"]] == [None, None] and set(OLD) < set(merged["results"][0])
    assert merged["summary"]["lime"]["overall"]["timeouts"] == 1 and merged["summary"]["shap"]["overall"]["passed"] == 1
    assert "TIMEOUT" in htmlreport.render(merged)

    gate = baseline.Gate(str(first), {})
    assert gate.regressions(("symmetry[cough_and_fever]", "shap"), "symmetry", 0.90, 0.5)  # dropped by 0.08
    assert not gate.regressions(("symmetry[cough_and_fever]", "shap"), "symmetry", 0.97, 0.5)
    now = Record(
        nodeid=OLD["nodeid"],
        row=OLD["row"],
        explainer="shap",
        check="symmetry",
        status="ERROR",
        kind="raised",
        score=0.0,
    )
    (regression,) = gate.diff([now])["regressions"]
    assert regression["reasons"][0] == "verdict PASS in the baseline, ERROR now"
    assert merge.merge([("a", _old_report(OLD))])["results"][0]["status"] == "PASS"


def test_properties_are_strict_json_and_read_back_non_finite_numbers_and_expected_outcomes():
    """Issue 44: JUnit XML writes a property's ``str``; a Python repr (``True``) is no JSON."""
    import math

    rec = Record(explainer="e", check="c", score=float("nan"), threshold=float("inf"), passed=False, known_failure=True)
    properties = rec.to_properties()
    assert all(isinstance(v, str) for _, v in properties)
    values = {k: json.loads(v) for k, v in properties}  # strict: no NaN, no Infinity
    assert values["xai_passed"] is False and values["xai_threshold"] == "inf" and values["xai_score"] == "nan"
    known = Record.from_properties("n", "xfailed", 1.0, properties)
    assert known.status == "FAIL" and known.known_failure is True and math.isnan(known.score)
    assert known.threshold == float("inf")
    other = Record.from_properties("n", "xfailed", 1.0, Record(explainer="e").to_properties())
    assert other.status == "SKIP" and other.passed is None  # a user's xfail, as pytest counts it
    assert Record.from_properties("n", "xpassed", 1.0, Record(explainer="e").to_properties()).status == "PASS"
