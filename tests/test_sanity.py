"""Sanity checks (Adebayo et al. 2018): the digits model, its randomised twins, and the calibrated
randomisation rule passing plain gradients and failing model-independent explainers."""

import numpy as np
import pytest
import torch
from captum.attr import Saliency
from scipy import ndimage

from pytest_xai import cases
from pytest_xai.cache import Cache
from pytest_xai.cases import sanity
from pytest_xai.checks import CHECKS

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("xai-sanity-cache")


@pytest.fixture(scope="module")
def case(cache_dir):
    info = cases.CASES["sanity_digits_mlp"]
    return info.build(info, seed=0, cache=Cache(cache_dir))


# -- explainers following the contract ----------------------------------------------------------


def saliency(inputs, model, target):
    x = torch.as_tensor(inputs).requires_grad_()
    return Saliency(model).attribute(x, target=list(map(int, target)), abs=False).detach().numpy()  # one class per row


def sobel_edges(inputs):
    """|Sobel(input)|: an edge detector that ignores the model (Adebayo et al. §4)."""
    return np.hypot(ndimage.sobel(inputs, axis=-2), ndimage.sobel(inputs, axis=-1))


def the_input(inputs):
    return inputs.copy()


def random(inputs, seed):
    return np.random.default_rng(seed).standard_normal(inputs.shape)


def zeros(inputs):
    return np.zeros_like(inputs)


def explain(explainer, case, seed=0):
    import inspect

    available = {"inputs": case.inputs.copy(), "model": case.torch_model, "target": case.target, "seed": seed}
    wanted = inspect.signature(explainer).parameters
    return explainer(**{k: v for k, v in available.items() if k in wanted})


def reexplainer(explainer, case, calls=None):
    """The re-explain callable the plugin provides: same inputs and target, another model."""

    def reexplain(model, *, other_seed=False):
        if calls is not None:
            calls.append(other_seed)
        return explain(explainer, sanity.with_model(case, model), seed=1 if other_seed else 0)

    return reexplain


def check(name, explainer, case, **kwargs):
    return CHECKS[name].func(explain(explainer, case), case, reexplain=reexplainer(explainer, case), **kwargs)


# -- the model and its variants ------------------------------------------------------------------


def test_trained_and_memorising_models(case):
    assert case.meta["test_accuracy"] >= 0.93
    assert case.meta["label_randomised_train_accuracy"] >= 0.95
    assert case.inputs.shape == (20, 1, 8, 8) and case.target.shape == (20,)
    assert sorted(np.bincount(case.target)) == [2] * 10  # two images of each digit
    assert (case.predict(case.inputs).argmax(axis=1) == case.target).all()  # each row's predicted class
    memoriser = sanity.with_model(case, case.meta["label_randomised"])
    assert (memoriser.predict(case.inputs).argmax(axis=1) == case.target).mean() < 0.5  # learned nothing real


def test_cascade_randomises_top_down_and_cumulatively(case):
    trained = dict(case.model.named_parameters())
    layers = case.meta["layers_top_down"]
    assert layers == [name for name, _ in sanity.parametrised_layers(case.model)] and len(layers) == 3
    for k, (layer, model) in enumerate(case.meta["cascade"]):
        assert layer == layers[k]
        for name, param in model.named_parameters():
            changed = not torch.equal(param, trained[name])
            assert changed is (name.split(".")[0] in layers[: k + 1]), (k, name)
    a, b = case.meta["random_models"]
    assert not torch.equal(a[-1].weight, b[-1].weight)
    assert not torch.equal(a[-1].weight, case.meta["cascade"][-1][1][-1].weight)


def test_models_come_back_identical_from_the_cache(case, cache_dir):
    assert len(list(cache_dir.glob("*.pt"))) == 2
    info = cases.CASES["sanity_digits_mlp"]
    again = info.build(info, seed=0, cache=Cache(cache_dir))
    for p, q in zip(case.model.parameters(), again.model.parameters()):
        assert torch.equal(p, q)
    np.testing.assert_array_equal(again.inputs, case.inputs)


# -- the checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["model_randomisation", "data_randomisation"])
def test_plain_gradients_pass(case, name):
    result = check(name, saliency, case)
    assert result.passed, result.detail
    assert result.params["ceiling"] == 1.0 and result.params["floor"] < 0.2
    assert result.params["abs_spearman"] < result.threshold
    assert isinstance(result.params["ssim"], float) and isinstance(result.params["hog"], float)
    assert CHECKS[name].marker == "xai_sanity"


@pytest.mark.parametrize("explainer", [sobel_edges, the_input, random, zeros])
@pytest.mark.parametrize("name", ["model_randomisation", "data_randomisation"])
def test_model_independent_explainers_fail(case, name, explainer):
    result = check(name, explainer, case)
    assert not result.passed and result.value == 0.0
    message = "undefined" if explainer is zeros else "does not depend on the model"
    assert message in result.detail


def test_cascade_curve_and_reexplain_calls(case):
    calls = []
    original = explain(saliency, case)
    result = sanity.model_randomisation(original, case, reexplain=reexplainer(saliency, case, calls))
    curve = result.params["curve"]
    assert [point["layer"] for point in curve] == case.meta["layers_top_down"]
    assert all(point["abs_spearman"] < 0.5 for point in curve)
    assert calls == [False, False, False, False, False, True]  # 3 cascade steps, 2 floor, 1 ceiling


def test_midpoint_is_the_deciding_threshold(case):
    """A midpoint of 0 demands similarity at or below the random-model floor."""
    strict = check("model_randomisation", saliency, case, midpoint=0.0)
    assert strict.threshold == pytest.approx(strict.params["floor"])


def test_reexplain_must_be_callable_and_shapes_must_match(case):
    with pytest.raises(TypeError, match="reexplain must be a callable"):
        sanity.model_randomisation(explain(saliency, case), case, reexplain=None)
    with pytest.raises(ValueError, match=r"attributions have shape \(20, 64\)"):
        sanity.data_randomisation(np.zeros((20, 64)), case, reexplain=lambda model, **kw: None)


def test_image_metrics_are_not_applicable_to_tabular_attributions():
    out = sanity.image_similarities(np.ones((3, 5)), np.ones((3, 5)))
    assert out["ssim"].startswith("not applicable") and out["hog"].startswith("not applicable")


@pytest.mark.parametrize("name", ["model_randomisation", "data_randomisation"])
def test_zoo_members_that_explain_nothing_fail_and_corrupted_saliency_is_declared(case, name):
    """The degenerate-explainer zoo through the re-explain API: members that explain nothing fail;
    the corrupted members keep saliency's dependence on the parameters and are declared."""
    from pytest_xai.explainers import degenerate
    from pytest_xai.metrics import outputs

    for member in degenerate.MEMBERS:

        def explainer(inputs, model, target, seed, member=member):
            reference = saliency(inputs, model, target)
            predict = sanity.with_model(case, model).predict
            return degenerate.apply(member, reference, inputs, outputs(predict, inputs, target), case.background, seed)

        result = check(name, explainer, case)
        if member in degenerate.NOTHING:
            assert not result.passed, (member, result.detail)
        else:
            assert CHECKS[name].exemption(member, case.name), member
