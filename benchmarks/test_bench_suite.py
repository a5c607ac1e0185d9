"""The built-in suite end to end, as a user runs it: ``pytest --xai-explainer=...`` in a fresh process.

Each run is one subprocess, timed once (a suite run takes tens of seconds; more rounds would not make
a shared machine quieter, so compare the ratios of runs made side by side in this session):

- per reference explainer, cold (empty cache: every case built or trained) and warm (cache kept);
- for shap_kernel and exact_shapley, the same against the code before the budget of model
  evaluations, checked out from ``XAI_BENCH_BEFORE`` (a git revision, default ``e2e6d29``) into a
  temporary worktree;
- the warm suite of shap_kernel and exact_shapley on two xdist workers, as on a 2-core machine, now
  and before;
- shap_kernel cold on two xdist workers, now and before;
- ``-n 2`` against serial on a two-explainer run.

``extra_info`` holds each run's verdict counts (passed, failed, timeouts), so a faster run that
gave fewer verdicts shows.  Run with ``pytest benchmarks/test_bench_suite.py -p no:xdist``.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BEFORE = os.environ.get("XAI_BENCH_BEFORE", "e2e6d29")


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory):
    """``{"now": this checkout, "before": the old revision}`` (before: None outside a git clone)."""
    places = {"now": ROOT, "before": None}
    target = tmp_path_factory.mktemp("before") / "tree"
    made = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(target), BEFORE],
                          capture_output=True, text=True, check=False)
    if made.returncode == 0:
        places["before"] = target
    yield places
    if places["before"] is not None:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(target)], capture_output=True, check=False)


def run_suite(tree: Path, cache: Path, report: Path, *explainers: str, workers: int = 0) -> dict:
    """One suite run in ``tree`` with ``cache`` as pytest's cache dir; the report's verdict counts."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-o", f"cache_dir={cache}",
               f"--xai-report={report}", *(f"--xai-explainer=pytest_xai.explainers:{e}" for e in explainers)]
    if workers:
        command += ["-n", str(workers)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    records = json.loads(report.read_text())["results"]
    statuses = [r["status"] for r in records]
    return {"seconds": round(seconds, 1), **{s.lower(): statuses.count(s) for s in
                                             ("PASS", "FAIL", "ERROR", "TIMEOUT", "SKIP")}}


def _timed(benchmark, fn):
    out = {}
    benchmark.pedantic(lambda: out.update(fn()), rounds=1, iterations=1)
    benchmark.extra_info.update(out)
    return out


RUNS = [("now", e) for e in ("shap_kernel", "lime_tabular", "shap_permutation", "captum_kernel_shap", "exact_shapley")]
RUNS += [("before", e) for e in ("shap_kernel", "exact_shapley")]  # the old code's runs take minutes each
COLD: dict[tuple[str, str], tuple[Path, dict]] = {}  # (code, explainer) -> (warm cache, the cold run's counts)


def warm_cache(tree: Path, code: str, explainer: str, base: Path) -> tuple[Path, dict]:
    """A cache filled by one cold run of ``explainer`` (made once per session and reused)."""
    if (code, explainer) not in COLD:
        cache = base / f"cache-{code}-{explainer}"
        COLD[code, explainer] = cache, run_suite(tree, cache, base / f"cold-{code}-{explainer}.json", explainer)
    return COLD[code, explainer]


@pytest.mark.parametrize(("code", "explainer"), RUNS)
def test_suite_cold_then_warm(benchmark, checkouts, tmp_path_factory, code, explainer):
    """Cold run first (untimed here: its time is in extra_info), then the timed warm run, serially."""
    tree = checkouts[code]
    if tree is None:
        pytest.skip(f"no git worktree of {BEFORE} (not a git clone?)")
    benchmark.group = f"suite warm: {explainer}"
    cache, cold = warm_cache(tree, code, explainer, tmp_path_factory.getbasetemp())
    warm = _timed(benchmark, lambda: run_suite(tree, cache, tmp_path_factory.mktemp("r") / "warm.json", explainer))
    benchmark.extra_info.update({f"cold_{k}": v for k, v in cold.items()})
    assert warm["pass"] + warm["fail"] > 0


@pytest.mark.parametrize("code", ["now", "before"])
@pytest.mark.parametrize("explainer", ["shap_kernel", "exact_shapley"])
def test_suite_warm_on_two_workers(benchmark, checkouts, tmp_path_factory, explainer, code):
    """The warm suite as the README runs it on a 2-core machine: ``-n 2``."""
    tree = checkouts[code]
    if tree is None:
        pytest.skip(f"no git worktree of {BEFORE} (not a git clone?)")
    benchmark.group = f"suite warm: {explainer}"
    cache, _ = warm_cache(tree, code, explainer, tmp_path_factory.getbasetemp())
    warm = _timed(benchmark, lambda: run_suite(tree, cache, tmp_path_factory.mktemp("r") / "warm.json", explainer,
                                               workers=2))
    assert warm["pass"] + warm["fail"] > 0


@pytest.mark.parametrize("code", ["now", "before"])
def test_suite_cold_on_two_workers(benchmark, checkouts, tmp_path_factory, code):
    """shap_kernel from an empty cache on ``-n 2``: every case built or trained, as a first CI run."""
    tree = checkouts[code]
    if tree is None:
        pytest.skip(f"no git worktree of {BEFORE} (not a git clone?)")
    benchmark.group = "suite cold: shap_kernel, -n 2"
    base = tmp_path_factory.mktemp("cold")
    cold = _timed(benchmark, lambda: run_suite(tree, base / "cache", base / "cold.json", "shap_kernel", workers=2))
    assert cold["pass"] + cold["fail"] > 0


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "-n 2"])
def test_two_explainers_serial_against_xdist(benchmark, tmp_path_factory, workers):
    """shap_kernel and lime_tabular, warm, serially and on two xdist workers."""
    benchmark.group = "suite warm: shap_kernel + lime_tabular, serial vs -n 2"
    cache = tmp_path_factory.getbasetemp() / "two-explainers-cache"
    pair = ("shap_kernel", "lime_tabular")
    if not cache.exists():
        run_suite(ROOT, cache, cache.parent / "cold.json", *pair)
    _timed(benchmark, lambda: run_suite(ROOT, cache, tmp_path_factory.mktemp("r") / "r.json", *pair,
                                        workers=workers))
