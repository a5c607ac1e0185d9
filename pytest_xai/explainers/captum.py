"""Captum attribution methods as pytest-xai explainers (reference rows and controls).

One plain function per method.  Each asks for the native ``model`` and needs it to be a
``torch.nn.Module``: anything else raises :class:`pytest_xai.NotApplicable`, so the test is skipped.
Inputs arrive as numpy, are converted to a tensor of the model's floating dtype (float32 when the
model has no floating parameters), and attributions come back as a float64 numpy array shaped like
``inputs``.

Conventions (Kokhlikyan et al. 2020, "Captum: a unified and generic model interpretability library
for PyTorch", arXiv 2009.07896):

- ``target`` is passed to captum unchanged (None for regression).  A regression output of shape
  (n,) or (n, 1) both work with ``target=None``: gradient methods need one output element per
  example, perturbation methods compare outputs row by row.
- ``baseline`` is the case's reference input (one row, broadcast to every input, or one per input);
  without one the baseline is zeros.
- Stochastic methods are seeded with ``seed`` inside ``torch.random.fork_rng``, so the caller's
  global torch RNG is left untouched.
- The model's train/eval mode is not changed: a model in train mode (dropout, batch norm) is
  explained as it is, and whatever torch or captum then does (randomness, errors) surfaces.
- ``torch.set_num_threads(1)`` is in force during each call and the previous value restored after.
- Captum's exceptions are not caught: e.g. DeepLift on a module that reuses an ``nn.ReLU`` or calls
  a functional non-linearity raises captum's own error.
- A model over token ids (one that exposes ``get_input_embeddings()``, as Hugging Face models do)
  gets its inputs as a LongTensor of ids: ``integrated_gradients`` runs captum's
  ``LayerIntegratedGradients`` on that embedding layer and sums over the embedding dimension (one
  value per token); the perturbation methods (occlusion, ablation, permutation, the samplers) replace
  ids by the baseline's ids (the padding); methods that need gradients with respect to the inputs
  themselves are not applicable (ids have none).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_xai import budget as budgets
from pytest_xai.errors import NotApplicable
from pytest_xai.extras import install_line

if TYPE_CHECKING:  # torch is imported lazily, inside the calls; the annotations stay strings at run time
    import torch

SMOOTHGRAD_NOISE = 0.15  # fraction of the input range; Smilkov et al. 2017 suggest 10-20 %


def _torch_model(method: str, model: Any, *, tokens: bool = False):
    """The torch module itself, or NotApplicable naming what the case's model is instead.

    A model over token ids (:func:`_token_embeddings`) is not applicable unless the method can take
    ids (``tokens=True``: the perturbation methods, Integrated Gradients on the embedding layer)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - the torch extra is not installed
        raise NotApplicable(
            f"{method} needs torch and captum, which are not installed: {install_line('torch')}"
        ) from None
    if not isinstance(model, torch.nn.Module):
        kind = type(model)
        raise NotApplicable(
            f"{method} needs a torch.nn.Module; this case's model is {kind.__module__}.{kind.__qualname__}"
        )
    if not tokens and _token_embeddings(model) is not None:
        raise NotApplicable(
            f"{method} differentiates with respect to the inputs, but this model takes token ids "
            f"(it has get_input_embeddings()); integrated_gradients explains it on its embedding layer"
        )
    return model


def _token_embeddings(model: Any):
    """The embedding layer of a model over token ids (Hugging Face's ``get_input_embeddings()``), or None."""
    get = getattr(model, "get_input_embeddings", None)
    return get() if callable(get) else None


@contextlib.contextmanager
def _one_thread(seed: int | None = None) -> Iterator[None]:
    """One torch thread, and (with ``seed``) a forked, seeded RNG, for the duration of a call.

    A model whose output has no gradient with respect to its inputs (an argmax, a ``detach``, a
    ``torch.no_grad`` inside ``forward``) makes gradient methods not applicable: a skip naming
    torch's message, not a crash.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if seed is None:
            yield
        else:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(seed))
                yield
    except RuntimeError as exc:
        if "does not require grad" not in str(exc):
            raise
        raise NotApplicable(
            f"the model's output is not differentiable with respect to its inputs (torch: {exc})"
        ) from None
    finally:
        torch.set_num_threads(previous)


def _tensor(model, inputs: Any, *, grad: bool = False):
    """``inputs`` as a tensor on the model's device, in its floating dtype (float32 by default).

    ``grad=True`` marks it as requiring gradients (what captum would do, with a warning).
    """
    import torch

    params = [p for p in model.parameters() if p.is_floating_point()]
    dtype = params[0].dtype if params else torch.float32
    device = params[0].device if params else torch.device("cpu")
    array = np.asarray(inputs, dtype=np.float32)
    if array.ndim < 2:
        raise ValueError(f"inputs must have shape (n, *features), got shape {array.shape}")
    if _token_embeddings(model) is not None:  # token ids: whole numbers, as a LongTensor
        ids = np.rint(np.asarray(inputs, dtype=float))
        if not np.array_equal(ids, inputs):
            raise ValueError("this model takes token ids, but the inputs are not whole numbers")
        return torch.as_tensor(ids, device=device, dtype=torch.long)
    return torch.as_tensor(array, device=device).to(dtype).requires_grad_(grad)


def _baselines(baseline: Any, x):
    """The reference input broadcast to ``x``'s shape; zeros when the case gives none."""
    import torch

    if baseline is None:
        return torch.zeros_like(x)
    b = torch.as_tensor(np.asarray(baseline, dtype=np.float32), device=x.device).to(x.dtype)
    if b.shape == x.shape[1:]:
        b = b.unsqueeze(0)
    try:
        return b.expand_as(x).clone()
    except RuntimeError:
        raise ValueError(
            f"baseline of shape {tuple(b.shape)} fits neither one input row {tuple(x.shape[1:])} "
            f"nor the inputs {tuple(x.shape)}"
        ) from None


def _numpy(attributions, inputs: Any) -> np.ndarray:
    return attributions.detach().cpu().numpy().astype(float).reshape(np.shape(inputs))


def _feature_mask(x, groups: Any = None):
    """captum's ``feature_mask``: the case's ``groups`` (ids 0..G-1 shaped like one input, e.g. a chess
    square's 12 planes), else one group per input element (feature j of every row ablated alone)."""
    import torch

    if groups is not None:
        from pytest_xai.explainers.grouped import group_ids

        return torch.as_tensor(group_ids(np.empty((1, *x.shape[1:])), groups), device=x.device)[None]
    return torch.arange(x[0].numel(), device=x.device).reshape((1,) + tuple(x.shape[1:]))


def _target(target: Any) -> Any:
    """The case's target as captum takes it: None, one class index, or one per row as a list."""
    if target is None or np.ndim(target) == 0:
        return None if target is None else int(target)
    return [int(t) for t in np.asarray(target).reshape(-1)]


def _attribute(
    method: str,
    model: Any,
    inputs: Any,
    attribute: Callable[[torch.nn.Module, torch.Tensor], Any],
    *,
    grad: bool = False,
    seed: int | None = None,
    tokens: bool = False,
) -> np.ndarray:
    """captum's recipe, once for every method: the case's model as a torch module (else
    NotApplicable naming what it is; a model over token ids only for a method that takes ids,
    ``tokens``), one torch thread (and, with ``seed``, a forked seeded RNG), the inputs as a tensor
    in the model's dtype (requiring gradients with ``grad``; token ids as a LongTensor), then
    ``attribute(module, x)`` (captum's call), back to a float64 array shaped like ``inputs``."""
    module = _torch_model(method, model, tokens=tokens)
    with _one_thread(seed):
        x = _tensor(module, inputs, grad=grad)
        return _numpy(attribute(module, x), inputs)


def _one_example_at_a_time(explainer, x, baselines, target, groups=None, **kwargs):
    """Lime/KernelShap fit one surrogate per example; captum recommends calling them row by row."""
    import torch

    mask = _feature_mask(x, groups)
    target = _target(target)
    rows = [
        explainer.attribute(
            x[i : i + 1],
            baselines=baselines[i : i + 1],
            target=target[i] if isinstance(target, list) else target,
            feature_mask=mask,
            **kwargs,
        )
        for i in range(len(x))
    ]
    return torch.cat(rows)


def _surrogate(
    explainer, method: str, x, baseline, target, budget: int, groups, n_samples: int | None, perturbations_per_eval: int
):
    """captum's KernelShap or Lime on ``x``: :func:`surrogate_samples` for the G groups (or
    ``n_samples``), cut to the call's ``budget`` (at least G + 1), one example at a time."""
    g = int(_feature_mask(x, groups).max()) + 1
    n = budgets.samples(budget, len(x), preferred=n_samples or surrogate_samples(g), minimum=g + 1, method=method)
    return _one_example_at_a_time(
        explainer,
        x,
        _baselines(baseline, x),
        target,
        groups,
        n_samples=n,
        perturbations_per_eval=perturbations_per_eval,
    )


def saliency(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """Signed gradient dF/dx (Simonyan et al. 2014); captum ``Saliency(abs=False)``.

    The signed gradient is the paper's "Gradient" (Mamalakis et al. 2022): a sensitivity, not a
    contribution.
    """
    from captum.attr import Saliency

    return _attribute(
        "saliency", model, inputs, lambda m, x: Saliency(m).attribute(x, target=_target(target), abs=False), grad=True
    )


def input_x_gradient(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """x * dF/dx (Shrikumar et al. 2016); captum ``InputXGradient``."""
    from captum.attr import InputXGradient

    return _attribute(
        "input_x_gradient",
        model,
        inputs,
        lambda m, x: InputXGradient(m).attribute(x, target=_target(target)),
        grad=True,
    )


def integrated_gradients(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    *,
    n_steps: int = 128,
    method: str = "gausslegendre",
    internal_batch_size: int | None = None,
) -> np.ndarray:
    """Integrated Gradients (Sundararajan et al. 2017) from the case's baseline (zeros if none).

    ``n_steps`` quadrature points (captum's Gauss-Legendre rule by default); for piecewise-linear
    models the quadrature error shrinks like 1/n_steps per crossed kink.  On a model over token ids
    (``get_input_embeddings()``): captum's ``LayerIntegratedGradients`` on the embedding layer, from
    the baseline's ids (the padding) to the input's, summed over the embedding dimension.
    """
    from captum.attr import IntegratedGradients, LayerIntegratedGradients

    def attribute(module: torch.nn.Module, x: torch.Tensor) -> Any:
        embeddings = _token_embeddings(module)
        explainer = IntegratedGradients(module) if embeddings is None else LayerIntegratedGradients(module, embeddings)
        out = explainer.attribute(
            x,
            baselines=_baselines(baseline, x),
            target=_target(target),
            n_steps=n_steps,
            method=method,
            internal_batch_size=internal_batch_size,
        )
        return out if embeddings is None else out.sum(dim=-1)

    return _attribute("integrated_gradients", model, inputs, attribute, grad=True, tokens=True)


def smoothgrad(
    inputs,
    model: torch.nn.Module,
    target=None,
    seed: int = 0,
    *,
    n_samples: int = 50,
    noise: float = SMOOTHGRAD_NOISE,
) -> np.ndarray:
    """SmoothGrad (Smilkov et al. 2017): mean signed gradient over ``n_samples`` noisy copies.

    captum ``NoiseTunnel(Saliency)``, ``nt_type="smoothgrad"``; the noise standard deviation is
    ``noise`` times the range (max - min) of ``inputs``.  Seeded with ``seed``.
    """
    from captum.attr import NoiseTunnel, Saliency

    return _attribute(
        "smoothgrad",
        model,
        inputs,
        lambda m, x: NoiseTunnel(Saliency(m)).attribute(
            x,
            nt_type="smoothgrad",
            nt_samples=n_samples,
            stdevs=float(noise * (x.max() - x.min()).detach()),
            target=_target(target),
            abs=False,
        ),
        grad=True,
        seed=seed,
    )


def deeplift(inputs, model: torch.nn.Module, target=None, baseline=None) -> np.ndarray:
    """DeepLIFT rescale rule (Shrikumar et al. 2017) from the case's baseline; captum ``DeepLift``.

    Non-linearities must be ``nn.Module`` instances used once each; captum raises otherwise.
    """
    from captum.attr import DeepLift

    return _attribute(
        "deeplift",
        model,
        inputs,
        lambda m, x: DeepLift(m).attribute(x, baselines=_baselines(baseline, x), target=_target(target)),
        grad=True,
    )


def guided_backprop(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """Guided backpropagation (Springenberg et al. 2015); captum ``GuidedBackprop``."""
    from captum.attr import GuidedBackprop

    return _attribute(
        "guided_backprop", model, inputs, lambda m, x: GuidedBackprop(m).attribute(x, target=_target(target)), grad=True
    )


def _guided_gradcam(method: str, inputs, model, target, which: int) -> np.ndarray:
    """captum ``GuidedGradCam`` on the ``which``-th ``nn.Conv2d`` of the model (0 first, -1 last).

    Grad-CAM (Selvaraju et al. 2019) on that layer's output, ReLU'd, upsampled to the input's
    spatial size by captum's own ``LayerAttribution.interpolate`` (nearest, captum's default; an
    identity for the chess CNN, whose 'same' convolutions keep 8x8), times Guided Backprop.
    Inputs must be images (n, channels, height, width) and the model must have a ``Conv2d``.
    """
    import torch
    from captum.attr import GuidedGradCam

    module = _torch_model(method, model)
    convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    if not convs:
        raise NotApplicable(f"{method} needs a model with a torch.nn.Conv2d layer; this one has none")
    if np.ndim(inputs) != 4:
        raise NotApplicable(f"{method} needs image inputs (n, channels, height, width), got shape {np.shape(inputs)}")
    return _attribute(
        method,
        module,
        inputs,
        lambda m, x: GuidedGradCam(m, convs[which]).attribute(x, target=_target(target)),
        grad=True,
    )


def guided_gradcam_first_conv(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """Guided Grad-CAM on the first convolution layer, as Mücke & Pfahler 2022 (§3) ran it."""
    return _guided_gradcam("guided_gradcam_first_conv", inputs, model, target, 0)


def guided_gradcam_last_conv(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """Guided Grad-CAM on the last convolution layer (Selvaraju et al. 2019's recommended use;
    Mücke & Pfahler 2022 report both)."""
    return _guided_gradcam("guided_gradcam_last_conv", inputs, model, target, -1)


def occlusion(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    *,
    window: tuple | None = None,
    perturbations_per_eval: int = 16,
) -> np.ndarray:
    """Occlusion (Zeiler & Fergus 2014): F(x) - F(x with a window set to the baseline).

    The default window is one element (stride 1) of the feature shape: for tabular and 1-D inputs
    this is the paper's Occlusion-1 (Mamalakis et al. 2022).  Pass ``window`` for patches.
    """
    from captum.attr import Occlusion

    return _attribute(
        "occlusion",
        model,
        inputs,
        lambda m, x: Occlusion(m).attribute(
            x,
            sliding_window_shapes=tuple(window) if window is not None else (1,) * (x.dim() - 1),
            baselines=_baselines(baseline, x),
            target=_target(target),
            perturbations_per_eval=perturbations_per_eval,
        ),
        tokens=True,
    )


def feature_ablation(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    *,
    perturbations_per_eval: int = 16,
) -> np.ndarray:
    """Feature ablation: each input element replaced by the baseline alone; captum ``FeatureAblation``."""
    from captum.attr import FeatureAblation

    return _attribute(
        "feature_ablation",
        model,
        inputs,
        lambda m, x: FeatureAblation(m).attribute(
            x,
            baselines=_baselines(baseline, x),
            target=_target(target),
            feature_mask=_feature_mask(x),
            perturbations_per_eval=perturbations_per_eval,
        ),
        tokens=True,
    )


def feature_permutation(
    inputs,
    model: torch.nn.Module,
    target=None,
    seed: int = 0,
    *,
    perturbations_per_eval: int = 16,
) -> np.ndarray:
    """Permutation importance per example (Breiman 2001): each feature shuffled across the batch.

    captum ``FeaturePermutation``; needs at least two inputs; seeded with ``seed``.
    """
    from captum.attr import FeaturePermutation

    return _attribute(
        "feature_permutation",
        model,
        inputs,
        lambda m, x: FeaturePermutation(m).attribute(
            x,
            target=_target(target),
            feature_mask=_feature_mask(x),
            perturbations_per_eval=perturbations_per_eval,
        ),
        seed=seed,
        tokens=True,
    )


def shapley_value_sampling(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    seed: int = 0,
    budget: int = budgets.DEFAULT,
    groups=None,
    *,
    n_samples: int = 25,
    perturbations_per_eval: int = 16,
) -> np.ndarray:
    """Shapley values against the baseline by permutation sampling (Castro et al. 2009).

    captum ``ShapleyValueSampling`` with captum's default ``n_samples`` = 25 permutations, fewer
    when points x permutations x (G + 1) evaluations exceed the call's ``budget``; seeded.  The
    G features are the case's ``groups`` when it declares them (captum's ``feature_mask``), else
    every input element.
    """
    from captum.attr import ShapleyValueSampling

    def attribute(module: torch.nn.Module, x: torch.Tensor) -> Any:
        mask = _feature_mask(x, groups)
        return ShapleyValueSampling(module).attribute(
            x,
            baselines=_baselines(baseline, x),
            target=_target(target),
            feature_mask=mask,
            n_samples=budgets.samples(
                budget,
                len(x),
                preferred=n_samples,
                minimum=1,
                per_sample=int(mask.max()) + 2,
                method="shapley_value_sampling",
            ),
            perturbations_per_eval=perturbations_per_eval,
        )

    return _attribute("shapley_value_sampling", model, inputs, attribute, seed=seed, tokens=True)


def surrogate_samples(features: int) -> int:
    """Samples per point for captum's KernelShap and Lime: 2G + 200 for G features.

    captum draws, weighs and builds every sample in Python (~0.8 ms a sample on this project's
    2-core CI machine, against ~0.05 ms for shap's KernelExplainer), so shap's 2G + 2048 would take
    minutes a case (200 rows x 2,068 samples ~ 330 s on a 10-feature unit).  2G + 200 still
    determines the surrogate's G + 1 coefficients several times over; captum's own defaults (25 and
    50 samples) do not for G > 24.
    """
    return 2 * features + 200


def captum_kernel_shap(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    seed: int = 0,
    budget: int = budgets.DEFAULT,
    groups=None,
    *,
    n_samples: int | None = None,
    perturbations_per_eval: int = 64,
) -> np.ndarray:
    """KernelSHAP (Lundberg & Lee 2017) against the baseline; captum ``KernelShap``.

    ``n_samples`` defaults to :func:`surrogate_samples` (captum's is 25), cut to the call's
    ``budget`` of model evaluations (at least G + 1); seeded.  The G features are the case's
    ``groups`` when it declares them (captum's ``feature_mask``), else every input element.
    """
    from captum.attr import KernelShap

    return _attribute(
        "captum_kernel_shap",
        model,
        inputs,
        lambda m, x: _surrogate(
            KernelShap(m),
            "captum_kernel_shap",
            x,
            baseline,
            target,
            budget,
            groups,
            n_samples,
            perturbations_per_eval,
        ),
        seed=seed,
        tokens=True,
    )


def captum_lime(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    seed: int = 0,
    budget: int = budgets.DEFAULT,
    groups=None,
    *,
    n_samples: int | None = None,
    perturbations_per_eval: int = 64,
) -> np.ndarray:
    """LIME (Ribeiro et al. 2016) with captum's defaults (Lasso alpha=0.01, cosine-distance kernel).

    Removed features take the baseline value; ``n_samples`` defaults to :func:`surrogate_samples`
    (captum's is 50), cut to the call's ``budget`` of model evaluations (at least G + 1); seeded.
    The G features are the case's ``groups`` when it declares them, else every input element.
    """
    from captum.attr import Lime

    return _attribute(
        "captum_lime",
        model,
        inputs,
        lambda m, x: _surrogate(
            Lime(m),
            "captum_lime",
            x,
            baseline,
            target,
            budget,
            groups,
            n_samples,
            perturbations_per_eval,
        ),
        seed=seed,
        tokens=True,
    )


def _lrp(method: str, inputs, model, target, make_rule) -> np.ndarray:
    """captum ``LRP`` with ``make_rule()`` on every weighted layer (Linear, Conv2d).

    Other supported layers keep captum's default rule; a layer type captum's LRP has no rule for
    makes the method not applicable.  The layers' own ``rule`` attributes are restored afterwards
    (captum deletes them).  Captum's LRP sees only modules: a functional non-linearity in
    ``forward`` is invisible to it.
    """
    import torch
    from captum.attr import LRP
    from captum.attr._core.lrp import SUPPORTED_LAYERS_WITH_RULES, SUPPORTED_NON_LINEAR_LAYERS

    module = _torch_model(method, model)
    root = module if any(True for _ in module.children()) else torch.nn.Sequential(module)
    leaves = [m for m in root.modules() if not any(True for _ in m.children())]
    unsupported = sorted(
        {
            type(m).__name__
            for m in leaves
            if not hasattr(m, "rule")
            and type(m) not in SUPPORTED_LAYERS_WITH_RULES
            and type(m) not in SUPPORTED_NON_LINEAR_LAYERS
        }
    )
    if unsupported:
        raise NotApplicable(f"{method}: captum's LRP has no rule for {', '.join(unsupported)} layers")
    weighted = [m for m in leaves if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]
    missing = object()
    saved: list[Any] = [getattr(m, "rule", missing) for m in weighted]  # captum's rule objects, or missing
    try:
        for m in weighted:
            m.rule = make_rule()
        return _attribute(
            method, module, inputs, lambda m, x: LRP(root).attribute(x, target=_target(target)), grad=True
        )
    finally:
        for m, rule in zip(weighted, saved):
            if rule is missing:
                if hasattr(m, "rule"):
                    del m.rule
            else:
                m.rule = rule


def lrp_z(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """LRP-z (Bach et al. 2015): ``EpsilonRule(epsilon=1e-9)`` (epsilon only guards 0/0) on every layer.

    On ReLU networks it equals Input x Gradient (Ancona et al. 2018); biases make it lose
    conservation (sum of relevances != output), not that equality.
    """
    from captum.attr._utils.lrp_rules import EpsilonRule

    return _lrp("lrp_z", inputs, model, target, lambda: EpsilonRule(epsilon=1e-9))


def lrp_alpha1beta0(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """LRP-alpha1beta0 (Bach et al. 2015; Montavon et al. 2017): captum ``Alpha1_Beta0_Rule`` everywhere.

    Captum implements it by clamping weights to w+ (the z+ rule), which equals alpha1beta0 for
    non-negative layer inputs (after a ReLU) but not on a first layer fed signed inputs.  Every
    relevance takes the sign of the output (Mamalakis et al. 2022, section 4).
    """
    from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule

    return _lrp("lrp_alpha1beta0", inputs, model, target, Alpha1_Beta0_Rule)


def _import_captum() -> None:
    """Import captum before the first call (``prepare``: once per worker process), so that no
    call's time includes its half second of imports."""
    import captum.attr  # noqa: F401


for _explainer in (
    saliency,
    input_x_gradient,
    integrated_gradients,
    smoothgrad,
    deeplift,
    guided_backprop,
    guided_gradcam_first_conv,
    guided_gradcam_last_conv,
    occlusion,
    feature_ablation,
    feature_permutation,
    shapley_value_sampling,
    captum_kernel_shap,
    captum_lime,
    lrp_z,
    lrp_alpha1beta0,
):
    _explainer.prepare = _import_captum  # type: ignore[attr-defined]  # the contract's function attribute
