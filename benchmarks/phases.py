"""Where a suite run's time goes, phase by phase: a pytest plugin that stamps a run, and a command
that runs the warm suite of this checkout beside an older revision and prints both breakdowns.

As a plugin (``PYTEST_PLUGINS=phases`` with this directory on ``PYTHONPATH``; :func:`run_suite`
sets both), each pytest process of a run (serially the one, under ``-n N`` the controller and each
xdist worker) appends one JSON line to the file named by ``$XAI_PHASES``: monotonic stamps of its
phases (start-up, configure, collection, the test loop, session finish, exit), its CPU seconds at
each, and the exclusive wall and thread-CPU seconds of the plugin's regions it wraps (case
building, cache reads, worker start, waiting for the zygote, waiting for a worker, the checks,
output validation, pictures, the score table, the report files), per thread (the test thread, the
background one).  The wrapped names are looked up when their module is imported, so that the
plugin imports nothing the run would not; a name a revision lacks is left out.  The explainer's
own seconds come from each worker reply (``seconds``, ``cpu_seconds``).  The stamps use
``time.monotonic`` (one clock for every process), and the command's ``$XAI_PHASES_T0`` is the
moment it started pytest, so start-up counts the interpreter's own.

As a command, on a warm cache (one cold run first, untimed)::

    python benchmarks/phases.py exact_shapley                      # this checkout, serially
    python benchmarks/phases.py exact_shapley --before b09cafd -n 2 --runs 3
    python benchmarks/phases.py exact_shapley --runs 3 --floor     # and the floors under its share
    python benchmarks/phases.py exact_shapley --before 3ff8cb3 --runs 3 -k "symmetry and cough_and_fever"

The runs of the two checkouts alternate, and the table gives each phase's median wall and CPU
seconds.  Wall seconds on a shared machine are upper bounds; CPU seconds move less.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
import threading
import time
from typing import Any

import pytest

#: module -> {dotted attribute: region}.  Nested regions count once, in the innermost.
REGIONS = {
    "pytest_xai.cases": {"_build": "case building"},
    "pytest_xai.cache": {"Cache._load_or_build": "cache reads"},
    "pytest_xai.engine.isolate": {
        "Pool.explain": "worker calls",
        "Pool.call": "worker calls",  # the explainer's and, since the judge moved there, the judge's worker
        "Pool.ahead": "worker calls",  # the next test's explanation, made while this one is judged
        "Pool._worker": "worker start",
        "Zygote._ask": "zygote answers",
    },  # the zygote's client, there before pytest_xai.engine.zygote
    "pytest_xai.engine.zygote": {"Zygote._ask": "zygote answers"},
    "pytest_xai.engine.contract": {"coerce": "output validation", "coerce_shaped": "output validation"},
    "pytest_xai.engine.runner": {"draw_picture": "pictures"},  # before the judge moved into the engine
    "pytest_xai.reports.report": {"table": "score table", "document": "report files"},
    "pytest_xai.reports.files": {"write_reports": "report files"},
}


class _Clock:
    """Exclusive wall and thread-CPU seconds of nested regions, per thread kind."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.lock = threading.Lock()
        self.totals: dict[str, dict[str, list[float]]] = {}  # thread kind -> region -> [wall, cpu, calls]
        self.explainer = [0.0, 0.0, 0]  # seconds, CPU seconds, calls the workers reported
        self.checks = 0.0  # CPU seconds of the checks the judge's worker reported
        self.events: list[tuple[str, str, float, float]] | None = [] if os.environ.get("XAI_PHASES_EVENTS") else None

    def wrap(self, func: Any, region: str) -> Any:
        @functools.wraps(func)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = self.local.__dict__.setdefault("stack", [])
            frame = [time.monotonic(), time.thread_time(), 0.0, 0.0]
            stack.append(frame)
            try:
                result = func(*args, **kwargs)
            finally:
                stack.pop()
                wall, cpu = time.monotonic() - frame[0], time.thread_time() - frame[1]
                if stack:
                    stack[-1][2] += wall
                    stack[-1][3] += cpu
                kind = "test thread" if threading.current_thread() is threading.main_thread() else "background"
                with self.lock:
                    if self.events is not None:
                        self.events.append((kind, region, frame[0], frame[0] + wall))
                    slot = self.totals.setdefault(kind, {}).setdefault(region, [0.0, 0.0, 0])
                    slot[0] += wall - frame[2]
                    slot[1] += cpu - frame[3]
                    slot[2] += 1
            counted = isinstance(result, tuple) and result and isinstance(result[0], dict) and "_phases" in result[0]
            if region == "worker calls" and isinstance(result, tuple) and result and isinstance(result[0], dict):
                reply = result[0]
                if not counted:  # Pool.explain returns the reply of the Pool.call it wraps: counted once
                    reply["_phases"] = True
                    with self.lock:
                        if reply.get("kind") == "verdict":  # the judge's worker: the check's CPU seconds
                            self.checks += float(reply.get("check_cpu") or 0.0)
                        elif "seconds" in reply:
                            self.explainer[0] += float(reply.get("seconds") or 0.0)
                            self.explainer[1] += float(reply.get("cpu_seconds") or 0.0)
                            self.explainer[2] += 1
            return result

        return timed


CLOCK = _Clock()
STAMPS: dict[str, list[float]] = {}  # phase -> [monotonic, process CPU]


def stamp(name: str) -> None:
    STAMPS.setdefault(name, [time.monotonic(), time.process_time()])


def _patch(module: Any) -> None:
    for dotted, region in REGIONS.get(module.__name__, {}).items():
        owner_name, _, attr = dotted.rpartition(".")
        owner = getattr(module, owner_name) if owner_name else module
        if isinstance(owner, type) and owner.__module__ != module.__name__:
            continue  # imported from the module that defines it, and patched there
        raw = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
        if raw is None:
            continue
        if isinstance(raw, (classmethod, staticmethod)):
            setattr(owner, attr, type(raw)(CLOCK.wrap(raw.__func__, region)))
        else:
            setattr(owner, attr, CLOCK.wrap(raw, region))


class _Loader:
    """A module's own loader (pytest's assertion rewriter, for the plugin's modules), which patches
    the module once executed."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package...: the real loader's
        return getattr(self.loader, name)


class _Finder:
    """Patches the modules of :data:`REGIONS` as they are imported (never imports them itself)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in REGIONS:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def _install() -> None:
    for name in REGIONS:
        if name in sys.modules:
            _patch(sys.modules[name])
    sys.meta_path.insert(0, _Finder())


_install()
stamp("plugins loaded")
GC = {}  # generation -> [seconds, collections] of Python's cyclic garbage collector in this process


def _gc_timer(phase: str, info: dict) -> None:
    if phase == "start":
        GC["started"] = [time.thread_time()]
    elif "started" in GC:
        slot = GC.setdefault(f"gc gen{info['generation']}", [0.0, 0])
        spent = time.thread_time() - GC.pop("started")[0]
        slot[0] += spent
        slot[1] += 1
        if info["generation"] == 2:
            GC.setdefault("full", []).append([time.monotonic(), spent, len(sys.modules)])


gc.callbacks.append(_gc_timer)
OUT = os.environ.get("XAI_PHASES")
T0 = float(os.environ.get("XAI_PHASES_T0", "nan"))


def pytest_configure(config: Any) -> None:
    import atexit

    stamp("configure")
    atexit.register(_write)  # registered before the xai plugin's: runs after its exit handlers


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: Any) -> None:
    stamp("collection")


def pytest_collection_finish(session: Any) -> None:
    stamp("collected")
    checks = sys.modules.get("pytest_xai.checks")
    for info in getattr(checks, "CHECKS", {}).values():
        if not getattr(info.func, "__wrapped__", None):
            object.__setattr__(info, "func", CLOCK.wrap(info.func, "checks"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: Any) -> None:
    stamp("tests")


def pytest_runtest_protocol(item: Any) -> None:
    stamp("first test")
    if CLOCK.events is not None:
        CLOCK.events.append(("test", item.nodeid, time.monotonic(), float("nan")))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: Any) -> None:
    stamp("session finish")


def pytest_unconfigure(config: Any) -> None:
    stamp("unconfigure")
    zygote = getattr(
        sys.modules.get("pytest_xai.engine.zygote") or sys.modules.get("pytest_xai.engine.isolate"), "Zygote", None
    )
    shared = getattr(zygote, "_shared", None)
    if shared is not None and getattr(shared, "proc", None) is not None:
        try:  # the zygote's CPU and its reaped children's (the workers; under -n N the xdist workers too)
            with open(f"/proc/{shared.pid}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
            STAMPS["zygote cpu"] = [sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK"), 0.0]
        except OSError:
            pass


def _write() -> None:
    stamp("exit")
    if not OUT:
        return
    role = "worker" if os.environ.get("PYTEST_XDIST_WORKER") else "main"
    line = json.dumps(
        {
            "pid": os.getpid(),
            "role": role,
            "t0": T0,
            "stamps": STAMPS,
            "regions": CLOCK.totals,
            "explainer": CLOCK.explainer,
            "checks": CLOCK.checks,
            "events": CLOCK.events,
            "gc": GC,
        }
    )
    with open(OUT, "a") as fh:
        fh.write(line + "\n")


# ------------------------------------------------------------------------------------ the command

PHASES = (
    ("start-up (python, pytest, plugins)", "t0", "configure"),
    ("configure (zygote started, families; -n N: the xdist workers up)", "configure", "collection"),
    ("collection", "collection", "collected"),
    ("tests", "tests", "session finish"),
    ("session finish (table, reports)", "session finish", "unconfigure"),
    ("exit", "unconfigure", "exit"),
)


def breakdown(lines: list[dict[str, Any]], wall: float, cpu: float) -> dict[str, float]:
    """One run's phases, regions and totals: ``{name: seconds}`` (wall unless the name says CPU).

    Phases are the main process's; regions and the explainer's seconds are summed over processes
    (under ``-n N`` the xdist workers do the tests)."""
    main = next(line for line in lines if line["role"] == "main")
    stamps = {**main["stamps"], "t0": [main["t0"], 0.0]}
    out: dict[str, float] = {}
    for name, start, end in PHASES:
        if start in stamps and end in stamps:
            out[name] = stamps[end][0] - stamps[start][0]
            out[name + " CPU"] = stamps[end][1] - stamps[start][1]
    if "first test" in stamps:
        out["first test starts"] = stamps["first test"][0] - stamps["t0"][0]
    workers = [line for line in lines if line["role"] == "worker"] or [main]
    if workers[0] is not main:  # under -n N: each phase of the xdist workers (the longest), from the run's start
        for name, start, end in PHASES[1:]:
            spans = [
                (line["stamps"][end][0] - line["stamps"][start][0], line["stamps"][end][1] - line["stamps"][start][1])
                for line in workers
                if start in line["stamps"] and end in line["stamps"]
            ]
            if spans:
                out["xdist workers: " + name] = max(w for w, _ in spans)
                out["xdist workers: " + name + " CPU"] = sum(c for _, c in spans)
        begun = [line["stamps"]["first test"][0] for line in workers if "first test" in line["stamps"]]
        if begun:
            out["first test starts"] = min(begun) - stamps["t0"][0]
    in_tests = sum(
        line["stamps"]["session finish"][0] - line["stamps"]["tests"][0]
        for line in workers
        if "session finish" in line["stamps"] and "tests" in line["stamps"]
    )
    spent = 0.0
    for line in lines:
        for kind, regions in line["regions"].items():
            for region, (w, c, _) in regions.items():
                key = f"{region} ({kind})" if kind != "test thread" else region
                out[key] = out.get(key, 0.0) + w
                out[key + " CPU"] = out.get(key + " CPU", 0.0) + c
                if kind == "test thread" and line in workers:
                    spent += w
    for line in lines:  # the collector's collections, by generation, over every process
        for gen, (seconds, count) in ((k, v) for k, v in line.get("gc", {}).items() if k.startswith("gc ")):
            out[f"{gen} CPU"] = out.get(f"{gen} CPU", 0.0) + seconds
            out[f"{gen} collections"] = out.get(f"{gen} collections", 0) + count
    judged = sum(line.get("checks", 0.0) for line in lines)
    if judged:  # since the judge moved into the engine the checks run in its worker, which reports them
        out["checks CPU"] = out.get("checks CPU", 0.0) + judged
    explainer = [sum(line["explainer"][i] for line in lines) for i in range(3)]
    out["explainer's own"], out["explainer's own CPU"], out["explainer calls"] = explainer
    out["worker calls"] = out.get("worker calls", 0.0) - explainer[0]  # the wait beyond the explainer
    out["worker calls CPU"] = out.get("worker calls CPU", 0.0)
    out["tests: pytest and the plugin's rest"] = in_tests - spent
    zygote = sum(line["stamps"].get("zygote cpu", [0.0])[0] for line in lines)
    out["zygote and its workers CPU"] = zygote  # CPU only: the wall is the run's
    out["total"], out["total CPU"] = wall, cpu
    out["plugin's share"] = wall - explainer[0] / len(workers)
    out["plugin's share CPU"] = cpu - explainer[1]
    return out


def run_suite(
    tree: str, cache: str, report: str, explainers: list[str], workers: int = 0, extra: list[str] | None = None
) -> tuple[dict[str, Any], dict[str, float]]:
    """One suite run in ``tree`` with ``cache`` as pytest's cache dir; (its verdicts by test id and
    status counts, its :func:`breakdown`)."""
    import resource
    import subprocess
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as fh:
        out = fh.name
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([tree, here]),
        "OMP_NUM_THREADS": "1",
        "PYTEST_PLUGINS": "phases",
        "XAI_PHASES": out,
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "-o",
        f"cache_dir={cache}",
        f"--xai-report={report}",
        *(f"--xai-explainer=pytest_xai.explainers:{e}" for e in explainers),
        *(["-n", str(workers)] if workers else []),
        *(extra or []),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env["XAI_PHASES_T0"] = repr(time.monotonic())
    start = time.monotonic()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    with open(out) as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    os.unlink(out)
    with open(report) as fh:
        results = json.load(fh)["results"]
    verdicts = {r["nodeid"]: (r["status"], r["score"]) for r in results}
    statuses = [r["status"] for r in results]
    counts = {s.lower(): statuses.count(s) for s in ("PASS", "FAIL", "ERROR", "TIMEOUT", "SKIP")}
    explained = sorted({r["case"] for r in results if r["status"] != "SKIP"})
    return {"verdicts": verdicts, "counts": counts, "explained": explained}, breakdown(lines, wall, cpu)


def median_breakdown(runs: list[dict[str, float]]) -> dict[str, float]:
    import statistics

    keys = dict.fromkeys(k for run in runs for k in run)
    return {k: statistics.median(run.get(k, 0.0) for run in runs) for k in keys}


def table(columns: dict[str, dict[str, float]]) -> list[str]:
    """Rows: phases and regions (wall s / CPU s); one column per checkout."""
    keys = dict.fromkeys(k for col in columns.values() for k in col)
    names = list(dict.fromkeys(k.removesuffix(" CPU") for k in keys))
    width = max(len(n) for n in names)
    lines = [" " * width + "".join(f"{c:>22}" for c in columns)]
    for name in names:
        cells = []
        for col in columns.values():
            if name == "explainer calls" or name.endswith(" collections"):
                cells.append(f"{col.get(name, 0.0):>22.0f}")
                continue
            wall, cpu = col.get(name), col.get(name + " CPU")
            cells.append(
                (f"{wall:>12.2f}" if wall is not None else " " * 12)
                + (f" / {cpu:>6.2f} CPU" if cpu is not None else " " * 11)
            )
        lines.append(f"{name:<{width}}" + "".join(cells))
    return lines


def compare(
    explainers: list[str], before: str | None, workers: int, runs: int, base: str, extra: list[str] | None = None
) -> dict[str, Any]:
    """Cold run, then ``runs`` warm runs alternating between this checkout and ``before`` (a git
    revision checked out into a worktree under ``base``, a scratch directory that also holds the
    caches); the median breakdowns, the verdicts, and each checkout's tree and pytest cache dir."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"now": root}
    if before:
        target = os.path.join(base, "before")
        subprocess.run(
            ["git", "-C", root, "worktree", "add", "--detach", target, before], check=True, capture_output=True
        )
        trees[before] = target
    caches = {code: os.path.join(base, f"cache-{code}") for code in trees}
    try:
        for code, tree in trees.items():
            run_suite(tree, caches[code], os.path.join(base, "cold.json"), explainers, extra=extra)
        results: dict[str, list[dict[str, float]]] = {code: [] for code in trees}
        verdicts: dict[str, Any] = {}
        for _ in range(runs):
            for code, tree in trees.items():
                got, phases = run_suite(
                    tree, caches[code], os.path.join(base, "warm.json"), explainers, workers, extra=extra
                )
                results[code].append(phases)
                verdicts[code] = got
        medians = {code: median_breakdown(r) for code, r in results.items()}
        return {"phases": medians, "verdicts": verdicts, "trees": trees, "caches": caches}
    finally:
        if before:
            subprocess.run(
                ["git", "-C", root, "worktree", "remove", "--force", trees[before]], capture_output=True, check=False
            )


def imports_floor(runs: int = 3) -> dict[str, float]:
    """Wall and CPU seconds a fresh interpreter spends importing the cases' libraries (the
    zygote's :data:`pytest_xai.engine.zygote.PRELOAD` that are installed, without the plugin's own
    modules), less an empty interpreter's; the median of ``runs``.  Every process that calls a
    case's model pays them once."""
    import statistics

    code = "import " + ", ".join(_libraries())
    _spent(code)  # the page cache warm, as for a warm suite run
    empty = [_spent("pass") for _ in range(runs)]
    full = [_spent(code) for _ in range(runs)]
    return {
        "wall": statistics.median(w for w, _, _ in full) - statistics.median(w for w, _, _ in empty),
        "cpu": statistics.median(c for _, c, _ in full) - statistics.median(c for _, c, _ in empty),
        "runs": runs,
    }


def building_cpu(tree: str, cache: str, names: list[str], runs: int = 3) -> float:
    """CPU seconds a fresh interpreter of ``tree``, its libraries imported, spends building the
    cases ``names`` once from the warm cache of a run (pytest's ``cache_dir`` ``cache``); the
    median of ``runs``."""
    import statistics

    code = (
        f"import {', '.join(_libraries())}\n"
        "import time\n"
        "from pytest_xai import cases\n"
        "from pytest_xai.cache import Cache\n"
        f"cache = Cache({os.path.join(cache, 'd', 'xai')!r})\n"
        "start = time.process_time()\n"
        f"for name in {names!r}:\n"
        "    cases.get(name, seed=0, cache=cache)\n"
        "print(time.process_time() - start)\n"
    )
    return statistics.median(float(_spent(code, tree)[2]) for _ in range(runs))


def _libraries() -> list[str]:
    import importlib.util

    from pytest_xai.engine.zygote import PRELOAD

    return [m for m in PRELOAD if not m.startswith("pytest_xai") and importlib.util.find_spec(m.partition(".")[0])]


def _spent(source: str, tree: str | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds of a fresh interpreter running ``source`` (one thread; ``tree`` first
    on its path), and what it printed."""
    import resource
    import subprocess

    env = {**os.environ, "OMP_NUM_THREADS": "1", **({"PYTHONPATH": tree} if tree else {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", source], check=True, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.monotonic() - start, cpu, done.stdout


def floor_lines(
    found: dict[str, dict[str, float]], imports: dict[str, float], building: float, n_cases: int
) -> list[str]:
    """The floors under the plugin's share of a run on two cores, beside what each checkout spent.

    This design: the verdicts are computed in pytest's process, outside the one that runs the
    explainer (a hostile explainer must not grade itself: docs/design.md, "Speed rules"), and both
    processes call the cases' models, so both import their libraries: CPU >= start-up + 2 x
    imports + the explainer's own, wall >= half of it, and the plugin's share (wall less the
    explainer's own) >= (start-up + 2 x imports - the explainer's own) / 2.  Case building, checks
    and pytest's own per-test work come on top, so the true floor is higher.

    Any design that starts its processes with the run: the libraries imported once, each explained
    case built once (``building``, this checkout's builders) and this checkout's checks:
    share >= (start-up + imports + building + checks + the explainer's own) / 2 - the explainer's own."""
    imported = f"{imports['wall']:.2f} s wall / {imports['cpu']:.2f} s CPU (median of {imports['runs']:.0f})"
    lines = [f"the cases' libraries, imported by one fresh interpreter: {imported}"]
    for code, col in found.items():
        own, start = col["explainer's own CPU"], col["start-up (python, pytest, plugins) CPU"]
        floor = (start + 2 * imports["cpu"] - own) / 2
        share, own_wall = col["plugin's share"], col["explainer's own"]
        lines.append(
            f"{code}: floor of the plugin's share (start-up {start:.2f} + 2 x {imports['cpu']:.2f} - "
            f"explainer's own {own:.2f}) / 2 = {floor:.2f} s; measured {share:.2f} s; "
            f"the explainer's own {own_wall:.2f} s"
        )
    col = found["now"]
    own, start, checks = (
        col["explainer's own CPU"],
        col["start-up (python, pytest, plugins) CPU"],
        col.get("checks CPU", 0.0),
    )
    floor = (start + imports["cpu"] + building + checks + own) / 2 - own
    lines.append(
        f"now, any design importing once: (start-up {start:.2f} + imports {imports['cpu']:.2f} + building the "
        f"{n_cases} explained cases {building:.2f} + checks {checks:.2f} + explainer's own {own:.2f}) / 2 - "
        f"explainer's own = {floor:.2f} s"
    )
    return lines


def main(argv: list[str]) -> int:
    import argparse
    import shutil
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("explainers", nargs="+", help="reference explainers, e.g. exact_shapley")
    parser.add_argument("--before", help="a git revision to compare with, e.g. b09cafd")
    parser.add_argument("-n", type=int, default=0, help="xdist workers (default: serial)")
    parser.add_argument("--runs", type=int, default=1, help="warm runs of each checkout (median)")
    parser.add_argument("--floor", action="store_true", help="also the floor under the plugin's share (two cores)")
    parser.add_argument("-k", dest="select", help='a selection, e.g. "symmetry and cough_and_fever"')
    args = parser.parse_args(argv)
    base = tempfile.mkdtemp(prefix="xai-phases-")
    try:
        extra = ["-k", args.select] if args.select else None
        found = compare(args.explainers, args.before, args.n, args.runs, base, extra)
        for line in table(found["phases"]):
            print(line)
        if args.floor:
            explained = found["verdicts"]["now"]["explained"]
            building = building_cpu(found["trees"]["now"], found["caches"]["now"], explained)
            for line in floor_lines(found["phases"], imports_floor(), building, len(explained)):
                print(line)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for code, got in found["verdicts"].items():
        print(f"{code}: {got['counts']}")
    if args.before:
        now, then = (found["verdicts"][c]["verdicts"] for c in ("now", args.before))
        differ = sorted(k for k in now.keys() | then.keys() if now.get(k) != then.get(k))
        print(f"verdicts and scores differ on {len(differ)} tests" + (f": {differ[:10]}" if differ else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
