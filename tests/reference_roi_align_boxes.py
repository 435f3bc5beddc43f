"""A float64 transcription of RoIAlign's box gradient (docs/semantics.md §3.8), written from
torchvision's CPU kernel (roi_align_kernel.cpp: the sample positions, bilinear_interpolate)
by differentiating each step by hand, one sample at a time, with no code of pyroi's."""

import math

import numpy as np


def _sample_with_slopes(plane, y, x):
    """torchvision's bilinear_interpolate at (y, x), and its slopes along y and x (0 where the
    sampler clamps or outside the halo; at a whole coordinate the cell the floor picks)."""
    height, width = plane.shape
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return 0.0, 0.0, 0.0
    slope_y = slope_x = 1.0
    if y <= 0:
        if y < 0:
            slope_y = 0.0
        y = 0.0
    if x <= 0:
        if x < 0:
            slope_x = 0.0
        x = 0.0
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_high = y_low = height - 1
        y = float(y_low)
        slope_y = 0.0
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_high = x_low = width - 1
        x = float(x_low)
        slope_x = 0.0
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    v1, v2 = plane[y_low, x_low], plane[y_low, x_high]
    v3, v4 = plane[y_high, x_low], plane[y_high, x_high]
    value = hy * hx * v1 + hy * lx * v2 + ly * hx * v3 + ly * lx * v4
    d_y = slope_y * (hx * (v3 - v1) + lx * (v4 - v2))
    d_x = slope_x * (hy * (v2 - v1) + ly * (v4 - v3))
    return value, d_y, d_x


def _axis(first, second, scale, aligned, bins, sampling_ratio):
    """(start, bin size, grid, clamped) of one axis, as torchvision computes them."""
    offset = 0.5 if aligned else 0.0
    start = first * scale - offset
    size = second * scale - offset - start
    clamped = not aligned and size < 1.0
    if clamped:
        size = 1.0
    bin_size = size / bins
    grid = sampling_ratio if sampling_ratio > 0 else max(math.ceil(size / bins), 0)
    return start, bin_size, grid, clamped


def roi_align_boxes_ref(grad_output, input, rois, spatial_scale, sampling_ratio, aligned):
    """d(sum(grad_output * roi_align(input, rois)))/d(rois): rows [0, dx1, dy1, dx2, dy2]."""
    grad_output = np.asarray(grad_output, np.float64)
    input = np.asarray(input, np.float64)
    _, channels, pooled_h, pooled_w = grad_output.shape
    result = np.zeros((len(rois), 5))
    for k, roi in enumerate(np.asarray(rois, np.float64)):
        n = int(roi[0])
        y_start, bin_h, grid_h, clamp_h = _axis(roi[2], roi[4], spatial_scale, aligned,
                                                pooled_h, sampling_ratio)
        x_start, bin_w, grid_w, clamp_w = _axis(roi[1], roi[3], spatial_scale, aligned,
                                                pooled_w, sampling_ratio)
        count = grid_h * grid_w
        if count == 0:
            continue
        for c in range(channels):
            plane = input[n, c]
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    g = grad_output[k, c, ph, pw] / count
                    for iy in range(grid_h):
                        t_y = (ph + (iy + 0.5) / grid_h) / pooled_h
                        y = y_start + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                        far_y = 0.0 if clamp_h else t_y
                        for ix in range(grid_w):
                            t_x = (pw + (ix + 0.5) / grid_w) / pooled_w
                            x = x_start + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                            far_x = 0.0 if clamp_w else t_x
                            _, d_y, d_x = _sample_with_slopes(plane, y, x)
                            # y = y1*s*(1 - t) + y2*s*t (+ constants)
                            result[k, 2] += g * d_y * spatial_scale * (1.0 - far_y)
                            result[k, 4] += g * d_y * spatial_scale * far_y
                            result[k, 1] += g * d_x * spatial_scale * (1.0 - far_x)
                            result[k, 3] += g * d_x * spatial_scale * far_x
    return result
