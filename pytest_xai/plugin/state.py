"""The session's state: options read once, the engine, the records of finished tests.

Part of the plugin (the only package that imports pytest).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import pytest

from pytest_xai.record import Record

DEFAULT_TIMEOUT = 120.0
WALL_FACTOR = 10.0  # the wall-clock backstop, as a multiple of the CPU-time limit
xai_state = pytest.StashKey["XaiState"]()
xai_ci = pytest.StashKey[Any]()  # the XaiCi of pytest_xai.plugin.ci
xai_repeats = pytest.StashKey[tuple]()
xai_record = pytest.StashKey[Record]()  # what a test has recorded so far (pytest_runtest_makereport sends it)


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
        for line in xai_report.table(self.records, order=[e.name for e in self.explainers]):
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


def _checked(check: Callable[[Any, str], Any], value: Any, source: str) -> Any:
    """``check(value, source)`` from :mod:`pytest_xai.options`; a bad value is a usage error (exit 4)."""
    from pytest_xai.options import OptionError

    try:
        return check(value, source)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None


def _state(config: pytest.Config) -> XaiState:
    return config.stash[xai_state]


def _rec(node: pytest.Item) -> Record:
    """The record of the test ``node``, filled as it runs."""
    rec = node.stash.get(xai_record, None)
    if rec is None:
        rec = node.stash[xai_record] = Record()
    return rec
