"""The loop orders of RoIAlign max mode (mmcv's definition, ``pyroi.roi_align(mode="max")``)
are exact.

The forward takes the loop orders of the average kernel ("direct", "region", "image"; see
tests/test_onnx_orders.py, whose `core_order` restates the rule). On each order the values
and the argmax must equal the slow reference of tests/test_roi_align_max.py (docs/semantics.md §4.2
and pyroi's choices), the other orders' on the same data, and be the same bytes for every
thread count and with or without argmax -- with NaN / inf features, ties, out-of-map samples
(worth 0, offered once at the place of the first of them) and empty bins.
"""

import functools

import numpy as np
import pytest

import pyroi
from test_onnx_orders import core_order, order_inputs
from test_roi_align_max import max_backward_ref, max_ref

OUTPUT = (3, 4)
SCALE = 0.8  # as in test_onnx_orders, whose box generators divide by it


def _order(x_shape, rois, sampling_ratio, aligned, output=OUTPUT, scale=SCALE):
    return core_order(x_shape, rois[:, 1:], sampling_ratio, aligned, output, scale,
                      float_attribute=False)


@functools.lru_cache(maxsize=None)
def max_case(name, channels, dtype_name, aligned, sampling_ratio, kind):
    x, boxes, batch = order_inputs("max-orders", name, channels, dtype_name, aligned,
                                   sampling_ratio, kind)
    rois = np.concatenate([batch[:, None].astype(x.dtype), boxes], axis=1)
    assert _order(x.shape, rois, sampling_ratio, aligned) == name
    for array in (x, rois):
        array.setflags(write=False)
    return x, rois


def _forward_all_threads(x, rois, sampling_ratio, aligned, output=OUTPUT, scale=SCALE):
    """(values, argmax) with 1 thread, after checking that 2 and 3 threads, and the call
    without argmax, give the same bytes."""
    args = (output, scale, sampling_ratio, aligned)
    out, argmax = pyroi.roi_align(x, rois, *args, mode="max", return_argmax=True,
                                  num_threads=1)
    for threads in (2, 3):
        other, other_argmax = pyroi.roi_align(x, rois, *args, mode="max", return_argmax=True,
                                              num_threads=threads)
        assert other.tobytes() == out.tobytes()
        assert other_argmax.tobytes() == argmax.tobytes()
        values = pyroi.roi_align(x, rois, *args, mode="max", num_threads=threads)
        assert values.tobytes() == out.tobytes()
    return out, argmax


def _assert_bits(actual, expected):
    """Equal bits, NaN payloads aside."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert np.array_equal(np.isnan(actual), np.isnan(expected))
    uint = np.uint32 if actual.dtype == np.float32 else np.uint64
    assert np.array_equal(np.where(np.isnan(actual), 0, actual).view(uint),
                          np.where(np.isnan(expected), 0, expected).view(uint))


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("aligned,sampling_ratio", [(False, 2), (True, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,channels", [("image", 17), ("region", 17), ("direct", 3)])
def test_orders_match_reference(name, channels, dtype, aligned, sampling_ratio, kind):
    """Values, argmax and the gradient through that argmax, on the first 8 RoIs (the
    reference is slow)."""
    x, rois = max_case(name, channels, np.dtype(dtype).name, aligned, sampling_ratio, kind)
    out, argmax = _forward_all_threads(x, rois, sampling_ratio, aligned)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, 0 * inf: part of the data
        expected, expected_argmax = max_ref(x, rois[:8], OUTPUT, SCALE, sampling_ratio,
                                            aligned)
    _assert_bits(out[:8], expected)
    np.testing.assert_array_equal(argmax[:8], expected_argmax)
    if kind == "normal":
        grad = np.random.default_rng(2).standard_normal(expected.shape).astype(dtype)
        got = pyroi.roi_align_backward(grad, rois[:8], x.shape, SCALE, sampling_ratio, aligned,
                                       mode="max", argmax=argmax[:8])
        np.testing.assert_array_equal(got, max_backward_ref(grad, rois[:8], x.shape, SCALE,
                                                            sampling_ratio, aligned,
                                                            expected_argmax))


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [5, 37])
def test_region_and_image_orders_agree(channels, dtype, kind):
    """Adding many large RoIs switches the call from RoI regions to whole-image blocks; the
    first RoIs keep their values and argmax."""
    x, rois = max_case("region", channels, np.dtype(dtype).name, True, 0, kind)
    n, _, h, w = x.shape
    rng = np.random.default_rng(4)
    large = (rng.uniform(-4, 8, (40, 4)) + [0, 0, w, h]) / SCALE
    more = np.concatenate([rois, np.concatenate([np.arange(40)[:, None] % n, large], axis=1)
                           .astype(rois.dtype)])
    assert _order(x.shape, more, 0, True) == "image"
    few, few_argmax = _forward_all_threads(x, rois, 0, True)
    many, many_argmax = _forward_all_threads(x, more, 0, True)
    assert many[:len(rois)].tobytes() == few.tobytes()
    assert many_argmax[:len(rois)].tobytes() == few_argmax.tobytes()


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aligned,sampling_ratio", [(False, 2), (False, 0), (True, 0)])
def test_direct_and_lane_major_orders_agree(dtype, aligned, sampling_ratio, kind):
    """RoIs near the top-left corner of the 1030 x 1024 map (direct order) pool the same
    values and argmax from its 48 x 48 corner (a view; image and region orders)."""
    x, rois = max_case("direct", 3, np.dtype(dtype).name, aligned, sampling_ratio, kind)
    corner = x[:, :, :48, :48]
    assert _order(corner.shape, rois, sampling_ratio, aligned) == "image"
    assert _order(corner.shape, rois[:1], sampling_ratio, aligned) == "region"
    direct, direct_argmax = _forward_all_threads(x, rois, sampling_ratio, aligned)
    image, image_argmax = _forward_all_threads(corner, rois, sampling_ratio, aligned)
    _assert_bits(image, direct)
    np.testing.assert_array_equal(image_argmax, direct_argmax)
    region, region_argmax = _forward_all_threads(corner, rois[:1], sampling_ratio, aligned)
    _assert_bits(region, direct[:1])
    np.testing.assert_array_equal(region_argmax, direct_argmax[:1])


@pytest.mark.parametrize("zero", [0.0, -0.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["image", "region"])
def test_place_of_out_of_map_samples(name, dtype, zero):
    """The out-of-map 0 is offered at the place of the first out-of-map sample: after row 0
    of a bin crossing the right edge (it then beats the negative row 0 and keeps its win
    against the 0 of row 1), after every row of a bin crossing the bottom edge (where the 0 of
    row 1 came first). The argmax shows which offer won the tie; with in-map zeros of -0.0
    the value's sign shows it too (+0.0 on the right edge, -0.0 at the bottom), also in the
    call without argmax (its value-only kernel offers the 0 at the same place)."""
    h, w = (8, 8) if name == "image" else (64, 72)
    x = -np.ones((1, 20, h, w), dtype)
    # right edge, 2 x 2 samples: row 0 at y = 2.3 (negative), row 1 at y = 4.3 reads rows 4
    # and 5, here `zero`; columns at W - 1.25 (in) and W + 1.25 (out, sample index 1)
    x[:, :, 4:6, w - 2:] = zero
    right = [0, w - 2.5, 1.3, w + 2.5, 5.3]
    # bottom edge, 3 x 3 samples: rows at H - 2.25 (negative), H - 0.75 (clamped to row
    # H - 1, here `zero`: sample 3 is the first 0), H + 0.75 (out, sample index 6)
    x[:, :, h - 1, :] = zero
    bottom = [0, 1.6, h - 3, 6.1, h + 1.5]
    fillers = np.tile(np.array([[0, 0, 0, w, h]], dtype), (8 if name == "image" else 0, 1))
    for sampling_ratio, box, winner in ((2, right, 1), (3, bottom, 3)):
        rois = np.concatenate([np.array([box], dtype), fillers])
        assert _order(x.shape, rois, sampling_ratio, False, (1, 1), 1.0) == name
        out, argmax = _forward_all_threads(x, rois, sampling_ratio, False, (1, 1), 1.0)
        expected, expected_argmax = max_ref(x, rois[:1], 1, 1.0, sampling_ratio, False)
        assert (expected_argmax == winner).all() and (expected == 0).all()
        sign = np.copysign(1.0, zero) if winner == 3 else 1.0  # 3: an in-map zero won
        assert (np.copysign(1.0, expected) == sign).all()
        _assert_bits(out[:1], expected)
        np.testing.assert_array_equal(argmax[:1], expected_argmax)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["image", "region"])
def test_values_of_both_infinite_signs_without_nan(name, dtype):
    """The call without argmax notices a NaN sample by a per-lane sum of the RoI's samples.
    Samples near the dtype's largest value, positive in the left bins and negative in the
    right ones, overflow that sum to +inf and -inf, whose sum is NaN although no sample is:
    the RoI is then pooled again with winners, and the values stay those of the reference
    (and of the call with argmax), lane by lane."""
    big = np.finfo(dtype).max / 2
    h, w = (8, 8) if name == "image" else (64, 72)
    x = np.full((1, 20, h, w), big, dtype)
    x[:, :, :, w // 2:] = -big
    x[:, 7] = -x[:, 7]  # one lane the other way round
    x[:, 11, : h // 2, : w // 2] = np.inf  # and one with infinite taps
    fillers = np.tile(np.array([[0, 0, 0, w, h]], dtype), (8 if name == "image" else 0, 1))
    rois = np.concatenate([np.array([[0, 0.5, 0.5, w - 0.5, h - 0.5]], dtype), fillers])
    assert _order(x.shape, rois, 2, False, (2, 2), 1.0) == name
    out, argmax = _forward_all_threads(x, rois, 2, False, (2, 2), 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        expected, expected_argmax = max_ref(x, rois[:1], 2, 1.0, 2, False)
    assert np.isinf(expected[0, 11, 0, 0]) and np.isfinite(np.delete(expected, 11, 1)).all()
    _assert_bits(out[:1], expected)
    np.testing.assert_array_equal(argmax[:1], expected_argmax)


@pytest.mark.parametrize("onnx", [False, True], ids=["mmcv", "onnx"])
def test_winners_past_two_to_the_31(onnx):
    """An adaptive grid of 70,000 x 70,000 samples per bin (a box far larger than the map):
    the in-map samples' indices (and ONNX's codes) pass 2^31, where the lane-major kernels
    cannot keep float32 winners at the values' width; they must keep int64 ones, as the
    float64 call does: the same winners, and the same gradient where they land."""
    import pyroi.onnx
    rng = np.random.default_rng(0)
    x = rng.permutation(np.arange(1, 16 * 64 + 1)).reshape(1, 16, 8, 8).astype(np.float64)
    box = np.array([-34996.25, -34995.75, 35003.75, 35004.25])  # exact in float32
    results = {}
    for dtype in (np.float64, np.float32):
        data = x.astype(dtype)
        if onnx:
            out, argmax = pyroi.onnx.roi_align(
                data, box[None].astype(dtype), np.zeros(1, np.int64), mode="max",
                output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0,
                coordinate_transformation_mode="output_half_pixel", return_argmax=True)
            grad = pyroi.onnx.roi_align_backward(
                np.ones_like(out), box[None].astype(dtype), np.zeros(1, np.int64), data.shape,
                mode="max", argmax=argmax, sampling_ratio=0, spatial_scale=1.0,
                coordinate_transformation_mode="output_half_pixel")
        else:
            rois = np.concatenate([[0.0], box])[None].astype(dtype)
            out, argmax = pyroi.roi_align(data, rois, 1, 1.0, 0, False, mode="max",
                                          return_argmax=True)
            grad = pyroi.roi_align_backward(np.ones_like(out), rois, data.shape, 1.0, 0, False,
                                            mode="max", argmax=argmax)
        results[dtype] = argmax, np.argwhere(grad != 0)
    assert results[np.float64][0].min() > 2 ** 31
    np.testing.assert_array_equal(results[np.float32][0], results[np.float64][0])
    np.testing.assert_array_equal(results[np.float32][1], results[np.float64][1])
