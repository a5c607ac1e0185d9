"""Whether a change moved a verdict: the verdict battery (and the degenerate-explainer zoo) of this
checkout beside a git revision's, test by test.

    python scripts/verdict_diff.py 70290dc                 # the battery, serially
    python scripts/verdict_diff.py 70290dc -n 2 --zoo      # under xdist, and the zoo over the whole suite
    python scripts/verdict_diff.py 70290dc --old-twice     # also two runs of the revision: its own noise
    python scripts/verdict_diff.py --spare                 # each explainer alone, one worker against two
    python scripts/verdict_diff.py 70290dc --now d2c4a05 --zoo -k monotonicity   # two revisions, a selection

The battery is ``scripts/verdict_table.py``'s (every tabular reference explainer on the Compare-xAI
battery); the zoo is every ``zoo_<member>`` on the whole built-in suite.  Each run is a real pytest
run of that tree (``PYTHONPATH``), from a scratch folder, with no cache, so a cold run of each.  A
test is compared by (explainer, check, case): its outcome, verdict and score must be equal; tests
that only one tree has are counted apart (a check added since is no difference).  With
``--spare``, this checkout only: each battery explainer in a run of its own, with one worker
(``--xai-explainer-workers=1``) and with a spare beside it (2), since which worker makes an
explanation must not matter.  Exit status 1 when any test differs.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict_table import BATTERY, EXPLAINERS, ROOT, run_battery

Verdicts = dict[tuple[str, str, str], tuple[Any, ...]]


def run(tree: Path, report: Path, explainers: list[str], marker: str, workers: int, extra: list[str]) -> Verdicts:
    """One cold run of ``tree``'s suite (``extra``: more pytest arguments); its verdicts by (explainer, check, case)."""
    start = time.monotonic()
    doc = run_battery(report, explainers, marker, extra=[*(["-n", str(workers)] if workers else []), *extra], tree=tree)
    print(f"  {tree.name}: {time.monotonic() - start:.0f} s", file=sys.stderr)
    return {
        (r["explainer"], r["check"], r["case"]): (r["outcome"], r.get("passed"), r.get("score"), bool(r.get("error")))
        for r in doc["results"]
    }


def differences(now: Verdicts, then: Verdicts) -> tuple[list[tuple[str, str, str]], int, int]:
    """The tests both have whose verdict differs, and how many only ``now`` or only ``then`` has."""
    both = now.keys() & then.keys()
    return sorted(k for k in both if now[k] != then[k]), len(now.keys() - then.keys()), len(then.keys() - now.keys())


def spare(extra: list[str]) -> int:
    """Each battery explainer alone, serially, with one worker and with a spare: the differences."""
    differ = 0
    with tempfile.TemporaryDirectory() as base:
        for explainer in EXPLAINERS:
            one, two = (
                run(
                    ROOT, Path(base, f"{explainer}-{n}.json"), [explainer], BATTERY, 0, [f"--xai-explainer-workers={n}"]
                )
                for n in (1, 2)
            )
            found, _, _ = differences(two, one)
            print(f"{explainer}: {len(one.keys() & two.keys())} tests, {len(found)} differ")
            for key in found:
                print(f"  {'/'.join(key)}: {one[key]} -> {two[key]}")
            differ += len(found)
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", nargs="?", help="a git revision, e.g. 70290dc")
    parser.add_argument("-n", type=int, default=0, help="xdist workers (default: serially)")
    parser.add_argument("--zoo", action="store_true", help="also the zoo over the whole suite")
    parser.add_argument("--old-twice", action="store_true", help="run the revision twice: its own differences")
    parser.add_argument("--spare", action="store_true", help="each explainer alone, one worker against two")
    parser.add_argument("--now", help="a second revision in place of this checkout")
    parser.add_argument("-k", dest="select", help="a pytest -k selection of both runs")
    options = parser.parse_args()
    extra = ["-k", options.select] if options.select else []
    if options.spare:
        return spare(extra)
    if options.before is None:
        parser.error("give a revision, or --spare")
    from pytest_xai.explainers import ZOO_MEMBERS

    base = Path(tempfile.mkdtemp(prefix="xai-verdict-diff-"))
    old = base / options.before
    trees = {old: options.before}
    now = ROOT
    if options.now:
        now = base / options.now
        trees[now] = options.now
    for tree, revision in trees.items():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision], check=True)
    batteries = {"battery": (EXPLAINERS, BATTERY)}
    if options.zoo:
        batteries["zoo"] = ([f"zoo_{m}" for m in ZOO_MEMBERS], "xai")
    failed = False
    try:
        for name, (explainers, marker) in batteries.items():
            print(f"{name} ({f'-n {options.n}' if options.n else 'serially'}):", file=sys.stderr)
            then = run(old, base / f"{name}-then.json", explainers, marker, options.n, extra)
            got = run(now, base / f"{name}-now.json", explainers, marker, options.n, extra)
            differ, added, dropped = differences(got, then)
            print(
                f"{name}: {len(got.keys() & then.keys())} tests in both, {len(differ)} differ; "
                f"{added} only in {now.name}, {dropped} only in {options.before}"
            )
            for key in differ:
                print(f"  {'/'.join(key)}: {then[key]} -> {got[key]}")
            failed |= bool(differ)
            if options.old_twice:
                again = run(old, base / f"{name}-again.json", explainers, marker, options.n, extra)
                noise, _, _ = differences(again, then)
                print(f"{name}: two runs of {options.before} differ on {len(noise)} tests")
                for key in noise:
                    print(f"  {'/'.join(key)}: {then[key]} -> {again[key]}")
    finally:
        for tree in trees:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
