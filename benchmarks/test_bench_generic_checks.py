"""The ground-truth-free checks, vectorised over rows, against a per-instance loop of the same
definition in the same run, and max-sensitivity against Quantus' ``MaxSensitivity`` (when installed).

Each loop gives the same numbers as the vectorised check (asserted to 1e-9); the vectorised check is
timed with pytest-benchmark, the loop with the same clock (best of ``REPEATS``), and the ratio is
recorded in ``benchmark.extra_info["speedup"]`` (printed with ``-s``).  The explainer is cheap
(gradient x input of a smooth numpy model, as a captum user's Saliency x input would be), so the
ratios measure the checks, not the explainer: a per-instance loop pays one explainer call per row.

Run: OMP_NUM_THREADS=1 pytest -p no:cacheprovider -p no:xdist benchmarks/test_bench_generic_checks.py -s
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import pytest_xai
from pytest_xai.cases import generic

REPEATS = 3
N, D, N_PERTURB, RADIUS = 200, 20, 8, 0.1
W = np.random.default_rng(0).normal(size=D)


def predict(X):
    X = np.asarray(X, dtype=float)
    return np.tanh(X @ W / 4)


def gradient_x_input(inputs):
    z = inputs @ W / 4
    return inputs * (1 - np.tanh(z) ** 2)[:, None] * W / 4


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, D))
    return pytest_xai.make_case(X, predict=predict, background=rng.normal(size=(50, D)), baseline=np.zeros(D))


def reexplainer(case):
    def reexplain(model=None, *, other_seed=False, rows=None, perturb=None):
        return gradient_x_input(np.asarray(generic.variant_inputs(case, rows=rows, perturb=perturb).inputs, float))

    return reexplain


def best_time(fn):
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def record(benchmark, name, loop_seconds, other="per-instance loop"):
    speedup = loop_seconds / benchmark.stats.stats.min
    benchmark.extra_info.update({"other_seconds": loop_seconds, "speedup": speedup})
    print(
        f"\n{name}: vectorised {benchmark.stats.stats.min * 1e3:.2f} ms, {other} "
        f"{loop_seconds * 1e3:.2f} ms, speed-up {speedup:.1f}x"
    )


def test_max_sensitivity(benchmark, case):
    A = gradient_x_input(case.inputs)
    fast = benchmark(
        lambda: generic.max_sensitivity(
            A, case, reexplain=reexplainer(case), radius=RADIUS, n_perturb=N_PERTURB, max_ratio=0.5
        )
    )

    def loop():
        scale = np.mean([np.linalg.norm(a) for a in A])
        sens = []
        for r in range(N):
            worst = 0.0
            for k in range(N_PERTURB):
                x = generic.perturbed(case, k, RADIUS)[r : r + 1]  # the same draw, explained alone
                worst = max(worst, float(np.linalg.norm(gradient_x_input(x)[0] - A[r]) / scale))
            sens.append(worst)
        return float(np.mean(sens))

    assert abs(loop() - (1.0 - fast.value)) < 1e-9
    record(benchmark, "max_sensitivity", best_time(loop))


def test_completeness(benchmark, case):
    A = gradient_x_input(case.inputs)  # not complete; the gap is what both ways compute
    fast = benchmark(lambda: generic.completeness(A, case, claim="baseline", rtol=0.01))

    def loop():
        base = float(predict(np.zeros((1, D)))[0])
        outs = [float(predict(case.inputs[r : r + 1])[0]) for r in range(N)]
        R = max(max(outs + [base]) - min(outs + [base]), max(abs(o - base) for o in outs))
        return max(abs(A[r].sum() - (outs[r] - base)) / R for r in range(N))

    assert abs(loop() - (1.0 - fast.value)) < 1e-9
    record(benchmark, "completeness", best_time(loop))


def test_determinism(benchmark, case):
    A = gradient_x_input(case.inputs)
    fast = benchmark(lambda: generic.determinism(A, case, reexplain=reexplainer(case), rtol=1e-6))

    def loop():
        scale = np.mean([np.linalg.norm(a) for a in A])
        gaps = [np.linalg.norm(gradient_x_input(case.inputs[r : r + 1])[0] - A[r]) / scale for r in range(N)]
        [gradient_x_input(case.inputs[r : r + 1]) for r in range(N)]  # the other seed
        return float(max(gaps))

    assert abs(loop() - (1.0 - fast.value)) < 1e-9
    record(benchmark, "determinism", best_time(loop))


def test_batch_invariance(benchmark, case):
    A = gradient_x_input(case.inputs)
    fast = benchmark(lambda: generic.batch_invariance(A, case, reexplain=reexplainer(case), n_single=3, rtol=0.01))

    def loop():  # the reverse-order batch row by row, and the same three single rows
        scale = np.mean([np.linalg.norm(a) for a in A])
        gaps = [np.linalg.norm(gradient_x_input(case.inputs[r : r + 1])[0] - A[r]) / scale for r in range(N)]
        for r in (0, (N - 1) // 2, N - 1):
            gaps[r] = max(gaps[r], np.linalg.norm(gradient_x_input(case.inputs[r : r + 1])[0] - A[r]) / scale)
        return float(max(gaps))

    assert abs(loop() - (1.0 - fast.value)) < 1e-9
    record(benchmark, "batch_invariance", best_time(loop))


def test_max_sensitivity_against_quantus(benchmark, case):
    """Quantus' MaxSensitivity on the same explanation (as a torch model and explain_func), the same
    number of perturbations and the same uniform radius (the features have unit scale); Quantus
    normalises each row's attributions by its own norm, so only the time is compared."""
    quantus = pytest.importorskip("quantus")
    torch = pytest.importorskip("torch")

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.stack([-torch.tanh(x @ torch.as_tensor(W) / 4), torch.tanh(x @ torch.as_tensor(W) / 4)], 1)

    def explain_func(model, inputs, targets, **kwargs):
        return gradient_x_input(np.asarray(inputs, dtype=float))

    x = np.asarray(case.inputs, dtype=float)
    y = np.ones(N, dtype=int)
    A = gradient_x_input(x)
    metric = quantus.MaxSensitivity(
        nr_samples=N_PERTURB,
        lower_bound=RADIUS,
        disable_warnings=True,
        display_progressbar=False,
        return_aggregate=True,
    )
    peer = best_time(
        lambda: metric(
            model=Model().double(),
            x_batch=x,
            y_batch=y,
            a_batch=A,
            explain_func=explain_func,
            device="cpu",
            batch_size=N,
        )
    )
    benchmark(
        lambda: generic.max_sensitivity(
            A, case, reexplain=reexplainer(case), radius=RADIUS, n_perturb=N_PERTURB, max_ratio=0.5
        )
    )
    record(benchmark, "max_sensitivity", peer, other="Quantus MaxSensitivity")
