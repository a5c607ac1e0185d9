"""The replay corpus (pytest_xai/explainers/replay/): the suite catches the bugs peers shipped.

Every mutant runs through the checks (or metric probes) its bug is about, in-process on small
cases; it must fail at least one while its fixed counterpart passes them all.  Bugs the suite
cannot catch say why and must stay uncaught (a check that catches one should remove the reason).
The metric replays also run against our own metrics, and against the peers' own code where it is
installed (captum; quantus, which is no dependency of ours: those tests skip without it).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from pytest_xai import checks, metrics
from pytest_xai.cases.generic import reexplainer
from pytest_xai.explainers import replay

REPLAYS = {r.name: r for r in replay.REPLAYS}


@pytest.fixture(scope="module")
def outcomes():
    return {}


def _outcome(outcomes, name):
    if name not in outcomes:
        outcomes[name] = replay.run(REPLAYS[name])
    return outcomes[name]


def test_the_corpus_has_25_bugs_from_5_projects_each_with_an_issue_and_a_summary():
    assert len(REPLAYS) == len(replay.REPLAYS) >= 25, "replay names must be unique, and there must be 25"
    assert len({r.project for r in replay.REPLAYS}) >= 5
    for r in replay.REPLAYS:
        assert re.fullmatch(r"[\w.-]+(/[\w.-]+)?(#\d+|@[\d.]+| \(.+\))", r.issue), r.issue
        assert 20 < len(r.summary) <= 160 and "\n" not in r.summary, r.name
        assert r.kind in ("explainer", "metric") and r.tests and r.mutant is not r.fixed, r.name
        for test in r.tests:
            if r.kind == "metric":
                assert test in replay.PROBES, (r.name, test)
            else:
                assert test[0] in checks.CHECKS or _registers(test[0]), (r.name, test)


def _registers(check):
    from pytest_xai import cases

    cases.infos()
    return check in checks.CHECKS


@pytest.mark.parametrize("name", list(REPLAYS))
def test_the_mutant_is_caught_and_its_fixed_counterpart_passes(outcomes, name):
    outcome = _outcome(outcomes, name)
    lines = [
        f"{v.test}: mutant {'-' if v.mutant is None else v.mutant.passed} ({v.skipped or v.mutant.detail}); "
        f"fixed {'-' if v.fixed is None else v.fixed.passed} ({v.skipped or v.fixed.detail})"
        for v in outcome.verdicts
    ]
    assert all(v.skipped is None for v in outcome.verdicts), lines
    assert outcome.fixed_passes, "the fixed counterpart must pass every test of its bug:\n" + "\n".join(lines)
    if REPLAYS[name].uncaught is None:
        assert outcome.caught, "the suite no longer catches this bug:\n" + "\n".join(lines)
    else:
        assert len(REPLAYS[name].uncaught) > 80
        assert not outcome.caught_by, (
            f"{name} is now caught by {outcome.caught_by}: remove its `uncaught` reason\n" + "\n".join(lines)
        )


def test_no_replay_is_left_uncaught():
    """kernelshap#168 (exactness on the games) and shap#4767 (coverage of its reported variances)
    were the last two; a replay added uncaught says why, and this test asks for the check."""
    assert not [r.name for r in replay.REPLAYS if r.uncaught]


def test_at_least_90_percent_are_caught():
    caught = [r for r in replay.REPLAYS if r.uncaught is None]
    assert len(caught) / len(replay.REPLAYS) >= 0.9, [r.name for r in replay.REPLAYS if r.uncaught]


def test_a_replay_that_is_not_caught_is_reported_so():
    """The runner is not a rubber stamp: the fixed counterpart run as its own mutant is not caught."""
    r = REPLAYS["inseq_batched_attribution"]
    outcome = replay.run(dataclasses.replace(r, mutant=r.fixed))
    assert not outcome.caught and not outcome.caught_by and outcome.fixed_passes


# ------------------------------------------------------------------ the metric bugs, against our metrics


def _linear():
    from pytest_xai import cases

    return cases.get("gaussian_linear_rho50")


def test_our_monotonicity_inserts_the_input_not_the_baseline():
    """Quantus 0.6.0's bug (the input never enters) is not ours: metrics.monotonicity scores the exact
    values high and their reversed order low, which it could not if only the baseline were inserted."""
    case = _linear()
    truth = case.truth["shapley_interventional"]
    good = metrics.monotonicity(case.predict, case.inputs, truth, case.background)
    bad = metrics.monotonicity(case.predict, case.inputs, replay.reversed_order(truth), case.background)
    assert good.mean > 0.9 and bad.mean < 0.1, (good.summary(), bad.summary())


def test_our_irof_takes_the_area_over_the_curve():
    """Quantus#113 (IROF returned the area under the curve: the order reversed) is not ours:
    catalogue.irof, each feature its own group, passes the probe its replay fails."""
    from pytest_xai import catalogue

    probe = replay.PROBES["irof_prefers_truth"]

    def ours(predict, inputs, attributions, baseline):
        return catalogue.irof(predict, inputs, attributions, np.arange(np.shape(inputs)[1]), baseline).values

    assert probe(ours).passed, probe(ours).detail
    assert not probe(replay.irof_auc).passed


def test_our_faithfulness_rewards_the_important_features_not_the_others():
    """OpenXAI#28 (PGI computed PGU) is not ours: perturbing a map's important features (our
    faithfulness's single removals) rates the exact values above their reversed order."""
    case = _linear()
    truth = case.truth["shapley_interventional"]
    reversed_map = replay.reversed_order(truth)
    good = metrics.faithfulness(case.predict, case.inputs, truth, case.background, absolute=False)
    bad = metrics.faithfulness(case.predict, case.inputs, reversed_map, case.background, absolute=False)
    assert good.mean > 0.99 > bad.mean, (good.summary(), bad.summary())
    assert replay.PROBES["pgi_prefers_truth"](replay.pgi).passed


def test_our_max_sensitivity_re_explains_perturbed_inputs_with_the_case_groups():
    """captum PR #1819 (feature_mask not expanded for the perturbed batch) is not ours: the
    re-explained variants keep the case's groups, and grouped occlusion passes max_sensitivity."""
    case = _linear()
    groups = np.array([0, 0, 0, 1, 1])
    case = dataclasses.replace(case, meta={**case.meta, "groups": groups})
    seen = []

    def explain(inputs, predict, baseline, groups):
        seen.append(None if groups is None else groups.tolist())
        return replay.grouped_occlusion(inputs, predict, baseline, groups)

    reexplain = reexplainer(explain, case)
    info = checks.CHECKS["max_sensitivity"]
    score = info.func(
        explain(case.inputs, case.predict, case.baseline, groups), case, reexplain=reexplain, **info.thresholds
    )
    assert score.passed, score.detail
    assert len(seen) == 5 and all(g == groups.tolist() for g in seen), seen


def test_our_infidelity_is_scale_free_and_the_raw_form_is_not():
    case = _linear()
    truth = case.truth["shapley_interventional"]
    for normalize, same in ((True, True), (False, False)):
        a, b = (
            metrics.infidelity(case.predict, case.inputs, w, perturbation="gaussian", normalize=normalize).mean
            for w in (truth, 100 * truth)
        )
        assert np.isclose(a, b) is np.bool_(same), (normalize, a, b)


# --------------------------------------------------------------- conformance with the peers' own code


def _torch_forward(case):
    import torch

    def forward(x):
        return torch.as_tensor(np.asarray(case.predict(x.detach().numpy().astype(float))), dtype=torch.float64)

    return forward


def test_captum_infidelity_equals_ours_on_the_same_draws():
    """captum 0.9's infidelity (normalize=True) and metrics.infidelity (Gaussian, normalize=True) on
    the same noise: equal to 1e-9 (captum draws nothing itself here: its perturb_func hands it ours)."""
    torch = pytest.importorskip("torch")
    captum_metrics = pytest.importorskip("captum.metrics")
    case = _linear()
    X = case.inputs[:20]  # gradient-like maps (Gaussian infidelity's optimum is the gradient), perturbed
    A = replay.path_gradients(case.predict, X, case.baseline) * np.random.default_rng(4).uniform(0.5, 1.5, X.shape)
    k, sigma = 16, 0.1
    noise = sigma * np.random.default_rng(3).standard_normal((k, X.shape[1]))  # one block, every row's
    ours = metrics.infidelity(case.predict, X, A, perturbation="gaussian", n_perturb=k, sigma=sigma, seed=3)

    def perturb(inputs):  # captum repeats each input k times, row i's copies consecutive
        I = torch.as_tensor(np.tile(noise, (len(X), 1)))
        return I, inputs - I

    theirs = captum_metrics.infidelity(
        _torch_forward(case), perturb, torch.as_tensor(X), torch.as_tensor(A), n_perturb_samples=k, normalize=True
    )
    np.testing.assert_allclose(theirs.numpy(), ours.values, rtol=1e-9)
    assert min(ours.params["beta"]) > 0  # no clipping at 0, where ours differs by design


def test_captum_sensitivity_max_equals_our_replay_metric_on_the_same_draws():
    """captum 0.9's sensitivity_max and replay.sensitivity_max (the formula of our max_sensitivity
    check, per row) on the same perturbations of grouped occlusion: equal to 1e-9."""
    torch = pytest.importorskip("torch")
    captum_metrics = pytest.importorskip("captum.metrics")
    case = _linear()
    X, groups = case.inputs[:6], np.array([0, 0, 0, 1, 1])
    k = 4
    moved = X[:, None, :] + 0.05 * np.random.default_rng(5).uniform(-1, 1, (len(X), k, X.shape[1]))

    def explain(inputs, g):
        return replay.grouped_occlusion(np.asarray(inputs, dtype=float), case.predict, case.baseline, g)

    def explanation_func(inputs):  # captum passes a tuple of tensors, or one tensor for the perturbed batch
        x = inputs[0] if isinstance(inputs, tuple) else inputs
        return (torch.as_tensor(explain(x.numpy(), groups)),)

    def perturb(inputs):  # each input repeated k times, consecutively
        return torch.as_tensor(moved.reshape(-1, X.shape[1]))

    theirs = captum_metrics.sensitivity_max(
        explanation_func, torch.as_tensor(X), perturb_func=perturb, n_perturb_samples=k
    )
    ours = replay.sensitivity_max(explain, X, groups, [moved[:, j] for j in range(k)])
    np.testing.assert_allclose(theirs.numpy(), ours, rtol=1e-9)


def test_quantus_monotonicity_scores_noise_as_monotone_as_our_replay_of_its_bug_does():
    """Quantus 0.6.0 Monotonicity on a torch model judges every row of a noise map monotone, exactly
    as replay.quantus_monotonicity does on the same rows; the fixed metric does not."""
    quantus = pytest.importorskip("quantus")
    torch = pytest.importorskip("torch")
    case = _linear()
    X = case.inputs[:16].astype(np.float32)
    noise = np.random.default_rng(0).standard_normal(X.shape).astype(np.float32)

    class Linear(torch.nn.Module):  # the case's model, two outputs so that Quantus indexes a class
        def forward(self, x):
            y = torch.as_tensor(case.predict(x.reshape(len(x), -1).detach().double().numpy()))
            return torch.stack([y, -y], dim=1).float()

    def predict(x):
        return case.predict(np.asarray(x))

    metric = quantus.Monotonicity(perturb_baseline="black", disable_warnings=True, display_progressbar=False)
    theirs = metric(
        model=Linear().eval(),
        x_batch=X[:, None, :],
        y_batch=np.zeros(len(X), dtype=int),
        a_batch=noise[:, None, :],
        device="cpu",
        channel_first=True,
    )
    replayed = replay.quantus_monotonicity(predict, X, noise, np.zeros(X.shape[1]))
    np.testing.assert_array_equal(np.asarray(theirs, dtype=float), replayed)
    assert replayed.all()
    assert replay.arya_monotonicity(predict, X, noise, np.zeros(X.shape[1])).mean() < 1


def test_the_comparison_and_docs_bugs_md_state_the_corpus_counts():
    """The headline counts cannot drift from the corpus (regenerate docs/bugs.md with scripts/bugs_table.py)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    caught = sum(r.uncaught is None for r in replay.REPLAYS)
    total = len(replay.REPLAYS)
    comparison = (root / "docs" / "comparison.md").read_text()
    assert f"replays {total} bugs" in comparison and f"catches **{caught} of {total}**" in comparison
    bugs = (root / "docs" / "bugs.md").read_text()
    assert f"**{caught} of {total} replayed bugs are caught" in bugs
    assert all(r.summary.replace("|", "\\|") in bugs for r in replay.REPLAYS), "regenerate docs/bugs.md"
