"""Write the README's figures from a run of its main job, so that none is typed by hand.

    pytest --xai-explainer=... --xai-report=xai-report.json ...   # the README's command 1 (.ci/run)
    python scripts/readme_figures.py xai-report.json              # docs/figures/main-job.json, README.md

The JSON report is cut to a small extract (when the run was made, its explainers, its outcome counts,
an excerpt of its rows and the run's aggregates), kept in ``docs/figures/main-job.json``; the
README's block between ``<!-- figures: main-job -->`` and ``<!-- /figures -->`` is rendered from it.
``tests/test_readme.py`` renders the block again from the extract and compares.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXTRACT = ROOT / "docs" / "figures" / "main-job.json"
README = ROOT / "README.md"
BLOCK = re.compile(r"(<!-- figures: main-job -->\n)(.*?)(<!-- /figures -->)", re.DOTALL)
#: The rows of the excerpt: one or two per family, each explainer's reach and misses among them.
ROWS = (
    "symmetry[cough_and_fever]",
    "additive_correlation[additive_oracle]",
    "gt_shapley[gaussian_nonlinear_additive_rho50]",
    "human_precision[human_shapes_oracle]",
    "interaction_detection[detect_interaction0]",
    "ngt[chess_cnn_check]",
    "ngt[chess_cnn_mate]",
    "units_mse[units_conflicting_features]",
    "token_mask_precision[llm_copy]",
    "window_precision[timeseries_shape]",
    "fooling[compas_shap_scaffold]",
    "stress_rank[stress_nb_features]",
)


OUTCOMES = ("passed", "failed", "skipped")  # pytest's order
FIELDS = ("row", "explainer", "case", "category", "check", "status", "score", "seconds", "cpu_seconds", "evaluations")


def extract(report: dict) -> dict:
    """What the README shows of a JSON report."""
    results = report["results"]
    outcomes = Counter(r["outcome"] for r in results)
    return {
        "created": report["created"],
        "explainers": [spec.rpartition(":")[2] for spec in report["options"]["explainers"]],
        "outcomes": {o: outcomes[o] for o in sorted(outcomes, key=lambda o: (OUTCOMES + (o,)).index(o))},
        "rows": [{k: r.get(k) for k in FIELDS} for r in results if r["row"] in ROWS],
        "summary": report["summary"],
    }


def render(figures: dict) -> str:
    """The README's block: the counts of the run and an excerpt of its score table."""
    from pytest_xai.reports.record import records
    from pytest_xai.reports.report import table

    outcomes = figures["outcomes"]
    counts = ", ".join(f"{n} {outcome}" for outcome, n in outcomes.items())
    lines = table(records(figures["rows"]), order=figures["explainers"], aggregates=figures["summary"])
    rule = next(i for i, line in enumerate(lines) if i > 1 and line.startswith("---"))
    excerpt = [*lines[:rule], "...", *lines[rule:]]
    return (
        f"The run of {figures['created'][:10]} gave {sum(outcomes.values())} tests: {counts}. Its score table,\n"
        f"an excerpt (`scripts/readme_figures.py` writes this block from the run's JSON report):\n\n"
        "```\n" + "\n".join(excerpt) + "\n```\n"
    )


def readme_block(text: str) -> str:
    """The figures block of the README's ``text``."""
    match = BLOCK.search(text)
    if match is None:
        raise SystemExit("README.md has no <!-- figures: main-job --> block")
    return match.group(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", help="the main job's JSON report (default: keep the extract)")
    args = parser.parse_args()
    if args.report:
        figures = extract(json.loads(Path(args.report).read_text()))
        EXTRACT.parent.mkdir(exist_ok=True)
        EXTRACT.write_text(json.dumps(figures, indent=1) + "\n")
    figures = json.loads(EXTRACT.read_text())
    text = README.read_text()
    readme_block(text)
    README.write_text(BLOCK.sub(lambda m: m.group(1) + render(figures) + m.group(3), text))
    print(f"{README.relative_to(ROOT)}: figures of the run of {figures['created']}")


if __name__ == "__main__":
    main()
