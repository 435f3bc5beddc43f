"""ONNX front-end: the ONNX ``RoiAlign`` and ``MaxRoiPool`` operators as onnxruntime computes
them, on NumPy arrays, and as trainable layers (:class:`RoiAlign`, :class:`MaxRoiPool`).

Nothing here computes: each function checks the operator's documented constraints, converts
the ONNX conventions (attributes, opset-dependent defaults, float32 attributes) and calls the
same C kernels as :func:`pyroi.roi_align` and :func:`pyroi.roi_pool` -- except
``mode="max"``, which onnxruntime defines as a different reduction (a maximum over weighted
bilinear taps) and has its own C kernels, ``pyroi_roi_align_onnx_max_forward*`` and the
gradient ``pyroi_roi_align_onnx_max_backward_*``.

The ``onnx`` package is optional: it is imported only by :func:`run_node`, ``from_node`` and
``to_node``.
"""

# May import: _core, _validate, _half, ops, layers (its layers share their training state)
# (and the optional ``onnx`` package, lazily).

from __future__ import annotations

import pathlib

from pyroi import _validate
from pyroi.layers import _RoILayer
from pyroi.ops import (_max_mode_argmax, _roi_align_backward_run, _roi_align_run,
                       _roi_pool_run, roi_pool_backward)
from pyroi.ops import crop_and_resize as _crop_and_resize
from pyroi.ops import deform_roi_pool as _deform_roi_pool
from pyroi.ops import prroi_pool as _prroi_pool

__all__ = ["MaxRoiPool", "RoiAlign", "crop_and_resize", "custom_ops_library", "max_roi_pool",
           "rewrite_model", "roi_align", "roi_align_backward", "run_node"]


def roi_align(X, rois, batch_indices, *, mode="avg", output_height=1, output_width=1,
              sampling_ratio=0, spatial_scale=1.0, coordinate_transformation_mode=None,
              opset=16, return_argmax=False, num_threads=None, out=None):
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
    return_argmax : bool, default False
        With ``mode="max"``: also return each output's winner, what
        :func:`roi_align_backward` needs -- the code ``4 * s + t`` of the term the output
        took (tap ``t`` in 0..3 of sample ``s = iy * grid_w + ix`` of its bin; -1 for a bin
        without samples). The output is the same bits.
    num_threads : int, optional
        Threads for this call; results are identical for every value.
    out : ndarray (K, C, output_height, output_width), optional
        Array to write the result into.

    Returns
    -------
    ndarray, shape (K, C, output_height, output_width), dtype of ``X``
        With ``return_argmax=True``, a pair ``(output, argmax)``, argmax int64 of that shape.

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
    ratio, scale, aligned = _sampling_attributes(
        sampling_ratio, spatial_scale, coordinate_transformation_mode, opset)
    wants_argmax = _validate.flag(return_argmax, "return_argmax")
    if wants_argmax and not is_max:
        raise _validate.InvalidArgumentError('return_argmax=True needs mode="max"')
    threads = _validate.num_threads(num_threads)
    indices = _validate.int64_indices(batch_indices)
    coords, roi_images = _validate.boxes(
        rois, features.dtype, features.shape[0], indices, name="rois"
    )
    if aligned and ratio == 0:
        _validate.onnx_negative_grid(coords, scale, (pooled_height, pooled_width))
    return _roi_align_run(features, coords, roi_images, (pooled_height, pooled_width), scale,
                          ratio, aligned, is_max, wants_argmax, threads, out,
                          (X, rois, batch_indices), onnx=True)


def _sampling_attributes(sampling_ratio, spatial_scale, coordinate_transformation_mode, opset):
    """RoiAlign's sampling attributes as the kernels take them: (ratio, scale, aligned)."""
    ratio = _validate.non_negative_int(sampling_ratio, "sampling_ratio")
    if ratio > _validate.MAX_SAMPLING_RATIO:
        raise _validate.InvalidArgumentError(
            f"sampling_ratio must be at most {_validate.MAX_SAMPLING_RATIO}, got {ratio}"
        )
    scale = _validate.onnx_float_attribute(spatial_scale, "spatial_scale")
    aligned = _validate.onnx_aligned(coordinate_transformation_mode, _validate.onnx_opset(opset))
    return ratio, scale, aligned


def roi_align_backward(grad_output, rois, batch_indices, input_shape, *, mode="avg",
                       argmax=None, sampling_ratio=0, spatial_scale=1.0,
                       coordinate_transformation_mode=None, opset=16, num_threads=None,
                       out=None):
    """Gradient of :func:`roi_align` with respect to ``X``.

    Parameters
    ----------
    grad_output : ndarray, shape (K, C, output_height, output_width), float32 or float64
        Gradient of the loss with respect to the forward's output; its last two dimensions
        are the output size.
    rois, batch_indices
        The forward's (``rois`` of ``grad_output``'s dtype).
    input_shape : sequence of 4 ints
        ``(N, C, H, W)`` of the forward's ``X``; ``C`` must equal ``grad_output.shape[1]``.
    mode : {"avg", "max"}, default "avg"
        ``"avg"``: each output's gradient is spread over its samples' four taps,
        ``g * w / count`` -- torchvision's ``roi_align`` autograd bit for bit
        (``"half_pixel"`` is ``aligned=True``, ``"output_half_pixel"`` and RoiAlign-10
        ``aligned=False``). ``"max"``: each output's gradient goes to its winning tap only,
        ``g * w`` (see Notes).
    argmax : ndarray of int, shape of ``grad_output``
        Required with ``mode="max"``: what ``roi_align(..., mode="max", return_argmax=True)``
        returned. Each entry must be -1 or a code of its bin (:class:`pyroi.InvalidArgumentError`
        otherwise).
    sampling_ratio, spatial_scale, coordinate_transformation_mode, opset, num_threads
        As for :func:`roi_align`.
    out : ndarray of shape ``input_shape``, optional
        Array to write the gradient into (overwritten, not accumulated).

    Returns
    -------
    ndarray of shape ``input_shape``, dtype of ``grad_output``

    Notes
    -----
    Max mode is the derivative of onnxruntime's reduction as :func:`roi_align` computes it:
    the output equals one term ``w_t * X[tap_t]``, whose derivative is ``w_t`` at that pixel
    and 0 elsewhere. Which term is the one the fold ``M(a, b) = b if a < b else a`` kept:

    - ties: the first in fold order (taps of a sample in order, samples row-major; ``+0.0``
      and ``-0.0`` tie), so the ``-0.0`` of a weight-0 tap that beats negative taps sends
      ``g * 0`` to that tap's pixel;
    - NaN: a NaN that starts a fold (a sample's first tap, a bin's first sample) is kept and
      receives the gradient; a NaN met later never wins;
    - out-of-map samples: their term is ``0 * X[b, c, 0, 0]``, so a winning one sends
      ``g * 0`` to pixel ``(0, 0)`` (nothing for finite ``g``; NaN when ``g`` is not finite).

    Contributions are added per pixel in order (RoI, bin), whatever the thread count: results
    are identical for every ``num_threads``.

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import onnx as ponnx
    >>> X = np.array([[[[1, 2], [3, 4]]]], np.float64)
    >>> rois, b = np.array([[0, 0, 1, 1]], np.float64), np.zeros(1, np.int64)
    >>> attributes = dict(mode="max", sampling_ratio=1,
    ...                   coordinate_transformation_mode="output_half_pixel")
    >>> y, winners = ponnx.roi_align(X, rois, b, return_argmax=True, **attributes)
    >>> y, winners  # 0.25 * 4: tap 3 of sample 0
    (array([[[[1.]]]]), array([[[[3]]]]))
    >>> ponnx.roi_align_backward(np.ones_like(y), rois, b, X.shape, argmax=winners,
    ...                          **attributes)[0, 0]
    array([[0.  , 0.  ],
           [0.  , 0.25]])
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape = _validate.shape4(input_shape, "input_shape")
    _validate.same_channels(shape, grad)
    _validate.positive_pooled_size(grad)
    is_max = _validate.onnx_mode(mode)
    ratio, scale, aligned = _sampling_attributes(
        sampling_ratio, spatial_scale, coordinate_transformation_mode, opset)
    threads = _validate.num_threads(num_threads)
    indices = _validate.int64_indices(batch_indices)
    coords, roi_images = _validate.backward_boxes(rois, grad, shape[0], indices, name="rois")
    if aligned and ratio == 0:
        _validate.onnx_negative_grid(coords, scale, grad.shape[2:])
    winners = _max_mode_argmax(is_max, argmax, grad)
    inputs = (grad, coords, roi_images) + (() if winners is None else (winners,))
    result = _validate.output_array(out, shape, grad.dtype, inputs, shape_from="input_shape")
    _roi_align_backward_run(grad, winners, coords, roi_images, result, scale, ratio, aligned,
                            threads, onnx=True)
    return result


def max_roi_pool(X, rois, pooled_shape, spatial_scale=1.0, *, batch_indices=None,
                 return_argmax=False, num_threads=None, out=None):
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
    batch_indices, return_argmax, num_threads, out
        As for :func:`pyroi.roi_pool` (``return_argmax``: also the winning pixels, what
        :func:`pyroi.roi_pool_backward` needs).

    Returns
    -------
    ndarray, shape (K, C, height, width), dtype of ``X``
        With ``return_argmax=True``, a pair ``(output, argmax)``.

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
    wants_argmax = _validate.flag(return_argmax, "return_argmax")
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(
        rois, features.dtype, features.shape[0], batch_indices, name="rois"
    )
    return _roi_pool_run(features, coords, roi_images, (pooled_height, pooled_width), scale,
                         wants_argmax, threads, out, (X, rois, batch_indices))


def crop_and_resize(X, rois, batch_indices, crop_size, *, mode="bilinear",
                    extrapolation_value=0.0, num_threads=None):
    """onnxruntime's contrib ``com.microsoft.CropAndResize`` (TensorFlow's crop_and_resize
    on NCHW tensors, docs/semantics.md §13), bit for bit.

    Parameters
    ----------
    X : ndarray (N, C, H, W), float32 or float64
    rois : ndarray (K, 4)
        ``[y1, x1, y2, x2]`` normalised, dtype of ``X``.
    batch_indices : ndarray (K,) of int (onnxruntime: int32)
    crop_size : ndarray or sequence of 2 ints
        ``(crop_height, crop_width)``.
    mode : {"bilinear", "nearest"}
    extrapolation_value : float
        A float32 attribute: rounded to float32 as onnxruntime reads it.
    num_threads : int, optional

    Returns
    -------
    ndarray (K, C, crop_height, crop_width)

    Notes
    -----
    onnxruntime places the first and last samples of an axis at exactly ``y1 (H - 1)`` and
    ``y2 (H - 1)`` (``placement="onnxruntime"`` of :func:`pyroi.crop_and_resize`), where
    TensorFlow's running sum can be an ulp away.

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import onnx as ponnx
    >>> X = np.array([[[[1, 2], [3, 4]]]], np.float32)
    >>> ponnx.crop_and_resize(X, np.array([[0, 0, 1, 1]], np.float32), [0], [1, 1])
    array([[[[2.5]]]], dtype=float32)
    """
    fill = _validate.onnx_any_float_attribute(extrapolation_value, "extrapolation_value")
    return _crop_and_resize(X, rois, batch_indices, crop_size, mode, fill, layout="NCHW",
                            placement="onnxruntime", num_threads=num_threads)


_CROP_AND_RESIZE_ATTRIBUTES = {"mode", "extrapolation_value"}


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


def _node_op_type(node) -> str:
    """The operator of ``node``, an ``onnx.NodeProto`` of the default domain (checked)."""
    op_type = getattr(node, "op_type", None)
    if op_type is None:
        raise _validate.ArgumentTypeError(
            f"node must be an onnx.NodeProto, got {type(node).__name__}"
        )
    if node.domain not in ("", "ai.onnx"):
        raise _validate.InvalidArgumentError(
            f"node must be in the default ONNX domain, got domain {node.domain!r}"
        )
    return op_type


def custom_ops_library() -> str:
    """The path of pyroi's ONNX Runtime custom-op library, which makes onnxruntime run the
    ``pyroi`` domain's operators (``RoiAlign``, ``MaxRoiPool``, ``PSRoIAlign``,
    ``PSRoIPool``, ``RoIAlignRotated``, ``CropAndResize``) and the ``mmcv`` domain's
    (``MMCVRoiAlign``, ``MMCVRoIAlignRotated``, ``PrRoIPool``) with pyroi's kernels.

    A ``pyroi`` node named after a standard or onnxruntime operator computes what that
    operator computes (attributes, defaults and outputs of ``RoiAlign``-16, ``MaxRoiPool`` and
    ``com.microsoft.CropAndResize``), bit for bit as :func:`roi_align`, :func:`max_roi_pool`
    and :func:`crop_and_resize`, in float32, float64 and (but ``CropAndResize``) float16.
    The session config entry ``"pyroi.num_threads"`` sets its threads (default ``"0"``:
    pyroi's own choice; a custom operator cannot read the session's intra-op thread count).
    See docs/onnxruntime.md.

    Raises
    ------
    FileNotFoundError
        When this installation was built without it (its build needs ONNX Runtime's C API
        header, see docs/building.md).

    Examples
    --------
    >>> import onnxruntime, pyroi.onnx  # doctest: +SKIP
    >>> options = onnxruntime.SessionOptions()  # doctest: +SKIP
    >>> options.register_custom_ops_library(pyroi.onnx.custom_ops_library())  # doctest: +SKIP
    """
    folder = pathlib.Path(__file__).resolve().parent
    for name in ("libpyroi_onnxruntime.so", "libpyroi_onnxruntime.dylib",
                 "pyroi_onnxruntime.dll"):
        if (folder / name).is_file():
            return str(folder / name)
    raise FileNotFoundError(
        f"pyroi's ONNX Runtime custom-op library is not in {folder}: this pyroi was built "
        "without ONNX Runtime's C API header (see docs/building.md)")


_REWRITTEN_OPS = ("RoiAlign", "MaxRoiPool")


def rewrite_model(model, *, back=False):
    """A copy of an ``onnx.ModelProto`` whose standard ``RoiAlign`` and ``MaxRoiPool`` nodes
    are moved to the ``pyroi`` domain, which pyroi's ONNX Runtime library runs
    (:func:`custom_ops_library`); ``back=True`` moves them back to ONNX's own domain.

    The results do not change: a ``RoiAlign`` of a model below opset 16 (RoiAlign-10, never
    shifted) gets ``coordinate_transformation_mode="output_half_pixel"`` written out, since the
    ``pyroi`` node has RoiAlign-16's defaults; moving back, that attribute is dropped again
    below opset 16 (where a ``"half_pixel"`` node cannot be expressed: ``InvalidArgumentError``).
    Nodes in subgraphs (``If``, ``Loop``, ``Scan`` bodies) are moved too; the ``pyroi`` opset is
    imported while a node uses it. Returns ``(model, count)``, the nodes moved. Needs the
    ``onnx`` package.

    Examples
    --------
    >>> import onnx
    >>> from pyroi import onnx as ponnx
    >>> node = onnx.helper.make_node("RoiAlign", ["X", "rois", "b"], ["Y"])
    >>> graph = onnx.helper.make_graph([node], "g", [], [])
    >>> model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 10)])
    >>> moved, count = ponnx.rewrite_model(model)
    >>> count, moved.graph.node[0].domain, moved.graph.node[0].attribute[0].s
    (1, 'pyroi', b'output_half_pixel')
    >>> ponnx.rewrite_model(moved, back=True)[0].graph.node[0].attribute
    []
    """
    import onnx  # optional dependency, imported only here

    if not isinstance(model, onnx.ModelProto):
        raise _validate.ArgumentTypeError(
            f"model must be an onnx.ModelProto, got {type(model).__name__}")
    moved = onnx.ModelProto()
    moved.CopyFrom(model)
    opset = next((o.version for o in moved.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        raise _validate.InvalidArgumentError("model imports no version of ONNX's own domain")
    count = _rewrite_graph(onnx, moved.graph, opset, back)
    imported = [o for o in moved.opset_import if o.domain == "pyroi"]
    if not back and count and not imported:
        moved.opset_import.append(onnx.helper.make_opsetid("pyroi", 1))
    if back and imported and not _uses_domain(moved.graph, "pyroi"):
        kept = [o for o in moved.opset_import if o.domain != "pyroi"]
        del moved.opset_import[:]
        moved.opset_import.extend(kept)
    return moved, count


def _rewrite_graph(onnx, graph, opset: int, back: bool) -> int:
    """Moves the graph's RoiAlign / MaxRoiPool nodes (and its subgraphs'); returns how many."""
    source, target = ("pyroi", "") if back else (("", "ai.onnx"), "pyroi")
    count = 0
    for node in graph.node:
        for attribute in node.attribute:
            for subgraph in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH
                             else attribute.graphs):
                count += _rewrite_graph(onnx, subgraph, opset, back)
        if node.op_type not in _REWRITTEN_OPS or node.domain not in source:
            continue
        if node.op_type == "RoiAlign" and opset < 16:
            _rewrite_coordinate_mode(onnx, node, back)
        if target:
            node.domain = target
        else:
            node.ClearField("domain")  # as make_node leaves it (ONNX's own domain)
        count += 1
    return count


def _rewrite_coordinate_mode(onnx, node, back: bool) -> None:
    """RoiAlign-10's coordinate mode written out for the pyroi node, or dropped again."""
    named = [a for a in node.attribute if a.name == "coordinate_transformation_mode"]
    if not back:
        if not named:
            node.attribute.append(onnx.helper.make_attribute(
                "coordinate_transformation_mode", "output_half_pixel"))
        return
    if named and named[0].s != b"output_half_pixel":
        raise _validate.InvalidArgumentError(
            f"node {node.name!r}: coordinate_transformation_mode={named[0].s.decode()!r} "
            f"cannot be expressed in RoiAlign before opset 16 (RoiAlign-10 never shifts)")
    kept = [a for a in node.attribute if a.name != "coordinate_transformation_mode"]
    del node.attribute[:]
    node.attribute.extend(kept)


def _uses_domain(graph, domain: str) -> bool:
    return any(node.domain == domain
               or any(_uses_domain(g, domain) for a in node.attribute
                      for g in ([a.g] if a.HasField("g") else list(a.graphs)))
               for node in graph.node)


def run_node(node, X, rois, batch_indices=None, crop_size=None, *, opset=16, num_threads=None):
    """Runs one ONNX ``RoiAlign`` or ``MaxRoiPool`` node, onnxruntime's
    ``com.microsoft.CropAndResize`` node (inputs ``X, rois, batch_indices, crop_size``;
    :func:`crop_and_resize`), or the ``mmcv::PrRoIPool`` and ``mmcv::MMCVDeformRoIPool`` nodes
    mmcv's exporter writes (inputs ``X, rois`` and for the latter an optional ``offset``, rois
    ``(K, 5)`` rows ``[batch, x1, y1, x2, y2]``; :func:`pyroi.prroi_pool`,
    :func:`pyroi.deform_roi_pool`), on NumPy inputs.

    Parameters
    ----------
    node : onnx.NodeProto
        A node with ``op_type`` "RoiAlign" or "MaxRoiPool" (default domain),
        "CropAndResize" (domain ``com.microsoft``), "PrRoIPool" (domain ``mmcv``:
        attributes ``pooled_height`` and ``pooled_width``, required, and ``spatial_scale``,
        default 1) or "MMCVDeformRoIPool" (domain ``mmcv``: also ``sampling_ratio``, a float
        holding a whole number, default 0, and ``gamma``, default 0.1); its attributes are read with :func:`onnx.helper.get_attribute_value`
        (attributes not in the operator's schema raise). Requires the ``onnx`` package.
    X, rois, batch_indices
        The node's inputs, in order (``MaxRoiPool`` and ``PrRoIPool`` have no
        ``batch_indices``; ``MMCVDeformRoIPool``'s third input is its offset).
    crop_size
        ``CropAndResize``'s fourth input.
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
    if getattr(node, "domain", None) == "com.microsoft" and node.op_type == "CropAndResize":
        attributes = _node_attributes(node, _CROP_AND_RESIZE_ATTRIBUTES)
        if batch_indices is None or crop_size is None:
            raise _validate.InvalidArgumentError(
                "CropAndResize has four inputs (X, rois, batch_indices, crop_size)")
        return crop_and_resize(X, rois, batch_indices, crop_size, num_threads=num_threads,
                               **attributes)
    if getattr(node, "domain", None) == "mmcv" and node.op_type == "PrRoIPool":
        return _run_mmcv_prroi_pool(node, X, rois, batch_indices, crop_size, num_threads)
    if getattr(node, "domain", None) == "mmcv" and node.op_type == "MMCVDeformRoIPool":
        return _run_mmcv_deform_roi_pool(node, X, rois, batch_indices, crop_size, num_threads)
    op_type = _node_op_type(node)
    if crop_size is not None:
        raise _validate.InvalidArgumentError(f"{op_type} has no crop_size input")
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


_MMCV_PRROI_POOL_ATTRIBUTES = {"pooled_height", "pooled_width", "spatial_scale"}


def _run_mmcv_prroi_pool(node, X, rois, batch_indices, crop_size, num_threads):
    """mmcv::PrRoIPool as mmcv's symbolic writes it (the ONNX Runtime library's node too)."""
    attributes = _node_attributes(node, _MMCV_PRROI_POOL_ATTRIBUTES)
    missing = sorted({"pooled_height", "pooled_width"} - attributes.keys())
    if missing:
        raise _validate.InvalidArgumentError(f"PrRoIPool needs its {missing[0]} attribute")
    if batch_indices is not None or crop_size is not None:
        raise _validate.InvalidArgumentError("PrRoIPool has two inputs (X, rois)")
    return _prroi_pool(X, rois, (attributes["pooled_height"], attributes["pooled_width"]),
                       attributes.get("spatial_scale", 1.0), num_threads=num_threads)


_MMCV_DEFORM_ROI_POOL_ATTRIBUTES = {"pooled_height", "pooled_width", "spatial_scale",
                                    "sampling_ratio", "gamma"}


def _run_mmcv_deform_roi_pool(node, X, rois, offset, crop_size, num_threads):
    """mmcv::MMCVDeformRoIPool as mmcv's symbolic writes it: inputs X, rois and, when the model
    had one, offset (an empty offset: none, as mmcv's kernels read it); sampling_ratio is a
    float attribute there, and must be a whole number."""
    attributes = _node_attributes(node, _MMCV_DEFORM_ROI_POOL_ATTRIBUTES)
    missing = sorted({"pooled_height", "pooled_width"} - attributes.keys())
    if missing:
        raise _validate.InvalidArgumentError(
            f"MMCVDeformRoIPool needs its {missing[0]} attribute")
    if crop_size is not None:
        raise _validate.InvalidArgumentError(
            "MMCVDeformRoIPool has at most three inputs (X, rois, offset)")
    ratio = attributes.get("sampling_ratio", 0.0)
    if not float(ratio).is_integer():
        raise _validate.InvalidArgumentError(
            f"MMCVDeformRoIPool's sampling_ratio must be a whole number, got {ratio!r}")
    if offset is not None and _validate._as_array(offset, "offset").size == 0:
        offset = None
    return _deform_roi_pool(X, rois, offset, (attributes["pooled_height"],
                                              attributes["pooled_width"]),
                            attributes.get("spatial_scale", 1.0), int(ratio),
                            attributes.get("gamma", 0.1), num_threads=num_threads)


class _OnnxLayer(_RoILayer):
    """A trainable ONNX node: :class:`pyroi.layers._RoILayer`'s training mode with the node's
    own ``lda_coeff`` and ``name``, the strict backward (``grad_output`` must have the shape and
    dtype of the last output; a failed call leaves nothing to differentiate), and the round
    trip with an ``onnx.NodeProto``."""

    _OP_TYPE = ""
    _ATTRIBUTES: frozenset = frozenset()
    _INPUTS: tuple = ()

    def __init__(self, training, lda_coeff, name):
        super().__init__()
        self.training = _validate.flag(training, "training")
        self.lda_coeff = _validate.real_number(lda_coeff, "lda_coeff")
        if name is not None and not isinstance(name, str):
            raise _validate.ArgumentTypeError(f"name must be a str or None, got {name!r}")
        self.name = name

    def _call(self, X, rois, batch_indices, num_threads):
        return super().__call__(X, rois, batch_indices=batch_indices, num_threads=num_threads)

    def backward(self, grad_output, *, num_threads=None):
        """``lda_coeff`` times the gradient of the last call's loss with respect to ``X``.

        Parameters
        ----------
        grad_output : ndarray
            Gradient with respect to the last call's output: its shape and dtype.
        num_threads : int, optional
            Threads for this call; results are identical for every value.

        Returns
        -------
        ndarray of the last ``X``'s shape and dtype

        Examples
        --------
        >>> import numpy as np
        >>> from pyroi import onnx as ponnx
        >>> layer = ponnx.RoiAlign(lda_coeff=2.0)
        >>> y = layer(np.ones((1, 1, 2, 2)), np.array([[0.0, 0, 2, 2]]), np.zeros(1, np.int64))
        >>> layer.backward(np.ones_like(y))[0, 0]
        array([[0.5, 0.5],
               [0.5, 0.5]])
        """
        return super().backward(grad_output, self.lda_coeff, num_threads=num_threads)

    def _node_attributes(self) -> dict:
        raise NotImplementedError

    @classmethod
    def _attributes_of(cls, node) -> dict:
        """The attributes of ``node``, validated as :func:`run_node` does."""
        op_type = _node_op_type(node)
        if op_type != cls._OP_TYPE:
            raise _validate.InvalidArgumentError(
                f"node.op_type must be {cls._OP_TYPE!r}, got {op_type!r}")
        if len(node.input) != len(cls._INPUTS) or len(node.output) != 1:
            raise _validate.InvalidArgumentError(
                f"{cls._OP_TYPE} has {len(cls._INPUTS)} inputs and 1 output, the node "
                f"{len(node.input)} and {len(node.output)}")
        return _node_attributes(node, cls._ATTRIBUTES)

    def to_node(self, inputs=None, outputs=("Y",)):
        """This layer as an ONNX node (every attribute explicit), named :attr:`name`.

        Parameters
        ----------
        inputs : sequence of str, optional
            The node's input names (default: the operator's own input names).
        outputs : sequence of str, default ("Y",)
            Its output name.

        Returns
        -------
        onnx.NodeProto
            Accepted by ``onnx.checker``; onnxruntime computes this layer's forward from it,
            bit for bit. ``training`` and ``lda_coeff`` are not ONNX attributes and are not
            stored.

        Examples
        --------
        >>> from pyroi import onnx as ponnx
        >>> node = ponnx.RoiAlign(output_height=7, output_width=7, name="pool").to_node()
        >>> node.name, list(node.input), [a.name for a in node.attribute][:2]
        ('pool', ['X', 'rois', 'batch_indices'], ['coordinate_transformation_mode', 'mode'])
        """
        from onnx import helper  # optional dependency, imported only here

        return helper.make_node(self._OP_TYPE, list(self._INPUTS if inputs is None else inputs),
                                list(outputs), name=self.name, **self._node_attributes())


class RoiAlign(_OnnxLayer):
    """The ONNX ``RoiAlign`` node as a trainable layer: ONNX's attribute names and defaults,
    onnxruntime's forward bit for bit, and the gradient of either mode.

    Parameters
    ----------
    coordinate_transformation_mode : {"half_pixel", "output_half_pixel"}, optional
        ONNX's default, ``"half_pixel"``, when not given (opset 16 on). RoiAlign-10
        (``opset`` 10-15) has no such attribute: leave it None (it samples as
        ``"output_half_pixel"``).
    mode : {"avg", "max"}, default "avg"
        Case-insensitive; stored lower-case.
    output_height, output_width : int, default 1
    sampling_ratio : int, default 0
        0: adaptive (``ceil(roi_size / output_size)`` samples per bin and axis).
    spatial_scale : float, default 1.0
        ONNX's default (1.0: rois in the map's own pixels); a FLOAT attribute, rounded to
        float32. (Some training-framework documentation gives 0, which would pool every RoI at
        the origin; pyroi keeps ONNX's.)
    training : bool, default True
        Whether a call keeps what :meth:`backward` needs (boxes, the input shape, the max-mode
        winners); with False nothing is kept and :meth:`backward` raises.
    lda_coeff : float, default 1.0
        The loss-derivative coefficient: :meth:`backward` returns ``lda_coeff * dL/dX``.
    name : str, optional
        The node's name (:meth:`to_node`, :meth:`from_node`).
    opset : int, default 16
        The model's opset: 10-15 select RoiAlign-10, 16 and later RoiAlign-16/22.

    Notes
    -----
    ``layer(X, rois, batch_indices)`` is :func:`roi_align` with these attributes (max mode also
    records its winners when training); ``layer.backward(dY)`` is ``lda_coeff`` times
    :func:`roi_align_backward` of that call -- in avg mode torchvision's ``roi_align``
    autograd bit for bit (``"half_pixel"`` is ``aligned=True``), in max mode the derivative of
    onnxruntime's reduction (ties, NaN and out-of-map rules: :func:`roi_align_backward`).

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import onnx as ponnx
    >>> layer = ponnx.RoiAlign(mode="max", output_height=2, output_width=2, lda_coeff=0.5)
    >>> X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> y = layer(X, np.array([[0, 0, 4, 4]], np.float32), np.zeros(1, np.int64))
    >>> y[0, 0]  # samples on pixels: the largest of each bin's four
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    >>> float(layer.backward(np.ones_like(y)).sum())  # 4 outputs x weight 1 x lda_coeff
    2.0
    """

    _OP_TYPE = "RoiAlign"
    _ATTRIBUTES = frozenset(_ROI_ALIGN_ATTRIBUTES)
    _INPUTS = ("X", "rois", "batch_indices")

    def __init__(self, *, coordinate_transformation_mode=None, mode="avg", output_height=1,
                 output_width=1, sampling_ratio=0, spatial_scale=1.0, training=True,
                 lda_coeff=1.0, name=None, opset=16):
        super().__init__(training, lda_coeff, name)
        self.opset = _validate.onnx_opset(opset)
        _validate.onnx_aligned(coordinate_transformation_mode, self.opset)
        if coordinate_transformation_mode is None and self.opset >= 16:
            coordinate_transformation_mode = "half_pixel"
        self.coordinate_transformation_mode = coordinate_transformation_mode
        self.mode = "max" if _validate.onnx_mode(mode) else "avg"
        self.output_height = _validate.positive_int(output_height, "output_height")
        self.output_width = _validate.positive_int(output_width, "output_width")
        self.sampling_ratio, self.spatial_scale, _ = _sampling_attributes(
            sampling_ratio, spatial_scale, coordinate_transformation_mode, self.opset)

    def __repr__(self) -> str:
        return (f"RoiAlign(coordinate_transformation_mode={self.coordinate_transformation_mode!r}"
                f", mode={self.mode!r}, output_height={self.output_height}, "
                f"output_width={self.output_width}, sampling_ratio={self.sampling_ratio}, "
                f"spatial_scale={self.spatial_scale}, training={self.training}, "
                f"lda_coeff={self.lda_coeff}, name={self.name!r}, opset={self.opset})")

    def __call__(self, X, rois, batch_indices, *, num_threads=None):
        """The node's output (:func:`roi_align`); in training mode also keeps what
        :meth:`backward` needs.

        Examples
        --------
        >>> import numpy as np
        >>> from pyroi import onnx as ponnx
        >>> X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> ponnx.RoiAlign()(X, np.array([[1, 1, 3, 3]], np.float32), np.zeros(1, np.int64))
        array([[[[7.5]]]], dtype=float32)
        """
        return self._call(X, rois, batch_indices, num_threads)

    def _sampling(self) -> dict:
        return {"sampling_ratio": self.sampling_ratio, "spatial_scale": self.spatial_scale,
                "coordinate_transformation_mode": self.coordinate_transformation_mode,
                "opset": self.opset}

    def _forward(self, X, rois, batch_indices, num_threads):
        keep_winners = self.mode == "max" and self.training
        result = roi_align(X, rois, batch_indices, mode=self.mode,
                           output_height=self.output_height, output_width=self.output_width,
                           return_argmax=keep_winners, num_threads=num_threads,
                           **self._sampling())
        return result if keep_winners else (result, None)

    def _backward(self, grad_output, saved, num_threads):
        shape, rois, batch_indices, argmax = saved
        return roi_align_backward(grad_output, rois, batch_indices, shape, mode=self.mode,
                                  argmax=argmax, num_threads=num_threads, **self._sampling())

    def _node_attributes(self) -> dict:
        attributes = {"mode": self.mode, "output_height": self.output_height,
                      "output_width": self.output_width, "sampling_ratio": self.sampling_ratio,
                      "spatial_scale": self.spatial_scale}
        if self.opset >= 16:
            attributes["coordinate_transformation_mode"] = self.coordinate_transformation_mode
        return attributes

    @classmethod
    def from_node(cls, node, *, opset=16, training=True, lda_coeff=1.0):
        """The layer of an ONNX ``RoiAlign`` node (attributes validated as :func:`run_node`
        does; absent ones take the opset's defaults; the name is the node's, or None).

        Examples
        --------
        >>> import onnx
        >>> from pyroi import onnx as ponnx
        >>> node = onnx.helper.make_node("RoiAlign", ["X", "rois", "b"], ["Y"], mode="max",
        ...                              output_height=7, output_width=7, name="pool")
        >>> ponnx.RoiAlign.from_node(node, lda_coeff=0.5)  # doctest: +NORMALIZE_WHITESPACE
        RoiAlign(coordinate_transformation_mode='half_pixel', mode='max', output_height=7,
        output_width=7, sampling_ratio=0, spatial_scale=1.0, training=True, lda_coeff=0.5,
        name='pool', opset=16)
        """
        attributes = cls._attributes_of(node)
        return cls(**attributes, training=training, lda_coeff=lda_coeff,
                   name=node.name or None, opset=opset)


class MaxRoiPool(_OnnxLayer):
    """The ONNX ``MaxRoiPool`` node as a trainable layer: :func:`max_roi_pool` forward and
    RoIPool's argmax gradient (each output's gradient to its winning pixel, torchvision's
    ``roi_pool`` autograd bit for bit).

    ``layer(X, rois)`` takes ONNX's ``(K, 5)`` rows ``[batch_index, x1, y1, x2, y2]``;
    ``training``, ``lda_coeff`` and ``name`` as for :class:`RoiAlign`.

    Examples
    --------
    >>> import numpy as np
    >>> from pyroi import onnx as ponnx
    >>> layer = ponnx.MaxRoiPool((1, 1), lda_coeff=2.0)
    >>> X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> y = layer(X, np.array([[0, 0, 0, 1, 1]], np.float32))
    >>> layer.backward(np.ones_like(y))[0, 0, 1]
    array([0., 2., 0., 0.], dtype=float32)
    """

    _OP_TYPE = "MaxRoiPool"
    _ATTRIBUTES = frozenset(_MAX_ROI_POOL_ATTRIBUTES)
    _INPUTS = ("X", "rois")

    def __init__(self, pooled_shape, spatial_scale=1.0, *, training=True, lda_coeff=1.0,
                 name=None):
        super().__init__(training, lda_coeff, name)
        self.pooled_shape = _validate.int_pair(pooled_shape, "pooled_shape")
        self.spatial_scale = _validate.onnx_float_attribute(spatial_scale, "spatial_scale")

    def __repr__(self) -> str:
        return (f"MaxRoiPool(pooled_shape={self.pooled_shape}, "
                f"spatial_scale={self.spatial_scale}, training={self.training}, "
                f"lda_coeff={self.lda_coeff}, name={self.name!r})")

    def __call__(self, X, rois, *, num_threads=None):
        """The node's output (:func:`max_roi_pool`); in training mode also keeps the argmax.

        Examples
        --------
        >>> import numpy as np
        >>> from pyroi import onnx as ponnx
        >>> X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> ponnx.MaxRoiPool((1, 2))(X, np.array([[0, 0, 0, 3, 1]], np.float32))
        array([[[[5., 7.]]]], dtype=float32)
        """
        return self._call(X, rois, None, num_threads)

    def _forward(self, X, rois, batch_indices, num_threads):
        output, argmax = max_roi_pool(X, rois, self.pooled_shape, self.spatial_scale,
                                      return_argmax=True, num_threads=num_threads)
        return output, argmax

    def _backward(self, grad_output, saved, num_threads):
        shape, rois, _, argmax = saved
        return roi_pool_backward(grad_output, rois, argmax, shape, self.pooled_shape,
                                 self.spatial_scale, num_threads=num_threads)

    def _node_attributes(self) -> dict:
        return {"pooled_shape": list(self.pooled_shape), "spatial_scale": self.spatial_scale}

    @classmethod
    def from_node(cls, node, *, training=True, lda_coeff=1.0):
        """The layer of an ONNX ``MaxRoiPool`` node (validated as :func:`run_node` does).

        Examples
        --------
        >>> import onnx
        >>> from pyroi import onnx as ponnx
        >>> node = onnx.helper.make_node("MaxRoiPool", ["X", "rois"], ["Y"], pooled_shape=[7, 7])
        >>> ponnx.MaxRoiPool.from_node(node)
        MaxRoiPool(pooled_shape=(7, 7), spatial_scale=1.0, training=True, lda_coeff=1.0, name=None)
        """
        attributes = cls._attributes_of(node)
        if "pooled_shape" not in attributes:
            raise _validate.InvalidArgumentError("MaxRoiPool needs its pooled_shape attribute")
        return cls(**attributes, training=training, lda_coeff=lda_coeff, name=node.name or None)


# float16 (ONNX T1 includes tensor(float16)): computed in float32, rounded once (_half.py)
from pyroi._half import float16_support as _float16_support  # noqa: E402

roi_align = _float16_support("X", boxes=("rois",))(roi_align)
roi_align_backward = _float16_support("grad_output", boxes=("rois",))(roi_align_backward)
max_roi_pool = _float16_support("X", boxes=("rois",))(max_roi_pool)
