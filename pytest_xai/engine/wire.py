"""The message format between the plugin and its worker processes: JSON plus raw float64 arrays.

Nothing that crosses from a worker to the plugin is unpickled: a message is a length-prefixed JSON
header (builtin strings, numbers, lists, dicts) followed by the bytes of its arrays, all float64
little-endian, whose names and shapes the header lists.  :func:`read` checks every length, name and
shape before it builds anything, so a worker (or an explainer inside it) that writes garbage or a
forged message to the channel gets a :class:`WireError`, never code run in the plugin.
"""

from __future__ import annotations

import json
import os
import select
import struct
from collections.abc import Callable
from typing import Any

MAGIC = b"XAI\x01"
_PREFIX = struct.Struct("<4sIQ")  # magic, header bytes, array bytes
MAX_HEADER = 4 << 20  # texts are capped by the sender (see ``clip``); this is the hard limit
MAX_ARRAYS = 2 << 30
MAX_TEXT = 20_000


class WireError(Exception):
    """A message that is not one the protocol allows (truncated, oversized, malformed)."""


def clip(text: Any, limit: int = MAX_TEXT) -> str:
    """A builtin ``str`` of at most ``limit`` characters (head and tail kept) from any object."""
    try:
        if type(text) is not str:
            text = str.__str__(text) if isinstance(text, str) else str(text)
            text = str.__str__(text)  # __str__ may itself return a str subclass: make it a plain str
    except BaseException as exc:  # noqa: BLE001 - __str__ of untrusted objects may do anything
        text = f"<text unavailable: converting it raised {type(exc).__name__}>"
    out: str = text  # a plain str by now
    if len(out) > limit:
        half = limit // 2
        out = f"{out[:half]}\n... [{len(out) - limit} characters cut] ...\n{out[-half:]}"
    return out


def pack(header: dict[str, Any], arrays: dict[str, Any] | None = None, blob: bytes = b"") -> bytes:
    """One message: ``header`` (JSON-serialisable), named float64 arrays and an opaque ``blob``.

    Only the plugin sends blobs (to its own workers); :func:`read` refuses them unless asked.
    """
    import numpy as np

    arrays = {k: np.ascontiguousarray(v, dtype="<f8") for k, v in (arrays or {}).items() if v is not None}
    header = {**header, "arrays": [[name, list(a.shape)] for name, a in arrays.items()], "blob": len(blob)}
    head = json.dumps(header, allow_nan=False, ensure_ascii=True).encode()
    body = b"".join(a.tobytes() for a in arrays.values()) + blob
    return _PREFIX.pack(MAGIC, len(head), len(body)) + head + body


def write(fd: int, message: bytes) -> None:
    view = memoryview(message)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, n: int, tick: Callable[[int], None] | None, before: int = 0) -> bytes:
    """``n`` bytes; ``tick(received)`` while waiting, ``received`` counting the ``before`` bytes of
    this message already read (0: between messages)."""
    chunks, got = [], 0
    while got < n:
        if tick is not None:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                tick(before + got)
                continue
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError(f"channel closed after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read(
    fd: int, tick: Callable[[int], None] | None = None, *, names: tuple[str, ...] = (), blob: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read one message; ``tick(received)`` is called about every 50 ms while waiting (it may
    raise), with the bytes of this message received so far.

    Only arrays named in ``names`` are accepted, and a blob only with ``blob=True`` (it is then
    ``arrays["blob"]``, bytes).  Raises EOFError when the channel closes and :class:`WireError`
    for anything malformed.
    """
    import numpy as np

    magic, head_len, body_len = _PREFIX.unpack(_read_exactly(fd, _PREFIX.size, tick))
    if magic != MAGIC or head_len > MAX_HEADER or body_len > MAX_ARRAYS:
        raise WireError(f"not a pytest-xai message (prefix {magic!r}, {head_len} + {body_len} bytes)")
    try:
        header = json.loads(_read_exactly(fd, head_len, tick, _PREFIX.size).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"unreadable message header: {exc}") from None
    specs = header.get("arrays") if isinstance(header, dict) else None
    if not isinstance(specs, list):
        raise WireError("message header is not an object with an 'arrays' list")
    shapes, total = {}, 0
    for spec in specs:
        ok = (
            isinstance(spec, list)
            and len(spec) == 2
            and spec[0] in names
            and spec[0] not in shapes
            and isinstance(spec[1], list)
            and all(type(d) is int and 0 <= d < 2**40 for d in spec[1])
        )
        if not ok:
            raise WireError(f"message lists an array it may not send: {clip(spec, 200)}")
        shapes[spec[0]] = tuple(spec[1])
        total += 8 * int(np.prod(shapes[spec[0]], dtype=np.int64))
    blob_len = header.get("blob", 0)
    if type(blob_len) is not int or blob_len < 0 or (blob_len and not blob):
        raise WireError("message carries a blob where none is allowed")
    total += blob_len
    if total != body_len:
        raise WireError(f"message arrays take {total} bytes but {body_len} were announced")
    body = _read_exactly(fd, body_len, tick, _PREFIX.size + head_len)
    arrays: dict[str, Any] = {}
    offset = 0
    for name, shape in shapes.items():
        size = 8 * int(np.prod(shape, dtype=np.int64))
        arrays[name] = np.frombuffer(body, dtype="<f8", count=size // 8, offset=offset).reshape(shape).astype(float)
        offset += size
    if blob:
        arrays["blob"] = body[offset:]
    return header, arrays
