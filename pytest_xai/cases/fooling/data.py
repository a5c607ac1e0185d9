"""COMPAS-like data for the fooling family (see :mod:`pytest_xai.cases.fooling`): a seeded synthetic
table, or ProPublica's ``compas-scores-two-years.csv`` from ``--xai-data-dir`` with Compare-xAI's
2.9 preprocessing, split and standardised.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import numpy as np

FEATURE_NAMES = [
    "age",
    "two_year_recid",
    "priors_count",
    "length_of_stay",
    "c_charge_degree_F",
    "c_charge_degree_M",
    "sex_Female",
    "sex_Male",
    "race",
    "unrelated_column",
]
NUMERICAL = (0, 2, 3)
RACE, UNRELATED = 8, 9
N_ROWS = 6172  # ProPublica's table after the 2.9 filters; 75 % of it is Compare-xAI's 4,629 rows
COMPAS_FILE = "compas-scores-two-years.csv"
MIN_ROWS = 1000


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def synthetic_compas(n_rows: int = N_ROWS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A seeded COMPAS-like table (columns ``FEATURE_NAMES``, raw units) and labels (0 = "High").

    Integer, skewed, clumped numerical columns as in ProPublica's data: age 18-80 (18 + Gamma(2, 8),
    right-skewed), priors_count negative binomial (mean ~3.2, over-dispersed, ~1/3 zeros),
    length_of_stay floor(LogNormal(0, 1.7)) days (most 0-1, heavy tail, capped at 800).  Race is
    1 (African-American) with p = 0.51, unrelated_column with p = 0.5, felony with p = 0.64, male
    with p = 0.81; two_year_recid and the "High" score follow logistic models in priors and age.
    """
    rng = np.random.default_rng([seed, 2020])
    age = np.minimum(80.0, 18.0 + np.round(rng.gamma(2.0, 8.0, n_rows)))
    priors = np.minimum(38.0, rng.negative_binomial(0.7, 0.7 / (0.7 + 3.2), n_rows).astype(float))
    stay = np.minimum(800.0, np.floor(rng.lognormal(0.0, 1.7, n_rows)))
    felony = (rng.random(n_rows) < 0.64).astype(float)
    male = (rng.random(n_rows) < 0.81).astype(float)
    race = (rng.random(n_rows) < 0.51).astype(float)
    unrelated = (rng.random(n_rows) < 0.5).astype(float)
    recid = (rng.random(n_rows) < _sigmoid(-0.4 + 0.17 * priors - 0.04 * (age - 35))).astype(float)
    high = rng.random(n_rows) < _sigmoid(-1.9 + 0.22 * priors - 0.07 * (age - 35))
    X = np.column_stack([age, recid, priors, stay, felony, 1 - felony, 1 - male, male, race, unrelated])
    return X, np.where(high, 0, 1)


_REQUIRED = (
    "age",
    "two_year_recid",
    "c_charge_degree",
    "race",
    "sex",
    "priors_count",
    "c_jail_in",
    "c_jail_out",
    "days_b_screening_arrest",
    "is_recid",
    "score_text",
)


def _date(text: str) -> datetime:
    text = text.strip()
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            pass
    raise ValueError(f"{text!r} is not a date like 2013-08-13 06:03:42")


def load_compas(path: str | os.PathLike, *, seed: int = 0, min_rows: int = MIN_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """ProPublica's ``compas-scores-two-years.csv`` with the preprocessing of Slack et al. 2020 (Compare-xAI test 2.9).

    Keeps rows with days_b_screening_arrest in [-30, 30], is_recid != -1, c_charge_degree != 'O'
    and a score_text (not 'NA' or empty: Slack et al.'s pandas code reads 'NA' as NaN and so keeps
    such rows, against the filter's intent); length_of_stay = whole days from c_jail_in to c_jail_out;
    race = 1 for African-American; unrelated_column is seeded uniform 0/1; label 0 when score_text
    is 'High'.  Returns (X, y) with columns ``FEATURE_NAMES``.  A malformed file (not UTF-8, not
    CSV, a missing column, a bad cell) raises :class:`pytest_xai.reports.files.DataFileError` (a
    ValueError) naming the file, line and column, and what to do.
    """
    return _read_compas(Path(path), seed, min_rows)


def _read_compas(path: Path, seed: int, min_rows: int) -> tuple[np.ndarray, np.ndarray]:
    from pytest_xai.reports.files import DataFileError, csv_records

    fix = f"use ProPublica's unmodified {COMPAS_FILE} (propublica/compas-analysis), or remove it to use synthetic data"
    records = csv_records(path, fix)
    _, header = next(records, (None, None))
    if not header:
        raise DataFileError(f"{path}: the file is empty; {fix}")
    column: dict[str, int] = {}
    for index, name in enumerate(header):
        column.setdefault(name.strip(), index)  # duplicated names (priors_count): the first one
    missing = [name for name in _REQUIRED if name not in column]
    if missing:
        raise DataFileError(f"{path}, line 1 (header): missing column(s) {', '.join(missing)}; {fix}")
    rows = []
    for line, row in records:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            raise DataFileError(f"{path}, line {line}: {len(row)} fields, the header has {len(header)}; {fix}")
        cell = {name: row[column[name]].strip() for name in _REQUIRED}

        def number(name, cell=cell, line=line):  # bound now: called only for this row
            try:
                value = float(cell[name])
            except ValueError:
                value = float("nan")
            if not np.isfinite(value):
                raise DataFileError(
                    f"{path}, line {line}, column {name!r}: {cell[name]!r:.80} is not a number; {fix}"
                ) from None
            return value

        if cell["days_b_screening_arrest"] in ("", "NA"):  # pandas reads these as NaN: filtered out
            continue
        if not -30 <= number("days_b_screening_arrest") <= 30 or number("is_recid") == -1:
            continue
        if cell["c_charge_degree"] == "O" or cell["score_text"] in ("", "NA"):
            continue
        if cell["c_charge_degree"] not in ("F", "M"):
            raise DataFileError(
                f"{path}, line {line}, column 'c_charge_degree': {cell['c_charge_degree']!r:.80} "
                f"is not F, M or O; {fix}"
            )
        if cell["sex"] not in ("Female", "Male"):
            raise DataFileError(f"{path}, line {line}, column 'sex': {cell['sex']!r:.80} is not Female or Male; {fix}")
        stay = {}
        for name in ("c_jail_in", "c_jail_out"):
            try:
                stay[name] = _date(cell[name][:80])
            except ValueError as exc:
                raise DataFileError(f"{path}, line {line}, column {name!r}: {exc}; {fix}") from None
        felony, male = cell["c_charge_degree"] == "F", cell["sex"] == "Male"
        rows.append(
            (
                number("age"),
                number("two_year_recid"),
                number("priors_count"),
                float((stay["c_jail_out"] - stay["c_jail_in"]).days),
                felony,
                not felony,
                not male,
                male,
                cell["race"] == "African-American",
                cell["score_text"] == "High",
            )
        )
    if len(rows) < min_rows:
        raise DataFileError(
            f"{path}: {len(rows)} rows remain after the filters of Slack et al. "
            f"(days_b_screening_arrest in [-30, 30], is_recid != -1, c_charge_degree != 'O', "
            f"score_text present); the attack needs at least {min_rows}; {fix}"
        )
    table = np.array(rows, dtype=float)
    unrelated = np.random.default_rng([seed, 2020]).integers(0, 2, len(table)).astype(float)
    X = np.column_stack([table[:, :9], unrelated])
    return X, np.where(table[:, 9] == 1, 0, 1)


def compas_data(data_dir=None, seed: int = 0, n_rows: int = N_ROWS) -> tuple[np.ndarray, np.ndarray, str]:
    """(X, y, source): the user's real file when ``data_dir`` holds one, else ``n_rows`` synthetic rows."""
    if data_dir is not None:
        path = Path(data_dir) / COMPAS_FILE
        if path.is_file():
            X, y = load_compas(path, seed=seed)
            return X, y, str(path)
    X, y = synthetic_compas(n_rows, seed)
    return X, y, "synthetic"


def split_and_standardize(X, y, seed: int) -> dict[str, np.ndarray]:
    """Seeded 75/25 split, then sklearn's StandardScaler fitted on the training rows (Compare-xAI test 2.9)."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    x_train, x_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=seed)
    scaler = StandardScaler().fit(x_train)
    return {
        "train": scaler.transform(x_train),
        "test": scaler.transform(x_test),
        "y_train": y_train,
        "y_test": y_test,
        "mean": scaler.mean_,
        "scale": scaler.scale_,
    }
