"""Our own reference explainers: a negative control and exact Shapley values."""

from __future__ import annotations

import numpy as np

from pytest_xai import shapley
from pytest_xai.errors import NotApplicable


def random(inputs, seed):
    """Negative control: standard normal noise shaped like ``inputs``, seeded.  It should fail
    every check (ranking checks with n features it passes by chance with probability 1/n)."""
    return np.random.default_rng(seed).standard_normal(inputs.shape)


def exact_shapley(inputs, predict, background, target):
    """Exact interventional Shapley values against ``background`` by enumerating all 2^d coalitions
    (vectorised; up to 16 features).  Satisfies efficiency, symmetry, dummy and linearity exactly."""
    d = int(np.prod(inputs.shape[1:]))
    if d > shapley.MAX_FEATURES:
        raise NotApplicable(f"exact enumeration needs 2^d coalitions; d={d} > {shapley.MAX_FEATURES}")
    if background is None:
        raise NotApplicable("exact_shapley needs a background; this case has none")
    return shapley.interventional(predict, inputs, background, target)


def feature_occlusion(inputs, predict, baseline, target):
    """Occlusion-1 through ``predict`` only (Zeiler & Fergus 2014): the attribution of feature j is
    f(x) - f(x with x_j set to the baseline), one model call per feature for all points at once.
    Model-agnostic, so it runs on black-box models such as the chess oracle; exact on additive models."""
    n = len(inputs)
    flat = inputs.reshape(n, -1)
    row = np.zeros(inputs.shape[1:]) if baseline is None else np.asarray(baseline, dtype=float)
    reference = np.broadcast_to(row, inputs.shape).reshape(n, -1)

    def output(rows):
        y = np.asarray(predict(rows.reshape((-1,) + inputs.shape[1:])), dtype=float)
        return y[:, target] if y.ndim == 2 else y

    full = output(flat)
    out = np.empty(flat.shape)
    for j in range(flat.shape[1]):
        occluded = flat.copy()
        occluded[:, j] = reference[:, j]
        out[:, j] = full - output(occluded)
    return out.reshape(inputs.shape)
