"""Generative language models: which prompt tokens decide the next token, known by construction.

Small causal language models built with ``transformers`` (a ``GPT2LMHeadModel`` from a tiny
``GPT2Config``, :mod:`pytest_xai.cases.llm.model`), one per task, trained in one to two minutes on seeded
synthetic prompts and shipped (``scripts/train_llm.py``, ``pytest_xai/data/llm_gpt2.json``, an
accuracy gate).  Each decides its next token from known prompt tokens (``docs/sequences.md``,
"Language models"):

- ``copy``: the next tokens are the words at positions 5 and 6 (a known position);
- ``recall``: key-value retrieval: pairs ``k v`` then ``<sep> k_q``; the query key, the matching key
  and its value decide;
- ``trigger``: ``yes`` when the trigger word ``fire`` occurs; the distractor ``fir`` does not count.

Inputs are prompts of token ids (n, 12), left-padded with ``<pad>`` (id 0, captum's default
baseline); ``target`` is the next token (one id per row) or, for a continuation, one row of ids per
prompt (n, T).  The explained number is captum ``LLMAttribution``'s: the log-probability of the
target, summed over its tokens (teacher-forced), with every position attended.  Ground truth: the
deciding positions, and the exact Shapley values of that number over the prompt's positions against
``<pad>`` (all 2^12 coalitions enumerated at build), per generated token and summed.  The models
are trained with tokens other than the deciding ones replaced by ``<pad>`` at random, so the
deciding tokens carry the values, and with a deciding token dropped the answer is unknown
(``<unk>``; ``no`` for the trigger), so a prompt without its evidence does not predict the target;
each explained row is one the model answers right and whose exact
values rank the deciding tokens first (checked at build).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.checks import attributions_of, check, truth_reference
from pytest_xai.errors import NotApplicable
from pytest_xai.registry import Family
from pytest_xai.tokens import CONTINUATION

SOURCE = "causal language models with known deciding tokens (docs/sequences.md, 'Language models')"
#: ``import transformers`` is lazy: GPT-2's modules load when a builder first names the model (about
#: 2 CPU s), so the family names that module too, for the zygote to import it once before its forks.
LIBRARIES = ("torch", "tokenizers", "transformers", "transformers.models.gpt2.modeling_gpt2")
FAMILY = Family("llm", source=SOURCE, smoke=("token_mask_precision", "llm_copy"), libraries=LIBRARIES)
WORDS = ("red", "blue", "cat", "dog", "sun", "rain", "tree", "car", "box", "cup")
KEYS = tuple(f"k{i}" for i in range(6))
VALUES = tuple(f"v{i}" for i in range(6))
VOCABULARY = ("<pad>", "<bos>", "<sep>", "yes", "no", "fire", "fir", *KEYS, *VALUES, *WORDS, "<unk>")
PAD, BOS, SEP = 0, 1, 2
YES, NO, TRIGGER, DISTRACTOR, UNKNOWN = (VOCABULARY.index(w) for w in ("yes", "no", "fire", "fir", "<unk>"))
_WORD_IDS = np.array([VOCABULARY.index(w) for w in WORDS])
_KEY_IDS = np.array([VOCABULARY.index(w) for w in KEYS])
_VALUE_IDS = np.array([VOCABULARY.index(w) for w in VALUES])
LENGTH = 12  # prompt positions; shorter prompts are left-padded
COPY_POSITION = 5  # the copy task's next tokens are the words at positions 5 and 6
TASKS = ("copy", "recall", "trigger")
DROP = 0.2  # training: the share of non-deciding prompt tokens replaced by <pad>
N_EXPLAINED = 8
#: The case seed whose explained rows and exact values ship with the weights (the default
#: ``--xai-seed``): a cold run computes no exact values (``scripts/llm_truth.py`` writes them).
SHIPPED_SEED = 0
TRUTH = Path(__file__).resolve().parents[2] / "data" / "llm_truth.npz"
ACCURACY_GATE = 0.98  # held-out greedy accuracy every shipped model must reach
HELD_OUT_SEED = 2025


def prompt(task: str, rng: np.random.Generator, drop: float = 0.0, *, hard: bool = False) -> tuple[list, list, list]:
    """One prompt of ``task``: ``(ids, answer, deciding)``: ``LENGTH`` ids (left-padded), the answer
    tokens, and per answer token the positions that decide it.  ``drop`` (training): the share of the
    other tokens replaced by ``<pad>``, and the chance that one deciding token is, its answer then
    ``<unk>`` (``no`` for the trigger).  ``hard``: the case's rows (the trigger task: the trigger and the
    distractor both occur)."""
    if task == "copy":
        words = list(rng.choice(_WORD_IDS, rng.integers(COPY_POSITION + 2, LENGTH - 1)))
        ids = [BOS, *words, SEP]
        start = LENGTH - len(ids)
        ids = [PAD] * start + ids
        if start > COPY_POSITION - 1:  # the prompt must reach the copied positions: shift it left
            raise AssertionError("copy prompt too short")
        answer = [ids[COPY_POSITION], ids[COPY_POSITION + 1]]
        deciding = [[COPY_POSITION], [COPY_POSITION + 1]]
    elif task == "recall":
        m = int(rng.integers(2, 5))
        keys, values = rng.choice(_KEY_IDS, m, replace=False), rng.choice(_VALUE_IDS, m)
        q = int(rng.integers(m))
        body = [BOS, *[int(t) for pair in zip(keys, values) for t in pair], SEP, int(keys[q])]
        start = LENGTH - len(body)
        ids = [PAD] * start + body
        answer = [int(values[q])]
        deciding = [[start + 1 + 2 * q, start + 2 + 2 * q, LENGTH - 1]]
    elif task == "trigger":
        k = int(rng.integers(4, LENGTH - 2))
        words = [int(w) for w in rng.choice(_WORD_IDS, k)]
        fire, fir = (True, True) if hard else (rng.random() < 0.5, rng.random() < 0.5)
        places = rng.choice(k, 2, replace=False)
        if fire:
            words[places[0]] = TRIGGER
        if fir:
            words[places[1]] = DISTRACTOR
        start = LENGTH - k - 2
        ids = [PAD] * start + [BOS, *words, SEP]
        answer = [YES if fire else NO]
        deciding = [[start + 1 + int(places[0])] if fire else [start + 1 + i for i in range(k)]]
    else:
        raise ValueError(f"unknown task {task!r}; one of {TASKS}")
    keep = {p for positions in deciding for p in positions}
    if task == "trigger" and not fire:
        keep = set()  # every word decides "no": nothing is dropped
        drop = 0.0
    ids = [PAD if (i not in keep and t != PAD and rng.random() < drop) else int(t) for i, t in enumerate(ids)]
    answer = [int(a) for a in answer]
    if drop and rng.random() < drop:  # the evidence removed: a deciding token dropped, the answer unknown
        k = int(rng.integers(len(deciding)))
        ids[int(rng.choice(deciding[k]))] = PAD
        answer[k] = NO if task == "trigger" else UNKNOWN
    return ids, answer, deciding


def training_batch(task: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, labels)`` for next-token training: prompt and answer (n, LENGTH + 1), the labels -100
    except at the positions that predict an answer token (:data:`DROP` of the others dropped)."""
    width = 2 if task == "copy" else 1
    ids = np.zeros((n, LENGTH + width - 1), dtype=np.int64)
    labels = np.full(ids.shape, -100, dtype=np.int64)
    for i in range(n):
        p, answer, _ = prompt(task, rng, DROP)
        ids[i] = p + answer[:-1]
        labels[i, LENGTH - 1 : LENGTH - 1 + len(answer)] = answer
    return ids, labels


def held_out(task: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(prompts, answers)`` of ``task`` without dropped tokens (the accuracy gate's rows)."""
    rng = np.random.default_rng([seed, 41, TASKS.index(task)])
    rows = [prompt(task, rng) for _ in range(n)]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def _gated(task: str) -> Any:
    """The shipped model of ``task`` if its held-out greedy accuracy reaches :data:`ACCURACY_GATE`."""
    from pytest_xai.cases.llm.model import greedy, load_trained

    model = load_trained(task)
    prompts, answers = held_out(task, 500, HELD_OUT_SEED)
    measured = float((greedy(model, prompts, answers.shape[1]) == answers).all(axis=1).mean())
    if measured < ACCURACY_GATE:
        raise NotApplicable(
            f"model below quality gate: {task} held-out accuracy {measured:.4f} < {ACCURACY_GATE} "
            f"(pytest_xai/data/llm_gpt2.json)"
        )
    return model, measured


def _explained(task: str, seed: int, model: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The explained rows of ``task`` for ``seed``: ``(prompts, answers, per-token exact values
    (n, T, L), per-token deciding masks (n, T, L))``, only rows the model answers right (greedy)
    and whose exact summed values put the deciding tokens strictly first by magnitude."""
    from pytest_xai.cases.llm.model import exact_values, greedy

    rng = np.random.default_rng([seed, 42, TASKS.index(task)])
    kept: list[tuple[list, list, np.ndarray, np.ndarray]] = []
    for _ in range(10 * N_EXPLAINED):
        ids, answer, deciding = prompt(task, rng, hard=True)
        if (greedy(model, np.array([ids]), len(answer))[0] != answer).any():
            continue
        values = exact_values(model, np.array(ids), np.array(answer))
        mask = np.zeros(values.shape, dtype=bool)
        for k, positions in enumerate(deciding):
            mask[k, positions] = True
        summed, union = np.abs(values.sum(axis=0)), mask.any(axis=0)
        if summed[union].min() > summed[~union].max():
            kept.append((ids, answer, values, mask))
        if len(kept) == N_EXPLAINED:
            break
    if len(kept) < N_EXPLAINED:
        raise AssertionError(f"llm {task}: only {len(kept)} of {10 * N_EXPLAINED} prompts qualify; retrain the model")
    prompts, answers, values, masks = (np.array([k[i] for k in kept]) for i in range(4))
    return prompts, answers, values, masks


def _wrong_target(task: str, prompt: np.ndarray, answer: np.ndarray) -> int:
    """The next token an attribution of the wrong target explains: the word one position off
    (copy), the value of another key in the prompt (recall), the other answer (trigger)."""
    if task == "copy":
        return int(
            next(prompt[p] for p in (COPY_POSITION + 1, COPY_POSITION - 1, COPY_POSITION + 2) if prompt[p] != answer[0])
        )
    if task == "recall":
        return int(next(t for t in prompt if t in _VALUE_IDS and t != answer[0]))
    return NO if answer[0] == YES else YES


def computed_arrays(task: str, seed: int, model: Any) -> dict[str, np.ndarray]:
    """The explained rows of :func:`_explained` and the exact values of each row's wrong next token
    (:func:`_wrong_target`), computed (4-6 CPU s a task)."""
    from pytest_xai.cases.llm.model import exact_values

    prompts, answers, values, masks = _explained(task, seed, model)
    wrong = [_wrong_target(task, p, a) for p, a in zip(prompts, answers)]
    others = np.stack([exact_values(model, p, np.array([t]))[0] for p, t in zip(prompts, wrong)])
    return {"prompts": prompts, "answers": answers, "values": values, "masks": masks, "wrong": others}


def shipped_arrays() -> dict[str, dict[str, np.ndarray]] | None:
    """``{task: arrays}`` of :func:`computed_arrays` at :data:`SHIPPED_SEED`, as
    ``scripts/llm_truth.py`` wrote them beside the weights (``pytest_xai/data/llm_truth.npz``); None
    when the file is missing or was computed from other weights than those shipped."""
    from pytest_xai.cases.llm.model import weights_digest

    if not TRUTH.is_file():
        return None
    with np.load(TRUTH, allow_pickle=False) as stored:
        if str(stored["weights"]) != weights_digest():
            return None
        return {
            task: {k.partition("/")[2]: stored[k] for k in stored.files if k.startswith(task + "/")} for task in TASKS
        }


def _arrays(task: str, seed: int, model: Any, cache: Any) -> dict[str, np.ndarray]:
    """The arrays of :func:`computed_arrays`: those shipped at :data:`SHIPPED_SEED`, else from the
    disk cache (keyed by the shipped weights' digest) or computed."""
    from pytest_xai.cases.llm.model import weights_digest

    shipped = shipped_arrays() if seed == SHIPPED_SEED else None
    if shipped is not None:
        return shipped[task]
    key = {"task": task, "seed": seed, "weights": weights_digest()}
    return cache.arrays(f"llm_{task}", key, lambda: computed_arrays(task, seed, model))


def _case(info, task: str, seed: int, cache: Any, width: int) -> Case:
    """The case of ``task`` explaining the first ``width`` answer tokens (1: the next token; 2: a
    continuation, its log-probabilities summed)."""
    from pytest_xai.cases.llm.model import continuation_predictor, tokenizer

    model, measured = _gated(task)
    arrays = _arrays(task, seed, model, cache)
    prompts = arrays["prompts"]
    answers, values, masks = arrays["answers"][:, :width], arrays["values"][:, :width], arrays["masks"][:, :width]
    predict = continuation_predictor(model, width)
    target = answers[:, 0] if width == 1 else answers[:, 0] * len(VOCABULARY) + answers[:, 1]
    # the wrong targets the target check compares with: a wrong next token; for a continuation, each
    # of its tokens alone
    others = arrays["wrong"][:, None] if width == 1 else values
    return Case(
        info=info,
        inputs=prompts,
        predict=predict,
        model=model,
        torch_model=model,
        target=target,
        background=np.full((1, LENGTH), PAD),
        baseline=np.full(LENGTH, PAD),
        feature_names=[f"token{i}" for i in range(LENGTH)],
        truth={
            "token_values": values.sum(axis=1),
            "token_mask": masks.any(axis=1),
            "padding": prompts == PAD,
            "per_token_values": values,
            "other_targets": others,
        },
        meta={
            "vocabulary": VOCABULARY,
            "words": [[VOCABULARY[int(i)] for i in row if i != PAD] for row in prompts],
            "tokenizer": tokenizer(),
            "target_ids": answers,
            "output": "log_probabilities" if width == 1 else CONTINUATION,
            "held_out_accuracy": measured,
        },
    )


_CHECKS: dict[str, dict[str, Any]] = {
    "token_mask_precision": {},
    "padding_credit": {},
    "token_values": {"max_relative_mse": 0.2, "min_fraction": 0.75},
    "target_token": {},
}


@FAMILY.case(category="fidelity", source="GPT-2 trained on a seeded copy task (scripts/train_llm.py)", checks=_CHECKS)
def llm_copy(info, *, seed, cache) -> Case:
    """Next token = the word at position 5 of the prompt; exact log-probability Shapley values."""
    return _case(info, "copy", seed, cache, 1)


@FAMILY.case(category="fidelity", source="GPT-2 trained on a seeded copy task (scripts/train_llm.py)", checks=_CHECKS)
def llm_copy_continuation(info, *, seed, cache) -> Case:
    """A two-token continuation: the words at positions 5 and 6, log-probabilities summed (captum's
    ``seq_attr``); each generated token is decided by its own position."""
    return _case(info, "copy", seed, cache, 2)


@FAMILY.case(
    category="fidelity", source="GPT-2 trained on seeded key-value retrieval (scripts/train_llm.py)", checks=_CHECKS
)
def llm_recall(info, *, seed, cache) -> Case:
    """Key-value retrieval: ``k v`` pairs, then ``<sep> k_q``; the query key, the matching key and its
    value decide the next token."""
    return _case(info, "recall", seed, cache, 1)


@FAMILY.case(
    category="fidelity", source="GPT-2 trained on a seeded trigger task (scripts/train_llm.py)", checks=_CHECKS
)
def llm_trigger(info, *, seed, cache) -> Case:
    """``yes`` when ``fire`` occurs; every explained prompt also holds the distractor ``fir``."""
    return _case(info, "trigger", seed, cache, 1)


# ------------------------------------------------------------------------------------------------
# Checks (token_mask_precision, padding_credit and token_values are the transformer family's)


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of (..., L) arrays; 0 where either is all zero."""
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.divide((a * b).sum(axis=-1), norms, out=np.zeros(norms.shape), where=norms > 0)


DISTINCT = 0.9  # target_token: the largest cosine between the target's exact values and a wrong target's
_TARGET_BY_CONSTRUCTION = {
    "abs_of_exact": "the exact values of the deciding tokens are positive and the others within a few hundredths of "
    "0, so |v| points where v does; it is the same target",
    "noisy_100": "noise at the map's RMS leaves most rows closest to their target's values (cosine about 0.7 against "
    "a wrong target's lower one): the check is about which token is explained; token_values rejects noise at 100 %",
    "shuffled_rows@llm_copy*": "the copied positions are 5 and 6 in every prompt, so another row's map explains the "
    "same target positions (llm_recall and llm_trigger, whose deciding positions vary, reject it)",
    "swapped@llm_copy_continuation": "the two positions exchanged are the two deciding ones, one per generated token: "
    "the map still explains both",
    "swapped@llm_recall": "the two largest of the three deciding tokens exchanged: the map still explains the same "
    "retrieved value; token_values rejects it",
    "row_offset": "a positive offset per row (0.5-1.5 of the map's RMS) keeps the map closest to the target's "
    "values; token_values rejects it",
    "noisy_10": "noise below the map's RMS keeps it closest to the target's values; token_values rejects 30 % and more",
    "noisy_30": "noise below the map's RMS keeps it closest to the target's values; token_values rejects it",
}


@check(
    marker="xai_llm",
    thresholds={"min_cosine": 0.5, "min_fraction": 0.75},
    passes_by_construction=_TARGET_BY_CONSTRUCTION,
    reference=truth_reference("token_values"),
)
def target_token(attributions, case: Case, *, min_cosine: float, min_fraction: float) -> Score:
    """The explanation is of the target generated token(s), not of another one: per row, its cosine
    similarity with the exact values of the target is at least min_cosine and above its similarity
    with the exact values of each wrong target (the word one position off, another key's value, the
    other answer; for a continuation, each of its tokens alone), on at least min_fraction of the rows.

    The wrong targets are the mistakes of published attributions of generated text: an off-by-one
    position or vocabulary index (unseal#7), one generated token explained for the whole
    continuation.  A constant map scores about 1/sqrt(L) = 0.29 and fails min_cosine; a sign flip
    is closest to nothing.  A wrong target whose exact values have cosine >= 0.9 with the target's
    (one deciding token whose presence raises both log-probabilities) is left out, and a row without
    a distinct wrong target too (counted in the detail).
    """
    A = attributions_of(attributions)
    truth = np.asarray(case.truth["token_values"], dtype=float)
    others = np.asarray(case.truth["other_targets"], dtype=float)  # (n, K, L)
    # a wrong target whose exact values point where the target's do cannot be told apart by direction
    informative = _cosine(truth[:, None], others) < DISTINCT
    rows = informative.any(axis=1)
    params = {"min_cosine": min_cosine, "min_fraction": min_fraction}
    if not rows.any():
        return Score("target_token", 1.0, True, min_fraction, "no row has a wrong target distinct from its own", params)
    right = _cosine(A, truth)
    wrong = np.where(informative, _cosine(A[:, None], others), -np.inf).max(axis=1)
    ok = (right >= min_cosine) & (right > wrong)
    fraction = float(ok[rows].mean())
    row = int(np.argmin(np.where(rows, right - wrong, np.inf)))
    detail = (
        f"{fraction:.0%} of {int(rows.sum())} rows are closest to the exact values of their target (cosine >= "
        f"{min_cosine:g} and above every wrong target's; need {min_fraction:.0%})"
        + (f"; {int((~rows).sum())} rows whose wrong targets point the same way left out" if not rows.all() else "")
        + f"; worst row {row}: cosine {right[row]:.3f} with the target, {wrong[row]:.3f} with a wrong target"
    )
    return Score(
        "target_token",
        fraction,
        fraction >= min_fraction,
        min_fraction,
        detail,
        params,
        {"row": row, "cosine_target": float(right[row]), "cosine_wrong": float(wrong[row])},
    )
