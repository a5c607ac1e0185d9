"""Start-up cost of the plugin, suite run time, and the plugin's overhead per explainer call.

Every measurement runs pytest in a subprocess, as a user would.  Figures go to the benchmark table
and to ``extra_info``; nothing here asserts a wall-clock time.
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

PYTEST = [sys.executable, "-m", "pytest"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _run(args, cwd):
    return subprocess.run(PYTEST + args, cwd=cwd, env=ENV, capture_output=True, text=True, check=False)


@pytest.mark.benchmark(group="pytest --version")
@pytest.mark.parametrize("plugin", ["with pytest-xai", "without (-p no:xai)"])
def test_pytest_version_startup(benchmark, plugin, tmp_path):
    args = ["--version"] + ([] if plugin == "with pytest-xai" else ["-p", "no:xai"])
    result = benchmark.pedantic(_run, args=(args, tmp_path), rounds=10, warmup_rounds=1)
    assert result.returncode == 0


@pytest.mark.benchmark(group="suite, cold cache")
def test_exact_shapley_suite_cold_cache(benchmark, tmp_path):
    """The built-in tabular suite for exact_shapley from an empty cache (xgboost models trained)."""

    def cold():
        cache = tempfile.mkdtemp(dir=tmp_path)
        return _run(
            [
                "--xai-explainer=pytest_xai.explainers:exact_shapley",
                "-o",
                f"cache_dir={cache}",
                "-q",
                "-m",
                "xai_symmetry or xai_ranking or xai_dummy",
            ],
            tmp_path,
        )

    result = benchmark.pedantic(cold, rounds=3)
    assert result.returncode == 0, result.stdout[-2000:]


@pytest.mark.benchmark(group="overhead per explainer call")
@pytest.mark.parametrize("timeout", ["120", "0"], ids=["forked child", "in-process"])
def test_plugin_overhead_shap_kernel(benchmark, timeout, tmp_path):
    """Overhead = sum of test durations minus explainer seconds, over explainer seconds (warm cache).

    The forked child (the default, needed to stop explainers that hang in C) costs a fork per call;
    ``--xai-timeout=0`` runs in-process.
    """
    report = tmp_path / "r.json"
    args = [
        "--xai-explainer=pytest_xai.explainers:shap_kernel",
        f"--xai-timeout={timeout}",
        f"--xai-report={report}",
        "-q",
        "-m",
        "xai_symmetry or xai_ranking or xai_dummy",
    ]
    _run(args, tmp_path)  # warm the cache
    benchmark.pedantic(_run, args=(args, tmp_path), rounds=3)
    results = json.loads(report.read_text())["results"]
    explainer = sum(r["seconds"] for r in results)
    total = sum(r["duration"] for r in results)
    benchmark.extra_info.update(
        explainer_seconds=explainer, test_seconds=total, overhead_ratio=(total - explainer) / explainer
    )
