"""The case's model is untrusted too (docs/design.md, "Reliability rules"): a model that hangs,
raises, returns NaN or the wrong shape, or is not deterministic, gives its tests an ERROR (or a
TIMEOUT) of kind ``case`` naming the case, never the explainer; the checks and the reference that
call it run in the judge's worker under the limits, and pytest's process imports no model library.

Each run here would hang, or blame the explainer, on the code before the judge moved into the
engine (issue 39); the hanging runs have a generous timeout so that a regression fails instead of
hanging CI.
"""

from __future__ import annotations

import json

import pytest

QUIET = ("-p", "no:randomly", "-p", "no:cacheprovider", "--strict-markers")
RANDOM = "--xai-explainer=pytest_xai.explainers:random"  # never calls the model
EXACT = "--xai-explainer=pytest_xai.explainers:exact_shapley"

#: User cases whose model misbehaves, each registered with the checks that call the model.
HOSTILE_MODELS = """
import os
import time

import numpy as np

import pytest_xai

X = np.random.default_rng(0).normal(size=(40, 3))
CHECKS = ["faithfulness", "completeness", "-gt_shapley"]  # the faults, not the reference's comparison


def linear(rows):
    return np.asarray(rows, dtype=float) @ [1.0, 2.0, 0.0]


def hangs(rows):
    time.sleep(3600)


def raises(rows):
    raise RuntimeError("the model exploded")


def nan(rows):
    return np.full(len(rows), np.nan)


def wrong_length(rows):
    return linear(rows)[:-1]


def noisy(rows):
    return linear(rows) + np.random.default_rng().normal(size=len(rows))


def hangs_on_many(rows):  # only the reference's batches are this long: the check's calls, not the explainer's
    if len(rows) > 100:
        time.sleep(3600)
    return linear(rows)


def raises_on_many(rows):
    if len(rows) > 100:
        raise ValueError("too many rows")
    return linear(rows)


def _register(name, predict):
    def build(seed):
        return pytest_xai.make_case(X[:5], predict=predict, background=X[:20], target=None, seed=seed)

    build.__name__ = name
    pytest_xai.register_case(checks=CHECKS)(build)


MODELS = [hangs, raises, nan, wrong_length, noisy, hangs_on_many, raises_on_many]
for _predict in MODELS:
    _register(f"model_{_predict.__name__}", _predict)
"""


def _results(path) -> dict[str, dict]:
    return {r["nodeid"].partition("::")[2]: r for r in json.loads(path.read_text())["results"]}


def _run(pytester: pytest.Pytester, *args: str, timeout: float = 240):
    pytester.makeconftest(HOSTILE_MODELS)
    return pytester.runpytest_subprocess(*QUIET, *args, "--xai-report=r.json", timeout=timeout)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_hanging_model_is_a_case_timeout_and_every_other_test_gets_its_verdict(pytester, xdist):
    """The model sleeps forever when the case is built (make_case calls it), and another only on
    the reference's long batches: with an explainer that never calls the model, each ends in a
    TIMEOUT of kind ``case`` within a few times ``--xai-timeout``; the other tests get verdicts and
    the report is written."""
    result = _run(pytester, RANDOM, EXACT, "-k", "model_hangs or cough_and_fever", "--xai-timeout=3", *xdist)
    assert result.ret == 1, result.stdout.str()
    results = _results(pytester.path / "r.json")
    hung = {k: r for k, r in results.items() if "model_hangs" in k}
    assert len(hung) == 8  # two cases, two checks, two explainers
    for test, rec in hung.items():
        if rec["status"] == "SKIP" or ("hangs_on_many" in test and "exact_shapley" in test):
            continue  # completeness does not apply to random; exact_shapley itself calls the hanging batches
        assert (rec["status"], rec["kind"]) == ("TIMEOUT", "case"), (test, rec)
        case = test.partition("[")[2].rpartition("-")[0]
        assert rec["error"].startswith(f"case {case!r}"), rec["error"]  # not blamed on the explainer
    assert sum(r["kind"] == "case" for r in hung.values()) >= 5
    others = {k: r for k, r in results.items() if "cough_and_fever" in k}
    assert others and all(r["status"] in ("PASS", "FAIL") for r in others.values()), others


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("model_raises", "raised RuntimeError: the model exploded"),
        ("model_nan", "returned non-finite values"),
        ("model_wrong_length", "predict returned shape (1,) for 2 rows"),  # make_case's own check
        ("model_noisy", "not deterministic"),
        ("model_raises_on_many", "raised ValueError: too many rows"),
    ],
)
def test_a_misbehaving_model_is_an_error_of_kind_case_naming_the_case(pytester, case, said):
    """Raising, NaN, the wrong shape, two answers to one question, and raising only under the
    check's own calls (the reference's batches): an ERROR of kind ``case`` whose message names the
    case and its model, for an explainer that never calls the model and for one that does."""
    selected = f"{case} and not {case}_" if case == "model_raises" else case  # not model_raises_on_many
    result = _run(pytester, RANDOM, EXACT, "-k", selected, timeout=180)
    assert result.ret == 1, result.stdout.str()
    results = _results(pytester.path / "r.json")
    assert len(results) == 4
    for test, rec in results.items():
        if rec["status"] == "SKIP" or (case == "model_raises_on_many" and "exact_shapley" in test):
            continue  # completeness does not apply to random; exact_shapley itself makes the long calls
        assert (rec["status"], rec["kind"]) == ("ERROR", "case"), (test, rec)
        assert f"case {case!r}" in rec["error"] and said in rec["error"], rec["error"]
        assert not rec["error"].startswith("explainer"), rec["error"]


def test_pytests_process_imports_no_model_library_and_builds_no_case(pytester):
    """The supervisor only collects, dispatches and reports: at the end of a run over cases of
    torch, scikit-learn and xgboost models, none of their libraries is in its ``sys.modules``."""
    pytester.makeconftest(
        """
import sys

HEAVY = {"torch", "xgboost", "sklearn", "shap", "lime", "captum", "chess", "transformers", "matplotlib", "scipy"}


def pytest_sessionfinish(session):
    with open("modules.txt", "w") as fh:
        fh.write(" ".join(sorted({m.split(".")[0] for m in sys.modules} & HEAVY)))
"""
    )
    args = ("-k", "cough_and_fever or additive_mlp or chess_cnn_check or sanity_digits_mlp", "--xai-report=r.json")
    result = pytester.runpytest_subprocess(
        *QUIET, EXACT, "--xai-explainer=pytest_xai.explainers:integrated_gradients", *args
    )
    assert result.ret in (0, 1), result.stdout.str()
    assert len(_results(pytester.path / "r.json")) > 6
    assert (pytester.path / "modules.txt").read_text() == ""


def test_make_case_checks_the_widths_of_background_and_baseline_and_the_models_output():
    """A background or baseline of another width, or a model that returns the wrong number of
    rows, is refused when the case is built, saying what is wrong (before, the explainer got the
    reshape error)."""
    import numpy as np

    import pytest_xai

    X = np.random.default_rng(0).normal(size=(10, 3))
    linear = lambda rows: np.asarray(rows) @ [1.0, 2.0, 0.0]
    with pytest.raises(ValueError, match=r"background has rows of shape \(4,\) but the inputs \(3,\)"):
        pytest_xai.make_case(X[:5], predict=linear, background=np.zeros((8, 4)))
    with pytest.raises(ValueError, match=r"baseline has shape \(2,\)"):
        pytest_xai.make_case(X[:5], predict=linear, background=X, baseline=np.zeros(2))
    with pytest.raises(ValueError, match=r"predict returned shape \(1,\) for 2 rows"):
        pytest_xai.make_case(X[:5], predict=lambda rows: linear(rows)[:1], background=X)
    case = pytest_xai.make_case(X[:5], predict=linear, background=X, baseline=np.zeros(3))
    assert case.baseline.shape == (3,)
