"""The regression gate (``--xai-gate=regression``, ``docs/ci.md``): red only when something got
worse than the baseline (pure Python: no pytest, no numpy).

Every real explainer fails some suite test by theory (KernelSHAP is fooled by the SHAP scaffold),
so with ``--xai-gate=verdict`` (the default) a run is red whether or not anything regressed.  Under
``regression`` a failing test is a *known failure* when the baseline already had it failing with a
score no worse than the tolerance; the run exits 0 when every failure is known.  A test that
regressed, a baseline PASS that now fails, and a failing test the baseline lacks are regressions.
Known failures stay visible: pytest reports them as ``xfailed`` (the baseline's score and detail are
the reason; JUnit XML writes ``<skipped type="pytest.xfail">``), ``KNOWN`` in the table,
``known_failure: true`` in the JSON report and the JUnit property ``xai_known_failure``, a badge in
the HTML report.  A test the baseline had failing that passes now is ``XPASS``: update the baseline.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_xai.reports.record import Record

GATES = ("verdict", "regression")
FAILING = ("FAIL", "ERROR", "TIMEOUT")
OK, TESTS_FAILED = 0, 1  # pytest.ExitCode values, without importing pytest
NEW_FAILURE = "a new test that fails: not in the baseline"


def check_gate(value: str, source: str = "--xai-gate") -> str:
    """``verdict`` or ``regression``."""
    from pytest_xai.options import OptionError

    if value not in GATES:
        raise OptionError(
            f"{source}={value!r}: give 'verdict' (red on any failed verdict, the default) or "
            f"'regression' (red only on regressions against --xai-baseline)"
        )
    return value


def judge(now: Record, before: Record | None, reasons: list[str]) -> tuple[bool, str | None]:
    """``(known_failure, regression)`` of a failing test ``now`` against its baseline record
    ``before`` (None: not in the baseline); ``reasons`` are why it is worse
    (:func:`pytest_xai.reports.baseline.regressions`), empty when it is not.  A known failure needs
    scores that compare: a score that is no finite number (``"nan"``) is below no tolerance, so it
    would make any failure known (issue 41); without a score (an ERROR, a TIMEOUT) the verdicts compare."""
    from pytest_xai.reports.baseline import not_finite

    if now.regression:  # the baseline gate failed a test that passed its check
        return False, now.regression
    if before is None:
        return False, NEW_FAILURE
    if before.status in FAILING and not reasons:
        for score, when in ((before.score, "in the baseline"), (now.score, "now")):
            if not_finite(score):
                return False, f"no finite score {when} ({score}) to compare with: not a known failure"
        return True, None
    return False, "; ".join(reasons) or f"verdict {before.status} in the baseline, {now.status} now"


def _score(rec: Record, form: str = " {:.3f}") -> str:
    score = rec.score
    return form.format(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else ""


def known_reason(before: Record, path: str) -> str:
    """The xfail reason of a known failure: the baseline's verdict, score and detail."""
    detail = (before.detail or before.error or "").splitlines()[0:1]
    said = f": {detail[0][:300]}" if detail else ""
    return f"known failure: {before.status} in the baseline {path}{_score(before, ' (score {:.3f})')}{said}"


def fixed_reason(row: str, explainer: str | None, before: Record, path: str) -> str:
    """The XPASS reason of a test (its row and explainer) the baseline had failing that passes now."""
    who = f"{row} ({explainer})" if explainer else row
    return (
        f"{who} failed in the baseline {path} ({before.status}{_score(before)}) and passes now: "
        f"update the baseline (--xai-save-baseline on a run you trust)"
    )


def exit_code(gate: str, exitstatus: int, failures: Iterable[tuple[str, str]], known: Iterable[str]) -> int:
    """The run's exit code.  ``failures``: ``(node id, phase)`` of every failed report; ``known``:
    node ids of known failures.  Under ``regression`` a run that failed only by known failures
    (in setup or call: a teardown error is never known) exits 0; any other status stands."""
    failed = list(failures)
    if gate != "regression" or exitstatus != TESTS_FAILED or not failed:
        return exitstatus
    known_ids = set(known)
    return OK if all(phase != "teardown" and nodeid in known_ids for nodeid, phase in failed) else TESTS_FAILED
