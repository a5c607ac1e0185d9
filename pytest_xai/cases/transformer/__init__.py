"""Transformers over tokens: tiny torch transformers whose token-level truth is known by construction.

Inputs are token ids (n, L) as the contract's float arrays, with the padding token ``<pad>`` (id 0)
filling each row after its last word; ``predict`` maps ids to class probabilities; the native
``model`` is a :class:`~pytest_xai.cases.transformer.model.TinyTransformer` whose ``forward(input_ids)``
takes a LongTensor and which exposes ``get_input_embeddings()``, as a Hugging Face model does, so a
user's captum ``LayerIntegratedGradients`` adapter runs unchanged (``examples/
hf_layer_integrated_gradients.py``).  Attributions are per token (captum's convention: summed over
the embedding dimension).  The padding is the baseline: occlusion replaces a token by ``<pad>``,
KernelSHAP's background is the all-padding row, Integrated Gradients starts from the padding's
embeddings.

Cases (``docs/sequences.md``); the units explain the positive class, the trained model each row's
predicted class:

- ``transformer_lexicon``: a hand-set unit (XAI-Units manner, Lee et al. 2025) whose uniform
  attention averages each token's sentiment value; the class-1 probability is 1/2 + (1/L) sum of the
  sentiment words' weights, so every token's attribution against the padding is exact: w(x_t) / L
  for a sentiment word, 0 for the others and for the padding, which the model nonetheless reads;
- ``transformer_position``: a hand-set unit whose attention selects position 2 by the position
  code alone: only the word there decides, and the sentiment words elsewhere are distractors;
- ``transformer_negation``: a trained transformer (shipped weights, ``scripts/
  train_tiny_transformer.py``, held-out accuracy gate) on a seeded task: positive when a trigger
  word ("good", "great") occurs and no negator ("not", "never") does; the truth is the positions of
  those words.

The decisive words have small ids (1-10), most other words larger ones (11-23), so a map read off
the input (the ids themselves) ranks them low.  Checks: :func:`token_mask_precision`,
:func:`padding_credit`, :func:`token_values`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.checks import FLOAT_NOISE, attributions_of, check, denoised, truth_reference
from pytest_xai.errors import NotApplicable
from pytest_xai.metrics import precision_at_truth_size
from pytest_xai.registry import Family

SOURCE = "token ids with a padding token, truth by construction (docs/sequences.md)"
FAMILY = Family(
    "transformer", source=SOURCE, smoke=("token_mask_precision", "transformer_lexicon"), libraries=("torch",)
)
PAD = 0
LENGTH = 10  # positions per row: short rows end in padding
N_EXPLAINED = 16
VOCABULARY = (
    "<pad>",
    "good",
    "great",
    "fine",
    "superb",
    "bad",
    "awful",
    "poor",
    "dull",
    "not",
    "never",
    "the",
    "a",
    "film",
    "plot",
    "it",
    "was",
    "and",
    "of",
    "actor",
    "scene",
    "to",
    "in",
    "music",
)
#: Sentiment weights of the hand-set units (the lexicon); every other word is neutral.
WEIGHTS = {1: 1.0, 2: 1.5, 3: 0.5, 4: 1.25, 5: -1.0, 6: -1.5, 7: -0.75, 8: -0.5}
LEXICON = np.array(sorted(WEIGHTS))
NEUTRAL = np.arange(9, len(VOCABULARY))  # "not" and "never" are neutral to the lexicon units
POSITION = 2  # the position whose word decides transformer_position
TRIGGERS, NEGATORS = (1, 2), (9, 10)  # transformer_negation: "good"/"great", "not"/"never"
#: transformer_negation runs while the shipped model's held-out accuracy is at least this.
ACCURACY_GATE = 0.98
TRAIN_SEED, HELD_OUT_SEED = 2023, 2024  # the shipped model's training rows and the gate's held-out rows


def _padded(rows: list[np.ndarray]) -> np.ndarray:
    out = np.full((len(rows), LENGTH), float(PAD))
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def lexicon_rows(n: int, seed: int) -> np.ndarray:
    """Rows of 5-10 words: 1-3 sentiment words at random places, neutral words elsewhere, the total
    weight at least 0.25 away from 0 (a clear class)."""
    rng = np.random.default_rng([seed, 33, 1])
    rows: list[np.ndarray] = []
    while len(rows) < n:
        words = rng.choice(NEUTRAL, rng.integers(5, LENGTH + 1))
        places = rng.choice(len(words), rng.integers(1, 4), replace=False)
        words[places] = rng.choice(LEXICON, len(places))
        if abs(sum(WEIGHTS.get(int(w), 0.0) for w in words)) >= 0.25:
            rows.append(words)
    return _padded(rows)


def position_rows(n: int, seed: int) -> np.ndarray:
    """Rows of 4-10 words: a sentiment word at :data:`POSITION`, 1-2 sentiment distractors elsewhere."""
    rng = np.random.default_rng([seed, 33, 2])
    rows = []
    for _ in range(n):
        words = rng.choice(NEUTRAL, rng.integers(POSITION + 2, LENGTH + 1))
        distractors = rng.choice(np.delete(np.arange(len(words)), POSITION), rng.integers(1, 3), replace=False)
        words[distractors] = rng.choice(LEXICON, len(distractors))
        words[POSITION] = rng.choice(LEXICON)
        rows.append(words)
    return _padded(rows)


def negation_rows(n: int, seed: int, kinds: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, labels, kinds)`` of the negation task: rows of 4-10 words over every word but the
    triggers and negators, then kind 0 (no trigger, label 0; a negator half the time), 1 (1-2
    triggers, no negator, label 1) or 2 (1-2 triggers and 1-2 negators, label 0), drawn 1:2:1 unless
    ``kinds`` gives them."""
    rng = np.random.default_rng([seed, 33, 3])
    kinds = rng.choice(3, n, p=[0.25, 0.5, 0.25]) if kinds is None else np.asarray(kinds)
    others = np.setdiff1d(np.arange(1, len(VOCABULARY)), TRIGGERS + NEGATORS)
    rows = []
    for kind in kinds:
        words = rng.choice(others, rng.integers(4, LENGTH + 1))
        triggers = rng.integers(1, 3) if kind else 0
        negators = rng.integers(1, 3) if kind == 2 else int(rng.random() < 0.5) if kind == 0 else 0
        places = rng.choice(len(words), triggers + negators, replace=False)
        words[places[:triggers]] = rng.choice(TRIGGERS, triggers)
        words[places[triggers:]] = rng.choice(NEGATORS, negators)
        rows.append(words)
    return _padded(rows), (kinds == 1).astype(int), kinds


def _case(
    info, ids: np.ndarray, model, predict, target: Any, truth: dict[str, np.ndarray], meta: dict[str, Any]
) -> Case:
    words = [[VOCABULARY[int(i)] for i in row if i != PAD] for row in ids]
    return Case(
        info=info,
        inputs=ids,
        predict=predict,
        model=model,
        torch_model=model,
        target=target,
        background=np.full((1, LENGTH), float(PAD)),
        baseline=np.full(LENGTH, float(PAD)),
        feature_names=[f"token{i}" for i in range(LENGTH)],
        truth={"padding": ids == PAD, **truth},
        meta={"pad_token_id": PAD, "vocabulary": VOCABULARY, "words": words, **meta},
    )


def _exact(info, ids: np.ndarray, model, predict, closed_form: np.ndarray, meta: dict[str, Any]) -> Case:
    """A hand-set unit's case after its self-test: the attributions to the positive class (the target
    of every row) in closed form equal the baseline-Shapley values against the padding, enumerated
    over all 2^L coalitions on the network."""
    from pytest_xai.cases.units import baseline_shapley

    enumerated = baseline_shapley(lambda z: predict(z)[:, 1], ids, np.full(LENGTH, float(PAD)))
    if not np.allclose(closed_form, enumerated, rtol=1e-5, atol=1e-6):
        row = int(np.abs(closed_form - enumerated).max(axis=1).argmax())
        raise AssertionError(
            f"unit {info.name}: closed-form attributions disagree with enumeration on row {row}: "
            f"{closed_form[row]!r} vs {enumerated[row]!r}"
        )
    truth = {"token_values": closed_form, "token_mask": closed_form != 0}
    return _case(info, ids, model, predict, 1, truth, meta)


def _values() -> np.ndarray:
    from pytest_xai.cases.transformer.model import BASE_VALUE

    return np.array([BASE_VALUE + WEIGHTS.get(v, 0.0) for v in range(len(VOCABULARY))])


_CHECKS: dict[str, dict[str, Any]] = {"token_mask_precision": {}, "padding_credit": {}, "token_values": {}}


@FAMILY.case(category="fidelity", source="hand-set unit in the manner of XAI-Units (Lee et al. 2025)", checks=_CHECKS)
def transformer_lexicon(info, *, seed) -> Case:
    """Hand-set transformer, uniform attention over the sequence, padding included: p1 = 1/2 +
    (1/L) sum of the sentiment words' weights; exact per-token attributions w(x_t) / L."""
    from pytest_xai.cases.transformer.model import hand_set, predictor

    ids = lexicon_rows(N_EXPLAINED, seed)
    model = hand_set(_values(), length=LENGTH, gain=1.0)
    weights = np.vectorize(lambda v: WEIGHTS.get(int(v), 0.0))(ids)
    return _exact(info, ids, model, predictor(model), weights / LENGTH, {"weights": WEIGHTS})


@FAMILY.case(
    category="fidelity",
    source="hand-set unit in the manner of XAI-Units (Lee et al. 2025)",
    checks={"token_mask_precision": {}, "token_values": {}},
)
def transformer_position(info, *, seed) -> Case:
    """Hand-set transformer whose attention reads position 2 only: p1 = 1/2 + 0.3 w(x_2); sentiment
    words elsewhere are distractors with exactly zero attribution."""
    from pytest_xai.cases.transformer.model import hand_set, predictor

    ids = position_rows(N_EXPLAINED, seed)
    model = hand_set(_values(), length=LENGTH, gain=0.3, position=POSITION)
    closed = np.zeros(ids.shape)
    closed[:, POSITION] = 0.3 * np.vectorize(lambda v: WEIGHTS[int(v)])(ids[:, POSITION])
    return _exact(info, ids, model, predictor(model), closed, {"weights": WEIGHTS, "position": POSITION})


@FAMILY.case(
    category="fidelity",
    source="trained tiny transformer (pytest_xai/data/tiny_transformer.json)",
    checks={"token_mask_precision": {}, "padding_credit": {}},
)
def transformer_negation(info, *, seed) -> Case:
    """Trained transformer (shipped): positive when "good" or "great" occurs and neither "not" nor
    "never" does; explained on 8 positive and 8 negated rows of the case's seed (not the training
    seed) that it classifies correctly; truth: the positions of those four words."""
    from pytest_xai.cases.transformer.model import accuracy, load_trained, predictor

    model = load_trained()
    held_out, labels, _ = negation_rows(2000, seed=HELD_OUT_SEED)
    measured = accuracy(model, held_out, labels)
    if measured < ACCURACY_GATE:
        raise NotApplicable(
            f"model below quality gate: held-out accuracy {measured:.4f} < {ACCURACY_GATE} "
            f"(pytest_xai/data/tiny_transformer.json)"
        )
    predict = predictor(model)
    pool, labels, kinds = negation_rows(200, seed, kinds=np.tile([1, 2], 100))
    right = predict(pool).argmax(axis=1) == labels
    rows = np.concatenate([np.flatnonzero(right & (kinds == k))[: N_EXPLAINED // 2] for k in (1, 2)])
    ids = pool[np.sort(rows)]
    decisive = np.isin(ids, TRIGGERS + NEGATORS)
    return _case(
        info,
        ids,
        model,
        predict,
        predict(ids).argmax(axis=1),
        {"token_mask": decisive},
        {"held_out_accuracy": measured, "triggers": TRIGGERS, "negators": NEGATORS},
    )


# ------------------------------------------------------------------------------------------------
# Checks


def _reference(case: Case, params: Any) -> np.ndarray:
    """The correct attributions the zoo corrupts: the exact values where the weights give them,
    else the token mask (1 on the decisive words)."""
    truth = case.truth.get("token_values", case.truth.get("token_mask"))
    if truth is None:
        raise NotApplicable(f"case {case.name!r} has no token truth (it has {sorted(case.truth)})")
    return np.asarray(truth, dtype=float)


_MAGNITUDE = (
    "the check reads |a| only (which tokens rank first), so the sign and the scale of a correct map cannot matter"
)
_PRECISION_BY_CONSTRUCTION = {
    "sign_flipped": _MAGNITUDE,
    "scaled_negative": _MAGNITUDE,
    "abs_of_exact": _MAGNITUDE,
    "shuffled_rows@transformer_position": "the decisive position is position 2 in every row, so another row's "
    "correct map ranks the same token first; token_values rejects it",
    "row_offset": "a positive offset per row (0.5-1.5 of the map's RMS) changes the order only where a decisive "
    "token's value is negative and within twice the offset, rare on a sparse map whose values exceed "
    "its RMS (on the trained case the reference is the 0/1 mask: never); token_values rejects it",
    "noisy_10": "noise at 10 % of the RMS of a sparse map leaves the decisive tokens on top",
    "noisy_100@transformer_position": "one decisive value per row, 0.15-0.45, against noise at the map's RMS (about "
    "0.1): it stays first on most rows; token_values rejects it",
    "noisy_30": "noise at 30 % of the RMS of a sparse map rarely lifts a neutral token above a decisive one",
    "shuffled_rows@llm_copy*": "the copied positions are 5 and 6 in every prompt, so another row's correct map is a "
    "correct map of this row up to a few tenths of a nat (no check of a fixed-position task can tell them apart; "
    "llm_recall and llm_trigger, whose deciding positions vary, reject it)",
    "noisy_100@llm_copy": "one deciding token per row carries almost all of the log-probability (about 11 nats) "
    "against noise at the map's RMS (about 3): it stays first; token_values rejects it",
    "noisy_100@llm_trigger": "the trigger carries almost all of the log-probability (about 14 nats) against noise at "
    "the map's RMS (about 4): it stays first; token_values rejects it",
    "swapped@llm_copy_continuation": "the two positions exchanged are the two deciding ones (positions 5 and 6): the "
    "top two stay the top two",
}


@check(
    marker="xai_transformer",
    thresholds={"min_precision": 0.9},
    passes_by_construction=_PRECISION_BY_CONSTRUCTION,
    reference=_reference,
)
def token_mask_precision(attributions, case: Case, *, min_precision: float) -> Score:
    """The tokens an explanation ranks first are the ones that decide the label: precision at the
    mask's size (the k decisive tokens of a row against its top k by |a|) >= min_precision.

    Mohseni & Ragan's agreement with a token mask, at the mask's own size, where precision equals
    recall (:func:`pytest_xai.metrics.precision_at_truth_size`; ties broken at random, zeros and
    float noise never selected, the padding ranked like any position).  Mean over rows.  Controls
    over seeds 0-2 and the suite's seed, lexicon / position / negation: the truth, Integrated
    Gradients from the padding, occlusion with it and KernelSHAP against it score 1 on the units; on
    the trained model KernelSHAP 1, IG 0.56-0.75 and occlusion 0.25-0.51 (``transformer_negation``
    says why); a constant map 0.15-0.25 / 0.19 / 0.15-0.20, noise 0.06-0.20, the ids themselves
    0-0.15 (the decisive words have small ids); the zoo members that must fail at most 0.88 (two
    positions exchanged).  0.9 separates the methods exact on every row from those that miss some.
    Passed by construction (declared): sign and scale changes of a correct map, a positive offset
    per row, another row's map where the decisive position is the same in every row, and noise below
    the RMS of the sparse map.
    """
    A = denoised(attributions)
    mask = np.asarray(case.truth["token_mask"], dtype=bool)
    result = precision_at_truth_size(A, mask)
    value = result.mean
    params = {"min_precision": min_precision}
    if np.isnan(value):
        return Score("token_mask_precision", 0.0, False, min_precision, "no row has a decisive token", params)
    row = int(np.nanargmin(result.values))
    words = case.meta.get("words")
    top = [int(t) for t in np.argsort(-np.abs(A[row]), kind="stable")[: int(mask[row].sum())] if A[row, t] != 0]
    detail = (
        f"mean precision {value:.3f} of the top-|a| tokens at the size of each row's decisive set "
        f"(need >= {min_precision:g}; the mask's share, what a constant map scores, is "
        f"{mask.sum() / mask.size:.3f}); worst row {row} ({result.values[row]:.2f}): ranked first "
        f"{top or 'nothing (all zero)'}, decisive {np.flatnonzero(mask[row]).tolist()}"
    )
    return Score(
        "token_mask_precision",
        float(value),
        bool(value >= min_precision),
        min_precision,
        detail,
        params,
        {
            "row": row,
            "precision": float(result.values[row]),
            "ranked_first": top,
            "decisive": np.flatnonzero(mask[row]).tolist(),
            "words": words[row] if words is not None else None,
        },
    )


_PADDING_BY_CONSTRUCTION = {
    "sign_flipped": "the padding's correct attribution is 0 in every row; a sign change keeps it 0",
    "scaled_negative": "the padding's correct attribution is 0 in every row; scaling keeps it 0",
    "abs_of_exact": "the padding's correct attribution is 0 in every row; |.| keeps it 0",
    "input_itself": "token ids are labels: the padding's id is 0, so the ids themselves are 0 on the padding, as "
    "every padding-baseline method is; token_mask_precision rejects the ids (the decisive words' "
    "are small)",
    "input_minus_mean": "the background is the all-padding row (id 0), so the input minus its mean is the ids "
    "themselves: 0 on the padding; token_mask_precision rejects it",
    "swapped": "the two most important positions of a correct map are early ones, a word in every row (rows "
    "have at least 4 words), so exchanging them moves no credit onto the padding",
    "shuffled_rows": "another row's correct map credits this row's padding only where that row's decisive words "
    "lie beyond this row's end, which some draws avoid; token_mask_precision rejects it",
    "one_row_in_ten": "the check is about credit on the padding only: a correct map on one row in ten and rows "
    "explained as nothing (left out) credit no padding; token_mask_precision rejects it",
    "noisy_10@llm_copy_continuation": "noise at 10 % of the RMS of a map concentrated on two tokens (about 11 nats "
    "each) puts under 1 % of |a| on the padding; token_values rejects noise at 100 % of the RMS",
}


@check(
    marker="xai_transformer",
    thresholds={"max_share": 0.01},
    passes_by_construction=_PADDING_BY_CONSTRUCTION,
    reference=_reference,
)
def padding_credit(attributions, case: Case, *, max_share: float) -> Score:
    """The padding gets no credit: per row, the share of sum |a| on padding positions, mean over rows
    <= max_share.

    The padding is not part of the input: with the padding as the baseline (occlusion, KernelSHAP
    against the all-padding row, Integrated Gradients from the padding's embeddings) every padding
    position gets exactly 0, although these models read the padding.  A gradient x embedding map, an
    IG from all-zero embeddings, or attention weights credit it (TSInterpret#33's "almost all
    attribution on the padding").  Values within 1e-6 of the map's largest |a| are float noise (0);
    rows explained as nothing are left out (and counted) and a map that explains nothing at all
    fails: silence is :func:`token_mask_precision`'s to judge.  Default 0.02: correct maps score 0;
    noise at 10 % of the reference's RMS already puts 0.04-0.1 there, a constant map the padding's
    share of the positions (0.2-0.3).  Passed by construction (declared): sign and scale changes of
    a correct map, the ids themselves and the ids minus the all-padding background (the padding id
    is 0), exchanging the two most important (early) positions, and a correct map on one row in ten.
    """
    A = np.abs(denoised(attributions))
    padding = np.asarray(case.truth["padding"], dtype=bool)
    total = A.sum(axis=1)
    silent = total == 0
    params = {"max_share": max_share}
    if silent.all():
        return Score(
            "padding_credit",
            0.0,
            False,
            max_share,
            f"the explanation explains nothing: all {len(A)} rows "
            f"are zero (within {FLOAT_NOISE:g} of the map's largest |a|)",
            params,
        )
    share = np.where(silent, 0.0, (A * padding).sum(axis=1) / np.where(silent, 1.0, total))
    value = float(share[~silent].mean())
    row = int(share.argmax())
    detail = (
        f"mean share of |a| on the padding {value:.3g} (need <= {max_share:g}; {int(padding.sum())} of "
        f"{padding.size} positions are padding); worst row {row}: {share[row]:.3g}"
        + (f"; {int(silent.sum())} rows explained as nothing left out" if silent.any() else "")
    )
    return Score(
        "padding_credit",
        float(max(0.0, 1.0 - value)),
        bool(value <= max_share),
        max_share,
        detail,
        params,
        {"row": row, "share": float(share[row])},
    )


_LLM_VALUES = "llm_*"
_VALUES_BY_CONSTRUCTION = {
    f"abs_of_exact@{_LLM_VALUES}": "the exact log-probability values of the deciding tokens are positive and the "
    "others within a few hundredths of 0, so |v| is v up to those; target_token's and precision's zoo, and the llm "
    "zoo, reject what is wrong about the target or the tokens",
    f"noisy_10@{_LLM_VALUES}": "the language-model cases admit the sampling error of Shapley value sampling at 50 "
    "permutations (relative MSE up to 0.2): noise at 10 % of the map's RMS is inside it",
    f"noisy_30@{_LLM_VALUES}": "the language-model cases admit the sampling error of Shapley value sampling at 50 "
    "permutations (relative MSE up to 0.2): noise at 30 % of the map's RMS (relative MSE about 0.09) is inside it",
    "shuffled_rows@llm_copy*": "the copied positions are 5 and 6 in every prompt and their values differ by a few "
    "tenths of a nat from row to row: another row's map is within the sampling tolerance",
    "swapped@llm_copy_continuation": "the two positions exchanged are the two deciding ones, of nearly equal value "
    "(10.6 and 11.0 nats)",
}


@check(
    marker="xai_transformer",
    thresholds={"max_relative_mse": 1e-3, "min_fraction": 0.95},
    passes_by_construction=_VALUES_BY_CONSTRUCTION,
    reference=truth_reference("token_values"),
)
def token_values(attributions, case: Case, *, max_relative_mse: float, min_fraction: float) -> Score:
    """Exact per-token values where the weights make them exact: per-row relative MSE against
    ``truth["token_values"]`` <= max_relative_mse on at least min_fraction of the rows.

    The hand-set units' outputs are affine in the token embeddings, so the attribution of a token
    against the padding is exact in closed form (XAI-Units, Lee et al. 2025; cross-checked by
    enumerating every coalition at build).  Relative MSE as :func:`pytest_xai.cases.units.relative_mse`;
    defaults as ``units_mse``: IG (128 steps, float32) reaches 1e-12, occlusion and KernelSHAP 0;
    10 % noise scores 1e-2.
    """
    from pytest_xai.cases.units import relative_mse

    A = attributions_of(attributions)
    truth = np.asarray(case.truth["token_values"], dtype=float)
    rel = relative_mse(A, truth)
    within = rel <= max_relative_mse
    fraction = float(within.mean())
    row = int(np.nanargmax(rel))
    detail = (
        f"{fraction:.0%} of {len(rel)} rows within relative MSE {max_relative_mse:g} of the exact token values "
        f"(need {min_fraction:.0%}); worst row {row}: relative MSE {rel[row]:.3g}"
    )
    return Score(
        "token_values",
        fraction,
        fraction >= min_fraction,
        min_fraction,
        detail,
        {"max_relative_mse": max_relative_mse, "min_fraction": min_fraction},
        {"row": row, "attribution": A[row].tolist(), "truth": truth[row].tolist(), "relative_mse": float(rel[row])},
    )
