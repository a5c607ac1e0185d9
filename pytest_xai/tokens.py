"""Models over token ids: Hugging Face's ``PreTrainedModel`` and the transformer family's ``TinyTransformer``
(docs/hf.md).

A token model is a torch module with ``get_input_embeddings()``.  What a case over token ids explains
is one function of the ids, :func:`explained`: the model called on a LongTensor with the attention
mask of the padding (``ids != pad_token_id``, when its ``forward`` takes ``attention_mask``), the
``logits`` of a ``ModelOutput`` (the first element of a tuple), a causal LM's next token read at the
last position, then softmax when the case explains ``"probabilities"``.  ``make_case`` derives
``predict`` from it and the captum adapters explain it, so both see the same number.

No torch at import time: the checks ask :func:`is_token_case` of every case.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

#: What a case explains of a model's class outputs (``case.meta["output"]``, the contract's ``output``):
#: softmax over the classes, the outputs as the model returns them, or log-softmax (captum's
#: ``LLMAttribution`` convention for a generated token).  None: the case does not say; its model
#: returns what ``predict`` gives (the built-in transformer family).
OUTPUTS = ("probabilities", "logits", "log_probabilities")
#: The output of a case explaining a multi-token continuation (the llm family): no one class per row.
CONTINUATION = "continuation_log_probability"
CHUNK = 1024  # rows per forward pass of predict: bounded memory for the reference's many rows


def embeddings(model: Any) -> Any:
    """The embedding layer of a torch module over token ids (``get_input_embeddings()``), or None."""
    get = getattr(model, "get_input_embeddings", None)
    if not callable(get) or not any(
        c.__name__ == "Module" and c.__module__.startswith("torch") for c in type(model).__mro__
    ):
        return None
    return get()


def is_token_case(case: Any) -> bool:
    """Whether ``case`` explains token ids (its ``meta`` names a padding id, as the transformer family
    and ``make_case`` on a token model do)."""
    return case.meta.get("pad_token_id") is not None


def pad_token_id_of(model: Any, given: int | None) -> int | None:
    """``given``, else the model's ``config.pad_token_id`` (None when neither says)."""
    if given is not None:
        return int(given)
    pad = getattr(getattr(model, "config", None), "pad_token_id", None)
    return None if pad is None else int(pad)


def logits_of(out: Any) -> Any:
    """The class outputs of a forward pass: a tensor as it is, a ``ModelOutput``'s ``logits``, a tuple's
    first element (``return_dict=False``)."""
    if hasattr(out, "logits"):
        return out.logits
    if isinstance(out, (tuple, list)) and out:
        return out[0]
    if hasattr(out, "ndim"):
        return out
    raise TypeError(
        f"the model returned a {type(out).__module__}.{type(out).__qualname__}, with neither logits nor a "
        f"tensor: pass predict= (numpy in, numpy out) to make_case"
    )


def takes_attention_mask(model: Any) -> bool:
    try:
        return "attention_mask" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


@functools.cache
def _module_class() -> type:
    import torch

    class Explained(torch.nn.Module):
        """What a case over token ids explains, as a torch module (captum's forward function): ids
        (LongTensor (n, L)) -> (n, classes).  ``get_input_embeddings()`` is the model's own layer, so
        ``LayerIntegratedGradients`` on it hooks the model."""

        def __init__(self, model: Any, output: str | None, pad_token_id: int | None) -> None:
            if output == CONTINUATION:
                from pytest_xai.errors import NotApplicable

                raise NotApplicable(
                    "this case explains the summed log-probability of a multi-token continuation, not one "
                    "class per row: explain it with captum's LLMAttribution (e.g. "
                    "pytest_xai.explainers:llm_feature_ablation)"
                )
            super().__init__()
            self.model, self.output, self.pad_token_id = model, output, pad_token_id
            self.masked = pad_token_id is not None and takes_attention_mask(model)
            self.vocab_size = int(embeddings(model).num_embeddings)

        def get_input_embeddings(self) -> Any:
            return self.model.get_input_embeddings()

        def forward(self, input_ids: Any) -> Any:
            kwargs = {"attention_mask": (input_ids != self.pad_token_id).long()} if self.masked else {}
            logits = logits_of(self.model(input_ids, **kwargs))
            if logits.ndim == 3:  # (n, L, vocab): a causal LM's next token, read at the last position
                if logits.shape[-1] != self.vocab_size:
                    raise ValueError(
                        f"the model gives one output per token over {logits.shape[-1]} labels (token "
                        f"classification); make_case explains one output per row: pass predict="
                    )
                logits = logits[:, -1]
            if self.output == "probabilities" and logits.ndim == 2 and logits.shape[1] > 1:
                return logits.softmax(dim=-1)
            if self.output == "log_probabilities":
                return logits.log_softmax(dim=-1)
            return logits

    return Explained


def explained(model: Any, output: str | None, pad_token_id: int | None) -> Any:
    """The function of the ids that a case over token ids explains, as a torch module (see above)."""
    return _module_class()(model, output, pad_token_id)


def predictor(model: Any, output: str | None, pad_token_id: int | None) -> Callable[[Any], Any]:
    """``predict`` of a token model: ids as numbers (n, L), rounded and clipped into the vocabulary
    (a perturbation that writes any number reads a token), -> (n, classes) float64, (n,) for one output."""
    import numpy as np

    module = explained(model, output, pad_token_id)

    def predict(x: Any) -> Any:
        import torch

        ids = np.clip(np.rint(np.asarray(x, dtype=float)), 0, module.vocab_size - 1)
        ids = torch.as_tensor(ids.reshape(len(ids), -1), dtype=torch.long)
        with torch.no_grad():
            parts = [module(ids[i : i + CHUNK]) for i in range(0, len(ids), CHUNK)] or [module(ids)]
            out = torch.cat(parts).double().numpy()
        return out[:, 0] if out.ndim == 2 and out.shape[1] == 1 else out

    return predict
