"""The fast gate (``-m xai_smoke``) against the full suite, warm cache, ``-n 2``, for exact_shapley.

Both runs are pytest in a subprocess, as CI runs it; the ratio goes to ``extra_info``.  Nothing here
asserts a wall-clock time (docs/speed.md keeps the measured figures).
"""

import os
import subprocess
import sys
import time

import pytest

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
ARGS = [
    sys.executable,
    "-m",
    "pytest",
    "--xai-explainer=pytest_xai.explainers:exact_shapley",
    "-q",
    "-n",
    "2",
    "-p",
    "no:randomly",
]
TIMES: dict[str, float] = {}


def _run(cwd, *extra):
    return subprocess.run(ARGS + list(extra), cwd=cwd, env=ENV, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A directory whose pytest cache holds every model the suite trains."""
    pytest.importorskip("xdist")
    cwd = tmp_path_factory.mktemp("smoke")
    _run(cwd)
    return cwd


@pytest.mark.benchmark(group="smoke gate vs full suite (warm, -n 2, exact_shapley)")
@pytest.mark.parametrize("selection", ["smoke", "full"])
def test_smoke_gate_against_full_suite(benchmark, warm, selection):
    extra = ("-m", "xai_smoke") if selection == "smoke" else ()

    def once():
        start = time.perf_counter()
        result = _run(warm, *extra)
        TIMES[selection] = time.perf_counter() - start
        return result

    result = benchmark.pedantic(once, rounds=1, warmup_rounds=0)
    assert result.returncode in (0, 1), result.stdout[-2000:]  # 1: exact_shapley's expected FAILs
    tail = result.stdout.strip().splitlines()[-1]
    benchmark.extra_info.update(seconds=TIMES[selection], summary=tail)
    if len(TIMES) == 2:
        benchmark.extra_info["full_over_smoke"] = TIMES["full"] / TIMES["smoke"]
        ratio = TIMES["full"] / TIMES["smoke"]
        print(f"\nsmoke {TIMES['smoke']:.1f} s, full {TIMES['full']:.1f} s, ratio {ratio:.1f}x")
