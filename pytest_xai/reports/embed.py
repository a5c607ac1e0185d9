"""Which worst-example pictures a report may embed (pure Python, no pytest).

A report's ``picture`` fields are text from whoever wrote the report: never a path to open.  A
picture is embedded only when it is a file the run wrote in the report's own pictures folder
(``<report>-pictures/NAME.png``, a regular file, not a link, a PNG), or PNG data a merge carried
(``pictures`` in the merged report, ``{nodeid: base64}``).  So an HTML report rendered from a file
of a fork's pull request shows no file of the machine that renders it.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

PNG = b"\x89PNG\r\n\x1a\n"
NAME = re.compile(r"[A-Za-z0-9_.-]+\.png")
MAX_BYTES = 5_000_000  # a drawing is about 50 kB


#: Where a report with no folder of its own draws its pictures (:func:`folder`).
STREAM_FOLDER = Path("xai-report-pictures")


def folder(report: str | os.PathLike[str]) -> Path:
    """Where the run that writes ``report`` draws its pictures: ``<report>-pictures`` beside it,
    except for a report with no folder of its own (``-``, a descriptor such as ``/dev/stdout``, a
    device of /dev or /proc), whose pictures go to :data:`STREAM_FOLDER` of the working directory,
    never into /dev."""
    from pytest_xai.reports.files import target

    try:
        where = target(report)
    except OSError:  # a directory or a loop: the write fails and says so; the pictures go beside it
        where = None
    if where is not None and (
        where.kind in ("stdout", "fd") or (where.kind == "stream" and where.path.startswith(("/dev/", "/proc/")))
    ):
        return STREAM_FOLDER
    path = Path(report)
    return path.parent / f"{path.stem}-pictures"


def _read_png(directory: Path, name: str) -> bytes | None:
    """The PNG file ``name`` of ``directory``, or None: not a plain file name, a link, a FIFO or
    device (opened without blocking), not a PNG, or too large."""
    if not NAME.fullmatch(name):
        return None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(directory / name, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = fh.read(MAX_BYTES + 1)
    return data if data.startswith(PNG) and len(data) <= MAX_BYTES else None


def collect(report: str | os.PathLike[str], results: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{nodeid: base64 PNG}`` for the results whose picture is in ``report``'s pictures folder;
    only the file name of ``picture`` is used, looked up in that folder."""
    directory = folder(report)
    out = {}
    for result in results:
        picture, nodeid = result.get("picture"), result.get("nodeid")
        if isinstance(picture, str) and isinstance(nodeid, str):
            data = _read_png(directory, picture.replace("\\", "/").rpartition("/")[2])
            if data is not None:
                out[nodeid] = base64.b64encode(data).decode("ascii")
    return out


def carried(doc: Mapping[str, Any]) -> dict[str, str]:
    """The PNG pictures a merged report carries as data, decoded and encoded again (nothing else)."""
    out = {}
    given = doc.get("pictures")
    for nodeid, text in given.items() if isinstance(given, Mapping) else ():
        try:
            data = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
        except (binascii.Error, ValueError):
            continue
        if isinstance(nodeid, str) and data.startswith(PNG) and len(data) <= MAX_BYTES:
            out[nodeid] = base64.b64encode(data).decode("ascii")
    return out
