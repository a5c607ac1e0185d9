"""One XAI-Bench dataset definition drawn with a seed (the XAI-Bench code's defaults: 1,000
training rows, label noise 0.01): training rows with noisy standardised labels, points to explain
and a background."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_xai.cases.gaussian.distributions import Distribution
from pytest_xai.cases.gaussian.labels import LABEL_NOISE, Label, Standardised, standardise

N_TRAIN = 1000
N_EXPLAINED = 100
N_BACKGROUND = 100


@dataclass
class Dataset:
    """One XAI-Bench dataset definition drawn with a seed: what a case is built from."""

    distribution: Distribution
    model: Standardised
    train_X: np.ndarray
    train_y: np.ndarray
    inputs: np.ndarray
    background: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)


def make_dataset(
    distribution: Distribution,
    label: Label,
    *,
    seed: int,
    n_train: int = N_TRAIN,
    n_explained: int = N_EXPLAINED,
    n_background: int = N_BACKGROUND,
    noise: float = LABEL_NOISE,
) -> Dataset:
    """Train rows with noisy standardised labels, points to explain and a background, all seeded."""
    model = standardise(label, distribution, noise)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
    train_X = distribution.sample(n_train, rng)
    train_y = (label(train_X) + noise * rng.standard_normal(n_train) - model.shift) / model.scale
    inputs = distribution.sample(n_explained, rng)
    background = distribution.sample(n_background, rng)
    return Dataset(
        distribution,
        model,
        train_X,
        train_y,
        inputs,
        background,
        {"label": label.formula, "standardisation": (model.shift, model.scale), "noise": noise},
    )
