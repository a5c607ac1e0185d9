"""A missing optional library skips the tests that need it, naming the install line (README "Install")."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from pytest_xai import extras

ROOT = Path(__file__).parent.parent
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
# Hides top-level modules as if they were not installed: the path finder no longer finds them (a
# None in sys.modules would be the other way, but scipy's array-API helpers then read None.Tensor).
SITECUSTOMIZE = """
import importlib.machinery, os, sys

HIDDEN = set(os.environ["XAI_HIDE"].split(","))


class Hiding(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        return None if name.partition(".")[0] in HIDDEN else super().find_spec(name, path, target)


sys.meta_path[:] = [Hiding if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""


def test_each_module_is_installed_by_the_extra_that_names_it():
    """EXTRAS agrees with pyproject.toml: the module's distribution is a requirement of its extra."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    providers = metadata.packages_distributions()
    for module, extra in extras.EXTRAS.items():
        names = {req.split(";")[0].split(">")[0].split("=")[0].split("[")[0].strip().lower() for req in optional[extra]}
        dists = {d.lower() for d in providers.get(module, [])}
        assert dists & names, f"{module} (from {sorted(dists)}) is not in the extra {extra!r}: {optional[extra]}"


def test_missing_follows_the_cause_and_ignores_other_import_errors():
    try:
        try:
            import torch_is_not_here  # noqa: F401
        except ImportError as exc:
            raise ImportError("wrapped") from exc
    except ImportError as outer:
        assert extras.missing(outer) is None  # not an optional library of ours
    hidden = ModuleNotFoundError("No module named 'chess.svg'", name="chess.svg")
    wrapped = ImportError("the chess cases need python-chess")
    wrapped.__cause__ = hidden
    assert extras.missing(wrapped) == "chess"
    assert (
        extras.skip_reason("case x", wrapped)
        == 'case x needs chess, which is not installed: pip install "pytest-xai[chess]"'
    )


@pytest.mark.parametrize(
    "hidden", ["torch", "chess", "torch,captum,lime,chess"], ids=["no-torch", "no-chess", "shap-extra-only"]
)
def test_smoke_gate_skips_what_needs_a_hidden_library(pytester, monkeypatch, hidden):
    """With torch (or chess, or all but the [shap] extra docs/ci.md installs) hidden, the smoke tests
    that need it SKIP with the install line, in the terminal and the JSON report; none FAILs with a
    ModuleNotFoundError (3 of the 11 did with the [shap] extra alone)."""
    site = pytester.mkdir("site")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    monkeypatch.setenv("PYTHONPATH", f"{site}:{ROOT}")
    monkeypatch.setenv("XAI_HIDE", hidden)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *QUIET,
        "-m",
        "xai_smoke",
        "-rs",
        f"--xai-report={report}",
        "--xai-explainer=pytest_xai.explainers:exact_shapley",
    )
    assert "ModuleNotFoundError" not in result.stdout.str()
    needs = {
        "units_weighted_features": "torch",
        "sanity_digits_mlp": "torch",
        "additive_mlp": "torch",
        "chess_oracle_check": "chess",
    }
    recs = {r["case"]: r for r in json.loads(report.read_text())["results"]}
    for case, module in needs.items():
        if module not in hidden.split(","):
            continue
        line = f'pip install "pytest-xai[{module}]"'
        assert recs[case]["status"] == "SKIP", recs[case]
        assert f"needs {module}" in recs[case]["detail"] and line in recs[case]["detail"], recs[case]["detail"]
        result.stdout.fnmatch_lines(
            [(f'SKIPPED*needs {module}, which is not installed: pip install "pytest-xai[[]{module}[]]"')]
        )
    assert not [
        r
        for r in recs.values()
        if r["status"] in ("FAIL", "ERROR") and any(m in (r["detail"] or "") for m in hidden.split(","))
    ]
