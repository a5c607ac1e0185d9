"""The pytest plugin (the entry point ``pytest11: xai``): options, markers, collection of the built-in suite.

The plugin is the only package that imports pytest, and it is thin: every hook calls the core.
Nothing heavy is imported at module level, so a test run that never configures an explainer pays
nothing for numpy, torch, shap or friends.  Its rooms: this module (options, configuration,
collection), :mod:`~pytest_xai.plugin.state` (the session), :mod:`~pytest_xai.plugin.fixtures`
(what a test uses, and its record), :mod:`~pytest_xai.plugin.ci` (baselines, repeats, HTML).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_xai.budget import DEFAULT as BUDGET
from pytest_xai.case import CATEGORIES
from pytest_xai.errors import SpecError
from pytest_xai.plugin.ci import XaiCi

# pytest registers this module's namespace: the fixtures and hooks of the submodules are named here
from pytest_xai.plugin.fixtures import (  # noqa: F401
    pytest_runtest_makereport,
    xai_case,
    xai_check,
    xai_explain,
    xai_explainer,
)
from pytest_xai.plugin.state import (
    DEFAULT_TIMEOUT,
    WALL_FACTOR,
    XaiState,
    checked,
    state_of,
    xai_ci,
    xai_record,
    xai_state,
)
from pytest_xai.record import Record
from pytest_xai.runner import derive_seed  # noqa: F401 - public name, used in examples

SUITE = Path(__file__).parent.parent / "suite" / "xai_suite.py"
CATEGORY_MARKERS = {
    "xai_fidelity": "fidelity: does the explanation reflect what the model computes",
    "xai_fragility": "fragility: can the explanation be manipulated (adversarial models, correlated features)",
    "xai_stability": "stability: is the explanation stable across data distributions and perturbations",
    "xai_stress": "stress: does the explainer cope with many features",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--xai-*`` options and ``xai_*`` ini values (README "Options")."""
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
    group.addoption("--xai-baseline-evaluations-factor", default=None, metavar="F",
                    help="fail a test whose explainer spent more than F x the baseline's model evaluations (default: "
                         "ini xai_baseline_evaluations_factor, else 2; 0 or off: not compared)")
    group.addoption("--xai-repeat", type=int, default=None, metavar="N",
                    help="run each (case, explainer) with N derived seeds: mean and spread reported; PASS when the "
                         "seeds' pass rate is credibly above 1/2 (exact Clopper-Pearson bound), FAIL when below, "
                         "FLAKY (a failure) when undecided; deterministic explainers run once (default 1)")
    group.addoption("--xai-html", default=None, metavar="PATH", help="write a self-contained HTML report to PATH")
    group.addoption("--xai-gate", default=None, metavar="verdict|regression",
                    help="what makes the run fail: 'verdict' (any failed test, the default) or 'regression' (with "
                         "--xai-baseline: only tests that got worse, newly fail or are new; known failures stay "
                         "visible as KNOWN); default: ini xai_gate")
    parser.addini("xai_gate", "verdict or regression (see --xai-gate)", default="verdict")
    group.addoption("--xai-shard", default=None, metavar="K/N",
                    help="run shard K of N: each (case, explainer) whole in one shard, the same membership on "
                         "every machine; the JSON report records the shard for 'python -m pytest_xai merge'")
    parser.addini("xai_baseline_tolerance", "allowed score drops [CHECK=]VALUE, one per line", type="linelist")
    parser.addini("xai_baseline_evaluations_factor", "see --xai-baseline-evaluations-factor (default 2)", default="")


def _number(config: pytest.Config, option: str, ini: str, check: Callable[[Any, str], Any]) -> Any:
    value = config.getoption(option)
    if value is not None:
        return checked(check, value, "--" + option.replace("_", "-"))
    return checked(check, config.getini(ini), f"ini {ini}")


def _parse_thresholds(entries: list[str], source: str) -> dict[str, dict[str, float]]:
    if not entries:
        return {}
    from pytest_xai import cases, checks, options

    cases.infos()  # family modules register their checks
    known = {name: info.thresholds for name, info in checks.CHECKS.items()}
    return checked(lambda value, src: options.parse_thresholds(value, src, known), entries, source)


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
    """Register the markers of checks that conftest files registered, before their tests are collected."""
    _sync_markers(collector.config, load=False)  # checks registered by conftest files


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Read and check the options, load the explainers (probed, never imported here), start the
    session and, with explainers, the zygote; register the markers; add the built-in suite to the run."""
    for name, doc in {"xai": "a pytest-xai test of an explainer", **CATEGORY_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config.addinivalue_line("markers", "xai_smoke: the fast gate, one representative suite test per family")
    from pytest_xai import contract
    from pytest_xai import explainers as explainers_module

    specs_given = config.getoption("xai_explainer") or config.getini("xai_explainers")
    if specs_given:  # before any explainer module is imported: thread pools read these at import
        from pytest_xai.zygote import THREAD_VARIABLES

        for var in THREAD_VARIABLES:
            os.environ.setdefault(var, "1")  # docs/design.md "Speed rules": contention made captum 25-100x slower
    from pytest_xai import options

    timeout = _number(config, "xai_timeout", "xai_timeout", options.check_timeout)
    wall_timeout = config.getoption("xai_wall_timeout")
    if wall_timeout is not None and not wall_timeout > 0:
        raise pytest.UsageError(f"--xai-wall-timeout={wall_timeout:g}: must be > 0 seconds")
    probe, probed = _prober(config, timeout, wall_timeout)
    loaded = []
    for source, specs in (("--xai-explainer", config.getoption("xai_explainer")),
                          ("ini xai_explainers", config.getini("xai_explainers"))):
        for spec in specs:
            try:
                loaded.append(contract.check_without_import(spec.strip(), option=source, probe=probe))
            except SpecError as exc:
                raise pytest.UsageError(str(exc)) from None
    explainers = contract.dedupe(loaded)
    thresholds = {"ini": _parse_thresholds(config.getini("xai_thresholds"), "ini xai_thresholds"),
                  "command line": _parse_thresholds(config.getoption("xai_threshold"), "--xai-threshold")}
    seed = _number(config, "xai_seed", "xai_seed", options.check_seed)
    budget = (_number(config, "xai_budget", "xai_budget", options.check_budget)
              if config.getoption("xai_budget") is not None or config.getini("xai_budget") else None)
    checked(options.check_report_path, config.getoption("xai_report"), "--xai-report")
    if config.getoption("xai_data_dir") is not None:
        checked(options.check_data_dir, config.getoption("xai_data_dir"), "--xai-data-dir")
    else:
        checked(options.check_data_dir, (config.getini("xai_data_dir") or [None])[0], "ini xai_data_dir")
    state = config.stash[xai_state] = XaiState(config, explainers, thresholds, seed, timeout, wall_timeout,
                                                    budget)
    config.pluginmanager.register(state, "xai-state")
    state.probed = probed
    ci = config.stash[xai_ci] = XaiCi(config, state)
    config.pluginmanager.register(ci, "xai-ci")
    if explainers:
        _stop_on_sigterm(config)
        _quick_teardown()
        reference = [e.spec.partition(":")[2] for e in explainers if e.spec.partition(":")[0] == contract.REFERENCE_MODULE]
        first = tuple(filter(None, map(explainers_module.library_of, reference)))
        others = len(reference) < len(explainers)  # a user's explainer may import any explainer library
        # started first: the zygote's imports (about 5 s) overlap the loading of the case families
        # below and collection, on the other core
        if _runs_tests_here(config):
            state.runner.start(getattr(config, "workerinput", {}).get("xai_zygote"), first, others)
            if state.timeout:  # calls in workers: the first wait freezes the heap (XaiState.freeze)
                state.pause_gc()
        elif not _runs_explainers_here(config):  # xdist's controller: one zygote for all its workers
            state.zygote = state.runner.serve(first, others)
            _fork_xdist_workers(config, state.zygote)
            state.controller = True
            state.pause_gc()  # until its workers are up (XaiState.pytest_runtestloop)
    _sync_markers(config, load=bool(explainers or config.getoption("markers", False)))
    if explainers:
        suite = str(SUITE.parent)  # the directory, so that ids read xai_suite.py::symmetry[...]
        if not config.getoption("xai_no_suite") and suite not in config.args:
            if config.args_source != pytest.Config.ArgsSource.ARGS and config.getoption("xai_explainer"):
                config.args[:] = [suite]
            else:
                config.args.append(suite)


def _prober(config: pytest.Config, timeout: float, wall: float | None) -> tuple[Any, dict[str, Any]]:
    """How user explainers are checked: ``(probe, descriptions)``.  In-process mode
    (``--xai-timeout=0``) imports them here (None); otherwise a throwaway process does
    (:mod:`pytest_xai.probe`), under the call's CPU limit, once per run: xdist workers get the
    controller's descriptions (``workerinput["xai_probed"]``)."""
    probed: dict[str, Any] = dict(getattr(config, "workerinput", {}).get("xai_probed", {}))
    if not timeout:
        return None, probed

    def probe(spec: str, option: str) -> dict[str, Any]:
        if spec not in probed:
            from pytest_xai.isolate import LOADING_WALL
            from pytest_xai.probe import describe

            probed[spec] = describe(spec, option, cpu=timeout, wall=min(wall or WALL_FACTOR * timeout, LOADING_WALL))
        return probed[spec]

    return probe, probed


def _stop_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM ends the session like Ctrl-C: workers stopped, table and report written, rc 2."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"received signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, interrupt)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    config.add_cleanup(restore)


@functools.cache  # once a process: pytester runs configure again and again in one
def _quick_teardown() -> None:
    """At exit, collect the garbage there is (what :meth:`XaiState.freeze` froze during the session
    included, except in a fork of the zygote), then freeze the heap (:func:`gc.freeze`).

    Python's teardown runs cyclic collections over every object still alive: 1.9 s a process
    with torch, xgboost, scikit-learn and shap imported, 0.3 s frozen, measured on 2 cores.  Under
    ``-n N`` the controller waits for each worker's.  Objects still alive at exit are freed by
    reference counting or left to the OS, which Python allows at exit; nothing of the plugin's is
    pending by then (reports are written and closed at session finish).
    """
    import atexit
    import gc

    def freeze() -> None:
        if not getattr(sys.modules.get("pytest_xai.worker"), "FORKED", False):
            gc.unfreeze()  # what XaiState.freeze froze is collected too, while every module is still there
        gc.collect()  # (a fork of the zygote ends without the teardown, and its frozen pages stay unread)
        gc.freeze()

    atexit.register(freeze)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop this process's explainer workers and zygote."""
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


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The seed, the time limit, the budget, the explainers and the families' header lines."""
    state = state_of(config)
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
    """Parametrise each suite test over the (case, explainer) pairs of the cases that declare its
    check, and every test that asks for ``xai_explainer`` over the explainers."""
    state = state_of(metafunc.config)
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


def _params(item: pytest.Function) -> Mapping[str, Any]:
    """The parameters of a test (its explainer, the suite's case name)."""
    return item.callspec.params


def _row_of(item: pytest.Function) -> str:
    """A user test's row in the table: its node id without the explainer's part of the id."""
    explainer = _params(item)["xai_explainer"].name
    rest = [part for part in item.callspec.id.split("-") if part != explainer]
    base = item.nodeid.partition("[")[0]
    return f"{base}[{'-'.join(rest)}]" if rest else base


def _runs_explainers_here(config: pytest.Config) -> bool:
    """Whether this process may call an explainer: anything but the controller of ``-n N`` (xdist
    does not distribute ``--collect-only``)."""
    return (hasattr(config, "workerinput") or config.getoption("collectonly", False)
            or not config.getoption("numprocesses", None))


def _runs_tests_here(config: pytest.Config) -> bool:
    """Whether this process will run tests: not under ``--collect-only``, and not the controller of
    ``-n N`` (its workers run the tests and start their own engine)."""
    return not config.getoption("collectonly", False) and _runs_explainers_here(config)


def _explainer_of(item: pytest.Item) -> Any:
    return getattr(getattr(item, "callspec", None), "params", {}).get("xai_explainer")


def _fork_xdist_workers(config: pytest.Config, zygote: str | None) -> None:
    """Under ``-n N``, xdist's workers start as forks of the zygote (:mod:`pytest_xai.xdist_worker`),
    so torch, xgboost, scikit-learn and scipy are imported once for the run, not once a worker.

    Only the plain ``popen`` workers of ``-n N``; a ``--tx`` the user wrote is left as written.
    """
    if zygote is None:
        return
    import shlex

    python = shlex.join([sys.executable, "-m", "pytest_xai.xdist_worker", zygote])
    config.option.tx = [f"popen//python={python}" if tx == "popen" else tx for tx in config.getoption("tx") or []]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Each xdist worker forks its explainer workers from the controller's zygote (imported once)."""
    state = node.config.stash.get(xai_state, None)
    if state is not None and state.zygote is not None:
        node.workerinput["xai_zygote"] = state.zygote
    if state is not None:
        node.workerinput["xai_probed"] = state.probed


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``-n N`` (xdist's default ``--dist load``) the suite's checks of one (case, explainer)
    go to one worker, which computes their shared explanation once; other tests spread as usual."""
    if not state_of(config).explainers or config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneExplanationPerWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path, _, test = nodeid.partition("::")
            if Path(path).name == SUITE.name and "[" in test:
                return "xai-suite[" + test.partition("[")[2]  # e.g. xai-suite[cough_and_fever-shap_kernel]
            return nodeid

    config.option.loadscopereorder = False  # xdist's default sorts groups by test count; ours come costliest first
    return OneExplanationPerWorker(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--xai-category`` deselects the suite's other categories; ``--xai-benchmark`` makes the
    suite's tests use pytest-benchmark's fixture."""
    from pytest_xai import cases

    for item in items:  # suite identity, so that even a setup error or skip reaches the table
        if not isinstance(item, pytest.Function):
            continue
        if getattr(item.function, "xai_check", None):
            info, check = cases.info(_params(item)["xai_case_name"]), item.function.xai_check
            item.stash[xai_record] = Record(explainer=_params(item)["xai_explainer"].name, case=info.name,
                                            family=info.family, category=info.category, check=check,
                                            row=f"{check}[{info.name}]")
        elif _explainer_of(item) is not None:
            item.stash[xai_record] = Record(explainer=_params(item)["xai_explainer"].name, row=_row_of(item))
    categories = config.getoption("xai_category")
    if categories:
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            suite = getattr(getattr(item, "function", None), "xai_check", None)
            wanted = any(item.get_closest_marker(f"xai_{c}") for c in categories)
            (drop if suite and not wanted else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
    if config.getoption("xai_benchmark"):
        for item in items:
            if (isinstance(item, pytest.Function) and getattr(item.function, "xai_check", None)
                    and "benchmark" not in item.fixturenames):
                item.fixturenames.append("benchmark")
    if hasattr(config, "workerinput") and config.getoption("splits", None) is None:
        _costliest_first(items, state_of(config).suite_costs())  # never under pytest-split: it splits by order


def _costliest_first(items: list[pytest.Item], costs: dict[str, float]) -> None:
    """Under xdist, the suite's (case, explainer) groups in the order of what they cost in the last
    runs, costliest first, so that the last group a worker takes is a short one (longest
    processing time first).  A pair never run is costed at its case's mean over explainers; with
    nothing known the order stays as collected.  Other tests keep their places."""
    if not costs:
        return
    by_case: dict[str, list[float]] = {}
    for pair, seconds in costs.items():
        by_case.setdefault(pair.rpartition("-")[0], []).append(seconds)

    def cost(item: pytest.Item) -> float:
        assert isinstance(item, pytest.Function)  # a suite test
        params = _params(item)
        case = params["xai_case_name"]
        known = costs.get(f"{case}-{params['xai_explainer'].name}")
        if known is None:
            means = by_case.get(case)
            known = sum(means) / len(means) if means else 0.0
        return known

    places = [i for i, item in enumerate(items) if getattr(getattr(item, "function", None), "xai_check", None)]
    ordered = sorted((items[i] for i in places), key=cost, reverse=True)  # stable: ties keep collection order
    for i, item in zip(places, ordered):
        items[i] = item
