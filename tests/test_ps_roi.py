"""Tests of pyroi.ps_roi_align, pyroi.ps_roi_pool and their backward functions.

Oracles: the loop-based NumPy reference (tests/reference_ps_roi.py, written from
docs/semantics.md §6), torchvision's CPU kernels and autograd when installed, the known
answers of docs/semantics.md §3.6 / §11.6, the adjoint identity (ps_roi_align) and finite
differences.
"""

import functools
import re

import numpy as np
import pytest

import pyroi
from conftest import (DTYPE_IDS, DTYPES, OUT_VIEWS, assert_close, central_differences,
                      channels_last_view, check_out_view, negative_strides_view, random_input,
                      random_rois, rois_to_list, stable_seed, strided_view)
from reference_ps_roi import (ps_roi_align_backward_ref, ps_roi_align_geometry,
                              ps_roi_align_ref, ps_roi_pool_backward_ref, ps_roi_pool_ref)

SAMPLING_RATIOS = (-1, 0, 1, 2, 3)

# Map sizes odd/even/degenerate, output sizes square and not, scales dyadic and not;
# C = C_out * PH * PW input channels.
PS_CONFIGS = {
    "odd9x11": dict(N=2, C_out=2, H=9, W=11, K=15, output_size=(3, 2), scale=0.7),
    "map1x1": dict(N=1, C_out=1, H=1, W=1, K=10, output_size=2, scale=1.0),
    "H1": dict(N=2, C_out=1, H=1, W=13, K=10, output_size=(1, 4), scale=0.5),
    "W1": dict(N=1, C_out=2, H=12, W=1, K=10, output_size=(5, 1), scale=1.0),
    "fpn16": dict(N=2, C_out=2, H=16, W=15, K=16, output_size=3, scale=0.25),
    "list7x5": dict(N=2, C_out=1, H=7, W=5, K=12, output_size=(2, 3), scale=0.3,
                    as_list=True),
}
CONFIG_NAMES = sorted(PS_CONFIGS)


def pair(output_size):
    return (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)


@functools.lru_cache(maxsize=None)
def _case(config, dtype_name):
    cfg = PS_CONFIGS[config]
    dtype = np.dtype(dtype_name)
    ph, pw = pair(cfg["output_size"])
    rng = np.random.default_rng(stable_seed("ps_roi", config, dtype_name))
    x = random_input(rng, (cfg["N"], cfg["C_out"] * ph * pw, cfg["H"], cfg["W"]), dtype)
    rois = random_rois(rng, cfg["N"], cfg["H"], cfg["W"], cfg["K"], dtype,
                       spatial_scale=cfg["scale"])
    if cfg.get("as_list"):
        boxes, rois = rois_to_list(rois, cfg["N"])
    else:
        boxes = rois
    grad = random_input(rng, (cfg["K"], cfg["C_out"], ph, pw), dtype)
    return x, boxes, rois, grad


def ps_case(config, dtype):
    """(x, boxes, rois, grad_output, output_size, spatial_scale): fresh writable copies."""
    x, boxes, rois, grad = _case(config, np.dtype(dtype).name)
    cfg = PS_CONFIGS[config]
    copy = [b.copy() for b in boxes] if isinstance(boxes, list) else boxes.copy()
    return x.copy(), copy, rois.copy(), grad.copy(), cfg["output_size"], cfg["scale"]


@functools.lru_cache(maxsize=None)
def _reference(op, config, dtype_name, sampling_ratio=None):
    x, _, rois, grad, output_size, scale = ps_case(config, dtype_name)
    if op == "align":
        return (ps_roi_align_ref(x, rois, output_size, scale, sampling_ratio),
                ps_roi_align_backward_ref(grad, rois, x.shape, scale, sampling_ratio))
    return (ps_roi_pool_ref(x, rois, output_size, scale),
            ps_roi_pool_backward_ref(grad, rois, x.shape, scale))


def assert_matches_peer(actual, expected, dtype, label=""):
    """Bit for bit in float32 (the documented guarantee), suite tolerance in float64."""
    if np.dtype(dtype) == np.float32:
        np.testing.assert_array_equal(actual, expected, err_msg=label)
        assert actual.dtype == np.float32
    else:
        assert_close(actual, expected, dtype, err_msg=label)


def no_sample_rois(rois, dtype, output_size, spatial_scale, sampling_ratio):
    """RoIs whose torchvision sample count grid_h * grid_w is <= 0 (NaN or -0.0 there)."""
    T = np.dtype(dtype).type
    ph, pw = pair(output_size)
    flags = []
    for roi in rois:
        geometry = ps_roi_align_geometry(roi, T, spatial_scale, ph, pw, sampling_ratio)
        flags.append(geometry[4] * geometry[5] <= 0)
    return np.array(flags, dtype=bool)


# --------------------------------------------------------------------------------------
# against the NumPy reference
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampling_ratio", SAMPLING_RATIOS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_ps_roi_align_matches_reference(config, dtype, sampling_ratio):
    x, boxes, _, grad, output_size, scale = ps_case(config, dtype)
    forward, backward = _reference("align", config, np.dtype(dtype).name, sampling_ratio)
    out = pyroi.ps_roi_align(x, boxes, output_size, scale, sampling_ratio)
    assert isinstance(out, np.ndarray)
    assert_close(out, forward, dtype)
    assert not np.any(np.signbit(out[out == 0]))  # no -0.0 where torchvision has it
    assert_close(pyroi.ps_roi_align_backward(grad, boxes, x.shape, scale, sampling_ratio),
                 backward, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_ps_roi_pool_matches_reference(config, dtype):
    x, boxes, _, grad, output_size, scale = ps_case(config, dtype)
    forward, backward = _reference("pool", config, np.dtype(dtype).name)
    assert_close(pyroi.ps_roi_pool(x, boxes, output_size, scale), forward, dtype)
    assert_close(pyroi.ps_roi_pool_backward(grad, boxes, x.shape, scale), backward, dtype)


@pytest.mark.parametrize("spatial_scale", [0.0, 0.3, 1.0 / 3.0, 2.0])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_unusual_spatial_scales_match_reference(spatial_scale, dtype):
    rng = np.random.default_rng(stable_seed("ps scales", spatial_scale, np.dtype(dtype).name))
    x = random_input(rng, (2, 12, 8, 6), dtype)
    rois = random_rois(rng, 2, 8, 6, 12, dtype, spatial_scale=spatial_scale)
    g = random_input(rng, (12, 2, 3, 2), dtype)
    for sampling_ratio in (-1, 2):
        assert_close(pyroi.ps_roi_align(x, rois, (3, 2), spatial_scale, sampling_ratio),
                     ps_roi_align_ref(x, rois, (3, 2), spatial_scale, sampling_ratio), dtype)
        assert_close(pyroi.ps_roi_align_backward(g, rois, x.shape, spatial_scale,
                                                 sampling_ratio),
                     ps_roi_align_backward_ref(g, rois, x.shape, spatial_scale, sampling_ratio),
                     dtype)
    assert_close(pyroi.ps_roi_pool(x, rois, (3, 2), spatial_scale),
                 ps_roi_pool_ref(x, rois, (3, 2), spatial_scale), dtype)
    assert_close(pyroi.ps_roi_pool_backward(g, rois, x.shape, spatial_scale),
                 ps_roi_pool_backward_ref(g, rois, x.shape, spatial_scale), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_defaults_are_torchvision_defaults(dtype):
    """spatial_scale=1, sampling_ratio=-1 (adaptive)."""
    x, boxes, rois, grad, output_size, _ = ps_case("odd9x11", dtype)
    assert_close(pyroi.ps_roi_align(x, boxes, output_size),
                 ps_roi_align_ref(x, rois, output_size, 1.0, -1), dtype)
    assert_close(pyroi.ps_roi_align_backward(grad, boxes, x.shape),
                 ps_roi_align_backward_ref(grad, rois, x.shape, 1.0, -1), dtype)
    assert_close(pyroi.ps_roi_pool(x, boxes, output_size), ps_roi_pool_ref(x, rois, output_size),
                 dtype)
    assert_close(pyroi.ps_roi_pool_backward(grad, boxes, x.shape),
                 ps_roi_pool_backward_ref(grad, rois, x.shape), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_output_size_int_means_square(dtype):
    rng = np.random.default_rng(3)
    x = random_input(rng, (1, 18, 7, 7), dtype)
    rois = np.array([[0, 0.5, 1.0, 6.0, 5.5]], dtype)
    for op in (pyroi.ps_roi_align, pyroi.ps_roi_pool):
        out = op(x, rois, 3)
        assert out.shape == (1, 2, 3, 3)
        np.testing.assert_array_equal(out, op(x, rois, (3, 3)))


# --------------------------------------------------------------------------------------
# against torchvision (skipped when torch/torchvision are not installed)
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampling_ratio", SAMPLING_RATIOS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_ps_roi_align_matches_torchvision(tv, config, dtype, sampling_ratio):
    """Forward bit for bit in float32 except where torchvision has no samples (NaN / -0.0,
    pyroi +0.0); autograd gradient bit for bit everywhere."""
    x, boxes, rois, grad, output_size, scale = ps_case(config, dtype)
    expected = tv.forward("ps_roi_align", x, boxes, output_size, scale, sampling_ratio)
    out = pyroi.ps_roi_align(x, boxes, output_size, scale, sampling_ratio)
    empty = no_sample_rois(rois, dtype, output_size, scale, sampling_ratio)
    if sampling_ratio > 0:
        assert not empty.any()
    assert_matches_peer(out[~empty], expected[~empty], dtype, "forward")
    assert np.all(out[empty] == 0) and not np.any(np.signbit(out[empty]))
    assert np.all(np.isnan(expected[empty]) | (expected[empty] == 0))
    assert_matches_peer(
        pyroi.ps_roi_align_backward(grad, boxes, x.shape, scale, sampling_ratio),
        tv.grad("ps_roi_align", x, boxes, grad, output_size, scale, sampling_ratio), dtype,
        "backward")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_ps_roi_pool_matches_torchvision(tv, config, dtype):
    x, boxes, _, grad, output_size, scale = ps_case(config, dtype)
    assert_matches_peer(pyroi.ps_roi_pool(x, boxes, output_size, scale),
                        tv.forward("ps_roi_pool", x, boxes, output_size, scale), dtype, "forward")
    assert_matches_peer(pyroi.ps_roi_pool_backward(grad, boxes, x.shape, scale),
                        tv.grad("ps_roi_pool", x, boxes, grad, output_size, scale), dtype,
                        "backward")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reference_matches_torchvision(tv, dtype):
    """The NumPy reference itself reproduces torchvision (outside the documented +0.0)."""
    for config in ("odd9x11", "list7x5"):
        x, boxes, rois, grad, output_size, scale = ps_case(config, dtype)
        for sampling_ratio in (-1, 2):
            forward, backward = _reference("align", config, np.dtype(dtype).name,
                                           sampling_ratio)
            expected = tv.forward("ps_roi_align", x, boxes, output_size, scale, sampling_ratio)
            empty = no_sample_rois(rois, dtype, output_size, scale, sampling_ratio)
            np.testing.assert_array_equal(forward[~empty], expected[~empty])
            np.testing.assert_array_equal(
                backward,
                tv.grad("ps_roi_align", x, boxes, grad, output_size, scale, sampling_ratio))
        forward, backward = _reference("pool", config, np.dtype(dtype).name)
        np.testing.assert_array_equal(forward,
                                      tv.forward("ps_roi_pool", x, boxes, output_size, scale))
        np.testing.assert_array_equal(backward,
                                      tv.grad("ps_roi_pool", x, boxes, grad, output_size, scale))


def _test_ops_case(dtype):
    """torchvision test/test_ops.py RoIOpTester inputs: x = rand(2, 50, 10, 10), four RoIs,
    5x5 output (50 = 2 * 5 * 5), scale 1, adaptive sampling."""
    rng = np.random.default_rng(2024)
    x = rng.uniform(0.0, 1.0, (2, 50, 10, 10)).astype(dtype)
    rois = np.array([[0, 0, 0, 9, 9], [0, 0, 5, 4, 9], [0, 5, 5, 9, 9], [1, 0, 0, 9, 9]], dtype)
    grad = rng.standard_normal((4, 2, 5, 5)).astype(dtype)
    return x, rois, grad


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_torchvision_test_ops_inputs(dtype):
    x, rois, grad = _test_ops_case(dtype)
    # the permuted (non-contiguous) input of torchvision's test too
    permuted = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    for data in (x, permuted):
        assert_close(pyroi.ps_roi_align(data, rois, 5), ps_roi_align_ref(x, rois, 5), dtype)
        assert_close(pyroi.ps_roi_pool(data, rois, 5), ps_roi_pool_ref(x, rois, 5), dtype)
    assert_close(pyroi.ps_roi_align_backward(grad, rois, x.shape),
                 ps_roi_align_backward_ref(grad, rois, x.shape), dtype)
    assert_close(pyroi.ps_roi_pool_backward(grad, rois, x.shape),
                 ps_roi_pool_backward_ref(grad, rois, x.shape), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_torchvision_test_ops_inputs_match_torchvision(tv, dtype):
    x, rois, grad = _test_ops_case(dtype)
    for op in ("ps_roi_align", "ps_roi_pool"):
        assert_matches_peer(getattr(pyroi, op)(x, rois, 5), tv.forward(op, x, rois, 5), dtype, op)
    assert_matches_peer(pyroi.ps_roi_align_backward(grad, rois, x.shape),
                        tv.grad("ps_roi_align", x, rois, grad, 5), dtype, "align backward")
    assert_matches_peer(pyroi.ps_roi_pool_backward(grad, rois, x.shape),
                        tv.grad("ps_roi_pool", x, rois, grad, 5), dtype, "pool backward")


# boxes on a 6x7 map with a 2x2 output (docs/semantics.md §3.6, §6.3)
ZERO_SIZE = [1, 1, 1, 4]          # zero width
INVERTED_X = [4, 1, 1, 4]         # inverted on x only, |size| / bins >= 1: ceil <= -1
INVERTED_Y_SMALL = [1, 2.2, 4, 1]  # inverted on y only, |size| / bins < 1: ceil = 0
INVERTED_BOTH = [4, 4, 1, 1]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_ps_roi_align_without_samples_gives_positive_zero(dtype):
    """pyroi's documented choice: +0.0 wherever adaptive sampling yields no sample."""
    x = np.random.default_rng(9).standard_normal((1, 4, 6, 7)).astype(dtype)
    rois = np.array([[0] + b for b in (ZERO_SIZE, INVERTED_X, INVERTED_Y_SMALL, INVERTED_BOTH)],
                    dtype)
    for sampling_ratio in (-1, 0):
        out = pyroi.ps_roi_align(x, rois, 2, 1.0, sampling_ratio)
        assert np.all(out == 0) and not np.any(np.signbit(out))
        grad = pyroi.ps_roi_align_backward(np.ones_like(out), rois, x.shape, 1.0, sampling_ratio)
        assert not np.any(grad)
    # with a fixed sampling ratio every one of them samples the map
    out = pyroi.ps_roi_align(x, rois, 2, 1.0, 2)
    assert np.all(out != 0)
    assert_close(out, ps_roi_align_ref(x, rois, 2, 1.0, 2), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_ps_roi_align_without_samples_vs_torchvision(tv, dtype):
    """torchvision: NaN for a zero count, -0.0 for a negative one, +0.0 for a box inverted
    on both axes; an inverted box with a fixed ratio is a mirrored crop in both."""
    x = np.random.default_rng(9).standard_normal((1, 4, 6, 7)).astype(dtype)

    def both(box, sampling_ratio):
        rois = np.array([[0] + box], dtype)
        return (pyroi.ps_roi_align(x, rois, 2, 1.0, sampling_ratio),
                tv.forward("ps_roi_align", x, rois, 2, 1.0, sampling_ratio))

    ours, theirs = both(ZERO_SIZE, -1)
    assert np.all(np.isnan(theirs)) and np.all(ours == 0)
    ours, theirs = both(INVERTED_Y_SMALL, -1)
    assert np.all(np.isnan(theirs)) and np.all(ours == 0)
    ours, theirs = both(INVERTED_X, -1)
    assert np.all(theirs == 0) and np.all(np.signbit(theirs))
    assert np.all(ours == 0) and not np.any(np.signbit(ours))
    ours, theirs = both(INVERTED_BOTH, -1)
    np.testing.assert_array_equal(ours, theirs)
    assert not np.any(np.signbit(theirs))
    for box in (ZERO_SIZE, INVERTED_X, INVERTED_Y_SMALL, INVERTED_BOTH):
        ours, theirs = both(box, 2)
        assert_matches_peer(ours, theirs, dtype, str(box))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_ps_roi_pool_rounds_half_away_from_zero(dtype):
    """2.5 -> 3, 1.5 -> 2, -0.5 -> -1 (C round, not round-half-to-even)."""
    x = np.arange(100, dtype=dtype).reshape(1, 1, 10, 10) + 1
    rois = np.array([[0, 2.5, 2.5, 4.5, 4.5],      # pixels 3..4: mean of 34, 35, 44, 45
                     [0, 1.5, 1.5, 1.5, 1.5],      # pixel 2 (size forced to 1)
                     [0, -0.5, -0.5, -0.5, -0.5],  # starts at -1: window [-1, 0) is empty
                     [0, -2.5, 0, 1.5, 0.5]],      # columns -3 .. 1 clamp to 0 .. 1
                    dtype)
    out = pyroi.ps_roi_pool(x, rois, 1)
    np.testing.assert_array_equal(out[:, 0, 0, 0], np.array([39.5, 23, 0, 1.5], dtype))
    assert_close(out, ps_roi_pool_ref(x, rois, 1), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_ps_roi_pool_inverted_and_tiny_boxes_use_size_one(dtype):
    """Size max(end - start, 1): an inverted or empty box pools one pixel from its start."""
    x = np.arange(4 * 36, dtype=dtype).reshape(1, 4, 6, 6)
    rois = np.array([[0, 4, 3, 1, 1], [0, 2.2, 3.4, 2.2, 3.4]], dtype)
    out = pyroi.ps_roi_pool(x, rois, 2)
    # bins of size 0.5: bin 0 is pixel start, bin 1 is pixel start too (floor 0 .. ceil 1)
    for k, (row, col) in enumerate([(3, 4), (3, 2)]):
        for c in range(4):
            assert out[k, 0, c // 2, c % 2] == x[0, c, row, col]
    assert_close(out, ps_roi_pool_ref(x, rois, 2), dtype)


# --------------------------------------------------------------------------------------
# known answers
# --------------------------------------------------------------------------------------

def _quirk_case(dtype):
    """docs/semantics.md §6.2 / §11.6: arange(100) as (1, 4, 5, 5), RoI [0, 0, 0, 5, 5], 2x2."""
    return (np.arange(100, dtype=dtype).reshape(1, 4, 5, 5),
            np.array([[0, 0, 0, 5, 5]], dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_known_answer_ps_roi_pool_forward(dtype):
    x, rois = _quirk_case(dtype)
    out = pyroi.ps_roi_pool(x, rois, 2)
    np.testing.assert_array_equal(out, np.array([[[[6, 32.5], [63.5, 90]]]], dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_known_answer_ps_roi_pool_gradient_spread(dtype):
    """Bin (1, 1) averages rows/cols 2..3 only in the forward, but its gradient is spread as
    1/9 over rows/cols 2..4 (torchvision's backward clamps to H, not H - 1)."""
    x, rois = _quirk_case(dtype)
    grad = pyroi.ps_roi_pool_backward(np.ones((1, 1, 2, 2), dtype), rois, x.shape)
    ninth = np.asarray(1, dtype) / np.asarray(9, dtype)
    expected = np.zeros((1, 4, 5, 5), dtype)
    expected[0, 0, 0:3, 0:3] = ninth
    expected[0, 1, 0:3, 2:5] = ninth
    expected[0, 2, 2:5, 0:3] = ninth
    expected[0, 3, 2:5, 2:5] = ninth
    np.testing.assert_array_equal(grad, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_known_answer_ps_roi_pool_quirk_vs_torchvision(tv, dtype):
    x, rois = _quirk_case(dtype)
    g = np.random.default_rng(4).standard_normal((1, 1, 2, 2)).astype(dtype)
    np.testing.assert_array_equal(pyroi.ps_roi_pool(x, rois, 2),
                                  tv.forward("ps_roi_pool", x, rois, 2))
    np.testing.assert_array_equal(pyroi.ps_roi_pool_backward(g, rois, x.shape),
                                  tv.grad("ps_roi_pool", x, rois, g, 2))


def test_ps_roi_pool_backward_is_not_the_forward_adjoint_at_the_far_border():
    """The reproduced quirk: the true derivative of the forward's bin (1, 1) is 1/4 on
    rows/cols 2..3, torchvision's (and pyroi's) backward gives 1/9 on rows/cols 2..4."""
    x, rois = _quirk_case(np.float64)
    g = np.zeros((1, 1, 2, 2))
    g[0, 0, 1, 1] = 1.0
    grad = pyroi.ps_roi_pool_backward(g, rois, x.shape)
    derivative = np.zeros_like(x)
    for index in np.ndindex(*x.shape):  # the forward is linear: unit responses are exact
        unit = np.zeros_like(x)
        unit[index] = 1.0
        derivative[index] = np.vdot(pyroi.ps_roi_pool(unit, rois, 2), g)
    expected_derivative = np.zeros_like(x)
    expected_derivative[0, 3, 2:4, 2:4] = 0.25
    np.testing.assert_array_equal(derivative, expected_derivative)
    expected_grad = np.zeros_like(x)
    expected_grad[0, 3, 2:5, 2:5] = 1.0 / 9.0
    np.testing.assert_array_equal(grad, expected_grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_ps_roi_pool_float64_backward_rounds_in_float32(dtype):
    """torchvision's CPU backward rounds box corners with roundf: x1 = 2.4999999999 (a
    float64 value below 2.5) is 2 in the forward but 3 in the backward; in float32 the
    coordinate is 2.5 and both round to 3."""
    x = np.arange(4 * 64, dtype=dtype).reshape(1, 4, 8, 8)
    rois = np.array([[0, 2.4999999999, 1.0, 6.0, 6.0]], dtype)
    out = pyroi.ps_roi_pool(x, rois, 2)
    grad = pyroi.ps_roi_pool_backward(np.ones((1, 1, 2, 2), dtype), rois, x.shape)
    # channel 0 = bin (0, 0): rows 1..3; columns from the rounded x1 to x1 + ceil(bin_w)
    forward_columns = [2, 3] if dtype == np.float64 else [3, 4]
    np.testing.assert_array_equal(out[0, 0, 0, 0], x[0, 0, 1:4, forward_columns].mean())
    assert sorted(set(np.nonzero(grad[0, 0])[1])) == [3, 4]
    assert_close(grad, ps_roi_pool_backward_ref(np.ones((1, 1, 2, 2), dtype), rois, x.shape),
                 dtype)


def test_ps_roi_pool_float64_backward_rounding_vs_torchvision(tv):
    x = np.random.default_rng(8).standard_normal((1, 4, 8, 8))
    rois = np.array([[0, 2.4999999999, 1.0, 6.0, 6.0], [0, 0.5, 1.4999999999, 4.4999999, 7.0]])
    g = np.random.default_rng(9).standard_normal((2, 1, 2, 2))
    np.testing.assert_array_equal(pyroi.ps_roi_pool(x, rois, 2),
                                  tv.forward("ps_roi_pool", x, rois, 2))
    np.testing.assert_array_equal(pyroi.ps_roi_pool_backward(g, rois, x.shape),
                                  tv.grad("ps_roi_pool", x, rois, g, 2))


# docs/semantics.md §3.6, aligned=True column: ps_roi_align's geometry (offset 0.5, no clamp)
EDGE_TABLE = [
    ([1, 1, 1, 4], 2, [9.25, 9.25, 19.75, 19.75]),
    ([2, 2, 2, 2], 2, [12, 12, 12, 12]),
    ([4, 4, 1, 1], 2, [22, 20.5, 11.5, 10]),
    ([5, 4, 9, 8], -1, [37, 18.75, 20.25, 10.25]),
    ([-20, -20, -10, -10], -1, [0, 0, 0, 0]),
    ([-20, -20, -10, -10], 2, [0, 0, 0, 0]),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("box, sampling_ratio, expected", EDGE_TABLE,
                         ids=[f"{b}_sr{s}" for b, s, _ in EDGE_TABLE])
def test_known_answer_ps_roi_align_edge_table(box, sampling_ratio, expected, dtype):
    """The same plane in all 4 channels: bin (ph, pw) reads channel ph * 2 + pw, which
    holds the same values, so the output is RoIAlign's (aligned) edge table."""
    plane = np.arange(42, dtype=dtype).reshape(6, 7)
    x = np.broadcast_to(plane, (1, 4, 6, 7))
    out = pyroi.ps_roi_align(x, np.array([[0] + box], dtype), 2, 1.0, sampling_ratio)
    np.testing.assert_array_equal(out, np.array(expected, dtype).reshape(1, 1, 2, 2))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_channel_mapping(dtype):
    """Output (c_out, ph, pw) reads input channel (c_out * PH + ph) * PW + pw: with constant
    planes equal to their channel index, the output is that index."""
    ph, pw, c_out = 2, 3, 2
    x = np.broadcast_to(np.arange(c_out * ph * pw, dtype=dtype)[None, :, None, None],
                        (1, c_out * ph * pw, 5, 6))
    rois = np.array([[0, 0.5, 0.5, 4.5, 3.5]], dtype)
    expected = np.arange(c_out * ph * pw, dtype=dtype).reshape(1, c_out, ph, pw)
    np.testing.assert_array_equal(pyroi.ps_roi_pool(x, rois, (ph, pw)), expected)
    np.testing.assert_allclose(pyroi.ps_roi_align(x, rois, (ph, pw), 1.0, 2), expected,
                               rtol=1e-6)
    # the gradient of output (c, i, j) lands in input channel (c * ph + i) * pw + j only
    for c, i, j in np.ndindex(c_out, ph, pw):
        g = np.zeros((1, c_out, ph, pw), dtype)
        g[0, c, i, j] = 1
        channel = (c * ph + i) * pw + j
        for backward in (pyroi.ps_roi_pool_backward, pyroi.ps_roi_align_backward):
            grad = backward(g, rois, x.shape)
            assert set(np.nonzero(grad)[1]) == {channel}, backward.__name__


# --------------------------------------------------------------------------------------
# adjoint identity and finite differences (float64)
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampling_ratio", [-1, 1, 3])
@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_ps_roi_align_adjoint_identity(config, sampling_ratio):
    """<ps_roi_align(x), g> == <x, ps_roi_align_backward(g)>: the exact adjoint."""
    x, boxes, _, grad, output_size, scale = ps_case(config, np.float64)
    forward = pyroi.ps_roi_align(x, boxes, output_size, scale, sampling_ratio)
    backward = pyroi.ps_roi_align_backward(grad, boxes, x.shape, scale, sampling_ratio)
    lhs = np.vdot(forward, grad)
    rhs = np.vdot(x, backward)
    magnitude = np.vdot(np.abs(forward), np.abs(grad)) + np.vdot(np.abs(x), np.abs(backward))
    assert magnitude > 0
    assert abs(lhs - rhs) <= 1e-12 * magnitude, (lhs, rhs, magnitude)


def test_ps_roi_align_matchescentral_differences():
    rng = np.random.default_rng(19)
    shape = (2, 6, 5, 6)  # C_out = 1, 2x3 output
    x = random_input(rng, shape, np.float64)
    rois = np.array([[0, 0.3, 0.7, 4.2, 3.6], [1, 1.15, 0.4, 5.35, 4.45],
                     [0, 2.6, 1.3, 3.9, 2.2], [1, -0.6, 2.1, 2.7, 5.3]], np.float64)
    g = random_input(rng, (4, 1, 2, 3), np.float64)
    grad = pyroi.ps_roi_align_backward(g, rois, shape, 1.0, 2)
    numeric = central_differences(lambda v: pyroi.ps_roi_align(v, rois, (2, 3), 1.0, 2), x, g)
    assert np.count_nonzero(grad) > 20
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


def test_ps_roi_pool_matches_central_differences_inside_the_map():
    """Away from the far border (every window ends before H - 1 and W - 1) the torchvision
    backward is the derivative of the forward."""
    rng = np.random.default_rng(23)
    shape = (2, 6, 8, 9)
    x = random_input(rng, shape, np.float64)
    rois = np.array([[0, 0.3, 0.7, 4.2, 3.6], [1, 1.15, 0.4, 5.35, 4.45],
                     [0, 2.6, 1.3, 3.9, 2.2], [1, -0.6, 2.1, 2.7, 5.3]], np.float64)
    g = random_input(rng, (4, 1, 2, 3), np.float64)
    grad = pyroi.ps_roi_pool_backward(g, rois, shape)
    numeric = central_differences(lambda v: pyroi.ps_roi_pool(v, rois, (2, 3)), x, g)
    assert np.count_nonzero(grad) > 20
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------------------
# memory layouts, box forms, out=
# --------------------------------------------------------------------------------------

def _layout_case(dtype):
    rng = np.random.default_rng(29)
    x = random_input(rng, (2, 24, 9, 11), dtype)  # C_out 2, 3x4 output
    rois = random_rois(rng, 2, 9, 11, 14, dtype, spatial_scale=0.5)
    return x, rois, dict(output_size=(3, 4), spatial_scale=0.5)


OPS = {
    "align": (lambda x, b, **kw: pyroi.ps_roi_align(x, b, **kw, sampling_ratio=-1),
              lambda g, b, s, **kw: pyroi.ps_roi_align_backward(g, b, s, **kw,
                                                                sampling_ratio=-1)),
    "pool": (pyroi.ps_roi_pool, pyroi.ps_roi_pool_backward),
}


def each_op_and_dtype(test):
    """Parametrizes ``test(op, dtype, ...)`` over both PS operators and every dtype."""
    return pytest.mark.parametrize("op", sorted(OPS))(
        pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)(test))


def _layout_run(op, dtype):
    """The operator's forward and backward, and the layout case: x, rois, params."""
    forward, backward = OPS[op]
    return (forward, backward) + _layout_case(dtype)


def _views(x):
    return {
        "nhwc_transposed": channels_last_view(x),
        "sliced_steps": strided_view(x, (2, 3, 2, 3)),
        "negative_strides": negative_strides_view(x),
        "fortran": np.asfortranarray(x),
    }


@each_op_and_dtype
def test_input_layouts_equal_contiguous(op, dtype):
    forward, _, x, rois, params = _layout_run(op, dtype)
    expected = forward(x, rois, **params)
    for name, view in _views(x).items():
        np.testing.assert_array_equal(forward(view, rois, **params), expected, err_msg=name)
    # broadcast: one row repeated down the map (zero stride along H)
    row = random_input(np.random.default_rng(31), (2, 24, 1, 11), dtype)
    view = np.broadcast_to(row, (2, 24, 9, 11))
    np.testing.assert_array_equal(forward(view, rois, **params),
                                  forward(view.copy(), rois, **params))


@each_op_and_dtype
def test_grad_output_layouts_equal_contiguous(op, dtype):
    _, backward, x, rois, params = _layout_run(op, dtype)
    rng = np.random.default_rng(37)
    g = random_input(rng, (len(rois), 2, 3, 4), dtype)
    expected = backward(g, rois, x.shape, spatial_scale=params["spatial_scale"])
    for name, view in _views(g).items():
        np.testing.assert_array_equal(
            backward(view, rois, x.shape, spatial_scale=params["spatial_scale"]), expected,
            err_msg=name)
    broadcast = np.broadcast_to(random_input(rng, (1, 2, 1, 4), dtype), g.shape)
    np.testing.assert_array_equal(
        backward(broadcast, rois, x.shape, spatial_scale=params["spatial_scale"]),
        backward(broadcast.copy(), rois, x.shape, spatial_scale=params["spatial_scale"]))


@each_op_and_dtype
def test_box_forms_are_equivalent(op, dtype):
    forward, backward, x, rois, params = _layout_run(op, dtype)
    expected = forward(x, rois, **params)
    g = random_input(np.random.default_rng(41), expected.shape, dtype)
    expected_grad = backward(g, rois, x.shape, spatial_scale=params["spatial_scale"])
    coords, images = rois[:, 1:], rois[:, 0].astype(np.int32)
    np.testing.assert_array_equal(forward(x, coords, **params, batch_indices=images), expected)
    np.testing.assert_array_equal(
        backward(g, coords, x.shape, spatial_scale=params["spatial_scale"],
                 batch_indices=images), expected_grad)
    np.testing.assert_array_equal(forward(x, np.asfortranarray(rois), **params), expected)
    np.testing.assert_array_equal(forward(x, rois[::-1], **params), expected[::-1])
    as_list, reordered = rois_to_list(rois, 2)
    order = np.argsort(rois[:, 0], kind="stable")
    np.testing.assert_array_equal(forward(x, as_list, **params), expected[order])
    np.testing.assert_array_equal(
        backward(g[order], as_list, x.shape, spatial_scale=params["spatial_scale"]),
        expected_grad)
    assert reordered.shape == rois.shape


@each_op_and_dtype
def test_forward_out(op, dtype):
    forward, _, x, rois, params = _layout_run(op, dtype)
    expected = forward(x, rois, **params)
    for view_kind in OUT_VIEWS:
        check_out_view(lambda out: forward(x, rois, **params, out=out), expected, view_kind)


@each_op_and_dtype
def test_backward_out_overwrites(op, dtype):
    _, backward, x, rois, params = _layout_run(op, dtype)
    g = random_input(np.random.default_rng(43), (len(rois), 2, 3, 4), dtype)
    scale = params["spatial_scale"]
    expected = backward(g, rois, x.shape, spatial_scale=scale)
    out = np.full(x.shape, 7.0, dtype=dtype)
    assert backward(g, rois, x.shape, spatial_scale=scale, out=out) is out
    np.testing.assert_array_equal(out, expected)
    buffer = np.full(x.shape[:3] + (2 * x.shape[3],), -3.0, dtype=dtype)
    view = buffer[..., ::2]
    assert backward(g, rois, x.shape, spatial_scale=scale, out=view) is view
    np.testing.assert_array_equal(view, expected)
    assert np.all(buffer[..., 1::2] == -3.0)
    transposed = np.full(x.shape[::-1], np.nan, dtype=dtype).T
    backward(g, rois, x.shape, spatial_scale=scale, out=transposed)
    np.testing.assert_array_equal(transposed, expected)


# --------------------------------------------------------------------------------------
# empty shapes
# --------------------------------------------------------------------------------------

@each_op_and_dtype
def test_no_rois(op, dtype):
    forward, backward = OPS[op]
    x = random_input(np.random.default_rng(1), (2, 12, 5, 6), dtype)
    out = forward(x, np.zeros((0, 5), dtype), output_size=(2, 3))
    assert out.shape == (0, 2, 2, 3) and out.dtype == dtype
    out = forward(x, [np.zeros((0, 4), dtype)] * 2, output_size=(2, 3))
    assert out.shape == (0, 2, 2, 3)
    prefilled = np.full(x.shape, 5.0, dtype)
    grad = backward(np.zeros((0, 2, 2, 3), dtype), np.zeros((0, 5), dtype), x.shape,
                    out=prefilled)
    assert grad is prefilled and not np.any(grad)


@pytest.mark.parametrize("shape", [(0, 12, 5, 6), (2, 0, 5, 6), (2, 12, 0, 6), (2, 12, 5, 0),
                                   (2, 0, 0, 0)], ids=["N0", "C0", "H0", "W0", "CHW0"])
@each_op_and_dtype
def test_empty_map_gives_zeros(shape, op, dtype):
    forward, backward = OPS[op]
    rois = np.array([[0, 0, 0, 3, 3], [1, -1, -1, 0.5, 0.5], [1, 2, 1, 9, 9]], dtype)
    if shape[0] == 0:
        rois = rois[:0]
    c_out = shape[1] // 6
    out = forward(np.zeros(shape, dtype), rois, output_size=(2, 3))
    assert out.shape == (len(rois), c_out, 2, 3) and not np.any(out)
    grad = backward(np.ones((len(rois), c_out, 2, 3), dtype), rois, shape)
    assert grad.shape == shape and grad.dtype == dtype and not np.any(grad)


@pytest.mark.parametrize("op", sorted(OPS))
def test_empty_output_with_huge_output_size_is_instant(op):
    """No channels: nothing is computed, the boxes are still validated (no walk over 2^60
    bins)."""
    forward, backward = OPS[op]
    x = np.zeros((1, 0, 4, 4), np.float32)
    rois = np.array([[0, 0, 0, 2, 2]], np.float32)
    size = (1 << 30, 1 << 30)
    assert forward(x, rois, output_size=size).shape == (1, 0) + size
    grad = np.zeros((1, 0) + size, np.float32)
    assert backward(grad, rois, x.shape).shape == x.shape
    rois[0, 3] = np.nan
    with pytest.raises(pyroi.BoxError):
        forward(x, rois, output_size=size)


# --------------------------------------------------------------------------------------
# threads
# --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _threads_case(dtype_name):
    """Large enough (about 10^6 operations per call) that every call uses several threads;
    C_out = 4 output channels, the backward's unit of parallel work."""
    rng = np.random.default_rng(47)
    dtype = np.dtype(dtype_name)
    x = rng.standard_normal((2, 4 * 49, 40, 44)).astype(dtype)
    k = 600
    corners = rng.uniform(-8, 52, (k, 2))
    sizes = rng.uniform(0, 30, (k, 2))
    boxes = np.concatenate([(np.arange(k) % 2)[:, None], corners, corners + sizes],
                           axis=1).astype(dtype)
    grad = rng.standard_normal((k, 4, 7, 7)).astype(dtype)
    return x, boxes, grad


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_bit_identical_for_every_thread_count(dtype):
    x, boxes, grad = _threads_case(np.dtype(dtype).name)
    calls = {
        "align": (lambda t: pyroi.ps_roi_align(x, boxes, 7, 0.75, 0, num_threads=t),
                  lambda t: pyroi.ps_roi_align_backward(grad, boxes, x.shape, 0.75, 0,
                                                        num_threads=t)),
        "align_sr4": (lambda t: pyroi.ps_roi_align(x, boxes, 7, 0.75, 4, num_threads=t),
                      lambda t: pyroi.ps_roi_align_backward(grad, boxes, x.shape, 0.75, 4,
                                                            num_threads=t)),
        "pool": (lambda t: pyroi.ps_roi_pool(x, boxes, 7, 0.75, num_threads=t),
                 lambda t: pyroi.ps_roi_pool_backward(grad, boxes, x.shape, 0.75,
                                                      num_threads=t)),
    }
    for name, (forward, backward) in calls.items():
        y1, g1 = forward(1), backward(1)
        assert np.count_nonzero(y1) and np.count_nonzero(g1)
        for threads in (2, 3, None):
            assert forward(threads).tobytes() == y1.tobytes(), (name, threads)
            assert backward(threads).tobytes() == g1.tobytes(), (name, threads)


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------

def assert_names(excinfo, *names):
    message = str(excinfo.value)
    assert any(re.search(r"(?<![A-Za-z0-9_])" + re.escape(n) + r"(?![A-Za-z0-9_])", message,
                         re.IGNORECASE) for n in names), (names, message)


def _valid(dtype=np.float32):
    x = np.random.default_rng(0).standard_normal((2, 8, 6, 7)).astype(dtype)  # C_out 2, 2x2
    rois = np.array([[0, 0, 0, 4, 4], [1, 1, 1, 5, 3], [0, 2, 1, 6, 5], [1, 0.5, 0.5, 2, 2]],
                    dtype)
    return x, rois, np.ones((4, 2, 2, 2), dtype)


FORWARDS = {"ps_roi_align": pyroi.ps_roi_align, "ps_roi_pool": pyroi.ps_roi_pool}
BACKWARDS = {"ps_roi_align_backward": pyroi.ps_roi_align_backward,
             "ps_roi_pool_backward": pyroi.ps_roi_pool_backward}


def test_valid_arguments_do_not_raise():
    x, rois, g = _valid()
    for forward in FORWARDS.values():
        assert forward(x, rois, 2).shape == (4, 2, 2, 2)
    for backward in BACKWARDS.values():
        assert backward(g, rois, x.shape).shape == x.shape


@pytest.mark.parametrize("name", sorted(FORWARDS))
@pytest.mark.parametrize("output_size, channels", [(2, 6), (3, 8), ((2, 3), 8), (1 << 20, 8)],
                         ids=str)
def test_channels_not_a_multiple_of_the_pooled_size(name, output_size, channels):
    x = np.zeros((1, channels, 4, 4), np.float32)
    with pytest.raises(pyroi.ShapeError) as excinfo:
        FORWARDS[name](x, np.array([[0, 0, 0, 2, 2]], np.float32), output_size)
    assert isinstance(excinfo.value, ValueError)
    assert_names(excinfo, "input")
    assert_names(excinfo, "output_size")
    assert str(channels) in str(excinfo.value)


@pytest.mark.parametrize("name", sorted(BACKWARDS))
def test_backward_channel_errors(name):
    x, rois, g = _valid()
    backward = BACKWARDS[name]
    with pytest.raises(pyroi.ShapeError) as excinfo:
        backward(g, rois, (2, 7, 6, 7))  # not a multiple of 2 * 2
    assert_names(excinfo, "input_shape")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        backward(g, rois, (2, 12, 6, 7))  # a multiple, but grad_output has 2 * 4 = 8
    assert_names(excinfo, "input_shape", "grad_output")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        backward(g[:3], rois, x.shape)
    assert_names(excinfo, "boxes", "grad_output")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        backward(g[0], rois, x.shape)
    assert_names(excinfo, "grad_output")
    with pytest.raises(pyroi.DTypeError) as excinfo:
        backward(g.astype(np.int32), rois, x.shape)
    assert_names(excinfo, "grad_output")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        backward(g, rois, (2, 8, 6))
    assert_names(excinfo, "input_shape")
    with pytest.raises(pyroi.DTypeError) as excinfo:
        backward(g, rois.astype(np.float64), x.shape)
    assert_names(excinfo, "boxes")


@pytest.mark.parametrize("name", sorted(FORWARDS))
def test_scalar_argument_errors(name):
    x, rois, _ = _valid()
    forward = FORWARDS[name]
    for output_size in (0, -1, (2, 0), (2, 2, 2)):
        with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
            forward(x, rois, output_size)
        assert_names(excinfo, "output_size")
    for scale in (-1.0, np.nan, np.inf):
        with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
            forward(x, rois, 2, scale)
        assert_names(excinfo, "spatial_scale")
    for threads in (0, -1):
        with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
            forward(x, rois, 2, num_threads=threads)
        assert_names(excinfo, "num_threads")
    with pytest.raises(pyroi.DTypeError) as excinfo:
        forward(x.astype(np.int32), rois, 2)
    assert_names(excinfo, "input")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        forward(x[0], rois, 2)
    assert_names(excinfo, "input")


def test_sampling_ratio_errors():
    x, rois, g = _valid()
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.ps_roi_align(x, rois, 2, 1.0, 2**31)
    assert_names(excinfo, "sampling_ratio")
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.ps_roi_align_backward(g, rois, x.shape, 1.0, 2**40)
    assert_names(excinfo, "sampling_ratio")
    with pytest.raises(pyroi.ArgumentTypeError) as excinfo:
        pyroi.ps_roi_align(x, rois, 2, 1.0, 1.5)
    assert_names(excinfo, "sampling_ratio")


@pytest.mark.parametrize("name", sorted(FORWARDS) + sorted(BACKWARDS))
@pytest.mark.parametrize("value", [np.nan, np.inf], ids=["nan", "inf"])
def test_nonfinite_box_names_the_roi(name, value):
    x, rois, g = _valid()
    rois[2, 3] = value
    with pytest.raises(pyroi.BoxError) as excinfo:
        if name in FORWARDS:
            FORWARDS[name](x, rois, 2)
        else:
            BACKWARDS[name](g, rois, x.shape)
    assert_names(excinfo, "boxes")
    assert re.search(r"RoI 2\b", str(excinfo.value)), str(excinfo.value)


@pytest.mark.parametrize("name", sorted(FORWARDS) + sorted(BACKWARDS))
def test_box_overflowing_after_scaling_names_the_roi(name):
    """float32 coordinate * spatial_scale overflows to inf: rejected, naming the RoI."""
    x, rois, g = _valid()
    rois[3, 3] = 3e38
    with pytest.raises(pyroi.BoxError) as excinfo:
        if name in FORWARDS:
            FORWARDS[name](x, rois, 2, 2.0)
        else:
            BACKWARDS[name](g, rois, x.shape, 2.0)
    assert re.search(r"RoI 3\b", str(excinfo.value)), str(excinfo.value)


def test_adaptive_grid_too_large_names_the_roi():
    x, rois, g = _valid(np.float64)
    rois[1, 3] = 1e15
    with pytest.raises(pyroi.BoxError) as excinfo:
        pyroi.ps_roi_align(x, rois, 2)
    assert re.search(r"RoI 1\b", str(excinfo.value)), str(excinfo.value)
    with pytest.raises(pyroi.BoxError):
        pyroi.ps_roi_align_backward(g, rois, x.shape)
    # a fixed ratio samples it, and ps_roi_pool has no grid: both fine
    assert pyroi.ps_roi_align(x, rois, 2, 1.0, 2).shape == (4, 2, 2, 2)
    assert np.all(np.isfinite(pyroi.ps_roi_pool(x, rois, 2)))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_huge_finite_boxes_are_defined(dtype):
    """Coordinates far beyond torchvision's 32-bit range: ps_roi_pool saturates them,
    ps_roi_align with a fixed ratio samples outside the map; results are finite."""
    x, _, _ = _valid(dtype)
    big = 1e30 if dtype == np.float32 else 1e300
    rois = np.array([[0, 0, 0, big, big], [1, -big, -big, 0, 0], [0, -big, 1, big, 3]], dtype)
    pool = pyroi.ps_roi_pool(x, rois, 2)
    assert np.all(np.isfinite(pool))
    # RoI 0 starts at pixel 0: its first bin is the whole forward-clamped map
    np.testing.assert_allclose(pool[0, :, 0, 0], x[0, [0, 4], :5, :6].mean(axis=(1, 2)),
                               rtol=1e-5)
    grad = pyroi.ps_roi_pool_backward(np.ones_like(pool), rois, x.shape)
    assert np.all(np.isfinite(grad))
    align = pyroi.ps_roi_align(x, rois, 2, 1.0, 2)
    assert np.all(np.isfinite(align))
    assert_close(align, ps_roi_align_ref(x, rois, 2, 1.0, 2), dtype)


@pytest.mark.parametrize("name", sorted(FORWARDS) + sorted(BACKWARDS))
def test_bad_batch_index_names_the_roi(name):
    x, rois, g = _valid()
    rois[1, 0] = 2  # N = 2
    with pytest.raises(pyroi.BatchIndexError) as excinfo:
        if name in FORWARDS:
            FORWARDS[name](x, rois, 2)
        else:
            BACKWARDS[name](g, rois, x.shape)
    assert re.search(r"RoI 1\b", str(excinfo.value)), str(excinfo.value)
    with pytest.raises(pyroi.BatchIndexError):
        if name in FORWARDS:
            FORWARDS[name](x, rois[:, 1:], 2, batch_indices=np.array([0, 1, -1, 0]))
        else:
            BACKWARDS[name](g, rois[:, 1:], x.shape, batch_indices=np.array([0, 1, -1, 0]))


@pytest.mark.parametrize("name", sorted(FORWARDS))
def test_out_errors(name):
    x, rois, _ = _valid()
    forward = FORWARDS[name]
    for shape in ((4, 8, 2, 2), (4, 2, 2, 3), (3, 2, 2, 2)):
        with pytest.raises(pyroi.ShapeError) as excinfo:
            forward(x, rois, 2, out=np.zeros(shape, np.float32))
        assert_names(excinfo, "out")
    with pytest.raises(pyroi.DTypeError) as excinfo:
        forward(x, rois, 2, out=np.zeros((4, 2, 2, 2), np.float64))
    assert_names(excinfo, "out")
    read_only = np.zeros((4, 2, 2, 2), np.float32)
    read_only.setflags(write=False)
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        forward(x, rois, 2, out=read_only)
    assert_names(excinfo, "out")


@pytest.mark.parametrize("name", sorted(FORWARDS) + sorted(BACKWARDS))
def test_failing_call_writes_nothing(name):
    x, rois, g = _valid()
    rois[3, 2] = np.nan
    if name in FORWARDS:
        out = np.full((4, 2, 2, 2), 42.0, np.float32)
        with pytest.raises(pyroi.BoxError):
            FORWARDS[name](x, rois, 2, out=out)
    else:
        out = np.full(x.shape, 42.0, np.float32)
        with pytest.raises(pyroi.BoxError):
            BACKWARDS[name](g, rois, x.shape, out=out)
    assert np.all(out == 42.0)


def test_core_rejects_mismatched_views():
    """The Cython layer re-checks shapes the C API derives from its arguments."""
    from pyroi import _core

    x, rois, g = _valid()
    coords = np.ascontiguousarray(rois[:, 1:])
    images = rois[:, 0].astype(np.int64)
    with pytest.raises(pyroi.ShapeError):
        _core.ps_roi_pool_forward(x, coords, images, np.zeros((4, 3, 2, 2), np.float32), 2, 2,
                                  1.0, 1.0, 1)
    with pytest.raises(pyroi.ShapeError):
        _core.ps_roi_align_backward(g, coords, images, np.zeros((2, 12, 6, 7), np.float32),
                                    1.0, 1.0, -1, 1)
    with pytest.raises(pyroi.ShapeError):
        _core.ps_roi_align_forward(x, coords, images[:3], np.zeros((4, 2, 2, 2), np.float32),
                                   2, 2, 1.0, 1.0, -1, 1)


def test_ps_roi_align_sampling_ratio_none_is_a_named_error():
    # The atheris harness found that None reached _core as "no sampling_ratio" (a TypeError)
    x = np.ones((1, 4, 5, 5), np.float32)
    boxes = np.array([[0, 1, 1, 4, 4]], np.float32)
    with pytest.raises(pyroi.PyroiError, match="sampling_ratio"):
        pyroi.ps_roi_align(x, boxes, 2, sampling_ratio=None)
    with pytest.raises(pyroi.PyroiError, match="sampling_ratio"):
        pyroi.ps_roi_align_backward(np.ones((1, 1, 2, 2), np.float32), boxes, (1, 4, 5, 5),
                                    sampling_ratio=None)
