"""The tiny transformer of the family: its module, the hand-set units and the trained model.

Imported only when a case is built (it imports torch at the top; the family's ``__init__`` does not).
The module follows the conventions Hugging Face users know: ``forward(input_ids)`` takes a
LongTensor of token ids (n, L), the embedding layer is ``get_input_embeddings()``, and
``config.pad_token_id`` names the padding token.  It returns class probabilities, the output the
case's ``predict`` gives, so gradient and perturbation explainers explain the same number.
There is no attention mask: the models read the padding, as one trained without a mask does, so an
explanation that credits padding is wrong about the input, not about the model.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from pytest_xai.training import fit_classifier, frozen, load_weights, save_weights

DATA = Path(__file__).resolve().parents[2] / "data"  # pytest_xai/data
TRAINED_WEIGHTS = DATA / "tiny_transformer.pt"
TRAINED_CARD = DATA / "tiny_transformer.json"


@dataclass(frozen=True)
class TransformerConfig:
    """What a Hugging Face config would hold.  ``pool``: the representation the head reads, the
    first position (``"first"``, as a [CLS] read-out) or the mean over all positions (``"mean"``);
    ``output``: ``"softmax"`` of the head's logits, or ``"probabilities"`` when the hand-set head
    already computes them (its outputs are affine in the embeddings, so attributions are exact)."""

    vocab_size: int = 24
    hidden_size: int = 16
    max_length: int = 10
    num_labels: int = 2
    head_hidden: int = 16
    pool: str = "mean"
    output: str = "softmax"
    pad_token_id: int = 0


class SelfAttention(nn.Module):
    """Single-head scaled dot-product self-attention with an output projection (no mask)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.query, self.key, self.value, self.out = (nn.Linear(hidden, hidden) for _ in range(4))
        self.scale = 1.0 / math.sqrt(hidden)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        scores = self.query(h) @ self.key(h).transpose(1, 2) * self.scale
        return self.out(scores.softmax(dim=-1) @ self.value(h))


class TinyTransformer(nn.Module):
    """Token and position embeddings, one self-attention layer (residual), a read-out (first position
    or mean over positions) and a classifier head; ``forward(input_ids)`` returns probabilities."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_length, config.hidden_size)
        self.attention = SelfAttention(config.hidden_size)
        if config.head_hidden:
            self.classifier: nn.Module = nn.Sequential(
                nn.Linear(config.hidden_size, config.head_hidden),
                nn.ReLU(),
                nn.Linear(config.head_hidden, config.num_labels),
            )
        else:
            self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        h = self.embeddings(input_ids) + self.position_embeddings(positions)[None]
        h = h + self.attention(h)
        pooled = h[:, 0] if self.config.pool == "first" else h.mean(dim=1)
        out = self.classifier(pooled)
        return out.softmax(dim=-1) if self.config.output == "softmax" else out


def token_ids(ids: Any, vocab_size: int) -> torch.Tensor:
    """Float ids (the contract's arrays) as a LongTensor: rounded and clipped into the vocabulary,
    as the human text cases read them, so a perturbation that writes any number reads a token."""
    array = np.clip(np.rint(np.asarray(ids, dtype=float)), 0, vocab_size - 1)
    return torch.as_tensor(array, dtype=torch.long)


def predictor(model: TinyTransformer):
    """``predict``: token ids (n, L) as numbers -> class probabilities (n, 2), float64."""

    def predict(ids: Any) -> np.ndarray:
        with torch.no_grad():
            return model(token_ids(ids, model.config.vocab_size)).double().numpy()

    return predict


# ------------------------------------------------------------------------------------------------
# Hand-set units (XAI-Units manner): 4 hidden dimensions with fixed roles.
#   0: the token's value (PAD and neutral tokens share BASE_VALUE), 1-2: the position code
#   (cos, sin of 2 pi t / L), 3: written only by the attention.  The head reads dimension 3.


BASE_VALUE = 0.5  # the value of PAD and of neutral tokens: the padding is read, and moves the output
POSITION_SHARPNESS = 400.0  # query norm of the position unit: its next-best key scores e^-38 less


def _set(layer: nn.Linear, weight: np.ndarray, bias: np.ndarray | None = None) -> None:
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(weight, dtype=torch.float32))
        layer.bias.copy_(torch.as_tensor(np.zeros(len(weight)) if bias is None else bias, dtype=torch.float32))


def hand_set(values: np.ndarray, *, length: int, gain: float, position: int | None = None) -> TinyTransformer:
    """A unit whose class-1 probability is 1/2 + gain * (value read by the attention - BASE_VALUE).

    ``values`` holds each token's value (dimension 0).  With ``position=None`` the attention is
    uniform over all positions (query 0), so the read value is the mean over the sequence, padding
    included: p1 = 1/2 + gain / L * sum_t w(x_t), w = value - BASE_VALUE.  With ``position=p`` the
    query is a fixed vector and the keys read only the position code, so the attention selects
    position p whatever the tokens: p1 = 1/2 + gain * w(x_p).  Either way the output is affine in
    the token embeddings, so Integrated Gradients from the padding, occlusion with the padding and
    Shapley values against it all equal w(x_t) scaled, and every other token gets exactly 0."""
    config = TransformerConfig(
        vocab_size=len(values), hidden_size=4, max_length=length, head_hidden=0, pool="first", output="probabilities"
    )
    model = TinyTransformer(config)
    angle = 2 * np.pi * np.arange(length) / length
    with torch.no_grad():
        token = np.zeros((len(values), 4))
        token[:, 0] = values
        model.embeddings.weight.copy_(torch.as_tensor(token, dtype=torch.float32))
        place = np.zeros((length, 4))
        place[:, 1], place[:, 2] = np.cos(angle), np.sin(angle)
        model.position_embeddings.weight.copy_(torch.as_tensor(place, dtype=torch.float32))
    attention = model.attention
    query_bias = np.zeros(4)
    if position is not None:  # scores = sharpness * cos(angle_t - angle_p) / sqrt(4), largest at p
        query_bias[1:3] = POSITION_SHARPNESS * np.array([np.cos(angle[position]), np.sin(angle[position])])
    _set(attention.query, np.zeros((4, 4)), query_bias)
    _set(attention.key, np.diag([0.0, 1.0, 1.0, 0.0]))
    _set(attention.value, np.diag([1.0, 0.0, 0.0, 0.0]))
    move = np.zeros((4, 4))
    move[3, 0] = 1.0  # the read value goes to dimension 3, which nothing else writes
    _set(attention.out, move)
    head = np.zeros((2, 4))
    head[:, 3] = [-gain, gain]
    assert isinstance(model.classifier, nn.Linear)
    _set(model.classifier, head, np.array([0.5 + gain * BASE_VALUE, 0.5 - gain * BASE_VALUE]))
    return frozen(model)


# ------------------------------------------------------------------------------------------------
# The trained model (shipped weights, scripts/train_tiny_transformer.py)


TRAINED_CONFIG = TransformerConfig()  # 16 hidden, mean read-out, MLP head, softmax


def train(
    ids: np.ndarray, labels: np.ndarray, *, seed: int, epochs: int = 40, lr: float = 3e-3, batch: int = 64
) -> tuple[TinyTransformer, dict[str, Any]]:
    """The tiny transformer trained by :func:`pytest_xai.training.fit_classifier` (Adam,
    seeded, one thread)."""
    x, y = torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(labels, dtype=torch.long)
    return fit_classifier(lambda: TinyTransformer(TRAINED_CONFIG), x, y, seed=seed, epochs=epochs, lr=lr, batch=batch)


def accuracy(model: TinyTransformer, ids: np.ndarray, labels: np.ndarray) -> float:
    return float((predictor(model)(ids).argmax(axis=1) == labels).mean())


def save_trained(model: TinyTransformer, card: dict[str, Any]) -> None:
    """Write the state_dict (float32) and its card (``scripts/train_tiny_transformer.py``)."""
    save_weights(model, TRAINED_WEIGHTS, {"config": asdict(model.config), **card})


def load_trained() -> TinyTransformer:
    """The shipped model, its ``state_dict`` read with ``weights_only=True``."""
    return load_weights(TinyTransformer(TRAINED_CONFIG), TRAINED_WEIGHTS)


def trained_card() -> dict[str, Any]:
    card: dict[str, Any] = json.loads(TRAINED_CARD.read_text())
    return card
