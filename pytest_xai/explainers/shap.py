"""shap adapters: KernelSHAP and TreeSHAP used the way shap's users use them (Lundberg & Lee 2017;
Lundberg et al. 2020)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import shap

from pytest_xai.engine import budget as budgets
from pytest_xai.errors import NotApplicable
from pytest_xai.explainers import grouped
from pytest_xai.explainers.targets import per_row


def _output(values, target):
    """shap returns (n, d) for one output and (n, d, classes) for several: keep ``target``'s."""
    values = np.asarray(getattr(values, "values", values))
    if values.ndim == 3:
        values = values[..., 0 if target is None else target]
    return values


def _single_output(predict, target):
    def f(X):
        y = np.asarray(predict(X), dtype=float)
        return y[:, target] if y.ndim == 2 else y

    return f


@per_row
def shap_kernel(inputs, predict, background, target, seed, budget=budgets.DEFAULT, baseline=None, groups=None):
    """KernelSHAP (shap.KernelExplainer) with shap's default ``nsamples='auto'`` (2d + 2048
    coalitions, or all 2^d - 2 when fewer), seeded through numpy's global generator, which shap draws from.

    Every coalition is averaged over the background, so a call costs points x coalitions x
    background rows model evaluations, sized to the call's ``budget`` (:mod:`pytest_xai.engine.budget`):
    the background is summarised with ``shap.kmeans`` to the rows that fit, as shap's documentation
    advises for large backgrounds, and the coalitions are cut below shap's default only when fewer
    than 10 rows would fit.  A case where not even d + 1 coalitions fit is not applicable.
    Image-shaped inputs (chess planes, images) are explained over squares, pixels or the case's
    ``groups``, hidden with the ``baseline``, as shap's image examples do
    (:func:`pytest_xai.explainers.grouped.kernel_shap`).
    """
    if inputs.ndim > 2:
        return grouped.kernel_shap(inputs, predict, baseline, target, seed, budget, groups)
    if background is None:
        raise NotApplicable("KernelSHAP needs background rows; this case defines its baseline per row instead")
    n, d = inputs.shape
    auto = 2 * d + 2048 if d > 11 else min(2 * d + 2048, 2**d - 2)  # shap enumerates all coalitions below
    nsamples, rows = budgets.sampled_shapley(
        budget, n, len(background), preferred=auto, minimum=d + 1, method="KernelSHAP"
    )
    data = background if rows == len(background) else shap.kmeans(background, rows)
    explainer = shap.KernelExplainer(_single_output(predict, target), data)
    with _global_seed(seed):
        return _output(
            explainer.shap_values(inputs, nsamples="auto" if nsamples == auto else nsamples, silent=True), None
        )


@contextlib.contextmanager
def _global_seed(seed: int) -> Iterator[None]:
    """numpy's global generator seeded with ``seed`` for shap code that draws from it, and put back after."""
    state = np.random.get_state()
    np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        np.random.set_state(state)


def _tree_explainer(model, **kwargs):
    """shap.TreeExplainer, with shap's "model type not supported" turned into a skip."""
    try:
        return shap.TreeExplainer(model, **kwargs)
    except Exception as exc:
        if type(exc).__name__ != "InvalidModelError":
            raise
        raise NotApplicable(f"TreeSHAP needs a tree model; this case's model is a {type(model).__name__}") from None


@per_row
def shap_tree(inputs, model, background, target):
    """Interventional TreeSHAP (shap.TreeExplainer with ``feature_perturbation='interventional'``)
    against the case's background: exact interventional Shapley values of the trees."""
    explainer = _tree_explainer(model, data=background, feature_perturbation="interventional")
    return _output(explainer.shap_values(inputs, check_additivity=False), target)


@per_row
def shap_tree_path_dependent(inputs, model, target):
    """Path-dependent TreeSHAP (no background; the trees' cover stands in for the data)."""
    explainer = _tree_explainer(model, feature_perturbation="tree_path_dependent")
    return _output(explainer.shap_values(inputs, check_additivity=False), target)


def _masked_explainer(kind, inputs, predict, background, target, *, masker=None, call=None, **kwargs):
    """A shap explainer of the new API (``shap.explainers.Exact`` ...) over an independent masker of
    the background, used the way shap's documentation does: ``explainer(inputs).values``."""
    if inputs.ndim != 2:
        raise NotApplicable(f"{kind.__name__} here explains tabular (n, d) inputs")
    if background is None:
        raise NotApplicable(f"{kind.__name__} needs a background; this case has none")
    background = np.asarray(background, dtype=float)
    masker = masker or shap.maskers.Independent(background, max_samples=len(background))
    explainer = kind(_single_output(predict, target), masker, **kwargs)
    return _output(explainer(inputs, silent=True, **(call or {})), None)


@per_row
def shap_exact(inputs, predict, background, target):
    """Exact interventional Shapley values by shap (shap.explainers.Exact, all 2^d coalitions, with
    shap.maskers.Independent over the background).  Deterministic; skipped above 16 features."""
    if inputs.ndim == 2 and inputs.shape[1] > 16:
        raise NotApplicable(f"shap's Exact explainer enumerates 2^d coalitions; d={inputs.shape[1]} > 16")
    return _masked_explainer(shap.explainers.Exact, inputs, predict, background, target)


@per_row
def shap_permutation(inputs, predict, background, target, seed, budget=budgets.DEFAULT):
    """shap.explainers.Permutation (antithetic permutation sampling) with shap.maskers.Independent
    over the background, seeded through its ``seed`` argument.

    ``max_evals`` is shap's default 500, raised to the 2d + 1 shap requires for many features; each
    evaluation averages over the masker's background rows, which are subsampled to fit the call's
    ``budget`` (points x max_evals x rows model evaluations), as for KernelSHAP.
    """
    if inputs.ndim != 2 or background is None:
        return _masked_explainer(shap.explainers.Permutation, inputs, predict, background, target)  # says why not
    n, d = inputs.shape
    preferred = max(500, 2 * d + 1)
    max_evals, rows = budgets.sampled_shapley(
        budget, n, len(background), preferred=preferred, minimum=2 * d + 1, method="shap's Permutation explainer"
    )
    masker = shap.maskers.Independent(np.asarray(background, dtype=float), max_samples=rows)
    return _masked_explainer(
        shap.explainers.Permutation,
        inputs,
        predict,
        background,
        target,
        masker=masker,
        seed=seed,
        call={"max_evals": max_evals},
    )


@per_row
def shap_partition(inputs, predict, background, target, seed):
    """Owen values of shap.explainers.Partition (default max_evals=500) with
    shap.maskers.Partition over the background (features clustered by correlation, shap's default),
    seeded through numpy's global generator, from which shap draws the clustering's jitter and the
    ties of its queue."""
    tabular = inputs.ndim == 2 and background is not None
    if tabular:
        background = np.asarray(background, dtype=float)
        if len(np.unique(background, axis=0)) < 2:
            raise NotApplicable(
                "shap's Partition masker clusters features by their correlation over the "
                "background; this case's background has a single distinct row"
            )
    with _global_seed(seed):
        masker = shap.maskers.Partition(background, max_samples=len(background)) if tabular else None
        return _masked_explainer(shap.explainers.Partition, inputs, predict, background, target, masker=masker)


def compile_numba() -> None:
    """Run each masked explainer once on a toy problem (``prepare``: once per worker process).

    shap's Exact, Permutation and Partition explainers JIT-compile numba functions on first use
    (7-25 s); compiled here, before the first call, no call's time includes the compilation.  The
    zygote runs it before its first fork (:func:`pytest_xai.explainers.compiled_by`), so the workers
    it forks find them compiled.
    """
    toy = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0]])

    def predict(X):
        return np.asarray(X, dtype=float).sum(axis=1)

    try:
        shap_exact(toy, predict, toy, None)
        shap_permutation(toy, predict, toy, None, 0, budgets.DEFAULT)
        shap_partition(toy, predict, toy, None, 0)
    finally:  # shap's progress bar may have started tqdm's monitor thread: stopped, since the zygote
        import tqdm  # forks only while it holds one thread

        if tqdm.tqdm.monitor is not None:
            tqdm.tqdm.monitor.exit()
            tqdm.tqdm.monitor = None


# the contract's prepare hook is a function attribute, which mypy does not model
shap_exact.prepare = shap_permutation.prepare = shap_partition.prepare = compile_numba  # type: ignore[attr-defined]
# What each explainer claims, for the exactness and estimator checks (pytest_xai.cases.games.checks):
# enumeration and interventional TreeSHAP are exact; permutation sampling is unbiased at any budget,
# KernelSHAP's regression only asymptotically (Covert & Lee 2021).
shap_exact.exact = shap_tree.exact = True  # type: ignore[attr-defined]
shap_permutation.estimator = True  # type: ignore[attr-defined]
shap_kernel.estimator = "consistent"  # type: ignore[attr-defined]
