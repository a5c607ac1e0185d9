"""``--xai-baseline`` / ``--xai-save-baseline``: a score that drops fails its test, with a diff table."""

from __future__ import annotations

import json

import pytest

from pytest_xai.reports import baseline

REF = "pytest_xai.explainers"
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
TABULAR = ("-k", "cough_and_fever or a_and_b_or_c")  # symmetry, ranking x2: the fast tabular tests
# The user's explainer: exact Shapley values plus seeded noise whose size is read from noise.txt,
# so that the test can make it worse between two runs, as a code change would.
MINE = """
from pathlib import Path

import numpy as np

from pytest_xai.explainers import exact_shapley


def explain(inputs, predict, background, target):
    exact = np.asarray(exact_shapley(inputs, predict, background, target))
    size = float(Path(__file__).with_name("noise.txt").read_text())
    return exact + size * np.abs(exact).mean() * np.random.default_rng(1).standard_normal(exact.shape)
"""


def _mine(pytester, noise: float) -> None:
    pytester.makepyfile(mine=MINE)
    (pytester.path / "noise.txt").write_text(str(noise))
    pytester.syspathinsert()


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "n2"])
def test_score_drop_fails_against_the_baseline(pytester, xdist):
    if xdist:
        pytest.importorskip("xdist")
    base, now = pytester.path / "baseline.json", pytester.path / "now.json"
    _mine(pytester, 0.0)
    saved = pytester.runpytest(*QUIET, *TABULAR, "--xai-explainer=mine:explain", f"--xai-save-baseline={base}")
    saved.assert_outcomes(passed=3)
    saved.stdout.fnmatch_lines([f"baseline saved: {base}"])
    (pytester.path / "noise.txt").write_text("0.05")  # symmetry 1.000 -> 0.972: still a PASS on its own
    args = (
        *QUIET,
        *TABULAR,
        "--xai-explainer=mine:explain",
        f"--xai-baseline={base}",
        "--xai-baseline-tolerance=0.01",
        f"--xai-report={now}",
    )
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run(*args, *(("-n", "2") if xdist else ()))
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            (
                "*symmetry on case 'cough_and_fever' regressed against the baseline*: score dropped from 1.000 "
                "(baseline) to 0.972 (now), by more than the tolerance 0.01*"
            ),
            "*xai baseline diff against*",
            "REGRESSION*symmetry[[]cough_and_fever[]] [[]explain[]]*PASS 1.000*FAIL 0.972*score dropped*",
            "1 regressed, 0 improved, 0 new, 0 not run, 2 unchanged",
        ]
    )
    doc = json.loads(now.read_text())
    saved_doc = json.loads(base.read_text())
    assert doc["baseline"]["seed"] == saved_doc["seed"] == 0
    assert doc["baseline"]["versions"] == saved_doc["versions"] and doc["baseline"]["changed_versions"] == {}
    (regression,) = doc["baseline"]["diff"]["regressions"]
    assert regression["row"] == "symmetry[cough_and_fever]" and regression["baseline"]["score"] == 1.0
    (rec,) = [r for r in doc["results"] if r["status"] == "FAIL"]
    assert "score dropped" in rec["regression"]
    if xdist:
        return
    # A per-check tolerance overrides the general one: the same drop is within 0.05 for symmetry.
    relaxed = pytester.runpytest(*args, "--xai-baseline-tolerance=symmetry=0.05")
    relaxed.assert_outcomes(passed=3)
    relaxed.stdout.fnmatch_lines(["0 regressed, 0 improved, 0 new, 0 not run, 3 unchanged"])


def test_improvements_new_vanished_seconds_and_versions(pytester):
    base = pytester.path / "baseline.json"
    spec = f"--xai-explainer={REF}:exact_shapley"
    pytester.runpytest(*QUIET, *TABULAR, spec, f"--xai-save-baseline={base}").assert_outcomes(passed=3)
    doc = json.loads(base.read_text())
    by_row = {r["row"]: r for r in doc["results"]}
    for rec in doc["results"]:  # milliseconds: a loaded machine must not make the others "slower beyond the factor"
        rec["seconds"] = 1e3
    by_row["ranking[a_and_b_or_c]"].update(status="FAIL", score=0.5)  # the baseline was worse: improved
    by_row["ranking[cough_and_fever_10_90]"]["seconds"] = 1e-9  # far faster then: slower beyond the factor
    doc["results"].remove(by_row["symmetry[cough_and_fever]"])  # new now
    doc["results"].append({**by_row["ranking[a_and_b_or_c]"], "row": "dummy[gone]", "nodeid": "x::dummy[gone]"})
    doc["versions"]["numpy"] = "0.0.1"
    base.write_text(json.dumps(doc))
    result = pytester.runpytest(*QUIET, *TABULAR, spec, f"--xai-baseline={base}", "--xai-baseline-seconds-factor=3")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*explainer seconds grew from 1e-09 (baseline) to * over the factor 3*",
            (
                "*BaselineWarning: baseline * was made with other library versions (numpy 0.0.1 -> *); scores are "
                "compared*"
            ),
            "REGRESSION*ranking[[]cough_and_fever_10_90[]]*explainer seconds grew*",
            "improved*ranking[[]a_and_b_or_c[]]*FAIL 0.500*PASS 1.000*verdict FAIL in the baseline, PASS now*",
            "new*symmetry[[]cough_and_fever[]]*not in the baseline",
            "not run now, in the baseline: dummy[[]gone[]] [[]exact_shapley[]]",
            "1 regressed, 1 improved, 1 new, 1 not run, 0 unchanged",
        ]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--xai-baseline=missing.json",), "--xai-baseline=missing.json: no such file; write one with --xai-save-*"),
        (("--xai-baseline=bad.json",), "--xai-baseline=bad.json: not JSON (line 1*"),
        (("--xai-baseline=other.json",), "--xai-baseline=other.json: not a pytest-xai JSON report*"),
        (("--xai-baseline=ok.json", "--xai-baseline-tolerance=symetry=0.1"), "*no check named 'symetry'*"),
        (("--xai-baseline=ok.json", "--xai-baseline-tolerance=2"), "*scores are in [[]0, 1[]]*"),
        (("--xai-baseline-seconds-factor=0.5",), "*give a finite factor >= 1*"),
    ],
)
def test_bad_baseline_options_are_usage_errors(pytester, args, message):
    (pytester.path / "bad.json").write_text("{not json")
    (pytester.path / "other.json").write_text('{"results": []}')
    (pytester.path / "ok.json").write_text('{"schema": "pytest-xai/report", "version": 1, "results": []}')
    result = pytester.runpytest(*QUIET, f"--xai-explainer={REF}:exact_shapley", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])
    assert "Traceback" not in result.stderr.str()


FAILING = """
def test_fails(xai_explainer):
    assert False, "a failure the baseline lists"
"""


def _nan_baseline(path, score: str) -> None:
    row = {"nodeid": "test_fails.py::test_fails[exact_shapley]", "row": "test_fails.py::test_fails"}
    path.write_text(
        '{"schema": "pytest-xai/report", "version": 1, "results": ['
        + json.dumps({**row, "explainer": "exact_shapley", "status": "FAIL", "score": 0.5})[:-1]
        + f', "row": "other"}}, {json.dumps({**row, "explainer": "exact_shapley", "status": "FAIL"})[:-1]}'
        + f', "score": {score}}}]}}'
    )


@pytest.mark.parametrize("score", ['"nan"', '"inf"', '"-inf"', "NaN", "-Infinity"])
def test_a_baseline_with_a_non_finite_score_is_refused_in_one_line(tmp_path, score):
    """Issue 41: a baseline whose failing scores were "nan" made every failure a known failure (no
    score drop compares with nan): such a baseline is refused, naming the field."""
    _nan_baseline(tmp_path / "b.json", score)
    with pytest.raises(baseline.BaselineError) as refused:
        baseline.Gate(str(tmp_path / "b.json"), {})
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"--xai-baseline={tmp_path / 'b.json'}: results[1].score: ")
    assert "not a finite score" in message and "--xai-save-baseline" in message


def test_a_nan_baseline_is_a_usage_error_not_a_green_regression_gate(pytester):
    """Before: exit 0, the failure a KNOWN one against a baseline score of "nan"."""
    pytester.makepyfile(test_fails=FAILING)
    _nan_baseline(pytester.path / "b.json", '"nan"')
    result = pytester.runpytest(
        *QUIET,
        "test_fails.py",
        "--xai-no-suite",
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-baseline=b.json",
        "--xai-gate=regression",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--xai-baseline=b.json: results[[]1[]].score: 'nan' is not a finite score*"])
