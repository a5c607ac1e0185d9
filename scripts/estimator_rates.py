"""Measure how often each estimator check fails each estimator, and write the section of docs/verdicts.md.

    python scripts/estimator_rates.py              # 16 seed sets, a few minutes on 2 cores
    python scripts/estimator_rates.py --sets=4 --out=verdicts.md

The checks of pytest_xai/cases/games/checks.py are statistical: a correct estimator fails them at
some rate, a wrong one passes them at some rate.  Each (check, case, estimator) is run in-process
(pytest_xai.cases.generic.reexplainer, the calls the plugin makes in the explainer's worker) under
``--sets`` disjoint sets of seeds: the k-th set starts at seed k x 100, so no two sets share a call.
The default seeds of the suite are set 0.  Every number comes from this run; none is typed by hand.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

CHECKS = ("convergence", "unbiasedness", "coverage")
CASES = ("games_products", "games_minima")
#: (module, name, what it is); the correct estimators first, then the wrong ones.
ESTIMATORS = [
    ("pytest_xai.explainers", "shap_permutation", "shap's PermutationExplainer (unbiased)"),
    ("pytest_xai.explainers", "shapley_value_sampling", "captum's ShapleyValueSampling (unbiased)"),
    ("pytest_xai.explainers", "shap_kernel", "shap's KernelExplainer (consistent)"),
    ("pytest_xai.explainers", "captum_kernel_shap", "captum's KernelShap (consistent)"),
    ("pytest_xai.explainers.degenerate", "permutation_sampling", "permutation sampling with stderr (correct)"),
    ("pytest_xai.explainers.replay", "sampling_fixed", "shap's SamplingExplainer scheme, fixed: a fixed sample count"),
    ("pytest_xai.explainers.degenerate", "uniform_coalitions", "biased: the Banzhaf value"),
    ("pytest_xai.explainers.degenerate", "shrunken", "biased: halved"),
    ("pytest_xai.explainers.degenerate", "budget_ignored", "ignores its budget"),
    ("pytest_xai.explainers.degenerate", "overconfident", "stderr four times too small"),
    ("pytest_xai.explainers.replay", "sampling_variance_root", "shap#4767: var / sqrt(N)"),
    ("pytest_xai.explainers", "random", "negative control (seeded noise)"),
]


#: How to read the table (no figures: those are the run's).
READING = """
Reading it: `shap_permutation` and `shapley_value_sampling` are unbiased at any budget and must pass
`convergence` and `unbiasedness`; `shap_kernel` and `captum_kernel_shap` declare themselves
`"consistent"` (KernelSHAP is only asymptotically unbiased, Covert & Lee 2021), so only `convergence`
judges them (KernelSHAP reaches the exact values by 16B on 6 features). No reference adapter reports
standard errors, so `coverage` is shown on the estimators that do. Each wrong estimator must fail the
check made for it: `budget_ignored` and `shrunken` `convergence`, `uniform_coalitions` and
`shrunken` `unbiasedness`, `overconfident` and shap#4767's replay `coverage`. `sampling_fixed` is
correct but draws a fixed number of samples whatever its budget, so `convergence` fails it as it
fails `budget_ignored`. Seeded noise (`random`) hides its bias in its own spread on `games_minima`;
`convergence` rejects it.
"""


def rates(sets: int) -> tuple[dict, float]:
    """{(estimator, check, case): (failed, ran, skipped reason or None)} over ``sets`` seed sets."""
    import importlib

    from pytest_xai import NotApplicable, cases, checks
    from pytest_xai.cases.generic import reexplainer

    cases.infos()
    start, out = time.perf_counter(), {}
    for module, name, _ in ESTIMATORS:
        explain = getattr(importlib.import_module(module), name)
        for case_name in CASES:
            case = cases.get(case_name)
            for check in CHECKS:
                info = checks.CHECKS[check]
                params = {
                    **info.thresholds,
                    **case.info.checks[check],
                    "estimator": getattr(explain, "estimator", None),
                }
                failed = ran = 0
                reason = None
                for k in range(sets):
                    reexplain = reexplainer(explain, case, seed=100 * k)
                    try:
                        score = info.func(reexplain(), case, reexplain=reexplain, **params)
                    except NotApplicable as exc:
                        reason = str(exc)
                        break
                    ran += 1
                    failed += not score.passed
                out[(name, check, case_name)] = (failed, ran, reason)
        print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)
    return out, time.perf_counter() - start


def markdown(found: dict, sets: int, seconds: float) -> str:
    from pytest_xai import checks

    lines = [
        "## Estimators judged as estimators (the games family)",
        "",
        (
            f"Generated by `scripts/estimator_rates.py` ({datetime.now(timezone.utc).isoformat(timespec='seconds')}; "
            f"{seconds:.0f} s): each check run on each estimator under {sets} disjoint seed sets (set k starts at "
            f"seed 100 k; the suite's default seeds are set 0), in-process as the plugin calls it. A cell is "
            f"*failed / runs*; `-` is not applicable (the explainer declares itself no estimator of that kind, or "
            f"reports no stderr). Thresholds: "
            + "; ".join(
                f"`{c}` {', '.join(f'{k}={v:g}' for k, v in checks.CHECKS[c].thresholds.items())}" for c in CHECKS
            )
            + ". The correct estimators' column is their false-fail rate; the wrong ones' their catch rate."
        ),
        "",
        "| estimator | " + " | ".join(f"{c}[{n.removeprefix('games_')}]" for c in CHECKS for n in CASES) + " |",
        "|---|" + "---|" * (len(CHECKS) * len(CASES)),
    ]
    for _, name, what in ESTIMATORS:
        cells = []
        for check in CHECKS:
            for case_name in CASES:
                failed, ran, reason = found[(name, check, case_name)]
                cells.append("-" if reason is not None and ran == 0 else f"{failed}/{ran}")
        lines.append(f"| `{name}` ({what}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + READING


def main() -> None:
    from verdict_table import replace_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=16)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "verdicts.md")
    options = parser.parse_args()
    found, seconds = rates(options.sets)
    section = markdown(found, options.sets, seconds)
    options.out.write_text(replace_section(options.out.read_text(), section))
    print(section)


if __name__ == "__main__":
    main()
