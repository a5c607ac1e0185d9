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
