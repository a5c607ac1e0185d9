"""The explainer contract used directly, as from a notebook."""

import numpy as np
import pytest

from pytest_xai import NotApplicable, cases
from pytest_xai.engine import contract
from pytest_xai.errors import ExplainerError, SpecError


def load(func):
    return contract.from_function(func, where="test")


@pytest.fixture(scope="module")
def case():
    return cases.get("cough_and_fever")


def test_only_asked_arguments_are_passed_and_arrays_are_copies(case):
    seen = {}

    def explain(inputs, seed, feature_names):
        seen.update(inputs=inputs, seed=seed, names=feature_names)
        return np.zeros(inputs.shape)

    result = contract.run(load(explain), case, seed=5)
    assert seen["seed"] == 5 and seen["names"] == ["cough", "fever"]
    assert seen["inputs"] is not case.inputs and result.seconds >= 0


def test_quantus_style_targets_alias(case):
    def explain_func(model, inputs, targets, **kwargs):
        assert targets is None and model is case.model
        return np.zeros(inputs.shape)

    assert contract.run(load(explain_func), case).attributions.shape == (4, 2)


def test_dict_output_with_importance_and_interactions(case):
    def explain(inputs):
        return {"attributions": [[0, 0]] * 4, "importance": [1.0, 1.0], "interactions": np.eye(2)}

    result = contract.run(load(explain), case)
    assert result.importance.tolist() == [1.0, 1.0] and result.interactions.shape == (2, 2)


def test_dict_output_with_standard_errors(case):
    def explain(inputs):
        return {"attributions": np.zeros((4, 2)), "stderr": np.full((4, 2), 0.1)}

    assert contract.run(load(explain), case).stderr.tolist() == [[0.1, 0.1]] * 4
    assert contract.run(load(lambda inputs: np.zeros(inputs.shape)), case).stderr is None


@pytest.mark.parametrize(
    "output, message",
    [
        ({"attributions": np.zeros((4, 2)), "stderr": -np.ones((4, 2))}, "8 negative stderr value(s)"),
        ({"attributions": np.zeros((4, 2)), "stderr": np.ones(2)}, "stderr of shape (2,), expected (4, 2)"),
        ({"attributions": np.zeros((4, 2)), "stderr": np.full((4, 2), np.nan)}, "8 non-finite stderr"),
        ({"attributions": np.zeros((4, 2)), "interactions": np.eye(3)}, "interactions of shape (3, 3)"),
        ({"values": 1}, "expected 'attributions'"),
        (np.zeros((4, 2), dtype=complex), "dtype complex128"),
        (np.zeros((4, 2), dtype=bool), "dtype bool"),
        (np.zeros((4, 2), dtype="timedelta64[s]"), "dtype timedelta64[s]"),  # issue 29: numpy calls it an integer
        (np.ma.masked_array(np.ones((4, 2)), mask=[[1, 0]] * 4), "masked array with 4 masked value(s)"),  # was dropped
        (np.full((4, 2), 1e308), "so large (up to 1e+308) that their sum overflows"),  # was "attribution by 0"
    ],
)
def test_invalid_outputs_are_explained(case, output, message):
    with pytest.raises(ExplainerError, match=None) as info:
        contract.coerce(output, case)
    assert message in str(info.value)


def test_model_annotation_selects_the_torch_twin_or_skips(case):
    torch = pytest.importorskip("torch")
    from dataclasses import replace

    seen = []

    def gradients(model: torch.nn.Module, inputs):
        seen.append(model)
        return np.zeros(inputs.shape)

    contract.run(load(gradients), case)
    assert seen == [case.torch_model] and isinstance(case.torch_model, torch.nn.Module)
    assert float(case.torch_model(torch.tensor(case.inputs))[-1]) == 80.0  # the twin computes 80 x0 x1
    with pytest.raises(NotApplicable, match="wants model: torch.nn.modules.module.Module.*no differentiable twin"):
        contract.run(load(gradients), replace(case, torch_model=None))


def test_file_spec_and_dedupe(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("def explain(inputs):\n    return inputs * 0\n")
    first = contract.load(f"{path}:explain")
    again = contract.load(f"{path}:explain")
    other = contract.load("pytest_xai.explainers:random")
    unique = contract.dedupe([first, again, other])
    assert [e.name for e in unique] == ["explain", "random"]


def test_file_spec_that_is_not_python_source_is_a_spec_error(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("def explain(inputs):\n    return inputs\n")
    with pytest.raises(SpecError, match=r"mine.txt' raised ImportError: cannot import .* as a Python file"):
        contract.load(f"{path}:explain")


def test_same_name_from_two_modules_is_disambiguated(tmp_path):
    (tmp_path / "a.py").write_text("def random(inputs):\n    return inputs\n")
    ours, theirs = contract.load("pytest_xai.explainers:random"), contract.load(f"{tmp_path / 'a.py'}:random")
    assert [e.name for e in contract.dedupe([ours, theirs])] == [ours.spec, theirs.spec]


def test_spec_errors_name_option_and_value():
    with pytest.raises(SpecError, match=r"ini xai_explainers=a:b:c: expected"):
        contract.load("a:b:c", option="ini xai_explainers")


def test_a_reference_spec_is_checked_without_importing_its_library():
    """What the plugin's processes do: no ``import shap`` until the function itself is used."""
    import subprocess
    import sys

    code = (
        "import sys; from pytest_xai.engine import contract; "
        "e = contract.check_without_import('pytest_xai.explainers:shap_kernel'); "
        "print(e.name, 'shap' in sys.modules, e.wants[:2], 'shap' in sys.modules, e.func.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [
        "shap_kernel",
        "False",
        "('inputs',",
        "'predict')",
        "True",
        "pytest_xai.explainers.shap",
    ]


def test_checked_without_import_a_bad_or_missing_explainer_fails_as_when_loaded(monkeypatch, tmp_path):
    with pytest.raises(SpecError, match="has no attribute 'shap_kernal'; did you mean shap_kernel"):
        contract.check_without_import("pytest_xai.explainers:shap_kernal")
    with pytest.raises(SpecError, match="'degenerate' is a module, not a callable explainer"):
        contract.check_without_import("pytest_xai.explainers:degenerate")
    (tmp_path / "mine.py").write_text("def explain(inputs):\n    return inputs\n")
    assert contract.check_without_import(f"{tmp_path / 'mine.py'}:explain").wants == ("inputs",)  # loaded
    real = contract.importlib.util.find_spec
    monkeypatch.setattr(
        contract.importlib.util, "find_spec", lambda name, *a: None if name == "lime" else real(name, *a)
    )
    with pytest.raises(
        SpecError,
        match=r"No module named 'lime'\n\(install the extra it needs, e.g. pip install "
        r"'pytest-xai\[lime\]'\)",
    ):
        contract.check_without_import("pytest_xai.explainers:lime_tabular", option="ini xai_explainers")


def test_an_unmasked_masked_array_is_read_as_its_numbers(case):
    attributions, _, _ = contract.coerce(np.ma.masked_array(np.ones((4, 2))), case)
    assert attributions.tolist() == [[1.0, 1.0]] * 4


MYMOD = "def explain(inputs):\n    return inputs * 0\n"


def test_a_module_spec_resolves_from_the_directory_pytest_runs_in(pytester):
    """Issue 44: ``pytest --xai-explainer=mymod:explain`` from the folder holding mymod.py said "run
    pytest from the directory that contains it".  The ``pytest`` script puts its own folder first on
    ``sys.path``, not the current one (``python -m pytest`` and pytester's subprocess, which adds the
    folder to PYTHONPATH, do): in-process, nothing puts pytester's folder on ``sys.path`` either."""
    pytester.makepyfile(mymod=MYMOD)
    result = pytester.runpytest("-p", "no:cacheprovider", "--xai-explainer=mymod:explain", "-k", "cough_and_fever")
    assert "not found" not in result.stdout.str() + result.stderr.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2, result.stdout.str()


def test_the_pytest_script_finds_a_module_beside_it(tmp_path):
    """The user's own command: the ``pytest`` script, run in the folder of mymod.py."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).with_name("pytest")
    if not script.exists():
        pytest.skip(f"no pytest script beside {sys.executable}")
    (tmp_path / "mymod.py").write_text(MYMOD)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [str(script), "-p", "no:cacheprovider", "--xai-explainer=mymod:explain", "-k", "cough_and_fever", "--co"],
        cwd=tmp_path,
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "symmetry[cough_and_fever-explain]" in done.stdout


def test_a_module_not_found_names_the_folders_searched(pytester):
    result = pytester.runpytest("-p", "no:cacheprovider", "--co", "--xai-explainer=nomod:explain")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    searched = f"*--xai-explainer=nomod:explain: module 'nomod' not found in {pytester.path} (the current directory), "
    result.stderr.fnmatch_lines([searched + "nor in *"])
    assert "run pytest from the directory that contains it" not in result.stderr.str()
