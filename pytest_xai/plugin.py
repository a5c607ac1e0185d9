"""The pytest plugin: options, markers, fixtures, the built-in suite, reports.

Thin by design: every hook calls the core.  Nothing heavy is imported at module level, so a test run
that never configures an explainer pays nothing for numpy, torch, shap or friends.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_xai.budget import DEFAULT as BUDGET
from pytest_xai.case import CATEGORIES
from pytest_xai.errors import NotApplicable, SpecError
from pytest_xai.record import Record
from pytest_xai.runner import derive_seed  # noqa: F401 - public name, used in examples

DEFAULT_TIMEOUT = 120.0
WALL_FACTOR = 10.0  # the wall-clock backstop, as a multiple of the CPU-time limit
SUITE = Path(__file__).parent / "suite" / "xai_suite.py"
CATEGORY_MARKERS = {
    "xai_fidelity": "fidelity: does the explanation reflect what the model computes",
    "xai_fragility": "fragility: can the explanation be manipulated (adversarial models, correlated features)",
    "xai_stability": "stability: is the explanation stable across data distributions and perturbations",
    "xai_stress": "stress: does the explainer cope with many features",
}
xai_state = pytest.StashKey["XaiState"]()
xai_ci = pytest.StashKey["XaiCi"]()
xai_repeats = pytest.StashKey[tuple]()
xai_record = pytest.StashKey[Record]()  # what a test has recorded so far (pytest_runtest_makereport sends it)
#: The fast gate (``-m xai_smoke``): one representative (check, case) per family, a cheap one where
#: the family has a choice (stress has one case, which costs KernelSHAP about 36 s); the one place
#: that chooses it (docs/ci.md).
SMOKE = (
    ("symmetry", "cough_and_fever"),            # tabular
    ("fooling", "compas_shap_scaffold"),        # fooling
    ("dummy", "digits_function_dummy"),         # digits
    ("stress_rank", "stress_nb_features"),      # stress
    ("interaction_detection", "detect_interaction0"),  # interactions
    ("units_mse", "units_weighted_features"),   # units
    ("additive_correlation", "additive_mlp"),   # additive
    ("model_randomisation", "sanity_digits_mlp"),  # sanity
    ("human_precision", "human_shapes_oracle"),  # human
    ("ngt", "chess_oracle_check"),              # chess
    ("gt_shapley", "gaussian_linear_rho50"),    # gaussian
)


class XaiState:
    """Everything the plugin knows for one session (one per xdist worker, plus the controller)."""

    def __init__(self, config: pytest.Config, explainers: list, thresholds: dict, seed: int, timeout: float,
                 wall_timeout: float | None = None, budget: int | None = None):
        self.config = config
        self.budget = budget
        self.explainers = explainers
        self.thresholds = thresholds  # {"ini": {check: {param: value}}, "command line": {...}}
        self.seed = seed
        self.timeout = timeout
        self.wall_timeout = wall_timeout if wall_timeout is not None else WALL_FACTOR * timeout
        data_dir = config.getoption("xai_data_dir") or (config.getini("xai_data_dir") or [None])[0]
        self.data_dir = None if data_dir is None else str(data_dir)
        self.records: list[Record] = []
        self.markers: set[str] = set()
        self.families_loaded = False
        self._cache = None
        self._runner = None

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
        """The execution engine (``pytest_xai.runner``), started on first use."""
        if self._runner is None:
            from pytest_xai.isolate import Limits
            from pytest_xai.runner import Runner

            wall = None if self.wall_timeout == float("inf") else self.wall_timeout  # inf: no backstop
            limits = Limits(cpu=self.timeout, wall=wall) if self.timeout else None
            self._runner = Runner(seed=self.seed, limits=limits, cache=self.cache, data_dir=self.data_dir,
                                  budget=self.budget)
        return self._runner

    # Hooks: this object is registered as a plugin in pytest_configure.

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            reason = (report.longrepr[2].removeprefix("Skipped: ")
                      if report.skipped and isinstance(report.longrepr, (tuple, list)) else None)
            rec = Record.from_properties(report.nodeid, report.outcome, report.duration, report.user_properties,
                                         skipped_because=reason)
            if rec is not None:
                self.records.append(rec)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.records:
            return
        from pytest_xai import report as xai_report

        terminalreporter.write_sep("=", "xai scores")
        for line in xai_report.table(self.records):
            terminalreporter.write_line(line)
        path = self.config.getoption("xai_report")
        if path:
            terminalreporter.write_line(f"JSON report: {os.path.abspath(path)}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self._runner is not None:
            self._runner.close()
        path = self.config.getoption("xai_report")
        ci = self.config.stash[xai_ci]
        if not (path or ci.wants_document) or hasattr(self.config, "workerinput"):  # xdist: the controller reports
            return
        from pytest_xai import report as xai_report

        options = {"explainers": [e.spec for e in self.explainers], "thresholds": self.thresholds,
                   "timeout": self.timeout, "wall_timeout": self.wall_timeout,
                   "isolation": "worker processes" if self.timeout else "in-process (no isolation)",
                   "args": list(self.config.invocation_params.args)}
        doc = xai_report.document(self.records, options=options, seed=self.seed, exitstatus=int(exitstatus))
        doc.update(ci.report_sections(self.records))
        ci.write_documents(doc, session)
        if not path:
            return
        try:
            xai_report.write_json(path, doc)
        except OSError as exc:  # e.g. the disk filled up during the run: say so, and never exit 0
            sys.stderr.write(f"pytest-xai: could not write the JSON report {path}: {exc}\n")
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xai", "explainers under test (pytest-xai)")
    group.addoption("--xai-explainer", action="append", default=[], metavar="MODULE:FUNCTION",
                    help="explainer to test, as module:function or path/to/file.py:function; repeatable. "
                         "Without test paths, runs the built-in suite only.")
    group.addoption("--xai-seed", type=int, default=None, metavar="N",
                    help="base seed of cases and explainers (default: ini xai_seed, else 0)")
    group.addoption("--xai-timeout", type=float, default=None, metavar="SECONDS",
                    help=f"limit per explainer call in CPU seconds of its worker process (default {DEFAULT_TIMEOUT:g}); "
                         f"0 runs calls in-process, without isolation or limit (a debugging aid)")
    group.addoption("--xai-wall-timeout", type=float, default=None, metavar="SECONDS",
                    help=f"wall-clock backstop per explainer call, for explainers that sleep or deadlock "
                         f"(default {WALL_FACTOR:g} x --xai-timeout)")
    group.addoption("--xai-budget", default=None, metavar="N",
                    help=f"model evaluations an explainer call may spend (contract argument 'budget'; default: "
                         f"the case's own, else {BUDGET:.0e}): perturbation explainers size their samples from it")
    group.addoption("--xai-threshold", action="append", default=[], metavar="CHECK.PARAM=VALUE",
                    help="override a check's threshold, e.g. symmetry.rtol=0.1; repeatable")
    group.addoption("--xai-report", default=None, metavar="PATH", help="write the JSON report to PATH")
    group.addoption("--xai-data-dir", default=None, metavar="DIR",
                    help="directory with real datasets some cases can use instead of synthetic ones "
                         "(e.g. compas-scores-two-years.csv); default: ini xai_data_dir")
    group.addoption("--xai-category", action="append", default=[], choices=CATEGORIES,
                    help="run only the suite tests of this category; repeatable")
    group.addoption("--xai-no-suite", action="store_true", help="do not collect the built-in suite")
    group.addoption("--xai-benchmark", action="store_true",
                    help="time explainer calls with pytest-benchmark's fixture and store scores in extra_info")
    parser.addini("xai_explainers", "explainers to test (module:function), one per line", type="linelist")
    parser.addini("xai_thresholds", "threshold overrides CHECK.PARAM=VALUE, one per line", type="linelist")
    parser.addini("xai_seed", "base seed (default 0)", default="0")
    parser.addini("xai_data_dir", "directory with real datasets (see --xai-data-dir)", type="paths", default=[])
    parser.addini("xai_budget", f"model evaluations per explainer call (default: the case's own, else {BUDGET:.0e})",
                  default="")
    parser.addini("xai_timeout", f"time limit per explainer call in seconds (default {DEFAULT_TIMEOUT:g})",
                  default=str(DEFAULT_TIMEOUT))
    # CI workflow (docs/ci.md): baselines, repeated seeds, HTML report.
    group.addoption("--xai-baseline", default=None, metavar="PATH",
                    help="compare with a saved JSON report: a test fails when its score drops by more than the "
                         "tolerance; the terminal shows a diff table")
    group.addoption("--xai-save-baseline", default=None, metavar="PATH",
                    help="write this run's JSON report to PATH, to commit as the baseline")
    group.addoption("--xai-baseline-tolerance", action="append", default=[], metavar="[CHECK=]VALUE",
                    help="allowed score drop against the baseline, for every check or one check "
                         "(default: ini xai_baseline_tolerance, else 0.05); repeatable")
    group.addoption("--xai-baseline-seconds-factor", type=float, default=None, metavar="F",
                    help="also fail a test whose explainer seconds exceed F x the baseline's (default: not gated)")
    group.addoption("--xai-repeat", type=int, default=None, metavar="N",
                    help="run each (case, explainer) with N derived seeds: mean and spread reported, verdict by "
                         "majority, FLAKY when the seeds disagree; deterministic explainers run once (default 1)")
    group.addoption("--xai-html", default=None, metavar="PATH", help="write a self-contained HTML report to PATH")
    parser.addini("xai_baseline_tolerance", "allowed score drops [CHECK=]VALUE, one per line", type="linelist")


def _checked(check: Callable[[Any, str], Any], value: Any, source: str) -> Any:
    """``check(value, source)`` from :mod:`pytest_xai.options`; a bad value is a usage error (exit 4)."""
    from pytest_xai.options import OptionError

    try:
        return check(value, source)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None


def _number(config: pytest.Config, option: str, ini: str, check: Callable[[Any, str], Any]) -> Any:
    value = config.getoption(option)
    if value is not None:
        return _checked(check, value, "--" + option.replace("_", "-"))
    return _checked(check, config.getini(ini), f"ini {ini}")


def _parse_thresholds(entries: list[str], source: str) -> dict[str, dict[str, float]]:
    if not entries:
        return {}
    from pytest_xai import cases, checks, options

    cases.infos()  # family modules register their checks
    known = {name: info.thresholds for name, info in checks.CHECKS.items()}
    return _checked(lambda value, src: options.parse_thresholds(value, src, known), entries, source)


def _sync_markers(config: pytest.Config, *, load: bool) -> None:
    """Register the marker of every registered check (``checks.markers()``, the one source of their
    docs), the user's checks included.  ``load`` imports the families first (numpy): done when an
    explainer is configured, for ``--markers``, and before a test file that mentions ``xai_`` is
    imported, so that an unrelated test run imports nothing heavy."""
    state = config.stash.get(xai_state, None)
    if state is None:
        return
    if load and not state.families_loaded:
        state.families_loaded = True
        from pytest_xai import cases

        cases.infos()
    checks = sys.modules.get("pytest_xai.checks")
    if checks is None:
        return
    for name, doc in checks.markers().items():
        if name not in state.markers:
            state.markers.add(name)
            config.addinivalue_line("markers", f"{name}: {doc}")


def pytest_collectstart(collector: pytest.Collector) -> None:
    _sync_markers(collector.config, load=False)  # checks registered by conftest files


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    for name, doc in {"xai": "a pytest-xai test of an explainer", **CATEGORY_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config.addinivalue_line("markers", "xai_smoke: the fast gate, one representative suite test per family (SMOKE)")
    from pytest_xai import contract

    specs_given = config.getoption("xai_explainer") or config.getini("xai_explainers")
    if specs_given:  # before any explainer module is imported: thread pools read these at import
        from pytest_xai.isolate import THREAD_VARIABLES

        for var in THREAD_VARIABLES:
            os.environ.setdefault(var, "1")  # DESIGN §6: contention made captum 25-100x slower
    loaded = []
    for source, specs in (("--xai-explainer", config.getoption("xai_explainer")),
                          ("ini xai_explainers", config.getini("xai_explainers"))):
        for spec in specs:
            try:
                loaded.append(contract.load(spec.strip(), option=source))
            except SpecError as exc:
                raise pytest.UsageError(str(exc)) from None
    explainers = contract.dedupe(loaded)
    thresholds = {"ini": _parse_thresholds(config.getini("xai_thresholds"), "ini xai_thresholds"),
                  "command line": _parse_thresholds(config.getoption("xai_threshold"), "--xai-threshold")}
    from pytest_xai import options

    seed = _number(config, "xai_seed", "xai_seed", options.check_seed)
    timeout = _number(config, "xai_timeout", "xai_timeout", options.check_timeout)
    budget = (_number(config, "xai_budget", "xai_budget", options.check_budget)
              if config.getoption("xai_budget") is not None or config.getini("xai_budget") else None)
    _checked(options.check_report_path, config.getoption("xai_report"), "--xai-report")
    if config.getoption("xai_data_dir") is not None:
        _checked(options.check_data_dir, config.getoption("xai_data_dir"), "--xai-data-dir")
    else:
        _checked(options.check_data_dir, (config.getini("xai_data_dir") or [None])[0], "ini xai_data_dir")
    wall_timeout = config.getoption("xai_wall_timeout")
    if wall_timeout is not None and not wall_timeout > 0:
        raise pytest.UsageError(f"--xai-wall-timeout={wall_timeout:g}: must be > 0 seconds")
    state = config.stash[xai_state] = XaiState(config, explainers, thresholds, seed, timeout, wall_timeout,
                                                    budget)
    config.pluginmanager.register(state, "xai-state")
    ci = config.stash[xai_ci] = XaiCi(config, state)
    config.pluginmanager.register(ci, "xai-ci")
    _sync_markers(config, load=bool(explainers or config.getoption("markers", False)))
    if explainers:
        _stop_on_sigterm(config)
        suite = str(SUITE.parent)  # the directory, so that ids read xai_suite.py::symmetry[...]
        if not config.getoption("xai_no_suite") and suite not in config.args:
            if config.args_source != pytest.Config.ArgsSource.ARGS and config.getoption("xai_explainer"):
                config.args[:] = [suite]
            else:
                config.args.append(suite)


def _stop_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM ends the session like Ctrl-C: workers stopped, table and report written, rc 2."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"received signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    config.add_cleanup(lambda: signal.signal(signal.SIGTERM, previous))


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(xai_state, None)
    if state is not None and state._runner is not None:
        state._runner.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect the built-in suite whatever the user's ``python_files`` patterns are; register the
    check markers before a Python file that mentions ``xai_`` is imported."""
    from fnmatch import fnmatch

    state = parent.config.stash.get(xai_state, None)
    if (file_path.suffix == ".py" and state is not None and not state.families_loaded
            and (parent.session.isinitpath(file_path)
                 or any(fnmatch(file_path.name, p) for p in parent.config.getini("python_files")))):
        try:
            mentions = b"xai_" in file_path.read_bytes()
        except OSError:
            mentions = False
        if mentions:
            _sync_markers(parent.config, load=True)
    if file_path == SUITE and not any(fnmatch(file_path.name, p) for p in parent.config.getini("python_files")):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def _state(config: pytest.Config) -> XaiState:
    return config.stash[xai_state]


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = _state(config)
    if not state.explainers:
        return []
    names = ", ".join(f"{e.name} ({e.spec})" if e.name != e.spec else e.name for e in state.explainers)
    limit = (f"{state.timeout:g} CPU s per call (wall backstop {state.wall_timeout:g} s), in worker processes"
             if state.timeout else "none: calls run IN-PROCESS, without isolation or limit (--xai-timeout=0 "
             "is a debugging aid; an explainer that ends the process ends the run)")
    from pytest_xai import cases

    budget = (f"{state.budget:.2g} model evaluations per call" if state.budget else
              f"{BUDGET:.2g} model evaluations per call unless a case declares less")
    return [f"xai: seed={state.seed}, timeout={limit}", f"xai: budget={budget}",
            f"xai: explainers: {names}"] + [
        f"xai: {h}" for h in cases.headers()]


# ------------------------------------------------------------------------------------- the suite


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    state = _state(metafunc.config)
    check_name = getattr(metafunc.function, "xai_check", None)
    if check_name is not None:
        from pytest_xai import cases, checks

        params = [
            pytest.param(info.name, explainer, id=f"{info.name}-{explainer.name}", marks=[
                pytest.mark.xai, getattr(pytest.mark, f"xai_{info.category}"),
                getattr(pytest.mark, checks.CHECKS[check_name].marker)])
            for info in cases.infos() if check_name in info.checks for explainer in state.explainers
        ]
        metafunc.parametrize(("xai_case_name", "xai_explainer"), params)
    elif "xai_explainer" in metafunc.fixturenames and "xai_explainer" not in _direct_params(metafunc):
        params = [pytest.param(e, id=e.name) for e in state.explainers] or [pytest.param(
            None, id="no-explainer",
            marks=pytest.mark.skip(reason="no explainer configured: pass --xai-explainer=module:function"))]
        metafunc.parametrize("xai_explainer", params, scope="session")


def _direct_params(metafunc: pytest.Metafunc) -> set[str]:
    """Argument names the test parametrises itself (then we leave ``xai_explainer`` alone)."""
    names: set[str] = set()
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0]
        names.update(argnames.split(",") if isinstance(argnames, str) else argnames)
    return {name.strip() for name in names}


@pytest.fixture(scope="session")
def xai_explainer(request: pytest.FixtureRequest):
    """The explainer under test (a ``contract.Explainer``), parametrised over ``--xai-explainer``."""
    return request.param


@pytest.fixture(scope="session")
def xai_case(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """Factory of ground-truth cases: ``xai_case("cough_and_fever")`` builds (once) and returns it."""
    from pytest_xai import cases
    from pytest_xai.options import DataFileError

    state = _state(request.config)

    def get(name: str):
        try:
            return cases.get(name, seed=state.seed, cache=state.cache, data_dir=state.data_dir)
        except NotApplicable as exc:  # e.g. a trained model below its quality gate, a missing extra
            pytest.skip(f"case {name}: {exc}")
        except DataFileError as exc:  # the user's file in --xai-data-dir: one message, no traceback
            problem = f"case {name}: {exc}"
        pytest.fail(problem, pytrace=False)  # outside the except block: no chained exception

    return get


def _rec(node: pytest.Item) -> Record:
    """The record of the test ``node``, filled as it runs."""
    rec = node.stash.get(xai_record, None)
    if rec is None:
        rec = node.stash[xai_record] = Record()
    return rec


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """Send the test's record with each of its reports as ``xai_*`` user properties: builtin values,
    which survive xdist and show in JUnit XML (``Record.to_properties``)."""
    rec = item.stash.get(xai_record, None)
    if rec is not None:
        names = Record.property_names()
        item.user_properties[:] = [p for p in item.user_properties if p[0] not in names] + rec.to_properties()
    return (yield)


@pytest.fixture
def xai_explain(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Run an explainer on a case through the contract: ``xai_explain(explainer, case)``.

    The call runs in the explainer's worker process under the time limit, and its output is
    validated; one call is made per (explainer, case, seed) and shared by every check of that case.
    A ``NotApplicable`` skips the test; a crash, hang or invalid output fails it with a message
    naming the explainer, the case and what was wrong.  Seconds are recorded for the report.
    """
    from pytest_xai import contract

    state = _state(request.config)

    def explain(explainer, case, *, seed: int | None = None):
        if isinstance(explainer, str):
            explainer = contract.load(explainer, option="xai_explain")
        repeat = request.config.stash[xai_ci].repeat if seed is None else 1  # a seed the test chose is kept
        seed = state.runner.seed_for(case) if seed is None else seed
        rec = _rec(request.node)
        rec.explainer, rec.case, rec.family, rec.category = explainer.name, case.name, case.info.family, case.info.category
        rec.seed = seed
        benchmark = request.getfixturevalue("benchmark") if "benchmark" in request.fixturenames else None
        run = lambda: state.runner.explain(explainer, case, seed=seed)  # noqa: E731
        if benchmark is not None and state.runner.memoised(explainer, case, seed):
            benchmark.disabled = True  # the call was timed by the test that made it: no second timing
        if benchmark is not None:
            outcome, cached = benchmark.pedantic(run, rounds=1, iterations=1)
        else:
            outcome, cached = run()
        if repeat > 1 and outcome.status == "ok":
            outcome = _run_repeats(request.node, state, explainer, case, repeat)
        rec.seconds, rec.cpu_seconds, rec.cached = outcome.seconds, outcome.cpu_seconds, cached
        if outcome.status == "skip":
            pytest.skip(f"{explainer.name} on {case.name}: {outcome.message}")
        if outcome.status == "error":
            failure = f"explainer {explainer.name!r} on case {case.name!r}: {outcome.message}"
            rec.error, rec.kind, rec.passed, rec.score = failure, outcome.kind, False, 0.0
            pytest.fail(failure + (f"\n\n{outcome.traceback}" if outcome.traceback else ""), pytrace=False)
        return outcome.explanation

    return explain


@pytest.fixture
def xai_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Score an explanation and fail the test when the check fails: ``xai_check("symmetry", expl, case)``.

    Case-specific arguments come from the case (``case.info.checks``) unless given.  Thresholds:
    call kwargs > marker kwargs (``@pytest.mark.xai_symmetry(rtol=0.1)``) > ``--xai-threshold`` >
    ini ``xai_thresholds`` > the case's own value > the check's default (``runner.resolve_thresholds``).
    The score and where each threshold came from are recorded for the table, JSON and JUnit reports.
    """
    from pytest_xai import checks
    from pytest_xai.runner import resolve_thresholds

    state = _state(request.config)

    def run_check(name: str, explanation, case, *, explainer=None, **kwargs):
        info = checks.CHECKS[name]
        marker: dict = {}
        for mark in reversed(list(request.node.iter_markers(info.marker))):
            marker.update({k: v for k, v in mark.kwargs.items() if k in info.thresholds})
        own = case.info.checks.get(name, {})
        thresholds, sources = resolve_thresholds(
            info.thresholds, call=kwargs, marker=marker, command_line=state.thresholds["command line"].get(name),
            ini=state.thresholds["ini"].get(name), case=own)
        params = {**own, **kwargs, **thresholds}
        if "reexplain" in inspect.signature(info.func).parameters and "reexplain" not in params:
            if explainer is None:
                raise TypeError(f"check {name!r} re-runs the explainer: pass explainer=")
            params["reexplain"] = _reexplainer(state, explainer, case)
        if "claim" in inspect.signature(info.func).parameters and "claim" not in params and explainer is not None:
            params["claim"] = getattr(explainer.func, name, None)  # e.g. explain.completeness = "background"
        try:
            score = info.func(explanation, case, **params)
            score = _score_repeats(request.node, info.func, explanation, case, params, score)
        except NotApplicable as exc:  # e.g. an interaction check on an explainer that returns none
            pytest.skip(f"{name} on {case.name}: {exc}")
        rec = _rec(request.node)
        rec.check, rec.score, rec.passed = name, round(float(score.value), 6), bool(score.passed)
        rec.threshold, rec.threshold_sources, rec.detail = float(score.threshold), sources, score.detail
        _picture(request, case, explanation, score)
        benchmark = request.getfixturevalue("benchmark") if "benchmark" in request.fixturenames else None
        if benchmark is not None:
            benchmark.extra_info.update({"xai_check": name, "xai_score": float(score.value),
                                         "xai_passed": bool(score.passed), "xai_case": case.name})
        if not score.passed:
            worst = f"\nworst example: {dict(score.worst)}" if score.worst else ""
            pytest.fail(f"{name} failed on case {case.name!r} (score {score.value:.3f}): {score.detail}{worst}",
                        pytrace=False)
        request.config.stash[xai_ci].gate(request.node, name, score)
        return score

    return run_check


def _picture(request: pytest.FixtureRequest, case, explanation, score) -> None:
    """Draw the worst example next to the JSON report, for cases that know how to draw."""
    report = request.config.getoption("xai_report")
    if not report:
        return
    import warnings

    from pytest_xai.runner import draw_picture

    try:
        path = draw_picture(report, request.node.name, case, explanation, score)
    except Exception as exc:  # a picture is a convenience: never fail the test for it
        warnings.warn(f"pytest-xai: could not draw the worst example of {request.node.name}: "
                      f"{type(exc).__name__}: {exc}", stacklevel=2)
        return
    if path:
        _rec(request.node).picture = path


def _reexplainer(state: XaiState, explainer, case) -> Callable[..., Any]:
    """``reexplain(model=None, *, other_seed=False, rows=None, perturb=None)``: the explainer on a
    variant of ``case`` (another model, a subset of rows, perturbed inputs), under the same time limit
    and validation as the first call (``Runner.reexplain``)."""
    from pytest_xai.errors import ExplainerError

    def reexplain(model=None, *, other_seed: bool = False, rows=None, perturb=None):
        try:
            return state.runner.reexplain(explainer, case, model, other_seed=other_seed, rows=rows, perturb=perturb)
        except ExplainerError as exc:
            what = ("a randomised model" if model is not None else "a subset of its rows" if rows is not None
                    else "perturbed inputs" if perturb is not None else "a repeated call")
            pytest.fail(f"explainer {explainer.name!r} on {what} of case {case.name!r}: {exc}", pytrace=False)

    return reexplain


def _row_of(item: pytest.Item) -> str:
    """A user test's row in the table: its node id without the explainer's part of the id."""
    explainer = item.callspec.params["xai_explainer"].name
    rest = [part for part in item.callspec.id.split("-") if part != explainer]
    base = item.nodeid.partition("[")[0]
    return f"{base}[{'-'.join(rest)}]" if rest else base


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the engine's worker zygote while the first cases are built (its imports overlap)."""
    if _state(session.config).explainers and any(_explainer_of(item) for item in session.items):
        _state(session.config).runner.start()


def _explainer_of(item: pytest.Item) -> Any:
    return getattr(getattr(item, "callspec", None), "params", {}).get("xai_explainer")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``-n N`` (xdist's default ``--dist load``) the suite's checks of one (case, explainer)
    go to one worker, which computes their shared explanation once; other tests spread as usual."""
    if not _state(config).explainers or config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneExplanationPerWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path, _, test = nodeid.partition("::")
            if Path(path).name == SUITE.name and "[" in test:
                return "xai-suite[" + test.partition("[")[2]  # e.g. xai-suite[cough_and_fever-shap_kernel]
            return nodeid

    return OneExplanationPerWorker(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--xai-category`` deselects the suite's other categories; ``--xai-benchmark`` makes the
    suite's tests use pytest-benchmark's fixture."""
    from pytest_xai import cases

    for item in items:  # suite identity, so that even a setup error or skip reaches the table
        if getattr(getattr(item, "function", None), "xai_check", None):
            info, check = cases.info(item.callspec.params["xai_case_name"]), item.function.xai_check
            item.stash[xai_record] = Record(explainer=item.callspec.params["xai_explainer"].name, case=info.name,
                                            family=info.family, category=info.category, check=check,
                                            row=f"{check}[{info.name}]")
        elif _explainer_of(item) is not None:
            item.stash[xai_record] = Record(explainer=item.callspec.params["xai_explainer"].name, row=_row_of(item))
    categories = config.getoption("xai_category")
    if categories:
        keep, drop = [], []
        for item in items:
            suite = getattr(getattr(item, "function", None), "xai_check", None)
            wanted = any(item.get_closest_marker(f"xai_{c}") for c in categories)
            (drop if suite and not wanted else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
    if config.getoption("xai_benchmark"):
        for item in items:
            if getattr(getattr(item, "function", None), "xai_check", None) and "benchmark" not in item.fixturenames:
                item.fixturenames.append("benchmark")


# --------------------------------------------------------------- the CI workflow (docs/ci.md)


class XaiCi:
    """Baselines, repeated seeds, the smoke gate, the HTML report and pytest-html extras."""

    def __init__(self, config: pytest.Config, state: XaiState):
        from pytest_xai import options

        self.config, self.state = config, state
        repeat = config.getoption("xai_repeat")
        self.repeat = _checked(options.check_repeat, 1 if repeat is None else repeat, "--xai-repeat")
        for option in ("xai_save_baseline", "xai_html"):
            _checked(options.check_report_path, config.getoption(option), "--" + option.replace("_", "-"))
        self.wants_document = bool(config.getoption("xai_save_baseline") or config.getoption("xai_html"))
        factor = config.getoption("xai_baseline_seconds_factor")
        if factor is not None and not 1 <= factor < float("inf"):
            raise pytest.UsageError(f"--xai-baseline-seconds-factor={factor:g}: give a finite factor >= 1, "
                                    f"e.g. 3 to fail a test whose explainer became 3 times slower")
        self.baseline = self._load_gate(config, factor) if config.getoption("xai_baseline") else None

    def _load_gate(self, config: pytest.Config, factor: float | None) -> Any:
        from pytest_xai import baseline, cases, checks
        from pytest_xai.report import versions

        try:
            gate = baseline.Gate(config.getoption("xai_baseline"), {}, factor)
        except baseline.BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None
        for source, given in (("ini xai_baseline_tolerance", config.getini("xai_baseline_tolerance")),
                              ("--xai-baseline-tolerance", config.getoption("xai_baseline_tolerance"))):
            if given:  # the command line wins over the ini file
                cases.infos()  # family modules register their checks
                gate.tolerances.update(_checked(lambda v, s: baseline.parse_tolerances(v, s, list(checks.CHECKS)),
                                                given, source))
        if not hasattr(config, "workerinput"):  # the controller warns once
            for warning in gate.warnings(versions(), self.state.seed):
                config.issue_config_time_warning(baseline.BaselineWarning(warning), stacklevel=2)
        return gate

    def gate(self, node: pytest.Item, check: str, score: Any) -> None:
        """Fail a test that passed its check but regressed against the baseline."""
        if self.baseline is None:
            return
        rec = _rec(node)
        reasons = self.baseline.regressions((rec.row or node.nodeid, rec.explainer or ""), check, float(score.value),
                                         rec.seconds)
        if reasons:
            rec.regression = "; ".join(reasons)
            pytest.fail(f"{check} on case {rec.case!r} regressed against the baseline "
                        f"{self.baseline.path}: {rec.regression}", pytrace=False)

    def report_sections(self, records: list[Record]) -> dict:
        """Top-level keys this adds to the JSON report: ``repeat``, ``budget`` (both change scores, so
        shards must agree on them) and, with a baseline, ``baseline``."""
        out: dict = {"repeat": self.repeat, "budget": getattr(self.state, "budget", None)}
        if self.baseline is not None:
            from pytest_xai.report import versions

            out["baseline"] = self.baseline.section(records, versions())
        return out

    def write_documents(self, doc: dict, session: pytest.Session) -> None:
        from pytest_xai import report as xai_report

        for option in ("xai_save_baseline", "xai_html"):
            path = self.config.getoption(option)
            if not path:
                continue
            try:
                if option == "xai_html":
                    from pytest_xai import htmlreport

                    htmlreport.write(path, doc)
                else:
                    xai_report.write_json(path, doc)
            except OSError as exc:
                sys.stderr.write(f"pytest-xai: could not write {path}: {exc}\n")
                if session.exitstatus == pytest.ExitCode.OK:
                    session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    # Hooks

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        lines = []
        if self.state.explainers and self.repeat > 1:
            lines.append(f"xai: repeat={self.repeat} seeds per (case, explainer); verdict by majority of seeds")
        if self.baseline is not None:
            lines.append(f"xai: {self.baseline.header()}")
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Mark the :data:`SMOKE` tests ``xai_smoke`` before ``-m`` selects."""
        smoke = set(SMOKE)
        for item in items:
            check = getattr(getattr(item, "function", None), "xai_check", None)
            if check and (check, item.callspec.params.get("xai_case_name")) in smoke:
                item.add_marker(pytest.mark.xai_smoke)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when != "call" or not self.config.pluginmanager.hasplugin("html"):
            return
        from pytest_xai import htmlreport

        rec = item.stash.get(xai_record, None)
        if rec is not None and rec.explainer is not None:
            import pytest_html

            extras = getattr(report, "extras", [])
            extras.append(pytest_html.extras.html(htmlreport.extra_html(rec)))
            picture = rec.picture
            if picture and os.path.exists(picture):
                extras.append(pytest_html.extras.png(htmlreport.png_base64(picture), name="worst example"))
            report.extras = extras

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        diff = self.baseline.diff(self.state.records) if self.baseline is not None and self.state.records else None
        if diff is not None:
            from pytest_xai import baseline

            terminalreporter.write_sep("=", f"xai baseline diff against {self.baseline.path}")
            for line in baseline.table(diff):
                terminalreporter.write_line(line)
        for option, what in (("xai_html", "HTML report"), ("xai_save_baseline", "baseline saved")):
            if self.config.getoption(option) and self.state.records:
                terminalreporter.write_line(f"{what}: {os.path.abspath(self.config.getoption(option))}")


def _run_repeats(node: pytest.Item, state: XaiState, explainer, case, n: int):
    """``--xai-repeat``: the explainer under ``n`` seeds (``Runner.explain_repeated``); the first
    outcome that is not ok, else the first seed's.  The runs wait on the node for ``xai_check``."""
    runs, deterministic = state.runner.explain_repeated(explainer, case, n)
    bad = [outcome for _, outcome, _ in runs if outcome.status != "ok"]
    if bad:
        return bad[0]
    node.stash[xai_repeats] = ([(seed, outcome.explanation) for seed, outcome, _ in runs], deterministic, n)
    return runs[0][1]


def _score_repeats(node: pytest.Item, func, explanation, case, params: dict, score):
    """With ``--xai-repeat``: every seed's explanation scored and combined (``runner.combine_repeats``)."""
    runs, deterministic, n = node.stash.get(xai_repeats, ([], False, 1))
    if not runs or runs[0][1] is not explanation:
        return score  # the test scored an explanation of its own
    from pytest_xai.runner import combine_repeats

    scores = [score] + [func(expl, case, **params) for _, expl in runs[1:]]
    score, repeat, flaky = combine_repeats(scores, seeds=[seed for seed, _ in runs], n=n, deterministic=deterministic)
    rec = _rec(node)
    rec.repeat, rec.flaky = repeat, flaky
    return score
