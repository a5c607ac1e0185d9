"""Slack et al.'s scaffolding attack on COMPAS: a racist model that hides behind an innocuous one.

Slack, Hilgard, Jia, Singh & Lakkaraju 2020, "Fooling LIME and SHAP: Adversarial Attacks on Post hoc
Explanation Methods" (AIES), as used by Compare-xAI's ``fooling_perturbation_alg`` (Belaid et al. 2022, test 2.9), with
the corrections of ``docs/defects.md`` CX-2 (ranks, not argsort), CX-5 (everything seeded) and CX-12
(>= 50 explained rows, the attack verified at build time).

The scaffold answers with the biased model f (class 0 = "High risk" when race = 1) on rows its
out-of-distribution detector believes are real, and with the innocuous psi (class 0 when the
random ``unrelated_column`` = 1) elsewhere.  An explainer whose perturbations leave the data
manifold sees psi and credits ``unrelated_column``; one whose perturbations stay on it sees f and
credits race.  Two scaffolds, as in Slack et al.:

- ``compas_lime_scaffold``: the detector (random forest on age, priors_count, length_of_stay) is
  trained on 30 copies of the training rows against 30 copies with N(0, 0.3^2) noise.  The numerical
  columns are integer-valued, so real rows sit on a lattice; LIME's samples do not.
- ``compas_shap_scaffold``: the detector (all columns) is trained on 10 copies of the training rows
  against 30,000 rows with random feature substitutions from a 10-centroid k-means summary.  The
  case's background is that summary, the usual way to summarise a KernelSHAP background (as Slack
  et al. did), so coalition hybrids are exactly the rows the detector was trained to catch.

Data are a seeded synthetic COMPAS-like table (an offline substitute) unless the user keeps ProPublica's
``compas-scores-two-years.csv`` in ``--xai-data-dir`` (ini ``xai_data_dir``); then the 2.9
preprocessing applies.  The explained class is ``target = 0`` ("High risk"), whose probability f
sets from race.

The detectors are sklearn random forests.  Training the LIME detector on 277,740 rows takes about
30 s on one core, too slow to repeat, and sklearn models have no safe on-disk format; the cache
therefore stores each tree's public ``tree_`` arrays (``Cache.arrays``, no pickle) and predicts
by walking them (no private sklearn API), checking on every load that the walk reproduces the
trained forest's probabilities on stored probe rows (otherwise it retrains).

Slightly over ~500 lines: the data, the two detectors (with their public-array tree walk) and the
scaffold belong to one attack and are verified together at build time.
"""

from __future__ import annotations

import hashlib
import os
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.checks import attributions_of, check, importance_of
from pytest_xai.registry import Family
from pytest_xai.stats import descending_ranks

FEATURE_NAMES = [
    "age", "two_year_recid", "priors_count", "length_of_stay", "c_charge_degree_F",
    "c_charge_degree_M", "sex_Female", "sex_Male", "race", "unrelated_column",
]
NUMERICAL = (0, 2, 3)
RACE, UNRELATED = 8, 9
HIGH_RISK = 0
N_ROWS = 6172  # ProPublica's table after the 2.9 filters; 75 % of it is Compare-xAI's 4,629 rows
N_EXPLAINED = 50
MAX_BACKGROUND = 100
COMPAS_FILE = "compas-scores-two-years.csv"
MIN_ROWS = 1000
MIN_ROUTED = 0.95
SLACK = "Slack et al. 2020, Fooling LIME and SHAP; Compare-xAI fooling_perturbation_alg (test 2.9; CX-2, CX-12)"
FAMILY = Family("fooling", source=SLACK, smoke=("fooling", "compas_shap_scaffold"))


class AttackIneffective(RuntimeError):
    """The scaffold does not separate real rows from perturbed ones: the case would test nothing."""


# ------------------------------------------------------------------------------------------ data


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


_REQUIRED = ("age", "two_year_recid", "c_charge_degree", "race", "sex", "priors_count", "c_jail_in",
             "c_jail_out", "days_b_screening_arrest", "is_recid", "score_text")


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
    CSV, a missing column, a bad cell) raises :class:`pytest_xai.options.DataFileError` (a
    ValueError) naming the file, line and column, and what to do.
    """
    return _read_compas(Path(path), seed, min_rows)


def _read_compas(path: Path, seed: int, min_rows: int) -> tuple[np.ndarray, np.ndarray]:
    from pytest_xai.options import DataFileError, csv_records

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
                raise DataFileError(f"{path}, line {line}, column {name!r}: {cell[name]!r:.80} is not a number; "
                                    f"{fix}") from None
            return value

        if cell["days_b_screening_arrest"] in ("", "NA"):  # pandas reads these as NaN: filtered out
            continue
        if not -30 <= number("days_b_screening_arrest") <= 30 or number("is_recid") == -1:
            continue
        if cell["c_charge_degree"] == "O" or cell["score_text"] in ("", "NA"):
            continue
        if cell["c_charge_degree"] not in ("F", "M"):
            raise DataFileError(f"{path}, line {line}, column 'c_charge_degree': {cell['c_charge_degree']!r:.80} "
                                f"is not F, M or O; {fix}")
        if cell["sex"] not in ("Female", "Male"):
            raise DataFileError(f"{path}, line {line}, column 'sex': {cell['sex']!r:.80} is not Female or Male; "
                                f"{fix}")
        stay = {}
        for name in ("c_jail_in", "c_jail_out"):
            try:
                stay[name] = _date(cell[name][:80])
            except ValueError as exc:
                raise DataFileError(f"{path}, line {line}, column {name!r}: {exc}; {fix}") from None
        felony, male = cell["c_charge_degree"] == "F", cell["sex"] == "Male"
        rows.append((number("age"), number("two_year_recid"), number("priors_count"),
                     float((stay["c_jail_out"] - stay["c_jail_in"]).days), felony, not felony,
                     not male, male, cell["race"] == "African-American", cell["score_text"] == "High"))
    if len(rows) < min_rows:
        raise DataFileError(f"{path}: {len(rows)} rows remain after the filters of Slack et al. "
                            f"(days_b_screening_arrest in [-30, 30], is_recid != -1, c_charge_degree != 'O', "
                            f"score_text present); the attack needs at least {min_rows}; {fix}")
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
    return {"train": scaler.transform(x_train), "test": scaler.transform(x_test), "y_train": y_train,
            "y_test": y_test, "mean": scaler.mean_, "scale": scaler.scale_}


# ------------------------------------------------------------------------------------- the models


def _one_hot_class0(condition):
    condition = np.asarray(condition, dtype=float)
    return np.column_stack([condition, 1.0 - condition])


def biased_f(X):
    """Slack et al.'s f: class 0 ("High risk") exactly when race > 0 (standardized: African-American)."""
    return _one_hot_class0(np.asarray(X)[:, RACE] > 0)


def innocuous_psi(X):
    """Slack et al.'s psi: class 0 exactly when the random unrelated_column > 0."""
    return _one_hot_class0(np.asarray(X)[:, UNRELATED] > 0)


class Forest:
    """The in-distribution probability of a fitted sklearn random forest, rebuilt from its tree arrays.

    ``arrays`` holds every tree's public ``tree_`` arrays (``children_left``, ``children_right``,
    ``feature``, ``threshold`` and the class-1 fraction of ``value`` per node) concatenated, with
    per-tree node counts, so it can be stored without pickle and read back without sklearn's private
    ``Tree`` state.  Prediction walks those arrays as sklearn's trees do (rows as float32, left when
    ``x[feature] <= threshold``), on the unique rows only (coalition hybrids repeat a lot).
    """

    #: (row, tree) pairs walked at once: small enough that the walk's arrays stay in the CPU cache
    #: (measured: 2x faster than one tree at a time on few rows, 1.2x on 15k rows, and 2x faster
    #: than all the rows at once), large enough that the Python loop over tree levels is short.
    PAIRS = 65_536
    #: Tree levels walked between two checks of which pairs reached their leaf.
    LEVELS = 4
    #: Trees added at a time once a row's routing can be decided (:meth:`is_in_distribution`).
    TREES = 5

    def __init__(self, arrays: dict[str, np.ndarray]):
        self.columns = [int(c) for c in arrays["columns"]]
        counts = arrays["node_count"].astype(np.intp)
        self.roots = np.concatenate([[0], np.cumsum(counts)[:-1]])  # each tree's first node in the joined arrays
        offset = np.repeat(self.roots, counts)
        left, right = arrays["left"].astype(np.intp), arrays["right"].astype(np.intp)
        self.is_leaf = left < 0
        leaf = np.flatnonzero(self.is_leaf)
        self.children = np.empty(2 * len(left), dtype=np.intp)  # node 2k: x > threshold (right), 2k + 1: left
        self.children[0::2], self.children[1::2] = right + offset, left + offset
        self.children[2 * leaf] = self.children[2 * leaf + 1] = leaf  # a leaf is its own child: walks stop there
        self.feature = np.where(self.is_leaf, 0, arrays["feature"]).astype(np.intp)
        # float32 rows against float64 thresholds: x <= t exactly when x <= the largest float32 <= t
        threshold = np.asarray(arrays["threshold"], dtype=np.float64)
        below = threshold.astype(np.float32)
        over = below.astype(np.float64) > threshold
        below[over] = np.nextafter(below[over], np.float32(-np.inf))
        self.threshold = np.where(self.is_leaf, np.float32(np.inf), below)
        self.p_real = arrays["p_real"]

    def _leaves(self, rows: np.ndarray, roots: np.ndarray) -> np.ndarray:
        """The leaf each row (float32, n x d) reaches in each tree of ``roots``, (trees, n): all those
        trees walked together, one tree level per pass over the (tree, row) pairs not yet at a leaf."""
        n, d = rows.shape
        flat = rows.ravel()
        node = np.repeat(roots, n)
        start = np.tile(np.arange(n) * d, len(roots))
        walking = np.flatnonzero(~self.is_leaf[node])
        while walking.size:
            at, where = node[walking], start[walking]
            for _ in range(self.LEVELS):  # a pair at its leaf stays there: no check needed in between
                at = self.children[2 * at + (flat[where + self.feature[at]] <= self.threshold[at])]
            node[walking] = at
            walking = walking[~self.is_leaf[at]]
        return node.reshape(len(roots), n)

    @staticmethod
    def arrays_of(forest, columns) -> dict[str, np.ndarray]:
        """The arrays of a fitted ``RandomForestClassifier`` (class 1 = real rows), from ``tree_``."""
        trees = [estimator.tree_ for estimator in forest.estimators_]

        def joined(get):
            return np.concatenate([get(tree) for tree in trees])

        return {"columns": np.asarray(columns), "node_count": np.array([tree.node_count for tree in trees]),
                "left": joined(lambda t: t.children_left), "right": joined(lambda t: t.children_right),
                "feature": joined(lambda t: t.feature), "threshold": joined(lambda t: t.threshold),
                "p_real": joined(lambda t: t.value[:, 0, 1] / t.value[:, 0].sum(axis=1))}

    def _add(self, total: np.ndarray, rows: np.ndarray, open_rows: np.ndarray, trees: slice) -> None:
        """``total[open_rows]`` += each tree's leaf value, tree after tree as sklearn adds them."""
        roots = self.roots[trees]
        chunk = max(1, self.PAIRS // len(roots))
        for first in range(0, len(open_rows), chunk):
            part = open_rows[first:first + chunk]
            values = self.p_real[self._leaves(rows[part], roots)]  # (trees, rows)
            # summed over axis 0, numpy adds tree after tree, as sklearn does: the same rounding
            total[part] = np.vstack([total[part][None], values]).sum(axis=0)

    def _unique(self, X) -> tuple[np.ndarray, np.ndarray]:
        return unique_rows(np.ascontiguousarray(np.asarray(X, dtype=float)[:, self.columns], dtype=np.float32))

    def in_distribution(self, X) -> np.ndarray:
        """P(real row) per row: the mean over trees of the leaf's class-1 fraction (as predict_proba,
        which adds the trees' probabilities in order, then divides)."""
        unique, inverse = self._unique(X)
        total = np.zeros(len(unique))
        self._add(total, unique, np.arange(len(unique)), slice(None))
        return (total / len(self.roots))[inverse]

    def is_in_distribution(self, X, level: float = 0.5) -> np.ndarray:
        """``in_distribution(X) >= level``, exactly, from only the trees needed to decide each row.

        Leaf values lie in [0, 1], so after k of T trees a row whose sum already gives a mean >= level,
        or cannot reach it even if the T - k others all give 1, is decided.  Most coalition hybrids
        are far from the level and are decided after 55-60 of the 100 trees: 1.4-1.9x faster than
        all the trees (``benchmarks/test_bench_fooling.py``)."""
        unique, inverse = self._unique(X)
        trees = len(self.roots)
        total = np.zeros(len(unique))
        open_rows = np.arange(len(unique))
        done = 0
        for stop in (*range(max(1, int(np.ceil(level * trees))), trees, self.TREES), trees):
            self._add(total, unique, open_rows, slice(done, stop))
            done = stop
            reachable = (total[open_rows] + (trees - done)) / trees >= level - 1e-9  # margin for rounding
            open_rows = open_rows[reachable & (total[open_rows] / trees < level)]
        return (total / trees >= level)[inverse]


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` on a 1-D integer key instead of whole rows.

    Each column is replaced by its code among its own distinct values and the codes are combined
    into one int64 key (re-coded whenever the next column could overflow it), so the final
    dedup sorts integers, not rows: 3-4x faster on millions of coalition rows.  When the key's range
    is small (few distinct values per column, as in coalition hybrids) a table replaces that sort.
    """
    key = np.zeros(len(rows), dtype=np.int64)
    distinct = 1
    for column in rows.T:
        values = np.unique(column)
        code = np.searchsorted(values, column)
        if distinct * len(values) >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            distinct = int(key.max()) + 1
        key = key * len(values) + code
        distinct *= len(values)
    if distinct > 4 * len(rows):
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return rows[first], inverse.reshape(-1)
    seen = np.zeros(distinct, dtype=bool)
    seen[key] = True
    inverse = (np.cumsum(seen) - 1)[key]  # the rank of each row's key among the keys present
    first = np.empty(int(inverse.max(initial=-1)) + 1, dtype=np.intp)
    first[inverse[::-1]] = np.arange(len(rows) - 1, -1, -1)  # the last write wins: each key's first row
    return rows[first], inverse


class Scaffold:
    """predict_proba of Slack et al.'s adversarial model: f where the detector says "real"
    (P >= 0.5), psi elsewhere.  Callable, so it serves as the case's ``predict`` and ``model``."""

    def __init__(self, detector: Forest, name: str):
        self.detector = detector
        self.name = name

    def routes_to_f(self, X) -> np.ndarray:
        return self.detector.is_in_distribution(X, 0.5)

    def __call__(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        return np.where(self.routes_to_f(X)[:, None], biased_f(X), innocuous_psi(X))

    predict_proba = __call__

    def __repr__(self) -> str:
        return f"Scaffold({self.name!r})"


def _fit_forest(X, y, columns, seed) -> tuple[dict[str, np.ndarray], float]:
    """RandomForestClassifier(100 trees, seeded, one job) on ``columns``; its arrays and probes."""
    from sklearn.ensemble import RandomForestClassifier

    start = time.perf_counter()
    forest = RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1).fit(X[:, columns], y)
    seconds = time.perf_counter() - start
    arrays = Forest.arrays_of(forest, columns)
    probes = X[np.random.default_rng(seed).choice(len(X), 500, replace=False)]
    arrays["probes"] = probes
    arrays["probe_in"] = forest.predict_proba(probes[:, columns])[:, 1]
    arrays["train_seconds"] = np.array(seconds)
    return arrays, seconds


def _detector(name, cache, params, columns, seed, make_data) -> tuple[Forest, dict]:
    """Train (or load from the cache) a detector; validated against the trained forest's probes."""
    import sklearn

    def build():
        X, y = make_data()
        return _fit_forest(X, y, columns, seed)[0]

    def validate(arrays):
        forest = Forest(arrays)
        error = np.abs(forest.in_distribution(arrays["probes"]) - arrays["probe_in"]).max()
        if error > 1e-9:
            raise ValueError(f"the rebuilt forest differs from the trained one by {error:g}")

    key = {**params, "sklearn": sklearn.__version__, "seed": seed}
    arrays = cache.arrays(name, key, build, validate)
    return Forest(arrays), {"detector_train_seconds": float(arrays["train_seconds"])}


def _lime_detector_data(train, seed, copies=30, std=0.3):
    """Slack et al.'s Adversarial_Lime_Model data: copies of the rows (1) vs noisy copies (0)."""
    rng = np.random.default_rng([seed, 30])
    real = np.tile(train, (copies, 1))
    noisy = real + rng.normal(0.0, std, real.shape)
    return np.vstack([real, noisy]), np.r_[np.ones(len(real)), np.zeros(len(noisy))]


def kmeans_summary(train, seed: int, k: int = 10) -> np.ndarray:
    """The k-means centroids of the training rows (``shap.kmeans(train, k, round_values=False)``).

    Not snapped to observed values: on this data, snapped centroids make substituted rows
    indistinguishable from unseen real ones, and the detector then sends only 76 % of held-out real
    rows to f (measured at seed 0), failing the CX-12 precondition.
    """
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=k, random_state=seed, n_init=10).fit(train).cluster_centers_


def substitute(rows, summary, rng) -> np.ndarray:
    """Slack et al.'s substitutions: d times, a random feature takes a random summary row's value."""
    out = np.array(rows, dtype=float)
    n, d = out.shape
    for _ in range(d):
        feature = rng.integers(0, d, n)
        out[np.arange(n), feature] = summary[rng.integers(0, len(summary), n), feature]
    return out


def _is_real(rows, real) -> np.ndarray:
    known = {row.tobytes() for row in np.ascontiguousarray(real)}
    return np.array([row.tobytes() in known for row in np.ascontiguousarray(rows)])


def _shap_detector_data(train, summary, seed, copies=10):
    """Slack et al.'s Adversarial_Kernel_SHAP_Model data: copies of the rows (1) vs substituted rows
    (0, unless the substitution happens to reproduce a training row).  Slack et al. drew 30,000
    substitutions for COMPAS's 4,629 training rows; smaller tables get proportionally fewer."""
    rng = np.random.default_rng([seed, 10])
    n_samples = round(30000 * len(train) / 4629)
    substituted = substitute(train[rng.integers(0, len(train), n_samples)], summary, rng)
    return (np.vstack([np.tile(train, (copies, 1)), substituted]),
            np.r_[np.ones(copies * len(train)), _is_real(substituted, train).astype(float)])


# ------------------------------------------------------------------------------------------ cases


def _precondition(scaffold, name, real, perturbed, how) -> dict:
    """CX-12: the attack must work, or the case errors instead of passing."""
    to_f = float(scaffold.routes_to_f(real).mean())
    to_psi = float(1.0 - scaffold.routes_to_f(perturbed).mean())
    agree_f = float((scaffold(real).argmax(1) == biased_f(real).argmax(1)).mean())
    agree_psi = float((scaffold(perturbed).argmax(1) == innocuous_psi(perturbed).argmax(1)).mean())
    if min(to_f, to_psi) < MIN_ROUTED:
        raise AttackIneffective(
            f"attack ineffective: the {name} detector sends {to_f:.1%} of {len(real)} held-out real rows to f "
            f"and {to_psi:.1%} of {len(perturbed)} {how} rows to psi; both must be >= {MIN_ROUTED:.0%} "
            f"(Slack et al. 2020; CX-12), or the case would test nothing")
    return {"real_routed_to_f": to_f, "perturbed_routed_to_psi": to_psi,
            "real_agree_with_f": agree_f, "perturbed_agree_with_psi": agree_psi}


def _data_key(X) -> str:
    return hashlib.sha256(np.ascontiguousarray(X).tobytes()).hexdigest()[:16]


def _case(info, seed, data, scaffold, background, meta) -> Case:
    rng = np.random.default_rng([seed, 50])
    explained = np.sort(rng.choice(len(data["test"]), N_EXPLAINED, replace=False))
    return Case(info=info, inputs=data["test"][explained], predict=scaffold, model=scaffold,
                target=HIGH_RISK, background=background, baseline=np.zeros(len(FEATURE_NAMES)),
                feature_names=list(FEATURE_NAMES),
                meta={**meta, "explained_rows": explained, "full_background": data["train"],
                      "mean": data["mean"], "scale": data["scale"]})


@FAMILY.case(category="fragility", source="LIME scaffold",
             checks={"fooling": {"race": RACE, "unrelated": UNRELATED}})
def compas_lime_scaffold(info, *, seed, cache, data_dir=None, n_rows: int = N_ROWS) -> Case:
    """COMPAS scaffold against LIME: off-lattice (noisy) rows see the innocuous model.

    ``n_rows`` sizes the synthetic table (smaller tables train the detector faster, for self-tests).
    """
    from pytest_xai.cases.tabular import summarise

    X, y, source = compas_data(data_dir, seed, n_rows)
    data = split_and_standardize(X, y, seed)
    key = {"train": _data_key(data["train"]), "copies": 30, "std": 0.3}
    detector, meta = _detector("fooling-lime-detector", cache, key, list(NUMERICAL), seed,
                               lambda: _lime_detector_data(data["train"], seed))
    scaffold = Scaffold(detector, "lime")
    noisy = data["test"] + np.random.default_rng([seed, 95]).normal(0.0, 0.3, data["test"].shape)
    meta.update(_precondition(scaffold, "LIME", data["test"], noisy, "N(0, 0.3^2)-perturbed"))
    background = summarise(data["train"], MAX_BACKGROUND, seed)
    return _case(info, seed, data, scaffold, background, {**meta, "source": source})


@FAMILY.case(category="fragility", source="Kernel-SHAP scaffold",
             checks={"fooling": {"race": RACE, "unrelated": UNRELATED}})
def compas_shap_scaffold(info, *, seed, cache, data_dir=None, n_rows: int = N_ROWS) -> Case:
    """COMPAS scaffold against KernelSHAP: rows with features substituted from the background see psi."""
    X, y, source = compas_data(data_dir, seed, n_rows)
    data = split_and_standardize(X, y, seed)
    summary = kmeans_summary(data["train"], seed)
    key = {"train": _data_key(data["train"]), "summary": _data_key(summary), "copies": 10, "n": "30000 per 4629"}
    detector, meta = _detector("fooling-shap-detector", cache, key, list(range(X.shape[1])), seed,
                               lambda: _shap_detector_data(data["train"], summary, seed))
    scaffold = Scaffold(detector, "kernel_shap")
    substituted = substitute(data["test"], summary, np.random.default_rng([seed, 95]))
    substituted = substituted[~_is_real(substituted, np.vstack([data["train"], data["test"]]))]
    meta.update(_precondition(scaffold, "Kernel-SHAP", data["test"], substituted, "substituted"))
    return _case(info, seed, data, scaffold, summary, {**meta, "source": source})


# ------------------------------------------------------------------------------------------ check


_RANKS_OF_ABS = "the check ranks |A| per row, which the sign and the scale of the attributions cannot change"


@check(marker="xai_fooling", thresholds={"min_race_top": 0.9, "max_unrelated_top": 0.0}, passes_by_construction={
    "sign_flipped": _RANKS_OF_ABS,
    "scaled_negative": _RANKS_OF_ABS,
    "abs_of_exact": _RANKS_OF_ABS,
    "shuffled_rows": "the check asks only which feature is first in each row; the correct explanation puts race "
                     "first in every row, so every other row's explanation does too",
    "row_offset": "race's attribution dominates the reference's RMS; an offset of 0.5-1.5 RMS on every "
                  "feature keeps |race| first",
    "noisy_10": "noise at 10 % of the RMS is far below race's margin over the next feature",
    "noisy_30": "noise at 30 % of the RMS stays below race's margin over the next feature",
    "swapped@compas_shap_scaffold": "every substitution explainer is fooled by this scaffold and puts "
                                    "unrelated_column first, race second: swapping the two top features of that "
                                    "(fooled) reference puts race first",
})
def fooling(attributions, case: Case, *, race: int, unrelated: int, min_race_top: float,
            max_unrelated_top: float) -> Score:
    """Race stays the top feature of a racist model hidden behind an innocuous scaffold (not fooled).

    Slack et al. 2020 via Compare-xAI fooling_perturbation_alg, corrected (CX-2): per explained row,
    ranks of |A| (0 = top, ties share their average rank); race is "top-1" at rank 0 (a tie is not
    a win), unrelated_column is "top-1" when its rank is < 1 (it shares the top).  Pass when race
    is top-1 in >= min_race_top of the rows and unrelated_column in <= max_unrelated_top of them.
    The value is the mean race_score = 1 - r_race / (n - 1).  Ranks on the global importance are
    reported too.  Defaults from controls on compas_lime_scaffold: exact interventional Shapley
    values (substitutions stay on the lattice) put race first in every row, LIME (fooled) and
    random noise (race first with probability 1/10) put it first in few rows.
    Zoo (``tests/test_zoo.py``): zeros and constants tie every feature (a tie is not a win), the
    input itself, the output copied, the input minus the mean and noise fail.  Passed by
    construction (declared): sign, scale and |A| (ranks of |A|), exchanging rows of an explanation
    that puts race first in every row, an offset or noise below race's margin, and, on the SHAP
    scaffold, swapping the two top features of a fooled reference.
    """
    A = np.abs(attributions_of(attributions)).reshape(len(case.inputs), -1)
    n = A.shape[1]
    row_ranks = descending_ranks(A)
    race_rank, unrelated_rank = row_ranks[:, race], row_ranks[:, unrelated]
    race_top = float((race_rank == 0).mean())
    unrelated_top = float((unrelated_rank < 1).mean())
    value = float((1.0 - race_rank / (n - 1)).mean())
    global_ranks = descending_ranks(importance_of(attributions).reshape(-1))
    passed = bool(race_top >= min_race_top and unrelated_top <= max_unrelated_top)
    names = case.feature_names
    worst = int(race_rank.argmax())
    leaders, counts = np.unique(row_ranks.argmin(axis=1), return_counts=True)
    leader = int(leaders[counts.argmax()])
    verdict = "not fooled" if passed else "fooled"
    detail = (f"{verdict}: {names[race]} ranked first in {race_top:.0%} of {len(A)} rows (need >= "
              f"{min_race_top:.0%}), {names[unrelated]} in {unrelated_top:.0%} (allowed <= {max_unrelated_top:.0%}); "
              f"most often first: {names[leader]}; global ranks: {names[race]} {global_ranks[race]:g}, "
              f"{names[unrelated]} {global_ranks[unrelated]:g} of 0..{n - 1}")
    params = {"race": race, "unrelated": unrelated, "min_race_top": min_race_top,
              "max_unrelated_top": max_unrelated_top, "race_top": race_top, "unrelated_top": unrelated_top,
              "unrelated_score": float((unrelated_rank / (n - 1)).mean()),
              "global_race_rank": float(global_ranks[race]), "global_unrelated_rank": float(global_ranks[unrelated])}
    return Score("fooling", value, passed, min_race_top, detail, params,
                 {"row": worst, "race_rank": float(race_rank[worst]),
                  "top_feature": names[int(row_ranks[worst].argmin())]})
