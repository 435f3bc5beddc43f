"""torchvision-compatible RoI operators on NumPy arrays."""

from __future__ import annotations

import numpy as np

from pyroi import _core, _validate

__all__ = ["roi_align", "roi_align_backward"]


def roi_align(
    input,
    boxes,
    output_size,
    spatial_scale=1.0,
    sampling_ratio=-1,
    aligned=False,
    *,
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """RoIAlign (average), exactly as ``torchvision.ops.roi_align``.

    Each output bin is the mean of ``grid_h x grid_w`` bilinear samples taken at the
    centres of a regular subdivision of the bin (Mask R-CNN's RoIAlign).

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W), float32 or float64
        Feature maps. Any strides (transposed, sliced, negative, broadcast) are read in place.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        ``[batch_index, x1, y1, x2, y2]`` rows in input-image pixels; or one ``(L_i, 4)``
        array of ``[x1, y1, x2, y2]`` per image (list position = batch index); or ``(K, 4)``
        coordinates with ``batch_indices``. Same dtype as ``input``. Batch indices must be
        integers in ``[0, N)``; coordinates finite.
    output_size : int or (int, int)
        Output bins ``(ph, pw)``; an int ``s`` means ``(s, s)``.
    spatial_scale : float, default 1.0
        Factor from box coordinates to feature coordinates (e.g. 1/16), finite and >= 0.
    sampling_ratio : int, default -1
        Samples per bin along each axis; ``<= 0`` means adaptive,
        ``ceil(roi_size / output_size)`` per axis.
    aligned : bool, default False
        True shifts box corners by -0.5 pixel (the correct alignment, detectron2's
        ROIAlignV2); False is the legacy Mask R-CNN convention (RoI sizes forced to >= 1).
    batch_indices : ndarray (K,) of int, optional
        Image of each RoI when ``boxes`` is ``(K, 4)`` (ONNX style).
    num_threads : int, optional
        Threads for this call (default :func:`pyroi.get_num_threads`); results are
        identical for every value.
    out : ndarray (K, C, ph, pw), optional
        Array to write the result into (any strides, not overlapping the inputs).

    Returns
    -------
    ndarray, shape (K, C, ph, pw), dtype of ``input``

    Notes
    -----
    float32 results equal torchvision 0.29's CPU kernel bit for bit on finite data. Where
    torchvision is undefined or raises, pyroi defines the result: a sample outside
    ``[-1, H] x [-1, W]`` contributes exactly nothing (torchvision adds ``0 * input[b,c,0,0]``,
    NaN when that pixel is not finite); an aligned box inverted on one axis with adaptive
    sampling gives zeros (torchvision raises). Non-finite box coordinates raise
    :class:`pyroi.BoxError` (torchvision 0.29 crashes).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> x = np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6)
    >>> pyroi.roi_align(x, [np.array([[0, 2, 2, 4]], np.float32)], 2)[0, 0]
    array([[15.5, 16.5],
           [21.5, 22.5]], dtype=float32)
    """
    features = _validate.float_array(input, "input", 4)
    pooled_height, pooled_width = _validate.output_size(output_size)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    is_aligned = _validate.flag(aligned, "aligned")
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
    shape = (coords.shape[0], features.shape[1], pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype, (features, coords))
    _core.roi_align_forward(
        features, coords, roi_images, result, pooled_height, pooled_width,
        scale, scale, ratio, is_aligned, threads,
    )
    return result


def roi_align_backward(
    grad_output,
    boxes,
    input_shape,
    spatial_scale=1.0,
    sampling_ratio=-1,
    aligned=False,
    *,
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """Gradient of :func:`roi_align` with respect to its input.

    Equals the input gradient torchvision's autograd computes for ``roi_align`` (bit for bit
    in float32 on finite data: contributions are added per input pixel in torchvision's
    order, whatever the thread count).

    Parameters
    ----------
    grad_output : ndarray, shape (K, C, ph, pw), float32 or float64
        Gradient of the loss with respect to the output of :func:`roi_align`; its last two
        dimensions give the output size.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``).
    input_shape : sequence of 4 ints
        ``(N, C, H, W)`` of the forward's input; ``C`` must equal ``grad_output.shape[1]``.
    spatial_scale, sampling_ratio, aligned, batch_indices, num_threads
        As for :func:`roi_align`.
    out : ndarray of shape ``input_shape``, optional
        Array to write the gradient into (it is overwritten, not accumulated).

    Returns
    -------
    ndarray of shape ``input_shape``, dtype of ``grad_output``

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> g = np.ones((1, 1, 2, 2))
    >>> boxes = np.array([[0, 0, 0, 1, 1]], dtype=np.float64)
    >>> pyroi.roi_align_backward(g, boxes, (1, 1, 2, 2), sampling_ratio=2, aligned=True)[0, 0]
    array([[3.0625, 0.4375],
           [0.4375, 0.0625]])
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape = _validate.shape4(input_shape, "input_shape")
    if shape[1] != grad.shape[1]:
        raise _validate.ShapeError(
            f"input_shape has {shape[1]} channels but grad_output has {grad.shape[1]}"
        )
    if grad.shape[2] <= 0 or grad.shape[3] <= 0:
        raise _validate.InvalidArgumentError(
            f"grad_output must have a positive output size, got shape {grad.shape}"
        )
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    is_aligned = _validate.flag(aligned, "aligned")
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, grad.dtype, shape[0], batch_indices)
    if coords.shape[0] != grad.shape[0]:
        raise _validate.ShapeError(
            f"boxes has {coords.shape[0]} RoIs but grad_output has {grad.shape[0]}"
        )
    result = _validate.output_array(out, shape, grad.dtype, (grad, coords))
    _core.roi_align_backward(
        grad, coords, roi_images, result, scale, scale, ratio, is_aligned, threads
    )
    return result


__all__ += ["roi_align_rotated", "roi_align_rotated_backward"]


def roi_align_rotated(
    input,
    rois,
    output_size,
    spatial_scale=1.0,
    sampling_ratio=0,
    aligned=True,
    clockwise=False,
    *,
    angle="degrees",
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """Rotated RoIAlign (average), as detectron2's ``ROIAlignRotated`` (the defaults) and
    mmcv's ``roi_align_rotated`` (``angle="radians"``).

    A rotated RoI ``(cx, cy, w, h, angle)`` is a ``w x h`` rectangle centred on ``(cx, cy)``
    (input-image pixels) turned by ``angle`` about its centre, counter-clockwise as seen in
    the image (detectron2's convention). It is divided into ``output_size`` bins in its own
    frame; each output bin is the mean of ``grid_h x grid_w`` bilinear samples at the centres
    of a regular subdivision of the bin, rotated into the feature map.

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W), float32 or float64
        Feature maps. Any strides (transposed, sliced, negative, broadcast) are read in place.
    rois : ndarray (K, 6), list of ndarray (L_i, 5), or ndarray (K, 5)
        ``[batch_index, cx, cy, w, h, angle]`` rows; or one ``(L_i, 5)`` array of
        ``[cx, cy, w, h, angle]`` per image (list position = batch index); or ``(K, 5)``
        coordinates with ``batch_indices``. Same dtype as ``input``. Batch indices must be
        integers in ``[0, N)``; coordinates finite.
    output_size : int or (int, int)
        Output bins ``(ph, pw)`` along the RoI's height and width; an int ``s`` means
        ``(s, s)``.
    spatial_scale : float, default 1.0
        Factor from box coordinates to feature coordinates (e.g. 1/16), finite and >= 0.
        Scales the centre and the size.
    sampling_ratio : int, default 0
        Samples per bin along each axis; ``<= 0`` means adaptive,
        ``ceil(roi_size / output_size)`` per axis.
    aligned : bool, default True
        True shifts the centre by -0.5 pixel (detectron2, always; mmcv's default). False is
        mmcv's legacy mode: no shift, and sizes below 1 pixel widened to 1.
    clockwise : bool, default False
        True turns the RoI by ``-angle`` (mmcv's ``clockwise=True``).
    angle : {"degrees", "radians"}, default "degrees"
        Unit of the angle column: degrees as detectron2, radians as mmcv.
    batch_indices : ndarray (K,) of int, optional
        Image of each RoI when ``rois`` is ``(K, 5)``.
    num_threads : int, optional
        Threads for this call (default :func:`pyroi.get_num_threads`); results are
        identical for every value.
    out : ndarray (K, C, ph, pw), optional
        Array to write the result into (any strides, not overlapping the inputs).

    Returns
    -------
    ndarray, shape (K, C, ph, pw), dtype of ``input``

    Notes
    -----
    The arithmetic is detectron2's / mmcv's CPU kernel, operation by operation, with the angle
    converted as ``angle * pi / 180`` in float64 and ``cos``/``sin`` evaluated in float64 and
    rounded to the input's dtype (whether the peers' float32 kernels use ``cosf``/``sinf``
    instead is unverified: the last bit of the results may differ there). Neither peer was
    available to compare against. Where they are undefined pyroi defines the result: a sample
    outside ``[-1, H] x [-1, W]`` contributes nothing (the peers add ``0 * input[b,c,0,0]``,
    NaN when that pixel is not finite); with ``aligned=True`` a negative width or height,
    which the peers reject with an assertion, has no samples along that axis when
    ``sampling_ratio <= 0`` (zeros) and samples the mirrored box otherwise, as
    :func:`pyroi.roi_align` does for inverted boxes. The peers take ``spatial_scale`` as a
    float32: in float64, pass ``float(np.float32(scale))`` to reproduce them exactly.

    With ``angle == 0`` the result equals :func:`pyroi.roi_align` with the same ``aligned``
    and ``sampling_ratio`` on the box ``[cx - w/2, cy - h/2, cx + w/2, cy + h/2]`` up to
    rounding (bit for bit when the coordinates are exact binary fractions), except that the
    legacy widening of sizes below 1 keeps the centre here and the first corner there.

    Samples outside the map are skipped by bisection, so the cost of a huge box grows with
    the part of it that overlaps the map and, for a turned box, linearly with its side (a
    ``1e6 x 1e6`` box at 45 degrees takes tens of milliseconds); an adaptive grid of more than
    ``2**31 - 1`` samples per bin along an axis raises :class:`pyroi.BoxError`.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    >>> rois = np.array([[0, 2, 2, 2, 2, 0]], dtype=np.float32)  # a 2x2 box at (2, 2)
    >>> pyroi.roi_align_rotated(x, rois, 2)[0, 0]
    array([[ 6.,  7.],
           [11., 12.]], dtype=float32)
    >>> pyroi.roi_align_rotated(x, rois, 2, sampling_ratio=1, angle="radians",
    ...                         clockwise=True)[0, 0]
    array([[ 6.,  7.],
           [11., 12.]], dtype=float32)
    """
    features = _validate.float_array(input, "input", 4)
    pooled_height, pooled_width = _validate.output_size(output_size)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    is_aligned = _validate.flag(aligned, "aligned")
    is_clockwise = _validate.flag(clockwise, "clockwise")
    in_degrees = _validate.angle_unit(angle)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(rois, features.dtype, features.shape[0], batch_indices,
                                         name="rois", coords_per_box=5)
    shape = (coords.shape[0], features.shape[1], pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype, (features, coords))
    _core.roi_align_rotated_forward(
        features, coords, roi_images, result, pooled_height, pooled_width,
        scale, scale, ratio, is_aligned, is_clockwise, in_degrees, threads,
    )
    return result


def roi_align_rotated_backward(
    grad_output,
    rois,
    input_shape,
    spatial_scale=1.0,
    sampling_ratio=0,
    aligned=True,
    clockwise=False,
    *,
    angle="degrees",
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """Gradient of :func:`roi_align_rotated` with respect to its input.

    Each sample that lands in the map adds ``(g * w) / (grid_h * grid_w)`` to each of its
    four bilinear taps, per input pixel in the order of detectron2's / mmcv's CPU backward
    (RoI, bin, sample, tap), whatever the thread count.

    Parameters
    ----------
    grad_output : ndarray, shape (K, C, ph, pw), float32 or float64
        Gradient of the loss with respect to the output of :func:`roi_align_rotated`; its
        last two dimensions give the output size.
    rois : ndarray (K, 6), list of ndarray (L_i, 5), or ndarray (K, 5)
        The RoIs given to the forward (same dtype as ``grad_output``).
    input_shape : sequence of 4 ints
        ``(N, C, H, W)`` of the forward's input; ``C`` must equal ``grad_output.shape[1]``.
    spatial_scale, sampling_ratio, aligned, clockwise, angle, batch_indices, num_threads
        As for :func:`roi_align_rotated`.
    out : ndarray of shape ``input_shape``, optional
        Array to write the gradient into (it is overwritten, not accumulated).

    Returns
    -------
    ndarray of shape ``input_shape``, dtype of ``grad_output``

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> g = np.ones((1, 1, 1, 1))
    >>> rois = np.array([[0, 1.5, 1.5, 1, 1, 0]])  # the centre of pixel (1, 1)
    >>> pyroi.roi_align_rotated_backward(g, rois, (1, 1, 3, 3), sampling_ratio=1)[0, 0]
    array([[0., 0., 0.],
           [0., 1., 0.],
           [0., 0., 0.]])
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape = _validate.shape4(input_shape, "input_shape")
    if shape[1] != grad.shape[1]:
        raise _validate.ShapeError(
            f"input_shape has {shape[1]} channels but grad_output has {grad.shape[1]}"
        )
    if grad.shape[2] <= 0 or grad.shape[3] <= 0:
        raise _validate.InvalidArgumentError(
            f"grad_output must have a positive output size, got shape {grad.shape}"
        )
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    is_aligned = _validate.flag(aligned, "aligned")
    is_clockwise = _validate.flag(clockwise, "clockwise")
    in_degrees = _validate.angle_unit(angle)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(rois, grad.dtype, shape[0], batch_indices,
                                         name="rois", coords_per_box=5)
    if coords.shape[0] != grad.shape[0]:
        raise _validate.ShapeError(
            f"rois has {coords.shape[0]} RoIs but grad_output has {grad.shape[0]}"
        )
    result = _validate.output_array(out, shape, grad.dtype, (grad, coords))
    _core.roi_align_rotated_backward(
        grad, coords, roi_images, result, scale, scale, ratio, is_aligned, is_clockwise,
        in_degrees, threads,
    )
    return result
