"""Slow, loop-based NumPy reference of the position-sensitive operators.

Written from docs/semantics.md §6 (channel mapping §6.1, torchvision ``ps_roi_pool``
6.2, torchvision ``ps_roi_align`` 6.3) on top of the test suite's section-2 bilinear sampler
(``reference_common.sample_taps``), with pyroi's one documented choice beyond torchvision 0.29.1:

* ``ps_roi_align``: where the sample count ``grid_h * grid_w`` is not positive (adaptive
  sampling of a zero-size box, or of a box inverted on exactly one axis) the output is +0
  (torchvision returns NaN for a zero count and -0.0 for a negative one).

Every scalar step is evaluated in the working dtype ``T`` with NumPy scalars, one rounding
per operation, in the order the semantics document prescribes. Loops walk RoI -> bin ->
sample directly and vectorise only over output channels: bin ``(ph, pw)`` of every output
channel ``c`` reads input channel ``c * PH * PW + ph * PW + pw``, i.e. the strided slice
``[ph * PW + pw :: PH * PW]`` of the input channels, with the same sample weights.
"""

import math

import numpy as np

from reference_common import (as_rois, bin_samples, bins_and_grids, forward_operands,
                              roi_images, working_type)

__all__ = [
    "ps_channel",
    "ps_roi_align_geometry",
    "ps_roi_align_ref",
    "ps_roi_align_backward_ref",
    "ps_roi_pool_quantise",
    "ps_roi_pool_window",
    "ps_roi_pool_ref",
    "ps_roi_pool_backward_ref",
]


def ps_channel(c_out, ph, pw, pooled_h, pooled_w):
    """docs/semantics.md §6.1: the input channel read by output (c_out, ph, pw)."""
    return (c_out * pooled_h + ph) * pooled_w + pw


def _bin_planes(maps, ph, pw, pooled_h, pooled_w):
    """The planes of one image's ``maps`` that bin (ph, pw) reads (forward) or writes
    (backward), one per output channel: channels ``ph * PW + pw`` apart by ``PH * PW``."""
    return maps[ps_channel(0, ph, pw, pooled_h, pooled_w)::pooled_h * pooled_w]


def _backward_arrays(grad_output, boxes, input_shape):
    """The checked operands of a backward: ``(grad_output, T, rois, zeroed grad_input)``."""
    grad_output = np.asarray(grad_output)
    rois = as_rois(boxes, grad_output.dtype)
    num_images, channels, height, width = (int(v) for v in input_shape)
    num_rois, channels_out, pooled_h, pooled_w = grad_output.shape
    if channels != channels_out * pooled_h * pooled_w or num_rois != rois.shape[0]:
        raise ValueError("grad_output does not match boxes and input_shape")
    grad_input = np.zeros((num_images, channels, height, width), dtype=grad_output.dtype)
    return grad_output, working_type(grad_output.dtype), rois, grad_input


# --------------------------------------------------------------------------------------
# ps_roi_align (docs/semantics.md §6.3 = §3 with offset 0.5, no size clamp)
# --------------------------------------------------------------------------------------

def ps_roi_align_geometry(roi, T, spatial_scale, pooled_h, pooled_w, sampling_ratio):
    """``(start_y, start_x, bin_h, bin_w, grid_h, grid_w)``; grids may be <= 0."""
    scale = T(spatial_scale)
    half = T(0.5)
    start_x = T(T(T(roi[1]) * scale) - half)
    start_y = T(T(T(roi[2]) * scale) - half)
    end_x = T(T(T(roi[3]) * scale) - half)
    end_y = T(T(T(roi[4]) * scale) - half)
    roi_w = T(end_x - start_x)
    roi_h = T(end_y - start_y)
    bin_h, bin_w, grid_h, grid_w = bins_and_grids(roi_h, roi_w, pooled_h, pooled_w,
                                                  sampling_ratio, T)
    return start_y, start_x, bin_h, bin_w, grid_h, grid_w


def ps_roi_align_ref(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1):
    """Reference forward: (K, C / (PH * PW), PH, PW) array of the input's dtype."""
    input, T, rois, output = forward_operands(input, boxes, output_size, channels_per_bin=True)
    height, width = input.shape[2:]
    _, channels_out, pooled_h, pooled_w = output.shape
    with np.errstate(invalid="ignore", over="ignore"):
        for k, image in roi_images(input, rois):
            geometry = ps_roi_align_geometry(rois[k], T, spatial_scale, pooled_h, pooled_w,
                                             sampling_ratio)
            count = geometry[4] * geometry[5]
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    planes = _bin_planes(image, ph, pw, pooled_h, pooled_w)
                    acc = np.zeros(channels_out, dtype=input.dtype)
                    for (p1, w1), (p2, w2), (p3, w3), (p4, w4) in bin_samples(
                            height, width, geometry, ph, pw, T):
                        value = w1 * planes[:, p1[0], p1[1]]
                        value = value + w2 * planes[:, p2[0], p2[1]]
                        value = value + w3 * planes[:, p3[0], p3[1]]
                        value = value + w4 * planes[:, p4[0], p4[1]]
                        acc = acc + value
                    if count > 0:  # pyroi: no samples -> +0 (torchvision: NaN or -0.0)
                        output[k, :, ph, pw] = acc / T(count)
    return output


def ps_roi_align_backward_ref(grad_output, boxes, input_shape, spatial_scale=1.0,
                              sampling_ratio=-1):
    """Reference backward: contributions per input element in torchvision's order
    (RoI, bin, sample, tap), each ``(g * w) / count`` with the unclamped count."""
    grad_output, T, rois, grad_input = _backward_arrays(grad_output, boxes, input_shape)
    _, _, pooled_h, pooled_w = grad_output.shape
    height, width = grad_input.shape[2:]
    with np.errstate(invalid="ignore", over="ignore"):
        for k, image in roi_images(grad_input, rois):
            geometry = ps_roi_align_geometry(rois[k], T, spatial_scale, pooled_h, pooled_w,
                                             sampling_ratio)
            count = T(geometry[4] * geometry[5])
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    planes = _bin_planes(image, ph, pw, pooled_h, pooled_w)
                    g = grad_output[k, :, ph, pw]
                    for taps in bin_samples(height, width, geometry, ph, pw, T):
                        for (row, col), weight in taps:
                            planes[:, row, col] += (g * weight) / count
    return grad_input


# --------------------------------------------------------------------------------------
# ps_roi_pool (docs/semantics.md §6.2)
# --------------------------------------------------------------------------------------

def _round_half_away_from_zero(value):
    """C round()/roundf() of a NumPy float scalar, as a Python int."""
    whole = math.trunc(float(value))  # value - trunc(value) is exact in binary floating point
    if abs(float(value) - whole) >= 0.5:
        whole += 1 if value > 0 else -1
    return whole


def ps_roi_pool_quantise(roi, T, spatial_scale, pooled_h, pooled_w, backward=False):
    """``(start_y, start_x, bin_h, bin_w)``: corners scaled in T and rounded half away from
    zero (the backward narrows the scaled value to float32 first, as torchvision's roundf
    does), size ``max(end - start, 1)``, bins of size / pooled in T."""
    scale = T(spatial_scale)
    corners = [T(T(roi[i]) * scale) for i in range(1, 5)]
    if backward:
        with np.errstate(over="ignore"):
            corners = [np.float32(c) for c in corners]
    x1, y1, x2, y2 = (_round_half_away_from_zero(c) for c in corners)
    roi_w = max(x2 - x1, 1)
    roi_h = max(y2 - y1, 1)
    return y1, x1, T(T(roi_h) / T(pooled_h)), T(T(roi_w) / T(pooled_w))


def ps_roi_pool_window(bin_size, start, bin_index, limit, T):
    """``[first, end)`` of one bin along one axis, each clamped to ``[0, limit]``
    (limit = extent - 1 in the forward, extent in the backward)."""
    first = math.floor(T(T(bin_index) * bin_size)) + start
    end = math.ceil(T(T(bin_index + 1) * bin_size)) + start
    return min(max(first, 0), limit), min(max(end, 0), limit)


def ps_roi_pool_ref(input, boxes, output_size, spatial_scale=1.0):
    """Reference forward: the average of each bin's forward window, 0 when it is empty."""
    input, T, rois, output = forward_operands(input, boxes, output_size, channels_per_bin=True)
    height, width = input.shape[2:]
    _, channels_out, pooled_h, pooled_w = output.shape
    with np.errstate(invalid="ignore", over="ignore"):
        for k, image in roi_images(input, rois):
            start_y, start_x, bin_h, bin_w = ps_roi_pool_quantise(
                rois[k], T, spatial_scale, pooled_h, pooled_w)
            for ph in range(pooled_h):
                h0, h1 = ps_roi_pool_window(bin_h, start_y, ph, height - 1, T)
                for pw in range(pooled_w):
                    w0, w1 = ps_roi_pool_window(bin_w, start_x, pw, width - 1, T)
                    if h1 <= h0 or w1 <= w0:
                        continue
                    planes = _bin_planes(image, ph, pw, pooled_h, pooled_w)
                    acc = np.zeros(channels_out, dtype=input.dtype)
                    for h in range(h0, h1):
                        for w in range(w0, w1):
                            acc = acc + planes[:, h, w]
                    output[k, :, ph, pw] = acc / T((h1 - h0) * (w1 - w0))
    return output


def ps_roi_pool_backward_ref(grad_output, boxes, input_shape, spatial_scale=1.0):
    """Reference of torchvision's backward: ``g / area`` added to every pixel of each bin's
    *backward* window (clamped to [0, H] x [0, W]), RoI after RoI."""
    grad_output, T, rois, grad_input = _backward_arrays(grad_output, boxes, input_shape)
    _, _, pooled_h, pooled_w = grad_output.shape
    height, width = grad_input.shape[2:]
    with np.errstate(invalid="ignore", over="ignore"):
        for k, image in roi_images(grad_input, rois):
            start_y, start_x, bin_h, bin_w = ps_roi_pool_quantise(
                rois[k], T, spatial_scale, pooled_h, pooled_w, backward=True)
            for ph in range(pooled_h):
                h0, h1 = ps_roi_pool_window(bin_h, start_y, ph, height, T)
                for pw in range(pooled_w):
                    w0, w1 = ps_roi_pool_window(bin_w, start_x, pw, width, T)
                    if h1 <= h0 or w1 <= w0:
                        continue
                    planes = _bin_planes(image, ph, pw, pooled_h, pooled_w)
                    share = grad_output[k, :, ph, pw] / T((h1 - h0) * (w1 - w0))
                    for h in range(h0, h1):
                        for w in range(w0, w1):
                            planes[:, h, w] += share
    return grad_input
