"""Dummy pixels: Compare-xAI's mnist test on scikit-learn's bundled digits (offline substitute).

Belaid et al. 2022, Compare-xAI test mnist (after Covert et al. 2020, SAGE), with the substitutes and
corrections listed in ``docs/defects.md`` (CX-1, CX-4, CX-9, CX-10):

- Data: ``load_digits`` (1,797 8x8 images, shipped with scikit-learn, no download), scaled by 1/16
  and padded with a 2-pixel zero border to 12x12, so that 80 border pixels (plus a few always-blank
  interior ones) are dummies, like MNIST's blank border.  Inputs are flattened to (n, 144) so that
  tabular explainers (KernelSHAP, LIME) run on them; feature j is pixel (j // 12, j % 12).
- Split as the original: ``train_test_split(test_size=0.7, random_state=0)`` (539 training images).
  Background: a stratified 20 training rows (``random_state=1``).
- Model: ``MLPClassifier(hidden_layer_sizes=(40,), solver="sgd", alpha=1e-4, learning_rate_init=0.2,
  random_state=1)`` as in the original but with ``max_iter=200`` (it stops at about 120 epochs, 96 %
  held-out accuracy; the original's 10 epochs are not "trained").  scikit-learn models cannot be
  stored in a safe format, so the fitted ``coefs_`` and ``intercepts_`` are cached as npz and the
  network is rebuilt as an equivalent numpy function (ReLU hidden layer, softmax output), verified
  against ``predict_proba`` when trained; a torch twin with the same weights is ``torch_model``.
- ``predict`` returns class probabilities (CX-10).  The 10 explained rows are held-out images the
  model classifies correctly (seeded choice), each explained for its predicted class
  (``Case.target`` holds one class per row).
- Dummy set: pixels that are 0 in every row an explainer can see (train, background, explained):
  ``DUMMY_PIXELS``, 84 of 144.  It is declared with the case's check, so it must not depend on the
  seed: explained images are drawn among those with no ink there (4 of the 1,797 images have some),
  and the build verifies the set.

Two variants (CX-9): ``digits_data_dummy`` explains the network as trained (its first-layer weights on
blank pixels are not zero, so f does depend on them off the data and gradients are legitimately
non-zero; the dummy axiom holds for methods whose reference values come from the data), and
``digits_function_dummy`` multiplies the dummy pixels by a fixed 0 mask before the network, so every
method must give them 0, and puts a fixed seeded ink pattern (uniform in ``INK``) on those pixels in
every explained and background row: were they 0 as in the data, any map of the form g(x) * x (the
input itself, Input x Gradient of any g) would pass without reading the function.  The pattern is
the same in every row, so data-referenced estimators (KernelSHAP, LIME) see a constant feature and
give it 0 exactly; with ink that varied between rows their sampling error alone credits the ignored
pixels (KernelSHAP 0.044, LIME 0.105 of the top importance at the default budgets, against a
tolerance of 1e-3).  Both are
scored with the ``dummy`` check over the true dummy set.
"""

from __future__ import annotations

import warnings

import numpy as np

from pytest_xai.case import Case
from pytest_xai.registry import Family

SOURCE = "Belaid et al. 2022, Compare-xAI, test mnist (Covert et al. 2020), on load_digits"
FAMILY = Family(
    "digits",
    source=SOURCE,
    smoke=("dummy", "digits_function_dummy"),
    libraries=("sklearn.datasets", "sklearn.model_selection", "sklearn.neural_network", "torch"),
)
PAD, SIDE = 2, 12
N_BACKGROUND, N_EXPLAINED = 20, 10
MLP = {
    "hidden_layer_sizes": (40,),
    "solver": "sgd",
    "alpha": 1e-4,
    "learning_rate_init": 0.2,
    "random_state": 1,
    "max_iter": 200,
}
MIN_ACCURACY = 0.9
INK = (0.25, 1.0)  # the function-dummy case's values on the masked pixels (digit ink is in [0, 1])
# Pixels with no ink in any of the 539 training images: the 80 border pixels and 4 interior ones
# (declared here for the check; the build verifies it against the data).
_BORDER = tuple(j for j in range(SIDE * SIDE) if not (PAD <= j // SIDE < SIDE - PAD and PAD <= j % SIDE < SIDE - PAD))
DUMMY_PIXELS = tuple(sorted(_BORDER + (26, 50, 74, 81)))


def padded_digits() -> tuple[np.ndarray, np.ndarray]:
    """load_digits images scaled to [0, 1], zero-padded to 12x12 and flattened: (1797, 144), labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.pad(digits.images / 16.0, ((0, 0), (PAD, PAD), (PAD, PAD)))
    return images.reshape(len(images), -1), digits.target


def _fit_weights() -> dict[str, np.ndarray]:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    data = split()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier(**MLP).fit(data["X_train"], data["y_train"])
    weights = {"W1": mlp.coefs_[0], "b1": mlp.intercepts_[0], "W2": mlp.coefs_[1], "b2": mlp.intercepts_[1]}
    error = np.abs(_network(weights)(data["X_test"]) - mlp.predict_proba(data["X_test"])).max()
    if error > 1e-9:
        raise ValueError(f"the numpy rebuild of the MLP differs from predict_proba by {error:g}")
    return weights


def _network(weights: dict[str, np.ndarray], mask: np.ndarray | None = None):
    """softmax(relu(x W1 + b1) W2 + b2), with the inputs multiplied by ``mask`` first if given."""
    W1, b1, W2, b2 = (np.asarray(weights[k], dtype=float) for k in ("W1", "b1", "W2", "b2"))

    def predict(X):
        X = np.asarray(X, dtype=float).reshape(-1, W1.shape[0])
        if mask is not None:
            X = X * mask
        logits = np.maximum(X @ W1 + b1, 0.0) @ W2 + b2
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    return predict


def _torch_twin(weights: dict[str, np.ndarray], mask: np.ndarray):
    """The same network as a torch module (eval mode, float64), or None without torch."""
    try:
        import torch
    except ImportError:  # pragma: no cover - the torch extra is not installed
        return None

    class MaskedMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.as_tensor(mask, dtype=torch.float64))
            self.hidden = torch.nn.Linear(*weights["W1"].shape, dtype=torch.float64)
            self.relu = torch.nn.ReLU()
            self.out = torch.nn.Linear(*weights["W2"].shape, dtype=torch.float64)
            self.softmax = torch.nn.Softmax(dim=1)

        def forward(self, x):
            return self.softmax(self.out(self.relu(self.hidden(x.reshape(len(x), -1) * self.mask))))

    module = MaskedMLP()
    with torch.no_grad():
        for layer, W, b in ((module.hidden, "W1", "b1"), (module.out, "W2", "b2")):
            layer.weight.copy_(torch.as_tensor(weights[W].T))
            layer.bias.copy_(torch.as_tensor(weights[b]))
    return module.eval()


def split() -> dict[str, np.ndarray]:
    """The padded digits split as the original: training images, the stratified background drawn from
    them, and the held-out images."""
    from sklearn.model_selection import train_test_split

    X, y = padded_digits()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.7, random_state=0)
    _, background, _, _ = train_test_split(X_train, y_train, test_size=N_BACKGROUND, stratify=y_train, random_state=1)
    return {"X_train": X_train, "y_train": y_train, "X_test": X_test, "y_test": y_test, "background": background}


def _digits_case(info, seed: int, cache, function_dummy: bool) -> Case:
    params = {**MLP, "pad": PAD, "sklearn": __import__("sklearn").__version__}
    weights = cache.arrays("digits_mlp", params, _fit_weights)
    data = split()
    predict = _network(weights)
    accuracy = float((predict(data["X_test"]).argmax(axis=1) == data["y_test"]).mean())
    if accuracy < MIN_ACCURACY:
        raise ValueError(f"{info.name}: the digits MLP reaches {accuracy:.3f} held-out accuracy < {MIN_ACCURACY}")
    X_test = data["X_test"]
    predicted = predict(X_test).argmax(axis=1)
    good = np.flatnonzero((predicted == data["y_test"]) & (X_test[:, DUMMY_PIXELS].max(axis=1) == 0))
    rows = np.sort(np.random.default_rng(seed).choice(good, size=N_EXPLAINED, replace=False))
    inputs = X_test[rows]
    seen = np.vstack([data["X_train"], data["background"], inputs])
    dummies = np.flatnonzero(seen.max(axis=0) == 0)
    if tuple(dummies.tolist()) != DUMMY_PIXELS:
        raise ValueError(
            f"{info.name}: the blank pixels of the data ({len(dummies)}) are not DUMMY_PIXELS "
            f"({len(DUMMY_PIXELS)}); did load_digits change?"
        )
    mask = np.ones(SIDE * SIDE)
    background = data["background"]
    if function_dummy:
        mask[dummies] = 0.0
        predict = _network(weights, mask)
        # a fixed seeded ink pattern on the pixels the masked network ignores, in every explained
        # and background row, so "the model ignores the pixel" differs from "the pixel is 0"
        ink = np.random.default_rng([seed, 14]).uniform(INK[0], INK[1], len(dummies))
        inputs, background = inputs.copy(), background.copy()
        inputs[:, dummies] = ink
        background[:, dummies] = ink
    return Case(
        info=info,
        inputs=inputs,
        predict=predict,
        model=predict,
        target=predicted[rows],
        background=background,
        baseline=np.zeros(SIDE * SIDE),
        torch_model=_torch_twin(weights, mask),
        feature_names=[f"px_{j // SIDE}_{j % SIDE}" for j in range(SIDE * SIDE)],
        truth={"dummies": dummies},
        meta={
            "dummies": dummies,
            "image_shape": (SIDE, SIDE),
            "accuracy": accuracy,
            "explained_rows": rows,
            "function_dummy": function_dummy,
        },
    )


_CHECKS = {"dummy": {"features": DUMMY_PIXELS}}


@FAMILY.case(category="stress", checks=_CHECKS)
def digits_data_dummy(info, *, seed, cache) -> Case:
    """Blank pixels of 12x12 padded digits get zero credit from data-referenced explainers (CX-9 data-dummy).

    The network's first-layer weights on blank pixels are not zero, so gradient-type methods
    legitimately credit them; methods that substitute background or baseline values must not.
    """
    return _digits_case(info, seed, cache, function_dummy=False)


@FAMILY.case(category="stress", checks=_CHECKS)
def digits_function_dummy(info, *, seed, cache) -> Case:
    """Inked dummy pixels are multiplied by 0 before the network: every attribution method must give them 0 (CX-9).

    The explained rows and the background carry non-zero values on the masked pixels, so only an
    explanation that reads the function (not one that is 0 wherever the input is 0) passes.
    """
    return _digits_case(info, seed, cache, function_dummy=True)
