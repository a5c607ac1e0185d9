"""Sanity checks for saliency maps: model-parameter and data randomisation.

Adebayo, Gilmer, Muelly, Goodfellow, Hardt & Kim, "Sanity Checks for Saliency Maps", NeurIPS 2018.
An explanation meant to describe what a model learned must change when the learned parameters are
destroyed (cascading randomisation, top layer first) or when the model is trained on permuted
labels (data randomisation).  The paper gives no numeric threshold; the calibrated pass rule is
ours (see :func:`randomisation_score`).

The case ``sanity_digits_mlp`` is a small MLP (on 1x8x8 image inputs) trained (seeded, CPU, about
a second, cached) on scikit-learn's bundled ``load_digits`` images, plus a copy of the architecture
trained to memorise permuted labels (a few seconds).  ``case.meta`` holds the randomised variants
(there are no ground-truth arrays):

- ``"cascade"``: list of ``(layer_name, model)``; entry k has the top k+1 parametrised layers
  re-initialised (cumulative, top-down), the last one fully random;
- ``"random_models"``: two independently re-initialised models (the noise floor);
- ``"label_randomised"``: the memorising model.

**The re-explain API.**  Both checks need to run the explainer again on another model, so they take
a keyword argument ``reexplain``, a callable supplied by the caller (the plugin wires it to its
explainer runner)::

    reexplain(model, *, other_seed=False) -> attributions shaped like case.inputs

It must explain ``case.inputs`` for the same ``target`` with ``model`` in place of the case's model:
:func:`with_model` builds that case (``model``, ``torch_model`` and ``predict`` replaced).  With
``other_seed=False`` it uses the seed of the original explanation; with ``other_seed=True`` a
different one (for the ceiling: the explainer's own variability).  In a notebook::

    case = cases.get("sanity_digits_mlp")
    run = lambda c, seed: my_explainer(inputs=c.inputs, model=c.torch_model, target=c.target, seed=seed)
    reexplain = lambda model, *, other_seed=False: run(with_model(case, model), 1 if other_seed else 0)
    score = model_randomisation(run(case, 0), case, reexplain=reexplain)

The explained inputs are the first two test images of each digit that the trained model
classifies correctly (20 images), and ``target`` holds each one's class, the trained model's
prediction, kept fixed for every variant (the randomised models' argmax is arbitrary; Adebayo et
al. §3).  The data-randomisation
test therefore uses those class indices, not the memorising model's own predictions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_xai.case import Case, Score
from pytest_xai.checks import attributions_of, check
from pytest_xai.explainers.degenerate import CORRUPTED
from pytest_xai.registry import Family
from pytest_xai.stats import pearson_rows, spearman_rows

SOURCE = "Adebayo et al. 2018, Sanity Checks for Saliency Maps (NeurIPS), §3-4"
FAMILY = Family(
    "sanity", source=SOURCE, smoke=("model_randomisation", "sanity_digits_mlp"), libraries=("sklearn.datasets", "torch")
)

#: Images explained per digit.  A verdict compares means over the images of per-image |Spearman|,
#: whose sd is 0.09-0.17 on shap_kernel and saliency: over 20 images the sd of a mean is <= 0.04,
#: against margins to the threshold of >= 0.25 (shap_kernel) and 0.5 (saliency).  The two verdicts
#: explain the case 8 times, so fewer images are the cheapest saving.
N_TRAIN, PER_DIGIT = 1000, 2
N_EXPLAINED = 10 * PER_DIGIT
EPOCHS, EPOCHS_MEMORISE = 20, 150


# --------------------------------------------------------------------------------------------
# The model, its training and its randomised variants
# --------------------------------------------------------------------------------------------


def make_mlp():
    """The architecture: 8x8 image -> flatten -> 128 -> 128 -> 10 logits (ReLU MLP)."""
    from torch import nn

    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, 128),
        nn.ReLU(),
        nn.Linear(128, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def _digits(seed: int):
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    order = np.random.default_rng([seed, 11]).permutation(len(images))
    return images, digits.target.astype(np.int64), order[:N_TRAIN], order[N_TRAIN:]


def _fit(seed: int, images, labels, epochs: int) -> Callable[[Any], None]:
    """Seeded Adam training on (images, labels), learning rate / 10 for the last 20 % of epochs."""

    def train(model) -> None:
        import torch
        from torch import nn

        torch.set_num_threads(1)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            xs, ys = torch.from_numpy(images), torch.from_numpy(labels)
            optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
            schedule = torch.optim.lr_scheduler.MultiStepLR(optimiser, [int(0.8 * epochs)], gamma=0.1)
            model.train()
            for _ in range(epochs):
                order = torch.randperm(len(xs))
                for start in range(0, len(xs), 64):
                    batch = order[start : start + 64]
                    optimiser.zero_grad()
                    nn.functional.cross_entropy(model(xs[batch]), ys[batch]).backward()
                    optimiser.step()
                schedule.step()
        model.eval()

    return train


def _accuracy(model, images, labels) -> float:
    import torch

    with torch.no_grad():
        return float((model(torch.from_numpy(images)).argmax(1).numpy() == labels).mean())


def _trained(name, seed, cache, images, labels, epochs, what):
    """An MLP trained on (images, labels), cached; rebuilt unless it fits them to >= 95 %."""
    import torch

    def make():
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return make_mlp()

    def validate(model) -> None:
        acc = _accuracy(model, images, labels)
        if acc < 0.95:
            raise ValueError(f"{what} accuracy {acc:.3f} < 0.95")

    train = _fit(seed, images, labels, epochs)
    params = {"seed": seed, "epochs": epochs, "n_train": N_TRAIN, "labels": what}
    return cache.torch_module(name, params, make, train, validate)


def parametrised_layers(model) -> list[tuple[str, Any]]:
    """(name, module) of the layers that own parameters, top (logits) first."""
    layers = [(name, m) for name, m in model.named_modules() if list(m.parameters(recurse=False))]
    return layers[::-1]


def randomise(model, layer_names, seed: int):
    """A copy of ``model`` with the named layers re-initialised by their own initialiser (seeded).

    ``reset_parameters`` is the initialiser torch used at construction; it resets biases too.
    """
    import copy

    import torch

    out = copy.deepcopy(model)
    modules = dict(out.named_modules())
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for name in layer_names:
            modules[name].reset_parameters()
    for param in out.parameters():
        param.requires_grad_(False)
    return out.eval()


def with_model(case: Case, model) -> Case:
    """``case`` with ``model`` as its native model, torch twin and ``predict`` (softmax)."""
    return dataclasses.replace(case, model=model, torch_model=model, predict=_softmax_predict(model))


def _softmax_predict(model):
    def predict(x):
        import torch

        with torch.no_grad():
            return torch.softmax(model(torch.as_tensor(np.asarray(x, dtype=np.float32))), dim=1).numpy()

    return predict


@FAMILY.case(category="fidelity", checks={"model_randomisation": {}, "data_randomisation": {}})
def sanity_digits_mlp(info, *, seed, cache):
    """A small MLP on load_digits 8x8 plus its cascading-randomised and label-randomised twins."""
    images, labels, train_rows, test_rows = _digits(seed)
    model = _trained(
        "sanity_digits_mlp", seed, cache, images[train_rows], labels[train_rows], EPOCHS, "true-label train"
    )
    permuted = np.random.default_rng([seed, 12]).permutation(labels[train_rows])
    memoriser = _trained(
        "sanity_digits_mlp_permuted",
        seed + 1,
        cache,
        images[train_rows],
        permuted,
        EPOCHS_MEMORISE,
        "permuted-label train",
    )
    for param in (*model.parameters(), *memoriser.parameters()):
        param.requires_grad_(False)
    layers = [name for name, _ in parametrised_layers(model)]
    cascade = [(layers[k], randomise(model, layers[: k + 1], seed=1000 + seed)) for k in range(len(layers))]
    floor = tuple(randomise(model, layers, seed=2000 + seed + i) for i in range(2))
    predict = _softmax_predict(model)
    predicted = predict(images[test_rows]).argmax(axis=1)
    right = test_rows[predicted == labels[test_rows]]
    chosen = np.sort(np.concatenate([right[labels[right] == digit][:PER_DIGIT] for digit in range(10)]))
    if len(chosen) < N_EXPLAINED:
        raise AssertionError(f"{info.name}: fewer than {PER_DIGIT} test images of some digit are classified correctly")
    inputs = images[chosen]
    background = images[train_rows[:50]]
    return Case(
        info=info,
        inputs=inputs,
        predict=predict,
        feature_names=[f"pixel_{r}_{c}" for r in range(8) for c in range(8)],
        model=model,
        torch_model=model,
        target=labels[chosen],
        background=background,
        baseline=np.zeros(inputs.shape[1:], dtype=np.float32),
        truth={},
        meta={
            "cascade": cascade,
            "random_models": floor,
            "label_randomised": memoriser,
            "layers_top_down": layers,
            # the two verdicts explain the case 8 times (the original, 3 cascade steps, 2 floor models,
            # the reseeded original, the memoriser): 1,000 model evaluations an image keep a
            # perturbation explainer within seconds per explanation
            "budget": 1_000 * N_EXPLAINED,
            "test_accuracy": _accuracy(model, images[test_rows], labels[test_rows]),
            "train_accuracy": _accuracy(model, images[train_rows], labels[train_rows]),
            "label_randomised_train_accuracy": _accuracy(memoriser, images[train_rows], permuted),
        },
        swap_model=with_model,
    )


# --------------------------------------------------------------------------------------------
# Similarity measures (Adebayo et al. §3): per input, then the mean over inputs
# --------------------------------------------------------------------------------------------


def _maps(a: np.ndarray) -> np.ndarray:
    """Channel-reduced maps: (n, C, H, W) -> sum over C; (n, H, W) and (n, d) unchanged."""
    a = np.asarray(a, dtype=np.float64)
    return a.sum(axis=1) if a.ndim == 4 else a


def _normalised(maps: np.ndarray) -> np.ndarray:
    peak = np.abs(maps).reshape(len(maps), -1).max(axis=1)
    return np.abs(maps) / np.where(peak > 0, peak, 1.0)[:, None, None]


def image_similarities(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """SSIM (window 7, data range 1) and HOG-feature Pearson correlation of |map|/max|map|.

    Images only, and only if scikit-image is installed; otherwise the reason as a string.
    """
    a, b = _maps(a), _maps(b)
    if a.ndim != 3 or min(a.shape[1:]) < 7:
        return {
            "ssim": "not applicable: attributions are not 2-D maps of at least 7x7",
            "hog": "not applicable: attributions are not 2-D maps of at least 7x7",
        }
    try:
        from skimage.feature import hog
        from skimage.metrics import structural_similarity
    except ImportError:
        return {"ssim": "scikit-image is not installed", "hog": "scikit-image is not installed"}
    na, nb = _normalised(a), _normalised(b)
    ssim = [structural_similarity(x, y, win_size=7, data_range=1.0) for x, y in zip(na, nb)]
    cell = (max(a.shape[1] // 2, 1), max(a.shape[2] // 2, 1))
    ha, hb = ([hog(x, pixels_per_cell=cell, cells_per_block=(1, 1)) for x in maps] for maps in (na, nb))
    return {"ssim": float(np.mean(ssim)), "hog": _mean(pearson_rows(ha, hb))[0]}


def _mean(values: np.ndarray) -> tuple[float | None, int]:
    """Mean over the defined values and the number of undefined (NaN) ones."""
    undefined = int(np.isnan(values).sum())
    return (float(np.nanmean(values)) if undefined < len(values) else None), undefined


def similarity(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """|·|-Spearman (primary) and signed Spearman per input, averaged; NaN rows are counted."""
    ma, mb = _maps(a), _maps(b)
    abs_mean, abs_undefined = _mean(spearman_rows(np.abs(ma), np.abs(mb)))
    signed_mean, signed_undefined = _mean(spearman_rows(ma, mb))
    return {
        "abs_spearman": abs_mean,
        "abs_spearman_undefined": abs_undefined,
        "signed_spearman": signed_mean,
        "signed_spearman_undefined": signed_undefined,
    }


# --------------------------------------------------------------------------------------------
# The calibrated pass rule and the two checks
# --------------------------------------------------------------------------------------------


def randomisation_score(
    name: str,
    original: np.ndarray,
    randomised: np.ndarray,
    reexplain,
    case: Case,
    midpoint: float,
    extra: dict[str, Any],
    floor_models: Any = None,
) -> Score:
    """Pass when sim(original, randomised) <= floor + midpoint * (ceiling - floor).

    floor = sim between the explanations of two independently re-initialised models (what two
    unrelated models share: architecture, input); ceiling = sim between the original and the
    explanation of the same model with another seed (1 for deterministic explainers).  Similarity
    is the mean per-input |·|-Spearman (Adebayo et al. §3).  ``floor_models`` replaces
    ``case.meta["random_models"]`` (a user case's data randomisation: two more label permutations).
    """
    floor_models = case.meta["random_models"] if floor_models is None else floor_models
    rand_a, rand_b = (np.asarray(reexplain(m), dtype=np.float64) for m in floor_models)
    again = np.asarray(reexplain(case.model, other_seed=True), dtype=np.float64)
    floor = similarity(rand_a, rand_b)["abs_spearman"]
    ceiling = similarity(original, again)["abs_spearman"]
    sims = similarity(original, randomised)
    sim = sims["abs_spearman"]
    params = {
        "midpoint": midpoint,
        "floor": floor,
        "ceiling": ceiling,
        **sims,
        **image_similarities(original, randomised),
        **extra,
    }
    if sim is None or floor is None or ceiling is None:
        return Score(
            check=name,
            value=0.0,
            passed=False,
            threshold=midpoint,
            params=params,
            detail="similarity undefined: the explanations are constant on every input "
            "(e.g. all zero), so the randomisation test cannot be applied",
        )
    threshold = floor + midpoint * (ceiling - floor)
    per_input = spearman_rows(np.abs(_maps(original)), np.abs(_maps(randomised)))
    worst = int(np.nanargmax(per_input)) if np.isfinite(per_input).any() else 0
    worst_info = {"row": worst, "abs_spearman": float(per_input[worst])}
    if ceiling <= floor:
        return Score(
            check=name,
            value=0.0,
            passed=False,
            threshold=threshold,
            params=params,
            worst=worst_info,
            detail=(
                f"explanations of two unrelated random models are as similar "
                f"({floor:.3f}) as the explanation with itself ({ceiling:.3f}): the "
                "explainer does not depend on the model's parameters"
            ),
        )
    value = float(np.clip((ceiling - sim) / (ceiling - floor), 0.0, 1.0))
    passed = sim <= threshold
    return Score(
        check=name,
        value=value,
        passed=passed,
        threshold=threshold,
        params=params,
        worst=worst_info,
        detail=(
            f"|Spearman| between the explanations before and after randomisation is {sim:.3f}; "
            f"it must be <= {threshold:.3f} (floor {floor:.3f} from two random models, ceiling "
            f"{ceiling:.3f} from reseeding, midpoint {midpoint:g})"
            + ("" if passed else ": the explanation survives the randomisation")
        ),
    )


def _variants(case: Case, kind: str, key: str) -> None:
    """Build a user case's randomised models on first use; skip with what is missing."""
    from pytest_xai.errors import NotApplicable

    if key not in case.meta:
        case.build_variants()
    if key not in case.meta:
        reason = case.meta.get("not_randomisable", {}).get(kind)
        raise NotApplicable(reason or f"case {case.name!r} has no {key!r} models to compare with")


def _check_reexplain(reexplain, name):
    if not callable(reexplain):
        raise TypeError(
            f"{name}: reexplain must be a callable reexplain(model, *, other_seed=False) "
            f"returning attributions, got {type(reexplain).__name__}"
        )


def _original(attributions, case, name) -> np.ndarray:
    a = attributions_of(attributions)
    if a.shape != np.shape(case.inputs):
        raise ValueError(
            f"{name}: attributions have shape {a.shape}, case {case.name!r} has inputs shaped {np.shape(case.inputs)}"
        )
    return a


_CORRUPTED_STILL_DEPENDS = (
    "the check asks only whether the explanation depends on the learned parameters; "
    "this fixed corruption is applied to the explanation of whichever model is explained, "
    "so the dependence, and the verdict, are those of the reference"
)
_SANITY_BY_CONSTRUCTION = dict.fromkeys(CORRUPTED, _CORRUPTED_STILL_DEPENDS)


@check(marker="xai_sanity", thresholds={"midpoint": 0.5}, passes_by_construction=_SANITY_BY_CONSTRUCTION)
def model_randomisation(attributions, case, *, reexplain, midpoint=0.5) -> Score:
    """Cascading model-parameter randomisation (Adebayo et al. 2018, §3.1): after re-initialising
    every layer top-down, the explanation must be nearer the random-model floor than its ceiling.

    ``params["curve"]`` is the |·|-Spearman after each cumulative step (top layer first).  Default
    midpoint 0.5: on the digits MLP plain gradients end far below it and
    model-independent explainers (|Sobel(input)|, the input itself) have floor = ceiling = 1 and
    fail (``tests/test_sanity.py``).  Zoo: every member that explains nothing fails (zeros and
    constants are undefined; the input itself, the input minus the mean and noise do not depend on
    the parameters; the output copied is constant per row).  The corrupted members (sign, scale,
    |.|, offset, swaps, shuffled rows, noise) apply a fixed corruption to a model-dependent
    explanation, so they keep its dependence on the parameters and pass by construction (declared):
    this is a test of model dependence, not of correctness.  On a user's case the cascade is one
    step, the user's ``randomise(model, seed)`` (``pytest_xai.make_case``; a torch module's every
    layer re-initialised when none is given), and the floor two more draws of it.
    """
    _check_reexplain(reexplain, "model_randomisation")
    _variants(case, "model", "cascade")
    original = _original(attributions, case, "model_randomisation")
    curve, last = [], None
    for layer, model in case.meta["cascade"]:
        last = np.asarray(reexplain(model), dtype=np.float64)
        curve.append({"layer": layer, "abs_spearman": similarity(original, last)["abs_spearman"]})
    assert last is not None  # a cascade has a step per parametrised layer, a user case's one step
    return randomisation_score("model_randomisation", original, last, reexplain, case, midpoint, {"curve": curve})


@check(marker="xai_sanity", thresholds={"midpoint": 0.5}, passes_by_construction=_SANITY_BY_CONSTRUCTION)
def data_randomisation(attributions, case, *, reexplain, midpoint=0.5) -> Score:
    """Data randomisation (Adebayo et al. 2018, §3.2): the explanation of a model that memorised
    permuted labels must be nearer the random-model floor than the ceiling.

    The target stays the trained model's prediction (8) for both models.  Same rule and default
    midpoint as :func:`model_randomisation`; the same controls pass and fail it.  On a user's
    case (:func:`pytest_xai.make_case` with ``train=(X, y)``) the memorising model is a clone of
    the user's scikit-learn or xgboost estimator refit on permuted labels, and the floor two
    more refits on other permutations; without them the check skips with what it needs.
    """
    _check_reexplain(reexplain, "data_randomisation")
    _variants(case, "data", "label_randomised")
    original = _original(attributions, case, "data_randomisation")
    randomised = np.asarray(reexplain(case.meta["label_randomised"]), dtype=np.float64)
    return randomisation_score(
        "data_randomisation",
        original,
        randomised,
        reexplain,
        case,
        midpoint,
        {},
        floor_models=case.meta.get("label_floor"),
    )
