"""Hypothesis strategies for small problems whose Shapley values are known.

Imported by users' tests (never by the plugin)::

    from hypothesis import given
    from pytest_xai import strategies

    @given(strategies.games())
    def test_my_explainer_is_efficient(game): ...

Every strategy draws a :class:`pytest_xai.Case` whose ``truth`` says what any Shapley-consistent
explainer must satisfy: ``"shapley"`` (exact interventional values, for additive models and
unanimity games with interactions of any order),
``"dummies"`` (features the model ignores), ``"symmetric"`` (feature pairs the model and the
background treat alike) and ``"mirror"`` (the row permutation that swaps that pair's values).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from pytest_xai.case import Case, CaseInfo

_SHAPES = {
    "linear": lambda v: v,
    "square": lambda v: v**2,
    "abs": np.abs,
    "sin": np.sin,
    "step": lambda v: (v > 0).astype(float),
}
_INFO: dict[str, Any] = {
    "family": "hypothesis",
    "category": "fidelity",
    "source": "Shapley 1953 axioms; Lundberg & Lee 2017",
}


def _check_range(name: str, low: int, high: int, floor: int) -> None:
    if not (isinstance(low, int) and isinstance(high, int)) or low < floor or high < low:
        raise ValueError(f"{name}: need integers with {floor} <= min <= max, got min={low!r}, max={high!r}")


def _case(name: str, predict, inputs, background, truth: dict) -> Case:
    info = CaseInfo(name=name, checks={}, build=None, **_INFO)  # hand-made, as make_case: no builder
    d = inputs.shape[1]
    return Case(
        info=info,
        inputs=inputs,
        predict=predict,
        model=predict,
        background=background,
        baseline=np.zeros(d),
        feature_names=[f"x{i}" for i in range(d)],
        truth=truth,
    )


def _matrix(draw, rows: int, cols: int) -> np.ndarray:
    values = st.floats(-3, 3, allow_nan=False, allow_infinity=False).map(lambda v: round(v, 3))
    return np.array(
        draw(st.lists(st.lists(values, min_size=cols, max_size=cols), min_size=rows, max_size=rows)), dtype=float
    ).reshape(rows, cols)


@st.composite
def _additive(draw, min_features, max_features, max_points, max_background):
    d = draw(st.integers(min_features, max_features))
    shapes = draw(st.lists(st.sampled_from(sorted(_SHAPES)), min_size=d, max_size=d))
    weights = np.array(draw(st.lists(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]), min_size=d, max_size=d)))
    inputs = _matrix(draw, draw(st.integers(1, max_points)), d)
    background = _matrix(draw, draw(st.integers(1, max_background)), d)

    def terms(X):
        X = np.asarray(X, dtype=float)
        return np.stack([w * _SHAPES[s](X[:, i]) for i, (s, w) in enumerate(zip(shapes, weights))], axis=1)

    def predict(X):
        return terms(X).sum(axis=1)

    shapley = terms(inputs) - terms(background).mean(axis=0)
    dummies = tuple(int(i) for i in np.flatnonzero(weights == 0))
    return _case(
        f"additive({', '.join(f'{w:g}*{s}' for s, w in zip(shapes, weights))})",
        predict,
        inputs,
        background,
        {"shapley": shapley, "dummies": dummies},
    )


def additive_models(
    *, min_features: int = 1, max_features: int = 6, max_points: int = 5, max_background: int = 8
) -> st.SearchStrategy[Case]:
    """f(x) = sum_i w_i g_i(x_i) with g_i in {linear, square, abs, sin, step}: the exact
    interventional Shapley value is phi_i(x) = w_i (g_i(x_i) - mean_b g_i(b_i)); zero weights plant
    dummy features."""
    _check_range("additive_models features", min_features, max_features, 1)
    _check_range("additive_models points/background", 1, min(max_points, max_background), 1)
    return _additive(min_features, max_features, max_points, max_background)


@st.composite
def _game(draw, max_features, max_points, max_background):
    d = draw(st.integers(3, max_features))
    i, j = 0, 1
    dummies = tuple(range(d - draw(st.integers(1, d - 2)), d))
    others = [k for k in range(2, d) if k not in dummies]
    pair_weight = draw(st.sampled_from([0.5, 1.0, 2.0]))
    coupling = draw(st.sampled_from(["product", "max", "sum_squared"]))
    other_weights = np.array(
        draw(st.lists(st.sampled_from([-1.0, 0.5, 2.0]), min_size=len(others), max_size=len(others)))
    )

    def predict(X):
        X = np.asarray(X, dtype=float)
        a, b = X[:, i], X[:, j]
        pair = {"product": a * b, "max": np.maximum(a, b), "sum_squared": (a + b) ** 2}[coupling]
        rest = X[:, others] @ other_weights if others else 0.0
        return pair_weight * pair * (1.0 + 0.1 * rest) + rest

    rows = _matrix(draw, draw(st.integers(1, max_points)), d)
    swap = rows.copy()
    swap[:, [i, j]] = rows[:, [j, i]]
    inputs = np.concatenate([rows, swap])
    base = _matrix(draw, draw(st.integers(1, max_background)), d)
    base_swap = base.copy()
    base_swap[:, [i, j]] = base[:, [j, i]]
    n = len(rows)
    mirror = tuple(list(range(n, 2 * n)) + list(range(n)))
    return _case(
        f"game({coupling}, d={d}, dummies={dummies})",
        predict,
        inputs,
        np.concatenate([base, base_swap]),
        {"dummies": dummies, "symmetric": (i, j), "mirror": mirror},
    )


def games(*, max_features: int = 6, max_points: int = 4, max_background: int = 6) -> st.SearchStrategy[Case]:
    """Non-additive games with planted players: features 0 and 1 interact symmetrically
    (product, max or squared sum), the last features are dummies, the rest act linearly and modulate
    the pair.  Inputs hold each row and its 0<->1 swap and the background is closed under the swap,
    so Shapley values satisfy phi_0(x) = phi_1(swap x) and phi_dummy = 0."""
    _check_range("games features", 3, max_features, 3)
    _check_range("games points/background", 1, min(max_points, max_background), 1)
    return _game(max_features, max_points, max_background)


@st.composite
def _unanimity(draw, max_features, max_terms, max_points):
    from pytest_xai.cases.games import closed_form_shapley

    d = draw(st.integers(3, max_features))
    subset = st.lists(st.integers(0, d - 1), min_size=1, max_size=d, unique=True).map(sorted)
    high = draw(st.lists(st.integers(0, d - 1), min_size=3, max_size=d, unique=True).map(sorted))
    subsets = [high] + draw(st.lists(subset, min_size=0, max_size=max_terms - 1))
    coefficients = np.array(
        draw(st.lists(st.sampled_from([-2.0, -1.0, 0.5, 1.0, 1.5]), min_size=len(subsets), max_size=len(subsets)))
    )
    kind = draw(st.sampled_from(["product", "minimum"]))
    masks = np.zeros((len(subsets), d), dtype=bool)
    for k, members in enumerate(subsets):
        masks[k, members] = True
    positive = st.floats(0.25, 2.0).map(lambda v: round(v, 3))
    n = draw(st.integers(1, max_points))
    inputs = np.array(draw(st.lists(st.lists(positive, min_size=d, max_size=d), min_size=n, max_size=n)))

    def predict(X):
        X = np.asarray(X, dtype=float)[:, None, :]
        inside = np.where(masks[None], X, 1.0 if kind == "product" else np.inf)
        return (inside.prod(axis=2) if kind == "product" else inside.min(axis=2)) @ coefficients

    terms = " + ".join(f"{c:g} {kind[:3]}{tuple(m)}" for m, c in zip(subsets, coefficients))
    shapley = closed_form_shapley(inputs, masks, coefficients, kind)
    return _case(f"unanimity({terms})", predict, inputs, np.zeros((1, d)), {"shapley": shapley})


def unanimity_games(*, max_features: int = 6, max_terms: int = 4, max_points: int = 3) -> st.SearchStrategy[Case]:
    """f(x) = sum_T m_T g(x_T), g the product or the minimum over a subset T, with inputs > 0 and
    the zero row as background: a sum of unanimity games (Harsanyi dividends a_T = m_T g(x_T)) whose
    exact Shapley value is phi_i = sum_{T containing i} a_T / |T|
    (:func:`pytest_xai.cases.games.closed_form_shapley`).  The first subset has three features or
    more, so an explainer exact only up to pairwise interactions is caught."""
    _check_range("unanimity_games features", 3, max_features, 3)
    _check_range("unanimity_games terms/points", 1, min(max_terms, max_points), 1)
    return _unanimity(max_features, max_terms, max_points)
