"""RoIAlign's average with merged samples (``exact=False``, C ``merge_samples``): within the
documented bound of the exact result, the adjoint of its own forward, identical across thread
counts, layouts and the float16 path, and refused where it has no meaning (max modes).
docs/semantics.md §3.7 states the rule and the bound."""

import numpy as np
import pytest

import pyroi
from pyroi.bench import random_boxes

UNIT_ROUNDOFF = {np.float32: 2.0 ** -24, np.float64: 2.0 ** -53}


def _case(rng, dtype, adaptive_boxes=False):
    """A random call: maps of odd sizes, boxes off the map, tiny, inverted, large."""
    n, c = 2, int(rng.integers(1, 6))
    h, w = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    k = int(rng.integers(0, 9))
    corners = rng.uniform(-12, 2 * max(h, w) + 8, (k, 2))
    sides = rng.choice([0.0, 0.4, 3.0, 20.0, 90.0], (k, 2)) * rng.uniform(0.5, 1.5, (k, 2))
    sides[rng.random((k, 2)) < 0.15] *= -1  # inverted on an axis
    if adaptive_boxes:
        sides = np.abs(sides) + 40.0
    boxes = np.concatenate([rng.integers(0, n, (k, 1)), corners, corners + sides], 1)
    params = dict(output_size=(int(rng.integers(1, 8)), int(rng.integers(1, 8))),
                  spatial_scale=float(rng.choice([0.25, 0.5, 1.0, 2.0])),
                  sampling_ratio=int(rng.choice([-1, 0, 1, 2, 3])),
                  aligned=bool(rng.integers(0, 2)))
    return x, boxes.astype(dtype), params


def _max_samples(boxes, params):
    """An upper bound on the samples of any bin of the call (S of the bound)."""
    ph, pw = params["output_size"]
    if params["sampling_ratio"] > 0:
        return params["sampling_ratio"] ** 2
    if len(boxes) == 0:
        return 1
    sizes = np.abs(boxes[:, 3:5] - boxes[:, 1:3]).astype(np.float64) * params["spatial_scale"]
    sizes = np.maximum(sizes, 1.0)
    return float(np.ceil(sizes[:, 1].max() / ph + 1) * np.ceil(sizes[:, 0].max() / pw + 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_within_bound_of_exact(dtype):
    rng = np.random.default_rng(11)
    u = UNIT_ROUNDOFF[dtype]
    merged_somewhere = False
    for _ in range(120):
        x, boxes, params = _case(rng, dtype, adaptive_boxes=rng.random() < 0.3)
        exact = pyroi.roi_align(x, boxes, **params)
        merged = pyroi.roi_align(x, boxes, **params, exact=False)
        magnitude = pyroi.roi_align(np.abs(x), boxes, **params)
        bound = (8 * _max_samples(boxes, params) + 16) * u * magnitude
        assert merged.dtype == exact.dtype and merged.shape == exact.shape
        assert np.all(np.abs(merged - exact) <= bound)
        merged_somewhere |= not np.array_equal(merged, exact)
    assert merged_somewhere  # the merged sums really are another computation


def test_forward_error_is_small_on_adaptive_sampling():
    """Large boxes with adaptive sampling (many samples sharing pixels): the error stays a few
    roundings, far inside the bound; a wrong weight would be off by O(1)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 8, 60, 70)).astype(np.float32)
    boxes = np.array([[0, 3, 5, 400, 300], [0, -30, 40, 200, 470], [0, 100, 100, 130, 520]],
                     np.float32)
    exact = pyroi.roi_align(x, boxes, 7, 0.125, 0)
    merged = pyroi.roi_align(x, boxes, 7, 0.125, 0, exact=False)
    magnitude = pyroi.roi_align(np.abs(x), boxes, 7, 0.125, 0)
    assert np.max(np.abs(merged - exact) / magnitude) < 64 * UNIT_ROUNDOFF[np.float32]
    assert not np.array_equal(merged, exact)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_is_the_adjoint_of_the_forward(dtype):
    """<forward(x), g> = <x, backward(g)> for the merged call (the same linear map both ways),
    and the backward stays within its bound of the exact backward."""
    rng = np.random.default_rng(12)
    u = UNIT_ROUNDOFF[dtype]
    for _ in range(60):
        x, boxes, params = _case(rng, np.float64, adaptive_boxes=rng.random() < 0.3)
        g = rng.standard_normal((len(boxes), x.shape[1]) + params["output_size"])
        forward = pyroi.roi_align(x, boxes, **params, exact=False)
        backward = pyroi.roi_align_backward(g, boxes, x.shape, params["spatial_scale"],
                                            params["sampling_ratio"], params["aligned"],
                                            exact=False)
        scale = np.abs(forward).sum() * np.abs(g).max(initial=0.0) + 1.0
        assert abs(np.sum(forward * g) - np.sum(x * backward)) <= 1e-9 * scale
        x, boxes, g = x.astype(dtype), boxes.astype(dtype), g.astype(dtype)
        args = (boxes, x.shape, params["spatial_scale"], params["sampling_ratio"],
                params["aligned"])
        exact = pyroi.roi_align_backward(g, *args)
        merged = pyroi.roi_align_backward(g, *args, exact=False)
        magnitude = pyroi.roi_align_backward(np.abs(g), *args)
        bins = g.shape[2] * g.shape[3]
        additions = 8 * _max_samples(boxes, params) * max(len(boxes), 1) * bins + 16
        assert np.all(np.abs(merged - exact) <= additions * u * magnitude)


def test_same_bits_for_every_thread_count_layout_and_order():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 21, 90, 130)).astype(np.float32)
    boxes = random_boxes(rng, 40, 2, 360, 520, 8, 400)
    expected = pyroi.roi_align(x, boxes, 7, 0.25, 0, True, exact=False, num_threads=1)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    for threads in (2, 3):
        assert pyroi.roi_align(x, boxes, 7, 0.25, 0, True, exact=False,
                               num_threads=threads).tobytes() == expected.tobytes()
    assert pyroi.roi_align(nhwc, boxes, 7, 0.25, 0, True, exact=False, layout="NHWC",
                           num_threads=2).tobytes() == expected.tobytes()
    # a few RoIs take the RoI-region order
    assert pyroi.roi_align(x, boxes[:2], 7, 0.25, 0, True, exact=False).tobytes() == \
        expected[:2].tobytes()
    g = rng.standard_normal(expected.shape).astype(np.float32)
    grads = [pyroi.roi_align_backward(g, boxes, x.shape, 0.25, 0, True, exact=False,
                                      num_threads=t) for t in (1, 2, 3)]
    assert all(grad.tobytes() == grads[0].tobytes() for grad in grads)


def test_float16_is_the_merged_float32_call_rounded_once():
    rng = np.random.default_rng(14)
    x = rng.standard_normal((1, 12, 50, 60)).astype(np.float16)
    boxes = random_boxes(rng, 30, 1, 200, 240, 8, 200)
    wide = x.astype(np.float32)
    expected = pyroi.roi_align(wide, boxes, 5, 0.25, 0, exact=False).astype(np.float16)
    assert pyroi.roi_align(x, boxes, 5, 0.25, 0, exact=False).tobytes() == expected.tobytes()
    g = rng.standard_normal(expected.shape).astype(np.float16)
    expected = pyroi.roi_align_backward(g.astype(np.float32), boxes, x.shape, 0.25, 0,
                                        exact=False).astype(np.float16)
    assert pyroi.roi_align_backward(g, boxes, x.shape, 0.25, 0,
                                    exact=False).tobytes() == expected.tobytes()


def test_non_finite_pixels():
    """A pixel that some sample weighs is read with its total weight: an infinite or NaN one
    makes the bin infinite or NaN as in the exact call (an infinite pixel is never multiplied
    by a zero weight). A pixel that no sample weighs is not read at all, where the exact call
    adds 0 * inf = NaN; so a merged result is never less finite than the exact one."""
    x = np.zeros((1, 1, 12, 12), np.float32)
    x[0, 0, 4, 7] = np.inf
    x[0, 0, 9, 2] = np.nan
    boxes = np.array([[0, 0, 0, 12, 12], [0, 6.5, 3.5, 8.5, 5.5], [0, 1, 8, 3, 10]],
                     np.float32)
    for ratio in (0, 1, 2, 5):
        exact = pyroi.roi_align(x, boxes, 3, 1.0, ratio)
        merged = pyroi.roi_align(x, boxes, 3, 1.0, ratio, exact=False)
        assert np.all(np.isfinite(merged[np.isfinite(exact)]))
        assert np.all(np.isposinf(merged[np.isposinf(exact)]))
        assert np.all(np.isposinf(exact) | np.isnan(exact) | ~np.isposinf(merged))
        assert np.all(np.isnan(exact[np.isnan(merged)]))
        assert np.isposinf(merged[1]).any() and np.isnan(merged[2]).any()
    # the weight-zero read: a sample exactly on pixel 4's row, so pixel 5 weighs 0
    x = np.zeros((1, 1, 8, 8), np.float32)
    x[0, 0, 5, 3] = np.inf
    boxes = np.array([[0, 2, 4, 5, 5]], np.float32)  # rows 4..5, one sample at y = 4.0
    exact = pyroi.roi_align(x, boxes, 1, 1.0, 1, aligned=True)
    merged = pyroi.roi_align(x, boxes, 1, 1.0, 1, aligned=True, exact=False)
    assert np.isnan(exact).all() and merged.item() == 0.0


def test_max_modes_and_bad_values_are_refused():
    x = np.zeros((1, 1, 4, 4), np.float32)
    boxes = np.array([[0, 0, 0, 3, 3]], np.float32)
    with pytest.raises(pyroi.InvalidArgumentError, match="exact=False needs mode"):
        pyroi.roi_align(x, boxes, 2, mode="max", exact=False)
    with pytest.raises(pyroi.InvalidArgumentError, match="exact=False needs mode"):
        pyroi.roi_align_backward(np.zeros((1, 1, 2, 2), np.float32), boxes, x.shape,
                                 mode="max", argmax=np.zeros((1, 1, 2, 2), np.int64),
                                 exact=False)
    with pytest.raises(pyroi.InvalidArgumentError, match="exact=False needs mode"):
        pyroi.RoIAlign(2, mode="max", exact=False)
    with pytest.raises(TypeError, match="exact"):
        pyroi.roi_align(x, boxes, 2, exact="no")


def test_layer_passes_exact_to_both_passes():
    rng = np.random.default_rng(15)
    x = rng.standard_normal((1, 4, 30, 30)).astype(np.float32)
    boxes = np.array([[0, 1, 2, 120, 100], [0, 30, 30, 60, 110]], np.float32)
    layer = pyroi.RoIAlign(3, 0.25, 0, exact=False)
    assert "exact=False" in repr(layer)
    y = layer(x, boxes)
    assert y.tobytes() == pyroi.roi_align(x, boxes, 3, 0.25, 0, exact=False).tobytes()
    g = np.ones_like(y)
    assert layer.backward(g).tobytes() == pyroi.roi_align_backward(
        g, boxes, x.shape, 0.25, 0, exact=False).tobytes()


def test_row_bands_of_a_large_image():
    """On an image larger than the L2 cache the forward gathers bands of rows and resumes each
    bin's sums band after band (test_roi_align_bands.py): merged taps ascend within a bin, so
    the bands see them as they see exact ones."""
    rng = np.random.default_rng(16)
    x = rng.standard_normal((1, 16, 160, 1500)).astype(np.float32)
    boxes = [(0, x1, y, x1 + 1200.0, y + 20.0) for y in range(-3, 320, 16)
             for x1 in range(-40, 3000, 900)]
    boxes += [(0, rng.uniform(-40, 3000), y1, 0, 0) for y1 in rng.uniform(-12, 324, 60)]
    boxes = np.array(boxes, np.float32)
    tall = boxes[len(boxes) - 60:]
    tall[:, 3] = tall[:, 1] + rng.uniform(0, 600, 60)
    tall[:, 4] = tall[:, 2] + rng.choice([0.0, 3.0, 20.0, 300.0], 60)
    for ratio, aligned in ((2, True), (0, False)):
        exact = pyroi.roi_align(x, boxes, 7, 0.5, ratio, aligned)
        merged = [pyroi.roi_align(x, boxes, 7, 0.5, ratio, aligned, exact=False,
                                  num_threads=t) for t in (1, 2)]
        magnitude = pyroi.roi_align(np.abs(x), boxes, 7, 0.5, ratio, aligned)
        assert merged[0].tobytes() == merged[1].tobytes()
        samples = _max_samples(boxes.astype(np.float64),
                               dict(output_size=(7, 7), spatial_scale=0.5,
                                    sampling_ratio=ratio))
        assert np.all(np.abs(merged[0] - exact) <= (8 * samples + 16) * 2.0 ** -24 * magnitude)
