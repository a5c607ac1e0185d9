"""KernelSHAP, LIME and occlusion on image-shaped inputs, over squares, pixels or declared feature groups."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_xai import NotApplicable
from pytest_xai.explainers import baselines, grouped

pytest.importorskip("shap")
pytest.importorskip("lime")

QUADRANTS = np.kron(np.arange(4).reshape(2, 2), np.ones((2, 2), dtype=int))  # 4x4 image, 4 groups
WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0])


def additive(images):
    """f(x) = sum_g w_g * (sum of the pixels of quadrant g, over both channels): additive in the groups."""
    x = np.asarray(images, dtype=float)
    sums = np.stack([x[..., QUADRANTS == g].sum(axis=-1) for g in range(4)], axis=-1)
    sums = sums.reshape(len(x), -1, 4).sum(axis=1)
    score = sums @ WEIGHTS
    return np.stack([-score, score], axis=1)  # two "classes", target 1 is the score


@pytest.fixture
def images():
    return np.random.default_rng(0).uniform(0, 1, size=(3, 2, 4, 4))


def exact(images, baseline):
    """The Shapley value of quadrant g against the baseline is w_g * sum over g of (x - baseline)."""
    diff = images - baseline
    per_group = np.stack([diff[:, :, QUADRANTS == g].sum(axis=(1, 2)) for g in range(4)], axis=1) * WEIGHTS
    return per_group[:, np.broadcast_to(QUADRANTS, (2, 4, 4))]


def test_group_ids_default_to_one_per_pixel_across_channels():
    ids = grouped.group_ids(np.zeros((1, 12, 8, 8)), None)
    assert ids.shape == (12, 8, 8) and (ids == ids[:1]).all() and ids[0, 2, 4] == 20
    assert grouped.group_ids(np.zeros((1, 32, 32)), None).max() == 1023
    with pytest.raises(NotApplicable, match="not images"):
        grouped.group_ids(np.zeros((1, 2, 2, 2, 2)), None)
    with pytest.raises(ValueError, match=r"groups must be an int array shaped like one input \(2, 4, 4\)"):
        grouped.group_ids(np.zeros((1, 2, 4, 4)), QUADRANTS)
    with pytest.raises(ValueError, match="every id 0..G-1"):
        grouped.group_ids(np.zeros((1, 4, 4)), QUADRANTS * 2)


@pytest.mark.parametrize("baseline", [None, 0.25])
def test_kernel_shap_over_groups_is_exact_on_a_model_additive_in_the_groups(images, baseline):
    groups = np.broadcast_to(QUADRANTS, (2, 4, 4))
    b = None if baseline is None else np.full((2, 4, 4), baseline)
    out = grouped.kernel_shap(images, additive, b, 1, 0, 1_000_000, groups)
    np.testing.assert_allclose(out, exact(images, 0.0 if b is None else b), atol=1e-8)


def test_feature_occlusion_over_groups_is_exact_on_a_model_additive_in_the_groups(images):
    groups = np.broadcast_to(QUADRANTS, (2, 4, 4))
    out = baselines.feature_occlusion(images, additive, np.zeros((2, 4, 4)), 1, groups=groups)
    np.testing.assert_allclose(out, exact(images, 0.0), atol=1e-10)


def test_lime_image_over_groups_recovers_the_group_effects(images):
    """LIME's local linear model on group indicators of an additive model: its weights are the
    group effects, up to the shrinkage of its ridge fit (alpha = 1 over 1,000 samples)."""
    groups = np.broadcast_to(QUADRANTS, (2, 4, 4))
    out = grouped.lime_image(images, additive, np.zeros((2, 4, 4)), 1, 0, 1_000_000, groups)
    np.testing.assert_allclose(out, exact(images, 0.0), rtol=0.05, atol=0.02)
    again = grouped.lime_image(images, additive, np.zeros((2, 4, 4)), 1, 0, 1_000_000, groups)
    np.testing.assert_array_equal(out, again)


def test_lime_image_on_two_dimensional_images_and_per_channel_groups_are_refused(images):
    out = grouped.lime_image(
        images[:, 0], lambda x: additive(np.stack([x, 0 * x], 1)), None, 1, 0, 1_000_000, QUADRANTS
    )
    assert out.shape == (3, 4, 4)
    per_channel = np.stack([QUADRANTS, QUADRANTS + 4])
    with pytest.raises(NotApplicable, match="segments are spatial"):
        grouped.lime_image(images, additive, None, 1, 0, 1_000_000, per_channel)


def test_a_budget_below_g_plus_one_samples_per_point_is_not_applicable(images):
    with pytest.raises(
        NotApplicable, match=r"KernelSHAP needs .* over the budget of 10 \(raise it with --xai-budget\)"
    ):
        grouped.kernel_shap(images, additive, None, 1, 0, 10, np.broadcast_to(QUADRANTS, (2, 4, 4)))


def test_shap_kernel_and_lime_tabular_take_the_image_path_with_the_case_groups(images):
    """The reference adapters dispatch image-shaped inputs to the grouped versions, with the
    contract's baseline and groups; no background is needed there."""
    from pytest_xai.explainers import lime, shap

    groups = np.broadcast_to(QUADRANTS, (2, 4, 4))
    zeros = np.zeros((2, 4, 4))
    out = shap.shap_kernel(images, additive, None, 1, 0, budget=1_000_000, baseline=zeros, groups=groups)
    np.testing.assert_allclose(out, exact(images, 0.0), atol=1e-8)
    out = lime.lime_tabular(images, additive, None, 1, None, 0, budget=1_000_000, baseline=zeros, groups=groups)
    np.testing.assert_allclose(out, exact(images, 0.0), rtol=0.05, atol=0.02)
    per_pixel = shap.shap_kernel(images[:1], additive, None, 1, 0, budget=1_000_000)
    assert per_pixel.shape == (1, 2, 4, 4) and (per_pixel[:, 0] == per_pixel[:, 1]).all()


@pytest.mark.parametrize("name", ["kernel_shap", "lime_image"])
@pytest.mark.parametrize("budget", [200, 20_000])
def test_grouped_explainers_spend_at_most_their_budget(images, name, budget):
    """Rows passed to the model over the call, counted, stay within the budget (16 groups here, so
    200 evaluations for 3 points cut the library's sample count, 20,000 do not)."""
    rows = []

    def counting(x):
        rows.append(len(x))
        return additive(x)

    groups = np.broadcast_to(np.arange(16).reshape(4, 4), (2, 4, 4))
    getattr(grouped, name)(images, counting, None, 1, 0, budget, groups)
    assert sum(rows) <= budget
    assert sum(rows) >= (180 if budget == 200 else 3 * 1000)  # cut to the budget, else the library default
