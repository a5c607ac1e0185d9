"""The execution engine (pytest_xai.engine.runner, isolate, worker, wire): workers safe with thread pools,
a CPU-time limit that load does not move, one threshold precedence, and explainers that try to end
the run green or reach other explainers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_xai.engine.runner import LEVELS, resolve_thresholds
from pytest_xai.engine.zygote import THREAD_VARIABLES
from pytest_xai.reports.files import REPORT_FAILED
from tests.test_plugin import QUIET, REF, hostile, run

TOY = "cough_and_fever-"  # symmetry[cough_and_fever-*]: one fast test per explainer


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


def _by_explainer(doc: dict) -> dict:
    return {r["explainer"]: r for r in doc["results"]}


# ------------------------------------------------------------------------- threshold precedence


@pytest.mark.parametrize("strongest", range(len(LEVELS)))
def test_threshold_precedence_over_all_six_levels(strongest):
    """Each level wins over every weaker one and loses to every stronger one."""
    given = {level: {"rtol": float(i)} for i, level in enumerate(LEVELS) if i >= strongest}
    values, sources = resolve_thresholds(
        given.get("default", {"rtol": 5.0}) | {"other": 9.0},
        call=given.get("call"),
        marker=given.get("marker"),
        command_line=given.get("command line"),
        ini=given.get("ini"),
        case=given.get("case"),
    )
    assert values == {"rtol": float(strongest), "other": 9.0}
    assert sources == {"rtol": LEVELS[strongest], "other": "default"}


OWN_THRESHOLD_CASE = """
import dataclasses

from pytest_xai import cases


@cases.register(family="user", category="fidelity", source="test",
                checks={"symmetry": {"features": (0, 1), "mirror": (0, 2, 1, 3), "rtol": 0.3}})
def own_threshold(info, *, seed, cache):
    return dataclasses.replace(cases.get("cough_and_fever", seed=seed, cache=cache), info=info)
"""


def test_the_users_threshold_wins_over_the_cases_own(pytester):
    """A case that declares its own threshold (rtol 0.3) no longer overrides the command line."""
    pytester.makeconftest(OWN_THRESHOLD_CASE)
    report = pytester.path / "r.json"
    pytester.runpytest_subprocess(
        *QUIET,
        "-k",
        "own_threshold",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={report}",
        "--xai-threshold=symmetry.rtol=0.2",
    )
    (rec,) = _report(report)["results"]
    assert (rec["threshold"], rec["threshold_sources"]) == (0.2, {"rtol": "command line"})


# ------------------------------------------------------------------------------ thread pools

KMEANS_WRAPPER = """
import shap


def kernel_shap_kmeans(inputs, predict, background):
    explainer = shap.KernelExplainer(predict, shap.kmeans(background, 10))
    return explainer.shap_values(inputs, silent=True)
"""

XGBOOST_USER_CASE = """
import numpy as np
import xgboost

from pytest_xai import Case, cases


@cases.register(family="user", category="fidelity", source="a user's model", checks={"dummy": {"features": (2,)}})
def user_xgboost_default_threads(info, *, seed, cache):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 3))
    model = xgboost.XGBRegressor(n_estimators=20, max_depth=3).fit(X, X[:, 0] + 2 * X[:, 1])  # default n_jobs
    predict = lambda rows: np.asarray(model.predict(np.asarray(rows, dtype=float)), dtype=float)
    predict(X)  # this process now holds xgboost's OpenMP thread pool
    return Case(info=info, inputs=X[:6], predict=predict, feature_names=["a", "b", "unused"], model=model,
                background=X[:60])
"""


def test_threaded_explainers_and_models_get_their_real_verdict(pytester, monkeypatch):
    """The shap.kmeans KernelSHAP wrapper (sklearn KMeans, OpenMP) and an xgboost model left at its
    default n_jobs, with no thread variable set: each gets its real verdict or its real error,
    never a TIMEOUT (a bare fork of this threaded process used to deadlock both)."""
    for var in THREAD_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(kmeans_mod=KMEANS_WRAPPER)
    pytester.makeconftest(XGBOOST_USER_CASE)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *QUIET,
        "-k",
        "user_xgboost_default_threads or cough_and_fever-",
        f"--xai-report={report}",
        "--xai-explainer=kmeans_mod:kernel_shap_kmeans",
        f"--xai-explainer={REF}:shap_tree",
        "--xai-timeout=60",
    )
    results = {(r["case"], r["explainer"]): r for r in _report(report)["results"]}
    assert result.ret in (0, 1), result.stdout.str()
    assert not [r for r in results.values() if r["status"] == "TIMEOUT"], result.stdout.str()
    for explainer in ("shap_tree", "kernel_shap_kmeans"):  # a verdict (xgboost gives the unused feature a little)
        assert results["user_xgboost_default_threads", explainer]["status"] in ("PASS", "FAIL")
    # Four background rows cannot make ten k-means centres: the library's own error, not a hang.
    assert results["cough_and_fever", "kernel_shap_kmeans"]["status"] == "ERROR"
    assert "raised ValueError" in results["cough_and_fever", "kernel_shap_kmeans"]["error"]


BURNER = """
import time

from pytest_xai.explainers.baselines import exact_shapley


def burns_cpu(inputs, predict, background, target):
    end = time.process_time() + 0.6
    while time.process_time() < end:
        pass
    return exact_shapley(inputs, predict, background, target)
"""


def test_verdicts_do_not_depend_on_machine_load(pytester):
    """The same selection alone and with two CPU-burning processes per core: identical verdicts
    and scores.  The explainer burns 0.6 CPU seconds under a 1.5 CPU-second limit, so only a
    wall-clock limit could be moved by the load."""
    pytester.makepyfile(burner_mod=BURNER)
    pytester.syspathinsert()
    args = ("--xai-explainer=burner_mod:burns_cpu", f"--xai-explainer={REF}:random", "--xai-timeout=1.5")

    def verdicts(name: str) -> dict:
        report = pytester.path / f"{name}.json"
        run(pytester, *args, f"--xai-report={report}")
        return {r["nodeid"]: (r["status"], r["score"]) for r in _report(report)["results"]}

    alone = verdicts("alone")
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        loaded = verdicts("loaded")
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert loaded == alone and len(alone) == 8
    assert {status for (node, (status, _)) in alone.items() if "burns_cpu" in node} == {"PASS"}


# ------------------------------------------------------------------ explainers that go rogue


@pytest.mark.parametrize(
    ("name", "message", "kind"),
    [
        ("raises_poisoned_message", "raised _PoisonedError: poisoned message", "raised"),
        (
            "raises_unprintable",
            "raised _UnprintableError: <text unavailable: converting it raised RuntimeError>",
            "raised",
        ),
        ("exits_process", "its worker process exited with status 0 before replying", "crash"),
        ("raises_system_exit", "raised SystemExit", "raised"),
        ("raises_keyboard_interrupt", "raised KeyboardInterrupt", "raised"),
        ("forges_result", "a forged or stale message", "crash"),
        ("prepared_exits", "its worker process exited with status 0", "crash"),
        ("prepared_sleeps", "was idle", "timeout"),
        ("huge_message", "characters cut", "raised"),
    ],
)
def test_an_explainer_cannot_end_the_run_or_reach_other_explainers(pytester, name, message, kind):
    """Each route fails its own test only: the run goes on, exits 1, and writes its report."""
    report = pytester.path / "r.json"
    result = run(
        pytester,
        hostile(name),
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-timeout=3",
        f"--xai-report={report}",
        k=TOY,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)
    results = _by_explainer(_report(report))
    assert results["exact_shapley"]["status"] == "PASS"
    assert message in results[name]["detail"]
    assert results[name]["kind"] == kind and results[name]["status"] == ("TIMEOUT" if kind == "timeout" else "ERROR")
    assert len(report.read_text()) < 200_000  # a 20 MB message is clipped, not copied twice


def test_prepare_that_changes_its_process_reaches_no_other_explainer(pytester):
    """np.seterr, os.chdir and environment changes in prepare stay in that explainer's worker."""
    report = pytester.path / "r.json"
    result = run(
        pytester,
        hostile("prepared_changes_the_process"),
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={report}",
        k=TOY,
    )
    result.assert_outcomes(passed=1, failed=1)  # its own zeros fail symmetry; exact Shapley passes
    assert os.getcwd() == str(pytester.path) and "XAI_HOSTILE" not in os.environ
    import numpy as np

    assert np.geterr()["divide"] != "raise"


def test_a_grandchild_holding_the_result_channel_does_not_cause_a_timeout(pytester, monkeypatch):
    pids = pytester.path / "pids.txt"
    monkeypatch.setenv("XAI_PID_FILE", str(pids))
    report = pytester.path / "r.json"
    result = run(pytester, hostile("leaves_grandchild"), "--xai-timeout=5", f"--xai-report={report}", k=TOY)
    result.assert_outcomes(passed=1)
    (pid,) = map(int, pids.read_text().split())
    assert not _still_alive([pid]), "the explainer's grandchild outlived the session"


@pytest.mark.parametrize("timeout", ["3", "0"])
def test_a_mutated_case_model_reaches_no_other_explainer(pytester, timeout):
    """In workers and in-process (where each call gets its own copy of the case)."""
    report = pytester.path / "r.json"
    result = run(
        pytester,
        hostile("mutates_model"),
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-timeout={timeout}",
        f"--xai-report={report}",
        k=TOY,
    )
    result.assert_outcomes(passed=1, failed=1)
    assert _by_explainer(_report(report))["exact_shapley"]["status"] == "PASS"


def test_in_process_mode_says_so_and_survives_exits_and_interrupts(pytester):
    report = pytester.path / "r.json"
    result = run(
        pytester,
        hostile("raises_system_exit"),
        hostile("raises_keyboard_interrupt"),
        f"--xai-explainer={REF}:exact_shapley",
        "--xai-timeout=0",
        f"--xai-report={report}",
        k=TOY,
    )
    result.stdout.fnmatch_lines(["xai: seed=0, timeout=none: calls run IN-PROCESS, without isolation*"])
    result.assert_outcomes(passed=1, failed=2)
    assert _report(report)["options"]["isolation"] == "in-process (no isolation)"


# ------------------------------------------------------------------ signals to the session


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    ppid = int(fh.read().rpartition(b")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[0] != b"Z"
    except OSError:
        return False


def _still_alive(pids, within: float = 30.0) -> list[int]:
    """The processes of ``pids`` still running after ``within`` seconds: a SIGKILL takes effect
    when the kernel next schedules its target, which on a loaded machine is not at once."""
    deadline = time.monotonic() + within
    while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


#: ``python -m pytest`` with SIGINT and SIGTERM at Python's defaults and unblocked, however this
#: pytest was started: a background job or a CI runner ignores SIGINT, an ignored disposition
#: survives exec, and Python leaves it ignored (the inner pytest then never saw the signal).
PYTEST_WITH_DEFAULT_SIGNALS = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "signal.signal(signal.SIGTERM, signal.SIG_DFL); "
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM)); "
    "import pytest; sys.exit(pytest.console_main())"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_pytest_stops_a_hung_explainer_and_leaves_no_process(pytester, signum):
    """Sent to the pytest process alone (not its group): the hung worker is killed at once, the
    run ends interrupted (rc 2) with its report, and no process it started is left (by PID)."""
    report, printed = pytester.path / "r.json", pytester.path / "printed.txt"
    # -X faulthandler: a hang is diagnosed by the stacks SIGABRT dumps.  Without hypothesis' plugin,
    # which imports hypothesis at the terminal summary (1-4 s on a loaded machine), only ours is timed.
    with printed.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-X",
                "faulthandler",
                "-c",
                PYTEST_WITH_DEFAULT_SIGNALS,
                *QUIET,
                "-p",
                "no:hypothesispytest",
                "-k",
                TOY,
                hostile("sleeps_forever"),
                "--xai-timeout=600",
                f"--xai-report={report}",
            ],
            cwd=pytester.path,
            stdout=out,
            stderr=out,
        )
    deadline = time.monotonic() + 120
    while not any(len(_descendants(child)) for child in _descendants(proc.pid)):  # zygote -> worker
        assert time.monotonic() < deadline and proc.poll() is None, "the worker never started"
        time.sleep(0.05)
    time.sleep(0.5)  # the call is under way
    started = _descendants(proc.pid)
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        tree = {pid: _command(pid) for pid in _descendants(proc.pid)}
        try:
            with open(f"/proc/{proc.pid}/status") as fh:  # blocked (SigBlk) or ignored (SigIgn) signals?
                masks = [line.strip() for line in fh if line.startswith("Sig")]
        except OSError:
            masks = ["it ended just after the wait"]
        proc.send_signal(signal.SIGABRT)
        proc.wait(timeout=30)
        pytest.fail(
            f"pytest did not end within 60 s of the signal; {masks}; its processes: {tree}; it printed:\n"
            f"{printed.read_text(errors='replace')[-20000:]}"
        )
    assert code == pytest.ExitCode.INTERRUPTED, printed.read_text(errors="replace")[-5000:]
    print(f"{signal.Signals(signum).name}: pytest ended {time.monotonic() - sent:.2f} s after the signal")
    assert _report(report)["exitstatus"] == pytest.ExitCode.INTERRUPTED
    assert not _still_alive(started)


def test_sanity_checks_reexplain_randomised_models_in_the_worker(pytester):
    """The worker finds its own copy of each randomised model (cascade, random floor, memoriser)."""
    pytest.importorskip("captum")
    report = pytester.path / "r.json"
    pytester.runpytest(
        "-p", "no:randomly", "-k", "randomisation", f"--xai-explainer={REF}:saliency", f"--xai-report={report}"
    )
    results = _report(report)["results"]
    assert sorted(r["check"] for r in results) == ["data_randomisation", "model_randomisation"]
    assert {r["status"] for r in results} == {"PASS"}, [r["detail"] for r in results]


class _Interrupt(BaseException):
    pass


def test_a_second_ctrl_c_while_a_background_job_finishes_leaves_the_turns_intact():
    """Ctrl-C during a call, and again while the test thread waits for the background job to hand
    back the lock: the interrupt reaches the test thread once the lock is its own, the background
    thread lives on, and the session's last ``drain`` returns."""
    import threading

    from pytest_xai.plugin.state import Background

    def interrupt(signum, frame):  # the second Ctrl-C; the job finishes only after it
        release.set()
        raise _Interrupt

    background, release, ran = Background(), threading.Event(), []
    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        with pytest.raises(_Interrupt), background.waiting():  # raised as the waiting ends
            background.add(lambda: (release.wait(10), ran.append("job")))
            while background.jobs:
                time.sleep(0.01)
            time.sleep(0.1)  # the job has started: it holds the lock
            main = threading.get_ident()
            threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGUSR1)).start()
            raise KeyboardInterrupt  # the first, in the call
        assert ran == ["job"]
        background.add(lambda: ran.append("after"))
        background.drain()  # with the lock lost, this raised or waited forever
        assert ran == ["job", "after"]
    finally:
        signal.signal(signal.SIGUSR1, previous)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks")
def test_a_worker_forked_as_ctrl_c_interrupts_the_request_ends_by_itself(bare_zygote, monkeypatch):
    """Ctrl-C between the zygote's fork and its answer: the plugin never learns the worker's pid,
    so it cannot kill it; closing its request channel lets the worker read EOF and end."""
    from pytest_xai.engine.isolate import Worker
    from pytest_xai.engine.zygote import Zygote

    forked = []

    def interrupted(self, fds):
        forked.append(self._ask({"op": "fork"}, fds)["pid"])
        raise KeyboardInterrupt

    monkeypatch.setattr(Zygote, "_shared", bare_zygote)
    monkeypatch.setattr(Zygote, "fork", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Worker(f"{REF}:exact_shapley")
    assert not _still_alive(forked), "the worker the plugin never heard of is still running"


def test_hooks_are_case_fields_and_a_hand_made_case_reaches_the_worker_without_them():
    """A hand-made case goes to the worker pickled without its hooks (lambdas do not pickle); its
    ``swap_model`` runs here, so the worker explains the swapped model.  Hooks in ``meta`` are refused."""
    import dataclasses

    import numpy as np
    from sklearn.linear_model import LinearRegression

    import pytest_xai
    from pytest_xai.cache import Cache
    from pytest_xai.engine import contract
    from pytest_xai.engine.isolate import Limits
    from pytest_xai.engine.runner import Runner

    X = np.random.default_rng(0).normal(size=(40, 3))
    first, second = (LinearRegression().fit(X, X @ w) for w in ([1.0, 2.0, 0.0], [0.0, -1.0, 3.0]))
    case = dataclasses.replace(
        pytest_xai.make_case(X[:5], model=first, background=X[:8]),
        draw=lambda *a: None,
        swap_model=lambda c, model: dataclasses.replace(c, model=model, predict=model.predict),
    )
    runner = Runner(seed=0, limits=Limits(cpu=60, wall=120), cache=Cache(None), data_dir=None)
    explainer = contract.load(f"{REF}:exact_shapley")
    try:
        outcome, _ = runner.explain(explainer, case)
        swapped = runner.reexplain(explainer, case, second)
    finally:
        runner.close()
    centred = X[:5] - X[:8].mean(axis=0)
    assert outcome.status == "ok", outcome.message
    np.testing.assert_allclose(outcome.explanation.attributions, centred * [1.0, 2.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(swapped, centred * [0.0, -1.0, 3.0], atol=1e-6)
    with pytest.raises(TypeError, match=r"meta\['draw'\] is no longer read; pass draw= to Case"):
        dataclasses.replace(case, meta={"draw": print})


def test_reexplain_memoises_other_models_and_the_other_seed_but_repeats_the_same_call():
    """The two sanity checks share the floor models and the reseeded explanation: each is computed
    once.  The same model under the same seed (``determinism``'s second call) and explanations of
    other inputs are computed every time."""
    import dataclasses

    import numpy as np
    from sklearn.linear_model import LinearRegression

    import pytest_xai
    from pytest_xai.cache import Cache
    from pytest_xai.engine.contract import Explainer
    from pytest_xai.engine.runner import Runner

    calls: list[int] = []

    def counted(inputs, predict, seed):
        calls.append(seed)
        return predict(inputs)[:, None] * np.ones_like(inputs)

    X = np.random.default_rng(0).normal(size=(40, 3))
    first, second = (LinearRegression().fit(X, X @ w) for w in ([1.0, 2.0, 0.0], [0.0, -1.0, 3.0]))
    case = pytest_xai.make_case(X[:5], model=first, background=X[:8])
    case = dataclasses.replace(
        case,
        meta={**case.meta, "random_models": (second,)},
        swap_model=lambda c, model: dataclasses.replace(c, model=model, predict=model.predict),
    )
    runner = Runner(seed=0, limits=None, cache=Cache(None), data_dir=None)
    explainer = Explainer("counted", "tests:counted", counted, ("inputs", "predict", "seed"))
    runner.explain(explainer, case)
    for _ in range(2):
        swapped = runner.reexplain(explainer, case, second)
        runner.reexplain(explainer, case, first, other_seed=True)
    assert len(calls) == 3
    np.testing.assert_allclose(swapped[:, 0], second.predict(X[:5]))
    runner.reexplain(explainer, case)
    runner.reexplain(explainer, case)
    runner.reexplain(explainer, case, second, rows=[0, 1])
    runner.reexplain(explainer, case, second, rows=[0, 1])
    assert len(calls) == 7


def test_a_report_that_cannot_be_written_at_the_end_never_exits_0(pytester):
    """The report's folder turned into a file during the run: the run says so and exits 6."""
    out = pytester.path / "out"
    out.mkdir()
    pytester.makepyfile(
        test_breaks=f"""
        import shutil

        def test_passes_and_breaks_the_report_folder(xai_explainer):
            shutil.rmtree({str(out)!r})
            open({str(out)!r}, "w").close()
    """
    )
    result = run(
        pytester,
        "test_breaks.py",
        "--xai-no-suite",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={out / 'r.json'}",
        tabular=False,
    )
    assert result.ret == REPORT_FAILED
    assert "could not write the JSON report" in result.stderr.str()


def test_reports_agree_with_pytest(pytester):
    """Rows are keyed by test (a user test named like a suite test keeps its own row), a user test
    that passes without xai_check is a PASS, and each JUnit property appears once."""
    pytester.makepyfile(
        test_user="""
        def test_symmetry(xai_explainer, xai_case, xai_explain):
            xai_explain(xai_explainer, xai_case("cough_and_fever"))
    """
    )
    report, junit = pytester.path / "r.json", pytester.path / "junit.xml"
    result = run(
        pytester,
        "test_user.py",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={report}",
        f"--junitxml={junit}",
        k="symmetry",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["symmetry[[]cough_and_fever[]] *PASS 1.000*", "test_user.py::test_symmetry *PASS*"])
    user = next(r for r in _report(report)["results"] if r["nodeid"].startswith("test_user.py"))
    assert (user["status"], user["passed"], user["row"]) == ("PASS", True, "test_user.py::test_symmetry")
    import xml.etree.ElementTree as ET

    for case in ET.parse(junit).iter("testcase"):
        names = [p.get("name") for p in case.iter("property")]
        assert len(names) == len(set(names)), names


def test_benchmark_does_not_warn_on_a_memoised_explanation(pytester):
    pytest.importorskip("pytest_benchmark")
    pytester.makepyfile(
        test_bench_user="""
        def test_first(xai_explainer, xai_case, xai_explain, benchmark):
            xai_explain(xai_explainer, xai_case("cough_and_fever"))

        def test_second_shares_the_call(xai_explainer, xai_case, xai_explain, benchmark):
            xai_explain(xai_explainer, xai_case("cough_and_fever"))
    """
    )
    result = run(
        pytester, "test_bench_user.py", "--xai-no-suite", f"--xai-explainer={REF}:exact_shapley", tabular=False
    )
    result.assert_outcomes(passed=2)
    assert "not used" not in result.stdout.str() + result.stderr.str()


PREFETCHED_CASES = """
import os
import warnings

import numpy as np

from pytest_xai import Case, cases


def _case(info):
    with open("built.txt", "a") as fh:
        fh.write(f"{info.name} {os.getpid()}\\n")
    warnings.warn(f"built {info.name}", UserWarning)
    X = np.random.default_rng(0).normal(size=(30, 3))
    predict = lambda rows: np.asarray(rows, dtype=float) @ [1.0, 2.0, 0.0]
    return Case(info=info, inputs=X[:4], predict=predict, feature_names=["a", "b", "unused"], model=predict,
                background=X)


@cases.register(family="user", category="fidelity", source="test", checks={"dummy": {"features": (2,)}})
def prefetch_first(info, *, seed, cache):
    return _case(info)


@cases.register(family="user", category="fidelity", source="test", checks={"dummy": {"features": (2,)}})
def prefetch_second(info, *, seed, cache):
    return _case(info)
"""


def test_no_case_is_built_in_pytests_process_and_a_builders_warnings_reach_the_first_test_of_its_case(pytester):
    """The workers build the cases (the judge's worker vets each first); pytest's process builds
    none.  The warning a builder raised in the judge's worker is shown under the first test of its
    case, not another's."""
    pytester.makeconftest(PREFETCHED_CASES)
    result = pytester.runpytest(*QUIET, "-k", "prefetch_", f"--xai-explainer={REF}:exact_shapley", "-W", "always")
    assert result.ret == 0, result.stdout.str()
    built = (pytester.path / "built.txt").read_text().splitlines()
    assert {line.split()[0] for line in built} == {"prefetch_first", "prefetch_second"}
    assert str(os.getpid()) not in {line.split()[1] for line in built}  # pytester runs pytest in this process
    out = result.stdout.str()
    summary = out[out.index("warnings summary") :]
    first, second = (summary.index(f"dummy[prefetch_{n}-exact_shapley]") for n in ("first", "second"))
    assert "UserWarning: built prefetch_second" in summary[second:]
    assert "UserWarning: built prefetch_second" not in summary[:second]
    assert "UserWarning: built prefetch_first" in summary[first:second]


def test_a_call_names_the_next_case_and_its_worker_builds_it_once_it_has_replied():
    """The runner tells the worker which case the next test will ask for (``Runner.upcoming``); the
    worker builds it after its reply, while the plugin scores, and leaves a failure to that call."""
    import numpy as np

    from pytest_xai import cases
    from pytest_xai.cache import Cache
    from pytest_xai.engine import contract, worker
    from pytest_xai.engine.isolate import Limits
    from pytest_xai.engine.runner import Runner

    case = cases.get("units_boolean_and", cache=Cache(None))
    sent: list[dict] = []

    class Pool:  # the pool's side of one call: what the worker is sent, and a valid reply
        def explain(self, spec, request, case=None, watch=None):
            sent.append(request)
            return {"kind": "ok", "seconds": 0.0}, {"attributions": np.zeros(cases.get(request["case"]).inputs.shape)}

        def call(self, spec, request, case=None, blob=b"", answer=None):  # the judge's worker vets the case
            shape = list(cases.get(request["case"]).inputs.shape)
            return {"kind": "ok", "shape": shape, "target": None, "budget": 1000, "warnings": []}, {}

        def send(self, spec, request, case=None):  # sent ahead of the explainer's call, read after it
            return None, request

        def receive(self, spec, worker, sent, request, case=None):
            return self.call(spec, request)

    runner = Runner(seed=0, limits=Limits(cpu=10.0, wall=100.0), cache=Cache(None), data_dir=None)
    runner._pool = Pool()  # type: ignore[assignment]
    runner.upcoming = "detect_interaction0"
    runner.explain(contract.load(f"{REF}:exact_shapley", option="test"), case)
    assert sent[0]["case"] == "units_boolean_and"
    assert {k: sent[0]["next"][k] for k in ("case", "case_seed", "cache_root")} == {
        "case": "detect_interaction0",
        "case_seed": sent[0]["case_seed"],
        "cache_root": None,
    }

    runner.upcoming = "no_such_case"  # a name that is no registered case: nothing to build ahead
    runner.explain(contract.load(f"{REF}:exact_shapley", option="test"), cases.get("units_boolean_or"))
    assert "next" not in sent[1]

    serving = worker.Worker()
    serving.explainer, serving.ready = contract.load(f"{REF}:exact_shapley", option="test"), True
    serving.prebuild(sent[0])
    assert ("detect_interaction0", sent[0]["case_seed"], None, None) in serving.cases
    serving.prebuild({"next": {**sent[0]["next"], "case": "no_such_case"}})  # the call that needs it says so
    assert len(serving.cases) == 1


def test_every_wait_for_a_worker_is_one_the_plugins_background_work_can_fill():
    """Sending the vetting to the judge's worker waits for the zygote to fork it (its imports first,
    seconds on a first test): it is inside ``Runner.waiting`` like the calls, so the plugin's own
    work queued for the first wait (importing ahead) runs then, not after the explainer's reply."""
    import contextlib

    import numpy as np

    from pytest_xai import cases
    from pytest_xai.cache import Cache
    from pytest_xai.engine import contract
    from pytest_xai.engine.isolate import Limits
    from pytest_xai.engine.runner import Runner

    case = cases.get("units_boolean_and", cache=Cache(None))
    inside: list[bool] = []
    waits = [0]

    class Pool:  # records whether each operation ran while the test thread was waiting
        def explain(self, spec, request, case=None, watch=None):
            inside.append(waits[0] > 0)
            return {"kind": "ok", "seconds": 0.0}, {"attributions": np.zeros(cases.get(request["case"]).inputs.shape)}

        def call(self, spec, request, case=None, blob=b"", answer=None):
            inside.append(waits[0] > 0)
            shape = list(cases.get(request["case"]).inputs.shape)
            return {"kind": "ok", "shape": shape, "target": None, "budget": 1000, "warnings": []}, {}

        def send(self, spec, request, case=None):
            inside.append(waits[0] > 0)
            return None, request

        def receive(self, spec, worker, sent, request, case=None):
            return self.call(spec, request)

    @contextlib.contextmanager
    def waiting():
        waits[0] += 1
        try:
            yield
        finally:
            waits[0] -= 1

    runner = Runner(seed=0, limits=Limits(cpu=10.0, wall=100.0), cache=Cache(None), data_dir=None)
    runner._pool = Pool()  # type: ignore[assignment]
    runner.waiting = waiting
    runner.explain(contract.load(f"{REF}:exact_shapley", option="test"), case)
    assert inside and all(inside), inside


def test_the_garbage_collector_is_on_again_after_a_session(pytester):
    """It is off while the plugin's process imports the cases' libraries, and on again from the first
    wait for a worker, or at the end of a session that waited for none."""
    import gc

    assert gc.isenabled()
    run(pytester, f"--xai-explainer={REF}:exact_shapley", k=TOY).assert_outcomes(passed=1)
    assert gc.isenabled()
    run(pytester, f"--xai-explainer={REF}:exact_shapley", k="no_test_has_this_name")
    assert gc.isenabled()
    gc.disable()  # the user's choice is left alone
    try:
        run(pytester, f"--xai-explainer={REF}:exact_shapley", k=TOY).assert_outcomes(passed=1)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_under_xdist_the_costliest_groups_of_the_last_run_come_first(pytester):
    """The seconds per (case, explainer) recorded at the end of a run order the next run's suite
    groups, costliest first; an unknown pair is costed at its case's mean; other tests keep their place."""
    from pytest_xai.plugin import _costliest_first

    pytester.makepyfile(test_user="def test_mine():\n    pass\n")
    items, _ = pytester.inline_genitems(
        "test_user.py",
        "-p",
        "no:randomly",
        "-k",
        "cough_and_fever or a_and_b_or_c or test_mine",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-explainer={REF}:random",
    )
    names = [item.name for item in items]
    costs = {
        "a_and_b_or_c-exact_shapley": 9.0,
        "cough_and_fever_10_90-random": 5.0,
        "cough_and_fever-random": 1.0,
        "cough_and_fever-exact_shapley": 3.0,
    }
    _costliest_first(items, costs)
    ordered = [item.name for item in items]
    assert ordered.index("test_mine") == names.index("test_mine")
    suite = [n for n in ordered if n != "test_mine"]
    assert suite[0] == "ranking[a_and_b_or_c-exact_shapley]"
    expected = {
        "a_and_b_or_c-exact_shapley": 9.0,
        "a_and_b_or_c-random": 9.0,
        "cough_and_fever_10_90-random": 5.0,
        "cough_and_fever_10_90-exact_shapley": 5.0,
        "cough_and_fever-exact_shapley": 3.0,
        "cough_and_fever-random": 1.0,
    }
    cost = [expected.get(n.partition("[")[2].rstrip("]"), 0.0) for n in suite]  # -k also picks other cases
    assert cost == sorted(cost, reverse=True) and cost.count(0.0) == len(suite) - len(expected)
    unchanged = [item.name for item in items]
    _costliest_first(items, {})
    assert [item.name for item in items] == unchanged


BAD_DRAWING = """
import numpy as np

from pytest_xai import Case, cases


def draw(path, case, attributions, row):
    raise RuntimeError("no canvas here")


@cases.register(family="user", category="fidelity", source="test",
                checks={"symmetry": {"features": (0, 1), "mirror": (1, 0)}})
def badly_drawn(info, *, seed, cache):
    X = np.array([[1.0, 2.0], [2.0, 1.0]])
    predict = lambda rows: np.prod(np.asarray(rows, dtype=float), axis=1)
    return Case(info=info, inputs=X, predict=predict, feature_names=["a", "b"], model=predict,
                background=np.zeros((1, 2)), draw=draw)
"""


def test_a_picture_that_cannot_be_drawn_is_reported_at_the_end_and_left_out_of_the_report(pytester):
    """Pictures are drawn in the background: a failing drawing never fails its test; the run says
    which picture failed and why, and the JSON report names no picture for it."""
    pytester.makeconftest(BAD_DRAWING)
    report = pytester.path / "r.json"
    result = pytester.runpytest(*QUIET, "-k", "badly_drawn", f"--xai-explainer={REF}:random", f"--xai-report={report}")
    (rec,) = _report(report)["results"]
    assert rec["status"] == "FAIL" and rec["picture"] is None, rec  # random attributions are not symmetric
    result.stdout.fnmatch_lines(["pytest-xai: could not draw the worst example of symmetry*badly_drawn*RuntimeError*"])


PARENT_RECORDER = """
import os, sys

def explain(inputs):
    with open(os.environ["XAI_PARENTS"], "a") as out:
        out.write(f"{os.environ.get('PYTEST_XDIST_WORKER')} {os.getppid()} {os.getpid()} {'torch' in sys.modules}\\n")
    return inputs * 0.0 + 1.0
"""


WORKER_RECORDER = """
import os, sys

def pytest_configure(config):
    if hasattr(config, "workerinput"):  # before any case is built: what the worker started with
        with open(os.environ["XAI_WORKERS"], "a") as out:
            out.write(f"{config.workerinput['workerid']} {os.getppid()} {'torch' in sys.modules} "
                      f"{'shap' in sys.modules} {'pytest_xai.cases.gaussian' in sys.modules}\\n")
"""


def test_under_xdist_the_workers_and_their_explainers_are_children_of_the_one_zygote(pytester, monkeypatch):
    """``-n 2``: the controller starts one zygote; the xdist workers are its forks, with the case
    families imported, and so are both workers' explainer processes, forked once the zygote has
    imported torch (its imports are made once for the run, not once per process).  The xdist
    workers, which build no case, are forked without waiting for it."""
    pytest.importorskip("xdist")
    pytester.makepyfile(recorder=PARENT_RECORDER)
    pytester.makeconftest(WORKER_RECORDER)
    parents, workers = pytester.path / "parents.txt", pytester.path / "workers.txt"
    monkeypatch.setenv("XAI_PARENTS", str(parents))
    monkeypatch.setenv("XAI_WORKERS", str(workers))
    result = pytester.runpytest_subprocess(
        "-p",
        "no:randomly",
        "-n",
        "2",
        "-k",
        "cough_and_fever or a_and_b_or_c",
        f"--xai-explainer={pytester.path / 'recorder.py'}:explain",
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    rows = [line.split() for line in parents.read_text().splitlines()]
    assert {row[0] for row in rows} == {"gw0", "gw1"}
    zygotes = {row[1] for row in rows}
    assert len(zygotes) == 1, rows
    assert {row[3] for row in rows} == {"True"}  # the explainers' processes: torch imported by the zygote
    started = sorted(line.split() for line in workers.read_text().splitlines())
    # the case families imported (by the zygote), shap not: this explainer does not use it; torch
    # perhaps (a worker started late finds it imported), never waited for
    assert [[row[0], row[1], row[3], row[4]] for row in started] == [  # id, parent, shap, the families
        ["gw0", *zygotes, "False", "True"],
        ["gw1", *zygotes, "False", "True"],
    ], (started, zygotes)
    with pytest.raises(ProcessLookupError):  # gone with the run
        os.kill(int(zygotes.pop()), 0)


def test_xdist_workers_fork_before_the_zygote_imports_the_explainers_library(pytester, monkeypatch):
    """``-n 2`` with KernelSHAP: the xdist workers (which never call shap) are forked before the
    zygote imports shap; the explainer processes forked after have it, and the run gives verdicts."""
    pytest.importorskip("xdist")
    pytest.importorskip("shap")
    pytester.makeconftest(WORKER_RECORDER)
    workers = pytester.path / "workers.txt"
    monkeypatch.setenv("XAI_WORKERS", str(workers))
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:randomly",
        "-n",
        "2",
        "-k",
        "symmetry and cough_and_fever",
        f"--xai-explainer={REF}:shap_kernel",
        f"--xai-report={report}",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert [line.split()[3] for line in workers.read_text().splitlines()] == ["False"] * 2  # no shap
    assert [r["status"] for r in _report(report)["results"]] == ["PASS"]


def test_forked_xdist_workers_do_not_warn_that_pytest_xai_cannot_be_rewritten(tmp_path):
    """pytest marks an installed plugin's package for assert rewriting and warns in each worker
    that already imported it, as a fork of the zygote has (found from this checkout's metadata when
    it is installed in place, as it is here and in CI; a wheel's metadata lists it too)."""
    pytest.importorskip("xdist")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:randomly",
            "-n",
            "2",
            "-o",
            f"cache_dir={tmp_path}",
            "-k",
            "symmetry and cough_and_fever",
            f"--xai-explainer={REF}:exact_shapley",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout and "PytestAssertRewriteWarning" not in done.stdout, done.stdout[-2000:]


ZYGOTE_RECORDER = """
import os

def pytest_configure(config):
    if hasattr(config, "workerinput"):  # the xdist worker's parent is the zygote: its libraries to preload
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as cmdline:
            args = cmdline.read().decode().split("\\0")[:-1]
        with open(os.environ["XAI_ZYGOTE_ARGS"], "w") as out:
            out.write(" ".join(args[args.index("pytest_xai.engine.zygote"):]))
"""


@pytest.mark.parametrize("user", [False, True], ids=["reference explainer", "user explainer"])
def test_the_zygote_preloads_other_explainer_libraries_only_for_a_user_explainer(pytester, monkeypatch, user):
    """A run of reference explainers knows their libraries: the zygote imports no other (an import
    under way holds back the next fork).  A user's explainer may import any of them on its first
    call, so then they are imported while the zygote waits."""
    pytest.importorskip("xdist")
    pytest.importorskip("shap")
    pytester.makeconftest(ZYGOTE_RECORDER)
    pytester.makepyfile(recorder=PARENT_RECORDER)
    args = pytester.path / "zygote.txt"
    monkeypatch.setenv("XAI_ZYGOTE_ARGS", str(args))
    monkeypatch.setenv("XAI_PARENTS", str(pytester.path / "parents.txt"))
    spec = f"{pytester.path / 'recorder.py'}:explain" if user else f"{REF}:exact_shapley"
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-n", "2", "-k", "symmetry and cough_and_fever", f"--xai-explainer={spec}"
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    zygote = args.read_text().split()
    later = zygote[len(zygote) - zygote[::-1].index("--") :]  # NOW... -- BEFORE_FORK... -- LATER...
    assert "torch" in zygote and ("shap" in later) == user, zygote


def _recorded(pytester, monkeypatch, recorder: str, *args: str) -> list[str]:
    """The lines ``recorder`` (a user's explainer module) wrote to the file ``$XAI_RECORD`` in a
    serial run of ``args`` with it as an explainer (after any other in ``args``)."""
    pytester.makepyfile(recorder=recorder)
    record = pytester.path / "record.txt"
    monkeypatch.setenv("XAI_RECORD", str(record))
    result = pytester.runpytest_subprocess("-p", "no:randomly", *args, "--xai-explainer=recorder.py:explain")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    return record.read_text().splitlines()


MODULES_RECORDER = """
import os, sys

def explain(inputs):
    with open(os.environ["XAI_RECORD"], "a") as out:
        out.write(" ".join(m for m in ("chess", "xgboost", "torch", "captum") if m in sys.modules) + "\\n")
    return inputs * 0.0 + 1.0
"""


def test_the_zygote_imports_only_the_libraries_of_the_collected_cases(pytester, monkeypatch):
    """Serially, the plugin tells the zygote the model libraries of the collected tests' cases: a run
    of cough_and_fever (an XGBoost model) forks its workers with xgboost imported, without
    python-chess, and without torch unless an explainer library brought it (captum, imported while
    the zygote waits for a user's explainer); the case's torch twin is built only when asked for."""
    (line,) = _recorded(pytester, monkeypatch, MODULES_RECORDER, "-k", "symmetry and cough_and_fever")
    seen = set(line.split())
    assert "xgboost" in seen and "chess" not in seen, seen
    assert "torch" not in seen or "captum" in seen, seen


PREPARE_RECORDER = """
import os, sys

def explain(inputs):
    return inputs * 0.0 + 1.0

def _prepare():  # in the explainer's worker, before it builds any case: what the zygote imported
    with open(os.environ["XAI_RECORD"], "a") as out:
        out.write(" ".join(sorted(m for m in sys.modules if m.startswith("transformers.models"))) + "\\n")

explain.prepare = _prepare
"""


def test_the_zygote_imports_the_language_models_module_of_a_run_with_llm_cases(pytester, monkeypatch):
    """``import transformers`` is lazy: the GPT-2 model's modules load when a case first names
    ``GPT2LMHeadModel`` (about 2 CPU s), so each worker that built an llm case paid them again.  The
    llm family declares the module itself, and the zygote imports it before it forks the workers."""
    pytest.importorskip("transformers")
    selection = "token_mask_precision and llm_copy and not continuation"
    (line,) = _recorded(pytester, monkeypatch, PREPARE_RECORDER, "-k", selection)
    seen = set(line.split())
    assert "transformers.models.gpt2.modeling_gpt2" in seen, seen


NUMBA_RECORDER = """
import os, sys

def explain(inputs):  # in a fork of the zygote: how many of shap's numba functions came compiled
    import shap.utils._masked_model as masked

    compiled = [n for n, f in vars(masked).items() if getattr(f, "signatures", None)]
    with open(os.environ["XAI_RECORD"], "a") as out:
        out.write(f"{len(compiled)}\\n")
    return inputs * 0.0 + 1.0
"""


def test_the_zygote_compiles_what_each_reference_explainers_prepare_compiles():
    """``explainers.compiled_by`` (read without importing shap) names the ``prepare`` of exactly the
    reference explainers that have one: one that gains a prepare, or loses it, is not forgotten."""
    pytest.importorskip("shap")
    import importlib

    from pytest_xai import explainers

    for name in ("shap_kernel", "shap_tree", "shap_exact", "shap_permutation", "shap_partition", "exact_shapley"):
        prepare = getattr(getattr(explainers, name), "prepare", None)
        compiled = explainers.compiled_by(name)
        if compiled is None:
            assert prepare is None, name
        else:
            module, _, function = compiled.partition(":")
            assert prepare is getattr(importlib.import_module(module), function), name


def test_the_zygote_compiles_shaps_numba_functions_once_for_every_worker_it_forks(pytester, monkeypatch):
    """shap's Exact, Permutation and Partition explainers JIT-compile numba functions (about 7 CPU s),
    which each of their workers paid in ``prepare``: a second one, a restart after a timeout, a spare.
    With one of them in the run, the zygote compiles them before its first fork, so every worker it
    forks has them compiled (here a user's explainer beside shap_permutation)."""
    pytest.importorskip("shap")
    selection = "symmetry and cough_and_fever and not 10_90"
    (compiled,) = _recorded(
        pytester, monkeypatch, NUMBA_RECORDER, "-k", selection, "--xai-explainer=pytest_xai.explainers:shap_permutation"
    )
    assert int(compiled) > 0, compiled


ZYGOTE_GROUPS = """
import os

def explain(inputs):  # in a fork of the zygote: its command line, NOW -- BEFORE_FORK -- HELD -- LATER
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as cmdline:
        args = cmdline.read().decode().split("\\0")[:-1]
    with open(os.environ["XAI_ZYGOTE_ARGS"], "a") as out:
        out.write(" ".join(args[args.index("pytest_xai.engine.zygote") + 2 :]) + "\\n")
    return inputs * 0.0 + 1.0
"""


def test_the_same_command_again_imports_its_model_libraries_without_waiting_for_collection(pytester, monkeypatch):
    """The first run holds the model libraries until collection says which it needs; the same
    command run again (pytest's cache) starts a zygote that imports those at once."""
    pytester.makepyfile(recorder=ZYGOTE_GROUPS)
    args = pytester.path / "zygote.txt"
    monkeypatch.setenv("XAI_ZYGOTE_ARGS", str(args))
    command = ("-p", "no:randomly", "-k", "symmetry and cough_and_fever", "--xai-explainer=recorder.py:explain")
    for _ in range(2):
        result = pytester.runpytest_subprocess(*command)
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    groups = []
    for line in args.read_text().splitlines():
        words = line.split()
        one, two, three = (i for i, word in enumerate(words) if word == "--")
        groups.append((words[one + 1 : two], words[two + 1 : three]))
    (first_before, first_held), (again_before, again_held) = groups
    assert "xgboost" in first_held and "xgboost" not in first_before, groups
    assert "xgboost" in again_before and "xgboost" not in again_held and "chess" in again_held, groups


def test_held_libraries_wait_for_the_runs_needs():
    """The zygote's server: held libraries are imported only before a fork (never while it waits),
    and a ``need`` request replaces them (and any pending model library) by what the run needs."""
    from pytest_xai.engine.zygote import Server

    server = Server(None, None, ["captum.attr", "sklearn.tree"], [], [], held=["torch", "chess"])  # type: ignore[arg-type]
    assert server.idle() == 0.0  # the expected ones at once
    server.pending.clear()
    assert server.idle() is None  # torch and chess wait for a fork or a need
    server.pending[:] = ["captum.attr", "sklearn.tree", "transformers"]  # an llm case's, expected
    needed = {"op": "need", "modules": ["sys", "a_model_library"]}  # sys is imported already
    assert server.need(needed, []) == {"pending": ["captum.attr", "a_model_library"]}
    assert server.held == [] and server.idle() == 0.0


def test_a_tx_the_user_wrote_is_left_as_written(pytester, monkeypatch):
    """Only the plain ``popen`` workers of ``-n N`` are forked from the zygote; ``--tx popen`` spelled
    out with a python of the user's runs that python."""
    pytest.importorskip("xdist")
    pytester.makeconftest(WORKER_RECORDER)
    workers = pytester.path / "workers.txt"
    monkeypatch.setenv("XAI_WORKERS", str(workers))
    result = pytester.runpytest_subprocess(
        "-p",
        "no:randomly",
        "--dist",
        "load",
        "--tx",
        f"popen//python={sys.executable}",
        "-k",
        "cough_and_fever",
        f"--xai-explainer={REF}:random",
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    ((_, _, torch, _, _),) = [line.split() for line in workers.read_text().splitlines()]
    assert torch == "False"  # a fresh python: nothing preloaded


@pytest.fixture
def bare_zygote():
    """A zygote that preloads only numpy.random (it starts in a fraction of a second), listening as under -n N."""
    import socket
    import tempfile

    from pytest_xai.engine.zygote import Zygote

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(os.path.join(tempfile.mkdtemp(prefix="xai-test-zygote-"), "socket"))
    listener.listen()
    zygote = Zygote(["numpy.random"], [], listener)
    yield zygote
    zygote.stop()


def _forked_python(address: str, code: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest_xai.engine.xdist_worker", address, "-u", "-c", code, "an", "arg"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


FORKED = """
import os, sys
print(os.getppid(), os.getcwd(), os.environ["XAI_SEEN"], sys.argv, sys.path[0] == "", sys.stdin.readline().strip())
print("to stderr", file=sys.stderr)
sys.exit(int(os.environ["XAI_EXIT"]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks")
@pytest.mark.parametrize("status", [3, 0])
def test_a_forked_worker_runs_its_code_as_python_c_would(bare_zygote, tmp_path, status):
    """``python -m pytest_xai.engine.xdist_worker SOCKET -u -c CODE ARGS``: CODE runs in a fork of the zygote
    with the client's stdin, stdout, stderr, directory, environment and argv, and the client exits
    with its status."""
    env = {**os.environ, "XAI_SEEN": "seen", "XAI_EXIT": str(status)}
    proc = _forked_python(bare_zygote.listening, FORKED, cwd=tmp_path, env=env)
    out, err = proc.communicate("a line\n", timeout=60)
    assert proc.returncode == status, err
    assert out.split(None, 2)[:2] == [str(bare_zygote.proc.pid), str(tmp_path)], out
    assert "seen ['-c', 'an', 'arg'] True a line" in out and "to stderr" in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks")
def test_forked_workers_draw_different_numbers_from_numpys_global_generator(bare_zygote):
    """numpy, imported by the zygote, seeded its global generator once; each fork gets its own, as
    a new process would (unseeded tests would otherwise draw the same numbers in every xdist worker)."""
    code = "import numpy as np; print(np.random.random())"
    draws = {_forked_python(bare_zygote.listening, code).communicate("", timeout=60)[0] for _ in range(2)}
    assert len(draws) == 2, draws


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks")
def test_a_forked_worker_reports_an_uncaught_exception_and_exits_1(bare_zygote):
    proc = _forked_python(bare_zygote.listening, "raise ValueError('from the code')")
    _, err = proc.communicate("", timeout=60)
    assert proc.returncode == 1 and "ValueError: from the code" in err, err


ENDING = """
import atexit, os, sys, threading, time
held = open(sys.argv[1], "w")
held.write("written, never flushed or closed")  # buffered: the file is empty until someone flushes it

def late():
    time.sleep(0.3)
    print("thread joined", flush=True)

threading.Thread(target=late).start()
atexit.register(print, "atexit ran")
sys.exit("stopped with a message")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks")
def test_a_forked_worker_ends_as_python_would_without_the_teardown(bare_zygote, tmp_path):
    """A forked worker skips the interpreter's teardown (0.5 s a worker under torch) but ends as
    Python ends: its threads joined, its atexit handlers run, the files it left open flushed, and
    ``sys.exit("message")`` printed and exit status 1."""
    held = tmp_path / "held.txt"
    code = ENDING.replace("sys.argv[1]", repr(str(held)))
    proc = _forked_python(bare_zygote.listening, code)
    out, err = proc.communicate("", timeout=60)
    assert proc.returncode == 1 and out.splitlines() == ["thread joined", "atexit ran"], (out, err)
    assert err.strip() == "stopped with a message"
    assert held.read_text() == "written, never flushed or closed"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the zygote forks")
def test_a_signal_to_the_client_reaches_its_forked_worker(bare_zygote):
    """xdist stops a worker by signalling the process it started: the client passes SIGTERM on and
    exits as the worker did (128 + 15)."""
    proc = _forked_python(bare_zygote.listening, "import sys, time; print('up', flush=True); time.sleep(60)")
    assert proc.stdout.readline().strip() == "up"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM


def test_two_threads_asking_one_zygote_at_once_each_read_the_answer_to_their_own_request(bare_zygote):
    """The test thread and the thread of a call made ahead ask one zygote at once (a fork for a
    spare worker, a worker's exit code): each must read its own answer, never the other's."""
    import threading

    wrong: list[dict] = []

    def asking(request: dict, key: str) -> None:
        for _ in range(300):
            reply = bare_zygote._ask(request)
            if key not in reply:
                wrong.append(reply)

    threads = [
        threading.Thread(target=asking, args=({"op": "status", "pid": 1}, "status")),
        threading.Thread(target=asking, args=({"op": "need", "modules": []}, "pending")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert wrong == [], f"{len(wrong)} answers read by the wrong thread, e.g. {wrong[:3]}"


def test_without_a_zygote_the_client_becomes_plain_python(tmp_path):
    """Nothing listens at the address (or the zygote cannot fork): the client execs ``python`` itself."""
    proc = _forked_python(str(tmp_path / "no-socket"), "import os, sys; print(os.getpid()); sys.exit(4)")
    out, _ = proc.communicate("", timeout=60)
    assert proc.returncode == 4 and out.strip() == str(proc.pid)


AHEAD_EXPLAINER = """
import itertools
import os
from pathlib import Path


def explain(inputs):
    for n in itertools.count(1):  # each call says when it starts, in any worker: aheadplugin waits for the second
        try:
            with open(Path(os.environ["XAI_AHEAD_DIR"], f"call-{n}"), "x") as out:
                out.write(str(inputs.shape))
            break
        except FileExistsError:
            continue
    return inputs * 0.0 + 1.0
"""

AHEAD_PLUGIN = """
import os
import time
from pathlib import Path


def pytest_runtest_teardown(item, nextitem):
    if "cough_and_fever-" in item.nodeid and nextitem is not None:  # the first case's test ends
        second = Path(os.environ["XAI_AHEAD_DIR"], "call-2")
        deadline = time.monotonic() + 20
        while not second.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        Path(os.environ["XAI_AHEAD_DIR"], "overlap").write_text(str(second.exists()))
"""


def test_the_next_tests_explanation_is_made_while_this_one_is_judged(pytester, monkeypatch):
    """Serially, the explainer's worker starts on the next test's case once it has explained this
    one: the test's check, in the judge's worker, runs beside it instead of before it.  The second
    call has started before the first test ends (its teardown waits for it, 20 s at most)."""
    pytester.makepyfile(ahead=AHEAD_EXPLAINER)
    pytester.makepyfile(aheadplugin=AHEAD_PLUGIN)  # a plugin: a conftest here does not reach the suite's tests
    monkeypatch.setenv("XAI_AHEAD_DIR", str(pytester.path))
    result = pytester.runpytest_subprocess(
        *QUIET,
        "-p",
        "aheadplugin",
        "-k",
        "cough_and_fever",
        "--xai-explainer=ahead.py:explain",
        "--xai-report=report.json",
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    assert (pytester.path / "overlap").read_text() == "True"
    doc = _report(pytester.path / "report.json")
    assert sorted(r["case"] for r in doc["results"]) == ["cough_and_fever", "cough_and_fever_10_90"]
    assert all(r["status"] in ("PASS", "FAIL") and r["cached"] is False for r in doc["results"]), doc["results"]
    assert not (pytester.path / "call-3").exists()  # one call a case: the one made ahead is the one taken


def _run_with_a_spare(pytester, monkeypatch, **module: str) -> None:
    """A serial run of the one explainer module given (``name=source``, its ``explain``) on four cases,
    with a spare allowed (``--xai-explainer-workers=2``); its files go to ``$XAI_LANES_DIR``."""
    pytester.makepyfile(**module)
    monkeypatch.setenv("XAI_LANES_DIR", str(pytester.path))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    (name,) = module
    result = pytester.runpytest_subprocess(
        *QUIET,
        "-k",
        "symmetry and (cough or x0_plus_x1)",
        f"--xai-explainer={name}.py:explain",
        "--xai-explainer-workers=2",
        "--xai-report=r.json",
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]


TWO_WORKERS_EXPLAINER = """
import itertools
import os
import time
from pathlib import Path

CALLS = []


def explain(inputs):
    here = Path(os.environ["XAI_LANES_DIR"])
    CALLS.append(1)
    mine = here / f"running-{os.getpid()}"
    mine.touch()
    busy = time.process_time() + 0.2  # CPU seconds: what a spare's start-up must be paid back by
    deadline = time.monotonic() + (8 if len(CALLS) > 1 else 0)  # a worker's later calls wait for another's
    while time.process_time() < busy or (not (here / "seen").exists() and time.monotonic() < deadline):
        others = [p.name for p in here.glob("running-*") if p != mine]
        if others and not (here / "seen").exists():
            (here / "seen").write_text(f"running-{os.getpid()} beside {others[0]}")
    if len(CALLS) > 1 and not (here / "seen").exists():
        (here / "seen").write_text("alone")
    mine.unlink()
    for n in itertools.count(1):
        try:
            with open(here / f"called-{n}", "x") as out:
                out.write(str(os.getpid()))
            break
        except FileExistsError:
            continue
    return inputs * 0.0 + 1.0
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a second worker of the explainer needs a second core")
def test_serially_a_second_worker_of_the_explainer_makes_explanations_beside_the_first(pytester, monkeypatch):
    """Serially, with --xai-explainer-workers=2, one explainer's coming explanations are made by two of
    its workers at once (a spare beside the test thread's, once the calls ahead pay back its start):
    the explainer's own time is no longer the run's critical path.  Each explanation is still made
    once, by a worker forked from the zygote."""
    _run_with_a_spare(pytester, monkeypatch, two=TWO_WORKERS_EXPLAINER)
    assert (pytester.path / "seen").read_text().startswith("running-"), (pytester.path / "seen").read_text()
    pids = [p.read_text() for p in pytester.path.glob("called-*")]
    assert len(pids) == 4 and len(set(pids)) == 2, pids  # one call a case, by two workers
    doc = _report(pytester.path / "r.json")
    assert len(doc["results"]) == 7 and all(r["status"] in ("PASS", "FAIL") for r in doc["results"]), doc["results"]


REFUSING_SPARE_EXPLAINER = """
import os
import time
from pathlib import Path


def explain(inputs):
    busy = time.process_time() + 0.2  # CPU seconds: enough for the calls ahead to pay a spare back
    while time.process_time() < busy:
        pass
    with open(Path(os.environ["XAI_LANES_DIR"]) / "calls", "a") as out:
        out.write(f"{os.getpid()}\\n")
    return inputs * 0.0 + 1.0


def _prepare():  # the first worker's start succeeds; any later one's raises
    try:
        with open(Path(os.environ["XAI_LANES_DIR"]) / "first", "x"):
            pass
    except FileExistsError:
        with open(Path(os.environ["XAI_LANES_DIR"]) / "refused", "a") as out:
            out.write(f"{os.getpid()}\\n")
        raise RuntimeError("this explainer runs in one process only") from None


explain.prepare = _prepare
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a second worker of the explainer needs a second core")
def test_a_spare_that_cannot_start_leaves_its_calls_to_the_first_worker(pytester, monkeypatch):
    """An explainer whose second worker cannot start (its ``prepare`` raises there) loses no test:
    the call that was to start the spare goes back to the first worker, every explanation is made
    by it, no test reports the spare's failure, and no other spare of it is tried."""
    _run_with_a_spare(pytester, monkeypatch, refusing=REFUSING_SPARE_EXPLAINER)
    assert len((pytester.path / "refused").read_text().split()) == 1  # one spare tried, and no other
    calls = (pytester.path / "calls").read_text().split()
    assert len(calls) == 4 and len(set(calls)) == 1, calls  # one call a case, all by the first worker
    doc = _report(pytester.path / "r.json")
    assert len(doc["results"]) == 7 and all(r["status"] in ("PASS", "FAIL") for r in doc["results"]), doc["results"]


def test_a_spare_starts_only_where_the_calls_ahead_pay_back_its_start():
    """A spare's start (shap's explainers compile numba functions in ``prepare``: 7 CPU s) must be
    paid back: none until the calls still ahead, at the mean cost of a call so far, cost
    SPARE_PAYBACK times as much."""
    from pytest_xai.engine.isolate import Limits
    from pytest_xai.engine.runner import SPARE_PAYBACK, Runner

    runner = Runner(seed=0, limits=Limits(cpu=10.0, wall=100.0), cache=None, data_dir=None)
    runner.lanes = 2

    class Up:
        alive, start_cpu, spec = True, 2.0, "spec"

    runner.pool.workers["spec"] = Up()  # type: ignore[assignment]
    runner.using.add("spec")  # the test thread has the first worker
    runner.ahead = [(Up(), None)] * 10  # type: ignore[list-item]
    assert runner._free_lane("spec") is None  # no call yet: no cost known
    runner._spend("spec", {"cpu_seconds": 0.5})
    assert runner._free_lane("spec") is None  # 10 x 0.5 s ahead < 4 x 2 s
    runner._spend("spec", {"cpu_seconds": 1.5})
    assert SPARE_PAYBACK == 4 and runner._free_lane("spec") == 1  # 10 x 1 s ahead >= 8 s
    runner.ahead = runner.ahead[:7]
    assert runner._free_lane("spec") is None  # 7 s ahead: a spare would not pay back


@pytest.mark.parametrize("value", ["0", "17", "-1"])
def test_explainer_workers_out_of_range_is_a_usage_error(pytester, value):
    result = pytester.runpytest(
        "--xai-explainer=pytest_xai.explainers:exact_shapley", f"--xai-explainer-workers={value}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--xai-explainer-workers={value}: must be a whole number from 1 to 16*"])


EARLY_PLUGIN = """
import os
import sys

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):  # before the plugin's configure: is a zygote running already?
    zygote = sys.modules.get("pytest_xai.engine.zygote")
    shared = zygote.Zygote._shared if zygote is not None else None
    with open(os.environ["XAI_EARLY"], "a") as out:
        out.write(f"configure {shared.pid if shared is not None else None}\\n")
"""

PARENT_EXPLAINER = """
import os


def explain(inputs):
    with open(os.environ["XAI_EARLY"], "a") as out:
        out.write(f"forked by {os.getppid()}\\n")
    return inputs * 0.0 + 1.0
"""


def test_the_same_command_again_starts_its_zygote_before_pytest_has_loaded_its_plugins(pytester, monkeypatch):
    """The first run of a command starts the zygote at configure; run again, the zygote the same
    command started last time (pytest's cache) starts when the plugin is registered, before
    configure, and configure keeps it: the explainer's worker is its fork."""
    pytester.makepyfile(early=EARLY_PLUGIN, parent=PARENT_EXPLAINER)
    stamps = pytester.path / "early.txt"
    monkeypatch.setenv("XAI_EARLY", str(stamps))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # a serial run of its own, not an xdist worker
    command = (
        "-p",
        "early",
        "-p",
        "no:randomly",
        "-k",
        "symmetry and cough_and_fever",
        "--xai-explainer=parent.py:explain",
    )
    for _ in range(2):
        result = pytester.runpytest_subprocess(*command)
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    (first, first_fork), (again, again_fork) = [stamps.read_text().splitlines()[i : i + 2] for i in (0, 2)]
    assert first == "configure None" and first_fork.startswith("forked by "), stamps.read_text()
    assert again != "configure None" and again_fork == f"forked by {again.split()[1]}", stamps.read_text()


SHARED_ZYGOTE_RECORDER = """
import os
import sys


def pytest_sessionfinish(session):
    zygote = sys.modules["pytest_xai.engine.zygote"].Zygote._shared
    with open(os.environ["XAI_ZYGOTE_ARGS"], "w") as out:
        out.write(" ".join(zygote.proc.args))
"""


def test_a_run_of_reference_explainers_imports_no_other_explainer_library_before_the_first_fork(pytester, monkeypatch):
    """Reference explainers name their libraries: what pytest's process happened to import (a
    conftest's ``import shap``; this checkout's tests/conftest.py imports shap, lime and captum)
    is not imported before the zygote's first fork, which it would hold back by seconds."""
    pytest.importorskip("shap")
    assert "shap" in sys.modules  # tests/conftest.py
    pytester.makeconftest(SHARED_ZYGOTE_RECORDER)
    args = pytester.path / "zygote.txt"
    monkeypatch.setenv("XAI_ZYGOTE_ARGS", str(args))
    from pytest_xai.engine.zygote import Zygote

    Zygote.stop_shared()
    monkeypatch.setattr(Zygote, "_shared", None)  # a zygote of this run's own
    result = pytester.runpytest(*QUIET, "-k", "symmetry and cough_and_fever", f"--xai-explainer={REF}:exact_shapley")
    result.assert_outcomes(passed=1)
    words = args.read_text().split()
    before_fork = words[words.index("--") + 1 :][: words[words.index("--") + 1 :].index("--")]
    assert not {"shap", "captum.attr", "lime.lime_tabular"} & set(before_fork), words
