"""Handcrafted units: torch networks with hand-set weights whose mechanism, hence attribution, is known.

Port of the tabular units of XAI-Units (Lee, Emami, Hollins, Wong, Villalobos Sánchez, Toni, Zhang &
Dejl, "XAI-Units: Benchmarking Explainability Methods with Unit Tests", arXiv 2506.01059, 2025;
repository XAI-Units/xaiunits_public, MIT).  Every model is an ``nn.Sequential`` of ``nn.Linear``
layers and one activation module instance per position (DeepLift/LRP hooks need distinct modules),
in float64, in eval mode.  Every builder runs the unit's self-test: the network reproduces the
generated labels to rtol 1e-5, the large gating constants are never exceeded, and the closed-form
ground truths agree with Shapley values enumerated over all coalitions on the network itself.

The family's rooms: :mod:`.networks` (the construction helpers, the self-tests and the enumerated
Shapley values), :mod:`.checks` (the four checks) and this module (the eight units, one builder each).

Ground truths live in ``case.truth``: ``"xai_units"`` (the unit's own convention) and ``"shapley"``
(exact baseline-Shapley values w.r.t. ``case.baseline``).  They differ only on the conflicting (U2)
and interacting (U3) units, which therefore carry both checks, :func:`units_mse` and
:func:`units_shapley_mse`.  The thresholds are ours; XAI-Units defines none.

Which reference methods pass which unit (proved in ``tests/test_units.py``; IG = captum
IntegratedGradients, 256 Gauss-Legendre steps, with the shipped baseline):

========================  ===  ========  ===  ====  =======  ==========================================
unit                      IG   DeepLift  I×G  grad  Shapley  why the failures fail
========================  ===  ========  ===  ====  =======  ==========================================
weighted (U1)             yes  yes       yes  no    yes      the gradient is w, not w⊙x
conflicting (U2) units    no   no        no   --    no       dead path: 0 to both members of a
                                                             cancelled pair; Shapley splits it ½/½
conflicting (U2) Shapley  no   no        no   --    yes      same dead path
interacting (U3) units    yes  yes       yes  --    no       Shapley shares the interaction
interacting (U3) Shapley  no   no        no   --    yes      gradients give it all to x_b
common (U4)               yes  no        yes  yes   yes      DeepLift's softmax rule leaks onto x_c
pertinent negatives (U6)  yes  yes       no   --    yes      I×G has no baseline: absence gets 0
boolean AND/OR (U7)       yes  yes       no   --    yes      the gradient is 0 off the special pattern
========================  ===  ========  ===  ====  =======  ==========================================

The shattered-gradients unit (U5) has no ground truth; :func:`units_sensitivity` scores stability:
IG, DeepLift, I×G and plain gradients fail (their maps flip as the kink is crossed), SmoothGrad
(σ = 0.1) and Shapley values against the wide background pass.
"""

from __future__ import annotations

import numpy as np

from pytest_xai.case import Case, CaseInfo
from pytest_xai.cases.units.checks import (
    relative_mse,
    relative_sensitivity,
    shapley_on_background,
    units_common_mse,
    units_mse,
    units_sensitivity,
    units_shapley_mse,
)
from pytest_xai.cases.units.networks import (
    CANCEL_GATE,
    INTERACTION_GATE,
    MAX_ENUMERATED_FEATURES,
    as_float64,
    assert_gate,
    baseline_shapley,
    cross_check,
    forward,
    linear,
    regression_predict,
    relu,
    self_test,
    sequential,
)
from pytest_xai.registry import Family

__all__ = [
    "CANCEL_GATE",
    "FAMILY",
    "INTERACTION_GATE",
    "MAX_ENUMERATED_FEATURES",
    "SHATTERED_LAYOUT",
    "SOURCE",
    "as_float64",
    "assert_gate",
    "baseline_shapley",
    "cross_check",
    "forward",
    "linear",
    "regression_predict",
    "relative_mse",
    "relative_sensitivity",
    "relu",
    "self_test",
    "sequential",
    "shapley_on_background",
    "units_common_mse",
    "units_mse",
    "units_sensitivity",
    "units_shapley_mse",
]

SOURCE = "Lee et al. 2025, XAI-Units (arXiv 2506.01059)"
FAMILY = Family("units", source=SOURCE, smoke=("units_mse", "units_weighted_features"), libraries=("torch",))

# Layout of the shattered-gradients case: points first, then one block of perturbed copies per draw.
SHATTERED_LAYOUT = {"n_points": 40, "n_perturbations": 10, "dummies": (5,)}


def _case(
    info: CaseInfo,
    *,
    x,
    model,
    labels,
    feature_names,
    baseline,
    truth,
    meta,
    target=None,
    predict=None,
    background="baseline",
) -> Case:
    """The unit's case, after its self-test.  ``background="baseline"`` (the default) ships the
    baseline as the single background row, so background-based explainers use the GT's reference."""
    self_test(info.name, model, x, labels)
    model.register_forward_pre_hook(as_float64)
    if isinstance(background, str):
        background = np.asarray(baseline, dtype=np.float64).reshape(1, -1)
    return Case(
        info=info,
        inputs=x,
        predict=predict or regression_predict(model),
        feature_names=feature_names,
        model=model,
        torch_model=model,
        target=target,
        background=background,
        baseline=baseline,
        truth=truth,
        meta={"labels": labels, **meta},
    )


# --------------------------------------------------------------------------------------------
# The units
# --------------------------------------------------------------------------------------------


@FAMILY.case(category="fidelity", source="weighted features", checks={"units_mse": {}})
def units_weighted_features(info, *, seed, cache):
    """U1: y = Σ w_i x_i computed by a ReLU-pair network; ground truth w ⊙ x (baseline 0)."""
    n, rows = 10, 200
    rng = np.random.default_rng([seed, 1])
    w = rng.uniform(-1, 1, n)
    x = rng.standard_normal((rows, n))
    model = sequential(
        linear(np.vstack([np.diag(w), -np.diag(w)])),
        relu(),
        linear(np.hstack([np.ones(n), -np.ones(n)])[None]),
    )
    baseline = np.zeros(n)
    gt = w * x
    shap = baseline_shapley(regression_predict(model), x, baseline)
    cross_check(info.name, gt, shap)
    return _case(
        info,
        x=x,
        model=model,
        labels=x @ w,
        feature_names=[f"x{i}" for i in range(n)],
        baseline=baseline,
        truth={"xai_units": gt, "shapley": shap},
        meta={"weights": w},
    )


@FAMILY.case(category="fidelity", source="conflicting features", checks={"units_mse": {}, "units_shapley_mse": {}})
def units_conflicting_features(info, *, seed, cache):
    """U2: a set cancel flag c_i switches feature i off (gate -100); two ground-truth conventions.

    XAI-Units: x_i gets w_i x_i always and c_i gets -w_i x_i c_i.  Shapley (baseline 0): a
    cancelled pair splits ½ w_i x_i / -½ w_i x_i.  Gradient methods give 0 to both (dead path).
    """
    n, rows = 5, 200
    rng = np.random.default_rng([seed, 2])
    w = rng.uniform(-1, 1, n)
    xs = rng.standard_normal((rows, n))
    c = rng.binomial(1, 0.5, (rows, n)).astype(np.float64)
    x = np.hstack([xs, c])
    assert_gate(info.name, w * xs, CANCEL_GATE)
    eye = np.eye(n)
    model = sequential(
        linear(np.block([[np.diag(w), -CANCEL_GATE * eye], [-np.diag(w), -CANCEL_GATE * eye]])),
        relu(),
        linear(np.hstack([np.ones(n), -np.ones(n)])[None]),
    )
    wx = w * xs
    labels = ((1 - c) * wx).sum(axis=1)
    xai_units = np.hstack([wx, -wx * c])
    closed = np.hstack([np.where(c == 1, wx / 2, wx), -wx * c / 2])
    baseline = np.zeros(2 * n)
    shap = baseline_shapley(regression_predict(model), x, baseline)
    cross_check(info.name, closed, shap)
    names = [f"x{i}" for i in range(n)] + [f"cancel{i}" for i in range(n)]
    return _case(
        info,
        x=x,
        model=model,
        labels=labels,
        feature_names=names,
        baseline=baseline,
        truth={"xai_units": xai_units, "shapley": shap},
        meta={"weights": w, "cancel_features": list(range(n, 2 * n))},
    )


@FAMILY.case(category="fidelity", source="interacting features", checks={"units_mse": {}, "units_shapley_mse": {}})
def units_interacting_features(info, *, seed, cache):
    """U3: a binary x_a switches the weight of x_b between w_b0 and w_b1 (gate -1000).

    XAI-Units: x_b gets w_b(x_a) x_b, x_a gets w_a x_a.  Shapley (baseline 0) shares the
    interaction when x_a = 1: x_b gets ½(w_b0 + w_b1) x_b, x_a gets w_a + ½(w_b1 - w_b0) x_b.
    """
    n, rows = 6, 200
    pairs = ((1, 0), (3, 2))  # (categorical a, continuous b), as XAI-Units' default [[1,0],[3,2]]
    rng = np.random.default_rng([seed, 3])
    w = rng.uniform(-1, 1, n)  # w_a for categorical features, w_b0 for the paired continuous ones
    w_b1 = {b: rng.uniform(-1, 1) for _, b in pairs}
    x = rng.standard_normal((rows, n))
    for a, _ in pairs:
        x[:, a] = rng.binomial(1, 0.5, rows)
    hidden, out = [], []

    def unit(row, sign):
        hidden.append(row)
        out.append(sign)

    for a, b in pairs:
        gated = np.zeros(n)
        gated[b], gated[a] = w[b] - w_b1[b], -INTERACTION_GATE
        unit(gated, 1.0)
        gated = gated.copy()
        gated[b] = -gated[b]
        unit(gated, -1.0)
        assert_gate(info.name, (w[b] - w_b1[b]) * x[:, b], INTERACTION_GATE)
    for i in range(n):
        weight = w_b1[i] if i in w_b1 else w[i]
        row = np.zeros(n)
        row[i] = weight
        unit(row, 1.0)
        unit(-row, -1.0)
    model = sequential(linear(np.array(hidden)), relu(), linear(np.array(out)[None]))
    xai_units = w * x
    closed = xai_units.copy()
    for a, b in pairs:
        on = x[:, a] == 1
        xai_units[on, b] = w_b1[b] * x[on, b]
        closed[on, b] = (w[b] + w_b1[b]) / 2 * x[on, b]
        closed[on, a] = w[a] + (w_b1[b] - w[b]) / 2 * x[on, b]
    labels = xai_units.sum(axis=1)
    baseline = np.zeros(n)
    shap = baseline_shapley(regression_predict(model), x, baseline)
    cross_check(info.name, closed, shap)
    names = [f"cat{i}" if i in dict(pairs) else f"x{i}" for i in range(n)]
    return _case(
        info,
        x=x,
        model=model,
        labels=labels,
        feature_names=names,
        baseline=baseline,
        truth={"xai_units": xai_units, "shapley": shap},
        meta={"pairs": pairs, "weights": w, "weights_when_on": w_b1},
    )


@FAMILY.case(
    category="fidelity",
    source="uncertainty-aware (common features)",
    checks={"units_common_mse": {"common": (5, 6, 7)}},
)
def units_common_features(info, *, seed, cache):
    """U4: features added equally to every logit cannot change a softmax output: they deserve 0.

    The explained output is the softmax probability of the predicted class: the rows are the first
    200 draws that the network assigns to class 0, and ``target`` is 0.  On the logits the common
    features would genuinely contribute x_c; on the softmax they are dummies (Shapley value 0).
    """
    from torch import nn

    n, k, rows, target = 8, 3, 200, 0
    rng = np.random.default_rng([seed, 4])
    weight = np.hstack([np.eye(n - k), np.ones((n - k, k))])
    draws = rng.standard_normal((20 * rows, n))
    x = draws[(draws @ weight.T).argmax(axis=1) == target][:rows]
    model = sequential(linear(weight), nn.Softmax(dim=1))
    logits = x @ weight.T
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    if len(x) < rows or (probs.argmax(axis=1) != target).any():
        raise AssertionError(f"unit {info.name}: could not draw {rows} rows predicted as class {target}")

    def predict(z):
        return forward(model, z)

    baseline = np.zeros(n)
    shap = baseline_shapley(lambda z: predict(z)[:, target], x, baseline)
    common = info.checks["units_common_mse"]["common"]
    if np.abs(shap[:, list(common)]).max() > 1e-12:
        raise AssertionError(f"unit {info.name}: common features have non-zero Shapley values")
    mask = np.ones(n)
    mask[list(common)] = 0.0
    return _case(
        info,
        x=x,
        model=model,
        labels=probs,
        feature_names=[f"x{i}" for i in range(n - k)] + [f"common{i}" for i in range(k)],
        baseline=baseline,
        target=target,
        predict=predict,
        truth={"mask": np.broadcast_to(mask, x.shape).copy(), "shapley": shap},
        meta={"common_features": list(common)},
    )


@FAMILY.case(category="stability", source="shattered gradients", checks={"units_sensitivity": dict(SHATTERED_LAYOUT)})
def units_shattered_gradients(info, *, seed, cache):
    """U5: ReLU(w·x) with |w| ~ 10,000 on a cloud N(0, 0.05²) straddling the kink (no ground truth).

    ``inputs`` holds the points followed by ``n_perturbations`` blocks of copies perturbed uniformly
    in an L∞ ball of radius 0.02 (Captum ``sensitivity_max``'s default), so that one explanation of
    the batch is enough to measure how much the attribution changes under tiny input noise.
    ``baseline`` is 0 (on the kink); ``background`` holds 50 rows of XAI-Units' wide N(0, 10²).
    A sixth feature ``dummy5``, drawn like the others, has weight 0: the network never reads it, so
    every explanation computed from the model gives it exactly 0, while a map computed from the input
    alone (the input itself, the input minus a mean) credits it (the guard of
    :func:`units_sensitivity`).
    """
    n, sigma, radius = 5, 0.05, 0.02
    layout = info.checks["units_sensitivity"]
    points, draws = layout["n_points"], layout["n_perturbations"]
    dummies = list(layout["dummies"])
    rng = np.random.default_rng([seed, 5])
    ratios = rng.integers(-5, 5, n)
    ratios[ratios == 0] = 1
    if (ratios > 0).all() or (ratios < 0).all():
        ratios[0] = -ratios[0]
    scale = 500.0 / sigma  # XAI-Units' default weight_scale: 10,000 for sigma 0.05
    w = scale * ratios / np.abs(ratios).max()
    w[w < 0] *= w[w > 0].sum() / -w[w < 0].sum()  # balanced: Σw = 0, the cloud straddles the kink
    centres = rng.normal(0.0, sigma, (points, n))
    noise = rng.uniform(-radius, radius, (draws, points, n))
    x = np.vstack([centres, (centres[None] + noise).reshape(-1, n)])
    wide = rng.normal(0.0, 10.0, (50, n))  # XAI-Units' wide distribution N(0, 10²) as background
    # the dummy columns, drawn after everything else so the active features keep their values
    extra = np.random.default_rng([seed, 5, 1])
    dummy_centres = extra.normal(0.0, sigma, (points, len(dummies)))
    dummy_noise = extra.uniform(-radius, radius, (draws, points, len(dummies)))
    dummy_x = np.vstack([dummy_centres, (dummy_centres[None] + dummy_noise).reshape(-1, len(dummies))])
    if dummies != list(range(n, n + len(dummies))):
        raise ValueError(f"unit {info.name}: dummy features must follow the {n} active ones, got {dummies}")
    x = np.hstack([x, dummy_x])
    wide = np.hstack([wide, extra.normal(0.0, 10.0, (len(wide), len(dummies)))])
    w = np.concatenate([w, np.zeros(len(dummies))])
    model = sequential(linear(w[None]), relu())
    labels = np.maximum(x @ w, 0.0)[:, None]
    baseline = np.zeros(n + len(dummies))
    names = [f"x{i}" for i in range(n)] + [f"dummy{i}" for i in dummies]
    return _case(
        info,
        x=x,
        model=model,
        labels=labels,
        feature_names=names,
        baseline=baseline,
        background=wide,
        truth={},
        meta={"weights": w, "sigma": sigma, "radius": radius, **layout},
    )


def _pertinent_negatives(info, seed, pn_baseline):
    n, rows, factor = 6, 200, 10.0
    pn = np.array([0, 1])
    rng = np.random.default_rng([seed, 6])
    w = rng.uniform(-1, 1, n)
    x = rng.standard_normal((rows, n))
    x[:, pn] = rng.binomial(1, 0.5, (rows, len(pn)))
    is_pn = np.isin(np.arange(n), pn)
    to_signed = linear(np.diag(np.where(is_pn, 2.0, 1.0)), np.where(is_pn, -1.0, 0.0))
    split = linear(np.vstack([np.eye(n), -np.eye(n)]))
    scale = linear(np.diag(np.concatenate([w, np.where(is_pn, factor * w, w)])))
    total = linear(np.concatenate([np.ones(n), np.where(is_pn, 1.0, -1.0)])[None])
    model = sequential(to_signed, split, relu(), scale, total)

    def contribution(z):
        return np.where(is_pn, w * z + (1 - z) * factor * w, w * z)

    baseline = np.where(is_pn, float(pn_baseline), 0.0)
    gt = contribution(x) - contribution(baseline)
    shap = baseline_shapley(regression_predict(model), x, baseline)
    cross_check(info.name, gt, shap)
    names = [f"pn{i}" if is_pn[i] else f"x{i}" for i in range(n)]
    return _case(
        info,
        x=x,
        model=model,
        labels=contribution(x).sum(axis=1),
        feature_names=names,
        baseline=baseline,
        truth={"xai_units": gt, "shapley": shap},
        meta={"weights": w, "pn_features": pn.tolist(), "pn_weight_factor": factor},
    )


@FAMILY.case(category="fidelity", source="pertinent negatives", checks={"units_mse": {}})
def units_pertinent_negatives_zero(info, *, seed, cache):
    """U6, baseline 0: a present pertinent-negative feature (x = 1) costs w - 10w = -9w."""
    return _pertinent_negatives(info, seed, 0)


@FAMILY.case(category="fidelity", source="pertinent negatives", checks={"units_mse": {}})
def units_pertinent_negatives_one(info, *, seed, cache):
    """U6, baseline 1: an absent pertinent-negative feature (x = 0) earns 10w - w = 9w."""
    return _pertinent_negatives(info, seed, 1)


def _boolean(info, seed, kind):
    n, rows = 4, 64
    rng = np.random.default_rng([seed, 7 if kind == "and" else 8])
    patterns = 1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)  # ±1, row 0 all +1
    special = 1.0 if kind == "and" else -1.0  # the pattern that flips the output
    first = rng.permutation(2**n)[: min(rows, 2**n)]
    rest = rng.integers(0, 2**n, max(rows - 2**n, 0))
    # a quarter of the other rows are the special pattern: the only rows where the attribution
    # changes sign, so that a sign error there costs more rows than the 5 % a check tolerates
    special_index = int(np.flatnonzero((patterns == special).all(axis=1))[0])
    rest[np.random.default_rng([seed, 9]).random(len(rest)) < 0.25] = special_index
    x = patterns[np.concatenate([first, rest])]
    layer2 = np.where((patterns == special).all(axis=1), 1.0, -1.0)
    model = sequential(
        linear(patterns),
        relu(),
        linear(np.diag(layer2), np.full(2**n, -(n - 1.0))),
        relu(),
        linear(np.full((1, 2**n), 2.0 * special), np.array([-special])),
    )
    is_special = (x == special).all(axis=1)
    labels = np.where(is_special, special, -special)
    baseline = np.where(is_special[:, None], -special, special) * np.ones((rows, n))
    differs = x != baseline
    delta = labels - (-labels)  # f(x) - f(baseline) = ±2
    gt = np.where(differs, (delta / differs.sum(axis=1))[:, None], 0.0)
    shap = baseline_shapley(regression_predict(model), x, baseline)
    cross_check(info.name, gt, shap)
    return _case(
        info,
        x=x,
        model=model,
        labels=labels,
        feature_names=[f"b{i}" for i in range(n)],
        baseline=baseline,
        background=None,
        truth={"xai_units": gt, "shapley": shap},
        meta={"operator": kind},
    )


@FAMILY.case(category="fidelity", source="boolean AND", checks={"units_mse": {}})
def units_boolean_and(info, *, seed, cache):
    """U7: AND over ±1 inputs by truth-table enumeration; GT = symmetric split of f(x) - f(b)."""
    return _boolean(info, seed, "and")


@FAMILY.case(category="fidelity", source="boolean OR", checks={"units_mse": {}})
def units_boolean_or(info, *, seed, cache):
    """U7: OR over ±1 inputs by truth-table enumeration; GT = symmetric split of f(x) - f(b)."""
    return _boolean(info, seed, "or")
