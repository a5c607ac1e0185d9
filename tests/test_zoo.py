"""The degenerate-explainer zoo against every registered check: verdicts that cannot be fooled.

For every check, every case that declares it, and every member of the zoo
(:mod:`pytest_xai.explainers.degenerate`), the member is applied to the case's correct attributions
(the check's ``reference``, e.g. ``case.truth["shapley"]``) and the check is called directly.  A
member must fail unless the check declares it passes by construction (``passes_by_construction``
on :func:`pytest_xai.checks.check`, with the reason); the correct reference itself must pass.
A check registered without a ``reference`` must be listed in :data:`NO_REFERENCE` with the reason.
"""

from __future__ import annotations

import fnmatch

import numpy as np
import pytest

from pytest_xai import NotApplicable, cases, checks, metrics
from pytest_xai.explainers import degenerate

#: Checks whose zoo verdicts are not tested here, and why (their own self-tests run the zoo through
#: the explainer: tests/test_fooling.py, tests/test_sanity.py).  A check that gains a ``reference``
#: is tested here automatically and must leave this list.
NO_REFERENCE = {
    "interaction_detection": "scores returned pairwise interactions; the zoo returns attributions only, and the "
    "check skips (NotApplicable) an explainer without interactions: "
    "test_interaction_detection_fails_interactions_that_explain_nothing covers it",
    "fooling": "scores an explainer run on a scaffold built against it, not a fixed map: a transform of a "
    "truth has nothing to be fooled by (part B: tests/test_fooling.py)",
    "model_randomisation": "compares the explainer on the trained and the randomised model: needs two calls",
    "data_randomisation": "compares the explainer on models trained on true and permuted labels: needs two calls",
    **dict.fromkeys(
        ("convergence", "unbiasedness", "coverage"),
        "judges an estimator through its errors over several seeds and budgets, not one map: the wrong "
        "estimators (degenerate.ESTIMATORS) and the zoo's stochastic members run through it in tests/test_games.py",
    ),
    **dict.fromkeys(
        (
            "completeness",
            "determinism",
            "batch_invariance",
            "max_sensitivity",
            "local_lipschitz",
            "relative_input_stability",
            "relative_output_stability",
        ),
        "a ground-truth-free check that no built-in case declares; its zoo runs through the explainer "
        "(re-explained variants) in tests/test_generic_checks.py",
    ),
}

#: (check glob, case glob) pairs whose case takes a second or more to build or to score.
SLOW = {
    ("*", "gaussian_nonlinear_additive_mlp_rho50"),
    ("*", "gaussian_mixture_linear"),
    ("*", "stress_nb_features"),
    ("dummy", "digits_*"),
}


def _slow(check: str, case: str) -> bool:
    return any(fnmatch.fnmatchcase(check, c) and fnmatch.fnmatchcase(case, pattern) for c, pattern in SLOW)


def _pairs():
    for info in cases.infos():
        for check in info.checks:
            if checks.CHECKS[check].reference is not None:
                yield check, info.name


PAIRS = list(_pairs())


def _param(check, case, *rest):
    marks = [pytest.mark.slow] if _slow(check, case) else []
    return pytest.param(check, case, *rest, id="-".join([f"{check}[{case}]", *rest]), marks=marks)


def _setup(check: str, name: str):
    info = checks.CHECKS[check]
    try:
        case = cases.get(name)
    except NotApplicable as exc:  # e.g. a shipped model below its quality gate
        pytest.skip(f"case {name!r} is not available: {exc}")
    params = {**info.thresholds, **case.info.checks[check]}
    try:
        reference = info.reference(case, case.info.checks[check])
    except NotApplicable as exc:
        pytest.skip(f"{check} has no reference on {name}: {exc}")
    return info, case, params, reference


#: Members that draw random numbers are tried with these seeds (the suite passes a seed per test).
SEEDS = (0, 1, 2)
STOCHASTIC = {"noise", "row_offset", "shuffled_rows", "noisy_10", "noisy_30", "noisy_100"}


def _member(member: str, case, reference, seed: int = 0):
    output = metrics.outputs(case.predict, case.inputs, case.target)
    return degenerate.apply(member, reference, case.inputs, output, case.background, seed=seed)


def test_every_registered_check_is_covered_or_listed_with_a_reason():
    cases.infos()
    for name, info in checks.CHECKS.items():
        assert info.reference is not None or NO_REFERENCE.get(name), (
            f"check {name!r} has no reference= and no NO_REFERENCE entry: give it the correct attributions "
            f"of its cases (reference=truth_reference(...)) or list it here with the reason"
        )
    assert set(NO_REFERENCE) <= set(checks.CHECKS), set(NO_REFERENCE) - set(checks.CHECKS)
    stale = [name for name in NO_REFERENCE if checks.CHECKS[name].reference is not None]
    assert not stale, f"{stale} now declare a reference: remove them from NO_REFERENCE"


def test_declarations_name_zoo_members_and_give_reasons():
    for name, info in checks.CHECKS.items():
        for key, reason in info.passes_by_construction.items():
            member = key.partition("@")[0]
            assert member in degenerate.MEMBERS, f"{name}: {key!r} names no zoo member"
            assert reason and len(reason) > 20, f"{name}: {key!r} needs a reason"
            pattern = key.partition("@")[2]
            if pattern:
                assert any(fnmatch.fnmatchcase(i.name, pattern) and name in i.checks for i in cases.infos()), (
                    f"{name}: {key!r} matches no case that declares the check"
                )


@pytest.mark.parametrize(("check", "case"), [_param(c, n) for c, n in PAIRS])
def test_the_correct_reference_passes(check, case):
    info, case, params, reference = _setup(check, case)
    score = info.func(reference, case, **params)
    assert score.passed, score.detail


@pytest.mark.parametrize(("check", "case", "member"), [_param(c, n, m) for c, n in PAIRS for m in degenerate.MEMBERS])
def test_zoo_member_fails_unless_declared(check, case, member):
    info, case, params, reference = _setup(check, case)
    exemption = info.exemption(member, case.name)
    for seed in SEEDS if member in STOCHASTIC else (0,):
        score = info.func(_member(member, case, reference, seed), case, **params)
        if exemption is None:
            assert not score.passed, (
                f"zoo member {member!r} (seed {seed}) passes {check}[{case.name}] ({score.detail}); fix the check, "
                f"or declare it in passes_by_construction with the reason"
            )
            assert score.detail
    # a declared member may pass or fail: the declaration is a permission, with its reason


#: Checks that compare the attributions with a ground truth in the model's output units (part B):
#: 100 x the truth is a wrong explanation of the same model there; their scale-freedom is that
#: scaling the model output scales the truth and the explanation alike (relative MSE).
OUTPUT_UNITS = {"units_mse", "units_shapley_mse", "token_values", "exactness"}


def test_scaling_the_reference_changes_no_verdict():
    """Scale-free: 100 x the correct reference still passes every fast check (but OUTPUT_UNITS)."""
    for check, name in PAIRS:
        if _slow(check, name) or check in OUTPUT_UNITS:
            continue
        info, case, params, reference = _setup_or_none(check, name)
        if info is None:
            continue
        assert info.func(100.0 * reference, case, **params).passed, (check, name)


def _setup_or_none(check, name):
    try:
        return _setup(check, name)
    except pytest.skip.Exception:
        return None, None, None, None


def test_the_zoo_explainers_obey_the_contract_and_match_the_transforms():
    from pytest_xai import explainers
    from pytest_xai.engine import contract

    assert explainers.ZOO_MEMBERS == degenerate.MEMBERS  # the lazy names of the package
    assert all(f"zoo_{m}" in explainers.__all__ for m in degenerate.MEMBERS)
    case = cases.get("cough_and_fever")
    for member in degenerate.MEMBERS:
        explainer = contract.load(f"pytest_xai.explainers:zoo_{member}")
        got = contract.run(explainer, case, seed=0).attributions
        assert got.shape == case.inputs.shape
        if member not in ("noise",):  # the explainer's noise is unit-scale, the transform's the truth's RMS
            np.testing.assert_allclose(got, _member(member, case, case.truth["shapley"]), atol=1e-9)
    with pytest.raises(NotApplicable):
        degenerate.sign_flipped(np.zeros((2, 20)), lambda X: X.sum(axis=1), np.zeros((2, 20)), None, 0)


def test_swapped_exchanges_the_two_most_important_features_and_shuffled_rows_moves_every_row():
    reference = np.array([[1.0, 5.0, -3.0, 0.0], [2.0, -6.0, 2.0, 0.0], [0.0, 4.0, 3.5, 0.0]])
    swapped = degenerate.apply("swapped", reference, reference, np.zeros(3))
    np.testing.assert_array_equal(swapped[:, [1, 2]], reference[:, [2, 1]])
    shuffled = degenerate.apply("shuffled_rows", reference, reference, np.zeros(3))
    assert not any((shuffled[r] == reference[r]).all() for r in range(3))
    assert sorted(map(tuple, shuffled)) == sorted(map(tuple, reference))


def test_interaction_detection_fails_interactions_that_explain_nothing():
    from pytest_xai.engine.contract import Explanation

    info = checks.CHECKS["interaction_detection"]
    for name in ("detect_interaction1", "detect_interaction2"):
        case = cases.get(name)
        d = case.inputs.shape[1]
        rng = np.random.default_rng(0)
        for interactions in (np.ones((d, d)), np.zeros((d, d)), rng.standard_normal((d, d))):
            explanation = Explanation(np.zeros(case.inputs.shape), 0.0, interactions=interactions)
            score = info.func(explanation, case, **{**info.thresholds, **case.info.checks["interaction_detection"]})
            assert not score.passed, score.detail
