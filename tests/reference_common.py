"""What the slow NumPy references of ``tests/reference*.py`` share: the working type, the
output size pair, the ``(K, 5)`` box form, the batch index check, and the bilinear sampler of
docs/semantics.md §2 with the RoIAlign sample positions of §3.3.

Written from the semantics page, not from the C core: nothing here is shared with the
library under test. Every scalar step is one NumPy scalar operation in the working type
``T`` (one rounding per operation, in the documented order).
"""

import numpy as np

__all__ = [
    "working_type",
    "pair",
    "boxes_list_to_rois",
    "as_rois",
    "batch_index",
    "roi_images",
    "forward_operands",
    "at_least_one",
    "bins_and_grids",
    "bilinear_corners",
    "sample_taps",
    "sample_coordinate",
    "bin_samples",
]


def working_type(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return np.float32
    if dtype == np.float64:
        return np.float64
    raise TypeError(f"reference supports float32 and float64 only, got {dtype}")


def pair(output_size):
    """``output_size`` as (height, width) Python ints: an int ``s`` means (s, s)."""
    if isinstance(output_size, (int, np.integer)):
        return int(output_size), int(output_size)
    pooled_h, pooled_w = output_size
    return int(pooled_h), int(pooled_w)


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


def batch_index(roi, num_images, k):
    """Column 0 of RoI ``k`` as an image index: an integer in ``[0, num_images)``."""
    value = float(roi[0])
    index = int(value)
    if index != value or not 0 <= index < num_images:
        raise IndexError(f"RoI {k}: batch index {value} is not an integer in [0, {num_images})")
    return index


def roi_images(maps, rois):
    """``(k, maps[image of RoI k])`` for every RoI, its batch index checked; ``maps`` is a
    forward's input or the gradient a backward fills."""
    num_images = maps.shape[0]
    return [(k, maps[batch_index(rois[k], num_images, k)]) for k in range(rois.shape[0])]


def forward_operands(input, boxes, output_size, to_rois=as_rois, channels_per_bin=False):
    """A forward's ``(input, T, rois, zeroed output)``: the input as an array, its working
    type, ``to_rois(boxes, dtype)`` and the (K, C_out, pooled_h, pooled_w) output, where
    C_out is the input's channels, or with ``channels_per_bin`` (position-sensitive pooling)
    the input's channels / (pooled_h * pooled_w)."""
    input = np.asarray(input)
    rois = to_rois(boxes, input.dtype)
    pooled_h, pooled_w = pair(output_size)
    channels = input.shape[1]
    if channels_per_bin:
        if channels % (pooled_h * pooled_w):
            raise ValueError(f"{channels} channels are not a multiple of {pooled_h} * {pooled_w}")
        channels //= pooled_h * pooled_w
    output = np.zeros((rois.shape[0], channels, pooled_h, pooled_w), dtype=input.dtype)
    return input, working_type(input.dtype), rois, output


def at_least_one(size, T):
    """The legacy (``aligned=False``) RoI size: ``max(size, 1)``; NaN stays NaN."""
    return T(1) if size < T(1) else size


def bins_and_grids(roi_h, roi_w, pooled_h, pooled_w, sampling_ratio, T):
    """docs/semantics.md §3.2: the bin sizes ``size / bins`` and the samples per bin on each
    axis (``sampling_ratio`` if positive, else ``ceil(size / bins)``; may be <= 0, meaning no
    samples). Returns ``(bin_h, bin_w, grid_h, grid_w)``, grids as Python ints."""
    bin_h = T(roi_h / T(pooled_h))
    bin_w = T(roi_w / T(pooled_w))
    if sampling_ratio > 0:
        grid_h = grid_w = int(sampling_ratio)
    else:
        grid_h = int(np.ceil(T(roi_h / T(pooled_h))))
        grid_w = int(np.ceil(T(roi_w / T(pooled_w))))
    return bin_h, bin_w, grid_h, grid_w


def bilinear_corners(height, width, y, x, T):
    """The corners and fractions of an in-map sample (docs/semantics.md §2): ``y`` and ``x``
    clamped below at 0, the low corner truncated, the high corner clamped to the last
    row / column. Returns ``(y_low, y_high, x_low, x_high, ly, lx)``; the caller has checked
    that the sample is inside ``[-1, H] x [-1, W]``."""
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
    return y_low, y_high, x_low, x_high, T(y - T(y_low)), T(x - T(x_low))


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
    y_low, y_high, x_low, x_high, ly, lx = bilinear_corners(height, width, y, x, T)
    hy = T(T(1) - ly)
    hx = T(T(1) - lx)
    return (
        ((y_low, x_low), T(hy * hx)),
        ((y_low, x_high), T(hy * lx)),
        ((y_high, x_low), T(ly * hx)),
        ((y_high, x_high), T(ly * lx)),
    )


def sample_coordinate(start, bin_size, bin_index, sample_index, grid, T):
    """docs/semantics.md §3.3: (start + bin_index*bin) + ((sample_index + 0.5)*bin) / grid."""
    base = T(start + T(T(bin_index) * bin_size))
    within = T(T(T(sample_index + 0.5) * bin_size) / T(grid))
    return T(base + within)


def bin_samples(height, width, geometry, ph, pw, T):
    """The taps of every in-map sample of bin (ph, pw), samples in row-major order;
    ``geometry`` is ``(start_y, start_x, bin_h, bin_w, grid_h, grid_w)`` (grids <= 0: no
    samples on that axis)."""
    start_y, start_x, bin_h, bin_w, grid_h, grid_w = geometry
    samples = []
    for iy in range(max(grid_h, 0)):
        y = sample_coordinate(start_y, bin_h, ph, iy, grid_h, T)
        for ix in range(max(grid_w, 0)):
            x = sample_coordinate(start_x, bin_w, pw, ix, grid_w, T)
            taps = sample_taps(height, width, y, x, T)
            if taps is not None:
                samples.append(taps)
    return samples
