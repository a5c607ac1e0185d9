"""Files: written atomically, read with one clear line on a bad one (pure Python: no pytest, no numpy).

- Writing: :func:`replacing`, the one atomic write (a temporary file beside the target, renamed
  onto it), used by the cache entries (:mod:`pytest_xai.cache`) and, through :func:`write_bytes`
  (:func:`write_text`, which no string can break), by the reports.  A report's path is first
  resolved (:func:`target`): a regular file, or a path where none is yet, is replaced atomically
  (through a symlink, its target: the link stays); a FIFO, a device, a descriptor of this process
  (``/dev/stdout``, ``/dev/fd/N``) and ``-`` (standard output) are written in place, never
  replaced (issue 41: as root, ``merge -o /dev/full`` replaced the machine's /dev/full).  The
  writers of a run are guarded (:func:`write_reports`): written in a fixed order, JSON first (the
  one CI reads), then the saved baseline, then the HTML report; a writer that fails is reported
  and the next one still runs, and the run exits :data:`REPORT_FAILED` (docs/ci.md, "Exit codes").
- Reading data: :func:`csv_records` reads the CSV files users put in ``--xai-data-dir``; their
  problems are :class:`DataFileError`.
- Reading reports: :func:`read_report` and :func:`check_report`, the one check of a JSON report or
  baseline from elsewhere (``--xai-baseline``, ``merge``, ``html``).  Every field this package reads
  is checked for its type against the schema below before anything sorts, sums or renders it, and
  a wrong file is one line naming the file, the field and what to do.  Keys it does not know are
  allowed (a newer writer's fields), and so are fields that are missing (an older writer's).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The exit status of a run whose tests ran but one of whose reports could not be written.  It
#: replaces 0 and 1 (the terminal still shows the tests' outcome); pytest's own codes 2-5 (interrupted,
#: internal error, usage error, no tests) are kept.  Not pytest's INTERNAL_ERROR (3), which says the
#: plugin or pytest itself broke.
REPORT_FAILED = 6
#: The order reports are written in, and what each is called in messages.
ORDER = (("json", "JSON report"), ("baseline", "saved baseline"), ("html", "HTML report"))


def create_temp(path: str | os.PathLike[str]) -> str:
    """A new empty file beside ``path``, ``.<stem>.<random>.tmp<suffix>``, with the permissions of an
    ordinary file (0666 minus the umask, unlike ``tempfile.mkstemp``'s 0600).  It keeps ``path``'s
    suffix, for writers that choose a format by it (xgboost's ``save_model``), and ``.tmp`` in its
    name, so that a sweep finds what a killed writer left (:meth:`pytest_xai.cache.Cache.sweep`)."""
    import secrets

    directory, name = os.path.split(os.path.abspath(path))
    stem, suffix = os.path.splitext(name)
    while True:
        tmp = os.path.join(directory, f".{stem}.{secrets.token_hex(6)}.tmp{suffix}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666))
            return tmp
        except FileExistsError:
            continue


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[str]:
    """Write ``path`` atomically: the block writes the temporary file it is given
    (:func:`create_temp`), which then replaces ``path``, so a reader, a concurrent xdist worker
    included, sees the old file or the whole new one; if the block raises, it is deleted and ``path``
    is left as it was.  The one atomic write of the package (reports, cache entries)."""
    tmp = create_temp(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


#: The output path that means standard output.
STDOUT = "-"
MAX_LINKS = 40  # symlinks followed before a path is refused (the kernel's ELOOP limit)
#: How long a FIFO is given to get a reader before its report is given up (never a hang at session end).
FIFO_WAIT = 30.0
#: A descriptor of a process, as ``/dev/stdout`` and ``/dev/fd/N`` resolve (Linux).
_DESCRIPTOR = re.compile(r"/proc/(self|thread-self|[0-9]+)/fd/([0-9]+)")


@dataclass(frozen=True)
class Target:
    """Where an output path leads (:func:`target`).  ``kind``: ``"file"`` (``path``, resolved, is
    replaced atomically; it may not exist yet), ``"stream"`` (``path`` is a FIFO, a device or a
    file of ``/proc``: written in place), ``"fd"`` (a descriptor of this process, ``fd``: written
    through it) or ``"stdout"`` (``-``)."""

    kind: str
    path: str
    fd: int | None = None

    @property
    def identity(self) -> tuple[Any, ...]:
        """What two outputs share when they are one (a file by its inode when it exists)."""
        if self.kind == "stdout":
            return ("fd", 1)
        if self.kind == "fd":
            return ("fd", self.fd)
        try:
            st = os.stat(self.path)
        except OSError:
            return ("path", os.path.normcase(self.path))
        return ("inode", st.st_dev, st.st_ino)


def _in_proc(directory: str) -> bool:
    return directory == "/proc" or directory.startswith("/proc/")


def target(path: str | os.PathLike[str]) -> Target:
    """Where writing ``path`` leads, its symlinks followed one at a time (``os.path.realpath``
    resolves ``/dev/stdout`` of a run redirected to a file to that file, which must not be
    replaced).  Raises ``IsADirectoryError`` for a directory and ``OSError`` (ELOOP) for a loop."""
    text = os.fspath(path)
    if text == STDOUT:
        return Target("stdout", STDOUT)
    current = os.path.abspath(text)
    for _ in range(MAX_LINKS):
        parent = os.path.realpath(os.path.dirname(current))
        current = os.path.join(parent, os.path.basename(current))
        own = _DESCRIPTOR.fullmatch(current)
        if own and own[1] in ("self", "thread-self", str(os.getpid())):
            return Target("fd", current, int(own[2]))
        try:
            st = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):  # created by the write (which says what is in the way)
            return Target("file", current)
        if stat.S_ISLNK(st.st_mode):
            current = os.path.join(parent, os.readlink(current))
            continue
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", text)
        return Target("file" if stat.S_ISREG(st.st_mode) and not _in_proc(parent) else "stream", current)
    raise OSError(errno.ELOOP, "too many levels of symbolic links", text)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_stream(path: str, data: bytes) -> None:
    """Write a FIFO or a device in place.  Opened without blocking, so that a FIFO nobody reads is
    given up after :data:`FIFO_WAIT` seconds instead of hanging the session."""
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            fd = os.open(path, flags | nonblocking)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                if exc.errno == errno.ENXIO:
                    raise OSError(errno.ENXIO, f"no process read the FIFO in {FIFO_WAIT:g} s", path) from None
                raise
            time.sleep(0.05)
    try:
        if nonblocking:
            os.set_blocking(fd, True)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_descriptor(fd: int, data: bytes) -> None:
    """Write through descriptor ``fd`` itself, after what Python buffered for it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a replaced stream without fileno() or flush()
            if stream is not None and stream.fileno() == fd:
                stream.flush()
    _write_all(fd, data)


def _write_stdout(data: bytes) -> None:
    out = sys.stdout
    if out is None:
        raise OSError(errno.EBADF, "there is no standard output", STDOUT)
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:  # a text-only stream (a test's capture): the bytes are UTF-8
        out.write(data.decode("utf-8"))
    out.flush()


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to the output ``path`` (:func:`target`): a regular file (or a path where none
    is) atomically (:func:`replacing`, its directory created), a FIFO, a device or a descriptor in
    place, ``-`` to standard output."""
    where = target(path)
    if where.kind == "stdout":
        _write_stdout(data)
    elif where.kind == "fd":
        assert where.fd is not None
        _write_descriptor(where.fd, data)
    elif where.kind == "stream":
        _write_stream(where.path, data)
    else:
        os.makedirs(os.path.dirname(where.path), exist_ok=True)
        with replacing(where.path) as tmp, open(tmp, "wb") as fh:
            fh.write(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 to the output ``path`` (:func:`write_bytes`); a lone surrogate or any
    other character UTF-8 cannot encode is written as its backslash escape."""
    write_bytes(path, text.encode("utf-8", errors="backslashreplace"))


@dataclass(frozen=True)
class Written:
    """What became of one output of a run (:func:`write_reports`): ``error`` is None when it was written."""

    kind: str
    what: str
    path: str
    error: str | None = None

    @property
    def where(self) -> str:
        """The output as the footer names it: its absolute path, or standard output."""
        return "standard output" if self.path == STDOUT else os.path.abspath(self.path)

    @property
    def line(self) -> str:
        """The footer's line: ``JSON report: PATH``, or ``JSON report not written: PATH (why)``."""
        label = {"baseline": "baseline saved"}.get(self.kind, self.what)
        if self.error is None:
            return f"{label}: {self.where}"
        return f"{self.what} not written: {self.where} ({self.error})"

    @property
    def failure(self) -> str:
        """The line on stderr of an output that could not be written."""
        return f"pytest-xai: could not write the {self.what} {self.path}: {self.error}"


def write_reports(
    doc: Mapping[str, Any],
    paths: Mapping[str, str | None],
    writers: Mapping[str, Callable[[str, Mapping[str, Any]], None]],
) -> list[Written]:
    """Write ``doc`` to each of ``paths`` (``{"json" | "baseline" | "html": path or None}``) with its
    writer, in :data:`ORDER`; returns what became of each (one that failed has its ``error``, and
    the next was written all the same)."""
    outcomes = []
    for kind, what in ORDER:
        path = paths.get(kind)
        if not path:
            continue
        error = None
        try:
            writers[kind](path, doc)
        except Exception as exc:  # noqa: BLE001 - one report lost must not cost the others
            error = f"{type(exc).__name__}: {str(exc).encode('ascii', 'backslashreplace').decode('ascii')[:500]}"
        outcomes.append(Written(kind, what, path, error))
    return outcomes


# ------------------------------------------------------------------------------ data files


class DataFileError(ValueError):
    """A data file (``--xai-data-dir`` or a benchmark copy) cannot be read; the message names the
    file, the line when there is one, what is wrong and what to do."""


def _first_bad_utf8_line(path: Path) -> int | None:
    with open(path, "rb") as fh:  # a newline byte never occurs inside a UTF-8 sequence
        for number, raw in enumerate(fh, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return None


def csv_records(path: str | os.PathLike, hint: str = ""):
    """Yield ``(line, fields)`` for each record of a UTF-8 CSV file (a BOM is dropped), ``line``
    being where the record starts.  A file that cannot be read, is not UTF-8 or is not CSV (a field
    over ``csv.field_size_limit()``, usually an unclosed quote) raises :class:`DataFileError` naming
    the file and line, followed by ``hint`` (what to do)."""
    import csv

    path = Path(path)
    fix = f"; {hint}" if hint else ""
    try:
        fh = open(path, newline="", encoding="utf-8-sig")  # noqa: SIM115 - closed by `with fh:` below
    except OSError as exc:
        raise DataFileError(f"{path}: cannot be read ({exc.strerror or exc}){fix}") from None
    with fh:
        reader = csv.reader(fh)
        end = 0
        while True:
            start = end + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                if "field larger than field limit" in str(exc):
                    upto = f" (read up to line {reader.line_num})" if reader.line_num > start else ""
                    raise DataFileError(
                        f"{path}, line {start}: a field is longer than {csv.field_size_limit():,} characters"
                        f'{upto}: not a CSV of this kind, or a quote (") opened there is never closed{fix}'
                    ) from None
                raise DataFileError(f"{path}, line {start}: malformed CSV ({exc}){fix}") from None
            except UnicodeDecodeError as exc:
                line = _first_bad_utf8_line(path)
                where = f" at line {line}" if line else ""
                raise DataFileError(
                    f"{path}: not a UTF-8 text file ({exc.reason}{where}); save it as UTF-8{fix}"
                ) from None
            except OSError as exc:
                raise DataFileError(f"{path}, line {start}: read error ({exc.strerror or exc}){fix}") from None
            end = reader.line_num
            yield start, fields


# ------------------------------------------------------------------------- reports read back
# The schema: the type of each field this package reads (RESULT: a Record's fields, TOP, AGGREGATE
# of the summary, BRIEF of a baseline diff's entry), then the one check of a report from elsewhere.


MAX_DEPTH = 32  # deeper than any report we write (about 8)
#: The largest report read back.  A merged report carries its pictures as data (each at most
#: :data:`pytest_xai.reports.embed.MAX_BYTES`, about 50 kB in practice): a few MB for the whole suite.
MAX_REPORT_BYTES = 256 * 2**20
#: What to do about a report that cannot be read.
REPORT_FIX = "give a file written by --xai-report or --xai-save-baseline"
NON_FINITE = ("inf", "-inf", "nan")  # how report.jsonable writes non-finite floats


class ReportError(ValueError):
    """A report that cannot be read: one line naming the file, the field and what to do."""


class FieldType:
    """A field's type test and its name in messages."""

    def __init__(self, test: Callable[[Any], bool], expected: str):
        self.test, self.expected = test, expected

    def __call__(self, value: Any) -> bool:
        return self.test(value)


def _optional(kind: FieldType) -> FieldType:
    return FieldType(lambda v: v is None or kind(v), f"{kind.expected} or null")


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in NON_FINITE


_str = FieldType(lambda v: isinstance(v, str), "a string")
_int = FieldType(lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer")
_number = FieldType(_is_number, 'a number (or "inf", "-inf", "nan")')
_bool = FieldType(lambda v: isinstance(v, bool), "true or false")
_object = FieldType(lambda v: isinstance(v, dict), "an object")
_objects = FieldType(lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of objects")
_strings = FieldType(
    lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()), "an object of strings"
)

RESULT = {  # the fields of pytest_xai.reports.record.Record
    "nodeid": _str,
    "explainer": _str,
    **{
        k: _optional(_str)
        for k in (
            "row",
            "test",
            "case",
            "family",
            "category",
            "check",
            "outcome",
            "status",
            "kind",
            "detail",
            "error",
            "picture",
            "regression",
        )
    },
    **{k: _optional(_number) for k in ("score", "threshold", "seconds", "cpu_seconds", "duration")},
    **{k: _optional(_bool) for k in ("passed", "cached", "flaky")},
    "seed": _optional(_int),
    "evaluations": _optional(_int),
    "budget": _optional(_int),
    "threshold_sources": _optional(_strings),
    "repeat": _optional(_object),
    "convergence": _optional(_objects),
}
AGGREGATE = {
    **{k: _int for k in ("tests", "ran", "skipped", "passed", "errors", "timeouts")},
    **{k: _optional(_number) for k in ("mean_score", "mean_seconds", "mean_cpu_seconds", "mean_evaluations")},
}
TOP = {
    "seed": _optional(_int),
    "created": _optional(_str),
    "exitstatus": _optional(_int),
    "versions": _optional(_strings),
    "machine": _optional(_object),
    "options": _optional(_object),
    "repeat": _optional(_int),
    "budget": _optional(_int),
}
SHARD = {  # --xai-shard's record (pytest_xai.plugin.ci, checked by merge)
    **{k: _optional(_int) for k in ("k", "n", "collected", "assigned")},
    **{k: _optional(_str) for k in ("selection", "options", "tests")},
}
BRIEF = {
    "status": _optional(_str),
    "score": _optional(_number),
    "seconds": _optional(_number),
    "evaluations": _optional(_int),
    "flaky": _optional(_bool),
}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _fields(obj: Any, spec: Mapping[str, FieldType], where: str) -> None:
    if not isinstance(obj, dict):
        raise ReportError(f"{where}: expected an object, got {_kind(obj)}")
    for key, kind in spec.items():
        if key in obj and not kind(obj[key]):
            got = "null" if obj[key] is None else f"{_kind(obj[key])} {_clip(obj[key])}"
            raise ReportError(f"{where}.{key}: expected {kind.expected}, got {got}")


def _clip(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _list(obj: Any, where: str) -> list:
    if not isinstance(obj, list):
        raise ReportError(f"{where}: expected a list, got {_kind(obj)}")
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


def _validate(doc: Any) -> dict:
    """``doc`` if it is a report this package can read, else :class:`ReportError` naming the field."""
    from pytest_xai.reports.record import SCHEMA
    from pytest_xai.reports.record import SCHEMA_VERSION as VERSION

    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ReportError(f'not a pytest-xai JSON report (no "schema": "{SCHEMA}")')
    if doc.get("version") != VERSION:
        raise ReportError(f"version: report format {_clip(doc.get('version'))}, this pytest-xai reads {VERSION}")
    if _depth(doc) > MAX_DEPTH:
        raise ReportError(f"nested deeper than {MAX_DEPTH} levels")
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
    if doc.get("shard") is not None:
        _shard(doc["shard"])
    for i, shard in enumerate(_list(doc.get("shards", []), "shards")):
        _fields(
            shard,
            {
                "path": _optional(_str),
                "created": _optional(_str),
                "exitstatus": _optional(_int),
                "results": _optional(_int),
            },
            f"shards[{i}]",
        )
    for i, problem in enumerate(_list(doc.get("merge_mismatches", []), "merge_mismatches")):
        if not isinstance(problem, str):
            raise ReportError(f"merge_mismatches[{i}]: expected a string, got {_kind(problem)}")
    pictures = doc.get("pictures", {})
    if not isinstance(pictures, dict) or not all(isinstance(v, str) for v in pictures.values()):
        raise ReportError("pictures: expected an object of base64 strings")
    if doc.get("baseline") is not None:
        _baseline(doc["baseline"])
    return doc


def _shard(shard: Any) -> None:
    from pytest_xai.reports.shard import MAX_SHARDS

    _fields(shard, SHARD, "shard")
    for key in ("k", "n"):
        if shard.get(key) is not None and not 1 <= shard[key] <= MAX_SHARDS:
            raise ReportError(f"shard.{key}: expected an integer from 1 to {MAX_SHARDS}, got {_clip(shard[key])}")


def _baseline(base: Any) -> None:
    _fields(
        base,
        {
            "path": _optional(_str),
            "created": _optional(_str),
            "seed": _optional(_int),
            "changed_versions": _optional(_object),
            "diff": _optional(_object),
        },
        "baseline",
    )
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
                raise ReportError(f"{where}.reasons: expected a list of strings")
    for name, pair in (base.get("changed_versions") or {}).items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(v is None or isinstance(v, str) for v in pair)):
            raise ReportError(f"baseline.changed_versions.{name}: expected [version or null, version or null]")


def check_report(doc: Any, label: str, fix: str = REPORT_FIX) -> dict:
    """``doc`` if it is a report this package can read, else a one-line :class:`ReportError` that
    starts with ``label`` (the file, e.g. ``--xai-baseline=PATH``), names the field and ends with ``fix``."""
    try:
        return _validate(doc)
    except ReportError as exc:
        raise ReportError(f"{label}: {exc}; {fix}") from None


def _read_regular(path: str | os.PathLike[str], label: str, fix: str) -> bytes:
    """The bytes of the regular file ``path``, at most :data:`MAX_REPORT_BYTES`.  Opened without
    blocking and checked before reading: a FIFO waited for a writer forever, ``/dev/zero`` grew the
    reader without end (issue 41)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(os.fspath(path), flags)
    except FileNotFoundError:
        raise ReportError(f"{label}: no such file; {fix}") from None
    except OSError as exc:
        raise ReportError(f"{label}: cannot be read ({exc.strerror or exc}); {fix}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ReportError(f"{label}: is a directory; {fix}")
        if not stat.S_ISREG(st.st_mode):
            raise ReportError(f"{label}: not a regular file (a FIFO, a device or a socket); {fix}")
        data = b"" if st.st_size > MAX_REPORT_BYTES else fh.read(MAX_REPORT_BYTES + 1)
        if st.st_size > MAX_REPORT_BYTES or len(data) > MAX_REPORT_BYTES:
            raise ReportError(f"{label}: larger than {MAX_REPORT_BYTES // 2**20} MiB, more than any report; {fix}")
    return data


def read_report(path: str | os.PathLike[str], label: str, fix: str = REPORT_FIX) -> dict:
    """The report at ``path`` (a regular file of at most :data:`MAX_REPORT_BYTES`), read and checked
    (:func:`check_report`): every error is one line that starts with ``label`` and ends with ``fix``."""
    data = _read_regular(path, label, fix)
    try:
        doc = json.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{label}: cannot be read ({exc}); {fix}") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{label}: not JSON (line {exc.lineno}: {exc.msg}); {fix}") from None
    except RecursionError:
        raise ReportError(f"{label}: nested too deeply to be a report; {fix}") from None
    return check_report(doc, label, fix)
