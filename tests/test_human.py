"""Human-grounded masks (Mohseni & Ragan 2018): loader, synthetic analogue, metrics, checks."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from pytest_xai import cases
from pytest_xai.cache import Cache
from pytest_xai.cases import human
from pytest_xai.cases.human import texts
from pytest_xai.checks import CHECKS

DATA = Path(__file__).parent / "data" / "human"
CASES = ("human_shapes_oracle", "human_text_lexicon", "human_text_tfidf")
HUMAN_CHECKS = ("human_precision", "human_recall", "human_mae")


def run_check(name, attributions, case, **overrides):
    params = {**CHECKS[name].thresholds, **case.info.checks[name], **overrides}
    return CHECKS[name].func(attributions, case, **params)


# ------------------------------------------------------------------------ explainers (controls)


def reference(case):
    """Attributes only inside the object / planted words (positive, varying with the input)."""
    return case.truth["segmentation"] * (1.0 + np.asarray(case.inputs) / np.max(case.inputs))


def random_noise(case, seed=0):
    return np.random.default_rng(seed).standard_normal(case.inputs.shape)


def inverted(case):
    """Attributes only the background (every valid feature outside the object)."""
    valid = case.truth.get("valid", np.ones(case.inputs.shape, dtype=bool))
    return (~case.truth["segmentation"] & valid).astype(float)


def occlusion(inputs, predict, baseline, target):
    """Output drop when one feature at a time is set to the baseline (row i for its class target[i])."""
    n, shape = inputs.shape[0], inputs.shape[1:]
    d = int(np.prod(shape))
    target = np.broadcast_to(target, (n,))
    base = predict(inputs)[np.arange(n), target]
    out = np.empty((n, d))
    for i in range(n):
        batch = np.repeat(inputs[i].reshape(1, d), d, axis=0)
        batch[np.arange(d), np.arange(d)] = np.broadcast_to(baseline, shape).reshape(d)
        out[i] = base[i] - predict(batch.reshape((d,) + shape))[:, target[i]]
    return out.reshape(inputs.shape)


@pytest.fixture(scope="module")
def built():
    return {name: cases.get(name, seed=0) for name in CASES}


# ------------------------------------------------------------------------------ loader: images


def _save(path: Path, array: np.ndarray, mode: str) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array, mode=mode).save(path, quality=95)  # JPEG noise < 0.05 at quality 95


def _image_copy(
    root: Path, originals: str, weighted: str, segmentation: str, h: np.ndarray, s: np.ndarray, ids=("cat4", "tree2")
) -> None:
    rng = np.random.default_rng(0)
    for key in ids:
        suffix = ".JPG" if key == "tree2" else ".jpg"  # the public copy has tree2.JPG
        _save(root / originals / f"{key}{suffix}", rng.integers(0, 256, (*h.shape, 3), dtype=np.uint8), "RGB")
        _save(root / weighted / f"{key}.jpg", np.rint(h * 255).astype(np.uint8), "L")
        _save(root / segmentation / f"{key}.png", (s * 255).astype(np.uint8), "L")
    _save(root / "human_attention_overlay" / "cat4.png", np.zeros((*h.shape, 3), np.uint8), "RGB")
    (root / "LIME_exp").mkdir()
    (root / "LIME_exp" / "cat4.jpg.jpg").write_bytes(b"not read")


@pytest.fixture(scope="module")
def masks():
    data = human.make_shapes(1, seed=3)
    return data["weighted"][0], data["segmentation"][0]


@pytest.mark.parametrize(
    "layout",
    [
        ("Image", "org_img", "human_attention_mask", "object_segmentation_mask"),
        ("Image/ImageNet", "original images", "human attention mask", "object segmentation mask"),
        ("Image/ImageNet", "original_images", "human_attention_mask", "object_segmentation_mask"),
    ],
    ids=["current", "old-spaces", "old-underscores"],
)
def test_load_images_reads_every_folder_spelling_and_ignores_unknown_folders(tmp_path, masks, layout):
    h, s = masks
    level, *folders = layout
    _image_copy(tmp_path / level, *folders, h, s)
    loaded = human.load_images(tmp_path)
    assert loaded.n_skipped == 0
    assert [r.id for r in loaded.records] == ["cat4", "tree2"]
    record = loaded.records[0]
    assert record.subject == "cat" and record.image.shape == (32, 32, 3) and record.image.dtype == np.uint8
    assert record.weighted.dtype == np.float32 and 0.0 <= record.weighted.min() <= record.weighted.max() <= 1.0
    assert 0 < np.abs(record.weighted - h).max() < 0.05  # JPEG is lossy ...
    assert np.array_equal(human.human_mask(record.weighted), human.human_mask(h))  # ... tau = 0.45 tolerates it
    assert record.segmentation.dtype == bool and np.array_equal(record.segmentation, s)


def test_load_images_refuses_to_resize_a_mask_of_another_size(tmp_path, masks):
    h, s = masks
    _image_copy(tmp_path / "Image", "org_img", "human_attention_mask", "object_segmentation_mask", h, s)
    _save(tmp_path / "Image" / "object_segmentation_mask" / "tree2.png", np.zeros((30, 31), np.uint8), "L")
    loaded = human.load_images(tmp_path)
    assert [r.id for r in loaded.records] == ["cat4"]
    (skipped,) = loaded.skipped
    assert "tree2.JPG is 32x32" in skipped.reason and "tree2.png is 30x31" in skipped.reason
    with pytest.raises(human.BenchmarkFormatError, match="tree2.png is 30x31"):
        human.load_images(tmp_path, strict=True)


def test_load_images_counts_unreadable_and_unmatched_files(tmp_path, masks):
    h, s = masks
    _image_copy(tmp_path, "org_img", "human_attention_mask", "object_segmentation_mask", h, s)
    (tmp_path / "human_attention_mask" / "cat4.jpg").write_bytes(b"\xff\xd8 truncated")
    _save(tmp_path / "human_attention_mask" / "zebra1.jpg", np.zeros((32, 32), np.uint8), "L")
    (tmp_path / "object_segmentation_mask" / "tree2.png").unlink()
    loaded = human.load_images(tmp_path)
    assert [r.id for r in loaded.records] == ["tree2"] and loaded.records[0].segmentation is None
    reasons = {p.path.name: p.reason for p in loaded.skipped}
    assert "has no original image" in reasons["zebra1.jpg"]
    assert "cat4.jpg: not a readable image" in reasons["cat4.jpg"]
    with pytest.raises(human.BenchmarkFormatError, match="zebra1.jpg"):
        human.load_images(tmp_path, strict=True)


def test_load_images_without_a_benchmark_says_what_it_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match="org_img"):
        human.load_images(tmp_path)


# ------------------------------------------------------------------------------- loader: texts


def test_load_texts_reads_the_fixture_files_and_counts_the_malformed_one():
    loaded = human.load_texts(DATA, newsgroups=DATA / "newsgroups")
    by_id = {r.id: r for r in loaded.records}
    assert sorted(by_id) == ["1001", "7"]  # lime_explanations/ is ignored
    news = by_id["1001"]
    assert news.source == "20news" and news.label == "sci.med"
    weight = dict(zip(news.tokens, news.weights))
    # a word's weight applies to every occurrence, case-insensitively, punctuation ignored
    assert weight["Doctor"] == weight["doctor"] == weight["Doctor,"] == 1.0
    assert weight["fever"] == weight["fever."] == 0.5 and weight["forum,"] == 0.0
    assert news.problems == ("word 'stethoscope' does not occur in the article",)
    imdb = by_id["7"]
    assert imdb.source == "imdb" and imdb.label == "pos"
    assert dict(zip(imdb.tokens, imdb.weights)) == pytest.approx(
        {"This": 0, "film": 0.5, "is": 0, "simply": 0, "wonderful,": 1.0, "and": 0, "the": 0, "cast": 0, "superb.": 0}
    )
    assert imdb.problems == (
        "key 9: stored token 'great' but the review has 'is'",
        "key 40: index past the end of the review (10 tokens)",
    )
    (skipped,) = loaded.skipped
    assert skipped.path.name == "8.json" and "invalid JSON at line 2 column 15" in skipped.reason


def test_load_texts_strict_raises_with_file_and_line():
    with pytest.raises(human.BenchmarkFormatError, match=r"neg[/\\]8\.json: invalid JSON at line 2"):
        human.load_texts(DATA, newsgroups=DATA / "newsgroups", strict=True)


def test_load_texts_skips_newsgroups_annotations_without_the_users_articles():
    loaded = human.load_texts(DATA)
    assert [r.id for r in loaded.records] == ["7"]
    reasons = {s.path.name: s.reason for s in loaded.skipped}
    assert "pass newsgroups=" in reasons["1001.json"] and "8.json" in reasons


@pytest.mark.parametrize(
    "obj, message",
    [
        ({"x1": ["a", 1.0]}, "key 'x1' is not a token index"),
        ({"1": ["a"]}, r"key '1': \['a'\] is not a \[token, weight\] pair"),
        ({"1": ["a", 2.0]}, r"key '1': weight 2.0 is not a number in \[0, 1\]"),
        ([["a", 1.0]], "expected an object keyed by token index"),
    ],
)
def test_parse_imdb_names_the_bad_key(obj, message):
    with pytest.raises(human.BenchmarkFormatError, match=message):
        human.parse_imdb(obj, "a b c", id="1", label="pos", where="f.json")


def test_parse_newsgroups_names_the_bad_entry():
    with pytest.raises(human.BenchmarkFormatError, match=r"words\[1\] = 'b' is not a \[word, weight\] pair"):
        human.parse_newsgroups({"article": "1", "words": [["a", 1.0], "b"]}, "a b", label="sci.med")
    with pytest.raises(human.BenchmarkFormatError, match="keys 'article' and 'words'"):
        human.parse_newsgroups({"words": []}, "a b", label="sci.med")


def test_parse_imdb_index_base_auto_detects_zero_based_files():
    record = human.parse_imdb({"0": ["a", 1.0], "1": ["b", 0.5]}, "a b c", id="1", label="pos")
    assert record.weights.tolist() == [1.0, 0.5, 0.0] and record.problems == ()


def test_synthetic_texts_round_trip_through_both_public_formats_on_disk(tmp_path):
    docs = human.make_texts(6, seed=5)
    newsgroups = human.write_text_benchmark(tmp_path, docs)
    loaded = human.load_texts(tmp_path, newsgroups=newsgroups, strict=True)
    records = {(r.source, r.id): r for r in loaded.records}
    assert len(records) == 12
    for doc in docs:
        imdb = records["imdb", doc.id]
        assert imdb.tokens == doc.tokens and imdb.problems == ()
        assert np.array_equal(imdb.weights, doc.weights)  # position-exact
        news = records["20news", doc.id]
        assert news.label == human.TOPICS[doc.label]
        # word-level: every occurrence of a marked word gets the word's largest weight
        for token, w in zip(news.tokens, news.weights):
            assert w == max(v for t, v in zip(doc.tokens, doc.weights) if t == token)


# ------------------------------------------------------------------------- synthetic: images


def test_make_shapes_is_seeded_and_weights_are_annotator_fractions():
    a = human.make_shapes(12, seed=1)
    b = human.make_shapes(12, seed=1)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["images"], human.make_shapes(12, seed=2)["images"])
    assert np.array_equal(a["weighted"], a["annotators"].mean(axis=1))
    assert np.allclose(a["weighted"] * 10, np.rint(a["weighted"] * 10))
    s, x = a["segmentation"], a["images"]
    assert human.gate(x[s]).all() and not human.gate(x[~s]).any()  # the oracle's band separates them
    assert 0.6 < (a["weighted"][s] > 0.45).mean() and (a["weighted"][~s] > 0.45).mean() < 0.05
    clipped = human.make_shapes(12, seed=1, clip_to_object=True)["weighted"]
    assert (clipped[~s] == 0).all() and np.array_equal(clipped[s], a["weighted"][s])
    jpeg = human.make_shapes(12, seed=1, jpeg_quality=75)["weighted"]
    assert 0 < np.abs(jpeg - a["weighted"]).max() < 0.25


def test_shapes_oracle_classifies_every_shape():
    data = human.make_shapes(120, seed=11)
    predicted = human.ShapesOracle().predict(data["images"]).argmax(axis=1)
    assert (predicted == data["labels"]).mean() == 1.0


def test_shapes_oracle_background_pixels_have_exactly_zero_effect():
    import torch

    torch.set_num_threads(1)
    data = human.make_shapes(16, seed=4)
    x, s = data["images"], data["segmentation"]
    oracle = human.ShapesOracle()
    out = oracle.predict(x)
    rng = np.random.default_rng(0)
    for replacement in (
        np.zeros_like(x),
        rng.uniform(0.0, human.GATE[0], x.shape),
        rng.uniform(human.GATE[1], 1.0, x.shape),
        x[::-1],
    ):
        changed = np.where(s, x, np.where(human.gate(replacement), 0.0, replacement))
        assert np.array_equal(oracle.predict(changed), out)
    # changing an object pixel does change the output, so the equality above is not vacuous
    poked = x.copy()
    poked[s] *= 0.9
    assert not np.allclose(oracle.predict(poked), out)
    net = oracle.torch_module()
    xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    probs = net(xt)
    assert np.allclose(probs.detach().numpy(), out, atol=1e-5)
    probs[np.arange(len(x)), data["labels"]].sum().backward()
    grad = xt.grad.numpy()
    assert (grad[~s] == 0).all() and (grad[s] != 0).any()


# -------------------------------------------------------------------------- synthetic: texts


def test_make_texts_plants_topic_words_and_simulates_annotators():
    docs = human.make_texts(40, seed=2)
    assert docs[0].tokens == human.make_texts(40, seed=2)[0].tokens
    for doc in docs:
        assert 50 <= len(doc.tokens) <= 200 and 3 <= doc.planted.sum() <= 8
        lexicon = set(human.LEXICONS[human.TOPICS[doc.label]])
        assert all((t in lexicon) == p for t, p in zip(doc.tokens, doc.planted))
        assert np.allclose(doc.weights * 4, np.rint(doc.weights * 4))
    planted = np.concatenate([d.planted for d in docs])
    weights = np.concatenate([d.weights for d in docs])
    assert weights[planted].mean() == pytest.approx(0.8, abs=0.08)
    assert weights[~planted].mean() == pytest.approx(0.02, abs=0.01)


def test_lexicon_oracle_background_tokens_have_exactly_zero_effect():
    docs = human.make_texts(10, seed=3)
    ids = human.encode(docs)
    oracle = human.LexiconOracle()
    topical = np.isin(np.rint(ids), np.flatnonzero(texts.TOPIC_OF > 0))
    rng = np.random.default_rng(0)
    for replacement in (np.zeros_like(ids), rng.choice(human.BACKGROUND_IDS, ids.shape)):
        assert np.array_equal(oracle.predict(np.where(topical, ids, replacement)), oracle.predict(ids))
    assert (oracle.predict(ids).argmax(1) == [d.label for d in docs]).all()


def test_tfidf_model_generalises():
    from scipy.sparse import csr_matrix

    model = human.train_tfidf_lr(human.make_texts(400, seed=1))
    held_out = human.make_texts(200, seed=7)
    predicted = model.predict_proba(csr_matrix(human.counts(human.encode(held_out)))).argmax(axis=1)
    assert (predicted == [d.label for d in held_out]).mean() >= 0.97


# ---------------------------------------------------------------------------------- metrics


def test_select_top_fraction_breaks_ties_at_random_and_never_selects_zeros():
    a = np.array([[3.0, -3.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]])
    chosen = human.select(a, top=0.25)
    assert chosen[0].sum() == 1 and chosen[0, :2].any()  # one of the tied 3 and -3, not both
    assert chosen[1:].tolist() == [[False] * 4, [False, False, False, True]]
    assert human.select(a, top=0.25, policy="positive")[0].tolist() == [True, False, False, False]
    assert np.array_equal(human.select(a, top=0.25), chosen)  # seeded
    tied = human.select(np.ones((200, 40)), top=0.25)
    assert (tied.sum(axis=1) == 10).all() and 0.1 < tied.mean(axis=0).min()  # k of them, any position
    valid = np.array([[True] * 4, [True] * 4, [True, True, False, False]])
    assert human.select(a, top=0.5, valid=valid)[2].tolist() == [False, True, False, False]
    assert human.select(a, threshold=0.5)[2].tolist() == [False, False, True, True]  # â = 0, 1/3, 2/3, 1


def test_select_requires_exactly_one_valid_rule():
    a = np.ones((1, 4))
    for kwargs in ({}, {"top": 0.1, "threshold": 0.5}, {"top": 0.0}, {"threshold": 0.0}):
        with pytest.raises(ValueError):
            human.select(a, **kwargs)
    with pytest.raises(ValueError, match="policy must be one of"):
        human.select(a, top=0.5, policy="square")


def test_rescale_is_minmax_of_abs_and_zero_for_a_constant():
    a = np.array([[-4.0, 2.0, 0.0, 1.0], [5.0, 5.0, 5.0, 5.0]])
    assert human.rescale(a).tolist() == [[1.0, 0.5, 0.0, 0.25], [0.0] * 4]
    assert human.rescale(a, policy="positive")[0].tolist() == [0.0, 1.0, 0.0, 0.5]


def test_agreement_micro_and_macro_by_hand():
    E = np.array([[1, 1, 0, 0], [1, 0, 0, 0]], dtype=bool)
    H = np.array([[1, 0, 1, 1], [1, 1, 0, 0]], dtype=float)
    result = human.agreement(E, H)
    assert result.precision.tolist() == [0.5, 1.0] and result.recall.tolist() == [1 / 3, 0.5]
    assert result.precision_micro == pytest.approx(2 / 3) and result.recall_micro == pytest.approx(2 / 5)
    assert result.precision_macro == pytest.approx(0.75) and result.recall_macro == pytest.approx(5 / 12)
    assert result.f1_micro == pytest.approx(2 * (2 / 3) * 0.4 / (2 / 3 + 0.4))
    assert result.base_rate == pytest.approx(5 / 8)
    weighted = human.agreement(E, H * 0.5)  # weighted variant: mean human weight of E, mass covered
    assert weighted.precision.tolist() == [0.25, 0.5] and weighted.recall.tolist() == [1 / 3, 0.5]


def test_agreement_empty_selection_scores_zero_and_empty_mask_is_nan_excluded_and_counted():
    E = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=bool)
    H = np.array([[1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=float)
    result = human.agreement(E, H)
    # XB-12: selecting nothing where humans looked is precision 0, not a sample left out
    assert result.precision[0] == 0.0 and math.isnan(result.recall[1])
    assert math.isnan(result.precision[3]) and math.isnan(result.recall[3])  # nothing to look at, nothing chosen
    assert result.n_empty_selection == 2 and result.n_empty_mask == 2
    assert result.precision_macro == pytest.approx(1 / 3) and result.recall_macro == pytest.approx(0.5)
    assert result.precision_micro == pytest.approx(1 / 3)  # the empty row is charged the mean selection size
    nothing = human.agreement(np.zeros((2, 3), bool), H[:2])
    assert nothing.precision_micro == 0.0 and nothing.precision_macro == 0.0
    assert nothing.f1_micro == 0.0
    empty = human.agreement(np.zeros((2, 3), bool), np.zeros((2, 3)))
    assert math.isnan(empty.precision_micro) and math.isnan(empty.f1_micro)


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"selection has shape \(2, 3\) but mask has shape \(2, 4\)"):
        human.agreement(np.zeros((2, 3), bool), np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"attributions has shape \(1, 5\) but weighted mask has shape \(1, 4\)"):
        human.mae(np.zeros((1, 5)), np.zeros((1, 4)))


def test_mae_by_hand_and_over_valid_features_only():
    a = np.array([[2.0, 1.0, 0.0, 9.0]])
    h = np.array([[1.0, 1.0, 0.0, 0.0]])
    valid = np.array([[True, True, True, False]])
    assert human.mae(a, h, valid=valid).tolist() == [pytest.approx(0.5 / 3)]  # â = 1, .5, 0


# ----------------------------------------------------------------------------- checks, cases


def test_cases_are_registered_in_the_human_family():
    for name in CASES:
        info = cases.info(name)
        assert (info.family, info.category) == ("human", "fidelity")
        assert set(info.checks) == set(HUMAN_CHECKS) | ({"irof"} if "groups" in cases.get(name).meta else set())
    assert all(CHECKS[c].marker == "xai_human" for c in HUMAN_CHECKS)


@pytest.mark.parametrize("name", CASES)
def test_case_contents(built, name):
    case = built[name]
    n = case.inputs.shape[0]
    assert case.truth["weighted_mask"].shape == case.truth["segmentation"].shape == case.inputs.shape
    assert len(case.feature_names) == int(np.prod(case.inputs.shape[1:])) and len(case.meta["ids"]) == n
    probabilities = case.predict(case.inputs)
    assert probabilities.shape == (n, 2 if "text" in name else 4)
    assert (probabilities.argmax(axis=1) == case.target).all()


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("check", HUMAN_CHECKS)
def test_check_passes_the_reference_and_fails_random_and_inverted(built, name, check):
    case = built[name]
    good = run_check(check, reference(case), case)
    assert good.passed, good.detail
    for bad in (random_noise(case), inverted(case)):
        score = run_check(check, bad, case)
        assert not score.passed, score.detail
        assert 0.0 <= score.value < good.value


@pytest.mark.parametrize("check", ["human_precision", "human_recall"])
def test_random_explainer_scores_near_the_floor(built, check):
    case = built["human_shapes_oracle"]
    score = run_check(check, random_noise(case, seed=1), case)
    floor = float(score.detail.split("random explainer scores about ")[1].split(";")[0])
    assert score.value == pytest.approx(floor, abs=0.05)


def test_captum_saliency_on_the_shapes_oracle_passes(built):
    import torch
    from captum.attr import Saliency

    torch.set_num_threads(1)
    case = built["human_shapes_oracle"]
    x = torch.tensor(case.inputs, dtype=torch.float32, requires_grad=True)
    attributions = Saliency(case.torch_model).attribute(x, target=torch.as_tensor(case.target), abs=False).numpy()
    assert (attributions[~case.truth["segmentation"]] == 0).all()
    for check in HUMAN_CHECKS:
        score = run_check(check, attributions, case)
        assert score.passed, score.detail


def test_occlusion_on_the_lexicon_oracle_passes(built):
    case = built["human_text_lexicon"]
    attributions = occlusion(case.inputs, case.predict, case.baseline, case.target)
    assert (attributions[~case.truth["segmentation"] & (attributions != 0)]).size <= 20  # distractors only
    for check in HUMAN_CHECKS:
        score = run_check(check, attributions, case)
        assert score.passed, score.detail


def test_an_explanation_that_selects_nothing_fails_with_a_reason(built):
    case = built["human_shapes_oracle"]
    zeros = np.zeros(case.inputs.shape)
    precision = run_check("human_precision", zeros, case)
    assert not precision.passed and precision.value == 0.0
    assert "explains nothing: its |a| map is zero over the features of all 20 samples" in precision.detail
    mae = run_check("human_mae", zeros, case)
    assert not mae.passed and "1.00 x" in mae.detail


def test_check_parameters_are_explicit_and_reported(built):
    case = built["human_text_tfidf"]
    score = run_check(
        "human_precision",
        reference(case),
        case,
        selection_threshold=0.5,
        aggregate="macro",
        mask="segmentation",
        policy="positive",
    )
    assert score.passed and score.value == 1.0
    assert score.params["selection"] == "â >= 0.5" and score.params["aggregate"] == "macro"
    assert "macro precision 1.000" in score.detail and "a+" in score.detail
    worst = run_check("human_recall", random_noise(case), case).worst
    assert worst["id"].startswith("sci.med-") and set("".join(worst["overlay"])) <= set("#Eh. ")
    with pytest.raises(ValueError, match=r"attributions has shape \(20, 3\) but truth\['weighted_mask'\]"):
        run_check("human_mae", np.zeros((20, 3)), case)


@pytest.mark.parametrize("name", CASES)
def test_a_constant_map_scores_what_random_does_not_everything(built, name):
    """Ties at the cut used to select every feature: a constant map had recall 1.0 on all three cases."""
    case = built[name]
    valid = case.truth.get("valid", np.ones(case.inputs.shape, dtype=bool))
    for constant in (
        np.ones(case.inputs.shape),
        np.repeat(case.predict(case.inputs)[:, :1], case.inputs[0].size, axis=1).reshape(case.inputs.shape),
    ):
        for check in HUMAN_CHECKS:
            score = run_check(check, constant, case)
            assert not score.passed, (check, score.detail)
        assert "explains nothing" in run_check("human_recall", constant, case).detail
    # one varying feature per sample: the tie among the rest is broken at random, recall near top
    nearly = np.where(valid, 1.0, 0.0)
    nearly[(slice(None),) + (0,) * (case.inputs.ndim - 1)] = 2.0
    recall = run_check("human_recall", nearly, case)
    assert recall.value == pytest.approx(0.25, abs=0.12), recall.detail


@pytest.mark.parametrize("name", CASES)
def test_the_truth_cannot_be_read_off_the_input(built, name):
    """Token ids used to put the lexicon last (the input itself had precision 0.72, recall 0.97) and
    the objects were the brightest pixels (precision 0.88); only the model finds the truth now."""
    case = built[name]
    x = np.asarray(case.inputs, dtype=float)
    for bad in (x, x - np.asarray(case.background).mean(axis=0)):
        for check in HUMAN_CHECKS:
            score = run_check(check, bad, case)
            assert not score.passed, (check, score.detail)
    if "text" in name:
        lexicon = np.flatnonzero(texts.TOPIC_OF > 0)
        assert lexicon.mean() < 0.8 * len(human.VOCABULARY)  # spread over the ids, not at the end
        assert human.counts(x)[:, human.BACKGROUND_IDS].sum() > 0
    else:
        s = case.truth["segmentation"]
        assert (x[~s].reshape(len(x), -1).max(axis=1) > x[s].max()).all()  # background brighter somewhere
        assert np.array_equal(case.predict(np.where(s, x, 0.0)), case.predict(x))  # and without effect


def test_word_level_truth_from_the_newsgroups_format_is_available(built):
    case = built["human_text_lexicon"]
    words, positions = case.truth["weighted_mask_words"], case.truth["weighted_mask"]
    assert (words >= positions).all() and (words > positions).any()  # a word's weight spreads to repeats
    score = run_check("human_precision", reference(case), case, mask="weighted_mask_words")
    assert score.passed, score.detail


def test_cases_are_deterministic_and_the_shapes_cache_round_trips(tmp_path):
    info = cases.info("human_shapes_oracle")
    direct = info.build(info, seed=5, cache=Cache(None))
    cached = info.build(info, seed=5, cache=Cache(tmp_path))
    again = info.build(info, seed=5, cache=Cache(tmp_path))
    assert list(tmp_path.glob("human_shapes_oracle-*.npz"))
    for case in (cached, again):
        assert np.array_equal(case.inputs, direct.inputs)
        assert np.array_equal(case.truth["weighted_mask"], direct.truth["weighted_mask"])
        assert case.truth["segmentation"].dtype == bool
    text = cases.info("human_text_tfidf")
    first, second = (text.build(text, seed=2, cache=Cache(None)) for _ in range(2))
    assert np.array_equal(first.predict(first.inputs), second.predict(second.inputs))


def test_fixture_files_are_valid_except_the_deliberately_broken_one():
    for path in DATA.rglob("*.json"):
        if path.name == "8.json":
            with pytest.raises(json.JSONDecodeError):
                json.loads(path.read_text())
        else:
            json.loads(path.read_text())


def test_loader_accepts_a_copy_rooted_at_the_text_folder(tmp_path):
    shutil.copytree(DATA / "Text", tmp_path / "Text")
    direct = human.load_texts(tmp_path / "Text")
    assert [r.id for r in direct.records] == ["7"]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("check", HUMAN_CHECKS)
def test_every_zoo_member_applied_to_the_human_mask_fails_unless_declared(built, name, check):
    """The degenerate-explainer zoo on the case's own truth: only the declared members pass."""
    from pytest_xai.explainers import degenerate

    case = built[name]
    truth = case.truth["weighted_mask"]
    output = case.outputs()  # each row's target-class probability
    assert run_check(check, truth, case).passed
    for member in degenerate.MEMBERS:
        attributions = degenerate.apply(member, truth, case.inputs, output, case.background, seed=0)
        score = run_check(check, attributions, case)
        declared = CHECKS[check].exemption(member, name)
        assert score.passed == (declared is not None), (member, declared, score.detail)


def test_irof_passes_the_masks_and_occlusion_over_superpixels_and_fails_the_input():
    """IROF over the case's 4x4 superpixels (seed 0): the human mask trails the object's mask by
    0.001, occlusion of each superpixel beats it (0.970 against 0.962); the input itself trails by
    0.29, centred on the background mean by 0.24, another image's mask by 0.30."""
    from pytest_xai.explainers import degenerate
    from pytest_xai.explainers.baselines import feature_occlusion
    from pytest_xai.metrics import outputs

    case = cases.get("human_shapes_oracle")
    check = CHECKS["irof"]
    assert "irof" in case.info.checks and check.marker == "xai_irof"
    occlusion = feature_occlusion(case.inputs, case.predict, case.baseline, case.target, case.meta["groups"])
    for good in (case.truth["weighted_mask"], occlusion):
        score = check.func(good, case, **check.thresholds)
        assert score.passed, score.detail
    output = outputs(case.predict, case.inputs, case.target)
    for member in ("input_itself", "input_minus_mean", "shuffled_rows"):
        wrong = degenerate.apply(member, case.truth["segmentation"], case.inputs, output, case.background)
        score = check.func(wrong, case, **check.thresholds)
        assert not score.passed and "more than 0.05" in score.detail, (member, score.detail)
