"""Progress of long explainer calls: a line in the terminal, so that a long run is not silent.

A call still running after ``--xai-progress`` seconds (default 5) gets a line naming its explainer
and case, with the seconds so far and the CPU seconds its worker has used against the limit; the
next line comes when its time has doubled, so even a call of minutes writes a handful.  Written
through pytest's terminal reporter, only where someone watches: a terminal, without ``-q``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_xai.engine.isolate import Watch

#: Seconds a call runs before its first line (``--xai-progress``).
AFTER = 5.0


def watch(config: pytest.Config, after: float, what: str, limit: float) -> Watch | None:
    """What follows a call on ``what`` (``"explainer on case"``) whose CPU-seconds limit is ``limit``;
    None when no line would be seen: ``after`` is 0, the output is no terminal, or ``-q``."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if not after or reporter is None or not reporter.isatty or config.get_verbosity() < 0:
        return None
    due = after

    def tell(seconds: float, cpu: float | None) -> None:
        nonlocal due
        if seconds < due:
            return
        due = 2 * seconds
        spend = "loading the explainer and building the case" if cpu is None else f"{cpu:.1f} CPU s of {limit:g}"
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.write_line(f"xai: {what}: {seconds:.1f} s so far, {spend}")  # now, not with the test's output

    return tell
