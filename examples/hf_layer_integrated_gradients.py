"""Integrated Gradients on the embedding layer, written the way a Hugging Face user writes it.

Captum's ``LayerIntegratedGradients`` on ``model.get_input_embeddings()``, from a baseline of padding
ids to ``input_ids``, one value per token (summed over the embedding dimension).  It runs unchanged on
the built-in transformer cases, whose models take ``input_ids`` and expose their embeddings as a
Hugging Face model does::

    pytest --xai-explainer=examples/hf_layer_integrated_gradients.py:explain -k transformer
"""

import torch
from captum.attr import LayerIntegratedGradients

from pytest_xai import NotApplicable


def explain(model: "torch.nn.Module", inputs, target):
    if not hasattr(model, "get_input_embeddings"):  # a case without tokens (time series, images)
        raise NotApplicable("this explainer explains models over token ids")
    input_ids = torch.as_tensor(inputs, dtype=torch.long)
    baseline_ids = torch.full_like(input_ids, model.config.pad_token_id)
    lig = LayerIntegratedGradients(model, model.get_input_embeddings())
    attributions = lig.attribute(input_ids, baselines=baseline_ids, target=torch.as_tensor(target), n_steps=50)
    return attributions.sum(dim=-1)
