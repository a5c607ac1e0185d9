"""The pytest plugin: options, markers, fixtures, the built-in suite, reports.

Thin by design: every hook calls the core.  Nothing heavy is imported at module level, so a test run
that never configures an explainer pays nothing for numpy, torch, shap or friends.
"""

from __future__ import annotations

import inspect
import os
import sys
import zlib
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_xai.case import CATEGORIES
from pytest_xai.errors import ExplainerError, NotApplicable, SpecError

DEFAULT_TIMEOUT = 120.0
SUITE = Path(__file__).parent / "suite" / "xai_suite.py"
CATEGORY_MARKERS = {
    "xai_fidelity": "fidelity: does the explanation reflect what the model computes",
    "xai_fragility": "fragility: can the explanation be manipulated (adversarial models, correlated features)",
    "xai_stability": "stability: is the explanation stable across data distributions and perturbations",
    "xai_stress": "stress: does the explainer cope with many features",
}
PROPERTY_MARKERS = {
    "xai_symmetry": "symmetric features get equal credit; kwargs: rtol",
    "xai_dummy": "unused features get zero credit; kwargs: rtol",
    "xai_ranking": "the known most important feature is ranked first; kwargs: max_rank",
    "xai_correlated": "of two identical features only the used one gets credit (interventional); kwargs: rtol",
    "xai_fooling": "the explainer is not fooled by an adversarial scaffold",
    "xai_ngt": "attributions are near the ground-truth mask; kwargs: max_distance",
    "xai_units": "handcrafted torch units with exact ground truth (XAI-Units); kwargs: max_relative_mse",
    "xai_sanity": "explanations change when the model is randomised (Adebayo et al.); kwargs: midpoint",
    "xai_gt_shapley": "correlation with exact Shapley values on synthetic data (XAI-Bench); kwargs: min_corr",
    "xai_faithfulness": "attribution correlates with the effect of removing each feature; kwargs: min_faithfulness",
    "xai_monotonicity": "adding features by importance has decreasing marginal effect; kwargs: min_monotonicity",
    "xai_infidelity": "attributions predict output changes under perturbation (Yeh et al.); kwargs: max_infidelity",
    "xai_additive": "correlation with the exact contributions of an additive function (Mamalakis et al.); kwargs: min_mean_r",
    "xai_human": "agreement with (simulated) human-attention masks (Mohseni & Ragan); kwargs: min_precision",
    "xai_stress_rank": "with many features, planted tokens stay on top of the model's true ranking; kwargs: max_rank, min_spearman",
    "xai_interaction": "returned pairwise interactions single out the truly interacting pairs; kwargs: min_score, rtol",
}
xai_state = pytest.StashKey["XaiState"]()


class XaiState:
    """Everything the plugin knows for one session (one per xdist worker, plus the controller)."""

    def __init__(self, config: pytest.Config, explainers: list, thresholds: dict, seed: int, timeout: float):
        self.config = config
        self.explainers = explainers
        self.thresholds = thresholds
        self.seed = seed
        self.timeout = timeout
        data_dir = config.getoption("xai_data_dir") or (config.getini("xai_data_dir") or [None])[0]
        self.data_dir = None if data_dir is None else str(data_dir)
        self.records: list[dict] = []
        self.explanations: dict[tuple, tuple] = {}
        self.prepared: set[str] = set()
        self._cache = None

    @property
    def cache(self):
        """The on-disk cache in pytest's cache directory (None with ``-p no:cacheprovider``)."""
        if self._cache is None:
            from pytest_xai.cache import Cache

            root = self.config.cache.mkdir("xai") if getattr(self.config, "cache", None) else None
            self._cache = Cache(root)
        return self._cache

    # Hooks: this object is registered as a plugin in pytest_configure.

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            from pytest_xai import report as xai_report

            properties = list(report.user_properties)
            if report.skipped and isinstance(report.longrepr, tuple):
                properties.append(("xai_skip", report.longrepr[2].removeprefix("Skipped: ")))
            rec = xai_report.record(report.nodeid, report.outcome, report.duration, properties)
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
    def pytest_sessionfinish(self, exitstatus: int) -> None:
        path = self.config.getoption("xai_report")
        if not path or hasattr(self.config, "workerinput"):  # xdist workers report through the controller
            return
        from pytest_xai import report as xai_report

        options = {"explainers": [e.spec for e in self.explainers], "thresholds": self.thresholds,
                   "timeout": self.timeout, "args": list(self.config.invocation_params.args)}
        doc = xai_report.document(self.records, options=options, seed=self.seed, exitstatus=int(exitstatus))
        xai_report.write_json(path, doc)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xai", "explainers under test (pytest-xai)")
    group.addoption("--xai-explainer", action="append", default=[], metavar="MODULE:FUNCTION",
                    help="explainer to test, as module:function or path/to/file.py:function; repeatable. "
                         "Without test paths, runs the built-in suite only.")
    group.addoption("--xai-seed", type=int, default=None, metavar="N",
                    help="base seed of cases and explainers (default: ini xai_seed, else 0)")
    group.addoption("--xai-timeout", type=float, default=None, metavar="SECONDS",
                    help=f"time limit per explainer call (default {DEFAULT_TIMEOUT:g}); 0 runs in-process without limit")
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
    parser.addini("xai_timeout", f"time limit per explainer call in seconds (default {DEFAULT_TIMEOUT:g})",
                  default=str(DEFAULT_TIMEOUT))


def _number(config: pytest.Config, option: str, ini: str, kind: type) -> Any:
    value = config.getoption(option)
    if value is not None:
        return value
    raw = config.getini(ini)
    try:
        return kind(raw)
    except ValueError:
        raise pytest.UsageError(f"ini {ini} = {raw!r}: expected a {kind.__name__}") from None


def _parse_thresholds(entries: list[str], source: str) -> dict[str, dict[str, float]]:
    if not entries:
        return {}
    import difflib

    from pytest_xai import cases, checks

    cases.infos()  # family modules register their checks
    out: dict[str, dict[str, float]] = {}
    for entry in entries:
        key, sep, raw = entry.partition("=")
        name, dot, param = key.strip().partition(".")
        if not sep or not dot:
            raise pytest.UsageError(f"{source} {entry!r}: expected CHECK.PARAM=VALUE, e.g. symmetry.rtol=0.1")
        if name not in checks.CHECKS:
            close = difflib.get_close_matches(name, checks.CHECKS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise pytest.UsageError(f"{source} {entry!r}: no check named {name!r}; {hint}known: {', '.join(checks.CHECKS)}")
        known = checks.CHECKS[name].thresholds
        if param not in known:
            raise pytest.UsageError(f"{source} {entry!r}: check {name!r} has no threshold {param!r}; it has: {', '.join(known)}")
        try:
            out.setdefault(name, {})[param] = float(raw)
        except ValueError:
            raise pytest.UsageError(f"{source} {entry!r}: {raw.strip()!r} is not a number") from None
    return out


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    for name, doc in {"xai": "a pytest-xai test of an explainer", **CATEGORY_MARKERS, **PROPERTY_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    from pytest_xai import contract

    loaded = []
    for source, specs in (("--xai-explainer", config.getoption("xai_explainer")),
                          ("ini xai_explainers", config.getini("xai_explainers"))):
        for spec in specs:
            try:
                loaded.append(contract.load(spec.strip(), option=source))
            except SpecError as exc:
                raise pytest.UsageError(str(exc)) from None
    explainers = contract.dedupe(loaded)
    thresholds = _parse_thresholds(config.getini("xai_thresholds"), "ini xai_thresholds")
    for check, params in _parse_thresholds(config.getoption("xai_threshold"), "--xai-threshold").items():
        thresholds.setdefault(check, {}).update(params)  # the command line wins over the ini file
    seed = _number(config, "xai_seed", "xai_seed", int)
    timeout = _number(config, "xai_timeout", "xai_timeout", float)
    if timeout < 0:
        raise pytest.UsageError(f"--xai-timeout={timeout:g}: must be >= 0 (0 disables the limit)")
    state = config.stash[xai_state] = XaiState(config, explainers, thresholds, seed, timeout)
    config.pluginmanager.register(state, "xai-state")
    if explainers:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")  # DESIGN §6: contention made captum 25-100x slower
        suite = str(SUITE.parent)  # the directory, so that ids read xai_suite.py::symmetry[...]
        if not config.getoption("xai_no_suite") and suite not in config.args:
            if config.args_source != pytest.Config.ArgsSource.ARGS and config.getoption("xai_explainer"):
                config.args[:] = [suite]
            else:
                config.args.append(suite)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect the built-in suite whatever the user's ``python_files`` patterns are."""
    from fnmatch import fnmatch

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
    limit = f"{state.timeout:g}s" if state.timeout else "none (in-process)"
    from pytest_xai import cases

    return [f"xai: seed={state.seed}, timeout={limit}, explainers: {names}"] + [f"xai: {h}" for h in cases.headers()]


def derive_seed(base: int, *parts: str) -> int:
    """A stable per-test seed: the same for a test serially and under xdist."""
    return zlib.crc32(":".join([str(base), *parts]).encode()) & 0x7FFFFFFF


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

    state = _state(request.config)

    def get(name: str):
        try:
            return cases.get(name, seed=state.seed, cache=state.cache, data_dir=state.data_dir)
        except NotApplicable as exc:  # e.g. a trained model below its quality gate, a missing extra
            pytest.skip(f"case {name}: {exc}")

    return get


def _record(node: pytest.Item, **values: Any) -> None:
    """Store values as ``xai_*`` user properties (builtin types only: numpy floats crash xdist)."""
    for key, value in values.items():
        if hasattr(value, "item"):
            value = value.item()
        node.user_properties.append((f"xai_{key}", value))


@pytest.fixture
def xai_explain(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Run an explainer on a case through the contract: ``xai_explain(explainer, case)``.

    The call runs in a child process under the time limit; its output is validated.  A
    ``NotApplicable`` skips the test; a crash, hang or invalid output fails it with a message naming
    the explainer, the case and what was wrong.  Seconds are recorded for the report.
    """
    from pytest_xai import contract, isolate

    state = _state(request.config)

    def explain(explainer, case, *, seed: int | None = None):
        if isinstance(explainer, str):
            explainer = contract.load(explainer, option="xai_explain")
        seed = derive_seed(state.seed, case.name) if seed is None else seed
        _record(request.node, explainer=explainer.name, case=case.name, family=case.info.family,
                category=case.info.category, seed=seed)
        key = (explainer.spec, id(case), seed)
        cached = key in state.explanations  # another check on the same case already ran it
        if not cached:
            benchmark = request.getfixturevalue("benchmark") if "benchmark" in request.fixturenames else None
            run = lambda: isolate.call(lambda: contract.run(explainer, case, seed=seed), state.timeout)  # noqa: E731
            if "torch" in sys.modules:  # DESIGN §6: one thread per process
                sys.modules["torch"].set_num_threads(1)
            if explainer.prepare is not None and explainer.spec not in state.prepared:
                state.prepared.add(explainer.spec)
                explainer.prepare()  # in this process, so that forked calls inherit the result
            failure = None
            try:
                result = benchmark.pedantic(run, rounds=1, iterations=1) if benchmark else run()
            except NotApplicable as exc:
                _record(request.node, skip=str(exc))
                pytest.skip(f"{explainer.name} on {case.name}: {exc}")
            except ExplainerError as exc:
                failure = f"explainer {explainer.name!r} on case {case.name!r}: {exc}"
                _record(request.node, error=failure, passed=False, score=0.0)
                trace = getattr(exc, "traceback", "")
                failure += f"\n\n{trace}" if trace else ""
            if failure:  # outside the except block: the chained exception would only add noise
                pytest.fail(failure, pytrace=False)
            state.explanations[key] = (case, result)
        result = state.explanations[key][1]
        _record(request.node, seconds=round(result.seconds, 6), cached=cached)
        return result

    return explain


@pytest.fixture
def xai_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Score an explanation and fail the test when the check fails: ``xai_check("symmetry", expl, case)``.

    Case-specific arguments come from the case (``case.info.checks``) unless given; thresholds follow
    call kwargs > marker kwargs (``@pytest.mark.xai_symmetry(rtol=0.1)``) > ``--xai-threshold`` /
    ini > the check's default.  The score is recorded for the table, JSON and JUnit reports.
    """
    from pytest_xai import checks

    state = _state(request.config)

    def run_check(name: str, explanation, case, *, explainer=None, **kwargs):
        info = checks.CHECKS[name]
        params = {**info.thresholds, **state.thresholds.get(name, {})}
        for mark in reversed(list(request.node.iter_markers(info.marker))):
            params.update({k: v for k, v in mark.kwargs.items() if k in info.thresholds})
        params.update(case.info.checks.get(name, {}))
        params.update(kwargs)
        if "reexplain" in inspect.signature(info.func).parameters and "reexplain" not in params:
            if explainer is None:
                raise TypeError(f"check {name!r} re-runs the explainer: pass explainer=")
            params["reexplain"] = _reexplainer(request, explainer, case)
        try:
            score = info.func(explanation, case, **params)
        except NotApplicable as exc:  # e.g. an interaction check on an explainer that returns none
            _record(request.node, skip=str(exc))
            pytest.skip(f"{name} on {case.name}: {exc}")
        _record(request.node, check=name, score=round(float(score.value), 6), passed=bool(score.passed),
                threshold=float(score.threshold), detail=score.detail)
        _picture(request, case, explanation, score)
        benchmark = request.getfixturevalue("benchmark") if "benchmark" in request.fixturenames else None
        if benchmark is not None:
            benchmark.extra_info.update({"xai_check": name, "xai_score": float(score.value),
                                         "xai_passed": bool(score.passed), "xai_case": case.name})
        if not score.passed:
            worst = f"\nworst example: {dict(score.worst)}" if score.worst else ""
            pytest.fail(f"{name} failed on case {case.name!r} (score {score.value:.3f}): {score.detail}{worst}",
                        pytrace=False)
        return score

    return run_check


def _picture(request: pytest.FixtureRequest, case, explanation, score) -> None:
    """Draw the worst example next to the JSON report, for cases that know how to draw."""
    report = request.config.getoption("xai_report")
    draw = case.meta.get("draw")
    row = (score.worst or {}).get("row")
    if not report or draw is None or row is None:
        return
    import re
    import warnings

    from pytest_xai.checks import attributions_of

    report = Path(report)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    path = report.parent / f"{report.stem}-pictures" / f"{name}.png"
    try:
        draw(path, case, attributions_of(explanation), int(row))
    except Exception as exc:  # a picture is a convenience: never fail the test for it
        warnings.warn(f"pytest-xai: could not draw {path.name}: {type(exc).__name__}: {exc}", stacklevel=2)
        return
    _record(request.node, picture=str(path))


def _reexplainer(request: pytest.FixtureRequest, explainer, case) -> Callable[..., Any]:
    """``reexplain(model, *, other_seed=False)``: the explainer on ``case`` with ``model`` swapped
    in (for sanity checks), under the same time limit and validation as the first call."""
    from pytest_xai import contract, isolate

    state = _state(request.config)
    swap = case.meta["with_model"]
    seed = derive_seed(state.seed, case.name)

    def reexplain(model, *, other_seed: bool = False):
        other = swap(case, model)
        call = lambda: contract.run(explainer, other, seed=seed + 1 if other_seed else seed)  # noqa: E731
        try:
            return isolate.call(call, state.timeout).attributions
        except ExplainerError as exc:
            pytest.fail(f"explainer {explainer.name!r} on a randomised model of case {case.name!r}: {exc}",
                        pytrace=False)

    return reexplain


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--xai-category`` deselects the suite's other categories; ``--xai-benchmark`` makes the
    suite's tests use pytest-benchmark's fixture."""
    from pytest_xai import cases

    for item in items:  # suite identity, so that even a setup error or skip reaches the table
        if getattr(getattr(item, "function", None), "xai_check", None):
            info = cases.info(item.callspec.params["xai_case_name"])
            _record(item, explainer=item.callspec.params["xai_explainer"].name, case=info.name,
                    family=info.family, category=info.category, check=item.function.xai_check)
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


