"""Checks: properties that score an explanation against a case.

A check is ``check(attributions, case, **params) -> Score``. ``attributions`` is an array shaped
like ``case.inputs`` or an :class:`pytest_xai.contract.Explanation`; ``params`` are the
case-specific arguments the case declares (which features are symmetric, which are dummies...) and
the thresholds, whose defaults are declared with :func:`check`. Thresholds are relative (scale-free)
so that multiplying the model output by 100 changes no verdict.

Every check is proven able to fail: the self-tests run it with a reference explainer that passes it
and with one that fails it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from pytest_xai.case import Case, Score


@dataclass(frozen=True)
class CheckInfo:
    name: str
    func: Callable[..., Score]
    marker: str
    thresholds: Mapping[str, float]
    doc: str


CHECKS: dict[str, CheckInfo] = {}


def check(*, marker: str, thresholds: Mapping[str, float]) -> Callable:
    """Register ``func`` as a check; ``thresholds`` are its tunable parameters and defaults.

    ``marker`` is the pytest marker of the property (``xai_symmetry``); marker kwargs, then
    ``--xai-threshold NAME.PARAM=VALUE`` / ini ``xai_thresholds``, then the case, then these
    defaults decide each threshold.
    """

    def decorate(func: Callable[..., Score]) -> Callable[..., Score]:
        doc = (func.__doc__ or "").strip().splitlines()
        CHECKS[func.__name__] = CheckInfo(func.__name__, func, marker, dict(thresholds), doc[0] if doc else "")
        return func

    return decorate


def attributions_of(explanation: Any):
    """The attribution array of an explanation (an Explanation or a plain array)."""
    import numpy as np

    return np.asarray(getattr(explanation, "attributions", explanation), dtype=float)


def importance_of(explanation: Any):
    """Global importance: the explainer's own if it returned one, else mean |attribution| over rows."""
    import numpy as np

    own = getattr(explanation, "importance", None)
    if own is not None:
        return np.abs(np.asarray(own, dtype=float))
    return np.abs(attributions_of(explanation)).mean(axis=0)


def ranks(values):
    """0-based descending ranks of ``values`` along the last axis, ties sharing their average rank."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    greater = (values[..., None, :] > values[..., :, None]).sum(axis=-1)
    equal = (values[..., None, :] == values[..., :, None]).sum(axis=-1)
    return greater + (equal - 1) / 2.0


def _flat(array):
    return array.reshape(array.shape[0], -1) if array.ndim > 1 else array


@check(marker="xai_symmetry", thresholds={"rtol": 0.05})
def symmetry(attributions, case: Case, *, features, mirror=None, rtol: float) -> Score:
    """Two features the model treats symmetrically get equal importance and mirrored attributions.

    Compare-xAI cough_and_fever, corrected (D3): delta_I = |I_i - I_j| / max(I_i, I_j) and, when the
    case gives the row permutation ``mirror`` that swaps the two features' values,
    delta_A = max_r |A[r, i] - A[mirror[r], j]| / max(R, max |A|), with R the output range.  Both
    are scale-free; pass when max(delta_I, delta_A) <= rtol.  The default 0.05 admits sampling
    noise of KernelSHAP and LIME; exact methods reach 1e-12.  Zero importance for both features is
    degenerate and fails.
    """
    import numpy as np

    i, j = features
    A = _flat(attributions_of(attributions))
    I = _flat(importance_of(attributions)[None])[0]
    params = {"features": tuple(features), "mirror": mirror, "rtol": rtol}
    top = max(I[i], I[j])
    if top == 0:
        return Score("symmetry", 0.0, False, rtol, f"features {i} and {j} both got zero importance: "
                     "symmetry is only meaningful when they are credited", params)
    delta_I = abs(I[i] - I[j]) / top
    delta, worst = delta_I, {"importance": [float(I[i]), float(I[j])]}
    detail = f"importance {I[i]:.4g} vs {I[j]:.4g} (relative gap {delta_I:.3g})"
    if mirror is not None:
        gaps = np.abs(A[:, i] - A[list(mirror), j])
        scale = max(case.output_range, float(np.abs(A).max()))
        r = int(gaps.argmax())
        delta_A = float(gaps[r]) / scale
        detail += f"; mirrored attributions differ by up to {delta_A:.3g} of the output range"
        if delta_A > delta:
            delta = delta_A
            worst = {"row": r, "mirror_row": int(mirror[r]), "attribution": float(A[r, i]),
                     "mirrored_attribution": float(A[mirror[r], j])}
    passed = bool(delta <= rtol)
    return Score("symmetry", 1.0 - min(1.0, float(delta)), passed, rtol,
                 f"{'symmetric' if passed else 'asymmetric'}: {detail}; rtol={rtol:g}", params, worst)


@check(marker="xai_dummy", thresholds={"rtol": 1e-3})
def dummy(attributions, case: Case, *, features, rtol: float) -> Score:
    """Features the model does not use (dummies) get zero importance (the dummy axiom).

    Compare-xAI counterexample_dummy_axiom and mnist, corrected (D1, D4): a feature counts as zero
    when its importance is within tau = rtol * max_k I_k + 1e-12 * R of zero (not ``== 0``, which fails
    every float computation), scored over the dummy set only.  A guard requires some non-dummy
    feature above tau, so an all-zero explainer fails.  rtol = 1e-3 passes exact Shapley values
    and KernelSHAP with enough samples, and fails LIME and noise, which credit dummies by chance.
    """
    import numpy as np

    I = _flat(importance_of(attributions)[None])[0]
    dummies = np.zeros(I.shape, dtype=bool)
    dummies[list(features)] = True
    params = {"features": tuple(int(f) for f in features), "rtol": rtol}
    tau = rtol * float(I.max()) + 1e-12 * case.output_range
    credited = I[~dummies]
    if credited.size and credited.max() <= tau:
        return Score("dummy", 0.0, False, rtol, "no non-dummy feature received any importance: an explainer "
                     "that attributes nothing trivially satisfies the dummy axiom", params)
    reference = float(credited.max()) if credited.size else float(I.max())
    ratio = I[dummies] / reference
    worst_index = int(np.flatnonzero(dummies)[ratio.argmax()])
    zero = I[dummies] <= tau
    passed = bool(zero.all())
    value = float(np.mean(1.0 - np.minimum(1.0, ratio)))
    detail = (f"{int(zero.sum())}/{int(dummies.sum())} dummy features at zero importance; the largest, "
              f"feature {worst_index} ({case.feature_names[worst_index] if I.ndim == 1 else worst_index}), "
              f"gets {float(ratio.max()):.3g} of the top importance (tolerance {rtol:g})")
    return Score("dummy", value, passed, rtol, detail, params,
                 {"feature": worst_index, "importance": float(I[worst_index]), "relative": float(ratio.max())})


@check(marker="xai_ranking", thresholds={"max_rank": 0.0})
def ranking(attributions, case: Case, *, feature, rows=(), max_rank: float) -> Score:
    """A feature known to matter most is ranked first, globally and at the given rows.

    Compare-xAI cough_and_fever_10_90 and a_and_b_or_c, corrected (D8): ranks are on |I| (and
    |A| per row) with ties sharing their average rank, so a tie is not a win.  The value is
    1 - r / (n - 1) for the worst rank r; pass when every rank is <= max_rank (0 = strictly first).
    """
    import numpy as np

    A = _flat(attributions_of(attributions))
    I = _flat(importance_of(attributions)[None])[0]
    n = I.shape[0]
    where = {"global importance": float(ranks(I)[feature])}
    for r in rows:
        where[f"row {r}"] = float(ranks(np.abs(A[r]))[feature])
    label, rank = max(where.items(), key=lambda kv: kv[1])
    params = {"feature": int(feature), "rows": tuple(rows), "max_rank": max_rank}
    passed = bool(rank <= max_rank)
    name = case.feature_names[feature] if feature < len(case.feature_names) else str(feature)
    detail = ", ".join(f"{k}: rank {v:g}" for k, v in where.items())
    verdict = "ranked first" if passed else f"not ranked first (worst: {label}, rank {rank:g})"
    return Score("ranking", 1.0 - rank / max(1, n - 1), passed, max_rank,
                 f"feature {feature} ({name}) {verdict}; {detail}", params,
                 {"where": label, "rank": rank, "importance": I.tolist() if n <= 12 else None})
