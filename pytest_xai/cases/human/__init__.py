"""Human-grounded masks: Mohseni & Ragan, "A Human-Grounded Evaluation Benchmark for Local
Explanations of Machine Learning" (arXiv 1801.05075, v1 2018; v2 2020 with J. E. Block).

The family's anatomy (specification in ``docs/human.md``), one room per module:

- :mod:`.formats`: a **loader** for a copy of the public benchmark the user obtained themselves
  (:func:`load_images`, :func:`load_texts`) and the parsers of its two text annotation formats;
- :mod:`.shapes`: a seeded, offline **synthetic analogue** of the images, shapes on textured
  canvases with simulated annotators (:func:`make_shapes`) and a matched-filter oracle
  (:class:`ShapesOracle`);
- :mod:`.texts`: the synthetic texts, topic documents with planted lexicon words
  (:func:`make_texts`), a lexicon-counting oracle (:class:`LexiconOracle`) and TF-IDF + logistic
  regression (:func:`train_tfidf_lr`).  Text annotations are emitted in both public JSON formats
  and read back by the loader's parsers, so the loader and the metrics share one code path;
- :mod:`.agreement`: the **metrics** (vectorised over the batch: :func:`select`, :func:`rescale`,
  :func:`agreement`, :func:`mae`) and the checks ``human_precision``, ``human_recall`` and
  ``human_mae`` (marker ``xai_human``);
- :mod:`.removal`: the check ``irof`` (marker ``xai_irof``): superpixels removed in the order an
  explanation gives lower the class score as fast as removing the object first;
- :mod:`.draw`: the picture of a worst example;
- this module: the cases, registered here.

Conventions: h in [0, 1] is the human weight (JPEG masks rescaled from 0-255), s the binary object
mask, H = {p : h_p > tau_h}.  Undefined values are NaN with a reason and counted, never 0.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import numpy as np

from pytest_xai.case import Case
from pytest_xai.cases.human.agreement import (
    POLICIES,
    Agreement,
    agreement,
    constant_maps,
    human_mae,
    human_mask,
    human_precision,
    human_recall,
    mae,
    rescale,
    select,
)
from pytest_xai.cases.human.draw import draw_worst_image
from pytest_xai.cases.human.formats import (
    IMAGE_SUFFIXES,
    BenchmarkFormatError,
    ImageRecord,
    Loaded,
    Skipped,
    TextRecord,
    decode_weighted,
    load_images,
    load_texts,
    parse_imdb,
    parse_newsgroups,
)
from pytest_xai.cases.human.removal import irof
from pytest_xai.cases.human.shapes import (
    GATE,
    RADII,
    SHAPES,
    SHAPES_VERSION,
    SIZE,
    ShapesOracle,
    gate,
    make_shapes,
)
from pytest_xai.cases.human.texts import (
    BACKGROUND_IDS,
    LEXICONS,
    PAD,
    TOPICS,
    VOCABULARY,
    LexiconOracle,
    SyntheticDoc,
    counts,
    encode,
    make_texts,
    to_imdb_json,
    to_newsgroups_json,
    train_tfidf_lr,
    write_text_benchmark,
)
from pytest_xai.registry import Family

__all__ = [
    "BACKGROUND_IDS",
    "CASE_CHECKS",
    "GATE",
    "IMAGE_SUFFIXES",
    "LEXICONS",
    "PAD",
    "POLICIES",
    "RADII",
    "SHAPES",
    "SHAPES_VERSION",
    "SIZE",
    "SOURCE",
    "TOPICS",
    "VOCABULARY",
    "Agreement",
    "BenchmarkFormatError",
    "ImageRecord",
    "LexiconOracle",
    "Loaded",
    "ShapesOracle",
    "Skipped",
    "SyntheticDoc",
    "TextRecord",
    "agreement",
    "constant_maps",
    "counts",
    "decode_weighted",
    "draw_worst_image",
    "encode",
    "gate",
    "human_mae",
    "human_mask",
    "human_precision",
    "human_recall",
    "human_shapes_oracle",
    "human_text_lexicon",
    "human_text_tfidf",
    "irof",
    "load_images",
    "load_texts",
    "mae",
    "make_shapes",
    "make_texts",
    "parse_imdb",
    "parse_newsgroups",
    "rescale",
    "select",
    "to_imdb_json",
    "to_newsgroups_json",
    "train_tfidf_lr",
    "write_text_benchmark",
]

SOURCE = "Mohseni & Ragan 2018, arXiv 1801.05075 (v2 2020 with Block), human-attention benchmark"
FAMILY = Family("human", source=SOURCE, smoke=("human_precision", "human_shapes_oracle"), libraries=())
CASE_CHECKS: dict[str, dict[str, Any]] = {"human_precision": {}, "human_recall": {}, "human_mae": {}}


@FAMILY.case(
    category="fidelity",
    source="synthetic shapes analogue (docs/human.md)",
    checks={**CASE_CHECKS, "irof": {}},
    libraries=("torch",),
)
def human_shapes_oracle(info, *, seed, cache) -> Case:
    """Crosses on textured 32x32 canvases, matched-filter oracle; human masks from 10 simulated
    annotators (truth ``weighted_mask``) and the object (``segmentation``)."""
    n = 20

    def build() -> dict[str, np.ndarray]:
        data = make_shapes(n, seed=seed, shapes=("cross",))
        other = make_shapes(8, seed=seed + 1)
        canvases = np.where(other["segmentation"], 0.0, other["images"])  # texture only: the object removed
        return {
            "images": data["images"],
            "weighted": data["weighted"],
            "segmentation": data["segmentation"],
            "background": canvases,
        }

    data = cache.arrays(info.name, {"n": n, "seed": seed, "version": SHAPES_VERSION}, build)
    oracle = ShapesOracle()
    return Case(
        info=info,
        inputs=data["images"],
        predict=oracle.predict,
        model=oracle,
        target=oracle.predict(data["images"]).argmax(axis=1),  # each image's predicted class
        background=data["background"],
        baseline=np.zeros((SIZE, SIZE)),
        feature_names=[f"r{i}c{j}" for i in range(SIZE) for j in range(SIZE)],
        torch_model=oracle.torch_module() if importlib.util.find_spec("torch") else None,
        truth={"weighted_mask": data["weighted"], "segmentation": data["segmentation"]},
        meta={
            "ids": [f"cross-{seed}-{i}" for i in range(n)],
            "classes": SHAPES,
            "gate": GATE,
            # the oracle costs ~0.3 ms a row (16 FFT correlations): 1,000 evaluations an image, as
            # lime_image's default, keep a perturbation explainer's call within seconds
            "budget": 20_000,
            # feature groups (contract name ``groups``): 4x4 superpixels, 64 ids, row-major
            "groups": np.kron(np.arange(64).reshape(8, 8), np.ones((SIZE // 8, SIZE // 8), dtype=int)),
        },
        draw=draw_worst_image,
    )


def _text_case(info, model, predict, explained: list[SyntheticDoc]) -> Case:
    """Explained documents as token ids, with truths read back through the public JSON formats."""
    imdb, news = [], []
    for doc in explained:
        text = " ".join(doc.tokens)
        imdb.append(
            parse_imdb(
                json.loads(json.dumps(to_imdb_json(doc))), text, id=doc.id, label=TOPICS[doc.label], index_base=1
            )
        )
        news.append(parse_newsgroups(json.loads(json.dumps(to_newsgroups_json(doc))), text, label=TOPICS[doc.label]))
    ids = encode(explained)
    length = ids.shape[1]

    def padded(rows):
        out = np.zeros((len(rows), length))
        for i, row in enumerate(rows):
            out[i, : len(row)] = row
        return out

    valid = padded([np.ones(len(d.tokens)) for d in explained]).astype(bool)
    return Case(
        info=info,
        inputs=ids,
        predict=predict,
        model=model,
        target=np.asarray(predict(ids)).argmax(axis=1),
        background=np.zeros((1, length)),
        baseline=np.zeros(length),
        feature_names=[f"token{i}" for i in range(length)],
        truth={
            "weighted_mask": padded([r.weights for r in imdb]),
            "weighted_mask_words": padded([r.weights for r in news]),
            "segmentation": padded([d.planted for d in explained]).astype(bool),
            "valid": valid,
        },
        meta={
            "ids": [d.id for d in explained],
            "tokens": [d.tokens for d in explained],
            "vocabulary": VOCABULARY,
            "classes": TOPICS,
        },
    )


@FAMILY.case(
    category="fidelity",
    source="synthetic 20 Newsgroups analogue (docs/human.md), lexicon-counting oracle",
    checks=CASE_CHECKS,
)
def human_text_lexicon(info, *, seed, cache) -> Case:
    """sci.med documents (token ids, 0 = deleted) explained for a lexicon-counting oracle; truth
    from 4 simulated annotators round-tripped through the IMDB JSON format."""
    explained = make_texts(20, seed=seed, labels=[0] * 20)
    oracle = LexiconOracle()
    return _text_case(info, oracle, oracle.predict, explained)


@FAMILY.case(
    category="fidelity",
    source="synthetic 20 Newsgroups analogue (docs/human.md), TF-IDF + logistic regression",
    checks=CASE_CHECKS,
    libraries=("sklearn.feature_extraction.text", "sklearn.linear_model", "sklearn.pipeline"),
)
def human_text_tfidf(info, *, seed, cache) -> Case:
    """sci.med documents explained for TF-IDF + logistic regression trained on 400 synthetic
    documents (sklearn, ~0.1 s, so not cached); truth as in ``human_text_lexicon``."""
    model = train_tfidf_lr(make_texts(400, seed=seed + 1))
    explained = make_texts(20, seed=seed, labels=[0] * 20)

    def predict(ids):
        from scipy.sparse import csr_matrix

        return model.predict_proba(csr_matrix(counts(ids)))

    return _text_case(info, model, predict, explained)
