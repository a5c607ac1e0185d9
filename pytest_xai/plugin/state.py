"""The session's state: its options (:class:`~pytest_xai.plugin.settings.XaiOptions`), the engine, the
records of finished tests.

Part of the plugin (the only package that imports pytest).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_xai.plugin.settings import XaiOptions
from pytest_xai.reports.record import Record

xai_state = pytest.StashKey["XaiState"]()
xai_ci = pytest.StashKey[Any]()  # the XaiCi of pytest_xai.plugin.ci
xai_repeats = pytest.StashKey[Any]()  # the seeds' explanations of --xai-repeat (pytest_xai.engine.judge.Repeats)
COSTS_KEY = "xai/suite_costs"  # pytest's cache: seconds per (case, explainer) of the last runs
LIBRARIES_KEY = "xai/libraries"  # pytest's cache: the model libraries the last command's cases needed
xai_record = pytest.StashKey[Record]()  # what a test has recorded so far (pytest_runtest_makereport sends it)
#: Modules another plugin imports at the end of every session, by plugin name.  pytest-xai depends
#: on hypothesis, whose pytest plugin imports hypothesis in ``pytest_terminal_summary``: 0.4-1 s at
#: the end of every run, in the controller and in each xdist worker.  The plugin imports them
#: before, while it waits (:func:`import_ahead`).
SESSION_END_IMPORTS = {"hypothesispytest": "hypothesis.internal.observability"}


#: Modules imported since the heap was last frozen that make the plugin freeze it again (:meth:`XaiState.freeze`).
FREEZE_AFTER_MODULES = 50


def import_ahead(config: pytest.Config) -> Callable[[], None] | None:
    """A job importing the modules of :data:`SESSION_END_IMPORTS` this session will import at its
    end (None when there are none); it never raises: the plugin that needs one imports it again."""
    import importlib

    wanted = [
        module
        for plugin, module in SESSION_END_IMPORTS.items()
        if config.pluginmanager.has_plugin(plugin) and module not in sys.modules
    ]
    if not wanted:
        return None

    def job() -> None:
        for module in wanted:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(module)

    return job


class Background:
    """Work done while the test thread only waits for a worker's reply (importing what another
    plugin imports at the session's end, freezing the heap), in one daemon thread.

    The two threads take turns on ``lock``: it is the test thread's except inside ``waiting()``
    (the runner's ``waiting``; re-entered while the test thread answers a worker's question), so
    background work never runs beside test code (warnings filters are process-wide).  A job that
    is running when the reply arrives finishes first."""

    def __init__(self) -> None:
        import collections
        import threading

        self.lock = threading.Lock()
        self.lock.acquire()  # the test thread's turn
        self.depth = 0  # waits the test thread is in (a check's question makes a wait within a wait)
        self.jobs: collections.deque[Callable[[], None]] = collections.deque()
        self.changed = threading.Condition()
        self.pending = 0
        threading.Thread(target=self._run, name="pytest-xai background", daemon=True).start()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        self.depth += 1
        if self.depth > 1:  # already waiting: the turn is the background's until the outer wait ends
            try:
                yield
            finally:
                self.depth -= 1
            return
        self.lock.release()
        try:
            yield
        finally:
            self.depth -= 1
            self._take_turn()

    def _take_turn(self) -> None:
        """Take the lock back, however often a signal interrupts the wait (a Ctrl-C while a job
        finishes, then another): an interrupted ``acquire`` has not acquired, and without the lock
        ``drain`` would release the background thread's, which then dies on its own release and
        leaves ``drain`` waiting forever.  The signal's exception is raised once the turn is ours."""
        interrupted: BaseException | None = None
        while True:
            try:
                self.lock.acquire()
            except BaseException as exc:  # noqa: BLE001 - raised below, after the lock is ours
                interrupted = exc
                continue
            break
        if interrupted is not None:
            raise interrupted

    def add(self, job: Callable[[], None]) -> None:
        """Queue ``job`` (it must catch its own exceptions)."""
        with self.changed:
            self.jobs.append(job)
            self.pending += 1
            self.changed.notify_all()

    def drain(self) -> None:
        """At the end of a session: give the background thread every turn until its jobs are done."""
        with self.waiting(), self.changed:
            self.changed.wait_for(lambda: self.pending == 0)

    def _run(self) -> None:
        while True:
            with self.changed:
                self.changed.wait_for(lambda: bool(self.jobs))
                job = self.jobs.popleft()
            with self.lock:
                job()
            with self.changed:
                self.pending -= 1
                self.changed.notify_all()


class XaiState:
    """Everything the plugin knows for one session (one per xdist worker, plus the controller)."""

    def __init__(self, config: pytest.Config, options: XaiOptions, explainers: list):
        self.config, self.options = config, options
        self.explainers = explainers
        self.records: list[Record] = []
        self.markers: set[str] = set()
        self.families_loaded = False
        self._cache = None
        self._runner = None
        self._judge = None
        self.zygote: str | None = None  # xdist's controller: the socket of the zygote its workers share
        self.controller = False  # xdist's controller of a run with explainers (it runs no test)
        self.probed: dict[str, Any] = {}  # spec -> what pytest_xai.engine.probe learnt of a user's explainer
        self.upcoming: dict[str, str | None] = {}  # serially: node id -> the next other suite case
        self._background: Background | None = None
        self.picture_failures: list[str] = []
        self.snapshots: list[tuple[str, str]] = []  # (node id, the xai_snapshot property: JSON text)
        self._imported_ahead = False
        self._frozen_with = 0  # modules imported when the heap was last frozen (freeze)
        self._gc_paused = False
        #: The zygote's explainer libraries: those imported before its first fork, and whether the
        #: others are imported while it waits (plugin._start_engine); kept in pytest's cache.
        self.zygote_explainers: tuple[list[str], bool] = ([], True)

    @property
    def cache(self):
        """The on-disk cache in pytest's cache directory; with ``-p no:cacheprovider`` a temporary
        one for the session, so that workers load what this process built instead of rebuilding it."""
        if self._cache is None:
            from pytest_xai.cache import Cache

            if getattr(self.config, "cache", None):
                root = self.config.cache.mkdir("xai")
            else:
                import shutil
                import tempfile

                root = tempfile.mkdtemp(prefix="pytest-xai-cache-")
                self.config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))
            self._cache = Cache(root)
        return self._cache

    @property
    def runner(self):
        """The execution engine (``pytest_xai.engine.runner``), started on first use."""
        if self._runner is None:
            from pytest_xai.engine.isolate import Limits
            from pytest_xai.engine.runner import Runner

            options = self.options
            wall = None if options.wall_timeout == float("inf") else options.wall_timeout  # inf: no backstop
            limits = Limits(cpu=options.timeout, wall=wall) if options.timeout else None
            self._runner = Runner(
                seed=options.seed, limits=limits, cache=self.cache, data_dir=options.data_dir, budget=options.budget
            )
        return self._runner

    @property
    def judge(self):
        """What scores a check (``pytest_xai.engine.judge``): the judge's worker process (``Remote``),
        or with ``--xai-timeout=0`` this process (``Judge``)."""
        if self._judge is None:
            from pytest_xai.engine.judge import Judge, Remote

            self._judge = (Remote if self.runner.limits is not None else Judge)(self.runner, self.options.thresholds)
        return self._judge

    def _remember_costs(self) -> None:
        """Seconds each (case, explainer) of the suite took, kept in pytest's cache for the next
        run's order under xdist (:func:`suite_costs`)."""
        cache = getattr(self.config, "cache", None)
        spent: dict[str, float] = {}
        for rec in self.records:
            if rec.case and rec.explainer and rec.check and rec.duration is not None:
                pair = f"{rec.case}-{rec.explainer}"
                spent[pair] = spent.get(pair, 0.0) + rec.duration
        if cache is None or not spent:
            return
        known = cache.get(COSTS_KEY, {})
        cache.set(
            COSTS_KEY,
            {
                **(known if isinstance(known, dict) else {}),
                **{pair: round(seconds, 3) for pair, seconds in spent.items()},
            },
        )

    def suite_costs(self) -> dict[str, float]:
        """``{"case-explainer": seconds}`` from the last runs (empty without pytest's cache)."""
        cache = getattr(self.config, "cache", None)
        known = cache.get(COSTS_KEY, {}) if cache is not None else {}
        if not isinstance(known, dict):
            return {}
        return {k: float(v) for k, v in known.items() if isinstance(v, (int, float))}

    def pause_gc(self) -> None:
        """Switch the cyclic garbage collector off until the first wait for a worker (:meth:`freeze`):
        the plugin's process imports the libraries of the cases meanwhile (the families, then torch,
        scikit-learn, scipy and xgboost with the first case), and each full collection during those
        imports walked every object imported so far: 6 of them, 1.1 CPU s, in a serial run of
        exact_shapley.  Left alone when the user switched it off; switched on again after the first
        test (:meth:`resume_gc`) if no test waited for a worker."""
        import gc

        if gc.isenabled():
            gc.disable()
            self._gc_paused = True
            self.config.add_cleanup(self.resume_gc)  # a session that never started a test

    def resume_gc(self) -> None:
        if self._gc_paused:
            import gc

            self._gc_paused = False
            gc.enable()

    def freeze(self) -> None:
        """Collect the garbage, freeze the heap (:func:`gc.freeze`) and switch the collector on
        again if :meth:`pause_gc` paused it.  The objects of the libraries imported so far (about
        280,000 with torch, scikit-learn, scipy and xgboost) are never garbage, yet every full
        collection walked them all, 0.15-0.2 s each, during the tests and three times at exit
        (pytest's unraisable-exception check, :func:`pytest_xai.plugin._quick_teardown`, Python's
        own).  Run by the background thread while the test thread waits for a worker: at the first
        wait, and again after further imports; what is alive then stays uncollected until the
        process ends, as it would anyway."""
        import gc

        gc.collect()
        gc.freeze()
        self.resume_gc()

    @property
    def background(self) -> Background | None:
        """The background thread (:class:`Background`), started on first use; None when calls run
        in this process (they never wait, so there is nothing to overlap)."""
        if self._background is None and self.runner.limits is not None:
            self._background = Background()
            self.runner.waiting = self._background.waiting
        return self._background

    def wait_usefully(self) -> None:
        """Queue the plugin's own work for the waits of a test about to call its worker: the first
        wait imports ahead (:func:`import_ahead`), a wait after many imports freezes the heap
        (:meth:`freeze`)."""
        background = self.background
        if background is None:
            return
        if not self._imported_ahead:  # during the first wait, which is long: the zygote and a worker start
            self._imported_ahead = True
            job = import_ahead(self.config)
            if job is not None:
                background.add(job)
        if len(sys.modules) > self._frozen_with + FREEZE_AFTER_MODULES:
            self._frozen_with = len(sys.modules)
            background.add(self.freeze)

    # Hooks: this object is registered as a plugin in pytest_configure.

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Serially, the tests run in ``session.items`` order: note the next other case after each,
        and tell the zygote which model libraries the collected tests' cases need."""
        if hasattr(self.config, "workerinput") or self.controller:
            return
        following = None
        for item in reversed(session.items):
            name = _case_name(item)
            self.upcoming[item.nodeid] = following
            following = name if name is not None else following
        if self._runner is not None:  # the explanations in the order the tests need them
            explanations = dict.fromkeys(filter(None, map(_explanation_of, session.items)))
            self._runner.ahead = list(filter(None, map(self._named, explanations)))
            self._runner.lanes = self.options.explainer_workers
        if (
            self._runner is not None
            and not self.config.getoption("collectonly", False)  # no zygote then
            and any(_uses_xai(item) for item in session.items)
        ):
            libraries = _libraries(session.items)
            self._runner.need(libraries)
            if getattr(self.config, "cache", None) is not None:
                first, others = self.zygote_explainers
                last = {"command": command_of(self.config), "libraries": libraries, "first": first, "others": others}
                self.config.cache.set(LIBRARIES_KEY, last)

    def expected_libraries(self) -> list[str] | None:
        """The model libraries the same command's cases needed last time (pytest's cache), which
        the zygote imports at once instead of waiting for collection to say; None when unknown."""
        if hasattr(self.config, "workerinput") or getattr(self.config, "cache", None) is None:
            return None
        last = _last_run(self.config.cache.get(LIBRARIES_KEY, None), self.config)
        return None if last is None else last["libraries"]

    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """The case the workers build ahead during this test: serially the next other case; under
        xdist a worker knows only its next test, so that test's case, and its explanation is the
        one its explainer's worker makes ahead (serially: the run's, :meth:`pytest_collection_finish`)."""
        if item.nodeid in self.upcoming:
            following = self.upcoming[item.nodeid]
        else:
            following = _case_name(nextitem) if nextitem is not None else None
            if self._runner is not None:
                explanation = _explanation_of(nextitem) if nextitem is not None else None
                self._runner.ahead = list(filter(None, [self._named(explanation)]))
        if self._runner is not None:
            self._runner.upcoming = following  # its workers build it once they have replied to this test

    def _named(self, explanation: tuple[Any, str] | None) -> tuple[Any, Any] | None:
        """``(explainer, case)`` of a suite test's explanation, the case named, not built (as
        ``xai_case`` names it)."""
        if explanation is None or self.runner.limits is None:
            return None
        from pytest_xai import cases

        explainer, name = explanation
        info = cases.registered(name)
        return None if info is None else (explainer, self.case_ref(info))

    def case_ref(self, info: Any) -> Any:
        """The registered case ``info`` named, not built (:class:`pytest_xai.case.CaseRef`): what
        ``xai_case`` returns with a time limit, and what the workers build."""
        from pytest_xai.case import CaseRef

        root = self.cache.root
        return CaseRef(info, self.options.seed, None if root is None else str(root), self.options.data_dir)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Under ``-n N``, the controller only waits for its workers from now on (they are up): a
        thread of its own imports what another plugin imports at the session's end
        (:func:`import_ahead`), then freezes the heap (:meth:`freeze`; the collector was off since
        configure).  Not before: the thread would slow the controller's starting of its workers,
        and the zygote would begin its later imports before forking them."""
        if not self.controller:
            return
        import threading

        job = import_ahead(self.config)

        def ahead() -> None:
            if job is not None:
                job()
            self.freeze()

        threading.Thread(target=ahead, name="pytest-xai imports", daemon=True).start()

    def pytest_runtest_logfinish(self) -> None:
        self.resume_gc()  # the first test waited for no worker (each wait freezes and resumes it)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the record of each finished test (from its report's user properties, so under xdist too)."""
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            reason = (
                report.longrepr[2].removeprefix("Skipped: ")
                if report.skipped and isinstance(report.longrepr, (tuple, list))
                else None
            )
            outcome: str = report.outcome
            if hasattr(report, "wasxfail"):  # pytest's own words for an expected failure, and its pass
                outcome = "xfailed" if report.skipped else "xpassed"
            rec = Record.from_properties(
                report.nodeid, outcome, report.duration, report.user_properties, skipped_because=reason
            )
            if rec is not None:
                self.records.append(rec)
        for key, value in report.user_properties if report.when == "call" else ():
            if key == "xai_snapshot":  # written by xai_snapshot under --xai-snapshot-update
                self.snapshots.append((report.nodeid, str(value)))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """The score table (and pictures that could not be drawn)."""
        for failure in self.picture_failures:
            terminalreporter.write_line(f"pytest-xai: could not draw the worst example of {failure}")
        self._snapshot_summary(terminalreporter)
        if not self.records:
            return
        from pytest_xai.reports import report as xai_report

        terminalreporter.write_sep("=", "xai scores")
        order = [e.name for e in self.explainers]
        for line in xai_report.table(self.records, order=order):
            terminalreporter.write_line(line)
        ladders = xai_report.convergence_table(self.records, order=order)
        if ladders:
            terminalreporter.write_sep("=", "xai convergence: error against exact Shapley values for a cost")
            for line in ladders:
                terminalreporter.write_line(line)
        from pytest_xai import extras

        for line in extras.summary(self.records):  # a run that lost its extras says so
            terminalreporter.write_line(line)
        over = over_budget(self.records)
        if over:
            terminalreporter.write_sep("=", "xai over budget")
            for line in over:
                terminalreporter.write_line(line)

    def _snapshot_summary(self, terminalreporter) -> None:
        """What ``--xai-snapshot-update`` did: each snapshot written, and how many were unchanged."""
        import json

        if not self.snapshots:
            return
        done = [(nodeid, json.loads(value)) for nodeid, value in self.snapshots]
        written = [(nodeid, d) for nodeid, d in done if d.get("action") == "written"]
        terminalreporter.write_sep("=", "xai snapshots")
        for nodeid, d in written:
            terminalreporter.write_line(f"written: {d.get('path')} ({nodeid}){d.get('note', '')}")
        review = ": review and commit them" if written else ""
        terminalreporter.write_line(f"{len(written)} snapshot(s) written, {len(done) - len(written)} unchanged{review}")

    @pytest.hookimpl(tryfirst=True)  # before any other writer's hook, which may raise (pytest's JUnit XML)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Stop the workers, draw the last pictures, remember what each (case, explainer) cost; the
        reports are written after every session-finish hook (``pytest_xai.plugin.ci.XaiReports``)."""
        self.resume_gc()
        if self._background is not None:
            self._background.drain()
        if self._runner is not None:
            self._runner.close()
        for rec in self.records:  # a picture whose drawing failed (or a worker's, under xdist, lost)
            if rec.picture and not os.path.exists(rec.picture):
                rec.picture = None
        if not hasattr(self.config, "workerinput"):
            self._remember_costs()


def over_budget(records: list[Record]) -> list[str]:
    """A line for each explainer call that spent more model evaluations than its budget: explainer,
    case, spend and budget (once per call, however many checks shared it)."""
    from pytest_xai.engine import budget

    lines = [
        f"{rec.explainer} on {rec.case}: {budget.overspent(rec.evaluations, rec.budget)}"
        for rec in records
        if rec.budget is not None and budget.overspent(rec.evaluations, rec.budget)
    ]
    return list(dict.fromkeys(lines))


def state_of(config: pytest.Config) -> XaiState:
    """The session of ``config`` (made in ``pytest_configure``)."""
    return config.stash[xai_state]


def record_of(node: pytest.Item) -> Record:
    """The record of the test ``node``, filled as it runs."""
    rec = node.stash.get(xai_record, None)
    if rec is None:
        rec = node.stash[xai_record] = Record()
    return rec


def _uses_xai(item: pytest.Item) -> bool:
    return any(name.startswith("xai_") for name in getattr(item, "fixturenames", ()))


def _libraries(items: list[pytest.Item]) -> list[str]:
    """The model libraries the cases of ``items`` are built with, in order; all of them
    (:data:`pytest_xai.engine.zygote.LIBRARIES`) when a test's case is not known before it runs or
    declares none (a user's case)."""
    from pytest_xai import cases
    from pytest_xai.engine.zygote import LIBRARIES

    needed: dict[str, None] = {}
    for item in items:
        if not _uses_xai(item):
            continue
        name = _case_name(item)
        info = cases.registered(name) if name is not None else None
        if info is None or info.libraries is None:
            return list(LIBRARIES)
        needed.update(dict.fromkeys(info.libraries))
    return list(needed)


def command_of(config: pytest.Config) -> list[str]:
    """The directory and arguments of a run, less ``--basetemp`` (a scratch folder, which pytester
    numbers anew each run)."""
    params = config.invocation_params
    return [str(params.dir), *(str(a) for a in params.args if not str(a).startswith("--basetemp"))]


def _last_run(last: Any, config: pytest.Config) -> dict[str, Any] | None:
    """What the same command recorded last time (:data:`LIBRARIES_KEY`), checked, or None."""
    if not isinstance(last, dict) or last.get("command") != command_of(config):
        return None
    libraries, first = last.get("libraries"), last.get("first", [])
    if not all(isinstance(v, list) and all(isinstance(m, str) for m in v) for v in (libraries, first)):
        return None
    return {"libraries": libraries, "first": first, "others": last.get("others") is not False}


def start_zygote_early(config: pytest.Config) -> None:
    """When the plugin is registered, before pytest loads the other plugins (0.3-0.5 s before
    configure): start the zygote the same command started last time, serially, with the libraries
    it recorded (:data:`LIBRARIES_KEY`, read from pytest's cache directory as pytest's cache
    stores it), so that their imports overlap pytest's own start.  Configure keeps it when it
    asks for the same, else stops it (``Runner.start``); a command never run, an xdist worker or a
    run without the cache plugin waits for configure."""
    import json

    if os.environ.get("PYTEST_XDIST_WORKER") or config.pluginmanager.is_blocked("cacheprovider"):
        return
    try:
        cache_dir = Path(str(config.getini("cache_dir")))
        path = (config.rootpath / cache_dir).joinpath("v", *LIBRARIES_KEY.split("/"))
        last = _last_run(json.loads(path.read_text()), config) if path.is_file() else None
    except (OSError, ValueError):  # no cache yet, or a cache another version wrote: configure decides
        return
    if last is not None:
        from pytest_xai.engine.zygote import Zygote

        Zygote.early(tuple(last["first"]), last["others"], last["libraries"])


def _explanation_of(item: pytest.Item) -> tuple[Any, str] | None:
    """``(explainer, case name)`` of a suite test, whose one explanation it checks, or None."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    name, explainer = params.get("xai_case_name"), params.get("xai_explainer")
    return None if name is None or explainer is None else (explainer, name)


def _case_name(item: pytest.Item) -> str | None:
    """The suite case a test checks (its ``xai_case_name`` parameter), or None for other tests."""
    return getattr(getattr(item, "callspec", None), "params", {}).get("xai_case_name")
