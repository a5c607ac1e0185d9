"""The transformer family: token ids with a padding token, hand-set units with exact attributions and
a trained tiny transformer; the reference adapters on token models and a Hugging Face user's
LayerIntegratedGradients adapter (examples/hf_layer_integrated_gradients.py).  The zoo over these
checks runs in tests/test_zoo.py."""

from pathlib import Path

import numpy as np
import pytest
import torch
from captum.attr import LayerGradientXActivation

from pytest_xai import NotApplicable, cases
from pytest_xai.cases import transformer
from pytest_xai.cases.transformer import model as tiny
from pytest_xai.checks import CHECKS
from pytest_xai.engine import contract

CASES = ("transformer_lexicon", "transformer_position", "transformer_negation")
UNITS = CASES[:2]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "hf_layer_integrated_gradients.py"
pytestmark = pytest.mark.filterwarnings("ignore:Setting forward, backward hooks:UserWarning")


def score(check, attributions, case):
    info = CHECKS[check]
    return info.func(attributions, case, **{**info.thresholds, **case.info.checks[check]})


def explained(spec, case):
    return contract.run(contract.load(spec), case, seed=0).attributions


def test_cases_are_registered_with_their_checks():
    infos = {i.name: i for i in cases.infos() if i.family == "transformer"}
    assert sorted(infos) == sorted(CASES)
    assert set(infos["transformer_lexicon"].checks) == {"token_mask_precision", "padding_credit", "token_values"}
    assert set(infos["transformer_position"].checks) == {"token_mask_precision", "token_values"}
    assert set(infos["transformer_negation"].checks) == {"token_mask_precision", "padding_credit"}


@pytest.mark.parametrize("name", CASES)
def test_inputs_are_padded_token_ids_and_the_padding_is_the_baseline(name):
    case = cases.get(name)
    ids = case.inputs
    assert ids.shape == (transformer.N_EXPLAINED, transformer.LENGTH)
    assert np.array_equal(ids, np.rint(ids)) and ids.min() >= 0 and ids.max() < len(transformer.VOCABULARY)
    lengths = (ids != transformer.PAD).sum(axis=1)
    assert np.array_equal(case.truth["padding"], np.arange(transformer.LENGTH)[None] >= lengths[:, None])
    assert case.truth["padding"].any() and not (case.truth["padding"] & case.truth["token_mask"]).any()
    assert np.all(case.baseline == transformer.PAD) and case.background.shape == (1, transformer.LENGTH)
    model = case.model
    assert model.get_input_embeddings() is model.embeddings and model.config.pad_token_id == transformer.PAD
    probabilities = model(torch.as_tensor(ids, dtype=torch.long))
    assert torch.allclose(probabilities.sum(dim=1), torch.ones(len(ids)))
    np.testing.assert_allclose(case.predict(ids), probabilities.double().numpy())
    # the decisive words have small ids, most other words larger ones: the ids themselves rank them low
    assert ids[case.truth["token_mask"]].max() <= 10 < np.median(ids[~case.truth["token_mask"] & (ids != 0)])


def test_predict_rounds_and_clips_ids_into_the_vocabulary():
    case = cases.get("transformer_lexicon")
    ids = case.inputs[:2]
    np.testing.assert_allclose(case.predict(ids + 0.3), case.predict(ids))
    np.testing.assert_allclose(case.predict(np.full_like(ids, 99.0)), case.predict(np.full_like(ids, 23.0)))


def test_the_units_closed_form_is_checked_against_enumeration_at_build():
    case = cases.get("transformer_lexicon", fresh=True)
    broken = transformer.model.hand_set(transformer._values() * 1.1, length=transformer.LENGTH, gain=1.0)
    with pytest.raises(AssertionError, match="disagree with enumeration"):
        transformer._exact(case.info, case.inputs, broken, tiny.predictor(broken), case.truth["token_values"], {})


@pytest.mark.parametrize("name", UNITS)
@pytest.mark.parametrize("explainer", ["integrated_gradients", "feature_occlusion", "shap_kernel", "occlusion"])
def test_padding_baseline_explainers_are_exact_on_the_units(name, explainer):
    case = cases.get(name)
    got = explained(f"pytest_xai.explainers:{explainer}", case)
    np.testing.assert_allclose(got, case.truth["token_values"], atol=1e-6)
    assert all(score(check, got, case).passed for check in case.info.checks)


def test_the_units_read_the_padding_so_gradient_times_embedding_credits_it():
    """A Gradient x Input map on the embeddings (captum LayerGradientXActivation) credits the padding,
    which these models read; the padding baseline gives it 0.  padding_credit tells them apart."""
    case = cases.get("transformer_lexicon")
    ids = torch.as_tensor(case.inputs, dtype=torch.long)
    grad_x = LayerGradientXActivation(case.model, case.model.get_input_embeddings()).attribute(ids, target=1)
    wrong = grad_x.sum(dim=-1).detach().numpy().astype(float)
    assert np.abs(wrong[case.truth["padding"]]).min() > 0
    result = score("padding_credit", wrong, case)
    assert not result.passed and "share of |a| on the padding" in result.detail
    assert score("padding_credit", case.truth["token_values"], case).passed


def test_the_trained_model_passes_its_accuracy_gate_and_its_card_says_so():
    card = tiny.trained_card()
    held_out, labels, _ = transformer.negation_rows(2000, seed=transformer.HELD_OUT_SEED)
    measured = tiny.accuracy(tiny.load_trained(), held_out, labels)
    assert measured >= transformer.ACCURACY_GATE
    assert card["held_out"] == {"rows": 2000, "seed": transformer.HELD_OUT_SEED, "accuracy": round(measured, 4)}
    assert card["accuracy_gate"] == transformer.ACCURACY_GATE and card["size_bytes"] <= 1_000_000
    assert tiny.TRAINED_WEIGHTS.stat().st_size == card["size_bytes"]
    case = cases.get("transformer_negation")
    assert case.meta["held_out_accuracy"] == measured
    assert (
        case.predict(case.inputs).argmax(axis=1)
        == np.isin(case.inputs, transformer.TRIGGERS).any(axis=1)
        & ~np.isin(case.inputs, transformer.NEGATORS).any(axis=1)
    ).all()


def test_a_model_below_its_gate_makes_the_case_not_applicable(monkeypatch):
    monkeypatch.setattr(transformer, "ACCURACY_GATE", 1.01)
    with pytest.raises(NotApplicable, match="model below quality gate: held-out accuracy"):
        cases.get("transformer_negation", fresh=True)


def test_negation_separates_shapley_from_integrated_gradients_and_occlusion():
    """On negated rows the empty (all-padding) sentence is already negative, so IG from the padding
    has almost nothing to distribute (its sum is f(x) - f(padding), about 0), and removing one of two
    triggers or negators changes nothing for occlusion; Shapley values against the padding credit both."""
    case = cases.get("transformer_negation")
    for explainer, passes in (("shap_kernel", True), ("integrated_gradients", False), ("feature_occlusion", False)):
        result = score("token_mask_precision", explained(f"pytest_xai.explainers:{explainer}", case), case)
        assert result.passed is passes, (explainer, result.detail)


@pytest.mark.parametrize("check", ["token_mask_precision", "padding_credit", "token_values"])
def test_random_and_constant_maps_fail(check):
    case = cases.get("transformer_lexicon")
    for wrong in (np.random.default_rng(0).standard_normal(case.inputs.shape), np.ones(case.inputs.shape)):
        assert not score(check, wrong, case).passed


def test_an_all_zero_map_fails_as_explaining_nothing():
    case = cases.get("transformer_lexicon")
    zeros = np.zeros(case.inputs.shape)
    assert "explains nothing" in score("padding_credit", zeros, case).detail
    assert "nothing (all zero)" in score("token_mask_precision", zeros, case).detail


def test_gradient_explainers_skip_token_models_with_the_reason_and_perturbations_run():
    case = cases.get("transformer_position")
    with pytest.raises(NotApplicable, match="takes token ids .* integrated_gradients explains it"):
        explained("pytest_xai.explainers:saliency", case)
    for explainer in ("feature_ablation", "shapley_value_sampling"):
        assert score("token_values", explained(f"pytest_xai.explainers:{explainer}", case), case).passed


def test_the_hugging_face_style_adapter_runs_unchanged_on_the_transformer_cases():
    """examples/hf_layer_integrated_gradients.py: input_ids, get_input_embeddings(), padding ids as the
    baseline, .sum(-1); it agrees with the reference adapter and skips cases without tokens."""
    spec = f"{EXAMPLE}:explain"
    for name in CASES:
        case = cases.get(name)
        mine = explained(spec, case)
        np.testing.assert_allclose(
            mine, explained("pytest_xai.explainers:integrated_gradients", case), atol=1e-2 * np.abs(mine).max()
        )  # 50 steps (captum's default) against 128
        if name in UNITS:
            assert all(score(check, mine, case).passed for check in case.info.checks)
    with pytest.raises(NotApplicable):
        explained(spec, cases.get("timeseries_shape"))
