"""Measure the error rates of the ``--xai-repeat=N`` verdict on a coin explainer (docs/ci.md).

The coin passes ``faithfulness`` with a known probability q at each seed (exact Shapley values,
which pass, or zeros, which fail, drawn from the seed).  For q = 0.8 (a good explainer) a verdict
other than PASS is a false FAIL; for q = 0.5 and 0.2 (no better than a coin) a PASS is a false PASS.
Each (q, N) runs pytest once over TRIALS registered cases, each its own derived seeds::

    python scripts/repeat_rates.py --trials 300
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CONFTEST = """
import numpy as np
import pytest_xai


def f(X):
    X = np.asarray(X, dtype=float)
    return 3 * X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3]


def _build(seed):
    rng = np.random.default_rng(seed)
    return pytest_xai.make_case(rng.normal(size=(6, 4)), predict=f, background=rng.normal(size=(10, 4)))


for _i in range({trials}):
    pytest_xai.register_case(checks=["faithfulness"], name=f"coin_{{_i}}")(_build)
"""
COIN = """
import os

import numpy as np

from pytest_xai.explainers import exact_shapley

Q = float(os.environ["COIN_Q"])


def coin(inputs, predict, background, target, seed):
    exact = np.asarray(exact_shapley(inputs, predict, background, target))
    rng = np.random.default_rng(seed)
    heads = rng.random() < Q
    return (exact if heads else 0 * exact) + 1e-9 * rng.standard_normal(exact.shape)
"""


def exact_rate(q: float, n: int, verdict: str) -> float:
    """The probability of ``verdict`` for a pass probability q, from the binomial law."""
    from pytest_xai.engine.runner import repeat_verdict

    return sum(math.comb(n, x) * q**x * (1 - q) ** (n - x) for x in range(n + 1) if repeat_verdict(x, n) == verdict)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "conftest.py").write_text(CONFTEST.format(trials=args.trials))
        (root / "coin.py").write_text(COIN)
        print(f"{'q':>4} {'N':>3}  {'PASS':>6} {'FLAKY':>6} {'FAIL':>6}   exact PASS  (trials {args.trials})")
        for q in (0.8, 0.5, 0.2):
            for n in (3, 5, 10):
                report = root / f"r-{q}-{n}.json"
                env = {
                    **os.environ,
                    "COIN_Q": str(q),
                    "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                }
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-p",
                        "no:cacheprovider",
                        "-p",
                        "no:randomly",
                        "-k",
                        "coin_",
                        "--xai-explainer=coin:coin",
                        f"--xai-repeat={n}",
                        "--xai-timeout=0",
                        f"--xai-report={report}",
                    ],
                    cwd=root,
                    env=env,
                    capture_output=True,
                    check=False,
                )
                results = json.loads(report.read_text())["results"]
                verdicts = [r["repeat"]["verdict"] for r in results]
                share = {v: verdicts.count(v) / len(verdicts) for v in ("PASS", "FLAKY", "FAIL")}
                print(
                    f"{q:>4} {n:>3}  {share['PASS']:>6.3f} {share['FLAKY']:>6.3f} {share['FAIL']:>6.3f}   "
                    f"{exact_rate(q, n, 'PASS'):.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
