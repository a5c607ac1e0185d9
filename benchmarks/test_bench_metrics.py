"""Vectorised metrics against the per-instance Python loops XAI-Bench uses, in the same run.

Each benchmark checks that both ways give the same numbers (to 1e-9), times the vectorised way
with pytest-benchmark, times the loop with the same clock (best of ``REPEATS``), records the
speed-up in ``benchmark.extra_info["speedup"]`` and requires it to be at least ``MIN_SPEEDUP`` for
the two ways XAI-Bench computes expectations (plug-in baseline, exact conditional samples).  With
50 background rows per model call the loop is compute-bound as well; that ratio is only recorded.

Run: OMP_NUM_THREADS=1 pytest -p no:cacheprovider benchmarks/test_bench_metrics.py
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from pytest_xai import metrics as M
from pytest_xai.cases import gaussian as g
from pytest_xai.shapley import coalitions

MIN_SPEEDUP = 10.0
REPEATS = 3
D, N, N_BACKGROUND, N_PERTURB, N_SAMPLES = 8, 100, 50, 100, 100


@pytest.fixture(scope="module")
def problem():
    """XAI-Bench's nonlinear additive label on 8 correlated Gaussian features (4 dummies)."""
    dist = g.Gaussian.equicorrelated(D, 0.5)
    model = g.standardise(g.NonlinearAdditive(), dist)
    rng = np.random.default_rng(0)
    X, background = dist.sample(N, rng), dist.sample(N_BACKGROUND, rng)
    phi = g.exact_shapley(model, dist, X, "interventional") + 0.05 * rng.standard_normal((N, D))
    return dist, model, X, phi, background


# How the loops compute E_S[f] for one point x and one set of present features, per reference:
# XAI-Bench's "interventional" plug-in (one baseline row per model call), its default
# observational conditional (N_SAMPLES exact conditional draws per call, seeded alike for common
# random numbers), and the interventional expectation over background rows.
REFERENCES = {
    "baseline": (lambda dist, bg: dist.mean,
                 lambda dist, bg: lambda x, S: np.where(S, x, dist.mean)[None]),
    "observational": (lambda dist, bg: dist.imputer("observational"),
                      lambda dist, bg: lambda x, S: dist.conditional_sample(
                          x[S], np.flatnonzero(S), N_SAMPLES, np.random.default_rng(0))),
    "background": (lambda dist, bg: bg,
                   lambda dist, bg: lambda x, S: np.where(S, x, bg)),
}


def best_time(fn, *args):
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


# The loops below are the definitions computed the way XAI-Bench does: one point at a time, one
# model call per feature (or coalition, or perturbation).


def loop_faithfulness(predict, X, A, rows_for):
    out = []
    for x, w in zip(X, A):
        fx = predict(x[None])[0]
        delta = []
        for i in range(len(x)):
            S = np.ones(len(x), bool)
            S[i] = False
            delta.append(abs(predict(rows_for(x, S)).mean() - fx))
        out.append(np.corrcoef(np.abs(w), delta)[0, 1])
    return np.array(out)


def vectorised_faithfulness(predict, X, A, reference):
    return M.faithfulness(predict, X, A, reference, n_samples=N_SAMPLES, seed=0).values


def loop_monotonicity(predict, X, A, rows_for):
    out = []
    for x, w in zip(X, A):
        order = np.argsort(-np.abs(w), kind="stable")  # phi is continuous: no ties to break
        E = []
        for k in range(len(x) + 1):
            S = np.zeros(len(x), bool)
            S[order[:k]] = True
            E.append(predict(rows_for(x, S)).mean())
        delta = np.abs(np.diff(E))
        out.append(np.mean(delta[:-1] >= delta[1:] - 1e-9 * delta.max()))
    return np.array(out)


def vectorised_monotonicity(predict, X, A, reference):
    return M.monotonicity(predict, X, A, reference, n_samples=N_SAMPLES, seed=0).values


def loop_infidelity(predict, X, A, rows_for):
    removed_all = np.random.default_rng(0).random((len(X), N_PERTURB, X.shape[1])) < 0.5
    out = []
    for x, w, removed in zip(X, A, removed_all):
        fx = predict(x[None])[0]
        explained, delta_f = [], []
        for r in removed:
            delta_f.append(fx - predict(rows_for(x, ~r)).mean())
            explained.append(w[r].sum())
        explained, delta_f = np.array(explained), np.array(delta_f)
        beta = max(0.0, (explained * delta_f).mean() / (explained**2).mean())  # clipped: -w explains nothing
        out.append(((beta * explained - delta_f) ** 2).mean())
    return np.array(out)


def vectorised_infidelity(predict, X, A, reference):
    return M.infidelity(predict, X, A, reference, n_perturb=N_PERTURB, n_samples=N_SAMPLES, seed=0).values


METRICS = {"faithfulness": (vectorised_faithfulness, loop_faithfulness),
           "monotonicity": (vectorised_monotonicity, loop_monotonicity),
           "infidelity": (vectorised_infidelity, loop_infidelity)}


@pytest.mark.parametrize("reference", REFERENCES)
@pytest.mark.parametrize("metric", METRICS)
def test_vectorised_metric_equals_and_beats_the_per_instance_loop(benchmark, problem, metric, reference):
    dist, model, X, phi, background = problem
    vectorised, naive = METRICS[metric]
    make_reference, make_rows_for = REFERENCES[reference]
    ref, rows_for = make_reference(dist, background), make_rows_for(dist, background)
    benchmark.group = f"{metric}, 100 points, d=8"
    fast = benchmark(vectorised, model, X, phi, ref)
    np.testing.assert_allclose(fast, naive(model, X, phi, rows_for), rtol=0, atol=1e-9)
    if metric == "infidelity" and reference != "baseline":
        pytest.skip("the loop makes 10,000 model calls; timed for the baseline reference only")
    speedup = best_time(naive, model, X, phi, rows_for) / best_time(vectorised, model, X, phi, ref)
    benchmark.extra_info["speedup"] = round(speedup, 1)
    print(f"\n{metric} ({reference}): {speedup:.1f}x faster than the per-instance loop")
    if reference != "background":  # 50 background rows per call make the loop compute-bound too
        assert speedup >= MIN_SPEEDUP


def loop_exact_shapley(model, dist, X):
    """Per point and per coalition: one Schur-complement solve and one expectation."""
    masks, W = coalitions(dist.d)
    out = np.empty_like(X)
    for n, x in enumerate(X):
        v = np.empty(len(masks))
        for c, S in enumerate(masks):
            mean = x.copy()
            if not S.all():
                T = ~S
                if S.any():
                    A = np.linalg.solve(dist.cov[np.ix_(S, S)], dist.cov[np.ix_(S, T)]).T
                    mean[T] = dist.mean[T] + A @ (x[S] - dist.mean[S])
                else:
                    mean[T] = dist.mean[T]
            v[c] = model.expectation(mean[None], None)[0]
        out[n] = v @ W
    return out


def exact_shapley_cold(model, dist, X):
    """Fresh distribution object, so the conditional parameters of all 1024 coalitions are
    computed inside the timing (no warm cache)."""
    return g.exact_shapley(model, g.Gaussian(dist.mean, dist.cov), X, "observational")


def test_exact_gt_shapley_d10_100_points(benchmark):
    benchmark.group = "exact GT-Shapley, linear Gaussian, d=10, 100 points, observational"
    dist = g.Gaussian(np.zeros(10), 0.3 * np.eye(10) + 0.7 * np.ones((10, 10)))
    model = g.Linear(tuple(range(10)))
    X = dist.sample(100, np.random.default_rng(0))
    fast = benchmark(exact_shapley_cold, model, dist, X)
    np.testing.assert_allclose(fast, loop_exact_shapley(model, dist, X), rtol=0, atol=1e-9)
    seconds = best_time(exact_shapley_cold, model, dist, X)
    speedup = best_time(loop_exact_shapley, model, dist, X) / seconds
    benchmark.extra_info.update(seconds=round(seconds, 4), speedup=round(speedup, 1))
    print(f"\nexact GT-Shapley d=10, 100 points: {seconds:.3f} s, {speedup:.1f}x faster than the loop")
    assert speedup >= MIN_SPEEDUP
