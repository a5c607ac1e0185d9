"""A user's own case and check, registered from a conftest.py or shipped by a package through the
``pytest_xai.families`` entry-point group, run by the suite like a built-in one: ids, table, JSON
and JUnit, serially and under ``-n 2``, with ``-W error`` clean; and the examples/own_model project."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import pytest_xai
from pytest_xai import cases

ROOT = Path(__file__).resolve().parents[1]
QUIET = ("-p", "no:randomly", "-p", "no:cacheprovider", "-W", "error", "--strict-markers")

CONFTEST = '''
import numpy as np
import pytest_xai


def f(X):
    X = np.asarray(X, dtype=float)
    return 3 * X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3]


@pytest_xai.register_check(thresholds={"max_share": 0.8})
def not_all_on_one(attributions, case, *, max_share):
    """No single feature carries more than max_share of the total |attribution|."""
    A = np.abs(np.asarray(getattr(attributions, "attributions", attributions)))
    share = float(A.sum(axis=0).max() / A.sum()) if A.sum() > 0 else 1.0  # nothing credited: all on none
    return pytest_xai.Score("not_all_on_one", 1 - share, share <= max_share, max_share, f"top share {share:.2f}")


@pytest_xai.register_case(family="mine", category="stability",
                          checks=["faithfulness", "completeness", "determinism", "not_all_on_one"])
def my_model(seed):
    """A function of four features."""
    rng = np.random.default_rng(seed)
    return pytest_xai.make_case(rng.normal(size=(12, 4)), predict=f, background=rng.normal(size=(12, 4)),
                                feature_names=["a", "b", "c", "d"])
'''

TEST_FILE = """
import pytest


@pytest.mark.xai_not_all_on_one(max_share=0.9)
@pytest.mark.xai_completeness
def test_mine(xai_explainer, xai_case, xai_explain, xai_check):
    case = xai_case("my_model")
    xai_check("not_all_on_one", xai_explain(xai_explainer, case), case)
"""

REF = "pytest_xai.explainers.baselines:exact_shapley"


def _exact_claiming(pytester):
    pytester.makepyfile(
        claiming="""
from pytest_xai.explainers.baselines import exact_shapley


def exact(inputs, predict, background, target):
    return exact_shapley(inputs, predict, background, target)


exact.completeness = "background"
"""
    )
    return "claiming:exact"


def test_conftest_case_and_check_run_like_built_in_ones(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_user=TEST_FILE)
    spec = _exact_claiming(pytester)
    report, junit = pytester.path / "r.json", pytester.path / "j.xml"
    result = pytester.runpytest_subprocess(
        *QUIET,
        ".",
        "-k",
        "my_model or test_mine",
        f"--xai-explainer={spec}",
        "--xai-explainer=pytest_xai.explainers.degenerate:zeros",
        f"--xai-report={report}",
        f"--junitxml={junit}",
        "-n",
        "2",
    )
    for line in (
        "completeness?my_model? *PASS*skip*",
        "faithfulness?my_model? *PASS*FAIL*",
        "gt_shapley?my_model? *PASS*skip*",  # declared with faithfulness by default; zeros claims no Shapley values
        "not_all_on_one?my_model? *PASS*FAIL*",
        "test_user.py::test_mine *PASS*FAIL*",
    ):
        result.stdout.fnmatch_lines(["*xai scores*", line])
    result.assert_outcomes(passed=7, failed=3, skipped=2)
    doc = json.loads(report.read_text())
    rows = {(r["row"], r["explainer"]): r for r in doc["results"]}
    mine = rows["completeness[my_model]", "exact"]
    assert mine["case"] == "my_model" and mine["family"] == "mine" and mine["category"] == "stability"
    assert mine["passed"] is True and rows["completeness[my_model]", "zeros"]["outcome"] == "skipped"
    assert rows["not_all_on_one[my_model]", "exact"]["passed"] is True
    assert rows["determinism[my_model]", "zeros"]["passed"] is True  # seeded zeros are reproducible
    assert rows["faithfulness[my_model]", "exact"]["reference"] == {  # calibrated on the model's own values
        "method": "exact",
        "evaluations": 12 * 2**4 * 12,
        "max_error": 0.0,
        "convention": "interventional",
    }
    names = {case.get("name") for case in ET.parse(junit).iter("testcase")}
    assert {"completeness[my_model-exact]", "not_all_on_one[my_model-zeros]", "test_mine[zeros]"} <= names
    props = [
        p.attrib
        for case in ET.parse(junit).iter("testcase")
        if case.get("name") == "faithfulness[my_model-exact]"
        for p in case.iter("property")
    ]
    assert {"name": "xai_family", "value": '"mine"'} in props  # JSON text


def test_an_explainer_of_the_baseline_game_is_judged_against_baseline_shapley_values(pytester):
    pytester.makeconftest(CONFTEST.replace("feature_names=", "baseline=np.zeros(4), feature_names="))
    pytester.makepyfile(
        occlusion="""
from pytest_xai.explainers.baselines import exact_shapley


def baseline_shapley(inputs, predict, baseline, target):
    return exact_shapley(inputs, predict, baseline[None], target)


baseline_shapley.reference = "baseline"
"""
    )
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *QUIET,
        "-k",
        "my_model and faithfulness",
        "--xai-explainer=occlusion:baseline_shapley",
        f"--xai-report={report}",
    )
    result.assert_outcomes(passed=1)
    row = json.loads(report.read_text())["results"][0]
    assert row["reference"]["convention"] == "baseline" and "(baseline)" in row["detail"]


def test_entry_point_family_is_found_in_plugin_and_workers(pytester):
    site = pytester.mkdir("site")
    (site / "thirdparty_family.py").write_text(CONFTEST.replace("my_model", "shipped_model"))
    info = site / "thirdparty_family-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-family\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest_xai.families]\nshipped = thirdparty_family\n")
    pytester.syspathinsert(site)
    os.environ["PYTHONPATH"] = f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    try:
        result = pytester.runpytest_subprocess(*QUIET, "-k", "shipped_model and faithfulness", f"--xai-explainer={REF}")
    finally:
        os.environ["PYTHONPATH"] = os.environ["PYTHONPATH"].split(os.pathsep, 1)[1]
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*faithfulness?shipped_model?*PASS*"])


def test_a_user_check_marker_without_explainer_is_registered(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_user=TEST_FILE)
    result = pytester.runpytest_subprocess(*QUIET)
    result.assert_outcomes(skipped=1)  # no explainer; no PytestUnknownMarkWarning under -W error


@pytest.mark.slow
def test_examples_project_gates_real_models(tmp_path):
    """examples/own_model: shap on scikit-learn gradient boosting, captum IG on a torch MLP, and a
    deliberately broken explainer that fails every new check (its xgboost case: docs/your-model.md)."""
    import subprocess
    import sys

    project = tmp_path / "own_model"
    shutil.copytree(ROOT / "examples" / "own_model", project)
    report = project / "report.json"
    selection = (
        "(diabetes_gbm and tree_shap) or (diabetes_gbm and broken and not randomisation) or "
        "(cancer_mlp and integrated_gradients)"
    )
    command = [
        sys.executable,
        "-m",
        "pytest",
        *QUIET,
        "-q",
        "-k",
        selection,  # serial: -n 2 is tested above
        "--xai-explainer=explainers.py:tree_shap",
        "--xai-explainer=explainers.py:broken",
        "--xai-explainer=explainers.py:integrated_gradients",
        f"--xai-report={report}",
    ]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    rows = {(r["row"], r["explainer"]): r for r in json.loads(report.read_text())["results"]}
    for row in (
        "faithfulness",
        "infidelity",
        "monotonicity",
        "completeness",
        "determinism",
        "batch_invariance",
        "max_sensitivity",
        "model_randomisation",
        "data_randomisation",
        "gt_shapley",  # declared with faithfulness by default
    ):
        assert rows[f"{row}[diabetes_gbm]", "tree_shap"]["passed"] is True, (
            row,
            rows[f"{row}[diabetes_gbm]", "tree_shap"],
        )
    for row in (
        "faithfulness",
        "infidelity",
        "monotonicity",
        "completeness",
        "determinism",
        "batch_invariance",
        "max_sensitivity",
        "gt_shapley",
    ):
        assert rows[f"{row}[diabetes_gbm]", "broken"]["passed"] is False, row
    for row in ("faithfulness", "completeness", "determinism", "max_sensitivity", "model_randomisation"):
        assert rows[f"{row}[cancer_mlp]", "integrated_gradients"]["passed"] is True, row
    assert rows["gt_shapley[cancer_mlp]", "integrated_gradients"]["outcome"] == "skipped"  # claims no Shapley values


def test_an_unrelated_run_loads_no_family(pytester):
    pytester.makepyfile(
        test_plain="""
import sys


def test_plain():
    assert "pytest_xai.cases.tabular" not in sys.modules
"""
    )
    pytester.runpytest_subprocess(*QUIET).assert_outcomes(passed=1)


CHECK_ONLY = '''
import numpy as np
import pytest_xai


@pytest_xai.register_check(thresholds={"max_share": 0.99})
def not_all_on_one_feature(attributions, case, *, max_share):
    """No single feature carries more than max_share of the total |attribution|."""
    A = np.abs(np.asarray(getattr(attributions, "attributions", attributions)))
    share = float(A.sum(axis=0).max() / A.sum()) if A.sum() > 0 else 1.0
    detail = f"top share {share:.2f}"
    return pytest_xai.Score("not_all_on_one_feature", 1 - share, share <= max_share, max_share, detail)
'''


def test_a_check_registered_in_a_conftest_scores_a_built_in_case_in_the_judges_worker(pytester):
    """The judge's worker imports the module that registered the check (the user's conftest), as it
    does the module of a user's case: a user's check on a built-in case scores there."""
    pytester.makeconftest(CHECK_ONLY)
    pytester.makepyfile(
        test_mine="""
def test_mine(xai_explainer, xai_case, xai_explain, xai_check):
    case = xai_case("cough_and_fever")
    assert xai_check("not_all_on_one_feature", xai_explain(xai_explainer, case), case).passed
"""
    )
    # in a process of its own: an inline run would leave the check registered in this one (tests/test_zoo.py)
    result = pytester.runpytest_subprocess(*QUIET, "test_mine.py", f"--xai-explainer={REF}", "-k", "test_mine")
    result.assert_outcomes(passed=1)


def test_gt_shapley_joins_the_calibrated_checks_of_a_user_case_unless_opted_out():
    from pytest_xai.registry import user_checks

    added = {"if_claimed": True}  # holds the explainers that claim Shapley values
    assert user_checks(["faithfulness", "determinism"]) == {"faithfulness": {}, "determinism": {}, "gt_shapley": added}
    assert user_checks({"infidelity": {"conditional": "baseline"}})["gt_shapley"] == {"convention": "baseline", **added}
    assert user_checks({"gt_shapley": {"max_error": 0.1}, "monotonicity": {}})["gt_shapley"] == {"max_error": 0.1}
    assert user_checks(["faithfulness", "-gt_shapley"]) == {"faithfulness": {}}
    assert user_checks(["determinism", "max_sensitivity"]) == {"determinism": {}, "max_sensitivity": {}}
    try:
        pytest_xai.register_case(name="with_reference", checks=["faithfulness"])(lambda seed: None)
        pytest_xai.register_case(name="opted_out", checks=["faithfulness", "-gt_shapley"])(lambda seed: None)
        assert "gt_shapley" in cases.info("with_reference").checks
        assert "gt_shapley" not in cases.info("opted_out").checks
    finally:
        for name in ("with_reference", "opted_out"):
            cases.CASES.pop(name, None)
