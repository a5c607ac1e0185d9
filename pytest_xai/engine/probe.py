"""A user's explainer module imported first in a throwaway process (pure Python, no pytest).

The plugin needs only an explainer's name, the contract names its signature asks for and its
claims (simple attributes such as ``explain.completeness = "background"``).  Importing the module
in pytest's process to learn them let a module that calls ``os._exit(0)`` end the run green with no
report, and one that hangs hang it.  Here the import runs in its own process, under the CPU limit
of a call, the wall-clock backstop and the idle rule of :mod:`pytest_xai.engine.isolate`; whatever it does
becomes a description: ``{"name", "wants", "claims"}``, ``{"usage": message}`` (a bad spec, a usage
error) or ``{"broken": message, "kind": kind}`` (it exited, hung, crashed or raised while imported:
its tests fail with that, the run goes on).

    python -m pytest_xai.engine.probe FD CPU   # the request (JSON) on stdin, the description written to FD
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

#: Wall seconds between the checks of the probe's process.
TICK = 0.05


def describe(spec: str, option: str, *, cpu: float, wall: float) -> dict[str, Any]:
    """What importing ``spec`` in a fresh process gives, within ``cpu`` CPU and ``wall`` wall seconds."""
    from pytest_xai.engine.watch import IDLE_SHARE, cpu_seconds, stopped
    from pytest_xai.engine.zygote import thread_environment

    request = json.dumps({"spec": spec, "option": option, "sys_path": list(sys.path), "cwd": os.getcwd()})
    read, write = os.pipe()
    with tempfile.TemporaryFile() as log:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest_xai.engine.probe", str(write), repr(cpu)],
                pass_fds=(write,),
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=thread_environment(),
            )
        finally:
            os.close(write)
        try:
            assert proc.stdin is not None
            proc.stdin.write(request.encode())
            proc.stdin.close()
            data, start, problem = b"", time.monotonic(), None
            while True:
                ready, _, _ = select.select([read], [], [], TICK)
                if ready:
                    chunk = os.read(read, 65536)
                    if not chunk:
                        break
                    data += chunk
                    continue
                elapsed, used = time.monotonic() - start, cpu_seconds(proc.pid)
                if stopped(proc.pid):
                    problem = "was stopped (SIGSTOP)"
                elif used is not None and used < IDLE_SHARE * elapsed and elapsed > cpu:
                    problem = (
                        f"was idle: it used {used:.2f} CPU seconds in {elapsed:.1f} s (an import that sleeps, "
                        f"waits for input or a lock?)"
                    )
                elif elapsed > wall:
                    problem = f"did not finish within {wall:g} s"
                if problem:
                    break
        finally:
            _kill(proc)
            os.close(read)
        log.seek(0)
        printed = log.read()[-2000:].decode("utf-8", "replace").strip()
    said = f"\n\nit printed:\n{printed}" if printed else ""
    if problem:
        return {"broken": f"the process importing {spec} {problem}{said}", "kind": "timeout"}
    try:
        description = json.loads(data)
        assert isinstance(description, dict)
        return description
    except (ValueError, AssertionError):
        status = proc.returncode
        if status is not None and status < 0:
            try:
                how = f"was killed by signal {signal.Signals(-status).name}"
            except ValueError:
                how = f"was killed by signal {-status}"
        else:
            how = f"ended with exit status {status} before the import finished (os._exit at import?)"
        return {
            "broken": f"the process importing {spec} {how}{said}",
            "kind": "timeout" if status == -signal.SIGXCPU else "crash",
        }


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _simple(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _main(fd: int, cpu: float) -> None:
    import math
    import resource

    if cpu > 0:
        limit = math.ceil(cpu) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
    request = json.loads(sys.stdin.read())
    sys.path[:] = request["sys_path"]
    os.chdir(request["cwd"])
    from pytest_xai.engine import contract
    from pytest_xai.errors import SpecError

    try:
        explainer = contract.load(request["spec"], request["option"])
        claims = (
            {k: v for k, v in vars(explainer.func).items() if not k.startswith("_") and _simple(v)}
            if hasattr(explainer.func, "__dict__")
            else {}
        )
        out: dict[str, Any] = {"name": explainer.name, "wants": list(explainer.wants), "claims": claims}
    except SpecError as exc:  # raised while importing (a cause) fails its tests; a bad spec is a usage error
        out = {"broken": str(exc), "kind": "raised"} if exc.__cause__ is not None else {"usage": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt raised by the module
        out = {
            "broken": f"{request['option']}={request['spec']}: importing it raised {type(exc).__name__}: {exc}",
            "kind": "raised",
        }
    with os.fdopen(fd, "wb") as fh:
        fh.write(json.dumps(out).encode())
    os._exit(0)  # the module's atexit handlers are not ours to run


if __name__ == "__main__":
    _main(int(sys.argv[1]), float(sys.argv[2]))
