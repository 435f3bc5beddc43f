"""pyroi's kernels as PyTorch operators and modules (CPU), with autograd.

Drop-in replacements for ``torchvision.ops``' RoI functions and modules, with the same names,
signatures, defaults and ``repr``, computing the same bits on the CPU much faster. Each is a
real custom operator registered with ``torch.library`` under the namespace ``pyroi``
(``torch.ops.pyroi.roi_align``, ...), taking the arguments of its ``torch.ops.torchvision``
counterpart, with an autograd formula that calls pyroi's backward kernels and a fake (meta)
implementation, so that ``torch.compile`` and ``torch.export`` trace through it.

CPU tensors cross into the C core without copies (NumPy views of their memory, any
strides); results are tensors over pyroi's result memory. float32, float64 and float16 are
computed as in pyroi; bfloat16 in float32, rounded once. Calls use ``torch.get_num_threads()``
threads. A tensor on another device goes to ``torchvision.ops`` when torchvision is
importable; otherwise the call raises :class:`pyroi.InvalidArgumentError` naming the device.

:func:`convert` puts these modules in place of torchvision's in a model, :func:`unconvert`
torchvision's back. ``torch.onnx.export`` writes the operators as standard ONNX nodes
(``RoiAlign``, ``MaxRoiPool``) or nodes of pyroi's ONNX Runtime library: symbolics for the
TorchScript exporter are registered at import, and :func:`onnx_translation_table` is the
dynamo exporter's ``custom_translation_table`` (docs/torch.md, "Exporting to ONNX").

Importing this module imports torch (``import pyroi`` never does).
"""

# May import: _core, _errors, _pyramid, _results, _torch_onnx, _validate, layers, ops (and
# torch, torchvision: this module is imported only by users of pyroi.torch).

from __future__ import annotations

import functools

import numpy as np
import torch  # the real torch: imports are absolute, this module is pyroi.torch
from torch import nn

from pyroi import _core, _pyramid, _results, _torch_onnx, _validate, layers, ops
from pyroi._errors import ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError

__all__ = [
    "MultiScaleRoIAlign",
    "PSRoIAlign",
    "PSRoIPool",
    "RoIAlign",
    "RoIAlignRotated",
    "RoIPool",
    "convert",
    "onnx_translation_table",
    "ps_roi_align",
    "ps_roi_pool",
    "roi_align",
    "roi_align_rotated",
    "roi_pool",
    "unconvert",
]
__all__ += ["PrRoIPool", "prroi_pool"]
__all__ += ["CropAndResize", "crop_and_resize"]
__all__ += ["DeformRoIPool", "DeformRoIPoolPack", "ModulatedDeformRoIPoolPack", "deform_roi_pool"]


# ------------------------------------------------------------------------------------------
# tensors in and out of the C core


def _array(tensor: torch.Tensor):
    """The memory of a CPU tensor as a NumPy array: a view, never a copy (bfloat16, which
    NumPy lacks, is widened to float32 first)."""
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.detach().numpy()


def _compute(function, *args, **kwargs):
    """``function`` (a pyroi.ops operator) on CPU tensors' memory; its results come back as
    tensors sharing pyroi's result memory. bfloat16 data is computed in float32 and the first
    result (the data result) rounded once to bfloat16."""
    narrow = isinstance(args[0], torch.Tensor) and args[0].dtype == torch.bfloat16
    arrays = [_array(a) if isinstance(a, torch.Tensor) else a for a in args]
    result = function(*arrays, num_threads=torch.get_num_threads(), **kwargs)
    tensors = [torch.from_numpy(r) for r in (result if isinstance(result, tuple) else (result,))]
    if narrow:
        tensors[0] = tensors[0].to(torch.bfloat16)
    return tuple(tensors) if isinstance(result, tuple) else tensors[0]


_NUMPY_DTYPES = {torch.float16: "float16", torch.float32: "float32", torch.float64: "float64"}


def _result_tensor(shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised CPU tensor in pyroi's result memory (recycled buffers: a large result
    does not fault in fresh pages on every call, as a new torch allocation does)."""
    if dtype not in _NUMPY_DTYPES:
        return torch.empty(shape, dtype=dtype)
    return torch.from_numpy(_results.empty(shape, _NUMPY_DTYPES[dtype]))


# ------------------------------------------------------------------------------------------
# the custom operators: torch.ops.pyroi.*, with torch.ops.torchvision's argument lists


def _operator(name: str, schema: str, fake):
    """Decorator: the CPU implementation of ``pyroi::name``, with its fake (meta) function."""

    def register(implementation):
        op = torch.library.custom_op(f"pyroi::{name}", implementation, mutates_args=(),
                                     device_types="cpu", schema=schema)
        op.register_fake(fake)
        return op

    return register


def _pooled(input, rois, spatial_scale, pooled_height, pooled_width, *rest):
    return input.new_empty((rois.shape[0], input.shape[1], pooled_height, pooled_width))


def _ps_pooled(input, rois, spatial_scale, pooled_height, pooled_width, *rest):
    channels = input.shape[1] // (pooled_height * pooled_width)
    return input.new_empty((rois.shape[0], channels, pooled_height, pooled_width))


def _pooled_with_argmax(*args):
    output = _pooled(*args)
    return output, torch.empty_like(output, dtype=torch.int32)


# exact: False merges each bin's samples (pyroi.roi_align's exact=False; not bit-exact)
@_operator("roi_align", "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                        "SymInt pooled_width, int sampling_ratio, bool aligned, "
                        "bool exact=True) -> Tensor", _pooled)
def _roi_align_op(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                  aligned, exact=True):
    return _compute(ops.roi_align, input, rois, (pooled_height, pooled_width), spatial_scale,
                    sampling_ratio, aligned, exact=exact)


@_operator("_roi_align_backward",
           "(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
           "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, "
           "SymInt width, int sampling_ratio, bool aligned, bool exact=True) -> Tensor",
           lambda grad, rois, s, ph, pw, n, c, h, w, *rest: grad.new_empty((n, c, h, w)))
def _roi_align_backward_op(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size,
                           channels, height, width, sampling_ratio, aligned, exact=True):
    return _compute(ops.roi_align_backward, grad, rois, (batch_size, channels, height, width),
                    spatial_scale, sampling_ratio, aligned, exact=exact)


@_operator("roi_pool", "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                       "SymInt pooled_width) -> (Tensor, Tensor)", _pooled_with_argmax)
def _roi_pool_op(input, rois, spatial_scale, pooled_height, pooled_width):
    # int32 like torchvision's argmax: half the bytes the backward reads
    return _compute(ops.roi_pool, input, rois, (pooled_height, pooled_width), spatial_scale,
                    return_argmax=True, argmax_dtype="int32")


@_operator("_roi_pool_backward",
           "(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, SymInt pooled_height, "
           "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, "
           "SymInt width) -> Tensor",
           lambda grad, rois, argmax, s, ph, pw, n, c, h, w: grad.new_empty((n, c, h, w)))
def _roi_pool_backward_op(grad, rois, argmax, spatial_scale, pooled_height, pooled_width,
                          batch_size, channels, height, width):
    return _compute(ops.roi_pool_backward, grad, rois, argmax,
                    (batch_size, channels, height, width), (pooled_height, pooled_width),
                    spatial_scale)


@_operator("roi_pool_values", "(Tensor input, Tensor rois, float spatial_scale, "
                              "SymInt pooled_height, SymInt pooled_width) -> Tensor", _pooled)
def _roi_pool_values_op(input, rois, spatial_scale, pooled_height, pooled_width):
    # RoIPool's values alone; autograd keeps the input and finds each bin's pixel again
    return _compute(ops.roi_pool, input, rois, (pooled_height, pooled_width), spatial_scale)


@_operator("_roi_pool_backward_from_input",
           "(Tensor grad, Tensor rois, Tensor input, float spatial_scale, SymInt pooled_height, "
           "SymInt pooled_width) -> Tensor",
           lambda grad, rois, input, *rest: input.new_empty(input.shape))
def _roi_pool_backward_from_input_op(grad, rois, input, spatial_scale, pooled_height,
                                     pooled_width):
    def from_input(grad, rois, input, **threads):
        return ops.roi_pool_backward(grad, rois, input=input,
                                     output_size=(pooled_height, pooled_width),
                                     spatial_scale=spatial_scale, **threads)

    return _compute(from_input, grad, rois, input)


@_operator("ps_roi_align", "(Tensor input, Tensor rois, float spatial_scale, "
                           "SymInt pooled_height, SymInt pooled_width, int sampling_ratio) "
                           "-> Tensor", _ps_pooled)
def _ps_roi_align_op(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    return _compute(ops.ps_roi_align, input, rois, (pooled_height, pooled_width), spatial_scale,
                    sampling_ratio)


@_operator("_ps_roi_align_backward",
           "(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
           "SymInt pooled_width, int sampling_ratio, SymInt batch_size, SymInt channels, "
           "SymInt height, SymInt width) -> Tensor",
           lambda grad, rois, s, ph, pw, ratio, n, c, h, w: grad.new_empty((n, c, h, w)))
def _ps_roi_align_backward_op(grad, rois, spatial_scale, pooled_height, pooled_width,
                              sampling_ratio, batch_size, channels, height, width):
    return _compute(ops.ps_roi_align_backward, grad, rois, (batch_size, channels, height, width),
                    spatial_scale, sampling_ratio)


@_operator("ps_roi_pool", "(Tensor input, Tensor rois, float spatial_scale, "
                          "SymInt pooled_height, SymInt pooled_width) -> Tensor", _ps_pooled)
def _ps_roi_pool_op(input, rois, spatial_scale, pooled_height, pooled_width):
    return _compute(ops.ps_roi_pool, input, rois, (pooled_height, pooled_width), spatial_scale)


@_operator("_ps_roi_pool_backward",
           "(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
           "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, "
           "SymInt width) -> Tensor",
           lambda grad, rois, s, ph, pw, n, c, h, w: grad.new_empty((n, c, h, w)))
def _ps_roi_pool_backward_op(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size,
                             channels, height, width):
    return _compute(ops.ps_roi_pool_backward, grad, rois, (batch_size, channels, height, width),
                    spatial_scale)


@_operator("roi_align_rotated",
           "(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
           "SymInt pooled_width, int sampling_ratio, bool aligned, bool clockwise, str angle) "
           "-> Tensor", _pooled)
def _roi_align_rotated_op(input, rois, spatial_scale, pooled_height, pooled_width,
                          sampling_ratio, aligned, clockwise, angle):
    return _compute(ops.roi_align_rotated, input, rois, (pooled_height, pooled_width),
                    spatial_scale, sampling_ratio, aligned, clockwise, angle=angle)


@_operator("_roi_align_rotated_backward",
           "(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
           "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, "
           "SymInt width, int sampling_ratio, bool aligned, bool clockwise, str angle) "
           "-> Tensor",
           lambda grad, rois, s, ph, pw, n, c, h, w, *rest: grad.new_empty((n, c, h, w)))
def _roi_align_rotated_backward_op(grad, rois, spatial_scale, pooled_height, pooled_width,
                                   batch_size, channels, height, width, sampling_ratio, aligned,
                                   clockwise, angle):
    return _compute(ops.roi_align_rotated_backward, grad, rois,
                    (batch_size, channels, height, width), spatial_scale, sampling_ratio,
                    aligned, clockwise, angle=angle)


def _differentiable(op, backward, shape_at=3, saves=None):
    """Autograd for ``op``: the input gradient is ``backward(grad, rois, [kept,] *scalars)``
    with the forward's scalars and, from position ``shape_at``, the input's (N, C, H, W)
    (torchvision's backward argument lists); the boxes get no gradient, as in torchvision.
    ``saves``: None, ``"argmax"`` (kept: the op's second output) or ``"input"`` (kept: the
    input itself, whose shape is then not passed)."""

    def setup_context(ctx, inputs, output):
        input, rois, *scalars = inputs
        ctx.arguments = (*scalars[:shape_at], *input.shape, *scalars[shape_at:])
        if saves == "argmax":
            ctx.mark_non_differentiable(output[1])
            # no zero-filled gradient for the argmax: as large as the output, never read
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(rois, output[1])
        elif saves == "input":
            ctx.save_for_backward(rois, input)
            ctx.arguments = tuple(scalars)
        else:
            ctx.save_for_backward(rois)
        ctx.num_scalars = len(scalars)

    def gradient(ctx, grad, *_):
        # grad is None only where gradients are not materialised and no output's was asked for
        input_grad = None if grad is None else backward(grad, *ctx.saved_tensors, *ctx.arguments)
        return (input_grad, None) + (None,) * ctx.num_scalars

    op.register_autograd(gradient, setup_context=setup_context)


_differentiable(_roi_pool_op, _roi_pool_backward_op, saves="argmax")
_differentiable(_roi_pool_values_op, _roi_pool_backward_from_input_op, saves="input")
_differentiable(_ps_roi_align_op, _ps_roi_align_backward_op, shape_at=4)
_differentiable(_ps_roi_pool_op, _ps_roi_pool_backward_op)
_differentiable(_roi_align_rotated_op, _roi_align_rotated_backward_op)


# RoIAlign: the input gradient as torchvision's; a box gradient too when the boxes require
# one (torchvision's compiled op gives none: docs/semantics.md §3.8). The forward keeps the
# input only then, so a model whose boxes need no gradient keeps nothing more.

_WIDENED = (torch.float16, torch.bfloat16)  # box gradients are computed in float32 for these


@_operator("_roi_align_backward_boxes",
           "(Tensor grad, Tensor rois, Tensor input, float spatial_scale, int sampling_ratio, "
           "bool aligned) -> Tensor",
           lambda grad, rois, input, *rest: rois.new_empty(rois.shape))
def _roi_align_backward_boxes_op(grad, rois, input, spatial_scale, sampling_ratio, aligned):
    narrow = grad.dtype in _WIDENED
    if narrow:
        grad, input, rois_wide = grad.float(), input.float(), rois.float()
    else:
        rois_wide = rois.to(grad.dtype)
    grad_rois = _compute(ops.roi_align_backward_boxes, grad, input, rois_wide, spatial_scale,
                         sampling_ratio, aligned)
    return grad_rois.to(rois.dtype)


def _roi_align_context(ctx, inputs, output):
    input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned, exact = \
        inputs
    ctx.arguments = (spatial_scale, pooled_height, pooled_width, *input.shape, sampling_ratio,
                     aligned, exact)
    ctx.box_arguments = (spatial_scale, sampling_ratio, aligned)
    ctx.boxes_need_grad = rois.requires_grad
    ctx.save_for_backward(rois, input if rois.requires_grad else None)


def _roi_align_gradient(ctx, grad):
    rois, input = ctx.saved_tensors
    grad_input = grad_rois = None
    if ctx.needs_input_grad[0]:
        grad_input = torch.ops.pyroi._roi_align_backward(grad, rois, *ctx.arguments)
    if ctx.boxes_need_grad and ctx.needs_input_grad[1]:
        grad_rois = torch.ops.pyroi._roi_align_backward_boxes(grad, rois, input,
                                                              *ctx.box_arguments)
    return (grad_input, grad_rois) + (None,) * 6


_roi_align_op.register_autograd(_roi_align_gradient, setup_context=_roi_align_context)


# PrRoIPool (mmcv's prroi_pool): autograd through the input and the boxes, the box gradient
# from the input kept by the forward (docs/semantics.md §12)

@_operator("prroi_pool", "(Tensor input, Tensor rois, float spatial_scale, "
                         "SymInt pooled_height, SymInt pooled_width) -> Tensor", _pooled)
def _prroi_pool_op(input, rois, spatial_scale, pooled_height, pooled_width):
    return _compute(ops.prroi_pool, input, rois, (pooled_height, pooled_width), spatial_scale)


@_operator("_prroi_pool_backward",
           "(Tensor grad, Tensor rois, Tensor input, float spatial_scale) -> (Tensor, Tensor)",
           lambda grad, rois, input, scale: (input.new_empty(input.shape),
                                             rois.new_empty(rois.shape)))
def _prroi_pool_backward_op(grad, rois, input, spatial_scale):
    def both(grad, rois, input, **threads):
        return ops.prroi_pool_backward(grad, rois, input.shape, spatial_scale, input=input,
                                       **threads)

    grad_input, grad_rois = _compute(both, grad, rois, input)
    return grad_input, grad_rois.to(rois.dtype)


def _prroi_pool_context(ctx, inputs, output):
    input, rois, spatial_scale, _, _ = inputs
    ctx.save_for_backward(rois, input)
    ctx.spatial_scale = spatial_scale


def _prroi_pool_gradient(ctx, grad):
    rois, input = ctx.saved_tensors
    grad_input, grad_rois = torch.ops.pyroi._prroi_pool_backward(grad, rois, input,
                                                                 ctx.spatial_scale)
    return (grad_input if ctx.needs_input_grad[0] else None,
            grad_rois if ctx.needs_input_grad[1] else None, None, None, None)


_prroi_pool_op.register_autograd(_prroi_pool_gradient, setup_context=_prroi_pool_context)


# Deformable RoI pooling (mmcv's deform_roi_pool; with a mask its modulated pooling):
# autograd through the input, the offsets and the mask (docs/semantics.md §14). float16 and
# bfloat16 are computed in float32 (pyroi's kernel has float32 and float64).

def _deform_real(*tensors):
    """The tensors (None kept) in the dtype pyroi's deformable kernels take."""
    return tuple(None if t is None else t.float() if t.dtype in _WIDENED else t for t in tensors)


@_operator("deform_roi_pool",
           "(Tensor input, Tensor rois, Tensor? offset, Tensor? mask, float spatial_scale, "
           "SymInt pooled_height, SymInt pooled_width, int sampling_ratio, float gamma) -> Tensor",
           lambda input, rois, offset, mask, scale, ph, pw, *rest: _pooled(input, rois, scale,
                                                                          ph, pw))
def _deform_roi_pool_op(input, rois, offset, mask, spatial_scale, pooled_height, pooled_width,
                        sampling_ratio, gamma):
    data, boxes, shift, factor = _deform_real(input, rois, offset, mask)
    result = _compute(
        lambda x, r, **threads: ops.deform_roi_pool(
            x, r, None if shift is None else _array(shift), (pooled_height, pooled_width),
            spatial_scale, sampling_ratio, gamma,
            mask=None if factor is None else _array(factor), **threads),
        data, boxes.to(data.dtype))
    return result.to(input.dtype)


@_operator("_deform_roi_pool_backward",
           "(Tensor grad, Tensor rois, Tensor input, Tensor? offset, Tensor? mask, "
           "float spatial_scale, int sampling_ratio, float gamma, bool bins) "
           "-> (Tensor, Tensor, Tensor)",
           lambda grad, rois, input, offset, mask, *rest: (
               input.new_empty(input.shape),
               input.new_empty((rois.shape[0], 2) + tuple(grad.shape[2:])),
               input.new_empty((rois.shape[0], 1) + tuple(grad.shape[2:]))))
def _deform_roi_pool_backward_op(grad, rois, input, offset, mask, spatial_scale, sampling_ratio,
                                 gamma, bins):
    """The input gradient, and with ``bins`` the offset and mask gradients (zeros of their
    shapes otherwise, and for an absent mask)."""
    g, data, boxes, shift, factor = _deform_real(grad, input, rois, offset, mask)

    def all_three(g, r, **threads):
        grad_input, grad_offset, grad_mask = ops.deform_roi_pool_backward(
            g, r, tuple(data.shape), None if shift is None else _array(shift), spatial_scale,
            sampling_ratio, gamma, input=_array(data) if bins else None,
            mask=None if factor is None else _array(factor), **threads)
        bin_shape = (r.shape[0], 1) + g.shape[2:]
        if grad_offset is None:
            grad_offset = np.zeros((r.shape[0], 2) + g.shape[2:], g.dtype)
        if grad_mask is None:
            grad_mask = np.zeros(bin_shape, g.dtype)
        return grad_input, grad_offset, grad_mask

    results = _compute(all_three, g, boxes.to(g.dtype))
    return tuple(r.to(input.dtype) for r in results)


def _deform_roi_pool_context(ctx, inputs, output):
    input, rois, offset, mask, spatial_scale, _, _, sampling_ratio, gamma = inputs
    ctx.arguments = (spatial_scale, sampling_ratio, gamma)
    ctx.has = (offset is not None, mask is not None)
    ctx.save_for_backward(rois, input, offset, mask)


def _deform_roi_pool_gradient(ctx, grad):
    rois, input, offset, mask = ctx.saved_tensors
    bins = ctx.needs_input_grad[2] or ctx.needs_input_grad[3]
    grad_input, grad_offset, grad_mask = torch.ops.pyroi._deform_roi_pool_backward(
        grad, rois, input, offset, mask, *ctx.arguments, bins)
    return (grad_input if ctx.needs_input_grad[0] else None, None,
            grad_offset if ctx.has[0] and ctx.needs_input_grad[2] else None,
            grad_mask if ctx.has[1] and ctx.needs_input_grad[3] else None,
            None, None, None, None, None)


_deform_roi_pool_op.register_autograd(_deform_roi_pool_gradient,
                                      setup_context=_deform_roi_pool_context)


# crop_and_resize (TensorFlow's): autograd through the image and, bilinear, the boxes.
# The layout is an argument of the operators ("NCHW", torch's, or "NHWC", TensorFlow's).

def _crops(image, boxes, box_indices, crop_height, crop_width, method, extrapolation_value,
           layout, placement):
    if layout == "NHWC":
        return image.new_empty((boxes.shape[0], crop_height, crop_width, image.shape[3]))
    return image.new_empty((boxes.shape[0], image.shape[1], crop_height, crop_width))


@_operator("crop_and_resize",
           "(Tensor image, Tensor boxes, Tensor box_indices, SymInt crop_height, "
           "SymInt crop_width, str method, float extrapolation_value, str layout, "
           "str placement) -> Tensor", _crops)
def _crop_and_resize_op(image, boxes, box_indices, crop_height, crop_width, method,
                        extrapolation_value, layout, placement):
    return _compute(ops.crop_and_resize, image, boxes, box_indices, (crop_height, crop_width),
                    method, extrapolation_value, layout=layout, placement=placement)


@_operator("_crop_and_resize_backward_image",
           "(Tensor grad, Tensor boxes, Tensor box_indices, SymInt[] image_shape, str method, "
           "str layout, str placement) -> Tensor",
           lambda grad, boxes, indices, shape, *rest: grad.new_empty(shape))
def _crop_and_resize_backward_image_op(grad, boxes, box_indices, image_shape, method, layout,
                                       placement):
    return _compute(ops.crop_and_resize_backward_image, grad, boxes, box_indices,
                    tuple(image_shape), method, layout=layout, placement=placement)


@_operator("_crop_and_resize_backward_boxes",
           "(Tensor grad, Tensor image, Tensor boxes, Tensor box_indices, str layout, "
           "str placement) -> Tensor",
           lambda grad, image, boxes, *rest: boxes.new_empty(boxes.shape))
def _crop_and_resize_backward_boxes_op(grad, image, boxes, box_indices, layout, placement):
    grad_boxes = _compute(ops.crop_and_resize_backward_boxes, grad, image, boxes, box_indices,
                          "bilinear", layout=layout, placement=placement)
    return grad_boxes.to(boxes.dtype)


def _crop_and_resize_context(ctx, inputs, output):
    image, boxes, box_indices, _, _, method, _, layout, placement = inputs
    # nearest is piecewise constant in the boxes: no box gradient (TensorFlow has none)
    ctx.boxes_need_grad = boxes.requires_grad and method == "bilinear"
    ctx.save_for_backward(boxes, box_indices, image if ctx.boxes_need_grad else None)
    ctx.image_shape = list(image.shape)
    ctx.options = (method, layout, placement)


def _crop_and_resize_gradient(ctx, grad):
    boxes, box_indices, image = ctx.saved_tensors
    method, layout, placement = ctx.options
    grad_image = grad_boxes = None
    if ctx.needs_input_grad[0]:
        grad_image = torch.ops.pyroi._crop_and_resize_backward_image(
            grad, boxes, box_indices, ctx.image_shape, method, layout, placement)
    if ctx.boxes_need_grad and ctx.needs_input_grad[1]:
        grad_boxes = torch.ops.pyroi._crop_and_resize_backward_boxes(
            grad, image, boxes, box_indices, layout, placement)
    return (grad_image, grad_boxes) + (None,) * 7


_crop_and_resize_op.register_autograd(_crop_and_resize_gradient,
                                      setup_context=_crop_and_resize_context)


# MultiScaleRoIAlign over float32 / float64 pyramids: every level in one C call, each RoI's
# row written (forward) and read (backward) in place, each level's gradient map written once.
# The level assignment's arguments follow the pooling ones: min_level, max_level,
# canonical_scale, canonical_level, eps (torchvision's LevelMapper).

def _pyramid_pooled(features, rois, scales, pooled_height, pooled_width, *rest):
    return features[0].new_empty((rois.shape[0], features[0].shape[1], pooled_height,
                                  pooled_width))


def _pyramid_rois(rois, first):
    """The boxes and batch indices of (K, 5) ``rois`` for a pyramid like ``first``."""
    return _validate.boxes(_array(rois), first.dtype, first.shape[0])


@_operator("multi_scale_roi_align",
           "(Tensor[] features, Tensor rois, float[] scales, SymInt pooled_height, "
           "SymInt pooled_width, int sampling_ratio, int min_level, int max_level, "
           "float canonical_scale, float canonical_level, float eps) -> Tensor", _pyramid_pooled)
def _multi_scale_roi_align_op(features, rois, scales, pooled_height, pooled_width,
                              sampling_ratio, *mapping):
    first = _array(features[0])
    coords, images = _pyramid_rois(rois, first)
    shape = (coords.shape[0], first.shape[1], pooled_height, pooled_width)
    # the maps by position, as torchvision pools a pyramid that skips a level (_pyramid.py)
    maps, level_scales = _pyramid.positions([_array(feature) for feature in features], scales,
                                            mapping[0], mapping[1], _pyramid.empty_map)
    if not maps:  # no level: every box zero
        return torch.zeros(shape, dtype=features[0].dtype)
    output = _results.empty(shape, first.dtype)
    _core.roi_align_levels_forward(maps, level_scales, coords, images, output, sampling_ratio,
                                   False, *mapping, torch.get_num_threads())
    return torch.from_numpy(output)


@_operator("_multi_scale_roi_align_backward",
           "(Tensor grad, Tensor rois, float[] scales, SymInt[] sizes, int sampling_ratio, "
           "int min_level, int max_level, float canonical_scale, float canonical_level, "
           "float eps) -> Tensor[]",
           lambda grad, rois, scales, sizes, *rest: [
               grad.new_empty(sizes[i:i + 4]) for i in range(0, len(sizes), 4)])
def _multi_scale_roi_align_backward_op(grad, rois, scales, sizes, sampling_ratio, *mapping):
    """The gradient of every level; ``sizes`` holds each level's (N, C, H, W), in order."""
    levels = _pyramid.level_count(mapping[0], mapping[1])
    # maps past the last level receive no box: zero (_pyramid.py)
    gradients = [_result_tensor(tuple(sizes[i:i + 4]), grad.dtype) if i < 4 * levels else
                 torch.zeros(tuple(sizes[i:i + 4]), dtype=grad.dtype)
                 for i in range(0, len(sizes), 4)]
    maps, level_scales = _pyramid.positions([gradient.numpy() for gradient in gradients],
                                            scales, mapping[0], mapping[1], _pyramid.empty_map)
    if maps:
        coords, images = _pyramid_rois(rois, maps[0])
        _core.roi_align_levels_backward(_array(grad), coords, images, maps, level_scales,
                                        sampling_ratio, False, *mapping,
                                        torch.get_num_threads())
    return gradients


def _pyramid_context(ctx, inputs, output):
    features, rois, scales, _, _, *rest = inputs
    ctx.save_for_backward(rois)
    ctx.arguments = (scales, [size for feature in features for size in feature.shape], *rest)
    ctx.num_scalars = len(inputs) - 2


def _pyramid_gradient(ctx, grad):
    gradients = _multi_scale_roi_align_backward_op(grad, *ctx.saved_tensors, *ctx.arguments)
    return (list(gradients), None) + (None,) * ctx.num_scalars


_multi_scale_roi_align_op.register_autograd(_pyramid_gradient, setup_context=_pyramid_context)


# ------------------------------------------------------------------------------------------
# other devices: torchvision.ops


@functools.lru_cache(maxsize=None)
def _torchvision():
    """torchvision, or None when it cannot be imported."""
    try:
        import torchvision
    except ImportError:
        return None
    return torchvision


def _elsewhere(input: torch.Tensor, name: str):
    """``torchvision.ops.<name>`` for an input that is not on the CPU; None for a CPU input."""
    if input.device.type == "cpu":
        return None
    torchvision = _torchvision()
    if torchvision is None or not hasattr(torchvision.ops, name):
        reason = ("torchvision has no such operator" if torchvision is not None
                  else "torchvision, which takes such calls, is not importable")
        raise InvalidArgumentError(
            f"input is on device {input.device}: pyroi.torch.{name} computes on the CPU and "
            f"{reason}")
    return getattr(torchvision.ops, name)


# ------------------------------------------------------------------------------------------
# the functions, with torchvision.ops' signatures


def _data(input) -> torch.Tensor:
    if not isinstance(input, torch.Tensor):
        raise ArgumentTypeError(f"input must be a torch.Tensor, got {type(input).__name__}")
    return input


def _rois(boxes, input: torch.Tensor, name: str = "boxes", coords: int = 4) -> torch.Tensor:
    """``boxes`` as one ``(K, 1 + coords)`` tensor of ``[batch_index, ...]`` rows, from that
    tensor itself or from a list of ``(L_i, coords)`` tensors (list position = image)."""
    if isinstance(boxes, torch.Tensor):
        rois = boxes
    elif isinstance(boxes, (list, tuple)):
        for i, part in enumerate(boxes):
            if not isinstance(part, torch.Tensor) or part.dim() != 2 or part.shape[1] != coords:
                shape = tuple(part.shape) if isinstance(part, torch.Tensor) else type(part).__name__
                raise ShapeError(f"{name}[{i}] must be a tensor of shape (L, {coords}), got {shape}")
        if not boxes:
            return input.new_empty((0, 1 + coords))
        images = torch.cat([torch.full_like(part[:, :1], i) for i, part in enumerate(boxes)])
        rois = torch.cat([images, torch.cat(list(boxes))], dim=1)
    else:
        raise ArgumentTypeError(
            f"{name} must be a (K, {1 + coords}) tensor or a list of (L, {coords}) tensors, "
            f"got {type(boxes).__name__}")
    if rois.device != input.device:
        raise InvalidArgumentError(
            f"{name} is on device {rois.device} but input on {input.device}")
    return rois


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False, *,
              exact=True):
    """RoIAlign, as ``torchvision.ops.roi_align`` (same arguments, same bits, with autograd).

    ``boxes`` is a ``(K, 5)`` tensor of ``[batch_index, x1, y1, x2, y2]`` rows or a list of
    ``(L_i, 4)`` tensors, one per image; see :func:`pyroi.roi_align` for the semantics.
    ``exact=False`` merges each bin's samples per pixel (faster where samples share pixels,
    not bit-exact: :func:`pyroi.roi_align`), forward and gradient.
    Runs ``torch.ops.pyroi.roi_align``; an input on another device goes to torchvision
    (exact whatever ``exact`` says). Boxes that require grad get a gradient (torchvision's
    compiled op gives none): :func:`pyroi.roi_align_backward_boxes`'s, docs/torch.md.
    """
    rois = _rois(boxes, _data(input))
    pooled_height, pooled_width = _validate.output_size(output_size)
    is_exact = not _validate.merge_samples(exact, False)
    elsewhere = _elsewhere(input, "roi_align")
    if elsewhere is not None:
        return elsewhere(input, rois, output_size, spatial_scale, sampling_ratio, aligned)
    return torch.ops.pyroi.roi_align(
        input, rois, _validate.spatial_scale(spatial_scale), pooled_height, pooled_width,
        _validate.sampling_ratio(sampling_ratio), _validate.flag(aligned, "aligned"), is_exact)


def roi_pool(input, boxes, output_size, spatial_scale=1.0):
    """RoIPool, as ``torchvision.ops.roi_pool`` (same arguments, same bits, with autograd);
    see :func:`pyroi.roi_pool`. Runs ``torch.ops.pyroi.roi_pool`` (which keeps an argmax for
    the backward), or ``torch.ops.pyroi.roi_pool_values`` (no argmax; the backward finds each
    bin's pixel again from the input) when no gradient will be asked for or when the C core
    says that is faster on this CPU (small maps). The gradient is the same either way."""
    rois = _rois(boxes, _data(input))
    pooled_height, pooled_width = _validate.output_size(output_size)
    elsewhere = _elsewhere(input, "roi_pool")
    if elsewhere is not None:
        return elsewhere(input, rois, output_size, spatial_scale)
    scale = _validate.spatial_scale(spatial_scale)
    if _keeps_argmax(input, rois, pooled_height, pooled_width):
        output, _ = torch.ops.pyroi.roi_pool(input, rois, scale, pooled_height, pooled_width)
        return output
    return torch.ops.pyroi.roi_pool_values(input, rois, scale, pooled_height, pooled_width)


def _keeps_argmax(input, rois, pooled_height, pooled_width) -> bool:
    """Whether roi_pool should make an argmax for autograd: only when a gradient will be
    asked for (else the values alone are the cheaper call) and the C core's rule says keeping
    the input would be slower on this CPU (maps whose image blocks exceed a core's L2 cache).
    Both give the same gradient bit for bit."""
    if not (torch.is_grad_enabled() and input.requires_grad):
        return False
    if torch.compiler.is_compiling():
        # a traced graph may take other shapes (symbolic sizes) than the ones the rule
        # would see now: it keeps torchvision's argmax, right for every shape
        return True
    return not _core.roi_pool_backward_from_input_pays(tuple(input.shape), rois.shape[0],
                                                       pooled_height, pooled_width)


def ps_roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1):
    """Position-sensitive RoIAlign, as ``torchvision.ops.ps_roi_align`` (same bits, with
    autograd); see :func:`pyroi.ps_roi_align`. Runs ``torch.ops.pyroi.ps_roi_align``."""
    rois = _rois(boxes, _data(input))
    pooled_height, pooled_width = _validate.output_size(output_size)
    elsewhere = _elsewhere(input, "ps_roi_align")
    if elsewhere is not None:
        return elsewhere(input, rois, output_size, spatial_scale, sampling_ratio)
    return torch.ops.pyroi.ps_roi_align(
        input, rois, _validate.spatial_scale(spatial_scale), pooled_height, pooled_width,
        _validate.sampling_ratio(sampling_ratio))


def ps_roi_pool(input, boxes, output_size, spatial_scale=1.0):
    """Position-sensitive RoIPool, as ``torchvision.ops.ps_roi_pool`` (same bits, with
    autograd); see :func:`pyroi.ps_roi_pool`. Runs ``torch.ops.pyroi.ps_roi_pool``."""
    rois = _rois(boxes, _data(input))
    pooled_height, pooled_width = _validate.output_size(output_size)
    elsewhere = _elsewhere(input, "ps_roi_pool")
    if elsewhere is not None:
        return elsewhere(input, rois, output_size, spatial_scale)
    return torch.ops.pyroi.ps_roi_pool(
        input, rois, _validate.spatial_scale(spatial_scale), pooled_height, pooled_width)


def prroi_pool(input, rois, output_size, spatial_scale=1.0):
    """Precise RoI Pooling, as ``mmcv.ops.prroi_pool`` (same arguments), with autograd through
    ``input`` and ``rois`` (the box gradient mmcv computes on CUDA); see
    :func:`pyroi.prroi_pool`. Runs ``torch.ops.pyroi.prroi_pool``; CPU tensors only."""
    rois = _rois(rois, _data(input), "rois")
    pooled_height, pooled_width = _validate.output_size(output_size)
    if input.device.type != "cpu":
        raise InvalidArgumentError(
            f"input is on device {input.device}: pyroi.torch.prroi_pool computes on the CPU")
    return torch.ops.pyroi.prroi_pool(input, rois, _validate.spatial_scale(spatial_scale),
                                      pooled_height, pooled_width)


def deform_roi_pool(input, rois, offset, output_size, spatial_scale=1.0, sampling_ratio=0,
                    gamma=0.1, *, mask=None):
    """Deformable RoI pooling, as ``mmcv.ops.deform_roi_pool`` (same arguments; ``offset``
    None or an empty tensor: no translation), with autograd through ``input``, ``offset`` and
    ``mask`` (``mask``: the modulated pooling, ``ModulatedDeformRoIPoolPack``'s product fused);
    see :func:`pyroi.deform_roi_pool`. Runs ``torch.ops.pyroi.deform_roi_pool``; CPU tensors
    only."""
    rois = _rois(rois, _data(input), "rois")
    pooled_height, pooled_width = _validate.output_size(output_size)
    if input.device.type != "cpu":
        raise InvalidArgumentError(
            f"input is on device {input.device}: pyroi.torch.deform_roi_pool computes on the CPU")
    if isinstance(offset, torch.Tensor) and offset.numel() == 0 and rois.shape[0] > 0:
        offset = None  # mmcv's Python layer passes an empty tensor for "no offset"
    return torch.ops.pyroi.deform_roi_pool(
        input, rois, offset, mask, _validate.spatial_scale(spatial_scale), pooled_height,
        pooled_width, _validate.sampling_ratio(sampling_ratio), _validate.gamma(gamma))


def crop_and_resize(image, boxes, box_indices, crop_size, method="bilinear",
                    extrapolation_value=0.0, *, layout="NCHW", placement="tensorflow"):
    """TensorFlow's ``crop_and_resize`` with its argument names and order (see
    :func:`pyroi.crop_and_resize`), with autograd through ``image`` and, for
    ``method="bilinear"``, ``boxes`` (normalised ``[y1, x1, y2, x2]`` rows). ``layout`` is
    ``"NCHW"`` (torch's; the default here) or ``"NHWC"`` (TensorFlow's, the NumPy
    function's default), for the image and the crops alike. float32 and float64 (bfloat16
    computed in float32); ``box_indices`` an int32 or int64 tensor. Runs
    ``torch.ops.pyroi.crop_and_resize``; CPU tensors only."""
    image = _data(image)
    for name, tensor in (("boxes", boxes), ("box_indices", box_indices)):
        if not isinstance(tensor, torch.Tensor):
            raise ArgumentTypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
        if tensor.device != image.device:
            raise InvalidArgumentError(f"{name} is on device {tensor.device} but image on "
                                       f"{image.device}")
    if image.device.type != "cpu":
        raise InvalidArgumentError(
            f"image is on device {image.device}: pyroi.torch.crop_and_resize computes on the "
            "CPU")
    crop_height, crop_width = _validate.int_pair(crop_size, "crop_size")
    _validate.crop_method(method)
    _validate.is_channels_last(layout)
    _validate.crop_placement(placement)
    return torch.ops.pyroi.crop_and_resize(
        image, boxes, box_indices, crop_height, crop_width, method,
        _validate.any_real(extrapolation_value, "extrapolation_value"), layout, placement)


def roi_align_rotated(input, rois, output_size, spatial_scale=1.0, sampling_ratio=0, aligned=True,
                      clockwise=False, *, angle="degrees"):
    """Rotated RoIAlign with :func:`pyroi.roi_align_rotated`'s arguments (detectron2's
    defaults), with autograd. ``rois`` is a ``(K, 6)`` tensor of ``[batch_index, cx, cy, w, h,
    angle]`` rows or a list of ``(L_i, 5)`` tensors. CPU only: torchvision has no such
    operator. Runs ``torch.ops.pyroi.roi_align_rotated``."""
    rows = _rois(rois, _data(input), "rois", coords=5)
    pooled_height, pooled_width = _validate.output_size(output_size)
    _elsewhere(input, "roi_align_rotated")
    _validate.angle_unit(angle)
    return torch.ops.pyroi.roi_align_rotated(
        input, rows, _validate.spatial_scale(spatial_scale), pooled_height, pooled_width,
        _validate.sampling_ratio(sampling_ratio), _validate.flag(aligned, "aligned"),
        _validate.flag(clockwise, "clockwise"), angle)


# ------------------------------------------------------------------------------------------
# the modules, with torchvision.ops' constructors and repr


class RoIAlign(nn.Module):
    """See :func:`roi_align` (``torchvision.ops.RoIAlign``'s arguments and repr)."""

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False, *,
                 exact=True):
        super().__init__()
        _validate.output_size(output_size)
        self.output_size = output_size
        self.spatial_scale = _validate.spatial_scale(spatial_scale)
        self.sampling_ratio = _validate.integer(sampling_ratio, "sampling_ratio")
        self.aligned = _validate.flag(aligned, "aligned")
        self.exact = not _validate.merge_samples(exact, False)

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio,
                         self.aligned, exact=self.exact)

    def __repr__(self) -> str:
        # torchvision's repr, with exact only where it is not the default
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio}, "
                f"aligned={self.aligned}" + ("" if self.exact else ", exact=False") + ")")


class RoIPool(nn.Module):
    """See :func:`roi_pool` (``torchvision.ops.RoIPool``'s arguments and repr)."""

    def __init__(self, output_size, spatial_scale):
        super().__init__()
        _validate.output_size(output_size)
        self.output_size = output_size
        self.spatial_scale = _validate.spatial_scale(spatial_scale)

    def forward(self, input, rois):
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale})")


class PSRoIAlign(nn.Module):
    """See :func:`ps_roi_align` (``torchvision.ops.PSRoIAlign``'s arguments and repr)."""

    def __init__(self, output_size, spatial_scale, sampling_ratio):
        super().__init__()
        _validate.output_size(output_size)
        self.output_size = output_size
        self.spatial_scale = _validate.spatial_scale(spatial_scale)
        self.sampling_ratio = _validate.integer(sampling_ratio, "sampling_ratio")

    def forward(self, input, rois):
        return ps_roi_align(input, rois, self.output_size, self.spatial_scale,
                            self.sampling_ratio)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio})")


class PSRoIPool(RoIPool):
    """See :func:`ps_roi_pool` (``torchvision.ops.PSRoIPool``'s arguments and repr)."""

    def forward(self, input, rois):
        return ps_roi_pool(input, rois, self.output_size, self.spatial_scale)


class PrRoIPool(nn.Module):
    """See :func:`prroi_pool` (``mmcv.ops.PrRoIPool``'s arguments and repr)."""

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)

    def forward(self, features, rois):
        return prroi_pool(features, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale})")


class DeformRoIPool(nn.Module):
    """See :func:`deform_roi_pool` (``mmcv.ops.DeformRoIPool``'s arguments and forward)."""

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=0, gamma=0.1):
        super().__init__()
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)
        self.sampling_ratio = int(_validate.sampling_ratio(sampling_ratio))
        self.gamma = _validate.gamma(gamma)

    def forward(self, input, rois, offset=None):
        return deform_roi_pool(input, rois, offset, self.output_size, self.spatial_scale,
                               self.sampling_ratio, self.gamma)


def _offset_head(output_size, channels, hidden, outputs, layers):
    """mmcv's fully connected head of the pack modules: ``layers`` Linear layers (ReLU
    between) from the pooled features to ``outputs`` values per bin, the last one zeroed (so
    a new module pools without translation and with mask 0.5)."""
    bins = output_size[0] * output_size[1]
    sizes = [bins * channels] + [hidden] * (layers - 1) + [bins * outputs]
    modules = []
    for i in range(layers):
        modules.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 1 < layers:
            modules.append(nn.ReLU(inplace=True))
    modules[-1].weight.data.zero_()
    modules[-1].bias.data.zero_()
    return nn.Sequential(*modules)


class DeformRoIPoolPack(DeformRoIPool):
    """``mmcv.ops.DeformRoIPoolPack``: pools once without offsets, predicts them with a
    three-layer head (``offset_fc``, mmcv's layers and parameter names, so its state dicts
    load), and pools again with them."""

    def __init__(self, output_size, output_channels, deform_fc_channels=1024, spatial_scale=1.0,
                 sampling_ratio=0, gamma=0.1):
        super().__init__(output_size, spatial_scale, sampling_ratio, gamma)
        self.output_channels = output_channels
        self.deform_fc_channels = deform_fc_channels
        self.offset_fc = _offset_head(self.output_size, output_channels, deform_fc_channels, 2, 3)

    def _offsets(self, input, rois):
        if input.shape[1] != self.output_channels:
            raise ShapeError(f"input has {input.shape[1]} channels but the module was built for "
                             f"{self.output_channels}")
        x = deform_roi_pool(input, rois, None, self.output_size, self.spatial_scale,
                            self.sampling_ratio, self.gamma)
        return x.reshape(x.shape[0], -1), (x.shape[0], 2) + tuple(self.output_size)

    def forward(self, input, rois):
        x, shape = self._offsets(input, rois)
        return deform_roi_pool(input, rois, self.offset_fc(x).view(shape), self.output_size,
                               self.spatial_scale, self.sampling_ratio, self.gamma)


class ModulatedDeformRoIPoolPack(DeformRoIPoolPack):
    """``mmcv.ops.ModulatedDeformRoIPoolPack``: as :class:`DeformRoIPoolPack`, and a
    two-layer head (``mask_fc``, sigmoid output) whose mask multiplies each bin."""

    def __init__(self, output_size, output_channels, deform_fc_channels=1024, spatial_scale=1.0,
                 sampling_ratio=0, gamma=0.1):
        super().__init__(output_size, output_channels, deform_fc_channels, spatial_scale,
                         sampling_ratio, gamma)
        self.mask_fc = _offset_head(self.output_size, output_channels, deform_fc_channels, 1, 2)
        self.mask_fc.append(nn.Sigmoid())

    def forward(self, input, rois):
        x, shape = self._offsets(input, rois)
        offset = self.offset_fc(x).view(shape)
        mask = self.mask_fc(x).view((shape[0], 1) + shape[2:])
        return deform_roi_pool(input, rois, offset, self.output_size, self.spatial_scale,
                               self.sampling_ratio, self.gamma, mask=mask)


class CropAndResize(nn.Module):
    """See :func:`crop_and_resize` (:class:`pyroi.CropAndResize`'s arguments; NCHW by
    default, as torch's tensors)."""

    def __init__(self, crop_size, method="bilinear", extrapolation_value=0.0, *,
                 layout="NCHW", placement="tensorflow"):
        super().__init__()
        _validate.crop_layer_options(self, crop_size, method, extrapolation_value, layout,
                                     placement)

    def forward(self, image, boxes, box_indices):
        return crop_and_resize(image, boxes, box_indices, self.crop_size, self.method,
                               self.extrapolation_value, layout=self.layout,
                               placement=self.placement)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(crop_size={self.crop_size}, method={self.method!r}, "
                f"extrapolation_value={self.extrapolation_value}, layout={self.layout!r}, "
                f"placement={self.placement!r})")


class RoIAlignRotated(nn.Module):
    """See :func:`roi_align_rotated` (:class:`pyroi.RoIAlignRotated`'s arguments and repr)."""

    def __init__(self, output_size, spatial_scale=1.0, sampling_ratio=0, aligned=True,
                 clockwise=False, *, angle="degrees"):
        super().__init__()
        self.output_size = _validate.output_size(output_size)
        self.spatial_scale = _validate.spatial_scale(spatial_scale)
        self.sampling_ratio = _validate.integer(sampling_ratio, "sampling_ratio")
        self.aligned = _validate.flag(aligned, "aligned")
        self.clockwise = _validate.flag(clockwise, "clockwise")
        _validate.angle_unit(angle)
        self.angle = angle

    def forward(self, input, rois):
        return roi_align_rotated(input, rois, self.output_size, self.spatial_scale,
                                 self.sampling_ratio, self.aligned, self.clockwise,
                                 angle=self.angle)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio}, "
                f"aligned={self.aligned}, clockwise={self.clockwise}, angle={self.angle!r})")


class _LevelMapper:
    """torchvision's ``LevelMapper`` (FPN paper, eqn. 1: the pyramid level of each box), its
    attributes and call, computed in pyroi's C core."""

    def __init__(self, k_min, k_max, canonical_scale=224, canonical_level=4, eps=1e-6):
        self.k_min = k_min
        self.k_max = k_max
        self.s0 = canonical_scale
        self.lvl0 = canonical_level
        self.eps = eps

    def __call__(self, boxlists) -> torch.Tensor:
        return self.levels(torch.cat(list(boxlists)))

    def levels(self, boxes: torch.Tensor) -> torch.Tensor:
        """Level index (from 0; -1 for none) of each (x1, y1, x2, y2) row of CPU ``boxes``."""
        coords = _array(boxes if boxes.dtype in (torch.float32, torch.float64) else boxes.float())
        levels = torch.empty(boxes.shape[0], dtype=torch.int64)
        _core.fpn_levels(coords, levels.numpy(), self.k_min, self.k_max, float(self.s0),
                         float(self.lvl0), self.eps)
        return levels


def _pyramid_checks(features) -> None:
    """The levels of a pyramid agree in dtype, batch and channels (named errors before C)."""
    first = features[0]
    for level, feature in enumerate(features):
        if feature.dim() != 4:
            raise ShapeError(f"x's level {level} must be (N, C, H, W), got {tuple(feature.shape)}")
        if feature.dtype != first.dtype:
            raise DTypeError(
                f"x's level {level} has dtype {feature.dtype}, the first level {first.dtype}")
        if feature.shape[:2] != first.shape[:2]:
            raise ShapeError(f"x's level {level} has (N, C) {tuple(feature.shape[:2])}, the "
                             f"first level {tuple(first.shape[:2])}")


class MultiScaleRoIAlign(nn.Module):
    """RoIAlign over a feature pyramid, as ``torchvision.ops.MultiScaleRoIAlign`` (its
    arguments, attributes ``scales`` and ``map_levels``, inferred on the first call, and
    repr), each level pooled by :func:`roi_align`. A pyramid on another device goes to
    torchvision's module."""

    def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224,
                 canonical_level=4, strict_levels=False):
        super().__init__()
        # pyroi's NumPy layer checks the arguments and infers the scales (strict_levels: see
        # pyroi.MultiScaleRoIAlign; by default a pyramid that skips a level is pooled as
        # torchvision pools it, with a warning)
        self._layer = layers.MultiScaleRoIAlign(featmap_names, output_size, sampling_ratio,
                                                canonical_scale=canonical_scale,
                                                canonical_level=canonical_level,
                                                strict_levels=strict_levels)
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.scales = None
        self.map_levels = None
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level

    def forward(self, x, boxes, image_shapes):
        if not isinstance(x, dict):
            raise ArgumentTypeError(
                f"x must be a dict of name -> (N, C, H, W) tensor, got {type(x).__name__}")
        features = [value for name, value in x.items() if name in self.featmap_names]
        if not features:
            raise InvalidArgumentError(
                f"x has none of featmap_names {self.featmap_names}; keys: {list(x)}")
        if self.scales is None or self.map_levels is None:
            self._layer._infer_scales([(name, value) for name, value in x.items()
                                       if name in self.featmap_names], image_shapes)
            self.scales = self._layer.scales
            self.map_levels = _LevelMapper(self._layer.min_level, self._layer.max_level,
                                           self.canonical_scale, self.canonical_level)
        if features[0].device.type != "cpu":
            return self._elsewhere(x, boxes, image_shapes, features[0].device)
        rois = _rois(boxes, _data(features[0]))
        if len(features) == 1:
            return roi_align(features[0], rois, self.output_size, self.scales[0],
                             self.sampling_ratio)
        if _torch_onnx.exporting_by_trace():
            # torchvision's per-level graph, so the ONNX file is the one torchvision's gives
            parts = list(boxes) if isinstance(boxes, (list, tuple)) else [rois[:, 1:]]
            return _torch_onnx.traced_pyramid(features, parts, rois, self.scales,
                                              self.map_levels, self.output_size,
                                              self.sampling_ratio)
        if all(feature.dtype in (torch.float32, torch.float64) for feature in features):
            _pyramid_checks(features)
            mapper = self.map_levels
            return torch.ops.pyroi.multi_scale_roi_align(
                features, rois, list(self.scales), *self.output_size, self.sampling_ratio,
                mapper.k_min, mapper.k_max, float(mapper.s0), float(mapper.lvl0),
                float(mapper.eps))
        # float16 / bfloat16: each level by roi_align, the rows scattered here
        levels = self.map_levels.levels(rois[:, 1:])
        result = _result_tensor((rois.shape[0], features[0].shape[1], *self.output_size),
                                features[0].dtype)
        # boxes of no level (negative area) or of a level with no map at its position
        # (a pyramid that skips one): zeros, as torchvision
        result[(levels < 0) | (levels >= len(features))] = 0
        for level, (feature, scale) in enumerate(zip(features, self.scales)):
            rows = torch.where(levels == level)[0]
            pooled = roi_align(feature, rois[rows], self.output_size, scale, self.sampling_ratio)
            result[rows] = pooled.to(result.dtype)
        return result

    def _elsewhere(self, x, boxes, image_shapes, device):
        torchvision = _torchvision()
        if torchvision is None:
            raise InvalidArgumentError(
                f"x is on device {device}: pyroi.torch.MultiScaleRoIAlign computes on the CPU "
                f"and torchvision, which takes such calls, is not importable")
        pooler = torchvision.ops.MultiScaleRoIAlign(
            self.featmap_names, self.output_size, self.sampling_ratio,
            canonical_scale=self.canonical_scale, canonical_level=self.canonical_level)
        pooler.scales = self.scales
        pooler.map_levels = torchvision.ops.poolers.LevelMapper(
            self.map_levels.k_min, self.map_levels.k_max, self.map_levels.s0,
            self.map_levels.lvl0, self.map_levels.eps)
        return pooler(x, boxes, image_shapes)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(featmap_names={self.featmap_names}, "
                f"output_size={self.output_size}, sampling_ratio={self.sampling_ratio})")


# ------------------------------------------------------------------------------------------
# convert: pyroi's modules in place of torchvision's


def _replacement(module: nn.Module):
    """pyroi's equivalent of a torchvision.ops RoI module (same parameters and state), or
    None for any other module (subclasses included: they may compute something else)."""
    torchvision = _torchvision()
    if torchvision is None:
        return None
    tv = torchvision.ops
    kind = type(module)
    if kind is tv.RoIAlign:
        return RoIAlign(module.output_size, module.spatial_scale, module.sampling_ratio,
                        module.aligned)
    if kind is tv.RoIPool:
        return RoIPool(module.output_size, module.spatial_scale)
    if kind is tv.PSRoIAlign:
        return PSRoIAlign(module.output_size, module.spatial_scale, module.sampling_ratio)
    if kind is tv.PSRoIPool:
        return PSRoIPool(module.output_size, module.spatial_scale)
    if kind is tv.MultiScaleRoIAlign:
        pooler = MultiScaleRoIAlign(module.featmap_names, module.output_size,
                                    module.sampling_ratio, canonical_scale=module.canonical_scale,
                                    canonical_level=module.canonical_level)
        if module.scales is not None and module.map_levels is not None:
            mapper = module.map_levels
            pooler.scales = list(module.scales)
            pooler.map_levels = _LevelMapper(mapper.k_min, mapper.k_max, mapper.s0, mapper.lvl0,
                                             mapper.eps)
        return pooler
    return None


def convert(module: nn.Module) -> nn.Module:
    """Replace every ``torchvision.ops`` ``RoIAlign``, ``RoIPool``, ``PSRoIAlign``,
    ``PSRoIPool`` and ``MultiScaleRoIAlign`` in ``module`` by pyroi's equivalent, in place.

    Shaped like ``torch.nn.SyncBatchNorm.convert_sync_batchnorm``: submodules are replaced in
    their parents, and the return value is ``module`` itself, or its replacement when
    ``module`` is one of those classes. The replacements keep the parameters, the state
    (MultiScaleRoIAlign's inferred ``scales`` and level mapping) and ``training``; nothing
    else changes. Exact classes only: a subclass of them is left alone.

    Examples
    --------
    >>> import torchvision, pyroi.torch
    >>> model = torchvision.models.detection.maskrcnn_resnet50_fpn(
    ...     weights=None, weights_backbone=None)
    >>> model = pyroi.torch.convert(model)
    >>> model.roi_heads.box_roi_pool
    MultiScaleRoIAlign(featmap_names=['0', '1', '2', '3'], output_size=(7, 7), sampling_ratio=2)
    >>> type(model.roi_heads.box_roi_pool).__module__
    'pyroi.torch'
    """
    converted = _replacement(module)
    if converted is None:
        converted = module
    else:
        converted.train(module.training)
    for name, child in module.named_children():
        converted.add_module(name, convert(child))
    return converted


# ------------------------------------------------------------------------------------------
# unconvert: torchvision's modules back


def _original(module, tv):
    """torchvision's equivalent of a pyroi.torch RoI module (same parameters and state), or
    None for any other module (pyroi's modules torchvision has no class for stay)."""
    kind = type(module)
    if kind is RoIAlign:
        return tv.RoIAlign(module.output_size, module.spatial_scale, module.sampling_ratio,
                           module.aligned)
    if kind is RoIPool:
        return tv.RoIPool(module.output_size, module.spatial_scale)
    if kind is PSRoIAlign:
        return tv.PSRoIAlign(module.output_size, module.spatial_scale, module.sampling_ratio)
    if kind is PSRoIPool:
        return tv.PSRoIPool(module.output_size, module.spatial_scale)
    if kind is MultiScaleRoIAlign:
        pooler = tv.MultiScaleRoIAlign(module.featmap_names, module.output_size,
                                       module.sampling_ratio,
                                       canonical_scale=module.canonical_scale,
                                       canonical_level=module.canonical_level)
        if module.scales is not None and module.map_levels is not None:
            mapper = module.map_levels
            pooler.scales = list(module.scales)
            pooler.map_levels = tv.poolers.LevelMapper(mapper.k_min, mapper.k_max, mapper.s0,
                                                       mapper.lvl0, mapper.eps)
        return pooler
    return None


def unconvert(module: nn.Module) -> nn.Module:
    """The inverse of :func:`convert`: every pyroi.torch ``RoIAlign``, ``RoIPool``,
    ``PSRoIAlign``, ``PSRoIPool`` and ``MultiScaleRoIAlign`` in ``module`` replaced by
    torchvision's, in place, with the same parameters, state and ``training``; the return
    value is ``module``, or its replacement when ``module`` is one of those classes. Exact
    classes only; pyroi's modules torchvision has no class for (``RoIAlignRotated``,
    ``PrRoIPool``, ``CropAndResize``) stay. ``RoIAlign(exact=False)`` becomes torchvision's
    exact RoIAlign. Needs torchvision.

    Examples
    --------
    >>> import torchvision, pyroi.torch
    >>> model = torchvision.models.detection.fasterrcnn_resnet50_fpn(
    ...     weights=None, weights_backbone=None)
    >>> model = pyroi.torch.unconvert(pyroi.torch.convert(model))
    >>> type(model.roi_heads.box_roi_pool).__module__
    'torchvision.ops.poolers'
    """
    import torchvision  # what the modules go back to

    def swap(module):
        original = _original(module, torchvision.ops)
        if original is None:
            original = module
        else:
            original.train(module.training)
        for name, child in module.named_children():
            original.add_module(name, swap(child))
        return original

    return swap(module)


# ------------------------------------------------------------------------------------------
# ONNX export


def onnx_translation_table() -> dict:
    """The ``custom_translation_table`` that ``torch.onnx.export(..., dynamo=True)`` needs
    for a model using pyroi.torch's operators: ``{torch.ops.pyroi.<op>.default: function}``,
    writing the nodes the TorchScript exporter writes (registered at import): standard
    ``RoiAlign`` / ``MaxRoiPool``, and nodes of pyroi's ONNX Runtime library for the rest
    (docs/torch.md, "Exporting to ONNX"). The export needs onnxscript; e.g.
    ``torch.onnx.export(model, args, dynamo=True,
    custom_translation_table=pyroi.torch.onnx_translation_table())``.

    Examples
    --------
    >>> import torch, pyroi.torch
    >>> table = pyroi.torch.onnx_translation_table()
    >>> torch.ops.pyroi.roi_align.default in table
    True
    """
    return _torch_onnx.translation_table()


_torch_onnx.register_symbolics()
