"""``python -m pytest_xai merge``: the reports of CI shards put back together."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.test_html import assert_self_contained

REF = "pytest_xai.explainers"
QUIET = ("-p", "no:randomly")  # the pytest cache kept: the shards load the models the first run trained
SPECS = (f"--xai-explainer={REF}:exact_shapley", f"--xai-explainer={REF}:random")
FOUR = "cough_and_fever or a_and_b_or_c or counterexample_dummy_axiom"
SHARDS = ("cough_and_fever", f"({FOUR}) and not cough_and_fever")  # -k slices: 2 + 2 of the 4 tests
TIMING = ("seconds", "cpu_seconds", "duration", "cached")  # measured, so they differ between runs


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_xai", *args], capture_output=True, text=True, check=False)


def _comparable(doc: dict) -> tuple:
    results = [{k: v for k, v in r.items() if k not in TIMING} for r in doc["results"]]
    summary = {e: {k: v for k, v in s["overall"].items() if k != "mean_seconds"} for e, s in doc["summary"].items()}
    return results, summary, doc["seed"], doc["versions"]


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "n2"])
def test_merge_of_two_shards_equals_the_unsharded_report(pytester, xdist):
    if xdist:
        pytest.importorskip("xdist")
    whole = pytester.path / "whole.json"  # the unsharded run, serial: shards under -n 2 must equal it too
    pytester.runpytest(*QUIET, *SPECS, "-k", FOUR, f"--xai-report={whole}").assert_outcomes(passed=4, failed=4)
    parts = []
    for k, expression in enumerate(SHARDS):  # with xdist, the first shard runs under -n 2 (one is enough)
        run, extra = (pytester.runpytest_subprocess, ("-n", "2")) if xdist and k == 0 else (pytester.runpytest, ())
        parts.append(pytester.path / f"shard{k}.json")
        html = (f"--xai-html={pytester.path / 'shard0.html'}",) if extra else ()  # --xai-html under -n 2 too
        run(*QUIET, *SPECS, "-k", expression, f"--xai-report={parts[-1]}", *extra, *html).assert_outcomes(
            passed=2, failed=2
        )
    merged, html = pytester.path / "all.json", pytester.path / "all.html"
    done = _cli("merge", *map(str, parts), "-o", str(merged), "--html", str(html))
    assert done.returncode == 0, done.stderr
    assert "merged 2 reports, 8 results" in done.stdout
    doc = json.loads(merged.read_text())
    assert _comparable(doc) == _comparable(json.loads(whole.read_text()))
    assert [s["results"] for s in doc["shards"]] == [4, 4] and doc["exitstatus"] == 1
    assert html.read_text().count("<tr data-family") == 8
    if xdist:
        shard_html = (pytester.path / "shard0.html").read_text()
        assert_self_contained(shard_html)
        assert shard_html.count("<tr data-family") == 4 and shard_html.count('<svg class="chart"') == 4


def test_merge_refuses_other_runs_and_overlapping_shards(pytester, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    pytester.runpytest(*QUIET, SPECS[0], "-k", SHARDS[0], f"--xai-report={a}").assert_outcomes(passed=2)
    pytester.runpytest(*QUIET, SPECS[0], "-k", SHARDS[1], "--xai-seed=1", f"--xai-report={b}").assert_outcomes(passed=2)
    refused = _cli("merge", str(a), str(b), "-o", str(tmp_path / "x.json"))
    assert refused.returncode == 2 and not (tmp_path / "x.json").exists()
    assert f"seed 0 in {a}, 1 in {b}" in refused.stderr and "--allow-mismatch" in refused.stderr
    forced = _cli("merge", str(a), str(b), "-o", str(tmp_path / "x.json"), "--allow-mismatch")
    assert forced.returncode == 0 and "warning: seed 0" in forced.stderr
    assert json.loads((tmp_path / "x.json").read_text())["merge_mismatches"] == [f"seed 0 in {a}, 1 in {b}"]
    overlap = _cli("merge", str(a), str(a), "-o", str(tmp_path / "y.json"))
    assert overlap.returncode == 2 and "the shards overlap" in overlap.stderr
    (tmp_path / "junk.json").write_text("[1, 2]")
    junk = _cli("merge", str(a), str(tmp_path / "junk.json"), "-o", str(tmp_path / "z.json"))
    assert junk.returncode == 2 and "not a pytest-xai JSON report" in junk.stderr
