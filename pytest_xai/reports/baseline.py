"""Regression baselines: this run's records against a saved JSON report (pure Python, no pytest).

A baseline is an ordinary JSON report (``--xai-report`` or ``--xai-save-baseline`` writes one).
Tests are matched by ``(row, explainer)`` — ``check[case]`` for the suite — which does not depend
on where the suite is installed.  A test *regresses* when its score drops by more than the
tolerance, when its verdict turns from PASS to FAIL, ERROR or TIMEOUT, when its explainer's model
evaluations grow beyond a factor (:data:`DEFAULT_EVALUATIONS_FACTOR` unless switched off: they are
deterministic), or when its seconds do (only when a factor is given: seconds are noise on shared
runners); the workflow is in ``docs/ci.md``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from pytest_xai.reports.record import Record, records

#: Default allowed score drop (scores are in [0, 1]); ``--xai-baseline-tolerance`` overrides it.
DEFAULT_TOLERANCE = 0.05
#: Default ``--xai-baseline-evaluations-factor``: a seeded explainer spends the same model
#: evaluations in every run (:mod:`pytest_xai.engine.evaluations`), so a factor gates cost with no noise;
#: 2 lets a deliberate change of sample size within a factor of 2 through.
DEFAULT_EVALUATIONS_FACTOR = 2.0
ANY = "*"  # the key of the tolerance that applies to every check without its own
VERDICT = "verdict PASS in the baseline"  # how a regression of the verdict begins


class BaselineWarning(UserWarning):
    """The baseline was made under other conditions (library versions, seed) than this run."""


class BaselineError(ValueError):
    """The baseline file cannot be used; the message names the file, what is wrong and what to do."""


def load(path: str | os.PathLike, source: str = "--xai-baseline") -> dict:
    """The baseline document at ``path``, checked to be a valid pytest-xai JSON report
    (:func:`pytest_xai.reports.files.read_report`) whose scores are all finite numbers or null: a
    score of ``"nan"`` is below no tolerance, so it made every failure a known one (issue 41).  A
    run never scores outside [0, 1] (``case.Score``), so only an edited file has one."""
    from pytest_xai.reports import files

    label = f"{source}={os.fspath(path)}"
    fix = "write one with --xai-save-baseline=PATH (or --xai-report=PATH) on a run you trust"
    try:
        doc = files.read_report(path, label, fix)
    except files.ReportError as exc:
        raise BaselineError(str(exc)) from None
    for i, result in enumerate(doc["results"]):
        if not_finite(result.get("score")):
            raise BaselineError(
                f"{label}: results[{i}].score: {result['score']!r} is not a finite score, and no score "
                f"compares with it; give a number from 0 to 1 or null, or {fix}"
            )
    return doc


def not_finite(value: Any) -> bool:
    """Whether ``value`` is a score no other compares with: not None and not a finite number
    (``"nan"``, ``"inf"`` as reports write them, a float NaN or infinity, anything else)."""
    if value is None:
        return False
    return isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)


def parse_tolerances(entries: list[str], source: str, known_checks: list[str]) -> dict[str, float]:
    """``VALUE`` (every check) or ``CHECK=VALUE`` entries -> ``{"*" or check: tolerance}``."""
    from pytest_xai.options import OptionError, check_threshold

    out: dict[str, float] = {}
    for entry in entries:
        name, sep, raw = entry.rpartition("=")
        name = name.strip() if sep else ANY
        if name != ANY and name not in known_checks:
            raise OptionError(
                f"{source} {entry!r}: no check named {name!r}; give VALUE for every check or "
                f"CHECK=VALUE with one of: {', '.join(known_checks)}"
            )
        value = check_threshold("tolerance", raw, f"{source} {entry!r}")
        if value > 1:
            raise OptionError(
                f"{source} {entry!r}: scores are in [0, 1], so a tolerance above 1 never fires; "
                f"give a number from 0 to 1"
            )
        out[name] = value
    return out


def tolerance(check: str | None, tolerances: Mapping[str, float]) -> float:
    return tolerances.get(check or "", tolerances.get(ANY, DEFAULT_TOLERANCE))


def index(doc: Mapping[str, Any]) -> dict[tuple[str, str], Record]:
    """The baseline's records by ``(row, explainer)``."""
    return {rec.key(): rec for rec in records(doc["results"])}


def changed_versions(before: Mapping[str, str], now: Mapping[str, str]) -> dict[str, list]:
    """``{library: [baseline version, this run's version]}`` for every library that differs."""
    return {
        name: [before.get(name), now.get(name)]
        for name in sorted(set(before) | set(now))
        if before.get(name) != now.get(name)
    }


def identity(doc: Mapping[str, Any], path: str, versions_now: Mapping[str, str]) -> dict:
    """What the JSON report records about the baseline it was compared with."""
    return {
        "path": path,
        "created": doc.get("created"),
        "seed": doc.get("seed"),
        "budget": doc.get("budget"),
        "versions": doc.get("versions"),
        "changed_versions": changed_versions(doc.get("versions") or {}, versions_now),
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def regressions(
    now: Record,
    before: Record,
    *,
    tol: float,
    seconds_factor: float | None = None,
    evaluations_factor: float | None = None,
) -> list[str]:
    """Why ``now`` is worse than ``before`` (empty when it is not): each reason names the baseline
    value, this run's value and the tolerance or factor.  Evaluations and seconds are compared only
    with a factor, and only where both records have them (older reports have no evaluations)."""
    reasons = []
    own_fail = bool(now.regression) and VERDICT not in (now.regression or "")  # the gate's FAIL, not the check's
    if before.status == "PASS" and now.status in ("FAIL", "ERROR", "TIMEOUT") and not own_fail:
        reasons.append(f"{VERDICT}, {now.status} now")
    b, n = _number(before.score), _number(now.score)
    if b is not None and n is not None and b - n > tol + 1e-9:
        reasons.append(f"score dropped from {b:.3f} (baseline) to {n:.3f} (now), by more than the tolerance {tol:g}")
    b, n = _number(before.seconds), _number(now.seconds)
    if seconds_factor and b is not None and n is not None and b > 0 and n > seconds_factor * b:
        reasons.append(
            f"explainer seconds grew from {b:.3g} (baseline) to {n:.3g} (now), x{n / b:.3g}, over "
            f"the factor {seconds_factor:g}"
        )
    b, n = _number(before.evaluations), _number(now.evaluations)
    if evaluations_factor and b is not None and n is not None and b > 0 and n == 0:
        reasons.append(
            f"model evaluations fell from {b:.0f} (baseline) to 0 (now): the explainer no longer calls the "
            f"model, or calls it where it is not counted (a copy of the model, another process); if that is "
            f"intended, save a new baseline"
        )
    if evaluations_factor and b is not None and n is not None and n > evaluations_factor * b:
        grew = f", x{n / b:.3g}" if b > 0 else ""
        reasons.append(
            f"model evaluations grew from {b:.0f} (baseline) to {n:.0f} (now){grew}, over the factor "
            f"{evaluations_factor:g}"
        )
    return reasons


def improvements(now: Record, before: Record, *, tol: float) -> list[str]:
    reasons = []
    if before.status in ("FAIL", "ERROR", "TIMEOUT") and now.status == "PASS":
        reasons.append(f"verdict {before.status} in the baseline, PASS now")
    b, n = _number(before.score), _number(now.score)
    if b is not None and n is not None and n - b > tol + 1e-9:
        reasons.append(f"score rose from {b:.3f} to {n:.3f}")
    return reasons


def _brief(rec: Record) -> dict:
    return {
        "status": rec.status,
        "score": rec.score,
        "evaluations": rec.evaluations,
        "cpu_seconds": rec.cpu_seconds,
        "seconds": rec.seconds,
        "flaky": rec.flaky,
    }


def compare(
    now: list[Record],
    doc: Mapping[str, Any],
    *,
    tolerances: Mapping[str, float],
    seconds_factor: float | None = None,
    evaluations_factor: float | None = None,
) -> dict:
    """The diff of the records ``now`` against the baseline ``doc``: regressions, improvements, new
    tests, vanished tests (in the baseline, not run now) and the number unchanged."""
    before = index(doc)
    seen = set()
    diff: dict[str, Any] = {"regressions": [], "improvements": [], "new": [], "vanished": [], "unchanged": 0}
    for rec in sorted(now, key=Record.key):
        k = rec.key()
        seen.add(k)
        if k not in before:
            diff["new"].append({"row": k[0], "explainer": k[1], "now": _brief(rec)})
            continue
        tol = tolerance(rec.check, tolerances)
        entry = {"row": k[0], "explainer": k[1], "baseline": _brief(before[k]), "now": _brief(rec)}
        worse = regressions(
            rec, before[k], tol=tol, seconds_factor=seconds_factor, evaluations_factor=evaluations_factor
        )
        better = improvements(rec, before[k], tol=tol)
        if worse:
            diff["regressions"].append({**entry, "reasons": worse})
        elif better:
            diff["improvements"].append({**entry, "reasons": better})
        else:
            diff["unchanged"] += 1
    diff["vanished"] = [
        {"row": k[0], "explainer": k[1], "baseline": _brief(before[k])} for k in sorted(before) if k not in seen
    ]
    return diff


def _value(brief: Mapping[str, Any] | None) -> str:
    if not brief:
        return "-"
    from pytest_xai.reports.report import cost

    score = "" if brief.get("score") is None else f" {brief['score']:.3f}"
    return (
        f"{brief.get('status')}{score}{cost(brief.get('evaluations'), brief.get('cpu_seconds'), brief.get('seconds'))}"
    )


def table(diff: Mapping[str, Any], *, max_vanished: int = 20) -> list[str]:
    """The terminal's diff table: one line per changed test, then counts."""
    rows = [(label, e) for label in ("regressions", "improvements", "new") for e in diff[label]]
    lines = []
    if rows:
        width = max(len(f"{e['row']} [{e['explainer']}]") for _, e in rows)
        side = max(len("baseline"), *(len(_value(e.get(k))) for _, e in rows for k in ("baseline", "now")))
        head = f"{'change':<11}  {'test [explainer]':<{width}}  {'baseline':<{side}}  {'now':<{side}}  why"
        lines += [head, "-" * len(head)]
        names = {"regressions": "REGRESSION", "improvements": "improved", "new": "new"}
        for label, e in rows:
            why = "; ".join(e.get("reasons", [])) or "not in the baseline"
            test = f"{e['row']} [{e['explainer']}]"
            lines.append(
                f"{names[label]:<11}  {test:<{width}}  {_value(e.get('baseline')):<{side}}  "
                f"{_value(e.get('now')):<{side}}  {why}".rstrip()
            )
    vanished = diff["vanished"]
    if vanished:
        shown = ", ".join(f"{e['row']} [{e['explainer']}]" for e in vanished[:max_vanished])
        more = f" and {len(vanished) - max_vanished} more (in the JSON report)" if len(vanished) > max_vanished else ""
        lines.append(f"not run now, in the baseline: {shown}{more}")
    lines.append(
        f"{len(diff['regressions'])} regressed, {len(diff['improvements'])} improved, "
        f"{len(diff['new'])} new, {len(vanished)} not run, {diff['unchanged']} unchanged"
    )
    return lines


class Gate:
    """A loaded baseline and how this run is compared with it (``--xai-baseline`` and friends).

    ``tolerances`` are parsed ``--xai-baseline-tolerance`` entries (:func:`parse_tolerances`);
    ``seconds_factor`` also gates explainer seconds when given; ``evaluations_factor`` gates model
    evaluations (None: not compared).
    """

    def __init__(
        self,
        path: str,
        tolerances: Mapping[str, float],
        seconds_factor: float | None = None,
        evaluations_factor: float | None = DEFAULT_EVALUATIONS_FACTOR,
    ):
        self.path, self.tolerances, self.seconds_factor = path, dict(tolerances), seconds_factor
        self.evaluations_factor = evaluations_factor
        self.doc = load(path)
        self.index = index(self.doc)

    def factors(self) -> dict[str, float | None]:
        """The factors of :func:`regressions`."""
        return {"seconds_factor": self.seconds_factor, "evaluations_factor": self.evaluations_factor}

    def regressions(
        self, key: tuple[str, str], check: str, score: float, seconds: float | None, evaluations: int | None = None
    ) -> list[str]:
        """Why a test that passed its check with ``score`` regressed against the baseline (or [])."""
        before = self.index.get(key)
        if before is None:
            return []
        now = Record(status="PASS", score=score, seconds=seconds, evaluations=evaluations)
        return regressions(now, before, tol=tolerance(check, self.tolerances), **self.factors())

    def diff(self, now: list[Record]) -> dict:
        return compare(now, self.doc, tolerances=self.tolerances, **self.factors())

    def warnings(self, versions_now: Mapping[str, str], seed: int) -> list[str]:
        """What makes this run's scores differ from the baseline's for reasons other than the explainer."""
        out = []
        changed = changed_versions(self.doc.get("versions") or {}, versions_now)
        if changed:
            names = ", ".join(f"{k} {a or 'absent'} -> {b or 'absent'}" for k, (a, b) in changed.items())
            out.append(
                f"baseline {self.path} was made with other library versions ({names}); scores are compared "
                f"anyway: refresh it with --xai-save-baseline once the change is understood"
            )
        if self.doc.get("seed") != seed:
            out.append(
                f"baseline {self.path} has seed {self.doc.get('seed')}, this run {seed}: stochastic "
                f"explainers' scores move with the seed"
            )
        return out

    def header(self) -> str:
        tol = ", ".join(f"{k}={v:g}" for k, v in self.tolerances.items()) or f"{DEFAULT_TOLERANCE:g}"
        factors = "".join(
            f", {what} factor {factor:g}"
            for what, factor in (("model evaluations", self.evaluations_factor), ("seconds", self.seconds_factor))
            if factor
        )
        return (
            f"baseline {self.path} (created {self.doc.get('created')}, seed {self.doc.get('seed')}), "
            f"tolerance {tol}{factors}"
        )

    def section(self, now: list[Record], versions_now: Mapping[str, str]) -> dict:
        """The JSON report's ``baseline``: what it was, the tolerances and the diff."""
        return {
            **identity(self.doc, self.path, versions_now),
            "tolerances": self.tolerances,
            **self.factors(),
            "diff": self.diff(now),
        }
