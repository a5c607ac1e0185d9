"""The budget of model evaluations (pytest_xai.engine.budget): the arithmetic, the option, the contract
argument, the reference adapters staying within it, and the suite's checks of one explanation
sharing one xdist worker."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_xai import cases
from pytest_xai.cases.additive import local_functions, relu_units
from pytest_xai.cases.fooling import unique_rows
from pytest_xai.engine import budget as budgets
from pytest_xai.errors import NotApplicable
from tests.test_plugin import QUIET, REF

# ------------------------------------------------------------------------------ the arithmetic


def test_samples_keep_the_library_default_while_it_fits_and_cut_it_otherwise():
    assert budgets.samples(10_000, 2, preferred=1000, minimum=10) == 1000
    assert budgets.samples(10_000, 20, preferred=1000, minimum=10) == 500
    assert budgets.samples(10_000, 20, preferred=1000, minimum=10, per_sample=5) == 100
    with pytest.raises(NotApplicable, match=r"at least 600 samples .* over the budget of 1e\+04 .*--xai-budget"):
        budgets.samples(10_000, 20, preferred=1000, minimum=600, method="KernelSHAP")


def test_sampled_shapley_summarises_the_background_before_cutting_samples():
    assert budgets.sampled_shapley(10**6, 10, 100, preferred=1000, minimum=10, method="m") == (1000, 100)
    assert budgets.sampled_shapley(10**6, 20, 100, preferred=2500, minimum=10, method="m") == (2500, 20)
    # fewer than MIN_BACKGROUND rows would fit: keep 10 rows, cut the samples
    assert budgets.sampled_shapley(10**6, 100, 100, preferred=2500, minimum=10, method="m") == (1000, 10)
    assert budgets.sampled_shapley(10**6, 100, 3, preferred=2500, minimum=10, method="m") == (2500, 3)
    with pytest.raises(NotApplicable):
        budgets.sampled_shapley(10**4, 100, 100, preferred=2500, minimum=20, method="m")


# ------------------------------------------------------------- the adapters stay within budget


class Counting:
    """A model that counts the rows it is asked to evaluate."""

    def __init__(self, weights):
        self.weights, self.rows = np.asarray(weights, dtype=float), 0

    def __call__(self, X):
        X = np.asarray(X, dtype=float)
        self.rows += len(X)
        return X @ self.weights


@pytest.mark.parametrize("adapter", ["shap_kernel", "shap_permutation", "lime_tabular"])
@pytest.mark.parametrize("budget", [20_000, 200_000])
def test_perturbation_adapters_spend_at_most_their_budget(adapter, budget):
    import pytest_xai.explainers as ex

    rng = np.random.default_rng(0)
    d, n = 30, 8
    inputs, background = rng.normal(size=(n, d)), rng.normal(size=(50, d))
    model = Counting(rng.normal(size=d))
    explain = getattr(ex, adapter)
    extra = {"feature_names": [f"x{j}" for j in range(d)]} if adapter == "lime_tabular" else {}
    out = explain(inputs, model, background, None, seed=0, budget=budget, **extra)
    assert out.shape == (n, d) and np.isfinite(out).all()
    # the budget, plus what a library spends outside its samples (f(x), E f(background); shap's
    # Permutation explainer probes which inputs vary, about 8 % more here)
    assert model.rows <= 1.1 * budget + n + len(background)
    if budget == 20_000:  # below every library's default: the budget is what is spent
        assert model.rows >= 0.5 * budget


def test_a_budget_too_small_for_the_case_is_a_skip_naming_the_fix():
    import pytest_xai.explainers as ex

    rng = np.random.default_rng(0)
    with pytest.raises(NotApplicable, match="--xai-budget"):
        ex.shap_kernel(
            rng.normal(size=(10, 300)), Counting(np.ones(300)), rng.normal(size=(20, 300)), None, 0, budget=10_000
        )


def test_captum_sampling_adapters_spend_at_most_their_budget():
    torch = pytest.importorskip("torch")
    import pytest_xai.explainers as ex

    rows = []
    model = torch.nn.Linear(12, 1).double()
    model.register_forward_hook(lambda module, args, out: rows.append(len(args[0])))
    inputs = np.random.default_rng(0).normal(size=(4, 12))
    for adapter in ("captum_kernel_shap", "captum_lime", "shapley_value_sampling"):
        rows.clear()
        getattr(ex, adapter)(inputs, model, None, np.zeros(12), seed=0, budget=4_000)
        assert sum(rows) <= 4_000 + 2 * len(inputs), adapter


# --------------------------------------------------------------- the option and the contract


def test_the_budget_reaches_explainers_that_ask_for_it(pytester, monkeypatch):
    seen = pytester.path / "budget.txt"
    monkeypatch.setenv("BUDGET_SEEN", str(seen))
    pytester.makepyfile(
        probe_mod="""
        import os
        import numpy as np

        def explain(inputs, budget):
            with open(os.environ["BUDGET_SEEN"], "w") as out:
                out.write(repr(budget))
            return np.zeros(inputs.shape)
    """
    )
    pytester.syspathinsert()
    # in-process (no limit) with the default, in a worker process with the option, and a case's own
    for args, case, expected in (
        (("--xai-timeout=0",), "symmetry and cough_and_fever and not 10_90", budgets.DEFAULT),
        (("--xai-budget=2e4",), "symmetry and cough_and_fever and not 10_90", 20_000),
        ((), "stress_nb_features", 500_000),
    ):
        result = pytester.runpytest(*QUIET, "-k", case, "--xai-explainer=probe_mod:explain", *args)
        assert seen.read_text() == repr(expected)
    result.stdout.fnmatch_lines(["xai: budget=5e+06 model evaluations per call unless a case declares less"])


@pytest.mark.parametrize("value", ["many", "0", "1e2", "2.5e4.1", "nan", "1234.5"])
def test_a_bad_budget_is_a_usage_error(pytester, value):
    result = pytester.runpytest(*QUIET, f"--xai-explainer={REF}:exact_shapley", f"--xai-budget={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--xai-budget={value!r}*model evaluations >= 1000*"])


# --------------------------------------------------------------- one explanation, one worker


def test_checks_sharing_an_explanation_share_an_xdist_worker(pytester):
    """Under -n 2 every (case, explainer) is explained once: the checks of each Gaussian case
    land on one worker instead of recomputing its explanation on the other; plain tests still run."""
    pytest.importorskip("xdist")
    pytester.makepyfile(test_plain="import pytest\n@pytest.mark.parametrize('i', range(6))\ndef test_p(i):\n    pass\n")
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *QUIET,
        "-n",
        "2",
        "-k",
        "gaussian_linear_rho or test_p",
        "test_plain.py",
        f"--xai-explainer={REF}:exact_shapley",
        f"--xai-report={report}",
    )
    checks = len(cases.info("gaussian_linear_rho50").checks)
    result.assert_outcomes(passed=6 + checks * 5)
    records = json.loads(report.read_text())["results"]
    computed = [r["case"] for r in records if not r["cached"]]
    assert len(records) == checks * 5 and sorted(computed) == sorted(set(computed)) and len(computed) == 5


# ------------------------------------------------------------------ what made the cases faster


def test_piece_lookup_equals_the_sum_of_units():
    data = cases.additive.generate(seed=3, n_samples=300, d=40)
    X = np.concatenate([data["X"], data["breaks"][None, :, 1], np.zeros((1, 40))])  # on a break, at 0
    sign, offset, weight = relu_units(data["breaks"], data["slopes"])
    units = (np.maximum(sign * (X[:, :, None] - offset), 0.0) * weight).sum(-1)
    np.testing.assert_allclose(local_functions(X, data["breaks"], data["slopes"], chunk=64), units, atol=1e-12)


def test_unique_rows_is_numpys_row_dedup():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 4, size=(5000, 3)).astype(np.float32)
    rows[::7, 1] = -0.0
    unique, inverse = unique_rows(rows)
    expected = np.unique(rows, axis=0)
    assert np.array_equal(unique[inverse], rows) and len(unique) == len(expected)
    assert np.array_equal(np.unique(unique, axis=0), expected)
    wide = rng.integers(0, 2**20, size=(2000, 6)).astype(np.float32)  # codes overflow int64 if not re-keyed
    unique, inverse = unique_rows(np.concatenate([wide, wide]))
    assert len(unique) == len(np.unique(wide, axis=0)) and np.array_equal(unique[inverse[:2000]], wide)


def test_lime_regression_weights_carry_their_own_sign():
    """lime's regression explanations keep their weights under key 1 and the same weights negated
    under key 0; reading key 0 inverted every LIME verdict on a regression case."""
    import pytest_xai.explainers as ex

    rng = np.random.default_rng(0)
    weights = np.array([3.0, -2.0, 0.5, 0.0])
    background, inputs = rng.normal(size=(200, 4)), rng.normal(size=(12, 4))
    out = ex.lime_tabular(inputs, lambda X: np.asarray(X) @ weights, background, None, list("abcd"), seed=0)
    exact = weights * (inputs - background.mean(axis=0))
    assert np.corrcoef(out.ravel(), exact.ravel())[0, 1] > 0.8
