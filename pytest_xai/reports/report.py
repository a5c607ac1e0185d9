"""Score table and JSON report of a session's records (pure Python: no pytest, no numpy).

A record (:class:`pytest_xai.reports.record.Record`) is one test's result: explainer, case, check, score,
threshold, verdict, seconds, model evaluations, detail.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from collections import defaultdict
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from pytest_xai.engine.evaluations import compact
from pytest_xai.reports.record import SCHEMA, SCHEMA_VERSION, Record

LIBRARIES = (
    "pytest",
    "numpy",
    "shap",
    "lime",
    "xgboost",
    "xgboost-cpu",
    "torch",
    "captum",
    "transformers",
    "tokenizers",
    "scikit-learn",
    "chess",
    "hypothesis",
    "pytest-xdist",
    "pytest-benchmark",
)


def _cell(rec: Record) -> str:
    if rec.status == "SKIP":
        return "skip"
    if rec.status in ("TIMEOUT", "ERROR"):
        return f"{rec.status}" if rec.seconds is None else f"{rec.status} {rec.seconds:.2f}s"
    score = "" if rec.score is None else f" {rec.score:.3f}"
    if rec.repeat and not rec.repeat.get("deterministic") and rec.score is not None:
        score += f"±{rec.repeat['std']:.3f}"
    if rec.flaky:
        score += " FLAKY"
    if rec.known_failure:
        score += " KNOWN"
    elif rec.regression:
        score += " REGRESSED"
    return f"{rec.status}{score}{cost(rec.evaluations, rec.cpu_seconds, rec.seconds)}"


def cost(evaluations: Any, cpu: Any, seconds: Any, per: str = "") -> str:
    """What a call cost, the figures that compare across runs and machines first: model
    evaluations, then CPU seconds, then wall seconds (docs/speed.md, "Comparing timings")."""
    parts = [
        f"{compact(evaluations)} ev" if evaluations is not None else "",
        f"CPU {cpu:.2f}s" if cpu is not None else "",
        f"wall {seconds:.2f}s" if seconds is not None else "",
    ]
    text = ", ".join(p for p in parts if p)
    return f" {text}{per}" if text else ""


def summary(records: list[Record]) -> dict[str, dict[str, Any]]:
    """Per explainer: overall and per-category aggregates (Compare-xAI D15, corrected).

    Each scored test weighs 1; a failed test counts with its score and an explainer error with 0 (no
    skipping of zeros); a test that scored nothing (a user's test that calls no check) is left out
    of the mean, not counted as 0.  Skipped tests and timeouts (no verdict) are counted apart.  Mean
    wall and CPU seconds and model evaluations are per explainer call: over calls that completed, each counted once even
    when several checks of a case share it (``cached``).
    """

    def aggregate(recs: list[Record]) -> dict[str, Any]:
        ran = [r for r in recs if r.status != "SKIP"]
        judged = [r for r in ran if r.status != "TIMEOUT"]
        calls = [r for r in judged if r.status != "ERROR" and not r.cached]
        timed = [r.seconds for r in calls if r.seconds is not None]
        cpu = [r.cpu_seconds for r in calls if r.cpu_seconds is not None]
        counted = [r.evaluations for r in calls if r.evaluations is not None]
        scores = [r.score for r in judged if r.score is not None]  # a test that scored nothing is no 0
        return {
            "tests": len(recs),
            "ran": len(ran),
            "skipped": len(recs) - len(ran),
            "passed": sum(1 for r in judged if r.status == "PASS"),
            "errors": sum(1 for r in judged if r.status == "ERROR"),
            "timeouts": len(ran) - len(judged),
            "mean_score": round(sum(scores) / len(scores), 6) if scores else None,
            "mean_seconds": round(sum(timed) / len(timed), 6) if timed else None,
            "mean_cpu_seconds": round(sum(cpu) / len(cpu), 6) if cpu else None,
            "mean_evaluations": round(sum(counted) / len(counted), 1) if counted else None,
        }

    out = {}
    for explainer in dict.fromkeys(r.explainer or "" for r in records):
        mine = [r for r in records if (r.explainer or "") == explainer]
        categories = sorted({r.category for r in mine if r.category})
        out[explainer] = {
            "overall": aggregate(mine),
            "categories": {c: aggregate([r for r in mine if r.category == c]) for c in categories},
        }
    return out


def _grid(header: list[str], body: list[list[str]], footer: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *body, *footer]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return [line(header), rule, *(line(r) for r in body), *([rule] if footer else []), *(line(r) for r in footer)]


def _aggregate_cell(agg: dict[str, Any]) -> str:
    if not agg["ran"]:
        return f"skip x{agg['skipped']}" if agg["skipped"] else ""
    timeouts = f", {agg['timeouts']} TIMEOUT" if agg["timeouts"] else ""
    if agg["ran"] == agg["timeouts"]:
        return timeouts[2:]
    spent = cost(agg.get("mean_evaluations"), agg.get("mean_cpu_seconds"), agg["mean_seconds"], "/call")
    per_call = f",{spent}" if spent else ""
    score = "" if agg["mean_score"] is None else f", {agg['mean_score']:.3f}"
    return f"{agg['passed']}/{agg['ran'] - agg['timeouts']}{score}{per_call}{timeouts}"


def table(
    records: list[Record], order: list[str] | None = None, aggregates: dict[str, dict[str, Any]] | None = None
) -> list[str]:
    """Rows: tests (the suite's read ``check[case]``, a user's test its node id without the
    explainer); columns: explainers, those named in ``order`` first and in that order (the order
    records arrive in changes under xdist); cells: verdict, score, model evaluations, CPU and wall seconds.

    Below, per explainer and per category: passed/judged, mean score, mean model evaluations, CPU
    and wall seconds per call, and timeouts (which have no verdict); those of ``records``, or of the
    run they are an excerpt of (``aggregates``, its :func:`summary`).
    """
    seen = {r.explainer or "" for r in records}
    explainers = list(dict.fromkeys([e for e in order or [] if e in seen] + [r.explainer or "" for r in records]))
    rows: dict[str, dict[str, Record]] = defaultdict(dict)
    for rec in sorted(records, key=lambda r: (r.category or "", r.check or r.test or "", r.case or "")):
        rows[rec.row or rec.nodeid][rec.explainer or ""] = rec
    body = [[label] + [_cell(cells[e]) if e in cells else "" for e in explainers] for label, cells in rows.items()]
    aggregates = summary(records) if aggregates is None else aggregates
    categories = sorted({c for agg in aggregates.values() for c in agg["categories"]})
    footer = [
        [f"{c}: passed/ran, mean score"]
        + [
            _aggregate_cell(aggregates[e]["categories"][c]) if c in aggregates[e]["categories"] else ""
            for e in explainers
        ]
        for c in categories
    ]
    footer.append(["overall"] + [_aggregate_cell(aggregates[e]["overall"]) for e in explainers])
    return _grid(["test"] + explainers, body, footer)


def convergence_table(records: list[Record], order: list[str] | None = None) -> list[str]:
    """The convergence ladders (``--xai-convergence``, :mod:`pytest_xai.convergence`): a row per
    (case, explainer), a column per budget; a cell is the error against the exact Shapley values
    at the model evaluations the call spent, ``-`` below the explainer's minimum, blank where the
    ladder stopped (a larger budget bought nothing more)."""
    from pytest_xai.convergence import METRIC

    ladders = [r for r in records if r.convergence]
    if not ladders:
        return []
    rank = {e: i for i, e in enumerate(order or [])}
    budgets = sorted({rung["budget"] for r in ladders for rung in r.convergence or []})
    body = []
    for r in sorted(ladders, key=lambda r: (r.case or "", rank.get(r.explainer or "", len(rank)), r.explainer or "")):
        rungs = {rung["budget"]: rung for rung in r.convergence or []}
        cells = [_rung(rungs.get(b)) for b in budgets]
        body.append([r.case or "", r.explainer or "", *cells])
    header = ["case", "explainer", *(f"budget {compact(b)}" for b in budgets)]
    legend = f"cells: {METRIC} @ model evaluations spent; -: below the explainer's minimum samples"
    return [*_grid(header, body, []), legend]


def _rung(rung: dict[str, Any] | None) -> str:
    if rung is None:
        return ""
    if "error" not in rung:
        return "-"
    return f"{rung['error']:.3f} @ {compact(rung['evaluations'])}"


def versions() -> dict[str, str]:
    """Python and the versions of the libraries that change scores, as installed."""
    out = {"python": sys.version.split()[0]}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    try:
        out["pytest-xai"] = metadata.version("pytest-xai")
    except metadata.PackageNotFoundError:
        pass
    return out


def document(records: list[Record], *, options: dict[str, Any], seed: int, exitstatus: int) -> dict[str, Any]:
    """The JSON report: versioned, self-describing, one entry per xai test."""
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seed": seed,
        "options": options,
        "exitstatus": exitstatus,
        "versions": versions(),
        "machine": {
            "platform": platform.platform(),
            "machine": platform.machine(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "python_implementation": platform.python_implementation(),
        },
        "summary": summary(records),
        "results": [rec.to_dict() for rec in sorted(records, key=lambda rec: rec.nodeid)],
    }


def _finite(value: float) -> float | str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return float(value)


def jsonable(value: Any, _seen: frozenset[int] = frozenset()) -> Any:
    """``value`` as strict JSON types: non-finite floats become the strings ``"inf"``, ``"-inf"``
    and ``"nan"`` (what ``float()`` reads back); tuples and sets become lists; numpy scalars and
    arrays their Python values; dict keys strings; anything else its ``str``.  Never raises."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _finite(value)
    if id(value) in _seen:
        return "<circular reference>"
    seen = _seen | {id(value)}
    try:
        if isinstance(value, dict):
            return {_key(k): jsonable(v, seen) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
            return [jsonable(v, seen) for v in items]
        if hasattr(value, "tolist") and callable(value.tolist):  # numpy scalars and arrays, torch tensors
            return jsonable(value.tolist(), seen)
        return str(value)
    except Exception as exc:  # noqa: BLE001 - a hostile __repr__/__iter__/tolist: keep the report
        return f"<unserialisable {type(value).__name__}: {type(exc).__name__}>"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    value = jsonable(key)
    return value if isinstance(value, str) else json.dumps(value)


def write_json(path: str | os.PathLike[str], doc: dict[str, Any]) -> None:
    """Write ``doc`` as strict JSON to the output ``path`` (a regular file atomically, a FIFO, a
    device or ``-`` in place: :func:`pytest_xai.reports.files.write_text`); every value is passed
    through :func:`jsonable`, so no value makes it raise."""
    from pytest_xai.reports.files import write_text

    write_text(path, json.dumps(jsonable(doc), indent=2, allow_nan=False) + "\n")
