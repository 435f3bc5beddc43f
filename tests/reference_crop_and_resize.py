"""Slow float64 reference of crop_and_resize (docs/semantics.md §13), written from the
definition: every sample's position in float64, bilinear as the sum of four weighted pixels
(not the kernels' lerp form), nearest by rounding halves away from zero. Layout NCHW."""

import math

import numpy as np


def positions(start, end, extent, count):
    """The count sample positions of an axis of extent pixels for box edges start, end."""
    last = extent - 1
    if count == 1:
        return [0.5 * (start + end) * last]
    return [start * last + i * (end - start) * last / (count - 1) for i in range(count)]


def _round_half_away(value):
    return int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))


def forward(image, boxes, box_indices, crop_size, method="bilinear", extrapolation_value=0.0):
    image = np.asarray(image, np.float64)
    n, channels, height, width = image.shape
    ch, cw = crop_size
    out = np.full((len(boxes), channels, ch, cw), float(extrapolation_value))
    for k, (y1, x1, y2, x2) in enumerate(np.asarray(boxes, np.float64)):
        plane = image[int(box_indices[k])]
        for i, y in enumerate(positions(y1, y2, height, ch)):
            if not 0 <= y <= height - 1:
                continue
            for j, x in enumerate(positions(x1, x2, width, cw)):
                if not 0 <= x <= width - 1:
                    continue
                if method == "nearest":
                    out[k, :, i, j] = plane[:, _round_half_away(y), _round_half_away(x)]
                    continue
                y0, x0 = math.floor(y), math.floor(x)
                y_1, x_1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
                dy, dx = y - y0, x - x0
                out[k, :, i, j] = ((1 - dy) * (1 - dx) * plane[:, y0, x0]
                                   + (1 - dy) * dx * plane[:, y0, x_1]
                                   + dy * (1 - dx) * plane[:, y_1, x0]
                                   + dy * dx * plane[:, y_1, x_1])
    return out


def backward_image(grads, boxes, box_indices, image_shape, method="bilinear"):
    """The adjoint of forward with respect to the image, sample by sample."""
    grads = np.asarray(grads, np.float64)
    n, channels, height, width = image_shape
    out = np.zeros(image_shape)
    ch, cw = grads.shape[2:]
    for k, (y1, x1, y2, x2) in enumerate(np.asarray(boxes, np.float64)):
        b = int(box_indices[k])
        for i, y in enumerate(positions(y1, y2, height, ch)):
            if not 0 <= y <= height - 1:
                continue
            for j, x in enumerate(positions(x1, x2, width, cw)):
                if not 0 <= x <= width - 1:
                    continue
                g = grads[k, :, i, j]
                if method == "nearest":
                    out[b, :, _round_half_away(y), _round_half_away(x)] += g
                    continue
                y0, x0 = math.floor(y), math.floor(x)
                y_1, x_1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
                dy, dx = y - y0, x - x0
                out[b, :, y0, x0] += (1 - dy) * (1 - dx) * g
                out[b, :, y0, x_1] += (1 - dy) * dx * g
                out[b, :, y_1, x0] += dy * (1 - dx) * g
                out[b, :, y_1, x_1] += dy * dx * g
    return out
