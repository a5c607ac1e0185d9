"""Report files: atomic text writes that no string can break, and the writers of a run, guarded.

Pure Python, no pytest.  The run's reports are written in a fixed order, JSON first (the one CI
reads), then the saved baseline, then the HTML report; a writer that fails is reported and the next
one still runs, and the run exits :data:`REPORT_FAILED` (docs/ci.md, "Exit codes").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

#: The exit status of a run whose tests ran but one of whose reports could not be written.  It
#: replaces 0 and 1 (the terminal still shows the tests' outcome); pytest's own codes 2-5 (interrupted,
#: internal error, usage error, no tests) are kept.  Not pytest's INTERNAL_ERROR (3), which says the
#: plugin or pytest itself broke.
REPORT_FAILED = 6
#: The order reports are written in, and what each is called in messages.
ORDER = (("json", "JSON report"), ("baseline", "saved baseline"), ("html", "HTML report"))


def create_temp(directory: str, prefix: str, suffix: str) -> tuple[int, str]:
    """``tempfile.mkstemp`` with the permissions of an ordinary file (0666 minus the umask)."""
    import secrets

    while True:
        path = os.path.join(directory, f"{prefix}{secrets.token_hex(6)}{suffix}")
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), path
        except FileExistsError:
            continue


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` atomically as UTF-8 (a reader sees the old file or the whole new one); a lone
    surrogate or any other character UTF-8 cannot encode is written as its backslash escape."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    data = text.encode("utf-8", errors="backslashreplace")
    fd, tmp = create_temp(directory, ".xai-report-", ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_reports(doc: Mapping[str, Any], paths: Mapping[str, str | None],
                  writers: Mapping[str, Callable[[str, Mapping[str, Any]], None]]) -> list[str]:
    """Write ``doc`` to each of ``paths`` (``{"json" | "baseline" | "html": path or None}``) with its
    writer, in :data:`ORDER`; returns one line for each writer that failed (and the next ran)."""
    failures = []
    for kind, what in ORDER:
        path = paths.get(kind)
        if not path:
            continue
        try:
            writers[kind](path, doc)
        except Exception as exc:  # noqa: BLE001 - one report lost must not cost the others
            failures.append(f"pytest-xai: could not write the {what} {path}: {type(exc).__name__}: "
                            f"{str(exc).encode('ascii', 'backslashreplace').decode('ascii')[:500]}")
    return failures
