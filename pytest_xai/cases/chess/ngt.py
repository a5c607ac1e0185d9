"""The NGT check: attributions reduced to 8x8, their distances to a mask, and the ``ngt`` check
with its calibrated thresholds (Mücke & Pfahler 2022, §3; ``docs/chess_ngt.md``, Specification 6).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.cases.chess.models import ChessOracle
from pytest_xai.checks import attributions_of, check

METRICS = ("correlation", "chebyshev", "euclidean", "cosine")


def reduce_attributions(attributions) -> np.ndarray:
    """(n, 12, 8, 8) -> (n, 8, 8): max over planes of |A|, divided by its max (zeros stay 0)."""
    a = np.abs(np.asarray(attributions, dtype=float))
    if a.ndim != 4 or a.shape[1:] != (12, 8, 8):
        raise ValueError(f"chess attributions must be shaped (n, 12, 8, 8), got {a.shape}")
    a = a.max(axis=1)
    peak = a.reshape(len(a), -1).max(axis=1)
    with np.errstate(invalid="ignore"):
        return np.divide(a, peak[:, None, None], out=np.zeros_like(a), where=peak[:, None, None] > 0)


def distances(maps, masks, metric: str = "correlation") -> tuple[np.ndarray, np.ndarray]:
    """Distance per position between maps (n, 8, 8) in [0, 1] and binary masks (n, 8, 8).

    ``correlation`` = 1 - Pearson (range [0, 2]); ``cosine`` = 1 - cos (paper: almost always ~1,
    not gated by default); ``chebyshev`` = max |a - m|; ``euclidean`` = ||a - m||_2 / 8 (divided
    by sqrt(64) so it lies in [0, 1]).  Returns (values, reasons): values are NaN where the
    metric is undefined (correlation: empty or full mask, constant non-zero map; cosine: empty mask;
    any: non-finite map) and ``reasons[i]`` says why ("" where defined).  An all-zero map agrees with
    no mask: distance 1 (correlation 0, cosine 0), never left out (``docs/defects.md`` XB-12).
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    a = np.asarray(maps, dtype=float).reshape(len(maps), 64)
    m = np.asarray(masks, dtype=float).reshape(len(masks), 64)
    if a.shape != m.shape:
        raise ValueError(f"maps {a.shape} and masks {m.shape} differ in shape")
    reasons = np.full(len(a), "", dtype=object)
    finite = np.isfinite(a).all(axis=1)
    a = np.where(finite[:, None], a, 0.0)
    n_mask = m.sum(axis=1)
    if metric == "chebyshev":
        d = np.abs(a - m).max(axis=1)
    elif metric == "euclidean":
        d = np.sqrt(((a - m) ** 2).sum(axis=1)) / 8.0
    elif metric == "cosine":
        na, nm = np.linalg.norm(a, axis=1), np.sqrt(n_mask)
        reasons[nm == 0] = "empty mask"
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(na == 0, 1.0, 1.0 - (a * m).sum(axis=1) / (na * nm))
    else:
        ac, mc = a - a.mean(axis=1, keepdims=True), m - m.mean(axis=1, keepdims=True)
        sa, sm = np.sqrt((ac**2).sum(axis=1)), np.sqrt((mc**2).sum(axis=1))
        silent = ~(a > 0).any(axis=1)
        reasons[(sa == 0) & ~silent] = "constant attribution map"
        reasons[n_mask == 64] = "full mask"
        reasons[n_mask == 0] = "empty mask"
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(silent, 1.0, 1.0 - (ac * mc).sum(axis=1) / (sa * sm))
    reasons[~finite] = "non-finite attribution"
    d = np.where(reasons == "", np.maximum(d, 0.0), np.nan)  # 1 - cos may round to -1e-16
    return d, reasons


# Half the distance of the `random` control (see ngt's docstring for the measurements).
MAX_DISTANCE = {"correlation": 0.5, "chebyshev": 0.48, "euclidean": 0.27}
METRIC_RANGE = {"correlation": 2.0, "chebyshev": 1.0, "euclidean": 1.0, "cosine": 1.0}


_NGT_MAGNITUDE = (
    "the map is reduced to max |A| over the 12 planes divided by its maximum (the paper's "
    "reduction), so the sign and the scale of the attributions cannot matter"
)


def mask_reference(case: Case, params) -> np.ndarray:
    """The NGT mask itself broadcast to the 12 planes: the correct attribution of :func:`ngt` (distance 0)."""
    mask = np.asarray(case.truth[params.get("mask", "mask")], dtype=float)
    return np.repeat(mask[:, None], 12, axis=1)


@check(
    marker="xai_ngt",
    thresholds={"max_distance": MAX_DISTANCE["correlation"]},
    reference=mask_reference,
    passes_by_construction={
        "sign_flipped": _NGT_MAGNITUDE,
        "scaled_negative": _NGT_MAGNITUDE,
        "abs_of_exact": _NGT_MAGNITUDE,
        "row_offset": "a positive constant added to the non-negative mask survives the reduction as (m + c) / (1 + c), "
        "at correlation distance 0 from the mask",
        "swapped": "exchanging two of the 768 plane-square inputs moves at most two of the 64 reduced squares",
        "noisy_10": "noise at 10 % of the mask's RMS keeps the reduced map well within half the random distance",
        "noisy_30": "noise at 30 % of the mask's RMS keeps the reduced map within half the random distance",
        "noisy_100": "the reference is the 0/1 mask broadcast to 12 planes: noise at its RMS (below 1) lowers the "
        "contrast of the reduced map without reaching the random distance",
    },
)
def ngt(
    attributions, case: Case, *, mask: str = "mask", metric: str = "correlation", max_distance: float | None = None
) -> Score:
    """Near-ground-truth distance: the explanation, reduced to 8x8, is close to the NGT mask.

    Mücke & Pfahler 2022, §3: each attribution (n, 12, 8, 8) is reduced to the max |A| over
    planes per square, divided by its max, and compared with ``case.truth[mask]`` (the class'
    own mask by default).  Passes when the mean distance over the positions where ``metric`` is
    defined is <= ``max_distance``; undefined positions (constant non-zero map, empty/full mask) are
    excluded and counted, and an all-zero map is distance 1 (it agrees with no mask).
    ``max_distance=None`` takes the calibrated default of ``metric`` (``MAX_DISTANCE``; cosine has
    none, as the paper found it ~1 for every method).

    Calibration (oracle cases, seeds 0 and 1, 32 positions per class; the controls do not depend
    on the model): the mask itself broadcast to the 12 planes scores 0 on every metric; the
    ``random`` control (seeded normal noise) scores correlation 0.97-1.03, chebyshev 0.955-0.996,
    euclidean 0.54-0.60 (means per case; sd of a mean ~0.02).  Each default is half the random
    distance, so passing means beating random by a margin equal to what is left: correlation
    0.5, chebyshev 0.48, euclidean 0.27.  For orientation, piece occlusion (drop in the target
    probability when a square is emptied) on the oracle scores correlation 0.23-0.27 on mates
    (passes), 0.54-0.55 on checks and 0.84-0.87 on no-check positions, where 30 of 32 maps are
    constant and excluded (fail); the input planes themselves score 0.55-1.08 (fail).  Chebyshev
    is 1.0 for both, so it only passes near-exact masks.
    For the oracle cases the number of invalid boards the oracle saw since the last check is
    reported in ``params`` and the counter is reset.
    Zoo (``tests/test_zoo.py``): zeros (distance 1) fail, constants and the output copied are
    constant maps (undefined, fail), a map that explains one position in ten and is zero elsewhere
    fails, the input itself, the input minus the mean, noise and shuffled rows fail.
    Passed by construction (declared): the sign and scale of the map and |A| (the reduction takes
    max |A| over planes and divides by its maximum), a positive offset of the mask (removed by the
    correlation), exchanging two of the 768 inputs, and noise up to the mask's RMS.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if max_distance is None:
        if metric not in MAX_DISTANCE:
            raise ValueError(
                f"{metric} distance has no default threshold (paper: ~1 for every "
                "explainer); pass max_distance explicitly"
            )
        max_distance = MAX_DISTANCE[metric]
    truth = np.asarray(case.truth[mask], dtype=bool)
    maps = reduce_attributions(attributions_of(attributions))
    d, reasons = distances(maps, truth, metric)
    used = ~np.isnan(d)
    excluded = {r: int((reasons == r).sum()) for r in sorted(set(reasons[~used]))}
    params: dict[str, Any] = {
        "mask": mask,
        "metric": metric,
        "max_distance": float(max_distance),
        "n_used": int(used.sum()),
        "n_excluded": int((~used).sum()),
    }
    oracle = case.model if isinstance(case.model, ChessOracle) else None
    if oracle is not None:
        params.update(oracle_boards=oracle.n_boards, oracle_invalid_boards=oracle.n_invalid)
        oracle.reset()
    why = "; excluded " + ", ".join(f"{n} ({r})" for r, n in excluded.items()) if excluded else ""
    if not used.any():
        return Score(
            check="ngt",
            value=0.0,
            passed=False,
            threshold=float(max_distance),
            detail=f"{metric} distance to {mask} is undefined for all {len(d)} positions{why}",
            params=params,
            worst=None,
        )
    mean = float(d[used].mean())
    params.update(mean=mean, median=float(np.median(d[used])))
    i = int(np.nanargmax(d))
    fens = case.meta.get("fens")
    worst = {"row": i, "distance": float(d[i]), "fen": None if fens is None else str(fens[i])}
    passed = mean <= max_distance
    value = float(np.clip(1.0 - mean / METRIC_RANGE[metric], 0.0, 1.0))
    detail = (
        f"mean {metric} distance to {mask} {mean:.3f} over {int(used.sum())}/{len(d)} "
        f"positions ({'<=' if passed else '>'} {max_distance:g}){why}; worst row {i} "
        f"({d[i]:.3f}) {worst['fen']}"
    )
    return Score(
        check="ngt",
        value=value,
        passed=passed,
        threshold=float(max_distance),
        detail=detail,
        params=params,
        worst=worst,
    )
