"""The causal language model of the ``llm`` family: a GPT-2 from ``transformers``, its tokenizer and
the function every explainer and check of the family explains.

Imported only when a case is built (it imports torch and transformers at the top).  The model is a
``GPT2LMHeadModel`` built from a tiny ``GPT2Config`` and the shipped weights
(``scripts/train_llm.py``, ``pytest_xai/data/llm_gpt2.json``); the tokenizer is a
``PreTrainedTokenizerFast`` over the family's word vocabulary, built offline from ``tokenizers``, so
``tokenizer.encode(tokenizer.decode(ids))`` gives the ids back (captum's ``TextTokenInput`` reads
text).  The explained number is captum ``LLMAttribution``'s: the log-probability of the target
continuation given the prompt, teacher-forced, summed over its tokens, with the attention mask all
ones (a token replaced by ``<pad>`` is read as ``<pad>``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging

from pytest_xai.cases.llm import LENGTH, PAD, TASKS, VOCABULARY, training_batch
from pytest_xai.training import frozen

DATA = Path(__file__).resolve().parents[2] / "data"  # pytest_xai/data
WEIGHTS = DATA / "llm_gpt2.pt"
CARD = DATA / "llm_gpt2.json"
#: The shipped models' architecture: 2 layers, 4 heads, 48 dimensions (about 40,000 parameters each).
CONFIG = {"n_positions": 16, "n_embd": 48, "n_layer": 2, "n_head": 4, "n_inner": 96}
_POSITIONS, _WIDTH, _LAYERS, _HEADS, _INNER = CONFIG.values()


def config() -> GPT2Config:
    """The GPT-2 configuration of the family: no dropout, ``<pad>`` = 0, ``<bos>`` = 1, ``<sep>`` = 2,
    eager attention (it returns attention weights when asked, ``output_attentions=True``)."""
    return GPT2Config(  # type: ignore[call-arg]  # attn_implementation: PretrainedConfig's, not in GPT2Config's signature
        vocab_size=len(VOCABULARY),
        n_positions=_POSITIONS,
        n_embd=_WIDTH,
        n_layer=_LAYERS,
        n_head=_HEADS,
        n_inner=_INNER,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        pad_token_id=PAD,
        bos_token_id=VOCABULARY.index("<bos>"),
        eos_token_id=VOCABULARY.index("<sep>"),
        attn_implementation="eager",
    )


def fresh(seed: int) -> GPT2LMHeadModel:
    """A randomly initialised model of the family's configuration (seeded)."""
    hf_logging.set_verbosity_error()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return GPT2LMHeadModel(config())


def tokenizer() -> PreTrainedTokenizerFast:
    """A word-level ``transformers`` tokenizer over :data:`VOCABULARY` (no special tokens added)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    core = Tokenizer(models.WordLevel({word: i for i, word in enumerate(VOCABULARY)}, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with a space
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<bos>", eos_token="<sep>")


def load_trained(task: str) -> GPT2LMHeadModel:
    """The shipped model of ``task``, its ``state_dict`` read with ``weights_only=True``, frozen."""
    states = torch.load(WEIGHTS, weights_only=True, map_location="cpu")
    model = fresh(0)
    model.load_state_dict(states[task])
    return frozen(model)


def weights_digest() -> str:
    """SHA-256 of the shipped weights: the cache key of what is computed from them."""
    import hashlib

    return hashlib.sha256(WEIGHTS.read_bytes()).hexdigest()[:16]


def trained_card() -> dict[str, Any]:
    card: dict[str, Any] = json.loads(CARD.read_text())
    return card


def token_log_probs(model: GPT2LMHeadModel, prompts: np.ndarray, continuation: np.ndarray) -> np.ndarray:
    """log p(continuation_k | prompt, continuation_<k) per row and generated token, (n, T) float64,
    teacher-forced in one forward pass, attention mask all ones (captum's ``LLMAttribution``)."""
    prompts = np.asarray(prompts, dtype=np.int64)
    continuation = np.array(
        np.broadcast_to(np.asarray(continuation, dtype=np.int64), (len(prompts), np.shape(continuation)[-1]))
    )
    ids = torch.as_tensor(np.concatenate([prompts, continuation[:, :-1]], axis=1))
    out = []
    with torch.no_grad():
        for first in range(0, len(ids), 4096):
            logits = model(ids[first : first + 4096]).logits[:, prompts.shape[1] - 1 :]
            chosen = torch.as_tensor(continuation[first : first + 4096])
            out.append(logits.log_softmax(dim=-1).gather(2, chosen[..., None])[..., 0].double().numpy())
    return np.concatenate(out)


def train(
    task: str, *, seed: int, steps: int, batch: int = 128, lr: float = 3e-3
) -> tuple[GPT2LMHeadModel, dict[str, Any]]:
    """The model of ``task`` trained on :func:`pytest_xai.cases.llm.training_batch` (AdamW, one-cycle
    schedule, loss on the answer tokens only; seeded, one thread)."""
    torch.set_num_threads(1)
    start = time.perf_counter()
    model = fresh(seed)
    rng = np.random.default_rng([seed, 40, TASKS.index(task)])
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, lr, total_steps=steps)
    model.train()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for _ in range(steps):
            ids, labels = (torch.as_tensor(a) for a in training_batch(task, batch, rng))
            logits = model(ids).logits
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
    recipe = {"steps": steps, "batch": batch, "lr": lr, "seed": seed, "length": LENGTH}
    return frozen(model), {**recipe, "training_seconds": round(time.perf_counter() - start, 1)}


def greedy(model: GPT2LMHeadModel, prompts: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` tokens the model generates greedily after each prompt, (n, width)."""
    ids = torch.as_tensor(np.asarray(prompts, dtype=np.int64))
    out = []
    with torch.no_grad():
        for _ in range(width):
            chosen = model(ids).logits[:, -1].argmax(dim=-1)
            out.append(chosen.numpy())
            ids = torch.cat([ids, chosen[:, None]], dim=1)
    return np.stack(out, axis=1)


def exact_values(model: GPT2LMHeadModel, prompt: np.ndarray, answer: np.ndarray) -> np.ndarray:
    """Exact Shapley values (T, L) of log p(answer_k | prompt, answer_<k) per generated token over the
    prompt's positions against ``<pad>``: all 2^L coalitions enumerated
    (:func:`pytest_xai.cases.units.networks.baseline_shapley`), one forward pass for all."""
    from pytest_xai.cases.units.networks import baseline_shapley

    memo: dict[bytes, np.ndarray] = {}

    def table(z: np.ndarray) -> np.ndarray:
        key = z.tobytes()
        if key not in memo:
            memo.clear()
            memo[key] = token_log_probs(model, np.rint(z).astype(np.int64), np.asarray(answer))
        return memo[key]

    row, pad = np.asarray(prompt, dtype=float)[None], np.full(len(prompt), float(PAD))
    return np.stack([baseline_shapley(lambda z, k=k: table(z)[:, k], row, pad)[0] for k in range(len(answer))])


def continuation_predictor(model: GPT2LMHeadModel, width: int):
    """The case's ``predict``: prompts (n, L) -> log-probabilities (float64) of every next token
    (n, vocab) for ``width`` 1, of every two-token continuation (n, vocab²; class t1·vocab + t2) for 2."""

    def predict(prompts: Any) -> np.ndarray:
        ids = torch.as_tensor(
            np.clip(np.rint(np.asarray(prompts, dtype=float)), 0, len(VOCABULARY) - 1).astype(np.int64)
        )
        return np.concatenate([_continuations(ids[first : first + 256]) for first in range(0, len(ids), 256)])

    def _continuations(ids: torch.Tensor) -> np.ndarray:
        with torch.no_grad():
            first = model(ids).logits[:, -1].log_softmax(dim=-1).double()
            if width == 1:
                return first.numpy()
            n, v = first.shape
            extended = torch.cat([ids.repeat_interleave(v, dim=0), torch.arange(v).repeat(n)[:, None]], dim=1)
            second = model(extended).logits[:, -1].log_softmax(dim=-1).double().reshape(n, v, v)
            return (first[:, :, None] + second).reshape(n, v * v).numpy()

    return predict
