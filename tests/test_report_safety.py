"""Reports that nothing breaks: writers guarded and in order, no string unwritable (issue 29)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pytest_xai.reports.files import REPORT_FAILED
from tests.test_html import CHROMIUM, _chromium
from tests.test_plugin import REF, hostile, run

TOY = ("-k", "symmetry and cough_and_fever and not 10_90")


def test_a_lone_surrogate_in_an_error_loses_no_report(pytester):
    """The HTML report used to be written first, unguarded, and raise UnicodeEncodeError: no JSON,
    no HTML, no table."""
    out = pytester.path / "out"
    result = run(
        pytester,
        *TOY,
        hostile("raises_lone_surrogate"),
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={out / 'r.json'}",
        f"--xai-html={out / 'r.html'}",
        tabular=False,
    )
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
    pytester.makepyfile(
        test_breaks=f"""
        import os

        def test_passes_and_takes_the_html_path(xai_explainer):
            os.makedirs({str(out / "r.html")!r})
    """
    )
    result = run(
        pytester,
        "test_breaks.py",
        "-k",
        f"passes_and_takes or ({TOY[1]})",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={out / 'r.json'}",
        f"--xai-save-baseline={out / 'b.json'}",
        f"--xai-html={out / 'r.html'}",
        tabular=False,
    )
    result.assert_outcomes(passed=2)
    assert result.ret == REPORT_FAILED
    assert f"could not write the HTML report {out / 'r.html'}: IsADirectoryError" in result.stderr.str()
    for name in ("r.json", "b.json"):
        assert [r["status"] for r in json.loads((out / name).read_text())["results"]] == ["PASS", "PASS"]
    result.stdout.fnmatch_lines(["*xai scores*"])


# ------------------------------------------------------------------ one schema, checked at load

GOOD = {
    "nodeid": "xai_suite.py::symmetry[cough_and_fever-exact_shapley]",
    "row": "symmetry[cough_and_fever]",
    "explainer": "exact_shapley",
    "status": "PASS",
    "score": 1.0,
    "seconds": 0.01,
}
HOSTILE_REPORTS = [  # (what is wrong, the report's fields, the field the error names)
    ("row is a number", {"results": [{**GOOD, "row": 5}]}, "results[0].row: expected a string or null, got int 5"),
    (
        "row and nodeid null",
        {"results": [{**GOOD, "row": None, "nodeid": None}]},
        "results[0].nodeid: expected a string, got null",
    ),
    ("explainer null", {"results": [GOOD, {**GOOD, "explainer": None}]}, "results[1].explainer: expected a string"),
    ("a result is a string", {"results": ["PASS"]}, "results[0]: expected an object, got str"),
    ("versions a list", {"versions": ["numpy"], "results": [GOOD]}, "report.versions: expected an object of strings"),
    (
        "nested 40 deep",
        {
            "options": {"x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
            "results": [],
        },
        "nested deeper than 32 levels",
    ),
    ("a score is text", {"results": [{**GOOD, "score": "<script>"}]}, "results[0].score: expected a number"),
    (
        "summary passed is text",
        {"summary": {"e": {"overall": {"passed": "<b>", "ran": 1}}}, "results": []},
        "summary.e.overall.passed: expected an integer, got str",
    ),
]


def _hostile_report(path, fields) -> None:
    path.write_text(json.dumps({"schema": "pytest-xai/report", "version": 1, **fields}))


@pytest.mark.parametrize(
    ("fields", "field"), [case[1:] for case in HOSTILE_REPORTS], ids=[case[0] for case in HOSTILE_REPORTS]
)
def test_a_wrong_baseline_is_a_usage_error_naming_file_and_field(pytester, fields, field):
    """Before: a TypeError sorting the diff at the end (every report lost) or an INTERNALERROR."""
    _hostile_report(pytester.path / "base.json", fields)
    result = run(
        pytester,
        *TOY,
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-baseline=base.json",
        "--xai-report=r.json",
        tabular=False,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line]
    assert line.startswith(f"ERROR: --xai-baseline=base.json: {field}") and "; write one with --xai-save-" in line


def test_a_baseline_nested_beyond_the_parsers_limit_is_a_usage_error(pytester):
    (pytester.path / "base.json").write_text(
        '{"schema": "pytest-xai/report", "version": 1, "results": ' + "[" * 100_000 + "]" * 100_000 + "}"
    )
    result = run(pytester, *TOY, f"--xai-explainer={REF}:exact_shapley", "--xai-baseline=base.json", tabular=False)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --xai-baseline=base.json: nested too deeply to be a report*"])


@pytest.mark.parametrize("command", ["html", "merge"])
@pytest.mark.parametrize(
    ("fields", "field"), [case[1:] for case in HOSTILE_REPORTS], ids=[case[0] for case in HOSTILE_REPORTS]
)
def test_merge_and_html_refuse_a_wrong_report_in_one_line(tmp_path, capsys, command, fields, field):
    """Before: a traceback (TypeError, AttributeError) from merging or rendering."""
    from pytest_xai.__main__ import main

    bad = tmp_path / "bad.json"
    _hostile_report(bad, fields)
    args = (
        ["html", str(bad), "-o", str(tmp_path / "r.html")]
        if command == "html"
        else ["merge", str(bad), "-o", str(tmp_path / "all.json"), "--html", str(tmp_path / "r.html")]
    )
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"pytest_xai {command}: {bad}: {field}"), err
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "all.json").exists()


# --------------------------------------------------- HTML of a report from elsewhere: inert, no files

XSS = "<img src=x onerror=\"document.body.setAttribute('data-pwned', 'yes' + 1)\">"
CLOSE = "</title></text></svg><script>document.body.setAttribute('data-pwned', 'yes' + 2)</script>"
ATTR = "\" onmouseover=\"document.body.setAttribute('data-pwned', 'yes' + 3)\" x=\""


def _png(path) -> bytes:
    import numpy as np

    pytest.importorskip("matplotlib.image").imsave(path, np.eye(4))
    return path.read_bytes()


def _hostile_doc(tmp_path) -> dict:
    """A report a fork's pull request could upload: markup in every string, pictures that point
    outside, a link, a FIFO, and non-PNG data; two real PNGs (one a file in the report's pictures
    folder, one carried as data) are the ones to show."""
    import base64

    pictures = tmp_path / "hostile-pictures"
    pictures.mkdir()
    png = _png(pictures / "ok.png")
    (pictures / "evil.png").symlink_to("/etc/passwd")
    os.mkfifo(pictures / "fifo.png")
    result = {
        "row": CLOSE,
        "explainer": XSS,
        "case": ATTR,
        "family": ATTR,
        "category": CLOSE,
        "check": XSS,
        "status": CLOSE,
        "kind": XSS,
        "detail": CLOSE,
        "error": XSS,
        "regression": None,
        "score": 0.5,
        "threshold": 0.9,
        "seconds": 0.2,
        "passed": False,
    }
    shown = {
        "/elsewhere/ok.png": f"n0{XSS}",
        "/etc/passwd": "n1",
        "../../../../etc/passwd": "n2",
        "evil.png": "n3",
        "fifo.png": "n4",
    }
    results = [{**result, "nodeid": nodeid, "picture": picture} for picture, nodeid in shown.items()]
    results += [
        {**result, "nodeid": nodeid, "status": status} for nodeid, status in (("n5", "PASS"), (f"n6{CLOSE}", "FAIL"))
    ]
    agg = {
        "tests": 7,
        "ran": 7,
        "skipped": 0,
        "passed": 1,
        "errors": 0,
        "timeouts": 0,
        "mean_score": 0.5,
        "mean_seconds": 0.2,
    }
    passwd = base64.b64encode(Path("/etc/passwd").read_bytes()).decode()
    return {
        "schema": "pytest-xai/report",
        "version": 1,
        "created": CLOSE,
        "seed": 0,
        "exitstatus": 1,
        "versions": {XSS: CLOSE},
        "machine": {CLOSE: XSS},
        "options": {"explainers": [XSS], "timeout": CLOSE},
        "summary": {XSS: {"overall": agg, "categories": {CLOSE: dict(agg)}}},
        "results": results,
        "shards": [{"path": CLOSE}],
        "merge_mismatches": [XSS],
        "pictures": {"n5": passwd, f"n6{CLOSE}": base64.b64encode(png).decode()},
        "baseline": {
            "path": XSS,
            "created": CLOSE,
            "seed": 0,
            "changed_versions": {XSS: [CLOSE, XSS]},
            "diff": {
                "regressions": [
                    {
                        "row": CLOSE,
                        "explainer": XSS,
                        "reasons": [CLOSE],
                        "baseline": {"status": XSS, "score": 1.0},
                        "now": {"status": CLOSE, "score": 0.5},
                    }
                ],
                "improvements": [],
                "new": [],
                "vanished": [],
                "unchanged": 0,
            },
        },
    }


def _embedded(text: str) -> list[bytes]:
    import base64
    import re

    return [base64.b64decode(m) for m in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]*)", text)]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: `apt-get install chromium`")
def test_html_of_a_hostile_report_runs_no_script_and_shows_no_outside_file(tmp_path):
    """Rendered by ``html`` and by ``merge --html`` (from another folder, so pictures travel as
    data), then loaded in headless chromium: our script ran, theirs did not, and the only pictures
    are the two PNGs that belong to the report.  Before: the status closed the SVG title and its
    script ran, and /etc/passwd came out as base64."""
    import subprocess
    import sys

    doc = _hostile_doc(tmp_path)
    source = tmp_path / "hostile.json"
    source.write_text(json.dumps(doc))
    merged = tmp_path / "merged"
    merged.mkdir()
    commands = {
        "html": ["html", str(source), "-o", str(tmp_path / "one.html")],
        "merge": ["merge", str(source), "-o", str(merged / "all.json"), "--html", str(merged / "all.html")],
    }
    for name, args in commands.items():
        done = subprocess.run(
            [sys.executable, "-m", "pytest_xai", *args], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, (name, done.stderr)
    passwd = Path("/etc/passwd").read_bytes()
    for html in (tmp_path / "one.html", merged / "all.html"):
        text = html.read_text(encoding="utf-8")
        pictures = _embedded(text)
        assert len(pictures) == 2 and all(p.startswith(b"\x89PNG") for p in pictures), html
        assert passwd[:20] not in b"".join(pictures)
        dom = _chromium("--dump-dom", html.as_uri())
        assert re.search(r'data-rendered="rows=7 charts=\d+ points=\d+"', dom.stdout), dom.stderr[-2000:]
        assert "yes1" not in dom.stdout and "yes2" not in dom.stdout and "yes3" not in dom.stdout, html
        assert "<title>pytest-xai report</title>" in dom.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: `apt-get install chromium`")
def test_the_html_writer_escapes_even_a_report_that_skipped_validation(tmp_path):
    """``htmlreport.write`` called directly (a user's script) with the wrong types the schema refuses:
    counts that are markup render as ``?``, no script runs."""
    from pytest_xai.reports import htmlreport

    doc = _hostile_doc(tmp_path)
    doc["summary"][XSS]["overall"]["passed"] = CLOSE
    doc["summary"][XSS]["categories"][CLOSE]["ran"] = CLOSE
    doc["results"][0]["repeat"] = {"std": CLOSE}
    html = tmp_path / "direct.html"
    htmlreport.write(html, doc)
    dom = _chromium("--dump-dom", html.as_uri())
    assert "data-rendered" in dom.stdout and "yes" not in re.sub(r"'yes' \+ \d", "", dom.stdout)
    assert "?/7" in dom.stdout and "1/?" in dom.stdout
