"""Validation of the NumPy reference (tests/reference.py) itself.

The reference is the oracle of the pyroi tests, so it is checked here against torchvision's
CPU kernel (forward and autograd input gradient) on random cases and against the published
known answers.  These tests do not need pyroi.
"""

import numpy as np
import pytest

from conftest import (CASE_CONFIGS, DTYPES, KNOWN_ANSWER_IDS, KNOWN_ANSWERS, SAMPLING_RATIOS,
                      assert_close, assert_known, backward_params, inverted_policy,
                      known_answer_args, make_case, random_input, random_rois, reference_case,
                      rois_to_list)
from reference import roi_align_backward_ref, roi_align_ref
from reference_common import boxes_list_to_rois, sample_taps

CONFIG_NAMES = sorted(CASE_CONFIGS)


def _tv_case(config, dtype, aligned, sampling_ratio):
    """A cached reference case whose boxes torchvision accepts."""
    return reference_case(config, np.dtype(dtype).name, aligned, sampling_ratio,
                          inverted_policy(aligned, sampling_ratio))


# --------------------------------------------------------------------------------------
# random cases against torchvision
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampling_ratio", SAMPLING_RATIOS)
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_reference_forward_matches_torchvision(tv, config, dtype, aligned, sampling_ratio):
    x, boxes, rois, params, expected, _, _ = _tv_case(config, dtype, aligned, sampling_ratio)
    actual = tv.roi_align(x, boxes, **params)
    assert_close(expected, actual, dtype)
    # the case must exercise something: some RoIs pool non-zero values
    assert np.count_nonzero(expected) > 0


@pytest.mark.parametrize("sampling_ratio", SAMPLING_RATIOS)
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_reference_backward_matches_torchvision(tv, config, dtype, aligned, sampling_ratio):
    x, boxes, rois, params, _, grad_output, expected = _tv_case(
        config, dtype, aligned, sampling_ratio)
    actual = tv.roi_align_grad(x, boxes, grad_output, **params)
    assert_close(expected, actual, dtype)
    assert np.count_nonzero(expected) > 0


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_reference_bit_exact_with_torchvision(tv, dtype):
    """The reference replicates torchvision's evaluation order: equal bit for bit."""
    for config in CONFIG_NAMES:
        for aligned in (False, True):
            for sampling_ratio in SAMPLING_RATIOS:
                x, boxes, _, params, forward, grad_output, backward = _tv_case(
                    config, dtype, aligned, sampling_ratio)
                label = f"{config} aligned={aligned} sampling_ratio={sampling_ratio}"
                np.testing.assert_array_equal(
                    forward, tv.roi_align(x, boxes, **params), err_msg="forward " + label)
                np.testing.assert_array_equal(
                    backward, tv.roi_align_grad(x, boxes, grad_output, **params),
                    err_msg="backward " + label)


@pytest.mark.parametrize("spatial_scale", [0.0, 1.0 / 3.0, 2.0])
@pytest.mark.parametrize("aligned", [False, True])
def test_reference_unusual_scales_match_torchvision(tv, spatial_scale, aligned):
    rng = np.random.default_rng(7 + int(aligned))
    x = random_input(rng, (2, 2, 8, 6), np.float32)
    rois = random_rois(rng, 2, 8, 6, 12, np.float32,
                       spatial_scale=spatial_scale, inverted=inverted_policy(aligned, 2))
    params = dict(output_size=(2, 3), spatial_scale=spatial_scale, sampling_ratio=2,
                  aligned=aligned)
    forward = roi_align_ref(x, rois, **params)
    assert_close(forward, tv.roi_align(x, rois, **params))
    g = random_input(rng, forward.shape, np.float32)
    assert_close(roi_align_backward_ref(g, rois, x.shape, **backward_params(params)),
                 tv.roi_align_grad(x, rois, g, **params))


def test_reference_large_adaptive_grid_matches_torchvision(tv):
    """A RoI spanning the whole map with a 1x1 output: a 16x16 adaptive grid per bin."""
    rng = np.random.default_rng(3)
    x = random_input(rng, (1, 2, 16, 16), np.float32)
    rois = np.array([[0, -0.5, -0.5, 15.5, 15.5], [0, 1.25, 2.5, 14.0, 9.75]], np.float32)
    for aligned in (False, True):
        params = dict(output_size=1, spatial_scale=1.0, sampling_ratio=-1, aligned=aligned)
        assert_close(roi_align_ref(x, rois, **params), tv.roi_align(x, rois, **params))


# --------------------------------------------------------------------------------------
# known answers
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("case", KNOWN_ANSWERS, ids=KNOWN_ANSWER_IDS)
def test_reference_known_answer_forward(case, dtype):
    x, boxes, kwargs = known_answer_args(case, dtype)
    assert_known(roi_align_ref(x, boxes, **kwargs), case["expected"], dtype, case["atol"])


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("case", [c for c in KNOWN_ANSWERS if c["expected_grad"] is not None],
                         ids=[c["name"] for c in KNOWN_ANSWERS if c["expected_grad"] is not None])
def test_reference_known_answer_backward(case, dtype):
    x, boxes, kwargs = known_answer_args(case, dtype)
    kwargs.pop("output_size")
    grad = roi_align_backward_ref(case["grad_output"].astype(dtype), boxes, x.shape, **kwargs)
    assert_known(grad, case["expected_grad"], dtype, case["atol"])


@pytest.mark.parametrize("case", [c for c in KNOWN_ANSWERS if c["torchvision_ok"]],
                         ids=[c["name"] for c in KNOWN_ANSWERS if c["torchvision_ok"]])
def test_known_answer_table_agrees_with_torchvision(tv, case):
    """Cross-check of the transcribed tables: torchvision gives the same numbers."""
    x, boxes, kwargs = known_answer_args(case, np.float64)
    assert_known(tv.roi_align(x, boxes, **kwargs), case["expected"], np.float64, case["atol"])
    if case["expected_grad"] is not None:
        grad = tv.roi_align_grad(x, boxes, case["grad_output"], **kwargs)
        assert_known(grad, case["expected_grad"], np.float64, case["atol"])


# --------------------------------------------------------------------------------------
# properties of the reference that torchvision cannot check
# --------------------------------------------------------------------------------------

def test_sampler_border_rules():
    T = np.float64
    # strictly outside the closed band [-1, H]: nothing
    assert sample_taps(4, 5, -1.0000001, 2.0, T) is None
    assert sample_taps(4, 5, 2.0, 5.0000001, T) is None
    assert sample_taps(4, 5, float("nan"), 2.0, T) is None
    # on the band edges: clamped onto the border pixel with full weight
    taps = sample_taps(4, 5, -1.0, 4.0 + 1.0, T)
    assert taps[0] == ((0, 4), 1.0) and all(w == 0 for _, w in taps[1:])
    taps = sample_taps(4, 5, 4.0, -1.0, T)
    assert taps[0] == ((3, 0), 1.0)
    # interior sample: bilinear weights summing to one
    taps = sample_taps(4, 5, 1.25, 2.5, T)
    assert [p for p, _ in taps] == [(1, 2), (1, 3), (2, 2), (2, 3)]
    assert [w for _, w in taps] == [0.375, 0.375, 0.125, 0.125]
    # an empty map has no pixels to read
    assert sample_taps(0, 5, 0.0, 0.0, T) is None


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_reference_nonfinite_pixel_does_not_poison_out_of_image_rois(dtype):
    x = np.ones((1, 2, 5, 5), dtype=dtype)
    x[0, 0, 0, 0] = np.nan
    x[0, 1, 0, 0] = np.inf
    rois = np.array([[0, -20, -20, -10, -10], [0, 30, 30, 40, 40], [0, -9, 2, -3, 4]], dtype)
    for aligned in (False, True):
        out = roi_align_ref(x, rois, 3, 1.0, 2, aligned)
        assert np.all(out == 0)


def test_reference_aligned_one_axis_inverted_adaptive_is_zero():
    x = np.arange(42, dtype=np.float64).reshape(1, 1, 6, 7)
    rois = np.array([[0, 4, 1, 1, 4], [0, 1, 4, 4, 1]], dtype=np.float64)
    assert np.all(roi_align_ref(x, rois, 2, 1.0, -1, True) == 0)
    g = np.ones((2, 1, 2, 2))
    assert np.all(roi_align_backward_ref(g, rois, x.shape, 1.0, -1, True) == 0)


@pytest.mark.parametrize("shape", [(1, 2, 0, 4), (1, 2, 4, 0), (1, 0, 4, 4)])
def test_reference_empty_map_gives_zeros(shape):
    x = np.zeros(shape)
    rois = np.array([[0, 0, 0, 2, 2], [0, -1, -1, 0, 0]], dtype=np.float64)
    out = roi_align_ref(x, rois, (2, 3), 1.0, 2, False)
    assert out.shape == (2, shape[1], 2, 3) and np.all(out == 0)
    grad = roi_align_backward_ref(np.ones(out.shape), rois, shape, 1.0, 2, False)
    assert grad.shape == shape and np.all(grad == 0)


def test_reference_list_boxes_equal_rois_form():
    x, boxes, rois, params = make_case("list7x5", np.float64, False, 2)
    assert isinstance(boxes, list)
    np.testing.assert_array_equal(boxes_list_to_rois(boxes), rois)
    np.testing.assert_array_equal(roi_align_ref(x, boxes, **params),
                                  roi_align_ref(x, rois, **params))


@pytest.mark.parametrize("aligned", [False, True])
def test_reference_adjoint_identity(aligned):
    x, _, rois, params, forward, grad_output, backward = reference_case(
        "odd9x11", "float64", aligned, -1)
    lhs = np.vdot(forward, grad_output)
    rhs = np.vdot(x, backward)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12)


def test_random_rois_cover_edge_kinds():
    """The random generator really produces the edge cases the suite relies on."""
    rng = np.random.default_rng(0)
    rois = random_rois(rng, 2, 8, 8, 400, np.float64, inverted="any")
    width = rois[:, 3] - rois[:, 1]
    height = rois[:, 4] - rois[:, 2]
    assert np.any(width == 0) and np.any(height == 0)
    assert np.any((width < 0) & (height > 0)) and np.any((width < 0) & (height < 0))
    assert np.any((0 < width) & (width < 0.4))
    assert np.any(rois[:, 3] < -1.5) and np.any(rois[:, 1] > 9)
    assert set(np.unique(rois[:, 0])) == {0.0, 1.0}
    both = random_rois(rng, 1, 8, 8, 400, np.float64, inverted="both")
    w, h = both[:, 3] - both[:, 1], both[:, 4] - both[:, 2]
    assert not np.any((w < 0) != (h < 0))
    assert np.any(w < 0)
    none = random_rois(rng, 1, 8, 8, 400, np.float64, inverted="none")
    assert np.all(none[:, 3] >= none[:, 1]) and np.all(none[:, 4] >= none[:, 2])
    entries, reordered = rois_to_list(rois, 2)
    assert len(entries) == 2 and sum(len(e) for e in entries) == len(rois)
    np.testing.assert_array_equal(boxes_list_to_rois(entries), reordered)
