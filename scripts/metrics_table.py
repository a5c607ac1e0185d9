"""Write docs/metrics.md: how reliable each check and each metric is, measured on the gaussian family.

    python scripts/metrics_table.py                  # 13 cases x 10 seeds, a few minutes on one core
    python scripts/metrics_table.py --seeds 1 --cases gaussian_linear_rho0 --out /tmp/m.md   # a quick look

On every gaussian case (exact Shapley values known) at each seed, every answer is scored:

- the correct ones: the exact values of the true marginal and the exact values against the case's own
  100-row background (what KernelSHAP and shap's exact explainers estimate);
- the degenerate-explainer zoo (:mod:`pytest_xai.explainers.degenerate`) applied to the exact values,
  and two wrong maps that passed infidelity before (issue "verdicts round three"): the dummy credited
  (the feature of least mean |phi| exchanged with the least one that matters) and each column z-scored over the batch.

The stability checks (local Lipschitz, RIS, ROS) re-explain at perturbed inputs: there each answer is
rebuilt from the case's exact values at the perturbed inputs, a member under the seed the check asks for.

For a check: its power against each member (the share of case-seeds where it fails the member) and its
false alarms (the share where it fails a correct answer).  For a metric, ours or a peer's as they ship
it: the share of case-seeds where it scores the member worse than the exact values; a share below 1
means the metric cannot always tell that member from the truth, and the table marks it.
"""

from __future__ import annotations

import argparse
import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pytest_xai import cases, catalogue, checks, metrics, reference, shapley
from pytest_xai.cases import generic
from pytest_xai.cases.gaussian import checks as gaussian
from pytest_xai.cases.gaussian import truth as gaussian_truth
from pytest_xai.explainers import degenerate
from pytest_xai.explainers.replay import metric_bugs

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ("exact (true marginal)", "exact (background)")
#: Checks of the cases with superpixels, scored on the object's mask and the zoo applied to it.
GROUPED = {"human_shapes_oracle": ("irof",)}
GROUPED_CORRECT = ("object mask", "human mask")
EXTRA = ("dummy_credited", "column_z_scored")
MEMBERS = degenerate.MEMBERS + EXTRA
#: Checks no gaussian case declares, measured here too: they re-explain at perturbed inputs.
STABILITY = ("local_lipschitz", "relative_input_stability", "relative_output_stability")


def _dummy_credited(phi: np.ndarray) -> np.ndarray:
    """The feature of least mean |phi| exchanged with the least one that matters (mean |phi| above
    1e-6 of the largest): where x0 has weight 0, x0 gets x1's credit."""
    out = phi.copy()
    size = np.abs(phi).mean(axis=0)
    matters = np.flatnonzero(size > 1e-6 * size.max())
    low, other = int(np.argmin(size)), int(matters[np.argmin(size[matters])])
    out[:, [low, other]] = out[:, [other, low]]
    return out


def _column_z_scored(phi: np.ndarray) -> np.ndarray:
    return (phi - phi.mean(axis=0)) / np.maximum(phi.std(axis=0), 1e-12)


def _marginal_at(case, X: np.ndarray) -> np.ndarray:
    """The case's truth, exact interventional Shapley values of the true marginal, at the rows X."""
    distribution = case.meta.get("distribution")
    if distribution is not None and hasattr(case.model, "expectation"):
        return gaussian_truth.exact_shapley(case.model, distribution, X, "interventional")
    return shapley.interventional(case.predict, X, case.background)  # a trained model's truth


def answers(case, seed: int, perturb: tuple[int, float] | None = None) -> dict[str, np.ndarray]:
    """The correct answers and every member, applied to the case's exact values; at the
    :func:`pytest_xai.cases.generic.perturbed` inputs of ``perturb`` (as a stability check re-explains)."""
    if perturb is None:
        X, truth, background = case.inputs, np.asarray(case.truth["shapley_interventional"], dtype=float), None
    else:
        X = generic.perturbed(case, *perturb)
        truth, background = _marginal_at(case, X), generic.moved_reference(case, perturb)
    out = metrics.outputs(case.predict, X, case.target)
    found = {CORRECT[0]: truth, CORRECT[1]: reference.for_case(case).values if background is None else background}
    for member in degenerate.MEMBERS:
        found[member] = degenerate.apply(member, truth, X, out, case.background, seed)
    found["dummy_credited"], found["column_z_scored"] = _dummy_credited(truth), _column_z_scored(truth)
    return found


def grouped_answers(case, seed: int) -> dict[str, np.ndarray]:
    """The object's mask, the simulated annotators' mask, and every member applied to the first."""
    mask = np.asarray(case.truth["segmentation"], dtype=float)
    out = metrics.outputs(case.predict, case.inputs, case.target)
    found = dict(zip(GROUPED_CORRECT, (mask, np.asarray(case.truth["weighted_mask"], dtype=float)), strict=True))
    for member in degenerate.MEMBERS:
        found[member] = degenerate.apply(member, mask, case.inputs, out, case.background, seed)
    return found


def _raw(case) -> dict[str, Callable[[np.ndarray], float]]:
    """Metrics as they ship, each a function of a map giving a number where higher is better."""
    P, X, t = case.predict, case.inputs, case.target
    ref = gaussian._reference_for(case, "interventional")
    bg = np.asarray(case.background, dtype=float)
    mean_row = bg.mean(axis=0)
    single = metrics.single_removal_effects(P, X, ref, target=t)
    subsets = metrics.subset_removal_effects(P, X, ref, target=t)
    return {
        "XAI-Bench faithfulness (Pearson of |w| and |Delta|)": lambda A: (
            metrics.faithfulness(P, X, A, ref, target=t, effects=single).mean
        ),
        "XAI-Bench monotonicity": lambda A: metrics.monotonicity(P, X, A, ref, target=t).mean,
        "Yeh et al. infidelity (per-point beta, as captum normalize=True)": lambda A: (
            -metrics.infidelity(P, X, A, ref, normalize=True, relative=True, target=t, effects=subsets).mean
        ),
        "Quantus 0.6 Monotonicity": lambda A: float(np.mean(metric_bugs.quantus_monotonicity(P, X, A, mean_row))),
        "Arya et al. monotonicity (fixed)": lambda A: float(np.mean(metric_bugs.arya_monotonicity(P, X, A, mean_row))),
        "IROF (area over the curve)": lambda A: float(np.nanmean(metric_bugs.irof_aoc(P, X, A, mean_row, target=t))),
        "IROF (ours, each feature a group)": lambda A: (
            catalogue.irof(P, X, A, np.arange(X.shape[1]), ref, target=t).mean
        ),
        "deletion AOPC": lambda A: catalogue.deletion(P, X, A, ref, target=t).mean,
        "insertion AOPC": lambda A: catalogue.insertion(P, X, A, ref, target=t).mean,
        "ROAD (noisy linear imputation)": lambda A: catalogue.road(P, X, A, bg, target=t).mean,
        "OpenXAI PGI": lambda A: catalogue.pgi(P, X, A, bg, target=t).mean,
        "OpenXAI PGU": lambda A: -catalogue.pgu(P, X, A, bg, target=t).mean,
    }


def _stability_verdicts(case, seed: int, found: dict[str, np.ndarray]) -> dict[str, dict[str, bool]]:
    """Per stability check, answer -> passed, each answer re-explained by :func:`answers` at the
    perturbed inputs under the seed the check asks for (computed once per perturbation and seed)."""
    moved = functools.cache(lambda perturb, other_seed: answers(case, seed + other_seed, perturb))
    out: dict[str, dict[str, bool]] = {}
    for check in STABILITY:
        info = checks.CHECKS[check]
        for label, A in found.items():

            def again(perturb, other_seed, label=label):
                return moved(perturb, other_seed)[label]

            out.setdefault(check, {})[label] = info.func(A, case, reexplain=again, **info.thresholds).passed
    return out


def measure(names: list[str], seeds: list[int]) -> dict[str, Any]:
    """Per check: answer -> list of passed; per metric: answer -> list of (score, truth's score)."""
    verdicts: dict[str, dict[str, list[bool]]] = {}
    scores: dict[str, dict[str, list[bool]]] = {}
    grouped: dict[tuple[str, str], dict[str, list[bool]]] = {}
    for seed in seeds:
        for name in names:
            case = cases.get(name, seed=seed)
            found = answers(case, seed)
            for check in case.info.checks:
                info = checks.CHECKS[check]
                params = {**info.thresholds, **case.info.checks[check]}
                for label, A in found.items():
                    verdicts.setdefault(check, {}).setdefault(label, []).append(info.func(A, case, **params).passed)
            for check, passed in _stability_verdicts(case, seed, found).items():
                for label, verdict in passed.items():
                    verdicts.setdefault(check, {}).setdefault(label, []).append(verdict)
            for metric, score in _raw(case).items():
                truth = score(found[CORRECT[0]])
                for label in MEMBERS:
                    scores.setdefault(metric, {}).setdefault(label, []).append(score(found[label]) < truth - 1e-12)
            print(f"seed {seed} {name}", flush=True)
        for name, grouped_checks in GROUPED.items():
            case = cases.get(name, seed=seed)
            found = grouped_answers(case, seed)
            for check in grouped_checks:
                info = checks.CHECKS[check]
                params = {**info.thresholds, **case.info.checks[check]}
                for label, A in found.items():
                    passed = info.func(A, case, **params).passed
                    grouped.setdefault((check, name), {}).setdefault(label, []).append(passed)
            print(f"seed {seed} {name}", flush=True)
    return {"verdicts": verdicts, "scores": scores, "grouped": grouped, "names": names, "seeds": seeds}


def _cell(values: list[bool], declared: bool = False) -> str:
    share = float(np.mean(values))
    text = f"{share:.2f}"
    return f"{text} (decl.)" if declared else text + (" !" if share < 1 else "")


def render(measured: dict[str, Any]) -> str:
    names, seeds = measured["names"], measured["seeds"]
    lines = [
        "# How reliable each check and metric is",
        "",
        (
            f"Generated by `scripts/metrics_table.py` from a real run: {len(names)} gaussian cases x {len(seeds)} "
            f"seeds ({seeds[0]}-{seeds[-1]}), every answer applied to each case's exact Shapley values "
            "(docs/verdicts.md has the zoo's passes on every family).  Members: the degenerate-explainer zoo "
            "(`pytest_xai/explainers/degenerate.py`), `dummy_credited` (the feature of least mean |phi| "
            "exchanged with the least one that matters) and `column_z_scored` (each feature standardised "
            "over the batch)."
        ),
        "",
        "## Checks: power against each member, false alarms on correct answers",
        "",
        (
            "A cell is the share of case-seeds where the check **fails** the member (1.00: always caught); "
            "`(decl.)` marks a member the check declares it may pass by construction, with its reason in the "
            "check's `passes_by_construction`; `!` a member it passed somewhere undeclared (the zoo test runs "
            "seed 0, where every pass is declared; other seeds find these).  False alarms: the share where it "
            "fails a correct answer.  The stability checks (`local_lipschitz`, `relative_input_stability`, "
            "`relative_output_stability`; no gaussian case declares them) re-explain at 4 perturbed inputs: there "
            "each answer is rebuilt from the exact values at the perturbed inputs, a member under the seed the "
            "check asks for; they are judged against the background game's exact values, so they pass that "
            "answer by construction, and cannot see what leaves the attributions' movement unchanged (a sign "
            "flip, a swap, a constant; declared).  RIS and ROS divide by the attribution itself, as Agarwal et "
            "al. (2022) and Quantus do: on `multinomial_linear` the true marginal's values are exactly 0 where an "
            "integer input sits at its mean, and any movement of a 0 counts a million times its size."
        ),
        "",
        "| check | false alarms: " + " | false alarms: ".join(CORRECT) + " | " + " | ".join(MEMBERS) + " |",
        "|---|" + "---|" * (len(CORRECT) + len(MEMBERS)),
    ]
    for check, by in sorted(measured["verdicts"].items()):
        info = checks.CHECKS[check]
        alarms = [f"{1 - float(np.mean(by[c])):.2f}" for c in CORRECT]
        power = [_cell([not p for p in by[m]], bool(info.exemption(m, names[0]))) for m in MEMBERS]
        lines.append(f"| `{check}` | " + " | ".join(alarms + power) + " |")
    lines += [
        "",
        "## Checks on superpixels: power and false alarms",
        "",
        (
            f"The same shares over the same seeds for the checks of the cases with superpixel groups "
            f"({', '.join(f'`{n}`' for n in GROUPED)}), every member applied to the object's mask "
            "(`truth['segmentation']`); the correct answers are that mask and the simulated annotators' "
            "mask (`truth['weighted_mask']`)."
        ),
        "",
        "| check | case | false alarms: "
        + " | false alarms: ".join(GROUPED_CORRECT)
        + " | "
        + " | ".join(degenerate.MEMBERS)
        + " |",
        "|---|---|" + "---|" * (len(GROUPED_CORRECT) + len(degenerate.MEMBERS)),
    ]
    for (check, name), by in sorted(measured["grouped"].items()):
        info = checks.CHECKS[check]
        alarms = [f"{1 - float(np.mean(by[c])):.2f}" for c in GROUPED_CORRECT]
        power = [_cell([not p for p in by[m]], bool(info.exemption(m, name))) for m in degenerate.MEMBERS]
        lines.append(f"| `{check}` | `{name}` | " + " | ".join(alarms + power) + " |")
    lines += [
        "",
        "## Metrics as they ship: can they tell a member from the truth?",
        "",
        (
            "A cell is the share of case-seeds where the metric scores the member **worse** than the exact values "
            "(the direction each metric calls better).  A share below 1.00 (marked `!`) means the metric, read "
            "alone, cannot always tell that wrong map from the truth; a pass/fail verdict needs it calibrated "
            "on the case, as the checks above are.  Peers' forms: XAI-Bench (Liu et al. 2021), Yeh et al. 2019 / "
            "captum, Quantus 0.6 (its Monotonicity replays its bug: docs/bugs.md), OpenXAI (Agarwal et al. "
            "2022); ours: `pytest_xai/catalogue.py`.  Sparseness and complexity are figures of a map, not of its "
            "truth: they cannot tell any member from the truth by definition, and are left out.  PGI and PGU "
            "have no installable peer (OpenXAI is not on PyPI): `tests/test_catalogue.py` holds ours to the "
            "closed form of a linear model under Gaussian noise, E|w_S . e_S| = sqrt(2/pi) sigma ||w_S s_S||, "
            "within Monte-Carlo error, and replays OpenXAI#28 against it.  Our IROF is Quantus' curve on "
            "Quantus' own SLIC segments (`tests/test_catalogue.py`), divided by the number of groups and "
            "taken from the first removal on (Quantus 0.6 does neither: a curve that never moves scores 1)."
        ),
        "",
        "| metric | " + " | ".join(MEMBERS) + " |",
        "|---|" + "---|" * len(MEMBERS),
    ]
    for metric, by in measured["scores"].items():
        cells = []
        for m in MEMBERS:
            share = float(np.mean(by[m]))
            cells.append(f"{share:.2f}" + (" !" if share < 1 else ""))
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--cases", nargs="*", help="gaussian case names (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "metrics.md")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    names = args.cases or [info.name for info in cases.infos() if info.family == "gaussian"]
    args.out.write_text(render(measure(names, list(range(args.seeds)))))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
