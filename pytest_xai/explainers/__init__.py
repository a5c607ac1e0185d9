"""Reference explainers obeying the contract: comparison rows and positive/negative controls.

Use them by spec, e.g. ``pytest --xai-explainer=pytest_xai.explainers:shap_kernel``.  Each lives in
a module that imports its library (shap, lime, captum) only when the explainer is first looked up,
so a missing optional dependency only affects the explainers that need it.

The degenerate-explainer zoo (:mod:`pytest_xai.explainers.degenerate`, explainers that explain
nothing or explain wrongly) is exposed with the prefix ``zoo_``, e.g.
``--xai-explainer=pytest_xai.explainers:zoo_sign_flipped``, so its names never clash with the
reference explainers; ``pytest_xai.explainers.degenerate`` is the module itself.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "random": "baselines",
    "exact_shapley": "baselines",
    "feature_occlusion": "baselines",
    "archdetect": "baselines",
    "random_interactions": "baselines",
    "shap_kernel": "shap",
    "shap_tree": "shap",
    "shap_tree_path_dependent": "shap",
    "shap_exact": "shap",
    "shap_permutation": "shap",
    "shap_partition": "shap",
    "lime_tabular": "lime",
    "saabas": "trees",
    **dict.fromkeys(
        [
            "saliency",
            "input_x_gradient",
            "integrated_gradients",
            "smoothgrad",
            "deeplift",
            "guided_backprop",
            "guided_gradcam_first_conv",
            "guided_gradcam_last_conv",
            "occlusion",
            "feature_ablation",
            "feature_permutation",
            "shapley_value_sampling",
            "captum_kernel_shap",
            "captum_lime",
            "lrp_z",
            "lrp_alpha1beta0",
        ],
        "captum",
    ),
}
#: The explainers of generated text (module ``llm``): captum's LLM attribution and shap's text explainer,
#: then the language-model zoo, each wrong in a published way.
LLM_EXPLAINERS = ("llm_feature_ablation", "llm_shapley_sampling", "llm_integrated_gradients", "llm_shap_text")
LLM_ZOO = (
    "llm_zoo_attention",
    "llm_zoo_ig_zero_embeddings",
    "llm_zoo_wrong_target",
    "llm_zoo_position",
    "llm_zoo_input_ids",
)
_WHERE.update(dict.fromkeys(LLM_EXPLAINERS + LLM_ZOO, "llm"))
#: The library a module of ``_WHERE`` imports at its top; the others import theirs inside the calls.
_IMPORTS_AT_TOP = {"shap": "shap", "lime": "lime"}
#: The explainers whose ``prepare`` only compiles (shap's numba functions, about 7 CPU s): the zygote
#: runs it once before its first fork, so that no worker it forks pays it again.
_COMPILES = dict.fromkeys(
    ("shap_exact", "shap_permutation", "shap_partition"), "pytest_xai.explainers.shap:compile_numba"
)
#: The zoo members (pytest_xai.explainers.degenerate.MEMBERS), exposed as zoo_<member>.
ZOO_MEMBERS = (
    "zeros",
    "constant",
    "noise",
    "input_itself",
    "output_copied",
    "input_minus_mean",
    "sign_flipped",
    "scaled_negative",
    "abs_of_exact",
    "row_offset",
    "swapped",
    "shuffled_rows",
    "noisy_10",
    "noisy_30",
    "noisy_100",
    "one_row_in_ten",
)
_ZOO_PREFIX = "zoo_"
__all__ = ["degenerate"]  # built in steps a linter can follow: the module, the lazy names, the zoo
__all__ += list(_WHERE)
__all__ += [_ZOO_PREFIX + m for m in ZOO_MEMBERS]


def __getattr__(name: str):
    if name == "degenerate":
        return importlib.import_module(f"{__name__}.degenerate")
    if name.startswith(_ZOO_PREFIX) and name[len(_ZOO_PREFIX) :] in ZOO_MEMBERS:
        return getattr(importlib.import_module(f"{__name__}.degenerate"), name[len(_ZOO_PREFIX) :])
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


def library_of(name: str) -> str | None:
    """The library that looking up the explainer ``name`` imports (None: none, or ``name`` is no
    explainer of this module), so that it can be checked without importing it."""
    return _IMPORTS_AT_TOP.get(_WHERE.get(name, ""))


def compiled_by(name: str) -> str | None:
    """``module:function`` compiling what the explainer ``name`` compiles in its ``prepare``, for the
    zygote to run before it forks (None: nothing to compile, or no explainer of this module)."""
    return _COMPILES.get(name)


def __dir__() -> list[str]:
    return sorted(__all__)
