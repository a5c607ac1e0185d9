"""Explainers that try to break the run itself (issue 29): modules that exit, hang or raise when
imported, and explainers that kill or stop the worker zygote; tests and explainers that kill an xdist
worker (issue 39).  Each ends with a verdict for the healthy explainer and every report written,
serially and under ``-n 2``."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.test_plugin import QUIET, REF, hostile

TOY = ("-k", "symmetry and cough_and_fever and not 10_90")
IMPORTS = {  # module: (its source, the cause its test must name)
    "exits_at_import": ("import os\nos._exit(0)\n", "ended with exit status 0 before the import finished"),
    "sysexit_at_import": ("import sys\nsys.exit(0)\n", "importing it raised SystemExit: 0"),
    "hangs_at_import": ("import time\ntime.sleep(10_000)\n", "was idle: it used"),
    "raises_at_import": ("raise RuntimeError('config missing')\n", "raised RuntimeError: config missing"),
}


def _by_explainer(path) -> dict:
    return {r["explainer"]: r for r in json.loads(path.read_text())["results"]}


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_module_that_exits_hangs_or_raises_at_import_fails_only_its_own_tests(pytester, xdist):
    """Before: ``os._exit(0)`` at import ended the run with exit 0, no table and no JSON (the
    plugin imported user modules in its own process at configure); the hang hung the run."""
    if xdist:
        pytest.importorskip("xdist")
    for name, (source, _) in IMPORTS.items():
        pytester.makepyfile(**{name: source + "\ndef explain(inputs):\n    return inputs\n"})
    report = pytester.path / "r.json"
    specs = [f"--xai-explainer={name}:explain" for name in IMPORTS]
    result = pytester.runpytest_subprocess(
        *QUIET,
        *xdist,
        *TOY,
        *specs,
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-timeout=2",
        f"--xai-report={report}",
        timeout=240,
    )
    result.assert_outcomes(passed=1, failed=len(IMPORTS))
    assert result.ret == 1
    results = _by_explainer(report)
    assert results["exact_shapley"]["status"] == "PASS"
    for name, (_, cause) in IMPORTS.items():
        rec = results[f"{name}:explain"]
        assert rec["status"] in ("ERROR", "TIMEOUT") and cause in rec["error"], (name, rec["error"])
    result.stdout.fnmatch_lines(["*xai scores*"])


FOUR = ("-k", "cough_and_fever or a_and_b_or_c or counterexample_dummy_axiom")


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="the zygote forks (Linux)")
@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
@pytest.mark.parametrize("attack", ["kills_the_zygote", "stops_the_zygote"])
def test_an_explainer_that_kills_or_stops_the_zygote_loses_no_other_result(pytester, attack, xdist):
    """Before: under -n 2 both xdist workers died with a killed zygote and the replacement waited
    300 s (1 of 9 results); a stopped zygote held the next fork 300 s."""
    if xdist:
        pytest.importorskip("xdist")
    report, html = pytester.path / "r.json", pytester.path / "r.html"
    result = pytester.runpytest_subprocess(
        *QUIET,
        *xdist,
        *FOUR,
        hostile(attack),
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-timeout=20",
        f"--xai-report={report}",
        f"--xai-html={html}",
        timeout=200,
    )
    results = json.loads(report.read_text())["results"]
    healthy = [r["status"] for r in results if r["explainer"] == "exact_shapley"]
    assert healthy == ["PASS"] * 4, result.stdout.str()[-3000:]
    assert len(results) == 8 and html.exists() and result.ret in (0, 1)
    assert "crashed" not in result.stdout.str()  # no xdist worker died with the zygote


STOPPED_WORKER = """
import os, signal

from pytest_xai.engine import isolate

def test_first_call_then_stop_the_idle_worker(xai_explainer, xai_case, xai_explain):
    xai_explain(xai_explainer, xai_case("cough_and_fever"))
    (worker,) = [w for w in isolate._LIVE if w.spec == xai_explainer.spec]
    os.kill(worker.pid, signal.SIGSTOP)

def test_second_call_on_the_stopped_worker(xai_explainer, xai_case, xai_explain):
    xai_explain(xai_explainer, xai_case("a_and_b_or_c"))
"""


def test_a_worker_stopped_from_outside_while_idle_fails_its_next_call_at_once(pytester):
    """Before: the next call waited 600 s and said it "did not finish loading"."""
    pytester.makepyfile(test_stopped=STOPPED_WORKER)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *QUIET,
        "test_stopped.py",
        "--xai-no-suite",
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-timeout=60",
        f"--xai-report={report}",
        timeout=120,
    )
    result.assert_outcomes(passed=1, failed=1)
    (second,) = [r for r in json.loads(report.read_text())["results"] if "second" in r["nodeid"]]
    assert second["status"] == "TIMEOUT" and "was stopped (SIGSTOP)" in second["error"], second


BUILDER_RAISES = """
import pytest_xai
from pytest_xai import cases


@cases.register(family="user", category="fidelity", source="test", checks={})
def breaks_when_built(info, *, seed, cache):
    raise OSError("the data share is not mounted")


def test_uses_the_broken_case(xai_explainer, xai_case):
    xai_case("breaks_when_built").inputs  # reading a field builds the case in the test's process
"""


def test_a_case_builder_that_raises_is_named_in_the_report_and_tracebacks_start_at_the_explainer(pytester):
    """Issue 29: a builder that raised left the JSON ``detail`` and ``error`` empty; an explainer's
    traceback started with three frames of the plugin (worker, contract)."""
    pytester.makepyfile(test_builder=BUILDER_RAISES)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *QUIET,
        "test_builder.py",
        "-k",
        "broken_case or (symmetry and cough_and_fever and not 10_90)",
        hostile("raises"),
        f"--xai-report={report}",
        timeout=120,
    )
    result.assert_outcomes(failed=2)
    results = {r["test"]: r for r in json.loads(report.read_text())["results"]}
    built = results["test_uses_the_broken_case"]
    assert built["error"] == "OSError: the data share is not mounted" == built["detail"], built
    raised = results["symmetry"]
    assert raised["kind"] == "raised"
    trace = result.stdout.str().split("Traceback (most recent call last):", 1)[1]
    first_frame = trace.strip().splitlines()[0]
    assert "hostile.py" in first_frame and "in raises" in first_frame, trace[:800]


def test_a_truncated_reply_is_named_as_such_not_as_idle(pytester):
    """Issue 29: part of a message, then nothing, was reported as "was idle" after the time limit."""
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *QUIET,
        *TOY,
        hostile("sends_a_truncated_reply"),
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-timeout=60",
        f"--xai-report={report}",
        timeout=120,
    )
    result.assert_outcomes(passed=1, failed=1)
    rec = _by_explainer(report)["sends_a_truncated_reply"]
    assert rec["kind"] == "crash" and "bytes of a result, then nothing" in rec["error"], rec["error"]


# ------------------------------------------------------------------------- an xdist worker dies

WATCH = """
import json, os, time

CONTROLLER = []  # in the xdist controller, where the outcomes go


def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        CONTROLLER.append(os.environ["XAI_OUTCOMES"])


def pytest_runtest_logreport(report):
    \"\"\"The outcomes as the xdist controller receives them, each with the time it came.\"\"\"
    if CONTROLLER and (report.when in ("call", "???") or report.outcome != "passed"):
        with open(CONTROLLER[0], "a") as fh:
            fh.write(json.dumps([time.time(), report.nodeid, report.outcome]) + "\\n")
"""


def _outcomes(path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _run_watched(pytester, *args: str, tests: int, after: float = 30.0, quiet: float = 240.0):
    """pytest ``args`` in a subprocess, its outcomes watched as they come: fails when the run is
    still going ``after`` seconds after the outcome of its last test (of ``tests``), or when no
    outcome has come for ``quiet`` seconds (it hangs).  Returns (exit code, output, outcomes)."""
    pytester.makepyfile(xai_watch=WATCH)
    record, output = pytester.path / "outcomes.jsonl", pytester.path / "output.txt"
    path = os.pathsep.join(filter(None, [str(pytester.path), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "XAI_OUTCOMES": str(record), "PYTHONPATH": path}
    with output.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "xai_watch", *args],
            cwd=pytester.path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        last = time.time()
        while proc.poll() is None:
            time.sleep(0.5)
            outcomes = _outcomes(record)
            last = max([last, *(t for t, *_ in outcomes)])
            done = len({nodeid for _, nodeid, _ in outcomes}) >= tests
            if time.time() - last > (after if done else quiet):
                why = f"still running {after:g} s after its last outcome" if done else f"no outcome for {quiet:g} s"
                pytest.fail(f"the run was {why}:\n{output.read_text()[-3000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, output.read_text(), _outcomes(record)


DIES = """
import os, signal


def test_before(xai_explainer):
    pass


def test_kills_its_worker(xai_explainer):
    os.kill(os.getpid(), signal.SIGKILL)


def test_after(xai_explainer):
    pass
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks (Linux)")
def test_a_test_that_kills_its_xdist_worker_fails_once_and_the_run_ends_with_every_report(pytester):
    """Issue 39: the dead worker's unstarted test went to its replacement alone, and an xdist worker
    starts a test only once it knows the next one: the run waited for ever (xdist's loadscope, which
    the suite's scheduler extends).  Elsewhere the test that killed its worker ran again on the next
    worker, or a replacement still collecting was handed work (INTERNALERROR)."""
    pytest.importorskip("xdist")
    pytester.makepyfile(test_dies=DIES)
    report = pytester.path / "r.json"
    rc, output, outcomes = _run_watched(
        pytester,
        *QUIET,
        "-n",
        "2",
        "test_dies.py",
        "-k",
        "not xai_suite or (symmetry and cough_and_fever and not 10_90)",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={report}",
        tests=4,
    )
    assert rc == 1, output[-3000:]
    assert set(collections.Counter(nodeid for _, nodeid, _ in outcomes).values()) == {1}, outcomes  # none ran again
    results = {r["nodeid"].rpartition("::")[2]: r for r in json.loads(report.read_text())["results"]}
    assert {test: r["status"] for test, r in results.items()} == {
        "test_before[exact_shapley]": "PASS",
        "test_kills_its_worker[exact_shapley]": "ERROR",
        "test_after[exact_shapley]": "PASS",
        "symmetry[cough_and_fever-exact_shapley]": "PASS",
    }, output[-3000:]
    dead = results["test_kills_its_worker[exact_shapley]"]
    assert dead["kind"] == "crash" and "died while running this test" in dead["error"], dead


KILLER = """
import os, signal, time

import numpy as np


def kills_its_parent(inputs):
    \"\"\"Kills the process that started its worker, then waits to die with it: the zygote first, which
    forked it; the call is then made once more, on a worker the xdist worker spawns, its parent.\"\"\"
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(30)
    return np.zeros(inputs.shape)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks (Linux)")
def test_an_explainer_that_kills_the_zygote_and_an_xdist_worker_ends_the_run_with_every_report(pytester):
    """Issue 39: under -n 2 the explainer's xdist worker died, the next test of that worker went to
    the replacement behind the one it died on, which ran alone, or rather never did: the run waited
    for ever, with no JSON report.  Now the test it died on is an ERROR (kind crash) in the report,
    the next runs on the replacement, and the run ends."""
    pytest.importorskip("xdist")
    pytester.makepyfile(killer=KILLER)
    report = pytester.path / "r.json"
    rc, output, outcomes = _run_watched(
        pytester,
        *QUIET,
        "-n",
        "2",
        "-k",
        "cough_and_fever",  # symmetry and ranking (of cough_and_fever_10_90), each explainer: 4 tests
        "--xai-explainer=killer:kills_its_parent",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={report}",
        tests=4,
    )
    assert rc == 1, output[-3000:]
    assert set(collections.Counter(nodeid for _, nodeid, _ in outcomes).values()) == {1}, outcomes  # none ran again
    results = json.loads(report.read_text())["results"]
    statuses = sorted((r["explainer"], r["check"], r["status"], r["kind"]) for r in results)
    assert statuses == [
        ("exact_shapley", "ranking", "PASS", None),
        ("exact_shapley", "symmetry", "PASS", None),
        ("kills_its_parent", "ranking", "ERROR", "crash"),
        ("kills_its_parent", "symmetry", "ERROR", "crash"),
    ], output[-3000:]


def test_the_record_of_a_test_whose_xdist_worker_died_comes_from_its_node_id():
    """The controller has no items (xdist collects in the workers): a suite test's case and check,
    a user's test's row, come from the node id; a test of no explainer has no record."""
    pytest.importorskip("xdist")
    from pytest_xai.plugin.distributed import crash_record

    names = ["exact_shapley", "zoo_zeros"]
    suite = crash_record("pytest_xai/suite/xai_suite.py::symmetry[cough_and_fever-zoo_zeros]", "gw1", names)
    assert suite is not None and suite.kind == "crash" and "gw1 died" in suite.error
    assert (suite.explainer, suite.case, suite.family, suite.check, suite.row) == (
        "zoo_zeros",
        "cough_and_fever",
        "tabular",
        "symmetry",
        "symmetry[cough_and_fever]",
    )
    user = crash_record("test_mine.py::test_it[3-exact_shapley]", "gw0", names)
    assert user is not None and (user.explainer, user.row, user.case) == (
        "exact_shapley",
        "test_mine.py::test_it[3]",
        None,
    )
    assert crash_record("test_mine.py::test_plain[3]", "gw0", names) is None
    assert crash_record("test_mine.py::test_plain", "gw0", names) is None
