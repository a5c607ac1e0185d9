"""KernelSHAP and LIME on image-shaped cases: squares, pixels or case-declared feature groups as features.

An image-shaped input (n, *feature_shape) with more than one feature axis (chess planes (12, 8, 8),
the shapes images (32, 32), the digits (1, 8, 8)) is explained over *groups*: the case's ``groups``
(contract name; ids 0..G-1 shaped like one input, e.g. a chess square's 12 planes, a 4x4
superpixel) or, without them, one group per spatial position (a pixel's channels move together).
A group that is "off" takes the case's ``baseline`` (zeros without one), as shap's and lime's
documented image recipes hide superpixels with a fixed colour; each element of a group gets the
group's attribution, as captum's ``feature_mask`` does.  Sample counts come from the call's
``budget`` of model evaluations (:mod:`pytest_xai.engine.budget`), keeping each library's default when it fits.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np

from pytest_xai.engine import budget as budgets
from pytest_xai.errors import NotApplicable


def group_ids(inputs: np.ndarray, groups) -> np.ndarray:
    """One int id per element of an input, 0..G-1: the case's ``groups``, else one per spatial position.

    Spatial positions are the last two axes (``(C, H, W)`` or ``(H, W)``); other layouts need
    declared groups.
    """
    shape = inputs.shape[1:]
    if groups is None:
        if len(shape) not in (2, 3):
            raise NotApplicable(f"inputs shaped {shape} are not images (C, H, W) or (H, W); declare groups")
        return np.broadcast_to(np.arange(shape[-2] * shape[-1]).reshape(shape[-2:]), shape).copy()
    ids = np.asarray(groups)
    if ids.shape != shape or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"groups must be an int array shaped like one input {shape}, got {ids.dtype} {ids.shape}")
    if not np.array_equal(np.unique(ids), np.arange(ids.max() + 1)):
        raise ValueError("groups must use every id 0..G-1 (captum's feature_mask convention)")
    return ids


def _reference(inputs: np.ndarray, baseline) -> np.ndarray:
    row = np.zeros(inputs.shape[1:]) if baseline is None else np.asarray(baseline, dtype=float)
    return np.broadcast_to(row, inputs.shape[1:])


def _spread(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """(n, G) group attributions -> (n, *feature_shape), each element taking its group's value."""
    return values[:, ids]


def kernel_shap(inputs, predict, baseline, target, seed, budget, groups=None) -> np.ndarray:
    """KernelSHAP over groups, the way shap's image examples use ``shap.KernelExplainer``: per point x,
    f(z) = model(x with the groups where z = 0 set to the baseline), explained at z = 1 against z = 0,
    with shap's default 2G + 2048 coalitions when points x coalitions fits ``budget``."""
    import shap

    ids = group_ids(inputs, groups)
    n, g = len(inputs), int(ids.max()) + 1
    auto = 2 * g + 2048 if g > 11 else min(2 * g + 2048, 2**g - 2)  # shap enumerates all coalitions below
    # KernelExplainer also evaluates the point and the reference once each: 2 more rows per point
    nsamples = budgets.samples(budget, n, preferred=auto + 2, minimum=g + 3, method="KernelSHAP") - 2
    reference = _reference(inputs, baseline)
    values = np.zeros((n, g))
    state = np.random.get_state()
    np.random.seed(seed % 2**32)
    try:
        for i, x in enumerate(inputs):

            def f(z, x=x):
                z = np.asarray(z, dtype=bool)
                rows = np.where(z[:, ids], x, reference)
                y = np.asarray(predict(rows), dtype=float)
                return y[:, target] if y.ndim == 2 else y

            explainer = shap.KernelExplainer(f, np.zeros((1, g)))
            phi = explainer.shap_values(np.ones((1, g)), nsamples="auto" if nsamples == auto else nsamples, silent=True)
            values[i] = np.asarray(phi).reshape(-1)
    finally:
        np.random.set_state(state)
    return _spread(values, ids)


def lime_image(inputs, predict, baseline, target, seed, budget, groups=None) -> np.ndarray:
    """LIME for images (``lime.lime_image.LimeImageExplainer``, Ribeiro et al. 2016) with the groups as
    its segmentation, hidden with the baseline, lime_image's default 1,000 samples per point when they
    fit ``budget``; the attribution of a group is its weight in LIME's local linear model."""
    from lime.lime_image import LimeImageExplainer

    ids = group_ids(inputs, groups)
    n, g = len(inputs), int(ids.max()) + 1
    if inputs.ndim == 4 and not (ids == ids[:1]).all():
        raise NotApplicable("lime_image segments are spatial: this case's groups differ across channels")
    segments = ids if inputs.ndim == 3 else ids[0]
    num_samples = budgets.samples(budget, n, preferred=1000, minimum=g + 1, method="LIME")
    reference = _reference(inputs, baseline)

    def channels_last(a):  # lime_image works on (H, W, C); (H, W) images get one channel
        return a[..., None] if a.ndim == 2 else np.moveaxis(a, 0, -1)

    def classifier(images):
        images = images[..., 0] if inputs.ndim == 3 else np.moveaxis(images, -1, 1)
        y = np.asarray(predict(images), dtype=float)
        return y if y.ndim == 2 else y[:, None]

    label = 0 if target is None else target
    explainer = LimeImageExplainer(random_state=seed)
    values = np.zeros((n, g))
    for i, x in enumerate(inputs):
        with contextlib.redirect_stderr(io.StringIO()):  # lime_image draws a tqdm bar per point
            explanation = explainer.explain_instance(
                channels_last(np.asarray(x, dtype=float)),
                classifier,
                labels=(label,),
                top_labels=None,
                hide_color=channels_last(reference),
                num_features=g,
                num_samples=num_samples,
                batch_size=num_samples,
                segmentation_fn=lambda image: segments,
            )
        for group, weight in explanation.local_exp[label]:
            values[i, group] = weight
    return _spread(values, ids)
