"""The ``--xai-*`` options and ``xai_*`` ini values: declared (:func:`declare_options`, in the plugin's
``pytest_addoption``), then read and checked once at configure into one :class:`XaiOptions`
(:func:`read_options`), which the session, the fixtures and the CI workflow read.  A bad value is a
usage error (exit code 4) whose message names the option, the value and what to do
(:mod:`pytest_xai.options`).

Part of the plugin (the only package that imports pytest).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_xai.case import CATEGORIES
from pytest_xai.engine.budget import DEFAULT as BUDGET
from pytest_xai.plugin.progress import AFTER as PROGRESS

DEFAULT_TIMEOUT = 120.0
WALL_FACTOR = 10.0  # the wall-clock backstop, as a multiple of the CPU-time limit
MAX_EXPLAINER_WORKERS = 16


def declare_options(parser: pytest.Parser) -> None:
    """The ``--xai-*`` options and ``xai_*`` ini values (docs/reference.md, "Options")."""
    group = parser.getgroup("xai", "explainers under test (pytest-xai)")
    group.addoption(
        "--xai-explainer",
        action="append",
        default=[],
        metavar="MODULE:FUNCTION",
        help="explainer to test, as module:function or path/to/file.py:function; repeatable. A module is "
        "looked for first in the directory pytest runs in (as pytest's pythonpath ini adds a folder), a file "
        "relative to it. Without test paths, runs the built-in suite only.",
    )
    group.addoption(
        "--xai-seed",
        type=int,
        default=None,
        metavar="N",
        help="base seed of cases and explainers (default: ini xai_seed, else 0)",
    )
    group.addoption(
        "--xai-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"limit per explainer call in CPU seconds of its worker process (default {DEFAULT_TIMEOUT:g}); "
        f"0 runs calls in-process, without isolation or limit (a debugging aid)",
    )
    group.addoption(
        "--xai-wall-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"wall-clock backstop per explainer call, for explainers that sleep or deadlock "
        f"(default {WALL_FACTOR:g} x --xai-timeout)",
    )
    group.addoption(
        "--xai-explainer-workers",
        type=int,
        default=1,
        metavar="N",
        help="serially, how many worker processes of each explainer make the coming tests' explanations "
        "side by side (default 1): more for a slow explainer on a long run, where its calls, not the "
        "checks, are what the run waits for; under xdist each xdist worker has one",
    )
    group.addoption(
        "--xai-progress",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"in a terminal (not under -q), a line for an explainer call still running after SECONDS: its "
        f"case and spend so far, again each time its time doubles (default {PROGRESS:g}; 0: none)",
    )
    group.addoption(
        "--xai-budget",
        default=None,
        metavar="N",
        help=f"model evaluations an explainer call may spend (contract argument 'budget'; default: "
        f"the case's own, else {BUDGET:.0e}): perturbation explainers size their samples from it",
    )
    group.addoption(
        "--xai-threshold",
        action="append",
        default=[],
        metavar="CHECK.PARAM=VALUE",
        help="override a check's threshold, e.g. symmetry.rtol=0.1; repeatable",
    )
    group.addoption("--xai-report", default=None, metavar="PATH", help="write the JSON report to PATH")
    group.addoption(
        "--xai-data-dir",
        default=None,
        metavar="DIR",
        help="directory with real datasets some cases can use instead of synthetic ones "
        "(e.g. compas-scores-two-years.csv); default: ini xai_data_dir",
    )
    group.addoption(
        "--xai-category",
        action="append",
        default=[],
        choices=CATEGORIES,
        help="run only the suite tests of this category; repeatable",
    )
    group.addoption("--xai-no-suite", action="store_true", help="do not collect the built-in suite")
    group.addoption(
        "--xai-benchmark",
        action="store_true",
        help="time the explainer's call alone, in its worker, over pytest-benchmark's rounds after a warm-up, "
        "with each round's CPU seconds and model evaluations and the scores in extra_info",
    )
    group.addoption(
        "--xai-convergence",
        action="store_true",
        help="also run each explainer at a ladder of budgets of model evaluations on games with exact Shapley "
        "values and report its error against them per evaluation spent (table, JSON, HTML chart); "
        "-m xai_ladder runs the ladder alone",
    )
    parser.addini("xai_explainers", "explainers to test (module:function), one per line", type="linelist")
    parser.addini("xai_thresholds", "threshold overrides CHECK.PARAM=VALUE, one per line", type="linelist")
    parser.addini("xai_seed", "base seed (default 0)", default="0")
    parser.addini("xai_data_dir", "directory with real datasets (see --xai-data-dir)", type="paths", default=[])
    parser.addini(
        "xai_budget", f"model evaluations per explainer call (default: the case's own, else {BUDGET:.0e})", default=""
    )
    parser.addini(
        "xai_timeout",
        f"time limit per explainer call in seconds (default {DEFAULT_TIMEOUT:g})",
        default=str(DEFAULT_TIMEOUT),
    )
    # CI workflow (docs/ci.md): baselines, repeated seeds, HTML report.
    group.addoption(
        "--xai-baseline",
        default=None,
        metavar="PATH",
        help="compare with a saved JSON report: a test fails when its score drops by more than the "
        "tolerance; the terminal shows a diff table",
    )
    group.addoption(
        "--xai-save-baseline",
        default=None,
        metavar="PATH",
        help="write this run's JSON report to PATH, to commit as the baseline",
    )
    group.addoption(
        "--xai-baseline-tolerance",
        action="append",
        default=[],
        metavar="[CHECK=]VALUE",
        help="allowed score drop against the baseline, for every check or one check "
        "(default: ini xai_baseline_tolerance, else 0.05); repeatable",
    )
    group.addoption(
        "--xai-baseline-seconds-factor",
        type=float,
        default=None,
        metavar="F",
        help="also fail a test whose explainer seconds exceed F x the baseline's (default: not gated)",
    )
    group.addoption(
        "--xai-baseline-evaluations-factor",
        default=None,
        metavar="F",
        help="fail a test whose explainer spent more than F x the baseline's model evaluations (default: "
        "ini xai_baseline_evaluations_factor, else 2; 0 or off: not compared)",
    )
    group.addoption(
        "--xai-repeat",
        type=int,
        default=None,
        metavar="N",
        help="run each (case, explainer) with N derived seeds: mean and spread reported; PASS when the "
        "seeds' pass rate is credibly above 1/2 (exact Clopper-Pearson bound), FAIL when below, "
        "FLAKY (a failure) when undecided; deterministic explainers run once (default 1)",
    )
    group.addoption("--xai-html", default=None, metavar="PATH", help="write a self-contained HTML report to PATH")
    group.addoption(
        "--xai-snapshot-update",
        action="store_true",
        help="write or refresh the explanation snapshots of xai_snapshot (__xai_snapshots__/ beside each "
        "test file) instead of comparing with them; without it a missing snapshot fails",
    )
    group.addoption(
        "--xai-gate",
        default=None,
        metavar="verdict|regression",
        help="what makes the run fail: 'verdict' (any failed test, the default) or 'regression' (with "
        "--xai-baseline: only tests that got worse, newly fail or are new; known failures stay "
        "visible as KNOWN); default: ini xai_gate",
    )
    parser.addini("xai_gate", "verdict or regression (see --xai-gate)", default="verdict")
    group.addoption(
        "--xai-require",
        default=None,
        metavar="EXTRA,...",
        help="extras of pytest-xai the run needs (torch, shap, lime, chess, plot or all): a test that would "
        "skip because a library of one is not installed fails instead, with the install line; "
        "default: ini xai_require",
    )
    parser.addini("xai_require", "extras the run needs, comma-separated (see --xai-require)", default="")
    group.addoption(
        "--xai-shard",
        default=None,
        metavar="K/N",
        help="run shard K of N: each (case, explainer) whole in one shard, the same membership on "
        "every machine; the JSON report records the shard for 'python -m pytest_xai merge'",
    )
    parser.addini("xai_baseline_tolerance", "allowed score drops [CHECK=]VALUE, one per line", type="linelist")
    parser.addini("xai_baseline_evaluations_factor", "see --xai-baseline-evaluations-factor (default 2)", default="")


@dataclass(frozen=True)
class XaiOptions:
    """Every option and ini value of pytest-xai, checked: the command line wins over the ini file."""

    #: ``(spec, source)`` of each explainer, ``--xai-explainer`` first, then ini ``xai_explainers``
    explainers: tuple[tuple[str, str], ...] = ()
    seed: int = 0
    timeout: float = DEFAULT_TIMEOUT  # CPU seconds per call; 0: in-process
    wall_timeout: float = WALL_FACTOR * DEFAULT_TIMEOUT  # the backstop (inf: none)
    progress: float = PROGRESS  # seconds before a running call's first progress line (0: none)
    explainer_workers: int = 1  # serially, workers of each explainer that make the coming explanations
    budget: int | None = None  # None: each case's own, else the default
    #: ``{"ini": {check: {param: value}}, "command line": {...}}``
    thresholds: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    report: str | None = None
    data_dir: str | None = None
    categories: tuple[str, ...] = ()
    no_suite: bool = False
    benchmark: bool = False
    convergence: bool = False
    repeat: int = 1
    html: str | None = None
    save_baseline: str | None = None
    baseline: str | None = None
    tolerances: dict[str, float] = field(default_factory=dict)  # by check ("" for every check); with a baseline
    seconds_factor: float | None = None
    evaluations_factor: float | None = None
    gate: str = "verdict"
    shard: tuple[int, int] | None = None
    require: tuple[str, ...] = ()  # extras whose missing library fails a test instead of skipping it
    require_source: str = "--xai-require"
    snapshot_update: bool = False  # xai_snapshot writes its files instead of comparing

    @property
    def explainers_on_command_line(self) -> bool:
        return any(source == "--xai-explainer" for _, source in self.explainers)


def checked(check: Callable[[Any, str], Any], value: Any, source: str) -> Any:
    """``check(value, source)`` from :mod:`pytest_xai.options`; a bad value is a usage error (exit 4)."""
    from pytest_xai.options import OptionError

    try:
        return check(value, source)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None


def read_options(config: pytest.Config) -> XaiOptions:
    """The options of this run, each read and checked once.  With explainers, first one thread per
    pool in the environment (docs/design.md "Speed rules": contention made captum 25-100x slower):
    thread pools read these variables when their library is imported, and checking thresholds
    imports the case families, which import numpy."""
    explainers = tuple(
        (spec.strip(), source)
        for source, specs in (
            ("--xai-explainer", config.getoption("xai_explainer")),
            ("ini xai_explainers", config.getini("xai_explainers")),
        )
        for spec in specs
    )
    if explainers:
        from pytest_xai.engine.zygote import THREAD_VARIABLES

        for var in THREAD_VARIABLES:
            os.environ.setdefault(var, "1")
    from pytest_xai import options

    timeout = _number(config, "xai_timeout", options.check_timeout)
    wall_timeout = config.getoption("xai_wall_timeout")
    if wall_timeout is not None and not wall_timeout > 0:
        raise pytest.UsageError(f"--xai-wall-timeout={wall_timeout:g}: must be > 0 seconds")
    workers = config.getoption("xai_explainer_workers")
    if not 1 <= workers <= MAX_EXPLAINER_WORKERS:
        raise pytest.UsageError(
            f"--xai-explainer-workers={workers}: must be a whole number from 1 to {MAX_EXPLAINER_WORKERS}"
        )
    progress = config.getoption("xai_progress")
    if progress is not None and not 0 <= progress < float("inf"):
        raise pytest.UsageError(f"--xai-progress={progress:g}: must be a finite number of seconds >= 0")
    thresholds = {
        "ini": _thresholds(config.getini("xai_thresholds"), "ini xai_thresholds"),
        "command line": _thresholds(config.getoption("xai_threshold"), "--xai-threshold"),
    }
    budget_given = config.getoption("xai_budget") is not None or config.getini("xai_budget")
    ci = _ci(config)
    report = _output(config, "xai_report", "--xai-report")
    _no_shared_outputs(
        config, {"--xai-report": report, "--xai-save-baseline": ci["save_baseline"], "--xai-html": ci["html"]}
    )
    return XaiOptions(
        explainers=explainers,
        seed=_number(config, "xai_seed", options.check_seed),
        timeout=timeout,
        wall_timeout=WALL_FACTOR * timeout if wall_timeout is None else wall_timeout,
        progress=PROGRESS if progress is None else progress,
        explainer_workers=workers,
        budget=_number(config, "xai_budget", options.check_budget) if budget_given else None,
        thresholds=thresholds,
        report=report,
        data_dir=_data_dir(config),
        categories=tuple(config.getoption("xai_category")),
        no_suite=config.getoption("xai_no_suite"),
        benchmark=config.getoption("xai_benchmark"),
        convergence=config.getoption("xai_convergence"),
        snapshot_update=config.getoption("xai_snapshot_update"),
        **ci,
    )


#: Other writers' outputs that must not be one of ours: ``(dest, option)``.
OTHER_OUTPUTS = (("xmlpath", "--junitxml"), ("htmlpath", "--html"))


def _output(config: pytest.Config, name: str, option: str) -> str | None:
    """The output path of ``--xai-NAME``, checked (:func:`_path`)."""
    return _path(config, config.getoption(name), option)


def _path(config: pytest.Config, value: str | None, option: str) -> str | None:
    """An output path, checked (:func:`pytest_xai.options.check_report_path`); the controller also
    makes sure a file can be created there (xdist's workers write no report)."""
    from pytest_xai import options

    probe = not hasattr(config, "workerinput")
    return checked(lambda path, source: options.check_report_path(path, source, probe=probe), value, option)


def _no_shared_outputs(config: pytest.Config, ours: dict[str, str | None]) -> None:
    """With a report of ours: every output of the run leads to a file of its own, the JUnit XML
    and pytest-html's report included, whose paths are checked like ours (pytest's JUnit writer
    raises at session finish where no file can be made)."""
    from pytest_xai import options

    outputs = [(option, path) for option, path in ours.items() if path]
    if not outputs:
        return
    for dest, option in OTHER_OUTPUTS:
        given = config.getoption(dest, None)
        if given:  # their "-" is a file of that name
            outputs.append((option, _path(config, os.path.abspath(given) if given == "-" else given, option) or ""))
    checked(lambda value, source: options.check_outputs(value), outputs, "outputs")


def _number(config: pytest.Config, name: str, check: Callable[[Any, str], Any]) -> Any:
    """``--xai-NAME``, else ini ``xai_NAME``, checked."""
    value = config.getoption(name)
    if value is not None:
        return checked(check, value, "--" + name.replace("_", "-"))
    return checked(check, config.getini(name), f"ini {name}")


def _thresholds(entries: list[str], source: str) -> dict[str, dict[str, float]]:
    if not entries:
        return {}
    from pytest_xai import cases, checks, options

    cases.infos()  # family modules register their checks
    known = {name: info.thresholds for name, info in checks.CHECKS.items()}
    return checked(lambda value, src: options.parse_thresholds(value, src, known), entries, source)


def _data_dir(config: pytest.Config) -> str | None:
    from pytest_xai import options

    given, ini = config.getoption("xai_data_dir"), (config.getini("xai_data_dir") or [None])[0]
    if given is not None:
        checked(options.check_data_dir, given, "--xai-data-dir")
    else:
        checked(options.check_data_dir, ini, "ini xai_data_dir")
    chosen = given or ini
    return None if chosen is None else str(chosen)


def _ci(config: pytest.Config) -> dict[str, Any]:
    """The options of the CI workflow (docs/ci.md): repeats, baselines, the gate, required extras, shards."""
    from pytest_xai import extras, options
    from pytest_xai.reports import gate, shard

    repeat = config.getoption("xai_repeat")
    out: dict[str, Any] = {"repeat": checked(options.check_repeat, 1 if repeat is None else repeat, "--xai-repeat")}
    for name in ("save_baseline", "html"):
        out[name] = _output(config, f"xai_{name}", f"--xai-{name.replace('_', '-')}")
    factor = config.getoption("xai_baseline_seconds_factor")
    if factor is not None and not 1 <= factor < float("inf"):
        raise pytest.UsageError(
            f"--xai-baseline-seconds-factor={factor:g}: give a finite factor >= 1, "
            f"e.g. 3 to fail a test whose explainer became 3 times slower"
        )
    out.update(seconds_factor=factor, evaluations_factor=_evaluations_factor(config))
    out["baseline"] = config.getoption("xai_baseline") or None
    out["tolerances"] = _tolerances(config) if out["baseline"] else {}
    given = config.getoption("xai_gate")
    out["gate"] = checked(
        gate.check_gate, given or config.getini("xai_gate").strip(), "--xai-gate" if given else "ini xai_gate"
    )
    if out["gate"] == "regression" and not out["baseline"]:
        raise pytest.UsageError(
            "--xai-gate=regression compares with a baseline: add --xai-baseline=PATH (a "
            "report saved with --xai-save-baseline on a run you trust)"
        )
    given = config.getoption("xai_require")
    out["require_source"] = "--xai-require" if given is not None else "ini xai_require"
    out["require"] = checked(
        extras.check_require, config.getini("xai_require") if given is None else given, out["require_source"]
    )
    given = config.getoption("xai_shard")
    out["shard"] = None if given is None else checked(shard.parse, given, "--xai-shard")
    if out["shard"] and config.getoption("splits", None) is not None:
        raise pytest.UsageError("--xai-shard and pytest-split's --splits both split the run: give one of them")
    return out


def _evaluations_factor(config: pytest.Config) -> float | None:
    """``--xai-baseline-evaluations-factor``, else ini ``xai_baseline_evaluations_factor``, else the default."""
    from pytest_xai import options
    from pytest_xai.reports import baseline

    given, source = config.getoption("xai_baseline_evaluations_factor"), "--xai-baseline-evaluations-factor"
    if given is None:
        given, source = config.getini("xai_baseline_evaluations_factor").strip(), "ini xai_baseline_evaluations_factor"
    if given == "":
        return baseline.DEFAULT_EVALUATIONS_FACTOR
    return checked(options.check_evaluations_factor, given, source)


def _tolerances(config: pytest.Config) -> dict[str, float]:
    """The allowed score drops against the baseline: ini ``xai_baseline_tolerance``, then the command line's."""
    from pytest_xai import cases, checks
    from pytest_xai.reports import baseline

    tolerances: dict[str, float] = {}
    for source, given in (
        ("ini xai_baseline_tolerance", config.getini("xai_baseline_tolerance")),
        ("--xai-baseline-tolerance", config.getoption("xai_baseline_tolerance")),
    ):
        if given:  # the command line wins over the ini file
            cases.infos()  # family modules register their checks
            tolerances.update(checked(lambda v, s: baseline.parse_tolerances(v, s, list(checks.CHECKS)), given, source))
    return tolerances
