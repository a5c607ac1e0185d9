"""Explanation snapshots (issue 44): a test's attributions stored in a reviewed file and compared on
every later run, with a tolerance measured from the explainer's own seed-to-seed spread.

No pytest here (the fixture is ``xai_snapshot`` in :mod:`pytest_xai.plugin.fixtures`).  A snapshot is
plain JSON, one row of attributions per line, floats written by ``repr`` (exact: they read back
bit for bit), beside the test file in ``__xai_snapshots__/<test file stem>/<test>.json``.  It is
written with the package's one writer (:func:`pytest_xai.reports.files.write_text`: atomic, a
symlink followed, a FIFO written in place) and read with its one reader of a file from elsewhere (a
regular file, bounded); a file that is not a snapshot is one line naming it and what to do.

The tolerance of feature ``j`` is ``FACTOR`` x the largest |difference| between the attributions
of any two seeds over the rows (the spread), plus ``FLOOR`` x the largest |attribution| for a
deterministic explainer, whose spread is 0: a change beyond what reseeding produces fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 1  # the version of the file's layout, its "pytest_xai_snapshot" key
FOLDER = "__xai_snapshots__"
FACTOR = 3.0  # the tolerance, in spreads between seeds
FLOOR = 1e-9  # the tolerance's floor, a fraction of the largest |attribution|
RESEEDS = 2  # other seeds the explainer is run with when a snapshot is written
MAX_BYTES = 64 * 2**20
UPDATE = "--xai-snapshot-update"
SHOWN = 10  # moved values a failure lists


class SnapshotError(ValueError):
    """A snapshot that cannot be written or read, or values that cannot be one: one line saying what to do."""


def path_for(test_file: str | os.PathLike[str], test: str, name: str | None = None) -> Path:
    """Where the snapshot of ``test`` (its node id after the file: ``TestA::test_b[x]``) lives: a
    file name of ``[A-Za-z0-9_.-]`` (``::`` a dot, ``[x]`` ``-x``); a name that had to lose other
    characters gets 8 hex digits of the original, so that two tests never share a file."""
    full = test if name is None else f"{test}.{name}"
    safe = full.replace("::", ".").replace("[", "-").replace("]", "")
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", safe).strip("._") or "test"
    if cleaned != safe or len(cleaned) > 120:
        cleaned = f"{cleaned[:120]}-{hashlib.sha1(full.encode('utf-8', 'backslashreplace')).hexdigest()[:8]}"
    file = Path(test_file)
    return file.parent / FOLDER / file.stem / f"{cleaned}.json"


def values_of(explanation: Any, what: str = "the attributions") -> np.ndarray:
    """The attributions of an explanation (``xai_explain``'s, a ``shap.Explanation``, a torch
    tensor, a dict with ``attributions``, an array) as finite floats, at least one dimension."""
    from pytest_xai.engine.contract import _array
    from pytest_xai.errors import ExplainerError

    if isinstance(explanation, dict) and "attributions" in explanation:
        explanation = explanation["attributions"]
    elif not isinstance(explanation, np.ndarray) and hasattr(explanation, "attributions"):
        explanation = explanation.attributions
    try:
        values = _array(explanation, what)
    except ExplainerError as exc:
        raise SnapshotError(f"xai_snapshot: {what}: {exc}") from None
    if values.ndim == 0 or values.size == 0:
        raise SnapshotError(f"xai_snapshot: {what} have shape {values.shape}; give one row of attributions or more")
    bad = int(np.sum(~np.isfinite(values)))
    if bad:
        raise SnapshotError(f"xai_snapshot: {what} hold {bad} NaN or infinite value(s); a snapshot stores finite ones")
    return values


def _rows(values: np.ndarray) -> np.ndarray:
    return values.reshape(len(values), -1) if values.ndim > 1 else values.reshape(1, -1)


@dataclass(frozen=True)
class Snapshot:
    """A test's attributions and, per feature (flattened), the spread between seeds and the tolerance."""

    values: np.ndarray
    spread: np.ndarray
    tolerance: np.ndarray
    seeds: tuple[int, ...] = ()
    features: tuple[str, ...] | None = None
    meta: tuple[tuple[str, str], ...] = ()  # test, explainer, case: for the reader

    @classmethod
    def measure(
        cls,
        values: np.ndarray,
        others: list[np.ndarray],
        *,
        seeds: tuple[int, ...] = (),
        features: list[str] | None = None,
        meta: dict[str, str] | None = None,
    ) -> Snapshot:
        """The snapshot of ``values``, its tolerance measured against ``others`` (the same explainer
        under other seeds; none: a deterministic explainer, the floor alone)."""
        runs = [_rows(values), *(_rows(o) for o in others)]
        spread = np.zeros(runs[0].shape[1])
        for i, a in enumerate(runs):
            for b in runs[i + 1 :]:
                spread = np.maximum(spread, np.abs(a - b).max(axis=0))
        tolerance = FACTOR * spread + FLOOR * float(np.abs(values).max())
        width = runs[0].shape[1]
        names = tuple(map(str, features)) if features is not None and len(features) == width else None
        return cls(values, spread, tolerance, tuple(seeds), names, tuple((meta or {}).items()))

    def dumps(self) -> str:
        """The file's text: keys first, then one row per line (a diff shows the rows that moved)."""
        head: dict[str, Any] = {"pytest_xai_snapshot": FORMAT, **dict(self.meta)}
        head.update(shape=list(self.values.shape), seeds=list(self.seeds))
        if self.features is not None:
            head["features"] = list(self.features)
        head["tolerance_rule"] = (
            f"{FACTOR:g} x the largest |difference| between seeds (spread), per feature, "
            f"+ {FLOOR:g} x the largest |attribution|"
        )
        head.update(spread=_floats(self.spread), tolerance=_floats(self.tolerance))
        lines = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in head.items()]
        rows = ",\n".join(f"    {json.dumps(_floats(row))}" for row in _rows(self.values))
        return "{\n" + "\n".join(lines) + f'\n  "rows": [\n{rows}\n  ]\n' + "}\n"

    def changes(
        self, values: np.ndarray, path: str | os.PathLike[str], features: list[str] | None = None
    ) -> str | None:
        """None when ``values`` are within the tolerance of the snapshot, else the failure: the rows
        and features that moved, by how much, the file and how to update it."""
        if values.shape != self.values.shape:
            return (
                f"explanation snapshot {path}: it holds attributions of shape {self.values.shape}, this run "
                f"gave {values.shape} (other rows or features); if that is intended, run pytest {UPDATE}"
            )
        old, new = _rows(self.values), _rows(values)
        moved = np.abs(new - old)
        beyond = moved > self.tolerance
        if not beyond.any():
            return None
        names = features if features is not None and len(features) == old.shape[1] else self.features
        excess = np.where(beyond, moved / np.maximum(self.tolerance, np.finfo(float).tiny), 0.0)
        order = np.argsort(-excess, axis=None, kind="stable")[: min(SHOWN, int(beyond.sum()))]
        feature_shape = self.values.shape[1:]
        lines = []
        for flat in order:
            i, j = divmod(int(flat), old.shape[1])
            where = f"row {i}, " if self.values.ndim > 1 else ""
            lines.append(
                f"  {where}feature {_feature(j, names, feature_shape)}: {old[i, j]:.6g} -> {new[i, j]:.6g} "
                f"(moved {moved[i, j]:.3g}, tolerance {self.tolerance[j]:.3g})"
            )
        rows = sorted({int(i) for i in np.nonzero(beyond)[0]})
        cols = sorted({int(j) for j in np.nonzero(beyond)[1]})
        in_rows = f"rows {_listed(rows)}, " if self.values.ndim > 1 else ""
        more = f"  ... and {int(beyond.sum()) - len(order)} more\n" if beyond.sum() > len(order) else ""
        return (
            f"explanation snapshot changed: {int(beyond.sum())} of {beyond.size} attributions moved beyond "
            f"the tolerance ({FACTOR:g} x the spread between seeds), in {in_rows}features "
            f"{_listed([_feature(j, names, feature_shape) for j in cols])}\n"
            + "\n".join(lines)
            + "\n"
            + more
            + f"snapshot: {path}\n"
            f"if the change is intended (a retrained model, a new library), review it and run pytest {UPDATE}"
        )


def _floats(array: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(array, dtype=float).ravel()]


def _feature(j: int, names: tuple[str, ...] | list[str] | None, shape: tuple[int, ...]) -> str:
    if names is not None:
        return repr(names[j])
    return str(tuple(int(k) for k in np.unravel_index(j, shape))) if len(shape) > 1 else str(j)


def _listed(items: list[Any], most: int = 8) -> str:
    shown = ", ".join(map(str, items[:most]))
    return shown + (f" (+{len(items) - most} more)" if len(items) > most else "")


# ---------------------------------------------------------------------------------- reading


def read(path: str | os.PathLike[str]) -> Snapshot:
    """The snapshot at ``path``: a regular file of at most :data:`MAX_BYTES`, checked field by field."""
    from pytest_xai.reports import files

    fix = f"delete it and run pytest {UPDATE} to write it again, then review it"
    label = f"explanation snapshot {path}"
    try:
        data = files._read_regular(path, label, fix)
    except files.ReportError as exc:
        raise SnapshotError(str(exc)) from None

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not a number a snapshot holds")

    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=refuse)
    except UnicodeDecodeError:
        raise SnapshotError(f"{label}: not UTF-8 text; {fix}") from None
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{label}: not JSON (line {exc.lineno}: {exc.msg}); {fix}") from None
    except (ValueError, RecursionError) as exc:
        raise SnapshotError(f"{label}: not a snapshot ({exc}); {fix}") from None
    try:
        return _checked(doc)
    except (TypeError, ValueError) as exc:
        raise SnapshotError(f"{label}: {exc}; {fix}") from None


def _numbers(value: Any, field: str, length: int | None = None) -> np.ndarray:
    if not isinstance(value, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise ValueError(f"'{field}' is not a list of numbers")
    if length is not None and len(value) != length:
        raise ValueError(f"'{field}' has {len(value)} values, the shape needs {length}")
    array = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"'{field}' holds a number too large to be finite")
    return array


def _checked(doc: Any) -> Snapshot:
    if not isinstance(doc, dict) or doc.get("pytest_xai_snapshot") != FORMAT:
        raise ValueError(f'not a pytest-xai snapshot (no "pytest_xai_snapshot": {FORMAT})')
    shape = doc.get("shape")
    if (
        not isinstance(shape, list)
        or not shape
        or not all(isinstance(k, int) and not isinstance(k, bool) and 0 < k <= 2**31 for k in shape)
    ):
        raise ValueError("'shape' is not a list of positive whole numbers")
    width = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else shape[0]
    count = shape[0] if len(shape) > 1 else 1
    rows = doc.get("rows")
    if not isinstance(rows, list) or len(rows) != count:
        raise ValueError(f"'rows' is not a list of {count} rows, as 'shape' {shape} says")
    values = np.stack([_numbers(row, f"rows[{i}]", width) for i, row in enumerate(rows)]).reshape(shape)
    spread = _numbers(doc.get("spread"), "spread", width)
    tolerance = _numbers(doc.get("tolerance"), "tolerance", width)
    if (tolerance < 0).any() or (spread < 0).any():
        raise ValueError("'spread' or 'tolerance' holds a negative number")
    seeds = doc.get("seeds", [])
    if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise ValueError("'seeds' is not a list of whole numbers")
    features = doc.get("features")
    if features is not None and (
        not isinstance(features, list) or len(features) != width or not all(isinstance(f, str) for f in features)
    ):
        raise ValueError(f"'features' is not a list of {width} names")
    meta = tuple((k, doc[k]) for k in ("test", "explainer", "case") if isinstance(doc.get(k), str))
    return Snapshot(values, spread, tolerance, tuple(seeds), None if features is None else tuple(features), meta)
