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

__all__ = [
    "boxes_list_to_rois",
    "as_rois",
    "roi_geometry",
    "sample_taps",
    "roi_align_ref",
    "roi_align_backward_ref",
]


def _working_type(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return np.float32
    if dtype == np.float64:
        return np.float64
    raise TypeError(f"reference supports float32 and float64 only, got {dtype}")


def boxes_list_to_rois(boxes_list, dtype=None):
    """Convert torchvision's list-of-(L_i, 4) form into one (K, 5) array.

    The list position becomes the batch index in column 0 (torchvision's
    ``convert_boxes_to_roi_format``).  ``dtype`` defaults to the dtype of the entries.
    """
    parts = []
    for image_index, entry in enumerate(boxes_list):
        entry = np.asarray(entry)
        if dtype is None:
            dtype = entry.dtype
        if entry.ndim != 2 or entry.shape[1] != 4:
            raise ValueError(f"list entry {image_index} must have shape (L, 4), got {entry.shape}")
        column = np.full((entry.shape[0], 1), image_index, dtype=dtype)
        parts.append(np.concatenate([column, entry.astype(dtype)], axis=1))
    if dtype is None:
        dtype = np.float32
    if not parts:
        return np.zeros((0, 5), dtype=dtype)
    return np.concatenate(parts, axis=0).astype(dtype)


def as_rois(boxes, dtype):
    """Boxes as a (K, 5) array of ``dtype`` (accepts the (K, 5) form or a list of (L, 4))."""
    if isinstance(boxes, (list, tuple)):
        return boxes_list_to_rois(boxes, dtype)
    rois = np.asarray(boxes)
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise ValueError(f"boxes must have shape (K, 5), got {rois.shape}")
    return rois.astype(dtype)


def _pair(output_size):
    if isinstance(output_size, (int, np.integer)):
        return int(output_size), int(output_size)
    pooled_h, pooled_w = output_size
    return int(pooled_h), int(pooled_w)


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
    if not aligned:
        # legacy mode: malformed or tiny RoIs are forced to size 1
        if roi_w < T(1):
            roi_w = T(1)
        if roi_h < T(1):
            roi_h = T(1)
    bin_h = T(roi_h / T(pooled_h))
    bin_w = T(roi_w / T(pooled_w))
    if sampling_ratio > 0:
        grid_h = grid_w = int(sampling_ratio)
    else:
        grid_h = int(np.ceil(T(roi_h / T(pooled_h))))
        grid_w = int(np.ceil(T(roi_w / T(pooled_w))))
    return start_y, start_x, bin_h, bin_w, grid_h, grid_w


def sample_taps(height, width, y, x, T):
    """The bilinear sampler of docs/semantics.md §2.

    Returns ``None`` when the sample contributes nothing, otherwise the four
    ``((row, col), weight)`` taps in the order (yl,xl), (yl,xh), (yh,xl), (yh,xh).
    """
    if height == 0 or width == 0:
        return None
    # closed interval [-1, H] x [-1, W]; anything else (including NaN) is skipped
    if not (y >= -1 and y <= height and x >= -1 and x <= width):
        return None
    y = T(y)
    x = T(x)
    if y <= 0:
        y = T(0)
    if x <= 0:
        x = T(0)
    y_low = int(y)
    x_low = int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y = T(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x = T(x_low)
    else:
        x_high = x_low + 1
    ly = T(y - T(y_low))
    lx = T(x - T(x_low))
    hy = T(T(1) - ly)
    hx = T(T(1) - lx)
    return (
        ((y_low, x_low), T(hy * hx)),
        ((y_low, x_high), T(hy * lx)),
        ((y_high, x_low), T(ly * hx)),
        ((y_high, x_high), T(ly * lx)),
    )


def _sample_coordinate(start, bin_size, bin_index, sample_index, grid, T):
    # docs/semantics.md §3.3: (start + bin_index*bin) + ((sample_index + 0.5)*bin) / grid
    base = T(start + T(T(bin_index) * bin_size))
    within = T(T(T(sample_index + 0.5) * bin_size) / T(grid))
    return T(base + within)


def _batch_index(roi, num_images, k):
    value = float(roi[0])
    index = int(value)
    if index != value or not 0 <= index < num_images:
        raise IndexError(f"RoI {k}: batch index {value} is not an integer in [0, {num_images})")
    return index


def roi_align_ref(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1,
                  aligned=False):
    """Reference RoIAlign forward: (K, C, PH, PW) array of the input's dtype."""
    input = np.asarray(input)
    T = _working_type(input.dtype)
    rois = as_rois(boxes, input.dtype)
    pooled_h, pooled_w = _pair(output_size)
    num_images, channels, height, width = input.shape
    output = np.zeros((rois.shape[0], channels, pooled_h, pooled_w), dtype=input.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(rois.shape[0]):
            roi = rois[k]
            image = input[_batch_index(roi, num_images, k)]
            start_y, start_x, bin_h, bin_w, grid_h, grid_w = roi_geometry(
                roi, T, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned)
            count = T(max(grid_h * grid_w, 1))
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    acc = np.zeros(channels, dtype=input.dtype)
                    for iy in range(max(grid_h, 0)):
                        y = _sample_coordinate(start_y, bin_h, ph, iy, grid_h, T)
                        for ix in range(max(grid_w, 0)):
                            x = _sample_coordinate(start_x, bin_w, pw, ix, grid_w, T)
                            taps = sample_taps(height, width, y, x, T)
                            if taps is None:
                                continue
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
    T = _working_type(grad_output.dtype)
    rois = as_rois(boxes, grad_output.dtype)
    num_images, channels, height, width = (int(v) for v in input_shape)
    num_rois, _, pooled_h, pooled_w = grad_output.shape
    if num_rois != rois.shape[0]:
        raise ValueError("grad_output and boxes disagree on the number of RoIs")
    grad_input = np.zeros((num_images, channels, height, width), dtype=grad_output.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(num_rois):
            roi = rois[k]
            b = _batch_index(roi, num_images, k)
            start_y, start_x, bin_h, bin_w, grid_h, grid_w = roi_geometry(
                roi, T, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned)
            count = T(grid_h * grid_w)
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    g = grad_output[k, :, ph, pw]
                    for iy in range(max(grid_h, 0)):
                        y = _sample_coordinate(start_y, bin_h, ph, iy, grid_h, T)
                        for ix in range(max(grid_w, 0)):
                            x = _sample_coordinate(start_x, bin_w, pw, ix, grid_w, T)
                            taps = sample_taps(height, width, y, x, T)
                            if taps is None:
                                continue
                            for (row, col), weight in taps:
                                grad_input[b, :, row, col] += (g * weight) / count
    return grad_input
