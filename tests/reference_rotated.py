"""Slow NumPy reference of rotated RoIAlign (average mode), forward and backward.

Written from docs/semantics.md §7.1 (detectron2 ROIAlignRotated) and §7.2 (mmcv
roi_align_rotated: radians, ``clockwise``, ``aligned``) with the bilinear sampler of section 2,
plus pyroi's documented choices where the peers are undefined:

* a sample outside ``[-1, H] x [-1, W]`` contributes nothing (the peers add
  ``0 * P[0, 0]``);
* with ``aligned=True`` a negative size is not an error: the formulas run as written (an
  adaptive grid ``ceil(negative)`` has no samples, a fixed grid walks backwards);
* a map with ``H == 0`` or ``W == 0`` has no pixels, so every sample contributes nothing.

Every scalar step is evaluated in the working dtype ``T`` with one rounding per operation in
the documented order. ``cos``/``sin`` come from Python's ``math`` module (the C library's
double functions) and are rounded to ``T``; degrees are converted in double precision as
``angle * pi / 180``.  Samples of one bin are evaluated as NumPy arrays (element-wise NumPy
arithmetic rounds per element, so this is the scalar arithmetic) and summed strictly in
(iy, ix) order with ``np.add.accumulate``; nothing here is shared with the library under test,
and every sample of every bin is visited (no skipping of out-of-map samples).
"""

import math

import numpy as np

from reference_common import (at_least_one, batch_index, bins_and_grids, forward_operands,
                              roi_images, working_type)

__all__ = [
    "rotated_geometry",
    "rotated_samples",
    "roi_align_rotated_ref",
    "roi_align_rotated_backward_ref",
    "as_rotated_rois",
    "axis_aligned_boxes",
]


def as_rotated_rois(rois, dtype):
    """(K, 6) ``[b, cx, cy, w, h, angle]`` array of ``dtype`` (also from a list of (L, 5))."""
    if isinstance(rois, (list, tuple)):
        parts = [np.concatenate([np.full((len(r), 1), i), np.asarray(r, np.float64)], axis=1)
                 for i, r in enumerate(rois) if len(r)]
        if not parts:
            return np.zeros((0, 6), dtype)
        return np.concatenate(parts).astype(dtype)
    rois = np.asarray(rois)
    if rois.ndim != 2 or rois.shape[1] != 6:
        raise ValueError(f"rois must have shape (K, 6), got {rois.shape}")
    return rois.astype(dtype)


def axis_aligned_boxes(rois):
    """``[b, cx - w/2, cy - h/2, cx + w/2, cy + h/2]`` for (K, 6) rotated RoIs (in float64,
    then the RoIs' dtype): the box an angle-0 RoI covers, for pyroi.roi_align."""
    r = np.asarray(rois, np.float64)
    half_w = r[:, 3] / 2.0
    half_h = r[:, 4] / 2.0
    boxes = np.stack([r[:, 0], r[:, 1] - half_w, r[:, 2] - half_h, r[:, 1] + half_w,
                      r[:, 2] + half_h], axis=1)
    return boxes.astype(np.asarray(rois).dtype)


def rotated_geometry(roi, T, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned,
                     clockwise=False, degrees=True):
    """Per-RoI quantities of docs/semantics.md §7.1 in working type ``T``.

    Returns a dict with the centre (``cy``, ``cx``), ``cos``/``sin``, the frame start
    (``start_h``, ``start_w``), bin sizes and grids (Python ints, <= 0 meaning no samples).
    """
    scale = T(spatial_scale)
    offset = T(0.5) if aligned else T(0.0)
    cx = T(T(roi[1]) * scale) - offset
    cy = T(T(roi[2]) * scale) - offset
    roi_w = T(T(roi[3]) * scale)
    roi_h = T(T(roi[4]) * scale)
    if degrees:
        theta = T(float(T(roi[5])) * math.pi / 180.0)
    else:
        theta = T(roi[5])
    if clockwise:
        theta = -theta
    cos_t = T(math.cos(float(theta)))
    sin_t = T(math.sin(float(theta)))
    if not aligned:  # mmcv legacy mode: std::max(size, 1)
        roi_w, roi_h = at_least_one(roi_w, T), at_least_one(roi_h, T)
    bin_h, bin_w, grid_h, grid_w = bins_and_grids(roi_h, roi_w, pooled_h, pooled_w,
                                                  sampling_ratio, T)
    # roi_start = -size / 2.0: a double division, then narrowed to T
    start_h = T(-float(roi_h) / 2.0)
    start_w = T(-float(roi_w) / 2.0)
    return dict(cx=cx, cy=cy, cos=cos_t, sin=sin_t, start_h=start_h, start_w=start_w,
                bin_h=bin_h, bin_w=bin_w, grid_h=grid_h, grid_w=grid_w)


def _local_positions(start, bin_size, bin_index, grid, T):
    """(start + bin_index*bin) + ((i + 0.5f) * bin) / grid for i in [0, grid), as T."""
    centres = (np.arange(grid, dtype=np.float32) + np.float32(0.5)).astype(T)
    base = T(start + T(T(bin_index) * bin_size))
    return base + (centres * bin_size) / T(grid)


def rotated_samples(geometry, ph, pw, height, width, T):
    """All samples of bin (ph, pw) in (iy, ix) order.

    Returns ``(inside, rows, cols, weights)``: a boolean mask of the samples in
    ``[-1, H] x [-1, W]``, and for those the (S, 4) tap rows / columns and (S, 4) weights in
    the order (yl,xl), (yl,xh), (yh,xl), (yh,xh).
    """
    g = geometry
    grid_h, grid_w = max(g["grid_h"], 0), max(g["grid_w"], 0)
    yy = _local_positions(g["start_h"], g["bin_h"], ph, grid_h, T)
    xx = _local_positions(g["start_w"], g["bin_w"], pw, grid_w, T)
    yy, xx = np.meshgrid(yy, xx, indexing="ij")
    yy = yy.ravel()
    xx = xx.ravel()
    # y = (yy*c - xx*s) + cy ; x = (yy*s + xx*c) + cx
    y = (yy * g["cos"] - xx * g["sin"]) + g["cy"]
    x = (yy * g["sin"] + xx * g["cos"]) + g["cx"]
    if height == 0 or width == 0:
        inside = np.zeros(y.shape, bool)
    else:
        inside = (y >= -1) & (y <= height) & (x >= -1) & (x <= width)
    y = y[inside]
    x = x[inside]
    y = np.where(y <= 0, T(0), y).astype(T)
    x = np.where(x <= 0, T(0), x).astype(T)
    y_low = y.astype(np.int64)
    x_low = x.astype(np.int64)
    y_at_end = y_low >= height - 1
    x_at_end = x_low >= width - 1
    y_low = np.where(y_at_end, height - 1, y_low)
    x_low = np.where(x_at_end, width - 1, x_low)
    y_high = np.where(y_at_end, y_low, y_low + 1)
    x_high = np.where(x_at_end, x_low, x_low + 1)
    y = np.where(y_at_end, y_low.astype(T), y).astype(T)
    x = np.where(x_at_end, x_low.astype(T), x).astype(T)
    ly = (y - y_low.astype(T)).astype(T)
    lx = (x - x_low.astype(T)).astype(T)
    hy = (1.0 - ly.astype(np.float64)).astype(T)  # the peers write 1. - ly (a double)
    hx = (1.0 - lx.astype(np.float64)).astype(T)
    rows = np.stack([y_low, y_low, y_high, y_high], axis=1)
    cols = np.stack([x_low, x_high, x_low, x_high], axis=1)
    weights = np.stack([hy * hx, hy * lx, ly * hx, ly * lx], axis=1).astype(T)
    return inside, rows, cols, weights


def roi_align_rotated_ref(input, rois, output_size, spatial_scale=1.0, sampling_ratio=0,
                          aligned=True, clockwise=False, angle="degrees"):
    """Reference forward: (K, C, PH, PW) array of the input's dtype."""
    input, T, rois, output = forward_operands(input, rois, output_size, as_rotated_rois)
    _, _, pooled_h, pooled_w = output.shape
    height, width = input.shape[2:]
    with np.errstate(invalid="ignore", over="ignore"):
        for k, image in roi_images(input, rois):
            g = rotated_geometry(rois[k], T, spatial_scale, pooled_h, pooled_w, sampling_ratio,
                                 aligned, clockwise, angle == "degrees")
            count = T(max(g["grid_h"] * g["grid_w"], 1))
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    _, rows, cols, weights = rotated_samples(g, ph, pw, height, width, T)
                    if rows.shape[0] == 0:
                        continue  # output 0
                    # value per sample and channel: ((w1*p1 + w2*p2) + w3*p3) + w4*p4
                    value = weights[:, 0, None] * image[:, rows[:, 0], cols[:, 0]].T
                    for t in (1, 2, 3):
                        value = value + weights[:, t, None] * image[:, rows[:, t], cols[:, t]].T
                    # running sum over the samples in order, starting from 0
                    acc = np.add.accumulate(value.astype(T), axis=0, dtype=T)[-1]
                    output[k, :, ph, pw] = acc / count
    return output


def roi_align_rotated_backward_ref(grad_output, rois, input_shape, spatial_scale=1.0,
                                   sampling_ratio=0, aligned=True, clockwise=False,
                                   angle="degrees"):
    """Reference backward: the input gradient, shape ``input_shape``.

    Contributions ``(g * w) / (grid_h * grid_w)`` (unclamped count) are added per input
    element in the peers' order: RoI, bin, sample, tap.
    """
    grad_output = np.asarray(grad_output)
    T = working_type(grad_output.dtype)
    rois = as_rotated_rois(rois, grad_output.dtype)
    num_images, channels, height, width = (int(v) for v in input_shape)
    num_rois, _, pooled_h, pooled_w = grad_output.shape
    grad_input = np.zeros((num_images, channels, height, width), dtype=grad_output.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(num_rois):
            b = batch_index(rois[k], num_images, k)
            g = rotated_geometry(rois[k], T, spatial_scale, pooled_h, pooled_w, sampling_ratio,
                                 aligned, clockwise, angle == "degrees")
            count = T(g["grid_h"] * g["grid_w"])
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    _, rows, cols, weights = rotated_samples(g, ph, pw, height, width, T)
                    if rows.shape[0] == 0:
                        continue
                    gv = grad_output[k, :, ph, pw]
                    # (S*4,) taps in sample-major, tap-minor order; np.add.at applies them in
                    # that order, one channel plane at a time
                    flat_rows = rows.ravel()
                    flat_cols = cols.ravel()
                    flat_w = weights.ravel()
                    for c in range(channels):
                        contrib = ((gv[c] * flat_w).astype(T) / count).astype(T)
                        np.add.at(grad_input[b, c], (flat_rows, flat_cols), contrib)
    return grad_input
