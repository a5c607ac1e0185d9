"""The COMPAS scaffolding attack (Slack et al. 2020), its CX-12 precondition, the real-data loader, the
fooling check's controls, and the shap Exact/Permutation/Partition adapters.

The scaffolds here are built on small synthetic tables (``n_rows``) so that the detectors train in a
few seconds; the registered full-size cases are exercised by the built-in suite (``-k fooling``).
"""

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pytest_xai import cases, checks
from pytest_xai.cache import NO_CACHE, Cache
from pytest_xai.cases import fooling
from pytest_xai.errors import NotApplicable
from pytest_xai.explainers import baselines

pytest.importorskip("sklearn")
TINY = Path(__file__).parent / "data" / "compas_tiny.csv"


def score(attributions, case, **overrides):
    info = checks.CHECKS["fooling"]
    return info.func(attributions, case, **{**info.thresholds, **case.info.checks["fooling"], **overrides})


def _small(name, n_rows, cache=NO_CACHE, rows=20, background=None):
    info = cases.info(name)
    case = info.build(info, seed=0, cache=cache, n_rows=n_rows)
    bg = case.background if background is None else case.background[:background]
    return replace(case, inputs=case.inputs[:rows], background=bg)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fooling")


@pytest.fixture(scope="module")
def lime_case(cache_dir):
    """The LIME scaffold on 800 rows (600 training rows), explained at 20 rows against 25."""
    return _small("compas_lime_scaffold", 800, Cache(cache_dir), background=25)


@pytest.fixture(scope="module")
def shap_case():
    """The Kernel-SHAP scaffold on 2,500 rows; its background is the 10-centroid k-means summary."""
    return _small("compas_shap_scaffold", 2500)


def kwargs(case, seed=3):
    return {
        "inputs": case.inputs,
        "predict": case.predict,
        "background": case.background,
        "target": case.target,
        "feature_names": case.feature_names,
        "seed": seed,
    }


# ------------------------------------------------------------------------------------ generator


def test_synthetic_compas_has_the_spec_columns_and_clumped_integer_columns():
    X, y = fooling.synthetic_compas(seed=0)
    assert X.shape == (fooling.N_ROWS, 10) and fooling.FEATURE_NAMES[8:] == ["race", "unrelated_column"]
    numerical = X[:, list(fooling.NUMERICAL)]
    np.testing.assert_array_equal(numerical, np.round(numerical))
    age, priors, stay = numerical.T
    assert age.min() >= 18 and age.max() <= 80 and age.mean() > np.median(age)  # right-skewed
    assert priors.min() == 0 and priors.var() > 2 * priors.mean()  # over-dispersed
    assert np.mean(stay <= 1) > 0.5 and stay.max() > 100  # mostly 0-1 days, heavy tail
    assert len(np.unique(age)) < 70 and len(np.unique(priors)) < 40  # clumped: a lattice
    np.testing.assert_array_equal(X[:, 4] + X[:, 5], 1)  # one-hot charge degree
    np.testing.assert_array_equal(X[:, 6] + X[:, 7], 1)  # one-hot sex
    assert abs(X[:, 8].mean() - 0.5) < 0.05 and abs(X[:, 9].mean() - 0.5) < 0.05
    assert set(np.unique(y)) == {0, 1} and 0.1 < np.mean(y == 0) < 0.5
    np.testing.assert_array_equal(fooling.synthetic_compas(seed=0)[0], X)
    assert not np.array_equal(fooling.synthetic_compas(seed=1)[0], X)


def test_split_is_seeded_75_25_and_standardized_on_train():
    X, y = fooling.synthetic_compas(seed=0)
    data = fooling.split_and_standardize(X, y, seed=0)
    assert len(data["train"]) == 4629 and len(data["test"]) == 1543
    np.testing.assert_allclose(data["train"].mean(axis=0), 0, atol=1e-12)
    np.testing.assert_array_equal(fooling.split_and_standardize(X, y, seed=0)["test"], data["test"])


def test_f_and_psi_read_race_and_unrelated_column_in_standardized_units():
    X = np.zeros((2, 10))
    X[0, fooling.RACE], X[1, fooling.UNRELATED] = 0.9, 0.9
    np.testing.assert_array_equal(fooling.biased_f(X), [[1, 0], [0, 1]])
    np.testing.assert_array_equal(fooling.innocuous_psi(X), [[0, 1], [1, 0]])


# ---------------------------------------------------------------------------------- the attack


def test_lime_scaffold_is_verified_and_routes_real_rows_to_f(lime_case):
    meta = lime_case.meta
    assert meta["real_routed_to_f"] >= 0.95 and meta["perturbed_routed_to_psi"] >= 0.95
    assert meta["source"] == "synthetic" and lime_case.target == fooling.HIGH_RISK
    probabilities = lime_case.predict(lime_case.inputs)
    assert probabilities.shape == (20, 2)
    assert np.mean(probabilities.argmax(1) == fooling.biased_f(lime_case.inputs).argmax(1)) >= 0.9
    noisy = lime_case.inputs + np.random.default_rng(0).normal(0, 0.3, lime_case.inputs.shape)
    np.testing.assert_array_equal(lime_case.predict(noisy), fooling.innocuous_psi(noisy))


def test_detector_is_cached_as_plain_arrays_and_reloaded_identically(lime_case, cache_dir):
    [entry] = cache_dir.glob("fooling-lime-detector-*.npz")
    with np.load(entry, allow_pickle=False) as stored:
        assert all(stored[key].dtype != object for key in stored.files)
    reloaded = _small("compas_lime_scaffold", 800, Cache(cache_dir))  # loads the arrays, no training
    probe = lime_case.meta["full_background"][:200] + 0.01
    np.testing.assert_array_equal(lime_case.predict(probe), reloaded.predict(probe))
    assert reloaded.meta["detector_train_seconds"] == lime_case.meta["detector_train_seconds"]


def test_the_detector_walk_over_tree_arrays_predicts_as_the_sklearn_forest():
    """``Forest`` reads only the public ``tree_`` arrays and must give ``predict_proba`` exactly: on
    random rows, on rows sitting on split thresholds (``<=`` goes left) and on repeated rows."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(1)
    X = np.round(rng.normal(size=(400, 6)), 1)  # a lattice, as the standardised COMPAS columns
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(0, 0.5, 400) > 0).astype(int)
    columns = [0, 1, 2, 4]
    forest = RandomForestClassifier(20, random_state=0, n_jobs=1).fit(X[:, columns], y)
    detector = fooling.Forest(fooling.Forest.arrays_of(forest, columns))
    rows = rng.normal(size=(3000, 6))
    tree = forest.estimators_[0].tree_
    split = np.flatnonzero(tree.children_left >= 0)[:50]
    on_threshold = np.tile(rows[:1], (len(split), 1))
    on_threshold[np.arange(len(split)), np.asarray(columns)[tree.feature[split]]] = tree.threshold[split]
    rows = np.vstack([rows, on_threshold, X, X[:100]])
    expected = forest.predict_proba(rows[:, columns].astype(np.float32))[:, 1]
    np.testing.assert_array_equal(detector.in_distribution(rows), expected)  # bit for bit: trees added in order


@pytest.mark.parametrize("level", [0.5, 0.3, 0.95])
def test_the_detectors_routing_from_the_trees_that_decide_it_equals_its_probability_at_the_level(level):
    """``is_in_distribution`` stops adding trees once a row's mean is decided; it must equal
    ``in_distribution(X) >= level`` everywhere, rows at or next to the level included."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 4))
    y = (X[:, 0] + rng.normal(0, 1.0, 2000) > 0).astype(int)  # noisy: many leaves between 0 and 1
    forest = RandomForestClassifier(40, random_state=0, n_jobs=1, min_samples_leaf=5).fit(X, y)
    detector = fooling.Forest(fooling.Forest.arrays_of(forest, [0, 1, 2, 3]))
    rows = np.vstack([rng.normal(size=(20000, 4)), X])
    p = detector.in_distribution(rows)
    assert ((p >= level - 0.02) & (p < level + 0.02)).sum() > 100  # rows next to the level are tested
    routed = detector.is_in_distribution(rows, level)
    assert routed.dtype == bool and np.array_equal(routed, p >= level)
    assert np.array_equal(detector.is_in_distribution(rows[:0], level), np.zeros(0, bool))


def test_an_ineffective_attack_errors_instead_of_passing():
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 10))
    blind = RandomForestClassifier(5, random_state=0).fit(X[:, :3], rng.integers(0, 2, 300))
    scaffold = fooling.Scaffold(fooling.Forest(fooling.Forest.arrays_of(blind, [0, 1, 2])), "blind")
    with pytest.raises(fooling.AttackIneffective, match=r"attack ineffective: the test detector sends"):
        fooling.precondition(scaffold, "test", X, X + 0.3, "noisy")


# ------------------------------------------------------------------------------------ the check


def test_exact_shapley_is_not_fooled_by_the_lime_scaffold(lime_case):
    """Substitutions of background values stay on the data lattice, so they reach f."""
    result = score(
        baselines.exact_shapley(lime_case.inputs, lime_case.predict, lime_case.background, lime_case.target), lime_case
    )
    assert result.passed and result.value == pytest.approx(1.0) and result.params["race_top"] == 1.0


def test_lime_is_fooled_by_the_lime_scaffold(lime_case):
    pytest.importorskip("lime")
    from pytest_xai.explainers.lime import lime_tabular

    result = score(lime_tabular(**kwargs(lime_case)), lime_case)
    assert not result.passed and result.params["unrelated_top"] > 0.5 and "fooled" in result.detail


def test_random_attributions_and_ties_fail(lime_case):
    assert not score(baselines.random(lime_case.inputs, 3), lime_case).passed
    tie = np.zeros(lime_case.inputs.shape)
    assert not score(tie, lime_case).passed  # all-zero: race is not first
    tie[:, [fooling.RACE, 0]] = 1.0
    assert not score(tie, lime_case).passed  # a tie for first is not a win (CX-2/CX-8)
    tie[:, 0] = 0.5
    assert score(tie, lime_case).passed
    tie[0, fooling.UNRELATED] = 1.0  # unrelated_column shares the top in one row
    result = score(tie, lime_case)
    assert not result.passed and result.params["unrelated_top"] == pytest.approx(1 / 20)
    assert score(tie, lime_case, max_unrelated_top=0.1).passed


def test_every_substitution_explainer_is_fooled_when_the_background_is_the_attackers_summary(shap_case):
    """Slack et al.'s Kernel-SHAP scaffold: coalition hybrids with k-means centroids see psi."""
    meta = shap_case.meta
    assert meta["real_routed_to_f"] >= 0.95 and meta["perturbed_routed_to_psi"] >= 0.95
    assert len(shap_case.background) == 10
    exact = baselines.exact_shapley(shap_case.inputs, shap_case.predict, shap_case.background, shap_case.target)
    result = score(exact, shap_case)
    assert not result.passed and result.params["unrelated_top"] == 1.0


# ---------------------------------------------------------------------------------- real data


def test_tiny_propublica_file_gets_slacks_preprocessing():
    X, y = fooling.load_compas(TINY, seed=0, min_rows=1)
    # 10 invented people; 5 pass the filters (days_b_screening_arrest, is_recid, 'O', score_text, blanks)
    np.testing.assert_array_equal(
        X[:, :9],
        [
            [23, 1, 4, 1, 1, 0, 0, 1, 1],
            [41, 0, 0, 0, 0, 1, 1, 0, 0],
            [35, 0, 2, 10, 1, 0, 0, 1, 0],
            [52, 1, 11, 1, 0, 1, 0, 1, 1],
            [19, 1, 1, 1, 1, 0, 1, 0, 0],
        ],
    )
    np.testing.assert_array_equal(y, [0, 1, 1, 0, 1])
    assert set(np.unique(X[:, 9])) <= {0.0, 1.0}


def test_loader_agrees_with_slacks_pandas_code_on_the_tiny_file():
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(TINY, index_col=0)
    df = df.loc[
        (df["days_b_screening_arrest"] <= 30)
        & (df["days_b_screening_arrest"] >= -30)
        & (df["is_recid"] != -1)
        & (df["c_charge_degree"] != "O")
        & df["score_text"].notna()
    ]
    df["length_of_stay"] = (pd.to_datetime(df["c_jail_out"]) - pd.to_datetime(df["c_jail_in"])).dt.days
    X = pd.get_dummies(df[["age", "two_year_recid", "c_charge_degree", "sex", "priors_count", "length_of_stay"]])
    X["race"] = (df["race"] == "African-American").astype(int)
    expected = X[fooling.FEATURE_NAMES[:9]].to_numpy(dtype=float)
    np.testing.assert_array_equal(fooling.load_compas(TINY, min_rows=1)[0][:, :9], expected)


def _broken(tmp_path, edit):
    lines = TINY.read_text().splitlines()
    path = tmp_path / fooling.COMPAS_FILE
    path.write_text("\n".join(edit(lines)) + "\n")
    return path


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda lines: [lines[0].replace(",race,", ",ethnicity,")] + lines[1:],
            r"line 1 \(header\): missing column\(s\) race",
        ),
        (
            lambda lines: lines[:1] + [lines[1].replace("2013-05-08 22:10:05", "08/05/2013")] + lines[2:],
            r"line 2, column 'c_jail_in': '08/05/2013' is not a date",
        ),
        (
            lambda lines: lines[:2] + [lines[2].replace(",41,", ",forty-one,", 1)] + lines[3:],
            r"line 3, column 'age': 'forty-one' is not a number",
        ),
        (lambda lines: lines[:3] + [lines[3][:40]] + lines[4:], r"line 4: \d+ fields, the header has 53"),
        (lambda lines: lines, r"5 rows remain after the filters .* needs at least 1000"),
    ],
)
def test_malformed_files_name_the_file_line_and_fix(tmp_path, edit, message):
    path = _broken(tmp_path, edit)
    with pytest.raises(ValueError, match=message) as info:
        fooling.load_compas(path)
    assert str(path) in str(info.value) and "propublica" in str(info.value)


def test_builder_uses_the_users_file_when_present_and_synthetic_data_otherwise(tmp_path):
    assert fooling.compas_data(tmp_path, seed=0)[2] == "synthetic"  # no file there
    shutil.copy(TINY, tmp_path / fooling.COMPAS_FILE)
    info = cases.info("compas_lime_scaffold")
    with pytest.raises(ValueError, match="compas-scores-two-years.csv: 5 rows remain"):
        info.build(info, seed=0, cache=Cache(None), data_dir=tmp_path)


def test_a_binary_file_is_reported_not_decoded(tmp_path):
    path = tmp_path / fooling.COMPAS_FILE
    path.write_bytes(b"id,age\n\xff\xfe\x00\x01\n")
    with pytest.raises(ValueError, match=r"compas-scores-two-years.csv: not a UTF-8 text file"):
        fooling.load_compas(path)


# ------------------------------------------------------------------------- shap new-API adapters


ADAPTER_CASES = ["cough_and_fever", "cough_and_fever_10_90", "a_and_b_or_c", "counterexample_dummy_axiom"]


@pytest.mark.parametrize("name", ADAPTER_CASES)
def test_shap_exact_and_permutation_match_exact_shapley(name):
    pytest.importorskip("shap")
    from pytest_xai.explainers.shap import shap_exact, shap_permutation

    case = cases.get(name)
    truth = case.truth["shapley"]
    scale = case.output_range
    exact = shap_exact(case.inputs, case.predict, case.background, case.target)
    np.testing.assert_allclose(exact, truth, atol=1e-9 * scale)
    permutation = shap_permutation(case.inputs, case.predict, case.background, case.target, seed=3)
    np.testing.assert_allclose(permutation, truth, atol=0.02 * scale)
    np.testing.assert_array_equal(
        permutation, shap_permutation(case.inputs, case.predict, case.background, case.target, seed=3)
    )


def test_shap_partition_passes_symmetry_ranking_and_dummy_checks():
    pytest.importorskip("shap")
    from pytest_xai.explainers.shap import shap_partition

    for check, name in [
        ("symmetry", "cough_and_fever"),
        ("ranking", "a_and_b_or_c"),
        ("dummy", "counterexample_dummy_axiom"),
    ]:
        case = cases.get(name)
        attributions = shap_partition(case.inputs, case.predict, case.background, case.target, seed=0)
        assert attributions.shape == case.inputs.shape
        info = checks.CHECKS[check]
        assert info.func(attributions, case, **{**info.thresholds, **case.info.checks[check]}).passed


def test_shap_partition_gives_the_same_values_whatever_its_process_drew_before():
    """shap's Partition explainer breaks ties in its queue with numpy's global generator
    (``np.random.randn`` in ``owen``), so its values depended on what its worker had explained
    before: the battery serially and under -n 2 scored dummy[digits_function_dummy] 0.093 and 0.111."""
    pytest.importorskip("shap")
    from pytest_xai.explainers.shap import shap_partition

    case = cases.get("digits_function_dummy")
    first = shap_partition(case.inputs, case.predict, case.background, case.target, seed=0)
    np.random.rand(1000)  # another call in the same worker draws from the global generator
    np.testing.assert_array_equal(
        first, shap_partition(case.inputs, case.predict, case.background, case.target, seed=0)
    )


def test_shap_adapters_explain_the_target_class_and_skip_images(lime_case):
    pytest.importorskip("shap")
    from pytest_xai.explainers.shap import shap_exact, shap_partition, shap_permutation

    small = replace(lime_case, inputs=lime_case.inputs[:2], background=lime_case.background[:5])
    exact = shap_exact(small.inputs, small.predict, small.background, 1)
    np.testing.assert_allclose(
        exact, baselines.exact_shapley(small.inputs, small.predict, small.background, 1), atol=1e-12
    )
    images = np.zeros((2, 1, 4, 4))
    for adapter in (shap_exact, shap_permutation, shap_partition):
        extra = {"seed": 0} if adapter is not shap_exact else {}
        with pytest.raises(NotApplicable, match="tabular"):
            adapter(images, small.predict, images, 0, **extra)


def test_zoo_members_fail_unless_declared(lime_case):
    """The degenerate-explainer zoo applied to exact interventional Shapley values (not fooled: race
    first in every row): the members that explain nothing fail, the others unless declared."""
    from pytest_xai.explainers import degenerate
    from pytest_xai.metrics import outputs

    reference = baselines.exact_shapley(lime_case.inputs, lime_case.predict, lime_case.background, lime_case.target)
    assert score(reference, lime_case).passed
    output = outputs(lime_case.predict, lime_case.inputs, lime_case.target)
    for member in degenerate.MEMBERS:
        for seed in (0, 1, 2):
            attributions = degenerate.apply(member, reference, lime_case.inputs, output, lime_case.background, seed)
            result = score(attributions, lime_case)
            if checks.CHECKS["fooling"].exemption(member, lime_case.name) is None:
                assert not result.passed, (member, seed, result.detail)
