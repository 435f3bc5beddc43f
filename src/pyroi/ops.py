"""torchvision-compatible RoI operators on NumPy arrays."""

# Each function checks its arguments (_validate), calls one C entry point through _core and
# returns what it wrote.
# May import: _core, _validate, _half.

from __future__ import annotations

import numpy as np

from pyroi import _core, _validate

__all__ = ["roi_align", "roi_align_backward", "roi_align_backward_boxes"]

# The parameter entries several operators document alike, written once: a docstring line
# that holds only "{name}" stands for the entry, "{forward}" in it for the function a
# backward differentiates (see _shared_docs). The docstrings stay whole for help() and the
# API pages.
_SHARED_DOCS = {
    "input": """input : ndarray, shape (N, C, H, W), float16, float32 or float64
    Feature maps. Any strides (transposed, sliced, negative, broadcast) are read in place.""",
    "boxes": """boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
    ``[batch_index, x1, y1, x2, y2]`` rows in input-image pixels; or one ``(L_i, 4)``
    array of ``[x1, y1, x2, y2]`` per image (list position = batch index); or ``(K, 4)``
    coordinates with ``batch_indices``. Same dtype as ``input`` (float16 ``input``:
    float16 or float32 boxes). Batch indices must be integers in ``[0, N)``; coordinates
    finite, also after scaling.""",
    "output_size": """output_size : int or (int, int)
    Output bins ``(ph, pw)``; an int ``s`` means ``(s, s)``.""",
    "spatial_scale": """spatial_scale : float, default 1.0
    Factor from box coordinates to feature coordinates (e.g. 1/16), finite and >= 0.""",
    "sampling_ratio": """sampling_ratio : int, default -1
    Samples per bin along each axis; ``<= 0`` means adaptive,
    ``ceil(roi_size / output_size)`` per axis.""",
    "batch_indices": """batch_indices : ndarray (K,) of int, optional
    Image of each RoI when ``boxes`` is ``(K, 4)`` (ONNX style).""",
    "num_threads": """num_threads : int, optional
    Threads for this call (default :func:`pyroi.get_num_threads`); results are
    identical for every value.""",
    "out": """out : ndarray (K, C, ph, pw), optional
    Array to write the result into (any strides, not overlapping the inputs).""",
    "grad_output": """grad_output : ndarray, shape (K, C, ph, pw), float16, float32 or float64
    Gradient of the loss with respect to the output of :func:`{forward}`; its last two
    dimensions give the output size.""",
    "input_shape": """input_shape : sequence of 4 ints
    ``(N, C, H, W)`` of the forward's input; ``C`` must equal ``grad_output.shape[1]``.""",
    "ps_gradient": """\
grad_output : ndarray, shape (K, C / (ph * pw), ph, pw), float16, float32 or float64
    Gradient of the loss with respect to the output of :func:`{forward}`; its last two
    dimensions give the output size.
boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
    The boxes given to the forward (same dtype as ``grad_output``).
input_shape : sequence of 4 ints
    ``(N, C, H, W)`` of the forward's input; ``C`` must equal
    ``grad_output.shape[1] * ph * pw``.""",
    "ps_out": """out : ndarray (K, C / (ph * pw), ph, pw), optional
    Array to write the result into (any strides, not overlapping the inputs).

Returns
-------
ndarray, shape (K, C / (ph * pw), ph, pw), dtype of ``input``""",
    "exact": """exact : bool, default True
    False (``mode="avg"`` only): each bin's samples are merged into one weight per pixel
    before the map is read, so a pixel that several samples tap is read once. Faster where
    samples share pixels (adaptive sampling of large boxes: about 2x); the result is the
    same sum rounded differently, no longer bit-identical to torchvision, within
    ``(8 S + 16) u`` times the exact result on ``abs(input)`` (``S`` the bin's samples,
    ``u`` 2**-24 in float32, 2**-53 in float64; docs: Semantics §3.7). Still
    identical for every thread count.""",
    "gradient_out": """out : ndarray of shape ``input_shape``, optional
    Array to write the gradient into (it is overwritten, not accumulated).

Returns
-------
ndarray of shape ``input_shape``, dtype of ``grad_output``""",
}


def _shared_docs(function):
    """Expands the "{name}" lines of ``function``'s docstring from _SHARED_DOCS."""
    lines = []
    for line in function.__doc__.split("\n"):
        key = line.strip()[1:-1] if line.strip().startswith("{") else None
        if key in _SHARED_DOCS:
            indent = line[:len(line) - len(line.lstrip())]
            forward = function.__name__.removesuffix("_backward")
            lines += [indent + entry if entry else ""
                      for entry in _SHARED_DOCS[key].replace("{forward}", forward).split("\n")]
        else:
            lines.append(line)
    function.__doc__ = "\n".join(lines)
    return function


@_shared_docs
def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False,
              *, mode="avg", return_argmax=False, batch_indices=None, layout="NCHW",
              num_threads=None, out=None, exact=True):
    """RoIAlign, exactly as ``torchvision.ops.roi_align`` (``mode="avg"``) or as mmcv's
    ``roi_align(pool_mode="max")`` (``mode="max"``).

    Each output bin reduces ``grid_h x grid_w`` bilinear samples taken at the centres of a
    regular subdivision of the bin (Mask R-CNN's RoIAlign): their mean, or their maximum.

    Parameters
    ----------
    {input}
    {boxes}
    {output_size}
    {spatial_scale}
    {sampling_ratio}
    aligned : bool, default False
        True shifts box corners by -0.5 pixel (the correct alignment, detectron2's
        ROIAlignV2); False is the legacy Mask R-CNN convention (RoI sizes forced to >= 1).
    mode : {"avg", "max"}, default "avg"
        ``"max"``: the largest interpolated sample of each bin (mmcv's definition, the one
        RoIAlign explainers draw): ties go to the first sample in row-major order, NaN
        propagates, a sample outside ``[-1, H] x [-1, W]`` has the value 0 (as in mmcv), an
        empty bin gives 0 (mmcv: -10000).
    return_argmax : bool, default False
        With ``mode="max"``, also return the winning sample's index ``iy * grid_w + ix``
        within each bin (int64, -1 for an empty bin); :func:`roi_align_backward` needs it.
    {batch_indices}
    layout : {"NCHW", "NHWC"}, default "NCHW"
        ``"NHWC"``: ``input`` is ``(N, H, W, C)`` (channels last). It is read in place, with
        the channels as the vector axis; the output is ``(K, C, ph, pw)`` either way. (An
        NCHW-shaped view of channels-last memory is read in place too.) For a channels-last
        result, give ``out=`` a ``(K, C, ph, pw)`` view of ``(K, ph, pw, C)`` memory: a large
        one on a 64-byte line is written straight from the kernels' tiles (see
        docs/performance.md, *Channels-last outputs*).
    {num_threads}
    {out}
    {exact}

    Returns
    -------
    ndarray, shape (K, C, ph, pw), dtype of ``input``
        and, with ``return_argmax=True``, the int64 argmax of the same shape.

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
    features = _validate.nchw_view(_validate.float_array(input, "input", 4), layout)
    pooled_height, pooled_width = _validate.output_size(output_size)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    is_aligned = _validate.flag(aligned, "aligned")
    threads = _validate.num_threads(num_threads)
    is_max = _validate.pooling_mode(mode)
    wants_argmax = _validate.flag(return_argmax, "return_argmax")
    if wants_argmax and not is_max:
        raise _validate.InvalidArgumentError('return_argmax=True needs mode="max"')
    merge = _validate.merge_samples(exact, is_max)
    coords, roi_images = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
    return _roi_align_run(features, coords, roi_images, (pooled_height, pooled_width), scale,
                          ratio, is_aligned, is_max, wants_argmax, threads, out,
                          (input, boxes, batch_indices), merge_samples=merge)


def _roi_align_run(features, coords, roi_images, pooled, scale, ratio, aligned, is_max,
                   wants_argmax, threads, out, sources, onnx=False, merge_samples=False):
    """RoIAlign's forward once its arguments are validated, shared by :func:`roi_align` and
    ``pyroi.onnx.roi_align`` (``onnx``: ONNX's max rule): checks or allocates the result
    (``sources``: the caller's arrays it must not overlap) and runs the kernel
    (``merge_samples``: an average's, not bit-exact; see ``exact``)."""
    shape = (coords.shape[0], features.shape[1]) + pooled
    result = _validate.output_array(out, shape, features.dtype,
                                    sources + (features, coords, roi_images))
    if not is_max:
        _core.roi_align_forward(features, coords, roi_images, result, *pooled, scale, scale,
                                ratio, aligned, threads, merge_samples)
        return result
    argmax = np.empty(shape, dtype=np.int64) if wants_argmax else None
    _core.roi_align_max_forward(features, coords, roi_images, result, argmax, *pooled, scale,
                                scale, ratio, aligned, threads, onnx=onnx)
    return (result, argmax) if wants_argmax else result


@_shared_docs
def roi_align_backward(grad_output, boxes, input_shape, spatial_scale=1.0, sampling_ratio=-1,
                       aligned=False, *, mode="avg", argmax=None, batch_indices=None,
                       layout="NCHW", num_threads=None, out=None, exact=True):
    """Gradient of :func:`roi_align` with respect to its input.

    Equals the input gradient torchvision's autograd computes for ``roi_align`` (bit for bit
    in float32 on finite data: contributions are added per input pixel in torchvision's
    order, whatever the thread count).

    Parameters
    ----------
    {grad_output}
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``).
    {input_shape}
    spatial_scale, sampling_ratio, aligned, batch_indices, num_threads
        As for :func:`roi_align`.
    layout : {"NCHW", "NHWC"}, default "NCHW"
        ``"NHWC"``: ``input_shape`` is ``(N, H, W, C)`` and the gradient (and ``out``) are
        channels last, written in place.
    mode : {"avg", "max"}, default "avg"
        ``"max"`` routes each output gradient to the four taps of its bin's winning sample
        (``g * w`` each, no division; nothing when the winner lies outside the map), as mmcv.
    argmax : ndarray of int, optional
        Required with ``mode="max"``: the argmax that ``roi_align(..., mode="max",
        return_argmax=True)`` returned, shape of ``grad_output``.
    {exact}
    {gradient_out}

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
    channels_last = _validate.is_channels_last(layout)
    shape = _validate.shape4(input_shape, "input_shape")
    if channels_last:
        shape = (shape[0], shape[3], shape[1], shape[2])
    _validate.same_channels(shape, grad)
    _validate.positive_pooled_size(grad)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    is_aligned = _validate.flag(aligned, "aligned")
    threads = _validate.num_threads(num_threads)
    is_max = _validate.pooling_mode(mode)
    merge = _validate.merge_samples(exact, is_max)
    coords, roi_images = _validate.backward_boxes(boxes, grad, shape[0], batch_indices)
    winners = _max_mode_argmax(is_max, argmax, grad)
    inputs = (grad_output, boxes, batch_indices, argmax, grad, coords, roi_images) + (
        () if winners is None else (winners,))
    if channels_last:
        result = _validate.output_array(out, (shape[0], shape[2], shape[3], shape[1]),
                                        grad.dtype, inputs, shape_from="input_shape")
        nchw = result.transpose(0, 3, 1, 2)
    else:
        result = nchw = _validate.output_array(out, shape, grad.dtype, inputs,
                                               shape_from="input_shape")
    _roi_align_backward_run(grad, winners, coords, roi_images, nchw, scale, ratio, is_aligned,
                            threads, merge_samples=merge)
    return result


def roi_align_backward_boxes(grad_output, input, boxes, spatial_scale=1.0, sampling_ratio=-1,
                             aligned=False, *, batch_indices=None, num_threads=None):
    """Gradient of :func:`roi_align` (``mode="avg"``) with respect to the box coordinates.

    torchvision's and mmcv's compiled RoIAlign give no box gradient; this one differentiates
    the forward as it is computed: every sample's position is affine in the box's edges and
    its value is the bilinear sampler's, whose slope along ``y`` is the difference of the
    two neighbouring pixel rows weighted by the ``x`` weights (``x`` alike). The rules where
    the forward is not differentiable (docs/semantics.md §3.8): the slope is 0 where the
    sampler clamps (a coordinate in ``[-1, 0)`` or at ``>= H - 1``) and outside the halo
    ``[-1, H] x [-1, W]``; at a whole pixel coordinate it is the slope of the cell the forward
    reads (to its right, or below); an adaptive grid (``sampling_ratio <= 0``) is held
    constant; with ``aligned=False`` an axis whose size was raised to 1 gives its far edge
    (``x2`` or ``y2``) 0 and its near edge the whole translation.

    Parameters
    ----------
    grad_output : ndarray, shape (K, C, ph, pw), float32 or float64
        Gradient of the loss with respect to the output of :func:`roi_align`; its last two
        dimensions give the output size.
    input : ndarray, shape (N, C, H, W), float32 or float64
        The forward's input (same dtype as ``grad_output``, ``C`` its channels). float16 is
        not offered (widen both arrays to float32).
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``).
    spatial_scale, sampling_ratio, aligned, batch_indices, num_threads
        As for :func:`roi_align`.

    Returns
    -------
    ndarray or list of ndarray, dtype of ``grad_output``
        The gradient with respect to ``boxes`` in their form, as
        :func:`prroi_pool_backward` returns it: ``(K, 5)`` rows ``[0, d/dx1, d/dy1, d/dx2,
        d/dy2]`` (the batch-index column gets none), a list of ``(L_i, 4)`` arrays, or
        ``(K, 4)`` rows. Identical for every thread count.

    Examples
    --------
    On a ramp rising to the right, one sample at the box centre moves half as far as either
    vertical edge:

    >>> import numpy as np, pyroi
    >>> x = np.tile(np.arange(4, dtype=np.float64), (1, 1, 4, 1))
    >>> boxes = np.array([[0, 1, 1, 2, 2]], np.float64)
    >>> pyroi.roi_align_backward_boxes(np.ones((1, 1, 1, 1)), x, boxes, sampling_ratio=1)
    array([[0. , 0.5, 0. , 0.5, 0. ]])
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    features = _validate.float_array(input, "input", 4)
    for name, array in (("grad_output", grad), ("input", features)):
        if _is_half(array):
            raise _validate.DTypeError(
                f"roi_align_backward_boxes: {name} is float16, which is not offered "
                "(widen grad_output and input to float32)")
    if features.dtype != grad.dtype:
        raise _validate.DTypeError(
            f"input has dtype {features.dtype} but grad_output has {grad.dtype}")
    _validate.positive_pooled_size(grad)
    if features.shape[1] != grad.shape[1]:
        raise _validate.ShapeError(
            f"input has {features.shape[1]} channels but grad_output has {grad.shape[1]}")
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    is_aligned = _validate.flag(aligned, "aligned")
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.backward_boxes(boxes, grad, features.shape[0], batch_indices)
    grad_boxes, rows = _box_gradient_rows(boxes, batch_indices, coords)
    _core.roi_align_backward_boxes(grad, features, coords, roi_images, rows, scale, scale, ratio,
                                   is_aligned, threads)
    return _box_gradient_form(grad_boxes, boxes, batch_indices, roi_images)


def _max_mode_argmax(is_max, argmax, grad):
    """The checked argmax of a max-mode RoIAlign backward; None in avg mode, which takes none."""
    if is_max:
        return _validate.argmax_array(argmax, grad.shape, None)
    if argmax is not None:
        raise _validate.InvalidArgumentError('argmax is only used with mode="max"')
    return None


def _roi_align_backward_run(grad, winners, coords, roi_images, grad_input, scale, ratio, aligned,
                            threads, onnx=False, merge_samples=False):
    """RoIAlign's backward once validated (shared with ``pyroi.onnx.roi_align_backward``): the
    max-mode kernel when there are ``winners`` (``onnx``: ONNX's rule), else the average's
    (``merge_samples``: as the forward)."""
    if winners is not None:
        _core.roi_align_max_backward(grad, winners, coords, roi_images, grad_input, scale, scale,
                                     ratio, aligned, threads, onnx=onnx)
    else:
        _core.roi_align_backward(grad, coords, roi_images, grad_input, scale, scale, ratio,
                                 aligned, threads, merge_samples)


@_shared_docs
def roi_pool(input, boxes, output_size, spatial_scale=1.0, *, return_argmax=False,
             argmax_dtype=np.int64, batch_indices=None, num_threads=None, out=None):
    """RoIPool (quantised max pooling of Fast R-CNN), exactly as ``torchvision.ops.roi_pool``.

    Box corners are scaled and rounded to whole pixels (half away from zero; the end pixel
    is included, so a RoI spans ``round(x2*s) - round(x1*s) + 1 >= 1`` pixels). Output bin
    ``b`` of ``n`` along an axis covers pixels ``floor(b*size/n) .. ceil((b+1)*size/n) - 1``
    from the RoI start, clipped to the map (neighbouring bins may share a pixel), and holds
    their maximum. Same definition as Caffe's ROIPooling and ONNX ``MaxRoiPool``.

    Parameters
    ----------
    {input}
    {boxes}
    {output_size}
    {spatial_scale}
    return_argmax : bool, default False
        Also return, for every output element, the in-plane index ``h * W + w`` of the pixel
        it was taken from (-1 where nothing was), which :func:`roi_pool_backward` needs.
    argmax_dtype : np.int64 or np.int32, default np.int64
        The argmax's dtype. ``np.int32`` is torchvision's (its ``roi_pool`` op returns int32):
        half the memory, which the backward reads faster; the values are the same. A map of
        more than ``2**31`` pixels per plane needs int64 (:class:`pyroi.ShapeError`).
    {batch_indices}
    {num_threads}
    {out}

    Returns
    -------
    output : ndarray, shape (K, C, ph, pw), dtype of ``input``
    argmax : ndarray, shape (K, C, ph, pw), ``argmax_dtype``
        Only when ``return_argmax`` is true.

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
    index_dtype = _validate.argmax_dtype(argmax_dtype)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
    return _roi_pool_run(features, coords, roi_images, (pooled_height, pooled_width), scale,
                         want_argmax, threads, out, (input, boxes, batch_indices), index_dtype)


def _roi_pool_run(features, coords, roi_images, pooled, scale, wants_argmax, threads, out,
                  sources, argmax_dtype=np.dtype(np.int64)):
    """RoIPool's forward once validated, shared by :func:`roi_pool` and
    ``pyroi.onnx.max_roi_pool``: checks or allocates the result (``sources``: the caller's
    arrays it must not overlap) and runs the kernel."""
    shape = (coords.shape[0], features.shape[1]) + pooled
    result = _validate.output_array(out, shape, features.dtype,
                                    sources + (features, coords, roi_images))
    if wants_argmax and argmax_dtype == np.int32:
        _validate.int32_argmax_plane(features.shape)
    argmax = np.empty(shape, dtype=argmax_dtype) if wants_argmax else None
    _core.roi_pool_forward(features, coords, roi_images, result, argmax, *pooled, scale, scale,
                           threads)
    return (result, argmax) if wants_argmax else result


@_shared_docs
def roi_pool_backward(grad_output, boxes, argmax=None, input_shape=None, output_size=None,
                      spatial_scale=1.0, *, input=None, batch_indices=None, num_threads=None,
                      out=None):
    """Gradient of :func:`roi_pool` with respect to its input.

    Every output element whose argmax is not -1 passes its gradient to the pixel it was
    taken from: ``grad_input[b, c].flat[argmax] += grad_output``. This equals the input
    gradient torchvision's autograd computes for ``roi_pool`` bit for bit (contributions are
    added per pixel in torchvision's order, whatever the thread count).

    Give exactly one of ``argmax`` (the forward's) or ``input`` (the forward's input map):
    from the input, each bin's pixel is found again by the forward's own rule (first maximum
    in row-major order, NaN never taken), so the result is the same bit for bit. It reads
    the (small) map instead of an argmax as large as ``grad_output`` -- faster where the map
    fits the caches, and a training layer need not keep the argmax.

    Parameters
    ----------
    grad_output : ndarray, shape (K, C, ph, pw), float16, float32 or float64
        Gradient of the loss with respect to the output of :func:`roi_pool`.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``); they supply the
        batch index of each RoI.
    argmax : ndarray (K, C, ph, pw) of int, or None
        The argmax the forward returned (``return_argmax=True``); every entry -1 or in
        ``[0, H * W)``. int64 and int32 (torchvision's) are read in place; other integer
        dtypes are converted. None when ``input`` is given.
    input_shape : tuple of 4 ints (N, C, H, W), or None
        Shape of the forward's input (and of the result). Needed with ``argmax``; with
        ``input`` it is ``input.shape`` (if given, it must equal it).
    output_size : int or (int, int), or None
        As for :func:`roi_pool`; must equal ``grad_output.shape[2:]`` (None: taken from it).
    spatial_scale, batch_indices, num_threads
        As for :func:`roi_pool`. With ``argmax`` the scale is checked but not needed (argmax
        says it all); with ``input`` it places the bins, so it must be the forward's.
    input : ndarray (N, C, H, W), keyword only, or None
        The forward's input, same dtype as ``grad_output``; any strides.
    {gradient_out}

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
    >>> pyroi.roi_pool_backward(np.ones_like(y), boxes, input=x)[0, 0]
    array([[0., 0., 0., 0.],
           [0., 1., 0., 1.],
           [0., 0., 0., 0.],
           [0., 1., 0., 1.]])
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    if (argmax is None) == (input is None):
        raise _validate.InvalidArgumentError(
            "roi_pool_backward takes exactly one of argmax (the forward's) or input (the "
            "forward's input map), got " + ("both" if input is not None else "neither"))
    features = None
    if input is not None:
        features = _validate.float_array(input, "input", 4)
        if features.dtype != grad.dtype:
            raise _validate.DTypeError(
                f"input must have grad_output's dtype {grad.dtype}, got {features.dtype}")
        if input_shape is not None and _validate.shape4(input_shape, "input_shape") != \
                features.shape:
            raise _validate.ShapeError(
                f"input_shape {tuple(input_shape)} differs from input.shape {features.shape}")
        input_shape = features.shape
    shape = _validate.shape4(input_shape, "input_shape")
    _validate.same_channels(shape, grad)
    pooled = _validate.output_size(grad.shape[2:] if output_size is None else output_size)
    _validate.output_size_matches(pooled, grad.shape, "grad_output")
    scale = _validate.spatial_scale(spatial_scale)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.backward_boxes(boxes, grad, shape[0], batch_indices)
    if features is not None:
        result = _validate.output_array(out, shape, grad.dtype,
                                        (grad_output, boxes, batch_indices, input, grad,
                                         features, coords, roi_images),
                                        shape_from="input")
        _core.roi_pool_backward_from_input(grad, features, coords, roi_images, result, scale,
                                           scale, threads)
        return result
    # the C core checks every argmax entry before it writes anything (in a pass of its own,
    # or as its kernels read them): only when it refuses is the offender looked up here
    winners = _validate.argmax_array(argmax, grad.shape, shape[2] * shape[3],
                                     check_values=False, keep_int32=True)
    result = _validate.output_array(out, shape, grad.dtype, (grad_output, boxes, batch_indices,
                                    argmax, grad, coords, roi_images, winners),
                                    shape_from="input_shape")
    try:
        _core.roi_pool_backward(grad, winners, roi_images, result, scale, scale, threads)
    except _validate.InvalidArgumentError:
        _validate.argmax_values(_validate._as_array(argmax, "argmax"), shape[2] * shape[3])
        raise
    return result


__all__ += ["roi_pool", "roi_pool_backward"]


# ------------------------------------------------------------------------------------------
# position-sensitive RoIAlign and RoIPool (R-FCN, Light-Head R-CNN)

__all__ += ["ps_roi_align", "ps_roi_align_backward", "ps_roi_pool", "ps_roi_pool_backward"]


def _ps_backward_shape(grad, input_shape):
    """(input shape, (ph, pw)) of a position-sensitive backward, checked against grad_output."""
    shape = _validate.shape4(input_shape, "input_shape")
    _validate.positive_pooled_size(grad)
    pooled = grad.shape[2:]
    _validate.ps_output_channels(shape[1], pooled, "input_shape")
    if shape[1] != grad.shape[1] * pooled[0] * pooled[1]:
        raise _validate.ShapeError(
            f"input_shape has {shape[1]} channels but grad_output of shape {grad.shape} needs "
            f"{grad.shape[1]} * {pooled[0]} * {pooled[1]} = "
            f"{grad.shape[1] * pooled[0] * pooled[1]}"
        )
    return shape, pooled


# The sampling_ratio of the position-sensitive ops that have none (a user's None is checked)
_NO_SAMPLING_RATIO = object()


def _ps_forward(forward, input, boxes, output_size, spatial_scale, sampling_ratio,
                batch_indices, num_threads, out):
    """A position-sensitive forward: validate, allocate (K, C / (ph * pw), ph, pw) and call
    forward (sampling_ratio _NO_SAMPLING_RATIO: the op has none)."""
    features = _validate.float_array(input, "input", 4)
    pooled_height, pooled_width = _validate.output_size(output_size)
    channels_out = _validate.ps_output_channels(features.shape[1], (pooled_height, pooled_width))
    scale = _validate.spatial_scale(spatial_scale)
    ratio = (() if sampling_ratio is _NO_SAMPLING_RATIO
             else (_validate.sampling_ratio(sampling_ratio),))
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
    shape = (coords.shape[0], channels_out, pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype,
                                    (input, boxes, batch_indices, features, coords, roi_images))
    forward(features, coords, roi_images, result, pooled_height, pooled_width, scale, scale,
            *ratio, threads)
    return result


def _ps_backward(backward, grad_output, boxes, input_shape, spatial_scale, sampling_ratio,
                 batch_indices, num_threads, out):
    """A position-sensitive backward: validate, allocate the input gradient, call backward."""
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape, _ = _ps_backward_shape(grad, input_shape)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = (() if sampling_ratio is _NO_SAMPLING_RATIO
             else (_validate.sampling_ratio(sampling_ratio),))
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.backward_boxes(boxes, grad, shape[0], batch_indices)
    result = _validate.output_array(out, shape, grad.dtype, (grad_output, boxes, batch_indices,
                                    grad, coords, roi_images),
                                    shape_from="input_shape")
    backward(grad, coords, roi_images, result, scale, scale, *ratio, threads)
    return result


@_shared_docs
def ps_roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, *,
                 batch_indices=None, num_threads=None, out=None):
    """Position-sensitive RoIAlign (Light-Head R-CNN), as ``torchvision.ops.ps_roi_align``.

    The input's ``C`` channels form ``C / (ph * pw)`` groups of ``ph * pw``: output bin
    ``(i, j)`` of output channel ``c`` is the mean of bilinear samples of input channel
    ``(c * ph + i) * pw + j`` only. Sampling is RoIAlign's with ``aligned=True`` (box corners
    shifted by -0.5 pixel, no minimum RoI size).

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W), float16, float32 or float64
        Feature maps, ``C`` a multiple of ``ph * pw``. Any strides are read in place.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        As for :func:`roi_align`: ``[batch_index, x1, y1, x2, y2]`` rows, one ``(L_i, 4)``
        array per image, or ``(K, 4)`` coordinates with ``batch_indices``; same dtype as
        ``input``.
    {output_size}
    {spatial_scale}
    {sampling_ratio}
    {batch_indices}
    {num_threads}
    {ps_out}

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
    return _ps_forward(_core.ps_roi_align_forward, input, boxes, output_size, spatial_scale,
                       sampling_ratio, batch_indices, num_threads, out)


@_shared_docs
def ps_roi_align_backward(grad_output, boxes, input_shape, spatial_scale=1.0,
                          sampling_ratio=-1, *, batch_indices=None, num_threads=None,
                          out=None):
    """Gradient of :func:`ps_roi_align` with respect to its input.

    Equals the input gradient torchvision's autograd computes for ``ps_roi_align`` (bit for
    bit in float32 on finite data, whatever the thread count), and is the exact adjoint of
    :func:`ps_roi_align`.

    Parameters
    ----------
    {ps_gradient}
    spatial_scale, sampling_ratio, batch_indices, num_threads
        As for :func:`ps_roi_align`.
    {gradient_out}

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> g = np.ones((1, 1, 1, 1))
    >>> boxes = np.array([[0, 0.5, 0.5, 1.5, 1.5]])
    >>> pyroi.ps_roi_align_backward(g, boxes, (1, 1, 2, 2), sampling_ratio=1)[0, 0]
    array([[0.25, 0.25],
           [0.25, 0.25]])
    """
    return _ps_backward(_core.ps_roi_align_backward, grad_output, boxes, input_shape,
                        spatial_scale, sampling_ratio, batch_indices, num_threads, out)


@_shared_docs
def ps_roi_pool(input, boxes, output_size, spatial_scale=1.0, *, batch_indices=None,
                num_threads=None, out=None):
    """Position-sensitive RoIPool (R-FCN), as ``torchvision.ops.ps_roi_pool``.

    Box corners are scaled and rounded half away from zero to whole pixels; the RoI size is
    ``max(end - start, 1)`` (no ``+ 1``, unlike torchvision's ``roi_pool``); bin
    ``(i, j)`` covers rows ``floor(i * bin_h) ... ceil((i + 1) * bin_h)`` from the RoI start
    (columns alike) and averages input channel ``(c * ph + i) * pw + j`` over them; an empty
    bin gives 0.

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W), float16, float32 or float64
        Feature maps, ``C`` a multiple of ``ph * pw``. Any strides are read in place.
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        As for :func:`ps_roi_align`.
    {output_size}
    {spatial_scale}
    batch_indices, num_threads
        As for :func:`ps_roi_align`.
    {ps_out}

    Notes
    -----
    Results equal torchvision 0.29's CPU kernel bit for bit, including its quirk that bin
    windows are clamped to rows ``0 ... H - 1`` and columns ``0 ... W - 1`` as half-open
    ranges, so the last row and column of the map are never read (docs/semantics.md §6.2).
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
    return _ps_forward(_core.ps_roi_pool_forward, input, boxes, output_size, spatial_scale,
                       _NO_SAMPLING_RATIO, batch_indices, num_threads, out)


@_shared_docs
def ps_roi_pool_backward(grad_output, boxes, input_shape, spatial_scale=1.0, *,
                         batch_indices=None, num_threads=None, out=None):
    """The input gradient torchvision's autograd computes for ``ps_roi_pool``.

    Each bin spreads ``grad / area`` evenly over its window. This reproduces torchvision's
    backward exactly (bit for bit, whatever the thread count), which is NOT the adjoint of
    its forward at the map's far border: the backward clamps windows to rows ``0 ... H``
    and columns ``0 ... W`` (the forward to ``H - 1`` and ``W - 1``), and rounds box corners
    with float32 ``roundf`` even for float64 data (docs/semantics.md §6.2).

    Parameters
    ----------
    {ps_gradient}
    spatial_scale, batch_indices, num_threads
        As for :func:`ps_roi_pool`.
    {gradient_out}

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
    return _ps_backward(_core.ps_roi_pool_backward, grad_output, boxes, input_shape,
                        spatial_scale, _NO_SAMPLING_RATIO, batch_indices, num_threads, out)


__all__ += ["roi_align_rotated", "roi_align_rotated_backward"]


def _rotated_parameters(spatial_scale, sampling_ratio, aligned, clockwise, angle, num_threads):
    """Rotated RoIAlign's scalar parameters, checked in this order, as the kernels take them:
    (scale, ratio, aligned, clockwise, in_degrees, threads)."""
    return (_validate.spatial_scale(spatial_scale), _validate.sampling_ratio(sampling_ratio),
            _validate.flag(aligned, "aligned"), _validate.flag(clockwise, "clockwise"),
            _validate.angle_unit(angle), _validate.num_threads(num_threads))


@_shared_docs
def roi_align_rotated(input, rois, output_size, spatial_scale=1.0, sampling_ratio=0,
                      aligned=True, clockwise=False, *, angle="degrees", batch_indices=None,
                      num_threads=None, out=None):
    """Rotated RoIAlign (average), as detectron2's ``ROIAlignRotated`` (the defaults) and
    mmcv's ``roi_align_rotated`` (``angle="radians"``).

    A rotated RoI ``(cx, cy, w, h, angle)`` is a ``w x h`` rectangle centred on ``(cx, cy)``
    (input-image pixels) turned by ``angle`` about its centre, counter-clockwise as seen in
    the image (detectron2's convention). It is divided into ``output_size`` bins in its own
    frame; each output bin is the mean of ``grid_h x grid_w`` bilinear samples at the centres
    of a regular subdivision of the bin, rotated into the feature map.

    Parameters
    ----------
    {input}
    rois : ndarray (K, 6), list of ndarray (L_i, 5), or ndarray (K, 5)
        ``[batch_index, cx, cy, w, h, angle]`` rows; or one ``(L_i, 5)`` array of
        ``[cx, cy, w, h, angle]`` per image (list position = batch index); or ``(K, 5)``
        coordinates with ``batch_indices``. Same dtype as ``input`` (float16 ``input``:
        float16 or float32 boxes). Batch indices must be integers in ``[0, N)``; coordinates
        finite.
    output_size : int or (int, int)
        Output bins ``(ph, pw)`` along the RoI's height and width; an int ``s`` means
        ``(s, s)``.
    {spatial_scale}
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
    {num_threads}
    {out}

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

    Samples outside the map are skipped by bisection (rows of a turned box by a band around
    the map that allows for rounding), so the cost of a huge box grows with the part of it
    that overlaps the map, not with its size (a ``1e9 x 1e9`` box at 45 degrees takes
    milliseconds); an adaptive grid of more than ``2**31 - 1`` samples per bin along an axis
    raises :class:`pyroi.BoxError`, a fixed ``sampling_ratio`` above 1024 an
    :class:`pyroi.InvalidArgumentError`.

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
    scale, ratio, is_aligned, is_clockwise, in_degrees, threads = _rotated_parameters(
        spatial_scale, sampling_ratio, aligned, clockwise, angle, num_threads)
    coords, roi_images = _validate.boxes(rois, features.dtype, features.shape[0], batch_indices,
                                         name="rois", coords_per_box=5)
    shape = (coords.shape[0], features.shape[1], pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype,
                                    (input, rois, batch_indices, features, coords, roi_images))
    _core.roi_align_rotated_forward(
        features, coords, roi_images, result, pooled_height, pooled_width,
        scale, scale, ratio, is_aligned, is_clockwise, in_degrees, threads,
    )
    return result


@_shared_docs
def roi_align_rotated_backward(grad_output, rois, input_shape, spatial_scale=1.0,
                               sampling_ratio=0, aligned=True, clockwise=False, *,
                               angle="degrees", batch_indices=None, num_threads=None,
                               out=None):
    """Gradient of :func:`roi_align_rotated` with respect to its input.

    Each sample that lands in the map adds ``(g * w) / (grid_h * grid_w)`` to each of its
    four bilinear taps, per input pixel in the order of detectron2's / mmcv's CPU backward
    (RoI, bin, sample, tap), whatever the thread count.

    Parameters
    ----------
    {grad_output}
    rois : ndarray (K, 6), list of ndarray (L_i, 5), or ndarray (K, 5)
        The RoIs given to the forward (same dtype as ``grad_output``).
    {input_shape}
    spatial_scale, sampling_ratio, aligned, clockwise, angle, batch_indices, num_threads
        As for :func:`roi_align_rotated`.
    {gradient_out}

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
    _validate.same_channels(shape, grad)
    _validate.positive_pooled_size(grad)
    scale, ratio, is_aligned, is_clockwise, in_degrees, threads = _rotated_parameters(
        spatial_scale, sampling_ratio, aligned, clockwise, angle, num_threads)
    coords, roi_images = _validate.backward_boxes(rois, grad, shape[0], batch_indices,
                                                  name="rois", coords_per_box=5)
    result = _validate.output_array(out, shape, grad.dtype, (grad_output, rois, batch_indices,
                                    grad, coords, roi_images),
                                    shape_from="input_shape")
    _core.roi_align_rotated_backward(
        grad, coords, roi_images, result, scale, scale, ratio, is_aligned, is_clockwise,
        in_degrees, threads,
    )
    return result


__all__ += ["prroi_pool", "prroi_pool_backward"]


@_shared_docs
def prroi_pool(input, boxes, output_size, spatial_scale=1.0, *, batch_indices=None,
               num_threads=None, out=None):
    """Precise RoI Pooling (IoU-Net's PrRoIPool), as mmcv's ``prroi_pool``.

    Each output bin is the exact integral, divided by the bin's area, of the bilinear
    interpolation of the feature map, the map being zero beyond its border (so the surface
    fades to 0 over the pixel past the last one). There is no sampling grid: the result is a
    smooth function of the box coordinates, whose gradient :func:`prroi_pool_backward`
    returns. Box corners are scaled by ``spatial_scale`` with no half-pixel shift; a box with
    ``x2 <= x1`` or ``y2 <= y1`` has size 0 and gives 0 (docs/semantics.md §12).

    Parameters
    ----------
    {input}
    {boxes}
    {output_size}
    {spatial_scale}
    {batch_indices}
    {num_threads}
    {out}

    Returns
    -------
    ndarray, shape (K, C, ph, pw), dtype of ``input``

    Notes
    -----
    mmcv and the original CUDA module (vacancy/PreciseRoIPooling) agree with this to float32
    rounding. A box of any finite size is accepted: a bin reads at most the map's pixels.

    Examples
    --------
    A 1 x 1 bin over the unit square between four pixels is their mean:

    >>> import numpy as np, pyroi
    >>> x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    >>> pyroi.prroi_pool(x, np.array([[0, 0, 0, 1, 1]], np.float32), 1)
    array([[[[2.5]]]], dtype=float32)
    """
    features = _validate.float_array(input, "input", 4)
    pooled_height, pooled_width = _validate.output_size(output_size)
    scale = _validate.spatial_scale(spatial_scale)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(boxes, features.dtype, features.shape[0], batch_indices)
    shape = (coords.shape[0], features.shape[1], pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype,
                                    (input, boxes, batch_indices, features, coords, roi_images))
    _core.prroi_pool_forward(features, coords, roi_images, result, pooled_height, pooled_width,
                             scale, scale, threads)
    return result


@_shared_docs
def prroi_pool_backward(grad_output, boxes, input_shape, spatial_scale=1.0, *, input=None,
                        batch_indices=None, num_threads=None, out=None):
    """The gradients of :func:`prroi_pool`: with respect to the input and to the boxes.

    The input gradient is the exact adjoint of the forward. The box gradient needs the
    forward's feature map, given as ``input``; without it only the input gradient is
    computed. Where a box has zero width or height (the size is clamped there) its gradient
    is 0, as in mmcv (docs/semantics.md §12).

    Parameters
    ----------
    {grad_output}
    boxes : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``).
    {input_shape}
    spatial_scale : float, default 1.0
        As given to the forward.
    input : ndarray of shape ``input_shape``, optional
        The forward's input (same dtype as ``grad_output``): given, the box gradient is
        computed too.
    {batch_indices}
    {num_threads}
    out : ndarray of shape ``input_shape``, optional
        Array to write the input gradient into (it is overwritten, not accumulated).

    Returns
    -------
    (grad_input, grad_boxes)
        ``grad_input`` of shape ``input_shape`` and the dtype of ``grad_output``;
        ``grad_boxes`` ``None`` without ``input``, else the gradient with respect to
        ``boxes`` in their form: ``(K, 5)`` rows with 0 in the batch-index column, a list of
        ``(L_i, 4)`` arrays, or ``(K, 4)`` rows; in the boxes' dtype (float32 for float16
        data, whose box gradient is computed from the exactly widened float32 tensors).

    Examples
    --------
    Over a ramp rising to the right, a box's mean rises by half of what either vertical edge
    moves right:

    >>> import numpy as np, pyroi
    >>> x = np.tile(np.arange(4, dtype=np.float64), (1, 1, 4, 1))
    >>> boxes = np.array([[0, 0, 0, 2, 2]], np.float64)
    >>> _, grad_boxes = pyroi.prroi_pool_backward(np.ones((1, 1, 1, 1)), boxes, x.shape,
    ...                                           input=x)
    >>> grad_boxes
    array([[0. , 0.5, 0. , 0.5, 0. ]])
    """
    grad = _validate.float_array(grad_output, "grad_output", 4)
    shape = _validate.shape4(input_shape, "input_shape")
    _validate.positive_pooled_size(grad)
    _validate.same_channels(shape, grad)
    scale = _validate.spatial_scale(spatial_scale)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.backward_boxes(boxes, grad, shape[0], batch_indices)
    features = None if input is None else _validate.forward_input(input, grad, shape)
    result = _validate.output_array(out, shape, grad.dtype, (grad_output, boxes, batch_indices,
                                    grad, coords, roi_images, input),
                                    shape_from="input_shape")
    _core.prroi_pool_backward(grad, coords, roi_images, result, scale, scale, threads)
    if features is None:
        return result, None
    grad_boxes, rows = _box_gradient_rows(boxes, batch_indices, coords)
    if _is_half(grad):  # from the exactly widened tensors: the sums run over every channel
        grad, features = _widened(grad), _widened(features)
    _core.prroi_pool_backward_boxes(grad, features, coords, roi_images, rows, scale, scale,
                                    threads)
    return result, _box_gradient_form(grad_boxes, boxes, batch_indices, roi_images)


def _box_gradient_rows(boxes, batch_indices, coords):
    """A box gradient in the boxes' form, zeroed, and its (K, 4) view that the C core writes:
    ``(K, 5)`` rows keep 0 in the batch-index column; a list of ``(L_i, 4)`` arrays or ``(K, 4)``
    boxes with ``batch_indices`` give ``(K, 4)`` (split by :func:`_box_gradient_form`)."""
    rows_form = batch_indices is None and not isinstance(boxes, (list, tuple))
    grad_boxes = np.zeros((coords.shape[0], 5 if rows_form else 4), coords.dtype)
    return grad_boxes, grad_boxes[:, 1:] if rows_form else grad_boxes


def _box_gradient_form(grad_boxes, boxes, batch_indices, roi_images):
    """The box gradient of :func:`_box_gradient_rows` as the boxes were given: one array per
    image for a list of boxes, else the rows."""
    if isinstance(boxes, (list, tuple)) and batch_indices is None:
        ends = np.cumsum(np.bincount(roi_images, minlength=len(boxes)))[:-1]
        return np.split(grad_boxes, ends)
    return grad_boxes


# float16: every operator above also takes float16 data, computed in float32 (see _half.py)
# ---- crop_and_resize (TensorFlow's tf.image.crop_and_resize; docs/semantics.md §13) --------
__all__ += ["crop_and_resize", "crop_and_resize_backward_boxes",
            "crop_and_resize_backward_image"]

def _crop_layout(array, layout):
    """The (N, C, H, W) / (K, C, ch, cw) view of an array given in ``layout``."""
    return array.transpose(0, 3, 1, 2) if _validate.is_channels_last(layout) else array


def _crop_shape(layout, count, channels, height, width):
    """The shape, in ``layout``, of count images of channels x height x width."""
    if _validate.is_channels_last(layout):
        return (count, height, width, channels)
    return (count, channels, height, width)


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear",
                    extrapolation_value=0.0, *, layout="NHWC", placement="tensorflow",
                    num_threads=None, out=None):
    """Crops resized by point sampling, as TensorFlow's ``tf.image.crop_and_resize``.

    Crop ``k`` has ``crop_size = (ch, cw)`` samples of image ``box_indices[k]`` at
    corner-aligned positions of the normalised box ``boxes[k] = [y1, x1, y2, x2]``: sample
    ``(i, j)`` lies at ``y = y1 (H - 1) + i (y2 - y1) (H - 1) / (ch - 1)`` (``ch = 1``: the
    centre ``(y1 + y2) (H - 1) / 2``), ``x`` alike, so 0 and 1 are the first and last pixel
    centres. It is interpolated (``method="bilinear"``) or the nearest pixel
    (``"nearest"``, halves rounded away from zero); a sample outside the image is
    ``extrapolation_value``. Flipped boxes (``y1 > y2``) flip the crop.

    Parameters
    ----------
    image : ndarray, float32 or float64
        ``(N, H, W, C)`` (``layout="NHWC"``, TensorFlow's) or ``(N, C, H, W)``; any strides.
    boxes : ndarray (K, 4)
        ``[y1, x1, y2, x2]`` normalised, finite, dtype of ``image``; may reach outside
        ``[0, 1]``.
    box_indices : ndarray (K,) of int
        Image of each box, in ``[0, N)``.
    crop_size : (int, int)
        ``(ch, cw)``, both positive.
    method : {"bilinear", "nearest"}
    extrapolation_value : float, default 0.0
        Value of samples outside the image (any float, NaN too).
    layout : {"NHWC", "NCHW"}
        Layout of ``image`` and of the result.
    placement : {"tensorflow", "onnxruntime"}
        How float positions round: TensorFlow's ``y1 (H - 1) + i * scale`` for every sample,
        or onnxruntime's ``com.microsoft.CropAndResize``, which places the first and last
        samples at exactly ``y1 (H - 1)`` and ``y2 (H - 1)`` (an ulp apart at most; it can
        move a ``nearest`` pick at a .5 tie).
    num_threads : int, optional
        Threads for this call (default :func:`pyroi.get_num_threads`); results are
        identical for every value.
    out : ndarray, optional
        Array of the result's shape and dtype to write into.

    Returns
    -------
    ndarray, ``(K, ch, cw, C)`` (NHWC) or ``(K, C, ch, cw)`` (NCHW), dtype of ``image``

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> image = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    >>> pyroi.crop_and_resize(image, np.array([[0, 0, 1, 1]], np.float32), [0], (3, 3))[0, :, :, 0]
    array([[1. , 1.5, 2. ],
           [2. , 2.5, 3. ],
           [3. , 3.5, 4. ]], dtype=float32)
    """
    array = _validate.crop_image(image, "image")
    features = _crop_layout(array, layout)
    crop_height, crop_width = _validate.int_pair(_crop_pair(crop_size), "crop_size")
    method_code = _validate.crop_method(method)
    placement_code = _validate.crop_placement(placement)
    fill = _validate.any_real(extrapolation_value, "extrapolation_value")
    threads = _validate.num_threads(num_threads)
    coords, indices = _validate.crop_boxes(boxes, box_indices, features.dtype, features.shape[0])
    shape = _crop_shape(layout, coords.shape[0], features.shape[1], crop_height, crop_width)
    result = _validate.output_array(out, shape, features.dtype,
                                    (image, boxes, box_indices, features, coords, indices),
                                    shape_from="crop_size")
    _core.crop_and_resize_forward(features, coords, indices, _crop_layout(result, layout),
                                  crop_height, crop_width, method_code, placement_code, fill,
                                  threads)
    return result


def _crop_pair(value):
    """crop_size as TensorFlow takes it: a pair (a 1-d array of two ints too)."""
    return list(value) if isinstance(value, np.ndarray) else value


def crop_and_resize_backward_image(grads, boxes, box_indices, image_shape, method="bilinear",
                                   *, layout="NHWC", placement="tensorflow", num_threads=None,
                                   out=None):
    """The gradient of :func:`crop_and_resize` with respect to the image, as TensorFlow's
    ``CropAndResizeGradImage`` (``grads, boxes, box_ind, image_size``).

    Bilinear spreads each element of ``grads`` over its sample's four pixels with the
    interpolation weights; nearest adds it to the picked pixel; samples outside the image
    add nothing. Each pixel sums its terms in TensorFlow's order (box, row, column, tap).

    Parameters
    ----------
    grads : ndarray, float32 or float64
        ``(K, ch, cw, C)`` (NHWC) or ``(K, C, ch, cw)``: the gradient of the crops.
    boxes, box_indices
        As given to the forward.
    image_shape : sequence of 4 ints
        The image's shape in ``layout``: ``(N, H, W, C)`` or ``(N, C, H, W)``.
    method, layout, placement, num_threads
        As for :func:`crop_and_resize`.
    out : ndarray of shape ``image_shape``, optional
        Overwritten with the gradient (not accumulated).

    Returns
    -------
    ndarray of shape ``image_shape``, dtype of ``grads``

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> g = np.ones((1, 1, 1, 1), np.float32)
    >>> pyroi.crop_and_resize_backward_image(g, np.array([[0, 0, 1, 1]], np.float32), [0],
    ...                                      (1, 2, 2, 1))[0, :, :, 0]
    array([[0.25, 0.25],
           [0.25, 0.25]], dtype=float32)
    """
    grad = _validate.crop_image(grads, "grads")
    grad_view = _crop_layout(grad, layout)
    shape = _validate.shape4(image_shape, "image_shape")
    method_code = _validate.crop_method(method)
    placement_code = _validate.crop_placement(placement)
    threads = _validate.num_threads(num_threads)
    nchw = _crop_layout(_ShapeOnly(shape), layout).shape
    if nchw[1] != grad_view.shape[1]:
        raise _validate.ShapeError(
            f"grads has {grad_view.shape[1]} channels but image_shape {shape} has {nchw[1]}")
    coords, indices = _validate.crop_boxes(boxes, box_indices, grad.dtype, nchw[0])
    if grad_view.shape[0] != coords.shape[0]:
        raise _validate.ShapeError(
            f"grads has {grad_view.shape[0]} crops but boxes has {coords.shape[0]} boxes")
    result = _validate.output_array(out, shape, grad.dtype,
                                    (grads, boxes, box_indices, grad, coords, indices),
                                    shape_from="image_shape")
    _core.crop_and_resize_backward_image(grad_view, coords, indices,
                                         _crop_layout(result, layout), method_code,
                                         placement_code, threads)
    return result


class _ShapeOnly:
    """A shape that transposes like an array (for the NCHW view of image_shape)."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def transpose(self, *axes):
        return _ShapeOnly(self.shape[a] for a in axes)


def crop_and_resize_backward_boxes(grads, image, boxes, box_indices, method="bilinear", *,
                                   layout="NHWC", placement="tensorflow", num_threads=None,
                                   out=None):
    """The gradient of :func:`crop_and_resize` with respect to the boxes, as TensorFlow's
    ``CropAndResizeGradBoxes`` (``grads, image, boxes, box_ind``); bilinear only (TensorFlow
    has none for nearest: ``method="nearest"`` raises).

    Each sample adds ``grads * dvalue/dy * dy/dy1`` (and the other three coordinates) with
    ``dy/dy1 = (H - 1)(1 - i / (ch - 1))``, ``dy/dy2 = (H - 1) i / (ch - 1)`` (``ch = 1``:
    both ``(H - 1) / 2``). On a whole pixel, where the crop is not differentiable, the slope
    is that of the next cell (the last pixel: the cell before it); TensorFlow takes 0 there.
    Samples outside the image add nothing.

    Parameters
    ----------
    grads : ndarray, float32 or float64
        ``(K, ch, cw, C)`` (NHWC) or ``(K, C, ch, cw)``.
    image : ndarray
        The forward's image (dtype of ``grads``).
    boxes, box_indices
        As given to the forward.
    method, layout, placement, num_threads
        As for :func:`crop_and_resize`.
    out : ndarray (K, 4), optional

    Returns
    -------
    ndarray (K, 4) ``[dy1, dx1, dy2, dx2]``, dtype of ``grads``

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> image = np.array([1, 2, 3, 4], np.float64).reshape(1, 2, 2, 1)
    >>> g = np.ones((1, 1, 1, 1))
    >>> pyroi.crop_and_resize_backward_boxes(g, image, np.array([[0.2, 0.2, 0.6, 0.6]]), [0])
    array([[1. , 0.5, 1. , 0.5]])
    """
    grad = _validate.crop_image(grads, "grads")
    grad_view = _crop_layout(grad, layout)
    array = _validate.crop_image(image, "image")
    features = _crop_layout(array, layout)
    if array.dtype != grad.dtype:
        raise _validate.DTypeError(f"image must have the dtype of grads ({grad.dtype}), "
                                   f"got {array.dtype}")
    method_code = _validate.crop_method(method)
    if method_code != 0:
        raise _validate.InvalidArgumentError(
            'method: the box gradient exists for "bilinear" only (as in TensorFlow), got '
            f'{method!r}')
    placement_code = _validate.crop_placement(placement)
    threads = _validate.num_threads(num_threads)
    if features.shape[1] != grad_view.shape[1]:
        raise _validate.ShapeError(
            f"grads has {grad_view.shape[1]} channels but image has {features.shape[1]}")
    coords, indices = _validate.crop_boxes(boxes, box_indices, grad.dtype, features.shape[0])
    if grad_view.shape[0] != coords.shape[0]:
        raise _validate.ShapeError(
            f"grads has {grad_view.shape[0]} crops but boxes has {coords.shape[0]} boxes")
    result = _validate.output_array(out, (coords.shape[0], 4), grad.dtype,
                                    (grads, image, boxes, box_indices, grad, features, coords,
                                     indices), shape_from="boxes")
    _core.crop_and_resize_backward_boxes(grad_view, features, coords, indices, result,
                                         method_code, placement_code, threads)
    return result


__all__ += ["deform_roi_pool", "deform_roi_pool_backward"]


@_shared_docs
def deform_roi_pool(input, rois, offset=None, output_size=7, spatial_scale=1.0,
                    sampling_ratio=0, gamma=0.1, *, mask=None, batch_indices=None,
                    num_threads=None, out=None):
    """Deformable RoI pooling, as mmcv's ``deform_roi_pool`` (mmdetection's ``dpool``), and
    with ``mask`` its modulated variant (``ModulatedDeformRoIPoolPack``'s pooling).

    Aligned RoIAlign (``roi_align(..., aligned=True)``) in which bin ``(ph, pw)`` of RoI
    ``k`` is moved as a whole by ``gamma * roi_w * offset[k, 0, ph, pw]`` along x and
    ``gamma * roi_h * offset[k, 1, ph, pw]`` along y (``roi_w``, ``roi_h`` the RoI's size
    on the feature map), then multiplied by ``mask[k, 0, ph, pw]`` when a mask is given
    (docs/semantics.md §14). Without offsets (or with zero offsets) the result is
    ``roi_align(..., aligned=True)``'s bit for bit.

    Parameters
    ----------
    {input}
    rois : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes, in any form :func:`roi_align` takes (mmcv: ``(K, 5)`` rows
        ``[batch_index, x1, y1, x2, y2]``).
    offset : ndarray (K, 2, ph, pw), optional
        Each bin's translation in units of ``gamma`` times the RoI's size (plane 0: x,
        plane 1: y), of the input's dtype; finite. None: no translation.
    {output_size}
    {spatial_scale}
    sampling_ratio : int, default 0
        Samples per bin along each axis; ``<= 0`` means adaptive,
        ``ceil(roi_size / output_size)`` per axis.
    gamma : float, default 0.1
        The offsets' factor.
    mask : ndarray (K, 1, ph, pw), optional
        Each bin's factor (the modulated variant), of the input's dtype.
    {batch_indices}
    {num_threads}
    {out}

    Returns
    -------
    ndarray, shape (K, C, ph, pw), dtype of ``input`` (float32 or float64)

    Examples
    --------
    An offset of 5 (times gamma 0.1 and the RoI's width 2) moves the bin one pixel right:

    >>> import numpy as np, pyroi
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> rois = np.array([[0, 0, 0, 2, 2]], np.float32)
    >>> pyroi.deform_roi_pool(x, rois, None, 1, sampling_ratio=1)
    array([[[[2.5]]]], dtype=float32)
    >>> offset = np.array([[[[5.0]], [[0.0]]]], np.float32)
    >>> pyroi.deform_roi_pool(x, rois, offset, 1, sampling_ratio=1)
    array([[[[3.5]]]], dtype=float32)
    """
    features = _validate.real_array(input, "input", 4, "deform_roi_pool")
    pooled_height, pooled_width = _validate.output_size(output_size)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    factor = _validate.gamma(gamma)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.boxes(rois, features.dtype, features.shape[0], batch_indices,
                                         name="rois")
    count = coords.shape[0]
    shifts = _validate.bin_array(offset, "offset", (count, 2, pooled_height, pooled_width),
                                 features.dtype)
    factors = _validate.bin_array(mask, "mask", (count, 1, pooled_height, pooled_width),
                                  features.dtype)
    shape = (count, features.shape[1], pooled_height, pooled_width)
    result = _validate.output_array(out, shape, features.dtype,
                                    (input, rois, offset, mask, batch_indices, features, coords,
                                     roi_images, shifts, factors))
    _core.deform_roi_pool_forward(features, coords, roi_images, shifts, factors, result,
                                  pooled_height, pooled_width, scale, scale, ratio, factor,
                                  threads)
    return result


@_shared_docs
def deform_roi_pool_backward(grad_output, rois, input_shape, offset=None, spatial_scale=1.0,
                             sampling_ratio=0, gamma=0.1, *, input=None, mask=None,
                             batch_indices=None, num_threads=None, out=None):
    """The gradients of :func:`deform_roi_pool`: with respect to the input, the offsets and
    the mask.

    The input gradient is the exact adjoint of the forward for fixed offsets and mask. The
    offset and mask gradients need the forward's feature map, given as ``input``. The offset
    gradient is the exact derivative of the forward, also for samples in the one-pixel ring
    outside the map, where mmcv's CUDA kernel differs (docs/semantics.md §14.2).

    Parameters
    ----------
    {grad_output}
    rois : ndarray (K, 5), list of ndarray (L_i, 4), or ndarray (K, 4)
        The boxes given to the forward (same dtype as ``grad_output``).
    {input_shape}
    offset : ndarray (K, 2, ph, pw), optional
        As given to the forward.
    spatial_scale, sampling_ratio, gamma
        As given to the forward.
    input : ndarray of shape ``input_shape``, optional
        The forward's input: given, the offset gradient (and with ``mask`` the mask
        gradient) is computed too.
    mask : ndarray (K, 1, ph, pw), optional
        As given to the forward.
    {batch_indices}
    {num_threads}
    out : ndarray of shape ``input_shape``, optional
        Array to write the input gradient into (it is overwritten, not accumulated).

    Returns
    -------
    (grad_input, grad_offset, grad_mask)
        ``grad_input`` of shape ``input_shape``; ``grad_offset`` ``(K, 2, ph, pw)`` (the
        gradient at zero offsets when ``offset`` is None), or None without ``input``;
        ``grad_mask`` ``(K, 1, ph, pw)``, or None without ``input`` or ``mask``; all of
        ``grad_output``'s dtype.

    Examples
    --------
    Over a ramp rising by 1 per column, moving a bin of a 2-pixel-wide RoI by one offset
    unit (gamma 0.1 times the width 2) raises its mean by 0.2:

    >>> import numpy as np, pyroi
    >>> x = np.tile(np.arange(4, dtype=np.float64), (1, 1, 4, 1))
    >>> rois = np.array([[0, 0, 0, 2, 2]], np.float64)
    >>> _, grad_offset, _ = pyroi.deform_roi_pool_backward(
    ...     np.ones((1, 1, 1, 1)), rois, x.shape, sampling_ratio=1, input=x)
    >>> grad_offset
    array([[[[0.2]],
    <BLANKLINE>
            [[0. ]]]])
    """
    grad = _validate.real_array(grad_output, "grad_output", 4, "deform_roi_pool_backward")
    shape = _validate.shape4(input_shape, "input_shape")
    _validate.positive_pooled_size(grad)
    _validate.same_channels(shape, grad)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    factor = _validate.gamma(gamma)
    threads = _validate.num_threads(num_threads)
    coords, roi_images = _validate.backward_boxes(rois, grad, shape[0], batch_indices,
                                                  name="rois")
    bins = (grad.shape[0], 2, grad.shape[2], grad.shape[3])
    shifts = _validate.bin_array(offset, "offset", bins, grad.dtype)
    factors = _validate.bin_array(mask, "mask", bins[:1] + (1,) + bins[2:], grad.dtype)
    features = None if input is None else _validate.forward_input(input, grad, shape)
    result = _validate.output_array(out, shape, grad.dtype,
                                    (grad_output, rois, offset, mask, batch_indices, input,
                                     grad, coords, roi_images, shifts, factors),
                                    shape_from="input_shape")
    _core.deform_roi_pool_backward(grad, coords, roi_images, shifts, factors, result, scale,
                                   scale, ratio, factor, threads)
    if features is None:
        return result, None, None
    grad_offset = _validate.output_array(None, bins, grad.dtype, (), shape_from="grad_output")
    grad_mask = None if factors is None else _validate.output_array(
        None, bins[:1] + (1,) + bins[2:], grad.dtype, (), shape_from="grad_output")
    _core.deform_roi_pool_backward_offset(grad, features, coords, roi_images, shifts, factors,
                                          grad_offset, grad_mask, scale, scale, ratio, factor,
                                          threads)
    return result, grad_offset, grad_mask


# float16: every operator above but crop_and_resize and deform_roi_pool also takes float16
# data, computed in float32 (see _half.py)
from pyroi._half import float16_support as _float16_support  # noqa: E402
from pyroi._half import _is_half, _widened  # noqa: E402

roi_align = _float16_support("input")(roi_align)
roi_align_backward = _float16_support("grad_output")(roi_align_backward)
roi_pool = _float16_support("input")(roi_pool)
roi_pool_backward = _float16_support("grad_output")(roi_pool_backward)
ps_roi_align = _float16_support("input")(ps_roi_align)
ps_roi_align_backward = _float16_support("grad_output")(ps_roi_align_backward)
ps_roi_pool = _float16_support("input")(ps_roi_pool)
ps_roi_pool_backward = _float16_support("grad_output")(ps_roi_pool_backward)
roi_align_rotated = _float16_support("input", boxes=("rois",))(roi_align_rotated)
roi_align_rotated_backward = _float16_support("grad_output", boxes=("rois",))(
    roi_align_rotated_backward)
prroi_pool = _float16_support("input")(prroi_pool)
prroi_pool_backward = _float16_support("grad_output")(prroi_pool_backward)
