"""Tests of pyroi.roi_align_rotated and pyroi.roi_align_rotated_backward.

No rotated peer (detectron2, mmcv) is installed, so the oracles are: the NumPy reference
written from docs/semantics.md §7.1/§7.2 (tests/reference_rotated.py, which visits every sample and
evaluates every step in the documented order, so the comparison is bit for bit), detectron2's
published answers, pyroi.roi_align on the equivalent axis-aligned box at angle 0 (an
independent, separable implementation), the degrees/radians/clockwise equivalences, the adjoint
identity and finite differences.
"""

import doctest
import functools
import math
import time

import numpy as np
import pytest

import pyroi
from conftest import (CASE_CONFIGS, DTYPE_IDS, DTYPES, OUT_VIEWS, backward_params,
                      central_differences, channels_last_view, check_out_view,
                      negative_strides_view, random_input, read_only, rois_to_list, stable_seed,
                      strided_view, writable)
from reference import roi_align_backward_ref, roi_align_ref
from reference_rotated import (axis_aligned_boxes, roi_align_rotated_backward_ref,
                               roi_align_rotated_ref)

SAMPLING_RATIOS = (0, 1, 2, 3)
# (angle unit, clockwise): detectron2, mmcv, mmcv clockwise, degrees clockwise
CONVENTIONS = (("degrees", False), ("radians", False), ("radians", True), ("degrees", True))


# --------------------------------------------------------------------------------------
# random cases
# --------------------------------------------------------------------------------------

def random_rotated_rois(rng, num_images, height, width, num_rois, dtype, spatial_scale=1.0,
                        negative=True, angle="degrees"):
    """Random (K, 6) rotated RoIs ``[b, cx, cy, w, h, angle]`` in input-image coordinates.

    Centres inside the map, in its one-pixel halo or far outside; sizes ordinary, larger than
    the map, tiny, zero and (if ``negative``) negative; angles anywhere in [-360, 360] with a
    share of exact multiples of 45 and 90 degrees. Drawn in feature pixels, then unscaled.
    """
    unscale = 1.0 / spatial_scale if spatial_scale > 0 else 1.0
    extent = float(max(height, width, 1))
    rois = np.zeros((num_rois, 6), dtype=np.float64)
    size_kinds = ["ordinary", "large", "tiny", "zero"] + (["negative"] if negative else [])
    for k in range(num_rois):
        centre_kind = ("inside", "inside", "inside", "halo", "outside")[rng.integers(5)]
        if k < 2:
            centre_kind = "inside"
        if centre_kind == "inside":
            cx, cy = rng.uniform(-0.5, width + 0.5), rng.uniform(-0.5, height + 0.5)
        elif centre_kind == "halo":
            cx, cy = rng.uniform(-1.5, 0.0), rng.uniform(height, height + 1.5)
        else:  # every sample of a box this far away is outside the map
            cx = -3.0 * extent - 10.0 if rng.integers(2) else width + 3.0 * extent + 10.0
            cy = rng.uniform(-extent, 2 * extent)
        sizes = []
        for _ in range(2):
            kind = size_kinds[rng.integers(len(size_kinds))] if k >= 2 else "ordinary"
            if kind == "ordinary":
                sizes.append(rng.uniform(0.5, max(extent / 1.5, 0.6)))
            elif kind == "large":
                sizes.append(rng.uniform(extent, 2.0 * extent + 2.0))
            elif kind == "tiny":
                sizes.append(rng.uniform(0.0, 0.4))
            elif kind == "zero":
                sizes.append(0.0)
            else:
                sizes.append(-rng.uniform(0.2, 3.0))
        degrees = (rng.uniform(-360.0, 360.0) if rng.integers(3)
                   else float(rng.choice([0, 45, 90, -90, 180, 270, -135])))
        theta = degrees if angle == "degrees" else degrees * math.pi / 180.0
        batch = rng.integers(num_images) if num_images > 0 else 0
        rois[k] = (batch, cx * unscale, cy * unscale, sizes[0] * unscale, sizes[1] * unscale,
                   theta)
    return rois.astype(dtype)


CONFIG_NAMES = sorted(CASE_CONFIGS)


@functools.lru_cache(maxsize=None)
def reference_case(config, dtype_name, aligned, sampling_ratio):
    """Deterministic random case and its reference forward / backward (read-only arrays).

    The angle convention cycles with the parameters so that every convention meets every
    configuration, dtype, alignment and sampling ratio somewhere in the matrix.
    """
    cfg = CASE_CONFIGS[config]
    dtype = np.dtype(dtype_name)
    angle, clockwise = CONVENTIONS[(CONFIG_NAMES.index(config) + sampling_ratio + 2 * aligned
                                    + (dtype == np.float64)) % len(CONVENTIONS)]
    rng = np.random.default_rng(stable_seed("rotated", config, dtype_name, aligned,
                                            sampling_ratio))
    x = random_input(rng, (cfg["N"], cfg["C"], cfg["H"], cfg["W"]), dtype)
    rois = random_rotated_rois(rng, cfg["N"], cfg["H"], cfg["W"], cfg["K"], dtype,
                               spatial_scale=cfg["scale"], angle=angle)
    boxes = rois
    if cfg["as_list"]:
        boxes, rois = rois_to_list(rois, cfg["N"])
    params = dict(output_size=cfg["output_size"], spatial_scale=cfg["scale"],
                  sampling_ratio=sampling_ratio, aligned=aligned, clockwise=clockwise,
                  angle=angle)
    forward = roi_align_rotated_ref(x, rois, **params)
    grad_output = random_input(rng, forward.shape, dtype)
    backward = roi_align_rotated_backward_ref(grad_output, rois, x.shape, **backward_params(params))
    arrays = [x, rois, forward, grad_output, backward] + (boxes if cfg["as_list"] else [])
    for array in arrays:
        array.setflags(write=False)
    return x, boxes, rois, params, forward, grad_output, backward



matrix = pytest.mark.parametrize


# --------------------------------------------------------------------------------------
# against the reference (bit for bit: both follow the documented evaluation order)
# --------------------------------------------------------------------------------------

@matrix("sampling_ratio", SAMPLING_RATIOS)
@matrix("aligned", [False, True])
@matrix("dtype", DTYPES, ids=DTYPE_IDS)
@matrix("config", CONFIG_NAMES)
def test_matches_reference_bit_for_bit(config, dtype, aligned, sampling_ratio):
    x, boxes, _, params, forward, grad_output, backward = reference_case(
        config, np.dtype(dtype).name, aligned, sampling_ratio)
    out = pyroi.roi_align_rotated(writable(x), writable(boxes), **params)
    assert out.dtype == dtype and out.shape == forward.shape
    np.testing.assert_array_equal(out, forward)
    grad = pyroi.roi_align_rotated_backward(writable(grad_output), writable(boxes), x.shape,
                                            **backward_params(params))
    assert grad.dtype == dtype and grad.shape == x.shape
    np.testing.assert_array_equal(grad, backward)


def test_reference_cases_exercise_data():
    """The random matrix pools real data and sees every angle convention."""
    seen = set()
    for config in CONFIG_NAMES:
        for aligned in (False, True):
            for sampling_ratio in SAMPLING_RATIOS:
                _, _, _, params, forward, _, backward = reference_case(
                    config, "float32", aligned, sampling_ratio)
                assert np.count_nonzero(forward) > 0, config
                assert np.count_nonzero(backward) > 0, config
                seen.add((params["angle"], params["clockwise"]))
    assert seen == set(CONVENTIONS)


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_dense_grids_and_large_boxes_match_reference(dtype):
    """Grids long enough to be narrowed by bisection (many samples outside the map), bins
    with more samples than one internal flush buffer, more bins than one flush holds, fixed
    and adaptive sampling."""
    rng = np.random.default_rng(67)
    x = random_input(rng, (1, 2, 12, 13), dtype)
    rois = np.array([[0, 6, 6, 400, 300, 30], [0, -50, 20, 300, 200, -70],
                     [0, 6.3, 5.1, 60, 80, 10], [0, 3.5, 9.25, 40, 2, 123.4],
                     [0, 12.5, -0.5, 90, 90, 45], [0, 7, 7, 700, 3, -90]], dtype)
    for output_size, sampling_ratio in ((2, 0), (1, 0), ((3, 2), 37), (1, 64), ((23, 17), 1)):
        for aligned in (False, True):
            params = dict(output_size=output_size, sampling_ratio=sampling_ratio,
                          aligned=aligned)
            expected = roi_align_rotated_ref(x, rois, **params)
            np.testing.assert_array_equal(pyroi.roi_align_rotated(x, rois, **params), expected)
            g = random_input(rng, expected.shape, dtype)
            bparams = backward_params(params)
            np.testing.assert_array_equal(
                pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams),
                roi_align_rotated_backward_ref(g, rois, x.shape, **bparams))


@matrix("spatial_scale", [0.0, 0.3, 1.0 / 3.0, 2.0])
@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_unusual_spatial_scales_match_reference(spatial_scale, dtype):
    rng = np.random.default_rng(11)
    x = random_input(rng, (2, 3, 8, 6), dtype)
    rois = random_rotated_rois(rng, 2, 8, 6, 10, dtype, spatial_scale=spatial_scale)
    for aligned in (False, True):
        params = dict(output_size=(3, 2), spatial_scale=spatial_scale, sampling_ratio=2,
                      aligned=aligned)
        expected = roi_align_rotated_ref(x, rois, **params)
        np.testing.assert_array_equal(pyroi.roi_align_rotated(x, rois, **params), expected)
        g = random_input(rng, expected.shape, dtype)
        np.testing.assert_array_equal(
            pyroi.roi_align_rotated_backward(g, rois, x.shape, **backward_params(params)),
            roi_align_rotated_backward_ref(g, rois, x.shape, **backward_params(params)))


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_defaults_are_detectron2(dtype):
    """spatial_scale 1, sampling_ratio 0 (adaptive), aligned, counter-clockwise degrees."""
    rng = np.random.default_rng(3)
    x = random_input(rng, (1, 2, 9, 8), dtype)
    rois = random_rotated_rois(rng, 1, 9, 8, 6, dtype, negative=False)
    expected = roi_align_rotated_ref(x, rois, 3, 1.0, 0, True, False, "degrees")
    np.testing.assert_array_equal(pyroi.roi_align_rotated(x, rois, 3), expected)
    g = random_input(rng, expected.shape, dtype)
    np.testing.assert_array_equal(
        pyroi.roi_align_rotated_backward(g, rois, x.shape),
        roi_align_rotated_backward_ref(g, rois, x.shape, 1.0, 0, True, False, "degrees"))


# --------------------------------------------------------------------------------------
# known answers (detectron2 tests/layers/test_roi_align_rotated.py, docs/semantics.md §7.1, §11.4)
# --------------------------------------------------------------------------------------

DETECTRON2_ANSWER = np.array([[4.5, 5.0, 5.5, 6.0], [7.0, 7.5, 8.0, 8.5],
                              [9.5, 10.0, 10.5, 11.0], [12.0, 12.5, 13.0, 13.5]])


def rotated_answer(turns):
    """detectron2's expectation for a box turned 90 * turns degrees counter-clockwise: the
    0-degree answer turned the other way (its _rot90(expected, -i))."""
    return np.rot90(DETECTRON2_ANSWER, -turns)


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
@matrix("turns", [0, 1, 2, 3])
def test_detectron2_rotations(turns, dtype):
    x = np.arange(25, dtype=dtype).reshape(1, 1, 5, 5)
    # box [1, 1, 3, 3] as (cx, cy, w, h) = (2, 2, 2, 2)
    rois = np.array([[0, 2, 2, 2, 2, 90 * turns]], dtype)
    out = pyroi.roi_align_rotated(x, rois, (4, 4), spatial_scale=1.0, sampling_ratio=0)[0, 0]
    if turns == 0:
        np.testing.assert_array_equal(out, DETECTRON2_ANSWER)  # exact binary fractions
    else:  # cos(pi/2) rounded is not 0
        atol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out, rotated_answer(turns), rtol=0, atol=atol)
    np.testing.assert_array_equal(out, roi_align_rotated_ref(x, rois, 4)[0, 0])


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
@matrix("turns", [1, 2, 3])
def test_mmcv_radians_and_clockwise_rotations(turns, dtype):
    """mmcv's convention: radians; clockwise=True turns the box the other way."""
    x = np.arange(25, dtype=dtype).reshape(1, 1, 5, 5)
    rois = np.array([[0, 2, 2, 2, 2, turns * math.pi / 2]], dtype)
    atol = 1e-5 if dtype == np.float32 else 1e-12
    ccw = pyroi.roi_align_rotated(x, rois, 4, angle="radians")[0, 0]
    np.testing.assert_allclose(ccw, rotated_answer(turns), rtol=0, atol=atol)
    cw = pyroi.roi_align_rotated(x, rois, 4, angle="radians", clockwise=True)[0, 0]
    np.testing.assert_allclose(cw, rotated_answer(-turns), rtol=0, atol=atol)


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_detectron2_empty_box(dtype):
    """detectron2 test_empty_box: box (2, 3, 0, 0, 0), 7x7 output: zeros, zero gradient."""
    x = np.random.default_rng(1).uniform(0, 1, (1, 1, 5, 5)).astype(dtype)
    rois = np.array([[0, 2, 3, 0, 0, 0]], dtype)
    out = pyroi.roi_align_rotated(x, rois, 7)
    assert out.shape == (1, 1, 7, 7) and not np.any(out)
    grad = pyroi.roi_align_rotated_backward(np.ones_like(out), rois, x.shape)
    assert not np.any(grad)


# detectron2's gradcheck RoIs: (b, cx, cy, w, h, angle), scale 0.5, sampling ratio 1, 5x5
GRADCHECK_ROIS = np.array([[0, 4.5, 4.5, 9, 9, 0], [0, 2, 7, 4, 4, 0], [0, 7, 7, 4, 4, 0]],
                          np.float64)


@matrix("transposed", [False, True])
def test_detectron2_gradcheck_rois(transposed):
    """detectron2's gradcheck case (float64) by central differences, on a contiguous and on a
    transposed input (detectron2 also checks x.transpose(2, 3))."""
    rng = np.random.default_rng(2024 + transposed)
    x = rng.uniform(0, 1, (1, 1, 10, 10))
    if transposed:
        x = x.transpose(0, 1, 3, 2)
    params = dict(spatial_scale=0.5, sampling_ratio=1)
    g = rng.standard_normal((3, 1, 5, 5))
    grad = pyroi.roi_align_rotated_backward(g, GRADCHECK_ROIS, x.shape, **params)
    numeric = central_differences(
        lambda v: pyroi.roi_align_rotated(v, GRADCHECK_ROIS, 5, **params), x, g)
    assert np.count_nonzero(grad) > 10
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


@matrix("aligned", [False, True])
def test_rotated_boxes_match_central_differences(aligned):
    """Finite differences at arbitrary angles, fixed and adaptive sampling (float64)."""
    rng = np.random.default_rng(17 + aligned)
    shape = (2, 2, 6, 7)
    x = random_input(rng, shape, np.float64)
    rois = np.array([[0, 3.1, 2.7, 4.3, 3.4, 27.0], [1, 2.4, 3.3, 5.2, 2.9, -61.0],
                     [0, 4.2, 3.6, 2.2, 6.1, 133.0], [1, 0.3, 5.1, 3.3, 3.7, 200.5]])
    for sampling_ratio in (0, 2):
        params = dict(spatial_scale=1.0, sampling_ratio=sampling_ratio, aligned=aligned)
        g = random_input(rng, (len(rois), shape[1], 2, 3), np.float64)
        grad = pyroi.roi_align_rotated_backward(g, rois, shape, **params)
        numeric = central_differences(
            lambda v: pyroi.roi_align_rotated(v, rois, (2, 3), **params), x, g)
        assert np.count_nonzero(grad) > shape[0] * shape[1] * 4
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


def test_detectron2_rotated_gradient_equals_roi_align():
    """detectron2's CUDA test, on the CPU: the gradient of sum(ROIAlignRotated) at angle 0
    equals that of ROIAlign (aligned) on the same boxes in xyxy form, sampling ratio 2."""
    x = np.random.default_rng(9).uniform(0, 1, (1, 1, 10, 10))
    boxes = np.array([[0, 0, 0, 9, 9], [0, 0, 5, 4, 9], [0, 5, 5, 9, 9]], np.float64)
    rotated = pyroi.roi_align_rotated(x, GRADCHECK_ROIS, 5, 1.0, 2)
    plain = pyroi.roi_align(x, boxes, 5, 1.0, 2, aligned=True)
    np.testing.assert_allclose(rotated, plain, rtol=1e-12, atol=1e-12)
    ones = np.ones((3, 1, 5, 5))
    np.testing.assert_allclose(
        pyroi.roi_align_rotated_backward(ones, GRADCHECK_ROIS, x.shape, 1.0, 2),
        pyroi.roi_align_backward(ones, boxes, x.shape, 1.0, 2, aligned=True),
        rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------------------
# angle 0 equals pyroi.roi_align on the axis-aligned box
# --------------------------------------------------------------------------------------

def dyadic_rotated_rois(rng, num_images, height, width, num_rois, pooled, spatial_scale,
                        negative):
    """Angle-0 RoIs whose every intermediate is an exact binary fraction: centres on a 1/8
    grid, scaled bin sizes that are whole pixels (so adaptive grids divide exactly), some
    zero or (if ``negative``) inverted sizes."""
    rois = np.zeros((num_rois, 6))
    for k in range(num_rois):
        sizes = []
        for bins in pooled:
            bin_size = int(rng.integers(1, 6))
            kind = rng.integers(6)
            if kind == 0:
                bin_size = 0
            elif kind == 1 and negative:
                bin_size = -bin_size
            sizes.append(bin_size * bins / spatial_scale)
        cx = np.round(rng.uniform(-3, width + 3) * 8) / 8 / spatial_scale
        cy = np.round(rng.uniform(-3, height + 3) * 8) / 8 / spatial_scale
        rois[k] = (rng.integers(num_images), cx, cy, sizes[1], sizes[0], 0.0)
    return rois


@matrix("sampling_ratio", [0, 1, 2, 4])
@matrix("aligned", [False, True])
@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_angle_zero_equals_roi_align_bit_for_bit(dtype, aligned, sampling_ratio):
    """On exact (dyadic) boxes the two operators compute the same real numbers, so they agree
    bit for bit, forward and backward (including zero-size and, aligned, inverted boxes)."""
    rng = np.random.default_rng(stable_seed("dyadic", np.dtype(dtype).name, aligned,
                                            sampling_ratio))
    x = random_input(rng, (2, 3, 11, 9), dtype)
    for pooled, scale in (((2, 2), 1.0), ((4, 2), 0.5), ((1, 4), 0.25)):
        rois = dyadic_rotated_rois(rng, 2, 11, 9, 12, pooled, scale, negative=aligned)
        if not aligned:  # legacy widening of sizes below 1 differs (centre vs corner)
            rois[:, 3:5] = np.where(np.abs(rois[:, 3:5]) * scale < 1,
                                    np.array(pooled[::-1]) / scale, rois[:, 3:5])
        rois = rois.astype(dtype)
        boxes = axis_aligned_boxes(rois)
        params = dict(output_size=pooled, spatial_scale=scale, sampling_ratio=sampling_ratio,
                      aligned=aligned)
        out = pyroi.roi_align_rotated(x, rois, **params)
        assert np.count_nonzero(out) > 0
        np.testing.assert_array_equal(out, pyroi.roi_align(x, boxes, **params))
        g = random_input(rng, out.shape, dtype)
        bparams = backward_params(params)
        np.testing.assert_array_equal(pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams),
                                      pyroi.roi_align_backward(g, boxes, x.shape, **bparams))


@matrix("sampling_ratio", [0, 2])
@matrix("aligned", [False, True])
@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_angle_zero_close_to_roi_align_on_arbitrary_boxes(dtype, aligned, sampling_ratio):
    """On arbitrary boxes the sample coordinates are summed in another order, so the two agree
    to rounding only (sizes kept >= 1 and non-negative: see the legacy widening note)."""
    rng = np.random.default_rng(stable_seed("angle0", np.dtype(dtype).name, aligned,
                                            sampling_ratio))
    x = random_input(rng, (2, 3, 9, 11), dtype)
    rois = random_rotated_rois(rng, 2, 9, 11, 30, np.float64, spatial_scale=0.7,
                               negative=False)
    rois[:, 3:5] = np.maximum(rois[:, 3:5], 1.0 / 0.7 + 0.01)
    rois[:, 5] = 0.0
    rois = rois.astype(dtype)
    boxes = axis_aligned_boxes(rois)
    params = dict(output_size=(3, 2), spatial_scale=0.7, sampling_ratio=sampling_ratio,
                  aligned=aligned)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    out = pyroi.roi_align_rotated(x, rois, **params)
    np.testing.assert_allclose(out, pyroi.roi_align(x, boxes, **params), **tol)
    g = random_input(rng, out.shape, dtype)
    bparams = backward_params(params)
    np.testing.assert_allclose(pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams),
                               pyroi.roi_align_backward(g, boxes, x.shape, **bparams), **tol)


def test_reference_at_angle_zero_equals_roi_align_reference():
    """The two NumPy references (written separately from docs/semantics.md §3 and §7) agree on
    exact boxes: a check of the rotated reference itself."""
    rng = np.random.default_rng(77)
    x = random_input(rng, (2, 2, 7, 8), np.float32)
    for aligned in (False, True):
        rois = dyadic_rotated_rois(rng, 2, 7, 8, 8, (2, 2), 1.0, negative=aligned)
        if not aligned:
            rois[:, 3:5] = np.where(np.abs(rois[:, 3:5]) < 1, 2.0, rois[:, 3:5])
        rois = rois.astype(np.float32)
        boxes = axis_aligned_boxes(rois)
        for sampling_ratio in (0, 2):
            args = (2, 1.0, sampling_ratio, aligned)
            forward = roi_align_rotated_ref(x, rois, *args)
            np.testing.assert_array_equal(forward, roi_align_ref(x, boxes, *args))
            g = random_input(rng, forward.shape, np.float32)
            np.testing.assert_array_equal(
                roi_align_rotated_backward_ref(g, rois, x.shape, *args[1:]),
                roi_align_backward_ref(g, boxes, x.shape, *args[1:]))


# --------------------------------------------------------------------------------------
# angle conventions
# --------------------------------------------------------------------------------------

@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_radians_clockwise_equal_degrees(dtype):
    """mmcv's radians (+ clockwise) reproduce detectron2's degrees bit for bit when given the
    radians the degrees convert to (angle * pi / 180 in float64, rounded to the dtype)."""
    rng = np.random.default_rng(19)
    x = random_input(rng, (2, 3, 10, 9), dtype)
    rois = random_rotated_rois(rng, 2, 10, 9, 20, dtype)
    degrees = rois[:, 5].astype(np.float64)
    radians = (degrees * math.pi / 180.0).astype(dtype)
    params = dict(output_size=(2, 3), spatial_scale=1.0, sampling_ratio=2)
    expected = pyroi.roi_align_rotated(x, rois, **params)
    g = random_input(rng, expected.shape, dtype)
    expected_grad = pyroi.roi_align_rotated_backward(g, rois, x.shape, **backward_params(params))
    variants = {
        "radians": (radians, dict(angle="radians")),
        "radians clockwise": (-radians, dict(angle="radians", clockwise=True)),
        "degrees clockwise": (-rois[:, 5], dict(clockwise=True)),
    }
    for label, (column, extra) in variants.items():
        other = rois.copy()
        other[:, 5] = column
        np.testing.assert_array_equal(pyroi.roi_align_rotated(x, other, **params, **extra),
                                      expected, err_msg=label)
        np.testing.assert_array_equal(
            pyroi.roi_align_rotated_backward(g, other, x.shape, **backward_params(params),
                                             **extra), expected_grad, err_msg=label)


def test_full_turn_and_half_turn():
    """+360 degrees is the same box up to rounding of the angle; 180 degrees equals negated
    sizes with a fixed sampling ratio (both walk the box backwards)."""
    rng = np.random.default_rng(23)
    x = random_input(rng, (1, 2, 9, 9), np.float64)
    rois = random_rotated_rois(rng, 1, 9, 9, 12, np.float64, negative=False)
    turned = rois.copy()
    turned[:, 5] += 360.0
    params = dict(output_size=3, sampling_ratio=2)
    np.testing.assert_allclose(pyroi.roi_align_rotated(x, turned, **params),
                               pyroi.roi_align_rotated(x, rois, **params), rtol=1e-9, atol=1e-9)
    half = rois.copy()
    half[:, 5] += 180.0
    mirrored = rois.copy()
    mirrored[:, 3:5] *= -1
    np.testing.assert_allclose(pyroi.roi_align_rotated(x, half, **params),
                               pyroi.roi_align_rotated(x, mirrored, **params),
                               rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------------------
# adjoint identity
# --------------------------------------------------------------------------------------

@matrix("sampling_ratio", [0, 1, 3])
@matrix("aligned", [False, True])
@matrix("config", CONFIG_NAMES)
def test_adjoint_identity(config, aligned, sampling_ratio):
    """<roi_align_rotated(x), g> == <x, roi_align_rotated_backward(g)> in float64."""
    x, boxes, _, params, _, _, _ = reference_case(config, "float64", aligned, sampling_ratio)
    rng = np.random.default_rng(stable_seed("adjoint-rotated", config, aligned, sampling_ratio))
    forward = pyroi.roi_align_rotated(writable(x), writable(boxes), **params)
    g = random_input(rng, forward.shape, np.float64)
    backward = pyroi.roi_align_rotated_backward(g, writable(boxes), x.shape,
                                                **backward_params(params))
    lhs = np.vdot(forward, g)
    rhs = np.vdot(x, backward)
    magnitude = np.vdot(np.abs(forward), np.abs(g)) + np.vdot(np.abs(x), np.abs(backward))
    assert magnitude > 0
    assert abs(lhs - rhs) <= 1e-12 * magnitude, (lhs, rhs, magnitude)


# --------------------------------------------------------------------------------------
# memory layouts, box forms, out=
# --------------------------------------------------------------------------------------

def layout_case(dtype):
    rng = np.random.default_rng(29)
    x = random_input(rng, (2, 3, 9, 11), dtype)
    rois = random_rotated_rois(rng, 2, 9, 11, 14, dtype, spatial_scale=0.5)
    params = dict(output_size=(3, 4), spatial_scale=0.5, sampling_ratio=0, aligned=True)
    return x, rois, params


LAYOUTS = {
    "nhwc_transposed": channels_last_view,
    "sliced_steps": strided_view,
    "negative_strides": negative_strides_view,
    "fortran_order": np.asfortranarray,
    "read_only": read_only,
}


@matrix("layout", sorted(LAYOUTS))
@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_input_and_grad_output_layouts(layout, dtype):
    x, rois, params = layout_case(dtype)
    expected = pyroi.roi_align_rotated(x, rois, **params)
    assert np.count_nonzero(expected) > 0
    view = LAYOUTS[layout](x)
    np.testing.assert_array_equal(view, x)
    np.testing.assert_array_equal(pyroi.roi_align_rotated(view, rois, **params), expected)
    g = random_input(np.random.default_rng(31), expected.shape, dtype)
    bparams = backward_params(params)
    expected_grad = pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams)
    np.testing.assert_array_equal(
        pyroi.roi_align_rotated_backward(LAYOUTS[layout](g), rois, x.shape, **bparams),
        expected_grad)


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_broadcast_inputs(dtype):
    x, rois, params = layout_case(dtype)
    plane = random_input(np.random.default_rng(37), (1, 1, 9, 11), dtype)
    view = np.broadcast_to(plane, x.shape)
    np.testing.assert_array_equal(pyroi.roi_align_rotated(view, rois, **params),
                                  pyroi.roi_align_rotated(view.copy(), rois, **params))
    g = np.broadcast_to(random_input(np.random.default_rng(41), (1, 3, 1, 4), dtype),
                        (len(rois), 3, 3, 4))
    bparams = backward_params(params)
    np.testing.assert_array_equal(pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams),
                                  pyroi.roi_align_rotated_backward(g.copy(), rois, x.shape,
                                                                   **bparams))


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_roi_forms_and_layouts(dtype):
    x, rois, params = layout_case(dtype)
    expected = pyroi.roi_align_rotated(x, rois, **params)
    np.testing.assert_array_equal(pyroi.roi_align_rotated(x, np.asfortranarray(rois), **params),
                                  expected)
    big = np.full((2 * len(rois), 12), np.nan, dtype=dtype)
    big[::2, ::2] = rois
    np.testing.assert_array_equal(pyroi.roi_align_rotated(x, big[::2, ::2], **params), expected)
    np.testing.assert_array_equal(pyroi.roi_align_rotated(x, rois[::-1], **params),
                                  expected[::-1])
    np.testing.assert_array_equal(pyroi.roi_align_rotated(x, read_only(rois), **params),
                                  expected)
    # list of (L_i, 5) per image
    as_list = [np.asfortranarray(rois[rois[:, 0] == i, 1:]) for i in range(2)]
    order = np.argsort(rois[:, 0], kind="stable")
    np.testing.assert_array_equal(pyroi.roi_align_rotated(x, as_list, **params),
                                  expected[order])
    # (K, 5) with batch_indices=, any integer dtype
    for index_dtype in (np.int64, np.int32, np.uint8):
        np.testing.assert_array_equal(
            pyroi.roi_align_rotated(x, rois[:, 1:], **params,
                                    batch_indices=rois[:, 0].astype(index_dtype)),
            expected)
    g = random_input(np.random.default_rng(43), expected.shape, dtype)
    bparams = backward_params(params)
    expected_grad = pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams)
    np.testing.assert_array_equal(
        pyroi.roi_align_rotated_backward(g, rois[:, 1:], x.shape, **bparams,
                                         batch_indices=rois[:, 0].astype(np.int64)),
        expected_grad)
    np.testing.assert_array_equal(
        pyroi.roi_align_rotated_backward(g[order], as_list, x.shape, **bparams), expected_grad)


@matrix("view_kind", OUT_VIEWS)
@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_forward_out(dtype, view_kind):
    x, rois, params = layout_case(dtype)
    expected = pyroi.roi_align_rotated(x, rois, **params)
    check_out_view(lambda out: pyroi.roi_align_rotated(x, rois, **params, out=out), expected,
                   view_kind)


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_backward_out_overwrites(dtype):
    x, rois, params = layout_case(dtype)
    g = random_input(np.random.default_rng(47), (len(rois), 3, 3, 4), dtype)
    bparams = backward_params(params)
    expected = pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams)
    out = np.full(x.shape, 7.0, dtype)
    assert pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams, out=out) is out
    np.testing.assert_array_equal(out, expected)
    buffer = np.full(x.shape[:3] + (2 * x.shape[3],), -3.0, dtype)
    view = buffer[..., ::2]
    assert pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams, out=view) is view
    np.testing.assert_array_equal(view, expected)
    assert np.all(buffer[..., 1::2] == -3.0)
    transposed = np.full(x.shape[::-1], np.nan, dtype).T
    pyroi.roi_align_rotated_backward(g, rois, x.shape, **bparams, out=transposed)
    np.testing.assert_array_equal(transposed, expected)


# --------------------------------------------------------------------------------------
# empty shapes
# --------------------------------------------------------------------------------------

@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_no_rois(dtype):
    x = random_input(np.random.default_rng(1), (2, 3, 5, 6), dtype)
    out = pyroi.roi_align_rotated(x, np.zeros((0, 6), dtype), (2, 3))
    assert out.shape == (0, 3, 2, 3) and out.dtype == dtype
    out = pyroi.roi_align_rotated(x, [np.zeros((0, 5), dtype)] * 2, 4)
    assert out.shape == (0, 3, 4, 4)
    out = pyroi.roi_align_rotated(x, np.zeros((0, 5), dtype), 2,
                                  batch_indices=np.zeros(0, np.int64))
    assert out.shape == (0, 3, 2, 2)
    prefilled = np.full(x.shape, 5.0, dtype)
    grad = pyroi.roi_align_rotated_backward(np.zeros((0, 3, 2, 3), dtype),
                                            np.zeros((0, 6), dtype), x.shape, out=prefilled)
    assert grad is prefilled and not np.any(grad)
    empty = pyroi.roi_align_rotated(np.zeros((0, 3, 5, 6), dtype), np.zeros((0, 6), dtype), 2)
    assert empty.shape == (0, 3, 2, 2)


@matrix("shape", [(2, 0, 5, 6), (2, 3, 0, 6), (2, 3, 5, 0)], ids=["C0", "H0", "W0"])
@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_empty_map_gives_zeros(shape, dtype):
    rois = np.array([[0, 1, 1, 3, 3, 30], [1, 0, 0, 0.5, 0.5, -10], [1, 4, 2, 9, 9, 90]], dtype)
    for aligned in (False, True):
        out = pyroi.roi_align_rotated(np.zeros(shape, dtype), rois, (2, 3), aligned=aligned)
        assert out.shape == (3, shape[1], 2, 3) and not np.any(out)
        grad = pyroi.roi_align_rotated_backward(np.ones((3, shape[1], 2, 3), dtype), rois, shape,
                                                aligned=aligned)
        assert grad.shape == shape and not np.any(grad)


# --------------------------------------------------------------------------------------
# behaviour defined where the peers are not
# --------------------------------------------------------------------------------------

@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_nonfinite_corner_pixel_does_not_poison_out_of_image_rois(dtype):
    """Samples outside [-1, H] x [-1, W] contribute nothing (the peers add 0*x[b,c,0,0])."""
    x = np.ones((1, 2, 8, 9), dtype)
    x[0, 0, 0, 0] = np.nan
    x[0, 1, 0, 0] = np.inf
    rois = np.array([[0, -20, -20, 5, 5, 30], [0, 40, 4, 6, 20, 80], [0, 4, -9, 3, 3, 0]], dtype)
    for sampling_ratio in (0, 2):
        out = pyroi.roi_align_rotated(x, rois, (2, 3), sampling_ratio=sampling_ratio)
        assert np.all(out == 0)
        grad = pyroi.roi_align_rotated_backward(np.ones_like(out), rois, x.shape,
                                                sampling_ratio=sampling_ratio)
        assert not np.any(grad)


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_negative_sizes_aligned(dtype):
    """The peers assert; pyroi: adaptive sampling has no samples on a negative axis (zeros),
    a fixed ratio samples the mirrored box (at angle 0: roi_align's inverted box)."""
    x = np.arange(2 * 42, dtype=dtype).reshape(1, 2, 6, 7) + 1
    rois = np.array([[0, 3, 3, -4, 2, 20], [0, 3, 3, 2, -4, -50], [0, 3.5, 2.5, -3, -3, 0],
                     [0, 3, 3, 4, 2, 20]], dtype)
    out = pyroi.roi_align_rotated(x, rois, 2, sampling_ratio=0)
    assert not np.any(out[:3]) and np.all(out[3] > 0)
    g = np.ones_like(out)
    g[3] = 0
    assert not np.any(pyroi.roi_align_rotated_backward(g, rois, x.shape, sampling_ratio=0))
    mirrored = pyroi.roi_align_rotated(x, rois[2:3], 2, sampling_ratio=2)
    np.testing.assert_array_equal(
        mirrored, pyroi.roi_align(x, axis_aligned_boxes(rois[2:3]), 2, 1.0, 2, True))
    assert np.all(mirrored > 0)


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_legacy_mode_widens_small_sizes_about_the_centre(dtype):
    """mmcv aligned=False: sizes below 1 become 1, centred on the RoI's centre."""
    x = random_input(np.random.default_rng(53), (1, 1, 6, 6), dtype)
    tiny = np.array([[0, 2.5, 3.5, 0.2, -3, 0]], dtype)
    unit = np.array([[0, 2.5, 3.5, 1, 1, 0]], dtype)
    for sampling_ratio in (0, 2):
        np.testing.assert_array_equal(
            pyroi.roi_align_rotated(x, tiny, 2, sampling_ratio=sampling_ratio, aligned=False),
            pyroi.roi_align_rotated(x, unit, 2, sampling_ratio=sampling_ratio, aligned=False))


@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_huge_boxes_are_cheap_and_exact(dtype):
    """A 2^20-pixel box: bisection skips the ~10^12 samples outside the map. At angle 0 it
    equals roi_align exactly (dyadic); turned, it is finite and touches few bins."""
    x = np.arange(1, 26, dtype=dtype).reshape(1, 1, 5, 5)
    side = 2.0 ** 20
    start = time.perf_counter()
    straight = pyroi.roi_align_rotated(x, np.array([[0, 2, 2, side, side, 0]], dtype), 8)
    turned = pyroi.roi_align_rotated(x, np.array([[0, 2, 2, 1e6, 1e6, 33]], dtype), 7)
    grad = pyroi.roi_align_rotated_backward(np.ones((1, 1, 7, 7), dtype),
                                            np.array([[0, 2, 2, 1e6, 1e6, 33]], dtype), x.shape)
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, elapsed  # ~0.05 s; 10^12 samples would take hours
    box = np.array([[0, 2 - side / 2, 2 - side / 2, 2 + side / 2, 2 + side / 2]], dtype)
    np.testing.assert_array_equal(straight, pyroi.roi_align(x, box, 8, 1.0, 0, True))
    assert np.count_nonzero(straight) == 4
    assert np.all(np.isfinite(turned)) and 1 <= np.count_nonzero(turned) <= 4
    assert np.all(np.isfinite(grad)) and grad.sum() > 0


# --------------------------------------------------------------------------------------
# threads
# --------------------------------------------------------------------------------------

def threads_case(dtype):
    """About 10^7 tap reads: several threads really run."""
    rng = np.random.default_rng(59)
    x = rng.standard_normal((2, 48, 40, 44)).astype(dtype)
    k = 300
    rois = np.zeros((k, 6))
    rois[:, 0] = np.arange(k) % 2
    rois[:, 1] = rng.uniform(-8, 52, k)
    rois[:, 2] = rng.uniform(-8, 48, k)
    rois[:, 3:5] = rng.uniform(0, 30, (k, 2))
    rois[:, 5] = rng.uniform(-180, 180, k)
    grad = rng.standard_normal((k, 48, 7, 7)).astype(dtype)
    return x, rois.astype(dtype), grad


@matrix("sampling_ratio", [0, 2])
@matrix("dtype", DTYPES, ids=DTYPE_IDS)
def test_bit_identical_for_every_thread_count(dtype, sampling_ratio):
    x, rois, grad = threads_case(dtype)
    kwargs = dict(spatial_scale=0.75, sampling_ratio=sampling_ratio)
    y1 = pyroi.roi_align_rotated(x, rois, 7, num_threads=1, **kwargs)
    g1 = pyroi.roi_align_rotated_backward(grad, rois, x.shape, num_threads=1, **kwargs)
    assert np.count_nonzero(y1) > 0 and np.count_nonzero(g1) > 0
    for threads in (2, 3, None):
        assert pyroi.roi_align_rotated(x, rois, 7, num_threads=threads,
                                       **kwargs).tobytes() == y1.tobytes(), threads
        assert pyroi.roi_align_rotated_backward(grad, rois, x.shape, num_threads=threads,
                                                **kwargs).tobytes() == g1.tobytes(), threads


# --------------------------------------------------------------------------------------
# documentation
# --------------------------------------------------------------------------------------

@matrix("name", ["roi_align_rotated", "roi_align_rotated_backward"])
def test_docstring_examples(name):
    func = getattr(pyroi, name)
    assert func.__doc__ and "Examples" in func.__doc__
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(func, name, globs={}):
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.attempted > 0 and results.failed == 0


# --------------------------------------------------------------------------------------
# errors: class (also the matching builtin), the argument named, the RoI named
# --------------------------------------------------------------------------------------

EN, EC, EH, EW, EK = 2, 3, 6, 7, 5
BAD_ROI = 3


def error_input(dtype=np.float32):
    return np.random.default_rng(0).standard_normal((EN, EC, EH, EW)).astype(dtype)


def error_rois(dtype=np.float32):
    return np.array([[0, 2, 2, 4, 4, 10], [1, 3, 2, 4, 2, -30], [0, 4, 3, 4, 4, 90],
                     [1, 1.5, 1.5, 2, 2, 0], [0, 3.5, 3.5, 1, 3, 45]], dtype=dtype)


def error_grad(dtype=np.float32, num_rois=EK, channels=EC):
    return np.ones((num_rois, channels, 2, 2), dtype=dtype)


def names(excinfo, *words):
    message = str(excinfo.value)
    return any(word.lower() in message.lower() for word in words)


def test_valid_error_fixtures():
    assert pyroi.roi_align_rotated(error_input(), error_rois(), 2).shape == (EK, EC, 2, 2)
    assert pyroi.roi_align_rotated_backward(error_grad(), error_rois(),
                                            (EN, EC, EH, EW)).shape == (EN, EC, EH, EW)


@matrix("shape", [(EK, 5), (EK, 7), (EK, 4), (6,), (1, EK, 6)],
        ids=["K5-no-indices", "K7", "K4", "1d", "3d"])
def test_rois_wrong_shape(shape):
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated(error_input(), np.zeros(shape, np.float32), 2)
    assert names(excinfo, "rois")
    with pytest.raises(pyroi.ShapeError):
        pyroi.roi_align_rotated_backward(error_grad(), np.zeros(shape, np.float32),
                                         (EN, EC, EH, EW))


def test_rois_wrong_shape_in_other_forms():
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated(error_input(), [np.zeros((2, 4), np.float32)], 2)
    assert names(excinfo, "rois[0]")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated(error_input(), error_rois(), 2,
                                batch_indices=np.zeros(EK, np.int64))
    assert names(excinfo, "rois")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated(error_input(), error_rois()[:, 1:], 2,
                                batch_indices=np.zeros(EK - 1, np.int64))
    assert names(excinfo, "batch_indices")


@matrix("input_dtype, rois_dtype", [(np.float32, np.float64), (np.float64, np.float32),
                                    (np.float32, np.int64)])
def test_rois_dtype_mismatch(input_dtype, rois_dtype):
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align_rotated(error_input(input_dtype), error_rois(np.float64).astype(rois_dtype),
                                2)
    assert names(excinfo, "rois")


@matrix("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@matrix("column", [1, 2, 3, 4, 5])
def test_nonfinite_roi_coordinate(column, value):
    rois = error_rois()
    rois[BAD_ROI, column] = value
    for call in (lambda: pyroi.roi_align_rotated(error_input(), rois, 2),
                 lambda: pyroi.roi_align_rotated_backward(error_grad(), rois, (EN, EC, EH, EW))):
        with pytest.raises(pyroi.BoxError) as excinfo:
            call()
        assert names(excinfo, "rois") and names(excinfo, f"RoI {BAD_ROI}")


@matrix("batch_index", [0.5, -1.0, float(EN)], ids=["0.5", "-1", "N"])
def test_bad_batch_index(batch_index):
    rois = error_rois()
    rois[BAD_ROI, 0] = batch_index
    with pytest.raises(pyroi.BatchIndexError) as excinfo:
        pyroi.roi_align_rotated(error_input(), rois, 2)
    assert isinstance(excinfo.value, IndexError)
    assert names(excinfo, f"RoI {BAD_ROI}")
    with pytest.raises(pyroi.BatchIndexError):
        pyroi.roi_align_rotated_backward(error_grad(), rois, (EN, EC, EH, EW))


def test_list_longer_than_batch():
    rois = [np.zeros((0, 5), np.float32)] * EN + [np.array([[1, 1, 2, 2, 0]], np.float32)]
    with pytest.raises(pyroi.BatchIndexError):
        pyroi.roi_align_rotated(error_input(), rois, 2)


@matrix("dtype, column, value, kwargs", [
    (np.float64, 3, 1e15, {}),                              # adaptive grid > 2^31 - 1
    (np.float64, 5, 1e308, {}),                             # angle * pi overflows float64
    (np.float32, 3, 3e38, dict(spatial_scale=2.0)),         # width * scale overflows float32
    (np.float32, 4, 3e38, dict(sampling_ratio=4)),          # sample positions overflow
], ids=["grid", "degrees", "scaled", "positions"])
def test_box_rejected_by_the_core(dtype, column, value, kwargs):
    """Finite coordinates the C core cannot sample: BoxError naming the RoI, nothing written."""
    rois = error_rois(dtype)
    rois[BAD_ROI, column] = value
    out = np.full((EK, EC, 2, 2), 42.0, dtype)
    with pytest.raises(pyroi.BoxError) as excinfo:
        pyroi.roi_align_rotated(error_input(dtype), rois, 2, out=out, **kwargs)
    assert names(excinfo, "rois") and names(excinfo, f"RoI {BAD_ROI}")
    assert np.all(out == 42.0)
    grad_out = np.full((EN, EC, EH, EW), 42.0, dtype)
    with pytest.raises(pyroi.BoxError) as excinfo:
        pyroi.roi_align_rotated_backward(error_grad(dtype), rois, (EN, EC, EH, EW),
                                         out=grad_out, **kwargs)
    assert names(excinfo, f"RoI {BAD_ROI}")
    assert np.all(grad_out == 42.0)


def test_huge_radians_are_fine():
    """1e308 as radians is a finite angle (only the degree conversion overflows)."""
    rois = error_rois(np.float64)
    rois[BAD_ROI, 5] = 1e308
    out = pyroi.roi_align_rotated(error_input(np.float64), rois, 2, angle="radians")
    assert np.all(np.isfinite(out))


@matrix("angle, error", [("rad", pyroi.InvalidArgumentError),
                         ("Degrees", pyroi.InvalidArgumentError),
                         (1, pyroi.ArgumentTypeError), (None, pyroi.ArgumentTypeError)])
def test_bad_angle_unit(angle, error):
    with pytest.raises(error) as excinfo:
        pyroi.roi_align_rotated(error_input(), error_rois(), 2, angle=angle)
    assert names(excinfo, "angle")
    with pytest.raises(error):
        pyroi.roi_align_rotated_backward(error_grad(), error_rois(), (EN, EC, EH, EW),
                                         angle=angle)


@matrix("flag", ["aligned", "clockwise"])
def test_bad_flags(flag):
    with pytest.raises(pyroi.ArgumentTypeError) as excinfo:
        pyroi.roi_align_rotated(error_input(), error_rois(), 2, **{flag: "yes"})
    assert names(excinfo, flag)


@matrix("kwargs, error, word", [
    (dict(output_size=0), pyroi.InvalidArgumentError, "output_size"),
    (dict(output_size=(2, -1)), pyroi.InvalidArgumentError, "output_size"),
    (dict(output_size=(2, 2, 2)), pyroi.InvalidArgumentError, "output_size"),
    (dict(output_size=2, spatial_scale=-1.0), pyroi.InvalidArgumentError, "spatial_scale"),
    (dict(output_size=2, spatial_scale=np.nan), pyroi.InvalidArgumentError, "spatial_scale"),
    (dict(output_size=2, sampling_ratio=2**31), pyroi.InvalidArgumentError, "sampling_ratio"),
    (dict(output_size=2, sampling_ratio=1.5), pyroi.ArgumentTypeError, "sampling_ratio"),
    (dict(output_size=2, num_threads=0), pyroi.InvalidArgumentError, "num_threads"),
], ids=["size0", "size-neg", "size3", "scale-neg", "scale-nan", "ratio-big", "ratio-float",
        "threads0"])
def test_bad_scalar_arguments(kwargs, error, word):
    with pytest.raises(error) as excinfo:
        pyroi.roi_align_rotated(error_input(), error_rois(), **kwargs)
    assert names(excinfo, word)


@matrix("dtype", [np.int32, np.complex64], ids=lambda d: np.dtype(d).name)
def test_bad_input_dtype(dtype):
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align_rotated(np.zeros((EN, EC, EH, EW), dtype), error_rois(), 2)
    assert names(excinfo, "input")
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align_rotated_backward(error_grad().astype(dtype), error_rois(),
                                         (EN, EC, EH, EW))
    assert names(excinfo, "grad_output")


def test_bad_input_rank():
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated(np.zeros((EC, EH, EW), np.float32), error_rois(), 2)
    assert names(excinfo, "input")


@matrix("out, error", [
    (np.zeros((EK, EC, 2, 3), np.float32), pyroi.ShapeError),
    (np.zeros((EK, EC, 2, 2), np.float64), pyroi.DTypeError),
    ([[0.0]], pyroi.ArgumentTypeError),
], ids=["shape", "dtype", "type"])
def test_bad_out(out, error):
    with pytest.raises(error) as excinfo:
        pyroi.roi_align_rotated(error_input(), error_rois(), 2, out=out)
    assert names(excinfo, "out")


def test_out_sharing_memory_with_input():
    x = np.zeros((1, 1, 2, 2), np.float32)
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.roi_align_rotated(x, np.array([[0, 1, 1, 1, 1, 0]], np.float32), 2, out=x)
    assert names(excinfo, "out")


def test_backward_shape_errors():
    shape = (EN, EC, EH, EW)
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated_backward(error_grad(), error_rois(), (EN, EC + 1, EH, EW))
    assert names(excinfo, "input_shape", "grad_output")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated_backward(error_grad(num_rois=EK - 1), error_rois(), shape)
    assert names(excinfo, "rois", "grad_output")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated_backward(error_grad(), error_rois(), (EN, EC, EH))
    assert names(excinfo, "input_shape")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated_backward(np.ones((EK, EC, 2), np.float32), error_rois(), shape)
    assert names(excinfo, "grad_output")
    with pytest.raises(pyroi.BatchIndexError):
        pyroi.roi_align_rotated_backward(error_grad(), error_rois(), (1, EC, EH, EW))
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_rotated_backward(error_grad(), error_rois(), shape,
                                         out=np.zeros((EN, EC, EH, EW + 1), np.float32))
    assert names(excinfo, "out")
