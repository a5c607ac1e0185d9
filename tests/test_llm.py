"""The llm family: causal language models from transformers with known deciding prompt tokens, captum's
LLMAttribution explainers through it, and the language-model zoo (each member fails a check).  The
degenerate zoo over these checks runs in tests/test_zoo.py."""

import numpy as np
import pytest

pytest.importorskip("transformers")

from pytest_xai import NotApplicable, cases, explainers
from pytest_xai.cases import llm
from pytest_xai.cases.llm import model as lm
from pytest_xai.checks import CHECKS
from pytest_xai.engine import contract

CASES = ("llm_copy", "llm_copy_continuation", "llm_recall", "llm_trigger")
CHECK_NAMES = ("token_mask_precision", "padding_credit", "token_values", "target_token")
ZOO = explainers.LLM_ZOO


def score(check, attributions, case):
    info = CHECKS[check]
    return info.func(attributions, case, **{**info.thresholds, **case.info.checks[check]})


def explained(spec, case):
    return contract.run(contract.load(spec), case, seed=0).attributions


def verdicts(spec, case):
    attributions = explained(spec, case)
    return {check: score(check, attributions, case) for check in case.info.checks}


def test_cases_are_registered_with_their_checks():
    infos = {i.name: i for i in cases.infos() if i.family == "llm"}
    assert sorted(infos) == sorted(CASES)
    assert all(set(info.checks) == set(CHECK_NAMES) for info in infos.values())


@pytest.mark.parametrize("name", CASES)
def test_a_case_is_a_real_transformers_model_with_its_tokenizer_and_exact_values(name):
    from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast

    case = cases.get(name)
    assert isinstance(case.model, GPT2LMHeadModel) and isinstance(case.meta["tokenizer"], PreTrainedTokenizerFast)
    ids, answers = case.inputs, case.meta["target_ids"]
    assert ids.shape == (llm.N_EXPLAINED, llm.LENGTH) and answers.shape[0] == len(ids)
    tokenizer = case.meta["tokenizer"]
    assert all(tokenizer.encode(tokenizer.decode(row)) == list(row) for row in ids)
    # the model answers every explained prompt right (greedy), and predict's column is the target's log-prob
    assert (lm.greedy(case.model, ids, answers.shape[1]) == answers).all()
    table = case.predict(ids)
    np.testing.assert_allclose(
        table[np.arange(len(ids)), case.target], lm.token_log_probs(case.model, ids, answers).sum(axis=1), atol=1e-5
    )
    # exact Shapley values: efficiency (they sum to v(prompt) - v(all padding)), zero on the padding
    full = lm.token_log_probs(case.model, ids, answers).sum(axis=1)
    empty = lm.token_log_probs(case.model, np.zeros_like(ids), answers).sum(axis=1)
    np.testing.assert_allclose(case.truth["token_values"].sum(axis=1), full - empty, atol=1e-4)
    assert np.all(case.truth["token_values"][ids == llm.PAD] == 0)
    np.testing.assert_allclose(case.truth["per_token_values"].sum(axis=1), case.truth["token_values"], atol=1e-9)


def test_the_shipped_models_pass_their_gate_and_the_card_says_so():
    card = lm.trained_card()
    assert card["accuracy_gate"] == llm.ACCURACY_GATE and card["size_bytes"] <= 1_000_000
    assert lm.WEIGHTS.stat().st_size == card["size_bytes"]
    for task in llm.TASKS:
        assert card["tasks"][task]["held_out"]["accuracy"] >= llm.ACCURACY_GATE
    assert cases.get("llm_recall").meta["held_out_accuracy"] >= llm.ACCURACY_GATE


def test_a_cold_build_of_an_llm_case_computes_no_exact_values(monkeypatch, tmp_path):
    """The explained rows and their exact values at the default seed ship with the weights
    (``pytest_xai/data/llm_truth.npz``): a run with an empty cache computed them for every task (4-6
    CPU s each), in every cold run and every process without the disk cache."""
    from pytest_xai.cache import Cache

    def computed(*args, **kwargs):
        raise AssertionError("exact values computed")

    monkeypatch.setattr(lm, "exact_values", computed)
    for name in ("llm_copy", "llm_recall", "llm_trigger"):
        case = cases.get(name, cache=Cache(str(tmp_path)), fresh=True)
        assert case.truth["token_values"].shape == case.inputs.shape


@pytest.mark.slow  # the exact values of every task again: about 14 CPU s
def test_the_shipped_llm_truth_is_what_the_shipped_weights_give():
    """``scripts/llm_truth.py`` wrote the file from the weights it names; computed again here, the
    rows are the same and the values equal to rounding."""
    shipped = llm.shipped_arrays()
    assert shipped is not None
    for task in llm.TASKS:
        again = llm.computed_arrays(task, llm.SHIPPED_SEED, llm._gated(task)[0])
        for key, value in again.items():
            if value.dtype.kind == "f":
                np.testing.assert_allclose(shipped[task][key], value, rtol=1e-6, atol=1e-9, err_msg=f"{task} {key}")
            else:
                np.testing.assert_array_equal(shipped[task][key], value, err_msg=f"{task} {key}")


def test_a_model_below_its_gate_makes_the_case_not_applicable(monkeypatch):
    monkeypatch.setattr(llm, "ACCURACY_GATE", 1.01)
    with pytest.raises(NotApplicable, match="model below quality gate: trigger held-out accuracy"):
        cases.get("llm_trigger", fresh=True)


def test_the_llm_explainers_skip_cases_without_a_tokenizer():
    with pytest.raises(NotApplicable, match="not a language-model case: it has no tokenizer"):
        explained("pytest_xai.explainers:llm_feature_ablation", cases.get("cough_and_fever"))


@pytest.mark.parametrize("name", CASES)
def test_captum_llm_attribution_passes_where_theory_says_it_must(name):
    """Shapley value sampling converges to the exact values: every check; feature ablation and layer IG
    from the padding give the padding exactly 0 and rank the deciding tokens first, as do shap's text
    explainer's Owen values."""
    case = cases.get(name)
    sampled = verdicts("pytest_xai.explainers:llm_shapley_sampling", case)
    assert all(s.passed for s in sampled.values()), {c: s.detail for c, s in sampled.items()}
    for spec in ("llm_feature_ablation", "llm_integrated_gradients", "llm_shap_text"):
        found = verdicts(f"pytest_xai.explainers:{spec}", case)
        for check in ("padding_credit", "target_token", "token_mask_precision"):
            assert found[check].passed, (spec, check, found[check].detail)


@pytest.mark.parametrize("member", ZOO)
def test_each_zoo_member_fails_a_check_on_every_case_and_passes_only_what_is_declared(member):
    from pytest_xai.explainers.llm import ZOO_PASSES

    passes = set()
    for name in CASES:
        case = cases.get(name)
        found = verdicts(f"pytest_xai.explainers:{member}", case)
        assert not all(s.passed for s in found.values()), (member, name)
        passes |= {f"{check}[{name}]" for check, s in found.items() if s.passed}
    assert passes == set(ZOO_PASSES[member])


def test_the_wrong_generated_token_fails_the_target_check():
    """Attributing one generated token of a two-token continuation, or a wrong next token, is
    an attribution of the wrong target."""
    case = cases.get("llm_copy_continuation")
    first_only = case.truth["per_token_values"][:, 0]
    assert not score("target_token", first_only, case).passed
    assert score("target_token", case.truth["token_values"], case).passed
    copy = cases.get("llm_copy")
    assert not score("target_token", copy.truth["other_targets"][:, 0], copy).passed


def test_the_captum_llm_adapter_gives_a_verdict_on_every_llm_case_from_the_command_line(pytester, tmp_path):
    """pytest --xai-explainer=<captum LLM adapter>: a verdict on every check of every llm case (through
    the engine's workers), the evaluations of its model.forward calls counted, other cases skipped."""
    import json

    report = tmp_path / "report.json"
    pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "-m",
        "xai_llm or xai_transformer",
        "-k",
        "llm_copy or llm_recall or llm_trigger",
        "--xai-explainer=pytest_xai.explainers:llm_feature_ablation",
        f"--xai-report={report}",
    )
    results = json.loads(report.read_text())["results"]
    assert {(r["check"], r["case"]) for r in results} == {(c, n) for c in CHECK_NAMES for n in CASES}
    assert {r["status"] for r in results} <= {"PASS", "FAIL"}
    assert [r["check"] for r in results if r["status"] == "FAIL"] == ["token_values"]  # llm_recall's interactions
    assert all(r["evaluations"] > 0 for r in results)
