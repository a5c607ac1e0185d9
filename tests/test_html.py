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


# The comparison at four explainers (issue 44): one colour per explainer, PASS/FAIL by marker shape,
# shared axes, every label inside its chart, a missing bar marked "not run".

FOUR_EXPLAINERS = {  # explainer: (seconds of its tests, statuses), on two categories
    "exact_shapley": ((0.002, 0.004, 0.01), ("PASS", "PASS", "FAIL")),
    "shap_kernel": ((1.0, 161.0, 303.0), ("PASS", "FAIL", "PASS")),
    "lime_tabular": ((0.5, 2.0, 20.0), ("FAIL", "PASS", "ERROR")),
    "random": ((0.0, 0.0, 0.0), ("FAIL", "FAIL", "FAIL")),
}


def _doc(explainers: dict[str, tuple[tuple[float, ...], tuple[str, ...]]]) -> dict:
    """A report of ``explainers``: three fidelity tests each and one stress test, which
    ``exact_shapley`` skips (its stress bar is not run) and the others score 0 on."""
    from pytest_xai.reports.record import Record
    from pytest_xai.reports.report import summary

    records = []
    for e, (seconds, statuses) in explainers.items():
        for i, (s, status) in enumerate(zip(seconds, statuses)):
            score = {"PASS": 0.9 - 0.1 * i, "FAIL": 0.3 + 0.1 * i, "ERROR": 0.0}[status]
            records.append(Record(f"t::c[{i}-{e}]", f"c[{i}]", explainer=e, status=status, score=score, seconds=s))
            records[-1].category = "fidelity"
        skip = e == "exact_shapley"
        records.append(
            Record(
                f"t::s[0-{e}]",
                "s[0]",
                explainer=e,
                category="stress",
                status="SKIP" if skip else "FAIL",
                score=None if skip else 0.0,
                seconds=None if skip else 1.0,
            )
        )
    return {"results": [r.to_dict() for r in records], "summary": summary(records), "seed": 0}


def _charts(doc: dict) -> list:
    from xml.etree import ElementTree

    from pytest_xai.reports.htmlreport import render

    return [ElementTree.fromstring(svg) for svg in re.findall(r'<svg class="chart".*?</svg>', render(doc), re.DOTALL)]


SVG = "{http://www.w3.org/2000/svg}"


def _marks(svg) -> list:
    """The chart's marks: the elements with a tooltip (``<title>``), but not texts."""
    return [e for e in svg.iter() if e.find(f"{SVG}title") is not None and e.tag != f"{SVG}text"]


def _tooltip(mark) -> str:
    return mark.find(f"{SVG}title").text


def _colours_by_explainer(svg, explainers) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mark in _marks(svg):
        e = next(e for e in explainers if _tooltip(mark).startswith(e) or f"[{e}]" in _tooltip(mark))
        out.setdefault(e, set()).add(_ink(mark))
    return out


def _ink(mark) -> str:
    """A mark's colour: its fill, or its stroke if it is drawn hollow."""
    return mark.get("fill") if mark.get("fill") not in (None, "none") else mark.get("stroke")


def test_each_explainer_has_one_colour_in_every_chart():
    """PASS and FAIL once filled the scatter's points green and red, the colours of two explainers."""
    charts = _charts(_doc(FOUR_EXPLAINERS))
    scatters, pareto, bars = charts[:4], charts[4], charts[5]
    colours = {e: c for e, c in _colours_by_explainer(pareto, FOUR_EXPLAINERS).items()}
    assert all(len(c) == 1 for c in colours.values()) and len(set.union(*colours.values())) == 4, colours
    for e, scatter in zip(FOUR_EXPLAINERS, scatters):
        assert {_ink(m) for m in _marks(scatter)} == colours[e]
    for e, used in _colours_by_explainer(bars, FOUR_EXPLAINERS).items():
        assert used == colours[e], e


def _shape(mark) -> tuple:
    return (mark.tag, mark.get("r"), mark.get("d") and re.sub(r"[-\d.]+", "#", mark.get("d")))


def test_pass_and_fail_differ_by_marker_shape():
    for svg in _charts(_doc(FOUR_EXPLAINERS))[:4]:
        shapes: dict[str, set] = {}
        for mark in _marks(svg):
            shapes.setdefault(_tooltip(mark).split(": ")[1].split()[0], set()).add(_shape(mark))
        assert all(len(s) == 1 for s in shapes.values()), shapes
        assert len({frozenset(s) for s in shapes.values()}) == len(shapes), shapes


def _x_ticks(svg) -> list[str]:
    return [t.text for t in svg.iter(f"{SVG}text") if t.get("y") == "217"]


def test_the_score_charts_share_their_seconds_axis():
    """Each scatter had its own range (0.001-0.01 s beside 1-1000 s), so no two could be compared by eye."""
    charts = _charts(_doc(FOUR_EXPLAINERS))
    ticks = [_x_ticks(svg) for svg in charts[:5]]
    assert ticks[0] and all(t == ticks[0] for t in ticks), ticks
    assert ticks[0][0] == "0.0001" and ticks[0][-1] == "1000"


def _text_box(text) -> tuple[float, float, float, float]:
    """A text element's box, by the chart labels' estimate of its width; rotated ones turned."""
    from pytest_xai.reports import chartlabels

    font = float(text.get("font-size"))
    x, y = float(text.get("x")), float(text.get("y"))
    content = "".join(text.itertext()) if text.find(f"{SVG}title") is None else text.text or ""
    w = chartlabels.CHAR_WIDTH * font * len(content)
    box = chartlabels.label_box(x, y, w, font, text.get("text-anchor", "start"))
    rotate = re.fullmatch(r"rotate\(-90 ([-\d.]+) ([-\d.]+)\)", text.get("transform") or "")
    if rotate:  # a quarter turn anticlockwise about (cx, cy)
        cx, cy = float(rotate[1]), float(rotate[2])
        corners = [(cx + (py - cy), cy - (px - cx)) for px in box[::2] for py in box[1::2]]
        box = (
            min(p[0] for p in corners),
            min(p[1] for p in corners),
            max(p[0] for p in corners),
            max(p[1] for p in corners),
        )
    return box


CROWDED = {  # nine explainers at the same speed and score, names as long as users write them
    name: ((0.05, 0.05, 0.05), ("PASS", "PASS", "FAIL"))
    for name in (
        "integrated_gradients_with_smoothgrad_noise_tunnel",
        "my_explainers_module_with_a_long_name:shap_permutation_explainer",
        "llm_integrated_gradients",
        "feature_occlusion",
        "shap_kernel_on_a_summarised_background",
        "lime_tabular",
        "deep_lift_shap",
        "exact_shapley",
        "random",
    )
}


@pytest.mark.parametrize("explainers", [FOUR_EXPLAINERS, CROWDED], ids=["four", "crowded"])
def test_every_label_is_inside_its_chart(explainers):
    for svg in _charts(_doc(explainers)):
        _, _, width, height = map(float, svg.get("viewBox").split())
        for text in svg.iter(f"{SVG}text"):
            left, top, right, bottom = _text_box(text)
            assert 0 <= left and right <= width and 0 <= top and bottom <= height, (text.text, svg.get("aria-label"))


def test_a_bar_not_run_says_so_and_a_zero_bar_shows():
    """An explainer that ran no test of a category drew nothing, as a mean score of 0 did."""
    bars = _charts(_doc(FOUR_EXPLAINERS))[5]
    missing = [t for t in bars.iter(f"{SVG}text") if (t.text or "").strip() == "not run"]
    assert [_tooltip(t) for t in missing] == ["exact_shapley, stress: not run (1 skipped, 0 timed out)"]
    zeros = [m for m in _marks(bars) if ", stress: mean score 0.000" in _tooltip(m)]
    assert len(zeros) == 3 and all(float(m.get("height")) >= 1 for m in zeros)
