"""The budget of model evaluations: how perturbation explainers size their samples.

A perturbation explainer (KernelSHAP, LIME, permutation or sampling Shapley values) spends its time
evaluating the model on perturbed rows, so its cost is counted in *model evaluations*: rows passed
to the model over one call, i.e. points explained x samples per point x background rows each
sample is averaged over.  A wall-clock limit would race the machine's load; a count does not.

Every explainer call has a budget (``--xai-budget`` / ini ``xai_budget``, else the case's own, else
``DEFAULT``): cases whose model is costly per row (hundreds of features, a network) declare a
smaller one, so that a call stays within seconds whatever the explainer.  An explainer asks for it
by naming the contract argument ``budget`` and sizes ``nsamples`` / ``num_samples`` / ``n_samples``
from it.  The reference adapters do so through the helpers below,
and keep each library's own default whenever it fits (docs/reference.md, "Budget of model evaluations").
"""

from __future__ import annotations

from pytest_xai.errors import NotApplicable

#: Model evaluations one explainer call may spend, unless the case declares its own budget
#: (``case.meta["budget"]``) or the user sets one (``--xai-budget``, which wins over both).  At 5e6
#: the reference adapters keep their library's default sample count and the case's whole
#: background on every built-in case without a budget of its own (KernelSHAP on the compas cases
#: keeps 97 of 100 rows); those models cost well under a microsecond per row.  5e6 was also the
#: KernelSHAP budget before there was one for every explainer.
DEFAULT = 5_000_000


def for_case(case: object, given: int | None = None) -> int:
    """The budget of a call on ``case``: the user's (``given``), else the case's own, else ``DEFAULT``."""
    if given is not None:
        return int(given)
    return int(getattr(case, "meta", {}).get("budget", DEFAULT))


def overspent(evaluations: int | None, budget: int) -> str | None:
    """What a test's detail says when a call spent more model evaluations than its ``budget``
    (counted by :mod:`pytest_xai.engine.evaluations`), else None.  Spending more is no failure: the budget
    is what the explainer was asked to size its samples from, and the count shows whether it did."""
    if evaluations is None or evaluations <= budget:
        return None
    from pytest_xai.engine.evaluations import compact

    spent, given = compact(evaluations), compact(budget)
    if spent == given:  # 20,100 and 20,000 both read 20k
        spent, given = f"{evaluations:,}", f"{budget:,}"
    return f"spent {spent} model evaluations, over the budget of {given}"


#: Fewest background rows a sampled Shapley estimate averages over before its samples are cut.
MIN_BACKGROUND = 10


def samples(
    budget: int, points: int, *, preferred: int, minimum: int, per_sample: int = 1, method: str = "the explainer"
) -> int:
    """Samples per point: the library's ``preferred`` count, or as many as ``budget`` allows.

    Each sample costs ``per_sample`` model evaluations per point.  Fewer than ``minimum`` samples
    would not estimate anything, so the case is then out of the explainer's reach (a skip saying so).
    """
    affordable = budget // max(1, points * per_sample)
    if affordable < minimum:
        raise NotApplicable(
            f"{method} needs at least {minimum} samples x {per_sample} evaluations for each of {points} "
            f"points ({minimum * per_sample * points:.2g} model evaluations), over the budget of {budget:.2g} "
            f"(raise it with --xai-budget)"
        )
    return int(min(preferred, affordable))


def sampled_shapley(
    budget: int, points: int, background: int, *, preferred: int, minimum: int, method: str
) -> tuple[int, int]:
    """``(samples, background rows)`` for an estimator averaging each sample over background rows.

    The library's ``preferred`` samples are kept while at least ``MIN_BACKGROUND`` rows (or all the
    rows there are) fit in the budget; the background is summarised to fewer rows first (shap's
    documentation advises ``shap.kmeans`` for large backgrounds), then the samples are cut.
    """
    floor = min(background, MIN_BACKGROUND)
    rows = min(background, budget // max(1, points * preferred))
    if rows >= floor:
        return preferred, rows
    return samples(budget, points, preferred=preferred, minimum=minimum, per_sample=floor, method=method), floor
