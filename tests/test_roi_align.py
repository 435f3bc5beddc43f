"""Tests of pyroi.roi_align and pyroi.roi_align_backward.

Oracles: the loop-based NumPy reference (tests/reference.py, itself validated against
torchvision in test_reference.py), torchvision's CPU kernel when installed, the published
known answers, the adjoint identity and finite differences.
"""

import re

import numpy as np
import pytest

import pyroi
from conftest import (BAD_ROI, CASE_CONFIGS, DTYPE_IDS, DTYPES, ERROR_NUM_ROIS, ERROR_SHAPE,
                      KNOWN_ANSWER_IDS, KNOWN_ANSWERS, OUT_VIEWS, SAMPLING_RATIOS, assert_close,
                      assert_known, assert_names, assert_names_roi, backward_params,
                      channels_last_view, check_out_view, inverted_policy, known_answer_args,
                      negative_strides_view, pooled_shape, random_input, random_rois, read_only,
                      reference_case, stable_seed, strided_view, writable)
from conftest import error_grad as make_grad, error_input as make_input, error_rois as make_rois
from reference import roi_align_backward_ref, roi_align_ref

CONFIG_NAMES = sorted(CASE_CONFIGS)

matrix = pytest.mark.parametrize
random_matrix = [
    matrix("sampling_ratio", SAMPLING_RATIOS),
    matrix("aligned", [False, True]),
    matrix("dtype", DTYPES, ids=DTYPE_IDS),
    matrix("config", CONFIG_NAMES),
]


def with_random_matrix(func):
    for mark in random_matrix:
        func = mark(func)
    return func


def case_for(config, dtype, aligned, sampling_ratio, torchvision_safe=False):
    inverted = inverted_policy(aligned, sampling_ratio) if torchvision_safe else "any"
    x, boxes, rois, params, forward, grad_output, backward = reference_case(
        config, np.dtype(dtype).name, aligned, sampling_ratio, inverted)
    return (writable(x), writable(boxes), params, forward,
            writable(grad_output), backward)


# --------------------------------------------------------------------------------------
# against the NumPy reference
# --------------------------------------------------------------------------------------

@with_random_matrix
def test_forward_matches_reference(config, dtype, aligned, sampling_ratio):
    x, boxes, params, expected, _, _ = case_for(config, dtype, aligned, sampling_ratio)
    out = pyroi.roi_align(x, boxes, **params)
    assert isinstance(out, np.ndarray)
    assert_close(out, expected, dtype)


@with_random_matrix
def test_backward_matches_reference(config, dtype, aligned, sampling_ratio):
    x, boxes, params, _, grad_output, expected = case_for(config, dtype, aligned, sampling_ratio)
    grad = pyroi.roi_align_backward(grad_output, boxes, x.shape, **backward_params(params))
    assert isinstance(grad, np.ndarray)
    assert_close(grad, expected, dtype)


@pytest.mark.parametrize("spatial_scale", [0.0, 0.3, 1.0 / 3.0, 2.0])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_unusual_spatial_scales_match_reference(spatial_scale, dtype):
    rng = np.random.default_rng(11)
    x = random_input(rng, (2, 3, 8, 6), dtype)
    rois = random_rois(rng, 2, 8, 6, 14, dtype, spatial_scale=spatial_scale)
    for aligned in (False, True):
        for sampling_ratio in (-1, 2):
            params = dict(output_size=(3, 2), spatial_scale=spatial_scale,
                          sampling_ratio=sampling_ratio, aligned=aligned)
            expected = roi_align_ref(x, rois, **params)
            assert_close(pyroi.roi_align(x, rois, **params), expected, dtype)
            g = random_input(rng, expected.shape, dtype)
            assert_close(pyroi.roi_align_backward(g, rois, x.shape, **backward_params(params)),
                         roi_align_backward_ref(g, rois, x.shape, **backward_params(params)),
                         dtype)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_dense_sampling_grids_match_reference(dtype, aligned):
    """Large fixed sampling ratios and large adaptive grids (a whole-map RoI, 1x1 output)."""
    rng = np.random.default_rng(67)
    x = random_input(rng, (1, 2, 16, 16), dtype)
    rois = np.array([[0, -0.5, -0.5, 15.5, 15.5], [0, 1.25, 2.5, 14.0, 9.75],
                     [0, 3.3, 0.2, 4.1, 15.9]], dtype)
    for output_size, sampling_ratio in ((1, -1), (2, 7), ((1, 3), 0), ((3, 1), 5)):
        params = dict(output_size=output_size, spatial_scale=1.0,
                      sampling_ratio=sampling_ratio, aligned=aligned)
        expected = roi_align_ref(x, rois, **params)
        assert_close(pyroi.roi_align(x, rois, **params), expected, dtype)
        g = random_input(rng, expected.shape, dtype)
        bparams = backward_params(params)
        assert_close(pyroi.roi_align_backward(g, rois, x.shape, **bparams),
                     roi_align_backward_ref(g, rois, x.shape, **bparams), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_huge_finite_box_with_fixed_sampling(dtype):
    """A finite but enormous box samples far outside the map: zeros, no overflow trouble."""
    x = random_input(np.random.default_rng(71), (1, 2, 6, 6), dtype)
    big = 1e30 if dtype == np.float32 else 1e300
    rois = np.array([[0, 0, 0, big, big], [0, -big, -big, 0, 0]], dtype)
    for aligned in (False, True):
        out = pyroi.roi_align(x, rois, 2, 1.0, 2, aligned)
        assert_close(out, roi_align_ref(x, rois, 2, 1.0, 2, aligned), dtype)
        assert np.all(np.isfinite(out))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_defaults_are_torchvision_defaults(dtype):
    """spatial_scale=1, sampling_ratio=-1 (adaptive), aligned=False."""
    x, boxes, _, _, grad_output, _ = case_for("odd9x11", dtype, False, -1)
    params = dict(output_size=(3, 2), spatial_scale=1.0, sampling_ratio=-1, aligned=False)
    assert_close(pyroi.roi_align(x, boxes, (3, 2)), roi_align_ref(x, boxes, **params), dtype)
    assert_close(pyroi.roi_align_backward(grad_output, boxes, x.shape),
                 roi_align_backward_ref(grad_output, boxes, x.shape,
                                        **backward_params(params)), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_output_size_int_means_square(dtype):
    x, boxes, params, _, _, _ = case_for("fpn16", dtype, True, 2)
    params = dict(params, output_size=4)
    out_int = pyroi.roi_align(x, boxes, **params)
    out_tuple = pyroi.roi_align(x, boxes, **dict(params, output_size=(4, 4)))
    assert out_int.shape == (len(boxes), x.shape[1], 4, 4)
    np.testing.assert_array_equal(out_int, out_tuple)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_list_boxes_equal_rois_form(dtype):
    x, boxes, params, expected, grad_output, expected_grad = case_for("list7x5", dtype, False, 2)
    assert isinstance(boxes, list)
    rois = np.concatenate([np.concatenate([np.full((len(b), 1), i, dtype), b], axis=1)
                           for i, b in enumerate(boxes)])
    np.testing.assert_array_equal(pyroi.roi_align(x, boxes, **params),
                                  pyroi.roi_align(x, rois, **params))
    bparams = backward_params(params)
    np.testing.assert_array_equal(pyroi.roi_align_backward(grad_output, boxes, x.shape, **bparams),
                                  pyroi.roi_align_backward(grad_output, rois, x.shape, **bparams))


def test_list_boxes_with_empty_entries():
    rng = np.random.default_rng(5)
    x = random_input(rng, (3, 2, 6, 6), np.float32)
    boxes = [np.zeros((0, 4), np.float32), np.array([[0, 0, 4, 4], [1, 2, 5, 3]], np.float32),
             np.zeros((0, 4), np.float32)]
    rois = np.array([[1, 0, 0, 4, 4], [1, 1, 2, 5, 3]], np.float32)
    out = pyroi.roi_align(x, boxes, 2, 1.0, 2, False)
    assert_close(out, roi_align_ref(x, rois, 2, 1.0, 2, False))


def test_batch_index_selects_the_image():
    x = np.stack([np.full((1, 4, 4), v, np.float64) for v in (1.0, 2.0, 3.0)])
    rois = np.array([[2, 0, 0, 3, 3], [0, 0, 0, 3, 3], [1, 1, 1, 2, 2]], np.float64)
    out = pyroi.roi_align(x, rois, 2, 1.0, 2, True)
    np.testing.assert_allclose(out[:, 0], np.broadcast_to(np.array([3.0, 1.0, 2.0])[:, None, None],
                                                         (3, 2, 2)), rtol=1e-12)
    grad = pyroi.roi_align_backward(np.ones_like(out), rois, x.shape, 1.0, 2, True)
    np.testing.assert_allclose(grad.sum(axis=(1, 2, 3)), [4.0, 4.0, 4.0], rtol=1e-12)


# --------------------------------------------------------------------------------------
# against torchvision (skipped when torch/torchvision are not installed)
# --------------------------------------------------------------------------------------

@with_random_matrix
def test_forward_matches_torchvision(tv, config, dtype, aligned, sampling_ratio):
    x, boxes, params, _, _, _ = case_for(config, dtype, aligned, sampling_ratio,
                                         torchvision_safe=True)
    assert_close(pyroi.roi_align(x, boxes, **params), tv.roi_align(x, boxes, **params), dtype)


@with_random_matrix
def test_gradient_matches_torchvision(tv, config, dtype, aligned, sampling_ratio):
    x, boxes, params, _, grad_output, _ = case_for(config, dtype, aligned, sampling_ratio,
                                                   torchvision_safe=True)
    expected = tv.roi_align_grad(x, boxes, grad_output, **params)
    grad = pyroi.roi_align_backward(grad_output, boxes, x.shape, **backward_params(params))
    assert_close(grad, expected, dtype)


def test_float32_bit_exact_with_torchvision(tv):
    """float32 results equal torchvision's CPU kernel bit for bit (same evaluation order)."""
    checked = 0
    for config in CONFIG_NAMES:
        for aligned in (False, True):
            for sampling_ratio in SAMPLING_RATIOS:
                x, boxes, params, _, grad_output, _ = case_for(
                    config, np.float32, aligned, sampling_ratio, torchvision_safe=True)
                label = f"{config} aligned={aligned} sampling_ratio={sampling_ratio}"
                np.testing.assert_array_equal(
                    pyroi.roi_align(x, boxes, **params), tv.roi_align(x, boxes, **params),
                    err_msg="forward " + label)
                np.testing.assert_array_equal(
                    pyroi.roi_align_backward(grad_output, boxes, x.shape,
                                             **backward_params(params)),
                    tv.roi_align_grad(x, boxes, grad_output, **params),
                    err_msg="backward " + label)
                checked += 1
    assert checked == len(CONFIG_NAMES) * 2 * len(SAMPLING_RATIOS)


# --------------------------------------------------------------------------------------
# known answers (docs/semantics.md §3.6, §11.2-§11.5)
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", KNOWN_ANSWERS, ids=KNOWN_ANSWER_IDS)
def test_known_answer_forward(case, dtype):
    x, boxes, kwargs = known_answer_args(case, dtype)
    assert_known(pyroi.roi_align(x, boxes, **kwargs), case["expected"], dtype, case["atol"])


_GRAD_CASES = [c for c in KNOWN_ANSWERS if c["expected_grad"] is not None]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", _GRAD_CASES, ids=[c["name"] for c in _GRAD_CASES])
def test_known_answer_backward(case, dtype):
    x, boxes, kwargs = known_answer_args(case, dtype)
    kwargs.pop("output_size")
    grad = pyroi.roi_align_backward(case["grad_output"].astype(dtype), boxes, x.shape, **kwargs)
    assert_known(grad, case["expected_grad"], dtype, case["atol"])


# --------------------------------------------------------------------------------------
# adjoint identity and finite differences (float64)
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampling_ratio", [-1, 1, 3])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_adjoint_identity(config, aligned, sampling_ratio):
    """<roi_align(x), g> == <x, roi_align_backward(g)>: the backward is the exact adjoint."""
    x, boxes, params, _, _, _ = case_for(config, np.float64, aligned, sampling_ratio)
    rng = np.random.default_rng(stable_seed("adjoint", config, aligned, sampling_ratio))
    forward = pyroi.roi_align(x, boxes, **params)
    g = random_input(rng, forward.shape, np.float64)
    backward = pyroi.roi_align_backward(g, boxes, x.shape, **backward_params(params))
    lhs = np.vdot(forward, g)
    rhs = np.vdot(x, backward)
    magnitude = np.vdot(np.abs(forward), np.abs(g)) + np.vdot(np.abs(x), np.abs(backward))
    assert abs(lhs - rhs) <= 1e-12 * magnitude + 1e-300, (lhs, rhs, magnitude)


@pytest.mark.parametrize("aligned", [False, True])
def test_backward_matches_central_differences(aligned):
    """d<roi_align(x), g>/dx[i] by central differences equals roi_align_backward(g)[i]."""
    rng = np.random.default_rng(17 + int(aligned))
    shape = (2, 2, 5, 6)
    x = random_input(rng, shape, np.float64)
    # boxes with fractional corners away from pixel-boundary kinks
    rois = np.array([[0, 0.3, 0.7, 4.2, 3.6], [1, 1.15, 0.4, 5.35, 4.45],
                     [0, 2.6, 1.3, 3.9, 2.2], [1, -0.6, 2.1, 2.7, 5.3]], np.float64)
    params = dict(output_size=(2, 3), spatial_scale=1.0, sampling_ratio=2, aligned=aligned)
    g = random_input(rng, (len(rois), shape[1], 2, 3), np.float64)
    grad = pyroi.roi_align_backward(g, rois, shape, **backward_params(params))
    eps = 1e-6
    numeric = np.zeros(shape)
    for index in np.ndindex(*shape):
        plus = x.copy()
        plus[index] += eps
        minus = x.copy()
        minus[index] -= eps
        numeric[index] = (np.vdot(pyroi.roi_align(plus, rois, **params), g)
                          - np.vdot(pyroi.roi_align(minus, rois, **params), g)) / (2 * eps)
    assert np.count_nonzero(grad) > shape[0] * shape[1] * 4
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------------------
# memory layouts
# --------------------------------------------------------------------------------------

def _random_case(dtype, seed, shape, num_rois, output_size, aligned):
    """(x, rois, params): a random map of ``shape`` and random RoIs at scale 0.5, adaptive
    sampling."""
    rng = np.random.default_rng(seed)
    x = random_input(rng, shape, dtype)
    num_images, _, height, width = shape
    rois = random_rois(rng, num_images, height, width, num_rois, dtype, spatial_scale=0.5)
    params = dict(output_size=output_size, spatial_scale=0.5, sampling_ratio=-1,
                  aligned=aligned)
    return x, rois, params


def _layout_case(dtype):
    return _random_case(dtype, 23, (2, 3, 9, 11), 16, (3, 4), aligned=True)


LAYOUTS = {
    "nhwc_transposed": channels_last_view,
    "sliced_steps": lambda x: strided_view(x, (2, 3, 2, 3)),
    "negative_strides": negative_strides_view,
    "flipped_hw_only": lambda x: np.ascontiguousarray(x[:, :, ::-1, ::-1])[:, :, ::-1, ::-1],
    "fortran_order": np.asfortranarray,
    "read_only": read_only,
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_input_layouts_give_identical_forward(layout, dtype):
    x, rois, params = _layout_case(dtype)
    view = LAYOUTS[layout](x)
    np.testing.assert_array_equal(view, x)  # same values, other memory layout
    if layout != "read_only":
        assert not view.flags.c_contiguous
    expected = pyroi.roi_align(x, rois, **params)
    assert np.count_nonzero(expected) > 0
    np.testing.assert_array_equal(pyroi.roi_align(view, rois, **params), expected)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_grad_output_layouts_give_identical_backward(layout, dtype):
    x, rois, params = _layout_case(dtype)
    rng = np.random.default_rng(29)
    g = random_input(rng, (len(rois), x.shape[1]) + pooled_shape(params["output_size"]), dtype)
    view = LAYOUTS[layout](g)
    np.testing.assert_array_equal(view, g)
    bparams = backward_params(params)
    expected = pyroi.roi_align_backward(g, rois, x.shape, **bparams)
    assert np.count_nonzero(expected) > 0
    np.testing.assert_array_equal(pyroi.roi_align_backward(view, rois, x.shape, **bparams),
                                  expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_broadcast_zero_stride_input(dtype):
    rng = np.random.default_rng(31)
    rois = random_rois(rng, 2, 9, 11, 16, dtype)
    params = dict(output_size=(2, 3), spatial_scale=1.0, sampling_ratio=2, aligned=False)
    # the same image for every batch entry and channel
    plane = random_input(rng, (1, 1, 9, 11), dtype)
    view = np.broadcast_to(plane, (2, 3, 9, 11))
    assert view.strides[0] == 0 and view.strides[1] == 0
    np.testing.assert_array_equal(pyroi.roi_align(view, rois, **params),
                                  pyroi.roi_align(view.copy(), rois, **params))
    # one row repeated down the map (zero stride along H)
    row = random_input(rng, (2, 3, 1, 11), dtype)
    view = np.broadcast_to(row, (2, 3, 9, 11))
    assert view.strides[2] == 0
    expected = pyroi.roi_align(view.copy(), rois, **params)
    np.testing.assert_array_equal(pyroi.roi_align(view, rois, **params), expected)
    assert_close(expected, roi_align_ref(view.copy(), rois, **params), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_broadcast_zero_stride_grad_output(dtype):
    x, rois, params = _layout_case(dtype)
    rng = np.random.default_rng(37)
    ph, pw = pooled_shape(params["output_size"])
    g = np.broadcast_to(random_input(rng, (1, x.shape[1], 1, pw), dtype),
                        (len(rois), x.shape[1], ph, pw))
    bparams = backward_params(params)
    np.testing.assert_array_equal(pyroi.roi_align_backward(g, rois, x.shape, **bparams),
                                  pyroi.roi_align_backward(g.copy(), rois, x.shape, **bparams))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_box_layouts(dtype):
    x, rois, params = _layout_case(dtype)
    expected = pyroi.roi_align(x, rois, **params)
    fortran = np.asfortranarray(rois)
    np.testing.assert_array_equal(pyroi.roi_align(x, fortran, **params), expected)
    big = np.full((2 * len(rois), 10), np.nan, dtype=dtype)
    big[::2, ::2] = rois
    strided = big[::2, ::2]
    np.testing.assert_array_equal(pyroi.roi_align(x, strided, **params), expected)
    reversed_rows = rois[::-1]
    np.testing.assert_array_equal(pyroi.roi_align(x, reversed_rows, **params), expected[::-1])
    frozen = read_only(rois)
    np.testing.assert_array_equal(pyroi.roi_align(x, frozen, **params), expected)
    as_list = [np.asfortranarray(rois[rois[:, 0] == i, 1:]) for i in range(2)]
    order = np.argsort(rois[:, 0], kind="stable")
    np.testing.assert_array_equal(pyroi.roi_align(x, as_list, **params), expected[order])


# --------------------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("view_kind", OUT_VIEWS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_forward_out(dtype, view_kind):
    x, rois, params = _layout_case(dtype)
    expected = pyroi.roi_align(x, rois, **params)
    check_out_view(lambda out: pyroi.roi_align(x, rois, **params, out=out), expected, view_kind)


def _backward_out_case(dtype, seed):
    """(run, expected): ``run(out)`` calls roi_align_backward with ``out`` on the layout case
    and a random gradient; ``expected`` is what it returns without ``out``."""
    x, rois, params = _layout_case(dtype)
    rng = np.random.default_rng(seed)
    g = random_input(rng, (len(rois), x.shape[1]) + pooled_shape(params["output_size"]), dtype)
    bparams = backward_params(params)
    expected = pyroi.roi_align_backward(g, rois, x.shape, **bparams)
    return lambda out: pyroi.roi_align_backward(g, rois, x.shape, **bparams, out=out), expected


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_backward_out_overwrites_not_accumulates(dtype):
    run, expected = _backward_out_case(dtype, 41)
    out = np.full(expected.shape, 7.0, dtype=dtype)
    assert run(out) is out
    np.testing.assert_array_equal(out, expected)
    # a non-contiguous view of a larger buffer
    n, c, h, w = expected.shape
    buffer = np.full((n, c, h, 2 * w), -3.0, dtype=dtype)
    view = buffer[..., ::2]
    assert run(view) is view
    np.testing.assert_array_equal(view, expected)
    assert np.all(buffer[..., 1::2] == -3.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_backward_out_transposed_view(dtype):
    run, expected = _backward_out_case(dtype, 43)
    out = np.full(expected.shape[::-1], np.nan, dtype=dtype).T
    assert run(out) is out
    np.testing.assert_array_equal(out, expected)


# --------------------------------------------------------------------------------------
# empty shapes
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_no_rois(dtype):
    x = random_input(np.random.default_rng(1), (2, 3, 5, 6), dtype)
    out = pyroi.roi_align(x, np.zeros((0, 5), dtype), (2, 3))
    assert out.shape == (0, 3, 2, 3) and out.dtype == dtype
    out = pyroi.roi_align(x, [np.zeros((0, 4), dtype), np.zeros((0, 4), dtype)], 4)
    assert out.shape == (0, 3, 4, 4) and out.dtype == dtype
    grad = pyroi.roi_align_backward(np.zeros((0, 3, 2, 3), dtype), np.zeros((0, 5), dtype),
                                    x.shape)
    assert grad.shape == x.shape and grad.dtype == dtype and not np.any(grad)
    prefilled = np.full(x.shape, 5.0, dtype)
    result = pyroi.roi_align_backward(np.zeros((0, 3, 2, 3), dtype), np.zeros((0, 5), dtype),
                                      x.shape, out=prefilled)
    assert result is prefilled and not np.any(prefilled)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_no_images_no_rois(dtype):
    x = np.zeros((0, 3, 5, 6), dtype)
    out = pyroi.roi_align(x, np.zeros((0, 5), dtype), 2)
    assert out.shape == (0, 3, 2, 2) and out.dtype == dtype
    grad = pyroi.roi_align_backward(np.zeros((0, 3, 2, 2), dtype), np.zeros((0, 5), dtype),
                                    (0, 3, 5, 6))
    assert grad.shape == (0, 3, 5, 6) and grad.dtype == dtype


@pytest.mark.parametrize("shape", [(2, 0, 5, 6), (2, 3, 0, 6), (2, 3, 5, 0), (2, 0, 0, 0)],
                         ids=["C0", "H0", "W0", "CHW0"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_empty_map_gives_zeros(shape, dtype):
    rois = np.array([[0, 0, 0, 3, 3], [1, -1, -1, 0.5, 0.5], [1, 2, 1, 9, 9]], dtype)
    for aligned in (False, True):
        out = pyroi.roi_align(np.zeros(shape, dtype), rois, (2, 3), 1.0, -1, aligned)
        assert out.shape == (3, shape[1], 2, 3) and out.dtype == dtype
        assert not np.any(out)
        grad = pyroi.roi_align_backward(np.ones((3, shape[1], 2, 3), dtype), rois, shape,
                                        1.0, -1, aligned)
        assert grad.shape == shape and grad.dtype == dtype
        assert not np.any(grad)


# --------------------------------------------------------------------------------------
# behaviour defined beyond torchvision
# --------------------------------------------------------------------------------------

OUT_OF_IMAGE_BOXES = [[0, -20, -20, -10, -10], [1, 30, 30, 40, 40], [0, -9, 2, -3, 4],
                      [1, 2, -12, 5, -2.5], [0, 12, 1, 14, 3]]


@pytest.mark.parametrize("sampling_ratio", [-1, 2])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_nonfinite_corner_pixel_does_not_poison_out_of_image_rois(dtype, aligned,
                                                                 sampling_ratio):
    """Samples outside [-1, H] x [-1, W] contribute nothing (torchvision adds 0*x[b,c,0,0])."""
    x = np.ones((2, 3, 8, 9), dtype)
    x[0, 0, 0, 0] = np.nan
    x[0, 1, 0, 0] = np.inf
    x[1, 0, 0, 0] = -np.inf
    x[1, 2, 0, 0] = np.nan
    rois = np.array(OUT_OF_IMAGE_BOXES, dtype)
    out = pyroi.roi_align(x, rois, (2, 3), 1.0, sampling_ratio, aligned)
    assert out.shape == (len(rois), 3, 2, 3)
    assert np.all(np.isfinite(out)) and not np.any(out)
    grad = pyroi.roi_align_backward(np.ones_like(out), rois, x.shape, 1.0, sampling_ratio,
                                    aligned)
    assert not np.any(grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_nonfinite_pixel_outside_the_rois_reach_is_ignored(dtype):
    rng = np.random.default_rng(47)
    x = random_input(rng, (1, 2, 10, 10), dtype)
    clean = x.copy()
    x[0, :, 9, 9] = np.nan
    x[0, 0, 0, 9] = np.inf
    rois = np.array([[0, 0.5, 0.5, 5.5, 6.0], [0, 2.0, 1.0, 4.0, 7.0]], dtype)
    for aligned in (False, True):
        out = pyroi.roi_align(x, rois, 3, 1.0, 2, aligned)
        assert np.all(np.isfinite(out))
        assert_close(out, roi_align_ref(clean, rois, 3, 1.0, 2, aligned), dtype)


@pytest.mark.parametrize("sampling_ratio", [-1, 0])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_aligned_adaptive_one_axis_inverted_box_gives_zeros(dtype, sampling_ratio):
    """torchvision raises here; pyroi defines the result as zeros (no samples on that axis)."""
    x = np.arange(2 * 42, dtype=dtype).reshape(1, 2, 6, 7) + 1
    rois = np.array([[0, 4, 1, 1, 4],       # inverted in x only
                     [0, 1, 4, 4, 1],       # inverted in y only
                     [0, 5.5, 0, 0.5, 5],   # inverted in x, large
                     [0, 1, 1, 4, 4]],      # a normal box for contrast
                    dtype)
    out = pyroi.roi_align(x, rois, 2, 1.0, sampling_ratio, True)
    assert not np.any(out[:3])
    assert np.all(out[3] > 0)
    g = np.ones_like(out)
    g[3] = 0
    grad = pyroi.roi_align_backward(g, rois, x.shape, 1.0, sampling_ratio, True)
    assert not np.any(grad)


# --------------------------------------------------------------------------------------
# threads and version
# --------------------------------------------------------------------------------------

def _threads_case(dtype):
    return _random_case(dtype, 53, (3, 4, 16, 16), 30, (4, 3), aligned=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_thread_count_does_not_change_forward(dtype):
    x, rois, params = _threads_case(dtype)
    one = pyroi.roi_align(x, rois, **params, num_threads=1)
    assert np.count_nonzero(one) > 0
    for threads in (2, 3, None):
        np.testing.assert_array_equal(pyroi.roi_align(x, rois, **params, num_threads=threads),
                                      one, err_msg=f"num_threads={threads}")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_thread_count_does_not_change_backward(dtype):
    x, rois, params = _threads_case(dtype)
    rng = np.random.default_rng(59)
    g = random_input(rng, (len(rois), x.shape[1]) + pooled_shape(params["output_size"]), dtype)
    bparams = backward_params(params)
    one = pyroi.roi_align_backward(g, rois, x.shape, **bparams, num_threads=1)
    assert np.count_nonzero(one) > 0
    for threads in (2, 3, None):
        np.testing.assert_array_equal(
            pyroi.roi_align_backward(g, rois, x.shape, **bparams, num_threads=threads), one,
            err_msg=f"num_threads={threads}")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_thread_count_does_not_change_paired_channel_blocks(dtype):
    # enough work for several workers; 40 channels are a pair of channel blocks and a partial
    # single one in the pair's layout (float32: 16 + 16 + 8; float64: 8 + 8, 8 + 8, 8), so
    # workers start on either kind of item
    rng = np.random.default_rng(61)
    x = random_input(rng, (2, 40, 40, 44), dtype)
    rois = random_rois(rng, 2, 40, 44, 300, dtype, spatial_scale=0.75)
    params = dict(output_size=7, spatial_scale=0.75, sampling_ratio=2, aligned=True)
    one = pyroi.roi_align(x, rois, **params, num_threads=1)
    assert np.count_nonzero(one) > 0
    for threads in (2, 3, 8):
        np.testing.assert_array_equal(pyroi.roi_align(x, rois, **params, num_threads=threads),
                                      one, err_msg=f"num_threads={threads}")


def test_more_threads_than_work():
    rng = np.random.default_rng(61)
    x = random_input(rng, (1, 1, 5, 5), np.float64)
    rois = np.array([[0, 0.5, 1.0, 3.5, 4.0]], np.float64)
    one = pyroi.roi_align(x, rois, 2, num_threads=1)
    np.testing.assert_array_equal(pyroi.roi_align(x, rois, 2, num_threads=16), one)
    g = np.ones_like(one)
    np.testing.assert_array_equal(pyroi.roi_align_backward(g, rois, x.shape, num_threads=16),
                                  pyroi.roi_align_backward(g, rois, x.shape, num_threads=1))


def test_concurrent_calls_from_python_threads():
    """Calls release the GIL and share no state: concurrent results equal serial ones."""
    from concurrent.futures import ThreadPoolExecutor

    cases = []
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        x = random_input(rng, (2, 3, 12, 12), np.float32)
        rois = random_rois(rng, 2, 12, 12, 20, np.float32)
        g = random_input(rng, (20, 3, 3, 3), np.float32)
        cases.append((x, rois, g))

    def run(case):
        x, rois, g = case
        return (pyroi.roi_align(x, rois, 3, 1.0, -1, True, num_threads=2),
                pyroi.roi_align_backward(g, rois, x.shape, 1.0, -1, True, num_threads=2))

    serial = [run(case) for case in cases]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(run, cases * 2))
    for index, (forward, backward) in enumerate(concurrent):
        np.testing.assert_array_equal(forward, serial[index % len(cases)][0])
        np.testing.assert_array_equal(backward, serial[index % len(cases)][1])


def test_version_string():
    version = pyroi.__version__
    assert isinstance(version, str) and version
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version


# --------------------------------------------------------------------------------------
# (K, 4) coordinates with batch_indices= (ONNX style)
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.uint8])
def test_batch_indices_form_equals_rois_form(dtype, index_dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 2, 9, 8)).astype(dtype)
    coords = rng.uniform(-2, 10, (7, 4)).astype(dtype)
    images = rng.integers(0, 3, 7)
    rois = np.concatenate([images[:, None].astype(dtype), coords], axis=1)
    expected = pyroi.roi_align(x, rois, (2, 3), 0.9, 2, True)
    got = pyroi.roi_align(x, coords, (2, 3), 0.9, 2, True,
                          batch_indices=images.astype(index_dtype))
    np.testing.assert_array_equal(got, expected)
    grad = rng.standard_normal(expected.shape).astype(dtype)
    np.testing.assert_array_equal(
        pyroi.roi_align_backward(grad, coords, x.shape, 0.9, 2, True, batch_indices=images),
        pyroi.roi_align_backward(grad, rois, x.shape, 0.9, 2, True))


# --------------------------------------------------------------------------------------
# the three loop orders of the C core are exact: "direct" (RoIs read the planes in place;
# maps over the lane-major scratch limit of 2^20 pixels), "region" (each RoI's region is
# copied channels-last; few small RoIs) and "image" (whole images copied channels-last; many
# RoIs). The core picks one from the shapes and the work per map element. On small maps the
# image order's forward takes channel blocks (16 float32 / 8 float64 channels) two at a time:
# 37 channels end in a pair and a partial single block, 64 are whole pairs. The forward's
# image order takes each image's RoIs in bands of columns sized from the CPU's L2 cache:
# tall, narrow RoIs on a wide map make several bands on any L2 size up to 2 MB.
# --------------------------------------------------------------------------------------

def _loop_order_case(order, dtype, channels, seed):
    rng = np.random.default_rng(seed)
    if order == "direct":  # over 2^20 pixels: no lane-major scratch
        x = rng.random((1, channels, 1030, 1024)).astype(dtype)
        k = 3
        coords = rng.uniform(-4, 1020, (k, 2))
        sizes = rng.uniform(0.5, 9, (k, 2))
    elif order == "region":  # two small boxes on a large map: little work per map element
        x = rng.standard_normal((2, channels, 64, 72)).astype(dtype)
        k = 2
        coords = rng.uniform(0, 60, (k, 2))
        sizes = rng.uniform(0.5, 6, (k, 2))
    elif order == "bands":  # tall, narrow boxes across a wide map
        x = rng.standard_normal((2, channels, 210, 240)).astype(dtype)
        k = 400
        coords = np.stack([rng.uniform(-4, 236, k), rng.uniform(-6, 12, k)], axis=1)
        sizes = np.stack([rng.uniform(0.5, 5, k), rng.uniform(150, 205, k)], axis=1)
    else:  # many boxes on a small map: every element is sampled many times
        x = rng.standard_normal((2, channels, 23, 29)).astype(dtype)
        k = 60
        coords = rng.uniform(-6, 30, (k, 2))
        sizes = rng.uniform(0, 20, (k, 2))
    boxes = np.concatenate([np.arange(k)[:, None] % x.shape[0], coords, coords + sizes],
                           axis=1)
    return x, boxes.astype(dtype)


@pytest.mark.parametrize("order,channels", [("direct", 3), ("region", 5), ("region", 16),
                                            ("region", 37), ("image", 5), ("image", 16),
                                            ("image", 37), ("image", 64), ("bands", 16)])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 2, 3])
def test_loop_orders_bit_exact_with_torchvision(tv, order, channels, dtype, aligned,
                                                sampling_ratio):
    x, boxes = _loop_order_case(order, dtype, channels, seed=channels)
    args = ((3, 4), 0.8, sampling_ratio, aligned)
    np.testing.assert_array_equal(pyroi.roi_align(x, boxes, *args), tv.roi_align(x, boxes, *args))
    grad = np.random.default_rng(1).standard_normal(
        (len(boxes), channels, 3, 4)).astype(dtype)
    np.testing.assert_array_equal(pyroi.roi_align_backward(grad, boxes, x.shape, *args[1:]),
                                  tv.roi_align_grad(x, boxes, grad, *args))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("aligned", [False, True])
def test_image_order_on_blocks_larger_than_the_l2_cache_bit_exact(tv, dtype, aligned):
    # Whole images gathered into blocks of 1.2 MB (120 x 160 pixels of 64 bytes), whose next
    # item's input is not prefetched on an L2 cache of up to 2.4 MB, and sampled whole: 1400
    # RoIs of 7 x 7 bins per image have running sums of over 4 MB, too many for row bands on
    # any L2 cache up to 2 MB. 37 channels make three items per image, so that a worker
    # goes on from item to item; the result is torchvision's and the same on 1 and 2 threads.
    rng = np.random.default_rng(18)
    x = rng.standard_normal((2, 37, 120, 160)).astype(dtype)
    k = 2800
    coords = np.stack([rng.uniform(-6, 162, k), rng.uniform(-6, 122, k)], axis=1)
    sizes = rng.uniform(0.2, 40, (k, 2))
    boxes = np.concatenate([np.arange(k)[:, None] % 2, coords, coords + sizes], axis=1)
    boxes[:2, 1:] = boxes[:2, [3, 4, 1, 2]]  # one inverted box in each image
    boxes = boxes.astype(dtype)
    args = ((7, 7), 0.9, 2, aligned)
    one = pyroi.roi_align(x, boxes, *args, num_threads=1)
    np.testing.assert_array_equal(one, tv.roi_align(x, boxes, *args))
    np.testing.assert_array_equal(pyroi.roi_align(x, boxes, *args, num_threads=2), one)


def test_empty_output_with_huge_output_size_returns_at_once():
    # C = 0: the output has no elements, so the output size must not cost anything
    x = np.zeros((1, 0, 5, 5), np.float32)
    boxes = np.array([[0, 0, 0, 4, 4]], np.float32)
    out = pyroi.roi_align(x, boxes, (2**30, 2**30))
    assert out.shape == (1, 0, 2**30, 2**30)
    grad = np.zeros((1, 0, 2**30, 2**30), np.float32)
    assert pyroi.roi_align_backward(grad, boxes, (1, 0, 5, 5)).shape == (1, 0, 5, 5)
    with pytest.raises(pyroi.BoxError, match="RoI 0"):
        pyroi.roi_align(x, np.array([[0, np.nan, 0, 4, 4]], np.float32), (2**30, 2**30))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("many_boxes", [False, True])
def test_layout_nhwc_equals_nchw(dtype, many_boxes):
    rng = np.random.default_rng(11)
    nhwc = rng.standard_normal((2, 15, 17, 37)).astype(dtype)
    nchw = np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
    k = 80 if many_boxes else 2
    corner = rng.uniform(-2, 14, (k, 2))
    boxes = np.concatenate([np.arange(k)[:, None] % 2, corner,
                            corner + rng.uniform(0, 9, (k, 2))], axis=1).astype(dtype)
    expected = pyroi.roi_align(nchw, boxes, 3, 0.9, 2, True)
    np.testing.assert_array_equal(pyroi.roi_align(nhwc, boxes, 3, 0.9, 2, True, layout="NHWC"),
                                  expected)
    grad = rng.standard_normal(expected.shape).astype(dtype)
    expected_grad = pyroi.roi_align_backward(grad, boxes, nchw.shape, 0.9, 2, True)
    got = pyroi.roi_align_backward(grad, boxes, nhwc.shape, 0.9, 2, True, layout="NHWC")
    assert got.shape == nhwc.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got.transpose(0, 3, 1, 2), expected_grad)
    with pytest.raises(pyroi.InvalidArgumentError, match="layout"):
        pyroi.roi_align(nhwc, boxes, 3, layout="CHWN")


def _streamed_case(rng, dtype, count):
    """A 2 x 42 x 160 x 171 map (its gradient is 9 MB: streamed out; 42 channels: a partial
    lane block) and `count` boxes of 4-120 pixels, some across the border, on both images."""
    features = rng.standard_normal((2, 42, 160, 171)).astype(dtype)
    sides = rng.uniform(4, 120, (count, 2))
    corners = rng.uniform(-10, 170, (count, 2))
    boxes = np.concatenate(
        [rng.integers(0, 2, (count, 1)), corners, corners + sides], axis=1).astype(dtype)
    return features, boxes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_results_streamed_out_equal_the_in_place_writes(dtype):
    """Results larger than a core's L2 cache (at least 1 MB) are written with streaming
    stores from a staging area when the result is packed; a strided `out=` takes the in-place
    path. Both must agree bit for bit (42 channels: a partial lane block in float32 and float64; 160 x 171 pixels: the last
    staging run is partial)."""
    rng = np.random.default_rng(5)
    features, boxes = _streamed_case(rng, dtype, 1100)
    count = len(boxes)
    packed = pyroi.roi_align(features, boxes, 7, 1.0, 2, True)
    assert packed.nbytes >= 8 << 20
    strided = np.full((count, 42, 7, 9), np.nan, dtype)[..., 1:8]
    pyroi.roi_align(features, boxes, 7, 1.0, 2, True, out=strided)
    assert np.array_equal(packed, strided)

    grad = rng.standard_normal(packed.shape).astype(dtype)
    grad_packed = pyroi.roi_align_backward(grad, boxes, features.shape, 1.0, 2, True)
    assert grad_packed.nbytes >= 8 << 20
    grad_strided = np.full((2, 42, 160, 173), np.nan, dtype)[..., 2:]
    pyroi.roi_align_backward(grad, boxes, features.shape, 1.0, 2, True, out=grad_strided)
    assert np.array_equal(grad_packed, grad_strided)


def _channels_last_out(count, channels, size, dtype, offset_bytes):
    """A NaN-filled (count, channels, size, size) view of channels-last memory, (count, size,
    size, channels), starting offset_bytes past a 64-byte line boundary."""
    nbytes = count * size * size * channels * np.dtype(dtype).itemsize
    raw = np.empty(nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset_bytes
    memory = raw[start:start + nbytes].view(dtype).reshape(count, size, size, channels)
    memory[...] = np.nan
    return memory.transpose(0, 3, 1, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [42, 48])
def test_streamed_channels_last_outputs_equal_the_packed_ones(dtype, channels):
    """A large channels-last `out=` whose bins start on 64-byte lines takes each full lane
    group's bins straight from the tile to memory in streaming stores (no transposition);
    42 channels (bins 168 or 336 bytes apart) or an output past a line boundary take the
    other paths. Every
    order and reduction that writes tiles must give the packed result bit for bit, from NCHW
    and NHWC features, at 1 and 2 threads."""
    rng = np.random.default_rng(11)
    features, boxes = _streamed_case(rng, dtype, 1100)
    features = np.ascontiguousarray(np.concatenate([features, features[:, :6]], axis=1)
                                    [:, :channels])
    nhwc = np.ascontiguousarray(features.transpose(0, 2, 3, 1))
    for mode in ("avg", "max"):
        packed = pyroi.roi_align(features, boxes, 7, 1.0, 2, True, mode=mode)
        assert packed.nbytes >= 8 << 20  # streamed
        for source, layout in ((features, "NCHW"), (nhwc, "NHWC")):
            for offset in (0, 16):
                for threads in (1, 2):
                    out = _channels_last_out(len(boxes), channels, 7, dtype, offset)
                    pyroi.roi_align(source, boxes, 7, 1.0, 2, True, mode=mode, layout=layout,
                                    num_threads=threads, out=out)
                    assert np.array_equal(out, packed), (mode, layout, offset, threads)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_streamed_backward_on_one_thread_bit_exact_with_torchvision(tv, dtype):
    """On one thread a worker takes every (image, channel block) item in turn, and each item's
    streamed write-out must leave the scratch block zero for the next one (there is no other
    zeroing pass): every block of both images must still equal torchvision's gradient."""
    rng = np.random.default_rng(8)
    features, boxes = _streamed_case(rng, dtype, 300)
    grad = rng.standard_normal((len(boxes), 42, 7, 7)).astype(dtype)
    got = pyroi.roi_align_backward(grad, boxes, features.shape, 1.0, 2, True, num_threads=1)
    assert got.nbytes >= 8 << 20  # the streamed write-out
    np.testing.assert_array_equal(got, tv.roi_align_grad(features, boxes, grad, 7, 1.0, 2, True))


# --------------------------------------------------------------------------------------
# backward: each input pixel receives its additions in torchvision's order (bin, sample,
# tap). Small boxes with many samples hit each pixel many times; gradients of mixed
# magnitudes (1e8 next to 1) make any other order round differently.
# --------------------------------------------------------------------------------------

def _order_stress_boxes(rng, k, h, w, aligned):
    """Tiny boxes (0.5-3 px), boxes across the right/bottom border (taps lo == hi), boxes
    partly outside the top/left, and (aligned only) inverted boxes."""
    kinds = rng.integers(0, 4 if aligned else 3, k)
    x1 = rng.uniform(0, w - 1, k)
    y1 = rng.uniform(0, h - 1, k)
    sw = rng.uniform(0.5, 3, k)
    sh = rng.uniform(0.5, 3, k)
    border = kinds == 1
    x1[border] = rng.uniform(w - 3, w - 0.5, border.sum())
    y1[border] = rng.uniform(h - 3, h - 0.5, border.sum())
    outside = kinds == 2
    x1[outside] = rng.uniform(-3, 0.5, outside.sum())
    y1[outside] = rng.uniform(-3, 0.5, outside.sum())
    x2, y2 = x1 + sw, y1 + sh
    inverted = kinds == 3
    x1[inverted], x2[inverted] = x2[inverted], x1[inverted]
    y1[inverted], y2[inverted] = y2[inverted], y1[inverted]
    return np.stack([x1, y1, x2, y2], axis=1)


def _mixed_magnitude_grad(rng, shape, dtype):
    """Signs and magnitudes 1e8 / 1 / 1e-3 mixed, so that sums depend on their order."""
    magnitude = rng.choice(np.array([1e8, 1.0, 1e-3]), size=shape)
    return (magnitude * rng.choice([-1.0, 1.0], size=shape) *
            rng.uniform(1, 2, size=shape)).astype(dtype)


@pytest.mark.parametrize("case", ["region", "image"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 5, 7])
def test_backward_per_pixel_order_bit_exact_with_torchvision(tv, case, dtype, aligned,
                                                             sampling_ratio):
    rng = np.random.default_rng(100 + sampling_ratio)
    if case == "region":  # a few boxes on a large map: each RoI's region copied
        n, c, h, w, k = 2, 5, 360, 352, 6
    else:  # many boxes on a small map: whole images copied
        n, c, h, w, k = 2, 18, 9, 11, 80
    x = np.zeros((n, c, h, w), dtype)
    coords = _order_stress_boxes(rng, k, h, w, aligned)
    if not aligned or sampling_ratio > 0:
        boxes = np.concatenate([np.arange(k)[:, None] % n, coords], axis=1).astype(dtype)
    else:  # adaptive sampling of an inverted box is an error in torchvision: keep them out
        coords = np.sort(coords.reshape(k, 2, 2), axis=1).reshape(k, 4)
        boxes = np.concatenate([np.arange(k)[:, None] % n, coords], axis=1).astype(dtype)
    output_size = (3, 4)
    grad = _mixed_magnitude_grad(rng, (k, c) + output_size, dtype)
    args = (1.0, sampling_ratio, aligned)
    expected = tv.roi_align_grad(x, boxes, grad, output_size, *args)
    for threads in (1, 2):
        got = pyroi.roi_align_backward(grad, boxes, x.shape, *args, num_threads=threads)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_backward_border_taps_added_in_order(tv, dtype):
    """Samples past the last row/column read that pixel twice (lo == hi, weights 1 and 0);
    both additions are made, in order, also when one box covers only the corner pixel."""
    x = np.zeros((1, 3, 6, 7), dtype)
    boxes = np.array([[0, 5.2, 4.1, 7.9, 6.8],     # bottom-right corner and beyond
                      [0, 6.0, 0.0, 6.0, 5.0],     # the last column only
                      [0, 0.0, 5.5, 6.5, 5.5],     # the last row only
                      [0, 5.9, 4.9, 5.95, 4.95]],  # a tiny box on the corner pixel
                     dtype)
    grad = _mixed_magnitude_grad(np.random.default_rng(3), (4, 3, 2, 2), dtype)
    for aligned in (False, True):
        for sampling_ratio in (0, 6):
            args = (1.0, sampling_ratio, aligned)
            np.testing.assert_array_equal(
                pyroi.roi_align_backward(grad, boxes, x.shape, *args),
                tv.roi_align_grad(x, boxes, grad, (2, 2), *args))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("channels, sampling_ratio", [(17, 3), (8, 2), (16, 2), (32, 2),
                                                      (33, 2), (48, 2)])
def test_backward_in_row_bands_bit_exact_with_torchvision(tv, dtype, aligned, channels,
                                                          sampling_ratio):
    """The backward's image order adds the RoIs band of rows after band of rows (a band fills
    the L2 cache: 8 to 128 rows of this 256-pixel-wide map for an L2 of up to 2 MB), each
    band in RoI order; a sample whose two rows fall in two bands adds each row's taps in its
    own band. Boxes of 1-80 rows cross the band edges, some inverted, across the border or
    partly outside; mixed magnitudes make any other order of additions round differently.
    The channel blocks (16 float32 / 8 float64 channels) go two at a time, each with its
    band and spare row: full pairs, a pair whose second block is partial and a lone last
    block; 3 x 3 samples divide by their count, 2 x 2 multiply by its exact inverse."""
    rng = np.random.default_rng(21 + channels - 17)
    n, c, h, w, k = 2, channels, 300, 256, 700
    x = np.zeros((n, c, h, w), dtype)
    coords = _order_stress_boxes(rng, k, h, w, aligned)
    scale = rng.uniform(1, 80, (k, 1))  # stretch the stress boxes to 1-80 px about x1, y1
    coords[:, 2:] = coords[:, :2] + (coords[:, 2:] - coords[:, :2]) * scale / 3
    boxes = np.concatenate([np.arange(k)[:, None] % n, coords], axis=1).astype(dtype)
    grad = _mixed_magnitude_grad(rng, (k, c, 3, 4), dtype)
    args = (1.0, sampling_ratio, aligned)
    expected = tv.roi_align_grad(x, boxes, grad, (3, 4), *args)
    for threads in (1, 2):
        got = pyroi.roi_align_backward(grad, boxes, x.shape, *args, num_threads=threads)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("num_rois", [1, 4, 16, 64])
def test_backward_few_boxes_bit_exact_with_torchvision(tv, dtype, num_rois):
    """A few boxes on a large map (the detector's small call): the backward writes the whole
    grad_input, by region (planes zeroed, each RoI's region gathered and written back) for the
    fewest boxes, else by image in bands; both, and the caller's-workspace path (its size
    computed for the order the call takes), bit for bit at 1 and 2 threads."""
    rng = np.random.default_rng(num_rois)
    n, c, h, w = 2, 40, 120, 136
    x = np.zeros((n, c, h, w), dtype)
    side = np.exp(rng.uniform(np.log(16), np.log(256), (num_rois, 2)))
    centre = rng.uniform(0, 1, (num_rois, 2)) * (4 * w, 4 * h)
    coords = np.concatenate([centre - side / 2, centre + side / 2], axis=1)
    coords = np.clip(coords, 0, (4 * w, 4 * h, 4 * w, 4 * h))  # the Ascend API's constraint
    boxes = np.concatenate([np.arange(num_rois)[:, None] % n, coords], axis=1).astype(dtype)
    grad = _mixed_magnitude_grad(rng, (num_rois, c, 7, 7), dtype)
    args = (0.25, 2, True)
    expected = tv.roi_align_grad(x, boxes, grad, (7, 7), *args)
    for threads in (1, 2):
        got = pyroi.roi_align_backward(grad, boxes, x.shape, *args, num_threads=threads)
        np.testing.assert_array_equal(got, expected)
        got = pyroi.ascend.roi_align_v2_backward(grad, boxes, x.shape, 7, 7, *args,
                                                 num_threads=threads)
        np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------------------
# argument errors that depend on RoIAlign's geometry (the checks every operator shares are
# in test_validation.py, on the same fixtures)
# --------------------------------------------------------------------------------------

N, C, H, W = ERROR_SHAPE
K = ERROR_NUM_ROIS


@pytest.mark.parametrize("dtype, x2, spatial_scale", [
    # float32 coordinate * spatial_scale overflows to inf: rejected like a non-finite box
    (np.float32, 3e38, 2.0),
    # an adaptive grid beyond PYROI_MAX_SAMPLING_GRID is an error, not a hang or a crash
    (np.float64, 1e15, 1.0),
], ids=["overflow_after_scaling", "adaptive_grid_too_large"])
def test_box_too_large(dtype, x2, spatial_scale):
    rois = make_rois(dtype)
    rois[BAD_ROI, 3] = x2
    with pytest.raises(pyroi.BoxError) as excinfo:
        pyroi.roi_align(make_input(dtype), rois, 2, spatial_scale, -1)
    assert_names(excinfo, "boxes")
    assert_names_roi(excinfo, BAD_ROI)


def _geometry_error_cases():
    """(id, call, error classes, argument names): each call breaks one argument."""
    rois = make_rois()
    cases = [(f"output_size={size}", lambda size=size: pyroi.roi_align(make_input(), rois, size),
              pyroi.InvalidArgumentError, ("output_size",))
             for size in [0, -1, (2, 0), (0, 2), (-3, 2), (0, 0)]]
    cases.append(("output_size=(2, 2, 2)", lambda: pyroi.roi_align(make_input(), rois, (2, 2, 2)),
                  ValueError, ("output_size",)))
    # more than PYROI_MAX_SAMPLING_GRID samples per bin along an axis
    cases += [(f"sampling_ratio={ratio}",
               lambda ratio=ratio: pyroi.roi_align(make_input(), rois, 2, 1.0, ratio),
               pyroi.InvalidArgumentError, ("sampling_ratio",)) for ratio in [2**31, 2**40]]

    def backward(grad=None, input_shape=(N, C, H, W)):
        grad = make_grad() if grad is None else grad
        return lambda: pyroi.roi_align_backward(grad, rois, input_shape)

    cases += [(f"input_shape={shape}", backward(input_shape=shape), pyroi.ShapeError,
               ("input_shape",)) for shape in [(N, C, H), (N, C, H, W, 1), (), (C,)]]
    cases.append(("input_shape channels", backward(input_shape=(N, C + 1, H, W)),
                  pyroi.ShapeError, ("input_shape", "grad_output")))
    cases += [(f"input_shape={shape}", backward(input_shape=shape),
               (pyroi.ShapeError, pyroi.InvalidArgumentError), ("input_shape",))
              for shape in [(N, C, -1, W), (N, C, H, -2), (-1, C, H, W)]]
    cases += [(f"grad_output shape {shape}", backward(np.ones(shape, np.float32)),
               pyroi.ShapeError, ("grad_output",)) for shape in [(K, C, 2), (K, C, 2, 2, 1), (K,)]]
    cases += [(f"grad_output of {count} RoIs", backward(make_grad(num_rois=count)),
               pyroi.ShapeError, ("boxes", "grad_output")) for count in [K - 1, K + 1, 0]]
    return cases


GEOMETRY_ERROR_CASES = _geometry_error_cases()


@pytest.mark.parametrize("call, error, names", [case[1:] for case in GEOMETRY_ERROR_CASES],
                         ids=[case[0] for case in GEOMETRY_ERROR_CASES])
def test_geometry_argument_errors(call, error, names):
    with pytest.raises(pyroi.PyroiError) as excinfo:
        call()
    assert isinstance(excinfo.value, error)
    assert_names(excinfo, *names)
