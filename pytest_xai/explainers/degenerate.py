"""The degenerate-explainer zoo: explainers that explain nothing, or explain wrongly.

Every check must fail every member of the zoo, except the members it declares it passes *by
construction* (``passes_by_construction`` on :func:`pytest_xai.checks.check`, with the reason).
``tests/test_zoo.py`` asserts this for every registered check and case.

Two groups:

- **explain nothing**: ``zeros``, ``constant``, ``noise`` (seeded), ``input_itself``,
  ``output_copied`` (the model output for the explained class, copied to every feature) and
  ``input_minus_mean`` (the input minus the background mean; for f = x0 + x1 it *is* the
  interventional Shapley value, so the x0 + x1 checks must declare it);
- **exact values, corrupted**: ``sign_flipped``, ``scaled_negative`` (-3 x), ``abs_of_exact``,
  ``row_offset`` (plus a per-row constant), ``swapped`` (the two most important features swapped),
  ``shuffled_rows`` (each row gets another row's explanation), ``noisy_10``, ``noisy_30``,
  ``noisy_100`` (seeded Gaussian noise at 10, 30, 100 % of the reference's RMS), ``one_row_in_ten``
  (rows 0, 10, 20... explained, zeros elsewhere: a row explained as nothing counts).  Their reference
  is :func:`pytest_xai.explainers.baselines.exact_shapley`; where it cannot run (too many
  features, no background) they raise :class:`pytest_xai.NotApplicable`, so the test is skipped.

:data:`TRANSFORMS` holds the same members as pure functions
``transform(reference, inputs, output, background, rng) -> array`` (``reference`` the correct
attributions, ``output`` the model output of the explained class, shape (n,)), so a test can apply
the zoo to a case's own ground truth, e.g. ``TRANSFORMS["swapped"](case.truth["shapley"], ...)``.
Members of the first group ignore ``reference``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_xai.explainers.baselines import exact_shapley

Transform = Callable[[np.ndarray, np.ndarray, np.ndarray, Any, np.random.Generator], np.ndarray]


def _rms(reference: np.ndarray) -> float:
    """The reference's scale: root mean square over the whole matrix (1 when it is all zero)."""
    rms = float(np.sqrt(np.mean(np.square(reference))))
    return rms if rms > 0 else 1.0


def _flat(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array, dtype=float)
    return array.reshape(len(array), -1)


def _output_column(output: Any, inputs: np.ndarray) -> np.ndarray:
    return np.asarray(output, dtype=float).reshape(len(inputs), *([1] * (inputs.ndim - 1)))


def _zeros(reference, inputs, output, background, rng):
    return np.zeros(np.shape(inputs))


def _constant(reference, inputs, output, background, rng):
    return np.ones(np.shape(inputs))


def _noise(reference, inputs, output, background, rng):
    return _rms(reference) * rng.standard_normal(np.shape(inputs))


def _input_itself(reference, inputs, output, background, rng):
    return np.array(inputs, dtype=float, copy=True)


def _output_copied(reference, inputs, output, background, rng):
    inputs = np.asarray(inputs, dtype=float)
    return np.broadcast_to(_output_column(output, inputs), inputs.shape).copy()


def _input_minus_mean(reference, inputs, output, background, rng):
    inputs = np.asarray(inputs, dtype=float)
    rows = inputs if background is None else np.asarray(background, dtype=float)
    return inputs - rows.reshape((len(rows),) + inputs.shape[1:]).mean(axis=0)


def _sign_flipped(reference, inputs, output, background, rng):
    return -np.asarray(reference, dtype=float)


def _scaled_negative(reference, inputs, output, background, rng):
    return -3.0 * np.asarray(reference, dtype=float)


def _abs_of_exact(reference, inputs, output, background, rng):
    return np.abs(np.asarray(reference, dtype=float))


def _row_offset(reference, inputs, output, background, rng):
    """Each row plus its own constant c_r ~ U(0.5, 1.5) times the reference's RMS (same sign for all)."""
    reference = np.asarray(reference, dtype=float)
    c = rng.uniform(0.5, 1.5, len(reference)) * _rms(reference)
    return reference + c.reshape((-1,) + (1,) * (reference.ndim - 1))


def _swapped(reference, inputs, output, background, rng):
    """The two features with the largest mean |reference| swapped (columns exchanged)."""
    reference = np.asarray(reference, dtype=float)
    flat = _flat(reference).copy()
    if flat.shape[1] < 2:
        return flat.reshape(reference.shape)
    top = np.argsort(-np.abs(flat).mean(axis=0), kind="stable")[:2]
    flat[:, top] = flat[:, top[::-1]]
    return flat.reshape(reference.shape)


def _shuffled_rows(reference, inputs, output, background, rng):
    """Each row gets the explanation of another row (a derangement: a cyclic shift of a permutation)."""
    reference = np.asarray(reference, dtype=float)
    n = len(reference)
    if n < 2:
        return reference.copy()
    order = rng.permutation(n)
    target = np.empty(n, dtype=int)
    target[order] = np.roll(order, 1)
    return reference[target]


def _one_row_in_ten(reference, inputs, output, background, rng):
    """The reference on rows 0, 10, 20, ... and zeros on every other row."""
    reference = np.array(reference, dtype=float, copy=True)
    reference[np.arange(len(reference)) % 10 != 0] = 0.0
    return reference


def _noisy(level: float) -> Transform:
    def transform(reference, inputs, output, background, rng):
        reference = np.asarray(reference, dtype=float)
        return reference + level * _rms(reference) * rng.standard_normal(reference.shape)

    transform.__doc__ = f"The reference plus seeded Gaussian noise at {level:.0%} of its RMS."
    return transform


#: Members that explain nothing; they ignore the reference.
NOTHING = ("zeros", "constant", "noise", "input_itself", "output_copied", "input_minus_mean")
#: Members that corrupt a correct reference.
CORRUPTED = (
    "sign_flipped",
    "scaled_negative",
    "abs_of_exact",
    "row_offset",
    "swapped",
    "shuffled_rows",
    "noisy_10",
    "noisy_30",
    "noisy_100",
    "one_row_in_ten",
)
MEMBERS = NOTHING + CORRUPTED

TRANSFORMS: dict[str, Transform] = {
    "zeros": _zeros,
    "constant": _constant,
    "noise": _noise,
    "input_itself": _input_itself,
    "output_copied": _output_copied,
    "input_minus_mean": _input_minus_mean,
    "sign_flipped": _sign_flipped,
    "scaled_negative": _scaled_negative,
    "abs_of_exact": _abs_of_exact,
    "row_offset": _row_offset,
    "swapped": _swapped,
    "shuffled_rows": _shuffled_rows,
    "noisy_10": _noisy(0.10),
    "noisy_30": _noisy(0.30),
    "noisy_100": _noisy(1.00),
    "one_row_in_ten": _one_row_in_ten,
}
assert tuple(TRANSFORMS) == MEMBERS


def apply(member: str, reference: Any, inputs: Any, output: Any, background: Any = None, seed: int = 0) -> np.ndarray:
    """``TRANSFORMS[member]`` with a generator seeded by ``seed`` (the same draw as the explainer)."""
    return TRANSFORMS[member](
        np.asarray(reference, dtype=float),
        np.asarray(inputs, dtype=float),
        np.asarray(output, dtype=float),
        background,
        np.random.default_rng(seed),
    )


def _output(predict, inputs, target) -> np.ndarray:
    from pytest_xai.metrics import outputs

    return outputs(predict, inputs, target)


# ------------------------------------------------------------------ the members as explainers


def zeros(inputs):
    """Attributes nothing: all zeros."""
    return _zeros(None, inputs, None, None, None)


def constant(inputs):
    """The same attribution (1) for every feature of every row."""
    return _constant(None, inputs, None, None, None)


def noise(inputs, seed):
    """Seeded standard normal noise."""
    return np.random.default_rng(seed).standard_normal(np.shape(inputs))


def input_itself(inputs):
    """The input returned as its own explanation."""
    return _input_itself(None, inputs, None, None, None)


def output_copied(inputs, predict, target):
    """The model output of the explained class, copied to every feature of the row."""
    return _output_copied(None, inputs, _output(predict, inputs, target), None, None)


def input_minus_mean(inputs, background):
    """The input minus the background mean (the interventional Shapley value of f = sum x_i only)."""
    return _input_minus_mean(None, inputs, None, background, None)


def _corrupted(member: str) -> Callable[..., np.ndarray]:
    def explain(inputs, predict, background, target, seed):
        reference = exact_shapley(inputs, predict, background, target)  # NotApplicable where it cannot run
        return apply(member, reference, inputs, _output(predict, inputs, target), background, seed)

    explain.__name__ = explain.__qualname__ = member
    explain.__doc__ = (
        f"Exact interventional Shapley values, corrupted: {member} "
        f"({(TRANSFORMS[member].__doc__ or '').strip() or member.replace('_', ' ')})."
    )
    return explain


sign_flipped = _corrupted("sign_flipped")
scaled_negative = _corrupted("scaled_negative")
abs_of_exact = _corrupted("abs_of_exact")
row_offset = _corrupted("row_offset")
swapped = _corrupted("swapped")
shuffled_rows = _corrupted("shuffled_rows")
noisy_10 = _corrupted("noisy_10")
noisy_30 = _corrupted("noisy_30")
noisy_100 = _corrupted("noisy_100")
one_row_in_ten = _corrupted("one_row_in_ten")

#: member name -> explainer obeying the contract.
ZOO: dict[str, Callable[..., np.ndarray]] = {name: globals()[name] for name in MEMBERS}


# ------------------------------------------------------------ estimators, right and wrong
#
# Sampling estimators of interventional Shapley values that spend their budget like the reference
# ones (:mod:`pytest_xai.engine.budget`), for the statistical checks of
# :mod:`pytest_xai.cases.games.checks`: ``permutation_sampling`` is correct (Castro et al. 2009),
# the others are wrong as an estimator can be while every single call looks plausible.  They are
# not zoo members (the zoo corrupts a fixed map; these are judged through several calls).


def _marginals(X, predict, background, target, orders) -> np.ndarray:
    """Sum over ``orders`` of each feature's marginal contribution, averaged over the background
    rows: an order is (n, d) int, one permutation per row, the features joining in turn, or (d,)
    bool, one coalition every feature joins in turn."""
    from pytest_xai.metrics import outputs

    n, d = X.shape
    rows, Z = np.arange(n), np.asarray(background, dtype=float).reshape(len(background), d)
    t = None if target is None else np.repeat(np.broadcast_to(np.asarray(target), (n,)), len(Z))

    def v(present):  # (n, d) bool -> (n,) mean over the background
        mixed = np.where(present[:, None, :], X[:, None, :], Z[None])
        return outputs(predict, mixed.reshape(-1, d), t).reshape(n, len(Z)).mean(axis=1)

    total = np.zeros((n, d))
    for order in orders:
        if order.dtype == bool:
            base = np.broadcast_to(order, (n, d)).copy()
            for j in range(d):
                base[:, j] = False
                off = v(base)
                base[:, j] = True
                total[:, j] += v(base) - off
                base[:, j] = order[j]
            continue
        present = np.zeros((n, d), dtype=bool)
        previous = v(present)
        for step in range(d):
            present[rows, order[:, step]] = True
            now = v(present)
            total[rows, order[:, step]] += now - previous
            previous = now
    return total


def _draws(inputs, background, budget: int, per_draw: int) -> int:
    """Draws the budget pays for (at most 25, captum's default): each costs ``per_draw`` evaluations
    per row and background row."""
    from pytest_xai.engine import budget as budgets

    return budgets.samples(
        budget, len(inputs), preferred=25, minimum=1, per_sample=per_draw * len(background), method="sampling"
    )


def permutation_sampling(inputs, predict, background, target, seed, budget):
    """Permutation sampling (Castro et al. 2009): uniform random orders, drawn for each row apart,
    each feature's marginal contribution when it joins, averaged; unbiased, as many orders as the
    budget pays for.  With two orders or more it reports the standard error of each mean (sample
    sd / sqrt(orders))."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    (n, d), rng = X.shape, np.random.default_rng(seed)
    k = _draws(X, background, budget, d + 1)
    orders = rng.permuted(np.tile(np.arange(d), (k, n, 1)), axis=2)
    draws = np.array([_marginals(X, predict, background, target, [order]) for order in orders])
    attributions = draws.mean(axis=0).reshape(np.shape(inputs))
    if k < 2:
        return attributions
    return {"attributions": attributions, "stderr": (draws.std(axis=0, ddof=1) / np.sqrt(k)).reshape(np.shape(inputs))}


def _values(output) -> np.ndarray:
    return np.asarray(output["attributions"] if isinstance(output, dict) else output)


def uniform_coalitions(inputs, predict, background, target, seed, budget):
    """Biased: marginal contributions to coalitions drawn uniformly (each feature in or out with
    probability 1/2), not Shapley-weighted: it converges to the Banzhaf value, which gives a k-way
    dividend 1/2^(k-1) instead of 1/k (equal for k <= 2, off from three-way interactions on)."""
    X = np.asarray(inputs, dtype=float).reshape(len(inputs), -1)
    d, rng = X.shape[1], np.random.default_rng(seed)
    k = _draws(X, background, budget, 2 * d)
    coalitions = [rng.random(d) < 0.5 for _ in range(k)]
    return (_marginals(X, predict, background, target, coalitions) / k).reshape(np.shape(inputs))


def shrunken(inputs, predict, background, target, seed, budget):
    """Biased towards zero: permutation sampling halved, as a heavily penalised regression estimate is."""
    return 0.5 * _values(permutation_sampling(inputs, predict, background, target, seed, budget))


def budget_ignored(inputs, predict, background, target, seed):
    """Permutation sampling with 4 orders a row whatever its budget: unbiased, but its error never falls."""
    d = int(np.prod(np.shape(inputs)[1:]))
    spent = 4 * (d + 1) * len(inputs) * len(background)
    return _values(permutation_sampling(inputs, predict, background, target, seed, spent))


def overconfident(inputs, predict, background, target, seed, budget):
    """Permutation sampling reporting a quarter of its standard errors: intervals four times too narrow."""
    out = permutation_sampling(inputs, predict, background, target, seed, budget)
    return {**out, "stderr": out["stderr"] / 4} if isinstance(out, dict) else out


permutation_sampling.estimator = uniform_coalitions.estimator = True  # type: ignore[attr-defined]
shrunken.estimator = budget_ignored.estimator = overconfident.estimator = True  # type: ignore[attr-defined]
#: The estimators above: the correct one first, then the wrong ones with the check each must fail.
ESTIMATORS: dict[str, Callable[..., Any]] = {
    "permutation_sampling": permutation_sampling,
    "uniform_coalitions": uniform_coalitions,
    "shrunken": shrunken,
    "budget_ignored": budget_ignored,
    "overconfident": overconfident,
}
