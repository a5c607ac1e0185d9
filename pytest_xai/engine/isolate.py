"""Worker processes that run untrusted explainers under a CPU-time limit (docs/reference.md, "Reliability").

One reusable worker per explainer and plugin process, in a session of its own, so that stopping
it stops anything it started.  Workers are forked by a zygote (:mod:`pytest_xai.engine.zygote`), a
fresh interpreter that imported the heavy libraries with one thread each and never runs user code (or, where that cannot
work, spawned as ``python -m pytest_xai.engine.worker``): never a fork of the plugin's process, whose
OpenMP or BLAS thread pools would deadlock the child.  The limit is measured in CPU
seconds of the worker, so a busy machine does not change a verdict; a wall-clock backstop stops an
explainer that sleeps or deadlocks.  Replies are :mod:`pytest_xai.engine.wire` messages (JSON and float64
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_xai.engine import wire
from pytest_xai.engine.watch import IDLE_SHARE, cpu_seconds, stopped
from pytest_xai.engine.watch import process_state as _process_state
from pytest_xai.engine.worker import ARRAYS
from pytest_xai.engine.zygote import Zygote, thread_environment
from pytest_xai.errors import (
    CaseFault,
    ExplainerCrash,
    ExplainerError,
    ExplainerRaised,
    ExplainerTimeout,
    NotApplicable,
)

if TYPE_CHECKING:
    from pytest_xai.case import Case

#: Wall seconds a worker may take to import the explainer and build a case before a call starts.
LOADING_WALL = 600.0
#: Seconds without a byte after part of a reply: the message was cut (a worker writes it at once).
TRUNCATED = 2.0
_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()


#: Told a running call's spend about every 50 ms: the seconds since it was sent, and the CPU seconds
#: the explainer has used (None while the worker still loads it and builds the case).
Watch = Callable[[float, "float | None"], None]


@dataclass(frozen=True)
class Limits:
    """``cpu``: CPU seconds per call (None: no limit); ``wall``: the wall-clock backstop."""

    cpu: float | None
    wall: float | None


class _Stop(Exception):
    pass


class _Truncated(Exception):
    """Part of a reply arrived, then nothing: the argument is how many bytes."""


@dataclass(frozen=True)
class Sent:
    """A request sent to a worker, whose reply is still to be read (:meth:`Worker.receive`)."""

    token: str
    limits: Limits
    phase: _Phase


@dataclass
class _Phase:
    """Where a call is: its limits (loading, then the call's), and its wall and CPU clocks at the start."""

    limits: Limits
    wall: float
    cpu: float | None
    received: int = 0  # bytes of a reply read so far, and when the last arrived
    progress: float = 0.0


class Worker:
    """One worker process serving one explainer spec: forked by the zygote, or spawned."""

    def __init__(self, spec: str):
        self.spec = spec
        self.start_cpu = 0.0  # CPU seconds its start took: the explainer's import and prepare (Pool._started)
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
                    [sys.executable, "-m", "pytest_xai.engine.worker", str(request_r), str(reply_w)],
                    pass_fds=(request_r, reply_w),
                    stdin=subprocess.DEVNULL,
                    stdout=self.log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=thread_environment(),
                )
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

    def call(
        self,
        header: dict[str, Any],
        limits: Limits,
        blob: bytes = b"",
        answer: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]] | None = None,
        watch: Watch | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Send one request and return the reply; raise ExplainerTimeout or ExplainerError.

        ``answer`` answers the worker's questions (``{"kind": "reexplain"}``: a check in the
        judge's worker asks for the explainer again); the time spent answering is not the worker's.
        ``watch`` is told the call's spend so far while it runs (:data:`Watch`)."""
        return self.receive(self.send(header, limits, blob), answer, watch)

    def send(self, header: dict[str, Any], limits: Limits, blob: bytes = b"") -> Sent:
        """Send one request; its reply is :meth:`receive`'s.  The limits run from now (a reply read
        late is judged by the clocks, so a call left running while another is made is still stopped)."""
        self.log.seek(0)
        self.log.truncate()
        token = secrets.token_hex(16)
        try:
            wire.write(self._request, wire.pack({**header, "token": token}, blob=blob))
        except OSError:  # the worker died while idle
            raise self._died("before it received the call") from None
        # Until the worker says "started", it imports and builds the case: only a loose wall limit.
        loading = Limits(cpu=None, wall=max(limits.wall or 0.0, LOADING_WALL))
        return Sent(token, limits, _Phase(loading, time.monotonic(), cpu_seconds(self.pid)))

    def receive(
        self,
        sent: Sent,
        answer: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]] | None = None,
        watch: Watch | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The reply to ``sent`` (:meth:`send`), under its limits."""
        token, limits, phase = sent.token, sent.limits, sent.phase
        begun = time.monotonic()

        def tick(received: int) -> None:
            if received != phase.received:
                phase.received, phase.progress = received, time.monotonic()
            elif received and time.monotonic() - phase.progress > TRUNCATED:
                raise _Truncated(received)
            wall = time.monotonic() - phase.wall
            now, cpu, lim = cpu_seconds(self.pid), phase.cpu, phase.limits
            loading = lim is not limits  # before "started": the explainer's or the case's code has not begun
            used = wall if now is None or cpu is None else now - cpu
            if stopped(self.pid):  # by the explainer or from outside, before or after "started"
                raise _Stop("was stopped (SIGSTOP): its process was suspended, so it would never answer")
            if loading and lim.wall is not None and wall > lim.wall:
                raise _Stop(f"did not finish loading the explainer and building the case within {lim.wall:g} s")
            if loading and limits.cpu is not None and used < IDLE_SHARE * wall and wall > limits.cpu:
                raise _Stop(
                    f"was idle while loading the explainer and building the case: it used {used:.2f} CPU "
                    f"seconds in {wall:.1f} s (an import that sleeps, or a process stopped and resumed?)"
                )
            if lim.cpu is not None and used > lim.cpu:
                raise _Stop(
                    f"used {used:.1f} CPU seconds, over the limit of {lim.cpu:g} (a slow explainer: "
                    f"raise the limit with --xai-timeout, or give it a smaller budget)"
                )
            if lim.cpu is not None and used < IDLE_SHARE * wall and wall > lim.cpu:
                raise _Stop(
                    f"was idle: it used {used:.2f} CPU seconds in {wall:.1f} s, so it sleeps, waits or is "
                    f"deadlocked (a thread pool or lock inherited through a fork, input(), a network call?)"
                )
            if lim.wall is not None and wall > lim.wall:
                raise _Stop(
                    f"did not return within the wall-clock backstop of {lim.wall:g} s "
                    f"(it used {used:.1f} CPU seconds; see --xai-wall-timeout)"
                )
            if not self.alive:
                raise EOFError
            if watch is not None:
                watch(time.monotonic() - begun, None if loading or now is None or cpu is None else now - cpu)

        try:
            while True:
                reply, arrays = wire.read(self._reply, tick, names=ARRAYS)
                if reply.get("token") != token:
                    self.kill()
                    raise ExplainerCrash(
                        "sent a result that does not answer the call (a forged or stale message "
                        "on the worker's result channel); the worker was replaced"
                    )
                if reply.get("kind") == "reexplain" and answer is not None:
                    asked = time.monotonic()
                    head, out = answer(reply)
                    wire.write(self._request, wire.pack({**head, "token": token}, out))
                    phase.wall += time.monotonic() - asked  # the explainer's time, under its own limit
                    continue
                if reply.get("kind") != "started":
                    return reply, arrays
                phase.limits, phase.wall, phase.cpu = limits, time.monotonic(), cpu_seconds(self.pid)
        except _Truncated as cut:
            self.kill()
            raise ExplainerCrash(
                f"sent {cut.args[0]} bytes of a result, then nothing for {TRUNCATED:g} s: a "
                f"truncated message on the worker's result channel (did the explainer write to it?); "
                f"the worker was replaced"
            ) from None
        except _Stop as stop:
            printed = self.output()
            self.kill()
            raise ExplainerTimeout(f"{stop}" + (f"\n\nit printed:\n{printed}" if printed else "")) from None
        except EOFError:
            raise self._died("before replying") from None
        except wire.WireError as exc:
            self.kill()
            raise ExplainerCrash(
                f"sent a malformed result ({exc}); did the explainer write to the worker's result channel?"
            ) from None
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
        return ExplainerCrash(
            f"its worker process {how} {when}{why}" + (f"\n\nit printed:\n{printed}" if printed else "")
        )

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
    """The workers of one plugin process: one per explainer spec, started on first use, and the
    spares that make explanations ahead beside it (``Runner.lanes``)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.workers: dict[str, Worker] = {}
        self.spares: dict[tuple[str, int], Worker] = {}
        self.broken: dict[str, ExplainerError] = {}

    def _worker(self, spec: str) -> Worker:
        worker = self.workers.get(spec)
        if worker is not None and worker.alive:
            return worker
        if spec in self.broken:
            raise self.broken[spec]
        try:
            worker = self.workers[spec] = self._started(spec)
        except ExplainerError as exc:
            self.broken[spec] = exc  # every later call of this explainer fails the same way, at once
            raise
        return worker

    def spare(self, spec: str, lane: int) -> Worker:
        """Spare ``lane`` of ``spec``, started if it is not up (from the thread of a call made ahead).
        A spare that cannot start raises, and does not make the explainer broken: its calls are
        left to the first worker, which says what is wrong."""
        if spec in self.broken:
            raise self.broken[spec]
        worker = self.spares.get((spec, lane))
        if worker is None or not worker.alive:
            worker = self.spares[spec, lane] = self._started(spec)
        return worker

    def forget(self, worker: Worker) -> None:
        """``worker`` died: the next call starts another."""
        if self.workers.get(worker.spec) is worker:
            del self.workers[worker.spec]
        for key in [key for key, spare in self.spares.items() if spare is worker]:
            del self.spares[key]

    def _started(self, spec: str) -> Worker:
        """A new worker of ``spec``, its explainer loaded (and prepared); raises ExplainerError."""
        worker = Worker(spec)
        init = {
            "op": "init",
            "spec": spec,
            "sys_path": list(sys.path),
            "cwd": os.getcwd(),
            "environ": thread_environment(),
        }
        try:
            try:
                reply, _ = worker.call(init, self.limits)
            except ExplainerCrash:
                if not worker.lost_with_zygote():
                    raise
                worker = Worker(spec)  # once: a worker of a new zygote, or spawned
                reply, _ = worker.call(init, self.limits)
            _raise_for(reply, "loading it (and its prepare) in the worker")
            worker.start_cpu = cpu_seconds(worker.pid) or 0.0
        except NotApplicable as exc:
            worker.kill()
            raise ExplainerError(f"its prepare raised NotApplicable: {exc}") from None
        except ExplainerError:
            worker.kill()
            raise
        return worker

    def explain(
        self, spec: str, request: dict[str, Any], case: Case | None = None, watch: Watch | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Run one explain request on the worker of ``spec``; ``case`` is pickled when given; ``watch``
        follows its spend (:data:`Watch`)."""
        reply, arrays = self.call(spec, {"op": "explain", **request}, case=case, watch=watch)
        _raise_for(reply, "")
        return reply, arrays

    def ahead(
        self, worker: Worker, request: dict[str, Any], watch: Watch | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """One explain request on ``worker``, which is up: the call made ahead, from a thread of
        its own, beside the test thread's calls to the other workers (``Runner._explain_ahead``)."""
        reply, arrays = worker.call({"op": "explain", **request}, self.limits, watch=watch)
        _raise_for(reply, "")
        return reply, arrays

    def send(self, spec: str, request: dict[str, Any], *, case: Case | None = None) -> tuple[Worker, Sent]:
        """Send one request to the worker of ``spec`` without waiting: ``receive`` reads the reply."""
        worker = self._worker(spec)
        return worker, worker.send(request, self.limits, _pickled(case) if case is not None else b"")

    def receive(
        self, spec: str, worker: Worker, sent: Sent, request: dict[str, Any], *, case: Case | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The reply to ``sent``; a call whose worker died with its zygote is made once more."""
        try:
            return worker.receive(sent)
        except ExplainerCrash:
            if not worker.lost_with_zygote():
                raise
            return self.call(spec, request, case=case)
        finally:
            if not worker.alive:
                self.workers.pop(spec, None)

    def call(
        self,
        spec: str,
        request: dict[str, Any],
        *,
        case: Case | None = None,
        blob: bytes = b"",
        answer: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]] | None = None,
        watch: Watch | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """One request to the worker of ``spec`` and its reply, as sent; ``case`` is pickled (its
        hooks too when they pickle); a call whose worker died with its zygote is made once more."""
        if case is not None:
            blob = _pickled(case)
        for attempt in range(2):
            worker = self._worker(spec)
            try:
                return worker.call(request, self.limits, blob, answer, watch)
            except ExplainerCrash:
                if attempt or not worker.lost_with_zygote():
                    raise
            finally:
                if not worker.alive:
                    self.workers.pop(spec, None)
        raise AssertionError("unreachable")  # the second attempt returns or raises

    def close(self) -> None:
        for worker in [*self.workers.values(), *self.spares.values()]:
            worker.stop()
        self.workers.clear()
        self.spares.clear()


def _pickled(case: Case) -> bytes:
    """A hand-made case for a worker: with its hooks (module-level functions pickle), else without."""
    with contextlib.suppress(Exception):  # a lambda hook, say: the worker gets the case without hooks
        return pickle.dumps(case)
    try:
        return pickle.dumps(case.without_hooks())
    except Exception as exc:  # noqa: BLE001 - a case's objects may raise anything when pickled; reported
        raise ExplainerError(
            f"case {case.name!r} is not registered, so it must be pickled to reach the worker, and "
            f"pickling it failed ({type(exc).__name__}: {exc}); register it with "
            f"pytest_xai.register_case, or use --xai-timeout=0 (in-process, no isolation)"
        ) from None


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
    if kind == "case":  # the worker could not build the case: its builder's fault
        raise CaseFault(message, wire.clip(reply.get("traceback", "")))
    if kind == "raised":
        raise ExplainerRaised(
            f"raised {wire.clip(reply.get('type'), 200)}{where}: {message}", wire.clip(reply.get("traceback", ""))
        )
    raise ExplainerCrash(f"{message or 'the worker sent an unknown reply'}{where}")  # "case", "internal"


@atexit.register
def _kill_all() -> None:
    for worker in list(_LIVE):
        worker.kill()
    Zygote.stop_shared()
