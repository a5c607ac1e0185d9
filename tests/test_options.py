"""Option validation (pytest_xai.options) and the strict JSON of the report (issue 16)."""

from __future__ import annotations

import json
import math
import os
import re
import stat

import numpy as np
import pytest

from pytest_xai import options
from pytest_xai.options import OptionError
from pytest_xai.reports import report

KNOWN = {"symmetry": {"rtol": 0.05}, "ranking": {"max_rank": 0.0}, "gt_shapley": {"min_corr": 0.9}}


def strict_loads(text: str):
    """json.loads that refuses NaN/Infinity, as strict parsers (JavaScript, jq, Go) do."""

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("ranking.max_rank=inf", None),
        ("symmetry.rtol=0", None),
        ("symmetry.rtol=inf", "inf is only allowed for max_* thresholds"),
        ("gt_shapley.min_corr=inf", "needs 0 (the loosest lower bound)"),
        ("symmetry.rtol=nan", "nan is not a threshold"),
        ("ranking.max_rank=-1", "-1 is negative"),
        ("ranking.max_rank=-inf", "is negative"),
        ("symetry.rtol=1", "did you mean 'symmetry'"),
        ("symmetry.tol=1", "has no threshold 'tol'"),
        ("symmetry.rtol=x", "'x' is not a number"),
        ("symmetry", "expected CHECK.PARAM=VALUE"),
    ],
)
def test_thresholds(entry, message):
    if message is None:
        ((check, params),) = options.parse_thresholds([entry], "--xai-threshold", KNOWN).items()
        assert entry.startswith(check) and len(params) == 1
        return
    with pytest.raises(OptionError, match=re.escape(message)) as raised:
        options.parse_thresholds([entry], "--xai-threshold", KNOWN)
    assert f"--xai-threshold {entry!r}" in str(raised.value)


def test_timeout_and_seed():
    assert options.check_timeout("120.0", "ini xai_timeout") == 120.0 and options.check_timeout(0) == 0
    for bad, message in (
        ("inf", "give 0 to run explainers in-process"),
        (float("nan"), "must be a finite"),
        (-1.0, "must be a finite"),
        ("soon", "not a number"),
    ):
        with pytest.raises(OptionError, match=message):
            options.check_timeout(bad)
    assert options.check_seed("7", "ini xai_seed") == 7 and options.check_seed(0) == 0
    for bad in (-1, 2**31, "1.5", "x", True):
        with pytest.raises(OptionError, match=r"--xai-seed=.*give an integer from 0 to 2147483647"):
            options.check_seed(bad)


def test_report_path_and_data_dir(tmp_path):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert options.check_report_path(tmp_path / "new" / "sub" / "r.json") is not None  # creatable
    assert options.check_report_path(None) is None and options.check_data_dir(None) is None
    with pytest.raises(OptionError, match="is a directory; give a file name"):
        options.check_report_path(tmp_path)
    with pytest.raises(OptionError, match="file.txt is a file, not a directory"):
        options.check_report_path(a_file / "sub" / "r.json")
    assert options.check_data_dir(tmp_path) == str(tmp_path)
    with pytest.raises(OptionError, match="no such directory"):
        options.check_data_dir(tmp_path / "dat")
    with pytest.raises(OptionError, match="is a file, not a directory"):
        options.check_data_dir(a_file)


def test_report_json_is_strict_for_any_value(tmp_path):
    doc = {
        "threshold": math.inf,
        "scores": [math.nan, -math.inf, np.float64("nan"), np.float32(0.5)],
        "array": np.array([1.0, np.inf]),
        "count": np.int64(3),
        "flag": np.bool_(True),
        (1, 2): {3},
        1.5: "float key",
        math.inf: "inf key",
        "path": tmp_path,
        "nested": {"deep": [math.inf]},
    }
    doc["self"] = doc
    path = tmp_path / "out" / "r.json"
    report.write_json(path, doc)
    back = strict_loads(path.read_text())
    assert back["threshold"] == "inf" and back["scores"] == ["nan", "-inf", "nan", 0.5]
    assert back["array"] == [1.0, "inf"] and back["count"] == 3 and back["flag"] is True
    assert back["[1, 2]"] == [3] and back["1.5"] == "float key" and back["inf"] == "inf key"
    assert back["self"] == "<circular reference>" and float(back["nested"]["deep"][0]) == math.inf
    json.dumps(report.jsonable(doc), allow_nan=False)
    assert os.listdir(path.parent) == ["r.json"]


def test_report_and_cache_files_get_ordinary_permissions(tmp_path):
    from pytest_xai.cache import Cache

    previous = os.umask(0o022)
    try:
        report.write_json(tmp_path / "r.json", {"a": 1})
        Cache(tmp_path / "cache").arrays("demo", {}, lambda: {"x": np.zeros(2)})
    finally:
        os.umask(previous)
    (entry,) = (tmp_path / "cache").glob("demo-*.npz")
    for path in (tmp_path / "r.json", entry):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
