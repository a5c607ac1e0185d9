"""Run an untrusted call in a forked child with a time limit (DESIGN §7).

A thread cannot be stopped, and a signal cannot interrupt C code that holds the GIL, so an
explainer that spins in C would stall CI forever.  A forked child can always be killed: the parent
waits on a pipe until the deadline and then sends SIGKILL.  The child also isolates crashes
(segfaults in native code) and in-place mutation from the session.  Where ``fork`` does not exist
(Windows) the call runs in-process without a limit.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import time
import traceback
from typing import Any, Callable

from pytest_xai.errors import ExplainerError, ExplainerTimeout, NotApplicable

CAN_FORK = hasattr(os, "fork")


class ExplainerRaised(ExplainerError):
    """The explainer raised; ``.traceback`` holds the child's formatted traceback."""

    def __init__(self, message: str, traceback_text: str):
        super().__init__(message)
        self.traceback = traceback_text


def _describe(exc: BaseException) -> tuple[str, str, str]:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return type(exc).__name__, str(exc), tb


def _child(fn: Callable[[], Any], write_fd: int) -> None:
    try:
        try:
            payload = ("ok", fn())
        except NotApplicable as exc:
            payload = ("not_applicable", str(exc))
        except ExplainerError as exc:
            payload = ("invalid", str(exc))
        except BaseException as exc:  # the explainer is untrusted: report everything
            payload = ("raised", _describe(exc))
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            data = pickle.dumps(("raised", _describe(exc)))
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(struct.pack("<Q", len(data)))
            pipe.write(data)
    finally:
        os._exit(0)


def _read(read_fd: int, deadline: float | None) -> bytes:
    chunks = []
    with selectors.DefaultSelector() as selector:
        selector.register(read_fd, selectors.EVENT_READ)
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError
            if not selector.select(remaining):
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def call(fn: Callable[[], Any], timeout: float | None) -> Any:
    """Return ``fn()`` computed in a child process, killed after ``timeout`` seconds.

    ``timeout`` of None or 0 runs ``fn`` in this process (no limit; useful under a debugger).
    Raises NotApplicable, ExplainerTimeout, ExplainerRaised or ExplainerError.
    """
    if not timeout or not CAN_FORK:
        try:
            return fn()
        except (NotApplicable, ExplainerError):
            raise
        except Exception as exc:
            name, message, tb = _describe(exc)
            raise ExplainerRaised(f"raised {name}: {message}", tb) from exc
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read_fd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _child(fn, write_fd)
    os.close(write_fd)
    try:
        data = _read(read_fd, time.monotonic() + timeout)
    except TimeoutError:
        os.kill(pid, signal.SIGKILL)
        raise ExplainerTimeout(
            f"did not return within {timeout:g} s and was stopped (raise the limit with --xai-timeout)"
        ) from None
    finally:
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
    if len(data) < 8 or len(data) != 8 + struct.unpack("<Q", data[:8])[0]:
        how = (f"was killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
               if os.WIFSIGNALED(status) else f"exited with status {os.WEXITSTATUS(status)}")
        raise ExplainerError(f"its process {how} before returning (a crash in native code?)")
    kind, value = pickle.loads(data[8:])
    if kind == "ok":
        return value
    if kind == "not_applicable":
        raise NotApplicable(value)
    if kind == "invalid":
        raise ExplainerError(value)
    name, message, tb = value
    raise ExplainerRaised(f"raised {name}: {message}", tb)
