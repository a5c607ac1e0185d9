"""Reports that nothing breaks: writers guarded and in order, no string unwritable (issue 29)."""

from __future__ import annotations

import json

import pytest

from pytest_xai.files import REPORT_FAILED
from tests.test_plugin import REF, hostile, run

TOY = ("-k", "symmetry and cough_and_fever and not 10_90")


def test_a_lone_surrogate_in_an_error_loses_no_report(pytester):
    """The HTML report used to be written first, unguarded, and raise UnicodeEncodeError: no JSON,
    no HTML, no table."""
    out = pytester.path / "out"
    result = run(pytester, *TOY, hostile("raises_lone_surrogate"), f"--xai-explainer={REF}:exact_shapley",
                 f"--xai-report={out / 'r.json'}", f"--xai-html={out / 'r.html'}", tabular=False)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    doc = json.loads((out / "r.json").read_text(encoding="utf-8"))
    error = next(r for r in doc["results"] if r["explainer"] == "raises_lone_surrogate")["error"]
    assert "\ud800" in error  # JSON escapes it: read back exactly
    html = (out / "r.html").read_text(encoding="utf-8")
    assert "bad \\ud800 half" in html and "<script>document.title" not in html
    result.stdout.fnmatch_lines(["*xai scores*", "symmetry*cough_and_fever*ERROR*PASS*"])


def test_a_writer_that_fails_does_not_stop_the_others_and_the_exit_code_says_so(pytester):
    """The HTML path became a directory during the run: the JSON report and the baseline are still
    written (first), the failure is named, and the run exits REPORT_FAILED although every test passed."""
    out = pytester.path / "out"
    pytester.makepyfile(test_breaks=f"""
        import os

        def test_passes_and_takes_the_html_path(xai_explainer):
            os.makedirs({str(out / 'r.html')!r})
    """)
    result = run(pytester, "test_breaks.py", "-k", f"passes_and_takes or ({TOY[1]})", f"--xai-explainer={REF}:exact_shapley",
                 f"--xai-report={out / 'r.json'}", f"--xai-save-baseline={out / 'b.json'}",
                 f"--xai-html={out / 'r.html'}", tabular=False)
    result.assert_outcomes(passed=2)
    assert result.ret == REPORT_FAILED
    assert f"could not write the HTML report {out / 'r.html'}: IsADirectoryError" in result.stderr.str()
    for name in ("r.json", "b.json"):
        assert [r["status"] for r in json.loads((out / name).read_text())["results"]] == ["PASS", "PASS"]
    result.stdout.fnmatch_lines(["*xai scores*"])


# ------------------------------------------------------------------ one schema, checked at load

GOOD = {"nodeid": "xai_suite.py::symmetry[cough_and_fever-exact_shapley]", "row": "symmetry[cough_and_fever]",
        "explainer": "exact_shapley", "status": "PASS", "score": 1.0, "seconds": 0.01}
HOSTILE_REPORTS = [  # (what is wrong, the report's fields, the field the error names)
    ("row is a number", {"results": [{**GOOD, "row": 5}]}, "results[0].row: expected a string or null, got int 5"),
    ("row and nodeid null", {"results": [{**GOOD, "row": None, "nodeid": None}]},
     "results[0].nodeid: expected a string, got null"),
    ("explainer null", {"results": [GOOD, {**GOOD, "explainer": None}]}, "results[1].explainer: expected a string"),
    ("a result is a string", {"results": ["PASS"]}, "results[0]: expected an object, got str"),
    ("versions a list", {"versions": ["numpy"], "results": [GOOD]}, "report.versions: expected an object of strings"),
    ("nested 40 deep", {"options": {"x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
                        "results": []}, "nested deeper than 32 levels"),
    ("a score is text", {"results": [{**GOOD, "score": "<script>"}]}, "results[0].score: expected a number"),
    ("summary passed is text", {"summary": {"e": {"overall": {"passed": "<b>", "ran": 1}}}, "results": []},
     "summary.e.overall.passed: expected an integer, got str"),
]


def _hostile_report(path, fields) -> None:
    path.write_text(json.dumps({"schema": "pytest-xai/report", "version": 1, **fields}))


@pytest.mark.parametrize(("fields", "field"), [case[1:] for case in HOSTILE_REPORTS],
                         ids=[case[0] for case in HOSTILE_REPORTS])
def test_a_wrong_baseline_is_a_usage_error_naming_file_and_field(pytester, fields, field):
    """Before: a TypeError sorting the diff at the end (every report lost) or an INTERNALERROR."""
    _hostile_report(pytester.path / "base.json", fields)
    result = run(pytester, *TOY, f"--xai-explainer={REF}:exact_shapley", "--xai-baseline=base.json",
                 "--xai-report=r.json", tabular=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line]
    assert line.startswith(f"ERROR: --xai-baseline=base.json: {field}") and "; write one with --xai-save-" in line


def test_a_baseline_nested_beyond_the_parsers_limit_is_a_usage_error(pytester):
    (pytester.path / "base.json").write_text('{"schema": "pytest-xai/report", "version": 1, "results": '
                                             + "[" * 100_000 + "]" * 100_000 + "}")
    result = run(pytester, *TOY, f"--xai-explainer={REF}:exact_shapley", "--xai-baseline=base.json", tabular=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --xai-baseline=base.json: nested too deeply to be a report*"])


@pytest.mark.parametrize("command", ["html", "merge"])
@pytest.mark.parametrize(("fields", "field"), [case[1:] for case in HOSTILE_REPORTS],
                         ids=[case[0] for case in HOSTILE_REPORTS])
def test_merge_and_html_refuse_a_wrong_report_in_one_line(tmp_path, capsys, command, fields, field):
    """Before: a traceback (TypeError, AttributeError) from merging or rendering."""
    from pytest_xai.__main__ import main

    bad = tmp_path / "bad.json"
    _hostile_report(bad, fields)
    args = ["html", str(bad), "-o", str(tmp_path / "r.html")] if command == "html" else [
        "merge", str(bad), "-o", str(tmp_path / "all.json"), "--html", str(tmp_path / "r.html")]
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"pytest_xai {command}: {bad}: {field}"), err
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "all.json").exists()
