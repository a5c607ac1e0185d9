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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_xai.engine.budget import DEFAULT as BUDGET
from pytest_xai.engine.runner import derive_seed  # noqa: F401 - public name, used in examples
from pytest_xai.errors import SpecError
from pytest_xai.plugin.ci import XaiCi

# pytest registers this module's namespace: the fixtures and hooks of the submodules are named here
from pytest_xai.plugin.fixtures import (  # noqa: F401
    pytest_runtest_makereport,
    xai_case,
    xai_check,
    xai_convergence,
    xai_explain,
    xai_explainer,
    xai_snapshot,
)
from pytest_xai.plugin.settings import XaiOptions, declare_options, read_options
from pytest_xai.plugin.state import (
    XaiState,
    start_zygote_early,
    state_of,
    xai_ci,
    xai_record,
    xai_state,
)
from pytest_xai.reports.record import Record

SUITE = Path(__file__).parent.parent / "suite" / "xai_suite.py"
LADDER = SUITE.with_name("xai_convergence.py")  # collected with --xai-convergence only
CATEGORY_MARKERS = {
    "xai_fidelity": "fidelity: does the explanation reflect what the model computes",
    "xai_fragility": "fragility: can the explanation be manipulated (adversarial models, correlated features)",
    "xai_stability": "stability: is the explanation stable across data distributions and perturbations",
    "xai_stress": "stress: does the explainer cope with many features",
}


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
def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Declare the options; start the zygote the same command started last time (``start_zygote_early``)."""
    declare_options(parser)
    config = pluginmanager.get_plugin("pytestconfig")
    if isinstance(config, pytest.Config):
        start_zygote_early(config)


def pytest_configure(config: pytest.Config) -> None:
    """Read and check the options, load the explainers (probed, never imported here), start the
    session and, with explainers, the zygote; register the markers; add the built-in suite to the run."""
    for name, doc in {"xai": "a pytest-xai test of an explainer", **CATEGORY_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config.addinivalue_line("markers", "xai_smoke: the fast gate, one representative suite test per family")
    config.addinivalue_line("markers", "xai_ladder: the ladder of budgets of --xai-convergence")
    options = read_options(config)
    if options.explainers:
        _search_invocation_dir(config)
    probe, probed = _prober(config, options)
    state = config.stash[xai_state] = XaiState(config, options, _load_explainers(options, probe))
    config.pluginmanager.register(state, "xai-state")
    state.probed = probed
    ci = config.stash[xai_ci] = XaiCi(config, state)
    config.pluginmanager.register(ci, "xai-ci")
    if state.explainers:
        _start_engine(config, state)
    if not (state.explainers and _runs_tests_here(config)) and "pytest_xai.engine.zygote" in sys.modules:
        from pytest_xai.engine.zygote import Zygote

        Zygote.settle(None)  # started early for a run that starts none here
    _sync_markers(config, load=bool(state.explainers or config.getoption("markers", False)))
    suite = str(SUITE.parent)  # the directory, so that ids read xai_suite.py::symmetry[...]
    if state.explainers and not options.no_suite and suite not in config.args:
        if config.args_source != pytest.Config.ArgsSource.ARGS and options.explainers_on_command_line:
            config.args[:] = [suite]
        else:
            config.args.append(suite)
    elif state.explainers and options.convergence and suite not in config.args:
        config.args.append(suite)  # the ladder, without the suite's checks (pytest_ignore_collect)


def _search_invocation_dir(config: pytest.Config) -> None:
    """A spec ``mymod:explain`` is found in the directory pytest runs in, as pytest's ``pythonpath``
    ini finds a module (first on ``sys.path``, for the session): the ``pytest`` script puts its own
    folder there, not the current one (``python -m pytest`` does).  The probe and the workers
    inherit this ``sys.path``."""
    here = str(config.invocation_params.dir)
    if any(os.path.abspath(entry or os.curdir) == here for entry in sys.path):
        return
    sys.path.insert(0, here)

    def restore() -> None:
        if here in sys.path:
            sys.path.remove(here)

    config.add_cleanup(restore)


def _load_explainers(options: XaiOptions, probe: Any) -> list[Any]:
    """The explainers of the run, checked without importing them here (``contract.check_without_import``)."""
    from pytest_xai.engine import contract

    loaded = []
    for spec, source in options.explainers:
        try:
            loaded.append(contract.check_without_import(spec, option=source, probe=probe))
        except SpecError as exc:
            raise pytest.UsageError(str(exc)) from None
    return contract.dedupe(loaded)


def _start_engine(config: pytest.Config, state: XaiState) -> None:
    """With explainers: the zygote started first, its imports (about 5 s) overlapping the loading of
    the case families and collection on the other core; under ``-n N`` the controller's zygote
    serves every xdist worker, which are forks of it."""
    from pytest_xai import explainers as explainers_module
    from pytest_xai.engine import contract

    _stop_on_sigterm(config)
    _quick_teardown()
    explainers = state.explainers
    reference = [e.spec.partition(":")[2] for e in explainers if e.spec.partition(":")[0] == contract.REFERENCE_MODULE]
    needs = [explainers_module.library_of(name) for name in reference]
    needs += [explainers_module.compiled_by(name) for name in reference]  # shap's numba functions, once
    first = tuple(dict.fromkeys(filter(None, needs)))
    others = len(reference) < len(explainers)  # a user's explainer may import any explainer library
    state.zygote_explainers = (list(first), others)
    if _runs_tests_here(config):
        state.runner.start(
            getattr(config, "workerinput", {}).get("xai_zygote"), first, others, state.expected_libraries()
        )
        if state.options.timeout:  # calls in workers: the first wait freezes the heap (XaiState.freeze)
            state.pause_gc()
    elif not _runs_explainers_here(config):  # xdist's controller: one zygote for all its workers
        state.zygote = state.runner.serve(first, others)
        _fork_xdist_workers(config, state.zygote)
        state.controller = True
        state.pause_gc()  # until its workers are up (XaiState.pytest_runtestloop)


def _prober(config: pytest.Config, options: XaiOptions) -> tuple[Any, dict[str, Any]]:
    """How user explainers are checked: ``(probe, descriptions)``.  In-process mode
    (``--xai-timeout=0``) imports them here (None); otherwise a throwaway process does
    (:mod:`pytest_xai.engine.probe`), under the call's CPU limit, once per run: xdist workers get the
    controller's descriptions (``workerinput["xai_probed"]``)."""
    probed: dict[str, Any] = dict(getattr(config, "workerinput", {}).get("xai_probed", {}))
    if not options.timeout:
        return None, probed

    def probe(spec: str, option: str) -> dict[str, Any]:
        if spec not in probed:
            from pytest_xai.engine.isolate import LOADING_WALL
            from pytest_xai.engine.probe import describe

            probed[spec] = describe(spec, option, cpu=options.timeout, wall=min(options.wall_timeout, LOADING_WALL))
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
        if not getattr(sys.modules.get("pytest_xai.engine.worker"), "FORKED", False):
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
    if (
        file_path.suffix == ".py"
        and state is not None
        and not state.families_loaded
        and (
            parent.session.isinitpath(file_path)
            or any(fnmatch(file_path.name, p) for p in parent.config.getini("python_files"))
        )
    ):
        try:
            mentions = b"xai_" in file_path.read_bytes()
        except OSError:
            mentions = False
        if mentions:
            _sync_markers(parent.config, load=True)
    if file_path in (SUITE, LADDER) and not any(
        fnmatch(file_path.name, p) for p in parent.config.getini("python_files")
    ):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The convergence ladder is collected with ``--xai-convergence`` only, the suite's checks
    without ``--xai-no-suite``."""
    state = config.stash.get(xai_state, None)
    if collection_path == LADDER:
        return not (state is not None and state.explainers and state.options.convergence)
    if collection_path == SUITE and state is not None and state.options.no_suite:
        return True
    return None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The seed, the time limit, the budget, the explainers and the families' header lines."""
    state = state_of(config)
    if not state.explainers:
        return []
    names = ", ".join(f"{e.name} ({e.spec})" if e.name != e.spec else e.name for e in state.explainers)
    options = state.options
    limit = (
        f"{options.timeout:g} CPU s per call (wall backstop {options.wall_timeout:g} s), in worker processes"
        if options.timeout
        else "none: calls run IN-PROCESS, without isolation or limit (--xai-timeout=0 "
        "is a debugging aid; an explainer that ends the process ends the run)"
    )
    from pytest_xai import cases

    budget = (
        f"{options.budget:.2g} model evaluations per call"
        if options.budget
        else f"{BUDGET:.2g} model evaluations per call unless a case declares less"
    )
    return [f"xai: seed={options.seed}, timeout={limit}", f"xai: budget={budget}", f"xai: explainers: {names}"] + [
        f"xai: {h}" for h in cases.headers()
    ]


# ------------------------------------------------------------------------------------- the suite


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise each suite test over the (case, explainer) pairs of the cases that declare its
    check, and every test that asks for ``xai_explainer`` over the explainers."""
    state = state_of(metafunc.config)
    check_name = getattr(metafunc.function, "xai_check", None)
    if check_name is not None:
        from pytest_xai import cases, checks

        params = [
            pytest.param(
                info.name,
                explainer,
                id=f"{info.name}-{explainer.name}",
                marks=[
                    pytest.mark.xai,
                    getattr(pytest.mark, f"xai_{info.category}"),
                    getattr(pytest.mark, checks.CHECKS[check_name].marker),
                ],
            )
            for info in cases.infos()
            if check_name in info.checks
            for explainer in state.explainers
        ]
        metafunc.parametrize(("xai_case_name", "xai_explainer"), params)
    elif getattr(metafunc.function, "xai_ladder", False):
        from pytest_xai import convergence

        marks = [pytest.mark.xai, pytest.mark.xai_ladder]
        params = [
            pytest.param(case, explainer, id=f"{case}-{explainer.name}", marks=marks)
            for case in convergence.CASES
            for explainer in state.explainers
        ]
        metafunc.parametrize(("xai_case_name", "xai_explainer"), params)
    elif "xai_explainer" in metafunc.fixturenames and "xai_explainer" not in _direct_params(metafunc):
        params = [pytest.param(e, id=e.name) for e in state.explainers] or [
            pytest.param(
                None,
                id="no-explainer",
                marks=pytest.mark.skip(reason="no explainer configured: pass --xai-explainer=module:function"),
            )
        ]
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
    return (
        hasattr(config, "workerinput")
        or config.getoption("collectonly", False)
        or not config.getoption("numprocesses", None)
    )


def _runs_tests_here(config: pytest.Config) -> bool:
    """Whether this process will run tests: not under ``--collect-only``, and not the controller of
    ``-n N`` (its workers run the tests and start their own engine)."""
    return not config.getoption("collectonly", False) and _runs_explainers_here(config)


def _explainer_of(item: pytest.Item) -> Any:
    return getattr(getattr(item, "callspec", None), "params", {}).get("xai_explainer")


def _fork_xdist_workers(config: pytest.Config, zygote: str | None) -> None:
    """Under ``-n N``, xdist's workers start as forks of the zygote (:mod:`pytest_xai.engine.xdist_worker`),
    so torch, xgboost, scikit-learn and scipy are imported once for the run, not once a worker.

    Only the plain ``popen`` workers of ``-n N``; a ``--tx`` the user wrote is left as written.
    """
    if zygote is None:
        return
    import shlex

    python = shlex.join([sys.executable, "-m", "pytest_xai.engine.xdist_worker", zygote])
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
    from pytest_xai.plugin.distributed import OneExplanationPerWorker  # imports xdist's scheduler

    config.option.loadscopereorder = False  # xdist's default sorts groups by test count; ours come costliest first
    return OneExplanationPerWorker(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched: Any) -> None:
    """Under ``-n N``, an xai test whose xdist worker died keeps its record in the reports: ERROR,
    kind ``crash`` (:func:`pytest_xai.plugin.distributed.crash_record`)."""
    config = getattr(sched, "config", None)
    state = config.stash.get(xai_state, None) if config is not None else None
    if state is None or not state.explainers:
        return
    from pytest_xai.plugin.distributed import crash_record

    worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "?")
    rec = crash_record(crashitem, worker, [e.name for e in state.explainers])
    if rec is not None:
        report.user_properties = [*report.user_properties, *rec.to_properties()]
        report.when = "call"  # xdist's "???": the session keeps a test's record from its call report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--xai-category`` deselects the suite's other categories; ``--xai-benchmark`` makes the
    suite's tests use pytest-benchmark's fixture."""
    from pytest_xai import cases

    for item in items:  # suite identity, so that even a setup error or skip reaches the table
        if not isinstance(item, pytest.Function):
            continue
        if getattr(item.function, "xai_check", None):
            info, check = cases.info(_params(item)["xai_case_name"]), item.function.xai_check
            item.stash[xai_record] = Record(
                explainer=_params(item)["xai_explainer"].name,
                case=info.name,
                family=info.family,
                category=info.category,
                check=check,
                row=f"{check}[{info.name}]",
            )
        elif getattr(item.function, "xai_ladder", False):
            info = cases.info(_params(item)["xai_case_name"])
            explainer = _params(item)["xai_explainer"].name
            item.stash[xai_record] = Record(
                explainer=explainer, case=info.name, family=info.family, row=f"ladder[{info.name}]"
            )
        elif _explainer_of(item) is not None:
            item.stash[xai_record] = Record(explainer=_params(item)["xai_explainer"].name, row=_row_of(item))
    options = state_of(config).options
    categories = options.categories
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
    if options.benchmark:
        for item in items:
            if (
                isinstance(item, pytest.Function)
                and getattr(item.function, "xai_check", None)
                and "benchmark" not in item.fixturenames
            ):
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
