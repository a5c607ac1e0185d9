"""The construction helpers of the XAI-Units networks and their self-tests (see :mod:`pytest_xai.cases.units`).

Every model is an ``nn.Sequential`` of ``nn.Linear`` layers (:func:`linear`, exact weights) and one
activation module instance per position (:func:`relu`; DeepLift/LRP hooks need distinct modules),
in float64, in eval mode (:func:`sequential`).  A unit's builder runs :func:`self_test` (the network
reproduces its labels), :func:`assert_gate` (the large gating constants are never exceeded) and
:func:`cross_check` (closed-form ground truths agree with :func:`baseline_shapley`, Shapley values
enumerated over all coalitions on the network itself).
"""

from __future__ import annotations

from math import factorial

import numpy as np

MAX_ENUMERATED_FEATURES = 12

# Gating constants (XAI-Units: a set flag adds -100 / -1000 to the pre-activation of its path).
CANCEL_GATE = 100.0
INTERACTION_GATE = 1000.0


def linear(weight, bias=None):
    """An ``nn.Linear`` (float64) holding exactly ``weight`` (out, in) and ``bias``."""
    import torch
    from torch import nn

    weight = np.asarray(weight, dtype=np.float64)
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(weight))
        if bias is not None:
            layer.bias.copy_(torch.from_numpy(np.asarray(bias, dtype=np.float64)))
    return layer


def sequential(*layers):
    """The layers as an ``nn.Sequential`` in eval mode, its parameters frozen."""
    from torch import nn

    model = nn.Sequential(*layers).eval()
    for param in model.parameters():
        param.requires_grad_(False)
    return model


def relu():
    """A fresh ``nn.ReLU`` (one instance per position: DeepLift and LRP hook modules)."""
    from torch import nn

    return nn.ReLU()


def forward(model, x: np.ndarray) -> np.ndarray:
    """The network on ``x`` in float64, without gradients, as numpy."""
    import torch

    with torch.no_grad():
        return model(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


def regression_predict(model):
    """``predict`` of a one-output network: (n, d) -> (n,)."""

    def predict(x):
        return forward(model, x).reshape(len(x))

    return predict


def self_test(name: str, model, x: np.ndarray, labels: np.ndarray) -> None:
    """XAI-Units self-test: the hand-set network reproduces every generated label (rtol 1e-5)."""
    out = forward(model, x).reshape(labels.shape)
    bad = ~np.isclose(out, labels, rtol=1e-5, atol=0.0)
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(len(x), -1).any(axis=1))[0])
        raise AssertionError(
            f"unit {name}: the hand-set network does not reproduce its labels on {int(bad.sum())} "
            f"outputs; row {i}: network {out[i]!r}, label {labels[i]!r}"
        )


def assert_gate(name: str, pre_activation: np.ndarray, gate: float) -> None:
    """Large-constant gating is exact only while the gated pre-activation stays below the constant."""
    worst = float(np.abs(pre_activation).max()) if pre_activation.size else 0.0
    if worst >= gate:
        raise AssertionError(
            f"unit {name}: a gated pre-activation reaches {worst:.4g} >= gate constant {gate:g}; "
            "the gate would not switch the path off (reduce the weights or the input scale)"
        )


def baseline_shapley(f, x: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """Exact Shapley values of ``f`` at each row of ``x`` w.r.t. ``baseline`` (a row or one per row).

    The value of coalition S is ``f(x_S, baseline_rest)``; all 2^d coalitions are enumerated, so
    d <= 12.  ``f`` maps (m, d) -> (m,).
    """
    n, d = x.shape
    if d > MAX_ENUMERATED_FEATURES:
        raise ValueError(f"baseline_shapley enumerates 2^d coalitions; d={d} > {MAX_ENUMERATED_FEATURES}")
    b = np.broadcast_to(baseline, x.shape)
    codes = np.arange(2**d)
    masks = ((codes[:, None] >> np.arange(d)) & 1).astype(bool)  # (2^d, d)
    mixed = np.where(masks[None], x[:, None, :], b[:, None, :])  # (n, 2^d, d)
    values = np.asarray(f(mixed.reshape(-1, d)), dtype=np.float64).reshape(n, 2**d)
    size = masks.sum(axis=1)
    weight = np.array([factorial(s) * factorial(d - s - 1) / factorial(d) if s < d else 0.0 for s in size])
    phi = np.empty((n, d))
    for i in range(d):
        without = codes[~masks[:, i]]
        phi[:, i] = (values[:, without + 2**i] - values[:, without]) @ weight[without]
    return phi


def cross_check(name: str, closed_form: np.ndarray, enumerated: np.ndarray) -> None:
    """The closed-form ground truth of unit ``name`` equals the enumerated Shapley values (rtol 1e-9)."""
    scale = float(np.abs(enumerated).max()) or 1.0
    if not np.allclose(closed_form, enumerated, rtol=1e-9, atol=1e-9 * scale):
        i = int(np.abs(closed_form - enumerated).max(axis=1).argmax())
        raise AssertionError(
            f"unit {name}: closed-form Shapley values disagree with enumeration on row {i}: "
            f"{closed_form[i]!r} vs {enumerated[i]!r}"
        )


def as_float64(module, args):
    """Forward pre-hook: float32 (or any floating) input is computed in the network's float64, so a
    torch explainer written the usual way (float32 tensors) works; gradients flow back to its dtype."""
    return tuple(a.double() if hasattr(a, "is_floating_point") and a.is_floating_point() else a for a in args)
