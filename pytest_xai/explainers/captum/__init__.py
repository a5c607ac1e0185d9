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

from pytest_xai.explainers.captum.gradients import (
    SMOOTHGRAD_NOISE,
    deeplift,
    guided_backprop,
    guided_gradcam_first_conv,
    guided_gradcam_last_conv,
    input_x_gradient,
    integrated_gradients,
    lrp_alpha1beta0,
    lrp_z,
    saliency,
    smoothgrad,
)
from pytest_xai.explainers.captum.perturbation import (
    captum_kernel_shap,
    captum_lime,
    feature_ablation,
    feature_permutation,
    occlusion,
    shapley_value_sampling,
    surrogate_samples,
)
from pytest_xai.explainers.captum.recipe import import_captum

__all__ = [
    "SMOOTHGRAD_NOISE",
    "captum_kernel_shap",
    "captum_lime",
    "deeplift",
    "feature_ablation",
    "feature_permutation",
    "guided_backprop",
    "guided_gradcam_first_conv",
    "guided_gradcam_last_conv",
    "input_x_gradient",
    "integrated_gradients",
    "lrp_alpha1beta0",
    "lrp_z",
    "occlusion",
    "saliency",
    "shapley_value_sampling",
    "smoothgrad",
    "surrogate_samples",
]

for _explainer in (
    saliency,
    input_x_gradient,
    integrated_gradients,
    smoothgrad,
    deeplift,
    guided_backprop,
    guided_gradcam_first_conv,
    guided_gradcam_last_conv,
    lrp_z,
    lrp_alpha1beta0,
    occlusion,
    feature_ablation,
    feature_permutation,
    shapley_value_sampling,
    captum_kernel_shap,
    captum_lime,
):
    _explainer.prepare = import_captum  # type: ignore[attr-defined]  # the contract's function attribute
