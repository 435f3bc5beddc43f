"""RoIAlign max mode (mmcv's definition) against a slow reference written from
docs/semantics.md §4.2 and the documented pyroi choices: first largest sample wins, NaN
propagates, out-of-map samples are worth 0 and route no gradient, an empty bin gives 0 with
argmax -1."""

import numpy as np
import pytest

import pyroi
from reference import roi_geometry
from reference_common import as_rois, pair, sample_coordinate, sample_taps, working_type


def max_ref(x, boxes, output_size, spatial_scale, sampling_ratio, aligned):
    T = working_type(x.dtype)
    rois = as_rois(boxes, x.dtype)
    ph_n, pw_n = pair(output_size)
    n_img, channels, height, width = x.shape
    out = np.zeros((len(rois), channels, ph_n, pw_n), x.dtype)
    argmax = np.full(out.shape, -1, np.int64)
    for k, roi in enumerate(rois):
        b = int(roi[0])
        sy, sx, bh, bw, gh, gw = roi_geometry(roi, T, spatial_scale, ph_n, pw_n,
                                              sampling_ratio, aligned)
        gh, gw = max(gh, 0), max(gw, 0)
        for c in range(channels):
            plane = x[b, c]
            for ph in range(ph_n):
                for pw in range(pw_n):
                    best, winner = T(0), -1
                    for iy in range(gh):
                        y = sample_coordinate(sy, bh, ph, iy, gh, T)
                        for ix in range(gw):
                            xx = sample_coordinate(sx, bw, pw, ix, gw, T)
                            taps = sample_taps(height, width, y, xx, T)
                            value = T(0)
                            if taps is not None:
                                value = T(0)
                                first = True
                                for (r, q), w in taps:
                                    term = T(w * plane[r, q])
                                    value = term if first else T(value + term)
                                    first = False
                            index = iy * gw + ix
                            if winner < 0 or value > best or (np.isnan(value) and
                                                              not np.isnan(best)):
                                best, winner = value, index
                    out[k, c, ph, pw] = best if winner >= 0 else 0
                    argmax[k, c, ph, pw] = winner
    return out, argmax


def max_backward_ref(grad, boxes, input_shape, spatial_scale, sampling_ratio, aligned, argmax):
    T = working_type(grad.dtype)
    rois = as_rois(boxes, grad.dtype)
    _, _, ph_n, pw_n = grad.shape
    height, width = input_shape[2], input_shape[3]
    gx = np.zeros(input_shape, grad.dtype)
    for k, roi in enumerate(rois):
        b = int(roi[0])
        sy, sx, bh, bw, gh, gw = roi_geometry(roi, T, spatial_scale, ph_n, pw_n,
                                              sampling_ratio, aligned)
        for c in range(input_shape[1]):
            for ph in range(ph_n):
                for pw in range(pw_n):
                    a = argmax[k, c, ph, pw]
                    if a < 0:
                        continue
                    y = sample_coordinate(sy, bh, ph, a // gw, gh, T)
                    xx = sample_coordinate(sx, bw, pw, a % gw, gw, T)
                    taps = sample_taps(height, width, y, xx, T)
                    if taps is None:
                        continue
                    for (r, q), w in taps:
                        gx[b, c, r, q] = T(gx[b, c, r, q] + T(grad[k, c, ph, pw] * w))
    return gx


def random_case(seed, dtype, n=2, c=3, h=9, w=11, k=14):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    corner = rng.uniform(-6, 14, (k, 2))
    size = rng.uniform(-2, 12, (k, 2))
    boxes = np.concatenate([rng.integers(0, n, (k, 1)), corner, corner + size], axis=1)
    return x, boxes.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 1, 2, 3])
def test_matches_reference(dtype, aligned, sampling_ratio):
    x, boxes = random_case(sampling_ratio + 10 * aligned, dtype)
    args = ((3, 2), 0.9, sampling_ratio, aligned)
    out, argmax = pyroi.roi_align(x, boxes, *args, mode="max", return_argmax=True)
    expected, expected_argmax = max_ref(x, boxes, *args)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(argmax, expected_argmax)
    np.testing.assert_array_equal(pyroi.roi_align(x, boxes, *args, mode="max"), expected)
    grad = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    got = pyroi.roi_align_backward(grad, boxes, x.shape, *args[1:], mode="max", argmax=argmax)
    np.testing.assert_array_equal(got, max_backward_ref(grad, boxes, x.shape, *args[1:],
                                                        expected_argmax))


def test_out_of_map_samples_are_zero_and_route_nothing():
    x = -np.ones((1, 1, 4, 4), np.float32)  # every in-map sample is -1
    boxes = np.array([[0, -12, -12, 2, 2]], np.float32)  # mostly outside the map
    out, argmax = pyroi.roi_align(x, boxes, 1, sampling_ratio=4, aligned=True, mode="max",
                                  return_argmax=True)
    assert out[0, 0, 0, 0] == 0 and argmax[0, 0, 0, 0] == 0  # sample (0, 0) lies outside
    grad = pyroi.roi_align_backward(np.ones_like(out), boxes, x.shape, sampling_ratio=4,
                                    aligned=True, mode="max", argmax=argmax)
    assert not grad.any()


def test_ties_first_sample_wins_and_nan_propagates():
    x = np.full((1, 1, 6, 6), 2.0)
    out, argmax = pyroi.roi_align(x, np.array([[0, 1, 1, 4, 4.0]]), 2, sampling_ratio=3,
                                  mode="max", return_argmax=True)
    assert (out == 2.0).all() and (argmax == 0).all()
    x[0, 0, 2, 2] = np.nan
    out = pyroi.roi_align(x, np.array([[0, 1, 1, 4, 4.0]]), 2, sampling_ratio=3, mode="max")
    assert np.isnan(out[0, 0, 0, 0])


def test_empty_bin_gives_zero():
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)
    box = np.array([[0, 3, 4, 5, 4]], np.float32)  # zero height, aligned, adaptive: no samples
    out, argmax = pyroi.roi_align(x, box, 3, aligned=True, mode="max", return_argmax=True)
    assert not out.any() and (argmax == -1).all()


def test_finite_differences():
    x, boxes = random_case(5, np.float64, k=6)
    args = (2, 0.9, 2, True)
    out, argmax = pyroi.roi_align(x, boxes, *args, mode="max", return_argmax=True)
    grad = np.random.default_rng(2).standard_normal(out.shape)
    analytic = pyroi.roi_align_backward(grad, boxes, x.shape, *args[1:], mode="max",
                                        argmax=argmax)
    rng = np.random.default_rng(3)
    eps = 1e-7
    for _ in range(40):
        index = tuple(rng.integers(0, s) for s in x.shape)
        bumped = x.copy()
        bumped[index] += eps
        plus, plus_argmax = pyroi.roi_align(bumped, boxes, *args, mode="max",
                                            return_argmax=True)
        bumped[index] -= 2 * eps
        minus, minus_argmax = pyroi.roi_align(bumped, boxes, *args, mode="max",
                                              return_argmax=True)
        if not (np.array_equal(plus_argmax, argmax) and np.array_equal(minus_argmax, argmax)):
            continue  # a tie flipped: the derivative is not defined there
        numeric = float(((plus - minus) * grad).sum()) / (2 * eps)
        assert abs(numeric - analytic[index]) <= 1e-6 * (1 + abs(numeric))


def test_thread_counts_agree():
    x, boxes = random_case(7, np.float32, c=40, h=30, w=30, k=120)
    first = pyroi.roi_align(x, boxes, 7, 0.5, 2, True, mode="max", return_argmax=True,
                            num_threads=1)
    grad = np.ones_like(first[0])
    g1 = pyroi.roi_align_backward(grad, boxes, x.shape, 0.5, 2, True, mode="max",
                                  argmax=first[1], num_threads=1)
    for threads in (2, 3):
        out, argmax = pyroi.roi_align(x, boxes, 7, 0.5, 2, True, mode="max",
                                      return_argmax=True, num_threads=threads)
        assert out.tobytes() == first[0].tobytes() and (argmax == first[1]).all()
        g = pyroi.roi_align_backward(grad, boxes, x.shape, 0.5, 2, True, mode="max",
                                     argmax=first[1], num_threads=threads)
        assert g.tobytes() == g1.tobytes()


def test_layouts_equal_contiguous():
    x, boxes = random_case(8, np.float32)
    expected = pyroi.roi_align(x, boxes, 3, mode="max", sampling_ratio=2)
    view = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(pyroi.roi_align(view, boxes, 3, mode="max",
                                                  sampling_ratio=2), expected)


def test_errors():
    x, boxes = random_case(9, np.float32, k=2)
    with pytest.raises(pyroi.InvalidArgumentError, match="mode"):
        pyroi.roi_align(x, boxes, 2, mode="mean")
    with pytest.raises(pyroi.InvalidArgumentError, match="return_argmax"):
        pyroi.roi_align(x, boxes, 2, return_argmax=True)
    out, argmax = pyroi.roi_align(x, boxes, 2, sampling_ratio=2, mode="max",
                                  return_argmax=True)
    grad = np.ones_like(out)
    with pytest.raises(pyroi.InvalidArgumentError, match="argmax"):
        pyroi.roi_align_backward(grad, boxes, x.shape, sampling_ratio=2, mode="max")
    with pytest.raises(pyroi.InvalidArgumentError, match="argmax"):
        pyroi.roi_align_backward(grad, boxes, x.shape, sampling_ratio=2, argmax=argmax)
    with pytest.raises(pyroi.ShapeError, match="argmax"):
        pyroi.roi_align_backward(grad, boxes, x.shape, sampling_ratio=2, mode="max",
                                 argmax=argmax[:, :, :1])
    with pytest.raises(pyroi.DTypeError, match="argmax"):
        pyroi.roi_align_backward(grad, boxes, x.shape, sampling_ratio=2, mode="max",
                                 argmax=argmax.astype(np.float32))
    bad = argmax.copy()
    bad[0, 0, 0, 0] = 4  # sr 2: samples 0..3
    with pytest.raises(pyroi.InvalidArgumentError, match="argmax"):
        pyroi.roi_align_backward(grad, boxes, x.shape, sampling_ratio=2, mode="max",
                                 argmax=bad)
