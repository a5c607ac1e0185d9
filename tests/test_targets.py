"""One class per explained row: every reference adapter explains row i for target[i] (Quantus' convention)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_xai import make_case
from pytest_xai.engine import contract
from pytest_xai.explainers.targets import per_row

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

RNG = np.random.default_rng(0)
W = RNG.normal(size=(4, 3))
X = RNG.normal(size=(6, 4))
BACKGROUND = RNG.normal(size=(12, 4))


def softmax_predict(x):
    z = np.asarray(x, dtype=float) @ W
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def torch_model():
    import torch

    linear = torch.nn.Linear(4, 3, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(W.T, dtype=torch.float32))
    return torch.nn.Sequential(linear, torch.nn.Softmax(dim=1)).eval()


def attributions(name, case):
    return contract.run(contract.load(f"pytest_xai.explainers:{name}"), case, seed=3).attributions


@pytest.mark.parametrize(
    "name",
    [
        "exact_shapley",
        "feature_occlusion",
        "shap_kernel",
        "shap_exact",
        "lime_tabular",
        "integrated_gradients",
        "captum_kernel_shap",
    ],
)
def test_each_row_is_explained_for_its_own_class(name):
    """Per-row targets equal explaining each class's rows with that class alone; a fixed class differs."""
    model = torch_model() if name in ("integrated_gradients", "captum_kernel_shap") else None
    targets = np.array([0, 1, 2, 1, 0, 2])
    per_row = make_case(
        X, predict=softmax_predict, model=model, background=BACKGROUND, target=targets, baseline=np.zeros(4)
    )
    got = attributions(name, per_row)
    for label in range(3):
        rows = np.flatnonzero(targets == label)
        alone = make_case(
            X[rows], predict=softmax_predict, model=model, background=BACKGROUND, target=label, baseline=np.zeros(4)
        )
        expected = attributions(name, alone)
        if name == "captum_kernel_shap":  # one seeded stream of coalitions, row after row: only row 0 draws alike
            np.testing.assert_allclose(got[rows], expected, atol=3e-2)
            if label == 0:
                np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-6)
        else:
            np.testing.assert_allclose(got[rows], expected, rtol=1e-4, atol=1e-5)
    fixed = make_case(X, predict=softmax_predict, model=model, background=BACKGROUND, target=0, baseline=np.zeros(4))
    assert not np.allclose(got, attributions(name, fixed), atol=5e-2)


def test_per_row_shares_the_budget_in_proportion_to_rows():
    seen = []

    @per_row
    def explain(inputs, target, budget=1000):
        seen.append((len(inputs), target, budget))
        return np.full(inputs.shape, float(target))

    out = explain(inputs=X, target=np.array([2, 0, 2, 2, 0, 2]), budget=600)
    assert sorted(seen) == [(2, 0, 200), (4, 2, 400)]
    np.testing.assert_array_equal(out[:, 0], [2, 0, 2, 2, 0, 2])
    with pytest.raises(ValueError, match="one class per row"):
        explain(inputs=X, target=np.array([0, 1]))
