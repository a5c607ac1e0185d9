"""The built-in suite end to end, as a user runs it: ``pytest --xai-explainer=...`` in a fresh process.

Each run is one subprocess (:func:`phases.run_suite`: ``benchmarks/phases.py`` stamps its phases),
timed once (a suite run takes tens of seconds; more rounds would not make a shared machine quieter,
so compare the ratios of runs made side by side in this session):

- per reference explainer, cold (empty cache: every case built or trained) and warm (cache kept);
- for shap_kernel and exact_shapley, the same against the previous code, checked out from
  ``XAI_BENCH_BEFORE`` (a git revision, default ``b09cafd``, the main before issue 31) into a
  temporary worktree;
- the warm suite of shap_kernel and exact_shapley on two xdist workers, as on a 2-core machine, now
  and before;
- shap_kernel cold on two xdist workers, now and before;
- the fixed cost of the warm exact_shapley suite (the wall time less the explainer's own seconds),
  now against before, runs alternating, as a ratio, with each phase before and now;
- ``-n 2`` against serial on a warm two-explainer run (``XAI_BENCH_PAIR``, default
  ``shap_kernel,lime_tabular``), as a ratio.

``extra_info`` holds each run's verdict counts (passed, failed, timeouts), so a faster run that
gave fewer verdicts shows, and its phases (``phases``: wall and CPU seconds, see
``benchmarks/phases.py``).  Run with ``pytest benchmarks/test_bench_suite.py -p no:xdist -s``.
"""

import os
import subprocess
from pathlib import Path

import phases
import pytest

ROOT = Path(__file__).resolve().parents[1]
BEFORE = os.environ.get("XAI_BENCH_BEFORE", "b09cafd")
PAIR = tuple(os.environ.get("XAI_BENCH_PAIR", "shap_kernel,lime_tabular").split(","))
ROUNDS = 2  # warm runs of each side in the side-by-side comparisons, alternating


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory):
    """``{"now": this checkout, "before": the old revision}`` (before: None outside a git clone)."""
    places = {"now": ROOT, "before": None}
    target = tmp_path_factory.mktemp("before") / "tree"
    made = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(target), BEFORE],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode == 0:
        places["before"] = target
    yield places
    if places["before"] is not None:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(target)], capture_output=True, check=False
        )


def run_suite(tree: Path, cache: Path, report: Path, *explainers: str, workers: int = 0) -> dict:
    """One suite run in ``tree`` with ``cache`` as pytest's cache dir: its seconds, verdict counts and
    phases (``verdicts``, each test's status and score, is left out of ``extra_info``)."""
    got, spent = phases.run_suite(str(tree), str(cache), str(report), list(explainers), workers)
    return {"seconds": round(spent["total"], 1), **got["counts"], "phases": spent, "verdicts": got["verdicts"]}


def _timed(benchmark, fn):
    out = {}
    benchmark.pedantic(lambda: out.update(fn()), rounds=1, iterations=1)
    benchmark.extra_info.update({k: v for k, v in out.items() if k != "verdicts"})
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
    benchmark.extra_info.update({f"cold_{k}": v for k, v in cold.items() if k not in ("phases", "verdicts")})
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
    warm = _timed(
        benchmark, lambda: run_suite(tree, cache, tmp_path_factory.mktemp("r") / "warm.json", explainer, workers=2)
    )
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


def fixed_cost(run: dict) -> float:
    """Wall seconds of a serial run that are not the explainer's own (its replies' seconds)."""
    return run["phases"]["total"] - run["phases"]["explainer's own"]


def test_fixed_cost_against_before(benchmark, checkouts, tmp_path_factory):
    """The warm exact_shapley suite serially, before and now, ``ROUNDS`` runs each, alternating: the
    ratio of the fixed costs (medians; above 1: now is cheaper), each phase's median before and now,
    and the same status and score for every test."""
    if checkouts["before"] is None:
        pytest.skip(f"no git worktree of {BEFORE} (not a git clone?)")
    benchmark.group = "suite warm: exact_shapley, fixed cost before -> now"
    base = tmp_path_factory.getbasetemp()
    runs: dict[str, list[dict]] = {"before": [], "now": []}

    def compare() -> None:
        caches = {code: warm_cache(checkouts[code], code, "exact_shapley", base)[0] for code in runs}
        for _ in range(ROUNDS):
            for code, done in runs.items():
                done.append(
                    run_suite(checkouts[code], caches[code], tmp_path_factory.mktemp("r") / "w.json", "exact_shapley")
                )

    benchmark.pedantic(compare, rounds=1, iterations=1)
    medians = {code: phases.median_breakdown([r["phases"] for r in done]) for code, done in runs.items()}
    cost = {code: sorted(fixed_cost(r) for r in done)[len(done) // 2] for code, done in runs.items()}
    differ = [
        t
        for t in runs["now"][-1]["verdicts"].keys() | runs["before"][-1]["verdicts"].keys()
        if runs["now"][-1]["verdicts"].get(t) != runs["before"][-1]["verdicts"].get(t)
    ]
    benchmark.extra_info.update(
        {
            "fixed_cost_before": round(cost["before"], 2),
            "fixed_cost_now": round(cost["now"], 2),
            "ratio": round(cost["before"] / cost["now"], 2),
            "verdicts_differ": differ,
            "phases_before": medians["before"],
            "phases_now": medians["now"],
        }
    )
    print(
        f"\nexact_shapley warm, fixed cost {cost['before']:.1f} s before, {cost['now']:.1f} s now: "
        f"{cost['before'] / cost['now']:.2f}x"
    )
    print("\n".join(phases.table({f"{BEFORE} (median)": medians["before"], "now (median)": medians["now"]})))
    assert not differ, f"verdicts or scores changed: {differ[:10]}"


def test_two_explainers_xdist_over_serial(benchmark, tmp_path_factory):
    """The warm suite of two explainers (``XAI_BENCH_PAIR``), serially then on two xdist workers: the
    ratio of the wall times (``speedup``), each run's phases, and the same verdicts both ways."""
    benchmark.group = f"suite warm: {' + '.join(PAIR)}, -n 2 over serial"
    cache = tmp_path_factory.getbasetemp() / "pair-cache"
    if not cache.exists():
        run_suite(ROOT, cache, cache.parent / "pair-cold.json", *PAIR)
    done = {}

    def compare() -> None:
        for workers in (0, 2):
            done[workers] = run_suite(ROOT, cache, tmp_path_factory.mktemp("r") / "r.json", *PAIR, workers=workers)

    benchmark.pedantic(compare, rounds=1, iterations=1)
    speedup = done[0]["seconds"] / done[2]["seconds"]
    benchmark.extra_info.update(
        {
            "serial_seconds": done[0]["seconds"],
            "xdist_seconds": done[2]["seconds"],
            "speedup": round(speedup, 2),
            "phases_serial": done[0]["phases"],
            "phases_xdist": done[2]["phases"],
        }
    )
    print(
        f"\n{' + '.join(PAIR)} warm: serial {done[0]['seconds']:.1f} s, -n 2 {done[2]['seconds']:.1f} s, {speedup:.2f}x"
    )
    print("\n".join(phases.table({"serial": done[0]["phases"], "-n 2": done[2]["phases"]})))
    assert done[0]["verdicts"] == done[2]["verdicts"]
