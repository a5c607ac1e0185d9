"""Accuracy for a cost (``--xai-convergence``, issue 43 item 3): explainers at a ladder of budgets of
model evaluations, their error against exact Shapley values per evaluation spent."""

from __future__ import annotations

import json

import numpy as np
import pytest

REF = "pytest_xai.explainers"
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")


def test_the_error_tells_exact_values_from_degenerate_ones():
    """relative RMSE on a ladder case: exact enumeration over the case's background is within the
    background's own sampling error (its truth is over the Gaussian), every degenerate answer far off."""
    from pytest_xai import cases, convergence
    from pytest_xai.cache import Cache
    from pytest_xai.explainers.baselines import exact_shapley

    case = cases.get(convergence.CASES[0], seed=0, cache=Cache(None))
    exact = convergence.exact_values(case)
    found = exact_shapley(case.inputs, case.predict, case.background, case.target)
    rng = np.random.default_rng(0)
    degenerate = {
        "zeros": np.zeros_like(exact),
        "sign flipped": -found,
        "features swapped": found[:, ::-1],
        "offset": found + np.abs(exact).mean(),
        "the input itself": case.inputs,
        "noise of the values' size": found + rng.normal(0, exact.std(), exact.shape),
        "shrunk by half (a biased estimator)": 0.5 * found,
    }
    good = convergence.relative_rmse(found, exact)
    assert good < 0.05
    errors = {name: convergence.relative_rmse(values, exact) for name, values in degenerate.items()}
    assert errors["zeros"] == pytest.approx(1.0) and errors["sign flipped"] > 1.9
    assert min(errors.values()) > 10 * good, errors


def test_the_ladder_reports_error_against_evaluations_in_the_table_json_and_html(pytester):
    """One run: KernelSHAP's error falls as its budget grows, below its minimum a rung is skipped and
    the ladder stops where a larger budget buys nothing; exact_shapley and the seeded noise of
    ``random``, which take no budget, are one point each."""
    report, html = pytester.path / "r.json", pytester.path / "r.html"
    result = pytester.runpytest(
        *QUIET,
        *(f"--xai-explainer={REF}:{e}" for e in ("exact_shapley", "shap_kernel", "random")),
        "--xai-convergence",
        "-m",
        "xai_ladder",
        "-k",
        "gaussian_linear_rho50",
        f"--xai-report={report}",
        f"--xai-html={html}",
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*xai convergence: error against exact Shapley values for a cost*",
            "case*explainer*budget 1k*budget 3k*budget 10k*",
            "gaussian_linear_rho50*shap_kernel*-*-*@ 10k*@ 30k*",
        ]
    )
    ladders = {r["explainer"]: r["convergence"] for r in json.loads(report.read_text())["results"]}
    kernel = [rung for rung in ladders["shap_kernel"] if "error" in rung]
    assert [rung["budget"] for rung in ladders["shap_kernel"] if "skipped" in rung] == [1000, 3000]  # < 6k
    assert [rung["evaluations"] for rung in kernel] == sorted(rung["evaluations"] for rung in kernel)
    assert kernel[-1]["error"] < kernel[0]["error"] / 3 and all(rung["cpu_seconds"] > 0 for rung in kernel)
    assert len(kernel) < 5  # the ladder's 1M is never tried: 300k already enumerates every coalition
    (exact,), (noise,) = ladders["exact_shapley"], ladders["random"]
    assert exact["error"] < 0.05 and noise["error"] > 1 and exact["evaluations"] == 100 * 32 * 100
    page = html.read_text()
    assert "<h2>Score against seconds</h2>" not in page  # nothing was scored: no empty charts
    section = page.partition("<h2>Accuracy for a cost</h2>")[2].partition("<h2>")[0]
    assert section.count("<polyline") == 1 and section.count("<circle") == len(kernel) + 2  # one line, three series
    assert section.count('r="6"') == 2  # a one-point series is a ring, seen over a line's point it sits on
    assert "shap_kernel: error" in section and "random: error" in section and "exact_shapley: error" in section


def test_the_ladder_is_collected_with_the_option_only(pytester):
    def ids(*args: str) -> list[str]:
        result = pytester.runpytest(*QUIET, f"--xai-explainer={REF}:exact_shapley", "--collect-only", "-q", *args)
        return [line for line in result.stdout.lines if "ladder[" in line]

    assert ids() == []
    assert len(ids("--xai-convergence", "--xai-no-suite")) == 3
    assert len(ids("--xai-convergence", "-m", "xai_ladder")) == 3


def test_the_chart_draws_the_rungs_it_can_read_and_escapes_the_rest():
    """A report may come from anyone (``python -m pytest_xai html``): rungs that are no numbers are
    left out, an error of 0 sits on the chart's floor, names are escaped."""
    from pytest_xai.reports import htmlreport, report
    from pytest_xai.reports.record import Record

    rungs = [
        {"budget": 1000, "evaluations": 1000, "error": 0.5, "cpu_seconds": "<b>"},
        {"budget": "<i>", "evaluations": "<b>", "error": 0.1},
        {"evaluations": 10_000, "error": float("nan")},
        {"evaluations": -1, "error": 0.2},
        {"budget": 3000, "skipped": "<script>alert(1)</script>"},
        "not a rung",
        {"evaluations": 3000, "error": 0.0},
    ]
    rec = Record(nodeid="n", explainer="<e>", case="<c>", status="PASS", convergence=rungs)
    page = htmlreport.render(report.document([rec], options={}, seed=0, exitstatus=0))
    section = page.partition("<h2>Accuracy for a cost</h2>")[2].partition("<h2>")[0]
    assert section.count("<circle") == 2 and section.count("<polyline") == 1
    assert "<script>" not in section and "<b>" not in section and "&lt;e&gt;: error 0 at 3,000" in section
