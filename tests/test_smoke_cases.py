"""``register_case(..., smoke=True)``: a user's case (from a conftest or an entry-point family) in the
fast gate ``-m xai_smoke`` beside the built-in families' smoke tests."""

from __future__ import annotations

import os

import pytest

from pytest_xai import cases

QUIET = ("-p", "no:randomly", "-p", "no:cacheprovider", "--strict-markers")
REF = "--xai-explainer=pytest_xai.explainers:exact_shapley"
CONFTEST = """
import numpy as np
import pytest_xai


def f(X):
    X = np.asarray(X, dtype=float)
    return 3 * X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3]


def _case(seed):
    rng = np.random.default_rng(seed)
    return pytest_xai.make_case(rng.normal(size=(12, 4)), predict=f, background=rng.normal(size=(12, 4)))


@pytest_xai.register_case(checks=["faithfulness", "determinism"], smoke=True)
def all_in(seed):
    return _case(seed)


@pytest_xai.register_case(checks=["faithfulness", "determinism"], smoke=["determinism"])
def one_in(seed):
    return _case(seed)


@pytest_xai.register_case(checks=["faithfulness"])
def left_out(seed):
    return _case(seed)
"""


def test_smoke_cases_join_the_fast_gate_and_run(pytester):
    pytester.makeconftest(CONFTEST)
    listed = pytester.runpytest(*QUIET, "--collect-only", "-q", "-m", "xai_smoke", REF)
    ids = {line.split("::")[1] for line in listed.stdout.lines if "xai_suite.py::" in line}
    user = {
        i for i in ids if "-exact_shapley]" in i and i.split("[")[1].split("-")[0] in ("all_in", "one_in", "left_out")
    }
    assert user == {
        "faithfulness[all_in-exact_shapley]",
        "gt_shapley[all_in-exact_shapley]",  # declared with faithfulness by default: a check of the case
        "determinism[all_in-exact_shapley]",
        "determinism[one_in-exact_shapley]",
    }
    built_in = [f for f in cases.families().values() if f.module in cases.MODULES]
    assert len(ids) == len(built_in) + 4  # the built-in gate is unchanged: one test per family
    ran = pytester.runpytest(*QUIET, "-m", "xai_smoke", "-k", "all_in or one_in", REF)
    ran.assert_outcomes(passed=3, skipped=1)  # gt_shapley: exact_shapley does not claim Shapley values


def test_bad_smoke_values_are_refused():
    for bad in (["symmetry"], "faithfulness"):
        with pytest.raises(ValueError, match="give True .* or a list of its checks"):
            cases.register(checks=["faithfulness"], smoke=bad, name="bad_smoke")(lambda seed: None)
    assert "bad_smoke" not in cases.names()


def test_entry_point_family_can_put_a_case_in_the_smoke_gate(pytester, monkeypatch):
    site = pytester.mkdir("site")
    (site / "thirdparty_smoke.py").write_text(CONFTEST.replace("all_in", "shipped_in"))
    info = site / "thirdparty_smoke-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-smoke\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest_xai.families]\nshipped = thirdparty_smoke\n")
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    result = pytester.runpytest_subprocess(*QUIET, "-m", "xai_smoke", "-k", "shipped_in", REF)
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*determinism?shipped_in?*PASS*"])
