"""ONNX export of pyroi.torch's operators, for both of torch's exporters.

``RoIAlign``, ``RoIPool`` and ``MultiScaleRoIAlign`` become the standard nodes torchvision's
own export writes (``RoiAlign``, ``MaxRoiPool``), so a converted model exports to the file
the unconverted one gives. The operators ONNX has no node for become nodes of pyroi's ONNX
Runtime custom-op library (domain ``pyroi``; ``mmcv::PrRoIPool`` for PrRoIPool), with that
library's attribute names: docs/onnxruntime.md, docs/torch.md ("Exporting to ONNX").

Each node is written once, against a small writer interface (``op``, ``constant``,
``tensor``, ``dtype``, ``opset``) with two implementations: the TorchScript exporter's graph context (``_ScriptWriter``, symbolics
registered by :func:`register_symbolics` when pyroi.torch is imported) and onnxscript's
tracer (``_ScriptlessWriter``, the functions of :func:`translation_table`, for
``torch.onnx.export(..., dynamo=True, custom_translation_table=...)``).
"""

# May import: _errors (and torch, onnxscript: this module is imported by pyroi.torch only).

from __future__ import annotations

import math

import torch

from pyroi._errors import InvalidArgumentError

_FIRST_OPSET = 11  # torchvision's too: RoiAlign-10 with batch indices as int64
_ALIGNED_OPSET = 16  # RoiAlign gains coordinate_transformation_mode
DOMAIN = "pyroi"  # pyroi's ONNX Runtime library (pyroi.onnx.custom_ops_library())
MMCV_DOMAIN = "mmcv"  # the library's home of PrRoIPool, where mmcv's exporter puts it


# ------------------------------------------------------------------------------------------
# writers: one node-building interface over the two exporters


class _ScriptWriter:
    """Nodes into a TorchScript exporter graph (``g`` of a symbolic)."""

    def __init__(self, g):
        self.g = g
        self.opset = g.opset

    def op(self, name, *inputs, domain="", **attributes):
        suffixed = {f"{key}_{_attribute_kind(value)}": value for key, value in attributes.items()}
        inputs = _without_trailing_none(inputs)
        if None in inputs:  # an absent optional input before a present one: ONNX's empty name
            from torch.onnx import symbolic_helper
            inputs = tuple(symbolic_helper._optional_input_placeholder_tensor(self.g)
                           if value is None else value for value in inputs)
        if not domain:
            return self.g.op(name, *inputs, **suffixed)
        output = self.g.op(f"{domain}::{name}", *inputs, **suffixed)
        # a custom node's output: the input's dtype, rank 4 (the exporter cannot infer it)
        output.setType(inputs[0].type().with_sizes([None] * 4))
        return output

    def constant(self, values, dtype=torch.int64):
        return self.g.op("Constant", value_t=torch.tensor(values, dtype=dtype))

    def tensor(self, tensor: torch.Tensor):
        """A tensor as an attribute value."""
        return tensor

    def dtype(self, value) -> torch.dtype:
        # the JIT value's scalar type (None where the trace recorded none: float32)
        return {"Double": torch.float64, "Half": torch.float16,
                "BFloat16": torch.bfloat16}.get(value.type().scalarType(), torch.float32)


class _ScriptlessWriter:
    """Nodes into the dynamo exporter's graph (onnxscript's tracer, while a translation
    function runs)."""

    opset = 18  # torch's torchlib opset; the exporter converts the model to the one asked for

    def op(self, name, *inputs, domain="", **attributes):
        import onnxscript
        if not domain:
            return getattr(onnxscript.values.Opset("", self.opset), name)(*inputs, **attributes)
        # onnxscript's tracer needs a schema even for a custom node: one made from the call
        inputs = _without_trailing_none(inputs)
        schema = _custom_schema(domain, name, len(inputs),
                                tuple((key, type(value)) for key, value in attributes.items()))
        return onnxscript.values.Op(onnxscript.values.Opset(domain, 1), name, schema)(
            *inputs, **attributes)

    def constant(self, values, dtype=torch.int64):
        import onnxscript
        return onnxscript.opset18.Constant(value=self.tensor(torch.tensor(values, dtype=dtype)))

    def tensor(self, tensor: torch.Tensor):
        import onnxscript
        return onnxscript.ir.tensor(tensor.numpy())

    def dtype(self, value) -> torch.dtype:
        # ONNX's TensorProto data type codes
        return {1: torch.float32, 11: torch.float64, 10: torch.float16,
                16: torch.bfloat16}[int(value.dtype)]


def _without_trailing_none(inputs):
    inputs = list(inputs)
    while inputs and inputs[-1] is None:
        inputs.pop()
    return tuple(inputs)


_TENSOR_TYPES = ["tensor(float)", "tensor(double)", "tensor(float16)", "tensor(bfloat16)",
                 "tensor(int64)", "tensor(int32)"]


_SCHEMAS: dict = {}


def _custom_schema(domain, name, inputs, attributes):
    """An ONNX OpSchema for a node of pyroi's library: ``inputs`` tensors (the output of the
    first one's type), ``attributes`` the (name, Python type) of its attributes."""
    key = (domain, name, inputs, attributes)
    if key not in _SCHEMAS:
        _SCHEMAS[key] = _make_schema(*key)
    return _SCHEMAS[key]


def _make_schema(domain, name, inputs, attributes):
    from onnx.defs import OpSchema
    # every input after the first optional: an absent one is written as ONNX's empty name
    option = OpSchema.FormalParameterOption
    kinds = {bool: OpSchema.AttrType.INT, int: OpSchema.AttrType.INT,
             float: OpSchema.AttrType.FLOAT, str: OpSchema.AttrType.STRING}
    return OpSchema(
        name, domain, 1,
        inputs=[OpSchema.FormalParameter(f"input{i}", f"T{i}", "",
                                         param_option=option.Single if i == 0 else
                                         option.Optional) for i in range(inputs)],
        outputs=[OpSchema.FormalParameter("output", "T0")],
        type_constraints=[(f"T{i}", _TENSOR_TYPES, "") for i in range(inputs)],
        attributes=[OpSchema.Attribute(key, kinds[kind], "", required=False)
                    for key, kind in attributes])


def _attribute_kind(value) -> str:
    """The TorchScript exporter's attribute suffix for a Python value (ints, bools and lists
    of ints: i)."""
    if isinstance(value, float):
        return "f"
    if isinstance(value, str):
        return "s"
    if isinstance(value, torch.Tensor):
        return "t"
    return "i"


# ------------------------------------------------------------------------------------------
# the nodes


def _squeeze(w, value, axis):
    if w.opset < 13:  # axes became an input in Squeeze-13
        return w.op("Squeeze", value, axes=[axis])
    return w.op("Squeeze", value, w.constant([axis]))


def _split_rois(w, rois, columns=(1, 2, 3, 4)):
    """(K, 1 + n) rows -> the box columns and the batch indices (K,) int64: ONNX's RoiAlign
    takes them apart. The same nodes as torchvision's export (Gather, Squeeze, Cast)."""
    indices = _squeeze(w, w.op("Gather", rois, w.constant([0]), axis=1), 1)
    indices = w.op("Cast", indices, to=7)  # INT64
    return w.op("Gather", rois, w.constant(list(columns)), axis=1), indices


def _adaptive(sampling_ratio: int) -> int:
    # pyroi and torchvision sample adaptively below 1; ONNX's attribute says so with 0
    return max(int(sampling_ratio), 0)


def roi_align_node(w, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                   aligned):
    """``pyroi::roi_align`` as a standard ``RoiAlign`` (avg mode)."""
    if w.opset < _ALIGNED_OPSET and aligned:
        raise InvalidArgumentError(
            f"RoIAlign with aligned=True needs ONNX opset {_ALIGNED_OPSET} or later (its "
            f"coordinate_transformation_mode); opset {w.opset} RoiAlign never shifts by half "
            f"a pixel, which is aligned=False. Export with opset_version>={_ALIGNED_OPSET}")
    boxes, indices = _split_rois(w, rois)
    attributes = dict(spatial_scale=float(spatial_scale), output_height=int(pooled_height),
                      output_width=int(pooled_width), sampling_ratio=_adaptive(sampling_ratio))
    if w.opset >= _ALIGNED_OPSET:
        attributes["coordinate_transformation_mode"] = (
            "half_pixel" if aligned else "output_half_pixel")
    return w.op("RoiAlign", input, boxes, indices, **attributes)


def roi_pool_node(w, input, rois, spatial_scale, pooled_height, pooled_width):
    """``pyroi::roi_pool`` / ``roi_pool_values`` as a standard ``MaxRoiPool`` ((K, 5) rows)."""
    return w.op("MaxRoiPool", input, rois, pooled_shape=[int(pooled_height), int(pooled_width)],
                spatial_scale=float(spatial_scale))


def ps_roi_align_node(w, input, rois, spatial_scale, pooled_height, pooled_width,
                      sampling_ratio):
    boxes, indices = _split_rois(w, rois)
    return w.op("PSRoIAlign", input, boxes, indices, domain=DOMAIN,
                output_height=int(pooled_height), output_width=int(pooled_width),
                spatial_scale=float(spatial_scale), sampling_ratio=_adaptive(sampling_ratio))


def ps_roi_pool_node(w, input, rois, spatial_scale, pooled_height, pooled_width):
    boxes, indices = _split_rois(w, rois)
    return w.op("PSRoIPool", input, boxes, indices, domain=DOMAIN,
                output_height=int(pooled_height), output_width=int(pooled_width),
                spatial_scale=float(spatial_scale))


def roi_align_rotated_node(w, input, rois, spatial_scale, pooled_height, pooled_width,
                           sampling_ratio, aligned, clockwise, angle):
    boxes, indices = _split_rois(w, rois, columns=(1, 2, 3, 4, 5))
    return w.op("RoIAlignRotated", input, boxes, indices, domain=DOMAIN,
                output_height=int(pooled_height), output_width=int(pooled_width),
                spatial_scale=float(spatial_scale), sampling_ratio=_adaptive(sampling_ratio),
                aligned=int(bool(aligned)), clockwise=int(bool(clockwise)), angle=str(angle))


def prroi_pool_node(w, input, rois, spatial_scale, pooled_height, pooled_width):
    return w.op("PrRoIPool", input, rois, domain=MMCV_DOMAIN, pooled_height=int(pooled_height),
                pooled_width=int(pooled_width), spatial_scale=float(spatial_scale))


def deform_roi_pool_node(w, input, rois, offset, mask, spatial_scale, pooled_height,
                         pooled_width, sampling_ratio, gamma):
    # no runtime has this node yet: the torch operator's arguments, as written
    return w.op("DeformRoIPool", input, rois, offset, mask, domain=DOMAIN,
                spatial_scale=float(spatial_scale), pooled_height=int(pooled_height),
                pooled_width=int(pooled_width), sampling_ratio=int(sampling_ratio),
                gamma=float(gamma))


def crop_and_resize_node(w, image, boxes, box_indices, crop_height, crop_width, method,
                         extrapolation_value, layout, placement):
    # the library's node is onnxruntime's contrib CropAndResize: NCHW, TensorFlow's placement
    if layout != "NCHW" or placement != "tensorflow":
        raise InvalidArgumentError(
            f"crop_and_resize exports as pyroi::CropAndResize (NCHW, placement 'tensorflow'); "
            f"this call has layout={layout!r}, placement={placement!r}")
    size = w.constant([int(crop_height), int(crop_width)])
    return w.op("CropAndResize", image, boxes, box_indices, size, domain=DOMAIN, mode=str(method),
                extrapolation_value=float(extrapolation_value))


def multi_scale_roi_align_nodes(w, features, rois, scales, pooled_height, pooled_width,
                                sampling_ratio, min_level, max_level, canonical_scale,
                                canonical_level, eps):
    """``pyroi::multi_scale_roi_align`` as the computation of torchvision's traced pooler,
    in ONNX nodes: each box's FPN level (eqn. 1: floor(lvl0 + log2(sqrt(area) / s0) + eps), clamped), then per level
    the rows of that level gathered, pooled by one ``RoiAlign`` and scattered into a zeroed
    result. Levels with no map at their position (a pyramid that skips one) stay zero."""
    dtype = w.dtype(rois)
    columns = [w.op("Gather", rois, w.constant(column), axis=1) for column in (1, 2, 3, 4)]
    area = w.op("Mul", w.op("Sub", columns[2], columns[0]), w.op("Sub", columns[3], columns[1]))
    ratio = w.op("Div", w.op("Sqrt", area), w.constant(float(canonical_scale), dtype))
    log2 = w.op("Div", w.op("Log", ratio), w.constant(math.log(2.0), dtype))
    level = w.op("Floor", w.op("Add", w.op("Add", log2, w.constant(float(canonical_level), dtype)),
                               w.constant(float(eps), dtype)))
    level = w.op("Clip", level, w.constant(float(min_level), dtype),
                 w.constant(float(max_level), dtype))
    level = w.op("Sub", w.op("Cast", level, to=7), w.constant(int(min_level)))

    shape = w.op("Concat", w.op("Slice", w.op("Shape", rois), w.constant([0]), w.constant([1])),
                 w.op("Slice", w.op("Shape", features[0]), w.constant([1]), w.constant([2])),
                 w.constant([int(pooled_height), int(pooled_width)]), axis=0)
    result = w.op("ConstantOfShape", shape, value=w.tensor(torch.zeros(1, dtype=dtype)))
    levels = max(int(max_level) - int(min_level) + 1, 0)
    for index in range(min(levels, len(features))):
        rows = w.op("NonZero", w.op("Equal", level, w.constant(index)))  # (1, K_level)
        rows = w.op("Transpose", rows, perm=[1, 0])  # (K_level, 1): ScatterND's indices
        level_rois = w.op("Gather", rois, _squeeze(w, rows, 1), axis=0)
        pooled = roi_align_node(w, features[index], level_rois, scales[index], pooled_height,
                                pooled_width, sampling_ratio, False)
        result = w.op("ScatterND", result, rows, pooled)
    return result


# ------------------------------------------------------------------------------------------
# the TorchScript exporter: symbolics of torch.ops.pyroi.*


def _script_symbolic(node, kinds, drop=0):
    """A symbolic calling ``node`` with a _ScriptWriter, each argument parsed as ``kinds``
    says (symbolic_helper's letters: v a value, f float, i int, b bool, s string, fs floats;
    and o an optional value, None when absent, L a list of values); the last ``drop`` arguments (pyroi-only options, e.g. roi_align's
    exact) are not passed."""

    def symbolic(g, *args):
        from torch.onnx import symbolic_helper
        values = [argument if kind == "v" else
                  (None if symbolic_helper._is_none(argument) else argument) if kind == "o" else
                  symbolic_helper._unpack_list(argument) if kind == "L" else
                  symbolic_helper._parse_arg(argument, kind)
                  for argument, kind in zip(args, kinds)]
        return node(_ScriptWriter(g), *values[:len(values) - drop])

    return symbolic


def _roi_pool_with_argmax(w, *args):
    # torchvision's convention: MaxRoiPool has no argmax output; a graph that reads it
    # cannot be exported
    return roi_pool_node(w, *args), None


def _symbolics():
    """(operator, symbolic, first opset) of every pyroi operator the exporter maps."""
    return [
        ("roi_align", _script_symbolic(roi_align_node, "vvfiiibb", drop=1), _FIRST_OPSET),
        ("roi_pool", _script_symbolic(_roi_pool_with_argmax, "vvfii"), _FIRST_OPSET),
        ("roi_pool_values", _script_symbolic(roi_pool_node, "vvfii"), _FIRST_OPSET),
        ("ps_roi_align", _script_symbolic(ps_roi_align_node, "vvfiii"), _FIRST_OPSET),
        ("ps_roi_pool", _script_symbolic(ps_roi_pool_node, "vvfii"), _FIRST_OPSET),
        ("roi_align_rotated", _script_symbolic(roi_align_rotated_node, "vvfiiibbs"),
         _FIRST_OPSET),
        ("prroi_pool", _script_symbolic(prroi_pool_node, "vvfii"), _FIRST_OPSET),
        ("crop_and_resize", _script_symbolic(crop_and_resize_node, "vvviisfss"), _FIRST_OPSET),
        ("deform_roi_pool", _script_symbolic(deform_roi_pool_node, "vvoofiiif"), _FIRST_OPSET),
        ("multi_scale_roi_align",
         _script_symbolic(multi_scale_roi_align_nodes, ("L", "v", "fs", "i", "i", "i", "i",
                                                        "i", "f", "f", "f")), _FIRST_OPSET),
    ]


def register_symbolics() -> None:
    """Registers the symbolics with ``torch.onnx`` (pyroi.torch calls this at import)."""
    if not hasattr(torch.onnx, "register_custom_op_symbolic"):
        return  # a torch without the TorchScript exporter: the dynamo table still works
    for name, symbolic, opset in _symbolics():
        torch.onnx.register_custom_op_symbolic(f"pyroi::{name}", symbolic, opset)


# ------------------------------------------------------------------------------------------
# the dynamo exporter: a custom_translation_table


def _scriptless(node):
    """A translation function calling ``node`` with a _ScriptlessWriter."""

    def translate(*args):
        return node(_ScriptlessWriter(), *args)

    translate.__name__ = f"pyroi_{node.__name__}"
    return translate


def translation_table() -> dict:
    """``{torch.ops.pyroi.<op>.default: ONNX translation}`` for ``torch.onnx.export(...,
    dynamo=True, custom_translation_table=...)``; the nodes of :func:`register_symbolics`."""
    ops = torch.ops.pyroi

    def roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                  aligned, exact=True):
        return roi_align_node(_ScriptlessWriter(), input, rois, spatial_scale, pooled_height,
                              pooled_width, sampling_ratio, aligned)

    def roi_pool(*args):
        # the argmax has no ONNX counterpart; the exporter needs a value for it, never read
        # in inference (a pooled copy, not an argmax: see docs/torch.md)
        output = roi_pool_node(_ScriptlessWriter(), *args)
        return output, output

    return {
        ops.roi_align.default: roi_align,
        ops.roi_pool.default: roi_pool,
        ops.roi_pool_values.default: _scriptless(roi_pool_node),
        ops.ps_roi_align.default: _scriptless(ps_roi_align_node),
        ops.ps_roi_pool.default: _scriptless(ps_roi_pool_node),
        ops.roi_align_rotated.default: _scriptless(roi_align_rotated_node),
        ops.prroi_pool.default: _scriptless(prroi_pool_node),
        ops.crop_and_resize.default: _scriptless(crop_and_resize_node),
        ops.deform_roi_pool.default: _scriptless(deform_roi_pool_node),
        ops.multi_scale_roi_align.default: _scriptless(multi_scale_roi_align_nodes),
    }


# ------------------------------------------------------------------------------------------
# MultiScaleRoIAlign under the TorchScript exporter: torchvision's traced computation


def traced_pyramid(features, boxes, rois, scales, mapper, output_size, sampling_ratio):
    """MultiScaleRoIAlign as torchvision's module computes it while traced for ONNX: the
    level of each box from torch operations, each level's rows by ``pyroi::roi_align``,
    merged by scatter. The exported graph then holds the nodes of torchvision's export
    (the fused ``pyroi::multi_scale_roi_align`` is what a plain trace records)."""
    areas = [(part[:, 2] - part[:, 0]) * (part[:, 3] - part[:, 1]) for part in boxes]
    sizes = torch.sqrt(torch.cat(areas))
    levels = torch.floor(mapper.lvl0 + torch.log2(sizes / mapper.s0)
                         + torch.tensor(mapper.eps, dtype=sizes.dtype))
    levels = torch.clamp(levels, min=mapper.k_min, max=mapper.k_max)
    levels = (levels.to(torch.int64) - mapper.k_min).to(torch.int64)
    dtype = features[0].dtype
    pooled = []
    for level, (feature, scale) in enumerate(zip(features, scales)):
        rows = torch.where(levels == level)[0]
        pooled.append(torch.ops.pyroi.roi_align(feature, rois[rows], float(scale),
                                                *output_size, sampling_ratio, False,
                                                True).to(dtype))
    first = pooled[0]
    result = torch.zeros((levels.size(0), first.size(1), first.size(2), first.size(3)),
                         dtype=dtype)
    for level, part in enumerate(pooled):
        rows = torch.where(levels == level)[0].view(-1, 1, 1, 1)
        rows = rows.expand(rows.size(0), part.size(1), part.size(2), part.size(3))
        result = result.scatter(0, rows, part)
    return result


def exporting_by_trace() -> bool:
    """Whether the TorchScript exporter is tracing the model now."""
    return torch.onnx.is_in_onnx_export() and torch.jit.is_tracing()
