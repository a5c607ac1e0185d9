"""Model evaluations (pytest_xai.engine.evaluations): the rows each model call of one explanation evaluates,
counted on real models (scikit-learn, xgboost, torch), carried by every result, shown in the table
and gated against a baseline; the same count in every run, serially and under ``-n 2``."""

from __future__ import annotations

import copy
import json
import pickle
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pytest_xai import cases
from pytest_xai.engine import budget, contract, evaluations
from pytest_xai.engine.evaluations import compact, counting
from pytest_xai.reports import baseline, files, htmlreport, report
from pytest_xai.reports.record import Record
from tests.test_plugin import QUIET, REF

# ------------------------------------------------------------------------------------ the counter


def row_sums(X):
    return np.asarray(X).sum(axis=1)


def test_predict_counts_the_rows_of_each_call_and_pickles_as_itself():
    X = np.ones((7, 3))
    with counting({"predict": row_sums, "inputs": X}) as (given, tally):
        assert given["inputs"] is X and given["predict"] is not row_sums
        given["predict"](X)
        given["predict"](X[:2])
        given["predict"](X=X[:4])  # by keyword too
        assert pickle.loads(pickle.dumps(given["predict"])) is row_sums  # in another process: uncounted, as before
        assert given["predict"].__name__ == "row_sums"
    assert tally.rows == 13


def test_a_call_inside_a_counted_call_is_not_counted_again():
    tally = evaluations.Tally()
    inner = evaluations.Counted(lambda X: np.asarray(X) * 2, tally)
    outer = evaluations.Counted(lambda X: inner(np.vstack([X, X])), tally)  # e.g. predict calling the model
    outer(np.ones((5, 2)))
    assert tally.rows == 5
    inner(np.ones((3, 2)))
    assert tally.rows == 8


def test_calls_from_several_threads_are_each_counted():
    from concurrent.futures import ThreadPoolExecutor

    with counting({"predict": row_sums}) as (given, tally), ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda k: given["predict"](np.ones((k, 2))), range(1, 41)))
    assert tally.rows == sum(range(1, 41))


def test_a_torch_module_counts_each_forward_batch_of_the_top_module_only():
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

    def predict(X):  # the case's predict of a torch case calls the same module: counted once
        with torch.no_grad():
            return net(torch.as_tensor(X, dtype=torch.float32)).numpy()

    with counting({"model": net, "predict": predict}) as (given, tally):
        given["model"](torch.zeros(5, 4))
        given["model"](torch.zeros(1, 4))
        given["predict"](np.zeros((3, 4)))
        with pytest.raises(RuntimeError):
            given["model"](torch.zeros(2, 5))  # a forward that raises still evaluated its batch...
        given["model"](torch.zeros(4, 4))  # ...and the next call is counted as usual
    assert tally.rows == 5 + 1 + 3 + 2 + 4
    assert not net._forward_hooks and not net._forward_pre_hooks  # removed: the case's model is as it was
    net(torch.zeros(9, 4))
    assert tally.rows == 15


class _LyingRows(np.ndarray):
    """An array whose ``shape`` says one row, whatever its buffer holds."""

    @property
    def shape(self):  # type: ignore[override]
        return (1, *np.ndarray.shape.__get__(self)[1:])


def _unwrapped(predict, X):
    return predict.__wrapped__(X)


def _reset_to(value):
    def trick(predict, X):
        predict(X)
        predict._tally.rows = value

    return trick


def _lying_shape(predict, X):
    predict(np.asarray(X).view(_LyingRows))


@pytest.mark.parametrize(
    "trick",
    [_unwrapped, _reset_to(0), _reset_to(-1), _reset_to(10**15), _lying_shape],
    ids=["__wrapped__", "rows=0", "rows=-1", "rows=1e15", "lying .shape"],
)
def test_an_explainer_cannot_hide_predict_evaluations_through_the_callable_it_is_handed(trick):
    """issue 41: the count is not an attribute of the callable the explainer receives (no
    ``__wrapped__``, no tally), and rows are read from the array's own buffer, not a ``.shape`` it
    overrides; each trick either raises (no such attribute) or is counted in full."""
    seen: list[int] = []

    def model(X):  # what the model really evaluated, from its own buffer
        seen.append(len(np.asarray(X).base if isinstance(X, _LyingRows) else X))
        return row_sums(X)

    with counting({"predict": model}) as (given, tally):
        try:
            trick(given["predict"], np.ones((6, 3)))
        except AttributeError:
            pass  # the trick found nothing to use
        given["predict"](np.ones((2, 3)))
    assert tally.rows == sum(seen) >= 2


def _cleared_hooks(net, x):
    for module in net.modules():
        module._forward_hooks.clear()
        module._forward_pre_hooks.clear()
    return net(x)


def _children_one_by_one(net, x):
    for layer in net:
        x = layer(x)
    return x


@pytest.mark.parametrize("trick", [_cleared_hooks, _children_one_by_one], ids=["cleared hooks", "children"])
def test_an_explainer_cannot_hide_torch_evaluations_by_clearing_hooks_or_calling_the_layers(trick):
    """issue 41: a torch model's forwards are counted by hooks of the whole process that its own
    hook dictionaries do not hold, at the top module or, called layer by layer, at the layer that
    owns its first parameter (once per pass, as a forward of the whole model)."""
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    with torch.no_grad(), counting({"model": net}) as (given, tally):
        trick(given["model"], torch.zeros(5, 4))
        given["model"](torch.zeros(3, 4))
    assert tally.rows == 5 + 3
    net(torch.zeros(9, 4))  # after the call: nothing counts any more
    assert tally.rows == 8


def test_a_hugging_face_model_called_through_forward_is_counted():
    """captum's LLMAttribution calls ``model.forward(**inputs)``, which runs no hook of the top module:
    the pass is counted at its outermost submodule that holds the embedding layer."""
    transformers = pytest.importorskip("transformers")
    import torch

    transformers.logging.set_verbosity_error()
    model = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=16, n_positions=8, n_embd=8, n_layer=1, n_head=1)
    )
    ids = torch.zeros((3, 5), dtype=torch.long)
    with counting({"model": model}) as (arguments, tally):
        arguments["model"].forward(input_ids=ids, attention_mask=torch.ones_like(ids))
        arguments["model"](ids[:2])
    assert tally.rows == 5


def test_a_script_module_which_takes_no_hooks_is_left_alone():
    torch = pytest.importorskip("torch")
    scripted = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(3, 2)))
    with counting({"model": scripted}) as (given, tally):
        given["model"](torch.zeros(4, 3))  # runs as ever, uncounted: its rows are counted through predict
    assert tally.rows == 0


def test_captum_deeplift_counts_the_baselines_it_appends_to_the_batch():
    """DeepLift's own pre-hook doubles the batch (inputs and baselines): both halves are evaluated."""
    torch = pytest.importorskip("torch")
    from captum.attr import DeepLift, IntegratedGradients

    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    x = torch.ones(5, 4)
    with counting({"model": net}) as (_, tally):
        DeepLift(net).attribute(x, target=0)
    assert tally.rows == 2 * 5
    with counting({"model": net}) as (_, tally):
        IntegratedGradients(net).attribute(x, target=0, n_steps=10)
    assert tally.rows == 10 * 5


def test_the_case_torch_twin_is_counted_when_reached_another_way():
    torch = pytest.importorskip("torch")
    twin = torch.nn.Linear(3, 1)

    class Oracle:  # a callable object the contract passes as `model`: counted through what it calls
        def __call__(self, X):
            return twin(torch.as_tensor(X, dtype=torch.float32)).detach().numpy()

    with counting({"model": Oracle()}, also=(twin,)) as (given, tally):
        given["model"](np.zeros((6, 3)))
    assert tally.rows == 6


class Spied:
    """A real LogisticRegression whose decision_function notes that it was reached."""

    @staticmethod
    def make():
        from sklearn.linear_model import LogisticRegression

        class SpiedLogisticRegression(LogisticRegression):
            reached = 0

            def decision_function(self, X):
                type(self).reached += 1
                return super().decision_function(X)

        rng = np.random.default_rng(0)
        X = rng.normal(size=(60, 4))
        return SpiedLogisticRegression().fit(X, (X[:, 0] > 0).astype(int)), X


def test_an_estimator_counts_predict_proba_once_though_it_calls_decision_function():
    model, X = Spied.make()
    with counting({"model": model}) as (given, tally):
        assert given["model"] is model  # patched on the instance, the object itself is passed
        model.predict_proba(X[:7])
        assert type(model).reached == 1  # predict_proba went through decision_function...
        assert tally.rows == 7  # ...which was not counted again
        model.predict(X[:3])
        model.decision_function(X[:2])
        model.predict_log_proba(X[:1])
        copied = copy.deepcopy(model)  # a copy evaluates uncounted, and works
        copied.predict(X[:4])
    assert tally.rows == 7 + 3 + 2 + 1
    assert not {"predict", "predict_proba", "decision_function", "predict_log_proba"} & set(vars(model))


def test_methods_an_estimator_lacks_are_not_created():
    from sklearn.svm import SVC

    X = np.random.default_rng(1).normal(size=(40, 3))
    model = SVC().fit(X, (X[:, 1] > 0).astype(int))
    with counting({"model": model}) as (_, tally):
        assert not hasattr(model, "predict_proba")  # scikit-learn's available_if still answers
        model.predict(X[:5])
    assert tally.rows == 5


def test_xgboost_estimators_and_boosters_count_their_predictions():
    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    classifier = xgboost.XGBClassifier(n_estimators=4, max_depth=2, n_jobs=1).fit(X, (X[:, 0] > 0).astype(int))
    with counting({"model": classifier}) as (_, tally):
        classifier.predict_proba(X[:9])  # calls the Booster inside: not counted again
        classifier.predict(X[:2])
    assert tally.rows == 11
    booster = classifier.get_booster()
    with counting({"model": booster}) as (_, tally):
        booster.predict(xgboost.DMatrix(X[:6]))
        booster.inplace_predict(X[:4])
    assert tally.rows == 10


def test_a_function_model_is_counted_and_the_contract_run_reports_the_count():
    """exact_shapley evaluates n x 2^d x m rows (every coalition of every point over every
    background row), occlusion n x (d + 1): the counts are the algorithms' own."""
    case = cases.get("cough_and_fever")
    n, d = case.inputs.shape
    m = len(case.background)
    exact = contract.run(contract.load(f"{REF}:exact_shapley"), case, seed=0)
    assert exact.evaluations == n * 2**d * m
    occlusion = contract.run(contract.load(f"{REF}:feature_occlusion"), case, seed=0)
    assert occlusion.evaluations == n * (d + 1)
    tree = contract.run(contract.load(f"{REF}:shap_tree"), case, seed=0)
    assert tree.evaluations == 0  # TreeSHAP reads the trees: it never calls the model
    interaction = cases.get("detect_interaction0")  # its model is a plain function
    with counting({"model": interaction.model}) as (given, tally):
        given["model"](interaction.inputs)
    assert tally.rows == len(interaction.inputs)


def test_in_process_calls_count_too_and_a_memoised_call_keeps_its_count():
    from pytest_xai.cache import NO_CACHE
    from pytest_xai.engine.runner import Runner

    runner = Runner(seed=0, limits=None, cache=NO_CACHE, data_dir=None)  # --xai-timeout=0
    explainer, case = contract.load(f"{REF}:feature_occlusion"), cases.get("cough_and_fever")
    outcome, cached = runner.explain(explainer, case)
    assert (outcome.status, outcome.evaluations, cached) == ("ok", 4 * 3, False)
    assert runner.explain(explainer, case) == (outcome, True)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (950, "950"),
        (1000, "1k"),
        (4100, "4.1k"),
        (12_000, "12k"),
        (999.6, "1k"),
        (999_999, "1M"),
        (3_400_000, "3.4M"),
        (5_000_000, "5M"),
        (None, ""),
    ],
)
def test_compact(n, text):
    assert compact(n) == text


def test_a_call_over_its_budget_says_so():
    assert budget.overspent(6_200_000, 5_000_000) == "spent 6.2M model evaluations, over the budget of 5M"
    assert budget.overspent(20_100, 20_000) == "spent 20,100 model evaluations, over the budget of 20,000"
    assert budget.overspent(5_000_000, 5_000_000) is None and budget.overspent(None, 10) is None


# ------------------------------------------------------------------------------- records, reports


def _rec(explainer: str, row: str, evaluations: int | None, **kw) -> Record:
    return Record(
        nodeid=f"t::{row}[{explainer}]",
        row=row,
        explainer=explainer,
        category="fidelity",
        check=row.partition("[")[0],
        status=kw.pop("status", "PASS"),
        score=1.0,
        seconds=0.25,
        evaluations=evaluations,
        **kw,
    )


def test_the_table_and_the_aggregates_show_evaluations_per_call():
    records = [
        _rec("kernel", "a[x]", 4100),
        _rec("kernel", "b[x]", 4100, cached=True),  # one call, two checks
        _rec("kernel", "a[y]", 11_900),
        _rec("kernel", "c[y]", None, status="ERROR"),
        _rec("tree", "a[x]", 0),
    ]
    summary = report.summary(records)
    assert summary["kernel"]["overall"]["mean_evaluations"] == (4100 + 11_900) / 2  # per call, errors left out
    lines = report.table(records, ["kernel", "tree"])
    assert any(
        line.startswith("a[x]") and "PASS 1.000 4.1k ev, wall 0.25s" in line and "PASS 1.000 0 ev, wall 0.25s" in line
        for line in lines
    )
    assert any(line.startswith("overall") and "8k ev, wall 0.25s/call" in line for line in lines)
    old = _rec("kernel", "a[x]", None)  # a report written before evaluations existed
    assert report.table([old])[2].split()[-1] == "0.25s"


def test_reports_with_and_without_evaluations_validate_and_render():
    records = [_rec("kernel", "a[x]", 4100), _rec("kernel", "b[x]", None)]
    doc = report.document(records, options={}, seed=0, exitstatus=0)
    assert files.check_report(json.loads(json.dumps(doc)), "r.json")["results"][0]["evaluations"] == 4100
    del doc["results"][0]["evaluations"], doc["summary"]["kernel"]["overall"]["mean_evaluations"]
    files.check_report(doc, "r.json")
    doc["results"][0]["evaluations"] = "4.1k"
    with pytest.raises(files.ReportError, match=r"r.json: results\[0\]\.evaluations: expected an integer or null"):
        files.check_report(doc, "r.json")
    html = htmlreport.render(report.document(records, options={}, seed=0, exitstatus=0))
    assert '<td class="num" title="4,100">4.1k</td>' in html and "mean evaluations/call" in html
    assert "<td>evaluations</td><td>4100</td>" in htmlreport.extra_html(records[0])


def test_the_gate_compares_evaluations_by_a_factor():
    before = _rec("e", "a[x]", 1000)
    grown = baseline.regressions(_rec("e", "a[x]", 2500), before, tol=0.05, evaluations_factor=2.0)
    assert grown == ["model evaluations grew from 1000 (baseline) to 2500 (now), x2.5, over the factor 2"]
    assert not baseline.regressions(_rec("e", "a[x]", 2000), before, tol=0.05, evaluations_factor=2.0)
    assert not baseline.regressions(_rec("e", "a[x]", 2500), before, tol=0.05, evaluations_factor=None)  # off
    assert not baseline.regressions(
        _rec("e", "a[x]", 2500), _rec("e", "a[x]", None), tol=0.05, evaluations_factor=2.0
    )  # an older baseline: nothing to compare
    started = baseline.regressions(_rec("e", "a[x]", 10), _rec("e", "a[x]", 0), tol=0.05, evaluations_factor=2.0)
    assert started == ["model evaluations grew from 0 (baseline) to 10 (now), over the factor 2"]


def test_the_gate_flags_an_explainer_whose_evaluations_fell_to_0():
    """issue 41: an explainer that called the model in the baseline and now counts 0 (it stopped
    calling the model, or hides its calls) is a regression, whatever its verdict; from 0 to 0 (TreeSHAP
    reads the trees) is not."""
    fell = baseline.regressions(_rec("e", "a[x]", 0), _rec("e", "a[x]", 1000), tol=0.05, evaluations_factor=2.0)
    assert fell == [
        (
            "model evaluations fell from 1000 (baseline) to 0 (now): the explainer no longer calls the model, or "
            "calls it where it is not counted (a copy of the model, another process); if that is intended, save a "
            "new baseline"
        )
    ]
    assert not baseline.regressions(_rec("e", "a[x]", 0), _rec("e", "a[x]", 0), tol=0.05, evaluations_factor=2.0)
    assert not baseline.regressions(_rec("e", "a[x]", 10), _rec("e", "a[x]", 1000), tol=0.05, evaluations_factor=2.0)


@pytest.mark.parametrize(
    ("value", "expected"), [("2", 2.0), (1, 1.0), ("1.5", 1.5), ("0", None), ("off", None), (" OFF ", None)]
)
def test_evaluations_factor_option(value, expected):
    from pytest_xai.options import check_evaluations_factor

    assert check_evaluations_factor(value) == expected


@pytest.mark.parametrize("value", ["0.5", "-1", "inf", "nan", "twice"])
def test_a_bad_evaluations_factor_is_refused(value):
    from pytest_xai.options import OptionError, check_evaluations_factor

    with pytest.raises(OptionError, match="--xai-baseline-evaluations-factor=.*factor >= 1.* or 0 / off"):
        check_evaluations_factor(value)


# ------------------------------------------------------------------------------ whole runs (pytester)

#: The reference explainers that call the model, on the one cough_and_fever test (its xgboost model
#: and its torch twin, which the captum adapters receive).
CALLERS = (
    "exact_shapley",
    "shap_kernel",
    "shap_permutation",
    "lime_tabular",
    "feature_occlusion",
    "feature_ablation",
    "shapley_value_sampling",
    "captum_kernel_shap",
    "integrated_gradients",
)
ONE = ("-k", "symmetry and cough_and_fever and not 10_90")


def _evaluations(path) -> dict[str, int]:
    doc = json.loads(path.read_text())
    assert all(r["status"] in ("PASS", "FAIL") for r in doc["results"]), doc["results"]
    return {r["explainer"]: r["evaluations"] for r in doc["results"]}


def test_every_verdict_carries_the_same_evaluations_in_every_run_serial_or_n2(pytester):
    pytest.importorskip("xdist")
    specs = [f"--xai-explainer={REF}:{name}" for name in CALLERS]
    runs = {}
    for label, run, extra in (  # two runs, two process layouts: serial (in this process) and -n 2
        ("first", pytester.runpytest, ()),
        ("n2", pytester.runpytest_subprocess, ("-n", "2")),
    ):
        out, xml = pytester.path / f"{label}.json", pytester.path / f"{label}.xml"
        result = run(*QUIET, *ONE, *specs, f"--xai-report={out}", f"--junitxml={xml}", *extra)
        assert result.ret in (0, 1), result.stdout.str()
        runs[label] = _evaluations(out)
        junit = {p.get("name"): p.get("value") for p in ET.parse(xml).iter("property")}
        assert "xai_evaluations" in junit
    assert set(runs["first"]) == set(CALLERS)
    assert all(isinstance(v, int) and v > 0 for v in runs["first"].values()), runs["first"]
    assert runs["first"] == runs["n2"]
    exact = compact(runs["n2"]["exact_shapley"])
    result.stdout.fnmatch_lines([f"symmetry[[]cough_and_fever[]]*PASS 1.000 {exact} ev, CPU *s, wall *s*"])


def test_checks_sharing_one_call_share_its_evaluations_and_the_aggregate_counts_it_once(pytester):
    out = pytester.path / "r.json"
    case = cases.get("gaussian_linear_rho50")
    (n, d), m = case.inputs.shape, len(case.background)
    result = pytester.runpytest(
        *QUIET, "-k", "gaussian_linear_rho50", f"--xai-explainer={REF}:exact_shapley", f"--xai-report={out}"
    )
    checks = len(case.info.checks)
    result.assert_outcomes(passed=checks)
    doc = json.loads(out.read_text())
    assert [r["evaluations"] for r in doc["results"]] == [n * 2**d * m] * checks
    assert sorted(r["cached"] for r in doc["results"]) == [False] + [True] * (checks - 1)
    assert doc["summary"]["exact_shapley"]["overall"]["mean_evaluations"] == n * 2**d * m


RE_EXPLAINED = """
import numpy as np
import pytest_xai


def f(X):
    X = np.asarray(X, dtype=float)
    return 3 * X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3]


@pytest_xai.register_case(family="mine", category="stability", checks=["determinism", "max_sensitivity"])
def my_model(seed):
    rng = np.random.default_rng(seed)
    return pytest_xai.make_case(rng.normal(size=(12, 4)), predict=f, background=rng.normal(size=(10, 4)))
"""


def test_checks_that_re_explain_record_the_first_call_only_as_their_seconds_do(pytester):
    """determinism calls the explainer twice more and max_sensitivity four times; like seconds, a
    test's evaluations are those of the one explanation its checks share: 12 x 2^4 x 10."""
    pytester.makeconftest(RE_EXPLAINED)
    out = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *QUIET, "-k", "my_model", f"--xai-explainer={REF}:exact_shapley", f"--xai-report={out}"
    )
    result.assert_outcomes(passed=2)
    assert [r["evaluations"] for r in json.loads(out.read_text())["results"]] == [12 * 2**4 * 10] * 2


#: A user's explainer: exact Shapley values, then as many extra model calls as spend.txt says, so
#: that a test can make it costlier between two runs, as a code change would.
SPENDER = """
from pathlib import Path

import numpy as np

from pytest_xai.explainers import exact_shapley


def explain(inputs, predict, background, target):
    for _ in range(int(Path(__file__).with_name("spend.txt").read_text())):
        predict(np.repeat(background, 10, axis=0))
    return exact_shapley(inputs, predict, background, target)
"""


def test_the_gate_flags_a_test_whose_evaluations_grew_past_the_factor(pytester):
    pytester.makepyfile(spender=SPENDER)
    pytester.syspathinsert()
    spend, base = pytester.path / "spend.txt", pytester.path / "baseline.json"
    spend.write_text("0")
    args = (*QUIET, *ONE, "--xai-explainer=spender:explain")
    pytester.runpytest(*args, f"--xai-save-baseline={base}").assert_outcomes(passed=1)
    spend.write_text("3")  # 64 rows -> 64 + 3 x 40 = 184, x2.9
    report_path = pytester.path / "now.json"
    result = pytester.runpytest(*args, f"--xai-baseline={base}", f"--xai-report={report_path}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "xai: baseline * tolerance 0.05, model evaluations factor 2",
            (
                "*regressed against the baseline*: model evaluations grew from 64 (baseline) to 184 (now), x2.88, "
                "over the factor 2*"
            ),
            "REGRESSION*symmetry[[]cough_and_fever[]] [[]explain[]]*PASS 1.000 64 ev, *FAIL 1.000 184 ev, *",
        ]
    )
    doc = json.loads(report_path.read_text())
    assert doc["baseline"]["evaluations_factor"] == 2.0 and "model evaluations grew" in doc["results"][0]["regression"]
    for off in ("--xai-baseline-evaluations-factor=0", "--xai-baseline-evaluations-factor=off"):
        pytester.runpytest(*args, f"--xai-baseline={base}", off).assert_outcomes(passed=1)
    pytester.runpytest(*args, f"--xai-baseline={base}", "--xai-baseline-evaluations-factor=3").assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nxai_baseline_evaluations_factor = off\n")
    pytester.runpytest(*args, f"--xai-baseline={base}").assert_outcomes(passed=1)


def test_a_bad_evaluations_factor_is_a_usage_error_even_without_a_baseline(pytester):
    result = pytester.runpytest(*QUIET, f"--xai-explainer={REF}:exact_shapley", "--xai-baseline-evaluations-factor=0.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--xai-baseline-evaluations-factor='0.5': must be a finite factor >= 1*"])


def test_a_call_over_its_budget_says_so_in_the_detail(pytester):
    pytester.makepyfile(spender=SPENDER)
    pytester.syspathinsert()
    (pytester.path / "spend.txt").write_text("30")  # 64 + 30 x 40 = 1,264 rows
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        *QUIET, *ONE, "--xai-explainer=spender:explain", "--xai-budget=1000", f"--xai-report={out}"
    )
    result.assert_outcomes(passed=1)
    (rec,) = json.loads(out.read_text())["results"]
    assert rec["evaluations"] == 1264
    assert rec["detail"].endswith("; spent 1.3k model evaluations, over the budget of 1k")
