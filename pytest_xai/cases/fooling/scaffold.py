"""The scaffolding attack of the fooling family (Slack et al. 2020; see :mod:`pytest_xai.cases.fooling`):
the biased model f, the innocuous psi, the out-of-distribution detectors (sklearn random forests
stored as their public ``tree_`` arrays and walked, :class:`Forest`) and the :class:`Scaffold` that
routes each row to f or psi.
"""

from __future__ import annotations

import time

import numpy as np

from pytest_xai.cases.fooling.data import RACE, UNRELATED


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

        return {
            "columns": np.asarray(columns),
            "node_count": np.array([tree.node_count for tree in trees]),
            "left": joined(lambda t: t.children_left),
            "right": joined(lambda t: t.children_right),
            "feature": joined(lambda t: t.feature),
            "threshold": joined(lambda t: t.threshold),
            "p_real": joined(lambda t: t.value[:, 0, 1] / t.value[:, 0].sum(axis=1)),
        }

    def _add(self, total: np.ndarray, rows: np.ndarray, open_rows: np.ndarray, trees: slice) -> None:
        """``total[open_rows]`` += each tree's leaf value, tree after tree as sklearn adds them."""
        roots = self.roots[trees]
        chunk = max(1, self.PAIRS // len(roots))
        for first in range(0, len(open_rows), chunk):
            part = open_rows[first : first + chunk]
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


def trained_detector(name, cache, params, columns, seed, make_data) -> tuple[Forest, dict]:
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


def lime_detector_data(train, seed, copies=30, std=0.3):
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


def is_real(rows, real) -> np.ndarray:
    """Per row of ``rows``: whether it is exactly one of the ``real`` rows."""
    known = {row.tobytes() for row in np.ascontiguousarray(real)}
    return np.array([row.tobytes() in known for row in np.ascontiguousarray(rows)])


def shap_detector_data(train, summary, seed, copies=10):
    """Slack et al.'s Adversarial_Kernel_SHAP_Model data: copies of the rows (1) vs substituted rows
    (0, unless the substitution happens to reproduce a training row).  Slack et al. drew 30,000
    substitutions for COMPAS's 4,629 training rows; smaller tables get proportionally fewer."""
    rng = np.random.default_rng([seed, 10])
    n_samples = round(30000 * len(train) / 4629)
    substituted = substitute(train[rng.integers(0, len(train), n_samples)], summary, rng)
    return (
        np.vstack([np.tile(train, (copies, 1)), substituted]),
        np.r_[np.ones(copies * len(train)), is_real(substituted, train).astype(float)],
    )
