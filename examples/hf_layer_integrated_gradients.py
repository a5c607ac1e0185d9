"""Integrated Gradients on the embedding layer, written the way a Hugging Face user writes it.

Captum's ``LayerIntegratedGradients`` on ``model.get_input_embeddings()``, from a baseline of padding
ids to ``input_ids``, one value per token (summed over the embedding dimension).  It explains what the
case explains (docs/hf.md): the model called with the attention mask of the padding, the ``logits``
of its ``ModelOutput``, a causal LM's next token at the last position, and softmax when the case's
``output`` is ``"probabilities"``.  It runs unchanged on a ``BertForSequenceClassification`` or a
``GPT2LMHeadModel`` given to ``make_case`` and on the built-in transformer cases, whose models take
``input_ids`` and return probabilities (their ``output`` is None)::

    pytest --xai-explainer=examples/hf_layer_integrated_gradients.py:explain -k transformer
"""

import inspect

import torch
from captum.attr import LayerIntegratedGradients

from pytest_xai import NotApplicable


def explain(model: "torch.nn.Module", inputs, target, output=None, pad_token_id=None):
    if not hasattr(model, "get_input_embeddings"):  # a case without tokens (time series, images)
        raise NotApplicable("this explainer explains models over token ids")
    pad = model.config.pad_token_id if pad_token_id is None else pad_token_id
    masked = "attention_mask" in inspect.signature(model.forward).parameters

    def forward(input_ids):
        out = model(input_ids, attention_mask=(input_ids != pad).long()) if masked else model(input_ids)
        logits = out.logits if hasattr(out, "logits") else out[0] if isinstance(out, tuple) else out
        if logits.ndim == 3:  # a causal LM: the next token, predicted at the last position
            logits = logits[:, -1]
        return logits.softmax(dim=-1) if output == "probabilities" else logits

    input_ids = torch.as_tensor(inputs, dtype=torch.long)
    baseline_ids = torch.full_like(input_ids, pad)
    lig = LayerIntegratedGradients(forward, model.get_input_embeddings())
    attributions = lig.attribute(input_ids, baselines=baseline_ids, target=torch.as_tensor(target), n_steps=50)
    return attributions.sum(dim=-1)
