"""Tests of pyroi.roi_pool and pyroi.roi_pool_backward (quantised max pooling).

Oracles: the loop-based NumPy reference (tests/reference_roi_pool.py, itself checked against
torchvision below), torchvision's CPU kernel and autograd when installed, the published known
answers (docs/semantics.md §5.1, §11.3, §11.6), the adjoint identity for a fixed argmax and finite
differences. Max pooling involves no rounding of sums, so every comparison is exact, in
float32 and float64.
"""

import functools

import numpy as np
import pytest

import pyroi
from pyroi import _core, _validate
from conftest import (CASE_CONFIGS, DTYPE_IDS, DTYPES, OUT_VIEWS, central_differences,
                      channels_last_view, check_out_view, negative_strides_view, pooled_shape,
                      random_input, random_rois, read_only, rois_to_list, stable_seed,
                      strided_view, writable)
from reference_roi_pool import FLT_MAX, roi_pool_backward_ref, roi_pool_ref, roi_windows
from test_threads import large_case

CONFIG_NAMES = sorted(CASE_CONFIGS)
# "normal": continuous values; "ties": small integers, so bins often hold equal maxima;
# "special": ties plus NaN, -inf and all-negative regions.
VALUE_KINDS = ("normal", "ties", "special")


# --------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------

def _values(rng, shape, dtype, kind):
    if kind == "normal":
        return random_input(rng, shape, dtype)
    x = rng.integers(-3, 4, shape).astype(dtype)
    if kind == "special":
        x -= 4  # mostly negative
        u = rng.uniform(size=shape)
        x[u < 0.15] = np.nan
        x[(u >= 0.15) & (u < 0.35)] = -np.inf
        # one plane (of several) with only NaN / -inf: its non-empty bins are -FLT_MAX
        # with argmax -1
        if shape[0] * shape[1] > 1:
            x[-1, -1] = np.where(rng.uniform(size=shape[2:]) < 0.5, np.nan, -np.inf)
    return x


def _half_pixel_rois(rng, num_images, height, width, count, dtype, scale):
    """Boxes whose scaled corners are exact halves (x.5): the rounding ties."""
    corners = rng.integers(-3, max(height, width) + 3, (count, 4)) + 0.5
    corners = corners / scale
    rois = np.concatenate([rng.integers(0, num_images, (count, 1)), corners], axis=1)
    return rois.astype(dtype)


@functools.lru_cache(maxsize=None)
def pool_case(config, dtype_name, kind):
    """Deterministic random case plus its reference results (arrays are read-only):
    (x, boxes, rois, output_size, scale, expected, expected_argmax, grad_output, expected_grad).
    """
    cfg = CASE_CONFIGS[config]
    dtype = np.dtype(dtype_name)
    rng = np.random.default_rng(stable_seed("roi_pool", config, dtype_name, kind))
    shape = (cfg["N"], cfg["C"], cfg["H"], cfg["W"])
    x = _values(rng, shape, dtype, kind)
    rois = random_rois(rng, cfg["N"], cfg["H"], cfg["W"], cfg["K"], dtype,
                       spatial_scale=cfg["scale"])
    halves = _half_pixel_rois(rng, cfg["N"], cfg["H"], cfg["W"], 4, dtype, cfg["scale"])
    rois = np.concatenate([rois, halves])
    if cfg["as_list"]:
        boxes, rois = rois_to_list(rois, cfg["N"])
    else:
        boxes = rois
    expected, expected_argmax = roi_pool_ref(x, rois, cfg["output_size"], cfg["scale"])
    grad_output = random_input(rng, expected.shape, dtype)
    expected_grad = roi_pool_backward_ref(grad_output, rois, expected_argmax, x.shape)
    arrays = [x, rois, expected, expected_argmax, grad_output, expected_grad]
    arrays += boxes if isinstance(boxes, list) else [boxes]
    for array in arrays:
        array.setflags(write=False)
    return (x, boxes, rois, cfg["output_size"], cfg["scale"], expected, expected_argmax,
            grad_output, expected_grad)


case_matrix = [
    pytest.mark.parametrize("kind", VALUE_KINDS),
    pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS),
    pytest.mark.parametrize("config", CONFIG_NAMES),
]


def with_case_matrix(func):
    for mark in case_matrix:
        func = mark(func)
    return func


# --------------------------------------------------------------------------------------
# torchvision oracle for roi_pool (built on the conftest fixture, so it skips cleanly)
# --------------------------------------------------------------------------------------

def tv_roi_pool_argmax(tv, x, rois, output_size, spatial_scale=1.0):
    """(output, argmax as int32) of torchvision's registered kernel; rois is (K, 5)."""
    ph, pw = pooled_shape(output_size)
    with tv.torch.no_grad():
        out, argmax = tv.torch.ops.torchvision.roi_pool(
            tv.tensor(x), tv.tensor(rois), float(spatial_scale), ph, pw)
    return out.numpy().copy(), argmax.numpy().copy()


# --------------------------------------------------------------------------------------
# the reference itself against torchvision
# --------------------------------------------------------------------------------------

@with_case_matrix
def test_reference_matches_torchvision(tv, config, dtype, kind):
    x, boxes, rois, size, scale, expected, expected_argmax, g, expected_grad = pool_case(
        config, np.dtype(dtype).name, kind)
    out, argmax = tv_roi_pool_argmax(tv, x, rois, size, scale)
    np.testing.assert_array_equal(expected, out)
    np.testing.assert_array_equal(expected_argmax, argmax)
    np.testing.assert_array_equal(expected_grad, tv.grad("roi_pool", x, boxes, g, size, scale))
    assert np.count_nonzero(expected) > 0 and np.any(expected_argmax >= 0)


# --------------------------------------------------------------------------------------
# pyroi against the reference and torchvision (exact)
# --------------------------------------------------------------------------------------

@with_case_matrix
def test_forward_matches_reference(config, dtype, kind):
    x, boxes, _, size, scale, expected, expected_argmax, _, _ = pool_case(
        config, np.dtype(dtype).name, kind)
    out = pyroi.roi_pool(writable(x), writable(boxes), size, scale)
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    np.testing.assert_array_equal(out, expected)
    out, argmax = pyroi.roi_pool(x, boxes, size, scale, return_argmax=True)
    assert argmax.dtype == np.int64 and argmax.shape == out.shape
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(argmax, expected_argmax)


@with_case_matrix
def test_backward_matches_reference(config, dtype, kind):
    x, boxes, _, size, scale, _, argmax, g, expected_grad = pool_case(
        config, np.dtype(dtype).name, kind)
    grad = pyroi.roi_pool_backward(g, boxes, argmax, x.shape, size, scale)
    assert grad.dtype == dtype and grad.shape == x.shape
    np.testing.assert_array_equal(grad, expected_grad)


@with_case_matrix
def test_matches_torchvision_bit_for_bit(tv, config, dtype, kind):
    """Output, argmax and the autograd input gradient equal torchvision's CPU kernel."""
    x, boxes, rois, size, scale, _, _, g, _ = pool_case(config, np.dtype(dtype).name, kind)
    x, boxes = writable(x), writable(boxes)
    out, argmax = pyroi.roi_pool(x, boxes, size, scale, return_argmax=True)
    np.testing.assert_array_equal(out, tv.forward("roi_pool", x, boxes, size, scale))
    tv_out, tv_argmax = tv_roi_pool_argmax(tv, x, rois, size, scale)
    np.testing.assert_array_equal(out, tv_out)
    np.testing.assert_array_equal(argmax, tv_argmax)
    np.testing.assert_array_equal(pyroi.roi_pool_backward(g, boxes, argmax, x.shape, size, scale),
                                  tv.grad("roi_pool", x, boxes, g, size, scale))


@with_case_matrix
def test_int32_argmax_matches_torchvision(tv, config, dtype, kind):
    """argmax_dtype=np.int32 gives torchvision's argmax, dtype and values, with the same
    output; the backward reads it and gives torchvision's input gradient."""
    x, boxes, rois, size, scale, _, _, g, _ = pool_case(config, np.dtype(dtype).name, kind)
    x, boxes = writable(x), writable(boxes)
    out, argmax = pyroi.roi_pool(x, boxes, size, scale, return_argmax=True,
                                 argmax_dtype=np.int32)
    tv_out, tv_argmax = tv_roi_pool_argmax(tv, x, rois, size, scale)
    assert argmax.dtype == tv_argmax.dtype == np.int32
    np.testing.assert_array_equal(out, tv_out)
    np.testing.assert_array_equal(argmax, tv_argmax)
    np.testing.assert_array_equal(pyroi.roi_pool_backward(g, boxes, argmax, x.shape, size, scale),
                                  tv.grad("roi_pool", x, boxes, g, size, scale))


@pytest.mark.parametrize("num_rois", [300, 3], ids=["image_blocks", "roi_regions"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_int32_argmax_in_the_lane_orders(tv, dtype, num_rois):
    """Many channels (whole lane lines and a partial one) and 7 x 7 bins, on many RoIs (image
    blocks, the outputs streamed) and on few (RoI regions), C-contiguous and into a
    transposed ``out``: both argmax widths equal torchvision's."""
    rng = np.random.default_rng(18)
    x = rng.integers(-4, 4, (2, 90, 30, 37)).astype(dtype)  # ties
    rois = random_rois(rng, 2, 30, 37, num_rois, dtype, spatial_scale=0.125)
    tv_out, tv_argmax = tv_roi_pool_argmax(tv, x, rois, 7, 0.125)
    g = rng.standard_normal(tv_out.shape).astype(dtype)
    expected_grad = tv.grad("roi_pool", x, rois, g, 7, 0.125)
    for argmax_dtype in (np.int32, np.int64):
        for out in (None, np.empty(tv_out.shape[::-1], dtype).T):
            result, argmax = pyroi.roi_pool(x, rois, 7, 0.125, return_argmax=True,
                                            argmax_dtype=argmax_dtype, out=out)
            assert argmax.dtype == argmax_dtype
            np.testing.assert_array_equal(result, tv_out)
            np.testing.assert_array_equal(argmax, tv_argmax)
            np.testing.assert_array_equal(
                pyroi.roi_pool_backward(g, rois, argmax, x.shape, 7, 0.125), expected_grad)
            np.testing.assert_array_equal(
                pyroi.roi_pool_backward(g, rois, np.asfortranarray(argmax), x.shape, 7, 0.125),
                expected_grad)


def test_int32_argmax_is_read_in_place():
    """The backward reads an int32 argmax as it is (no int64 copy: half the bytes), and a bad
    entry in it is refused naming the RoI, the gradient array untouched."""
    x, boxes, size, scale, _, argmax, g, _ = _layout_case(np.float32)
    narrow = argmax.astype(np.int32)
    assert _validate.argmax_array(narrow, narrow.shape, x.shape[2] * x.shape[3],
                                  check_values=False, keep_int32=True) is narrow
    narrow[1, 0, 0, 0] = x.shape[2] * x.shape[3]
    out = np.full(x.shape, 5.0, np.float32)
    with pytest.raises(pyroi.InvalidArgumentError, match=r"argmax\[1, 0, 0, 0\] \(RoI 1\)"):
        pyroi.roi_pool_backward(g, boxes, narrow, x.shape, size, scale, out=out)
    assert np.all(out == 5.0)


@pytest.mark.parametrize("argmax_dtype", [np.int16, np.uint32, np.float32, "int8", None, "x"])
def test_argmax_dtype_must_be_int64_or_int32(argmax_dtype):
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(pyroi.DTypeError, match="argmax_dtype"):
        pyroi.roi_pool(x, np.zeros((1, 5), np.float32), 2, return_argmax=True,
                       argmax_dtype=argmax_dtype)


def test_int32_argmax_refuses_planes_beyond_2_31():
    """An int32 argmax cannot index a plane of more than 2**31 pixels (here a broadcast
    view: no memory); int64 can."""
    x = np.broadcast_to(np.zeros((1, 1, 1, 1), np.float32), (1, 1, 65536, 32769))
    boxes = np.array([[0, 1, 1, 4, 4]], np.float32)
    with pytest.raises(pyroi.ShapeError, match="2\\*\\*31"):
        pyroi.roi_pool(x, boxes, 2, return_argmax=True, argmax_dtype=np.int32)
    assert pyroi.roi_pool(x, boxes, 2, return_argmax=True)[1].dtype == np.int64


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_backward_accepts_torchvision_int32_argmax(tv, dtype):
    x, boxes, rois, size, scale, _, _, g, _ = pool_case("fpn16", np.dtype(dtype).name, "ties")
    _, tv_argmax = tv_roi_pool_argmax(tv, x, rois, size, scale)
    assert tv_argmax.dtype == np.int32
    np.testing.assert_array_equal(
        pyroi.roi_pool_backward(g, boxes, tv_argmax, x.shape, size, scale),
        tv.grad("roi_pool", x, boxes, g, size, scale))


@pytest.mark.parametrize("scale", [0.0, 0.3, 1.0 / 3.0, 2.0, 0.0625])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_unusual_scales_and_output_sizes(tv, scale, dtype):
    rng = np.random.default_rng(stable_seed("scales", scale, np.dtype(dtype).name))
    x = _values(rng, (2, 3, 9, 8), dtype, "ties")
    rois = random_rois(rng, 2, 9, 8, 12, dtype, spatial_scale=scale if scale else 1.0)
    for size in (1, (1, 5), (4, 2), 7, (11, 13)):
        out, argmax = pyroi.roi_pool(x, rois, size, scale, return_argmax=True)
        expected, expected_argmax = roi_pool_ref(x, rois, size, scale)
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(argmax, expected_argmax)
        tv_out, tv_argmax = tv_roi_pool_argmax(tv, x, rois, size, scale)
        np.testing.assert_array_equal(out, tv_out)
        np.testing.assert_array_equal(argmax, tv_argmax)


# --------------------------------------------------------------------------------------
# known answers (docs/semantics.md §5.1, §11.3, §11.6) and special values
# --------------------------------------------------------------------------------------

def _plane(rows, dtype):
    return np.asarray(rows, dtype=dtype)[None, None]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_small_roi_repeats_pixels(dtype):
    """5.1: a 2x2 RoI pooled to 3x3 on a 4x4 arange (adjacent bins overlap)."""
    x = np.arange(16, dtype=dtype).reshape(1, 1, 4, 4)
    out, argmax = pyroi.roi_pool(x, np.array([[0, 1, 1, 2, 2]], dtype), 3, return_argmax=True)
    expected = [[5, 6, 6], [9, 10, 10], [9, 10, 10]]
    np.testing.assert_array_equal(out[0, 0], expected)
    np.testing.assert_array_equal(argmax[0, 0], expected)  # arange: value == flat index
    grad = pyroi.roi_pool_backward(np.ones_like(out), np.array([[0, 1, 1, 2, 2]], dtype), argmax,
                                   x.shape, 3)
    np.testing.assert_array_equal(grad[0, 0], [[0, 0, 0, 0], [0, 1, 2, 0], [0, 2, 4, 0],
                                               [0, 0, 0, 0]])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_rounding_half_away_from_zero(dtype):
    """12.6: 2.5 -> 3, 1.5 -> 2, -0.5 -> -1 (an empty bin); also 0.5 -> 1, 4.5 -> 5."""
    x = np.arange(100, dtype=dtype).reshape(1, 1, 10, 10)
    rois = np.array([[0, 2.5, 2.5, 2.5, 2.5], [0, 1.5, 1.5, 1.5, 1.5],
                     [0, -0.5, -0.5, -0.5, -0.5], [0, 0.5, 0.5, 0.5, 0.5],
                     [0, 3.5, 4.5, 3.5, 4.5]], dtype)
    out, argmax = pyroi.roi_pool(x, rois, 1, return_argmax=True)
    np.testing.assert_array_equal(out.ravel(), [33, 22, 0, 11, 54])
    np.testing.assert_array_equal(argmax.ravel(), [33, 22, -1, 11, 54])


MMCV_CASES = [
    # 12.3: mmcv tests/test_ops/test_roi_pool.py, 2x2 output, scale 1, roi [0,0,0,1,1] / 3,3
    ("mmcv_2x2", [[[1, 2], [3, 4]]], [0, 0, 0, 1, 1], [[[1, 2], [3, 4]]],
     [[[1, 1], [1, 1]]]),
    ("mmcv_2ch", [[[1, 2], [3, 4]], [[4, 3], [2, 1]]], [0, 0, 0, 1, 1],
     [[[1, 2], [3, 4]], [[4, 3], [2, 1]]], [[[1, 1], [1, 1]], [[1, 1], [1, 1]]]),
    ("mmcv_4x4", [[[1, 2, 5, 6], [3, 4, 7, 8], [9, 10, 13, 14], [11, 12, 15, 16]]],
     [0, 0, 0, 3, 3], [[[4, 8], [12, 16]]],
     [[[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]]]),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name, x, roi, expected, expected_grad", MMCV_CASES,
                         ids=[c[0] for c in MMCV_CASES])
def test_mmcv_known_answers(name, x, roi, expected, expected_grad, dtype):
    x = np.asarray(x, dtype)[None]
    rois = np.asarray([roi], dtype)
    out, argmax = pyroi.roi_pool(x, rois, (2, 2), 1.0, return_argmax=True)
    np.testing.assert_array_equal(out[0], expected)
    grad = pyroi.roi_pool_backward(np.ones_like(out), rois, argmax, x.shape, (2, 2), 1.0)
    np.testing.assert_array_equal(grad[0], expected_grad)


def _special_cases(dtype):
    """(name, plane, expected value, expected argmax) for a 1x1 output over a 3x3 map."""
    cases = [
        ("ties_first_row_major", [[1, 3, 3], [3, 2, 1], [0, 3, 0]], 3.0, 1),
        ("all_negative", [[-5, -7, -3], [-9, -4, -8], [-6, -2.5, -11]], -2.5, 7),
        ("nan_never_wins", [[np.nan, -5, -7], [-3, np.nan, -1], [-9, -2, np.nan]], -1.0, 5),
        ("inf_wins", [[1, np.inf, 2], [np.nan, 3, np.inf], [0, 0, 0]], np.inf, 1),
        ("neg_inf_only", [[-np.inf] * 3] * 3, -FLT_MAX, -1),
        ("nan_and_neg_inf", [[np.nan, -np.inf, -np.inf], [-np.inf, np.nan, -np.inf],
                             [-np.inf, -np.inf, -np.inf]], -FLT_MAX, -1),
        ("signed_zeros", [[-0.0, 0.0, -0.0], [0.0, -0.0, 0.0], [-1, -1, -1]], -0.0, 0),
    ]
    if np.dtype(dtype) == np.float64:
        # float64 starts from -FLT_MAX too (torchvision): values below it never win
        cases += [("below_flt_max", [[-1e300] * 3] * 3, -FLT_MAX, -1),
                  ("below_flt_max_but_one", [[-1e300, -1e39, -1e300], [-1e300, -1e38, -1e300],
                                             [-1e300] * 3], -1e38, 4)]
    else:
        cases += [("exactly_minus_flt_max", [[-FLT_MAX] * 3] * 3, -FLT_MAX, -1)]
    return cases


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_special_values(dtype):
    rois = np.array([[0, 0, 0, 2, 2]], dtype)
    for name, plane, value, index in _special_cases(dtype):
        x = _plane(plane, dtype)
        out, argmax = pyroi.roi_pool(x, rois, 1, return_argmax=True)
        assert out[0, 0, 0, 0] == value or (np.isnan(value) and np.isnan(out[0, 0, 0, 0])), name
        assert np.signbit(out[0, 0, 0, 0]) == np.signbit(value), name
        assert argmax[0, 0, 0, 0] == index, name
        grad = pyroi.roi_pool_backward(np.full_like(out, 2.0), rois, argmax, x.shape, 1)
        expected = np.zeros(9, dtype)
        if index >= 0:
            expected[index] = 2.0
        np.testing.assert_array_equal(grad.ravel(), expected, err_msg=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_special_values_match_torchvision(tv, dtype):
    rois = np.array([[0, 0, 0, 2, 2]], dtype)
    for name, plane, _, _ in _special_cases(dtype):
        x = _plane(plane, dtype)
        out, argmax = pyroi.roi_pool(x, rois, 1, return_argmax=True)
        tv_out, tv_argmax = tv_roi_pool_argmax(tv, x, rois, 1)
        np.testing.assert_array_equal(out, tv_out, err_msg=name)
        assert np.signbit(out).tolist() == np.signbit(tv_out).tolist(), name
        np.testing.assert_array_equal(argmax, tv_argmax, err_msg=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_out_of_image_and_inverted_boxes(dtype):
    x = np.arange(100, dtype=dtype).reshape(1, 1, 10, 10) + 1
    rois = np.array([[0, 10, 10, 12, 12],    # fully outside (below/right): empty
                     [0, -5, -5, -1, -1],    # fully outside (above/left): empty
                     [0, 6, 4, 2, 1],        # inverted: one pixel (4, 6), repeated
                     [0, 8, -3, 12, 1]],     # partly outside
                    dtype)
    out, argmax = pyroi.roi_pool(x, rois, 2, return_argmax=True)
    assert not np.any(out[:2]) and np.all(argmax[:2] == -1)
    np.testing.assert_array_equal(out[2, 0], [[47, 47], [47, 47]])
    np.testing.assert_array_equal(argmax[2, 0], [[46, 46], [46, 46]])
    expected, expected_argmax = roi_pool_ref(x, rois, 2)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(argmax, expected_argmax)


# --------------------------------------------------------------------------------------
# very large coordinates
# --------------------------------------------------------------------------------------

LARGE_BOXES = [[0, -1e9, -1e9, 1e9, 1e9], [0, 0, 0, 2e9, 2e9], [0, 3, 3, 1e9, 4],
               [0, -5e8, 2, 3, 1e9], [0, 1e9, 1e9, 1.5e9, 1.5e9], [0, -2e9, 1, -1e9, 5]]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_large_coordinates_within_int32_match_torchvision(tv, dtype):
    x = random_input(np.random.default_rng(3), (1, 2, 10, 10), dtype)
    rois = np.array(LARGE_BOXES, dtype)
    for size in (1, 2, 3, 7):
        out, argmax = pyroi.roi_pool(x, rois, size, return_argmax=True)
        tv_out, tv_argmax = tv_roi_pool_argmax(tv, x, rois, size)
        np.testing.assert_array_equal(out, tv_out)
        np.testing.assert_array_equal(argmax, tv_argmax)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_coordinates_beyond_int64_are_defined(dtype):
    """Rounded corners are clamped to +-2^53 (torchvision is undefined here)."""
    big = float(np.finfo(dtype).max)
    x = random_input(np.random.default_rng(4), (1, 2, 10, 10), dtype)
    rois = np.array([[0, 0, 0, 1e30, 1e30], [0, -1e30, -1e30, 1, 1], [0, -big, -big, big, big],
                     [0, 5, -big, 7, big], [0, 2 ** 53, 0, 2 ** 60, 3],
                     [0, -(2 ** 62), 2, 2 ** 62, 6]], dtype)
    for size in (1, 2, (3, 5)):
        out, argmax = pyroi.roi_pool(x, rois, size, return_argmax=True)
        expected, expected_argmax = roi_pool_ref(x, rois, size)
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(argmax, expected_argmax)
    out, argmax = pyroi.roi_pool(x, rois[:1], 2, return_argmax=True)
    assert argmax[0, 0, 0, 0] == np.argmax(x[0, 0]) and np.all(argmax[0, :, 1:, :] == -1)


# --------------------------------------------------------------------------------------
# box forms
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_box_forms_agree(dtype):
    x, boxes, rois, size, scale, expected, argmax, g, expected_grad = pool_case(
        "list7x5", np.dtype(dtype).name, "ties")
    assert isinstance(boxes, list)
    coords = np.ascontiguousarray(rois[:, 1:])
    images = rois[:, 0].astype(np.int32)
    for form in (dict(boxes=boxes), dict(boxes=rois),
                 dict(boxes=coords, batch_indices=images)):
        out, got_argmax = pyroi.roi_pool(x, form["boxes"], size, scale, return_argmax=True,
                                         batch_indices=form.get("batch_indices"))
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(got_argmax, argmax)
        grad = pyroi.roi_pool_backward(g, form["boxes"], argmax, x.shape, size, scale,
                                       batch_indices=form.get("batch_indices"))
        np.testing.assert_array_equal(grad, expected_grad)


def test_batch_index_selects_the_image():
    x = np.stack([np.full((1, 4, 4), v, np.float64) for v in (1.0, 2.0, 3.0)])
    rois = np.array([[2, 0, 0, 3, 3], [0, 0, 0, 3, 3], [1, 1, 1, 2, 2]], np.float64)
    out, argmax = pyroi.roi_pool(x, rois, 2, return_argmax=True)
    np.testing.assert_array_equal(out[:, 0, 0, 0], [3.0, 1.0, 2.0])
    grad = pyroi.roi_pool_backward(np.ones_like(out), rois, argmax, x.shape, 2)
    np.testing.assert_array_equal(grad.sum(axis=(1, 2, 3)), [4.0, 4.0, 4.0])


# --------------------------------------------------------------------------------------
# adjoint identity (for a fixed argmax the op is linear) and finite differences
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_adjoint_identity_for_fixed_argmax(config):
    x, boxes, _, size, scale, _, _, _, _ = pool_case(config, "float64", "normal")
    out, argmax = pyroi.roi_pool(x, boxes, size, scale, return_argmax=True)
    g = random_input(np.random.default_rng(stable_seed("adjoint-pool", config)), out.shape,
                     np.float64)
    g[argmax == -1] = 0.0  # empty bins are the constant 0, not a function of x
    grad = pyroi.roi_pool_backward(g, boxes, argmax, x.shape, size, scale)
    lhs, rhs = np.vdot(out, g), np.vdot(x, grad)
    magnitude = np.vdot(np.abs(out), np.abs(g)) + np.vdot(np.abs(x), np.abs(grad))
    assert np.count_nonzero(grad) > 0
    assert abs(lhs - rhs) <= 1e-12 * magnitude, (lhs, rhs)


def test_backward_matches_central_differences():
    """Distinct values 0.01 apart: a 1e-6 step never changes which pixel wins."""
    rng = np.random.default_rng(19)
    shape = (2, 2, 6, 5)
    x = (rng.permutation(np.prod(shape)).reshape(shape) * 0.01).astype(np.float64)
    rois = np.array([[0, 0.3, 0.7, 4.2, 3.6], [1, 1.2, 0.4, 4.4, 5.4],
                     [0, 2.6, 1.3, 3.9, 2.2], [1, -1.6, 2.1, 2.7, 5.3]], np.float64)
    size = (2, 3)
    out, argmax = pyroi.roi_pool(x, rois, size, return_argmax=True)
    g = random_input(rng, out.shape, np.float64)
    grad = pyroi.roi_pool_backward(g, rois, argmax, shape, size)
    numeric = central_differences(lambda v: pyroi.roi_pool(v, rois, size), x, g)
    assert np.count_nonzero(grad) >= 8
    np.testing.assert_allclose(grad, numeric, rtol=1e-7, atol=1e-8)


# --------------------------------------------------------------------------------------
# memory layouts and out=
# --------------------------------------------------------------------------------------

def _layout_case(dtype):
    x, boxes, _, size, scale, expected, argmax, g, expected_grad = pool_case(
        "odd9x11", np.dtype(dtype).name, "ties")
    return writable(x), writable(boxes), size, scale, expected, argmax, writable(g), expected_grad


LAYOUTS = {
    "transposed": channels_last_view,
    "strided": strided_view,
    "negative": negative_strides_view,
    "fortran": np.asfortranarray,
    "read_only": read_only,
    "big_endian": lambda a: a.astype(a.dtype.newbyteorder(">")),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_layouts_give_identical_results(layout, dtype):
    x, boxes, size, scale, expected, argmax, g, expected_grad = _layout_case(dtype)
    make = LAYOUTS[layout]
    out, got_argmax = pyroi.roi_pool(make(x), boxes, size, scale, return_argmax=True)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(got_argmax, argmax)
    for grad_view, argmax_view in ((make(g), argmax), (g, make(argmax)), (make(g), make(argmax))):
        np.testing.assert_array_equal(
            pyroi.roi_pool_backward(grad_view, boxes, argmax_view, x.shape, size, scale),
            expected_grad)


@pytest.mark.parametrize("argmax_dtype", [np.int32, np.int16, np.uint16, np.int64])
def test_argmax_integer_dtypes(argmax_dtype):
    x, boxes, size, scale, _, argmax, g, expected_grad = _layout_case(np.float32)
    if np.dtype(argmax_dtype).kind == "u":
        # unsigned cannot hold -1: use only bins that have a winner
        g = np.where(argmax >= 0, g, 0).astype(g.dtype)
        argmax = np.where(argmax >= 0, argmax, 0)
        expected_grad = roi_pool_backward_ref(g, boxes, argmax, x.shape)
    np.testing.assert_array_equal(
        pyroi.roi_pool_backward(g, boxes, argmax.astype(argmax_dtype), x.shape, size, scale),
        expected_grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_broadcast_inputs(dtype):
    rng = np.random.default_rng(31)
    rois = random_rois(rng, 2, 9, 11, 16, dtype)
    plane = _values(rng, (1, 1, 9, 11), dtype, "ties")
    view = np.broadcast_to(plane, (2, 3, 9, 11))
    out, argmax = pyroi.roi_pool(view, rois, (2, 3), return_argmax=True)
    expected, expected_argmax = roi_pool_ref(view.copy(), rois, (2, 3))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(argmax, expected_argmax)
    g = np.broadcast_to(random_input(rng, (1, 3, 1, 3), dtype), out.shape)
    np.testing.assert_array_equal(pyroi.roi_pool_backward(g, rois, argmax, view.shape, (2, 3)),
                                  roi_pool_backward_ref(g.copy(), rois, argmax, view.shape))


@pytest.mark.parametrize("view_kind", OUT_VIEWS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_forward_out(dtype, view_kind):
    x, boxes, size, scale, expected, argmax, _, _ = _layout_case(dtype)
    _, got_argmax = check_out_view(
        lambda out: pyroi.roi_pool(x, boxes, size, scale, return_argmax=True, out=out),
        expected, view_kind)
    np.testing.assert_array_equal(got_argmax, argmax)
    check_out_view(lambda out: pyroi.roi_pool(x, boxes, size, scale, out=out), expected,
                   view_kind)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_backward_out_overwrites(dtype):
    x, boxes, size, scale, _, argmax, g, expected_grad = _layout_case(dtype)
    out = np.full(x.shape, 7.0, dtype)
    assert pyroi.roi_pool_backward(g, boxes, argmax, x.shape, size, scale, out=out) is out
    np.testing.assert_array_equal(out, expected_grad)
    buffer = np.full(x.shape[:3] + (2 * x.shape[3],), -3.0, dtype)
    view = buffer[..., ::2]
    assert pyroi.roi_pool_backward(g, boxes, argmax, x.shape, size, scale, out=view) is view
    np.testing.assert_array_equal(view, expected_grad)
    assert np.all(buffer[..., 1::2] == -3.0)
    transposed = np.full(x.shape[::-1], np.nan, dtype).T
    pyroi.roi_pool_backward(g, boxes, argmax, x.shape, size, scale, out=transposed)
    np.testing.assert_array_equal(transposed, expected_grad)


# --------------------------------------------------------------------------------------
# empty shapes
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_no_rois(dtype):
    x = random_input(np.random.default_rng(1), (2, 3, 5, 6), dtype)
    out, argmax = pyroi.roi_pool(x, np.zeros((0, 5), dtype), (2, 3), return_argmax=True)
    assert out.shape == argmax.shape == (0, 3, 2, 3) and out.dtype == dtype
    out = pyroi.roi_pool(x, [np.zeros((0, 4), dtype), np.zeros((0, 4), dtype)], 4)
    assert out.shape == (0, 3, 4, 4)
    prefilled = np.full(x.shape, 5.0, dtype)
    grad = pyroi.roi_pool_backward(np.zeros((0, 3, 2, 3), dtype), np.zeros((0, 5), dtype),
                                   np.zeros((0, 3, 2, 3), np.int64), x.shape, (2, 3),
                                   out=prefilled)
    assert grad is prefilled and not np.any(grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_no_images(dtype):
    out, argmax = pyroi.roi_pool(np.zeros((0, 3, 5, 6), dtype), np.zeros((0, 5), dtype), 2,
                                 return_argmax=True)
    assert out.shape == argmax.shape == (0, 3, 2, 2)
    grad = pyroi.roi_pool_backward(np.zeros((0, 3, 2, 2), dtype), np.zeros((0, 5), dtype),
                                   np.zeros((0, 3, 2, 2), np.int64), (0, 3, 5, 6), 2)
    assert grad.shape == (0, 3, 5, 6)


@pytest.mark.parametrize("shape", [(2, 0, 5, 6), (2, 3, 0, 6), (2, 3, 5, 0), (2, 0, 0, 0)],
                         ids=["C0", "H0", "W0", "CHW0"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_empty_map_gives_zeros(shape, dtype):
    rois = np.array([[0, 0, 0, 3, 3], [1, -1, -1, 0.5, 0.5], [1, 2, 1, 9, 9]], dtype)
    out, argmax = pyroi.roi_pool(np.zeros(shape, dtype), rois, (2, 3), return_argmax=True)
    assert out.shape == (3, shape[1], 2, 3)
    assert not np.any(out) and np.all(argmax == -1)
    grad = pyroi.roi_pool_backward(np.ones(out.shape, dtype), rois, argmax, shape, (2, 3))
    assert grad.shape == shape and not np.any(grad)


# --------------------------------------------------------------------------------------
# threads
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_bit_identical_for_every_thread_count(dtype):
    x, boxes, grad = large_case(dtype, seed=7)
    x = np.round(x * 2)  # many ties: the winner must not depend on the split either
    y1, a1 = pyroi.roi_pool(x, boxes, 7, 0.75, return_argmax=True, num_threads=1)
    g1 = pyroi.roi_pool_backward(grad, boxes, a1, x.shape, 7, 0.75, num_threads=1)
    assert np.count_nonzero(g1) > 1000
    for threads in (2, 3, None):
        y, a = pyroi.roi_pool(x, boxes, 7, 0.75, return_argmax=True, num_threads=threads)
        g = pyroi.roi_pool_backward(grad, boxes, a1, x.shape, 7, 0.75, num_threads=threads)
        assert y.tobytes() == y1.tobytes() and a.tobytes() == a1.tobytes(), threads
        assert g.tobytes() == g1.tobytes(), threads


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------

def _error_case():
    x = random_input(np.random.default_rng(0), (2, 3, 6, 7), np.float32)
    rois = np.array([[0, 0, 0, 4, 4], [1, 1, 1, 5, 3], [0, 2, 1, 6, 5], [1, 0.5, 0.5, 2, 2]],
                    np.float32)
    out, argmax = pyroi.roi_pool(x, rois, 2, return_argmax=True)
    return x, rois, np.ones_like(out), argmax


@pytest.mark.parametrize("call, error, words", [
    (lambda x, r, g, a: pyroi.roi_pool(x[0], r, 2), pyroi.ShapeError, "input"),
    (lambda x, r, g, a: pyroi.roi_pool(x.astype(np.int32), r, 2), pyroi.DTypeError, "input"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r.astype(np.float64), 2), pyroi.DTypeError, "boxes"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r[:, :4], 2), pyroi.ShapeError, "boxes"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 0), pyroi.InvalidArgumentError, "output_size"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, (2, 2, 2)), pyroi.InvalidArgumentError,
     "output_size"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2.5), pyroi.ArgumentTypeError, "output_size"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2, -1.0), pyroi.InvalidArgumentError,
     "spatial_scale"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2, float("nan")), pyroi.InvalidArgumentError,
     "spatial_scale"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2, return_argmax="yes"), pyroi.ArgumentTypeError,
     "return_argmax"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2, num_threads=0), pyroi.InvalidArgumentError,
     "num_threads"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2, out=np.zeros((4, 3, 2, 3), np.float32)),
     pyroi.ShapeError, "out"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2, out=np.zeros((4, 3, 2, 2), np.float64)),
     pyroi.DTypeError, "out"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2, out=[0]), pyroi.ArgumentTypeError, "out"),
    (lambda x, r, g, a: pyroi.roi_pool(x, r, 2, batch_indices=[0, 1, 0, 1]), pyroi.ShapeError,
     "boxes"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g[0], r, a, x.shape, 2), pyroi.ShapeError,
     "grad_output"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, x.shape[:3], 2), pyroi.ShapeError,
     "input_shape"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, (2, 4, 6, 7), 2), pyroi.ShapeError,
     "input_shape"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, x.shape, 3), pyroi.ShapeError,
     "output_size"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, x.shape, (2, 1)), pyroi.ShapeError,
     "output_size"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, x.shape, 0),
     pyroi.InvalidArgumentError, "output_size"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r[:3], a, x.shape, 2), pyroi.ShapeError,
     "boxes"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a[:, :, :1], x.shape, 2),
     pyroi.ShapeError, "argmax"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a.astype(np.float32), x.shape, 2),
     pyroi.DTypeError, "argmax"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, x.shape, 2, -2.0),
     pyroi.InvalidArgumentError, "spatial_scale"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, x.shape, 2, num_threads=-1),
     pyroi.InvalidArgumentError, "num_threads"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, x.shape, 2,
                                                out=np.zeros(x.shape, np.float64)),
     pyroi.DTypeError, "out"),
    (lambda x, r, g, a: pyroi.roi_pool_backward(g, r, a, x.shape, 2, out=g),
     pyroi.ShapeError, "out"),
])
def test_argument_errors(call, error, words):
    x, rois, g, argmax = _error_case()
    with pytest.raises(error) as excinfo:
        call(x, rois, g, argmax)
    assert words.lower() in str(excinfo.value).lower(), str(excinfo.value)


def test_out_sharing_memory_with_input_is_rejected():
    x, rois, g, argmax = _error_case()
    out = np.zeros((4, 3, 2, 2), np.float32)
    grad = out.copy()
    winners = np.zeros(grad.shape, np.int64)
    with pytest.raises(pyroi.InvalidArgumentError, match="out"):
        pyroi.roi_pool_backward(grad, rois, winners, grad.shape, 2, out=grad)
    read_only = out.copy()
    read_only.setflags(write=False)
    with pytest.raises(pyroi.InvalidArgumentError, match="out"):
        pyroi.roi_pool(x, rois, 2, out=read_only)


def _check_bad_roi_named(index, column, value, error):
    """Forward and backward raise ``error`` naming RoI ``index`` once its ``column`` holds
    ``value``."""
    x, rois, g, argmax = _error_case()
    rois[index, column] = value
    with pytest.raises(error, match=rf"RoI {index}"):
        pyroi.roi_pool(x, rois, 2)
    with pytest.raises(error, match=rf"RoI {index}"):
        pyroi.roi_pool_backward(g, rois, argmax, x.shape, 2)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_box_names_the_roi(value):
    _check_bad_roi_named(2, 3, value, pyroi.BoxError)


def test_box_overflowing_after_scaling_names_the_roi():
    """Finite, but x * spatial_scale is infinite in float32: rejected by the C core."""
    x, rois, g, argmax = _error_case()
    rois[3, 1] = 1e30
    with pytest.raises(pyroi.BoxError, match=r"RoI 3"):
        pyroi.roi_pool(x, rois, 2, 1e10)
    assert pyroi.roi_pool(x, rois, 2, 1.0).shape == (4, 3, 2, 2)  # fine unscaled


@pytest.mark.parametrize("bad_index", [4, 2.5, -1])
def test_bad_batch_index_names_the_roi(bad_index):
    _check_bad_roi_named(1, 0, bad_index, pyroi.BatchIndexError)


@pytest.mark.parametrize("bad_value", [-2, 42, 6 * 7, np.iinfo(np.int64).max])
def test_argmax_out_of_range(bad_value):
    x, rois, g, argmax = _error_case()
    argmax = argmax.copy()
    argmax[2, 1, 0, 1] = bad_value
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.roi_pool_backward(g, rois, argmax, x.shape, 2)
    message = str(excinfo.value)
    assert "argmax" in message and "RoI 2" in message and str(bad_value) in message, message


def test_argmax_out_of_range_is_also_caught_in_c():
    """The C core checks argmax itself (its API is public): PYROI_E_INVALID_ARGMAX."""
    from pyroi import _core

    x, rois, g, argmax = _error_case()
    bad = argmax.copy()
    bad[0, 0, 0, 0] = 6 * 7
    grad_input = np.full(x.shape, 9.0, np.float32)
    with pytest.raises(pyroi.InvalidArgumentError, match="argmax"):
        _core.roi_pool_backward(g, bad, rois[:, 0].astype(np.int64), grad_input, 1.0, 1.0, 1)
    assert np.all(grad_input == 9.0)  # nothing written


# --------------------------------------------------------------------------------------
# the loop orders of the C core are exact
# --------------------------------------------------------------------------------------
# Forward (roi_pool_driver_template.h): "direct" reads the channel planes in place, RoI by RoI (maps
# or bin grids over the lane-major scratch limit); "region" gathers each RoI's region
# channels-last (few RoIs covering little of the map); "image" gathers whole images
# channels-last (RoIs covering at least half of their images' pixels). Outputs of a core's
# L2 cache size or more (at least 1 MiB), C-contiguous, are streamed by the lane orders
# ("+stream"). Backward: "image" blocks once 4 * K * bins
# >= N * H * W (and the map fits the scratch), else "direct". `_core_orders` restates these
# rules so that each case below provably takes the path it is named after.

SCRATCH_BYTES = 64 << 20  # per worker
GROUP_LINE_BYTES = 2 * 64  # a channel group: two 64-byte lane lines per pixel
STREAM_BYTES = max(_core.cache_bytes(2), 1 << 20)  # pyroi_stream_bytes()


def _core_orders(x_shape, rois, output_size, scale, dtype):
    """(forward order, backward order) the C core picks for a C-contiguous output."""
    n, c, h, w = x_shape
    ph, pw = pooled_shape(output_size)
    bins = ph * pw
    T = np.dtype(dtype).type
    if h * w > 0 and (h * w + 5 * bins + 16) * GROUP_LINE_BYTES <= SCRATCH_BYTES:
        area, images = 0, set()
        for roi in rois:
            images.add(int(roi[0]))
            rows, cols = roi_windows(roi, T, scale, ph, pw, h, w)
            extents = []
            for windows in (rows, cols):
                used = [win for win in windows if win[1] > win[0]]
                extents.append(max(e for _, e in used) - min(b for b, _ in used) if used else 0)
            area += extents[0] * extents[1]
        forward = "image" if 2 * area >= len(images) * h * w else "region"
    else:
        forward = "direct"
    # the lane orders' write-out streams; the direct order stores each bin where it computes it
    if forward != "direct" and len(rois) * c * bins * np.dtype(dtype).itemsize >= STREAM_BYTES:
        forward += "+stream"
    backward = ("image" if n > 0 and (h * w + 16) * GROUP_LINE_BYTES <= SCRATCH_BYTES
                and 4 * len(rois) * bins >= n * h * w else "direct")
    return forward, backward


def _boxes_on(rng, num_images, height, width, count, min_size, max_size, scale, margin=0.0):
    """(K, 5) boxes with corners anywhere on the map (plus margin) and sides in the range,
    in input-image pixels (feature-map pixels / scale)."""
    corners = rng.uniform(-margin, [width + margin, height + margin], (count, 2))
    sides = rng.uniform(min_size, max_size, (count, 2))
    boxes = np.concatenate([corners, corners + sides], axis=1) / scale
    images = np.arange(count)[:, None] % num_images
    return np.concatenate([images, boxes], axis=1)


LOOP_ORDER_CASES = {
    # name: (forward order, backward order, x shape without C, K, box sides and margin
    #        around the map in map pixels, output size, spatial scale)
    "image": ("image", "image", (2, 23, 29), 60, (0, 20, 3), (3, 4), 0.8),
    "region": ("region", "direct", (2, 64, 72), 2, (0.5, 6, -6), (3, 4), 0.8),
    # 730 * 730 pixels: two lane lines of each exceed the 64 MiB scratch
    "direct_map": ("direct", "direct", (1, 730, 730), 3, (0.5, 400, 3), (3, 4), 0.8),
    # 330 x 330 bins: the bin tiles alone exceed the scratch
    "direct_bins": ("direct", "image", (1, 9, 11), 2, (2, 12, 3), (330, 330), 1.0),
    "image_stream": ("image+stream", "image", (1, 20, 24), 300, (0, 18, 3), (9, 9), 0.5),
    "region_stream": ("region+stream", "image", (1, 80, 80), 100, (0, 2, 3), (12, 12), 0.25),
}


@functools.lru_cache(maxsize=None)
def loop_order_case(name, channels, dtype_name, kind):
    forward, backward, (n, h, w), k, sides, size, scale = LOOP_ORDER_CASES[name]
    dtype = np.dtype(dtype_name)
    rng = np.random.default_rng(stable_seed("pool-orders", name, channels, dtype_name, kind))
    x = _values(rng, (n, channels, h, w), dtype, kind)
    min_side, max_side, margin = sides
    rois = _boxes_on(rng, n, h, w, k, min_side, max_side, scale, margin).astype(dtype)
    assert _core_orders(x.shape, rois, size, scale, dtype) == (forward, backward)
    g = random_input(rng, (k, channels) + pooled_shape(size), dtype)
    for array in (x, rois, g):
        array.setflags(write=False)
    return x, rois, size, scale, g


LOOP_ORDER_PARAMS = [("image", 5), ("image", 20), ("image", 37), ("image", 48),
                     ("region", 5), ("region", 20), ("region", 37), ("region", 48),
                     ("direct_map", 3), ("direct_bins", 3), ("image_stream", 100),
                     ("region_stream", 150)]


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name,channels", LOOP_ORDER_PARAMS)
def test_loop_orders_bit_exact_with_torchvision(tv, name, channels, dtype, kind):
    """Output (with and without argmax), argmax and the autograd gradient equal torchvision's
    bit for bit on each loop order, and every thread count gives the same bytes."""
    x, rois, size, scale, g = loop_order_case(name, channels, np.dtype(dtype).name, kind)
    tv_out, tv_argmax = tv_roi_pool_argmax(tv, x, rois, size, scale)
    tv_grad = tv.grad("roi_pool", x, rois, g, size, scale)
    assert np.count_nonzero(tv_argmax >= 0) > 0 and np.count_nonzero(tv_grad) > 0
    for threads in (1, 2, 3):
        out, argmax = pyroi.roi_pool(x, rois, size, scale, return_argmax=True,
                                     num_threads=threads)
        np.testing.assert_array_equal(out, tv_out)
        assert np.signbit(out).tobytes() == np.signbit(tv_out).tobytes()
        np.testing.assert_array_equal(argmax, tv_argmax)
        values_only = pyroi.roi_pool(x, rois, size, scale, num_threads=threads)
        assert values_only.tobytes() == out.tobytes()
        grad = pyroi.roi_pool_backward(g, rois, argmax, x.shape, size, scale,
                                       num_threads=threads)
        assert grad.tobytes() == tv_grad.tobytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name,channels", [("image", 37), ("region", 37), ("image_stream", 100),
                                           ("region_stream", 150)])
def test_loop_orders_with_strided_arrays(name, channels, dtype):
    """Views (a transposed input, a strided out= that cannot be streamed, transposed
    gradients) give the bytes of the contiguous call on each loop order."""
    x, rois, size, scale, g = loop_order_case(name, channels, np.dtype(dtype).name, "special")
    out, argmax = pyroi.roi_pool(x, rois, size, scale, return_argmax=True)
    grad = pyroi.roi_pool_backward(g, rois, argmax, x.shape, size, scale)
    x_view = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    buffer = np.full(out.shape[:3] + (2 * out.shape[3],), np.nan, out.dtype)
    view = buffer[..., ::2]
    result = pyroi.roi_pool(x_view, rois, size, scale, out=view)
    assert result is view and view.tobytes() == np.ascontiguousarray(out).tobytes()
    assert np.all(np.isnan(buffer[..., 1::2]))
    g_view = np.ascontiguousarray(g.transpose(3, 2, 1, 0)).transpose(3, 2, 1, 0)
    argmax_view = np.asfortranarray(argmax)
    grad_out = np.full(x.shape[::-1], np.nan, x.dtype).T
    pyroi.roi_pool_backward(g_view, rois, argmax_view, x.shape, size, scale, out=grad_out)
    assert np.ascontiguousarray(grad_out).tobytes() == grad.tobytes()


def _out_past_a_line(shape, dtype, offset_bytes):
    """A C-contiguous out= array that starts offset_bytes past a 64-byte line boundary."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset_bytes
    return raw[start:start + size].view(dtype).reshape(shape)


def test_streamed_output_at_any_line_offset():
    """A streamed output (the VGG conv5 case of the bench: 30 MB) holds the same bytes
    wherever it starts within a 64-byte line. Streaming stores write whole lines only, so a
    run's partial lines at either end take plain stores (an output 4, 16 or 48 bytes past a
    line boundary once took 4-5x as long: see docs/performance-history.md; the piece
    boundaries themselves are checked in tests/c/test_transpose.c)."""
    rng = np.random.default_rng(2026)
    x = rng.standard_normal((1, 512, 38, 50), dtype=np.float32)
    boxes = _boxes_on(rng, 1, 38, 50, 300, 2, 31, 1 / 16).astype(np.float32)
    shape = (300, 512, 7, 7)
    assert _core_orders(x.shape, boxes, 7, 1 / 16, np.float32)[0].endswith("+stream")
    expected = pyroi.roi_pool(x, boxes, 7, 1 / 16, num_threads=1)
    for offset in (0, 4, 16, 48):
        out = _out_past_a_line(shape, np.float32, offset)
        pyroi.roi_pool(x, boxes, 7, 1 / 16, num_threads=1, out=out)
        assert out.tobytes() == expected.tobytes(), offset


def test_streamed_channels_last_output_at_any_line_offset():
    """A streamed channels-last `out=` (the bench's VGG conv5 case) whose bins start on
    64-byte lines is written straight from the tiles, a line per bin and lane group; past a
    line boundary it takes the transposing path. Same bytes either way, with the argmax."""
    rng = np.random.default_rng(2027)
    x = rng.standard_normal((1, 512, 38, 50), dtype=np.float32)
    boxes = _boxes_on(rng, 1, 38, 50, 300, 2, 31, 1 / 16).astype(np.float32)
    expected, expected_argmax = pyroi.roi_pool(x, boxes, 7, 1 / 16, return_argmax=True)
    for offset in (0, 4, 16):
        nbytes = 300 * 7 * 7 * 512 * 4
        raw = np.full(nbytes + 128, 255, np.uint8)  # NaN bytes
        start = (-raw.ctypes.data) % 64 + offset
        out = raw[start:start + nbytes].view(np.float32).reshape(300, 7, 7, 512)
        for threads in (1, 2):
            _, argmax = pyroi.roi_pool(x, boxes, 7, 1 / 16, return_argmax=True,
                                       num_threads=threads, out=out.transpose(0, 3, 1, 2))
            assert np.array_equal(out.transpose(0, 3, 1, 2), expected), (offset, threads)
            assert np.array_equal(argmax, expected_argmax)


@pytest.mark.parametrize("order", ["image", "region"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streamed_channels_last_output_of_every_group_shape(order, dtype):
    """Into a streamed channels-last `out=` on 64-byte lines each row of bins leaves as soon as
    it is pooled, sub-block by sub-block: five lane lines of channels give two whole groups and
    one of a single sub-block (the other holds no channel). Both lane orders, with and without
    the argmax, line-aligned and not: the bytes of the packed result."""
    rng = np.random.default_rng(2028)
    lanes = 64 // np.dtype(dtype).itemsize
    channels = 5 * lanes
    if order == "image":  # many RoIs on a small map
        shape, count, sides, scale = (1, channels, 38, 50), 400, (2, 31), 1 / 16
    else:  # small RoIs far apart on a large map
        shape, count, sides, scale = (1, channels, 160, 160), 300, (1, 5), 1.0
    x = rng.standard_normal(shape).astype(dtype)
    boxes = _boxes_on(rng, 1, shape[2], shape[3], count, *sides, scale).astype(dtype)
    assert _core_orders(x.shape, boxes, 7, scale, dtype)[0] == order + "+stream"
    expected, expected_argmax = pyroi.roi_pool(x, boxes, 7, scale, return_argmax=True)
    for offset in (0, 16):
        out = _out_past_a_line((count, 7, 7, channels), dtype, offset).transpose(0, 3, 1, 2)
        out[...] = np.nan
        pyroi.roi_pool(x, boxes, 7, scale, num_threads=2, out=out)
        assert np.array_equal(out, expected), offset
        out[...] = np.nan
        _, argmax = pyroi.roi_pool(x, boxes, 7, scale, return_argmax=True, out=out)
        assert np.array_equal(out, expected), offset
        assert np.array_equal(argmax, expected_argmax), offset


def test_argmax_checked_by_the_core_names_the_offender():
    """The values of argmax are checked by the C core; the error still names the first
    offending element with the value given (before any conversion), and out is untouched."""
    x, rois, g, argmax = _error_case()
    bad = np.where(argmax >= 0, argmax, 0).astype(np.uint64)
    bad[1, 2, 1, 0] = 2 ** 63 + 5  # negative once converted to int64
    out = np.full(x.shape, 3.0, np.float32)
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.roi_pool_backward(g, rois, bad, x.shape, 2, out=out)
    message = str(excinfo.value)
    assert "argmax[1, 2, 1, 0]" in message and "RoI 1" in message, message
    assert str(2 ** 63 + 5) in message, message
    assert np.all(out == 3.0)
    channels_outer = lambda a: a.transpose(1, 0, 2, 3).copy().transpose(1, 0, 2, 3)  # noqa: E731
    for layout in (np.asfortranarray, channels_outer):
        strided = layout(np.where(argmax >= 0, argmax, -1))
        strided[3, 0, 0, 1] = -7
        with pytest.raises(pyroi.InvalidArgumentError, match=r"argmax\[3, 0, 0, 1\].*-7"):
            pyroi.roi_pool_backward(g, rois, strided, x.shape, 2, out=out)
        assert np.all(out == 3.0)


def test_argmax_check_split_over_threads_finds_a_late_offender():
    """The core's argmax check is split over the workers by RoI: an offender in the last RoI
    is found whatever the thread count, and nothing is written."""
    x, boxes, grad = large_case(np.float32, seed=3)
    _, argmax = pyroi.roi_pool(x, boxes, 7, 0.75, return_argmax=True)
    bad = argmax.copy()
    bad[-1, -1, -1, -1] = x.shape[2] * x.shape[3]
    out = np.full(x.shape, 5.0, np.float32)
    for threads in (1, 2, 3):
        with pytest.raises(pyroi.InvalidArgumentError, match=rf"RoI {len(boxes) - 1}\b"):
            pyroi.roi_pool_backward(grad, boxes, bad, x.shape, 7, 0.75, num_threads=threads,
                                    out=out)
        assert np.all(out == 5.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name,channels", [("image", 37), ("image_stream", 100),
                                           ("direct_bins", 3)])
def test_argmax_read_once_by_the_image_blocks(name, channels, dtype):
    """On the backward's image blocks argmax is read once: each entry is checked where the
    kernel reads it (a chunk of a RoI's bins at a time, here also 81 and 330 x 330 bins per
    channel: partial and many chunks), the blocks are written out only once every entry was
    good. A bad entry anywhere - first, past the first chunk, last - in any layout and at any
    thread count leaves grad_input untouched and fails with the core's status; the good
    argmax gives the bytes of the checked call."""
    from pyroi import _core

    x, rois, size, scale, g = loop_order_case(name, channels, np.dtype(dtype).name, "normal")
    _, argmax = pyroi.roi_pool(x, rois, size, scale, return_argmax=True)
    images = rois[:, 0].astype(np.int64)
    plane = x.shape[2] * x.shape[3]
    expected = pyroi.roi_pool_backward(g, rois, argmax, x.shape, size, scale)
    last = tuple(s - 1 for s in argmax.shape)
    past_chunk = (0, 0) + np.unravel_index(min(70, argmax[0, 0].size - 1), argmax.shape[2:])
    channels_outer = lambda a: a.transpose(1, 0, 2, 3).copy().transpose(1, 0, 2, 3)  # noqa: E731
    for layout in (np.ascontiguousarray, np.asfortranarray, channels_outer):
        for where in ((0, 0, 0, 0), past_chunk, last):
            for value in (-2, plane, 2 ** 62):
                bad = layout(argmax.copy())
                bad[where] = value
                for threads in (1, 2, 3):
                    grad_input = np.full(x.shape, 7.0, dtype)
                    with pytest.raises(pyroi.InvalidArgumentError, match="argmax"):
                        _core.roi_pool_backward(g, bad, images, grad_input, scale, scale,
                                                threads)
                    assert np.all(grad_input == 7.0), (layout, where, value, threads)
        good = layout(argmax)
        for threads in (1, 2, 3):
            grad_input = np.full(x.shape, np.nan, dtype)
            _core.roi_pool_backward(g, good, images, grad_input, scale, scale, threads)
            assert grad_input.tobytes() == expected.tobytes()
