"""pyroi.MultiScaleRoIAlign against torchvision.ops.MultiScaleRoIAlign, and its level rule."""

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import pyroi

LEVEL_SIZES = [("0", 64), ("1", 32), ("2", 16), ("3", 8)]


def pyramid(rng, dtype, batch=2, channels=3, extra=True):
    features = OrderedDict(
        (name, rng.standard_normal((batch, channels, size, size + 3)).astype(dtype))
        for name, size in LEVEL_SIZES)
    if extra:  # torchvision's FPN also returns a "pool" map that the pooler filters out
        features["pool"] = rng.standard_normal((batch, channels, 4, 5)).astype(dtype)
    return features


def random_boxes(rng, dtype, count):
    corner = rng.uniform(-20, 240, (count, 2))
    side = np.exp(rng.uniform(np.log(2), np.log(600), (count, 2)))
    boxes = np.concatenate([corner, corner + side], axis=1)
    boxes[:4] = [[10, 10, 10, 30],      # zero area: lowest level
                 [50, 50, 40, 60],      # inverted: no level, zero row
                 [0, 0, 112, 112],      # exactly on a level boundary
                 [5, 5, 5 + 224, 5 + 224]]
    return boxes.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("output_size,sampling_ratio", [(7, 2), ((3, 5), 0), (2, -1)])
def test_matches_torchvision_forward_and_gradients(tv, dtype, output_size, sampling_ratio):
    torch, ops = tv.torch, tv.ops
    rng = np.random.default_rng(3)
    features = pyramid(rng, dtype)
    boxes = [random_boxes(rng, dtype, 30), random_boxes(rng, dtype, 17)]
    shapes = [(256, 270), (250, 256)]
    names = ["0", "1", "2", "3"]
    theirs = ops.MultiScaleRoIAlign(names, output_size, sampling_ratio)
    ours = pyroi.MultiScaleRoIAlign(names, output_size, sampling_ratio)
    tensors = OrderedDict((k, torch.from_numpy(v.copy()).requires_grad_()) for k, v in
                          features.items())
    expected = theirs(tensors, [torch.from_numpy(b.copy()) for b in boxes], shapes)
    got = ours(features, boxes, shapes)
    assert ours.scales == theirs.scales
    if dtype == np.float32:
        np.testing.assert_array_equal(got, expected.detach().numpy())
    else:
        np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert not got[1].any()  # the inverted box of image 0 has no level
    grad = rng.standard_normal(got.shape).astype(dtype)
    expected.backward(torch.from_numpy(grad))
    gradients = ours.backward(grad)
    assert sorted(gradients) == names
    for name in names:
        reference = tensors[name].grad
        reference = np.zeros_like(features[name]) if reference is None else reference.numpy()
        np.testing.assert_allclose(gradients[name], reference, rtol=1e-6, atol=1e-7)
        if dtype == np.float32:
            np.testing.assert_array_equal(gradients[name], reference)


def test_level_boundaries():
    # docs/semantics.md §8.1 (float32, levels 2..5): sides 111.9999 -> 0, 112 -> 1, 223.99 -> 1,
    # 224 -> 2, 447.9 -> 2, 448 -> 3; zero area -> 0; negative area -> -1
    sides = np.array([111.9999, 112.0, 223.99, 224.0, 447.9, 448.0, 0.0, 2000.0], np.float32)
    boxes = np.stack([np.zeros_like(sides), np.zeros_like(sides), sides, sides], axis=1)
    boxes = np.concatenate([boxes, np.array([[5, 5, 3, 9]], np.float32)])
    levels = np.empty(len(boxes), np.int64)
    pyroi._core.fpn_levels(boxes, levels, 2, 5, 224.0, 4.0, 1e-6)
    assert levels.tolist() == [0, 1, 1, 2, 2, 3, 0, 3, -1]


def test_single_level_and_scale_caching():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 20, 24)).astype(np.float32)
    boxes = [rng.uniform(0, 70, (5, 4)).astype(np.float32)]
    boxes[0][:, 2:] += boxes[0][:, :2]
    pooler = pyroi.MultiScaleRoIAlign(["a"], 3, 2)
    got = pooler({"a": x, "b": x}, boxes, [(80, 96)])
    assert pooler.scales == [0.25]
    expected = pyroi.roi_align(x, boxes, 3, 0.25, 2, False)
    np.testing.assert_array_equal(got, expected)
    # later calls reuse the first call's scales, whatever their image sizes
    np.testing.assert_array_equal(pooler({"a": x}, boxes, [(8, 8)]), expected)


def test_training_mode_and_lda_coeff():
    rng = np.random.default_rng(1)
    features = pyramid(rng, np.float64, batch=1, extra=False)
    boxes = [random_boxes(rng, np.float64, 12)]
    pooler = pyroi.MultiScaleRoIAlign(["0", "1", "2", "3"], 2, 2)
    out = pooler(features, boxes, [(256, 256)])
    grad = rng.standard_normal(out.shape)
    plain = pooler.backward(grad)
    scaled = pooler.backward(grad, lda_coeff=-0.5)
    for name in plain:
        np.testing.assert_allclose(scaled[name], -0.5 * plain[name], rtol=0, atol=0)
    # adjoint identity across the pyramid
    lhs = float((out * grad).sum())
    rhs = sum(float((features[n] * plain[n]).sum()) for n in plain)
    assert abs(lhs - rhs) <= 1e-10 * (1 + abs(lhs))
    pooler.training = False
    pooler(features, boxes, [(256, 256)])
    with pytest.raises(pyroi.PyroiError, match="training"):
        pooler.backward(grad)


def test_errors():
    rng = np.random.default_rng(2)
    features = pyramid(rng, np.float32, batch=1)
    boxes = [random_boxes(rng, np.float32, 5)]
    with pytest.raises(pyroi.ArgumentTypeError, match="featmap_names"):
        pyroi.MultiScaleRoIAlign("0", 7, 2)
    pooler = pyroi.MultiScaleRoIAlign(["0", "1"], 7, 2)
    with pytest.raises(pyroi.InvalidArgumentError, match="featmap_names"):
        pooler({"x": features["0"]}, boxes, [(256, 256)])
    with pytest.raises(pyroi.InvalidArgumentError, match="image_shapes"):
        pooler(features, boxes, [])
    with pytest.raises(pyroi.DTypeError, match="boxes"):
        pooler(features, [boxes[0].astype(np.float64)], [(256, 256)])
    with pytest.raises(pyroi.BatchIndexError):
        pooler(features, boxes + boxes, [(256, 256)] * 2)  # two box lists, one image
    mixed = dict(features)
    mixed["1"] = mixed["1"].astype(np.float64)
    with pytest.raises(pyroi.DTypeError, match="features"):
        pooler(mixed, boxes, [(256, 256)])
    pooler(features, boxes, [(256, 256)])
    with pytest.raises(pyroi.ShapeError, match="grad_output"):
        pooler.backward(np.zeros((2, 3, 7, 7), np.float32))
    with pytest.raises(pyroi.InvalidArgumentError, match="lda_coeff"):
        pooler.backward(np.zeros((5, 3, 7, 7), np.float32), lda_coeff=float("nan"))


def test_a_pyramid_is_pooled_by_one_call_each_way(monkeypatch):
    """Several levels: one C call forward and one backward (pyroi_roi_align_levels_*), no
    per-level roi_align with its row copies."""
    def refuse(*args, **kwargs):
        raise AssertionError("pooled level by level")

    rng = np.random.default_rng(4)
    features = pyramid(rng, np.float32, extra=False)
    boxes = [random_boxes(rng, np.float32, 9), random_boxes(rng, np.float32, 4)]
    pooler = pyroi.MultiScaleRoIAlign(["0", "1", "2", "3"], 3, 2)
    expected = pooler(features, boxes, [(256, 256)] * 2)
    gradients = pooler.backward(np.ones_like(expected))
    monkeypatch.setattr(pyroi.layers, "roi_align", refuse)
    monkeypatch.setattr(pyroi.layers, "roi_align_backward", refuse)
    np.testing.assert_array_equal(pooler(features, boxes, [(256, 256)] * 2), expected)
    for name, gradient in pooler.backward(np.ones_like(expected)).items():
        np.testing.assert_array_equal(gradient, gradients[name])


# Pyramids whose maps are not one per level, by the names of LEVEL_SIZES (scales 1/4 .. 1/32 on
# 256 px images): torchvision pools level min_level + i from the i-th map, leaves the boxes of
# a level with no map at its position zero, and gives maps past the last level no box.
UNEVEN = {
    "skips one level": ["0", "2", "3"],     # 1/4, 1/16, 1/32: levels 2..5, three maps
    "skips two levels": ["0", "3"],         # 1/4, 1/32: levels 2..5, two maps
    "repeats a level": ["0", "0b", "1"],    # 1/4, 1/4, 1/8: levels 2..3, the last map unused
    "coarse to fine": ["2", "0"],           # 1/16, 1/4: levels 4..2, no level, all zero
}


def uneven_pyramid(rng, names, dtype):
    features = pyramid(rng, dtype, extra=False)
    features["0b"] = rng.standard_normal(features["0"].shape).astype(dtype)
    return OrderedDict((name, features[name]) for name in names)


@pytest.mark.parametrize("case", sorted(UNEVEN))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uneven_pyramids_are_pooled_as_torchvision_pools_them(case, dtype):
    torch = pytest.importorskip("torch")
    tv = pytest.importorskip("torchvision")
    rng = np.random.default_rng(5)
    names = UNEVEN[case]
    features = uneven_pyramid(rng, names, dtype)
    boxes = [random_boxes(rng, dtype, 40), random_boxes(rng, dtype, 30)]
    shapes = [(256, 256)] * 2
    pooler = pyroi.MultiScaleRoIAlign(names, 3, 2)
    with pytest.warns(pyroi.PyramidLevelsWarning, match="levels"):
        result = pooler(features, boxes, shapes)
    grad = rng.standard_normal(result.shape).astype(dtype)
    gradients = pooler.backward(grad)

    inputs = OrderedDict((name, torch.from_numpy(value).requires_grad_())
                         for name, value in features.items())
    reference = tv.ops.MultiScaleRoIAlign(names, 3, 2)
    expected = reference(inputs, [torch.from_numpy(b) for b in boxes], shapes)
    expected.backward(torch.from_numpy(grad))
    np.testing.assert_array_equal(result, expected.detach().numpy())
    assert pooler.scales == reference.scales
    for name in names:
        np.testing.assert_array_equal(gradients[name], inputs[name].grad.numpy(), err_msg=name)
    if case != "coarse to fine":  # some boxes pooled, and (but for a repeat) some zero rows
        assert np.abs(result).sum() > 0
    # a second call reuses the inferred levels, with no second warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(pooler(features, boxes, shapes), result)


def test_a_skipped_level_leaves_its_boxes_zero_and_names_the_level():
    rng = np.random.default_rng(6)
    features = uneven_pyramid(rng, ["0", "3"], np.float32)  # levels 2..5 from two maps
    boxes = np.array([[0, 0, 20, 20],      # level 2: the first map
                      [0, 0, 120, 120],    # level 3: the second map (1/32), by position
                      [0, 0, 250, 250],    # level 4: no map at its position, zero
                      [0, 0, 255, 255]], np.float32)
    pooler = pyroi.MultiScaleRoIAlign(["0", "3"], 2, 2)
    with pytest.warns(pyroi.PyramidLevelsWarning, match="levels 4..5 have no map"):
        result = pooler(features, [boxes], [(256, 256)])
    rows = np.hstack([np.zeros((4, 1), np.float32), boxes])
    np.testing.assert_array_equal(result[0], pyroi.roi_align(features["0"], rows[:1], 2, 1 / 4,
                                                             2)[0])
    np.testing.assert_array_equal(result[1], pyroi.roi_align(features["3"], rows[1:2], 2,
                                                             1 / 32, 2)[0])
    assert not result[2:].any()
    gradients = pooler.backward(np.ones_like(result))
    # each pooled box passes its 2 x 2 bins of 3 channels on; the zero rows pass nothing
    assert gradients["0"].sum() == pytest.approx(12.0)
    assert gradients["3"].sum() == pytest.approx(12.0)


def test_strict_levels_makes_an_uneven_pyramid_a_shape_error():
    rng = np.random.default_rng(5)
    features = uneven_pyramid(rng, ["0", "2", "3"], np.float32)
    pooler = pyroi.MultiScaleRoIAlign(["0", "2", "3"], 2, 2, strict_levels=True)
    with pytest.raises(pyroi.ShapeError, match="strict_levels=True"):
        pooler(features, [random_boxes(rng, np.float32, 6)], [(256, 256)])
    assert pooler.scales is None  # nothing inferred from a failed call
    with pytest.raises(pyroi.ArgumentTypeError, match="strict_levels"):
        pyroi.MultiScaleRoIAlign(["0"], 2, 2, strict_levels="yes")
