"""Reports that nothing breaks: writers guarded and in order, no string unwritable (issue 29)."""

from __future__ import annotations

import json

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
