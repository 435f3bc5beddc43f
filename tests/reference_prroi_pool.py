"""Slow float64 NumPy reference of Precise RoI Pooling (docs/semantics.md §12).

Written from the definition, not from the C core, and on purpose in another form than the
kernels: the kernels use the separable per-axis tent integrals; this walks the unit cells of
the zero-padded map one by one, integrating the cell's bilinear patch (four corner pixels,
zero outside the map) over its intersection with the bin in closed form. The box gradient is
not written out here: the tests take central finite differences of this forward.
"""

import numpy as np

from reference_common import as_rois, batch_index, pair

__all__ = ["prroi_pool_ref", "prroi_pool_backward_ref", "prroi_pool_boxes_fd", "bin_geometry",
           "bin_weights"]


def bin_geometry(roi, spatial_scale, pooled_h, pooled_w):
    """(x1', y1', bin_w, bin_h) of a (K, 5) row, in float64: no half-pixel shift, size
    clamped at 0."""
    x1, y1, x2, y2 = (float(v) * spatial_scale for v in roi[1:5])
    return x1, y1, max(x2 - x1, 0.0) / pooled_w, max(y2 - y1, 0.0) / pooled_h


def _pixel(plane, i, j):
    height, width = plane.shape
    return plane[i, j] if 0 <= i < height and 0 <= j < width else 0.0


def _linear_integrals(t0, t1):
    """Integrals over [t0, t1] (inside a unit cell, local coordinate) of (1 - t) and t."""
    rising = (t1 * t1 - t0 * t0) / 2.0
    return (t1 - t0) - rising, rising


def _cells(lo, hi):
    """Unit cells [c, c + 1] meeting (lo, hi), as (c, local start, local end)."""
    for c in range(int(np.floor(lo)), int(np.ceil(hi))):
        t0, t1 = max(lo, c) - c, min(hi, c + 1) - c
        if t1 > t0:
            yield c, t0, t1


def bin_weights(height, width, ya, yb, xa, xb):
    """{(i, j): weight}: the integral of the zero-padded bilinear surface over the bin is
    sum of weight * P[i, j] (pixels outside the map dropped), cell by cell."""
    weights = {}
    for i, u0, u1 in _cells(max(ya, -1.0), min(yb, float(height))):
        iu = _linear_integrals(u0, u1)
        for j, v0, v1 in _cells(max(xa, -1.0), min(xb, float(width))):
            iv = _linear_integrals(v0, v1)
            for di in (0, 1):
                for dj in (0, 1):
                    pi, pj = i + di, j + dj
                    if 0 <= pi < height and 0 <= pj < width:
                        weights[(pi, pj)] = weights.get((pi, pj), 0.0) + iu[di] * iv[dj]
    return weights


def _each_bin(rois, num_images, height, width, spatial_scale, pooled_h, pooled_w):
    """(k, image, ph, pw, {(i, j): weight / area}) of every bin with an area."""
    for k in range(rois.shape[0]):
        image = batch_index(rois[k], num_images, k)
        x1, y1, bin_w, bin_h = bin_geometry(rois[k], spatial_scale, pooled_h, pooled_w)
        if bin_w <= 0.0 or bin_h <= 0.0:
            continue
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                ya, xa = y1 + ph * bin_h, x1 + pw * bin_w
                weights = bin_weights(height, width, ya, ya + bin_h, xa, xa + bin_w)
                area = bin_w * bin_h
                yield k, image, ph, pw, {key: w / area for key, w in weights.items()}


def prroi_pool_ref(input, boxes, output_size, spatial_scale=1.0):
    """PrRoIPool forward in float64 (returned as float64)."""
    input = np.asarray(input, dtype=np.float64)
    rois = as_rois(boxes, np.float64)
    pooled_h, pooled_w = pair(output_size)
    n, channels, height, width = input.shape
    output = np.zeros((rois.shape[0], channels, pooled_h, pooled_w))
    for k, image, ph, pw, weights in _each_bin(rois, n, height, width, spatial_scale,
                                               pooled_h, pooled_w):
        for (i, j), w in weights.items():
            output[k, :, ph, pw] += w * input[image, :, i, j]
    return output


def prroi_pool_backward_ref(grad_output, boxes, input_shape, spatial_scale=1.0):
    """The input gradient (the forward's adjoint), float64."""
    grad_output = np.asarray(grad_output, dtype=np.float64)
    rois = as_rois(boxes, np.float64)
    pooled_h, pooled_w = grad_output.shape[2:]
    n, channels, height, width = input_shape
    grad_input = np.zeros(input_shape)
    for k, image, ph, pw, weights in _each_bin(rois, n, height, width, spatial_scale,
                                               pooled_h, pooled_w):
        for (i, j), w in weights.items():
            grad_input[image, :, i, j] += w * grad_output[k, :, ph, pw]
    return grad_input


def prroi_pool_boxes_fd(input, boxes, grad_output, output_size, spatial_scale=1.0, step=1e-6):
    """Central finite differences of <forward(boxes), grad_output> in each coordinate of
    every (K, 5) row (column 0: 0), float64."""
    rois = as_rois(boxes, np.float64)
    grad_output = np.asarray(grad_output, dtype=np.float64)
    result = np.zeros_like(rois)
    for k in range(rois.shape[0]):
        for col in range(1, 5):
            plus, minus = rois.copy(), rois.copy()
            plus[k, col] += step
            minus[k, col] -= step
            f_plus = np.sum(prroi_pool_ref(input, plus[k:k + 1], output_size, spatial_scale)
                            * grad_output[k:k + 1])
            f_minus = np.sum(prroi_pool_ref(input, minus[k:k + 1], output_size, spatial_scale)
                             * grad_output[k:k + 1])
            result[k, col] = (f_plus - f_minus) / (2 * step)
    return result
