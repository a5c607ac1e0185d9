"""A reference explanation for a case whose truth is unknown: Shapley values of its own model.

For a user's model (``pytest_xai.make_case``) no attribution is known, so the fidelity checks would
be held to absolute bars that a subtly wrong explainer clears (docs/your-model.md, "A
reference for your model").  Here the reference is computed from the model itself, per row and target class:

- ``convention="interventional"``: v_x(S) = mean over background rows b of f(x_S, b_rest)
  (Janzing et al. 2020), what TreeSHAP (interventional) and KernelSHAP estimate;
- ``convention="baseline"``: the same with the one baseline row (baseline Shapley, Sundararajan &
  Najmi 2020), the game of Integrated Gradients and other zero-baseline methods.

Players are the features, or the groups of ``case.meta["groups"]`` (features with one id move
together; each feature gets its group's value, as captum's ``feature_mask`` and
:mod:`pytest_xai.explainers.grouped` do).  **Exact** at any width for tree ensembles and linear models
whose outputs the case explains (interventional TreeSHAP or the closed form, read from the model:
:mod:`pytest_xai.model_shapley`); else **exact** by enumerating the 2^G coalitions (the weights of
:func:`pytest_xai.shapley.coalitions`) when G <= 16 and n 2^G m model evaluations fit the budget;
otherwise **estimated** by permutation sampling with antithetic pairs (each permutation and its
reverse; Mitchell et al. 2022), stratified over the background rows (:func:`permutation`: each row's
own game, every row the same number of pairs, as many as the budget gives), unbiased.  At the same
number of model evaluations it errs less than sampling the averaged game (a quarter to three
quarters less RMS error, ``tests/test_reference.py``), and needs a quarter of the evaluations for a
bound.  Its error bound comes from its own variance: each value's bound is t * se, t the Student
quantile of 95 % Bonferroni-corrected over the n G values, se the standard error pooled within the
background rows, so the true values are within their bounds everywhere in at least 95 % of runs
(``tests/test_reference.py``); ``max_error`` is the largest bound.  ``rms_error`` bounds the root
mean square error over all values at 95 % (a weighted sum of F(1, dof) variables at Satterthwaite's
degrees of freedom); gt_shapley widens its tolerance by it relative to the values' RMS
(:attr:`Reference.relative_error`), and faithfulness, monotonicity and infidelity their gap by how far
the values' standard errors (``se``) move their score (``pytest_xai.cases.gaussian.checks._spread``).

The result is memoised per case and stored in the disk cache the case was built with, keyed by a
fingerprint of the inputs, background, targets and the model's outputs (a changed model recomputes).
"""

from __future__ import annotations

import hashlib
import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_xai.case import Case
from pytest_xai.engine.budget import DEFAULT
from pytest_xai.errors import NotApplicable
from pytest_xai.shapley import MAX_FEATURES, coalitions

#: Model evaluations (rows passed to ``predict``) a reference may spend, unless the case sets its own
#: (``make_case(reference=N)``); ``reference=False`` turns it off.  The budget of one explainer call.
BUDGET = DEFAULT
#: The conventions a reference is computed for (``explain.reference`` selects one).
CONVENTIONS = ("interventional", "baseline")
#: An estimate pools the variance of at least MIN_PAIRS - 1 degrees of freedom (two antithetic pairs
#: per background row, eight for one baseline row); fewer cannot state an error bound worth the name.
MIN_PAIRS = 8
_ROWS_PER_CALL = 1 << 18
_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Reference:
    """Reference attributions (shaped like the case's inputs) and how they were had."""

    values: np.ndarray
    method: str  # exact: "exact" (coalition enumeration), "tree" or "linear" (the model's form); or "permutation"
    evaluations: int
    max_error: float  # bound on max |values - true Shapley values| (0 for exact)
    convention: str
    rms_error: float = 0.0  # 95 % bound on the root mean square error over all values
    se: np.ndarray | None = None  # each value's standard error, shaped like ``values`` (None when exact)

    def summary(self) -> dict[str, Any]:
        """What the JSON report records: ``{method, evaluations, max_error, convention}``."""
        return {
            "method": self.method,
            "evaluations": int(self.evaluations),
            "max_error": float(self.max_error),
            "convention": self.convention,
        }

    @property
    def relative_error(self) -> float:
        """Bound on ||values - truth|| / ||values|| over the whole matrix: ``rms_error`` over the RMS of
        the values (0 when exact; 1 at most)."""
        rms = float(np.sqrt(np.mean(np.square(self.values))))
        return 0.0 if self.rms_error == 0 else min(1.0, self.rms_error / rms) if rms > 0 else 1.0


def _players(groups: Any, d: int) -> np.ndarray:
    """(G, d) bool: which features each player moves."""
    if groups is None:
        return np.eye(d, dtype=bool)
    ids = np.asarray(groups).reshape(-1)
    if ids.size != d:
        raise ValueError(f"groups has {ids.size} entries for {d} features")
    return ids[None, :] == np.unique(ids)[:, None]


class _Game:
    """v_x(S) for every explained row: ``value(rows, masks)`` with masks (k, G) over players."""

    def __init__(self, predict, inputs: np.ndarray, reference_rows: np.ndarray, target: Any, groups: Any):
        self.shape = np.shape(inputs)
        self.x = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
        self.n, self.d = self.x.shape
        self.bg = np.asarray(reference_rows, dtype=float).reshape(-1, self.d)
        self.players = _players(groups, self.d)
        self.player_of = self.players.argmax(axis=0)  # (d,): the player each feature belongs to
        self.target = None if target is None else np.broadcast_to(np.asarray(target, dtype=int), (self.n,))
        self.predict, self.evaluations = predict, 0

    def _outputs(self, rows: np.ndarray, targets: np.ndarray | None) -> np.ndarray:
        self.evaluations += len(rows)
        out = np.asarray(self.predict(rows.reshape((-1,) + self.shape[1:])), dtype=float)
        if out.ndim == 2 and out.shape[1] == 1 and targets is None:
            out = out[:, 0]
        if out.ndim == 2:
            if targets is None:
                raise ValueError(f"predict returned class probabilities {out.shape}; the case needs a target")
            out = out[np.arange(len(out)), targets]
        return out.reshape(len(rows))

    def values(self, rows: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """v for ``masks`` (r, k, G) of player coalitions at ``rows`` (r,): shape (r, k)."""
        r, k, _ = masks.shape
        m = len(self.bg)
        features = masks[:, :, self.player_of]  # (r, k, d): the players' features
        out = np.empty((r, k))
        block = max(1, _ROWS_PER_CALL // max(1, k * m))
        for start in range(0, r, block):
            stop = min(r, start + block)
            x = self.x[rows[start:stop]]
            hybrid = np.where(features[start:stop, :, None, :], x[:, None, None, :], self.bg[None, None])
            targets = None if self.target is None else np.repeat(self.target[rows[start:stop]], k * m)
            y = self._outputs(hybrid.reshape(-1, self.d), targets)
            out[start:stop] = y.reshape(stop - start, k, m).mean(axis=2)
        return out

    def single(self, rows: np.ndarray, backgrounds: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """f(x_S, b_rest) for masks (k, c, G) of player coalitions at explained rows ``rows`` (k,) and
        background rows ``backgrounds`` (k,): shape (k, c), one model evaluation each."""
        k, c, _ = masks.shape
        out = np.empty((k, c))
        block = max(1, _ROWS_PER_CALL // c)
        for start in range(0, k, block):
            part = slice(start, start + block)
            features = masks[part][:, :, self.player_of]
            hybrid = np.where(features, self.x[rows[part], None], self.bg[backgrounds[part], None])
            targets = None if self.target is None else np.repeat(self.target[rows[part]], c)
            out[part] = self._outputs(hybrid.reshape(-1, self.d), targets).reshape(-1, c)
        return out


def exact(game: _Game) -> np.ndarray:
    """Shapley values of every row by enumerating the 2^G coalitions: (n, G)."""
    masks, W = coalitions(len(game.players))
    rows = np.arange(game.n)
    return game.values(rows, np.broadcast_to(masks, (game.n,) + masks.shape)) @ W


def permutation(game: _Game, pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Antithetic permutation sampling stratified over the background rows: for each explained row x
    and each background row b, ``pairs`` permutations and their reverses of the baseline game of b,
    f(x_S, b_rest), whose Shapley values average over b to the interventional ones.  Every b gets the
    same number (proportional stratified sampling, Cochran 1977 §5.3), so the spread of the values
    across background rows, the largest part of a single-row estimate's variance, drops out, and each
    coalition costs one model evaluation rather than one per background row.  Returns (estimate (n,
    G), standard error (n, G), degrees of freedom (n, G)): the standard error pools the variances
    within each b (pairs - 1 degrees of freedom each; Satterthwaite's for the sum)."""
    G, n, m = len(game.players), game.n, len(game.bg)
    rng = np.random.default_rng([seed, 27])
    total, squares = np.zeros((n, m, G)), np.zeros((n, m, G))
    x_of, b_of = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)  # every (x, b) stratum
    ends = game.single(x_of, b_of, np.stack([np.zeros((n * m, G), bool), np.ones((n * m, G), bool)], axis=1))
    block = max(1, _ROWS_PER_CALL // max(1, 2 * (G - 1)))  # strata per model call
    for _ in range(pairs):
        order = rng.random((n * m, G)).argsort(axis=1)
        orders = np.stack([order, order[:, ::-1]], axis=1)  # (n m, 2, G): each with its reverse
        position = np.empty_like(orders)
        np.put_along_axis(position, orders, np.broadcast_to(np.arange(G), orders.shape), axis=2)
        phi = np.empty((n * m, 2, G))
        for start in range(0, n * m, block):
            stop = min(n * m, start + block)
            inner = position[start:stop, :, None, :] < np.arange(1, G)[None, None, :, None]  # first j players
            v = np.empty((stop - start, 2, G + 1))
            v[:, :, 0], v[:, :, G] = ends[start:stop, :1], ends[start:stop, 1:]
            v[:, :, 1:G] = game.single(x_of[start:stop], b_of[start:stop], inner.reshape(stop - start, -1, G)).reshape(
                stop - start, 2, G - 1
            )
            np.put_along_axis(phi[start:stop], orders[start:stop], np.diff(v, axis=2), axis=2)  # each order's gains
        pair_means = phi.mean(axis=1).reshape(n, m, G)
        total += pair_means
        squares += np.square(pair_means)
    means = total / pairs
    within = np.maximum(squares - pairs * np.square(means), 0.0) / max(pairs - 1, 1) / pairs  # (n, m, G)
    variance = within.sum(axis=1) / m**2
    square_sum = np.square(within).sum(axis=1)
    dof = np.where(square_sum > 0, np.square(within.sum(axis=1)) / np.where(square_sum > 0, square_sum, 1.0), 1.0)
    return means.mean(axis=1), np.sqrt(variance), dof * (pairs - 1)


def structural(game: _Game, model: Any) -> tuple[np.ndarray, str] | None:
    """(values (n, G), "tree" or "linear"): the exact values from ``model``'s form
    (:mod:`pytest_xai.model_shapley`) when the game's outputs are that form's up to a constant on the
    explained rows, the background rows and one hybrid of each explained row, for every target
    explained; else None."""
    from pytest_xai import model_shapley

    form = model_shapley.form_of(model)
    single = bool((game.players.sum(axis=1) == 1).all())
    if form is None or (isinstance(form, model_shapley.Leaves) and not single):
        return None  # a tree's players must be its features
    rng = np.random.default_rng(0)  # and on hybrids of the two, where the game plays
    hybrid = np.where(rng.random(game.x.shape) < 0.5, game.x, game.bg[rng.integers(len(game.bg), size=game.n)])
    probe = np.concatenate([game.x, game.bg, hybrid])
    ours = form.outputs(probe)
    if game.target is None:  # one output: whichever of the form's it is
        theirs = game._outputs(probe, None)
        columns = [k for k in range(ours.shape[1]) if _same_up_to_a_constant(theirs, ours[:, k])]
        targets = np.full(game.n, columns[0] if columns else -1)
    else:
        targets = game.target
        for t in np.unique(targets):
            if t >= ours.shape[1] or not _same_up_to_a_constant(
                game._outputs(probe, np.full(len(probe), t)), ours[:, t]
            ):
                targets = np.full(game.n, -1)
    if (targets < 0).any():
        return None  # another output of the model: a probability of a boosted or logistic classifier
    per_feature = form.shapley(game.x, game.bg, targets)
    kind = "tree" if isinstance(form, model_shapley.Leaves) else "linear"
    return per_feature @ game.players.T.astype(float), kind  # a group's value: the sum of its features' (additive)


def _same_up_to_a_constant(theirs: np.ndarray, ours: np.ndarray) -> bool:
    """Whether the case's outputs are the form's plus a constant (to xgboost's float32 sums, 1e-7)."""
    return bool(np.ptp(theirs - ours) <= 1e-5 * max(float(np.abs(theirs).max()), 1e-12))


def compute(
    predict,
    inputs: Any,
    rows: Any,
    *,
    target: Any = None,
    groups: Any = None,
    budget: int = BUDGET,
    seed: int = 0,
    convention: str = "interventional",
    model: Any = None,
) -> Reference:
    """The reference of ``predict`` at ``inputs`` against ``rows`` (background rows, or the one
    baseline row): exact from the structure of ``model`` when it is a tree ensemble or a linear model
    whose output ``predict`` gives (:func:`structural`), else exact by enumeration when it fits
    ``budget`` model evaluations, else estimated; raises :class:`pytest_xai.NotApplicable` when even
    the smallest estimate does not fit."""
    game = _Game(predict, inputs, rows, target, groups)
    G, n, m = len(game.players), game.n, len(game.bg)
    exact_cost = n * (2**G) * m if G <= MAX_FEATURES else math.inf
    found = structural(game, model) if model is not None else None
    errors = None  # the standard errors of an estimate
    if found is not None:
        phi, method, bound, rms = found[0], found[1], 0.0, 0.0
    elif exact_cost <= budget:
        phi, method, bound, rms = exact(game), "exact", 0.0, 0.0
    else:
        fewest = fewest_pairs(m)
        pairs = int((budget / n - 2 * m) // (2 * (G - 1) * m)) if G > 1 else 0
        if pairs < fewest:
            raise NotApplicable(
                f"a reference needs {fewest} antithetic pairs of permutations per background row, "
                f"{n * m * (2 + 2 * fewest * (G - 1)):,} model evaluations for {n} rows, "
                f"{G} players and {m} background rows; the budget is {budget:,}"
            )
        from scipy.stats import t as student

        phi, se, dof = permutation(game, pairs, seed)
        quantile = student.ppf(1 - (1 - _CONFIDENCE) / (2 * n * G), dof)
        rms = _rms_bound(se[:, game.player_of], float(dof.min()))
        method, bound = "permutation", float((quantile * se).max())
        errors = se[:, game.player_of].reshape(game.shape)
    values = phi[:, game.player_of].reshape(game.shape)  # each feature gets its group's value
    return Reference(values, method, game.evaluations, bound, convention, rms, errors)


def fewest_pairs(m: int) -> int:
    """The fewest antithetic pairs per background row of an estimate against ``m`` rows: two, and
    MIN_PAIRS - 1 degrees of freedom in all."""
    return max(2, math.ceil((MIN_PAIRS - 1) / m) + 1)


def _rms_bound(se: np.ndarray, dof: float) -> float:
    """A 95 % bound on the RMS of the errors from their estimated standard errors: each squared error
    over its se^2 is F(1, dof) (``dof``: the fewest of the values'); their weighted sum is taken as F
    at Satterthwaite's effective degrees of freedom."""
    from scipy.stats import f as fisher

    v = np.square(se).reshape(-1)
    if not v.any():
        return 0.0
    effective = float(v.sum() ** 2 / np.square(v).sum())
    return float(np.sqrt(v.mean() * fisher.ppf(_CONFIDENCE, effective, dof)))


_MEMO: weakref.WeakKeyDictionary[Case, dict[str, Reference | str]] = weakref.WeakKeyDictionary()


def _fingerprint(case: Case, rows: np.ndarray, convention: str, budget: int) -> str:
    """What the reference depends on: inputs, reference rows, targets, groups and the model's outputs
    there (a retrained model changes them), the convention and budget."""
    digest = hashlib.sha256()
    probe = np.concatenate(
        [np.asarray(case.inputs, dtype=float).reshape(len(case.inputs), -1), rows.reshape(len(rows), -1)]
    )
    for part in (
        probe,
        np.asarray(case.outputs(), dtype=float),
        np.asarray(case.predict(rows.reshape((-1,) + np.shape(case.inputs)[1:])), dtype=float),
        np.asarray(case.target, dtype=float),
        np.asarray(case.meta.get("groups", -1), dtype=float),
    ):
        digest.update(np.ascontiguousarray(part).tobytes())
    digest.update(f"{convention}:{budget}:model forms, stratified".encode())  # older caches: other methods
    return digest.hexdigest()


def _rows(case: Case, convention: str) -> np.ndarray:
    if convention not in CONVENTIONS:
        raise ValueError(f"reference convention must be one of {CONVENTIONS}, got {convention!r}")
    source = case.background if convention == "interventional" else case.baseline
    if source is None:
        raise NotApplicable(
            f"case {case.name!r} has no {'background' if convention == 'interventional' else 'baseline'}"
            f" to compute a {convention} reference against"
        )
    x = np.asarray(case.inputs)
    rows = np.asarray(source, dtype=float)
    return np.array(np.broadcast_to(rows, (1,) + x.shape[1:]) if convention == "baseline" else rows)  # writable


def for_case(case: Case, convention: str = "interventional") -> Reference:
    """The case's reference of ``convention``, computed once per case (and stored in the case's disk
    cache); raises :class:`pytest_xai.NotApplicable` with the reason when there is none (turned off
    with ``make_case(reference=False)``, no background or baseline, or beyond the budget)."""
    memo = _MEMO.setdefault(case, {})
    if convention not in memo:
        try:
            memo[convention] = _build(case, convention)
        except NotApplicable as exc:
            memo[convention] = str(exc)
    found = memo[convention]
    if isinstance(found, str):
        raise NotApplicable(found)
    return found


def _build(case: Case, convention: str) -> Reference:
    setting = case.meta.get("reference", True)
    if setting is False:
        raise NotApplicable(f"the reference is turned off for case {case.name!r} (make_case(reference=False))")
    budget = BUDGET if setting is True else int(setting)
    rows = _rows(case, convention)
    seed = int(case.meta.get("seed", 0))

    def build() -> dict[str, np.ndarray]:
        ref = compute(
            case.predict,
            case.inputs,
            rows,
            target=case.target,
            groups=case.meta.get("groups"),
            budget=budget,
            seed=seed,
            convention=convention,
            model=case.model,
        )
        return {
            "values": ref.values,
            "method": np.array(ref.method),
            "evaluations": np.array(ref.evaluations),
            "max_error": np.array(ref.max_error),
            "rms_error": np.array(ref.rms_error),
            "se": np.zeros_like(ref.values) if ref.se is None else ref.se,
        }

    from pytest_xai import cases
    from pytest_xai.cache import Cache

    built = cases.built_with(case)
    cache = Cache(built[2] if built is not None else None)
    stored = cache.arrays(
        "reference", {"case": case.name, "fingerprint": _fingerprint(case, rows, convention, budget)}, build
    )
    return Reference(
        stored["values"],
        str(stored["method"]),
        int(stored["evaluations"]),
        float(stored["max_error"]),
        convention,
        float(stored["rms_error"]),
        stored["se"] if stored["se"].any() else None,
    )
