"""Slack et al.'s scaffolding attack on COMPAS: a racist model that hides behind an innocuous one.

Slack, Hilgard, Jia, Singh & Lakkaraju 2020, "Fooling LIME and SHAP: Adversarial Attacks on Post hoc
Explanation Methods" (AIES), as used by Compare-xAI's ``fooling_perturbation_alg`` (Belaid et al. 2022, test 2.9), with
the corrections of ``docs/defects.md`` CX-2 (ranks, not argsort), CX-5 (everything seeded) and CX-12
(>= 50 explained rows, the attack verified at build time).

The scaffold answers with the biased model f (class 0 = "High risk" when race = 1) on rows its
out-of-distribution detector believes are real, and with the innocuous psi (class 0 when the
random ``unrelated_column`` = 1) elsewhere.  An explainer whose perturbations leave the data
manifold sees psi and credits ``unrelated_column``; one whose perturbations stay on it sees f and
credits race.  Two scaffolds, as in Slack et al.:

- ``compas_lime_scaffold``: the detector (random forest on age, priors_count, length_of_stay) is
  trained on 30 copies of the training rows against 30 copies with N(0, 0.3^2) noise.  The numerical
  columns are integer-valued, so real rows sit on a lattice; LIME's samples do not.
- ``compas_shap_scaffold``: the detector (all columns) is trained on 10 copies of the training rows
  against 30,000 rows with random feature substitutions from a 10-centroid k-means summary.  The
  case's background is that summary, the usual way to summarise a KernelSHAP background (as Slack
  et al. did), so coalition hybrids are exactly the rows the detector was trained to catch.

Data are a seeded synthetic COMPAS-like table (an offline substitute) unless the user keeps ProPublica's
``compas-scores-two-years.csv`` in ``--xai-data-dir`` (ini ``xai_data_dir``); then the 2.9
preprocessing applies.  The explained class is ``target = 0`` ("High risk"), whose probability f
sets from race.

The detectors are sklearn random forests.  Training the LIME detector on 277,740 rows takes about
30 s on one core, too slow to repeat, and sklearn models have no safe on-disk format; the cache
therefore stores each tree's public ``tree_`` arrays (``Cache.arrays``, no pickle) and predicts
by walking them (no private sklearn API), checking on every load that the walk reproduces the
trained forest's probabilities on stored probe rows (otherwise it retrains).

The family's rooms: :mod:`.data` (the synthetic table and the reader of ProPublica's CSV),
:mod:`.scaffold` (f, psi, the detectors with their public-array tree walk, the scaffold) and this
module (the two cases, whose build verifies the attack, and the check).
"""

from __future__ import annotations

import hashlib

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.cases.fooling.data import (
    COMPAS_FILE,
    FEATURE_NAMES,
    MIN_ROWS,
    N_ROWS,
    NUMERICAL,
    RACE,
    UNRELATED,
    compas_data,
    load_compas,
    split_and_standardize,
    synthetic_compas,
)
from pytest_xai.cases.fooling.scaffold import (
    Forest,
    Scaffold,
    biased_f,
    innocuous_psi,
    is_real,
    kmeans_summary,
    lime_detector_data,
    shap_detector_data,
    substitute,
    trained_detector,
    unique_rows,
)
from pytest_xai.checks import attributions_of, check, importance_of
from pytest_xai.registry import Family
from pytest_xai.stats import descending_ranks

__all__ = [
    "COMPAS_FILE",
    "FAMILY",
    "FEATURE_NAMES",
    "HIGH_RISK",
    "MAX_BACKGROUND",
    "MIN_ROUTED",
    "MIN_ROWS",
    "NUMERICAL",
    "N_EXPLAINED",
    "N_ROWS",
    "RACE",
    "SLACK",
    "UNRELATED",
    "AttackIneffective",
    "Forest",
    "Scaffold",
    "biased_f",
    "compas_data",
    "compas_lime_scaffold",
    "compas_shap_scaffold",
    "fooling",
    "innocuous_psi",
    "is_real",
    "kmeans_summary",
    "lime_detector_data",
    "load_compas",
    "precondition",
    "shap_detector_data",
    "split_and_standardize",
    "substitute",
    "synthetic_compas",
    "trained_detector",
    "unique_rows",
]

HIGH_RISK = 0
N_EXPLAINED = 50
MAX_BACKGROUND = 100
MIN_ROUTED = 0.95
SLACK = "Slack et al. 2020, Fooling LIME and SHAP; Compare-xAI fooling_perturbation_alg (test 2.9; CX-2, CX-12)"
FAMILY = Family(
    "fooling",
    source=SLACK,
    smoke=("fooling", "compas_shap_scaffold"),
    libraries=("sklearn.cluster", "sklearn.ensemble", "sklearn.model_selection", "sklearn.preprocessing"),
)


class AttackIneffective(RuntimeError):
    """The scaffold does not separate real rows from perturbed ones: the case would test nothing."""


# ------------------------------------------------------------------------------------------ cases


def precondition(scaffold, name, real, perturbed, how) -> dict:
    """CX-12: the attack must work, or the case errors instead of passing."""
    to_f = float(scaffold.routes_to_f(real).mean())
    to_psi = float(1.0 - scaffold.routes_to_f(perturbed).mean())
    agree_f = float((scaffold(real).argmax(1) == biased_f(real).argmax(1)).mean())
    agree_psi = float((scaffold(perturbed).argmax(1) == innocuous_psi(perturbed).argmax(1)).mean())
    if min(to_f, to_psi) < MIN_ROUTED:
        raise AttackIneffective(
            f"attack ineffective: the {name} detector sends {to_f:.1%} of {len(real)} held-out real rows to f "
            f"and {to_psi:.1%} of {len(perturbed)} {how} rows to psi; both must be >= {MIN_ROUTED:.0%} "
            f"(Slack et al. 2020; CX-12), or the case would test nothing"
        )
    return {
        "real_routed_to_f": to_f,
        "perturbed_routed_to_psi": to_psi,
        "real_agree_with_f": agree_f,
        "perturbed_agree_with_psi": agree_psi,
    }


def _data_key(X) -> str:
    return hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest()[:16]


def _case(info, seed, data, scaffold, background, meta) -> Case:
    rng = np.random.default_rng([seed, 50])
    explained = np.sort(rng.choice(len(data["test"]), N_EXPLAINED, replace=False))
    return Case(
        info=info,
        inputs=data["test"][explained],
        predict=scaffold,
        model=scaffold,
        target=HIGH_RISK,
        background=background,
        baseline=np.zeros(len(FEATURE_NAMES)),
        feature_names=list(FEATURE_NAMES),
        meta={
            **meta,
            "explained_rows": explained,
            "full_background": data["train"],
            "mean": data["mean"],
            "scale": data["scale"],
        },
    )


@FAMILY.case(category="fragility", source="LIME scaffold", checks={"fooling": {"race": RACE, "unrelated": UNRELATED}})
def compas_lime_scaffold(info, *, seed, cache, data_dir=None, n_rows: int = N_ROWS) -> Case:
    """COMPAS scaffold against LIME: off-lattice (noisy) rows see the innocuous model.

    ``n_rows`` sizes the synthetic table (smaller tables train the detector faster, for self-tests).
    """
    from pytest_xai.cases.tabular import summarise

    X, y, source = compas_data(data_dir, seed, n_rows)
    data = split_and_standardize(X, y, seed)
    key = {"train": _data_key(data["train"]), "copies": 30, "std": 0.3}
    detector, meta = trained_detector(
        "fooling-lime-detector", cache, key, list(NUMERICAL), seed, lambda: lime_detector_data(data["train"], seed)
    )
    scaffold = Scaffold(detector, "lime")
    noisy = data["test"] + np.random.default_rng([seed, 95]).normal(0.0, 0.3, data["test"].shape)
    meta.update(precondition(scaffold, "LIME", data["test"], noisy, "N(0, 0.3^2)-perturbed"))
    background = summarise(data["train"], MAX_BACKGROUND, seed)
    return _case(info, seed, data, scaffold, background, {**meta, "source": source})


@FAMILY.case(
    category="fragility", source="Kernel-SHAP scaffold", checks={"fooling": {"race": RACE, "unrelated": UNRELATED}}
)
def compas_shap_scaffold(info, *, seed, cache, data_dir=None, n_rows: int = N_ROWS) -> Case:
    """COMPAS scaffold against KernelSHAP: rows with features substituted from the background see psi."""
    X, y, source = compas_data(data_dir, seed, n_rows)
    data = split_and_standardize(X, y, seed)
    summary = kmeans_summary(data["train"], seed)
    key = {"train": _data_key(data["train"]), "summary": _data_key(summary), "copies": 10, "n": "30000 per 4629"}
    detector, meta = trained_detector(
        "fooling-shap-detector",
        cache,
        key,
        list(range(X.shape[1])),
        seed,
        lambda: shap_detector_data(data["train"], summary, seed),
    )
    scaffold = Scaffold(detector, "kernel_shap")
    substituted = substitute(data["test"], summary, np.random.default_rng([seed, 95]))
    substituted = substituted[~is_real(substituted, np.vstack([data["train"], data["test"]]))]
    meta.update(precondition(scaffold, "Kernel-SHAP", data["test"], substituted, "substituted"))
    return _case(info, seed, data, scaffold, summary, {**meta, "source": source})


# ------------------------------------------------------------------------------------------ check


_RANKS_OF_ABS = "the check ranks |A| per row, which the sign and the scale of the attributions cannot change"


@check(
    marker="xai_fooling",
    thresholds={"min_race_top": 0.9, "max_unrelated_top": 0.0},
    passes_by_construction={
        "sign_flipped": _RANKS_OF_ABS,
        "scaled_negative": _RANKS_OF_ABS,
        "abs_of_exact": _RANKS_OF_ABS,
        "shuffled_rows": "the check asks only which feature is first in each row; the correct explanation puts race "
        "first in every row, so every other row's explanation does too",
        "row_offset": "race's attribution dominates the reference's RMS; an offset of 0.5-1.5 RMS on every "
        "feature keeps |race| first",
        "noisy_10": "noise at 10 % of the RMS is far below race's margin over the next feature",
        "noisy_30": "noise at 30 % of the RMS stays below race's margin over the next feature",
        "swapped@compas_shap_scaffold": "every substitution explainer is fooled by this scaffold and puts "
        "unrelated_column first, race second: swapping the two top features of that "
        "(fooled) reference puts race first",
    },
)
def fooling(
    attributions, case: Case, *, race: int, unrelated: int, min_race_top: float, max_unrelated_top: float
) -> Score:
    """Race stays the top feature of a racist model hidden behind an innocuous scaffold (not fooled).

    Slack et al. 2020 via Compare-xAI fooling_perturbation_alg, corrected (CX-2): per explained row,
    ranks of |A| (0 = top, ties share their average rank); race is "top-1" at rank 0 (a tie is not
    a win), unrelated_column is "top-1" when its rank is < 1 (it shares the top).  Pass when race
    is top-1 in >= min_race_top of the rows and unrelated_column in <= max_unrelated_top of them.
    The value is the mean race_score = 1 - r_race / (n - 1).  Ranks on the global importance are
    reported too.  Defaults from controls on compas_lime_scaffold: exact interventional Shapley
    values (substitutions stay on the lattice) put race first in every row, LIME (fooled) and
    random noise (race first with probability 1/10) put it first in few rows.
    Zoo (``tests/test_zoo.py``): zeros and constants tie every feature (a tie is not a win), the
    input itself, the output copied, the input minus the mean and noise fail.  Passed by
    construction (declared): sign, scale and |A| (ranks of |A|), exchanging rows of an explanation
    that puts race first in every row, an offset or noise below race's margin, and, on the SHAP
    scaffold, swapping the two top features of a fooled reference.
    """
    A = np.abs(attributions_of(attributions)).reshape(len(case.inputs), -1)
    n = A.shape[1]
    row_ranks = descending_ranks(A)
    race_rank, unrelated_rank = row_ranks[:, race], row_ranks[:, unrelated]
    race_top = float((race_rank == 0).mean())
    unrelated_top = float((unrelated_rank < 1).mean())
    value = float((1.0 - race_rank / (n - 1)).mean())
    global_ranks = descending_ranks(importance_of(attributions).reshape(-1))
    passed = bool(race_top >= min_race_top and unrelated_top <= max_unrelated_top)
    names = case.feature_names
    worst = int(race_rank.argmax())
    leaders, counts = np.unique(row_ranks.argmin(axis=1), return_counts=True)
    leader = int(leaders[counts.argmax()])
    verdict = "not fooled" if passed else "fooled"
    detail = (
        f"{verdict}: {names[race]} ranked first in {race_top:.0%} of {len(A)} rows (need >= "
        f"{min_race_top:.0%}), {names[unrelated]} in {unrelated_top:.0%} (allowed <= {max_unrelated_top:.0%}); "
        f"most often first: {names[leader]}; global ranks: {names[race]} {global_ranks[race]:g}, "
        f"{names[unrelated]} {global_ranks[unrelated]:g} of 0..{n - 1}"
    )
    params = {
        "race": race,
        "unrelated": unrelated,
        "min_race_top": min_race_top,
        "max_unrelated_top": max_unrelated_top,
        "race_top": race_top,
        "unrelated_top": unrelated_top,
        "unrelated_score": float((unrelated_rank / (n - 1)).mean()),
        "global_race_rank": float(global_ranks[race]),
        "global_unrelated_rank": float(global_ranks[unrelated]),
    }
    return Score(
        "fooling",
        value,
        passed,
        min_race_top,
        detail,
        params,
        {"row": worst, "race_rank": float(race_rank[worst]), "top_feature": names[int(row_ranks[worst].argmin())]},
    )
