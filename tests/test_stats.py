"""The shared rank and correlation helpers (pytest_xai.stats) against scipy's own definitions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_xai import stats


def _pairwise_descending_ranks(values):
    """The definition, by counting: values above, plus half of the ties (the former checks.ranks)."""
    values = np.asarray(values, dtype=float)
    greater = (values[..., None, :] > values[..., :, None]).sum(axis=-1)
    equal = (values[..., None, :] == values[..., :, None]).sum(axis=-1)
    return greater + (equal - 1) / 2.0


def test_descending_ranks_use_average_ties():
    np.testing.assert_allclose(stats.descending_ranks([3.0, 1.0, 3.0, 0.0]), [0.5, 2.0, 0.5, 3.0])
    rows = np.round(np.random.default_rng(0).normal(size=(5, 12)), 1)  # ties
    np.testing.assert_allclose(stats.descending_ranks(rows), _pairwise_descending_ranks(rows))


def test_average_ranks_are_scipy_rankdata_per_row():
    rows = np.round(np.random.default_rng(1).normal(size=(4, 9)), 1)
    np.testing.assert_allclose(stats.average_ranks(rows), [scipy_stats.rankdata(r) for r in rows])


def test_spearman_rows_matches_scipy_and_marks_constant_rows():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 10)), rng.normal(size=(4, 10))
    a[1, :5] = 0.0  # ties
    expected = [scipy_stats.spearmanr(x, y).statistic for x, y in zip(a, b)]
    np.testing.assert_allclose(stats.spearman_rows(a, b), expected)
    a[2] = 1.0
    assert np.isnan(stats.spearman_rows(a, b)[2])
    images = rng.normal(size=(3, 4, 5))  # rows are flattened
    assert stats.spearman_rows(images, images) == pytest.approx([1.0, 1.0, 1.0])


def test_pearson_rows_and_spearman_of_vectors():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(3, 20)), rng.normal(size=(3, 20))
    np.testing.assert_allclose(stats.pearson_rows(a, b), [scipy_stats.pearsonr(x, y).statistic for x, y in zip(a, b)])
    assert stats.spearman(a[0], b[0]) == pytest.approx(scipy_stats.spearmanr(a[0], b[0]).statistic)
    assert stats.spearman(a[0], -a[0]) == pytest.approx(-1.0)
    assert np.isnan(stats.spearman(np.ones(5), a[0, :5]))  # constant: undefined, never 0
