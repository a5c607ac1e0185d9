"""The networks of the time-series family: hand-set matched filters and the trained 1-D CNN.

Imported only when a case is built (it imports torch at the top).  Every network is a float32
``nn.Sequential`` of modules (convolution, ReLU, max pooling over time, a linear head, softmax), so
captum's layer hooks see each step; ``forward`` takes (n, channels, time) and returns class
probabilities, the output the case's ``predict`` gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from pytest_xai.training import fit_classifier, frozen, load_weights, save_weights

DATA = Path(__file__).resolve().parents[2] / "data"  # pytest_xai/data
TRAINED_WEIGHTS = DATA / "timeseries_cnn.pt"
TRAINED_CARD = DATA / "timeseries_cnn.json"


def predictor(model: nn.Module):
    """``predict``: series (n, channels, time) -> class probabilities, float64."""

    def predict(x: Any) -> np.ndarray:
        with torch.no_grad():
            return model(torch.as_tensor(np.asarray(x, dtype=np.float32))).double().numpy()

    return predict


def matched_filter(
    templates: np.ndarray, threshold: float, head_weight: np.ndarray, head_bias: np.ndarray
) -> nn.Module:
    """One template per channel (``templates`` (channels, width)), correlated with its own channel
    (a grouped ``Conv1d`` without bias), the maximum response over time per channel, its excess
    over ``threshold`` (ReLU), then logits = ``head_weight`` @ excesses + ``head_bias`` and softmax.

    Only the time steps under the template at the best-matching place of a channel that exceeds
    the threshold move the output: the receptive field of that maximum is the planted window, and
    the channels below the threshold (the waves alone respond up to about 0.5, the pattern 2) get exactly 0."""
    channels, width = templates.shape
    model = nn.Sequential(
        nn.Conv1d(channels, channels, width, groups=channels),
        nn.AdaptiveMaxPool1d(1),
        nn.Flatten(),
        nn.ReLU(),
        nn.Linear(channels, len(head_bias)),
        nn.Softmax(dim=1),
    )
    conv, head = model[0], model[4]
    assert isinstance(conv, nn.Conv1d) and isinstance(head, nn.Linear) and conv.bias is not None
    with torch.no_grad():
        conv.weight.copy_(torch.as_tensor(templates[:, None, :], dtype=torch.float32))
        conv.bias.fill_(-threshold)
        head.weight.copy_(torch.as_tensor(head_weight, dtype=torch.float32))
        head.bias.copy_(torch.as_tensor(head_bias, dtype=torch.float32))
    return frozen(model)


def cnn() -> nn.Module:
    """The trained network: two 'same' convolutions (8 filters of width 9, ReLU), the maximum over
    time, a linear head over 2 classes, softmax (682 parameters)."""
    return nn.Sequential(
        nn.Conv1d(1, 8, 9, padding=4),
        nn.ReLU(),
        nn.Conv1d(8, 8, 9, padding=4),
        nn.ReLU(),
        nn.AdaptiveMaxPool1d(1),
        nn.Flatten(),
        nn.Linear(8, 2),
        nn.Softmax(dim=1),
    )


def train(
    x: np.ndarray, labels: np.ndarray, *, seed: int, epochs: int = 30, lr: float = 3e-3, batch: int = 64
) -> tuple[nn.Module, dict[str, Any]]:
    """The CNN trained by :func:`pytest_xai.training.fit_classifier` (Adam, seeded, one thread)."""
    xs, ys = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(labels, dtype=torch.long)
    return fit_classifier(cnn, xs, ys, seed=seed, epochs=epochs, lr=lr, batch=batch)


def accuracy(model: nn.Module, x: np.ndarray, labels: np.ndarray) -> float:
    return float((predictor(model)(x).argmax(axis=1) == labels).mean())


def save_trained(model: nn.Module, card: dict[str, Any]) -> None:
    """Write the state_dict (float32) and its card (``scripts/train_timeseries_cnn.py``)."""
    save_weights(model, TRAINED_WEIGHTS, card)


def load_trained() -> nn.Module:
    """The shipped CNN, its ``state_dict`` read with ``weights_only=True``."""
    return load_weights(cnn(), TRAINED_WEIGHTS)
