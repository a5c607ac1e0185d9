"""Worker processes that run untrusted explainers under a CPU-time limit (README, "Reliability").

One reusable worker per explainer and plugin process, in a session of its own, so that stopping
it stops anything it started.  Workers are forked by a :class:`Zygote`, a fresh interpreter that
imported the heavy libraries with one thread each and never runs user code (or, where that cannot
work, spawned as ``python -m pytest_xai.worker``): never a fork of the plugin's process, whose
OpenMP or BLAS thread pools would deadlock the child.  The limit is measured in CPU
seconds of the worker, so a busy machine does not change a verdict; a wall-clock backstop stops an
explainer that sleeps or deadlocks.  Replies are :mod:`pytest_xai.wire` messages (JSON and float64
arrays, never pickles), carrying the request's random token.  A worker that crashed, was stopped or
sent anything malformed is killed and replaced on the next call.

Why not pebble or loky: both return results by unpickling what the worker sends, which lets
explainer code run in the plugin's process, and both time tasks in wall seconds.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_xai import wire
from pytest_xai.cases import MODULES as FAMILY_MODULES
from pytest_xai.errors import ExplainerCrash, ExplainerError, ExplainerRaised, ExplainerTimeout, NotApplicable
from pytest_xai.watch import IDLE_SHARE, cpu_seconds, stopped
from pytest_xai.watch import process_state as _process_state
from pytest_xai.worker import ARRAYS

if TYPE_CHECKING:
    from pytest_xai.case import Case

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS")
#: Wall seconds a worker may take to import the explainer and build a case before a call starts.
LOADING_WALL = 600.0
#: Bounds of the waits on the zygote: its first answer (it imports the heavy libraries first), a
#: fork (it may import a library first) and a status.  Each wait also ends as soon as the zygote is
#: gone, stopped or idle (:func:`pytest_xai.watch.receive`).
FIRST_ANSWER, FORK_ANSWER, STATUS_ANSWER = 300.0, 60.0, 5.0
#: Seconds without a byte after part of a reply: the message was cut (a worker writes it at once).
TRUNCATED = 2.0
_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()


@dataclass(frozen=True)
class Limits:
    """``cpu``: CPU seconds per call (None: no limit); ``wall``: the wall-clock backstop."""

    cpu: float | None
    wall: float | None


def thread_environment() -> dict[str, str]:
    """The environment of a worker: this one, with one thread per pool unless the user chose."""
    env = dict(os.environ)
    for var in THREAD_VARIABLES:
        env.setdefault(var, "1")
    return env


class _Stop(Exception):
    pass


class _Truncated(Exception):
    """Part of a reply arrived, then nothing: the argument is how many bytes."""


@dataclass
class _Phase:
    """Where a call is: its limits (loading, then the call's), and its wall and CPU clocks at the start."""

    limits: Limits
    wall: float
    cpu: float | None
    received: int = 0  # bytes of a reply read so far, and when the last arrived
    progress: float = 0.0


#: Libraries a zygote imports (those installed) before its first fork, so that workers start warm:
#: what the cases' models and their builders need, and the case families (every process that
#: loads a case imports them all: 0.2-0.3 s each time).
PRELOAD = ("numpy", "scipy.stats", "sklearn.cluster", "sklearn.datasets", "sklearn.ensemble", "sklearn.linear_model",
           "sklearn.neural_network", "sklearn.tree", "xgboost", "torch", "chess", "pytest_xai.cases", *FAMILY_MODULES,
           "pytest_xai.contract", "pytest_xai.explainers.baselines")
#: Explainer libraries: imported before the first explainer process is forked when the run's
#: explainers use them (or the plugin's process imported them at configure; under ``-n N`` after
#: the xdist workers are forked, which never call them).  The others only when a user's explainer
#: is in the run (it may import any of them on its first call), while the zygote waits for
#: requests; none when every explainer is a reference one, whose libraries are known: an import
#: under way delays the next fork (shap's 1.2 s held back the first fork of an exact_shapley run).
PRELOAD_LATER = ("shap", "captum.attr", "lime.lime_tabular")


class Zygote:
    """A clean process that has imported the heavy libraries and forks workers on request.

    Started fresh (``python -m pytest_xai.worker --zygote``) with one thread per pool; it never runs
    user code and refuses to fork while it holds more than one thread (then a worker is spawned
    from scratch instead).  One per plugin process, shared by its sessions; under ``pytest -n N``
    the controller starts one for all its xdist workers (:meth:`serve`), which connect to it.
    """

    _shared: Zygote | None = None
    #: In an xdist worker: the socket of the controller's zygote (``workerinput["xai_zygote"]``).
    address: str | None = None

    def __init__(self, modules: list[str], later: tuple[str, ...] | list[str] = (), listener: Any = None,
                 before_fork: tuple[str, ...] | list[str] = ()):
        import socket

        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listen = ["--listen", str(listener.fileno())] if listener is not None else []
        try:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-m", "pytest_xai.worker", "--zygote", str(theirs.fileno()), *listen, *modules,
                 "--", *before_fork, "--", *later],
                pass_fds=(theirs.fileno(), *([listener.fileno()] if listener is not None else [])),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, env=thread_environment())
        finally:
            theirs.close()
        self.ready = False
        self.pid: int | None = self.proc.pid
        self.path: str | None = None
        if listener is not None:  # only the zygote's copy listens: once it has gone, nothing connects
            self.path = str(listener.getsockname())
            listener.close()

    @property
    def listening(self) -> str:
        """Where xdist workers reach this zygote: ``SOCKET#PID`` (the pid, to watch it while waiting)."""
        return f"{self.path}#{self.pid}"

    @classmethod
    def shared(cls, first: tuple[str, ...] = (), others: bool = True) -> Zygote | None:
        """The zygote of this process, started on first use (None where it cannot work).

        In an xdist worker it is the controller's (:attr:`address`) while that one answers.  A new
        one preloads the libraries of :data:`PRELOAD` and :data:`PRELOAD_LATER` that are installed:
        the explainer libraries in ``first`` before its first fork, the others (when ``others``)
        while it waits.  The plugin starts it at configure, so its imports overlap collection and
        the plugin's own building of the cases.
        """
        if not (sys.platform.startswith("linux") and hasattr(os, "fork")):
            return None
        if cls._shared is None or (cls._shared.proc is not None and cls._shared.proc.poll() is not None):
            cls._shared = (cls._connect(cls.address) if cls.address else None) or cls._start(first, others=others)
        return cls._shared

    @classmethod
    def serve(cls, first: tuple[str, ...] = (), others: bool = True) -> str | None:
        """Start this process's zygote listening on a socket; its address, for the xdist workers."""
        if not (sys.platform.startswith("linux") and hasattr(os, "fork")):
            return None
        if (cls._shared is None or cls._shared.path is None or cls._shared.proc is None
                or cls._shared.proc.poll() is not None):
            import socket

            if cls._shared is not None:
                cls._shared.stop()
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            path = os.path.join(tempfile.mkdtemp(prefix="xai-zygote-"), "socket")
            listener.bind(path)
            listener.listen()
            cls._shared = cls._start(first, listener, others)
        return cls._shared.listening

    @classmethod
    def _start(cls, first: tuple[str, ...], listener: Any = None, others: bool = True) -> Zygote:
        import importlib.util

        installed = [m for m in PRELOAD + PRELOAD_LATER if importlib.util.find_spec(m.partition(".")[0])]
        used = [m for m in installed if m in PRELOAD_LATER and m.partition(".")[0] in (*first, *sys.modules)]
        now = [m for m in installed if m not in PRELOAD_LATER]
        later = [m for m in installed if m in PRELOAD_LATER and m not in used] if others else []
        if listener is None:
            return cls(now + used, later)
        # under -n N the xdist workers fork first and do not need the explainer libraries: those
        # are imported while the workers start, before the first explainer process is forked
        return cls(now, later, listener, before_fork=used)

    @classmethod
    def _connect(cls, address: str) -> Zygote | None:
        """A client of the zygote listening at ``address``, or None when nothing listens there."""
        import socket

        path, pid = split_address(address)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            return None
        client = cls.__new__(cls)
        client.sock, client.proc, client.ready, client.pid, client.path = sock, None, False, pid, None
        return client

    def _ask(self, request: dict[str, Any], fds: tuple[int, ...] = (), bound: float = STATUS_ANSWER) -> dict[str, Any]:
        import json
        import socket

        from pytest_xai.watch import receive

        if not self.ready:
            json.loads(receive(self.sock, self.pid, FIRST_ANSWER))
            self.ready = True
        socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
        answer: dict[str, Any] = json.loads(receive(self.sock, self.pid, bound) or b"{}")
        return answer

    def fork(self, fds: tuple[int, int, int]) -> int | None:
        """A new worker's pid, or None when the zygote cannot fork now (it holds a thread, has
        gone, is stopped or idle): then the caller spawns a worker, and the next asks a new zygote."""
        try:
            return self._ask({"op": "fork"}, fds, bound=FORK_ANSWER).get("pid")
        except (OSError, ValueError):
            if self.proc is None:  # the controller's zygote failed: this xdist worker starts its own
                Zygote.address = None
            self.stop()
            return None

    @property
    def gone(self) -> bool:
        """Whether the zygote process has ended (its workers die with it: ``PR_SET_PDEATHSIG``)."""
        return self.pid is not None and _process_state(self.pid) in (None, b"Z", b"X")

    def status(self, pid: int) -> int | None:
        """The exit code of a finished worker (negative: the signal), as the zygote reaped it."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                status = self._ask({"op": "status", "pid": pid}).get("status")
            except (OSError, ValueError):
                return None
            if status is not None:
                return int(status)
            time.sleep(0.01)
        return None

    def stop(self) -> None:
        """Kill the zygote this process started; a client only disconnects."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        self.sock.close()
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
                os.rmdir(os.path.dirname(self.path))
        if Zygote._shared is self:
            Zygote._shared = None


def split_address(address: str) -> tuple[str, int | None]:
    """``SOCKET#PID`` (:attr:`Zygote.listening`) -> (socket path, pid); a bare path has no pid."""
    path, sep, pid = address.rpartition("#")
    return (path, int(pid)) if sep and pid.isdigit() else (address, None)


class Worker:
    """One worker process serving one explainer spec: forked by the zygote, or spawned."""

    def __init__(self, spec: str):
        self.spec = spec
        self._ended = False
        self._status: int | None = None
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker; close() closes it
        request_r, self._request = os.pipe()
        self._reply, reply_w = os.pipe()
        try:
            zygote = Zygote.shared()
            self.zygote: Zygote | None = zygote
            pid = zygote.fork((request_r, reply_w, self.log.fileno())) if zygote else None
            self.proc: subprocess.Popen[bytes] | None = None
            if pid is None:
                self.zygote = None
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "pytest_xai.worker", str(request_r), str(reply_w)],
                    pass_fds=(request_r, reply_w), stdin=subprocess.DEVNULL, stdout=self.log,
                    stderr=subprocess.STDOUT, start_new_session=True, env=thread_environment())
                pid = self.proc.pid
            self.pid: int = pid
        except BaseException:  # e.g. Ctrl-C before the zygote's answer: a worker it forked reads EOF and ends
            os.close(self._request)
            os.close(self._reply)
            raise
        finally:
            os.close(request_r)
            os.close(reply_w)
        _LIVE.add(self)

    @property
    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return _process_state(self.pid) not in (None, b"Z")

    def wait(self, timeout: float) -> int | None:
        """The exit code once the worker has ended (negative: killed by that signal), or None."""
        if self._ended:
            return self._status
        if self.proc is not None:
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return None
        deadline = time.monotonic() + timeout
        while self.alive:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.005)
        self._ended, self._status = True, self.zygote.status(self.pid) if self.zygote is not None else None
        return self._status

    def output(self, limit: int = 2000) -> str:
        """The tail of what the worker printed since the last call."""
        self.log.seek(0)
        text = self.log.read().decode("utf-8", "replace").strip()
        return wire.clip(text[-limit:], limit) if text else ""

    def call(self, header: dict[str, Any], limits: Limits, blob: bytes = b"") -> tuple[dict[str, Any], dict[str, Any]]:
        """Send one request and return the reply; raise ExplainerTimeout or ExplainerError."""
        self.log.seek(0)
        self.log.truncate()
        token = secrets.token_hex(16)
        try:
            wire.write(self._request, wire.pack({**header, "token": token}, blob=blob))
        except OSError:  # the worker died while idle
            raise self._died("before it received the call") from None
        # Until the worker says "started", it imports and builds the case: only a loose wall limit.
        loading = Limits(cpu=None, wall=max(limits.wall or 0.0, LOADING_WALL))
        phase = _Phase(loading, time.monotonic(), cpu_seconds(self.pid))

        def tick(received: int) -> None:
            if received != phase.received:
                phase.received, phase.progress = received, time.monotonic()
            elif received and time.monotonic() - phase.progress > TRUNCATED:
                raise _Truncated(received)
            wall = time.monotonic() - phase.wall
            now, cpu, lim = cpu_seconds(self.pid), phase.cpu, phase.limits
            used = wall if now is None or cpu is None else now - cpu
            if stopped(self.pid):  # by the explainer or from outside, before or after "started"
                raise _Stop("was stopped (SIGSTOP): its process was suspended, so it would never answer")
            if lim is loading and lim.wall is not None and wall > lim.wall:
                raise _Stop(f"did not finish loading the explainer and building the case within {lim.wall:g} s")
            if lim is loading and limits.cpu is not None and used < IDLE_SHARE * wall and wall > limits.cpu:
                raise _Stop(f"was idle while loading the explainer and building the case: it used {used:.2f} CPU "
                            f"seconds in {wall:.1f} s (an import that sleeps, or a process stopped and resumed?)")
            if lim.cpu is not None and used > lim.cpu:
                raise _Stop(f"used {used:.1f} CPU seconds, over the limit of {lim.cpu:g} (a slow explainer: "
                            f"raise the limit with --xai-timeout, or give it a smaller budget)")
            if lim.cpu is not None and used < IDLE_SHARE * wall and wall > lim.cpu:
                raise _Stop(f"was idle: it used {used:.2f} CPU seconds in {wall:.1f} s, so it sleeps, waits or is "
                            f"deadlocked (a thread pool or lock inherited through a fork, input(), a network call?)")
            if lim.wall is not None and wall > lim.wall:
                raise _Stop(f"did not return within the wall-clock backstop of {lim.wall:g} s "
                            f"(it used {used:.1f} CPU seconds; see --xai-wall-timeout)")
            if not self.alive:
                raise EOFError

        try:
            while True:
                reply, arrays = wire.read(self._reply, tick, names=ARRAYS)
                if reply.get("token") != token:
                    self.kill()
                    raise ExplainerCrash("sent a result that does not answer the call (a forged or stale message "
                                         "on the worker's result channel); the worker was replaced")
                if reply.get("kind") != "started":
                    return reply, arrays
                phase.limits, phase.wall, phase.cpu = limits, time.monotonic(), cpu_seconds(self.pid)
        except _Truncated as cut:
            self.kill()
            raise ExplainerCrash(f"sent {cut.args[0]} bytes of a result, then nothing for {TRUNCATED:g} s: a "
                                 f"truncated message on the worker's result channel (did the explainer write to it?); "
                                 f"the worker was replaced") from None
        except _Stop as stop:
            printed = self.output()
            self.kill()
            raise ExplainerTimeout(f"{stop}" + (f"\n\nit printed:\n{printed}" if printed else "")) from None
        except EOFError:
            raise self._died("before replying") from None
        except wire.WireError as exc:
            self.kill()
            raise ExplainerCrash(f"sent a malformed result ({exc}); did the explainer write to the worker's "
                                 f"result channel?") from None
        except ExplainerError:
            raise
        except BaseException:  # Ctrl-C or SIGTERM of the session: stop the explainer at once
            self.kill()
            raise

    def _died(self, when: str) -> ExplainerCrash:
        status = self.wait(5)
        printed = self.output()
        self.kill()
        why = ""
        if status is None:
            how = "closed its result channel"
        elif status < 0:
            try:
                how = f"was killed by signal {signal.Signals(-status).name}"
            except ValueError:
                how = f"was killed by signal {-status}"
            if -status in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT):
                why = " (a crash in native code)"
        else:
            how = f"exited with status {status}"
            why = " (the explainer ended its process: os._exit, or sys.exit outside the main thread?)"
        return ExplainerCrash(f"its worker process {how} {when}{why}"
                              + (f"\n\nit printed:\n{printed}" if printed else ""))

    def lost_with_zygote(self) -> bool:
        """Whether this worker was killed because its zygote died (not for what it did itself):
        the call is then made once more, on a new worker."""
        return self.zygote is not None and self._ended and self.zygote.gone

    def kill(self) -> None:
        """Stop the worker and everything in its session, at once."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.wait(5)
        self.close_fds()

    def stop(self) -> None:
        """Let the worker finish (EOF on its requests), then make sure its whole session is gone."""
        try:
            os.close(self._request)
            self._request = -1
        except OSError:
            pass
        self.wait(1)
        self.kill()

    def close_fds(self) -> None:
        for name in ("_request", "_reply"):
            fd = getattr(self, name)
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, -1)
        self.log.close()
        _LIVE.discard(self)


class Pool:
    """The workers of one plugin process: one per explainer spec, started on first use."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.workers: dict[str, Worker] = {}
        self.broken: dict[str, ExplainerError] = {}

    def _worker(self, spec: str) -> Worker:
        worker = self.workers.get(spec)
        if worker is not None and worker.alive:
            return worker
        if spec in self.broken:
            raise self.broken[spec]
        worker = self.workers[spec] = Worker(spec)
        init = {"op": "init", "spec": spec, "sys_path": list(sys.path), "cwd": os.getcwd(),
                "environ": thread_environment()}
        try:
            try:
                reply, _ = worker.call(init, self.limits)
            except ExplainerCrash:
                if not worker.lost_with_zygote():
                    raise
                worker = self.workers[spec] = Worker(spec)  # once: a worker of a new zygote, or spawned
                reply, _ = worker.call(init, self.limits)
            _raise_for(reply, "loading it (and its prepare) in the worker")
        except NotApplicable as exc:
            self.broken[spec] = ExplainerError(f"its prepare raised NotApplicable: {exc}")
        except ExplainerError as exc:
            self.broken[spec] = exc  # every later call of this explainer fails the same way, at once
        if spec in self.broken:
            worker.kill()
            raise self.broken[spec]
        return worker

    def explain(self, spec: str, request: dict[str, Any],
                case: Case | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Run one explain request on the worker of ``spec``; ``case`` is pickled when given."""
        blob = b""
        if case is not None:
            try:
                blob = pickle.dumps(case)
            except Exception as exc:  # noqa: BLE001 - a case's objects may raise anything when pickled; reported
                raise ExplainerError(
                    f"case {case.name!r} is not registered, so it must be pickled to reach the worker, and "
                    f"pickling it failed ({type(exc).__name__}: {exc}); register it with "
                    f"pytest_xai.cases.register, or use --xai-timeout=0 (in-process, no isolation)") from None
        for attempt in range(2):
            worker = self._worker(spec)
            try:
                reply, arrays = worker.call({"op": "explain", **request}, self.limits, blob)
                break
            except ExplainerCrash:
                if attempt or not worker.lost_with_zygote():
                    raise
            finally:
                if not worker.alive:
                    self.workers.pop(spec, None)
        _raise_for(reply, "")
        return reply, arrays

    def close(self) -> None:
        for worker in self.workers.values():
            worker.stop()
        self.workers.clear()


def _raise_for(reply: dict[str, Any], during: str) -> None:
    kind = reply.get("kind")
    message = wire.clip(reply.get("message", ""), 4000)
    where = f" while {during}" if during else ""
    if kind == "ok":
        return
    if kind == "not_applicable":
        raise NotApplicable(message)
    if kind == "invalid":
        raise ExplainerError(message)
    if kind == "raised":
        raise ExplainerRaised(f"raised {wire.clip(reply.get('type'), 200)}{where}: {message}",
                              wire.clip(reply.get("traceback", "")))
    raise ExplainerCrash(f"{message or 'the worker sent an unknown reply'}{where}")  # "case", "internal"


@atexit.register
def _kill_all() -> None:
    for worker in list(_LIVE):
        worker.kill()
    if Zygote._shared is not None:
        Zygote._shared.stop()
