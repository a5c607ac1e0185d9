"""captum's gradient methods (saliency, Input x Gradient, Integrated Gradients, SmoothGrad, DeepLift,
Guided Backprop, Guided Grad-CAM) and LRP as pytest-xai explainers; conventions in
:mod:`pytest_xai.explainers.captum`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_xai.errors import NotApplicable
from pytest_xai.explainers.captum import recipe

if TYPE_CHECKING:  # torch is imported lazily, inside the calls; the annotations stay strings at run time
    import torch

SMOOTHGRAD_NOISE = 0.15  # fraction of the input range; Smilkov et al. 2017 suggest 10-20 %


def saliency(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """Signed gradient dF/dx (Simonyan et al. 2014); captum ``Saliency(abs=False)``.

    The signed gradient is the paper's "Gradient" (Mamalakis et al. 2022): a sensitivity, not a
    contribution.
    """
    from captum.attr import Saliency

    return recipe.attribute(
        "saliency",
        model,
        inputs,
        lambda m, x: Saliency(m).attribute(x, target=recipe.target_of(target), abs=False),
        grad=True,
    )


def input_x_gradient(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """x * dF/dx (Shrikumar et al. 2016); captum ``InputXGradient``."""
    from captum.attr import InputXGradient

    return recipe.attribute(
        "input_x_gradient",
        model,
        inputs,
        lambda m, x: InputXGradient(m).attribute(x, target=recipe.target_of(target)),
        grad=True,
    )


def integrated_gradients(
    inputs,
    model: torch.nn.Module,
    target=None,
    baseline=None,
    output=None,
    pad_token_id=None,
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
        embeddings = recipe.token_embeddings(module)
        explainer = IntegratedGradients(module) if embeddings is None else LayerIntegratedGradients(module, embeddings)
        out = explainer.attribute(
            x,
            baselines=recipe.baselines(baseline, x),
            target=recipe.target_of(target),
            n_steps=n_steps,
            method=method,
            internal_batch_size=internal_batch_size,
        )
        return out if embeddings is None else out.sum(dim=-1)

    return recipe.attribute(
        "integrated_gradients",
        model,
        inputs,
        attribute,
        grad=True,
        tokens=True,
        output=output,
        pad_token_id=pad_token_id,
    )


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

    return recipe.attribute(
        "smoothgrad",
        model,
        inputs,
        lambda m, x: NoiseTunnel(Saliency(m)).attribute(
            x,
            nt_type="smoothgrad",
            nt_samples=n_samples,
            stdevs=float(noise * (x.max() - x.min()).detach()),
            target=recipe.target_of(target),
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

    return recipe.attribute(
        "deeplift",
        model,
        inputs,
        lambda m, x: DeepLift(m).attribute(x, baselines=recipe.baselines(baseline, x), target=recipe.target_of(target)),
        grad=True,
    )


def guided_backprop(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """Guided backpropagation (Springenberg et al. 2015); captum ``GuidedBackprop``."""
    from captum.attr import GuidedBackprop

    return recipe.attribute(
        "guided_backprop",
        model,
        inputs,
        lambda m, x: GuidedBackprop(m).attribute(x, target=recipe.target_of(target)),
        grad=True,
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

    module = recipe.torch_model(method, model)
    convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    if not convs:
        raise NotApplicable(f"{method} needs a model with a torch.nn.Conv2d layer; this one has none")
    if np.ndim(inputs) != 4:
        raise NotApplicable(f"{method} needs image inputs (n, channels, height, width), got shape {np.shape(inputs)}")
    return recipe.attribute(
        method,
        module,
        inputs,
        lambda m, x: GuidedGradCam(m, convs[which]).attribute(x, target=recipe.target_of(target)),
        grad=True,
    )


def guided_gradcam_first_conv(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """Guided Grad-CAM on the first convolution layer, as Mücke & Pfahler 2022 (§3) ran it."""
    return _guided_gradcam("guided_gradcam_first_conv", inputs, model, target, 0)


def guided_gradcam_last_conv(inputs, model: torch.nn.Module, target=None) -> np.ndarray:
    """Guided Grad-CAM on the last convolution layer (Selvaraju et al. 2019's recommended use;
    Mücke & Pfahler 2022 report both)."""
    return _guided_gradcam("guided_gradcam_last_conv", inputs, model, target, -1)


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

    module = recipe.torch_model(method, model)
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
        return recipe.attribute(
            method, module, inputs, lambda m, x: LRP(root).attribute(x, target=recipe.target_of(target)), grad=True
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


smoothgrad.estimator = False  # type: ignore[attr-defined]  # samples noise, but estimates no Shapley value
