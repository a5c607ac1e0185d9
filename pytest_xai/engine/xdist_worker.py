"""The ``python`` of xdist's workers under ``pytest -n N``: a fork of the zygote, which imported torch,
xgboost, scikit-learn and scipy once for the whole run (docs/design.md, "Isolation").

xdist starts each worker as ``PYTHON -u -c BOOTSTRAP`` over pipes (execnet's popen gateway).  The
plugin makes ``PYTHON`` this module (``popen//python=... -m pytest_xai.engine.xdist_worker SOCKET``): it
asks the zygote listening at ``SOCKET`` to fork a child that runs ``BOOTSTRAP`` with this process's
stdin, stdout, stderr, environment, directory and ``sys.path``, then waits for that child and exits
with its code, passing on SIGINT, SIGTERM and SIGHUP.  When the zygote cannot fork (it does not
answer, or holds a thread), this process becomes that plain ``python`` instead (``os.execv``).
"""

from __future__ import annotations

import os
import signal
import socket
import sys

#: Flags of execnet's command line that a forked child can honour (``-B``: no bytecode files).
FLAGS = ("-u", "-B")


def _fork(address: str, flags: list[str], code: str, argv: list[str]) -> tuple[socket.socket, int, int] | None:
    """(the zygote's socket, the child's pid, the read end of its lifeline), or None."""
    from pytest_xai.engine import zygote

    request = {
        "code": code,
        "argv": ["-c", *argv],
        "cwd": os.getcwd(),
        "environ": dict(os.environ),
        "sys_path": ["", *sys.path[1:]],
        "dont_write_bytecode": "-B" in flags or sys.dont_write_bytecode,
    }
    lifeline, theirs = os.pipe()
    try:
        forked = zygote.become(address, request, [0, 1, 2, theirs])
    finally:
        os.close(theirs)
    if forked is None:
        os.close(lifeline)
        return None
    return (*forked, lifeline)


def _status(sock: socket.socket, pid: int, address: str) -> int:
    """The child's exit code as the zygote reaped it (1 when it cannot say: it has gone, is stopped
    or does not answer)."""
    from pytest_xai.engine import zygote

    zygote_pid = zygote.split_address(address)[1]
    status = zygote.exit_status(lambda request: zygote.ask(sock, zygote_pid, request), pid)
    if status is None:
        return 1
    return 128 - status if status < 0 else status  # killed: as a shell reports it


#: Signals passed on to the child; held back while it is being forked, then delivered to it.
PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def main(argv: list[str]) -> int:
    address, args = argv[1], argv[2:]
    flags = args[: args.index("-c")] if "-c" in args else None
    forked = None
    signal.pthread_sigmask(signal.SIG_BLOCK, PASSED_ON)  # the child may run before we know its pid
    if flags is not None and set(flags) <= set(FLAGS) and len(args) > len(flags) + 1:
        code = args[len(flags) + 1]
        forked = _fork(address, flags, code, args[len(flags) + 2 :])
    if forked is None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, PASSED_ON)
        os.execv(sys.executable, [sys.executable, *args])
    sock, pid, lifeline = forked

    def pass_on(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in PASSED_ON:
        signal.signal(signum, pass_on)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, PASSED_ON)  # a signal that came meanwhile is passed on now
    while os.read(lifeline, 1):  # EOF once the child has ended (it holds the write end)
        pass
    return _status(sock, pid, address)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
