"""The captum reference explainers on small torch models whose attributions are known exactly."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("captum")

import pytest_xai.explainers
from pytest_xai import NotApplicable
from pytest_xai.explainers import captum as explainers

# Every captum explainer the package registers (``pytest_xai.explainers``): one added there is tested here.
METHODS = [name for name, module in pytest_xai.explainers._WHERE.items() if module == "captum"]
# Methods whose attribution of a linear model f(x) = w.x + b is exactly w * (x - baseline).
EXACT_ON_LINEAR = [
    "integrated_gradients",
    "deeplift",
    "occlusion",
    "feature_ablation",
    "shapley_value_sampling",
    "captum_kernel_shap",
]
GRADIENT_ON_LINEAR = ["saliency", "smoothgrad", "guided_backprop"]
WITHOUT_BASELINE = ["input_x_gradient", "lrp_z"]  # w * x


def call(name, **available):
    """Call an explainer the way the plugin does: only the arguments it asks for."""
    func = getattr(explainers, name)
    wanted = inspect.signature(func).parameters
    return func(**{k: v for k, v in available.items() if k in wanted})


class Squeezed(torch.nn.Module):
    """A regression model whose output has shape (n,) instead of (n, 1)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x).squeeze(-1)


@pytest.fixture
def linear():
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 1).eval()
    w = model.weight.detach().numpy()[0].astype(float)
    rng = np.random.default_rng(0)
    return model, w, rng.normal(size=(6, 5)), rng.normal(size=5)


@pytest.mark.parametrize("shape", ["(n,1)", "(n,)"])
@pytest.mark.parametrize("name", EXACT_ON_LINEAR)
def test_baseline_methods_are_exact_on_a_linear_regression(name, shape, linear):
    model, w, x, baseline = linear
    model = model if shape == "(n,1)" else Squeezed(model)
    out = call(name, inputs=x, model=model, target=None, baseline=baseline, seed=0)
    assert out.shape == x.shape and out.dtype == np.float64
    np.testing.assert_allclose(out, w * (x - baseline), atol=2e-5)


@pytest.mark.parametrize("shape", ["(n,1)", "(n,)"])
@pytest.mark.parametrize("name", WITHOUT_BASELINE)
def test_input_times_gradient_and_lrp_z_are_w_times_x_on_a_linear_regression(name, shape, linear):
    model, w, x, _ = linear
    model = model if shape == "(n,1)" else Squeezed(model)
    np.testing.assert_allclose(call(name, inputs=x, model=model, target=None), w * x, atol=1e-5)


@pytest.mark.parametrize("name", GRADIENT_ON_LINEAR)
def test_gradient_methods_return_the_weights_of_a_linear_regression(name, linear):
    model, w, x, _ = linear
    out = call(name, inputs=x, model=model, target=None, seed=0)
    np.testing.assert_allclose(out, np.broadcast_to(w, x.shape), atol=1e-5)


def test_a_zero_baseline_is_used_when_the_case_has_none(linear):
    model, w, x, _ = linear
    np.testing.assert_allclose(explainers.integrated_gradients(x, model, baseline=None), w * x, atol=1e-5)


@pytest.mark.parametrize(
    "name",
    [
        "integrated_gradients",
        "deeplift",
        "occlusion",
        "shapley_value_sampling",
        "input_x_gradient",
        "saliency",
        "lrp_z",
    ],
)
def test_classification_target_selects_the_class(name):
    torch.manual_seed(1)
    model = torch.nn.Linear(4, 3).eval()
    x = np.random.default_rng(1).normal(size=(5, 4))
    for target in (0, 2):
        w = model.weight.detach().numpy()[target].astype(float)
        expected = {"saliency": np.broadcast_to(w, x.shape)}.get(name, w * x)
        out = call(name, inputs=x, model=model, target=target, baseline=np.zeros(4), seed=0)
        np.testing.assert_allclose(out, expected, atol=2e-5)


@pytest.mark.parametrize("name", METHODS)
def test_a_model_that_is_not_a_torch_module_is_not_applicable(name):
    def plain_function(X):
        return np.asarray(X).sum(1)

    with pytest.raises(NotApplicable, match=rf"^{name} needs a torch.nn.Module; this case's model is .*function"):
        call(name, inputs=np.zeros((2, 3)), model=plain_function, target=None, baseline=None, seed=0)


def test_deeplift_keeps_captums_error_for_a_relu_module_used_twice():
    class ReusedRelu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = torch.nn.Linear(3, 4), torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
            self.relu = torch.nn.ReLU()

        def forward(self, x):
            return self.c(self.relu(self.b(self.relu(self.a(x)))))

    with pytest.raises(RuntimeError, match="being used more than once"):
        explainers.deeplift(np.ones((2, 3)), ReusedRelu().eval())


def relu_net(bias: bool):
    torch.manual_seed(3)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 8, bias=bias),
        torch.nn.ReLU(),
        torch.nn.Linear(8, 4, bias=bias),
        torch.nn.ReLU(),
        torch.nn.Linear(4, 1, bias=False),
    ).eval()


def test_lrp_z_equals_input_times_gradient_on_a_relu_network():
    """Ancona et al. 2018: on ReLU networks LRP-z (epsilon -> 0) is Input x Gradient, biases or not."""
    model, x = relu_net(bias=True), np.random.default_rng(3).normal(size=(7, 6))
    np.testing.assert_allclose(explainers.lrp_z(x, model), explainers.input_x_gradient(x, model), atol=1e-5)


def test_deeplift_is_complete_on_a_relu_network():
    """Sum of DeepLIFT attributions = f(x) - f(baseline) (summation-to-delta)."""
    model, rng = relu_net(bias=True), np.random.default_rng(4)
    x, baseline = rng.normal(size=(7, 6)), rng.normal(size=6)
    out = explainers.deeplift(x, model, baseline=baseline)
    with torch.no_grad():
        f = model(torch.as_tensor(np.vstack([x, baseline]), dtype=torch.float32)).numpy()[:, 0]
    np.testing.assert_allclose(out.sum(1), f[:-1] - f[-1], atol=1e-5)


def test_lrp_alpha1beta0_relevances_take_the_sign_of_the_output_and_sum_to_it():
    model, x = relu_net(bias=False), np.abs(np.random.default_rng(5).normal(size=(7, 6)))
    out = explainers.lrp_alpha1beta0(x, model)
    with torch.no_grad():
        f = model(torch.as_tensor(x, dtype=torch.float32)).numpy()[:, 0]
    np.testing.assert_allclose(out.sum(1), f, atol=1e-5)
    assert np.all(out * np.sign(f)[:, None] >= -1e-7)


def test_lrp_restores_the_layers_own_rules():
    from captum.attr._utils.lrp_rules import GammaRule

    model = relu_net(bias=True)
    own = GammaRule()
    model[0].rule = own
    explainers.lrp_z(np.ones((2, 6)), model)
    assert model[0].rule is own and not hasattr(model[2], "rule")


def test_lrp_on_a_bare_linear_layer(linear):
    model, w, x, _ = linear
    np.testing.assert_allclose(explainers.lrp_z(x, model), w * x, atol=1e-5)


def test_lrp_is_not_applicable_to_layers_captum_has_no_rule_for():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Sigmoid(), torch.nn.Linear(2, 1))
    with pytest.raises(NotApplicable, match="no rule for Sigmoid"):
        explainers.lrp_z(np.ones((2, 3)), model)


@pytest.mark.parametrize("name", ["smoothgrad", "feature_permutation", "shapley_value_sampling", "captum_lime"])
def test_stochastic_methods_are_seeded_and_leave_the_global_rng_alone(name):
    model, x = relu_net(bias=True), np.random.default_rng(6).normal(size=(5, 6))
    state = torch.get_rng_state()
    first = call(name, inputs=x, model=model, seed=1, n_samples=30)
    assert torch.equal(torch.get_rng_state(), state)
    np.testing.assert_array_equal(first, call(name, inputs=x, model=model, seed=1, n_samples=30))
    if name != "feature_permutation":  # its only randomness is the row shuffle; 5 rows may repeat it
        assert not np.array_equal(first, call(name, inputs=x, model=model, seed=2, n_samples=30))


def test_model_mode_and_thread_count_are_left_as_they_were():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    model.train()
    torch.set_num_threads(2)
    explainers.integrated_gradients(np.ones((2, 3)), model, n_steps=8)
    assert model.training and torch.get_num_threads() == 2
    model.eval()
    explainers.saliency(np.ones((2, 3)), model)
    assert not model.training


def test_inputs_are_not_mutated(linear):
    model, _, x, baseline = linear
    before = x.copy()
    for name in ("integrated_gradients", "occlusion", "smoothgrad"):
        call(name, inputs=x, model=model, baseline=baseline, seed=0)
    np.testing.assert_array_equal(x, before)


def test_a_baseline_of_the_wrong_shape_is_a_clear_error(linear):
    model, _, x, _ = linear
    with pytest.raises(ValueError, match=r"baseline of shape \(3,\) fits neither one input row \(5,\)"):
        explainers.integrated_gradients(x, model, baseline=np.zeros(3))


def test_occlusion_window_defaults_to_one_element_of_an_image():
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(2 * 3 * 3, 1)).eval()
    w = model[1].weight.detach().numpy().reshape(2, 3, 3).astype(float)
    x = np.random.default_rng(7).normal(size=(2, 2, 3, 3))
    np.testing.assert_allclose(explainers.occlusion(x, model), w * x, atol=1e-5)


@pytest.mark.parametrize("name", ["saliency", "integrated_gradients", "deeplift"])
def test_a_model_without_gradients_is_not_applicable(name):
    class Rounded(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 1)

        def forward(self, x):
            return self.linear(x).detach().round()

    with pytest.raises(NotApplicable, match="not differentiable with respect to its inputs"):
        getattr(explainers, name)(np.ones((2, 3)), Rounded())


def _two_conv_net(w):
    """1x1 identity conv, ReLU, a 2x2 stride-2 all-ones conv (4x4 -> 2x2 block sums), linear head w."""
    conv1 = torch.nn.Conv2d(1, 1, 1, bias=False)
    conv2 = torch.nn.Conv2d(1, 1, 2, stride=2, bias=False)
    head = torch.nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        conv1.weight.fill_(1.0)
        conv2.weight.fill_(1.0)
        head.weight.copy_(torch.as_tensor(w, dtype=torch.float32).reshape(1, 4))
    return torch.nn.Sequential(conv1, torch.nn.ReLU(), conv2, torch.nn.Flatten(), head).eval()


def test_guided_gradcam_on_the_first_and_last_conv_by_hand():
    """Selvaraju et al. 2019 on a net small enough to do by hand.  With head weights w (2x2) and
    positive x (4x4): guided backprop is relu(w) on each pixel's block; Grad-CAM weights are mean(w)
    on both layers; the last conv's map is mean(w) * block sums (2x2), upsampled nearest to 4x4 (captum's
    interpolation), the first conv's map is mean(w) * x itself."""
    w = np.array([[1.0, -0.5], [2.0, 0.5]])
    x = np.random.default_rng(3).uniform(0.1, 1.0, size=(2, 1, 4, 4))
    model = _two_conv_net(w)
    block = np.kron(w, np.ones((2, 2)))  # each pixel's head weight
    guided = np.maximum(block, 0)
    sums = x.reshape(2, 1, 2, 2, 2, 2).sum(axis=(3, 5))
    cam_last = np.kron(np.maximum(w.mean() * sums, 0), np.ones((2, 2)))
    cam_first = np.maximum(w.mean() * x, 0)
    np.testing.assert_allclose(explainers.guided_gradcam_last_conv(x, model), guided * cam_last, rtol=1e-5)
    np.testing.assert_allclose(explainers.guided_gradcam_first_conv(x, model), guided * cam_first, rtol=1e-5)


def test_guided_gradcam_needs_a_conv_layer_and_image_inputs(linear):
    model, _, x, _ = linear
    with pytest.raises(NotApplicable, match="guided_gradcam_last_conv needs a model with a torch.nn.Conv2d"):
        explainers.guided_gradcam_last_conv(x, model)
    with pytest.raises(NotApplicable, match=r"needs image inputs \(n, channels, height, width\), got shape \(2, 16\)"):
        explainers.guided_gradcam_first_conv(np.ones((2, 16)), _two_conv_net(np.ones(4)))
