"""Cases from a user's own model and data (docs/your-model.md).

:func:`make_case` turns a model (scikit-learn, xgboost, torch or a plain callable) and the rows to
explain into a :class:`pytest_xai.Case`; ``pytest_xai.register_case`` makes it part of the suite::

    import pytest_xai

    @pytest_xai.register_case(checks=["faithfulness", "completeness", "max_sensitivity"])
    def my_model(seed):
        model = fit_my_model(seed)
        return pytest_xai.make_case(X_test[:50], model=model, background=X_train[:100],
                                    feature_names=names, train=(X_train, y_train))

Randomisation sanity checks (Adebayo et al. 2018) need models to compare with: data randomisation
refits a clone of a scikit-learn-style estimator (``sklearn.base.clone``, which also clones
xgboost's ``XGBClassifier``) on permuted ``train`` labels; model randomisation calls the user's
``randomise(model, seed) -> model`` or, for a torch module, re-initialises every layer.  They are
built on first use (:func:`build_variants`), seeded, so a worker process rebuilds the same ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pytest_xai.case import CATEGORIES, Case, CaseInfo
from pytest_xai.registry import user_checks
from pytest_xai.tokens import OUTPUTS


def _is_torch(model: Any) -> bool:
    return any(c.__module__.startswith("torch") and c.__name__ == "Module" for c in type(model).__mro__)


def predict_of(model: Any, output: str = "probabilities") -> Callable[[Any], Any]:
    """numpy in, numpy out for ``model``: ``predict_proba`` of a classifier (``output="logits"``:
    its margin, xgboost's ``output_margin`` or scikit-learn's ``decision_function``), ``predict`` of a
    regressor (scikit-learn, xgboost's sklearn API), a torch module's softmax probabilities over
    several outputs (``output="logits"``: its outputs as it returns them, the ``logits`` of a
    ``ModelOutput``; its own output for one), ``inplace_predict`` of an xgboost Booster, or the
    callable itself.  A model over token ids: :func:`pytest_xai.tokens.predictor`."""
    import numpy as np

    if _is_torch(model):

        def predict(x):
            import torch

            from pytest_xai.tokens import logits_of

            dtype = next((p.dtype for p in model.parameters()), torch.float32)
            with torch.no_grad():
                out = logits_of(model(torch.as_tensor(np.asarray(x), dtype=dtype)))
                several = out.ndim == 2 and out.shape[1] > 1
                out = out if several else out.reshape(len(out))
                out = torch.softmax(out, dim=1) if several and output == "probabilities" else out
            return out.double().numpy()

        return predict
    if hasattr(model, "predict_proba") and output == "logits":  # a classifier's margin, before its link
        if type(model).__module__.startswith("xgboost"):
            return lambda x: model.predict(np.asarray(x), output_margin=True)
        if hasattr(model, "decision_function"):
            return model.decision_function
    if hasattr(model, "predict_proba"):
        return model.predict_proba
    if type(model).__name__ == "Booster" and hasattr(model, "inplace_predict"):
        return lambda x: model.inplace_predict(np.asarray(x))
    if hasattr(model, "predict"):
        return model.predict
    if callable(model):
        return model
    raise TypeError(
        f"cannot predict with a {type(model).__module__}.{type(model).__name__}: pass predict= "
        f"(numpy in, numpy out) to make_case"
    )


def make_case(
    inputs: Any,
    *,
    model: Any = None,
    predict: Callable | None = None,
    background: Any = None,
    target: Any = "auto",
    feature_names: list[str] | None = None,
    baseline: Any = None,
    truth: dict | None = None,
    train: tuple[Any, Any] | None = None,
    randomise: Callable[[Any, int], Any] | None = None,
    name: str = "my_case",
    family: str = "user",
    category: str = "fidelity",
    checks: Any = (),
    source: str = "",
    seed: int = 0,
    max_background: int = 100,
    reference: bool | int = True,
    output: str = "probabilities",
    pad_token_id: int | None = None,
) -> Case:
    """A case from a user's model and data.

    ``inputs`` are the rows to explain (n, *features).  Give ``model`` (its ``predict`` is derived:
    :func:`predict_of`) or ``predict`` or both.  ``background``: reference rows (default: up to
    ``max_background`` rows of ``train``, seeded).  ``target``: the class to explain, one per row,
    or None for regression; by default None for a 1-D output and class 1 for a two-class one
    (several classes need an explicit target).  ``truth``: known attributions, if any, keyed like
    the built-in cases (``"shapley"``).  ``train = (X, y)``: the training data, used by
    ``data_randomisation`` to refit a clone of ``model`` on permuted labels; ``randomise(model,
    seed)``: a randomised copy of ``model`` for ``model_randomisation`` (torch modules have a
    generic one).  ``name``, ``family``, ``category``, ``checks`` and ``source`` describe a hand-made
    case; ``pytest_xai.register_case`` replaces them with its own.  ``reference``: the fidelity
    checks are calibrated on Shapley values computed from ``model`` (:mod:`pytest_xai.reference`,
    up to ``reference.BUDGET`` model evaluations, or the number given); False turns that off and
    leaves absolute bars.

    A torch module with ``get_input_embeddings()`` (a Hugging Face model) given whole-number inputs
    is a model over token ids (:mod:`pytest_xai.tokens`, docs/hf.md): it gets them as a LongTensor
    with the attention mask of ``pad_token_id`` (default: ``model.config.pad_token_id``), put in
    eval mode (dropout off); a causal LM explains the next token at the last position (by default
    the token it predicts); the background and baseline default to the all-padding row.
    ``output``: what a torch model's case explains, ``"probabilities"`` (softmax over its classes)
    or ``"logits"`` (its outputs as it returns them); explainers read it as ``output``.  For a
    scikit-learn or xgboost classifier ``"logits"`` explains its margin (the raw output TreeSHAP
    explains; the reference of a boosted classifier is exact there, estimated on its probabilities).
    """
    import numpy as np

    if model is None and predict is None:
        raise TypeError("make_case needs model= (a scikit-learn, xgboost or torch model, or a callable) or predict=")
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {CATEGORIES}, got {category!r}")
    x = np.asarray(inputs)
    if x.ndim < 2 or not len(x) or not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)):
        raise ValueError(
            f"make_case: inputs must be a non-empty numeric array (n, features...), got shape "
            f"{x.shape} of dtype {x.dtype}"
        )
    if output not in OUTPUTS:
        raise ValueError(f"make_case: output must be one of {OUTPUTS}, got {output!r}")
    pad = _token_ids(x, model, pad_token_id)
    if pad is not None:
        from pytest_xai import tokens

        model.eval()  # a Hugging Face model built from a config starts in training mode: dropout
        predict = predict or tokens.predictor(model, output, pad)
        x = x.astype(float)
        background = np.full((1, *x.shape[1:]), float(pad)) if background is None and train is None else background
        baseline = np.full(x.shape[1:], float(pad)) if baseline is None else baseline
    predict = predict or predict_of(model, output)
    if background is None and train is not None:
        X_train = np.asarray(train[0])
        rows = np.random.default_rng([seed, 3]).permutation(len(X_train))[:max_background]
        background = X_train[np.sort(rows)]
    out = np.asarray(predict(x[:2]))
    if out.ndim not in (1, 2) or len(out) != len(x[:2]):
        raise ValueError(
            f"make_case: predict returned shape {out.shape} for {len(x[:2])} rows; it must return one "
            f"output per row, (n,) or (n, classes)"
        )
    width = x.shape[1:]
    if background is not None and (np.ndim(background) != x.ndim or np.shape(background)[1:] != width):
        raise ValueError(
            f"make_case: the background has rows of shape {np.shape(background)[1:]} but the inputs "
            f"{width}; pass background rows shaped like the inputs"
        )
    if baseline is not None and np.shape(baseline) not in (width, (1, *width), x.shape):
        raise ValueError(
            f"make_case: the baseline has shape {np.shape(baseline)} but the inputs {x.shape}; pass one "
            f"row shaped like an input {width}, or one per input"
        )
    if isinstance(target, str) and target == "auto":
        if pad is not None and out.ndim == 2 and out.shape[1] > 2 and _causal(model, x):
            target = np.asarray(predict(x)).argmax(axis=1)  # the next token the model predicts
        elif out.ndim == 1 or out.shape[1] == 1:
            target = None
        elif out.shape[1] == 2:
            target = 1
        else:
            raise ValueError(
                f"make_case: predict gives {out.shape[1]} classes; pass target= (one class index, "
                f"or one per row, e.g. the predicted classes)"
            )
    if target is not None and np.ndim(target) == 1:
        target = np.asarray(target, dtype=int)
        if target.shape != (len(x),):
            raise ValueError(f"make_case: one target per row needs {len(x)} targets, got {target.shape[0]}")
    elif target is not None:
        target = int(target)
    d = int(np.prod(x.shape[1:]))
    names = list(feature_names) if feature_names is not None else [f"x{i}" for i in range(d)]
    if len(names) != d:
        raise ValueError(f"make_case: {len(names)} feature names for {d} features")
    checks = user_checks(checks)
    info = CaseInfo(name=name, family=family, category=category, source=source, checks=checks, build=None)
    if not isinstance(reference, (bool, int)) or (not isinstance(reference, bool) and reference <= 0):
        raise ValueError(
            f"make_case: reference must be True, False or a positive number of model evaluations, got {reference!r}"
        )
    meta: dict[str, Any] = {"seed": int(seed), "randomise": randomise, "train": train, "reference": reference}
    if _is_torch(model):  # what the case explains of the model's outputs: one output is explained as it is
        meta["output"] = output if out.ndim == 2 and out.shape[1] > 1 else "logits"
    elif output == "logits":  # a classifier's margin: a swapped-in model explains the same output
        meta["output"] = output
    if pad is not None:
        meta["pad_token_id"] = pad
    return Case(
        info=info,
        inputs=x,
        predict=predict,
        feature_names=names,
        model=model if model is not None else predict,
        target=target,
        background=None if background is None else np.asarray(background),
        baseline=None if baseline is None else np.asarray(baseline),
        torch_model=model if _is_torch(model) else None,
        truth=dict(truth or {}),
        meta=meta,
        swap_model=with_model,
        variants=build_variants,
    )


def with_model(case: Case, model: Any) -> Case:
    """``case`` with ``model`` in place of its model (and its derived ``predict``, of the same output)."""
    output, pad = case.meta.get("output") or "probabilities", case.meta.get("pad_token_id")
    if pad is not None and _is_torch(model):
        from pytest_xai import tokens

        predict = tokens.predictor(model, output, pad)
    else:
        predict = predict_of(model, output)
    return dataclasses.replace(case, model=model, predict=predict, torch_model=model if _is_torch(model) else None)


def _token_ids(x: Any, model: Any, pad_token_id: int | None) -> int | None:
    """The padding id when ``x`` are token ids of ``model`` (a torch module with
    ``get_input_embeddings()`` given whole numbers), else None; misuse is a ValueError saying what to pass."""
    import numpy as np

    from pytest_xai import tokens

    layer = tokens.embeddings(model)
    if layer is None:
        return None
    whole = np.issubdtype(x.dtype, np.integer) or bool(np.all(np.rint(x) == x))
    kind = type(model).__name__
    if not whole:
        raise ValueError(
            f"make_case: a {kind} takes token ids (it has get_input_embeddings()), but the inputs are not whole "
            f"numbers; pass the ids (integers), or predict= for a model over other inputs"
        )
    vocab = int(layer.num_embeddings)
    if x.min() < 0 or x.max() >= vocab:
        raise ValueError(
            f"make_case: token ids must be in the vocabulary of the {kind}, 0..{vocab - 1}; got {x.min()}..{x.max()}"
        )
    pad = tokens.pad_token_id_of(model, pad_token_id)
    if pad is None:
        raise ValueError(
            f"make_case: the inputs are token ids of a {kind} whose config has no pad_token_id: pass "
            f"pad_token_id= (the id that pads short rows; the attention mask is ids != pad_token_id, and the "
            f"all-padding row is the baseline)"
        )
    if not 0 <= pad < vocab:
        raise ValueError(f"make_case: pad_token_id={pad} is not in the vocabulary of the {kind}, 0..{vocab - 1}")
    return pad


def _causal(model: Any, x: Any) -> bool:
    """Whether a token model gives one output per position over its vocabulary (a causal LM)."""
    import torch

    from pytest_xai.tokens import logits_of

    with torch.no_grad():
        return bool(logits_of(model(torch.as_tensor(x[:1], dtype=torch.long))).ndim == 3)


def _refit(model: Any, X: Any, y: Any, seed: int) -> Any:
    from sklearn.base import clone

    fresh = clone(model)
    if "random_state" in fresh.get_params() and fresh.get_params()["random_state"] is None:
        fresh.set_params(random_state=seed)
    return fresh.fit(X, y)


def _torch_randomise(model: Any, seed: int) -> Any:
    from pytest_xai.cases.sanity import parametrised_layers, randomise

    return randomise(model, [name for name, _ in parametrised_layers(model)], seed=seed)


def build_variants(case: Case) -> None:
    """Fill ``case.meta`` with the models the randomisation checks compare (idempotent, seeded).

    ``cascade`` / ``random_models`` (model randomisation: the user's ``randomise`` or a torch
    re-initialisation; one step, then two independent draws as the floor) and ``label_randomised``
    / ``label_floor`` (data randomisation: clones refit on three label permutations of ``train``).
    What cannot be built is recorded in ``meta["not_randomisable"]`` with the reason.
    """
    import numpy as np

    meta, model, seed = case.meta, case.model, int(case.meta.get("seed", 0))
    if "cascade" in meta or "not_randomisable" in meta:
        return
    reasons = {}
    randomise = meta.get("randomise") or (_torch_randomise if _is_torch(model) else None)
    if randomise is None:
        reasons["model"] = (
            f"model_randomisation needs a randomised copy of the {type(model).__name__}: pass "
            f"randomise=lambda model, seed: ... to make_case (torch modules have a generic one)"
        )
    else:
        meta["cascade"] = [("all", randomise(model, 1000 + seed))]
        meta["random_models"] = (randomise(model, 2000 + seed), randomise(model, 2001 + seed))
    train = meta.get("train")
    if train is None or not hasattr(model, "get_params") or not hasattr(model, "fit"):
        reasons["data"] = (
            f"data_randomisation refits a clone of the model on permuted labels: it needs a "
            f"scikit-learn-style estimator (get_params, fit; it has a {type(model).__name__}) and "
            f"train=(X, y) in make_case"
        )
    else:
        X, y = np.asarray(train[0]), np.asarray(train[1])
        rng = np.random.default_rng([seed, 12])
        refits = [_refit(model, X, rng.permutation(y), seed + k) for k in range(3)]
        meta["label_randomised"], meta["label_floor"] = refits[0], tuple(refits[1:])
    meta["not_randomisable"] = reasons
