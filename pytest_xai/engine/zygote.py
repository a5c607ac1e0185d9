"""The zygote: one process that imported the heavy libraries and forks workers on request (docs/design.md,
"Isolation"), and its protocol, server and clients in one place, beside :mod:`pytest_xai.engine.wire`.

Started fresh as ``python -m pytest_xai.engine.zygote FD [--listen FD] NOW... -- BEFORE_FORK... -- LATER...``
with one thread per pool, it imports ``NOW``, says it is ready, and serves requests; it never runs
user code and refuses to fork while it holds more than one thread.  Its children are explainer
workers (:func:`pytest_xai.engine.worker.main`) and, under ``pytest -n N``, xdist's workers
(:func:`pytest_xai.engine.worker.become`).  The zygote ends when the process that started it closes ``FD``;
with ``--listen`` (the xdist controller's socket) it serves every process that connects as well.

The protocol: SOCK_SEQPACKET, one JSON object a message, descriptors attached (SCM_RIGHTS).  The
zygote speaks first on every connection, ``{"ready": true}``, once it has imported ``NOW``; then
each request (:data:`REQUESTS`) gets one reply:

=========  ==================================  =====================================================
op         descriptors                         reply
=========  ==================================  =====================================================
fork       requests, replies, output           ``{"pid": N}``: an explainer worker reading requests
become     stdin, stdout, stderr, lifeline     ``{"pid": N}``: a child running the client's ``-c``
status     (none; ``"pid"`` in the request)    ``{"status": exit code, or null while it runs}``
need       (none; ``"modules"``)               ``{"pending": [...]}``: the model libraries of the
                                               run's cases replace :data:`LIBRARIES` before the fork
=========  ==================================  =====================================================

A request it cannot serve is answered ``{"error": why}`` and its descriptors closed.  Every wait
on the zygote (:func:`pytest_xai.engine.watch.receive`) ends as soon as it is gone, stopped or idle.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from pytest_xai.cases import MODULES as FAMILY_MODULES
from pytest_xai.engine import worker
from pytest_xai.engine.watch import process_state, receive

#: The requests a zygote serves: op -> the descriptors that come with it, in order.
REQUESTS: dict[str, tuple[str, ...]] = {
    "fork": ("requests", "replies", "output"),
    "become": ("stdin", "stdout", "stderr", "lifeline"),
    "status": (),
    "need": (),
}
#: Largest request a zygote reads: a ``become`` request carries an environment.
REQUEST_BYTES = 1 << 18
#: Bounds of the waits on the zygote: its first answer (it imports the heavy libraries first), a
#: fork (it may import a library first) and a status.
FIRST_ANSWER, FORK_ANSWER, STATUS_ANSWER = 300.0, 60.0, 5.0
#: Seconds a zygote defers its later imports after forking an xdist worker, for the next to ask.
XDIST_GAP = 1.0
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
#: Libraries a zygote imports (those installed) before its first fork, so that workers start warm:
#: what the cases' models and their builders need, and the case families (every process that
#: loads a case imports them all: 0.2-0.3 s each time).
#: The model libraries among them: under ``pytest -n N`` imported after the xdist workers are
#: forked, since those only collect, dispatch and report (the judge's and the explainers' workers
#: build the cases), and before the first worker that builds one.
LIBRARIES = (
    "scipy.stats",
    "sklearn.cluster",
    "sklearn.datasets",
    "sklearn.ensemble",
    "sklearn.linear_model",
    "sklearn.neural_network",
    "sklearn.tree",
    "xgboost",
    "torch",
    "chess",
)
PRELOAD = (
    "numpy",
    *LIBRARIES,
    "pytest_xai.cases",
    *FAMILY_MODULES,
    "pytest_xai.engine.contract",
    "pytest_xai.explainers.baselines",
)
#: Explainer libraries: imported before the first explainer process is forked when the run's
#: explainers use them (or, with a user's explainer in the run, the plugin's process imported them
#: at configure; under ``-n N`` after
#: the xdist workers are forked, which never call them).  The others only when a user's explainer
#: is in the run (it may import any of them on its first call), while the zygote waits for
#: requests; none when every explainer is a reference one, whose libraries are known: an import
#: under way delays the next fork (shap's 1.2 s held back the first fork of an exact_shapley run).
PRELOAD_LATER = ("shap", "captum.attr", "lime.lime_tabular")


def thread_environment() -> dict[str, str]:
    """The environment of a process that runs explainers: this one, with one thread per pool unless
    the user chose."""
    env = dict(os.environ)
    for var in THREAD_VARIABLES:
        env.setdefault(var, "1")
    return env


def split_address(address: str) -> tuple[str, int | None]:
    """``SOCKET#PID`` (:attr:`Zygote.listening`) -> (socket path, pid); a bare path has no pid."""
    path, sep, pid = address.rpartition("#")
    return (path, int(pid)) if sep and pid.isdigit() else (address, None)


# ------------------------------------------------------------------------------------- the server


def preload(name: str) -> None:
    """Import ``name`` if it can be, or with ``module:function`` call that function (a reference
    explainer's compilation, :func:`pytest_xai.explainers.compiled_by`): preloading is an
    optimisation, a worker imports and compiles what it needs again."""
    module, _, function = name.partition(":")
    with contextlib.suppress(Exception):
        imported = importlib.import_module(module)
        if function:
            getattr(imported, function)()


def _close(fds: Sequence[int]) -> None:
    for fd in fds:
        os.close(fd)


class Server:
    """The zygote's loop: one handler per request (:data:`REQUESTS`), the children it reaped, and
    the imports left for when it is not serving."""

    def __init__(
        self,
        owner: socket.socket,
        listener: socket.socket | None,
        before_fork: list[str],
        later: list[str],
        filters: list[Any],
        held: Sequence[str] = (),
    ):
        self.owner, self.listener, self.clients = owner, listener, [owner]
        self.pending, self.later = list(before_fork), list(later)  # imported before the first fork; at leisure
        self.held = list(held)  # imported before the first fork only, unless a need request drops them
        self.filters = filters  # a fresh interpreter's warnings filters, restored in every child
        self.statuses: dict[int, int] = {}
        self.quiet_until = 0.0  # no later import before then: an xdist worker is about to ask
        self.handlers: dict[str, Callable[[dict[str, Any], list[int]], dict[str, Any]]] = {
            "fork": self.fork,
            "become": self.fork,
            "status": self.status,
            "need": self.need,
        }

    @property
    def sockets(self) -> list[socket.socket]:
        return [*self.clients, *([self.listener] if self.listener is not None else [])]

    def run(self) -> int:
        """Serve until the process that started the zygote has gone."""
        signal.signal(signal.SIGCHLD, self.reap)
        self.owner.send(b'{"ready": true}')
        if self.listener is not None:  # xdist starts its workers one after the other, maybe after our imports
            self.quiet_until = time.monotonic() + XDIST_GAP
        while True:
            ready = select.select(self.sockets, [], [], self.idle())[0]
            if not ready and time.monotonic() >= self.quiet_until:
                preload((self.pending or self.later).pop(0))
            for sock in ready:
                if not self.serve(sock):
                    return 0

    def idle(self) -> float | None:
        """How long to wait for a request: until the next import, or for ever when none is left (the
        held ones are imported only before a fork)."""
        return max(0.0, self.quiet_until - time.monotonic()) if self.pending or self.later else None

    def serve(self, sock: socket.socket) -> bool:
        """Answer what arrived on ``sock``; False once the owner has gone."""
        if sock is self.listener:
            sock, _ = sock.accept()
            self.clients.append(sock)
            return self.send(sock, {"ready": True})
        try:
            message, fds, _, _ = socket.recv_fds(sock, REQUEST_BYTES, 4)
        except OSError:
            message, fds = b"", []
        if not message:  # that process has gone
            if sock is self.owner:
                return False
            self.drop(sock)
            return True
        return self.send(sock, self.handle(message, fds))

    def handle(self, message: bytes, fds: list[int]) -> dict[str, Any]:
        try:
            request = json.loads(message)
        except ValueError:
            request = None
        op = request.get("op") if isinstance(request, dict) else None
        handler = self.handlers.get(op) if isinstance(op, str) else None
        if request is None or handler is None:
            _close(fds)
            return {"error": f"the zygote serves no request {op!r}"}
        reply = handler(request, fds)
        if op == "become":  # xdist starts its workers one after the other: the next is about to ask
            self.quiet_until = time.monotonic() + XDIST_GAP
        return reply

    def send(self, sock: socket.socket, reply: dict[str, Any]) -> bool:
        try:
            sock.send(json.dumps(reply).encode())
        except OSError:  # the others are still served
            if sock is not self.owner:
                self.drop(sock)
        return True

    def drop(self, sock: socket.socket) -> None:
        self.clients.remove(sock)
        sock.close()

    def reap(self, *_: Any) -> None:
        """Collect the exit codes of the children that ended (SIGCHLD), for ``status``."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.statuses[pid] = os.waitstatus_to_exitcode(status)

    def status(self, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        _close(fds)
        self.reap()
        return {"status": self.statuses.pop(request["pid"], None)}

    def need(self, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """``need``: the model libraries the run's cases are built with, in place of the held ones and
        of those pending but the explainer libraries (a worker imports any other it needs itself)."""
        _close(fds)
        modules = request.get("modules")
        if isinstance(modules, list) and all(isinstance(m, str) for m in modules):
            kept = [m for m in self.pending if m in PRELOAD_LATER or ":" in m]  # the run's explainers' own
            self.pending = kept + [m for m in modules if m not in kept and m not in sys.modules]
            self.held = []
        return {"pending": self.pending}

    def fork(self, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """``fork`` and ``become``: a child, once this process holds one thread and the descriptors came."""
        threads, expected = len(os.listdir("/proc/self/task")), len(REQUESTS[request["op"]])
        if threads != 1 or len(fds) != expected:
            _close(fds)
            why = f"holds {threads} threads" if threads != 1 else f"received {len(fds)} descriptors, not {expected}"
            return {"error": f"the zygote {why}"}
        while request["op"] == "fork" and (self.pending or self.held):
            preload((self.pending or self.held).pop(0))
        sys.stdout.flush()
        gc.freeze()  # what the zygote imported is never collected: a child's collections skip it, pages stay shared
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            self.child(request, fds)
        _close(fds)
        return {"pid": pid}

    def child(self, request: dict[str, Any], fds: list[int]) -> NoReturn:
        """In the fork: an explainer worker, or the xdist worker a client asked to become."""
        code, exiting = 1, None
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            warnings.filters[:] = self.filters  # type: ignore[index]  # a list at run time
            for sock in self.sockets:
                sock.close()
            os.setsid()
            if request["op"] == "become":
                exiting = worker.become(request, fds)
            else:
                code = _explainer_worker(fds)
        finally:
            if exiting is None:
                os._exit(code)
        worker.exit_as_python_would(exiting)


def _explainer_worker(fds: list[int]) -> int:
    """Run :func:`pytest_xai.engine.worker.main` on the request and reply pipes, printing to the output file."""
    request_r, reply_w, log = fds
    for target in (1, 2):
        os.dup2(log, target)
    os.close(log)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return worker.main(["worker", str(request_r), str(reply_w)])


def run(
    sock_fd: int,
    modules: list[str],
    before_fork: list[str],
    later: list[str],
    listen_fd: int | None = None,
    held: Sequence[str] = (),
) -> int:
    """Import ``modules`` once, then serve on ``sock_fd`` (and ``listen_fd``) until its owner has gone.

    ``later`` are imported after the first answer, one at a time while no request is waiting;
    ``before_fork`` too, first, and all of them before the first explainer worker is forked (an
    xdist worker, which does not need them, is forked before).  ``held`` only before the first
    fork, unless a ``need`` request says which model libraries the run needs.
    """
    worker.die_with_parent()
    filters = list(warnings.filters)
    warnings.simplefilter("ignore")
    gc.disable()  # each full collection during the imports walked every object imported so far: 1 CPU s in all
    for name in modules:
        preload(name)
    gc.collect()
    gc.freeze()
    gc.enable()
    owner = socket.socket(fileno=sock_fd)
    listener = socket.socket(fileno=listen_fd) if listen_fd is not None else None
    return Server(owner, listener, before_fork, later, filters, held).run()


def main(argv: list[str]) -> int:
    """``FD [--listen FD] NOW... -- BEFORE_FORK... -- HELD... -- LATER...`` (:meth:`Zygote.__init__` writes it)."""
    listen = int(argv[3]) if argv[2:3] == ["--listen"] else None
    names = argv[4:] if listen is not None else argv[2:]
    one = names.index("--")
    two = names.index("--", one + 1)
    three = names.index("--", two + 1)
    groups = names[:one], names[one + 1 : two], names[two + 1 : three], names[three + 1 :]
    return run(int(argv[1]), groups[0], groups[1], groups[3], listen, groups[2])


# ------------------------------------------------------------------------------------- the clients


def ask(
    sock: socket.socket,
    zygote: int | None,
    request: dict[str, Any],
    fds: Sequence[int] = (),
    bound: float = STATUS_ANSWER,
) -> dict[str, Any]:
    """Send one request to the zygote (pid ``zygote``) on ``sock`` and return its reply; OSError or
    ValueError when it cannot answer."""
    _send(sock, request, fds)
    return answer(sock, zygote, bound)


def _send(sock: socket.socket, request: dict[str, Any], fds: Sequence[int] = ()) -> None:
    socket.send_fds(sock, [json.dumps(request).encode()], list(fds))


def answer(sock: socket.socket, zygote: int | None, bound: float) -> dict[str, Any]:
    """The zygote's next message on ``sock``, within ``bound`` seconds while it lives, works and is not stopped."""
    reply: dict[str, Any] = json.loads(receive(sock, zygote, bound) or b"{}")
    return reply


def exit_status(ask: Callable[[dict[str, Any]], dict[str, Any]], pid: int) -> int | None:
    """The exit code of the zygote's child ``pid`` (negative: the signal) once the zygote has reaped
    it, asked through ``ask``; None when it cannot say within :data:`STATUS_ANSWER` seconds."""
    deadline = time.monotonic() + STATUS_ANSWER
    while time.monotonic() < deadline:
        try:
            status = ask({"op": "status", "pid": pid}).get("status")
        except (OSError, ValueError):
            return None
        if status is not None:
            return int(status)
        time.sleep(0.01)
    return None


def become(address: str, request: dict[str, Any], fds: list[int]) -> tuple[socket.socket, int] | None:
    """Ask the zygote at ``address`` for a child that becomes the client (:func:`pytest_xai.engine.worker.become`):
    ``(the connection, the child's pid)``, or None when it cannot (the request is too large, nothing
    listens, the zygote holds a thread, has gone, is stopped or idle)."""
    message = {"op": "become", **request}
    if len(json.dumps(message).encode()) > REQUEST_BYTES:
        return None
    path, zygote = split_address(address)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path)
        _send(sock, message, fds)  # queued: served before the zygote's later imports
        answer(sock, zygote, FIRST_ANSWER)  # ready, once it has imported its libraries
        pid = answer(sock, zygote, FORK_ANSWER).get("pid")
    except (OSError, ValueError):
        pid = None
    if not isinstance(pid, int):
        sock.close()
        return None
    return sock, pid


class Zygote:
    """The plugin's side of a zygote: started fresh with one thread per pool, or reached at the
    socket of the xdist controller's (:meth:`serve`, :attr:`address`).

    One per plugin process, shared by its sessions; under ``pytest -n N`` the controller starts
    one for all its xdist workers, which connect to it.  Where it cannot fork, the caller spawns a
    worker from scratch instead.
    """

    _shared: Zygote | None = None
    _early: tuple[tuple[str, ...], bool, tuple[str, ...]] | None = None  # what Zygote.early started it with
    #: In an xdist worker: the socket of the controller's zygote (``workerinput["xai_zygote"]``).
    address: str | None = None

    def __init__(
        self,
        modules: list[str],
        later: tuple[str, ...] | list[str] = (),
        listener: Any = None,
        before_fork: tuple[str, ...] | list[str] = (),
        held: tuple[str, ...] | list[str] = (),
    ):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listen = ["--listen", str(listener.fileno())] if listener is not None else []
        try:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pytest_xai.engine.zygote",
                    str(theirs.fileno()),
                    *listen,
                    *modules,
                    "--",
                    *before_fork,
                    "--",
                    *held,
                    "--",
                    *later,
                ],
                pass_fds=(theirs.fileno(), *([listener.fileno()] if listener is not None else [])),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env=thread_environment(),
            )
        finally:
            theirs.close()
        self.ready = False
        self.unread = 0  # replies to requests sent without waiting (need), read before the next
        self.asking = threading.Lock()  # one request and its answer at a time: the ahead calls' threads ask too
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
    def shared(
        cls, first: tuple[str, ...] = (), others: bool = True, expected: Sequence[str] | None = None
    ) -> Zygote | None:
        """The zygote of this process, started on first use (None where it cannot work).

        In an xdist worker it is the controller's (:attr:`address`) while that one answers.  A new
        one preloads the libraries of :data:`PRELOAD` and :data:`PRELOAD_LATER` that are installed:
        the explainer libraries in ``first`` before its first fork, the others (when ``others``)
        while it waits, once the run has said which model libraries it needs (:meth:`need`); of
        those, the ``expected`` ones (what the same command needed last time) at once.  The plugin
        starts it at configure, so its imports overlap collection.
        """
        if not (sys.platform.startswith("linux") and hasattr(os, "fork")):
            return None
        if cls._shared is None or (cls._shared.proc is not None and cls._shared.proc.poll() is not None):
            cls._shared = (cls._connect(cls.address) if cls.address else None) or cls._start(
                first, others=others, expected=expected
            )
        return cls._shared

    @classmethod
    def early(cls, first: tuple[str, ...], others: bool, expected: Sequence[str]) -> None:
        """Start this process's zygote before the run's options are read (the plugin's registration:
        ``plugin.state.start_zygote_early``), as :meth:`shared` would with these arguments;
        :meth:`settle` keeps it if the run asks for the same."""
        if cls._shared is None and sys.platform.startswith("linux") and hasattr(os, "fork"):
            cls._shared = cls._start(first, others=others, expected=expected)
            cls._early = (tuple(first), others, tuple(expected))

    @classmethod
    def settle(cls, wanted: tuple[tuple[str, ...], bool, tuple[str, ...]] | None) -> None:
        """Keep the zygote started :meth:`early` if the run wants the same (``(first, others,
        expected)``), else stop it (None: the run starts none, or one of another kind)."""
        early, cls._early = cls._early, None
        if early is not None and early != wanted:
            cls.stop_shared()

    @classmethod
    def serve(cls, first: tuple[str, ...] = (), others: bool = True) -> str | None:
        """Start this process's zygote listening on a socket; its address, for the xdist workers."""
        if not (sys.platform.startswith("linux") and hasattr(os, "fork")):
            return None
        if (
            cls._shared is None
            or cls._shared.path is None
            or cls._shared.proc is None
            or cls._shared.proc.poll() is not None
        ):
            cls.stop_shared()
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            path = os.path.join(tempfile.mkdtemp(prefix="xai-zygote-"), "socket")
            listener.bind(path)
            listener.listen()
            cls._shared = cls._start(first, listener, others)
        return cls._shared.listening

    @classmethod
    def stop_shared(cls) -> None:
        """Stop the zygote of this process, if it has one."""
        if cls._shared is not None:
            cls._shared.stop()

    @classmethod
    def _start(
        cls,
        first: tuple[str, ...],
        listener: Any = None,
        others: bool = True,
        expected: Sequence[str] | None = None,
    ) -> Zygote:
        import importlib.util

        installed = [m for m in PRELOAD + PRELOAD_LATER if importlib.util.find_spec(m.partition(".")[0])]
        # a user's explainer may use what the plugin's process imported (its conftest's import);
        # reference explainers name theirs, and an import under way holds back the first fork
        imported = tuple(sys.modules) if others else ()
        used = [m for m in installed if m in PRELOAD_LATER and m.partition(".")[0] in (*first, *imported)]
        used += [m for m in first if ":" in m]  # after their libraries: what the run's reference explainers compile
        now = [m for m in installed if m not in PRELOAD_LATER]
        later = [m for m in installed if m in PRELOAD_LATER and m not in used] if others else []
        light, models = [m for m in now if m not in LIBRARIES], [m for m in now if m in LIBRARIES]
        if listener is None:  # the model libraries are held until the run says which it needs
            soon = list(expected or ())
            return cls(light, later, before_fork=used + soon, held=[m for m in models if m not in soon])
        # under -n N the xdist workers fork first and need neither the model nor the explainer
        # libraries: those are imported while the workers start, before the first worker that
        # builds a case (the judge's, an explainer's) is forked
        return cls(light, later, listener, before_fork=models + used)

    @classmethod
    def _connect(cls, address: str) -> Zygote | None:
        """A client of the zygote listening at ``address``, or None when nothing listens there."""
        path, pid = split_address(address)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            return None
        client = cls.__new__(cls)
        client.sock, client.proc, client.ready, client.pid, client.path = sock, None, False, pid, None
        client.unread, client.asking = 0, threading.Lock()
        return client

    def _ask(self, request: dict[str, Any], fds: tuple[int, ...] = (), bound: float = STATUS_ANSWER) -> dict[str, Any]:
        with self.asking:
            if not self.ready:
                answer(self.sock, self.pid, FIRST_ANSWER)
                self.ready = True
            while self.unread:  # the zygote answers in order, once its imports under way are done
                answer(self.sock, self.pid, FIRST_ANSWER)
                self.unread -= 1
            return ask(self.sock, self.pid, request, fds, bound)

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

    def need(self, modules: Sequence[str]) -> None:
        """Tell the zygote this process started the model libraries the run's cases need: it imports
        those before its first fork instead of all of :data:`LIBRARIES` (:meth:`Server.need`).  The
        reply is read with the next request's, so that this process does not wait for an import
        under way (it waits at the first fork, where its own work can fill the wait)."""
        if self.proc is None:  # the controller's zygote serves other processes too
            return
        with self.asking, contextlib.suppress(OSError):
            _send(self.sock, {"op": "need", "modules": list(modules)})
            self.unread += 1

    @property
    def gone(self) -> bool:
        """Whether the zygote process has ended (its workers die with it: ``PR_SET_PDEATHSIG``)."""
        return self.pid is not None and process_state(self.pid) in (None, b"Z", b"X")

    def status(self, pid: int) -> int | None:
        """The exit code of a finished worker (negative: the signal), as the zygote reaped it."""
        return exit_status(self._ask, pid)

    def stop(self) -> None:
        """Kill the zygote this process started; a client only disconnects."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.sock.close()
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
                os.rmdir(os.path.dirname(self.path))
        if Zygote._shared is self:
            Zygote._shared = None


if __name__ == "__main__":
    sys.exit(main(sys.argv))
