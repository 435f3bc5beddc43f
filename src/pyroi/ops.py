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


def roi_pool(
    input,
    boxes,
    output_size,
    spatial_scale=1.0,
    *,
    return_argmax=False,
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """RoIPool (quantised max pooling of Fast R-CNN), exactly as ``torchvision.ops.roi_pool``.

    Box corners are scaled and rounded to whole pixels (half away from zero; the end pixel
    is included, so a RoI spans ``round(x2*s) - round(x1*s) + 1 >= 1`` pixels). Output bin
    ``b`` of ``n`` along an axis covers pixels ``floor(b*size/n) .. ceil((b+1)*size/n) - 1``
    from the RoI start, clipped to the map (neighbouring bins may share a pixel), and holds
    their maximum. Same definition as Caffe's ROIPooling and ONNX ``MaxRoiPool``.

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W), float32 or float64
        Feature maps. Any strides (transposed, sliced, negative, broadcast) are read in place.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        ``[batch_index, x1, y1, x2, y2]`` rows in input-image pixels; or one ``(L_i, 4)``
        array of ``[x1, y1, x2, y2]`` per image (list position = batch index); or ``(K, 4)``
        coordinates with ``batch_indices``. Same dtype as ``input``. Batch indices must be
        integers in ``[0, N)``; coordinates finite, also after scaling.
    output_size : int or (int, int)
        Output bins ``(ph, pw)``; an int ``s`` means ``(s, s)``.
    spatial_scale : float, default 1.0
        Factor from box coordinates to feature coordinates (e.g. 1/16), finite and >= 0.
    return_argmax : bool, default False
        Also return, for every output element, the in-plane index ``h * W + w`` of the pixel
        it was taken from (-1 where nothing was), which :func:`roi_pool_backward` needs.
    batch_indices : ndarray (K,) of int, optional
        Image of each RoI when ``boxes`` is ``(K, 4)`` (ONNX style).
    num_threads : int, optional
        Threads for this call (default :func:`pyroi.get_num_threads`); results are
        identical for every value.
    out : ndarray (K, C, ph, pw), optional
        Array to write the pooled values into (any strides, not overlapping the inputs).

    Returns
    -------
    output : ndarray, shape (K, C, ph, pw), dtype of ``input``
    argmax : ndarray, shape (K, C, ph, pw), int64
        Only when ``return_argmax`` is true (torchvision computes it as int32).

    Notes
    -----
    Output and argmax equal torchvision 0.29's CPU kernel exactly, in float32 and float64,
    including its edge cases: a bin clipped away entirely is 0 with argmax -1; ties go to the
    first pixel in row-major order; NaN is never selected; a bin whose pixels are all NaN,
    ``-inf`` or at most ``-FLT_MAX`` is ``-FLT_MAX`` (-3.4028235e38, in float64 too) with
    argmax -1. Where torchvision's 32-bit integer arithmetic overflows (coordinates beyond
    about 2e9 pixels) pyroi stays defined: rounded coordinates are clamped to
    ``[-2**53, 2**53]``. Non-finite coordinates raise :class:`pyroi.BoxError`.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> pyroi.roi_pool(x, np.array([[0, 1, 1, 2, 2]], np.float32), 3)[0, 0]
    array([[ 5.,  6.,  6.],
           [ 9., 10., 10.],
           [ 9., 10., 10.]], dtype=float32)
    """
    features = _validate.float_array(input, "input", 4)
    pooled_height, pooled_width = _validate.output_size(output_size)
    scale = _validate.spatial_scale(spatial_scale)
    want_argmax = _validate.flag(return_argmax, "return_argmax")
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
    shape = (coords.shape[0], features.shape[1], pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype, (features, coords))
    argmax = np.empty(shape, dtype=np.int64) if want_argmax else None
    _core.roi_pool_forward(
        features, coords, roi_images, result, argmax, pooled_height, pooled_width,
        scale, scale, threads,
    )
    return (result, argmax) if want_argmax else result


def roi_pool_backward(
    grad_output,
    boxes,
    argmax,
    input_shape,
    output_size,
    spatial_scale=1.0,
    *,
    batch_indices=None,
    num_threads=None,
    out=None,
):
    """Gradient of :func:`roi_pool` with respect to its input.

    Every output element whose argmax is not -1 passes its gradient to the pixel it was
    taken from: ``grad_input[b, c].flat[argmax] += grad_output``. This equals the input
    gradient torchvision's autograd computes for ``roi_pool`` bit for bit (contributions are
    added per pixel in torchvision's order, whatever the thread count).

    Parameters
    ----------
    grad_output : ndarray, shape (K, C, ph, pw), float32 or float64
        Gradient of the loss with respect to the output of :func:`roi_pool`.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``); they supply the
        batch index of each RoI.
    argmax : ndarray (K, C, ph, pw) of int
        The argmax the forward returned (``return_argmax=True``); every entry -1 or in
        ``[0, H * W)``. torchvision's int32 argmax is accepted too.
    input_shape : sequence of 4 ints
        ``(N, C, H, W)`` of the forward's input; ``C`` must equal ``grad_output.shape[1]``.
    output_size : int or (int, int)
        As for :func:`roi_pool`; must equal ``grad_output.shape[2:]``.
    spatial_scale, batch_indices, num_threads
        As for :func:`roi_pool` (the scale is checked but not needed: argmax says it all).
    out : ndarray of shape ``input_shape``, optional
        Array to write the gradient into (it is overwritten, not accumulated).

    Returns
    -------
    ndarray of shape ``input_shape``, dtype of ``grad_output``

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> x = np.array([[[[1, 2, 5, 6], [3, 4, 7, 8], [9, 10, 13, 14], [11, 12, 15, 16]]]],
    ...              dtype=np.float64)
    >>> boxes = np.array([[0, 0, 0, 3, 3]], dtype=np.float64)
    >>> y, argmax = pyroi.roi_pool(x, boxes, 2, return_argmax=True)
    >>> pyroi.roi_pool_backward(np.ones_like(y), boxes, argmax, x.shape, 2)[0, 0]
    array([[0., 0., 0., 0.],
           [0., 1., 0., 1.],
           [0., 0., 0., 0.],
           [0., 1., 0., 1.]])
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape = _validate.shape4(input_shape, "input_shape")
    if shape[1] != grad.shape[1]:
        raise _validate.ShapeError(
            f"input_shape has {shape[1]} channels but grad_output has {grad.shape[1]}"
        )
    pooled = _validate.output_size(output_size)
    _validate.output_size_matches(pooled, grad.shape, "grad_output")
    scale = _validate.spatial_scale(spatial_scale)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, grad.dtype, shape[0], batch_indices)
    if coords.shape[0] != grad.shape[0]:
        raise _validate.ShapeError(
            f"boxes has {coords.shape[0]} RoIs but grad_output has {grad.shape[0]}"
        )
    # the C core checks every argmax entry before it writes anything (a full pass over
    # argmax, as long as the kernel's own): only when it refuses is the offender looked up
    winners = _validate.argmax_array(argmax, grad.shape, shape[2] * shape[3],
                                     check_values=False)
    result = _validate.output_array(out, shape, grad.dtype, (grad, coords, winners))
    try:
        _core.roi_pool_backward(grad, winners, roi_images, result, scale, scale, threads)
    except _validate.InvalidArgumentError:
        _validate.argmax_values(np.asarray(argmax), shape[2] * shape[3])
        raise
    return result


__all__ += ["roi_pool", "roi_pool_backward"]
