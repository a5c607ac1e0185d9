"""CPU seconds of a cold run of the Compare-xAI battery, every process of it counted.

The battery is the built-in suite's Compare-xAI families (tabular, fooling, digits, stress,
interactions) against ``exact_shapley``, with ``-p no:cacheprovider``: every model is trained and
every data set generated again, as on a fresh clone.  The command runs as a child subreaper
(``PR_SET_CHILD_SUBREAPER``), so the zygote and every worker it forked are reaped here and their CPU
counted (``RUSAGE_CHILDREN``); an explainer that burns 5 CPU s in its worker shows as 5 s more.
Runs of this checkout and of ``--before REV`` (a worktree of that revision) alternate::

    python benchmarks/cold_cpu.py --before e194f8a --runs 2

CPU seconds move less with the machine's load than wall seconds; the load is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

FAMILIES = ("tabular", "fooling", "digits", "stress", "interactions")  # scripts/verdict_table.py's


def battery(tree: str) -> list[str]:
    """The pytest command of the battery for the checkout at ``tree``."""
    listing = (
        f"from pytest_xai import cases; print(' or '.join(i.name for i in cases.infos() if i.family in {FAMILIES!r}))"
    )
    names = subprocess.run(
        [sys.executable, "-c", listing],
        env={**os.environ, "PYTHONPATH": tree},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return [sys.executable, "-m", "pytest", "-p", "no:randomly", "-q", "-p", "no:cacheprovider",
            "--xai-explainer=pytest_xai.explainers:exact_shapley", "-m", "not slow", "-k", names]  # fmt: skip


def measure(tree: str) -> dict[str, float]:
    """Wall and CPU seconds of one cold run, in a child that reaps the whole process tree."""
    code = (
        "import ctypes, os, resource, subprocess, sys, time, json\n"
        "ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER\n"
        "start = time.monotonic(); subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "while True:\n"
        "    try: os.wait()\n"
        "    except ChildProcessError: break\n"
        "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps([time.monotonic() - start, use.ru_utime + use.ru_stime]))\n"
    )
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "PYTHONPATH": tree, "OMP_NUM_THREADS": "1"}
        load = os.getloadavg()[0]
        out = subprocess.run([sys.executable, "-c", code, *battery(tree)], cwd=scratch, env=env,
                             capture_output=True, text=True, check=True)  # fmt: skip
    wall, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return {"wall": wall, "cpu": cpu, "load": load}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="a git revision to compare with, e.g. e194f8a")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"now": root}
    scratch = tempfile.mkdtemp(prefix="xai-cold-")
    if args.before:
        trees[args.before] = os.path.join(scratch, "before")
        subprocess.run(["git", "-C", root, "worktree", "add", "--detach", trees[args.before], args.before],
                       check=True, capture_output=True)  # fmt: skip
    try:
        found: dict[str, list[dict[str, float]]] = {code: [] for code in trees}
        for _ in range(args.runs):
            for code, tree in trees.items():
                found[code].append(measure(tree))
                got = found[code][-1]
                print(f"{code}: {got['cpu']:.1f} CPU s, {got['wall']:.1f} s wall, load {got['load']:.1f}", flush=True)
        for code, runs in found.items():
            cpu = statistics.median(r["cpu"] for r in runs)
            print(f"{code}: median {cpu:.1f} CPU s over {len(runs)} cold runs")
    finally:
        if args.before:
            subprocess.run(["git", "-C", root, "worktree", "remove", "--force", trees[args.before]],
                           capture_output=True, check=False)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
