"""Waiting on another process without trusting it: dead, stopped and idle rules (Linux ``/proc``).

Every wait of the plugin on a process it does not control (a worker, the zygote, a probe) asks,
at each tick, whether that process still exists, is stopped (state ``T``: SIGSTOP from an
explainer or from outside) or idle (under :data:`IDLE_SHARE` of one core after a grace), and gives
up within a short bound.  Pure Python, no pytest.
"""

from __future__ import annotations

import os
import select
import socket
import time

#: Below this share of one core over the wall time, a process that should be working is idle.
IDLE_SHARE = 0.05
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
TICK = 0.05


def process_state(pid: int) -> bytes | None:
    """The one-letter state of ``pid`` (b"Z" zombie, b"T" stopped), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` and its reaped children (Linux /proc), else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return sum(int(f) for f in fields[11:15]) / _CLK_TCK


def stopped(pid: int) -> bool:
    return process_state(pid) in (b"T", b"t")


def receive(sock: socket.socket, pid: int | None, bound: float, *, idle_after: float = 5.0, size: int = 4096) -> bytes:
    """One message from ``sock``, sent by process ``pid``; OSError naming why, as soon as ``pid``
    is gone, stopped or idle for ``idle_after`` seconds, or after ``bound`` seconds."""
    start = time.monotonic()
    cpu = cpu_seconds(pid) if pid is not None else None
    while True:
        if select.select([sock], [], [], TICK)[0]:
            return sock.recv(size)
        elapsed = time.monotonic() - start
        if pid is not None:
            state = process_state(pid)
            if state in (None, b"Z", b"X"):
                raise OSError(f"process {pid} has ended")
            if state in (b"T", b"t"):
                raise OSError(f"process {pid} is stopped (SIGSTOP)")
            now = cpu_seconds(pid)
            if elapsed > idle_after and cpu is not None and now is not None and now - cpu < IDLE_SHARE * elapsed:
                raise OSError(f"process {pid} is idle: {now - cpu:.2f} CPU seconds in {elapsed:.1f} s")
        if elapsed > bound:
            raise OSError(f"process {pid} did not answer within {bound:g} s")
