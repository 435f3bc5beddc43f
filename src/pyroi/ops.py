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


# ------------------------------------------------------------------------------------------
# position-sensitive RoIAlign and RoIPool (R-FCN, Light-Head R-CNN)

__all__ += ["ps_roi_align", "ps_roi_align_backward", "ps_roi_pool", "ps_roi_pool_backward"]


def _ps_backward_shape(grad, input_shape):
    """(input shape, (ph, pw)) of a position-sensitive backward, checked against grad_output."""
    shape = _validate.shape4(input_shape, "input_shape")
    pooled = grad.shape[2:]
    if pooled[0] <= 0 or pooled[1] <= 0:
        raise _validate.InvalidArgumentError(
            f"grad_output must have a positive output size, got shape {grad.shape}"
        )
    _validate.ps_output_channels(shape[1], pooled, "input_shape")
    if shape[1] != grad.shape[1] * pooled[0] * pooled[1]:
        raise _validate.ShapeError(
            f"input_shape has {shape[1]} channels but grad_output of shape {grad.shape} needs "
            f"{grad.shape[1]} * {pooled[0]} * {pooled[1]} = "
            f"{grad.shape[1] * pooled[0] * pooled[1]}"
        )
    return shape, pooled


def ps_roi_align(
    input,
    boxes,
    output_size,
    spatial_scale=1.0,
    sampling_ratio=-1,
    *,
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """Position-sensitive RoIAlign (Light-Head R-CNN), as ``torchvision.ops.ps_roi_align``.

    The input's ``C`` channels form ``C / (ph * pw)`` groups of ``ph * pw``: output bin
    ``(i, j)`` of output channel ``c`` is the mean of bilinear samples of input channel
    ``(c * ph + i) * pw + j`` only. Sampling is RoIAlign's with ``aligned=True`` (box corners
    shifted by -0.5 pixel, no minimum RoI size).

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W), float32 or float64
        Feature maps, ``C`` a multiple of ``ph * pw``. Any strides are read in place.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        As for :func:`roi_align`: ``[batch_index, x1, y1, x2, y2]`` rows, one ``(L_i, 4)``
        array per image, or ``(K, 4)`` coordinates with ``batch_indices``; same dtype as
        ``input``.
    output_size : int or (int, int)
        Output bins ``(ph, pw)``; an int ``s`` means ``(s, s)``.
    spatial_scale : float, default 1.0
        Factor from box coordinates to feature coordinates, finite and >= 0.
    sampling_ratio : int, default -1
        Samples per bin along each axis; ``<= 0`` means adaptive,
        ``ceil(roi_size / output_size)`` per axis.
    batch_indices : ndarray (K,) of int, optional
        Image of each RoI when ``boxes`` is ``(K, 4)``.
    num_threads : int, optional
        Threads for this call (default :func:`pyroi.get_num_threads`); results are
        identical for every value.
    out : ndarray (K, C / (ph * pw), ph, pw), optional
        Array to write the result into (any strides, not overlapping the inputs).

    Returns
    -------
    ndarray, shape (K, C / (ph * pw), ph, pw), dtype of ``input``

    Notes
    -----
    Results equal torchvision 0.29's CPU kernel bit for bit on finite data, with one
    deliberate difference: where torchvision's sample count ``grid_h * grid_w`` is not
    positive - adaptive sampling of a box of zero size, or of a box inverted on exactly one
    axis - torchvision divides an empty sum by it and returns NaN (count 0) or -0.0
    (negative count); pyroi returns +0.0, as both do for a box inverted on both axes. With
    a fixed ``sampling_ratio`` an inverted box is a mirrored crop, as in torchvision.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> x = np.arange(100, dtype=np.float32).reshape(1, 4, 5, 5)
    >>> pyroi.ps_roi_align(x, np.array([[0, 1, 1, 4, 4]], np.float32), 2, sampling_ratio=2)
    array([[[[ 7.5, 34. ],
             [65. , 91.5]]]], dtype=float32)
    """
    features = _validate.float_array(input, "input", 4)
    pooled_height, pooled_width = _validate.output_size(output_size)
    channels_out = _validate.ps_output_channels(features.shape[1], (pooled_height, pooled_width))
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
    shape = (coords.shape[0], channels_out, pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype, (features, coords))
    _core.ps_roi_align_forward(
        features, coords, roi_images, result, pooled_height, pooled_width, scale, scale, ratio,
        threads,
    )
    return result


def ps_roi_align_backward(
    grad_output,
    boxes,
    input_shape,
    spatial_scale=1.0,
    sampling_ratio=-1,
    *,
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """Gradient of :func:`ps_roi_align` with respect to its input.

    Equals the input gradient torchvision's autograd computes for ``ps_roi_align`` (bit for
    bit in float32 on finite data, whatever the thread count), and is the exact adjoint of
    :func:`ps_roi_align`.

    Parameters
    ----------
    grad_output : ndarray, shape (K, C / (ph * pw), ph, pw), float32 or float64
        Gradient of the loss with respect to the output of :func:`ps_roi_align`; its last two
        dimensions give the output size.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``).
    input_shape : sequence of 4 ints
        ``(N, C, H, W)`` of the forward's input; ``C`` must equal
        ``grad_output.shape[1] * ph * pw``.
    spatial_scale, sampling_ratio, batch_indices, num_threads
        As for :func:`ps_roi_align`.
    out : ndarray of shape ``input_shape``, optional
        Array to write the gradient into (it is overwritten, not accumulated).

    Returns
    -------
    ndarray of shape ``input_shape``, dtype of ``grad_output``

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> g = np.ones((1, 1, 1, 1))
    >>> boxes = np.array([[0, 0.5, 0.5, 1.5, 1.5]])
    >>> pyroi.ps_roi_align_backward(g, boxes, (1, 1, 2, 2), sampling_ratio=1)[0, 0]
    array([[0.25, 0.25],
           [0.25, 0.25]])
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape, _ = _ps_backward_shape(grad, input_shape)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, grad.dtype, shape[0], batch_indices)
    if coords.shape[0] != grad.shape[0]:
        raise _validate.ShapeError(
            f"boxes has {coords.shape[0]} RoIs but grad_output has {grad.shape[0]}"
        )
    result = _validate.output_array(out, shape, grad.dtype, (grad, coords))
    _core.ps_roi_align_backward(grad, coords, roi_images, result, scale, scale, ratio, threads)
    return result


def ps_roi_pool(
    input,
    boxes,
    output_size,
    spatial_scale=1.0,
    *,
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """Position-sensitive RoIPool (R-FCN), as ``torchvision.ops.ps_roi_pool``.

    Box corners are scaled and rounded half away from zero to whole pixels; the RoI size is
    ``max(end - start, 1)`` (no ``+ 1``, unlike torchvision's ``roi_pool``); bin
    ``(i, j)`` covers rows ``floor(i * bin_h) ... ceil((i + 1) * bin_h)`` from the RoI start
    (columns alike) and averages input channel ``(c * ph + i) * pw + j`` over them; an empty
    bin gives 0.

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W), float32 or float64
        Feature maps, ``C`` a multiple of ``ph * pw``. Any strides are read in place.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        As for :func:`ps_roi_align`.
    output_size : int or (int, int)
        Output bins ``(ph, pw)``; an int ``s`` means ``(s, s)``.
    spatial_scale : float, default 1.0
        Factor from box coordinates to feature coordinates, finite and >= 0.
    batch_indices, num_threads
        As for :func:`ps_roi_align`.
    out : ndarray (K, C / (ph * pw), ph, pw), optional
        Array to write the result into (any strides, not overlapping the inputs).

    Returns
    -------
    ndarray, shape (K, C / (ph * pw), ph, pw), dtype of ``input``

    Notes
    -----
    Results equal torchvision 0.29's CPU kernel bit for bit, including its quirk that bin
    windows are clamped to rows ``0 ... H - 1`` and columns ``0 ... W - 1`` as half-open
    ranges, so the last row and column of the map are never read (SEMANTICS.md 6.2).
    Rounded coordinates saturate at +-2**61 pixels (torchvision overflows past 2**31); a
    coordinate that is not finite after scaling raises :class:`pyroi.BoxError`.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> x = np.arange(100, dtype=np.float32).reshape(1, 4, 5, 5)
    >>> pyroi.ps_roi_pool(x, np.array([[0, 0, 0, 5, 5]], np.float32), 2)
    array([[[[ 6. , 32.5],
             [63.5, 90. ]]]], dtype=float32)
    """
    features = _validate.float_array(input, "input", 4)
    pooled_height, pooled_width = _validate.output_size(output_size)
    channels_out = _validate.ps_output_channels(features.shape[1], (pooled_height, pooled_width))
    scale = _validate.spatial_scale(spatial_scale)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
    shape = (coords.shape[0], channels_out, pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype, (features, coords))
    _core.ps_roi_pool_forward(
        features, coords, roi_images, result, pooled_height, pooled_width, scale, scale, threads
    )
    return result


def ps_roi_pool_backward(
    grad_output,
    boxes,
    input_shape,
    spatial_scale=1.0,
    *,
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """The input gradient torchvision's autograd computes for ``ps_roi_pool``.

    Each bin spreads ``grad / area`` evenly over its window. This reproduces torchvision's
    backward exactly (bit for bit, whatever the thread count), which is NOT the adjoint of
    its forward at the map's far border: the backward clamps windows to rows ``0 ... H``
    and columns ``0 ... W`` (the forward to ``H - 1`` and ``W - 1``), and rounds box corners
    with float32 ``roundf`` even for float64 data (SEMANTICS.md 6.2).

    Parameters
    ----------
    grad_output : ndarray, shape (K, C / (ph * pw), ph, pw), float32 or float64
        Gradient of the loss with respect to the output of :func:`ps_roi_pool`; its last two
        dimensions give the output size.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``).
    input_shape : sequence of 4 ints
        ``(N, C, H, W)`` of the forward's input; ``C`` must equal
        ``grad_output.shape[1] * ph * pw``.
    spatial_scale, batch_indices, num_threads
        As for :func:`ps_roi_pool`.
    out : ndarray of shape ``input_shape``, optional
        Array to write the gradient into (it is overwritten, not accumulated).

    Returns
    -------
    ndarray of shape ``input_shape``, dtype of ``grad_output``

    Examples
    --------
    The last bin's window is rows and columns 2..3 in the forward but 2..4 here:

    >>> import numpy as np, pyroi
    >>> g = np.array([[[[0, 0], [0, 9]]]], np.float32)
    >>> boxes = np.array([[0, 0, 0, 5, 5]], np.float32)
    >>> pyroi.ps_roi_pool_backward(g, boxes, (1, 4, 5, 5))[0, 3]
    array([[0., 0., 0., 0., 0.],
           [0., 0., 0., 0., 0.],
           [0., 0., 1., 1., 1.],
           [0., 0., 1., 1., 1.],
           [0., 0., 1., 1., 1.]], dtype=float32)
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape, _ = _ps_backward_shape(grad, input_shape)
    scale = _validate.spatial_scale(spatial_scale)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, grad.dtype, shape[0], batch_indices)
    if coords.shape[0] != grad.shape[0]:
        raise _validate.ShapeError(
            f"boxes has {coords.shape[0]} RoIs but grad_output has {grad.shape[0]}"
        )
    result = _validate.output_array(out, shape, grad.dtype, (grad, coords))
    _core.ps_roi_pool_backward(grad, coords, roi_images, result, scale, scale, threads)
    return result
