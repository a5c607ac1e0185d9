"""Synthetic texts: a Zipf background vocabulary, two topic lexicons, planted words, simulated
annotators, the public JSON formats they are written in, and the two text models (a
lexicon-counting oracle, TF-IDF + logistic regression) (``docs/human.md`` "Synthetic texts")."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

TOPICS = ("sci.med", "sci.electronics")

LEXICONS = {
    "sci.med": (
        "doctor",
        "patient",
        "clinic",
        "symptom",
        "diagnosis",
        "surgery",
        "vaccine",
        "therapy",
        "dose",
        "infection",
        "tumor",
        "nurse",
        "hospital",
        "fever",
        "allergy",
        "insulin",
        "antibiotic",
        "cardiac",
        "physician",
        "medication",
        "disease",
        "virus",
        "biopsy",
        "migraine",
        "prescription",
    ),
    "sci.electronics": (
        "circuit",
        "voltage",
        "resistor",
        "capacitor",
        "transistor",
        "diode",
        "amplifier",
        "solder",
        "oscilloscope",
        "inductor",
        "ohm",
        "current",
        "battery",
        "relay",
        "microcontroller",
        "breadboard",
        "wattage",
        "transformer",
        "signal",
        "frequency",
        "antenna",
        "multimeter",
        "impedance",
        "rectifier",
        "led",
    ),
}
PAD = "<pad>"


def _background_words(n: int) -> tuple[str, ...]:
    """A fixed synthetic vocabulary of pronounceable non-words (the Zipf background).

    ``integers(len(letters))`` is the draw ``rng.choice(letters)`` makes, without converting the
    list to an array each time: the same words, a third of the time (every process that loads the
    families builds this vocabulary at import)."""
    draw = np.random.default_rng(20180116).integers
    onsets, vowels = "bdfgklmnprstvz", "aeiou"
    lexicon = {w for words in LEXICONS.values() for w in words}
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < n:
        syllables = int(draw(2, 4))
        word = "".join(onsets[draw(len(onsets))] + vowels[draw(len(vowels))] for _ in range(syllables))
        if word not in seen and word not in lexicon:
            seen.add(word)
            words.append(word)
    return tuple(words)


N_BACKGROUND = 1000
BACKGROUND_WORDS = _background_words(N_BACKGROUND)  # in Zipf rank order: the first is the most frequent
VOCABULARY_SEED = 20180117


def _vocabulary() -> tuple[str, ...]:
    """``<pad>`` (id 0, the baseline: a deleted token), then every background and lexicon word at a
    seeded random id.  Were ids assigned in order (background by frequency, then the lexicons), the
    planted words would have the largest ids and the input itself would rank them first."""
    words = BACKGROUND_WORDS + LEXICONS["sci.med"] + LEXICONS["sci.electronics"]
    order = np.random.default_rng(VOCABULARY_SEED).permutation(len(words))
    return (PAD,) + tuple(words[i] for i in order)


VOCABULARY = _vocabulary()
_INDEX = {w: i for i, w in enumerate(VOCABULARY)}
BACKGROUND_IDS = np.array([_INDEX[w] for w in BACKGROUND_WORDS])  # in Zipf rank order
TOPIC_OF = np.array(
    [0] + [1 if w in LEXICONS["sci.med"] else 2 if w in LEXICONS["sci.electronics"] else 0 for w in VOCABULARY[1:]]
)
# 0 = <pad> or background word, 1 = sci.med lexicon, 2 = sci.electronics lexicon


@dataclass(frozen=True)
class SyntheticDoc:
    id: str
    label: int
    tokens: tuple[str, ...]
    planted: np.ndarray  # bool per token: a word of the document's own topic lexicon
    weights: np.ndarray  # fraction of annotators who marked each token


def make_texts(
    n: int,
    *,
    seed: int,
    labels: Sequence[int] | None = None,
    n_annotators: int = 4,
    p_hit: float = 0.8,
    p_false: float = 0.02,
    zipf: float = 1.1,
) -> list[SyntheticDoc]:
    """``n`` seeded documents of 50-200 tokens for the two topics of :data:`TOPICS`.

    Background tokens follow a Zipf law (exponent ``zipf``) over 1,000 synthetic non-words; 3-8 words
    of the document's topic lexicon are planted at random positions, and with probability 0.3 one
    distractor word of the other topic.  Each of ``n_annotators`` (default 4: weights are multiples
    of 0.25, as in the public IMDB files) marks planted words with probability ``p_hit`` and any
    other token with probability ``p_false``.
    """
    rng = np.random.default_rng(seed)
    background = BACKGROUND_IDS
    p = 1.0 / np.arange(1, N_BACKGROUND + 1) ** zipf
    p /= p.sum()
    topics = rng.integers(2, size=n) if labels is None else np.asarray(labels)
    docs = []
    for i in range(n):
        length = int(rng.integers(50, 201))
        ids = rng.choice(background, size=length, p=p)
        m = int(rng.integers(3, 9))
        spots = rng.choice(length, size=m + 1, replace=False)
        own = np.flatnonzero(TOPIC_OF == 1 + topics[i])
        other = np.flatnonzero(TOPIC_OF == 2 - topics[i])
        ids[spots[:m]] = rng.choice(own, size=m)
        if rng.random() < 0.3:
            ids[spots[m]] = rng.choice(other)
        planted = TOPIC_OF[ids] == 1 + topics[i]
        marks = rng.random((n_annotators, length)) < np.where(planted, p_hit, p_false)
        docs.append(
            SyntheticDoc(
                f"{TOPICS[topics[i]]}-{seed}-{i}",
                int(topics[i]),
                tuple(VOCABULARY[t] for t in ids),
                planted,
                marks.mean(axis=0),
            )
        )
    return docs


def to_imdb_json(doc: SyntheticDoc) -> dict[str, list]:
    """The IMDB annotation format: 1-based token index -> [token, weight], marked tokens only."""
    return {str(i + 1): [doc.tokens[i], float(w)] for i, w in enumerate(doc.weights) if w > 0}


def to_newsgroups_json(doc: SyntheticDoc) -> dict[str, Any]:
    """The 20 Newsgroups annotation format: marked words with their largest weight."""
    words: dict[str, float] = {}
    for token, w in zip(doc.tokens, doc.weights):
        if w > 0:
            words[token] = max(words.get(token, 0.0), float(w))
    return {"article": doc.id, "words": [[w, v] for w, v in words.items()]}


def write_text_benchmark(root, docs: Sequence[SyntheticDoc]) -> Path:
    """Write ``docs`` in the public layout under ``root``: ``Text/20news_group/human_attention``,
    ``Text/IMDB/human_attention`` and ``Text/IMDB/org_reviews/<label>_val``, plus the article texts
    in a 20 Newsgroups-like ``newsgroups/<topic>/<id>`` tree (returned, for ``load_texts``)."""
    root = Path(root)
    for doc in docs:
        topic, text = TOPICS[doc.label], " ".join(doc.tokens)
        news, imdb = root / "Text" / "20news_group", root / "Text" / "IMDB"
        files = {
            news / "human_attention" / topic / f"{doc.id}.json": json.dumps(to_newsgroups_json(doc), indent=1),
            imdb / "human_attention" / topic / f"{doc.id}.json": json.dumps(to_imdb_json(doc)),
            imdb / "org_reviews" / f"{topic}_val" / f"{doc.id}.txt": text,
            root / "newsgroups" / topic / doc.id: text,
        }
        for path, content in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    return root / "newsgroups"


def encode(docs: Sequence[SyntheticDoc], length: int | None = None) -> np.ndarray:
    """Token ids (float, padded with 0 = ``<pad>``) of shape (n, length)."""
    length = length or max(len(d.tokens) for d in docs)
    index = _INDEX
    ids = np.zeros((len(docs), length))
    for row, doc in enumerate(docs):
        ids[row, : len(doc.tokens)] = [index[t] for t in doc.tokens]
    return ids


def counts(ids) -> np.ndarray:
    """Bag of words (n, len(VOCABULARY)) of token-id rows; ids are rounded and clipped into the
    vocabulary, and ``<pad>`` (id 0, the baseline) is not counted: it stands for a deleted token."""
    ids = np.clip(np.rint(np.asarray(ids, dtype=float)), 0, len(VOCABULARY) - 1).astype(np.int64)
    n = ids.shape[0]
    flat = (np.arange(n)[:, None] * len(VOCABULARY) + ids).ravel()
    out = np.bincount(flat, minlength=n * len(VOCABULARY)).reshape(n, len(VOCABULARY)).astype(float)
    out[:, 0] = 0.0
    return out


class LexiconOracle:
    """Counts topic-lexicon words: logits = beta * (#sci.med words, #sci.electronics words),
    output softmax.  Background words and pads have exactly zero effect."""

    def __init__(self, beta: float = 1.0):
        self.beta = float(beta)

    def predict(self, ids) -> np.ndarray:
        c = counts(ids)
        logits = self.beta * np.stack([c[:, TOPIC_OF == 1].sum(1), c[:, TOPIC_OF == 2].sum(1)], axis=1)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    __call__ = predict


def train_tfidf_lr(docs: Sequence[SyntheticDoc]):
    """sklearn ``TfidfTransformer`` + ``LogisticRegression`` fitted on the documents' bags of
    words; predict with ``model.predict_proba(counts(ids))``."""
    from scipy.sparse import csr_matrix
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(TfidfTransformer(), LogisticRegression(C=10.0, max_iter=1000))
    return model.fit(csr_matrix(counts(encode(docs))), [d.label for d in docs])
