"""``--xai-html``: one self-contained HTML file, rendered in a real headless browser; pytest-html extras."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REF = "pytest_xai.explainers"
QUIET = ("-p", "no:randomly")
SPECS = (f"--xai-explainer={REF}:exact_shapley", f"--xai-explainer={REF}:random")
FOUR = ("-k", "cough_and_fever or a_and_b_or_c or counterexample_dummy_axiom")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def assert_self_contained(text: str) -> None:
    """No network: nothing loaded from a URL (``tests/test_merge.py`` checks this under ``-n 2``)."""
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "the report loads something from the network"
    assert "<link" not in text and "<script src" not in text and "@import" not in text


def test_html_report_is_one_self_contained_file(pytester):
    html, report = pytester.path / "out" / "xai.html", pytester.path / "xai.json"
    result = pytester.runpytest(*QUIET, *FOUR, *SPECS, f"--xai-html={html}", f"--xai-report={report}")
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines([f"HTML report: {html}"])
    text = html.read_text()
    assert_self_contained(text)
    assert text.count("<tr data-family") == 8 and text.count('<svg class="chart"') == 4  # 2 explainers + front + bars
    for key in ("family", "category", "explainer", "status"):
        assert f'<select data-key="{key}">' in text
    assert re.search(r"Pareto front \(dashed, outlined\): [^<]*exact_shapley", text)
    doc = json.loads(report.read_text())
    assert f"<tr><td>seed</td><td>{doc['seed']}</td></tr>" in text and doc["versions"]["numpy"] in text


def test_pareto_front_keeps_the_explainers_nothing_beats():
    from pytest_xai.reports.htmlreport import pareto_front

    points = {"slow_best": (9.0, 1.0), "fast_good": (0.1, 0.9), "dominated": (1.0, 0.8), "fastest_bad": (0.01, 0.1)}
    assert pareto_front(points) == ["fastest_bad", "fast_good", "slow_best"]


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1400,1800",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on this machine: .ci/run installs Debian's chromium; locally `apt-get install chromium`",
)
def test_html_report_renders_in_headless_chromium(pytester, tmp_path):
    """The report of the README's main job when ``.ci/run`` names it (``XAI_HTML_REPORT``), else that
    of a small run: loaded in chromium, its script ran (rows counted, charts drawn) and the
    screenshot (``XAI_SCREENSHOT``, else a temporary file) shows the page, not a blank."""
    given = os.environ.get("XAI_HTML_REPORT")
    if given:
        html = Path(given).absolute()
    else:
        html = pytester.path / "xai.html"
        pytester.runpytest(*QUIET, *FOUR, *SPECS, f"--xai-html={html}", "--xai-baseline-tolerance=0.01")
    rows = html.read_text().count("<tr data-family")
    dom = _chromium("--dump-dom", html.as_uri())
    rendered = re.search(r'data-rendered="rows=(\d+) charts=(\d+) points=(\d+)"', dom.stdout)
    assert rendered, f"the page's script did not run in chromium: {dom.stderr[-2000:]}"
    assert int(rendered[1]) == rows > 0 and int(rendered[2]) >= 3 and int(rendered[3]) > 0
    assert f"{rows} of {rows} tests shown" in dom.stdout
    shot = Path(os.environ.get("XAI_SCREENSHOT") or tmp_path / "report.png").absolute()
    done = _chromium(f"--screenshot={shot}", html.as_uri())
    assert shot.exists(), done.stderr[-2000:]
    image = pytest.importorskip("matplotlib.image").imread(shot)[..., :3]
    assert image.shape[:2] == (1800, 1400)
    ink = (image < 0.9).any(axis=2)
    assert 0.02 < ink.mean() < 0.9, "the screenshot is blank (or all ink)"
    green = (image[..., 1] > 0.45) & (image[..., 0] < 0.3) & (image[..., 2] < 0.3)  # PASS text and points
    assert green.sum() > 50


def test_pytest_html_extras(pytester):
    pytest.importorskip("pytest_html")
    out = pytester.path / "pytest-html.html"
    result = pytester.runpytest(*QUIET, "-k", "cough_and_fever-", SPECS[0], f"--html={out}", "--self-contained-html")
    result.assert_outcomes(passed=1)
    text = out.read_text()
    assert "pytest-xai" in text and "exact_shapley" in text and "symmetric: importance" in text
