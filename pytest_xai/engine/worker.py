"""A worker process: it loads one explainer and runs it on cases it builds itself.

Forked by the zygote (:mod:`pytest_xai.engine.zygote`) or, where it cannot fork, started by
:mod:`pytest_xai.engine.isolate` as ``python -m pytest_xai.engine.worker REQUEST_FD REPLY_FD``: never a fork of a
parent that may hold OpenMP or BLAS thread pools, with the thread variables in its environment.
It reads requests from the plugin and answers each in the :mod:`pytest_xai.engine.wire` format: plain
JSON and float64 arrays, so nothing the explainer controls is ever unpickled by the plugin.  Cases
are rebuilt here from their name, seed and data dir (they are deterministic, and trained models come
from the shared on-disk cache), so no model crosses a process boundary; only cases that are not
registered arrive pickled, from the plugin.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib.util
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from pytest_xai.engine import wire

if TYPE_CHECKING:  # imported in the requests that need them: a worker starts with what it preloads
    from pytest_xai.case import Case
    from pytest_xai.engine.contract import Explainer

ARRAYS = ("attributions", "importance", "interactions", "stderr")
#: The spec of the judge's worker (:mod:`pytest_xai.engine.judge`): it builds cases, vets their
#: models and runs the checks, and never loads an explainer.
JUDGE = "pytest_xai:judge"
#: True in a child of the zygote that became an xdist worker (:func:`become`): it ends without the
#: interpreter's teardown (:func:`exit_as_python_would`).
FORKED = False


def die_with_parent() -> None:
    """Linux: the kernel kills this worker when the plugin's process dies, however it dies."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


_PLUGIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the package root
_REFERENCE = os.path.join(_PLUGIN, "explainers") + os.sep


def explainers_frames(tb: Any) -> Any:
    """``tb`` from the first frame that is not the plugin's own (worker, contract): an explainer's
    traceback starts at the explainer, not three frames of pytest-xai.  All of it when no frame is
    the explainer's (a failure of the plugin itself)."""
    first = tb
    while first is not None:
        name = os.path.abspath(first.tb_frame.f_code.co_filename)
        if not name.startswith(_PLUGIN) or name.startswith(_REFERENCE):
            return first
        first = first.tb_next
    return tb


def _describe(exc: BaseException) -> dict[str, Any]:
    try:
        tb = "".join(traceback.format_exception(type(exc), exc, explainers_frames(exc.__traceback__)))
    except BaseException as inner:  # noqa: BLE001 - formatting calls the exception's own __str__
        tb = f"(the traceback could not be formatted: {type(inner).__name__})"
    return {
        "kind": "raised",
        "type": wire.clip(type(exc).__name__, 200),
        "message": wire.clip(exc, 2000),
        "traceback": wire.clip(tb),
    }


def _import_modules(modules: list[list[str | None]]) -> None:
    """Import the modules that register user cases, by file when their name is not importable."""
    for name, path in modules:
        if name is None or name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, path) if path and os.path.isfile(path) else None
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name)


class Worker:
    """What a worker process serves: one explainer's calls (``explain``), or, in the judge's worker
    (spec :data:`JUDGE`), which loads no explainer, the case's vetting (``vet``), the checks
    (``check``) and the errors of a convergence ladder (``errors``)."""

    def __init__(self) -> None:
        self.explainer: Explainer | None = None  # set by the init request (None in the judge's worker)
        self.ready = False
        self.cases: dict[tuple[str, int, str | None, str | None], Case] = {}
        self.warnings: dict[str, list[list[Any]]] = {}  # what building each case warned, for its first test

    def init(self, header: dict[str, Any], started: Callable[[str], None]) -> dict[str, Any]:
        from pytest_xai.engine import contract

        sys.path[:] = header["sys_path"]
        os.environ.clear()  # the plugin's, now: a zygote-forked worker has the zygote's
        os.environ.update(header["environ"])
        os.chdir(header["cwd"])
        self.ready = True
        if header["spec"] == JUDGE:
            return {"kind": "ok"}
        self.explainer = contract.load(header["spec"], option="--xai-explainer")
        if self.explainer.prepare is not None:
            started(header["token"])
            self.explainer.prepare()
        return {"kind": "ok"}

    def _registered(self, header: dict[str, Any]) -> Case:
        """The registered case ``header`` names (``case``, ``case_seed``, ``cache_root``,
        ``data_dir``, ``modules``), built once."""
        from pytest_xai import cases
        from pytest_xai.cache import Cache

        key = (header["case"], header["case_seed"], header["cache_root"], header["data_dir"])
        if key not in self.cases:
            import warnings

            _import_modules(header.get("modules", []))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.cases[key] = cases.get(
                    header["case"],
                    seed=header["case_seed"],
                    cache=Cache(header["cache_root"]),
                    data_dir=header["data_dir"],
                )
            self.warnings[header["case"]] = [
                [w.category.__name__, wire.clip(w.message, 2000), wire.clip(w.filename, 500), int(w.lineno)]
                for w in caught
            ]
        return self.cases[key]

    def prebuild(self, header: dict[str, Any]) -> None:
        """Build the case the plugin expects to ask for next (``header["next"]``), once the reply is
        sent: the plugin scores the explanation meanwhile, so the next call finds its case built.
        A failure is left for that call, which builds again and reports it."""
        upcoming = header.get("next")
        if not upcoming or not self.ready:
            return
        try:
            self._registered(upcoming)
        except BaseException:  # noqa: BLE001, S110 - the call that needs the case reports what went wrong
            pass

    def _case(self, header: dict[str, Any], sent: Case | None = None) -> Case:
        """The case of a request: ``sent`` (a hand-made case, pickled by the plugin) or the
        registered one ``header`` names, with the model at ``header["variant"]`` swapped in (its path
        in the case, as :func:`pytest_xai.engine.runner.variant_of` found it) and the rows or
        perturbation of ``header["inputs"]``."""
        case = sent if sent is not None else self._registered(header)
        if header.get("variant"):
            from pytest_xai.engine.runner import resolve_variant

            case = case.with_model(resolve_variant(case, header["variant"]))
        if header.get("inputs"):
            from pytest_xai.cases.generic import variant_inputs

            case = variant_inputs(case, **header["inputs"])
        return case

    def _built(self, header: dict[str, Any], sent: Case | None = None) -> tuple[Case | None, dict[str, Any]]:
        """``(case, {})``, or ``(None, reply)`` when building it failed: a skip when the builder
        declared the case not applicable or it needs an optional library that is not installed (the
        reason names the install line), one line for a malformed data file of the user's, else an
        error of kind ``case`` naming the case."""
        from pytest_xai import extras
        from pytest_xai.errors import NotApplicable
        from pytest_xai.reports.files import DataFileError

        name = header.get("case") or getattr(getattr(sent, "info", None), "name", None)
        try:
            return self._case(header, sent), {}
        except NotApplicable as exc:  # e.g. a trained model below its quality gate
            return None, {"kind": "not_applicable", "message": wire.clip(f"case {name}: {exc}", 2000)}
        except DataFileError as exc:  # the user's file in --xai-data-dir: one line, no traceback
            return None, {"kind": "case", "message": wire.clip(f"case {name}: {exc}", 2000)}
        except Exception as exc:  # noqa: BLE001 - the case's builder is user code: report, do not guess
            reason = extras.skip_reason(f"case {name}", exc) if isinstance(exc, ImportError) else None
            if reason is not None:
                return None, {"kind": "not_applicable", "message": wire.clip(reason, 2000)}
            out = _describe(exc)
            return None, {
                **out,
                "kind": "case",
                "message": f"building case {name!r} raised {out['type']}: {out['message']}",
            }

    def explain(
        self, header: dict[str, Any], blob: bytes, started: Callable[[str], None]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        from pytest_xai.engine import budget, contract
        from pytest_xai.errors import ExplainerError, NotApplicable

        if self.explainer is None:
            return {"kind": "internal", "message": "explain request before init"}, {}
        sent: Case | None = pickle.loads(blob) if blob else None  # from the plugin itself, never from an explainer
        case, failed = self._built(header, sent)
        if case is None:
            return failed, {}
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1") or 1)))
        started(header["token"])
        cpu = time.process_time()
        try:
            result = contract.run(
                self.explainer, case, seed=header["seed"], budget=budget.for_case(case, header["budget"])
            )
        except NotApplicable as exc:
            return {"kind": "not_applicable", "message": wire.clip(exc, 2000)}, {}
        except ExplainerError as exc:
            return {"kind": "invalid", "message": wire.clip(exc, 2000)}, {}
        cpu = time.process_time() - cpu
        arrays = {
            "attributions": result.attributions,
            "importance": result.importance,
            "interactions": result.interactions,
            "stderr": result.stderr,
        }
        return {
            "kind": "ok",
            "seconds": float(result.seconds),
            "cpu_seconds": float(cpu),
            "evaluations": int(result.evaluations or 0),
        }, arrays

    def vet(self, header: dict[str, Any], blob: bytes, started: Callable[[str], None]) -> dict[str, Any]:
        """In the judge's worker: build the case and vet its model (:func:`pytest_xai.engine.judge.vet`)."""
        from pytest_xai.engine import budget, judge

        case, failed = self._built(header, pickle.loads(blob) if blob else None)
        if case is None:
            return failed
        started(header["token"])
        problem = judge.vet(case)
        if problem is not None:
            return {"kind": "case", "message": wire.clip(problem, 4000)}
        target = case.target
        return {
            "kind": "ok",
            "shape": [int(d) for d in case.inputs.shape],
            "target": target.tolist() if hasattr(target, "tolist") else target,
            "budget": budget.for_case(case, header["budget"]),
            "warnings": self.warnings.pop(case.name, []),
        }

    def check(
        self, header: dict[str, Any], blob: bytes, started: Callable[[str], None], ask: Callable[..., Any]
    ) -> dict[str, Any]:
        """In the judge's worker: score an explanation (:func:`pytest_xai.engine.judge.score_in_worker`)."""
        from pytest_xai.engine import judge

        request = pickle.loads(blob)  # from the plugin itself, never from an explainer
        _import_modules(request.pop("modules"))  # where a user's check is registered
        case, failed = self._built(header, request.pop("case"))
        if case is None:
            return failed
        started(header["token"])
        cpu = time.process_time()
        reply = judge.score_in_worker(case, request, ask)
        return {**reply, "check_cpu": time.process_time() - cpu}  # benchmarks/phases.py reads it

    def errors(self, header: dict[str, Any], blob: bytes, started: Callable[[str], None]) -> dict[str, Any]:
        """In the judge's worker: the error of each rung of a convergence ladder against the case's
        exact Shapley values (:func:`pytest_xai.convergence.errors`)."""
        from pytest_xai import convergence
        from pytest_xai.errors import NotApplicable

        request = pickle.loads(blob)  # from the plugin itself, never from an explainer
        case, failed = self._built(header, request["case"])
        if case is None:
            return failed
        started(header["token"])
        try:
            return {"kind": "ok", "errors": convergence.errors(case, request["attributions"])}
        except NotApplicable as exc:
            return {"kind": "not_applicable", "message": wire.clip(exc, 2000)}


def main(argv: list[str]) -> int:
    request_fd, reply_fd = int(argv[1]), int(argv[2])
    die_with_parent()
    worker = Worker()

    def started(token: str) -> None:
        """Tell the plugin that the explainer's own code starts now: its limit starts here."""
        wire.write(reply_fd, wire.pack({"kind": "started", "token": token}))

    while True:
        try:
            header, arrays = wire.read(request_fd, blob=True)
        except EOFError:
            return 0
        reply: dict[str, Any] = {"kind": "internal", "message": f"unknown request {header.get('op')!r}"}
        out: dict[str, Any] = {}
        blob = arrays.get("blob", b"")

        def ask(question: dict[str, Any], token: str = header["token"]) -> tuple[dict[str, Any], dict[str, Any]]:
            """A check's question to the plugin (``reexplain``), and its answer."""
            wire.write(reply_fd, wire.pack({**question, "kind": "reexplain", "token": token}))
            return wire.read(request_fd, names=("attributions", "stderr"))

        try:
            if header["op"] == "init":
                reply = worker.init(header, started)
            elif header["op"] == "explain":
                reply, out = worker.explain(header, blob, started)
            elif header["op"] == "vet":
                reply = worker.vet(header, blob, started)
            elif header["op"] == "check":
                reply = worker.check(header, blob, started, ask)
            elif header["op"] == "errors":
                reply = worker.errors(header, blob, started)
        except BaseException as exc:  # noqa: BLE001 - the explainer is untrusted: report everything
            reply, out = _describe(exc), {}
        try:
            message = wire.pack({**reply, "token": header["token"]}, out)
        except BaseException as exc:  # noqa: BLE001 - e.g. a value json cannot encode
            message = wire.pack({**_describe(exc), "token": header["token"]})
        wire.write(reply_fd, message)
        if header.get("op") in ("explain", "check"):
            worker.prebuild(header)


def become(request: dict[str, Any], fds: list[int]) -> SystemExit:
    """In a child of the zygote: run ``python -c CODE`` as the client process would have, with its
    stdin, stdout and stderr, environment, directory and ``sys.path`` (:mod:`pytest_xai.engine.xdist_worker`).

    The libraries the zygote imported stay imported; that is the point.  ``fds`` ends with the
    client's lifeline, held open until this process ends.  Returns the ``SystemExit`` the code
    ended with, for :func:`exit_as_python_would`.
    """
    import io
    import types

    global FORKED
    FORKED = True
    # not die_with_parent(): an explainer that kills the zygote must not take the xdist workers with
    # it; a worker ends when its controller does (execnet's channel closes)
    os.set_inheritable(fds[3], False)
    for fd, target in zip(fds[:3], (0, 1, 2), strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["environ"])
    sys.path[:] = request["sys_path"]
    sys.argv = request["argv"]
    sys.dont_write_bytecode = bool(request["dont_write_bytecode"])
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True, errors="backslashreplace")
    if "numpy.random" in sys.modules:  # its global generator was seeded at import: each process its own
        sys.modules["numpy.random"].seed()
    namespace = types.ModuleType("__main__")
    sys.modules["__main__"] = namespace
    try:
        exec(compile(request["code"], "<string>", "exec"), namespace.__dict__)  # noqa: S102 - the client's own -c
    except SystemExit as exc:
        return exc
    except BaseException:  # noqa: BLE001 - reported as python -c would
        traceback.print_exc()
        return SystemExit(1)
    return SystemExit(0)


def exit_as_python_would(exiting: SystemExit) -> NoReturn:
    """End a forked xdist worker as Python ends: wait for its threads, run its atexit handlers,
    flush every file it holds open, then exit without tearing the interpreter down.

    That teardown frees every object the zygote imported (torch, scikit-learn...), which in a
    fork also copies each page it touches: 0.5 s a worker, measured, that the controller of
    ``-n N`` waits for at the end of every run.
    """
    import atexit
    import io
    import threading

    code = exiting.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # as Python reports sys.exit("message")
    status = code if isinstance(code, int) else (0 if code is None else 1)
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter calls first at exit
        # files this process opened and left open, which the teardown would flush (the zygote's
        # objects are frozen, so not listed: listing them would touch, and copy, their pages)
        for obj in gc.get_objects():
            if isinstance(obj, io.IOBase):
                with contextlib.suppress(Exception):
                    if not obj.closed:
                        obj.flush()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
