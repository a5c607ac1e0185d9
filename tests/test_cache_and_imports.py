"""The cache rebuilds corrupt entries; the plugin imports nothing heavy."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

from pytest_xai import cases
from pytest_xai.cache import Cache, CacheWarning


def test_arrays_round_trip_and_corrupt_entry_is_rebuilt(tmp_path):
    cache = Cache(tmp_path)
    calls = []

    def build():
        calls.append(1)
        return {"x": np.arange(3.0)}

    assert cache.arrays("demo", {"n": 3}, build)["x"].tolist() == [0, 1, 2]
    assert cache.arrays("demo", {"n": 3}, build)["x"].tolist() == [0, 1, 2] and len(calls) == 1
    (entry,) = tmp_path.glob("demo-*.npz")
    entry.write_bytes(b"not an npz")
    with pytest.warns(CacheWarning, match="unreadable or invalid"):
        assert cache.arrays("demo", {"n": 3}, build)["x"].tolist() == [0, 1, 2]
    assert len(calls) == 2 and not list(tmp_path.glob("*.tmp*"))


def test_corrupt_xgboost_model_is_rebuilt_and_verified(tmp_path):
    pytest.importorskip("xgboost")
    cache = Cache(tmp_path)
    info = cases.info("cough_and_fever")
    info.build(info, seed=0, cache=cache)
    (entry,) = tmp_path.glob("cough_and_fever-*.json")
    entry.write_text('{"learner": "truncated')
    with pytest.warns(CacheWarning):
        case = info.build(info, seed=0, cache=cache)
    np.testing.assert_allclose(case.predict(case.inputs), [0, 0, 0, 80])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        info.build(info, seed=0, cache=cache)  # the rebuilt entry is trusted again


def test_plugin_import_is_light():
    code = (
        "import sys, pytest_xai.plugin; heavy = {'numpy', 'torch', 'shap', 'lime', 'xgboost', 'captum', "
        "'sklearn', 'matplotlib', 'chess'} & set(sys.modules); print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
