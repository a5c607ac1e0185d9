"""The check ``irof``: superpixels removed in the order an explanation gives lower the class score
as fast as removing the object first does (Iterative Removal Of Features, Rieger & Hansen 2020)."""

from __future__ import annotations

import weakref

import numpy as np

from pytest_xai import catalogue
from pytest_xai.case import Case, Score
from pytest_xai.checks import attributions_of, check, truth_reference
from pytest_xai.errors import NotApplicable

_OBJECT_SCORES: weakref.WeakKeyDictionary[Case, float] = weakref.WeakKeyDictionary()

_WITHIN_GROUPS = (
    "IROF ranks superpixels by their mean attribution (Rieger & Hansen 2020): a change that keeps "
    "the order of the group means is invisible to it by definition"
)


def _irof(case: Case, attributions) -> catalogue.MetricResult:
    groups = case.meta.get("groups")
    if groups is None or case.baseline is None:
        raise NotApplicable(f"case {case.name!r} declares no feature groups and baseline to remove")
    return catalogue.irof(
        case.predict,
        case.inputs,
        attributions_of(attributions),
        groups,
        np.asarray(case.baseline, dtype=float).reshape(-1),
        target=case.target,
    )


@check(
    marker="xai_irof",
    thresholds={"max_gap": 0.05},
    reference=truth_reference("segmentation"),
    passes_by_construction={
        "abs_of_exact": "the object mask is non-negative: its absolute value is itself",
        "row_offset": _WITHIN_GROUPS + " (a per-row constant)",
        "swapped": "the two features exchanged are both inside the 0/1 object mask: nothing changes",
        **dict.fromkeys(
            ("noisy_10", "noisy_30", "noisy_100"),
            _WITHIN_GROUPS + ": noise averages out over a superpixel's 16 pixels (100 % noise trails by 0.008 at "
            "most over seeds 0-9, less than KernelSHAP's own error over the superpixels, 0.011)",
        ),
    },
)
def irof(attributions, case: Case, *, max_gap: float) -> Score:
    """Removing superpixels most relevant first lowers the class score as fast as removing the object
    first: IROF (Rieger & Hansen 2020; Quantus ``IROF`` on the same superpixels,
    ``tests/test_catalogue.py``), :func:`pytest_xai.catalogue.irof` over the case's ``groups`` (4x4
    superpixels), a removed superpixel set to the case's baseline, the fixed colour with which the
    grouped explainers hide one.  Pass when the mean is within max_gap (default 0.05) of the score of
    the object's mask (``truth["segmentation"]``) on the same case; doing better passes.  Seeds 0-9
    on ``human_shapes_oracle`` (the object's mask scores 0.960 to 0.963): the human mask trails it by
    0.005 at most, KernelSHAP over the superpixels (3,000 coalitions an image) by 0.011 at most and
    beats it at 3 seeds, occlusion of each superpixel beats it (seed 0); the closest member not
    declared, the input minus the background mean, trails by 0.16 or more, another image's mask by
    0.18, the input itself by 0.23, a constant map (a random order) by 0.32, the sign flipped by 0.88.
    Passes by construction what keeps the order of the superpixel means: a per-row offset, |.| of the
    non-negative mask, a swap inside it, and pixel noise, which a superpixel's mean averages out.
    """
    result = _irof(case, attributions)
    if case not in _OBJECT_SCORES:
        _OBJECT_SCORES[case] = _irof(case, case.truth["segmentation"]).mean
    truth, m = _OBJECT_SCORES[case], result.mean
    params = {"max_gap": max_gap, "truth_score": truth, "mean": m}
    if not result.defined.any():
        return Score("irof", 0.0, False, max_gap, "IROF is undefined for every image", params)
    passed = bool(truth - m <= max_gap)
    row = int(np.nanargmin(result.values))
    return Score(
        "irof",
        float(np.clip(m, 0.0, 1.0)),
        passed,
        max_gap,
        f"mean IROF {m:.3f}, the object's mask scores {truth:.3f}: {'within' if passed else 'more than'} "
        f"{max_gap:g} of it",
        params,
        {"row": row, "irof": float(result.values[row])},
    )
