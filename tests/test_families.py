"""Each family is declared once (``pytest_xai.registry.Family``): the built-in family modules, the
fast gate's pairs and pytest's header lines are derived from the declarations, for the built-in
families and for an entry-point family alike."""

from __future__ import annotations

import os

import pytest

import pytest_xai
from pytest_xai import cases, registry

QUIET = ("-p", "no:randomly", "-p", "no:cacheprovider", "--strict-markers")
REF = "--xai-explainer=pytest_xai.explainers:exact_shapley"


@pytest.fixture
def declared():
    """The family registry, restored after the test (a test's own families must not leak)."""
    before = dict(registry.FAMILIES)
    yield registry.FAMILIES
    registry.FAMILIES.clear()
    registry.FAMILIES.update(before)


def test_every_built_in_family_is_declared_once_with_a_smoke_test_that_exists():
    families = cases.families()
    built_in = {name: f for name, f in families.items() if f.module in cases.MODULES}
    case_families = {info.family for info in cases.infos() if info.build.__module__ in cases.MODULES}
    assert set(built_in) == case_families  # every family with built-in cases is declared, by its own module
    assert "pytest_xai.cases.generic" in cases.MODULES and "generic" not in families  # checks only, no cases
    for name, family in built_in.items():
        assert family.source, name
        check, case = family.smoke
        info = cases.info(case)
        assert info.family == name and check in info.checks, name
    pairs = cases.smoke()
    assert [f.smoke for f in built_in.values()] == pairs[: len(built_in)]  # one per family, first
    assert len({case for _, case in pairs[: len(built_in)]}) == len(built_in)


def test_every_built_in_case_names_the_model_libraries_the_zygote_imports_for_it():
    """``CaseInfo.libraries`` (the family's, or the case's own) tells the zygote what to import before
    its first fork; a built-in case always says (None, a user's case, means all of them), and each
    name is a module that exists."""
    import importlib.util

    from pytest_xai.engine.zygote import LIBRARIES

    for info in cases.infos():
        if info.family == "user":
            continue
        assert info.libraries is not None, info.name
        for module in info.libraries:
            assert importlib.util.find_spec(module) is not None, (info.name, module)
    libraries = {info.name: info.libraries or () for info in cases.infos() if info.family != "user"}
    assert libraries["cough_and_fever"] == ("xgboost",)  # its torch twin is built on first read
    assert libraries["counterexample_dummy_axiom"] == () and libraries["gaussian_linear_rho0"] == ("scipy.stats",)
    assert set().union(*libraries.values()) >= set(LIBRARIES)  # each is some built-in case's


def test_header_lines_come_from_the_declarations():
    from pytest_xai.cases import chess

    assert chess.FAMILY.header is chess.report_header
    assert chess.report_header() in cases.headers()
    assert [f.name for f in cases.families().values() if f.header] == ["chess"]


def test_family_case_registers_under_the_family_name_and_source(declared):
    family = pytest_xai.Family("made_here", source="Someone et al. 2024", smoke=("symmetry", "made_here_case"))

    @family.case(source="section 2", checks={"symmetry": {"features": (0, 1)}})
    def made_here_case(seed):
        raise AssertionError("not built here")

    try:
        info = cases.info("made_here_case")
        assert (info.family, info.source) == ("made_here", "Someone et al. 2024, section 2")
        assert family.module == __name__ and declared["made_here"] is family
        assert ("symmetry", "made_here_case") in cases.smoke()
        pytest_xai.Family("made_here", source="declared again by the same module")  # a re-import: allowed
    finally:
        cases.CASES.pop("made_here_case")


def test_bad_declarations_are_refused_with_what_to_give(declared):
    with pytest.raises(ValueError, match="the name must be an identifier"):
        pytest_xai.Family("two words")
    with pytest.raises(ValueError, match=r"give the \(check, case\) pair"):
        pytest_xai.Family("bad_smoke", smoke="symmetry[cough_and_fever]")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"family 'tabular' is registered twice \(pytest_xai.cases.tabular and "):
        pytest_xai.Family("tabular")
    pytest_xai.Family("lost", smoke=("symmetry", "no_such_case"))
    with pytest.raises(
        ValueError,
        match=r"family 'lost' .* names the smoke test symmetry\[no_such_case\], but no "
        r"case 'no_such_case' is registered",
    ):
        cases.smoke()
    declared.pop("lost")
    pytest_xai.Family("thief", smoke=("symmetry", "cough_and_fever"))
    with pytest.raises(ValueError, match="case 'cough_and_fever' is of family 'tabular'"):
        cases.smoke()


ENTRY_POINT_FAMILY = """
import numpy as np
import pytest_xai


def header():
    return "shipped: model card read"


FAMILY = pytest_xai.Family("shipped", source="a package's own cases", smoke=("determinism", "shipped_one"),
                           header=header)


def f(X):
    X = np.asarray(X, dtype=float)
    return 3 * X[:, 0] - X[:, 1]


def _case(seed):
    rng = np.random.default_rng(seed)
    return pytest_xai.make_case(rng.normal(size=(8, 2)), predict=f, background=rng.normal(size=(8, 2)))


@FAMILY.case(checks=["faithfulness", "determinism"])
def shipped_one(seed):
    return _case(seed)


@FAMILY.case(checks=["determinism"])
def shipped_two(seed):
    return _case(seed)
"""


def test_an_entry_point_family_gets_its_header_line_and_smoke_test(pytester, monkeypatch):
    site = pytester.mkdir("site")
    (site / "shipped_family.py").write_text(ENTRY_POINT_FAMILY)
    info = site / "shipped_family-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shipped-family\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest_xai.families]\nshipped = shipped_family\n")
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    result = pytester.runpytest_subprocess(*QUIET, "-m", "xai_smoke", "-k", "shipped", REF)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["xai: shipped: model card read", "*determinism?shipped_one?*PASS*"])
