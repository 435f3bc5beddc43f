"""Ascend (Huawei CANN) front-end: the ``ROIPooling`` operator's layout and limits, and
``aclnnRoiAlignV2Backward``'s signature and constraints, on NumPy arrays.

Nothing here computes: each function checks the operator's documented constraints, converts
its layout and calls the same C kernels as :func:`pyroi.roi_pool` and
:func:`pyroi.roi_align_backward`. The numerics are the CPU reference semantics those kernels
implement (Caffe / torchvision); Ascend hardware computes in its own precision and was not
available to compare against.
"""

# May import: _core, _validate, _half.

from __future__ import annotations

import numpy as np

from pyroi import _core, _validate

__all__ = ["pack_rois", "roi_align_v2_backward", "roi_align_v2_backward_workspace_size",
           "roi_pooling"]


def roi_pooling(x, rois, roi_actual_num=None, *, pooled_h, pooled_w, spatial_scale=None,
                spatial_scale_h=0.0625, spatial_scale_w=0.0625, strict=True, num_threads=None,
                out=None):
    """Ascend ``ROIPooling``: Caffe Fast R-CNN RoI max pooling in Ascend's padded layout.

    Parameters
    ----------
    x : ndarray, shape (batch, C, H, W), float16, float32 or float64
        Feature maps (any strides).
    rois : ndarray, shape (batch, 5, N), dtype of ``x``
        RoIs per image, one per column, fields in Caffe's order ``batch_index, x1, y1, x2, y2``
        (input-image pixels). ``N`` is the largest per-image RoI count rounded up to a multiple
        of 16, at most 6000 (:func:`pack_rois` builds this layout). The ``batch_index`` field of
        every real column is used (it must be an integer in ``[0, batch)``); padding columns
        are never read.
    roi_actual_num : ndarray, shape (batch, 8), int32, optional
        Column 0 gives how many of the ``N`` columns of each image are real (the rest is
        padding); the other columns are ignored. None: all ``N`` are real.
    pooled_h, pooled_w : int
        Output bins per RoI, each in ``[2, 20]``.
    spatial_scale : float, optional
        Sets both scales when given.
    spatial_scale_h, spatial_scale_w : float, default 0.0625
        Factors from box to feature coordinates along y and x (finite, >= 0).
    strict : bool, default True
        Enforce the documented hardware limits (``pooled_h``, ``pooled_w`` in [2, 20];
        ``N`` a multiple of 16 and at most 6000; int32 ``roi_actual_num`` of 8 columns).
        ``False`` lifts them (any positive pooled size, any ``N``).
    num_threads : int, optional
        Threads for this call; results are identical for every value.
    out : ndarray, shape (batch * N, C, pooled_h, pooled_w), optional
        Array to write the result into.

    Returns
    -------
    ndarray, shape (batch * N, C, pooled_h, pooled_w), dtype of ``x``
        Row ``b * N + j`` pools column ``j`` of image ``b``; padding rows are 0.

    Notes
    -----
    Each real RoI is :func:`pyroi.roi_pool` with the separate scales: corners scaled and
    rounded half away from zero (end pixel included), bins ``floor``/``ceil`` of multiples of
    ``size / pooled``, maximum of each bin, empty bins 0 (docs/semantics.md §5.1). Ascend documents
    that the feature map should be non-negative and the RoIs clipped to the map, else results
    "may differ from CPU"; pyroi computes the CPU definition for any input.

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import ascend
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> rois, counts = ascend.pack_rois([np.array([[1, 1, 2, 2]], np.float32)])
    >>> y = ascend.roi_pooling(x, rois, counts, pooled_h=2, pooled_w=2, spatial_scale=1.0)
    >>> y.shape
    (16, 1, 2, 2)
    >>> y[0, 0]
    array([[ 5.,  6.],
           [ 9., 10.]], dtype=float32)
    """
    features = _validate.float_array(x, "x", 4)
    is_strict = _validate.flag(strict, "strict")
    pooled_height = _validate.ascend_pooled(pooled_h, "pooled_h", is_strict)
    pooled_width = _validate.ascend_pooled(pooled_w, "pooled_w", is_strict)
    scale_h, scale_w = _validate.ascend_scales(spatial_scale, spatial_scale_h, spatial_scale_w)
    threads = _validate.num_threads(num_threads)
    batch, channels = features.shape[0], features.shape[1]
    table = _validate._as_array(rois, "rois")
    if table.ndim != 3 or table.shape[0] != batch or table.shape[1] != 5:
        raise _validate.ShapeError(
            f"rois must have shape (batch, 5, N) = ({batch}, 5, N) "
            f"[batch_index, x1, y1, x2, y2 per column], got {table.shape}"
        )
    count = table.shape[2]
    _validate.ascend_roi_count(count, is_strict)
    counts = _validate.ascend_actual_counts(roi_actual_num, batch, count, is_strict)
    # the real columns of each image as (count, 5) rows; errors name rois[b] and the column
    per_image = [_validate.boxes(table[b, :, :counts[b]].T, features.dtype, batch,
                                 name=f"rois[{b}] (columns are RoIs)") for b in range(batch)]
    shape = (batch * count, channels, pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype,
                                    (x, rois, roi_actual_num, features, table))
    for b, (coords, roi_images) in enumerate(per_image):
        rows = result[b * count:(b + 1) * count]
        rows[counts[b]:] = 0
        if counts[b]:
            _core.roi_pool_forward(
                features, coords, roi_images, rows[:counts[b]], None, pooled_height,
                pooled_width, scale_h, scale_w, threads,
            )
    return result


def pack_rois(boxes, *, dtype=None, strict=True):
    """Builds Ascend ``ROIPooling``'s padded inputs from per-image boxes.

    Parameters
    ----------
    boxes : list of array_like, each (L_i, 4)
        ``[x1, y1, x2, y2]`` rows of image ``i`` (list position = image index).
    dtype : dtype, optional
        dtype of ``rois``: float16, float32 or float64 (default: the boxes' common float
        dtype, float32 for none).
    strict : bool, default True
        Raise if the padded count would exceed 6000 (the Ascend limit).

    Returns
    -------
    rois : ndarray, shape (batch, 5, N)
        Column ``j`` of image ``i`` is ``[i, x1, y1, x2, y2]`` for ``j < L_i``, zeros after;
        ``N`` is ``max L_i`` rounded up to a multiple of 16 (at least 16).
    roi_actual_num : ndarray, shape (batch, 8), int32
        ``L_i`` in column 0, zeros elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import ascend
    >>> rois, counts = ascend.pack_rois([np.zeros((3, 4)), np.zeros((20, 4))])
    >>> rois.shape, counts[:, 0].tolist()
    ((2, 5, 32), [3, 20])
    """
    if not isinstance(boxes, (list, tuple)):
        raise _validate.ArgumentTypeError(
            f"boxes must be a list of (L, 4) arrays (one per image), got {type(boxes).__name__}"
        )
    arrays = []
    for i, part in enumerate(boxes):
        array = _validate._as_array(part, f"boxes[{i}]")
        if array.ndim != 2 or array.shape[1] != 4:
            raise _validate.ShapeError(
                f"boxes[{i}] must have shape (L, 4) [x1, y1, x2, y2], got {array.shape}"
            )
        if array.dtype.kind not in "fiu":
            raise _validate.DTypeError(f"boxes[{i}] must be numeric, got dtype {array.dtype}")
        arrays.append(array)
    if dtype is None:
        floats = [a.dtype for a in arrays if a.dtype.kind == "f"]
        dtype = np.result_type(*floats) if floats else np.float32
    dtype = np.dtype(dtype)
    if dtype not in _validate.FLOAT_DTYPES + (np.dtype(np.float16),):
        raise _validate.DTypeError(f"dtype must be float16, float32 or float64, got {dtype}")
    largest = max((a.shape[0] for a in arrays), default=0)
    align = _validate.ASCEND_ROI_ALIGN
    count = max(align, -(-largest // align) * align)
    _validate.ascend_roi_count(count, _validate.flag(strict, "strict"), name="boxes")
    rois = np.zeros((len(arrays), 5, count), dtype=dtype)
    actual = np.zeros((len(arrays), 8), dtype=np.int32)
    for i, array in enumerate(arrays):
        rois[i, 0, :array.shape[0]] = i
        rois[i, 1:, :array.shape[0]] = array.T
        actual[i, 0] = array.shape[0]
    return rois, actual


def roi_align_v2_backward(grad_output, boxes, input_shape, pooled_height, pooled_width,
                          spatial_scale, sampling_ratio, aligned, *, workspace=None,
                          num_threads=None, out=None):
    """``aclnnRoiAlignV2Backward``: the input gradient of RoIAlign (average), with the Ascend
    API's arguments and documented constraints.

    Parameters
    ----------
    grad_output : ndarray, shape (K, C, pooled_height, pooled_width), float16, float32 or float64
        Gradient of the loss with respect to the RoIAlign output (NCHW).
    boxes : ndarray, shape (K, 5), dtype of ``grad_output``
        ``(image_id, x1, y1, x2, y2)`` per RoI. ``image_id`` is *floored* (1.7 -> image 1,
        unlike torchvision's truncation) and must lie in ``[0, B)``; coordinates must satisfy
        ``0 <= x1 <= x2 <= W / spatial_scale`` and ``0 <= y1 <= y2 <= H / spatial_scale``.
    input_shape : sequence of 4 ints
        ``(B, C, H, W)`` of the forward's input; ``C`` must equal ``grad_output.shape[1]``.
    pooled_height, pooled_width : int
        Must equal ``grad_output.shape[2:]``.
    spatial_scale : float
        ``> 0``. A C ``float`` in the Ascend API: rounded to float32 first.
    sampling_ratio : int
        ``>= 0``; 0 is adaptive (``ceil(roi_size / pooled_size)``).
    aligned : bool
        True shifts box corners by -0.5 pixel (RoIAlign V2); False is the legacy convention
        (sizes forced to >= 1).
    workspace : ndarray of uint8, 1-D, contiguous, optional
        Scratch memory for the call (the aclnn two-phase shape): size it with
        :func:`roi_align_v2_backward_workspace_size`. A smaller one still works if it holds
        the RoIs' tap tables (fewer workers; same results), else :class:`pyroi.PyroiMemoryError`.
        None: allocated here with the queried size.
    num_threads : int, optional
        Threads for this call.
    out : ndarray of shape ``input_shape``, optional
        Array to write the gradient into (overwritten).

    Returns
    -------
    ndarray of shape ``input_shape``, dtype of ``grad_output``

    Notes
    -----
    Each violated constraint raises an error naming it. The result equals
    :func:`pyroi.roi_align_backward` (torchvision's CPU autograd, bit for bit in float32) and is
    always deterministic: contributions reach every input pixel in the same order whatever the
    thread count (the Ascend documentation does not specify its numerics; unverified).

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import ascend
    >>> g = np.ones((1, 1, 2, 2), np.float32)
    >>> boxes = np.array([[0, 0, 0, 1, 1]], np.float32)
    >>> ascend.roi_align_v2_backward(g, boxes, (1, 1, 2, 2), 2, 2, 1.0, 2, True)[0, 0]
    array([[3.0625, 0.4375],
           [0.4375, 0.0625]], dtype=float32)
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape = _validate.shape4(input_shape, "input_shape")
    _validate.same_channels(shape, grad)
    pooled = (_validate.positive_int(pooled_height, "pooled_height"),
              _validate.positive_int(pooled_width, "pooled_width"))
    if pooled != tuple(grad.shape[2:]):
        raise _validate.ShapeError(
            f"pooled_height, pooled_width = {pooled} do not match grad_output of shape "
            f"{grad.shape}"
        )
    coords, roi_images, scale, ratio, is_aligned, threads = _v2_arguments(
        boxes, _validate.coordinate_dtype(grad.dtype), shape, spatial_scale, sampling_ratio,
        aligned, num_threads)
    if coords.shape[0] != grad.shape[0]:
        raise _validate.ShapeError(
            f"boxes has {coords.shape[0]} RoIs but grad_output has {grad.shape[0]} (K must match)"
        )
    result = _validate.output_array(out, shape, grad.dtype,
                                    (grad_output, boxes, grad, coords, roi_images))
    if grad.dtype == np.float16:  # the C float16 entry (same results), with its own scratch
        if workspace is not None:
            _validate.workspace_array(workspace, (grad_output, boxes, grad, coords, roi_images,
                                                  result))
        _core.roi_align_backward(grad, coords, roi_images, result, scale, scale, ratio,
                                 is_aligned, threads)
        return result
    if workspace is None:
        workspace = np.empty(_core.roi_align_backward_workspace_size(
            coords, roi_images, shape, pooled[0], pooled[1], scale, scale, ratio, is_aligned,
            threads), dtype=np.uint8)
    else:
        workspace = _validate.workspace_array(
            workspace, (grad_output, boxes, grad, coords, roi_images, result))
    _core.roi_align_backward_with_workspace(grad, coords, roi_images, result, scale, scale,
                                            ratio, is_aligned, threads, workspace)
    return result


def _v2_arguments(boxes, dtype, shape, spatial_scale, sampling_ratio, aligned, num_threads):
    scale = _validate.onnx_float_attribute(spatial_scale, "spatial_scale")
    if not scale > 0:
        raise _validate.InvalidArgumentError(f"spatial_scale must be > 0, got {spatial_scale!r}")
    ratio = _validate.non_negative_int(sampling_ratio, "sampling_ratio")
    if ratio > _validate.MAX_SAMPLING_RATIO:
        raise _validate.InvalidArgumentError(
            f"sampling_ratio must be at most {_validate.MAX_SAMPLING_RATIO}, got {ratio}"
        )
    is_aligned = _validate.flag(aligned, "aligned")
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.ascend_v2_boxes(boxes, dtype, shape, scale)
    return coords, roi_images, scale, ratio, is_aligned, threads


def roi_align_v2_backward_workspace_size(boxes, input_shape, pooled_height, pooled_width,
                                         spatial_scale, sampling_ratio, aligned, *,
                                         num_threads=None):
    """Bytes of workspace :func:`roi_align_v2_backward` uses with these arguments -- the first
    phase of the aclnn call (``aclnnRoiAlignV2BackwardGetWorkspaceSize``).

    Arguments and checks as :func:`roi_align_v2_backward` (``boxes`` fixes the dtype). The
    answer is ``pyroi_roi_align_backward_workspace_size_*`` of the C API: the RoIs' tap tables
    plus the scratch of the loop order and worker count the call will choose. A smaller
    workspace that still holds the tap tables works too (fewer workers, same results).

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import ascend
    >>> boxes = np.array([[0, 0, 0, 1, 1]], np.float32)
    >>> ascend.roi_align_v2_backward_workspace_size(boxes, (1, 1, 2, 2), 2, 2, 1.0, 2, True) > 0
    True
    """
    array = _validate._as_array(boxes, "boxes")
    if array.dtype == np.float16:  # a float16 call runs in float32 (see pyroi._half)
        array = array.astype(np.float32)
    dtype = array.dtype.newbyteorder("=")
    if dtype not in _validate.FLOAT_DTYPES:
        raise _validate.DTypeError(f"boxes must be float32 or float64, got dtype {array.dtype}")
    shape = _validate.shape4(input_shape, "input_shape")
    pooled = (_validate.positive_int(pooled_height, "pooled_height"),
              _validate.positive_int(pooled_width, "pooled_width"))
    coords, roi_images, scale, ratio, is_aligned, threads = _v2_arguments(
        array, dtype, shape, spatial_scale, sampling_ratio, aligned, num_threads)
    return int(_core.roi_align_backward_workspace_size(
        coords, roi_images, shape, pooled[0], pooled[1], scale, scale, ratio, is_aligned,
        threads))


# float16 (Ascend's native type): computed in float32, rounded once (_half.py)
from pyroi._half import float16_support as _float16_support  # noqa: E402

roi_pooling = _float16_support("x", boxes=("rois",))(roi_pooling)
roi_align_v2_backward = _float16_support("grad_output")(roi_align_v2_backward)
