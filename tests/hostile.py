"""Explainers that misbehave on purpose: each must fail only its own test, with a clear message."""

import ctypes
import itertools
import time

import numpy as np

from pytest_xai.explainers.baselines import exact_shapley


def raises(inputs):
    raise ValueError("boom from the explainer")


def returns_nan(inputs):
    out = np.zeros(inputs.shape)
    out[0, 0] = np.nan
    return out


def returns_inf(inputs):
    return np.full(inputs.shape, np.inf)


def returns_none(inputs):
    return None


def returns_string(inputs):
    return "not an attribution"


def wrong_shape(inputs):
    return np.zeros((inputs.shape[0], inputs.shape[1] + 1))


def extra_class_axis(inputs):
    return np.zeros(inputs.shape + (2,))


def tensor_requires_grad(inputs, predict, background, target):
    import torch

    values = torch.tensor(exact_shapley(inputs, predict, background, target), requires_grad=True)
    return values * 1.0


def mutates_inputs(inputs, predict, background, target):
    values = exact_shapley(inputs, predict, background, target)
    inputs[:] = 0.0
    return values


def sleeps_forever(inputs):
    time.sleep(10_000)


def spins_in_c(inputs):
    """A C loop that holds the GIL: no signal or thread can interrupt it."""
    return sum(itertools.repeat(1))


def segfaults(inputs):
    ctypes.string_at(0)


def not_applicable(inputs):
    from pytest_xai import NotApplicable

    raise NotApplicable("this explainer only handles images")


def swapped_features(inputs, predict, background, target):
    """Exact Shapley values with the first two features' columns swapped: fails every ranking."""
    values = exact_shapley(inputs, predict, background, target)
    values[:, [0, 1]] = values[:, [1, 0]]
    return values


def zeros(inputs):
    """Attributes nothing: fails symmetry (degenerate), dummy (guard) and ranking (ties)."""
    return np.zeros(inputs.shape)
