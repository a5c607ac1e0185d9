"""The table "variant x case: declared checks passed" of issue 27 (docs/your-model.md, "A reference for your model").

    python scripts/variant_table.py                    # with this checkout's pytest_xai
    PYTHONPATH=/path/to/old/checkout python scripts/variant_table.py   # the same on older code

Runs every subtly wrong variant of ``tests/test_user_reference.py`` (and the correct explainer) on
the example project's cases and our own, and prints how many of each case's declared checks (less
the refitting ones) it passes; a check the code cannot run on the case is counted as not declared.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    spec = importlib.util.spec_from_file_location("user_reference", ROOT / "tests" / "test_user_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from pytest_xai import cases

    subjects = module.subjects()
    print("| variant | " + " | ".join(name for name, _, _ in subjects) + " |")
    print("|---|" + "---|" * len(subjects))
    for name in ["exact", *module.VARIANTS]:
        cells = []
        for case_name, base, declared in subjects:
            case = cases.get(case_name)
            verdicts = {}
            for check in declared:
                try:
                    verdicts.update(module.passes(case, module.variant(name, base), [check]))
                except (ValueError, KeyError):  # e.g. gt_shapley on a case without a truth (older code)
                    continue
            failed = sorted(c for c, ok in verdicts.items() if not ok)
            cells.append(
                f"{sum(verdicts.values())}/{len(verdicts)}" + (f" (fails {', '.join(failed)})" if failed else "")
            )
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
