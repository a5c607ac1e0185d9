"""One class per explained row (Quantus' ``explain_func`` convention) for adapters of one class.

shap, lime and our baselines explain a single output of the model per call.  A case whose
``target`` is one class index per row (the digits, sanity and human cases explain each row's
predicted class) is explained by :func:`per_row` as one call per distinct class, each on the
rows of that class, reassembled in the rows' order.  The call's ``budget`` of model evaluations
is shared between those calls in proportion to their rows, so the whole stays within it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np


def per_row(explain: Callable[..., Any]) -> Callable[..., Any]:
    """``explain`` (written for one class index) accepting one class index per row as well."""
    signature = inspect.signature(explain)

    @functools.wraps(explain)  # the contract reads the wrapped signature (inspect follows __wrapped__)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        target = bound.arguments.get("target")
        if target is None or np.ndim(target) == 0:
            return explain(*args, **kwargs)
        bound.apply_defaults()
        given = dict(bound.arguments)
        inputs, target = np.asarray(given["inputs"]), np.asarray(target, dtype=int)
        if target.shape != (len(inputs),):
            raise ValueError(f"target has {target.size} classes for {len(inputs)} rows: give one class per row")
        parts = []
        for label in np.unique(target):
            rows = np.flatnonzero(target == label)
            call = {**given, "inputs": inputs[rows], "target": int(label)}
            if "budget" in call:
                call["budget"] = max(1, int(given["budget"]) * len(rows) // len(inputs))
            parts.append((rows, explain(**call)))
        return _reassemble(parts, len(inputs))

    return wrapper


def _reassemble(parts: list[tuple[np.ndarray, Any]], n: int) -> Any:
    """Row-blocks of attributions (arrays, or dicts of arrays such as ``{"attributions",
    "interactions"}``) put back in the original row order."""
    first = parts[0][1]
    if isinstance(first, dict):
        return {key: _reassemble([(rows, out[key]) for rows, out in parts], n) for key in first}
    first = np.asarray(first)
    whole = np.empty((n, *first.shape[1:]), dtype=first.dtype)
    for rows, out in parts:
        whole[rows] = np.asarray(out)
    return whole
