"""The llm family end to end, as a user runs it (issue 40: the whole family in at most 60 s on 2 cores).

One ``pytest`` subprocess per run (:func:`phases.run_suite`), timed once: the four ``llm`` cases
with the main job's explainers (occlusion, Integrated Gradients, ArchDetect) and captum's three
LLM adapters (feature ablation, Shapley value sampling, layer IG), cold (an empty cache: the exact
values of every explained prompt enumerated, 2^12 coalitions each) and warm, on two xdist workers
and serially; the ratio serial / two workers is the speed-up.  Wall and CPU seconds of each run are
in ``extra_info``, with its verdict counts.  Run with ``pytest benchmarks/test_bench_llm.py -p no:xdist -s``.
"""

from pathlib import Path

import phases
import pytest

from pytest_xai.explainers import LLM_EXPLAINERS

ROOT = Path(__file__).resolve().parents[1]
EXPLAINERS = (
    "feature_occlusion",
    "integrated_gradients",
    "archdetect",
    *LLM_EXPLAINERS[:3],
)  # the main job's, captum's
SELECT = ["-m", "xai_llm or xai_transformer", "-k", "llm_copy or llm_recall or llm_trigger"]
RUNS: dict[str, dict] = {}


def run(tmp: Path, name: str, cache: Path, workers: int) -> dict:
    got, spent = phases.run_suite(str(ROOT), str(cache), str(tmp / f"{name}.json"), list(EXPLAINERS), workers, SELECT)
    RUNS[name] = {"wall": round(spent["total"], 1), "cpu": round(spent.get("total CPU", 0.0), 1), **got["counts"]}
    return RUNS[name]


@pytest.mark.parametrize(("name", "workers"), [("cold -n 2", 2), ("warm -n 2", 2), ("warm serial", 0)])
def test_the_llm_family(benchmark, tmp_path_factory, name, workers):
    cache = tmp_path_factory.getbasetemp() / "llm-cache"  # shared: the cold run fills it for the warm ones
    out = {}
    benchmark.pedantic(lambda: out.update(run(tmp_path_factory.getbasetemp(), name, cache, workers)), rounds=1)
    benchmark.extra_info.update(out)
    assert out["error"] == 0 and out["timeout"] == 0 and out["pass"] + out["fail"] >= 4 * 4 * 4
    if name == "warm serial":
        benchmark.extra_info["serial / -n 2"] = round(out["wall"] / RUNS["warm -n 2"]["wall"], 2)
    print(f"\n{name}: {out}")
