"""``--xai-repeat=N``: N derived seeds, mean and spread, verdict by an exact test, FLAKY labels."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from pytest_xai.engine.runner import derive_seed, repeat_verdict

REF = "pytest_xai.explainers"
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
N = 5
# A stochastic explainer whose verdict is a coin: exact Shapley values on even seeds, nothing
# (zeros) on odd ones, plus a seed-dependent speck so that no two seeds give identical output.
COIN = """
import numpy as np

from pytest_xai.explainers import exact_shapley


def coin(inputs, predict, background, target, seed):
    exact = np.asarray(exact_shapley(inputs, predict, background, target))
    speck = 1e-9 * np.random.default_rng(seed).standard_normal(exact.shape)
    return (exact if seed % 2 == 0 else 0 * exact) + speck
"""


def _seeds(case: str) -> list[int]:
    return [derive_seed(0, case)] + [derive_seed(0, case, str(k)) for k in range(1, N)]


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "n2"])
def test_flaky_explainer_is_labelled_and_judged_by_an_exact_test(pytester, xdist):
    if xdist:
        pytest.importorskip("xdist")
    pytester.makepyfile(coin=COIN)
    pytester.syspathinsert()
    report, junit = pytester.path / "r.json", pytester.path / "j.xml"
    seeds = _seeds("cough_and_fever")
    passing = [s % 2 == 0 for s in seeds]
    assert 0 < sum(passing) < N, "the derived seeds must mix parities for this test to mean anything"
    verdict = repeat_verdict(sum(passing), N)
    assert verdict == "FLAKY"  # 2 of 5: the Clopper-Pearson interval straddles 1/2
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run(
        *QUIET,
        "-k",
        "cough_and_fever-",
        "--xai-explainer=coin:coin",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-repeat={N}",
        f"--xai-report={report}",
        f"--junitxml={junit}",
        *(("-n", "2") if xdist else ()),
    )
    result.assert_outcomes(passed=1, failed=1)  # exact_shapley passes; the undecided coin fails
    result.stdout.fnmatch_lines(
        [
            f"*xai: repeat={N} seeds per (case, explainer); verdict by an exact test on the seeds' pass rate*",
            "symmetry[[]cough_and_fever[]]*FAIL *±* FLAKY*",  # columns: arrival order
        ]
    )
    doc = json.loads(report.read_text())
    assert doc["repeat"] == N
    recs = {r["explainer"]: r for r in doc["results"]}
    coin, exact = recs["coin"], recs["exact_shapley"]
    assert coin["flaky"] is True and coin["status"] == "FAIL" and coin["repeat"]["verdict"] == "FLAKY"
    assert coin["repeat"]["seeds"] == seeds and coin["repeat"]["passed"] == passing
    assert coin["repeat"]["runs"] == N and coin["repeat"]["deterministic"] is False
    assert coin["score"] == pytest.approx(sum(coin["repeat"]["scores"]) / N, abs=1e-6)
    assert coin["repeat"]["min"] == 0.0 and coin["repeat"]["max"] == 1.0 and coin["repeat"]["std"] > 0.1
    # exact_shapley gives identical attributions under its first two seeds: run once, not FLAKY.
    assert exact["repeat"]["deterministic"] is True and exact["repeat"]["runs"] == 1 and exact["flaky"] is False
    props = {
        (tc.get("name"), p.get("name")): p.get("value")
        for tc in ET.parse(junit).iter("testcase")
        for p in tc.iter("property")
    }
    assert props[("symmetry[cough_and_fever-coin]", "xai_flaky")] == "true"
    assert props[("symmetry[cough_and_fever-exact_shapley]", "xai_flaky")] == "false"


def test_repeat_one_is_the_ordinary_run_and_bad_values_are_usage_errors(pytester):
    report = pytester.path / "r.json"
    pytester.runpytest(
        *QUIET, "-k", "cough_and_fever-", f"--xai-explainer={REF}:random", "--xai-repeat=1", f"--xai-report={report}"
    ).assert_outcomes(failed=1)
    (rec,) = json.loads(report.read_text())["results"]
    assert rec["repeat"] is None and rec["flaky"] is False and rec["seed"] == derive_seed(0, "cough_and_fever")
    for bad in ("0", "101"):
        result = pytester.runpytest(*QUIET, "--collect-only", f"--xai-explainer={REF}:random", f"--xai-repeat={bad}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*--xai-repeat={bad}: give an integer from 1 to 100*"])


def test_smoke_gate_selects_one_registered_test_per_family(pytester):
    """-m xai_smoke collects exactly the smoke test each built-in family declares (``Family.smoke``;
    that each names a registered test of its family: ``tests/test_families.py``)."""
    from pytest_xai import cases

    declared = [f.smoke for f in cases.families().values() if f.module in cases.MODULES]
    result = pytester.runpytest(
        *QUIET, "--collect-only", "-q", "-m", "xai_smoke", "--xai-explainer=pytest_xai.explainers:exact_shapley"
    )
    selected = {line.split("::")[1] for line in result.outlines if "xai_suite.py::" in line}
    built_in = {
        test
        for test in selected  # not the cases other tests of this process registered with smoke=
        if cases.info(test.partition("[")[2].rpartition("-")[0]).build.__module__ in cases.MODULES
    }
    assert built_in == {f"{check}[{case}-exact_shapley]" for check, case in declared}
    assert len(declared) == len({cases.info(case).family for _, case in declared}) == 15


USER_CASE = """
import numpy as np
import pytest_xai


def f(X):
    X = np.asarray(X, dtype=float)
    return X @ np.arange(1.0, 17.0) + X[:, 2] * X[:, 3]


@pytest_xai.register_case(checks=["determinism"])
def my_model(seed):  # 16 features: KernelSHAP samples coalitions instead of enumerating them
    rng = np.random.default_rng(seed)
    return pytest_xai.make_case(rng.normal(size=(4, 16)), predict=f, background=rng.normal(size=(10, 16)))
"""


@pytest.mark.parametrize("explainer", ["shap_kernel", "lime_tabular"])
def test_determinism_under_repeat_compares_each_seed_with_itself(pytester, explainer):
    """Each repeat's map is compared with a re-explanation under that repeat's seed: a seeded
    stochastic explainer passes at every seed (it was FLAKY: seed k's map against seed 0's call)."""
    pytester.makeconftest(USER_CASE)
    report = pytester.path / "r.json"
    result = pytester.runpytest(
        *QUIET,
        "-k",
        "determinism and my_model",
        f"--xai-explainer={REF}:{explainer}",
        "--xai-repeat=3",
        f"--xai-report={report}",
    )
    result.assert_outcomes(passed=1)
    (rec,) = json.loads(report.read_text())["results"]
    assert rec["status"] == "PASS" and rec["flaky"] is False
    assert rec["repeat"]["runs"] == 3 and rec["repeat"]["deterministic"] is False  # stochastic: 3 real seeds
    assert rec["repeat"]["passed"] == [True, True, True] and rec["repeat"]["verdict"] == "PASS"


@pytest.mark.parametrize(
    ("passes", "runs", "verdict"),
    [
        (3, 3, "PASS"),
        (2, 3, "FLAKY"),
        (1, 3, "FLAKY"),
        (0, 3, "FAIL"),
        (5, 5, "PASS"),
        (4, 5, "PASS"),
        (3, 5, "FLAKY"),
        (2, 5, "FLAKY"),
        (1, 5, "FAIL"),
        (7, 10, "PASS"),
        (6, 10, "FLAKY"),
        (4, 10, "FLAKY"),
        (3, 10, "FAIL"),
    ],
)
def test_repeat_verdict_is_the_exact_binomial_test(passes, runs, verdict):
    """PASS iff P(X >= passes | p = 1/2) < alpha: the Clopper-Pearson bound is the binomial test inverted."""
    import math

    from pytest_xai.engine.runner import REPEAT_ALPHA

    upper_tail = sum(math.comb(runs, i) for i in range(passes, runs + 1)) / 2**runs
    lower_tail = sum(math.comb(runs, i) for i in range(passes + 1)) / 2**runs
    assert repeat_verdict(passes, runs) == verdict
    assert (verdict == "PASS") == (upper_tail < REPEAT_ALPHA) and (verdict == "FAIL") == (lower_tail < REPEAT_ALPHA)
