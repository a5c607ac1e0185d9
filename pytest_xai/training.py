"""Training and shipping the small torch classifiers of the transformer and timeseries families.

Imported only when a case is built or a model trained (it imports torch at the top).  The recipe is
the same for both (``scripts/train_tiny_transformer.py``, ``scripts/train_timeseries_cnn.py``); the
weights ship as a float32 ``state_dict`` beside a JSON card (``pytest_xai/data/README.md``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

M = TypeVar("M", bound=nn.Module)


def frozen(model: M) -> M:
    """``model`` in eval mode, its parameters without gradients: a fixed function to explain."""
    for param in model.parameters():
        param.requires_grad_(False)
    return model.eval()


def fit_classifier(
    make: Callable[[], M], x: torch.Tensor, labels: torch.Tensor, *, seed: int, epochs: int, lr: float, batch: int
) -> tuple[M, dict[str, Any]]:
    """``make()`` trained by Adam on cross-entropy of its probabilities (seeded inside a forked RNG,
    one thread); the step size falls tenfold for the last 20 % of ``epochs``.  Returns the frozen
    model and its recipe for the card."""
    torch.set_num_threads(1)
    start = time.perf_counter()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = make()
        optimiser = torch.optim.Adam(model.parameters(), lr=lr)
        schedule = torch.optim.lr_scheduler.MultiStepLR(optimiser, [int(0.8 * epochs)], gamma=0.1)
        model.train()
        for _ in range(epochs):
            order = torch.randperm(len(x))
            for first in range(0, len(x), batch):
                rows = order[first : first + batch]
                optimiser.zero_grad()
                torch.log(model(x[rows]) + 1e-9).neg().gather(1, labels[rows, None]).mean().backward()
                optimiser.step()
            schedule.step()
    recipe = {"epochs": epochs, "lr": lr, "batch": batch, "seed": seed}
    return frozen(model), {**recipe, "training_seconds": round(time.perf_counter() - start, 1)}


def save_weights(model: nn.Module, weights: Path, card: dict[str, Any]) -> None:
    """Write ``model``'s state_dict to ``weights`` and its card (``card`` first, then the file's
    size, the parameter count and torch's version) beside it as ``.json``."""
    torch.save(model.state_dict(), weights)
    card = {
        "file": weights.name,
        **card,
        "size_bytes": weights.stat().st_size,
        "parameters": sum(p.numel() for p in model.parameters()),
        "torch": torch.__version__,
    }
    weights.with_suffix(".json").write_text(json.dumps(card, indent=2) + "\n")


def load_weights(model: M, weights: Path) -> M:
    """``model`` with the shipped state_dict, read with ``weights_only=True``, frozen."""
    model.load_state_dict(torch.load(weights, weights_only=True, map_location="cpu"))
    return frozen(model)
