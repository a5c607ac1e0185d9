"""Ranks and correlations, one home for the helpers every check and family uses, on scipy.

``scipy.stats.rankdata`` gives the average ranks (ties share the mean of their places, as Spearman
1904 defines them); the correlations are computed per row, vectorised over the batch, and a
constant row has no correlation: NaN, never 0 (``docs/defects.md`` XB-9).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def rankdata(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """``scipy.stats.rankdata`` (average ranks), imported on first use: ``scipy.stats`` takes about
    1.5 s to import, and the families that import this module are loaded in every pytest run that
    configures an explainer, even under ``--collect-only``."""
    from scipy.stats import rankdata as scipy_rankdata

    return np.asarray(scipy_rankdata(values, axis=axis), dtype=float)


def descending_ranks(values: Any) -> np.ndarray:
    """0-based ranks along the last axis, largest first (rank 0), ties sharing their average rank:
    ``[3, 1, 3, 0] -> [0.5, 2, 0.5, 3]``."""
    return rankdata(-np.asarray(values, dtype=float), axis=-1) - 1.0


def average_ranks(values: Any) -> np.ndarray:
    """1-based ranks along the last axis, smallest first, ties sharing their average rank."""
    return rankdata(np.asarray(values, dtype=float), axis=-1)


def pearson_rows(a: Any, b: Any) -> np.ndarray:
    """Pearson correlation of each row of ``a`` with the same row of ``b``, in [-1, 1] (last axis);
    NaN where either row is constant."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(axis=-1) / np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    return np.clip(r, -1.0, 1.0)


def spearman_rows(a: Any, b: Any) -> np.ndarray:
    """Spearman correlation of each row of ``a`` with the same row of ``b`` (each row flattened), the
    Pearson correlation of their average ranks; NaN where either row is constant."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return pearson_rows(average_ranks(a.reshape(len(a), -1)), average_ranks(b.reshape(len(b), -1)))


def spearman(a: Any, b: Any) -> float:
    """Spearman correlation of two vectors (average ranks for ties); NaN when either is constant."""
    return float(spearman_rows(np.ravel(a)[None], np.ravel(b)[None])[0])
