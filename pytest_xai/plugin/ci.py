"""The CI workflow (docs/ci.md): baselines, repeated seeds, the smoke gate, the HTML report.

Part of the plugin (the only package that imports pytest); the logic is in
:mod:`pytest_xai.reports.baseline`, :mod:`pytest_xai.reports.report` and :mod:`pytest_xai.reports.htmlreport`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import pytest

from pytest_xai.plugin.state import XaiState, record_of, xai_record
from pytest_xai.reports.record import Record

if TYPE_CHECKING:
    from pytest_xai.reports.baseline import Gate
    from pytest_xai.reports.files import Written


class XaiCi:
    """Baselines, repeated seeds, the smoke gate, the HTML report and pytest-html extras."""

    def __init__(self, config: pytest.Config, state: XaiState):
        self.config, self.state, self.options = config, state, state.options
        self.baseline: Gate | None = self._load_gate(config) if self.options.baseline else None
        self.failures: list[tuple[str, str]] = []  # (node id, phase) of every failed report
        #: ``--xai-shard``: the xai tests of the whole (unsharded) selection and of this shard, counted
        #: and digested (:func:`pytest_xai.reports.shard.tests_digest`): ``collected``, ``selection``,
        #: ``assigned``, ``tests``
        self.sharded: dict[str, Any] = {}
        self.written: list[Written] = []  # what became of each report of the run (the footer's lines)
        if self.options.shard:
            config.pluginmanager.register(XaiShard(self), "xai-shard")
        config.pluginmanager.register(XaiReports(self), "xai-reports")
        if state.explainers and not config.getoption("collectonly", False):  # the engine starts now
            _open_cache(config, state)

    def _load_gate(self, config: pytest.Config) -> Gate:
        from pytest_xai.reports import baseline
        from pytest_xai.reports.report import versions

        options = self.options
        assert options.baseline is not None
        try:
            gate = baseline.Gate(
                options.baseline, options.tolerances, options.seconds_factor, options.evaluations_factor
            )
        except baseline.BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None
        if not hasattr(config, "workerinput"):  # the controller warns once
            for warning in gate.warnings(versions(), options.seed):
                config.issue_config_time_warning(baseline.BaselineWarning(warning), stacklevel=2)
        return gate

    def gate(self, node: pytest.Item, check: str, score: Any) -> None:
        """Fail a test that passed its check but regressed against the baseline."""
        if self.baseline is None:
            return
        rec = record_of(node)
        reasons = self.baseline.regressions(
            (rec.row or node.nodeid, rec.explainer or ""), check, float(score.value), rec.seconds, rec.evaluations
        )
        if reasons:
            rec.regression = "; ".join(reasons)
            pytest.fail(
                f"{check} on case {rec.case!r} regressed against the baseline {self.baseline.path}: {rec.regression}",
                pytrace=False,
            )

    def judge(self, item: pytest.Item, call: pytest.CallInfo, rec: Record) -> str | None:
        """Under ``--xai-gate=regression``, mark a failing test a known failure or name its
        regression (:func:`pytest_xai.reports.gate.judge`), before its report carries the record.
        Returns why the outcome was expected: the xfail reason of a known failure (the baseline's
        score and detail), or the XPASS reason of a test the baseline had failing that passes now;
        else None."""
        if (
            self.options.gate != "regression"
            or self.baseline is None
            or call.when not in ("setup", "call")
            or item.get_closest_marker("xfail")
            or (call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception))
        ):
            return None
        from pytest_xai.reports import baseline, gate

        before = self.baseline.index.get((rec.row or item.nodeid, rec.explainer or ""))
        if call.excinfo is None:
            if call.when == "call" and before is not None and before.status in gate.FAILING:
                return gate.fixed_reason(rec.row or item.nodeid, rec.explainer, before, self.baseline.path)
            return None
        status = "TIMEOUT" if rec.kind == "timeout" else "ERROR" if rec.kind else "FAIL"
        now = Record(
            status=status, score=rec.score, seconds=rec.seconds, evaluations=rec.evaluations, regression=rec.regression
        )
        reasons = (
            []
            if before is None
            else baseline.regressions(
                now, before, tol=baseline.tolerance(rec.check, self.baseline.tolerances), **self.baseline.factors()
            )
        )
        rec.known_failure, rec.regression = gate.judge(now, before, reasons)
        if not rec.known_failure or before is None:
            return None
        return gate.known_reason(before, self.baseline.path)

    def report_sections(self, records: list[Record]) -> dict:
        """Top-level keys this adds to the JSON report: ``repeat``, ``budget`` (both change scores, so
        shards must agree on them) and, with a baseline, ``baseline``."""
        out: dict = {"repeat": self.options.repeat, "budget": self.options.budget, "gate": self.options.gate}
        if self.options.shard:
            from pytest_xai.reports import shard

            out["shard"] = {
                "k": self.options.shard[0],
                "n": self.options.shard[1],
                "collected": self.sharded.get("collected"),
                "assigned": self.sharded.get("assigned"),
                "selection": self.sharded.get("selection"),
                "options": shard.digest(self.verdict_options()),
                "tests": self.sharded.get("tests"),
            }
        if self.baseline is not None:
            from pytest_xai.reports.report import versions

            out["baseline"] = self.baseline.section(records, versions())
        return out

    def verdict_options(self) -> dict[str, Any]:
        """The options that change a verdict, for the digest shards of one run share: a shard run
        with another time limit, explainer, gate or baseline comes from another run."""
        o = self.options
        return {
            "explainers": sorted(spec for spec, _ in o.explainers),
            "seed": o.seed,
            "timeout": o.timeout,
            "wall_timeout": o.wall_timeout,
            "budget": o.budget,
            "thresholds": o.thresholds,
            "repeat": o.repeat,
            "gate": o.gate,
            "tolerances": o.tolerances,
            "seconds_factor": o.seconds_factor,
            "evaluations_factor": o.evaluations_factor,
            "baseline": None if self.baseline is None else self.baseline.doc.get("results"),
        }

    def report_paths(self) -> dict[str, str | None]:
        """The reports besides the JSON one: the saved baseline and the HTML report."""
        return {"baseline": self.options.save_baseline, "html": self.options.html}

    def writers(self) -> dict:
        """The writer of each report; the HTML one embeds the pictures this run drew beside the JSON
        report (:func:`pytest_xai.reports.embed.collect`), never a path read from a record."""
        from pytest_xai.reports import embed, htmlreport
        from pytest_xai.reports import report as xai_report

        json_path = self.options.report

        def html(path: str, doc: dict) -> None:
            htmlreport.write(path, doc, embed.collect(json_path, doc["results"]) if json_path else {})

        return {"json": xai_report.write_json, "baseline": xai_report.write_json, "html": html}

    def write_reports(self, session: pytest.Session) -> None:
        """Write the run's reports (the xdist controller only), guarded, JSON first
        (:func:`pytest_xai.reports.files.write_reports`); one that fails is named on stderr and the
        run exits :data:`~pytest_xai.reports.files.REPORT_FAILED`."""
        options, state = self.options, self.state
        if not (options.report or options.save_baseline or options.html) or hasattr(self.config, "workerinput"):
            return
        from pytest_xai.reports import files
        from pytest_xai.reports import report as xai_report

        used = {
            "explainers": [e.spec for e in state.explainers],
            "thresholds": options.thresholds,
            "timeout": options.timeout,
            "wall_timeout": options.wall_timeout,
            "isolation": "worker processes" if options.timeout else "in-process (no isolation)",
            "args": list(self.config.invocation_params.args),
        }
        doc = xai_report.document(state.records, options=used, seed=options.seed, exitstatus=int(session.exitstatus))
        failures = []
        try:
            doc.update(self.report_sections(state.records))
        except Exception as exc:  # noqa: BLE001 - the reports are still written, without the section
            failures.append(f"pytest-xai: the baseline section of the reports is missing: {type(exc).__name__}: {exc}")
        self.written = files.write_reports(doc, {"json": options.report, **self.report_paths()}, self.writers())
        failures += [written.failure for written in self.written if written.error is not None]
        for failure in failures:
            sys.stderr.write(failure + "\n")
        if failures and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = files.REPORT_FAILED

    # Hooks

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Remember each failed report (node id, phase), for the regression gate's exit code."""
        if report.failed:
            self.failures.append((report.nodeid, report.when))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """Under ``-n N`` the workers tell the controller what the shard's run selected (:attr:`sharded`)."""
        sharded = getattr(node, "workeroutput", {}).get("xai_sharded")
        if sharded:
            self.sharded = dict(sharded)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Under ``--xai-gate=regression``, exit 0 when every failure is a known one."""
        from pytest_xai.reports import gate

        if self.options.shard and hasattr(self.config, "workerinput"):  # xdist's controller collects nothing
            self.config.workeroutput["xai_sharded"] = self.sharded  # type: ignore[attr-defined]
        known = [rec.nodeid for rec in self.state.records if rec.known_failure]
        session.exitstatus = gate.exit_code(self.options.gate, int(session.exitstatus), self.failures, known)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """The repeat and baseline lines of pytest's header."""
        lines = []
        if self.state.explainers and self.options.repeat > 1:
            from pytest_xai.engine.runner import REPEAT_ALPHA

            lines.append(
                f"xai: repeat={self.options.repeat} seeds per (case, explainer); verdict by an exact test "
                f"on the seeds' pass rate (Clopper-Pearson, one-sided {1 - REPEAT_ALPHA:.0%})"
            )
        if self.baseline is not None:
            lines.append(f"xai: {self.baseline.header()}")
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Mark the fast gate's tests ``xai_smoke`` before ``-m`` selects: each family's declared one and
        the checks of cases registered with ``smoke=`` (:func:`pytest_xai.cases.smoke`)."""
        smoke: set[tuple[str, str]] = set()
        if self.state.explainers:  # the suite is collected only then
            from pytest_xai import cases

            smoke.update(cases.smoke())
        for item in items:
            check = getattr(getattr(item, "function", None), "xai_check", None)
            if (
                check
                and isinstance(item, pytest.Function)
                and (check, item.callspec.params.get("xai_case_name")) in smoke
            ):
                item.add_marker(pytest.mark.xai_smoke)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        """With pytest-html, put each xai test's score, threshold and worst example into its row."""
        outcome = yield
        report = outcome.get_result()
        if report.when != "call" or not self.config.pluginmanager.hasplugin("html"):
            return
        from pytest_xai.reports import htmlreport

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
        """The gate's verdict, the baseline diff table and where the HTML report and baseline went."""
        if self.options.gate == "regression" and self.state.records:
            known = sum(1 for rec in self.state.records if rec.known_failure)
            worse = sum(
                1 for rec in self.state.records if rec.status in ("FAIL", "ERROR", "TIMEOUT") and not rec.known_failure
            )
            terminalreporter.write_line(
                f"xai gate: regression against {self.baseline and self.baseline.path}: "
                f"{worse} regressed or new failure(s), {known} known failure(s) (KNOWN: "
                f"failing in the baseline too, no worse)"
            )
            from pytest_xai.reports import gate

            assert self.baseline is not None
            for rec in self.state.records:
                before = self.baseline.index.get(rec.key())
                if rec.outcome == "xpassed" and before is not None and before.status in gate.FAILING:
                    reason = gate.fixed_reason(rec.row or rec.nodeid, rec.explainer, before, self.baseline.path)
                    terminalreporter.write_line(f"xai gate: {reason}")
        if self.baseline is not None and self.state.records:
            from pytest_xai.reports import baseline

            diff = self.baseline.diff(self.state.records)
            terminalreporter.write_sep("=", f"xai baseline diff against {self.baseline.path}")
            for line in baseline.table(diff):
                terminalreporter.write_line(line)
        for written in self.written:  # the reports written, and those that could not be
            terminalreporter.write_line(written.line)


def _open_cache(config: pytest.Config, state: XaiState) -> None:
    """Where pytest's cache cannot hold the plugin's (``-o cache_dir=FILE``, a folder under /proc,
    a symbolic link planted at ``d/xai``), warn and cache in a temporary folder for the session, as
    with ``-p no:cacheprovider``: pytest alone warns and goes on, the plugin's session raised an
    INTERNALERROR at configure (issue 41).  Done before the engine starts, which opens the cache
    (``XaiState.cache``)."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return
    from pytest_xai import cache as xai_cache

    given = os.path.expanduser(os.path.expandvars(str(config.getini("cache_dir"))))
    where: Any = config.rootpath / given / "d" / "xai"  # how pytest resolves cache_dir
    try:
        where = cache.mkdir("xai")
        problem = xai_cache.unusable(where)
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem is None:
        return
    import shutil
    import tempfile

    if not hasattr(config, "workerinput"):  # the controller warns once
        config.issue_config_time_warning(
            pytest.PytestCacheWarning(
                f"pytest-xai: cannot use the cache folder {where}: {problem}; models and data are cached "
                f"in a temporary folder for this session only"
            ),
            stacklevel=2,
        )
    root = tempfile.mkdtemp(prefix="pytest-xai-cache-")
    config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))
    # what XaiState.cache makes with -p no:cacheprovider (the property is the session's; it is set here
    # before its first use, not rewritten)
    state._cache = xai_cache.Cache(root)  # type: ignore[assignment]


class XaiReports:
    """Writes the run's reports after every other session-finish hook, whatever they did: another
    writer's hook that raises (pytest's JUnit XML, whose path became a directory) stopped the hooks
    after it, the plugin's writers among them (issue 41)."""

    def __init__(self, ci: XaiCi):
        self.ci = ci

    @pytest.hookimpl(wrapper=True, trylast=True)  # the innermost wrapper: inside pytest's terminal summary
    def pytest_sessionfinish(self, session: pytest.Session):
        try:
            result = yield
        except BaseException:
            self.ci.write_reports(session)
            for written in self.ci.written:  # pytest's summary, which names them, is lost with the error
                sys.stderr.write(f"pytest-xai: {written.line}\n")
            raise
        self.ci.write_reports(session)
        return result


class XaiShard:
    """``--xai-shard=K/N``: deselects the other shards' tests after ``-k`` and ``-m`` have selected."""

    def __init__(self, ci: XaiCi):
        self.ci = ci

    @pytest.hookimpl(trylast=True)  # after -k and -m have selected
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Keep this shard's groups (:mod:`pytest_xai.reports.shard`)."""
        from pytest_xai.reports import shard

        ci = self.ci
        assert ci.options.shard is not None
        groups: dict[str, list[pytest.Item]] = {}
        for item in items:
            groups.setdefault(_group(item), []).append(item)
        known = (
            {}
            if ci.baseline is None
            else {k: r.duration for k, r in ci.baseline.index.items() if isinstance(r.duration, (int, float))}
        )
        default = sum(known.values()) / len(known) if known else 1.0
        weights = {
            g: sum(known.get(record_of(i).key(), default) if xai_record in i.stash else default for i in members)
            for g, members in groups.items()
        }
        mine = shard.assign(weights, ci.options.shard[1])
        keep = [item for item in items if mine[_group(item)] == ci.options.shard[0]]
        selected = [record_of(item).key() for item in items if xai_record in item.stash]
        given = [record_of(item).key() for item in keep if xai_record in item.stash]
        ci.sharded = {
            "collected": len(selected),
            "selection": shard.tests_digest(selected),
            "assigned": len(given),
            "tests": shard.tests_digest(given),
        }
        if len(keep) < len(items):
            ci.config.hook.pytest_deselected(
                items=[item for item in items if mine[_group(item)] != ci.options.shard[0]]
            )
            items[:] = keep


def _group(item: pytest.Item) -> str:
    """The shard group of a test: its (case, explainer) for the suite, else the test itself."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if getattr(getattr(item, "function", None), "xai_check", None) and "xai_case_name" in params:
        return f"xai-suite[{params['xai_case_name']}-{params['xai_explainer'].name}]"
    return item.nodeid
