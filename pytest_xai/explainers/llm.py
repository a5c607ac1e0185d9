"""Attribution of generated tokens, as users of captum's ``LLMAttribution`` write it, and the
language-model zoo (explainers that are wrong in the ways published language-model attributions are).

The three captum explainers wrap a perturbation or gradient method in ``LLMAttribution`` /
``LLMGradientAttribution`` with the case's ``tokenizer``, one ``TextTokenInput`` per prompt (its
baseline the padding token), the case's ``target_ids`` as the target, and return captum's
``seq_attr`` (one value per prompt token, summed over the generated tokens).  The perturbation
methods pass ``use_cached_outputs=False``: with captum 0.9 and transformers 5 the cached path of a
multi-token target feeds GPT-2 position ids beyond the sequence (``IndexError: index out of
range``).  They ask for ``tokenizer`` and ``target_ids``, so they run on the language-model cases
(the ``llm`` family) and skip elsewhere.  ``llm_shap_text`` is shap's text explainer on the same
prompts.  Kokhlikyan et al. 2020; Miglani et al. 2023, "Using Captum to Explain Generative Language
Models" (arXiv 2312.05491).

The zoo (``llm_zoo_*``, ``docs/verdicts.md``): attention weights read as attributions, Integrated
Gradients from all-zero embeddings instead of the padding's, the runner-up token explained instead of
the target, credit by position alone, and the token ids themselves.  Each must fail a check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_xai.explainers.captum.recipe import one_thread
from pytest_xai.tokens import embeddings

if TYPE_CHECKING:  # torch is imported inside the calls
    import torch


def _each_prompt(attribution: Any, tokenizer: Any, inputs: Any, target_ids: Any, **kwargs: Any) -> np.ndarray:
    """``attribution.attribute`` on every prompt (captum's LLM attribution takes one at a time):
    ``seq_attr`` per row, (n, L)."""
    import torch
    from captum.attr import TextTokenInput

    out = np.zeros(np.shape(inputs))
    for i, (row, target) in enumerate(zip(np.asarray(inputs).astype(np.int64), np.asarray(target_ids))):
        prompt = TextTokenInput(tokenizer.decode(row), tokenizer, baselines=tokenizer.pad_token_id)
        result = attribution.attribute(prompt, target=torch.as_tensor(target, dtype=torch.long), **kwargs)
        out[i] = result.seq_attr.detach().double().numpy()
    return out


def llm_feature_ablation(model: torch.nn.Module, inputs, tokenizer, target_ids):
    """captum ``LLMAttribution(FeatureAblation(model), tokenizer)``: each prompt token replaced by the
    padding, the change in the target's log-probability (summed over its tokens)."""
    from captum.attr import FeatureAblation, LLMAttribution

    with one_thread():
        attribution = LLMAttribution(FeatureAblation(model), tokenizer)
        return _each_prompt(attribution, tokenizer, inputs, target_ids, use_cached_outputs=False)


def llm_shapley_sampling(model: torch.nn.Module, inputs, tokenizer, target_ids, seed):
    """captum ``LLMAttribution(ShapleyValueSampling(model), tokenizer)`` with 50 permutations per
    prompt, seeded: Shapley values of the target's log-probability against the padding."""
    from captum.attr import LLMAttribution, ShapleyValueSampling

    with one_thread(seed):
        attribution = LLMAttribution(ShapleyValueSampling(model), tokenizer)
        return _each_prompt(attribution, tokenizer, inputs, target_ids, n_samples=50, use_cached_outputs=False)


def llm_integrated_gradients(model: torch.nn.Module, inputs, tokenizer, target_ids):
    """captum ``LLMGradientAttribution(LayerIntegratedGradients(model, embeddings), tokenizer)`` from the
    padding's embeddings, 64 steps, summed over the embedding dimension."""
    import torch
    from captum.attr import LayerIntegratedGradients, LLMGradientAttribution

    with one_thread():
        attribution = LLMGradientAttribution(LayerIntegratedGradients(model, embeddings(model)), tokenizer)
        baselines = torch.full((1, np.shape(inputs)[1]), tokenizer.pad_token_id, dtype=torch.long)
        return _each_prompt(attribution, tokenizer, inputs, target_ids, baselines=baselines, n_steps=64)


def llm_shap_text(model: torch.nn.Module, inputs, tokenizer, target_ids):
    """shap's text explainer as its users call it: ``shap.Explainer(f, shap.maskers.Text(tokenizer,
    mask_token=pad))`` on each prompt's text, ``f`` the target's log-probability of the masked texts
    (shap picks its Partition explainer: Owen values over the tokens' hierarchy, 500 evaluations)."""
    import shap
    import torch

    def explain_one(text: str, target: np.ndarray) -> np.ndarray:
        def f(texts):
            ids = torch.as_tensor([tokenizer.encode(t) for t in texts], dtype=torch.long)
            follow = torch.as_tensor(target[:-1], dtype=torch.long).expand(len(ids), -1)
            with torch.no_grad():
                logits = model(torch.cat([ids, follow], dim=1)).logits[:, ids.shape[1] - 1 :]
            chosen = torch.as_tensor(target, dtype=torch.long).expand(len(ids), -1)
            return logits.log_softmax(dim=-1).gather(2, chosen[..., None])[..., 0].sum(dim=1).double().numpy()

        masker = shap.maskers.Text(tokenizer, mask_token=tokenizer.pad_token, collapse_mask_token=False)
        return shap.Explainer(f, masker)([text], max_evals=500, silent=True).values[0]

    with one_thread():
        rows = np.asarray(inputs).astype(np.int64)
        return np.stack([explain_one(tokenizer.decode(row), t) for row, t in zip(rows, np.asarray(target_ids))])


# ------------------------------------------------------------------------------------------------
# The language-model zoo: each is wrong in a way published attributions are, and must fail a check.

_PAD_ZERO = "the padding's id is 0 and its embedding the baseline's: the map is 0 there, as a correct one is"
_SAME_TOKENS = "a wrong target of this case is decided by the same tokens: its map points where the target's does"
#: What each zoo member passes, and why (``tests/test_llm.py`` asserts these are exactly its passes).
ZOO_PASSES: dict[str, dict[str, str]] = {
    "llm_zoo_attention": {
        "padding_credit[llm_recall]": "the last position's attention falls on the keys and values, not on the padding",
        "target_token[llm_recall]": "the attention falls on the query key and the matching pair, the target's tokens",
        "token_mask_precision[llm_trigger]": "the last position attends to the trigger most",
        "target_token[llm_trigger]": "the attention on the trigger points where the exact values of 'yes' do",
    },
    "llm_zoo_ig_zero_embeddings": {
        "padding_credit[llm_copy]": "IG of a copy from zero embeddings credits the copied word alone",
        "padding_credit[llm_copy_continuation]": "IG of a copy from zero embeddings credits the copied words alone",
        "token_mask_precision[llm_trigger]": "the trigger dominates the path from zero embeddings too",
        "token_values[llm_trigger]": "the trigger's value (about 14 nats) dominates; the padding's share is small",
        "target_token[llm_trigger]": "the map points at the trigger, as the target's exact values do",
    },
    "llm_zoo_wrong_target": {
        "padding_credit[llm_copy]": _PAD_ZERO,
        "padding_credit[llm_copy_continuation]": _PAD_ZERO,
        "padding_credit[llm_recall]": _PAD_ZERO,
        "padding_credit[llm_trigger]": _PAD_ZERO,
        "token_mask_precision[llm_recall]": _SAME_TOKENS,
        "target_token[llm_recall]": _SAME_TOKENS,
        "token_mask_precision[llm_trigger]": _SAME_TOKENS,
        "target_token[llm_trigger]": _SAME_TOKENS,
    },
    "llm_zoo_position": {
        "target_token[llm_recall]": "the ramp rises to the query key at the end, which the target's values credit and "
        "a wrong key's value does not; token_values and token_mask_precision reject it",
    },
    "llm_zoo_input_ids": {
        "padding_credit[llm_copy]": "the padding's id is 0",
        "padding_credit[llm_copy_continuation]": "the padding's id is 0",
        "padding_credit[llm_recall]": "the padding's id is 0",
        "padding_credit[llm_trigger]": "the padding's id is 0",
    },
}


def llm_zoo_attention(model: torch.nn.Module, inputs, tokenizer):
    """Attention as explanation (Jain & Wallace 2019): the last layer's attention from the last
    position, averaged over heads."""
    import torch

    with one_thread(), torch.no_grad():
        ids = torch.as_tensor(np.asarray(inputs).astype(np.int64))
        attentions = model(ids, output_attentions=True).attentions
    return attentions[-1][:, :, -1].mean(dim=1).double().numpy()


def llm_zoo_ig_zero_embeddings(model: torch.nn.Module, inputs, tokenizer, target_ids):
    """Integrated Gradients of the first target token's log-probability from all-zero input embeddings
    (captum's default baseline of ``IntegratedGradients`` on ``inputs_embeds``), not the padding's."""
    import torch
    from captum.attr import IntegratedGradients

    def log_prob(inputs_embeds, target):
        logits = model(inputs_embeds=inputs_embeds).logits[:, -1]
        return logits.log_softmax(dim=-1)[torch.arange(len(logits)), target]

    with one_thread():
        ids = torch.as_tensor(np.asarray(inputs).astype(np.int64))
        vectors = embeddings(model)(ids).detach()
        target = torch.as_tensor(np.asarray(target_ids)[:, 0], dtype=torch.long)
        ig = IntegratedGradients(log_prob)
        out = ig.attribute(vectors, additional_forward_args=(target,), n_steps=64, internal_batch_size=64)
    return out.sum(dim=-1).double().numpy()


def llm_zoo_wrong_target(model: torch.nn.Module, inputs, tokenizer, target_ids):
    """Feature ablation of the runner-up next token instead of the target (an off-by-one or a wrong
    index into the vocabulary)."""
    import torch

    with torch.no_grad():
        logits = model(torch.as_tensor(np.asarray(inputs).astype(np.int64))).logits[:, -1]
    ranked = logits.argsort(dim=-1, descending=True)[:, :2].numpy()
    first = np.asarray(target_ids)[:, 0]
    wrong = np.where(ranked[:, 0] == first, ranked[:, 1], ranked[:, 0])
    return llm_feature_ablation(model, inputs, tokenizer, wrong[:, None])


def llm_zoo_position(inputs):
    """Credit by position alone, rising towards the end of the prompt (recency), whatever the tokens."""
    n, length = np.shape(inputs)
    return np.tile(np.arange(1, length + 1, dtype=float) / length, (n, 1))


def llm_zoo_input_ids(inputs):
    """The token ids themselves."""
    return np.asarray(inputs, dtype=float)
