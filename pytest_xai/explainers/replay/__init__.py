"""Replays of published explainer and metric bugs: does the suite catch what the field shipped?

:data:`REPLAYS` holds one :class:`Replay` per bug found in a peer's public tracker (or by us).  Each
has a *mutant*, an explainer (the contract of ``docs/design.md``) or a metric written here from the
bug's description (never from the peer's code) that reproduces the bug's effect on our contract,
and its *fixed* counterpart (the correct method).  :func:`run` puts both through the tests the bug
is about: built-in checks on small built-in cases for explainers, and metric probes (properties a
correct metric has, :data:`PROBES`) for metrics.  A replay is *caught* when the mutant fails at
least one of its tests and the fixed counterpart passes them all; a bug the suite cannot catch
carries ``uncaught`` (the reason, which names the check that would be needed).
``scripts/bugs_table.py`` writes ``docs/bugs.md`` from a run; ``tests/test_replay.py`` asserts it.

The package's rooms: :mod:`.explainer_bugs` (reference methods and explainer mutants),
:mod:`.metric_bugs` (metric mutants and the probes) and this module (the corpus and the runner).
Methods are computed in numpy through ``predict`` (finite-difference path gradients for the
gradient methods), so a replay runs in milliseconds and needs no torch or captum; the
language-model replays run on the ``llm`` family's cases (built with torch and transformers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.errors import NotApplicable
from pytest_xai.explainers.replay.explainer_bugs import (
    batch_normalised,
    batch_scaled_path,
    class_template,
    conditioned_on_output,
    divided_twice,
    exact_shapley,
    first_row_multipliers,
    gradient_times_delta,
    integrated_gradients,
    integrated_gradients_over_background,
    kernel_shap,
    lime_fixed,
    lime_key_zero,
    local_multipliers_over_background,
    log_probability_multipliers,
    other_class,
    path_gradients,
    permutation_shapley,
    sampling_fixed,
    sampling_variance_root,
    shap_tree,
    size_weighted_kernel_shap,
    target_one_position_early,
    times_input,
    token_occlusion,
    tokens_misaligned,
    unseeded_permutation_shapley,
    without_step_size,
)
from pytest_xai.explainers.replay.metric_bugs import (
    PROBES,
    arya_monotonicity,
    faithfulness_nan_as_zero,
    faithfulness_ours,
    focus,
    focus_swapped,
    grouped_occlusion,
    infidelity_normalised,
    infidelity_raw,
    irof_aoc,
    irof_auc,
    log_mean_and_se,
    log_of_se,
    monotonicity_by_feature_id,
    monotonicity_ours,
    pgi,
    pgi_as_pgu,
    probe_faithfulness_constant_undefined,
    probe_focus_perfect_map,
    probe_infidelity_scale_free,
    probe_irof_prefers_truth,
    probe_log_se_is_scale_free,
    probe_monotonicity_prefers_truth,
    probe_monotonicity_rejects_noise,
    probe_pgi_prefers_truth,
    probe_rank_of_top_feature,
    probe_sensitivity_max_stable_grouped,
    probe_sensitivity_n_row_alone,
    quantus_monotonicity,
    rank_by_argsort,
    rank_of,
    reversed_order,
    sensitivity_max,
    sensitivity_max_unexpanded,
    sensitivity_n,
    sensitivity_n_over_batch,
)

__all__ = [
    "CASES",
    "PROBES",
    "REPLAYS",
    "Outcome",
    "Replay",
    "Verdict",
    "arya_monotonicity",
    "batch_normalised",
    "batch_scaled_path",
    "check_explainer",
    "class_template",
    "conditioned_on_output",
    "divided_twice",
    "exact_shapley",
    "faithfulness_nan_as_zero",
    "faithfulness_ours",
    "first_row_multipliers",
    "focus",
    "focus_swapped",
    "get_case",
    "gradient_times_delta",
    "grouped_occlusion",
    "infidelity_normalised",
    "infidelity_raw",
    "integrated_gradients",
    "integrated_gradients_over_background",
    "irof_aoc",
    "irof_auc",
    "kernel_shap",
    "lime_fixed",
    "lime_key_zero",
    "local_multipliers_over_background",
    "log_mean_and_se",
    "log_of_se",
    "log_probability_multipliers",
    "monotonicity_by_feature_id",
    "monotonicity_ours",
    "other_class",
    "path_gradients",
    "permutation_shapley",
    "pgi",
    "pgi_as_pgu",
    "probe_faithfulness_constant_undefined",
    "probe_focus_perfect_map",
    "probe_infidelity_scale_free",
    "probe_irof_prefers_truth",
    "probe_log_se_is_scale_free",
    "probe_monotonicity_prefers_truth",
    "probe_monotonicity_rejects_noise",
    "probe_pgi_prefers_truth",
    "probe_rank_of_top_feature",
    "probe_sensitivity_max_stable_grouped",
    "probe_sensitivity_n_row_alone",
    "quantus_monotonicity",
    "rank_by_argsort",
    "rank_of",
    "reversed_order",
    "run",
    "run_all",
    "sampling_fixed",
    "sampling_variance_root",
    "sensitivity_max",
    "sensitivity_max_unexpanded",
    "sensitivity_n",
    "sensitivity_n_over_batch",
    "shap_tree",
    "size_weighted_kernel_shap",
    "target_one_position_early",
    "times_input",
    "token_occlusion",
    "tokens_misaligned",
    "unseeded_permutation_shapley",
    "without_step_size",
]

# -------------------------------------------------------------------------------- the replay corpus


@dataclass(frozen=True)
class Replay:
    """One published bug: ``issue`` ("owner/repo#N"), ``summary`` (one line, our words), ``mutant``
    and ``fixed`` (explainers or metrics), ``tests``: (check, case) pairs for an explainer,
    probe names (:data:`PROBES`) for a metric; ``uncaught``: why the suite cannot catch it."""

    name: str
    issue: str
    summary: str
    kind: str
    mutant: Callable[..., Any]
    fixed: Callable[..., Any]
    tests: tuple[Any, ...]
    uncaught: str | None = None

    @property
    def project(self) -> str:
        """The project's name: the repository of "owner/repo#N", or the word before "@" or " (" ."""
        return re.split(r"[#@ ]", self.issue)[0].split("/")[-1]


def _e(name, issue, summary, mutant, fixed, *tests, uncaught=None) -> Replay:
    return Replay(name, issue, summary, "explainer", mutant, fixed, tuple(tests), uncaught)


def _m(name, issue, summary, mutant, fixed, *tests) -> Replay:
    return Replay(name, issue, summary, "metric", mutant, fixed, tuple(tests))


_IG = integrated_gradients
REPLAYS: tuple[Replay, ...] = (
    _e(
        "captum_deeplift_maxpool_first_row",
        "meta-pytorch/captum#1276",
        "DeepLIFT's max-pool fallback used the first example's gradient for the whole batch",
        first_row_multipliers,
        _IG,
        ("completeness", "units_interacting_features"),
        ("batch_invariance", "units_interacting_features"),
    ),
    _e(
        "captum_deeplift_softmax_normalised",
        "meta-pytorch/captum#519",
        "DeepLift normalised the softmax multipliers: contributions no longer sum to the probability's change "
        "(large convergence delta; fixed with #1367)",
        log_probability_multipliers,
        _IG,
        ("completeness", "replay_softmax"),
    ),
    _e(
        "captum_deeplift_exp_products",
        "meta-pytorch/captum#1085",
        "DeepLift/DeepLiftShap diverge when the model has exp or elementwise products: attributions do not "
        "sum to the output change",
        gradient_times_delta,
        _IG,
        ("completeness", "replay_softmax"),
    ),
    _e(
        "captum_deepliftshap_relu_divergence",
        "meta-pytorch/captum#1104",
        "DeepLiftShap with ReLUs (captum 0.6) diverges from the output change it must sum to",
        local_multipliers_over_background,
        integrated_gradients_over_background,
        ("completeness", "replay_softmax"),
    ),
    _e(
        "captum_shapley_unseeded",
        "meta-pytorch/captum#775",
        "Shapley value sampling without seeds: its own test failed 272 of 500 runs",
        unseeded_permutation_shapley,
        permutation_shapley,
        ("determinism", "replay_softmax"),
    ),
    _e(
        "kernelshap_kernel_weights",
        "ModelOriented/kernelshap#168",
        "Kernel SHAP weighted coalitions wrongly: exact for interactions up to order two, off beyond",
        size_weighted_kernel_shap,
        kernel_shap,
        ("gt_shapley", "gaussian_piecewise_linear_rho50"),
        ("completeness", "gaussian_piecewise_linear_rho50"),
        ("exactness", "games_products"),
    ),
    _e(
        "shap_sampling_variance_sqrt",
        "shap/shap#4767",
        "SamplingExplainer divided the variance of the mean by sqrt(N), misallocating the additivity correction",
        sampling_variance_root,
        sampling_fixed,
        ("gt_shapley", "gaussian_nonlinear_additive_rho50"),
        ("completeness", "gaussian_nonlinear_additive_rho50"),
        ("coverage", "games_products"),
        ("coverage", "games_minima"),
    ),
    _e(
        "shap_tree_forest_additivity",
        "shap/shap#1986",
        "TreeExplainer's values of a scikit-learn random forest miss its output on some rows (here shap 0.51, "
        "scikit-learn 1.9, wine)",
        shap_tree,
        exact_shapley,
        ("completeness", "replay_wine_forest"),
    ),
    _e(
        "inseq_batched_attribution",
        "inseq-team/inseq#110",
        "attributions of a sentence changed with the other sentences in its batch, even for deterministic methods",
        batch_normalised,
        exact_shapley,
        ("batch_invariance", "gaussian_linear_rho50"),
    ),
    _e(
        "inseq_dig_batch_scaling",
        "inseq-team/inseq#113",
        "Discretized IG still gave batch-dependent results: a faulty scaling of the gradients across the batch",
        batch_scaled_path,
        _IG,
        ("batch_invariance", "gaussian_nonlinear_additive_rho50"),
        ("completeness", "gaussian_nonlinear_additive_rho50"),
    ),
    _e(
        "inseq_contrast_reversed",
        "inseq-team/inseq#188",
        "contrast_prob_diff returned the attribution of the false answer, not the true one",
        other_class,
        exact_shapley,
        ("gt_shapley", "replay_softmax"),
        ("completeness", "replay_softmax"),
    ),
    _e(
        "shap_text_conditioned_on_output",
        "shap/shap#3217",
        "the scores of a language model's generated text were computed conditioned on the output itself (Llama-2)",
        conditioned_on_output,
        token_occlusion,
        ("target_token", "llm_recall"),
        ("token_mask_precision", "llm_recall"),
    ),
    _e(
        "unseal_target_position",
        "TomFrederik/unseal#7",
        "the target tokens' logits were selected at the wrong positions: a prediction made one token early",
        target_one_position_early,
        token_occlusion,
        ("target_token", "llm_recall"),
        ("token_mask_precision", "llm_recall"),
    ),
    _e(
        "transformers_interpret_misaligned",
        "cdpierse/transformers-interpret#18",
        "attributions were misaligned with the tokens they were shown on",
        tokens_misaligned,
        token_occlusion,
        ("token_mask_precision", "llm_trigger"),
        ("target_token", "llm_copy"),
    ),
    _e(
        "tsinterpret_leftist_label_only",
        "fzi-forschungszentrum-informatik/TSInterpret#57",
        "LEFTIST's output was the first or last time steps depending on the class only, not the model or data",
        class_template,
        exact_shapley,
        ("gt_shapley", "replay_softmax"),
        ("gt_shapley", "gaussian_linear_rho50"),
    ),
    _e(
        "ig_pytorch_wrong_delta",
        "TianhongDai/integrated-gradient-pytorch#3",
        "Integrated Gradients multiplied by the wrong input difference, so attributions did not sum to F(x) - F(x')",
        times_input,
        _IG,
        ("completeness", "multinomial_linear"),
    ),
    _e(
        "stellargraph_ig_no_dalpha",
        "stellargraph/stellargraph#831",
        "Integrated Gradients forgot to multiply by d-alpha: node importances scale with the number of steps",
        without_step_size,
        _IG,
        ("completeness", "gaussian_linear_rho50"),
    ),
    _e(
        "saliency_batched_ig_steps",
        "PAIR-code/saliency#23",
        "batched Integrated Gradients no longer summed to the confidence change: the sum fell as 1/steps",
        divided_twice,
        _IG,
        ("completeness", "gaussian_linear_rho50"),
    ),
    _e(
        "pytest_xai_lime_key_zero",
        "pytest-xai (found here)",
        "our own lime_tabular read LIME's as_map() key 0 for regression, which holds the weights negated",
        lime_key_zero,
        lime_fixed,
        ("symmetry", "x0_plus_x1_uniform_stat_dep"),
    ),
    _m(
        "openxai_pgi_is_pgu",
        "AI4LIFE-GROUP/OpenXAI#28",
        "PGI kept the top-k features fixed and perturbed the others: it computed PGU",
        pgi_as_pgu,
        pgi,
        "pgi_prefers_truth",
    ),
    _m(
        "openxai_log_standard_error",
        "AI4LIFE-GROUP/OpenXAI#32",
        "the reported log standard error was log(standard error), not the standard error of the logs",
        log_of_se,
        log_mean_and_se,
        "log_se_is_scale_free",
    ),
    _m(
        "quantus_monotonicity_baseline",
        "understandable-machine-intelligence-lab/Quantus@0.6.0",
        "Monotonicity (Arya et al.) perturbs the baseline with the baseline: every explanation scores as monotone "
        "(0.5.3 and 0.6.0; found here)",
        quantus_monotonicity,
        arya_monotonicity,
        "monotonicity_rejects_noise",
    ),
    _m(
        "quantus_focus_axes",
        "understandable-machine-intelligence-lab/Quantus#357",
        "Focus assumed the mosaic was B x C x W x H while it is B x C x H x W: quadrants cut on the wrong axes",
        focus_swapped,
        focus,
        "focus_perfect_map",
    ),
    _m(
        "quantus_sensitivity_n_batch_one",
        "understandable-machine-intelligence-lab/Quantus#150",
        "Sensitivity-n does not work for a batch of one, because of its similarity function",
        sensitivity_n_over_batch,
        sensitivity_n,
        "sensitivity_n_row_alone",
    ),
    _m(
        "captum_sensitivity_max_mask",
        "meta-pytorch/captum#1819",
        "sensitivity_max did not expand feature_mask for the perturbed batch (LIME, KernelSHAP with masks)",
        sensitivity_max_unexpanded,
        sensitivity_max,
        "sensitivity_max_stable_grouped",
    ),
    _m(
        "captum_infidelity_scale",
        "meta-pytorch/captum#613",
        "captum's infidelity grew with the scale of the attributions, unlike the authors' code, which rescales "
        "them (normalize= added; see also #1018)",
        infidelity_raw,
        infidelity_normalised,
        "infidelity_scale_free",
    ),
    _m(
        "quantus_irof_auc",
        "understandable-machine-intelligence-lab/Quantus#113",
        "IterativeRemovalOfFeatures computed the area under the curve instead of over it: the order reversed",
        irof_auc,
        irof_aoc,
        "irof_prefers_truth",
    ),
    _m(
        "xai_bench_monotonicity_order",
        "XAI-Bench (docs/defects.md XB-1)",
        "monotonicity compared each feature's gain in feature-id order, not in the order features were added",
        monotonicity_by_feature_id,
        monotonicity_ours,
        "monotonicity_prefers_truth",
    ),
    _m(
        "xai_bench_nan_as_zero",
        "XAI-Bench (docs/defects.md XB-9)",
        "a constant map's undefined faithfulness was reported as 0, ranking it above anti-correlated maps",
        faithfulness_nan_as_zero,
        faithfulness_ours,
        "faithfulness_constant_undefined",
    ),
    _m(
        "compare_xai_argsort_rank",
        "Compare-xAI (docs/defects.md CX-2)",
        "argsort's output was read as the feature's rank in the fooling score",
        rank_by_argsort,
        rank_of,
        "rank_of_top_feature",
    ),
)


# ------------------------------------------------------------------------------------- the runner


def _softmax_case() -> Case:
    """Three classes, softmax of fixed linear logits over 4 features; each row explains its
    predicted class; the truth is the exact interventional Shapley values of that class."""
    from pytest_xai.usercase import make_case

    rng = np.random.default_rng(30)
    W, b = rng.normal(0.0, 1.0, (4, 3)), rng.normal(0.0, 0.3, 3)

    def predict(x):
        z = np.asarray(x, dtype=float) @ W + b
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    X, background = rng.normal(0.0, 1.0, (12, 4)), rng.normal(0.0, 1.0, (30, 4))
    target = predict(X).argmax(axis=1)
    truth = {"shapley_interventional": exact_shapley(X, predict, background, target)}
    return make_case(
        X,
        predict=predict,
        background=background,
        baseline=np.zeros(4),
        target=target,
        truth=truth,
        name="replay_softmax",
        checks={"gt_shapley": {"convention": "interventional"}, "completeness": {}},
    )


def _wine_forest_case() -> Case:
    """scikit-learn's bundled wine data and a 50-tree random forest (seed 0); rows 21 and 145, where
    shap 0.51's TreeExplainer misses one tree's vote, and four others; background every 6th row."""
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier

    from pytest_xai.usercase import make_case

    X, y = load_wine(return_X_y=True)
    model = RandomForestClassifier(n_estimators=50, random_state=0).fit(X, y)
    rows = X[[21, 145, 0, 60, 100, 170]]
    return make_case(
        rows,
        model=model,
        background=X[::6],
        target=model.predict(rows),
        name="replay_wine_forest",
        checks={"completeness": {}},
    )


#: Cases built here for replays that need them (name -> builder).
CASES: dict[str, Callable[[], Case]] = {"replay_softmax": _softmax_case, "replay_wine_forest": _wine_forest_case}


@dataclass(frozen=True)
class Verdict:
    """One test of a replay: the mutant's and the fixed counterpart's Score (None: skipped, with why)."""

    test: str
    mutant: Score | None
    fixed: Score | None
    skipped: str | None = None


@dataclass(frozen=True)
class Outcome:
    """A replay's run: ``caught`` when the mutant fails a test its fixed counterpart passes, and the
    fixed one passes every test."""

    replay: Replay
    verdicts: tuple[Verdict, ...]

    @property
    def fixed_passes(self) -> bool:
        return all(v.fixed is not None and v.fixed.passed for v in self.verdicts if v.skipped is None)

    @property
    def caught_by(self) -> list[str]:
        return [v.test for v in self.verdicts if v.mutant is not None and not v.mutant.passed]

    @property
    def caught(self) -> bool:
        return bool(self.caught_by) and self.fixed_passes


def get_case(name: str) -> Case:
    """A built-in case, or one of :data:`CASES`."""
    from pytest_xai import cases

    return CASES[name]() if name in CASES else cases.get(name)


def check_explainer(explain: Callable, check: str, case: Case, seed: int = 0) -> Score:
    """Run ``explain`` on ``case`` through the contract and score it with ``check`` in-process (the
    re-explaining checks get :func:`pytest_xai.cases.generic.reexplainer`; completeness the
    explainer's own ``completeness`` claim, and the checks asking for ``exact`` or ``estimator``
    what it declares, as the judge gives them)."""
    import inspect

    from pytest_xai import checks
    from pytest_xai.cases.generic import reexplainer
    from pytest_xai.engine import contract
    from pytest_xai.engine.judge import DECLARED

    info = checks.CHECKS[check]
    explainer = contract.from_function(explain, spec=repr(explain), where="replay")
    explanation = contract.run(explainer, case, seed=seed)
    params = {**info.thresholds, **case.info.checks.get(check, {})}
    wanted = inspect.signature(info.func).parameters
    if "reexplain" in wanted:
        params["reexplain"] = reexplainer(explain, case, seed=seed)
    if check == "completeness":
        params.setdefault("claim", getattr(explain, "completeness", None))
    for name in DECLARED:
        if name in wanted:
            params.setdefault(name, getattr(explain, name, None))
    return info.func(explanation, case, **params)


def run(replay: Replay) -> Outcome:
    """Every test of ``replay`` on its mutant and its fixed counterpart."""
    from pytest_xai import cases

    cases.infos()  # the families' checks register when their modules load
    verdicts: list[Verdict] = []
    for test in replay.tests:
        if replay.kind == "metric":
            probe = PROBES[test]
            verdicts.append(Verdict(test, probe(replay.mutant), probe(replay.fixed)))
            continue
        check, name = test
        label = f"{check}[{name}]"
        try:
            case = get_case(name)
            verdicts.append(
                Verdict(label, check_explainer(replay.mutant, check, case), check_explainer(replay.fixed, check, case))
            )
        except NotApplicable as exc:
            verdicts.append(Verdict(label, None, None, skipped=str(exc)))
    return Outcome(replay, tuple(verdicts))


def run_all(replays: Sequence[Replay] = ()) -> list[Outcome]:
    """:func:`run` over ``replays`` (default: all of :data:`REPLAYS`)."""
    return [run(r) for r in (replays or REPLAYS)]
