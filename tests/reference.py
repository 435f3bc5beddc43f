"""Slow, loop-based NumPy reference of RoIAlign (average mode), forward and backward.

Written from docs/semantics.md §2 and §3 (the "Caffe2" bilinear sampler, the RoI
geometry, the sample positions, the aggregation and the backward scatter), with the two
documented pyroi choices that go beyond torchvision 0.29.1:

* a sample outside ``[-1, H] x [-1, W]`` contributes nothing at all (torchvision adds
  ``0 * P[0, 0]``, which is NaN when that pixel is not finite);
* with ``aligned=True`` and adaptive sampling a RoI whose size is negative on an axis has
  no samples on that axis, so it pools to zeros (torchvision raises when exactly one axis is
  negative);
* a map with ``H == 0`` or ``W == 0`` has no pixels, so every sample contributes nothing.

Every scalar step is evaluated in the working dtype ``T`` (``np.float32`` or
``np.float64``) with NumPy scalars, one rounding per operation, in the order the
semantics document prescribes, so float32 results are expected to equal torchvision's CPU
kernel bit for bit.  Nothing here is shared with the library under test: the loops walk
RoI -> bin -> sample in the most direct way and vectorise only over channels (every channel
uses the same sample weights, and element-wise NumPy arithmetic rounds per element).
"""

import numpy as np

from reference_common import (as_rois, at_least_one, batch_index, bin_samples, bins_and_grids,
                              forward_operands, roi_images, working_type)

__all__ = [
    "roi_geometry",
    "roi_align_ref",
    "roi_align_backward_ref",
]


def roi_geometry(roi, T, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    """Per-RoI geometry of docs/semantics.md §3.2, in working type ``T``.

    Returns ``(start_y, start_x, bin_h, bin_w, grid_h, grid_w)``; grids are Python ints and
    may be <= 0 (meaning: no samples along that axis).
    """
    scale = T(spatial_scale)
    offset = T(0.5) if aligned else T(0.0)
    start_x = T(T(roi[1]) * scale) - offset
    start_y = T(T(roi[2]) * scale) - offset
    end_x = T(T(roi[3]) * scale) - offset
    end_y = T(T(roi[4]) * scale) - offset
    roi_w = T(end_x - start_x)
    roi_h = T(end_y - start_y)
    if not aligned:  # legacy mode: malformed or tiny RoIs are forced to size 1
        roi_w, roi_h = at_least_one(roi_w, T), at_least_one(roi_h, T)
    bin_h, bin_w, grid_h, grid_w = bins_and_grids(roi_h, roi_w, pooled_h, pooled_w,
                                                  sampling_ratio, T)
    return start_y, start_x, bin_h, bin_w, grid_h, grid_w


def roi_align_ref(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1,
                  aligned=False):
    """Reference RoIAlign forward: (K, C, PH, PW) array of the input's dtype."""
    input, T, rois, output = forward_operands(input, boxes, output_size)
    _, channels, pooled_h, pooled_w = output.shape
    with np.errstate(invalid="ignore", over="ignore"):
        for k, image in roi_images(input, rois):
            height, width = image.shape[1:]
            geometry = roi_geometry(rois[k], T, spatial_scale, pooled_h, pooled_w,
                                    sampling_ratio, aligned)
            count = T(max(geometry[4] * geometry[5], 1))
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    acc = np.zeros(channels, dtype=input.dtype)
                    for taps in bin_samples(height, width, geometry, ph, pw, T):
                        (p1, w1), (p2, w2), (p3, w3), (p4, w4) = taps
                        value = w1 * image[:, p1[0], p1[1]]
                        value = value + w2 * image[:, p2[0], p2[1]]
                        value = value + w3 * image[:, p3[0], p3[1]]
                        value = value + w4 * image[:, p4[0], p4[1]]
                        acc = acc + value
                    output[k, :, ph, pw] = acc / count
    return output


def roi_align_backward_ref(grad_output, boxes, input_shape, spatial_scale=1.0,
                           sampling_ratio=-1, aligned=False):
    """Reference RoIAlign backward: gradient w.r.t. the input, shape ``input_shape``.

    Contributions are accumulated per input element in torchvision's order
    (RoI, channel, bin row, bin column, sample row, sample column, tap); the divisor is the
    unclamped ``grid_h * grid_w``.
    """
    grad_output = np.asarray(grad_output)
    T = working_type(grad_output.dtype)
    rois = as_rois(boxes, grad_output.dtype)
    num_images, channels, height, width = (int(v) for v in input_shape)
    num_rois, _, pooled_h, pooled_w = grad_output.shape
    if num_rois != rois.shape[0]:
        raise ValueError("grad_output and boxes disagree on the number of RoIs")
    grad_input = np.zeros((num_images, channels, height, width), dtype=grad_output.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(num_rois):
            roi = rois[k]
            b = batch_index(roi, num_images, k)
            geometry = roi_geometry(roi, T, spatial_scale, pooled_h, pooled_w, sampling_ratio,
                                    aligned)
            count = T(geometry[4] * geometry[5])
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    g = grad_output[k, :, ph, pw]
                    for taps in bin_samples(height, width, geometry, ph, pw, T):
                        for (row, col), weight in taps:
                            grad_input[b, :, row, col] += (g * weight) / count
    return grad_input
