"""The fixtures a test uses (``xai_explainer``, ``xai_case``, ``xai_explain``, ``xai_check``) and
how a test's record travels with its report.

Part of the plugin (the only package that imports pytest).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_xai.case import CaseRef
from pytest_xai.engine.judge import MarkerError, ReexplainError, Repeats
from pytest_xai.engine.runner import derive_seed
from pytest_xai.errors import CaseFault, CheckFault, NotApplicable
from pytest_xai.plugin import progress
from pytest_xai.plugin.state import (
    XaiState,
    record_of,
    state_of,
    xai_ci,
    xai_record,
    xai_repeats,
)
from pytest_xai.reports.record import Record


@pytest.fixture(scope="session")
def xai_explainer(request: pytest.FixtureRequest):
    """The explainer under test (a ``contract.Explainer``), parametrised over ``--xai-explainer``."""
    return request.param


@pytest.fixture(scope="session")
def xai_case(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """Factory of ground-truth cases: ``xai_case("cough_and_fever")``.

    With a time limit (the default) it returns a :class:`pytest_xai.case.CaseRef`: the case named,
    not built; the explainer's worker and the judge's worker build it, and reading one of its
    fields (``case.inputs``) builds it in your test's process.  With ``--xai-timeout=0`` it returns
    the built :class:`pytest_xai.Case`."""
    from pytest_xai import cases, extras
    from pytest_xai.reports.files import DataFileError

    state = state_of(request.config)

    def get(name: str):
        options = state.options
        try:
            if state.runner.limits is not None:
                return state.case_ref(cases.info(name))
            return cases.get(name, seed=options.seed, cache=state.cache, data_dir=options.data_dir)
        except NotApplicable as exc:  # e.g. a trained model below its quality gate, a missing extra
            pytest.skip(f"case {name}: {exc}")
        except DataFileError as exc:  # the user's file in --xai-data-dir: one message, no traceback
            problem = f"case {name}: {exc}"
        except ImportError as exc:  # an optional library not installed: skipped, saying how to install it
            reason = extras.skip_reason(f"case {name}", exc)
            if reason is None:
                raise
            pytest.skip(reason)
        pytest.fail(problem, pytrace=False)  # outside the except block: no chained exception

    return get


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """Send the test's record with each of its reports as ``xai_*`` user properties: JSON text,
    which survives xdist and reads as JSON in JUnit XML (``Record.to_properties``).

    A skip for a missing extra that ``--xai-require`` names fails the test instead; under
    ``--xai-gate=regression`` a known failure is an xfail and a known failure that passes now an
    XPASS (:meth:`pytest_xai.plugin.ci.XaiCi.judge`), so that pytest's summary line, JUnit XML and
    the exit code agree."""
    rec = item.stash.get(xai_record, None)
    expected = None
    if rec is not None:
        excinfo = call.excinfo
        if (
            rec.error is None
            and excinfo is not None
            and not isinstance(excinfo.value, (pytest.fail.Exception, pytest.skip.Exception))
        ):
            from pytest_xai.engine.wire import clip  # e.g. a case builder that raised: the report names it

            rec.error = clip(f"{excinfo.typename}: {excinfo.value}", 2000)
        if not _required_missing(item, call, rec):
            expected = item.config.stash[xai_ci].judge(item, call, rec)  # known failure, or fixed
        names = Record.property_names()
        item.user_properties[:] = [p for p in item.user_properties if p[0] not in names] + rec.to_properties()
    report = yield
    if expected is not None and report.failed:  # as pytest's skipping plugin reports an xfail
        report.outcome, report.wasxfail = "skipped", expected
    elif expected is not None and report.passed and call.when == "call":
        report.wasxfail = expected  # XPASS (not strict: a test that got better is no regression)
    return report


def _required_missing(item: pytest.Item, call: pytest.CallInfo, rec: Record) -> bool:
    """Whether this phase skipped for a missing extra that ``--xai-require`` names; then it fails
    instead, with the skip's reason (the install line) and what requires it."""
    from pytest_xai import extras

    options = state_of(item.config).options
    excinfo = call.excinfo
    if not options.require or excinfo is None or not isinstance(excinfo.value, pytest.skip.Exception):
        return False
    failure = extras.required_failure(str(excinfo.value.msg), options.require, options.require_source)
    if failure is None:
        return False
    rec.error = rec.detail = failure
    rec.passed = False
    try:
        pytest.fail(failure, pytrace=False)
    except pytest.fail.Exception:
        call.excinfo = pytest.ExceptionInfo.from_current()
    return True


@pytest.fixture
def xai_explain(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Run an explainer on a case through the contract: ``xai_explain(explainer, case)``.

    The call runs in the explainer's worker process under the time limit, and its output is
    validated; one call is made per (explainer, case, seed) and shared by every check of that case.
    A ``NotApplicable`` skips the test; a crash, hang or invalid output fails it with a message
    naming the explainer, the case and what was wrong.  Seconds are recorded for the report.
    """
    from pytest_xai.engine import contract

    state = state_of(request.config)

    def explain(explainer, case, *, seed: int | None = None):
        if isinstance(explainer, str):
            explainer = contract.load(explainer, option="xai_explain")
        repeat = state.options.repeat if seed is None else 1  # a seed the test chose is kept
        seed = state.runner.seed_for(case) if seed is None else seed
        rec = record_of(request.node)
        rec.explainer, rec.case, rec.seed = explainer.name, case.name, seed
        rec.family, rec.category = case.info.family, case.info.category
        benchmark = request.getfixturevalue("benchmark") if "benchmark" in request.fixturenames else None
        if not state.runner.memoised(explainer, case, seed):
            state.wait_usefully()  # work of the plugin's own done while this call waits for its worker
        what = f"{explainer.name} on {case.name}"
        state.runner.watch = progress.watch(request.config, state.options.progress, what, state.options.timeout)
        try:
            outcome, cached = state.runner.explain(explainer, case, seed=seed)
            _warn_again(state.runner.build_warnings.pop(case.name, []))
            if repeat > 1 and outcome.status == "ok":
                outcome = _run_repeats(request.node, state, explainer, case, repeat)
        finally:
            state.runner.watch = None
        if benchmark is not None:
            outcome = _benchmark(benchmark, state, explainer, case, seed, outcome, timed=not cached)
        rec.seconds, rec.cpu_seconds, rec.cached = outcome.seconds, outcome.cpu_seconds, cached
        rec.evaluations = outcome.evaluations  # the same call as seconds: shared by the checks of a case
        rec.budget = state.runner.budget_for(case)
        overspent = _overspent(state, case, rec.evaluations)
        if overspent is not None:  # a test that calls no check still says so
            rec.detail = overspent
        if outcome.status == "skip":  # the case's own reason names it (a missing library, say)
            pytest.skip(
                outcome.message if outcome.kind == "case" else f"{explainer.name} on {case.name}: {outcome.message}"
            )
        if outcome.status == "error":
            failure = (
                outcome.message  # it names the case: the explainer was not at fault, or never called
                if outcome.kind == "case"
                else f"explainer {explainer.name!r} on case {case.name!r}: {outcome.message}"
            )
            rec.error, rec.kind, rec.passed, rec.score = failure, outcome.kind, False, 0.0
            rec.stopped = outcome.stopped or None
            pytest.fail(failure + (f"\n\n{outcome.traceback}" if outcome.traceback else ""), pytrace=False)
        return outcome.explanation

    return explain


@pytest.fixture
def xai_convergence(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Run an explainer on a case at each budget of a ladder: ``xai_convergence(explainer, case)``.

    Each rung is one call with that budget of model evaluations (:data:`pytest_xai.convergence.LADDER`
    unless ``budgets`` are given), in the explainer's worker under the time limit, with the case's
    seed; its evaluations and CPU seconds are the engine's, its error against the case's exact
    Shapley values the judge's worker's (:func:`pytest_xai.convergence.relative_rmse`).  A rung
    below the explainer's minimum is recorded as skipped; the ladder stops once a rung repeats the
    one before (the explainer no longer uses more).  A failed call fails the test; no rung run
    skips it.  Returns the rungs, which the test's record carries to the reports.
    """
    from pytest_xai import convergence
    from pytest_xai.engine import contract

    state = state_of(request.config)

    def ladder(explainer, case, *, budgets=None):
        if isinstance(explainer, str):
            explainer = contract.load(explainer, option="xai_convergence")
        seed = state.runner.seed_for(case)
        rec = record_of(request.node)
        rec.explainer, rec.case, rec.seed, rec.family = explainer.name, case.name, seed, case.info.family
        rungs: list[dict[str, Any]] = []
        ran: list[Any] = []  # the outcomes of the rungs that ran
        for budget in budgets or convergence.LADDER:
            outcome = state.runner.call(explainer, case, seed=seed, budget=int(budget))
            if outcome.status == "skip":
                rungs.append({"budget": int(budget), "skipped": outcome.message})
                continue
            if outcome.status == "error":
                failure = f"explainer {explainer.name!r} on case {case.name!r} with a budget of {budget:,}: "
                rec.error, rec.kind, rec.passed = failure + outcome.message, outcome.kind, False
                pytest.fail(rec.error + (f"\n\n{outcome.traceback}" if outcome.traceback else ""), pytrace=False)
            if ran and outcome.evaluations == ran[-1].evaluations and _same(outcome, ran[-1]):
                break  # a larger budget buys nothing more
            ran.append(outcome)
            rungs.append(
                {
                    "budget": int(budget),
                    "evaluations": outcome.evaluations,
                    "cpu_seconds": outcome.cpu_seconds,
                    "seconds": outcome.seconds,
                }
            )
        rec.convergence = rungs
        if not ran:
            pytest.skip(f"{explainer.name} on {case.name}: no budget of the ladder fits: {rungs[-1]['skipped']}")
        try:
            errors = state.runner.errors(case, [o.explanation.attributions for o in ran])
        except NotApplicable as exc:
            pytest.skip(str(exc))
        except CaseFault as exc:
            rec.error, rec.kind, rec.passed = str(exc), exc.kind, False
            pytest.fail(str(exc), pytrace=False)
        measured = [r for r in rungs if "skipped" not in r]
        for rung, error in zip(measured, errors):
            rung["error"] = round(error, 6)
        first, last = measured[0], measured[-1]
        rec.detail = (
            f"{convergence.METRIC}: {first['error']:.3g} at {first['evaluations']:,} evaluations"
            + (f" to {last['error']:.3g} at {last['evaluations']:,}" if len(ran) > 1 else "")
            + f" (budgets run: {len(ran)}; below the explainer's minimum: {len(rungs) - len(ran)})"
        )
        return rungs

    return ladder


def _same(a: Any, b: Any) -> bool:
    """Whether two calls gave the same attributions, bit for bit."""
    import numpy as np

    return bool(np.array_equal(a.explanation.attributions, b.explanation.attributions))


class _WorkerClock:
    """pytest-benchmark's timer for ``--xai-benchmark``: it advances by the seconds the explainer's
    worker measured around the call, so that a round is the call alone."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def __repr__(self) -> str:  # the timer's name in pytest-benchmark's JSON
        return "pytest_xai worker's time.perf_counter around the explainer's call"


def _benchmark(benchmark: Any, state: XaiState, explainer, case, seed: int, outcome: Any, *, timed: bool) -> Any:
    """``--xai-benchmark``: once the call that explains ``case`` is made (the warm-up: the worker
    is started, the case built), one more warm-up call, then pytest-benchmark's rounds
    (``--benchmark-min-rounds``, default 5) of the explainer's call alone, each the wall seconds its
    worker measured around the call; each round's CPU seconds and model evaluations go to
    ``extra_info``.  Returns ``outcome`` with the rounds' median wall and CPU seconds.  A call
    memoised by another test (``timed`` false) or that did not succeed is not timed again."""
    import dataclasses
    import statistics

    benchmark.extra_info["xai_evaluations"] = outcome.evaluations
    if benchmark.disabled or not timed or outcome.status != "ok":  # disabled: --benchmark-disable, xdist
        benchmark.disabled = True  # pytest-benchmark counts the fixture as used, and times nothing
        benchmark.pedantic(lambda: None)
        return outcome
    clock, rounds = _WorkerClock(), []

    def call() -> None:
        again = state.runner.call(explainer, case, seed=seed)
        if again.status != "ok" or again.seconds is None:
            raise again.error() if again.status == "error" else RuntimeError(f"a timed round gave {again.status}")
        clock.now += again.seconds
        rounds.append(again)

    benchmark._timer = clock  # where pytest-benchmark (5.x) reads the timer pedantic() uses
    benchmark.pedantic(call, rounds=state.config.getoption("benchmark_min_rounds"), warmup_rounds=1, iterations=1)
    rounds = rounds[1:]  # the warm-up's call is not timed
    cpu = [r.cpu_seconds for r in rounds if r.cpu_seconds is not None]
    benchmark.extra_info.update(
        xai_seconds=[r.seconds for r in rounds],
        xai_cpu_seconds=cpu,
        xai_round_evaluations=[r.evaluations for r in rounds],
    )
    return dataclasses.replace(
        outcome,
        seconds=statistics.median(r.seconds for r in rounds),
        cpu_seconds=statistics.median(cpu) if cpu else None,
    )


@pytest.fixture
def xai_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Score an explanation and fail the test when the check fails: ``xai_check("symmetry", expl, case)``.

    Case-specific arguments come from the case (``case.info.checks``) unless given.  Thresholds:
    call kwargs > marker kwargs (``@pytest.mark.xai_symmetry(rtol=0.1)``) > ``--xai-threshold`` >
    ini ``xai_thresholds`` > the case's own value > the check's default (``runner.resolve_thresholds``);
    the engine scores (:class:`pytest_xai.engine.judge.Judge`), this turns its verdict into pass, fail or skip.
    The score and where each threshold came from are recorded for the table, JSON and JUnit reports.
    """
    state = state_of(request.config)

    def run_check(name: str, explanation, case, *, explainer=None, **kwargs):
        markers = [(mark.name, mark.kwargs) for mark in reversed(list(request.node.iter_markers()))]
        rec = record_of(request.node)
        report = state.options.report
        try:
            verdict = state.judge.score(
                name,
                explanation,
                case,
                explainer=explainer,
                call=kwargs,
                markers=markers,
                repeats=request.node.stash.get(xai_repeats, None),
                picture=None if not report else _picture_path(report, request.node.name),
            )
        except NotApplicable as exc:  # e.g. an interaction check on an explainer that returns none
            pytest.skip(f"{name} on {case.name}: {exc}")
        except MarkerError as exc:  # a misspelt threshold: a usage error, as pytest-benchmark's marker has
            rec.error = f"{request.node.nodeid}: {exc}"
            pytest.fail(rec.error, pytrace=False)
        except ReexplainError as exc:
            pytest.fail(str(exc), pytrace=False)
        except (CaseFault, CheckFault) as exc:  # the case's model, or the check, not the explainer
            rec.error, rec.kind, rec.passed, rec.score = str(exc), exc.kind, False, 0.0
            rec.stopped = getattr(exc, "stopped", False) or None
            trace = getattr(exc, "traceback", "")
            pytest.fail(str(exc) + (f"\n\n{trace}" if trace else ""), pytrace=False)
        if verdict.picture_error is not None:
            state.picture_failures.append(f"{request.node.name}: {verdict.picture_error}")
        rec.picture = verdict.picture
        score = verdict.score
        if verdict.repeat is not None:
            rec.repeat, rec.flaky = verdict.repeat, verdict.flaky
        rec.check, rec.score, rec.passed = name, round(float(score.value), 6), bool(score.passed)
        overspent = _overspent(state, case, rec.evaluations)
        detail = score.detail if overspent is None else f"{score.detail}; {overspent}"
        rec.threshold, rec.threshold_sources, rec.detail = float(score.threshold), verdict.sources, detail
        rec.reference = score.params.get("reference")  # {method, evaluations, max_error, convention}
        benchmark = request.getfixturevalue("benchmark") if "benchmark" in request.fixturenames else None
        if benchmark is not None:
            benchmark.extra_info.update(
                {
                    "xai_check": name,
                    "xai_score": float(score.value),
                    "xai_passed": bool(score.passed),
                    "xai_case": case.name,
                }
            )
        if not score.passed:
            worst = f"\nworst example: {dict(score.worst)}" if score.worst else ""
            pytest.fail(
                f"{name} failed on case {case.name!r} (score {score.value:.3f}): {detail}{worst}", pytrace=False
            )
        request.config.stash[xai_ci].gate(request.node, name, score)
        return score

    return run_check


@pytest.fixture
def xai_snapshot(request: pytest.FixtureRequest, xai_explain: Callable[..., Any]) -> Callable[..., Any]:
    """Compare attributions with the test's reviewed snapshot file (``--xai-snapshot-update`` writes it).

    ``xai_snapshot(explainer, case)`` explains ``case`` (``xai_explain``, the run's seed) and, when
    writing, again under other seeds; ``xai_snapshot(attributions, explain=lambda seed: ...)`` takes
    values you computed, ``explain`` giving them under another seed (without it the explainer is
    taken to be deterministic).  The tolerance is the spread between those seeds
    (:mod:`pytest_xai.reports.snapshot`).  ``name`` tells several snapshots of one test apart.
    Returns the attributions compared.
    """
    from pytest_xai.reports import snapshot as snap

    state = state_of(request.config)
    node = request.node
    test = node.nodeid.split("::", 1)[1] if "::" in node.nodeid else node.name
    used: set[Any] = set()

    def snapshot(subject, case=None, *, explain=None, name: str | None = None, feature_names=None):
        unnamed = sum(isinstance(k, int) for k in used)
        key: Any = name if name is not None else unnamed
        if key in used:
            pytest.fail(f"xai_snapshot: name {name!r} used twice in {node.nodeid}; give each snapshot its own name")
        used.add(key)
        if name is None and unnamed:
            name = str(unnamed + 1)  # the second unnamed snapshot of a test is <test>.2
        path = snap.path_for(node.path, test, name)
        meta = {"test": node.nodeid}
        base = state.options.seed
        if case is not None:
            if explain is not None:
                pytest.fail("xai_snapshot(explainer, case) re-runs the explainer itself: leave out explain=")
            explainer, base = subject, state.runner.seed_for(case)
            subject = xai_explain(explainer, case)
            explain = lambda seed: xai_explain(explainer, case, seed=seed)
            meta.update(explainer=getattr(explainer, "spec", str(explainer)), case=case.name)
            if feature_names is None and not isinstance(case, CaseRef):  # a CaseRef is not built here
                feature_names = case.feature_names
        try:
            values = snap.values_of(subject)
            if not state.options.snapshot_update:
                return _compare(node, snap, path, values, feature_names)
            seeds = [derive_seed(base, "xai_snapshot", str(k)) for k in range(1, snap.RESEEDS + 1)] if explain else []
            others = [_rerun(explain, seed, values.shape) for seed in seeds]
            written = snap.Snapshot.measure(values, others, seeds=(base, *seeds), features=feature_names, meta=meta)
            _write(node, path, written.dumps(), measured=bool(seeds))
            return values
        except snap.SnapshotError as exc:
            problem = str(exc)
        record_of(node).detail = problem
        pytest.fail(problem, pytrace=False)  # outside the except block: no chained exception

    return snapshot


def _rerun(explain: Callable[..., Any], seed: int, shape: tuple[int, ...]) -> Any:
    """``explain(seed)`` (or ``explain()`` for a function of no arguments), checked against ``shape``."""
    import inspect

    from pytest_xai.reports import snapshot as snap

    try:
        takes_seed = bool(inspect.signature(explain).parameters)
    except (TypeError, ValueError):
        takes_seed = True
    values = snap.values_of(explain(seed) if takes_seed else explain(), "explain()'s attributions")
    if values.shape != shape:
        raise snap.SnapshotError(
            f"xai_snapshot: explain(seed) gave attributions of shape {values.shape}, the snapshot's are {shape}; "
            f"explain= must recompute the same attributions under another seed"
        )
    return values


def _compare(node: pytest.Item, snap: Any, path: Path, values: Any, feature_names: Any) -> Any:
    import os

    if not os.path.lexists(path):
        rec = record_of(node)
        rec.error = rec.detail = f"no explanation snapshot {path}"
        pytest.fail(
            f"no explanation snapshot {path}: run pytest {snap.UPDATE} {node.nodeid} to write it, "
            f"then review it and commit it",
            pytrace=False,
        )
    changes = snap.read(path).changes(values, path, feature_names)
    if changes is not None:
        record_of(node).detail = changes.splitlines()[0]
        pytest.fail(changes, pytrace=False)
    record_of(node).detail = "snapshot matched"
    return values


def _write(node: pytest.Item, path: Path, text: str, *, measured: bool) -> None:
    """Write a snapshot (the safe writer of reports); the test's property ``xai_snapshot`` says what became of it."""
    import json
    import os

    from pytest_xai.reports import files

    data = text.encode("utf-8", errors="backslashreplace")
    try:
        where = files.target(path)  # a FIFO is never opened to be read
        same = (
            where.kind == "file"
            and os.path.isfile(where.path)
            and os.path.getsize(where.path) == len(data)
            and Path(where.path).read_bytes() == data
        )
        files.write_bytes(path, data)
    except OSError as exc:
        pytest.fail(
            f"could not write the explanation snapshot {path}: {exc.strerror or exc}; make its folder writable",
            pytrace=False,
        )
    action = "unchanged" if same else "written"
    note = "" if measured else " (no explain=: tolerance of a deterministic explainer)"
    record_of(node).detail = f"snapshot {action}: {path}{note}"
    node.user_properties.append(("xai_snapshot", json.dumps({"path": str(path), "action": action, "note": note})))


def _overspent(state: XaiState, case, evaluations: int | None) -> str | None:
    """What the detail says when the explainer spent more model evaluations than the call's budget."""
    from pytest_xai.engine import budget

    return budget.overspent(evaluations, state.runner.budget_for(case))


def _picture_path(report: str, test_name: str) -> Path:
    """Where the worst example of a test is drawn, next to the JSON report, if its case draws."""
    import re

    from pytest_xai.reports.embed import folder

    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name).strip("_")
    return folder(report) / f"{name}.png"


def _warn_again(caught: list[list[Any]]) -> None:
    """Warnings that building the case raised in the judge's worker, raised again in the test that
    first uses it: ``[category name, message, filename, line]``, the category a builtin one or the
    cache's, else ``UserWarning``."""
    import builtins

    from pytest_xai.cache import CacheWarning

    for name, message, filename, lineno in caught:
        category = CacheWarning if name == "CacheWarning" else getattr(builtins, str(name), None)
        if not (isinstance(category, type) and issubclass(category, Warning)):
            category, message = UserWarning, f"{name}: {message}"
        warnings.warn_explicit(str(message), category, str(filename), int(lineno))


def _run_repeats(node: pytest.Item, state: XaiState, explainer, case, n: int):
    """``--xai-repeat``: the explainer under ``n`` seeds (``Runner.explain_repeated``); the first
    outcome that is not ok, else the first seed's.  The runs wait on the node for ``xai_check``."""
    runs, deterministic = state.runner.explain_repeated(explainer, case, n)
    bad = [outcome for _, outcome, _ in runs if outcome.status != "ok"]
    if bad:
        return bad[0]
    node.stash[xai_repeats] = Repeats([(seed, outcome.explanation) for seed, outcome, _ in runs], deterministic, n)
    return runs[0][1]
