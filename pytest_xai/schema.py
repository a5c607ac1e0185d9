"""The one schema of JSON reports and baselines, checked when a file is read (pure Python).

A report from elsewhere (a baseline, a shard of a fork's pull request) is user input: every field
this package reads is checked for its type before anything sorts, sums or renders it, and a wrong
file is one line naming the file, the field and what to do.  Keys it does not know are allowed (a
newer writer's fields), and so are fields that are missing (an older writer's).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from pytest_xai.report import SCHEMA
from pytest_xai.report import SCHEMA_VERSION as VERSION

MAX_DEPTH = 32  # deeper than any report we write (about 8)
FIX = "give a file written by --xai-report or --xai-save-baseline"
NON_FINITE = ("inf", "-inf", "nan")  # how report.jsonable writes non-finite floats


class SchemaError(ValueError):
    """A file that is not a valid report; the message names the file and the field."""


class Check:
    """A field's type test and its name in messages."""

    def __init__(self, test: Callable[[Any], bool], expected: str):
        self.test, self.expected = test, expected

    def __call__(self, value: Any) -> bool:
        return self.test(value)


def _optional(check: Check) -> Check:
    return Check(lambda v: v is None or check(v), f"{check.expected} or null")


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in NON_FINITE


_str = Check(lambda v: isinstance(v, str), "a string")
_int = Check(lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer")
_number = Check(_is_number, 'a number (or "inf", "-inf", "nan")')
_bool = Check(lambda v: isinstance(v, bool), "true or false")
_object = Check(lambda v: isinstance(v, dict), "an object")
_strings = Check(lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                 "an object of strings")

RESULT = {  # the fields of pytest_xai.record.Record
    "nodeid": _str, "explainer": _str,
    **{k: _optional(_str) for k in ("row", "test", "case", "family", "category", "check", "outcome", "status",
                                    "kind", "detail", "error", "picture", "regression")},
    **{k: _optional(_number) for k in ("score", "threshold", "seconds", "cpu_seconds", "duration")},
    **{k: _optional(_bool) for k in ("passed", "cached", "flaky")},
    "seed": _optional(_int), "evaluations": _optional(_int), "threshold_sources": _optional(_strings),
    "repeat": _optional(_object),
}
AGGREGATE = {**{k: _int for k in ("tests", "ran", "skipped", "passed", "errors", "timeouts")},
             **{k: _optional(_number) for k in ("mean_score", "mean_seconds", "mean_evaluations")}}
TOP = {"seed": _optional(_int), "created": _optional(_str), "exitstatus": _optional(_int),
       "versions": _optional(_strings), "machine": _optional(_object), "options": _optional(_object),
       "repeat": _optional(_int), "budget": _optional(_int)}
BRIEF = {"status": _optional(_str), "score": _optional(_number), "seconds": _optional(_number),
         "evaluations": _optional(_int), "flaky": _optional(_bool)}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _fields(obj: Any, spec: Mapping[str, Check], where: str) -> None:
    if not isinstance(obj, dict):
        raise SchemaError(f"{where}: expected an object, got {_kind(obj)}")
    for key, check in spec.items():
        if key in obj and not check(obj[key]):
            got = "null" if obj[key] is None else f"{_kind(obj[key])} {_clip(obj[key])}"
            raise SchemaError(f"{where}.{key}: expected {check.expected}, got {got}")


def _clip(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _list(obj: Any, where: str) -> list:
    if not isinstance(obj, list):
        raise SchemaError(f"{where}: expected a list, got {_kind(obj)}")
    return obj


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def validate(doc: Any) -> dict:
    """``doc`` if it is a report this package can read, else :class:`SchemaError` naming the field."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise SchemaError(f'not a pytest-xai JSON report (no "schema": "{SCHEMA}")')
    if doc.get("version") != VERSION:
        raise SchemaError(f"version: report format {_clip(doc.get('version'))}, this pytest-xai reads {VERSION}")
    if _depth(doc) > MAX_DEPTH:
        raise SchemaError(f"nested deeper than {MAX_DEPTH} levels")
    _fields(doc, TOP, "report")
    for i, result in enumerate(_list(doc.get("results"), "results")):
        _fields(result, RESULT, f"results[{i}]")
    summary = doc.get("summary") or {}
    _fields(summary, {}, "summary")
    for name, entry in summary.items():
        _fields(entry, {"overall": _optional(_object), "categories": _optional(_object)}, f"summary.{name}")
        if entry.get("overall") is not None:
            _fields(entry["overall"], AGGREGATE, f"summary.{name}.overall")
        for category, agg in (entry.get("categories") or {}).items():
            _fields(agg, AGGREGATE, f"summary.{name}.categories.{category}")
    for i, shard in enumerate(_list(doc.get("shards", []), "shards")):
        _fields(shard, {"path": _optional(_str), "created": _optional(_str), "exitstatus": _optional(_int),
                        "results": _optional(_int)}, f"shards[{i}]")
    for i, problem in enumerate(_list(doc.get("merge_mismatches", []), "merge_mismatches")):
        if not isinstance(problem, str):
            raise SchemaError(f"merge_mismatches[{i}]: expected a string, got {_kind(problem)}")
    pictures = doc.get("pictures", {})
    if not isinstance(pictures, dict) or not all(isinstance(v, str) for v in pictures.values()):
        raise SchemaError("pictures: expected an object of base64 strings")
    if doc.get("baseline") is not None:
        _baseline(doc["baseline"])
    return doc


def _baseline(base: Any) -> None:
    _fields(base, {"path": _optional(_str), "created": _optional(_str), "seed": _optional(_int),
                   "changed_versions": _optional(_object), "diff": _optional(_object)}, "baseline")
    diff = base.get("diff") or {}
    _fields(diff, {"unchanged": _int}, "baseline.diff")
    for key in ("regressions", "improvements", "new", "vanished"):
        for i, entry in enumerate(_list(diff.get(key, []), f"baseline.diff.{key}")):
            where = f"baseline.diff.{key}[{i}]"
            _fields(entry, {"row": _str, "explainer": _str}, where)
            for side in ("baseline", "now"):
                if entry.get(side) is not None:
                    _fields(entry[side], BRIEF, f"{where}.{side}")
            reasons = _list(entry.get("reasons", []), f"{where}.reasons")
            if not all(isinstance(r, str) for r in reasons):
                raise SchemaError(f"{where}.reasons: expected a list of strings")
    for name, pair in (base.get("changed_versions") or {}).items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(v is None or isinstance(v, str) for v in pair)):
            raise SchemaError(f"baseline.changed_versions.{name}: expected [version or null, version or null]")


def load(path: str | os.PathLike[str], label: str, fix: str = FIX) -> dict:
    """The report at ``path``, read and validated, else a one-line :class:`SchemaError` that starts
    with ``label`` (e.g. ``--xai-baseline=PATH``) and ends with ``fix``."""
    try:
        with open(os.fspath(path), encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        raise SchemaError(f"{label}: no such file; {fix}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaError(f"{label}: cannot be read ({exc}); {fix}") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{label}: not JSON (line {exc.lineno}: {exc.msg}); {fix}") from None
    except RecursionError:
        raise SchemaError(f"{label}: nested too deeply to be a report; {fix}") from None
    try:
        return validate(doc)
    except SchemaError as exc:
        raise SchemaError(f"{label}: {exc}; {fix}") from None
