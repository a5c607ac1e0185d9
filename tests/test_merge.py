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
    summary = {
        e: {k: v for k, v in s["overall"].items() if k not in ("mean_seconds", "mean_cpu_seconds")}
        for e, s in doc["summary"].items()
    }
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


# ------------------------------------------------------------------ issue 41: shards of one run

SHARD_SPECS = (f"--xai-explainer={REF}:exact_shapley", f"--xai-explainer={REF}:zoo_zeros")
SELECTION = "cough_and_fever or a_and_b_or_c or counterexample_dummy_axiom"
OTHER = "cough_and_fever or a_and_b_or_c"


def _shard(pytester, k: int, expression: str, name: str, *extra: str):
    path = pytester.path / name
    pytester.runpytest(
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        *SHARD_SPECS,
        "-k",
        expression,
        f"--xai-shard={k}/2",
        f"--xai-report={path}",
        *extra,
    )
    return path


def test_merge_refuses_shards_of_other_selections_and_a_shard_that_lost_a_result(pytester):
    """Before: shards run with different ``-k`` merged (8 of 12 results, exit 0), and so did a shard
    with one result removed and ``collected`` lowered by one.  Each shard report now carries digests
    of the tests its run collected, of the options that change verdicts and of its own tests."""
    one, two = _shard(pytester, 1, SELECTION, "one.json"), _shard(pytester, 2, SELECTION, "two.json")
    other = _shard(pytester, 2, OTHER, "other.json")
    good = _cli("merge", str(one), str(two), "-o", str(pytester.path / "all.json"))
    assert good.returncode == 0, good.stderr
    record = json.loads(one.read_text())["shard"]
    assert set(record) >= {"k", "n", "collected", "assigned", "selection", "options", "tests"}
    assert record["assigned"] == len(json.loads(one.read_text())["results"])

    refused = _cli("merge", str(one), str(other), "-o", str(pytester.path / "x.json"))
    assert refused.returncode == 2 and not (pytester.path / "x.json").exists()
    assert f"{one} and {other} were run on different selections of tests" in refused.stderr, refused.stderr
    assert refused.stderr.count("\n") == 1

    doc = json.loads(two.read_text())
    doc["results"] = doc["results"][1:]
    doc["shard"]["collected"] -= 1
    cut = pytester.path / "cut.json"
    cut.write_text(json.dumps(doc))
    refused = _cli("merge", str(one), str(cut), "-o", str(pytester.path / "x.json"))
    assert refused.returncode == 2 and not (pytester.path / "x.json").exists()
    assert f"{cut}: its {len(doc['results'])} results are not the {len(doc['results']) + 1} tests" in refused.stderr

    doc = json.loads(two.read_text())
    doc["results"][0]["row"] = "symmetry[elsewhere]"  # as many results, one of them another test's
    (pytester.path / "swapped.json").write_text(json.dumps(doc))
    refused = _cli("merge", str(one), str(pytester.path / "swapped.json"), "-o", str(pytester.path / "x.json"))
    assert refused.returncode == 2 and "are not the" in refused.stderr, refused.stderr


def test_merge_refuses_shards_run_with_other_verdict_options(pytester):
    """A shard run with another ``--xai-timeout`` (or explainer list, gate, tolerance) comes from
    another run: refused unless ``--allow-mismatch``, which records it."""
    one = _shard(pytester, 1, SELECTION, "one.json")
    two = _shard(pytester, 2, SELECTION, "two.json", "--xai-timeout=60")
    refused = _cli("merge", str(one), str(two), "-o", str(pytester.path / "x.json"))
    assert refused.returncode == 2 and "options that change verdicts differ" in refused.stderr, refused.stderr
    forced = _cli("merge", str(one), str(two), "-o", str(pytester.path / "x.json"), "--allow-mismatch")
    assert forced.returncode == 0, forced.stderr


def _limited(*args: str) -> subprocess.CompletedProcess:
    """``merge`` with 2 GB of memory and 60 s: before, a FIFO hung it and /dev/zero grew it without end."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))

    try:
        return subprocess.run(
            [sys.executable, "-m", "pytest_xai", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            preexec_fn=limit,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"python -m pytest_xai {' '.join(args)} still running after 60 s")


def test_merge_and_html_read_only_regular_files_of_a_bounded_size(tmp_path):
    import os

    from pytest_xai.reports import files

    fifo, big = tmp_path / "fifo", tmp_path / "big.json"
    os.mkfifo(fifo)
    for command in (["merge", str(fifo), "-o", str(tmp_path / "x.json")], ["html", str(fifo), "-o", "x.html"]):
        done = _limited(*command)
        assert done.returncode == 2 and f"{fifo}: not a regular file" in done.stderr, done.stderr
    with open(big, "wb") as fh:  # sparse: no disk spent
        fh.truncate(files.MAX_REPORT_BYTES + 1)
    done = _limited("merge", str(big), "-o", str(tmp_path / "x.json"))
    assert done.returncode == 2 and f"{big}: larger than" in done.stderr, done.stderr
    if os.geteuid() == 0:  # a twin of /dev/zero, never the machine's
        zero = tmp_path / "zero"
        try:
            os.mknod(zero, 0o20666, os.makedev(1, 5))
        except PermissionError:
            return
        done = _limited("merge", str(zero), "-o", str(tmp_path / "x.json"))
        assert done.returncode == 2 and f"{zero}: not a regular file" in done.stderr, done.stderr


def test_a_baseline_that_is_a_fifo_is_refused_not_waited_for(tmp_path):
    """``--xai-baseline=FIFO`` waited at configure for a writer that never came."""
    import os
    import threading

    from pytest_xai.reports import baseline

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    box: dict = {}

    def load() -> None:
        try:
            baseline.load(fifo)
        except baseline.BaselineError as exc:
            box["error"] = str(exc)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "baseline.load waited for a writer"
    assert box["error"].startswith(f"--xai-baseline={fifo}: not a regular file")


@pytest.mark.parametrize(
    ("shard", "field"),
    [
        ({"k": 1, "n": 10**12, "collected": 1}, "shard.n: expected an integer from 1 to 1000"),
        ({"k": "1", "n": 2}, "shard.k: expected an integer"),
        ({"k": 1, "n": 2, "selection": 5}, "shard.selection: expected a string"),
    ],
)
def test_merge_refuses_a_shard_record_of_the_wrong_type_or_size(tmp_path, shard, field):
    """A shard count of 10**12 in a report made ``merge`` count its missing shards one by one."""
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"schema": "pytest-xai/report", "version": 1, "shard": shard, "results": []}))
    done = _limited("merge", str(path), "-o", str(tmp_path / "x.json"))
    assert done.returncode == 2 and f"{path}: {field}" in done.stderr, done.stderr
