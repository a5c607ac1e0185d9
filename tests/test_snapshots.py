"""Explanation snapshots (``xai_snapshot``, ``--xai-snapshot-update``): a retrained model fails its
snapshot, naming the rows and features that moved; the same model with the explainer reseeded
passes; a missing snapshot fails saying how to write one; a bad snapshot file fails in one line."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

from pytest_xai.reports import snapshot

QUIET = ("-p", "no:randomly", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning")
SHAP = (*QUIET, "--xai-timeout=0")  # in this process: a second of startup, not a worker's five

CREDIT = """
import os

import numpy as np
from sklearn.linear_model import LogisticRegression

import pytest_xai

KERNEL = "pytest_xai.explainers:shap_kernel"  # it samples the coalitions of 12 features: stochastic


def credit_case(train_seed):
    rng = np.random.default_rng(train_seed)
    X = rng.normal(size=(300, 12))
    y = (X[:, 0] + 2 * X[:, 1] - X[:, 2] + rng.normal(scale=0.5, size=300) > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    rows = np.random.default_rng(99).normal(size=(6, 12))
    return pytest_xai.make_case(rows, model=model, background=X[:20], feature_names=list("abcdefghijkl"))


def test_same_model(xai_snapshot):
    xai_snapshot(KERNEL, credit_case(0))


def test_retrained(xai_snapshot):  # TRAIN_SEED: the model retrained on other data
    xai_snapshot(KERNEL, credit_case(int(os.environ.get("TRAIN_SEED", "0"))))
"""


def test_a_retrained_model_fails_its_snapshot_and_a_reseeded_explainer_passes(pytester, monkeypatch):
    if importlib.util.find_spec("shap") is None:  # not imported here: its warnings stay out of this run
        pytest.skip("shap is not installed: pip install pytest-xai[shap]")
    pytester.makepyfile(test_credit=CREDIT)
    written = pytester.runpytest(*SHAP, "--xai-snapshot-update")
    written.assert_outcomes(passed=2)
    folder = pytester.path / "__xai_snapshots__" / "test_credit"
    written.stdout.fnmatch_lines(
        ["*xai snapshots*", f"written: {folder / 'test_same_model.json'} (test_credit.py::test_same_model)"]
    )
    doc = json.loads((folder / "test_same_model.json").read_text())
    assert doc["shape"] == [6, 12] and doc["features"] == list("abcdefghijkl") and len(doc["seeds"]) == 3
    assert sum(s > 0 for s in doc["spread"]) > 6  # a stochastic explainer: its spread is measured

    monkeypatch.setenv("TRAIN_SEED", "1")
    compared = pytester.runpytest(*SHAP, "--xai-seed=7")  # every explainer reseeded
    compared.assert_outcomes(passed=1, failed=1)  # the same model within its spread, the retrained one not
    compared.stdout.fnmatch_lines(
        [
            "*_ test_retrained _*",
            "explanation snapshot changed: * of 72 attributions moved beyond the tolerance*, in rows *, features '*",
            "  row *, feature '?': * -> * (moved *, tolerance *)",
        ]
    )
    compared.stdout.fnmatch_lines(
        [f"snapshot: {folder / 'test_retrained.json'}", "*review it and run pytest --xai-snapshot-update"]
    )


OWN = """
import numpy as np


def values(seed):
    rng = np.random.default_rng(seed)
    return np.array([[1.0, 2.0, 1 / 3], [0.1, -0.2, 7.0]]) + rng.normal(scale=1e-3, size=(2, 3))


def test_own(xai_snapshot):
    assert xai_snapshot(values(0), explain=values).shape == (2, 3)


def test_two(xai_snapshot):
    xai_snapshot(np.arange(4.0), name="first")
    xai_snapshot(np.arange(4.0) * 2, name="second")
"""


def test_a_missing_snapshot_fails_with_the_command_and_update_writes_it(pytester):
    pytester.makepyfile(test_own=OWN)
    folder = pytester.path / "__xai_snapshots__" / "test_own"
    missing = pytester.runpytest(*QUIET)
    missing.assert_outcomes(failed=2)
    command = "run pytest --xai-snapshot-update test_own.py::test_own to write it, then review it and commit it"
    missing.stdout.fnmatch_lines([f"*no explanation snapshot {folder / 'test_own.json'}: {command}"])
    assert not folder.exists()  # CI never writes a baseline by itself

    elsewhere = pytester.mkdir("elsewhere") / "first.json"
    folder.mkdir(parents=True)
    (folder / "test_two.first.json").symlink_to(elsewhere)  # written through, the link kept
    update = pytester.runpytest(*QUIET, "--xai-snapshot-update")
    update.assert_outcomes(passed=2)
    update.stdout.fnmatch_lines(["*xai snapshots*", "3 snapshot(s) written, 0 unchanged: review and commit them"])
    assert (folder / "test_two.first.json").is_symlink() and json.loads(elsewhere.read_text())["rows"] == [
        [0.0, 1.0, 2.0, 3.0]
    ]
    doc = json.loads((folder / "test_own.json").read_text())
    rng = np.random.default_rng(0)
    exact = np.array([[1.0, 2.0, 1 / 3], [0.1, -0.2, 7.0]]) + rng.normal(scale=1e-3, size=(2, 3))
    assert np.array_equal(np.array(doc["rows"]), exact)  # floats read back bit for bit
    assert all(0 < t < 0.05 for t in doc["tolerance"])

    pytester.runpytest(*QUIET).assert_outcomes(passed=2)
    again = pytester.runpytest(*QUIET, "--xai-snapshot-update")
    again.stdout.fnmatch_lines(["0 snapshot(s) written, 3 unchanged"])


GOOD = {
    "pytest_xai_snapshot": 1,
    "shape": [2, 2],
    "spread": [0.0, 0.0],
    "tolerance": [1e-9, 1e-9],
    "rows": [[1.0, 2.0], [3.0, 4.0]],
}
BAD = {
    "not_json": ("{ this is not json", "not JSON (line 1"),
    "binary": (b"\xff\xfe\x00garbage", "not UTF-8"),
    "not_a_snapshot": (json.dumps({"results": []}), 'not a pytest-xai snapshot (no "pytest_xai_snapshot": 1)'),
    "wrong_shape": (json.dumps({**GOOD, "shape": [3, 2]}), "'rows' is not a list of 3 rows"),
    "short_row": (json.dumps({**GOOD, "rows": [[1.0], [3.0, 4.0]]}), "has 1 values, the shape needs 2"),
    "nan": (json.dumps({**GOOD, "rows": [[float("nan"), 2.0], [3.0, 4.0]]}), "NaN is not a number a snapshot holds"),
    "strings": (json.dumps({**GOOD, "tolerance": ["0.1", 1]}), "'tolerance' is not a list of numbers"),
    "negative": (json.dumps({**GOOD, "tolerance": [-1.0, 1.0]}), "holds a negative number"),
    "huge": (json.dumps(GOOD).replace("4.0", "1e999"), "holds a number too large to be finite"),
    "fifo": (None, "not a regular file (a FIFO, a device or a socket)"),
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_bad_snapshot_file_fails_in_one_line_naming_it(pytester):
    tests = "\n".join(f"def test_{name}(xai_snapshot):\n    xai_snapshot([[1.0, 2.0], [3.0, 4.0]])\n" for name in BAD)
    pytester.makepyfile(test_bad=tests)
    folder = pytester.path / "__xai_snapshots__" / "test_bad"
    folder.mkdir(parents=True)
    for name, (content, _) in BAD.items():
        path = folder / f"test_{name}.json"
        if content is None:
            os.mkfifo(path)
        else:
            (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)  # type: ignore[operator]
    result = pytester.runpytest_subprocess(*QUIET)
    result.assert_outcomes(failed=len(BAD))
    fix = "; delete it and run pytest --xai-snapshot-update to write it again, then review it"
    for name, (_, message) in BAD.items():
        result.stdout.fnmatch_lines([f"explanation snapshot {folder / f'test_{name}.json'}: *{message}*{fix}"])
    failures = result.stdout.str().split("= FAILURES =")[1].split("= short test summary")[0]
    said = [line for line in failures.splitlines() if line.strip("=") and not line.startswith("___")]
    assert len(said) == len(BAD), said  # one line each: no traceback, no code


def test_snapshot_files_are_named_after_the_test_and_never_shared(tmp_path):
    where = tmp_path / "test_m.py"
    assert snapshot.path_for(where, "test_a[shap_kernel-x]").name == "test_a-shap_kernel-x.json"
    assert snapshot.path_for(where, "TestK::test_a", "second").name == "TestK.test_a.second.json"
    assert snapshot.path_for(where, "test_a").parent == tmp_path / "__xai_snapshots__" / "test_m"
    lossy = {snapshot.path_for(where, f"test_a[{p}]").name for p in ("a b", "a/b", "a_b", "a:b")}
    assert len(lossy) == 4 and all(name.startswith("test_a-a_b") for name in lossy)
    assert len(snapshot.path_for(where, "test_a[" + "x" * 500 + "]").name) < 140


def test_a_snapshot_reads_back_exactly_and_names_what_moved(tmp_path):
    values = np.array([[0.1, 1 / 3, -2.5e-17], [np.pi, -0.0, 1e3]])
    snap = snapshot.Snapshot.measure(
        values, [values + [[1e-3, 0, 0], [0, 0, 0]]], seeds=(1, 2), features=["x", "y", "z"]
    )
    path = tmp_path / "s.json"
    path.write_text(snap.dumps())
    back = snapshot.read(path)
    assert np.array_equal(back.values, values) and back.features == ("x", "y", "z")
    assert back.changes(values, path) is None
    moved = values.copy()
    moved[1, 0] += 0.01  # beyond 3 x the spread 1e-3 of feature x
    moved[0, 1] += 1e-7  # within 1e-9 x the scale (1e3): no spread needed
    message = back.changes(moved, path)
    assert message is not None and "1 of 6 attributions moved" in message and "in rows 1, features 'x'" in message
    assert "row 1, feature 'x': 3.14159 -> 3.15159 (moved 0.01, tolerance 0.003)" in message
    assert "other rows or features" in (back.changes(values[:1], path) or "")
