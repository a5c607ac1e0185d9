"""Cost of one explainer call through the engine, against a direct in-process call and against the
fork-per-call path the engine replaced, on a millisecond explainer (exact Shapley on
cough_and_fever).  Read the ratios of the means in the benchmark table."""

import os
import pickle

import pytest

from pytest_xai import cases
from pytest_xai.cache import Cache
from pytest_xai.engine import contract
from pytest_xai.engine.isolate import Limits
from pytest_xai.engine.runner import Runner


def _fork_per_call(fn):
    """The engine before: fork this process for each call and unpickle what the child sends."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            data = memoryview(pickle.dumps(fn()))
            while data:
                data = data[os.write(write_fd, data) :]
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 20):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return pickle.loads(b"".join(chunks))


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    cache = Cache(tmp_path_factory.mktemp("cache"))
    case = cases.get("cough_and_fever", cache=cache)
    explainer = contract.load("pytest_xai.explainers:exact_shapley")
    runner = Runner(seed=0, limits=Limits(cpu=120.0, wall=1200.0), cache=cache, data_dir=None)
    assert runner._call(explainer, case, seed=0).status == "ok"  # the worker is up and has the case
    yield case, explainer, runner
    runner.close()


@pytest.mark.benchmark(group="one explainer call: exact_shapley on cough_and_fever")
@pytest.mark.parametrize("path", ["in-process", "worker process (engine)", "fork per call (before)"])
def test_engine_overhead_per_call(benchmark, setting, path):
    case, explainer, runner = setting
    direct = lambda: contract.run(explainer, case, seed=0)
    calls = {
        "in-process": direct,
        "worker process (engine)": lambda: runner._call(explainer, case, seed=0).explanation,
        "fork per call (before)": lambda: _fork_per_call(direct),
    }
    explanation = benchmark.pedantic(calls[path], rounds=40, warmup_rounds=3)
    assert explanation.attributions.shape == case.inputs.shape
