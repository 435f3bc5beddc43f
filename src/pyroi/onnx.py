"""ONNX front-end: the ONNX ``RoiAlign`` and ``MaxRoiPool`` operators as onnxruntime computes
them, on NumPy arrays.

Nothing here computes: each function checks the operator's documented constraints, converts
the ONNX conventions (attributes, opset-dependent defaults, float32 attributes) and calls the
same C kernels as :func:`pyroi.roi_align` and :func:`pyroi.roi_pool` -- except
``mode="max"``, which onnxruntime defines as a different reduction (a maximum over weighted
bilinear taps) and has its own C kernel, ``pyroi_roi_align_onnx_max_forward_*``.

The ``onnx`` package is optional: it is imported only by :func:`run_node`.
"""

# May import: _core, _validate, _half (and the optional ``onnx`` package, lazily).

from __future__ import annotations

import numpy as np

from pyroi import _core, _validate

__all__ = ["max_roi_pool", "roi_align", "run_node"]


def roi_align(
    X,
    rois,
    batch_indices,
    *,
    mode="avg",
    output_height=1,
    output_width=1,
    sampling_ratio=0,
    spatial_scale=1.0,
    coordinate_transformation_mode=None,
    opset=16,
    num_threads=None,
    out=None,
):
    """ONNX ``RoiAlign`` (opsets 10, 16 and 22), exactly as onnxruntime 1.32 computes it.

    Parameters
    ----------
    X : ndarray, shape (N, C, H, W), float16, float32 or float64
        Feature maps (any strides).
    rois : ndarray, shape (K, 4), dtype of ``X``
        ``[x1, y1, x2, y2]`` per RoI in input-image pixels; finite.
    batch_indices : ndarray, shape (K,), int64
        Image of each RoI, in ``[0, N)`` (checked, as onnxruntime does).
    mode : {"avg", "max"}, default "avg"
        Compared case-insensitively (as onnxruntime). ``"avg"``: the mean of the bin's
        bilinear samples (RoIAlign). ``"max"``: onnxruntime's maximum over the *weighted
        taps* ``w_k * X[tap_k]`` of every sample (see Notes) -- not the maximum of the
        interpolated samples (that is ``pyroi.roi_align(mode="max")``, mmcv's definition).
    output_height, output_width : int, default 1
        Output bins per RoI (> 0).
    sampling_ratio : int, default 0
        Samples per bin along each axis; 0 means adaptive, ``ceil(roi_size / output_size)``.
        Negative values are an error (as in onnxruntime).
    spatial_scale : float, default 1.0
        Factor from box to feature coordinates. An ONNX FLOAT attribute: it is rounded to
        float32 first, also for float64 data (onnxruntime widens the float32 attribute, so
        ``0.3`` acts as ``float(np.float32(0.3))``; docs/semantics.md §9.1).
    coordinate_transformation_mode : {None, "half_pixel", "output_half_pixel"}, default None
        None means the attribute is absent: the opset's default ("half_pixel" from opset 16,
        no shift in RoiAlign-10). "half_pixel" shifts box corners by -0.5 pixel (torchvision
        ``aligned=True``); "output_half_pixel" does not shift and forces RoI sizes to >= 1
        (``aligned=False``). Any other string raises (onnxruntime silently treats it as
        "output_half_pixel"); giving it with ``opset < 16`` raises (RoiAlign-10 has no such
        attribute).
    opset : int, default 16
        The model's opset (>= 10): 10-15 select RoiAlign-10, 16-21 RoiAlign-16, 22 and
        later RoiAlign-22 (same numerics as 16). Re-stamping an opset-10 model as 16 without
        setting the mode changes its meaning (G16).
    num_threads : int, optional
        Threads for this call; results are identical for every value.
    out : ndarray (K, C, output_height, output_width), optional
        Array to write the result into.

    Returns
    -------
    ndarray, shape (K, C, output_height, output_width), dtype of ``X``

    Notes
    -----
    ``mode="avg"`` equals onnxruntime bit for bit in float32 and float64 on finite data (it is
    :func:`pyroi.roi_align` with ``aligned`` from the mode). ``mode="max"`` reproduces
    onnxruntime's reduction bit for bit: per sample ``v = M(M(M(t1, t2), t3), t4)`` with
    ``t_k = w_k * X[tap_k]`` and ``M(a, b) = b if a < b else a``; per bin the fold of ``M``
    over the samples in row-major order; no division; an empty bin is 0. Consequences
    (onnxruntime's, kept on purpose): a sample between four pixels gives about a quarter of
    their peak; with negative data a sample exactly on a pixel yields ``-0.0``, which beats
    every negative tap; a sample outside ``[-1, H] x [-1, W]`` contributes ``0 * X[b, c, 0, 0]``
    (NaN when that pixel is not finite).

    As in onnxruntime, a ``half_pixel`` RoI inverted on exactly one axis with adaptive sampling
    (a negative sample grid on one axis) is an error (:class:`pyroi.BoxError`; onnxruntime
    raises an integer-overflow error); inverted on both axes it pools 0.

    Differences from onnxruntime: unknown ``coordinate_transformation_mode`` strings raise;
    float64 and float32 are both accepted in every mode; in avg mode a sample outside the map
    contributes exactly 0 (onnxruntime adds ``0 * X[b, c, 0, 0]``, which differs only when
    that pixel is not finite).

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import onnx as ponnx
    >>> X = np.array([[[[1, 2], [3, 4]]]], np.float32)
    >>> rois = np.array([[0, 0, 1, 1]], np.float32)
    >>> b = np.zeros(1, np.int64)
    >>> ponnx.roi_align(X, rois, b, sampling_ratio=1,
    ...                 coordinate_transformation_mode="output_half_pixel")
    array([[[[2.5]]]], dtype=float32)
    >>> ponnx.roi_align(X, rois, b, mode="max", sampling_ratio=1,
    ...                 coordinate_transformation_mode="output_half_pixel")
    array([[[[1.]]]], dtype=float32)
    """
    features = _validate.float_array(X, "X", 4)
    is_max = _validate.onnx_mode(mode)
    pooled_height = _validate.positive_int(output_height, "output_height")
    pooled_width = _validate.positive_int(output_width, "output_width")
    ratio = _validate.non_negative_int(sampling_ratio, "sampling_ratio")
    if ratio > _validate.MAX_SAMPLING_RATIO:
        raise _validate.InvalidArgumentError(
            f"sampling_ratio must be at most {_validate.MAX_SAMPLING_RATIO}, got {ratio}"
        )
    scale = _validate.onnx_float_attribute(spatial_scale, "spatial_scale")
    version = _validate.onnx_opset(opset)
    aligned = _validate.onnx_aligned(coordinate_transformation_mode, version)
    threads = _validate.num_threads(num_threads)
    indices = _validate.int64_indices(batch_indices)
    coords, roi_images = _validate.boxes(
        rois, features.dtype, features.shape[0], indices, name="rois"
    )
    if aligned and ratio == 0:
        _validate.onnx_negative_grid(coords, scale, (pooled_height, pooled_width))
    shape = (coords.shape[0], features.shape[1], pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype,
                                    (X, rois, batch_indices, features, coords, roi_images))
    forward = _core.roi_align_onnx_max_forward if is_max else _core.roi_align_forward
    forward(
        features, coords, roi_images, result, pooled_height, pooled_width,
        scale, scale, ratio, aligned, threads,
    )
    return result


def max_roi_pool(X, rois, pooled_shape, spatial_scale=1.0, *, batch_indices=None,
                 num_threads=None, out=None):
    """ONNX ``MaxRoiPool`` (opset 1 / 22), as onnxruntime 1.32 computes it.

    Box corners are scaled, rounded half away from zero to whole pixels (end pixel
    included), and each of the ``pooled_shape`` bins takes the maximum of its pixels --
    :func:`pyroi.roi_pool` (Caffe Fast R-CNN / torchvision), which onnxruntime matches bit for
    bit.

    Parameters
    ----------
    X : ndarray, shape (N, C, H, W), float16, float32 or float64
        Feature maps. onnxruntime implements float32 only; float64 follows the same rule.
    rois : ndarray, shape (K, 5), dtype of ``X``
        ``[batch_index, x1, y1, x2, y2]`` rows (ONNX's layout); the batch index must be an
        integer in ``[0, N)``. With ``batch_indices`` given, ``(K, 4)`` coordinates.
    pooled_shape : (int, int)
        The required ``pooled_shape`` attribute ``[height, width]``.
    spatial_scale : float, default 1.0
        A FLOAT attribute: rounded to float32 first.
    batch_indices, num_threads, out
        As for :func:`pyroi.roi_pool`.

    Returns
    -------
    ndarray, shape (K, C, height, width), dtype of ``X``

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import onnx as ponnx
    >>> X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> ponnx.max_roi_pool(X, np.array([[0, 1, 1, 2, 2]], np.float32), (2, 2))[0, 0]
    array([[ 5.,  6.],
           [ 9., 10.]], dtype=float32)
    """
    features = _validate.float_array(X, "X", 4)
    pooled_height, pooled_width = _validate.int_pair(pooled_shape, "pooled_shape")
    scale = _validate.onnx_float_attribute(spatial_scale, "spatial_scale")
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(
        rois, features.dtype, features.shape[0], batch_indices, name="rois"
    )
    shape = (coords.shape[0], features.shape[1], pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype,
                                    (X, rois, batch_indices, features, coords, roi_images))
    _core.roi_pool_forward(
        features, coords, roi_images, result, None, pooled_height, pooled_width,
        scale, scale, threads,
    )
    return result


_ROI_ALIGN_ATTRIBUTES = {
    "mode", "output_height", "output_width", "sampling_ratio", "spatial_scale",
    "coordinate_transformation_mode",
}
_MAX_ROI_POOL_ATTRIBUTES = {"pooled_shape", "spatial_scale"}


def _node_attributes(node, allowed):
    from onnx import helper  # optional dependency, imported only here

    attributes = {}
    for attribute in node.attribute:
        if attribute.name not in allowed:
            raise _validate.InvalidArgumentError(
                f"{node.op_type} has no attribute {attribute.name!r}"
            )
        value = helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        attributes[attribute.name] = value
    return attributes


def run_node(node, X, rois, batch_indices=None, *, opset=16, num_threads=None):
    """Runs one ONNX ``RoiAlign`` or ``MaxRoiPool`` node on NumPy inputs.

    Parameters
    ----------
    node : onnx.NodeProto
        A node with ``op_type`` "RoiAlign" or "MaxRoiPool" (default domain); its attributes
        are read with :func:`onnx.helper.get_attribute_value` (attributes not in the
        operator's schema raise). Requires the ``onnx`` package.
    X, rois, batch_indices
        The node's inputs, in order (``MaxRoiPool`` has no ``batch_indices``).
    opset : int, default 16
        The opset of the model the node belongs to (RoiAlign's defaults depend on it).
    num_threads : int, optional
        Threads for this call.

    Returns
    -------
    ndarray
        The node's single output.

    Examples
    --------
    >>> import numpy as np, onnx
    >>> from pyroi import onnx as ponnx
    >>> node = onnx.helper.make_node("RoiAlign", ["X", "rois", "b"], ["Y"], sampling_ratio=1)
    >>> X = np.array([[[[1, 2], [3, 4]]]], np.float32)
    >>> ponnx.run_node(node, X, np.array([[0, 0, 1, 1]], np.float32), np.zeros(1, np.int64))
    array([[[[1.]]]], dtype=float32)
    """
    op_type = getattr(node, "op_type", None)
    if op_type is None:
        raise _validate.ArgumentTypeError(
            f"node must be an onnx.NodeProto, got {type(node).__name__}"
        )
    if node.domain not in ("", "ai.onnx"):
        raise _validate.InvalidArgumentError(
            f"node must be in the default ONNX domain, got domain {node.domain!r}"
        )
    if op_type == "RoiAlign":
        attributes = _node_attributes(node, _ROI_ALIGN_ATTRIBUTES)
        if batch_indices is None:
            raise _validate.InvalidArgumentError("RoiAlign needs batch_indices (its 3rd input)")
        return roi_align(X, rois, batch_indices, opset=opset, num_threads=num_threads,
                         **attributes)
    if op_type == "MaxRoiPool":
        attributes = _node_attributes(node, _MAX_ROI_POOL_ATTRIBUTES)
        if "pooled_shape" not in attributes:
            raise _validate.InvalidArgumentError("MaxRoiPool needs its pooled_shape attribute")
        if batch_indices is not None:
            raise _validate.InvalidArgumentError("MaxRoiPool has two inputs (X, rois)")
        return max_roi_pool(X, rois, attributes["pooled_shape"],
                            attributes.get("spatial_scale", 1.0), num_threads=num_threads)
    raise _validate.InvalidArgumentError(
        f'node.op_type must be "RoiAlign" or "MaxRoiPool", got {op_type!r}'
    )


# float16 (ONNX T1 includes tensor(float16)): computed in float32, rounded once (_half.py)
from pyroi._half import float16_support as _float16_support  # noqa: E402

roi_align = _float16_support("X", boxes=("rois",))(roi_align)
max_roi_pool = _float16_support("X", boxes=("rois",))(max_roi_pool)
