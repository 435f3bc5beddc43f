"""Slow NumPy references of deformable RoI pooling (docs/semantics.md §14), transcribed from
mmcv's definition (mmcv/ops/csrc/common/cuda/deform_roi_pool_cuda_kernel.cuh: aligned RoIAlign
whose bins are translated by gamma * roi size * offset, the modulated variant's mask applied
after the mean) with the sampler of reference_common.py; nothing is shared with pyroi.

The forward and the input backward follow the working type step by step (one rounding per
operation); the offset gradient is taken in float64 per sample, both as the exact derivative
of the sampler and as mmcv's CUDA kernel forms it (from the unclamped position), so that
tests can show where the two differ."""

import numpy as np

from reference_common import (as_rois, batch_index, pair, sample_coordinate, sample_taps,
                              working_type)


def _geometry(roi, spatial_scale, pooled_h, pooled_w, sampling_ratio, T):
    """(start_y, start_x, bin_h, bin_w, grid_h, grid_w, roi_h, roi_w) of an aligned RoI."""
    scale = T(spatial_scale)
    start_x = T(T(roi[1] * scale) - T(0.5))
    start_y = T(T(roi[2] * scale) - T(0.5))
    end_x = T(T(roi[3] * scale) - T(0.5))
    end_y = T(T(roi[4] * scale) - T(0.5))
    roi_w, roi_h = T(end_x - start_x), T(end_y - start_y)
    bin_h, bin_w = T(roi_h / T(pooled_h)), T(roi_w / T(pooled_w))
    if sampling_ratio > 0:
        grid_h = grid_w = int(sampling_ratio)
    else:
        grid_h = max(int(np.ceil(bin_h)), 0)
        grid_w = max(int(np.ceil(bin_w)), 0)
    return start_y, start_x, bin_h, bin_w, grid_h, grid_w, roi_h, roi_w


def _bins(input_shape, rois, offset, output_size, spatial_scale, sampling_ratio, gamma, T):
    """For every bin: (k, image, ph, pw, sample positions [(y, x)], count, roi_h, roi_w)."""
    pooled_h, pooled_w = pair(output_size)
    height, width = input_shape[2], input_shape[3]
    for k in range(rois.shape[0]):
        image = batch_index(rois[k], input_shape[0], k)
        start_y, start_x, bin_h, bin_w, grid_h, grid_w, roi_h, roi_w = _geometry(
            rois[k], spatial_scale, pooled_h, pooled_w, sampling_ratio, T)
        count = T(max(grid_h * grid_w, 1))
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                y0, x0 = start_y, start_x
                if offset is not None:
                    x0 = T(x0 + T(T(T(gamma) * roi_w) * T(offset[k, 0, ph, pw])))
                    y0 = T(y0 + T(T(T(gamma) * roi_h) * T(offset[k, 1, ph, pw])))
                points = [(sample_coordinate(y0, bin_h, ph, iy, grid_h, T),
                           sample_coordinate(x0, bin_w, pw, ix, grid_w, T))
                          for iy in range(grid_h) for ix in range(grid_w)]
                yield k, image, ph, pw, points, count, roi_h, roi_w
    del height, width


def deform_roi_pool_ref(input, rois, offset, output_size, spatial_scale=1.0, sampling_ratio=0,
                        gamma=0.1, mask=None):
    input = np.asarray(input)
    T = working_type(input.dtype)
    rois = as_rois(rois, input.dtype)
    pooled_h, pooled_w = pair(output_size)
    height, width = input.shape[2:]
    out = np.zeros((rois.shape[0], input.shape[1], pooled_h, pooled_w), input.dtype)
    for k, image, ph, pw, points, count, _, _ in _bins(
            input.shape, rois, offset, output_size, spatial_scale, sampling_ratio, gamma, T):
        taps = [t for t in (sample_taps(height, width, y, x, T) for y, x in points)
                if t is not None]
        for c in range(input.shape[1]):
            plane = input[image, c]
            total = T(0)
            for sample in taps:
                value = T(0)
                for (i, j), w in sample:
                    value = T(value + T(w * plane[i, j]))
                total = T(total + value)
            result = T(total / count)
            if mask is not None:
                result = T(result * T(mask[k, 0, ph, pw]))
            out[k, c, ph, pw] = result
    return out


def deform_roi_pool_backward_ref(grad_output, rois, input_shape, offset, spatial_scale=1.0,
                                 sampling_ratio=0, gamma=0.1, mask=None):
    """The input gradient: each sample adds (g * mask) * w / count to its taps."""
    grad_output = np.asarray(grad_output)
    T = working_type(grad_output.dtype)
    rois = as_rois(rois, grad_output.dtype)
    output_size = grad_output.shape[2:]
    height, width = input_shape[2], input_shape[3]
    grad = np.zeros(input_shape, grad_output.dtype)
    for k, image, ph, pw, points, count, _, _ in _bins(
            input_shape, rois, offset, output_size, spatial_scale, sampling_ratio, gamma, T):
        taps = [t for t in (sample_taps(height, width, y, x, T) for y, x in points)
                if t is not None]
        for c in range(input_shape[1]):
            g = T(grad_output[k, c, ph, pw])
            if mask is not None:
                g = T(g * T(mask[k, 0, ph, pw]))
            for sample in taps:
                for (i, j), w in sample:
                    grad[image, c, i, j] = T(grad[image, c, i, j] + T(T(g * w) / count))
    return grad


def _exact_slopes(plane, y, x):
    """(value, d/dy, d/dx) of the sampler at (y, x): 0 outside the halo, a zero slope where
    the sampler clamps, the right-hand cell at a whole coordinate."""
    height, width = plane.shape
    if not (-1 <= y <= height and -1 <= x <= width):
        return 0.0, 0.0, 0.0
    slope_y = 0.0 if y < 0 else 1.0
    slope_x = 0.0 if x < 0 else 1.0
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y, slope_y = float(y_low), 0.0
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x, slope_x = float(x_low), 0.0
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    v00, v01 = plane[y_low, x_low], plane[y_low, x_high]
    v10, v11 = plane[y_high, x_low], plane[y_high, x_high]
    value = hy * hx * v00 + hy * lx * v01 + ly * hx * v10 + ly * lx * v11
    return (value, slope_y * (hx * (v10 - v00) + lx * (v11 - v01)),
            slope_x * (hy * (v01 - v00) + ly * (v11 - v10)))


def _mmcv_slopes(plane, y, x):
    """mmcv's CUDA offset gradient per sample: the corners and weights of the clamped
    position, the slopes formed with the position as given (unclamped), 0 outside the halo."""
    height, width = plane.shape
    if not (-1 <= y <= height and -1 <= x <= width):
        return 0.0, 0.0, 0.0
    cy, cx = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(cy), int(cx)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        cy = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        cx = float(x_low)
    else:
        x_high = x_low + 1
    v00, v01 = plane[y_low, x_low], plane[y_low, x_high]
    v10, v11 = plane[y_high, x_low], plane[y_high, x_high]
    ly, lx = cy - y_low, cx - x_low
    value = (1 - ly) * (1 - lx) * v00 + (1 - ly) * lx * v01 + ly * (1 - lx) * v10 + ly * lx * v11
    d_x = v11 * (y - y_low) + v01 * (y_high - y) + v10 * (y_low - y) + v00 * (y - y_high)
    d_y = v11 * (x - x_low) + v10 * (x_high - x) + v01 * (x_low - x) + v00 * (x - x_high)
    return value, d_y, d_x


def deform_roi_pool_offset_grad_ref(grad_output, input, rois, offset, spatial_scale=1.0,
                                    sampling_ratio=0, gamma=0.1, mask=None, formula="exact"):
    """(grad_offset, grad_mask) in float64: formula "exact" (the sampler's derivative) or
    "mmcv" (mmcv's CUDA kernel's)."""
    input = np.asarray(input, np.float64)
    rois = as_rois(rois, np.float64)
    grad_output = np.asarray(grad_output, np.float64)
    slopes = _exact_slopes if formula == "exact" else _mmcv_slopes
    grad_offset = np.zeros((rois.shape[0], 2) + grad_output.shape[2:])
    grad_mask = np.zeros((rois.shape[0], 1) + grad_output.shape[2:])
    for k, image, ph, pw, points, count, roi_h, roi_w in _bins(
            input.shape, rois, offset, grad_output.shape[2:], spatial_scale, sampling_ratio,
            gamma, np.float64):
        m = 1.0 if mask is None else float(mask[k, 0, ph, pw])
        for c in range(input.shape[1]):
            g = grad_output[k, c, ph, pw]
            for y, x in points:
                value, d_y, d_x = slopes(input[image, c], y, x)
                grad_offset[k, 0, ph, pw] += g * m * gamma * roi_w * d_x / count
                grad_offset[k, 1, ph, pw] += g * m * gamma * roi_h * d_y / count
                grad_mask[k, 0, ph, pw] += g * value / count
    return grad_offset, grad_mask
