"""Score table, JSON report and per-test records (pure Python: no pytest, no numpy).

A *record* is one test's result: explainer, case, check, score, threshold, passed, seconds, detail,
outcome.  The plugin builds records from the properties each test stores in
``item.user_properties`` (so they survive xdist) and hands them here.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from collections import defaultdict
from datetime import datetime, timezone
from importlib import metadata
from typing import Any, Iterable

SCHEMA = "pytest-xai/report"
SCHEMA_VERSION = 1
PREFIX = "xai_"
LIBRARIES = ("pytest", "numpy", "shap", "lime", "xgboost", "xgboost-cpu", "torch", "captum",
             "scikit-learn", "chess", "hypothesis", "pytest-xdist", "pytest-benchmark")


def record(nodeid: str, outcome: str, duration: float, properties: Iterable[tuple[str, Any]]) -> dict | None:
    """The record of one test report, or None when the test is not an xai test."""
    props = {k[len(PREFIX):]: v for k, v in properties if isinstance(k, str) and k.startswith(PREFIX)}
    if "explainer" not in props:
        return None
    return {
        "nodeid": nodeid,
        "test": props.get("test") or nodeid.rpartition("::")[2].partition("[")[0],
        "explainer": props["explainer"],
        "case": props.get("case"),
        "family": props.get("family"),
        "category": props.get("category"),
        "check": props.get("check"),
        "outcome": outcome,
        "score": props.get("score"),
        "threshold": props.get("threshold"),
        "passed": props.get("passed", False) if outcome != "skipped" else None,
        "seconds": props.get("seconds"),
        "seed": props.get("seed"),
        "detail": props.get("detail") or props.get("error") or props.get("skip"),
        "error": props.get("error"),
        "duration": round(duration, 6),
    }


def _cell(rec: dict) -> str:
    if rec["outcome"] == "skipped":
        return "skip"
    if rec.get("error"):
        word = "TIMEOUT" if "did not return" in rec["error"] else "ERROR"
        return word if rec.get("seconds") is None else f"{word} {rec['seconds']:.2f}s"
    verdict = "PASS" if rec["passed"] and rec["outcome"] == "passed" else "FAIL"
    score = "" if rec["score"] is None else f" {rec['score']:.3f}"
    seconds = "" if rec["seconds"] is None else f" {rec['seconds']:.2f}s"
    return f"{verdict}{score}{seconds}"


def table(records: list[dict]) -> list[str]:
    """Rows: tests (``check[case]``); columns: explainers; cells: verdict, score, seconds.

    A last row per explainer gives passed/ran, mean score over tests that ran (failures count as
    their score, errors as 0) and the explainer's total seconds.
    """
    explainers = list(dict.fromkeys(r["explainer"] for r in records))
    rows: dict[str, dict[str, dict]] = defaultdict(dict)
    for rec in records:
        rows[f"{rec['check'] or rec['test']}[{rec['case']}]"][rec["explainer"]] = rec
    header = ["test"] + explainers
    body = [[label] + [_cell(cells[e]) if e in cells else "" for e in explainers] for label, cells in rows.items()]
    summary = ["passed / ran, mean score, seconds"]
    for e in explainers:
        ran = [r for r in records if r["explainer"] == e and r["outcome"] != "skipped"]
        passed = sum(1 for r in ran if r["passed"] and r["outcome"] == "passed")
        mean = sum((r["score"] or 0.0) for r in ran) / len(ran) if ran else float("nan")
        seconds = sum(r["seconds"] or 0.0 for r in ran)
        summary.append(f"{passed}/{len(ran)}, {mean:.3f}, {seconds:.2f}s")
    widths = [max(len(row[i]) for row in [header, *body, summary]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return [line(header), rule, *(line(r) for r in body), rule, line(summary)]


def _versions() -> dict[str, str]:
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


def document(records: list[dict], *, options: dict, seed: int, exitstatus: int) -> dict:
    """The JSON report: versioned, self-describing, one entry per xai test."""
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seed": seed,
        "options": options,
        "exitstatus": exitstatus,
        "versions": _versions(),
        "machine": {
            "platform": platform.platform(),
            "machine": platform.machine(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "python_implementation": platform.python_implementation(),
        },
        "results": records,
    }


def write_json(path: str | os.PathLike, doc: dict) -> None:
    """Write ``doc`` atomically: a reader sees the old file or the complete new one, never a part."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".xai-report-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2, allow_nan=False, default=str)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
