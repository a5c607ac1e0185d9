"""One test's result, the one record type of the plugin, the reports, baselines and merges.

A test fills a :class:`Record` as it runs (explainer, case, score, seconds, evaluations, ...); the plugin sends
it through pytest as ``xai_*`` user properties (:meth:`Record.to_properties`: each value JSON text,
which survives xdist and reads as JSON in JUnit XML), and reads it back from the test report
(:meth:`Record.from_properties`), where the verdict ``status`` is decided.  The JSON report holds
one :meth:`Record.to_dict` per test; :meth:`Record.from_dict` reads reports of any version 1,
those written before a field existed included.  Pure Python: no pytest, no numpy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

#: The JSON report's format: its ``schema`` and ``version`` fields (written by
#: :mod:`~pytest_xai.reports.report`, checked by :mod:`~pytest_xai.reports.files` when read back).
SCHEMA = "pytest-xai/report"
#: Version 1 records gained ``kind`` (how an ERROR or TIMEOUT happened) and ``evaluations`` (the
#: rows the model evaluated), and the aggregates ``mean_evaluations``; readers of version 1 read
#: reports written before them (:meth:`Record.from_dict`).
SCHEMA_VERSION = 1
PREFIX = "xai_"
#: Fields only the test report knows: never sent as properties.
_REPORT_ONLY = ("nodeid", "outcome", "status", "duration")
#: Numbers that may be non-finite: a property writes them as the JSON report does (``"inf"``, ``"nan"``).
_FLOATS = ("score", "threshold", "seconds", "cpu_seconds")
NON_FINITE = ("inf", "-inf", "nan")


@dataclass
class Record:
    """One xai test.  ``status`` is the verdict: PASS, FAIL, ERROR (the explainer raised, crashed or
    returned something invalid: a failed verdict with score 0), TIMEOUT (stopped at the limit: no
    verdict) or SKIP; ``kind`` says how an ERROR or TIMEOUT happened (``pytest_xai.errors.ERROR_KINDS``):
    a TIMEOUT of kind ``case`` is the case's model stopped at the limit (``stopped``).
    Under ``--xai-gate=regression`` a failing test has ``known_failure`` (the baseline had it
    failing, no better) or a ``regression`` saying what got worse (:mod:`pytest_xai.reports.gate`).
    """

    nodeid: str = ""
    row: str | None = None
    test: str | None = None
    explainer: str | None = None
    case: str | None = None
    family: str | None = None
    category: str | None = None
    check: str | None = None
    outcome: str | None = None
    status: str | None = None
    kind: str | None = None
    stopped: bool | None = None  # the explainer's or the case's call was stopped at its limit: a TIMEOUT
    score: float | None = None
    threshold: float | None = None
    threshold_sources: dict[str, str] | None = None
    passed: bool | None = None
    seconds: float | None = None
    cpu_seconds: float | None = None
    evaluations: int | None = None  # rows the model evaluated in the call that ``seconds`` times
    budget: int | None = None  # the model evaluations that call was given (pytest_xai.engine.budget)
    cached: bool | None = None
    seed: int | None = None
    detail: str | None = None
    error: str | None = None
    duration: float | None = None
    picture: str | None = None
    repeat: dict[str, Any] | None = None
    flaky: bool | None = None
    regression: str | None = None
    reference: dict[str, Any] | None = None  # the computed reference a user case's check was calibrated on
    #: The rungs of a convergence ladder (:mod:`pytest_xai.convergence`): ``{budget, evaluations,
    #: cpu_seconds, seconds, error}``, or ``{budget, skipped}`` below the explainer's minimum.
    convergence: list[dict[str, Any]] | None = None
    known_failure: bool | None = None

    def to_properties(self) -> list[tuple[str, Any]]:
        """The fields a test has set, as ``("xai_<field>", JSON text)`` pairs: JUnit XML writes a
        property's ``str``, so a Python value read there as its repr (``True``, ``{'rtol': ...}``)."""
        return [
            (PREFIX + name, json.dumps(_strict(value), allow_nan=False))
            for name, value in self._items()
            if value is not None and name not in _REPORT_ONLY
        ]

    @classmethod
    def property_names(cls) -> frozenset[str]:
        return frozenset(PREFIX + f.name for f in fields(cls) if f.name not in _REPORT_ONLY)

    @classmethod
    def from_properties(
        cls,
        nodeid: str,
        outcome: str,
        duration: float,
        properties: Iterable[tuple[str, Any]],
        skipped_because: str | None = None,
    ) -> Record | None:
        """The record of one test report, or None when the test is not an xai test (no explainer).

        A test that passes without calling ``xai_check`` is a PASS; ``skipped_because`` is the
        reason pytest gives for a skip (it becomes the detail).  ``outcome`` is pytest's, with
        ``xfailed`` and ``xpassed``: a known failure of the regression gate keeps its verdict (FAIL,
        ERROR, TIMEOUT), any other expected failure is a SKIP, as pytest counts it.
        """
        names = cls.property_names()
        given = {k[len(PREFIX) :]: _value(v) for k, v in properties if isinstance(k, str) and k in names}
        if "explainer" not in given:
            return None
        for name in _FLOATS:
            if given.get(name) in NON_FINITE:
                given[name] = float(given[name])
        rec = cls(**given)
        passed = outcome in ("passed", "xpassed") and given.get("passed", True) is True
        if outcome == "skipped" or (outcome == "xfailed" and not rec.known_failure):
            status = "SKIP"
        elif rec.kind is not None:
            status = "TIMEOUT" if rec.kind == "timeout" or rec.stopped else "ERROR"
        else:
            status = "PASS" if passed else "FAIL"
        rec.nodeid, rec.outcome, rec.status, rec.duration = nodeid, outcome, status, round(duration, 6)
        rec.row = rec.row or nodeid
        rec.test = rec.test or nodeid.rpartition("::")[2].partition("[")[0]
        rec.passed = passed if status != "SKIP" else None
        rec.cached, rec.flaky = bool(rec.cached), bool(rec.flaky)
        rec.detail = skipped_because if outcome == "skipped" else rec.detail or rec.error
        return rec

    def to_dict(self) -> dict[str, Any]:
        """The record of the JSON report."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Record:
        """A record of a JSON report; fields it lacks (older reports) are None, unknown keys ignored."""
        values: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        return cls(**values)

    def key(self) -> tuple[str, str]:
        """What identifies a test across runs (baselines): ``(row, explainer)``."""
        return self.row or self.nodeid, self.explainer or ""

    def _items(self) -> Iterable[tuple[str, Any]]:
        return ((f.name, getattr(self, f.name)) for f in fields(self))


def _strict(value: Any) -> Any:
    """``value`` for strict JSON: numpy scalars as Python numbers, non-finite floats as the JSON
    report writes them (``"inf"``, ``"nan"``), tuples as lists."""
    if hasattr(value, "item") and not isinstance(value, (dict, list, tuple)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def _value(value: Any) -> Any:
    """A property's value: its JSON text read (a value that is no JSON text is kept as it is)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def records(results: Iterable[Mapping[str, Any]]) -> list[Record]:
    """The records of a JSON report's ``results``."""
    return [Record.from_dict(r) for r in results]
