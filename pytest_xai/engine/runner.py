"""The execution engine: explainers run on cases and explanations scored, with no pytest in sight.

The plugin's fixtures only turn what this module returns into pass, fail or skip.  A
:class:`Runner` resolves seeds, memoises one call per (explainer, case, seed) — failures and
timeouts included, so the other checks of a case never wait twice —, runs each call in the
explainer's worker process (:mod:`pytest_xai.engine.isolate`) or, with no limit, in this process, and
re-explains on swapped models for sanity checks.  :func:`resolve_thresholds` is the one place
where threshold precedence is decided; :func:`draw_picture` draws worst examples.
"""

from __future__ import annotations

import contextlib
import copy
import math
import signal
import sys
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_xai.errors import (
    CaseFault,
    ExplainerCrash,
    ExplainerError,
    ExplainerRaised,
    ExplainerTimeout,
    NotApplicable,
)

if TYPE_CHECKING:  # the engine imports its collaborators where it uses them
    from pytest_xai.cache import Cache
    from pytest_xai.case import Case, CaseInfo, CaseRef, Score
    from pytest_xai.engine.contract import Explainer, Explanation
    from pytest_xai.engine.isolate import Limits, Pool, Watch, Worker

#: Threshold precedence, strongest first (docs/explainers.md, "Writing your own tests"); the JSON names the level used.
LEVELS = ("call", "marker", "command line", "ini", "case", "default")


def derive_seed(base: int, *parts: str) -> int:
    """A stable per-test seed: the same for a test serially and under xdist."""
    return zlib.crc32(":".join([str(base), *parts]).encode()) & 0x7FFFFFFF


def resolve_thresholds(
    defaults: Mapping[str, float],
    *,
    call: Mapping[str, Any] | None = None,
    marker: Mapping[str, Any] | None = None,
    command_line: Mapping[str, Any] | None = None,
    ini: Mapping[str, Any] | None = None,
    case: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each threshold of a check from the strongest level that sets it, in the order of
    :data:`LEVELS`: ``xai_check`` kwargs > marker kwargs > ``--xai-threshold`` > ini
    ``xai_thresholds`` > the case's own value > the check's default.

    Returns ``(values, sources)``; ``sources`` names the level each value came from.
    """
    given: dict[str, Mapping[str, Any]] = {
        level: mapping or {} for level, mapping in zip(LEVELS, (call, marker, command_line, ini, case, defaults))
    }
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in defaults:
        level = next(level for level in LEVELS if name in given[level])
        values[name], sources[name] = given[level][name], level
    return values, sources


@dataclass(frozen=True)
class Outcome:
    """What one explainer call gave: ``status`` is ok, skip or error; an error's ``kind`` is one of
    :data:`pytest_xai.errors.ERROR_KINDS` (a timeout has no verdict, the others fail); an ok call's
    ``evaluations`` are the rows its model evaluated (:mod:`pytest_xai.engine.evaluations`)."""

    status: str
    explanation: Explanation | None = None
    message: str = ""
    traceback: str = ""
    seconds: float | None = None
    cpu_seconds: float | None = None
    kind: str | None = None
    evaluations: int | None = None
    stopped: bool = False  # stopped at the limit: a TIMEOUT (an explainer's kind "timeout", or a case's)

    def error(self) -> ExplainerError:
        """The exception of an error outcome, of the class of its kind."""
        if self.kind == "case":
            return CaseFault(self.message, self.traceback, stopped=self.stopped)
        classes: dict[str, type[ExplainerError]] = {
            "timeout": ExplainerTimeout,
            "crash": ExplainerCrash,
            "raised": ExplainerRaised,
        }
        return classes.get(self.kind or "", ExplainerError)(self.message)


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and not math.isnan(value) and abs(value) < 1e12 else None


def _count(value: Any) -> int | None:
    return value if type(value) is int and 0 <= value < 10**15 else None


#: Explanations made ahead and not taken yet, at most (:meth:`Runner._explain_ahead`).
AHEAD = 64
#: A spare starts when the calls still ahead of its explainer are expected to cost this many times
#: the CPU its first worker took to start (its import and ``prepare``): it then saves at least as much wall
#: time as it costs CPU.
SPARE_PAYBACK = 4


class Runner:
    """Runs explainers on cases for one session.

    ``limits`` is a :class:`pytest_xai.engine.isolate.Limits` (calls run in worker processes), or None to
    run calls in this process without a limit (a debugging aid: no isolation; each call gets its
    own freshly built copy of the case, so a mutation cannot reach other explainers).
    """

    def __init__(
        self, *, seed: int, limits: Limits | None, cache: Cache, data_dir: str | None, budget: int | None = None
    ):
        self.seed, self.limits, self.cache, self.data_dir = seed, limits, cache, data_dir
        self.budget = budget  # --xai-budget (pytest_xai.engine.budget); None: each case's own, else the default
        self.memo: dict[tuple[Any, ...], tuple[Any, Outcome]] = {}  # explain, and reexplain of other models
        #: Each case's vetting (:meth:`vet`): an error outcome naming the case, or what the plugin
        #: needs of it (the inputs' shape, the target, the budget of a call).
        self.vetted: dict[Any, tuple[Any, Outcome | dict[str, Any]]] = {}
        self.vetting: dict[Any, tuple[Any, ...]] = {}  # sent and not read yet: (request, case, worker, call)
        #: What building a case warned in the judge's worker, for the first test that uses it:
        #: ``[category name, message, filename, line]``.
        self.build_warnings: dict[str, list[list[Any]]] = {}
        #: The registered case the next call will probably need (the plugin sets it from the test
        #: order): a worker builds it once it has replied, while the plugin scores the explanation.
        self.upcoming: str | None = None
        #: The explanations the coming tests need, in their order (the plugin sets them: serially
        #: the run's, under xdist the next test's): the first not made yet is made while this test
        #: is judged (:meth:`_explain_ahead`).
        self.ahead: list[tuple[Explainer, CaseRef]] = []
        #: How many workers of each explainer make them, at most that many calls at once
        #: (``--xai-explainer-workers``): the first is the test thread's, the others spares, started
        #: once they pay back (:data:`SPARE_PAYBACK`, from each explainer's ``spent`` CPU seconds and calls).
        self.lanes = 1
        self.spent: dict[str, tuple[float, int]] = {}
        #: Calls made ahead (:meth:`_explain_ahead`), guarded by ``lock``: the running one of each
        #: (explainer spec, worker), those read and not taken yet, every key made ahead or called by
        #: the test thread, the specs whose first worker the test thread is using, and the specs
        #: whose spare could not start (their calls are made by the test thread's worker only).
        self.lock = threading.Lock()
        self.explaining: dict[tuple[str, int], _Ahead] = {}
        self.made: dict[tuple[Any, ...], _Ahead] = {}
        self.claimed: set[tuple[Any, ...]] = set()
        self.using: set[str] = set()
        self.no_spare: set[str] = set()
        self.prepared: set[str] = set()
        self._pool: Pool | None = None
        #: Entered while this thread only waits for a worker's reply (the plugin's background thread
        #: builds the next case and draws pictures then: ``plugin.state.Background``).
        self.waiting: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
        #: Told the spend of each explainer call in a worker while it runs (the plugin's progress lines).
        self.watch: Watch | None = None

    @property
    def pool(self) -> Pool:
        if self._pool is None:
            from pytest_xai.engine.isolate import Pool

            if self.limits is None:
                raise RuntimeError("Runner.pool: without limits every call runs in this process, with no worker")

            self._pool = Pool(self.limits)
        return self._pool

    def start(
        self,
        zygote: str | None = None,
        first: tuple[str, ...] = (),
        others: bool = True,
        expected: list[str] | None = None,
    ) -> None:
        """Start the process workers are forked from, in the background (calls need it later):
        the one listening at ``zygote`` if given (the xdist controller's), else a new one that
        imports the explainer libraries ``first`` before its first fork (and, with ``others``, the
        other explainer libraries while it waits: the run has explainers whose libraries are
        unknown), and the ``expected`` model libraries at once (:meth:`need` says the others)."""
        if self.limits is not None:
            from pytest_xai.engine.zygote import Zygote

            Zygote.address = zygote
            Zygote.settle(None if zygote else (tuple(first), others, tuple(expected or ())))
            Zygote.shared(first, others, expected)

    def need(self, libraries: list[str]) -> None:
        """Tell the zygote this process started which model libraries the run's cases need."""
        if self.limits is not None:
            from pytest_xai.engine.zygote import Zygote

            zygote = Zygote.shared()
            if zygote is not None:
                zygote.need(libraries)

    def serve(self, first: tuple[str, ...] = (), others: bool = True) -> str | None:
        """In the controller of ``pytest -n N``: start the zygote its workers share; its address."""
        if self.limits is None:
            return None
        from pytest_xai.engine.zygote import Zygote

        Zygote.settle(None)  # the controller's listens for its xdist workers
        return Zygote.serve(first, others)

    def close(self) -> None:
        with self.lock:
            self.ahead = []
            running = list(self.explaining.values())
        for made in running:  # a call made ahead that no test needs: stopped, not waited for
            if made.worker is not None:
                made.worker.kill()
        if self._pool is not None:
            self._pool.close()

    def seed_for(self, case: Case | CaseRef) -> int:
        return derive_seed(self.seed, case.name)

    # ------------------------------------------------------------------------------ one call

    def _key(self, explainer: Explainer, case: Case | CaseRef, seed: int) -> tuple[str, Any, int]:
        return explainer.spec, where(case) or id(case), seed

    def memoised(self, explainer: Explainer, case: Case | CaseRef, seed: int) -> bool:
        return self._key(explainer, case, seed) in self.memo

    def explain(self, explainer: Explainer, case: Case | CaseRef, *, seed: int | None = None) -> tuple[Outcome, bool]:
        """The outcome of ``explainer`` on ``case``, and whether it was memoised already.  A case
        whose vetting failed (:meth:`vet`) gives its error of kind ``case`` without a call."""
        seed = self.seed_for(case) if seed is None else seed
        key = self._key(explainer, case, seed)
        if key in self.memo:
            self._explain_ahead()
            return self.memo[key][1], True
        if explainer.broken is not None:  # its module exited, hung or raised when imported (pytest_xai.engine.probe)
            kind, message = explainer.broken
            return Outcome("error", message=message, kind=kind), False
        self._send_vet(case)  # the judge's worker vets the case while the explainer's makes the call
        made = self._take(explainer.spec, key)
        outcome = self._call(explainer, case, seed=seed) if made is None else self._taken(made)
        vetted = self.vet(case)
        if isinstance(vetted, Outcome):  # the case's fault: what the explainer did with it says nothing
            outcome = vetted
        self.memo[key] = (case, outcome)  # the case stays alive, so id(case) is not reused
        self._explain_ahead()
        return outcome, False

    def _explain_ahead(self) -> None:
        """Keep the explainer's worker busy with the explanations the coming tests need (:attr:`ahead`,
        in their order, up to :data:`AHEAD` of them not taken yet), while the tests before them are
        judged in the judge's worker: the two work side by side instead of taking turns.  Each
        call's reply is read in a thread of this process, under the same limits as any call
        (:class:`_Ahead`), which sends the next once it has it; the test that needs an explanation
        takes it (:meth:`_take`), and any other call to that worker waits for the one running
        (:meth:`_in_worker`).  Registered cases only, at most :attr:`lanes` calls at once: on the
        test thread's worker once it is up and free, and on spare workers of the explainer, which
        go on while the test thread uses its own."""
        with self.lock:
            self._next_ahead()

    def _next_ahead(self) -> None:
        """Send the first explanations of :attr:`ahead` not claimed yet, one a free worker (``lock`` held)."""
        if self.limits is None:
            return
        while self.ahead and len(self.explaining) < self.lanes and len(self.made) < AHEAD:
            explainer, case = self.ahead[0]
            seed = self.seed_for(case)
            key = self._key(explainer, case, seed)
            vetted = self.vetted.get(key[1])
            if key in self.claimed or key in self.memo or explainer.broken is not None:
                del self.ahead[0]
                continue
            if vetted is not None and isinstance(vetted[1], Outcome):  # the case's fault, known: no call
                del self.ahead[0]
                continue
            lane = self._free_lane(explainer.spec)
            if lane is None:
                return  # its workers are busy, or the test thread's is not up: later
            self.claimed.add(key)
            worker = self.pool.workers[explainer.spec] if lane == 0 else None  # a spare: started by its thread
            self.explaining[explainer.spec, lane] = _Ahead(self, worker, lane, explainer, case, seed, key)

    def _free_lane(self, spec: str) -> int | None:
        """A worker of ``spec`` free for a call made ahead (``lock`` held): 0, the test thread's, when
        it is up and the test thread is not using it; else a spare's number; else None."""
        worker = self.pool.workers.get(spec)
        if (spec, 0) not in self.explaining and spec not in self.using and worker is not None and worker.alive:
            return 0
        if spec in self.no_spare or worker is None:
            return None
        started = any((spec, lane) in self.pool.spares for lane in range(1, self.lanes))
        if not started and not self._pays_back(spec, worker.start_cpu):
            return None
        return next((lane for lane in range(1, self.lanes) if (spec, lane) not in self.explaining), None)

    def _pays_back(self, spec: str, start_cpu: float) -> bool:
        """Whether the calls still ahead of ``spec``, at its mean CPU seconds a call so far, cost
        :data:`SPARE_PAYBACK` times a worker's start (an explainer's ``prepare`` may load or compile
        for seconds, which a spare would pay again on a short run for nothing)."""
        spent, calls = self.spent.get(spec, (0.0, 0))
        coming = sum(explainer.spec == spec for explainer, _ in self.ahead)
        return (spent / calls * coming if calls else 0.0) >= SPARE_PAYBACK * start_cpu

    def _finished(self, made: _Ahead) -> None:
        """In the thread of a call made ahead, its reply read: keep it for its test, send the next.  A
        spare that could not start leaves its call to the test thread, and the explainer its spares."""
        with self.lock:
            if self.explaining.get((made.explainer.spec, made.lane)) is made:
                del self.explaining[made.explainer.spec, made.lane]
            if made.worker is None:
                self.claimed.discard(made.key)
                self.no_spare.add(made.explainer.spec)
            else:
                self.made[made.key] = made
                self._spend(made.explainer.spec, made.reply[0] if made.reply else {})
            self._next_ahead()

    def _take(self, spec: str, key: tuple[Any, ...]) -> _Ahead | None:
        """The call made ahead for ``key``, once its reply is read, or None: the test thread makes
        the call (claimed, so it is never made ahead too)."""
        while True:
            with self.lock:
                if key in self.made:
                    return self.made.pop(key)
                running = next((m for (s, _), m in self.explaining.items() if s == spec and m.key == key), None)
                if running is None:
                    self.claimed.add(key)
                    return None
            self._wait_for(running)

    def _wait_for(self, running: _Ahead) -> None:
        """Wait for a call made ahead as for any call: its progress lines, the plugin's background work."""
        running.watching[0] = self.watch
        with self.waiting():
            running.thread.join()

    @contextlib.contextmanager
    def _using(self, spec: str) -> Iterator[None]:
        """The worker of ``spec`` for the test thread alone: the call made ahead on it finished first
        (read and kept for its test), none sent to it meanwhile, while its spares go on; the next one
        sent after."""
        with self.lock:
            self.using.add(spec)
        try:
            while True:
                with self.lock:
                    running = self.explaining.get((spec, 0))
                    if running is None:
                        self._next_ahead()
                        break
                self._wait_for(running)
            yield
        finally:
            with self.lock:
                self.using.discard(spec)
                self._next_ahead()

    def _taken(self, made: _Ahead) -> Outcome:
        """The outcome of a call made ahead, for the test that needs it; one whose worker died with
        its zygote is made once more, as :meth:`Pool.call` does."""
        assert made.worker is not None  # a spare that did not start left its call to the test thread
        if not made.worker.alive:
            self.pool.forget(made.worker)  # the next call starts another
        if isinstance(made.error, ExplainerCrash) and made.worker.lost_with_zygote():
            return self._call(made.explainer, made.case, seed=made.seed)

        def explained() -> Outcome:
            if made.error is not None:
                raise made.error
            assert made.reply is not None
            return self._explained(made.case, None, None, *made.reply)

        return _outcome(explained)

    def _send_vet(self, case: Case | CaseRef) -> None:
        """Send the vetting of ``case`` to the judge's worker without waiting (:meth:`vet` reads it)."""
        key = where(case) or id(case)
        if self.limits is None or key in self.vetted or key in self.vetting:
            return
        from pytest_xai.engine.worker import JUDGE

        header, sent = self._addressed(case)
        request = {"op": "vet", "budget": self.budget, **header}
        try:
            with self.waiting():  # the first send waits for the zygote to fork the judge's worker
                self.vetting[key] = (request, sent, *self.pool.send(JUDGE, request, case=sent))
        except ExplainerError:
            return  # vet() makes the call again and reports what went wrong

    def vet(self, case: Case | CaseRef) -> Outcome | dict[str, Any]:
        """The case built and its model vetted once (:func:`pytest_xai.engine.judge.vet`), in the
        judge's worker under the limits (here without them): an error :class:`Outcome` of kind
        ``case`` when the builder or the model misbehaves (hangs, raises, NaN, wrong shapes, two
        answers to one question), else ``{"shape", "target", "budget"}``."""
        from pytest_xai.engine import budget, judge

        key = where(case) or id(case)
        if key in self.vetted:
            return self.vetted[key][1]
        found: Outcome | dict[str, Any]
        if self.limits is None:
            try:
                built = _built(case)
                problem = judge.vet(built)
            except NotApplicable as exc:
                problem = None
                found = Outcome("skip", message=f"case {case.name}: {exc}", kind="case")
            except Exception as exc:  # noqa: BLE001 - the builder is the user's: its fault is the case's
                problem = f"building case {case.name!r} raised {type(exc).__name__}: {exc}"
            else:
                found = _profile(tuple(built.inputs.shape), built.target, budget.for_case(built, self.budget))
            if problem is not None:
                found = Outcome("error", message=problem, kind="case")
        else:
            from pytest_xai.engine.worker import JUDGE

            header, sent = self._addressed(case)
            try:
                with self.waiting():
                    if key in self.vetting:  # sent while the explainer's worker made its call
                        request, sent, worker, call = self.vetting.pop(key)
                        reply, _ = self.pool.receive(JUDGE, worker, call, request, case=sent)
                    else:
                        reply, _ = self.pool.call(JUDGE, {"op": "vet", "budget": self.budget, **header}, case=sent)
            except ExplainerError as exc:
                fault = _case_fault(case, "vetting its model", exc)
                found = Outcome("error", message=str(fault), kind="case", stopped=fault.stopped)
            else:
                if reply.get("kind") == "ok":
                    found = _profile(reply.get("shape"), reply.get("target"), reply.get("budget"))
                    self.build_warnings[case.name] = [w for w in reply.get("warnings") or [] if isinstance(w, list)]
                elif reply.get("kind") == "not_applicable":  # a missing optional library, say: a skip
                    found = Outcome("skip", message=str(reply.get("message", "")), kind="case")
                else:
                    message = str(reply.get("message") or "the judge's worker sent an unknown reply")
                    found = Outcome("error", message=message, traceback=str(reply.get("traceback", "")), kind="case")
        self.vetted[key] = (case, found)
        return found

    def budget_for(self, case: Case | CaseRef) -> int:
        """The budget of a call on ``case`` (``--xai-budget``, else the case's own, else the default)."""
        from pytest_xai.engine import budget

        vetted = self.vet(case)
        return int(vetted["budget"]) if isinstance(vetted, dict) else budget.for_case(None, self.budget)

    def repeat_seeds(self, case: Case | CaseRef, n: int) -> list[int]:
        """The seeds of ``--xai-repeat=n``: the ordinary seed first, then ``derive_seed(base, case, k)``."""
        return [self.seed_for(case)] + [derive_seed(self.seed, case.name, str(k)) for k in range(1, n)]

    def explain_repeated(
        self, explainer: Explainer, case: Case | CaseRef, n: int
    ) -> tuple[list[tuple[int, Outcome, bool]], bool]:
        """``explain`` under each of the ``n`` repeat seeds; returns ``([(seed, outcome, cached)], deterministic)``.

        An explainer whose first two calls give identical attributions (importance and interactions
        included) is deterministic: it is not called again, and its one explanation stands for all seeds.
        A call that does not succeed ends the series (the caller reports that outcome).
        """
        runs = []
        for k, seed in enumerate(self.repeat_seeds(case, n)):
            outcome, cached = self.explain(explainer, case, seed=seed)
            runs.append((seed, outcome, cached))
            if outcome.status != "ok":
                break
            if k == 1 and _same_explanation(runs[0][1].explanation, outcome.explanation):
                return runs[:1], True
        return runs, False

    def reexplain(
        self,
        explainer: Explainer,
        case: Case | CaseRef,
        model: Any = None,
        *,
        variant: list[Any] | None = None,
        other_seed: bool | int = False,
        rows: list[int] | None = None,
        perturb: tuple[int, float] | None = None,
        seed: int | None = None,
        budget: int | None = None,
        stderr: bool = False,
    ) -> Any:
        """Attributions of ``explainer`` on a variant of ``case``, under the same limits and
        validation; raises ExplainerError.  ``model`` swaps in another model (sanity checks;
        ``Case.with_model``), or ``variant``, its path in the case (:func:`variant_of`: what the
        judge's worker sends, which holds the models); ``rows`` explains ``inputs[rows]`` and
        ``perturb`` = (seed, radius) perturbed inputs (:func:`pytest_xai.cases.generic.variant_inputs`);
        ``other_seed`` gives the explainer another seed (True: the next one; k: the k-th after).
        ``seed`` is the seed of the explanation the check compares with (``--xai-repeat``: each
        repeat's own), by default the case's ordinary one.  ``budget`` replaces the call's budget of
        model evaluations (the estimator checks call an explainer at several); ``stderr=True``
        returns ``(attributions, stderr)``, the standard errors the explainer reported (or None).

        The explanation of another model of the case, or of the case's model under another seed or
        budget, is memoised like ``explain`` (the two sanity checks share the floor models and the reseeded
        explanation); a call with the same seed and model, which ``determinism`` compares with the
        first, and calls on other inputs are made every time."""
        seed = (self.seed_for(case) if seed is None else seed) + int(other_seed)
        if variant is None and model is not None and model is not case.model:
            variant = variant_of(_built(case), model)
        elif variant is not None:
            model = None  # found again by whoever builds the case
        swap = variant is not None or (model is not None and model is not case.model)
        key = None
        if rows is None and perturb is None and (variant is not None or ((other_seed or budget) and not swap)):
            key = (*self._key(explainer, case, seed), "reexplain", repr(variant), budget)
            if key in self.memo:
                return _attributions(self.memo[key][1], swap, stderr)
        given = {k: v for k, v in (("rows", rows), ("perturb", perturb)) if v is not None}
        if self.limits is not None and where(case) is not None:  # its worker builds the variant itself
            inputs = {k: [int(x) for x in v] if k == "rows" else [int(v[0]), float(v[1])] for k, v in given.items()}
            outcome = self._call(explainer, case, seed=seed, variant=variant, inputs=inputs or None, budget=budget)
        else:  # in this process, or a hand-made case (the test's own object): the variant is made here
            from pytest_xai.cases.generic import variant_inputs

            built = _built(case)
            if variant is not None and model is None:
                model = resolve_variant(built, variant)
            changed = built.with_model(model) if swap else built
            changed = variant_inputs(changed, **given) if given else changed
            outcome = self._call(explainer, changed, seed=seed, budget=budget)
        if key is not None:
            self.memo[key] = (case, outcome)
        return _attributions(outcome, swap, stderr)

    def judge(self, case: Case | CaseRef, request: dict[str, Any], answer: Callable[..., Any]) -> dict[str, Any]:
        """Send one check ``request`` (:class:`pytest_xai.engine.judge.Remote`) to the judge's
        worker, answering its questions with ``answer``; its reply.  The worker stopped at the limit
        or dead is the case's fault (its model, or the reference computed from it)."""
        import pickle

        from pytest_xai.engine.worker import JUDGE

        header, sent = self._addressed(case)
        blob = pickle.dumps({**request, "case": sent})
        try:
            with self.waiting():
                reply, _ = self.pool.call(JUDGE, {"op": "check", **header}, blob=blob, answer=answer)
        except ExplainerError as exc:
            raise _case_fault(case, f"running check {request['check']!r}", exc) from None
        return reply

    def errors(self, case: Case | CaseRef, attributions: list[Any]) -> list[float]:
        """The error of each of ``attributions`` against the exact Shapley values of ``case``
        (:func:`pytest_xai.convergence.errors`), computed where the case is built: the judge's
        worker, or this process without limits.  Raises NotApplicable for a case without them."""
        from pytest_xai import convergence

        if self.limits is None:
            return convergence.errors(_built(case), attributions)
        import pickle

        from pytest_xai.engine.worker import JUDGE

        header, sent = self._addressed(case)
        blob = pickle.dumps({"case": sent, "attributions": attributions})
        try:
            with self.waiting():
                reply, _ = self.pool.call(JUDGE, {"op": "errors", **header}, blob=blob)
        except ExplainerError as exc:
            raise _case_fault(case, "measuring the convergence errors", exc) from None
        if reply.get("kind") == "not_applicable":
            raise NotApplicable(str(reply.get("message", "")))
        if reply.get("kind") != "ok":
            raise CaseFault(str(reply.get("message") or "the judge's worker sent an unknown reply"))
        return [float(e) for e in reply["errors"]]

    def _addressed(self, case: Case | CaseRef, hint: bool = True) -> tuple[dict[str, Any], Case | None]:
        """How a worker finds ``case``: ``(header, None)`` naming a registered case (and, with
        ``hint``, the next one it will probably need), or ``({}, case)`` for a hand-made case, which
        is pickled."""
        from pytest_xai import cases

        found = where(case)
        if found is None:
            return {}, case  # type: ignore[return-value]  # a CaseRef is always registered
        name, case_seed, root, data_dir = found
        place = {"case_seed": case_seed, "cache_root": root, "data_dir": data_dir}
        header: dict[str, Any] = {"case": name, "modules": _modules_of(case.info), **place}
        upcoming = cases.registered(self.upcoming) if hint and self.upcoming not in (None, name) else None
        if upcoming is not None:
            header["next"] = {"case": upcoming.name, "modules": _modules_of(upcoming), **place}
        return header, None

    def call(self, explainer: Explainer, case: Case | CaseRef, *, seed: int, budget: int | None = None) -> Outcome:
        """One more call of ``explainer`` on ``case``, never memoised, with another ``budget`` of
        model evaluations if given: the rounds of ``--xai-benchmark`` and the rungs of the
        convergence ladder (:mod:`pytest_xai.convergence`)."""
        return self._call(explainer, case, seed=seed, budget=budget)

    def _call(
        self,
        explainer: Explainer,
        case: Case | CaseRef,
        *,
        seed: int,
        variant: list[Any] | None = None,
        inputs: dict[str, Any] | None = None,
        budget: int | None = None,
    ) -> Outcome:
        budget = self.budget if budget is None else budget
        if self.limits is not None:
            return _outcome(lambda: self._in_worker(explainer, case, seed, variant, inputs, budget))

        def in_process() -> Outcome:
            explanation = self._in_process(explainer, _built(case), seed, budget)
            return Outcome("ok", explanation, seconds=explanation.seconds, evaluations=explanation.evaluations)

        return _outcome(in_process)

    def _in_worker(
        self,
        explainer: Explainer,
        case: Case | CaseRef,
        seed: int,
        variant: list[Any] | None,
        inputs: dict[str, Any] | None = None,
        budget: int | None = None,
    ) -> Outcome:
        request, sent = self._request(case, seed, variant, inputs, budget)
        with self._using(explainer.spec), self.waiting():
            reply, arrays = self.pool.explain(explainer.spec, request, case=sent, watch=self.watch)
        with self.lock:
            self._spend(explainer.spec, reply)
        return self._explained(case, sent, inputs, reply, arrays)

    def _spend(self, spec: str, reply: dict[str, Any]) -> None:
        """Count a call and its CPU seconds to its explainer (``lock`` held)."""
        spent, calls = self.spent.get(spec, (0.0, 0))
        self.spent[spec] = (spent + (_number(reply.get("cpu_seconds")) or 0.0), calls + 1)

    def _request(
        self,
        case: Case | CaseRef,
        seed: int,
        variant: list[Any] | None = None,
        inputs: dict[str, Any] | None = None,
        budget: int | None = None,
    ) -> tuple[dict[str, Any], Case | None]:
        """An explain request for a worker, and the hand-made case to pickle with it (or None).  While
        explanations are made ahead, the explainer's worker is told no next case to build: its next
        call is the next made ahead, not the next test's, and a build that hangs (a case's model)
        would stop a call on another case, blamed on the explainer."""
        header, sent = self._addressed(case, hint=not self.ahead)
        given = self.budget if budget is None else int(budget)
        return {"seed": int(seed), "variant": variant, "inputs": inputs, "budget": given, **header}, sent

    def _explained(
        self,
        case: Case | CaseRef,
        sent: Case | None,
        inputs: dict[str, Any] | None,
        reply: dict[str, Any],
        arrays: dict[str, Any],
    ) -> Outcome:
        """The outcome of a worker's ok reply: its arrays validated against the case's shape and target."""
        from pytest_xai.engine import contract

        if sent is not None:
            shape, target = tuple(sent.inputs.shape), sent.target
        else:
            vetted = self.vet(case)
            if isinstance(vetted, Outcome) and vetted.status == "skip":
                raise NotApplicable(vetted.message)
            if isinstance(vetted, Outcome):  # the case failed its vetting: explain() reports that
                raise vetted.error()
            shape, target = vetted["shape"], vetted["target"]
            if inputs and "rows" in inputs:
                shape = (len(inputs["rows"]), *shape[1:])
        attributions, importance, interactions = contract.coerce_shaped(
            {k: v for k, v in arrays.items() if k in ("attributions", "importance", "interactions")}, shape, target
        )
        seconds, cpu = _number(reply.get("seconds")), _number(reply.get("cpu_seconds"))
        evaluations = _count(reply.get("evaluations"))
        stderr = contract.stderr_of(arrays, tuple(shape))
        explanation = contract.Explanation(attributions, seconds or 0.0, importance, interactions, evaluations, stderr)
        return Outcome("ok", explanation, seconds=seconds, cpu_seconds=cpu, evaluations=evaluations)

    def _in_process(self, explainer: Explainer, case: Case, seed: int, given: int | None = None) -> Explanation:
        from pytest_xai import cases
        from pytest_xai.engine import budget, contract
        from pytest_xai.engine.wire import clip

        built = cases.built_with(case)
        own = (
            cases.get(built[0], seed=built[1], cache=self.cache, data_dir=built[3], fresh=True)
            if built
            else copy.deepcopy(case)
        )
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(1)
        with _real_interrupts() as interrupted:
            try:
                if explainer.prepare is not None and explainer.spec not in self.prepared:
                    self.prepared.add(explainer.spec)
                    explainer.prepare()
                wanted = self.budget if given is None else given
                return contract.run(explainer, own, seed=seed, budget=budget.for_case(own, wanted))
            except (NotApplicable, ExplainerError):
                raise
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt) and interrupted:
                    raise  # the user pressed Ctrl-C: stop the session
                import traceback

                from pytest_xai.engine.worker import explainers_frames

                raise ExplainerRaised(
                    f"raised {type(exc).__name__}: {clip(exc, 2000)}",
                    clip("".join(traceback.format_exception(type(exc), exc, explainers_frames(exc.__traceback__)))),
                ) from None


class _Ahead:
    """A call made ahead (:meth:`Runner._explain_ahead`): sent at once to a free worker of the
    explainer (``worker``, or else spare number ``lane``, started first), its reply read in a thread
    of its own, which holds the call to its limits as the test thread would
    (:meth:`pytest_xai.engine.isolate.Worker.receive`).  A spare that cannot start leaves ``worker``
    None: the test thread makes the call."""

    def __init__(
        self,
        runner: Runner,
        worker: Worker | None,
        lane: int,
        explainer: Explainer,
        case: CaseRef,
        seed: int,
        key: tuple[Any, ...],
    ):
        self.worker, self.lane, self.explainer = worker, lane, explainer
        self.case, self.seed, self.key = case, seed, key
        self.reply: tuple[dict[str, Any], dict[str, Any]] | None = None
        self.error: BaseException | None = None
        self.watching: list[Watch | None] = [None]  # the progress lines of the test that waits for it
        request, _ = runner._request(case, seed)
        pool = runner.pool  # the test thread's, started

        def follow(seconds: float, cpu: float | None) -> None:
            watch = self.watching[0]
            if watch is not None:
                watch(seconds, cpu)

        def run() -> None:
            try:
                if self.worker is None:
                    self.worker = pool.spare(explainer.spec, lane)
                self.reply = pool.ahead(self.worker, request, watch=follow)
            except BaseException as exc:  # noqa: BLE001 - the test that takes it reports it
                self.error = exc
            runner._finished(self)

        self.thread = threading.Thread(target=run, name=f"pytest-xai ahead {explainer.name}", daemon=True)
        self.thread.start()


def _outcome(work: Callable[[], Outcome]) -> Outcome:
    """``work()``, a NotApplicable as a skip, an ExplainerError as an error of its kind."""
    try:
        return work()
    except NotApplicable as exc:
        return Outcome("skip", message=str(exc))
    except ExplainerError as exc:
        return Outcome("error", message=str(exc), traceback=getattr(exc, "traceback", ""), kind=exc.kind)


class _real_interrupts:
    """Tell a real SIGINT from a KeyboardInterrupt the explainer raised itself."""

    def __enter__(self) -> list[int]:
        self.flag: list[int] = []
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)

            def handler(signum: int, frame: Any) -> None:
                self.flag.append(signum)
                raise KeyboardInterrupt

            self.previous = previous
            signal.signal(signal.SIGINT, handler)
        return self.flag

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _same_explanation(a: Any, b: Any) -> bool:
    """Whether two explanations are identical, bit for bit (a deterministic explainer's are)."""
    import numpy as np

    def same(x: Any, y: Any) -> bool:
        return (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))

    return all(same(getattr(a, f), getattr(b, f)) for f in ("attributions", "importance", "interactions"))


def _attributions(outcome: Outcome, swap: bool, stderr: bool = False) -> Any:
    """A re-explanation's attributions (with ``stderr``: and its standard errors, or None); its skip
    or error raised as ExplainerError."""
    if outcome.status == "skip":
        raise ExplainerError(
            f"declared the {'randomised model' if swap else 'variant'} not applicable: {outcome.message}"
        )
    if outcome.status != "ok" or outcome.explanation is None:
        raise outcome.error()
    if stderr:
        return outcome.explanation.attributions, outcome.explanation.stderr
    return outcome.explanation.attributions


def where(case: Case | CaseRef) -> tuple[str, int, str | None, str | None] | None:
    """``(name, seed, cache root, data dir)`` a registered case is built from (a worker builds its
    own from them), or None for a hand-made case (it can only be copied: pickled)."""
    from pytest_xai import cases
    from pytest_xai.case import CaseRef

    if isinstance(case, CaseRef):
        return case.key
    built = cases.built_with(case)
    if built is None:
        return None
    name, seed, root, data_dir = built
    return name, seed, None if root is None else str(root), data_dir


def _built(case: Case | CaseRef) -> Case:
    from pytest_xai.case import CaseRef

    return case.build() if isinstance(case, CaseRef) else case


def _profile(shape: Any, target: Any, budget: Any) -> dict[str, Any]:
    """What the plugin keeps of a vetted case: the inputs' shape, the target and a call's budget."""
    return {"shape": tuple(int(d) for d in shape), "target": target, "budget": int(budget)}


def _case_fault(case: Case | CaseRef, doing: str, exc: ExplainerError) -> CaseFault:
    """The judge's worker stopped at the limit, dead or garbled while ``doing``: the case's fault."""
    if isinstance(exc, CaseFault):
        return exc
    stopped = isinstance(exc, ExplainerTimeout)
    what = "was stopped" if stopped else "failed"
    return CaseFault(
        f"case {case.name!r}: {doing} {what} in the judge's worker, where only the case's builder and model run: {exc}",
        stopped=stopped,
    )


def resolve_variant(case: Case, variant: list[Any]) -> Any:
    """The model at ``variant`` in ``case`` (:func:`variant_of`), built on first use."""
    if variant[0] == "meta" and variant[1] not in case.meta:
        case.build_variants()  # randomised models a user case builds on first use
    model = case.torch_model if variant == ["torch_model"] else case.meta
    for part in variant[1:]:  # ["meta", key, index, ...]
        model = model[part]
    return model


def variant_of(case: Case, model: Any) -> list[Any] | None:
    """Where ``model`` sits in ``case`` (so a worker can find its own copy), or None."""
    if model is case.torch_model:
        return ["torch_model"]

    def search(obj: Any, path: list[Any], depth: int) -> list[Any] | None:
        if obj is model:
            return path
        if depth == 0:
            return None
        items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, (list, tuple)) else ()
        for key, value in items:
            found = search(value, path + [key], depth - 1)
            if found is not None:
                return found
        return None

    return search(case.meta, ["meta"], 3)


def _modules_of(info: CaseInfo) -> list[list[str | None]]:
    """The module that registers the case ``info`` when it is not a built-in family (a user's conftest)."""
    return module_of(info.build)


def module_of(func: Any) -> list[list[str | None]]:
    """``[[name, file]]`` of the module defining ``func`` when a worker must import it to know it (a
    user's conftest registering a case or a check), else ``[]`` (a built-in family, this package)."""
    from pytest_xai import cases

    name = getattr(func, "__module__", None)
    if not name or name in cases.MODULES or name == "pytest_xai" or name.startswith("pytest_xai."):
        return []
    return [[name, getattr(sys.modules.get(name), "__file__", None)]]


#: One-sided error level of the ``--xai-repeat`` verdict: PASS when the Clopper-Pearson lower bound
#: of the seeds' pass rate at 1 - REPEAT_ALPHA exceeds 1/2, FAIL when the upper bound is below it.
#: 0.2 is the smallest round level at which 3 seeds can decide (3/3 has p = 1/8); the error rates
#: this gives at N = 3, 5, 10 are measured in docs/ci.md ("Repeated seeds").
REPEAT_ALPHA = 0.2


def clopper_pearson(passes: int, runs: int, alpha: float = REPEAT_ALPHA) -> tuple[float, float]:
    """The exact (Clopper-Pearson 1934) bounds ``(lower, upper)`` of a pass rate, each one-sided at
    confidence ``1 - alpha`` (together a ``1 - 2 alpha`` interval)."""
    from scipy.stats import beta

    lower = 0.0 if passes == 0 else float(beta.ppf(alpha, passes, runs - passes + 1))
    upper = 1.0 if passes == runs else float(beta.ppf(1 - alpha, passes + 1, runs - passes))
    return lower, upper


def repeat_verdict(passes: int, runs: int, alpha: float = REPEAT_ALPHA) -> str:
    """PASS when the pass rate is credibly above 1/2, FAIL when credibly below, else FLAKY."""
    lower, upper = clopper_pearson(passes, runs, alpha)
    return "PASS" if lower > 0.5 else "FAIL" if upper < 0.5 else "FLAKY"


def combine_repeats(
    scores: list[Score], *, seeds: list[int], n: int, deterministic: bool
) -> tuple[Score, dict[str, Any], bool]:
    """``--xai-repeat``: one score from the scores of every seed's explanation (the first seed's
    first), the mean with its spread, the verdict by an exact test on the seeds' pass rate
    (:func:`repeat_verdict`): a FLAKY one, undecided, fails the test and is labelled; a
    deterministic explainer's one score stands.  Returns ``(score, repeat, flaky)``, ``repeat`` the
    summary the JSON report records."""
    import dataclasses
    import statistics

    values = [float(s.value) for s in scores]
    passed = [bool(s.passed) for s in scores]
    mean, spread = statistics.fmean(values), (statistics.pstdev(values) if len(values) > 1 else 0.0)
    verdict = (
        "PASS" if deterministic and passed[0] else "FAIL" if deterministic else repeat_verdict(sum(passed), len(passed))
    )
    flaky = verdict == "FLAKY"
    lower, upper = clopper_pearson(sum(passed), len(passed))
    repeat = {
        "n": n,
        "runs": len(scores),
        "deterministic": deterministic,
        "seeds": seeds,
        "verdict": verdict,
        "interval": None if deterministic else [round(lower, 6), round(upper, 6)],
        "scores": [round(v, 6) for v in values],
        "passed": passed,
        "mean": round(mean, 6),
        "std": round(spread, 6),
        "min": round(min(values), 6),
        "max": round(max(values), 6),
    }
    first = scores[0]
    if deterministic:
        return first, repeat, flaky
    tally = (
        f"{sum(passed)}/{len(passed)} seeds passed, pass rate in [{lower:.2f}, {upper:.2f}] "
        f"({1 - 2 * REPEAT_ALPHA:.0%} Clopper-Pearson): {verdict}"
        + (" (undecided: more seeds would decide)" if flaky else "")
    )
    return (
        dataclasses.replace(
            first,
            value=mean,
            passed=verdict == "PASS",
            detail=f"mean {mean:.3f} ± {spread:.3f} over {len(values)} seeds, {tally}; first seed: {first.detail}",
        ),
        repeat,
        flaky,
    )
