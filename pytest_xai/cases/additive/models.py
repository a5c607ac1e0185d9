"""The benchmark's models (see :mod:`pytest_xai.cases.additive`): the analytic oracle ``F`` as a torch
module (:func:`oracle_module`) and the paper's fully connected network (:func:`paper_mlp`) with its
training recipe (:func:`train_mlp`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from pytest_xai.cases.additive.generator import relu_units

MLP_HIDDEN = (512, 256, 128, 64, 32, 16)
MLP_EPOCHS = 16


def oracle_module(breaks: np.ndarray, slopes: np.ndarray):
    """``F`` exactly, as ``Sequential(Linear(d, d*U), ReLU, Linear(d*U, 1, bias=False))`` (float32, eval).

    Hidden unit (i, u) is ``relu(sign * (x_i - offset))`` (see :func:`relu_units`), so every method that
    needs modules (DeepLift, LRP, guided backprop) runs on it; output shape (n, 1).  Because each
    hidden unit reads one pixel and is 0 at x = 0, DeepLift (rescale, zero baseline) is exact on it
    and LRP-z equals Input x Gradient.
    """
    import torch

    sign, offset, weight = relu_units(breaks, slopes)
    d, units = sign.shape
    first = np.zeros((d * units, d))
    first[np.arange(d * units), np.repeat(np.arange(d), units)] = sign.ravel()
    hidden, output = torch.nn.Linear(d, d * units), torch.nn.Linear(d * units, 1, bias=False)
    model = torch.nn.Sequential(hidden, torch.nn.ReLU(), output)
    with torch.no_grad():
        hidden.weight.copy_(torch.as_tensor(first))
        hidden.bias.copy_(torch.as_tensor(-(sign * offset).ravel()))
        output.weight.copy_(torch.as_tensor(weight.reshape(1, -1) / d))
    return model.requires_grad_(False).eval()


def paper_mlp(d: int, *, seed: int = 0):
    """The paper's network: d -> 512 -> 256 -> 128 -> 64 -> 32 -> 16 (ReLU) -> 1 (no bias).

    Initialisation as its Keras code: first kernel ~ N(0, (1/d)^2) with zero bias; the other
    kernels and the hidden biases He-normal (Keras: normal truncated at 2 sd, sd sqrt(2 / fan_in),
    a bias vector's fan_in being its length).  410,112 parameters for d = 458.
    """
    import torch

    layers, width = [], d
    for units in MLP_HIDDEN:
        layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
        width = units
    layers.append(torch.nn.Linear(width, 1, bias=False))
    model = torch.nn.Sequential(*layers)
    generator = torch.Generator().manual_seed(seed)

    def he_normal(tensor, fan_in):
        std = math.sqrt(2.0 / fan_in) / 0.87962566103423978  # Keras' truncation correction
        with torch.no_grad():
            tensor.copy_(torch.randn(tensor.shape, generator=generator).clamp_(-2, 2) * std)

    linear = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        linear[0].weight.copy_(torch.randn(linear[0].weight.shape, generator=generator) / d)
        linear[0].bias.zero_()
    for layer in linear[1:]:
        he_normal(layer.weight, layer.in_features)
        if layer.bias is not None:
            he_normal(layer.bias, layer.out_features)
    return model


def r_squared(y: np.ndarray, prediction: np.ndarray) -> float:
    """Coefficient of determination 1 - SSE / SST."""
    y = np.asarray(y, dtype=float)
    return float(1.0 - np.sum((y - prediction) ** 2) / np.sum((y - y.mean()) ** 2))


def torch_predict(module):
    """numpy (n, d) -> numpy (n,) float64 through ``module`` without gradients, one thread."""

    def predict(X):
        import torch

        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                out = module(torch.as_tensor(np.asarray(X, dtype=np.float32)))
        finally:
            torch.set_num_threads(previous)
        return out.reshape(len(out)).double().numpy()

    return predict


def train_mlp(
    model,
    X: np.ndarray,
    y: np.ndarray,
    *,
    seed: int = 0,
    epochs: int = MLP_EPOCHS,
    batch_size: int = 256,
    lr: float = 1e-3,
    patience: int = 3,
    validation: float = 0.1,
    recipe: str = "cpu",
) -> dict[str, Any]:
    """Train ``model`` on (X, y) with MSE; returns the history (held-out R^2 per epoch, seconds).

    ``recipe="cpu"`` (the default, a documented deviation from the paper): Adam (lr 1e-3, cosine
    decay to lr/100 over ``epochs``), batch 256; the target is divided by its standard deviation
    for training and the factor folded back into the bias-free output layer afterwards, so the
    network predicts ``y`` itself.  ``recipe="paper"``: plain SGD without momentum at constant
    ``lr`` on the raw target (the paper: lr 0.02, batch 32, 50 epochs; pass those).  Both shuffle
    each epoch with a seeded generator on one torch thread, hold out the last ``validation``
    fraction of the rows, keep the weights of the epoch with the best held-out R^2 and stop after
    ``patience`` epochs without improvement.
    """
    if recipe not in ("cpu", "paper"):
        raise ValueError(f"recipe must be 'cpu' or 'paper', got {recipe!r}")
    import torch

    start = time.perf_counter()
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        n_fit = round(len(X) * (1 - validation))
        scale = float(np.std(y[:n_fit])) if recipe == "cpu" else 1.0
        xs = torch.as_tensor(X, dtype=torch.float32)
        ys = torch.as_tensor(y / scale, dtype=torch.float32)
        x_fit, y_fit, x_val = xs[:n_fit], ys[:n_fit], xs[n_fit:]
        steps = epochs * math.ceil(n_fit / batch_size)
        optimiser: torch.optim.Optimizer
        schedule: torch.optim.lr_scheduler.LRScheduler
        if recipe == "cpu":
            optimiser = torch.optim.Adam(model.parameters(), lr=lr)
            schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps, eta_min=lr / 100)
        else:
            optimiser = torch.optim.SGD(model.parameters(), lr=lr)
            schedule = torch.optim.lr_scheduler.ConstantLR(optimiser, factor=1.0, total_iters=0)
        generator = torch.Generator().manual_seed(seed)
        best, best_state, history = -math.inf, None, []
        for _ in range(epochs):
            model.train()
            for batch in torch.randperm(n_fit, generator=generator).split(batch_size):
                optimiser.zero_grad()
                loss = torch.mean((model(x_fit[batch]).squeeze(1) - y_fit[batch]) ** 2)
                loss.backward()
                optimiser.step()
                schedule.step()
            model.eval()
            with torch.no_grad():
                r2 = r_squared(y[n_fit:] / scale, model(x_val).squeeze(1).double().numpy())
            history.append(r2)
            if r2 > best:
                best, best_state = r2, {k: v.clone() for k, v in model.state_dict().items()}
            elif len(history) - 1 - int(np.argmax(history)) >= patience:
                break
        model.load_state_dict(best_state)
        with torch.no_grad():
            model[-1].weight.mul_(scale)
    finally:
        torch.set_num_threads(previous)
    return {"validation_r2": history, "seconds": time.perf_counter() - start}
