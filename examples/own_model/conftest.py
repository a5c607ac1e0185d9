"""Your model, your data, the suite's checks: three cases registered from a conftest.py.

Run (from this directory)::

    pytest --xai-explainer=explainers.py:tree_shap -k "diabetes"          # shap on gradient boosting
    pytest --xai-explainer=explainers.py:integrated_gradients -k "cancer"  # captum IG on a torch MLP

Each case names the checks that need no ground truth; the suite runs them like its own.
"""

import numpy as np

import pytest_xai

GENERIC = [
    "faithfulness",
    "infidelity",
    "monotonicity",
    "completeness",
    "determinism",
    "batch_invariance",
    "max_sensitivity",
]


def _diabetes(seed):
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    order = np.random.default_rng(seed).permutation(len(data.target))
    train, test = order[:350], order[350:]
    return data.data[train], data.target[train], data.data[test], data.feature_names


def randomise_trees(model, seed):
    """Model randomisation for gradient boosting: every leaf value replaced by seeded noise of the
    same scale (the trees' structure stays; what they learned is gone)."""
    import copy

    rng = np.random.default_rng(seed)
    out = copy.deepcopy(model)
    for tree in out.estimators_.ravel():
        values = tree.tree_.value
        values[:] = rng.normal(0.0, values.std() + 1e-12, size=values.shape)
    return out


@pytest_xai.register_case(
    family="examples",
    checks=GENERIC + ["model_randomisation", "data_randomisation"],
    source="scikit-learn load_diabetes (Efron et al. 2004)",
)
def diabetes_gbm(seed):
    """scikit-learn gradient boosting on the bundled diabetes data."""
    from sklearn.ensemble import GradientBoostingRegressor

    X, y, X_test, names = _diabetes(seed)
    model = GradientBoostingRegressor(n_estimators=40, max_depth=3, random_state=seed).fit(X, y)
    return pytest_xai.make_case(
        X_test[:24], model=model, background=X[:40], feature_names=names, train=(X, y), randomise=randomise_trees
    )


@pytest_xai.register_case(
    family="examples",
    checks=["faithfulness", "completeness", "data_randomisation"],
    source="scikit-learn load_diabetes (Efron et al. 2004)",
)
def diabetes_xgb(seed):
    """xgboost on the bundled diabetes data (data randomisation refits a clone on permuted labels)."""
    from xgboost import XGBRegressor

    X, y, X_test, names = _diabetes(seed)
    model = XGBRegressor(n_estimators=60, max_depth=3, random_state=seed, n_jobs=1).fit(X, y)
    return pytest_xai.make_case(X_test[:24], model=model, background=X[:40], feature_names=names, train=(X, y))


@pytest_xai.register_case(
    family="examples",
    checks=["faithfulness", "completeness", "determinism", "max_sensitivity", "model_randomisation"],
    source="scikit-learn load_breast_cancer (Street et al. 1993)",
)
def cancer_mlp(seed):
    """A small torch MLP (float32) on the bundled breast-cancer data, standardised."""
    import torch
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X = ((data.data - data.data.mean(0)) / data.data.std(0)).astype(np.float32)
    y = data.target
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:400], order[400:]
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(30, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    xs, ys = torch.from_numpy(X[train]), torch.from_numpy(y[train])
    for _ in range(100):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(xs), ys).backward()
        optimiser.step()
    model.eval()
    return pytest_xai.make_case(
        X[test][:24],
        model=model,
        background=X[train][:40],
        target=1,
        baseline=np.zeros(30, dtype=np.float32),
        feature_names=list(data.feature_names),
    )
