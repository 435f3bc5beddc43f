"""Slow scalar reference of ONNX RoiAlign ``mode="max"`` as onnxruntime computes it, written
from docs/semantics.md §2, §3.2, §3.3 and §4.1 (not from the C kernel), and of its gradient:
the derivative of the term each output took (tracked here by following the fold).

Every operation is one NumPy scalar operation in the working type (NumPy >= 2 keeps float32
scalars in float32), so results are bit-exact where the C kernel is.
"""

import math

import numpy as np

from reference_common import bilinear_corners


def _max(a, b):
    """std::max(a, b): a < b ? b : a (NaN in a propagates, NaN in b is dropped)."""
    return b if a < b else a


def _taps(plane, y, x):
    """The four taps (w_k, row_k, col_k) of a sample (docs/semantics.md §2, §4.1)."""
    T = plane.dtype.type
    height, width = plane.shape
    if not (y >= -1 and y <= height and x >= -1 and x <= width):
        # onnxruntime's pre-computed form: weights 0 at position 0
        return [(T(0), 0, 0)] * 4
    y_low, y_high, x_low, x_high, ly, lx = bilinear_corners(height, width, y, x, T)
    hy = T(1.0 - float(ly))
    hx = T(1.0 - float(lx))
    w1, w2, w3, w4 = hy * hx, hy * lx, ly * hx, ly * lx
    return [(w1, y_low, x_low), (w2, y_low, x_high), (w3, y_high, x_low), (w4, y_high, x_high)]


def onnx_roi_align_max_ref(x, rois, batch_indices, output_height, output_width,
                           sampling_ratio, spatial_scale, aligned):
    """(K, C, output_height, output_width) in x.dtype."""
    with np.errstate(invalid="ignore", over="ignore"):  # 0 * inf is part of the semantics
        return _onnx_roi_align_max_ref(x, rois, batch_indices, output_height, output_width,
                                       sampling_ratio, spatial_scale, aligned)[0]


def onnx_roi_align_max_backward_ref(x, rois, batch_indices, grad_output, sampling_ratio,
                                    spatial_scale, aligned):
    """Gradient of onnx_roi_align_max_ref with respect to x: each output's gradient g goes to
    the term w * P[row, col] the output took, as g * w at (row, col), added RoI by RoI, bin by
    bin (the fold keeps its first value unless a later one is strictly larger)."""
    T = x.dtype.type
    _, channels, output_height, output_width = grad_output.shape
    with np.errstate(invalid="ignore", over="ignore"):
        _, winners = _onnx_roi_align_max_ref(x, rois, batch_indices, output_height,
                                             output_width, sampling_ratio, spatial_scale,
                                             aligned)
        grad = np.zeros_like(x)
        for (k, c, ph, pw), (w, row, col) in winners.items():
            n = int(batch_indices[k])
            grad[n, c, row, col] = grad[n, c, row, col] + T(grad_output[k, c, ph, pw]) * w
    return grad


def _onnx_roi_align_max_ref(x, rois, batch_indices, output_height, output_width,
                            sampling_ratio, spatial_scale, aligned):
    """(output, {(k, c, ph, pw): (w, row, col) of the term the output took}), in RoI, channel,
    bin order."""
    T = x.dtype.type
    num_rois = rois.shape[0]
    channels = x.shape[1]
    out = np.zeros((num_rois, channels, output_height, output_width), dtype=x.dtype)
    winners = {}
    scale = T(np.float32(spatial_scale))
    offset = T(0.5) if aligned else T(0)
    for k in range(num_rois):
        x1, y1, x2, y2 = (T(v) for v in rois[k])
        start_x = x1 * scale - offset
        start_y = y1 * scale - offset
        end_x = x2 * scale - offset
        end_y = y2 * scale - offset
        roi_w = end_x - start_x
        roi_h = end_y - start_y
        if not aligned:
            roi_w = _max(roi_w, T(1))
            roi_h = _max(roi_h, T(1))
        bin_h = roi_h / T(output_height)
        bin_w = roi_w / T(output_width)
        if sampling_ratio > 0:
            grid_h = grid_w = sampling_ratio
        else:
            grid_h = int(math.ceil(roi_h / T(output_height)))
            grid_w = int(math.ceil(roi_w / T(output_width)))
        for c in range(channels):
            plane = x[int(batch_indices[k]), c]
            for ph in range(output_height):
                for pw in range(output_width):
                    result = winner = None
                    for iy in range(max(grid_h, 0)):
                        y = (start_y + T(ph) * bin_h) + (T(iy + 0.5) * bin_h) / T(grid_h)
                        for ix in range(max(grid_w, 0)):
                            xx = (start_x + T(pw) * bin_w) + (T(ix + 0.5) * bin_w) / T(grid_w)
                            taps = _taps(plane, y, xx)
                            terms = [w * (plane[r, q] if plane.size else T(0))
                                     for w, r, q in taps]
                            value, tap = terms[0], 0
                            for t in (1, 2, 3):  # value = max(value, terms[t])
                                if value < terms[t]:
                                    value, tap = terms[t], t
                            if result is None or result < value:  # result = max(result, value)
                                result, winner = value, taps[tap]
                    out[k, c, ph, pw] = T(0) if result is None else result
                    if winner is not None:
                        winners[k, c, ph, pw] = winner
    return out, winners
