"""The HTML report (``--xai-html``, ``python -m pytest_xai html``): one self-contained file.

Pure Python, no pytest, no plotting library: the charts are inline SVG drawn here, the pictures of
worst examples are embedded as base64 PNG, and a few lines of inline script filter the table.  The
file loads nothing from the network.  It is rendered from a JSON report (``pytest_xai.reports.report``).
"""

from __future__ import annotations

import base64
import math
import os
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from pytest_xai.engine.evaluations import compact
from pytest_xai.reports.record import Record
from pytest_xai.reports.record import records as records_of

# One colour per explainer, in every chart: matplotlib's tab10 without the red and green the table
# gives FAIL and PASS.  A verdict is a marker's shape (:func:`_marker`), never its colour.
COLOURS = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MARKERS = "&#9679; PASS, &#10005; FAIL, &#9633; ERROR/TIMEOUT"  # the legend of :func:`_marker`

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em;margin:0 0 .3em} h2{font-size:1.15em;margin:1.4em 0 .5em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em} td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.PASS{color:#1a7f1a;font-weight:600}.FAIL,.ERROR{color:#c00;font-weight:600}.TIMEOUT{color:#c60}.SKIP{color:#888}
.flaky{background:#fff3cd;color:#7a5a00;padding:0 3px;border-radius:3px;font-weight:600}
.facts{display:flex;flex-wrap:wrap;gap:1.5em}.facts table{margin-top:.3em}
.charts{display:flex;flex-wrap:wrap;gap:1em} figure{margin:0} .charts figure{width:360px}
figcaption{font-size:.8em;color:#555} .legend{white-space:nowrap}
.filters{margin:.5em 0;display:flex;gap:1em;flex-wrap:wrap;font-size:.9em}
.pictures{display:flex;flex-wrap:wrap;gap:1em}.pictures img{max-width:420px;border:1px solid #ddd}
td.detail{max-width:40em;min-width:16em;font-size:.9em;color:#444;overflow-wrap:anywhere}
.wide{overflow-x:auto;max-width:100%} th small{font-weight:normal;color:#666;display:block}
"""

SCRIPT = """
(function(){
  var rows = Array.prototype.slice.call(document.querySelectorAll('#scores tbody tr'));
  var selects = Array.prototype.slice.call(document.querySelectorAll('.filters select'));
  var text = document.getElementById('f-text'), count = document.getElementById('shown');
  function apply(){
    var shown = 0, q = text.value.toLowerCase();
    rows.forEach(function(r){
      var ok = selects.every(function(s){ return !s.value || r.dataset[s.dataset.key] === s.value; });
      ok = ok && (!q || r.textContent.toLowerCase().indexOf(q) >= 0);
      r.style.display = ok ? '' : 'none'; if (ok) shown++;
    });
    count.textContent = shown + ' of ' + rows.length + ' tests shown';
  }
  selects.forEach(function(s){ s.addEventListener('change', apply); });
  text.addEventListener('input', apply);
  apply();
  document.body.dataset.rendered = 'rows=' + rows.length + ' charts=' + document.querySelectorAll('svg.chart').length
    + ' points=' + document.querySelectorAll('svg.chart .mark').length;
})();
"""


SUMMARY_COLUMNS = (
    "explainer",
    "passed/judged",
    "mean score",
    "mean evaluations/call",
    "mean CPU s/call",
    "mean wall s/call",
    "skipped",
    "timeouts",
)


def _fmt(value: Any, digits: int = 3) -> str:
    """A number as text; anything else (a report from elsewhere may hold anything) as nothing."""
    return "" if not isinstance(value, (int, float)) or isinstance(value, bool) else f"{value:.{digits}f}"


def _evaluations(value: Any) -> str:
    """A cell of model evaluations: compact (4.1k), the exact number on hover; nothing for a non-number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return '<td class="num"></td>'
    return f'<td class="num" title="{value:,.0f}">{escape(compact(value))}</td>'


def _summary_row(explainer: str, agg: Mapping[str, Any]) -> list[str]:
    """One explainer's row of the summary table (:data:`SUMMARY_COLUMNS`), cells escaped."""
    texts = [
        escape(v)
        for v in (explainer, f"{_count(agg.get('passed'))}/{_count(_judged(agg))}", _fmt(agg.get("mean_score")))
    ]
    return [
        *texts,
        _evaluations(agg.get("mean_evaluations")),
        f'<td class="num">{_fmt(agg.get("mean_cpu_seconds"), 3)}</td>',
        f'<td class="num">{_fmt(agg.get("mean_seconds"), 3)}</td>',
        _count(agg.get("skipped")),
        _count(agg.get("timeouts")),
    ]


def _count(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "?"


def _judged(agg: Mapping[str, Any]) -> int | None:
    ran, timeouts = agg.get("ran"), agg.get("timeouts")
    return ran - timeouts if isinstance(ran, int) and isinstance(timeouts, int) else None


def _table(header: Iterable[str], rows: Iterable[Iterable[str]], attrs: str = "") -> str:
    """Rows are lists of already-escaped cell HTML."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(cell if cell.startswith("<td") else f"<td>{cell}</td>" for cell in row) + "</tr>"
        for row in rows
    )
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _colour(explainers: list[str], name: str) -> str:
    return COLOURS[explainers.index(name) % len(COLOURS)]


class _Axes:
    """The charts' coordinate system: seconds on a log scale (x), score in [0, 1] (y), one for every
    chart of a report so that they compare by eye."""

    W, H, L, R, T, B = 360, 240, 46, 12, 14, 36
    PAD = 6  # a point at either end of the seconds axis clear of the frame and the score ticks

    def __init__(self, seconds: list[float]):
        logs = [math.log10(max(s, 1e-4)) for s in seconds] or [0.0]
        self.lo, self.hi = math.floor(min(logs)), math.ceil(max(logs))
        if self.hi <= self.lo:
            self.hi = self.lo + 1

    def x(self, seconds: float) -> float:
        frac = (math.log10(max(seconds, 1e-4)) - self.lo) / (self.hi - self.lo)
        return self.L + self.PAD + frac * (self.W - self.L - self.R - 2 * self.PAD)

    def y(self, score: float) -> float:
        return self.T + (1 - min(max(score, 0.0), 1.0)) * (self.H - self.T - self.B)

    def frame(self, title: str) -> list[str]:
        out = [
            (
                f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{self.W}" height="{self.H}" '
                f'viewBox="0 0 {self.W} {self.H}" role="img" aria-label="{escape(title)}">'
            ),
            (
                f'<rect x="{self.L}" y="{self.T}" width="{self.W - self.L - self.R}" '
                f'height="{self.H - self.T - self.B}" fill="#fafafa" stroke="#ccc"/>'
            ),
        ]
        for score in (0, 0.5, 1):
            y = self.y(score)
            out.append(
                f'<line x1="{self.L}" x2="{self.W - self.R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>'
                f'<text x="{self.L - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{score:g}</text>'
            )
        for power in range(self.lo, self.hi + 1):
            x = self.x(10.0**power)
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.T}" y2="{self.H - self.B}" stroke="#e4e4e4"/>'
                f'<text x="{x:.1f}" y="{self.H - self.B + 13}" font-size="10" text-anchor="middle">'
                f"{10.0**power:g}</text>"
            )
        out.append(
            f'<text x="{(self.L + self.W) / 2:.0f}" y="{self.H - 6}" font-size="11" text-anchor="middle">'
            f'explainer seconds (log scale)</text><text x="12" y="{(self.H) / 2:.0f}" font-size="11" '
            f'text-anchor="middle" transform="rotate(-90 12 {(self.H) / 2:.0f})">score</text>'
        )
        return out


def _marker(status: str | None, x: float, y: float, colour: str, tooltip: str) -> str:
    """A point in the explainer's ``colour``, its verdict in its shape: a disc PASS, a cross FAIL, a
    hollow square anything else (ERROR, TIMEOUT)."""
    title = f"<title>{tooltip}</title>"
    if status == "PASS":
        return (
            f'<circle class="mark" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}" fill-opacity="0.8">{title}</circle>'
        )
    if status == "FAIL":
        return (
            f'<path class="mark" d="M{x - 4:.1f},{y - 4:.1f}L{x + 4:.1f},{y + 4:.1f}M{x - 4:.1f},{y + 4:.1f}'
            f'L{x + 4:.1f},{y - 4:.1f}" fill="none" stroke="{colour}" stroke-width="2">{title}</path>'
        )
    return (
        f'<rect class="mark" x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="none" stroke="{colour}" '
        f'stroke-width="1.5">{title}</rect>'
    )


def score_seconds_chart(records: list[Record], explainer: str, colour: str, axes: _Axes) -> str:
    """Each test of ``explainer`` a point: its score against its explainer's seconds."""
    points = [
        (r, float(r.score), float(r.seconds))
        for r in records
        if r.explainer == explainer and isinstance(r.score, (int, float)) and isinstance(r.seconds, (int, float))
    ]
    out = axes.frame(f"score against seconds, {explainer}")
    for r, score, seconds in points:
        tooltip = f"{escape(r.row or '')}: {escape(str(r.status))} {score:.3f} in {seconds:.3g} s"
        out.append(_marker(r.status, axes.x(seconds), axes.y(score), colour, tooltip))
    out.append("</svg>")
    return (
        f'<figure>{"".join(out)}<figcaption><span style="color:{colour}">{escape(explainer)}</span>: '
        f"{len(points)} tests ({MARKERS})</figcaption></figure>"
    )


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Explainers not dominated by another that is both faster and better: ``{name: (seconds, score)}``,
    returned from fastest to slowest."""
    front = [
        name
        for name, (s, v) in points.items()
        if not any((s2 <= s and v2 >= v) and (s2 < s or v2 > v) for s2, v2 in points.values())
    ]
    return sorted(front, key=lambda name: points[name][0])


def pareto_chart(summary: Mapping[str, Any], explainers: list[str], axes: _Axes) -> str:
    """Per explainer, mean seconds per call against mean score over the suite; the front joined."""
    points = {
        e: (summary[e]["overall"]["mean_seconds"], summary[e]["overall"]["mean_score"])
        for e in explainers
        if isinstance(summary.get(e, {}).get("overall", {}).get("mean_seconds"), (int, float))
        and isinstance(summary[e]["overall"].get("mean_score"), (int, float))
    }
    out = axes.frame("Pareto front of explainers")
    front = pareto_front(points)
    if len(front) > 1:
        path = " ".join(f"{axes.x(points[e][0]):.1f},{axes.y(points[e][1]):.1f}" for e in front)
        out.append(f'<polyline points="{path}" fill="none" stroke="#444" stroke-dasharray="4 3"/>')
    from pytest_xai.reports.chartlabels import fit, place

    xy = {e: (axes.x(s), axes.y(v)) for e, (s, v) in points.items()}
    right, bottom = axes.W - axes.R, axes.H - axes.B  # labels inside the plot, clear of the ticks
    names = {e: fit(e, right - axes.L) for e in points}
    spots = place([(x, y, names[e]) for e, (x, y) in xy.items()], width=right, height=bottom, left=axes.L, top=axes.T)
    labels = dict(zip(xy, spots))
    for e, (s, v) in points.items():
        (x, y), (lx, ly, anchor) = xy[e], labels[e]
        outline = ' stroke="#000" stroke-width="2"' if e in front else ""
        out.append(
            f'<circle class="mark" cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{_colour(explainers, e)}"{outline}>'
            f"<title>{escape(e)}: mean score "
            f'{v:.3f}, {s:.3g} s/call</title></circle><text x="{lx:.1f}" y="{ly:.1f}" font-size="10" '
            f'text-anchor="{anchor}" fill="{_colour(explainers, e)}" font-weight="600">{escape(names[e])}</text>'
        )
    out.append("</svg>")
    return (
        f"<figure>{''.join(out)}<figcaption>mean score against mean seconds per call; Pareto front "
        f"(dashed, outlined): {escape(', '.join(front) or 'none')}</figcaption></figure>"
    )


def category_bars(summary: Mapping[str, Any], explainers: list[str]) -> str:
    """Mean score per category, one bar per explainer."""
    categories = sorted({c for e in explainers for c in summary.get(e, {}).get("categories", {})})
    W, H, L, T, B = 360, 240, 40, 14, 36
    group = (W - L - 10) / max(len(categories), 1)
    bar = group * 0.8 / max(len(explainers), 1)
    out = [
        (
            f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'role="img" aria-label="mean score per category">'
        ),
        f'<line x1="{L}" x2="{W - 10}" y1="{H - B}" y2="{H - B}" stroke="#999"/>',
    ]
    for score in (0, 0.5, 1):
        y = T + (1 - score) * (H - T - B)
        out.append(
            f'<text x="{L - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{score:g}</text>'
            f'<line x1="{L}" x2="{W - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
        )
    for i, c in enumerate(categories):
        x0 = L + i * group + group * 0.1
        for j, e in enumerate(explainers):
            agg = summary.get(e, {}).get("categories", {}).get(c) or {}
            value, colour, x = agg.get("mean_score"), _colour(explainers, e), x0 + j * bar
            if not isinstance(value, (int, float)):  # an empty slot would read as a score of 0
                font = min(9.0, bar * 0.9)
                baseline = x + bar * 0.45 + font / 2 - 1  # the turned text's glyphs sit left of its baseline
                said = "no verdict" if agg.get("ran") else "not run"  # ran, but every call timed out
                out.append(
                    f'<text x="{baseline:.1f}" y="{H - B - 3}" font-size="{font:.1f}" fill="{colour}" '
                    f'transform="rotate(-90 {baseline:.1f} {H - B - 3})">{said}<title>{escape(e)}, {escape(c)}: '
                    f"{said} ({_count(agg.get('skipped', 0))} skipped, {_count(agg.get('timeouts', 0))} timed out)"
                    "</title></text>"
                )
                continue
            h = max(value * (H - T - B), 1.5)  # a score of 0 still shows
            out.append(
                f'<rect x="{x:.1f}" y="{H - B - h:.1f}" width="{bar * 0.9:.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{escape(e)}, {escape(c)}: mean score {value:.3f}, '
                f"{_count(agg.get('passed'))}/{_count(agg.get('ran'))} passed</title></rect>"
            )
        out.append(
            f'<text x="{x0 + group * 0.4:.1f}" y="{H - B + 14}" font-size="10" text-anchor="middle">{escape(c)}</text>'
        )
    out.append("</svg>")
    legend = " ".join(
        f'<span class="legend"><span style="color:{_colour(explainers, e)}">&#9632;</span> {escape(e)}</span>'
        for e in explainers
    )
    return f"<figure>{''.join(out)}<figcaption>mean score per category: {legend}</figcaption></figure>"


#: Errors below this are drawn on the chart's floor (exact values against their own game: ~1e-16).
ERROR_FLOOR = 1e-4


def _decades(values: list[float]) -> tuple[int, int]:
    logs = [math.log10(v) for v in values] or [0.0]
    lo, hi = math.floor(min(logs)), math.ceil(max(logs))
    return lo, hi if hi > lo else lo + 1


class _LogLog:
    """The convergence chart's coordinates: model evaluations (x) and error (y), both log10."""

    W, H, L, R, T, B = 460, 300, 50, 14, 14, 38

    def __init__(self, evaluations: list[float], errors: list[float]):
        (self.x0, self.x1), (self.y0, self.y1) = _decades([e for e in evaluations if e > 0]), _decades(errors)

    def x(self, evaluations: float) -> float:
        """The left edge for an explainer that never called the model (0 evaluations)."""
        if evaluations <= 0:
            return self.L
        frac = (math.log10(evaluations) - self.x0) / (self.x1 - self.x0)
        return self.L + frac * (self.W - self.L - self.R)

    def y(self, error: float) -> float:
        frac = (math.log10(max(error, ERROR_FLOOR)) - self.y0) / (self.y1 - self.y0)
        return self.H - self.B - frac * (self.H - self.T - self.B)

    def frame(self, title: str) -> list[str]:
        W, H, L, R, T, B = self.W, self.H, self.L, self.R, self.T, self.B
        out = [
            (
                f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
                f'viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}">'
            ),
            f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="#fafafa" stroke="#ccc"/>',
        ]
        for power in range(self.x0, self.x1 + 1):
            x = self.x(10.0**power)
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{T}" y2="{H - B}" stroke="#e4e4e4"/><text x="{x:.1f}" '
                f'y="{H - B + 13}" font-size="10" text-anchor="middle">{escape(compact(10**power))}</text>'
            )
        for power in range(self.y0, self.y1 + 1):
            y = self.y(10.0**power)
            out.append(
                f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>'
                f'<text x="{L - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{10.0**power:g}</text>'
            )
        out.append(
            f'<text x="{(L + W) / 2:.0f}" y="{H - 6}" font-size="11" text-anchor="middle">model evaluations '
            f'(log scale)</text><text x="12" y="{H / 2:.0f}" font-size="11" text-anchor="middle" '
            f'transform="rotate(-90 12 {H / 2:.0f})">relative RMSE (log scale)</text>'
        )
        return out


def _rungs(rec: Record) -> list[tuple[float, float, Mapping[str, Any]]]:
    """``(evaluations, error, rung)`` of each rung of ``rec``'s ladder that ran (a report may hold anything)."""

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    return [
        (float(rung["evaluations"]), float(rung["error"]), rung)
        for rung in rec.convergence or []
        if isinstance(rung, Mapping)
        and number(rung.get("evaluations"))
        and rung["evaluations"] >= 0
        and number(rung.get("error"))
        and rung["error"] >= 0
    ]


def convergence_chart(ladders: list[Record], case: str, explainers: list[str]) -> str:
    """Error against the exact Shapley values per model evaluations spent, log-log, every
    explainer's ladder on ``case`` on one axis: a line per explainer, a point per budget."""
    from pytest_xai.reports.chartlabels import place

    series = {r.explainer or "": _rungs(r) for r in ladders}
    series = {e: points for e, points in series.items() if points}
    axes = _LogLog(
        [ev for points in series.values() for ev, _, _ in points],
        [max(err, ERROR_FLOOR) for points in series.values() for _, err, _ in points],
    )
    out = axes.frame(f"error against model evaluations, {case}")
    ends = []
    for e, points in sorted(series.items(), key=lambda item: len(item[1]) == 1):  # single points on top
        colour = _colour(explainers, e) if e in explainers else "#444"
        xy = [(axes.x(ev), axes.y(err)) for ev, err, _ in points]
        if len(xy) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        marker = 'r="4"' if len(xy) > 1 else 'r="6" fill-opacity="0.25" stroke-width="2"'  # one point: a ring
        for (x, y), (ev, err, rung) in zip(xy, points):
            cpu = rung.get("cpu_seconds")
            spent = f", CPU {cpu:.3g} s" if isinstance(cpu, (int, float)) and not isinstance(cpu, bool) else ""
            budget = rung.get("budget")
            asked = f" (budget {budget:,})" if isinstance(budget, int) and not isinstance(budget, bool) else ""
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" {marker} fill="{colour}" stroke="{colour}"><title>{escape(e)}: '
                f"error {err:.3g} at "
                f"{ev:,.0f} evaluations{asked}{escape(spent)}</title></circle>"
            )
        ends.append((*xy[-1], e))
    for (_, _, e), (lx, ly, anchor) in zip(ends, place(ends, width=axes.W, height=axes.H)):
        colour = _colour(explainers, e) if e in explainers else "#444"
        out.append(
            f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="10" text-anchor="{anchor}" fill="{colour}" '
            f'font-weight="600">{escape(e)}</text>'
        )
    out.append("</svg>")
    return f"<figure>{''.join(out)}<figcaption>{escape(case)}</figcaption></figure>"


def convergence_section(records: list[Record], explainers: list[str]) -> str:
    """The section of ``--xai-convergence``: a chart per case, every explainer on one axis."""
    from pytest_xai.convergence import METRIC

    ladders = [r for r in records if r.convergence]
    if not ladders:
        return ""
    charts = "".join(
        convergence_chart([r for r in ladders if (r.case or "") == case], case, explainers)
        for case in dict.fromkeys(r.case or "" for r in ladders)
    )
    return (
        f"<h2>Accuracy for a cost</h2><p>Each explainer at a ladder of budgets of model evaluations: its "
        f"{escape(METRIC)} against the model evaluations it spent (log-log; lower and further left is better). "
        f"A deterministic explainer that takes no budget is one point; a ladder stops where a larger budget "
        "bought nothing more; one that never calls the model sits on the left edge.</p>"
        f'<div class="charts">{charts}</div>'
    )


def _score_cell(rec: Record) -> str:
    text = _fmt(rec.score)
    repeat = rec.repeat
    if isinstance(repeat, Mapping) and not repeat.get("deterministic") and text:
        text += f" ± {_fmt(repeat.get('std'))}"
    if rec.flaky:
        text += ' <span class="flaky">FLAKY</span>'
    if rec.known_failure:
        text += (
            ' <span class="flaky" title="failing in the baseline too, no worse (--xai-gate=regression)">KNOWN</span>'
        )
    return f'<td class="num">{text}</td>'


def _options(name: str, key: str, values: Iterable[Any]) -> str:
    opts = "".join(
        f'<option value="{escape(str(v))}">{escape(str(v))}</option>' for v in sorted({str(v) for v in values if v})
    )
    return f'<label>{escape(name)} <select data-key="{key}"><option value="">all</option>{opts}</select></label>'


def png_base64(path: str) -> str:
    with open(path, "rb") as fh:
        return base64.b64encode(fh.read()).decode("ascii")


def _pictures(records: list[Record], pictures: Mapping[str, str]) -> str:
    """``pictures``: ``{nodeid: base64 PNG}`` checked by :mod:`pytest_xai.reports.embed`, never a path."""
    out = []
    for r in records:
        data = pictures.get(r.nodeid or "")
        if data:
            out.append(
                f'<figure><img alt="worst example of {escape(r.nodeid or "")}" '
                f'src="data:image/png;base64,{escape(data)}"><figcaption>{escape(r.row or "")} '
                f"[{escape(r.explainer or '')}]: {escape(str(r.status))} {_fmt(r.score)}</figcaption>"
                f"</figure>"
            )
    return f'<div class="pictures">{"".join(out)}</div>' if out else "<p>No worst-example pictures in this run.</p>"


def _brief(b: Mapping[str, Any] | None) -> str:
    if not b:
        return ""
    return f'<span class="{escape(str(b.get("status")))}">{escape(str(b.get("status")))}</span> {_fmt(b.get("score"))}'


def _baseline(doc: Mapping[str, Any]) -> str:
    base = doc.get("baseline")
    if not base:
        return ""
    diff = base.get("diff") or {}
    changed = base.get("changed_versions") or {}
    rows = [
        [
            escape(label),
            escape(e["row"]),
            escape(e["explainer"]),
            _brief(e.get("baseline")),
            _brief(e.get("now")),
            escape("; ".join(e.get("reasons", []))),
        ]
        for label, key in (
            ("REGRESSION", "regressions"),
            ("improved", "improvements"),
            ("new", "new"),
            ("not run", "vanished"),
        )
        for e in diff.get(key, [])
    ]
    versions = (
        "; versions changed: " + escape(", ".join(f"{k} {a} → {b}" for k, (a, b) in changed.items()))
        if changed
        else "; same library versions"
    )
    return (
        f"<h2>Baseline diff</h2><p>against <code>{escape(str(base.get('path')))}</code> (created "
        f"{escape(str(base.get('created')))}, seed {escape(str(base.get('seed')))}){versions}. "
        f"{len(diff.get('regressions', []))} regressed, {len(diff.get('improvements', []))} improved, "
        f"{len(diff.get('new', []))} new, {len(diff.get('vanished', []))} not run, "
        f"{diff.get('unchanged', 0)} unchanged.</p>"
        + (_table(["change", "test", "explainer", "baseline", "now", "why"], rows, ' id="baseline"') if rows else "")
    )


def render(doc: Mapping[str, Any], pictures: Mapping[str, str] | None = None) -> str:
    """The report as one HTML page.  Every value of ``doc`` is escaped or formatted here (it may
    come from anyone); ``pictures`` are the checked PNGs of :func:`pytest_xai.reports.embed.collect`, and
    those ``doc`` carries as data (:func:`pytest_xai.reports.embed.carried`) are added."""
    from pytest_xai.reports import embed

    records = records_of(doc.get("results", []))
    explainers = list(dict.fromkeys(r.explainer or "" for r in records))
    summary = doc.get("summary") or {}
    options = doc.get("options") or {}
    facts = [
        ("created", doc.get("created")),
        ("seed", doc.get("seed")),
        ("repeat", doc.get("repeat", 1)),
        ("exit status", doc.get("exitstatus")),
        ("timeout", options.get("timeout")),
        ("isolation", options.get("isolation")),
        ("explainers", ", ".join(options.get("explainers") or explainers)),
    ]
    if doc.get("shards"):
        facts.append(("merged from", ", ".join(str(s.get("path")) for s in doc["shards"])))
    machine = doc.get("machine") or {}
    versions = doc.get("versions") or {}

    def pairs(title: str, header: list[str], items: Iterable) -> str:
        return f"<div><b>{title}</b>{_table(header, [[escape(str(k)), escape(str(v))] for k, v in items])}</div>"

    header = (
        f'<div class="facts">{pairs("run", ["", ""], facts)}'
        f"{pairs('versions', ['library', 'version'], versions.items())}"
        f"{pairs('machine', ['', ''], machine.items())}</div>"
    )
    overall = [
        _summary_row(e, a)
        for e in explainers
        for a in [(summary.get(e) or {}).get("overall")]
        if isinstance(a, Mapping)
    ]
    filters = (
        '<div class="filters">'
        + _options("family", "family", (r.family for r in records))
        + _options("category", "category", (r.category for r in records))
        + _options("explainer", "explainer", explainers)
        + _options("status", "status", (r.status for r in records))
        + '<label>text <input id="f-text" type="search" placeholder="case, check, detail"></label>'
        + '<span id="shown"></span></div>'
    )
    rows = []
    for r in sorted(records, key=lambda r: (r.category or "", r.row or "", r.explainer or "")):
        attrs = " ".join(
            f'data-{k}="{escape(str(getattr(r, k) or ""))}"' for k in ("family", "category", "explainer", "status")
        )
        rows.append(
            f"<tr {attrs}><td>{escape(r.row or '')}</td><td>{escape(r.explainer or '')}</td>"
            f"<td>{escape(str(r.family or ''))}</td><td>{escape(str(r.category or ''))}</td>"
            f'<td class="{escape(r.status or "")}">{escape(r.status or "")}</td>{_score_cell(r)}'
            f'<td class="num">{_fmt(r.threshold)}</td>{_evaluations(r.evaluations)}'
            f'<td class="num">{_fmt(r.cpu_seconds, 3)}</td><td class="num">{_fmt(r.seconds, 3)}</td>'
            f'<td class="detail">{escape(str(r.regression or r.detail or ""))}</td></tr>'
        )
    table = (
        '<div class="wide"><table id="scores"><thead><tr><th>test</th><th>explainer</th><th>family</th>'
        "<th>category</th><th>status</th>"
        '<th title="the verdict\'s summary in [0, 1], higher is better, comparable across checks">score'
        "<small>0-1, higher is better</small></th>"
        "<th title=\"the check's own limit, on the scale of its own statistic (a gap, a rank, an error), "
        "not of the score\">check threshold<small>on the check's own statistic</small></th>"
        '<th title="rows the model evaluated in the explainer\'s call (0: it never called the model)">evaluations'
        "<small>compare across machines</small></th>"
        '<th title="CPU seconds of the explainer\'s worker during the call">CPU s<small>compare on one machine'
        '</small></th><th title="wall-clock seconds of the call: moves with the load">wall s</th>'
        "<th>detail</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )
    axes = _Axes([float(r.seconds) for r in records if isinstance(r.seconds, (int, float))])
    charts = "".join(score_seconds_chart(records, e, _colour(explainers, e), axes) for e in explainers)
    scored = any(isinstance(r.score, (int, float)) for r in records)  # not a run of the convergence ladder alone
    scores = (
        f'<h2>Score against seconds</h2><div class="charts">{charts}{pareto_chart(summary, explainers, axes)}'
        f"{category_bars(summary, explainers)}</div>"
        if scored or not any(r.convergence for r in records)
        else ""
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>pytest-xai report</title>'
        f"<style>{STYLE}</style></head><body><h1>pytest-xai report</h1>{header}"
        f"<h2>Summary</h2>{_table(SUMMARY_COLUMNS, overall)}{convergence_section(records, explainers)}"
        f"{scores}{_baseline(doc)}"
        f"<h2>Scores</h2>{filters}{table}<h2>Worst examples</h2>"
        f"{_pictures(records, {**embed.carried(doc), **(pictures or {})})}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write(path: str | os.PathLike, doc: Mapping[str, Any], pictures: Mapping[str, str] | None = None) -> None:
    """Write the report to the output ``path``, as the JSON report is written (a regular file
    atomically, a FIFO, a device or ``-`` in place)."""
    from pytest_xai.reports.files import write_text

    write_text(path, render(doc, pictures))


def extra_html(rec: Record) -> str:
    """The pytest-html extra of one test: its score, threshold, model evaluations, CPU and wall seconds, detail."""
    labels = {"score": "score (0-1, higher is better)", "threshold": "check threshold (on the check's own statistic)"}
    rows = [
        [escape(labels.get(k, k)), escape(str(getattr(rec, k)))]
        for k in (
            "explainer",
            "case",
            "check",
            "score",
            "threshold",
            "passed",
            "evaluations",
            "cpu_seconds",
            "seconds",
            "flaky",
            "detail",
            "regression",
            "known_failure",
            "kind",
            "error",
        )
        if getattr(rec, k) is not None
    ]
    return f'<div class="xai">{_table(["pytest-xai", ""], rows)}</div>'
