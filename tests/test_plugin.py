"""The plugin seen from the command line (pytester): loading, the suite, reports, bad explainers."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HOSTILE = Path(__file__).with_name("hostile.py")
REF = "pytest_xai.explainers"
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
# Users' tests and the suite's four Compare-xAI toy tests (cough_and_fever matches its 10_90 twin).
FOUR = "not xai_suite or cough_and_fever or a_and_b_or_c or counterexample_dummy_axiom"


def run(pytester: pytest.Pytester, *args: str, k: str | None = None, tabular: bool = True) -> pytest.RunResult:
    """pytest in-process; the built-in suite narrowed to its four fast tabular tests, and ``-k k``."""
    expression = " and ".join(f"({e})" for e in ((FOUR,) if tabular else ()) + ((k,) if k else ()))
    return pytester.runpytest(*QUIET, *(("-k", expression) if expression else ()), *args)


def hostile(name: str) -> str:
    return f"--xai-explainer={HOSTILE}:{name}"


# ----------------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "expected 'module:function'"),
        ("no_such_module_xyz:f", "module 'no_such_module_xyz' not found"),
        ("pytest_xai.explainers:exact_shaply", "did you mean exact_shapley"),
        ("pytest_xai.plugin.settings:DEFAULT_TIMEOUT", "not a callable explainer"),
        ("missing/file.py:f", "does not exist"),
        ("pytest_xai.plugin:derive_seed", "parameter 'base' is not one the contract provides"),
    ],
)
def test_bad_spec_is_a_usage_error_without_traceback(pytester, spec, message):
    result = run(pytester, f"--xai-explainer={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--xai-explainer={spec}*"])
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("spec", [f"{REF}:shap_kernal", "broken_mod:explian"])
def test_under_xdist_a_bad_spec_stops_the_controller_before_any_worker(pytester, spec):
    """The controller checks reference specs by name (no import) and the others in a throwaway
    process (a module that raises at import fails its own tests instead: tests/test_hostile_runs.py)."""
    pytest.importorskip("xdist")
    pytester.makepyfile(broken_mod="def explain(inputs): pass\n")
    result = pytester.runpytest_subprocess(*QUIET, "-n", "2", f"--xai-explainer={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("did you mean shap_kernel" if "shap" in spec else "did you mean explain") in result.stderr.str()
    assert (
        "Traceback" not in result.stderr.str() + result.stdout.str() and "bringing up nodes" not in result.stdout.str()
    )


@pytest.mark.parametrize(("timeout", "imported"), [("60", False), ("0", True)])
def test_only_the_process_that_calls_an_explainer_imports_its_library(pytester, timeout, imported):
    """shap is imported by the explainer's worker, not by the plugin's process (3.7 s there, at
    configure); in-process mode (``--xai-timeout=0``) imports it at its first call."""
    pytester.makeconftest(
        "import sys\n\ndef pytest_sessionfinish(session):\n    print('SHAP_IMPORTED', 'shap' in sys.modules)\n"
    )
    result = pytester.runpytest_subprocess(
        *QUIET,
        "-s",
        f"--xai-explainer={REF}:shap_kernel",
        f"--xai-timeout={timeout}",
        "-k",
        "gt_shapley and gaussian_linear_rho50",
    )
    result.assert_outcomes(passed=1)
    assert f"SHAP_IMPORTED {imported}" in result.stdout.str()


def test_the_plugin_freezes_the_heap_at_exit_after_a_last_collection():
    """Python's teardown then skips the collections over torch's and shap's objects (1.9 -> 0.3 s)."""
    import subprocess
    import sys

    code = (
        "import atexit, gc; from pytest_xai.plugin import _quick_teardown; "
        "atexit.register(lambda: print(gc.get_freeze_count() > 1000)); "  # runs after the handler registered next
        "_quick_teardown()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True"]


def test_module_raising_on_import_shows_the_original_error(pytester):
    """Not a usage error since issue 29: its tests fail with the error (tests/test_hostile_runs.py)."""
    pytester.makepyfile(broken_mod="raise RuntimeError('config missing')\ndef explain(inputs): pass\n")
    pytester.syspathinsert()
    result = run(pytester, "--xai-explainer=broken_mod:explain")
    result.assert_outcomes(failed=4)
    assert "RuntimeError: config missing" in result.stdout.str()


def test_parameter_typo_suggests_the_contract_name(pytester):
    pytester.makepyfile(typo_mod="def explain(input, predict): pass\n")
    pytester.syspathinsert()
    result = run(pytester, "--xai-explainer=typo_mod:explain")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "Did you mean 'inputs'" in result.stderr.str()


def test_bad_threshold_and_timeout_are_usage_errors(pytester):
    result = run(pytester, f"--xai-explainer={REF}:random", "--xai-threshold=symetry.rtol=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "did you mean 'symmetry'" in result.stderr.str()
    result = run(pytester, f"--xai-explainer={REF}:random", "--xai-threshold=symmetry.rtol=x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "'x' is not a number" in result.stderr.str()
    result = run(pytester, f"--xai-explainer={REF}:random", "--xai-timeout=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# ------------------------------------------------------------------------------------ the suite


def test_suite_ids_markers_and_selection(pytester):
    result = run(
        pytester, f"--xai-explainer={REF}:exact_shapley", "--collect-only", "-q", "--strict-markers", tabular=False
    )
    result.stdout.fnmatch_lines(
        [
            "*::dummy[[]counterexample_dummy_axiom-exact_shapley[]]",  # family modules by name
            "*::symmetry[[]cough_and_fever-exact_shapley[]]",
        ]
    )
    assert result.ret == pytest.ExitCode.OK
    selected = run(pytester, f"--xai-explainer={REF}:exact_shapley", "-m", "xai_dummy")
    assert selected.parseoutcomes()["passed"] == 1 and "failed" not in selected.parseoutcomes()
    by_k = run(pytester, f"--xai-explainer={REF}:exact_shapley", k="cough and not 10_90")
    assert by_k.parseoutcomes()["passed"] == 1 and "failed" not in by_k.parseoutcomes()


def test_duplicate_explainers_are_run_once(pytester):
    spec = f"--xai-explainer={REF}:exact_shapley"
    run(pytester, spec, spec).assert_outcomes(passed=4)


def test_ini_explainers_and_user_tests_run_together(pytester):
    pytester.makeini(f"[pytest]\nxai_explainers =\n    {REF}:exact_shapley\n")
    pytester.makepyfile(test_mine="def test_unrelated():\n    assert True\n")
    run(pytester).assert_outcomes(passed=5)
    run(pytester, "--xai-no-suite").assert_outcomes(passed=1)


def test_without_explainers_the_plugin_stays_out_of_the_way(pytester):
    pytester.makepyfile(test_mine="def test_unrelated():\n    assert True\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert "xai scores" not in result.stdout.str() and "xai: seed" not in result.stdout.str()


def test_theory_verdicts_and_table(pytester):
    result = run(pytester, f"--xai-explainer={REF}:exact_shapley", hostile("zeros"), hostile("swapped_features"))
    result.assert_outcomes(passed=4, failed=8)
    result.stdout.fnmatch_lines(
        [
            "*xai scores*",
            "test*exact_shapley*zeros*swapped_features*",
            "dummy[[]counterexample_dummy_axiom[]]*PASS 1.000*FAIL*FAIL*",
            "ranking[[]a_and_b_or_c[]]*PASS 1.000*FAIL*FAIL*",
            # Swapping two symmetric features keeps the mirror symmetry, but the credit no longer moves
            # with the feature that is switched on: it explains nothing (the explains_nothing guard).
            "symmetry[[]cough_and_fever[]]*PASS 1.000*FAIL 0.000*FAIL 0.000*",
            "overall*4/4, 1.000*0/4*",
        ]
    )


# ------------------------------------------------------------------------------- bad explainers

BAD = {  # name: (message, error kind)
    "raises": ("raised ValueError: boom from the explainer", "raised"),
    "returns_nan": ("non-finite attributions", "invalid"),
    "returns_inf": ("non-finite attributions", "invalid"),
    "returns_none": ("returned None", "invalid"),
    "returns_string": ("returned a str", "invalid"),
    "wrong_shape": ("expected (4, 2)", "invalid"),
    "extra_class_axis": ("one attribution map per class", "invalid"),
    "mutates_inputs": ("modified its `inputs` argument in place", "invalid"),
    "segfaults": ("killed by signal SIGSEGV", "crash"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_explainer_fails_only_its_own_tests(pytester, name):
    report = pytester.path / "report.json"
    result = run(
        pytester, hostile(name), f"--xai-explainer={REF}:exact_shapley", f"--xai-report={report}", k="cough_and_fever-"
    )
    result.assert_outcomes(passed=1, failed=1)
    message, kind = BAD[name]
    result.stdout.fnmatch_lines([f"*explainer '{name}' on case 'cough_and_fever': *{message}*"])
    assert "During handling" not in result.stdout.str()
    doc = json.loads(report.read_text())
    (bad,) = [r for r in doc["results"] if r["explainer"] == name]
    assert bad["passed"] is False and message in bad["error"]
    assert (bad["status"], bad["kind"]) == ("ERROR", kind)  # the kind, not words of the message, decides


def test_tensor_requiring_grad_is_coerced(pytester):
    pytest.importorskip("torch")
    run(pytester, hostile("tensor_requires_grad"), k="cough_and_fever-").assert_outcomes(passed=1)


def test_not_applicable_skips_with_the_reason(pytester):
    result = run(pytester, hostile("not_applicable"), "-rs")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(["*this explainer only handles images*"])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("sleeps_forever", "*was idle: it used 0.* CPU seconds in *, so it sleeps, waits or is deadlocked*"),
        ("spins_in_c", "*used 1.* CPU seconds, over the limit of 1.5 (a slow explainer*"),
    ],
)
def test_time_limit_stops_a_hanging_explainer(pytester, name, message):
    """A GIL-holding C loop is stopped by its CPU time, a sleep by being idle; both are TIMEOUTs,
    which have no verdict, and the other explainer is not affected."""
    report = pytester.path / "report.json"
    result = run(
        pytester,
        hostile(name),
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-timeout=1.5",
        f"--xai-report={report}",
        k="cough_and_fever-",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([message, "*TIMEOUT*PASS 1.000*", "*overall*TIMEOUT*1/1, 1.000*"])
    doc = json.loads(report.read_text())
    assert sorted(r["status"] for r in doc["results"]) == ["PASS", "TIMEOUT"]
    assert {r["explainer"]: r["kind"] for r in doc["results"]} == {name: "timeout", "exact_shapley": None}
    assert doc["summary"][name]["overall"]["timeouts"] == 1


# -------------------------------------------------------------------------------------- reports


def test_json_report_and_junit_properties(pytester):
    report, junit = pytester.path / "out" / "xai.json", pytester.path / "junit.xml"
    result = run(
        pytester,
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-explainer={REF}:random",
        f"--xai-report={report}",
        f"--junitxml={junit}",
        "--xai-seed=7",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = json.loads(report.read_text())
    assert doc["schema"] == "pytest-xai/report" and doc["version"] == 1 and doc["seed"] == 7
    assert {"python", "numpy", "pytest"} <= set(doc["versions"]) and doc["machine"]["cpu_count"] >= 1
    assert len(doc["results"]) == 8
    first = doc["results"][0]
    assert set(first) >= {"explainer", "case", "check", "score", "threshold", "passed", "seconds", "detail"}
    assert all(0.0 <= r["score"] <= 1.0 for r in doc["results"])
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert {"xai_score", "xai_passed", "xai_seconds", "xai_explainer", "xai_case"} <= set(props)
    assert not list(report.parent.glob("*.tmp*"))


def test_scores_identical_serially_and_with_xdist(pytester):
    pytest.importorskip("xdist")
    specs = [f"--xai-explainer={REF}:random", f"--xai-explainer={REF}:exact_shapley"]
    serial, parallel = pytester.path / "serial.json", pytester.path / "parallel.json"
    run(pytester, *specs, f"--xai-report={serial}")
    result = pytester.runpytest_subprocess(*QUIET, "-k", FOUR, *specs, "-n", "2", f"--xai-report={parallel}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED

    def scores(path):
        return {r["nodeid"]: (r["score"], r["passed"], r["seed"]) for r in json.loads(path.read_text())["results"]}

    assert scores(serial) == scores(parallel) and len(scores(serial)) == 8


def test_threshold_precedence(pytester):
    pytester.makepyfile(
        test_prec="""
        import pytest

        @pytest.mark.xai_symmetry(rtol=0.9)
        def test_marker_wins(xai_explainer, xai_case, xai_explain, xai_check):
            case = xai_case("cough_and_fever")
            assert xai_check("symmetry", xai_explain(xai_explainer, case), case).threshold == 0.9

        def test_command_line(xai_explainer, xai_case, xai_explain, xai_check):
            case = xai_case("cough_and_fever")
            assert xai_check("symmetry", xai_explain(xai_explainer, case), case).threshold == 0.5
    """
    )
    result = run(
        pytester,
        "test_prec.py",
        "--xai-no-suite",
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-threshold=symmetry.rtol=0.5",
    )
    result.assert_outcomes(passed=2)


def test_an_unknown_marker_keyword_fails_the_test_naming_the_checks_thresholds(pytester):
    """Issue 32: a misspelt marker keyword (``rtoll=``) was silently ignored, and the default judged.
    Like pytest-benchmark's marker, an unknown keyword is refused, naming the check's thresholds."""
    pytester.makepyfile(
        test_misspelt="""
        import pytest

        @pytest.mark.xai_symmetry(rtoll=0.9)
        def test_misspelt(xai_explainer, xai_case, xai_explain, xai_check):
            case = xai_case("cough_and_fever")
            xai_check("symmetry", xai_explain(xai_explainer, case), case)

        @pytest.mark.xai_symmetry(rtol=0.9)
        def test_spelt_right(xai_explainer, xai_case, xai_explain, xai_check):
            case = xai_case("cough_and_fever")
            assert xai_check("symmetry", xai_explain(xai_explainer, case), case).threshold == 0.9
    """
    )
    result = run(pytester, "test_misspelt.py", "--xai-no-suite", f"--xai-explainer={REF}:exact_shapley")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*xai_symmetry got unknown keyword rtoll; its thresholds are rtol (did you mean rtol?)*"]
    )


def test_user_fixture_without_explainer_skips_with_a_hint(pytester):
    pytester.makepyfile(test_u="def test_x(xai_explainer):\n    pass\n")
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*pass --xai-explainer=module:function*"])


def test_example_user_test_file_runs(pytester):
    example = Path(__file__).parents[1] / "examples" / "test_my_explainer.py"
    pytester.makepyfile(test_example=example.read_text())
    result = run(pytester, "test_example.py", "--xai-no-suite", f"--xai-explainer={REF}:exact_shapley")
    result.assert_outcomes(passed=3)


def test_hypothesis_example_passes_exact_shapley_and_fails_random(pytester):
    example = Path(__file__).parents[1] / "examples" / "test_hypothesis_explainer.py"
    pytester.makepyfile(test_hyp=example.read_text())
    good = run(pytester, "test_hyp.py", "--xai-no-suite", f"--xai-explainer={REF}:exact_shapley")
    good.assert_outcomes(passed=2)
    bad = run(pytester, "test_hyp.py", "--xai-no-suite", f"--xai-explainer={REF}:random")
    bad.assert_outcomes(failed=2)
    bad.stdout.fnmatch_lines(["*game=Case(info=CaseInfo(name='game(*"])  # the shrunk counterexample


def test_every_check_marker_is_registered(pytester):
    from pytest_xai import cases, checks

    cases.infos()
    result = pytester.runpytest("--markers")
    for marker in {info.marker for info in checks.CHECKS.values()}:
        result.stdout.fnmatch_lines([f"@pytest.mark.{marker}: *"])


def test_category_option_and_aggregates(pytester):
    report = pytester.path / "r.json"
    run(
        pytester,
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-category=stability",
        f"--xai-report={report}",
        tabular=False,
    )
    doc = json.loads(report.read_text())
    assert doc["results"] and {r["category"] for r in doc["results"]} == {"stability"}
    assert set(doc["summary"]["exact_shapley"]["categories"]) == {"stability"}

    run_all = run(
        pytester, f"--xai-explainer={REF}:exact_shapley", f"--xai-explainer={REF}:random", f"--xai-report={report}"
    )
    run_all.stdout.fnmatch_lines(["fidelity: passed/ran, mean score*4/4, 1.000*", "overall*4/4, 1.000*"])
    doc = json.loads(report.read_text())
    random_results = [r for r in doc["results"] if r["explainer"] == "random"]
    overall = doc["summary"]["random"]["overall"]
    assert overall["ran"] == 4 and overall["passed"] == sum(r["passed"] for r in random_results)
    assert overall["mean_score"] == pytest.approx(sum(r["score"] for r in random_results) / 4, abs=1e-6)


def test_benchmark_option_puts_scores_and_evaluations_in_extra_info(pytester, monkeypatch):
    pytest.importorskip("pytest_benchmark")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # else the inner run thinks xdist is on
    out = pytester.path / "bench.json"
    result = run(pytester, f"--xai-explainer={REF}:exact_shapley", "--xai-benchmark", f"--benchmark-json={out}")
    result.assert_outcomes(passed=4)
    benchmarks = json.loads(out.read_text())["benchmarks"]
    assert len(benchmarks) == 4 and all(b["extra_info"]["xai_passed"] is True for b in benchmarks)
    assert all(b["extra_info"]["xai_evaluations"] > 0 for b in benchmarks)  # next to the timing, machine-free
    assert {b["extra_info"]["xai_case"] for b in benchmarks} >= {"cough_and_fever", "a_and_b_or_c"}


def _benchmarks(pytester: pytest.Pytester, name: str, *args: str) -> list[dict]:
    """``--xai-benchmark`` of exact_shapley on one gaussian case (32 coalitions x 100 background rows
    for each of 100 points: tens of milliseconds), three rounds; pytest-benchmark's JSON."""
    out = pytester.path / f"{name}.json"
    result = run(
        pytester,
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-benchmark",
        "--benchmark-min-rounds=3",
        f"--benchmark-json={out}",
        *args,
        k="gt_shapley and gaussian_linear_rho50",
        tabular=False,
    )
    result.assert_outcomes(passed=1)
    return json.loads(out.read_text())["benchmarks"]


def test_benchmark_times_the_explainer_call_alone_and_two_identical_runs_agree(pytester, monkeypatch):
    """pytest-benchmark's rounds (``--benchmark-min-rounds``) after a warm-up, each the seconds the
    worker measured around the explainer's call (no worker start, no case build, no transfer), with
    each round's CPU seconds and evaluations beside; the record keeps the medians.

    A second identical run spends equal evaluations, and its CPU median is within 3x of the first:
    CPU seconds of a single-threaded call barely move with the machine's load (wall seconds moved
    0.41x-3.09x between two runs in issue 43); the band allows for caches and frequency shared with
    other processes on a loaded 2-core machine, and is far tighter than the worker's start
    (hundreds of milliseconds against 8) that the old timing included."""
    pytest.importorskip("pytest_benchmark")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    report = pytester.path / "report.json"
    (first,) = _benchmarks(pytester, "first", f"--xai-report={report}")
    info, stats = first["extra_info"], first["stats"]
    assert stats["rounds"] == 3 and stats["data"] == info["xai_seconds"]  # the worker's figures, round by round
    assert len(info["xai_cpu_seconds"]) == 3 and all(s > 0 for s in info["xai_cpu_seconds"])
    assert info["xai_evaluations"] == 100 * 32 * 100  # exact enumeration: 2^5 coalitions x 100 rows, per point
    (rec,) = json.loads(report.read_text())["results"]
    assert rec["seconds"] == pytest.approx(stats["median"]) and rec["evaluations"] == info["xai_evaluations"]
    assert rec["cpu_seconds"] == pytest.approx(sorted(info["xai_cpu_seconds"])[1])

    (second,) = _benchmarks(pytester, "second")
    assert second["extra_info"]["xai_evaluations"] == info["xai_evaluations"]
    cpu = [sorted(b["extra_info"]["xai_cpu_seconds"])[1] for b in (first, second)]
    assert 1 / 3 <= cpu[0] / cpu[1] <= 3, cpu


def test_a_disabled_benchmark_times_nothing_and_the_test_still_runs(pytester, monkeypatch):
    """``--benchmark-disable`` (and xdist, where pytest-benchmark disables itself): no rounds, the
    call's own seconds and evaluations kept."""
    pytest.importorskip("pytest_benchmark")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    report = pytester.path / "report.json"
    result = run(
        pytester,
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-benchmark",
        "--benchmark-disable",
        f"--xai-report={report}",
        k="a_and_b_or_c",
    )
    result.assert_outcomes(passed=1)
    (rec,) = json.loads(report.read_text())["results"]
    assert rec["evaluations"] > 0 and rec["seconds"] is not None


def test_data_dir_reaches_builders_that_ask_for_it(tmp_path):
    from pytest_xai import cases
    from pytest_xai.case import Case

    seen = {}

    @cases.register(family="test", category="fidelity", source="test", checks={})
    def data_dir_probe(info, *, seed, cache, data_dir):
        seen["data_dir"] = data_dir
        return Case(info=info, inputs=None, predict=None, feature_names=[])

    try:
        cases.get("data_dir_probe", data_dir=str(tmp_path))
        assert seen["data_dir"] == str(tmp_path)
    finally:
        cases.CASES.pop("data_dir_probe")


@pytest.mark.parametrize("selection", ["human_precision and human_shapes_oracle", "ngt and chess_oracle_mate"])
def test_pictures_of_the_worst_example_next_to_the_report(pytester, selection):
    """Each family's first picture makes the pictures folder (chess boards were lost without an
    earlier picture)."""
    pytest.importorskip("matplotlib")
    if "chess" in selection:
        pytest.importorskip("chess")
    report = pytester.path / "out" / "xai.json"
    result = run(pytester, f"--xai-explainer={REF}:random", f"--xai-report={report}", k=selection, tabular=False)
    result.assert_outcomes(failed=1)
    (png,) = (report.parent / "xai-pictures").glob("*.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (rec,) = json.loads(report.read_text())["results"]
    assert rec["picture"] == str(png)


def test_prepare_runs_once_per_worker_before_its_first_call(pytester):
    pytester.makepyfile(
        prepared_mod="""
        import numpy as np

        READY = []

        def explain(inputs, predict, background, target):
            if READY != [True]:
                raise RuntimeError(f"prepare ran {len(READY)} times in this process before the call")
            from pytest_xai.explainers.baselines import exact_shapley
            return exact_shapley(inputs, predict, background, target)

        explain.prepare = lambda: READY.append(True)
    """
    )
    pytester.syspathinsert()
    run(pytester, "--xai-explainer=prepared_mod:explain").assert_outcomes(passed=4)


def test_library_errors_fail_one_test_and_keep_the_library_message(pytester):
    """DeepLift on a ReLU module used twice: captum's own message reaches the user, and a model
    without gradients is skipped with the reason."""
    pytest.importorskip("captum")
    pytester.makepyfile(
        test_torch_user="""
        import numpy as np
        import torch
        from pytest_xai import Case
        from pytest_xai.case import CaseInfo

        class ReusedRelu(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = torch.nn.Linear(3, 4), torch.nn.Linear(4, 1)
                self.relu = torch.nn.ReLU()

            def forward(self, x):
                return self.relu(self.b(self.relu(self.a(x)))).squeeze(1)

        class Frozen(ReusedRelu):
            def forward(self, x):
                return super().forward(x).detach()

        def case(model):
            info = CaseInfo("torch_user", "user", "fidelity", "user", {}, build=None)
            return Case(info=info, inputs=np.ones((2, 3)), predict=None, feature_names=list("abc"), model=model)

        def test_reused_relu(xai_explainer, xai_explain):
            xai_explain(xai_explainer, case(ReusedRelu().eval()))

        def test_no_gradients(xai_explainer, xai_explain):
            xai_explain(xai_explainer, case(Frozen().eval()))
    """
    )
    result = run(pytester, "test_torch_user.py", "--xai-no-suite", f"--xai-explainer={REF}:deeplift", "-rs")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*explainer 'deeplift' on case 'torch_user': raised RuntimeError:*used more than once*",
            "*not differentiable with respect to its inputs*",
        ]
    )


# --------------------------------------------------------- issue 16: bad options and non-finite values


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--xai-seed=-1",), "--xai-seed=-1: out of range; give an integer from 0 to 2147483647"),
        (("--xai-timeout=inf",), "--xai-timeout=inf: no infinite limit; give 0"),
        (("--xai-timeout=nan",), "--xai-timeout=nan: must be a finite number of seconds >= 0"),
        (("--xai-threshold=symmetry.rtol=inf",), "inf is only allowed for max_* thresholds (gate off)"),
        (("--xai-threshold=ranking.max_rank=nan",), "'ranking.max_rank=nan': nan is not a threshold"),
        (("--xai-threshold=ranking.max_rank=-1",), "-1 is negative; thresholds are >= 0"),
        (("--xai-report=.",), "--xai-report=.: is a directory; give a file name"),
        (("--xai-report=afile/xai.json",), "afile is a file, not a directory"),
        (("--xai-data-dir=dat",), "--xai-data-dir=dat: no such directory (misspelled?)"),
    ],
)
def test_bad_option_values_are_usage_errors_before_the_run(pytester, args, message):
    (pytester.path / "afile").write_text("not a directory")
    result = run(pytester, f"--xai-explainer={REF}:random", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_bad_ini_values_are_usage_errors(pytester):
    for ini, message in (
        ("xai_seed = -3", "ini xai_seed='-3': out of range"),
        ("xai_timeout = inf", "ini xai_timeout='inf': no infinite limit"),
        ("xai_data_dir = nowhere", "ini xai_data_dir=" + str(pytester.path / "nowhere")),
        ("xai_thresholds = dummy.rtol=-0.5", "ini xai_thresholds 'dummy.rtol=-0.5': -0.5 is negative"),
    ):
        pytester.makeini(f"[pytest]\n{ini}\n")
        result = run(pytester, f"--xai-explainer={REF}:random")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, ini
        assert message in result.stderr.str(), result.stderr.str()


def test_an_inf_threshold_keeps_the_report_strict_json_and_the_run_green(pytester):
    import os
    import stat

    report = pytester.path / "out" / "xai.json"
    previous = os.umask(0o022)
    try:
        result = run(
            pytester,
            f"--xai-explainer={REF}:exact_shapley",
            "--xai-threshold=ranking.max_rank=inf",
            f"--xai-report={report}",
            k="ranking",
        )
    finally:
        os.umask(previous)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()  # before: rc 1, no report, all tests passed
    doc = json.loads(report.read_text(), parse_constant=lambda token: pytest.fail(f"non-standard JSON {token}"))
    assert '{"ranking": {"max_rank": "inf"}}' in json.dumps(doc["options"]["thresholds"])
    assert [r["threshold"] for r in doc["results"]] == ["inf", "inf"]
    assert stat.S_IMODE(report.stat().st_mode) == 0o644
    result.stdout.fnmatch_lines(["*xai scores*", "*JSON report:*"])


def test_a_malformed_data_file_fails_its_cases_with_one_message(pytester):
    data = pytester.mkdir("data")
    (data / "compas-scores-two-years.csv").write_bytes(b"id,age,race\n1,23,Caucasian\n2,\xe9\xe9,Other\n")
    (data / "chess_positions.csv").write_text('fen,label,mask0,mask1,mask2\n"' + "x" * 140_000 + "\n")
    result = run(
        pytester,
        f"--xai-explainer={REF}:random",
        f"--xai-data-dir={data}",
        "-rf",
        k="compas_lime_scaffold or chess_oracle_mate",
        tabular=False,
    )
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert f"case chess_oracle_mate: {data / 'chess_positions.csv'}, line 2: a field is longer than 131,072" in out
    assert f"case compas_lime_scaffold: {data / 'compas-scores-two-years.csv'}: not a UTF-8 text file" in out
    assert "at line 3" in out
    for noise in ("Traceback", "_csv.Error", "UnicodeDecodeError", "During handling"):
        assert noise not in out
