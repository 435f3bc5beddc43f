"""Slow, loop-based NumPy reference of RoIPool (quantised max pooling), forward with argmax
and backward.

Written from docs/semantics.md §5.1 (torchvision.ops.roi_pool / Caffe Fast R-CNN /
ONNX MaxRoiPool), plus the one pyroi choice beyond torchvision 0.29.1:

* a rounded box coordinate is clamped to ``[-2**53, 2**53]`` pixels before the integer
  arithmetic (torchvision converts it to a 32-bit int and is undefined beyond that range).

Integer steps (rounding, RoI size, bin offsets, clipping) use exact Python integers; the
two floating-point steps the semantics prescribe (``coordinate * scale``, ``size / bins``,
``bin_index * bin_size``) are evaluated in the working dtype ``T`` with NumPy scalars, one
rounding per operation. Nothing is shared with the library under test: the loops walk
RoI -> bin -> pixel directly and vectorise only over channels.
"""

import math

import numpy as np

from reference_common import as_rois, batch_index, pair, working_type

__all__ = ["FLT_MAX", "COORD_LIMIT", "round_half_away", "roi_pool_ref",
           "roi_pool_backward_ref", "roi_windows"]

FLT_MAX = float(np.finfo(np.float32).max)
COORD_LIMIT = 2 ** 53


def round_half_away(value):
    """Round a finite float to the nearest integer, halves away from zero (C's round)."""
    v = float(value)  # exact for float32 and float64 scalars
    a = abs(v)
    whole = math.floor(a)
    # a - whole is exact (the fractional part of a binary float is representable)
    rounded = whole + (1 if a - whole >= 0.5 else 0)
    return -rounded if v < 0 else rounded


def _int_to(T, n):
    """Python int -> T with one correct rounding (to nearest, ties to even), as C's cast of
    an int64. NumPy would go through float64 first and could round twice."""
    if T is np.float64:
        return np.float64(float(n))  # Python's int -> float is correctly rounded
    sign = -1 if n < 0 else 1
    m = abs(n)
    shift = m.bit_length() - 24
    if shift <= 0:
        return T(n)
    q, r = divmod(m, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return T(float(sign * q * (1 << shift)))  # at most 25 significant bits: exact


def _axis_windows(edge1, edge2, scale, bins, extent, T):
    """[begin, end) pixel windows of the bins along one axis (docs/semantics.md §5.1)."""
    s = T(scale)
    starts = []
    for edge in (edge1, edge2):
        scaled = T(T(edge) * s)
        if not np.isfinite(scaled):
            raise ValueError(f"box coordinate {edge} * {scale} is not finite")
        starts.append(min(max(round_half_away(scaled), -COORD_LIMIT), COORD_LIMIT))
    start, end = starts
    size = max(end - start + 1, 1)  # end pixel included; malformed RoIs span one pixel
    bin_size = T(_int_to(T, size) / _int_to(T, bins))
    windows = []
    for b in range(bins):
        lo = math.floor(T(_int_to(T, b) * bin_size)) + start
        hi = math.ceil(T(_int_to(T, b + 1) * bin_size)) + start
        windows.append((min(max(lo, 0), extent), min(max(hi, 0), extent)))
    return windows


def roi_windows(roi, T, spatial_scale, pooled_h, pooled_w, height, width):
    """(row windows, column windows) of one (K, 5)-style RoI ``[b, x1, y1, x2, y2]``."""
    rows = _axis_windows(roi[2], roi[4], spatial_scale, pooled_h, height, T)
    cols = _axis_windows(roi[1], roi[3], spatial_scale, pooled_w, width, T)
    return rows, cols


def roi_pool_ref(input, boxes, output_size, spatial_scale=1.0):
    """Reference RoIPool forward: ``(output, argmax)``, both (K, C, PH, PW); argmax int64.

    An empty bin is 0 with argmax -1. Otherwise the running maximum starts at -FLT_MAX (in
    float64 too) and only a strictly greater pixel, scanned row by row, replaces it; a bin
    with no such pixel keeps -FLT_MAX and argmax -1.
    """
    input = np.asarray(input)
    T = working_type(input.dtype)
    rois = as_rois(boxes, input.dtype)
    pooled_h, pooled_w = pair(output_size)
    num_images, channels, height, width = input.shape
    shape = (rois.shape[0], channels, pooled_h, pooled_w)
    output = np.zeros(shape, dtype=input.dtype)
    argmax = np.full(shape, -1, dtype=np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(rois.shape[0]):
            roi = rois[k]
            image = input[batch_index(roi, num_images, k)]
            rows, cols = roi_windows(roi, T, spatial_scale, pooled_h, pooled_w, height, width)
            for ph, (h0, h1) in enumerate(rows):
                for pw, (w0, w1) in enumerate(cols):
                    if h1 <= h0 or w1 <= w0:
                        continue  # empty: 0 and -1
                    best = np.full(channels, -FLT_MAX, dtype=input.dtype)
                    where = np.full(channels, -1, dtype=np.int64)
                    for h in range(h0, h1):
                        for w in range(w0, w1):
                            value = image[:, h, w]
                            better = value > best  # False for NaN
                            best = np.where(better, value, best)
                            where = np.where(better, h * width + w, where)
                    output[k, :, ph, pw] = best
                    argmax[k, :, ph, pw] = where
    return output, argmax


def roi_pool_backward_ref(grad_output, boxes, argmax, input_shape):
    """Reference RoIPool backward from the forward's argmax: ``grad_input[b, c].flat[a] +=
    grad_output[k, c, ph, pw]`` for every ``a = argmax[k, c, ph, pw] != -1``, accumulated in
    torchvision's order (RoI, channel, bin row, bin column), one rounding per addition."""
    grad_output = np.asarray(grad_output)
    rois = as_rois(boxes, grad_output.dtype)
    argmax = np.asarray(argmax)
    num_images, channels, height, width = (int(v) for v in input_shape)
    num_rois, _, pooled_h, pooled_w = grad_output.shape
    if num_rois != rois.shape[0] or argmax.shape != grad_output.shape:
        raise ValueError("grad_output, argmax and boxes disagree")
    grad_input = np.zeros((num_images, channels, height, width), dtype=grad_output.dtype)
    for k in range(num_rois):
        b = batch_index(rois[k], num_images, k)
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                # every channel is its own plane, so vectorising over channels keeps each
                # pixel's order of additions
                index = argmax[k, :, ph, pw].astype(np.int64)
                chosen = np.nonzero(index != -1)[0]
                if chosen.size:
                    if np.any(index[chosen] < 0) or np.any(index[chosen] >= height * width):
                        raise ValueError("argmax out of range")
                    rows, cols = np.divmod(index[chosen], width)
                    grad_input[b, chosen, rows, cols] += grad_output[k, chosen, ph, pw]
    return grad_input
