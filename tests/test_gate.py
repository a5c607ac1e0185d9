"""``--xai-gate=regression``: red only when a test got worse than the baseline, known failures visible."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from pytest_xai.reports import baseline, gate
from pytest_xai.reports.record import Record

QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
# symmetry[cough_and_fever] passes; fooling[compas_shap_scaffold] fails by theory (exact Shapley
# values of the scaffold are fooled): an explainer with a known failure.
SELECT = ("-k", "symmetry and cough_and_fever or fooling and compas_shap_scaffold")
MINE = """
from pathlib import Path

import numpy as np

from pytest_xai.explainers import exact_shapley


def explain(inputs, predict, background, target):
    exact = np.asarray(exact_shapley(inputs, predict, background, target))
    size = float(Path(__file__).with_name("noise.txt").read_text())
    return exact + size * np.abs(exact).mean() * np.random.default_rng(1).standard_normal(exact.shape)
"""


def _rec(status, score=None, regression=None):
    return Record(status=status, score=score, regression=regression)


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("now", "before", "known", "regression"),
    [
        (_rec("FAIL", 0.6), _rec("FAIL", 0.6), True, None),  # failing then, no worse: known
        (_rec("FAIL", 0.58), _rec("FAIL", 0.6), True, None),  # within the tolerance 0.05
        (_rec("FAIL", 0.4), _rec("FAIL", 0.6), False, "score dropped from 0.600"),  # worse beyond it
        (_rec("FAIL", 0.9), _rec("PASS", 0.9), False, "verdict PASS in the baseline, FAIL now"),
        (_rec("ERROR", 0.0), _rec("PASS", 1.0), False, "verdict PASS in the baseline, ERROR now"),
        (_rec("TIMEOUT"), _rec("TIMEOUT"), True, None),  # timed out then too
        (_rec("ERROR", 0.0), _rec("ERROR", 0.0), True, None),
        (_rec("FAIL", 0.5), None, False, gate.NEW_FAILURE),  # not in the baseline
        # issue 41: a score no comparison can fall below made every failure known
        (_rec("FAIL", 0.1), _rec("FAIL", NAN), False, "no finite score in the baseline (nan)"),
        (_rec("FAIL", 0.1), _rec("FAIL", INF), False, "score dropped from inf"),
        (_rec("FAIL", NAN), _rec("FAIL", 0.6), False, "no finite score now (nan)"),
        (_rec("ERROR", 0.0), _rec("FAIL", NAN), False, "no finite score in the baseline (nan)"),
        (
            _rec("FAIL", 0.9, regression="score dropped from 1.000"),
            _rec("PASS", 1.0),
            False,
            "score dropped from 1.000",
        ),
    ],
)
def test_judge(now, before, known, regression):
    """Each row: a failing test against its baseline record, and whether it is a known failure."""
    reasons = [] if before is None else baseline.regressions(now, before, tol=0.05)
    got_known, got_regression = gate.judge(now, before, reasons)
    assert got_known is known
    assert (got_regression is None) if regression is None else (regression in got_regression)


A, B = "t.py::a", "t.py::b"


@pytest.mark.parametrize(
    ("mode", "status", "failures", "known", "code"),
    [
        ("verdict", 1, [(A, "call")], [A], 1),  # the default gate: any failure is red
        ("regression", 1, [(A, "call")], [A], 0),  # only known failures: green
        ("regression", 1, [(A, "call"), (B, "call")], [A], 1),  # one regression (or a non-xai failure)
        ("regression", 1, [(A, "setup")], [A], 0),  # a case that failed to build, as before
        ("regression", 1, [(A, "call"), (A, "teardown")], [A], 1),  # a teardown error is never known
        ("regression", 0, [], [], 0),
        ("regression", 1, [], [], 1),  # red for a reason the gate does not see
        ("regression", 2, [(A, "call")], [A], 2),  # interrupted stays interrupted
        ("regression", 4, [], [], 4),  # usage errors stand
        ("verdict", 0, [], [], 0),
    ],
)
def test_exit_code(mode, status, failures, known, code):
    assert gate.exit_code(mode, status, failures, known) == code


def test_regression_gate_needs_a_baseline_and_a_known_mode(pytester):
    result = pytester.runpytest(
        *QUIET, "--collect-only", "--xai-explainer=pytest_xai.explainers:random", "--xai-gate=regression"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--xai-gate=regression compares with a baseline: add --xai-baseline=PATH*"])
    pytester.makeini("[pytest]\nxai_gate = regressions\n")
    result = pytester.runpytest(*QUIET, "--collect-only", "--xai-explainer=pytest_xai.explainers:random")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini xai_gate='regressions': give 'verdict'*or 'regression'*"])


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "n2"])
def test_known_failures_pass_the_gate_and_a_regression_fails_it(pytester, xdist):
    if xdist:
        pytest.importorskip("xdist")
    pytester.makepyfile(mine=MINE)
    (pytester.path / "noise.txt").write_text("0")
    pytester.syspathinsert()
    base, now, junit = pytester.path / "baseline.json", pytester.path / "now.json", pytester.path / "j.xml"
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    # not QUIET: the runs share pytest's cache, the case's models built once, as in a user's checkout
    par = ("-p", "no:randomly", "-n", "2") if xdist else ("-p", "no:randomly")
    saved = run(*SELECT, *par, "--xai-explainer=mine:explain", f"--xai-save-baseline={base}")
    saved.assert_outcomes(passed=1, failed=1)
    assert saved.ret == pytest.ExitCode.TESTS_FAILED  # the default gate: a failed verdict is red
    args = (*SELECT, *par, "--xai-explainer=mine:explain", f"--xai-baseline={base}", f"--xai-report={now}")
    pytester.makeini("[pytest]\nxai_gate = regression\n")  # the ini key; the command line is used below
    same = run(*args, f"--junitxml={junit}")
    same.assert_outcomes(passed=1, xfailed=1)  # issue 44: a known failure is an xfail, not "1 failed"
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(
        [
            "fooling[[]compas_shap_scaffold[]]*FAIL 0.* KNOWN*",
            "xai gate: regression against *: 0 regressed or new failure(s), 1 known failure(s)*",
            "*= 1 passed*1 xfailed in *",
        ]
    )
    doc = json.loads(now.read_text())
    assert doc["gate"] == "regression" and doc["exitstatus"] == 0
    fooling = next(r for r in doc["results"] if r["check"] == "fooling")
    assert fooling["status"] == "FAIL" and fooling["known_failure"] is True and fooling["regression"] is None
    assert fooling["outcome"] == "xfailed" and fooling["passed"] is False
    assert doc["summary"]["explain"]["overall"]["passed"] == 1  # the table and footer count it as a failure
    cases = {tc.get("name"): tc for tc in ET.parse(junit).iter("testcase")}
    assert junit.read_text().count("<failure") == 0
    (xfail,) = cases["fooling[compas_shap_scaffold-explain]"].iter("skipped")
    assert xfail.get("type") == "pytest.xfail"
    assert "known failure: FAIL in the baseline" in xfail.get("message") and "score 0." in xfail.get("message")
    props = {(name, p.get("name")): p.get("value") for name, tc in cases.items() for p in tc.iter("property")}
    # issue 44: property values are JSON, not Python reprs ("True", "{'rtol': ...}")
    assert props[("fooling[compas_shap_scaffold-explain]", "xai_known_failure")] == "true"
    assert isinstance(json.loads(props[("symmetry[cough_and_fever-explain]", "xai_threshold_sources")]), dict)
    assert json.loads(props[("symmetry[cough_and_fever-explain]", "xai_passed")]) is True

    (pytester.path / "noise.txt").write_text("2")  # the explainer got worse: symmetry now fails
    worse = run(*args, "--xai-gate=regression")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    worse.stdout.fnmatch_lines(
        [
            "symmetry[[]cough_and_fever[]]*FAIL 0.* REGRESSED*",
            "REGRESSION*symmetry[[]cough_and_fever[]]*verdict PASS in the baseline, FAIL now*",
        ]
    )
    doc = json.loads(now.read_text())
    symmetry = next(r for r in doc["results"] if r["check"] == "symmetry")
    assert symmetry["known_failure"] is False and "verdict PASS in the baseline, FAIL now" in symmetry["regression"]
    assert doc["exitstatus"] == 1
    if not xdist:  # which option wins does not depend on the process layout
        verdict = run(*args, "--xai-gate=verdict")  # the command line wins over the ini file
        assert verdict.ret == pytest.ExitCode.TESTS_FAILED


def test_a_known_failure_that_passes_now_is_xpass_naming_the_test_to_update(pytester):
    """The baseline had symmetry failing; it passes now: XPASS, green, and told to update the baseline."""
    pytester.makepyfile(mine=MINE)
    pytester.syspathinsert()
    base = pytester.path / "baseline.json"
    only = ("-k", "symmetry and cough_and_fever", "--xai-explainer=mine:explain")
    (pytester.path / "noise.txt").write_text("2")
    pytester.runpytest(*QUIET, *only, f"--xai-save-baseline={base}").assert_outcomes(failed=1)
    (pytester.path / "noise.txt").write_text("0")
    fixed = pytester.runpytest(*QUIET, *only, "-rX", f"--xai-baseline={base}", "--xai-gate=regression")
    fixed.assert_outcomes(xpassed=1)
    assert fixed.ret == pytest.ExitCode.OK
    fixed.stdout.fnmatch_lines(
        [
            (
                "xai gate: symmetry[[]cough_and_fever[]] (explain) failed in the baseline * and passes now: "
                "update the baseline*"
            ),
            "XPASS*symmetry[[]cough_and_fever-explain[]]*failed in the baseline*and passes now: update the baseline*",
        ]
    )
