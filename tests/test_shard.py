"""``--xai-shard=K/N``: deterministic shards that keep each (case, explainer) whole, the same with or
without a cost cache and under ``-n 2``; ``merge`` refuses a set of shards that misses a test; and
pytest-split's ``--splits`` still partitions the run (the costliest-first reordering stands aside)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from pytest_xai.options import OptionError
from pytest_xai.reports import shard

REF = "pytest_xai.explainers"
SPECS = (f"--xai-explainer={REF}:exact_shapley", f"--xai-explainer={REF}:zoo_zeros")
SELECT = ("-k", "cough_and_fever or a_and_b_or_c or counterexample_dummy_axiom or gaussian_linear_rho50")
QUIET = ("-p", "no:randomly", "-n", "2")
TIMING = ("seconds", "cpu_seconds", "duration", "cached")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_xai", *args], capture_output=True, text=True, check=False)


def _results(path) -> dict[str, dict]:
    return {
        r["nodeid"]: {k: v for k, v in r.items() if k not in TIMING} for r in json.loads(path.read_text())["results"]
    }


def test_parse_and_assign():
    assert shard.parse("2/3") == (2, 3)
    for bad in ("0/2", "3/2", "1", "a/b", "1/0"):
        with pytest.raises(OptionError, match="give K/N with 1 <= K <= N"):
            shard.parse(bad)
    weights = {"a": 5.0, "b": 3.0, "c": 3.0, "d": 1.0}
    assert shard.assign(weights, 2) == {"a": 1, "b": 2, "c": 2, "d": 1}  # loads 6 and 6
    assert shard.assign(dict(reversed(weights.items())), 2) == shard.assign(weights, 2)  # order-free
    assert set(shard.assign(weights, 3).values()) == {1, 2, 3}


def _costs(pytester, reverse: bool) -> None:
    """A cost cache that puts the groups costliest-first in collection order, or reversed."""
    path = pytester.path / ".pytest_cache" / "v" / "xai" / "suite_costs"
    known = json.loads(path.read_text())
    ranked = sorted(known, reverse=reverse)
    path.write_text(json.dumps({pair: float(i + 1) for i, pair in enumerate(ranked)}))


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> dict[str, dict]:
    """The unsharded run under ``-n 2`` that the partitions are compared with, run once for the
    module (as ``pytester.runpytest_subprocess`` runs it); its folder keeps the cost cache it wrote."""
    pytest.importorskip("xdist")
    root = tmp_path_factory.mktemp("whole")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, "HOME": str(root)}
    command = [sys.executable, "-m", "pytest", *QUIET, *SPECS, *SELECT, "--xai-report=whole.json"]
    subprocess.run(command, cwd=root, env=env, capture_output=True, check=False)
    shutil.copytree(root / ".pytest_cache", root / "written")  # as the run left it, before any test edits
    return {"results": _results(root / "whole.json"), "cache": root / "written"}


def _after_the_whole_run(pytester, whole) -> dict[str, dict]:
    """The whole run's results, its pytest cache (the cost cache) copied into this test's folder."""
    shutil.copytree(whole["cache"], pytester.path / ".pytest_cache")
    return whole["results"]


def test_shards_under_xdist_merge_into_the_unsharded_run_with_and_without_a_cache(pytester, whole):
    expected = _after_the_whole_run(pytester, whole)
    assert len(expected) >= 10
    members = {}
    for cache in ("cache", "no cache"):
        parts = []
        for k in (1, 2):
            if cache == "cache":
                _costs(pytester, reverse=k == 2)  # a different cache for each job, as on two CI machines
            parts.append(pytester.path / f"shard{k}-{cache.replace(' ', '')}.json")
            extra = ("-p", "no:cacheprovider") if cache == "no cache" else ()
            pytester.runpytest_subprocess(
                *QUIET, *extra, *SPECS, *SELECT, f"--xai-shard={k}/2", f"--xai-report={parts[-1]}"
            )
            doc = json.loads(parts[-1].read_text())
            assert {key: doc["shard"][key] for key in ("k", "n", "collected")} == {
                "k": k,
                "n": 2,
                "collected": len(expected),
            }
            assert doc["shard"]["assigned"] == len(doc["results"])  # under -n 2: the workers' count
            assert doc["shard"]["selection"].startswith("sha256:") and doc["shard"]["tests"].startswith("sha256:")
            members[cache, k] = set(_results(parts[-1]))
            cases = {(r["case"], r["explainer"]) for r in doc["results"]}
            for r in expected.values():  # each (case, explainer) group whole in one shard
                assert ((r["case"], r["explainer"]) in cases) == (r["nodeid"] in members[cache, k])
        merged = pytester.path / f"all-{cache.replace(' ', '')}.json"
        done = _cli("merge", *map(str, parts), "-o", str(merged))
        assert done.returncode == 0, done.stderr
        assert _results(merged) == expected
        assert members[cache, 1] and members[cache, 2]
    assert members["cache", 1] == members["no cache", 1] and members["cache", 2] == members["no cache", 2]
    # merge refuses a missing shard, in one line
    refused = _cli("merge", str(pytester.path / "shard1-cache.json"), "-o", str(pytester.path / "x.json"))
    assert refused.returncode == 2
    assert refused.stderr.strip().count("\n") == 0 and "shard 2/2 missing" in refused.stderr, refused.stderr
    # and a shard that lost tests (a job stopped early) even when every shard is there
    doc = json.loads((pytester.path / "shard2-cache.json").read_text())
    doc["results"] = doc["results"][1:]
    (pytester.path / "cut.json").write_text(json.dumps(doc))
    refused = _cli(
        "merge",
        str(pytester.path / "shard1-cache.json"),
        str(pytester.path / "cut.json"),
        "-o",
        str(pytester.path / "x.json"),
    )
    assert refused.returncode == 2 and "1 ran in no shard" in refused.stderr, refused.stderr


def test_pytest_split_still_partitions_under_xdist_with_a_changing_cost_cache(pytester, whole):
    """pytest-split splits the order it is given: the costliest-first reordering, which reads the
    cost cache, stands aside (without that, shards overlapped and dropped tests)."""
    pytest.importorskip("pytest_split")
    expected = _after_the_whole_run(pytester, whole)
    seen: list[str] = []
    for group in (1, 2):
        _costs(pytester, reverse=group == 2)
        part = pytester.path / f"split{group}.json"
        pytester.runpytest_subprocess(
            *QUIET, *SPECS, *SELECT, "--splits", "2", "--group", str(group), f"--xai-report={part}"
        )
        seen += list(_results(part))
    assert sorted(seen) == sorted(expected)  # every test once: no overlap, none dropped


def test_shard_and_splits_together_are_a_usage_error(pytester):
    pytest.importorskip("pytest_split")
    result = pytester.runpytest(
        "-p", "no:randomly", "--collect-only", *SPECS, "--xai-shard=1/2", "--splits", "2", "--group", "1"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--xai-shard and pytest-split's --splits both split the run: give one of them*"])


def test_shards_are_balanced_by_the_baselines_seconds(pytester):
    """With --xai-baseline, a group weighs the seconds the (committed) baseline recorded: one heavy
    group fills shard 1 alone; without the baseline each test weighs 1."""
    base = pytester.path / "baseline.json"
    args = ("-p", "no:randomly", "-p", "no:cacheprovider", *SPECS, *SELECT)
    pytester.runpytest(*args, f"--xai-save-baseline={base}")
    doc = json.loads(base.read_text())
    heavy = "symmetry[cough_and_fever]"
    for r in doc["results"]:
        r["duration"] = 100.0 if r["row"] == heavy and r["explainer"] == "exact_shapley" else 0.1
    base.write_text(json.dumps(doc))

    def shard_one(*extra: str) -> set[str]:
        result = pytester.runpytest(*args, "--collect-only", "-q", "--xai-shard=1/2", *extra)
        return {line.split("::")[1] for line in result.stdout.lines if "xai_suite.py::" in line}

    assert shard_one(f"--xai-baseline={base}") == {"symmetry[cough_and_fever-exact_shapley]"}
    by_count = shard_one()
    assert len(by_count) > 1  # by count, shard 1 holds several groups


@pytest.mark.parametrize("given", ["1/99999999999999999999", "99999999999999999999/99999999999999999999", "1/1001"])
def test_a_shard_count_of_any_size_is_a_usage_error(pytester, given):
    """Issue 41: ``--xai-shard=1/99999999999999999999`` was an INTERNALERROR (OverflowError sizing the
    shards' loads): the bounds are checked as integers of any size, N at most ``shard.MAX_SHARDS``."""
    with pytest.raises(OptionError, match=r"1 <= K <= N <= 1000"):
        shard.parse(given)
    result = pytester.runpytest(
        "-p", "no:randomly", "-p", "no:cacheprovider", "--collect-only", *SPECS, *SELECT, f"--xai-shard={given}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([f"*--xai-shard='{given}': give K/N with 1 <= K <= N <= 1000*"])


@pytest.mark.parametrize("given", ["1_0/20", "+1/2", "1/ 2", "\u0661/\u0662", "1/2/3", "01/2x"])
def test_a_shard_is_ascii_digits_only(given):
    """``int()`` reads ``1_0``, ``+1``, `` 2`` and Arabic-Indic digits: none is K/N as written."""
    with pytest.raises(OptionError, match="give K/N"):
        shard.parse(given)
