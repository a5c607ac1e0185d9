"""captum's recipe, shared by every method of :mod:`pytest_xai.explainers.captum`: the case's model as
a torch module, one torch thread (and a forked, seeded RNG), the inputs as a tensor in the model's
dtype, captum's ``target``, ``baselines`` and ``feature_mask``, and the attributions back as numpy."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_xai.errors import NotApplicable
from pytest_xai.extras import install_line

if TYPE_CHECKING:  # torch is imported lazily, inside the calls; the annotations stay strings at run time
    import torch


def torch_model(method: str, model: Any, *, tokens: bool = False):
    """The torch module itself, or NotApplicable naming what the case's model is instead.

    A model over token ids (:func:`token_embeddings`) is not applicable unless the method can take
    ids (``tokens=True``: the perturbation methods, Integrated Gradients on the embedding layer)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - the torch extra is not installed
        raise NotApplicable(
            f"{method} needs torch and captum, which are not installed: {install_line('torch')}"
        ) from None
    if not isinstance(model, torch.nn.Module):
        kind = type(model)
        raise NotApplicable(
            f"{method} needs a torch.nn.Module; this case's model is {kind.__module__}.{kind.__qualname__}"
        )
    if not tokens and token_embeddings(model) is not None:
        raise NotApplicable(
            f"{method} differentiates with respect to the inputs, but this model takes token ids "
            f"(it has get_input_embeddings()); integrated_gradients explains it on its embedding layer"
        )
    return model


def token_embeddings(model: Any):
    """The embedding layer of a model over token ids (Hugging Face's ``get_input_embeddings()``), or None."""
    get = getattr(model, "get_input_embeddings", None)
    return get() if callable(get) else None


@contextlib.contextmanager
def one_thread(seed: int | None = None) -> Iterator[None]:
    """One torch thread, and (with ``seed``) a forked, seeded RNG, for the duration of a call.

    A model whose output has no gradient with respect to its inputs (an argmax, a ``detach``, a
    ``torch.no_grad`` inside ``forward``) makes gradient methods not applicable: a skip naming
    torch's message, not a crash.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if seed is None:
            yield
        else:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(seed))
                yield
    except RuntimeError as exc:
        if "does not require grad" not in str(exc):
            raise
        raise NotApplicable(
            f"the model's output is not differentiable with respect to its inputs (torch: {exc})"
        ) from None
    finally:
        torch.set_num_threads(previous)


def tensor(model, inputs: Any, *, grad: bool = False):
    """``inputs`` as a tensor on the model's device, in its floating dtype (float32 by default).

    ``grad=True`` marks it as requiring gradients (what captum would do, with a warning).
    """
    import torch

    params = [p for p in model.parameters() if p.is_floating_point()]
    dtype = params[0].dtype if params else torch.float32
    device = params[0].device if params else torch.device("cpu")
    array = np.asarray(inputs, dtype=np.float32)
    if array.ndim < 2:
        raise ValueError(f"inputs must have shape (n, *features), got shape {array.shape}")
    if token_embeddings(model) is not None:  # token ids: whole numbers, as a LongTensor
        ids = np.rint(np.asarray(inputs, dtype=float))
        if not np.array_equal(ids, inputs):
            raise ValueError("this model takes token ids, but the inputs are not whole numbers")
        return torch.as_tensor(ids, device=device, dtype=torch.long)
    return torch.as_tensor(array, device=device).to(dtype).requires_grad_(grad)


def baselines(baseline: Any, x):
    """The reference input broadcast to ``x``'s shape; zeros when the case gives none."""
    import torch

    if baseline is None:
        return torch.zeros_like(x)
    b = torch.as_tensor(np.asarray(baseline, dtype=np.float32), device=x.device).to(x.dtype)
    if b.shape == x.shape[1:]:
        b = b.unsqueeze(0)
    try:
        return b.expand_as(x).clone()
    except RuntimeError:
        raise ValueError(
            f"baseline of shape {tuple(b.shape)} fits neither one input row {tuple(x.shape[1:])} "
            f"nor the inputs {tuple(x.shape)}"
        ) from None


def to_numpy(attributions, inputs: Any) -> np.ndarray:
    return attributions.detach().cpu().numpy().astype(float).reshape(np.shape(inputs))


def feature_mask(x, groups: Any = None):
    """captum's ``feature_mask``: the case's ``groups`` (ids 0..G-1 shaped like one input, e.g. a chess
    square's 12 planes), else one group per input element (feature j of every row ablated alone)."""
    import torch

    if groups is not None:
        from pytest_xai.explainers.grouped import group_ids

        return torch.as_tensor(group_ids(np.empty((1, *x.shape[1:])), groups), device=x.device)[None]
    return torch.arange(x[0].numel(), device=x.device).reshape((1,) + tuple(x.shape[1:]))


def target_of(target: Any) -> Any:
    """The case's target as captum takes it: None, one class index, or one per row as a list."""
    if target is None or np.ndim(target) == 0:
        return None if target is None else int(target)
    return [int(t) for t in np.asarray(target).reshape(-1)]


def attribute(
    method: str,
    model: Any,
    inputs: Any,
    call: Callable[[torch.nn.Module, torch.Tensor], Any],
    *,
    grad: bool = False,
    seed: int | None = None,
    tokens: bool = False,
    output: str | None = None,
    pad_token_id: int | None = None,
) -> np.ndarray:
    """captum's recipe, once for every method: the case's model as a torch module (else
    NotApplicable naming what it is; a model over token ids only for a method that takes ids,
    ``tokens``), one torch thread (and, with ``seed``, a forked seeded RNG), the inputs as a tensor
    in the model's dtype (requiring gradients with ``grad``; token ids as a LongTensor), then
    ``call(module, x)`` (captum's ``attribute``), back to a float64 array shaped like ``inputs``.

    A model over token ids is called as the case explains it (:func:`pytest_xai.tokens.explained`:
    the attention mask of ``pad_token_id``, a ``ModelOutput``'s logits, a causal LM's last position,
    softmax when ``output`` is ``"probabilities"``)."""
    module = torch_model(method, model, tokens=tokens)
    if tokens and token_embeddings(module) is not None:
        from pytest_xai.tokens import explained

        module = explained(module, output, pad_token_id)
    with one_thread(seed):
        x = tensor(module, inputs, grad=grad)
        return to_numpy(call(module, x), inputs)


def import_captum() -> None:
    """Import captum before the first call (``prepare``: once per worker process), so that no
    call's time includes its half second of imports."""
    import captum.attr  # noqa: F401
