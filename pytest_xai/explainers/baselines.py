"""Our own reference explainers: a negative control and exact Shapley values."""

from __future__ import annotations

import numpy as np

from pytest_xai import shapley
from pytest_xai.errors import NotApplicable
from pytest_xai.explainers.grouped import group_ids
from pytest_xai.explainers.targets import per_row


def random(inputs, seed):
    """Negative control: standard normal noise shaped like ``inputs``, seeded.  It should fail
    every check (ranking checks with n features it passes by chance with probability 1/n)."""
    return np.random.default_rng(seed).standard_normal(inputs.shape)


def random_interactions(inputs, seed):
    """Negative control for interaction checks: noise attributions and noise pairwise interactions
    (tabular inputs of up to 64 features)."""
    if inputs.ndim != 2 or inputs.shape[1] > 64:
        raise NotApplicable("random_interactions returns d x d noise for tabular inputs of up to 64 features")
    rng = np.random.default_rng(seed)
    return {
        "attributions": rng.standard_normal(inputs.shape),
        "interactions": rng.standard_normal((inputs.shape[1],) * 2),
    }


@per_row
def exact_shapley(inputs, predict, background, target):
    """Exact interventional Shapley values against ``background`` by enumerating all 2^d coalitions
    (vectorised; up to 16 features).  Satisfies efficiency, symmetry, dummy and linearity exactly."""
    d = int(np.prod(inputs.shape[1:]))
    if d > shapley.MAX_FEATURES:
        raise NotApplicable(f"exact enumeration needs 2^d coalitions; d={d} > {shapley.MAX_FEATURES}")
    if background is None:
        raise NotApplicable("exact_shapley needs a background; this case has none")
    return shapley.interventional(predict, inputs, background, target)


@per_row
def feature_occlusion(inputs, predict, baseline, target, groups=None):
    """Occlusion-1 through ``predict`` only (Zeiler & Fergus 2014): the attribution of feature j is
    f(x) - f(x with x_j set to the baseline), one model call per feature for all points at once.
    Model-agnostic, so it runs on black-box models such as the chess oracle; exact on additive models.
    With the case's ``groups`` (e.g. a chess square's 12 planes) a group is occluded as one feature
    and each of its elements gets the group's attribution, as captum's ``feature_mask`` does."""
    n = len(inputs)
    flat = inputs.reshape(n, -1)
    row = np.zeros(inputs.shape[1:]) if baseline is None else np.asarray(baseline, dtype=float)
    reference = np.broadcast_to(row, inputs.shape).reshape(n, -1)
    ids = np.arange(flat.shape[1]) if groups is None else group_ids(inputs, groups).reshape(-1)

    def output(rows):
        y = np.asarray(predict(rows.reshape((-1,) + inputs.shape[1:])), dtype=float)
        return y[:, target] if y.ndim == 2 else y

    full = output(flat)
    out = np.empty(flat.shape)
    for g in np.unique(ids):
        members = ids == g
        occluded = flat.copy()
        occluded[:, members] = reference[:, members]
        out[:, members] = (full - output(occluded))[:, None]
    return out.reshape(inputs.shape)


@per_row
def archdetect(inputs, predict, baseline, target):
    """Pairwise interactions by ArchDetect (Tsang et al. 2020, Archipelago): for each pair (i, j),
    the mixed finite difference f(i*, j*) - f(i', j*) - f(i*, j') + f(i', j') between the point x*
    and the baseline x', in the contexts x* and x' (mean of |.|, over 4 so that it is the
    coefficient of x_i x_j for +-1 inputs).  Returns Occlusion-1 main effects as attributions and a
    (n, d, d) interaction matrix; up to 64 features."""
    if inputs.ndim != 2 or baseline is None:
        raise NotApplicable("ArchDetect needs tabular (n, d) inputs and a baseline")
    n, d = inputs.shape
    if d > 64:
        raise NotApplicable(f"ArchDetect evaluates the model 8 times per feature pair; d={d} > 64")
    reference = np.broadcast_to(np.asarray(baseline, dtype=float), inputs.shape)

    def output(rows):
        y = np.asarray(predict(rows), dtype=float)
        return y[:, target] if y.ndim == 2 else y

    i, j = np.triu_indices(d, k=1)
    pairs = np.arange(len(i))
    interactions = np.zeros((n, d, d))
    for r in range(n):
        star, prime = inputs[r], reference[r]
        for context in (star, prime):
            corners = []
            for vi, vj in ((star, star), (prime, star), (star, prime), (prime, prime)):
                rows = np.tile(context, (len(i), 1))
                rows[pairs, i], rows[pairs, j] = vi[i], vj[j]
                corners.append(output(rows))
            interactions[r, i, j] += np.abs(corners[0] - corners[1] - corners[2] + corners[3]) / 8.0
    interactions += interactions.transpose(0, 2, 1)
    return {"attributions": feature_occlusion(inputs, predict, baseline, target), "interactions": interactions}


exact_shapley.exact = True  # type: ignore[attr-defined]  # judged by the exactness check (docs/reference.md)
