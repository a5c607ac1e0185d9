"""Real Hugging Face models as a user's case (issue 40): a randomly initialised BERT classifier and a
GPT-2 causal LM from tiny configs (seeded, nothing downloaded), through ``make_case``, the shipped
adapter (examples/hf_layer_integrated_gradients.py) and captum's occlusion; the checks without
meaning on token ids skip with the reason (docs/hf.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pytest import LineMatcher

import pytest_xai
from pytest_xai.checks import CHECKS
from pytest_xai.engine import contract

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "hf_layer_integrated_gradients.py"
QUIET = ("-p", "no:randomly", "-p", "no:cacheprovider", "--strict-markers")
pytestmark = pytest.mark.filterwarnings("ignore:Setting forward, backward hooks:UserWarning")

MODELS = '''
import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel


def bert(seed=0):
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, num_labels=2)
    return BertForSequenceClassification(config)


def gpt2(seed=0, **config):
    torch.manual_seed(seed)
    config = {"vocab_size": 32, "n_positions": 32, "n_embd": 32, "n_layer": 2, "n_head": 2, **config}
    return GPT2LMHeadModel(GPT2Config(**config))


def right_padded(seed, vocab, lengths, width=8):
    """Rows of word ids 1..vocab-1, padded with 0 after their last word (a classifier's batch)."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lengths), width), dtype=np.int64)
    for i, n in enumerate(lengths):
        ids[i, :n] = rng.integers(1, vocab, n)
    return ids


def left_padded(seed, vocab, lengths, width=8):
    """The same padded before the first word (a causal LM's batch: the last position is a word)."""
    return right_padded(seed, vocab, lengths, width)[:, ::-1].copy()
'''

CHECKED = ["faithfulness", "infidelity", "determinism", "batch_invariance", "max_sensitivity"]
CONFTEST = f'''
import pytest_xai
from models import bert, gpt2, left_padded, right_padded

CHECKED = {CHECKED!r}


@pytest_xai.register_case(family="hf", checks=CHECKED)
def tiny_bert(seed):
    """A randomly initialised BERT classifier (2 labels)."""
    return pytest_xai.make_case(right_padded(seed, 50, [8, 6, 5, 7, 4, 8]), model=bert(seed), pad_token_id=0)


@pytest_xai.register_case(family="hf", checks=CHECKED)
def tiny_gpt2(seed):
    """A randomly initialised GPT-2: the next token after each row (its config has no padding id)."""
    return pytest_xai.make_case(left_padded(seed, 32, [8, 6, 5, 7, 4, 8]), model=gpt2(seed), pad_token_id=0)
'''


@pytest.fixture
def models(monkeypatch, tmp_path):
    """The module above, importable: ``bert()``, ``gpt2()``, ``right_padded()``, ``left_padded()``."""
    pytest.importorskip("transformers")
    (tmp_path / "models.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import models

    return models


def explained(spec, case):
    return contract.run(contract.load(spec), case, seed=0).attributions


# ------------------------------------------------------------------------------------ make_case


def test_a_bert_classifier_gets_its_ids_as_integers_and_its_model_output_read(models):
    """Before: every call cast the ids to float and failed in torch ("Expected tensor for argument #1
    'indices' to have one of the following scalar types: Long"); the logits of its
    SequenceClassifierOutput are read, with the attention mask of the padding."""
    import torch

    bert, ids = models.bert(), models.right_padded(0, 50, [8, 6, 5, 4])
    case = pytest_xai.make_case(ids, model=bert, pad_token_id=0)
    with torch.no_grad():
        t = torch.as_tensor(ids)
        logits = bert(t, attention_mask=(t != 0).long()).logits
    np.testing.assert_allclose(case.predict(ids), logits.softmax(-1).double().numpy(), rtol=1e-6)
    np.testing.assert_allclose(case.predict(ids.astype(float)), case.predict(ids))  # the contract's float ids
    assert case.meta["output"] == "probabilities" and case.meta["pad_token_id"] == 0 and case.target == 1
    assert np.array_equal(case.background, np.zeros((1, 8))) and np.array_equal(case.baseline, np.zeros(8))
    assert not bert.training  # dropout off: the same ids, the same output

    logits_case = pytest_xai.make_case(ids, model=bert, output="logits")  # BertConfig's pad_token_id is 0
    np.testing.assert_allclose(logits_case.predict(ids), logits.double().numpy(), rtol=1e-6)
    assert logits_case.meta["output"] == "logits" and logits_case.meta["pad_token_id"] == 0


def test_a_causal_lm_explains_the_next_token_at_the_last_position(models):
    import torch

    gpt2, ids = models.gpt2(), models.left_padded(0, 32, [8, 6, 5])
    case = pytest_xai.make_case(ids, model=gpt2, pad_token_id=0)
    with torch.no_grad():
        t = torch.as_tensor(ids)
        last = gpt2(t, attention_mask=(t != 0).long()).logits[:, -1]
    np.testing.assert_allclose(case.predict(ids), last.softmax(-1).double().numpy(), rtol=1e-5, atol=1e-7)
    assert np.array_equal(case.target, last.argmax(-1).numpy())  # by default, the token it predicts
    assert case.meta["output"] == "probabilities" and case.meta["pad_token_id"] == 0


def test_token_ids_without_a_padding_id_ask_for_pad_token_id(models):
    """GPT-2's config has no pad_token_id: the attention mask and the baseline need one."""
    with pytest.raises(ValueError, match=r"pad_token_id="):
        pytest_xai.make_case(models.left_padded(0, 32, [8, 6]), model=models.gpt2())


def test_make_case_refuses_an_unknown_output_and_ids_outside_the_vocabulary(models):
    ids = models.right_padded(0, 50, [8, 6])
    with pytest.raises(ValueError, match="output must be"):
        pytest_xai.make_case(ids, model=models.bert(), output="softmax")
    with pytest.raises(ValueError, match="vocabulary"):
        pytest_xai.make_case(ids + 50, model=models.bert())


# ------------------------------------------------------------------------------ the shipped adapter


def test_the_shipped_adapter_explains_what_the_case_explains(models):
    """Before: examples/hf_layer_integrated_gradients.py raised AttributeError: 'SequenceClassifierOutput'
    object has no attribute 'shape'.  Now its per-token values sum to f(x) - f(padding) under the
    input's attention mask (Integrated Gradients' completeness), on the case's output: probabilities or
    logits, and for a causal LM the next token at the last position."""
    import torch

    bert, ids = models.bert(), models.right_padded(0, 50, [8, 6, 5])
    gpt2, gpt2_ids = models.gpt2(), models.left_padded(0, 32, [8, 6, 5])
    for model, rows in ((bert, ids), (gpt2, gpt2_ids)):
        for output in ("probabilities", "logits"):
            case = pytest_xai.make_case(rows, model=model, pad_token_id=0, output=output, target=1)
            attributions = explained(f"{EXAMPLE}:explain", case)
            assert attributions.shape == rows.shape
            t = torch.as_tensor(rows)
            mask = (t != 0).long()
            with torch.no_grad():
                out = model(t, attention_mask=mask).logits
                empty = model(torch.zeros_like(t), attention_mask=mask).logits
            out, empty = (o[:, -1] if o.ndim == 3 else o for o in (out, empty))
            if output == "probabilities":
                out, empty = out.softmax(-1), empty.softmax(-1)
            gap = (out - empty)[:, 1].double().numpy()
            np.testing.assert_allclose(attributions.sum(axis=1), gap, atol=0.02 * np.abs(gap).max())


def test_occlusion_and_the_adapter_run_on_a_bert_and_a_gpt2_without_an_error(models):
    """The reference occlusion (captum) gives the same numbers as occluding through predict."""
    from pytest_xai.explainers.baselines import feature_occlusion

    for model, rows in (
        (models.bert(), models.right_padded(0, 50, [8, 6, 5])),
        (models.gpt2(), models.left_padded(0, 32, [8, 6, 5])),
    ):
        case = pytest_xai.make_case(rows, model=model, pad_token_id=0, target=1)
        mine = explained("pytest_xai.explainers:occlusion", case)
        by_predict = feature_occlusion(
            np.asarray(case.inputs, dtype=float), case.predict, baseline=case.baseline, target=1
        )
        np.testing.assert_allclose(mine, by_predict, atol=1e-5)


# --------------------------------------------------------------------------- checks on token ids


def test_max_sensitivity_skips_a_token_case_with_the_reason(models):
    """Before: it nudged the ids by 0.1 standard deviations of the all-padding background, which
    rounds back to the same tokens, and scored a meaningless 0.000 or 1.000."""
    case = pytest_xai.make_case(models.right_padded(0, 50, [8, 6]), model=models.bert(), pad_token_id=0)
    info = CHECKS["max_sensitivity"]
    with pytest.raises(pytest_xai.NotApplicable, match="token ids"):
        info.func(np.ones(case.inputs.shape), case, reexplain=None, **info.thresholds)


def test_a_case_that_needs_transformers_without_it_skips_with_the_llm_install_line():
    from pytest_xai import extras

    missing = ModuleNotFoundError("No module named 'transformers'", name="transformers")
    assert extras.skip_reason("case tiny_bert", missing) == (
        'case tiny_bert needs transformers, which is not installed: pip install "pytest-xai[llm]"'
    )


@pytest.fixture(scope="module")
def both_cases(tmp_path_factory) -> tuple[str, list[dict]]:
    """One run of the adapter and occlusion on tiny_bert and tiny_gpt2, in a subprocess as
    ``pytester.runpytest_subprocess`` runs it: its output and its JSON report's rows."""
    pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("hf")
    (root / "conftest.py").write_text(CONFTEST)
    (root / "models.py").write_text(MODELS)
    explainers = (f"--xai-explainer={EXAMPLE}:explain", "--xai-explainer=pytest_xai.explainers:occlusion")
    command = [
        sys.executable,
        "-m",
        "pytest",
        *QUIET,
        "-rs",
        "--xai-report=r.json",
        ".",
        "-k",
        "tiny_bert or tiny_gpt2",
        *explainers,
    ]
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, "HOME": str(root)}
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    return done.stdout, json.loads((root / "r.json").read_text())["results"]


@pytest.mark.parametrize("case", ["tiny_bert", "tiny_gpt2"])
def test_registered_hf_models_get_verdicts_from_the_adapter_and_occlusion(both_cases, case):
    stdout, results = both_cases
    rows = [r for r in results if r["case"] == case]
    assert len(rows) == 2 * (len(CHECKED) + 1), stdout  # gt_shapley joins faithfulness by default
    assert not [r for r in rows if r["status"] in ("ERROR", "TIMEOUT")], stdout
    for row in rows:
        if row["check"] == "max_sensitivity":
            assert row["status"] == "SKIP" and "token ids" in row["detail"], row
        elif row["check"] == "gt_shapley":  # neither claims Shapley values against the background
            assert row["status"] == "SKIP" and "claim Shapley values" in row["detail"], row
        else:
            assert row["status"] in ("PASS", "FAIL"), row
    assert {r["status"] for r in rows if r["check"] == "determinism"} == {"PASS"}
    LineMatcher(stdout.splitlines()).fnmatch_lines([f"*SKIPPED*max_sensitivity on {case}:*token ids*"])


# ------------------------------------------------------------------------------- the docs' example


def test_the_documented_hugging_face_example_runs(pytester):
    """docs/your-model.md, "Your Hugging Face model": its conftest and its command, as written.
    transformers is not imported here: pytester would drop it after the test, and the next test
    importing a model again failed ("Only a single TORCH_LIBRARY can be used to register ...")."""
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed: pip install pytest-xai[llm]")
    page = (ROOT / "docs" / "your-model.md").read_text()
    section = re.search(r"## Your Hugging Face model\n(.*?)\n## ", page, re.DOTALL).group(1)
    assert len(section.strip().splitlines()) <= 40
    conftest = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    command = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1).strip()
    pytester.makeconftest(conftest)
    (pytester.path / "examples").mkdir()
    (pytester.path / "examples" / EXAMPLE.name).write_text(EXAMPLE.read_text())
    args = command.split()
    assert args[0] == "pytest"
    result = pytester.runpytest_subprocess(*QUIET, *args[1:])
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) >= 3 and "error" not in outcomes, result.stdout.str()
