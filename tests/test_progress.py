"""Long runs are not silent (issue 44): a call running past ``--xai-progress`` seconds says its case
and its spend in a terminal, and an explainer that overspent its budget is named in the summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.test_plugin import QUIET

EXPLAINERS = """
import time

import numpy as np

from pytest_xai.explainers.baselines import exact_shapley


def slow(inputs, predict, background, target):
    end = time.process_time() + 1.5  # busy, so its worker's CPU seconds grow
    while time.process_time() < end:
        pass
    return exact_shapley(inputs, predict, background, target)


def fast(inputs, predict, background, target):
    return exact_shapley(inputs, predict, background, target)


def spendthrift(inputs, predict):
    predict(np.repeat(inputs, 1000, axis=0))  # far over a budget of 1,000 model evaluations
    return np.zeros(inputs.shape)
"""
ONE = ("-k", "symmetry and cough_and_fever and not 10_90")


def _in_a_terminal(pytester, *args: str) -> str:
    """pytest's output when its standard output is a terminal (a pseudo-terminal), colours removed."""
    main, child = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *args], cwd=pytester.path, stdin=child, stdout=child, stderr=child
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(main)
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))


@pytest.mark.slow  # two runs of pytest in a pseudo-terminal
def test_a_long_call_says_its_case_and_spend_in_a_terminal_and_nothing_under_q(pytester):
    pytester.makepyfile(mine=EXPLAINERS)
    args = (*QUIET, *ONE, "--xai-explainer=mine:slow", "--xai-explainer=mine:fast", "--xai-progress=0.2")
    shown = _in_a_terminal(pytester, *args)
    lines = re.findall(r"xai: (\w+) on cough_and_fever: ([\d.]+) s so far, ([\d.]+) CPU s", shown)
    assert lines and {e for e, _, _ in lines} == {"slow"}, shown  # the fast call stays quiet
    assert "2 passed" in shown and "Captured stdout" not in shown  # written as it ran, not captured
    spend = [(float(seconds), float(cpu)) for _, seconds, cpu in lines]
    assert len(spend) >= 2 and spend[-1][0] > spend[0][0] and spend[-1][1] > spend[0][1], lines  # it grows
    assert "xai: slow on cough_and_fever" not in _in_a_terminal(pytester, *args, "-q")


def test_no_progress_lines_where_the_output_is_no_terminal(pytester):
    pytester.makepyfile(mine=EXPLAINERS)
    pytester.syspathinsert()
    result = pytester.runpytest(*QUIET, *ONE, "--xai-explainer=mine:slow", "--xai-progress=0.2")
    result.assert_outcomes(passed=1)
    assert " s so far" not in result.stdout.str() and "xai over budget" not in result.stdout.str()


def test_the_summary_names_an_explainer_over_its_budget(pytester):
    """The overspend was written only into each test's detail in the JSON report."""
    pytester.makepyfile(mine=EXPLAINERS)
    pytester.syspathinsert()
    args = (*QUIET, *ONE, "--xai-explainer=mine:spendthrift", "--xai-explainer=mine:fast", "--xai-budget=1000")
    result = pytester.runpytest(*args, "-q")
    result.stdout.re_match_lines(
        [
            r"=+ xai over budget =+",
            r"spendthrift on cough_and_fever: spent \d+k? model evaluations, over the budget of 1k",
        ]
    )
    assert "fast on cough_and_fever: spent" not in result.stdout.str()
