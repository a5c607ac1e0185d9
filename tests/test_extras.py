"""A missing optional library skips the tests that need it, naming the install line (README "Set-up:
two commands", the score table's ``skip``), or fails them when ``--xai-require`` names its extra."""

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


def _hide(pytester, monkeypatch, hidden: str) -> None:
    site = pytester.mkdir("site")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    monkeypatch.setenv("PYTHONPATH", f"{site}:{ROOT}")
    monkeypatch.setenv("XAI_HIDE", hidden)


ONE_TORCH_TEST = (
    "-m",
    "xai_smoke",
    "-k",
    "units_weighted_features",
    "--xai-explainer=pytest_xai.explainers:exact_shapley",
)


def test_require_makes_a_skip_for_a_missing_extra_an_error(pytester, monkeypatch):
    """Issue 44: a gate that lost its extras went green (1 passed, 12 skipped).  ``--xai-require=torch``
    (or ini ``xai_require``) fails the test that needs torch with the install line, and the run
    exits 1 naming the extra; without it the skip stays, and the summary says what was missing."""
    _hide(pytester, monkeypatch, "torch")
    report = pytester.path / "r.json"
    required = pytester.runpytest_subprocess(*QUIET, *ONE_TORCH_TEST, "--xai-require=torch", f"--xai-report={report}")
    assert required.ret == pytest.ExitCode.TESTS_FAILED
    required.assert_outcomes(failed=1)
    required.stdout.fnmatch_lines(
        [
            '*needs torch, which is not installed: pip install "pytest-xai[[]torch[]]"*--xai-require=torch*',
            'xai: --xai-require: the extra torch is missing (1 test needed it): pip install "pytest-xai[[]torch[]]"',
        ]
    )
    (rec,) = json.loads(report.read_text())["results"]
    assert rec["status"] == "FAIL" and 'pip install "pytest-xai[torch]"' in rec["detail"]

    pytester.makeini("[pytest]\nxai_require = shap, torch\n")
    assert pytester.runpytest_subprocess(*QUIET, *ONE_TORCH_TEST).ret == pytest.ExitCode.TESTS_FAILED

    pytester.makeini("[pytest]\n")
    skipped = pytester.runpytest_subprocess(*QUIET, *ONE_TORCH_TEST)
    assert skipped.ret == pytest.ExitCode.OK
    skipped.assert_outcomes(skipped=1)
    skipped.stdout.fnmatch_lines(
        [
            (
                'xai: 1 test skipped for a missing library: torch (1): pip install "pytest-xai[[]torch[]]"; '
                "--xai-require=torch makes it an error"
            ),
            "xai: every test of exact_shapley skipped for a missing library: it was never run",
        ]
    )


def test_require_names_only_extras_of_pytest_xai(pytester):
    result = pytester.runpytest(*QUIET, "--co", "--xai-require=torch,tourch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--xai-require=torch,tourch: 'tourch' is no extra of pytest-xai; give some of *"])
