"""Side-by-side benchmark of pyroi and the installed peers (torchvision, onnxruntime, OpenVINO).

Every workload runs pyroi and each available peer in this one process on the same arrays, at
each requested thread count, and reports medians, the speed-up over each peer and the memory
floor (the time to stream the input once and write the output once with NumPy): progress
lines on stderr while it runs, a table on stdout at the end, then the CPU model and the
vector code the C core runs. pyroi is timed on NCHW features and on the same values stored
channels-last (``layout="NHWC"``). No number here is asserted anywhere; quote ratios, not
absolute times (machines are shared and noisy).

    pyroi bench                      # every workload, 1 and 2 threads
    pyroi bench --quick              # fewer repeats
    pyroi bench -w box_head -t 1     # one workload, one thread count
    pyroi bench --scaling            # adaptive sampling: time against box size
    pyroi bench --half               # every operator: float16 against float32

(``python bench/bench.py ...`` in a source checkout is the same program.)
"""

# May import: the package (``pyroi``), _core (the dispatched vector code), onnx, viz; the peers
# it times, lazily.

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import pyroi
import pyroi.onnx
import pyroi.viz
from pyroi import _core


@dataclass
class Workload:
    name: str
    description: str
    features: np.ndarray
    boxes: np.ndarray  # (K, 5) [batch, x1, y1, x2, y2]
    output_size: int
    spatial_scale: float
    sampling_ratio: int
    aligned: bool
    backward: bool = True
    extra: dict = field(default_factory=dict)
    # or "roi_align_max" (mode="max"), "roi_pool" (sampling_ratio, aligned unused), "onnx_max",
    # "prroi_pool", "crop_and_resize" (boxes (K, 5) [batch, y1, x1, y2, x2] normalised),
    # "deform_roi_pool" (extra["offset"] (K, 2, 7, 7))
    op: str = "roi_align"
    features_nhwc: np.ndarray | None = None  # the features channels-last, (N, H, W, C)


def random_boxes(rng, count, images, image_h, image_w, min_side, max_side):
    """Boxes with log-uniform sides, centred anywhere in the image."""
    sides = np.exp(rng.uniform(np.log(min_side), np.log(max_side), (count, 2)))
    centres = rng.uniform(0, 1, (count, 2)) * [image_w, image_h]
    x1y1 = centres - sides / 2
    boxes = np.concatenate([x1y1, x1y1 + sides], axis=1)
    batch = rng.integers(0, images, count)
    return np.concatenate([batch[:, None], boxes], axis=1).astype(np.float32)


WORKLOADS = {
    "box_head": "Mask R-CNN box head: 2x256x200x272, 1000 boxes, 7x7, sr 2, aligned",
    "mask_head": "mask head: 2x256x200x272, 100 boxes, 14x14, sr 2, aligned",
    "adaptive_large": "adaptive sampling: 1x256x100x136, 300 boxes 200-800 px at 1/8, 7x7, "
                      "sr 0",
    "vgg_conv5_align": "Fast R-CNN VGG conv5 1x512x38x50, 300 boxes, 7x7, sr 2, legacy",
    "small_call": "small call: 2x256x200x272, 64 boxes, 7x7, sr 2, aligned",
    "box_head_max": "RoIAlign mode=max (max of interpolated samples): the box head's "
                    "arrays, 7x7, sr 2, aligned",
    "onnx_max": "ONNX RoiAlign mode=max (max of weighted taps): 2x256x200x272, 1000 boxes, "
                "7x7, sr 2, half_pixel",
    "vgg_conv5_pool": "RoIPool, Fast R-CNN VGG conv5 1x512x38x50, 300 boxes, 7x7",
    "box_head_prroi": "PrRoIPool (forward, input and box backward) on the box head's arrays, "
                      "7x7; RoIAlign avg (sr 2, aligned) on the same boxes for the ratio",
    "box_head_crop": "crop_and_resize (forward, image and box backward; bilinear, NCHW) on the "
                     "box head's map and boxes, 7x7 crops; onnxruntime's CropAndResize beside it",
    "box_head_deform": "DeformRoIPool (forward, input and offset backward; offsets N(0, 0.1)) on "
                       "the box head's arrays, 7x7, sr 2; RoIAlign avg (aligned) on the same "
                       "boxes for the ratio",
}
"""The workloads of ``pyroi bench``: name -> description."""


def crop_boxes(boxes: np.ndarray, features_shape, spatial_scale: float) -> np.ndarray:
    """Boxes (K, 5) [batch, x1, y1, x2, y2] in image pixels as crop_and_resize takes them:
    [batch, y1, x1, y2, x2] normalised to the map (its corners at 0 and 1)."""
    height, width = features_shape[2] - 1, features_shape[3] - 1
    b, x1, y1, x2, y2 = (boxes[:, i] for i in range(5))
    return np.stack([b, y1 * spatial_scale / height, x1 * spatial_scale / width,
                     y2 * spatial_scale / height, x2 * spatial_scale / width],
                    axis=1).astype(boxes.dtype)


def make_workloads(rng) -> list[Workload]:
    box_features = rng.standard_normal((2, 256, 200, 272), dtype=np.float32)
    box_boxes = random_boxes(rng, 1000, 2, 800, 1088, 16, 256)
    mask_boxes = random_boxes(rng, 100, 2, 800, 1088, 32, 400)
    vgg = rng.standard_normal((1, 512, 38, 50), dtype=np.float32)
    vgg_boxes = random_boxes(rng, 300, 1, 600, 800, 32, 500)
    fpn_p5 = rng.standard_normal((1, 256, 100, 136), dtype=np.float32)
    large_boxes = random_boxes(rng, 300, 1, 800, 1088, 200, 800)
    small_boxes = random_boxes(rng, 64, 2, 800, 1088, 16, 256)
    box_nhwc, vgg_nhwc, fpn_nhwc = (np.ascontiguousarray(x.transpose(0, 2, 3, 1))
                                    for x in (box_features, vgg, fpn_p5))
    return [
        Workload("box_head", WORKLOADS["box_head"], box_features, box_boxes, 7, 0.25, 2, True,
                 features_nhwc=box_nhwc),
        Workload("mask_head", WORKLOADS["mask_head"], box_features, mask_boxes, 14, 0.25, 2,
                 True, features_nhwc=box_nhwc),
        Workload("adaptive_large", WORKLOADS["adaptive_large"], fpn_p5, large_boxes, 7, 0.125,
                 0, False, features_nhwc=fpn_nhwc),
        Workload("vgg_conv5_align", WORKLOADS["vgg_conv5_align"], vgg, vgg_boxes, 7, 1 / 16, 2,
                 False, features_nhwc=vgg_nhwc),
        Workload("small_call", WORKLOADS["small_call"], box_features, small_boxes, 7, 0.25, 2,
                 True, features_nhwc=box_nhwc),
        Workload("box_head_max", WORKLOADS["box_head_max"], box_features, box_boxes, 7, 0.25, 2,
                 True, backward=False, op="roi_align_max", features_nhwc=box_nhwc),
        Workload("onnx_max", WORKLOADS["onnx_max"], box_features, box_boxes, 7, 0.25, 2, True,
                 backward=False, op="onnx_max"),
        Workload("vgg_conv5_pool", WORKLOADS["vgg_conv5_pool"], vgg, vgg_boxes, 7, 1 / 16, 0,
                 False, op="roi_pool", features_nhwc=vgg_nhwc),
        Workload("box_head_prroi", WORKLOADS["box_head_prroi"], box_features, box_boxes, 7,
                 0.25, 2, True, op="prroi_pool"),
        Workload("box_head_crop", WORKLOADS["box_head_crop"], box_features,
                 crop_boxes(box_boxes, box_features.shape, 0.25), 7, 1.0, 0, False,
                 op="crop_and_resize"),
        Workload("box_head_deform", WORKLOADS["box_head_deform"], box_features, box_boxes, 7,
                 0.25, 2, True, op="deform_roi_pool",
                 extra={"offset": (rng.standard_normal((1000, 2, 7, 7)) * 0.1).astype(
                     np.float32)}),
    ]


WARMUP_SECONDS = 0.3


def median_ms(fn, repeat: int, warmup_seconds: float = WARMUP_SECONDS) -> float:
    """Median of ``repeat`` timed calls, after one untimed call and then more until
    ``warmup_seconds`` have passed: the steady state of a training or serving loop. Both
    sides need it. On this VM, 2-thread calls of a few ms ran up to 1.8x slower for their
    first ~100 calls (the idle second vCPU wakes slowly until the host adapts to the call
    rate), and torchvision's roi_pool took 100-110 ms in its first calls against 75-80 ms
    after."""
    start = time.perf_counter()
    fn()
    while time.perf_counter() - start < warmup_seconds:
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def memory_floor_ms(features: np.ndarray, out_shape: tuple, repeat: int,
                    warmup_seconds: float = WARMUP_SECONDS) -> float:
    """Read every input byte once and write every output byte once, with NumPy."""
    out = np.empty(out_shape, dtype=features.dtype)
    return (median_ms(lambda: features.sum(), repeat, warmup_seconds) +
            median_ms(lambda: out.fill(0), repeat, warmup_seconds))


def load_torchvision():
    try:
        import torch
        import torchvision.ops
    except Exception:  # any failure means the peer is absent
        return None
    return torch, torchvision.ops


def load_onnxruntime():
    try:
        import onnx
        import onnxruntime
    except Exception:
        return None
    return onnx, onnxruntime


def onnx_roi_align_session(onnx, ort, w: Workload, threads: int, library: str | None = None):
    """A session of one RoiAlign-16 node: onnxruntime's own, or with ``library`` (pyroi's
    custom-op library's path) the ``pyroi`` domain's, on ``threads`` threads."""
    from onnx import TensorProto, helper

    node = helper.make_node(
        "RoiAlign", ["X", "rois", "batch_indices"], ["Y"], domain="pyroi" if library else "",
        mode="max" if w.op == "onnx_max" else "avg",
        output_height=w.output_size, output_width=w.output_size,
        sampling_ratio=max(w.sampling_ratio, 0), spatial_scale=w.spatial_scale,
        coordinate_transformation_mode="half_pixel" if w.aligned else "output_half_pixel")
    graph = helper.make_graph(
        [node], "roialign",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("batch_indices", TensorProto.INT64, None)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    imports = [helper.make_opsetid("", 16)] + ([helper.make_opsetid("pyroi", 1)] if library
                                                else [])
    model = helper.make_model(graph, opset_imports=imports)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # onnxruntime's max-mode warning
    if library:
        options.add_session_config_entry("pyroi.num_threads", str(threads))
        options.register_custom_ops_library(library)
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def onnx_crop_and_resize_session(onnx, ort, w: Workload, threads: int,
                                 library: str | None = None):
    """A session of one CropAndResize node: onnxruntime's contrib one (com.microsoft), or with
    ``library`` the ``pyroi`` domain's, on ``threads`` threads."""
    from onnx import TensorProto, helper

    domain = "pyroi" if library else "com.microsoft"
    node = helper.make_node("CropAndResize", ["X", "rois", "batch_indices", "crop_size"],
                            ["Y"], domain=domain)
    graph = helper.make_graph(
        [node], "crop",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("batch_indices", TensorProto.INT32, None),
         helper.make_tensor_value_info("crop_size", TensorProto.INT32, None)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16),
                                                    helper.make_opsetid(domain, 1)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if library:
        options.add_session_config_entry("pyroi.num_threads", str(threads))
        options.register_custom_ops_library(library)
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def onnx_session_and_feeds(ox, w: Workload, threads: int, library: str | None = None):
    """onnxruntime's node for the workload (its own, or the pyroi domain's with ``library``)
    and its inputs; None for an op onnxruntime has no node for."""
    onnx, ort = ox
    if w.op == "crop_and_resize":
        feeds = {"X": w.features, "rois": np.ascontiguousarray(w.boxes[:, 1:]),
                 "batch_indices": w.boxes[:, 0].astype(np.int32),
                 "crop_size": np.array([w.output_size] * 2, np.int32)}
        return onnx_crop_and_resize_session(onnx, ort, w, threads, library), feeds
    if w.op in ("roi_align", "onnx_max"):
        feeds = {"X": w.features, "rois": np.ascontiguousarray(w.boxes[:, 1:]),
                 "batch_indices": w.boxes[:, 0].astype(np.int64)}
        return onnx_roi_align_session(onnx, ort, w, threads, library), feeds
    return None


def onnxruntime_library() -> str | None:
    """pyroi's ONNX Runtime custom-op library, or None when this build has none."""
    from pyroi import onnx as pyroi_onnx

    try:
        return pyroi_onnx.custom_ops_library()
    except FileNotFoundError:
        return None


def load_openvino():
    try:
        import openvino
    except Exception:
        return None
    return openvino


# The pooling nodes OpenVINO's CPU plugin runs (layerType in its runtime model).
OPENVINO_NODE_TYPES = ("ROIAlign", "ROIPooling")


def openvino_properties(threads: int) -> dict:
    """Compile properties that make OpenVINO's CPU plugin fastest in float32: f32 forced (it
    defaults to bf16 on CPUs with AMX), ``threads`` threads, the latency hint (one stream, the
    whole call on one request) and per-node profiling (its node time)."""
    return {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY", "PERF_COUNT": True}


# What may feed OpenVINO's ROIAlign its features (see openvino_model): None (the planar
# parameter itself), or an identity node whose output the CPU plugin lays out for its
# channel-vectorised kernels. Which identity gets a vectorised layout differs by CPU.
OPENVINO_FEEDERS = ("max_pool", "depthwise")


def openvino_model(ov, op: str, features_shape, count: int, output_size: int,
                   spatial_scale: float, sampling_ratio: int = 0, aligned: bool = False,
                   feeder: str | None = "max_pool"):
    """A model of one OpenVINO pooling node on NCHW float32 features: ROIAlign-9 (``op``
    "roi_align" or "roi_align_max"; ``aligned`` picks ``half_pixel_for_nn``, else
    ``asymmetric``; ``sampling_ratio <= 0`` is adaptive) or ROIPooling max ("roi_pool").
    Its inputs are :func:`openvino_inputs`.

    ``feeder``: fed planar NCHW features, ROIAlign keeps them planar and runs its planar
    kernel (one vector gather per output value: 6x slower on the small call, 64 boxes, 20x
    on the box head, measured); its channel-vectorised kernel runs on channel-blocked or
    channels-last features only. An identity node ahead of it makes the plugin reorder the
    features into such a layout and ROIAlign read that, so the node time is the vectorised
    kernel's and the end-to-end time includes the reorder and the identity. Which identity
    does it depends on the CPU: ``"max_pool"`` (a 1x1 max pool) got the 8-channel blocked
    layout on an AVX2 machine but stayed planar on an AVX-512 one, where ``"depthwise"`` (a
    1x1 group convolution by 1.0, exact on finite values) got channels-last.
    :func:`fastest_openvino_node` tries both. ROIPooling has only the blocked kernel (the
    plugin reorders for it itself), so ``feeder`` is ignored for it."""
    from openvino import opset1, opset9

    features = opset9.parameter(list(features_shape), np.float32, name="features")
    source = features
    if feeder is not None and op != "roi_pool":
        if feeder == "max_pool":
            source = opset1.max_pool(features, [1, 1], [0, 0], [0, 0], [1, 1])
        elif feeder == "depthwise":
            ones = np.ones((features_shape[1], 1, 1, 1, 1), np.float32)
            source = opset1.group_convolution(features, opset1.constant(ones), [1, 1],
                                              [0, 0], [0, 0], [1, 1])
        else:
            raise ValueError(f"feeder must be None or one of {OPENVINO_FEEDERS}, not {feeder!r}")
    size = [output_size, output_size]
    if op == "roi_pool":
        rois = opset9.parameter([count, 5], np.float32, name="rois")
        node = opset9.roi_pooling(source, rois, output_roi=size, spatial_scale=spatial_scale,
                                  method="max")
        parameters = [features, rois]
    else:
        rois = opset9.parameter([count, 4], np.float32, name="rois")
        images = opset9.parameter([count], np.int32, name="batch_indices")
        node = opset9.roi_align(source, rois, images, output_size, output_size,
                                max(sampling_ratio, 0), spatial_scale,
                                "max" if op == "roi_align_max" else "avg",
                                "half_pixel_for_nn" if aligned else "asymmetric")
        parameters = [features, rois, images]
    return ov.Model([node.output(0)], parameters, "pyroi_peer")


def openvino_inputs(op: str, features: np.ndarray, boxes: np.ndarray) -> list:
    """The inputs of :func:`openvino_model` from pyroi's (K, 5) ``[batch, x1, y1, x2, y2]``."""
    if op == "roi_pool":
        return [features, boxes]
    return [features, np.ascontiguousarray(boxes[:, 1:]), boxes[:, 0].astype(np.int32)]


class OpenVinoPrecisionError(RuntimeError):
    """OpenVINO compiled its pooling node to run in another precision than float32."""


class OpenVinoNode:
    """A compiled :func:`openvino_model`, its infer request, and what the CPU plugin chose for
    the pooling node (from the runtime model): ``precision``, ``kernel``, ``layout``. Raises
    :class:`OpenVinoPrecisionError` unless the node runs in f32."""

    def __init__(self, ov, model, threads: int):
        self.compiled = ov.Core().compile_model(model, "CPU", openvino_properties(threads))
        self.feeder: str | None = None  # the openvino_model feeder it was built with
        self.request = self.compiled.create_infer_request()
        for op in self.compiled.get_runtime_model().get_ordered_ops():
            info = op.get_rt_info()
            if info["layerType"].astype(str) in OPENVINO_NODE_TYPES:
                self.precision = info["runtimePrecision"].astype(str)
                self.kernel = info["primitiveType"].astype(str)
                self.layout = info["outputLayouts"].astype(str)
                break
        else:
            raise RuntimeError("OpenVINO's runtime model has no ROIAlign/ROIPooling node")
        if self.precision != "f32":
            raise OpenVinoPrecisionError(
                f"OpenVINO runs its {info['layerType'].astype(str)} node in {self.precision}, "
                "not f32: its times would not be comparable")

    def __call__(self, inputs: list) -> np.ndarray:
        """Run on ``inputs`` (read in place, not copied) and return the output (a view of
        OpenVINO's buffer, valid until the next call)."""
        self.request.infer(inputs, share_inputs=True, share_outputs=True)
        return self.request.get_output_tensor(0).data

    def node_ms(self) -> float:
        """The pooling node's time in the last call, from OpenVINO's profiling."""
        return sum(info.real_time.total_seconds() * 1e3 for info in self.request.profiling_info
                   if info.node_type in OPENVINO_NODE_TYPES)


def time_openvino(node: OpenVinoNode, inputs: list, repeat: int,
                  warmup_seconds: float = WARMUP_SECONDS) -> tuple[float, float]:
    """(median end-to-end ms, median node ms) over the same ``repeat`` calls."""
    node_times = []

    def call():
        node(inputs)
        node_times.append(node.node_ms())

    end_to_end = median_ms(call, repeat, warmup_seconds)
    return end_to_end, statistics.median(node_times[-repeat:])


def fastest_openvino_node(ov, w: "Workload", threads: int) -> "OpenVinoNode":
    """OpenVINO's node for the workload, compiled behind each of :data:`OPENVINO_FEEDERS` in
    turn; the one whose pooling node runs fastest on a few calls (planar layouts, the slow
    kernel, are passed over while another is left). Raises :class:`OpenVinoPrecisionError`
    if the node would not run in f32."""
    feeders = (None,) if w.op == "roi_pool" else OPENVINO_FEEDERS
    inputs = openvino_inputs(w.op, w.features, w.boxes)
    best, best_ms = None, math.inf
    for feeder in feeders:
        node = OpenVinoNode(ov, openvino_model(ov, w.op, w.features.shape, len(w.boxes),
                                               w.output_size, w.spatial_scale,
                                               w.sampling_ratio, w.aligned, feeder), threads)
        node.feeder = feeder
        if node.layout == "abcd" and (best is not None or feeder != feeders[-1]):
            continue
        times = []
        for _ in range(3):
            node(inputs)
            times.append(node.node_ms())
        if min(times) < best_ms:
            best, best_ms = node, min(times)
    assert best is not None  # the last feeder is kept whatever its layout
    return best


def channels_last_output(shape: tuple, dtype) -> np.ndarray:
    """A ``(K, C, ph, pw)`` view of channels-last memory ``(K, ph, pw, C)`` that starts on a
    64-byte line: the layout OpenVINO's pooling nodes write their outputs in (its runtime
    model's ``outputLayouts``: ``acdb``, or channel-blocked), the reorder to planar being a
    node of its own, outside the pooling node's time."""
    k, c, ph, pw = shape
    nbytes = k * ph * pw * c * np.dtype(dtype).itemsize
    raw = np.empty(nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + nbytes].view(dtype).reshape(k, ph, pw, c).transpose(0, 3, 1, 2)


def pyroi_channels_last_forward(w: Workload, threads: int, channels_last_out: bool = False):
    """pyroi's forward on the channels-last copy of the features (read in place), or None.
    With ``channels_last_out``, into a :func:`channels_last_output` that every call reuses
    (as OpenVINO reuses its output buffer): OpenVINO's node's footing on both sides."""
    if w.features_nhwc is None:
        return None
    size, scale = w.output_size, w.spatial_scale
    out = (channels_last_output((len(w.boxes), w.features.shape[1], size, size),
                                w.features.dtype) if channels_last_out else None)
    if w.op == "roi_pool":  # any strides are read in place: an NCHW view of NHWC memory
        view = w.features_nhwc.transpose(0, 3, 1, 2)
        return lambda: pyroi.roi_pool(view, w.boxes, size, scale, num_threads=threads, out=out)
    mode = "max" if w.op == "roi_align_max" else "avg"
    return lambda: pyroi.roi_align(w.features_nhwc, w.boxes, size, scale, w.sampling_ratio,
                                   w.aligned, mode=mode, layout="NHWC", num_threads=threads,
                                   out=out)


def pyroi_calls(w: Workload, threads: int, grad: np.ndarray):
    """(forward, backward) of pyroi for the workload's op."""
    if w.op == "onnx_max":
        rois = np.ascontiguousarray(w.boxes[:, 1:])
        images = w.boxes[:, 0].astype(np.int64)
        return (lambda: pyroi.onnx.roi_align(
            w.features, rois, images, mode="max", output_height=w.output_size,
            output_width=w.output_size, sampling_ratio=w.sampling_ratio,
            spatial_scale=w.spatial_scale,
            coordinate_transformation_mode="half_pixel" if w.aligned else "output_half_pixel",
            num_threads=threads), None)
    if w.op == "roi_pool":
        size, scale = w.output_size, w.spatial_scale
        # int32 like torchvision's (and pyroi.torch's) argmax: the backward reads it
        _, argmax = pyroi.roi_pool(w.features, w.boxes, size, scale, return_argmax=True,
                                   argmax_dtype=np.int32)
        return (lambda: pyroi.roi_pool(w.features, w.boxes, size, scale, num_threads=threads),
                lambda: pyroi.roi_pool_backward(grad, w.boxes, argmax, w.features.shape, size,
                                                scale, num_threads=threads))
    if w.op == "crop_and_resize":
        boxes, indices = np.ascontiguousarray(w.boxes[:, 1:]), w.boxes[:, 0].astype(np.int64)
        crop_size = (w.output_size, w.output_size)
        # onnxruntime's placement: the bench's onnxruntime node computes the same bits
        return (lambda: pyroi.crop_and_resize(w.features, boxes, indices, crop_size, layout="NCHW",
                                              placement="onnxruntime", num_threads=threads),
                lambda: pyroi.crop_and_resize_backward_image(
                    grad, boxes, indices, w.features.shape, layout="NCHW",
                    placement="onnxruntime", num_threads=threads))
    if w.op == "prroi_pool":
        size, scale = w.output_size, w.spatial_scale
        return (lambda: pyroi.prroi_pool(w.features, w.boxes, size, scale, num_threads=threads),
                lambda: pyroi.prroi_pool_backward(grad, w.boxes, w.features.shape, scale,
                                                  num_threads=threads))
    if w.op == "deform_roi_pool":
        offset = w.extra["offset"]
        return (lambda: pyroi.deform_roi_pool(w.features, w.boxes, offset, w.output_size,
                                              w.spatial_scale, w.sampling_ratio,
                                              num_threads=threads),
                lambda: pyroi.deform_roi_pool_backward(grad, w.boxes, w.features.shape, offset,
                                                       w.spatial_scale, w.sampling_ratio,
                                                       num_threads=threads))
    args = (w.output_size, w.spatial_scale, w.sampling_ratio, w.aligned)
    if w.op == "roi_align_max":
        return (lambda: pyroi.roi_align(w.features, w.boxes, *args, mode="max",
                                        num_threads=threads), None)
    return (lambda: pyroi.roi_align(w.features, w.boxes, *args, num_threads=threads),
            lambda: pyroi.roi_align_backward(grad, w.boxes, w.features.shape, *args[1:],
                                             num_threads=threads))


def pyroi_input_backward(w: Workload, threads: int, grad: np.ndarray):
    """RoIPool's backward from the forward's input instead of its argmax (the same result:
    it reads the map, not an argmax as large as the gradient); None for the other ops."""
    if w.op != "roi_pool":
        return None
    return lambda: pyroi.roi_pool_backward(grad, w.boxes, input=w.features,
                                           output_size=w.output_size,
                                           spatial_scale=w.spatial_scale, num_threads=threads)


def pyroi_prroi_extra_calls(w: Workload, threads: int, grad: np.ndarray):
    """PrRoIPool's backward with the box gradient (DeformRoIPool's: with the offset
    gradient) and RoIAlign avg's forward on the same boxes (the ratio goals: PrRoIPool within
    2x of it, DeformRoIPool 1.5x); None for the other ops."""
    with_boxes: Callable[[], object]
    if w.op == "prroi_pool":
        with_boxes = (lambda: pyroi.prroi_pool_backward(
            grad, w.boxes, w.features.shape, w.spatial_scale, input=w.features,
            num_threads=threads))
    elif w.op == "deform_roi_pool":
        with_boxes = (lambda: pyroi.deform_roi_pool_backward(
            grad, w.boxes, w.features.shape, w.extra["offset"], w.spatial_scale,
            w.sampling_ratio, input=w.features, num_threads=threads))
    else:
        return None
    return (with_boxes,
            lambda: pyroi.roi_align(w.features, w.boxes, w.output_size, w.spatial_scale,
                                    w.sampling_ratio, w.aligned, num_threads=threads))


def pyroi_crop_box_backward(w: Workload, threads: int, grad: np.ndarray):
    """crop_and_resize's box backward (which reads the image); None for the other ops."""
    if w.op != "crop_and_resize":
        return None
    boxes, indices = np.ascontiguousarray(w.boxes[:, 1:]), w.boxes[:, 0].astype(np.int64)
    return lambda: pyroi.crop_and_resize_backward_boxes(grad, w.features, boxes, indices,
                                                        layout="NCHW", placement="onnxruntime",
                                                        num_threads=threads)


def pyroi_merged_calls(w: Workload, threads: int, grad: np.ndarray):
    """(forward, backward) of RoIAlign's average with ``exact=False`` (its samples merged per
    pixel: not bit-exact, docs/semantics.md §3.7); None for the other ops."""
    if w.op != "roi_align":
        return None
    args = (w.output_size, w.spatial_scale, w.sampling_ratio, w.aligned)
    return (lambda: pyroi.roi_align(w.features, w.boxes, *args, num_threads=threads,
                                    exact=False),
            lambda: pyroi.roi_align_backward(grad, w.boxes, w.features.shape, *args[1:],
                                             num_threads=threads, exact=False))


def pyroi_argmax_forward(w: Workload, threads: int):
    """RoIPool's forward with the int32 argmax a backward needs, what torchvision's forward
    computes; None for the other ops."""
    if w.op != "roi_pool":
        return None
    return lambda: pyroi.roi_pool(w.features, w.boxes, w.output_size, w.spatial_scale,
                                  return_argmax=True, argmax_dtype=np.int32,
                                  num_threads=threads)


def torchvision_op(ops, w: Workload):
    """torchvision's function for the workload, called as op(x, boxes)."""
    if w.op == "roi_pool":
        return lambda x, b: ops.roi_pool(x, b, w.output_size, w.spatial_scale)
    args = (w.output_size, w.spatial_scale, w.sampling_ratio, w.aligned)
    return lambda x, b: ops.roi_align(x, b, *args)


def machine() -> str:
    """The CPU model (as the OS names it, with its x86 family and model numbers where the OS
    gives them: one model name can cover several generations), the cache sizes the C core's
    kernels choose by, and the vector code its dispatch runs."""
    model = platform.processor() or platform.machine()
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    model = fields.get("model name", model)
    if "cpu family" in fields and "model" in fields:
        model += f" (family {fields['cpu family']} model {fields['model']})"
    caches = ", ".join(f"{name} {_core.cache_bytes(level) // 1024} KB"
                       for level, name in ((1, "L1d"), (2, "L2"), (3, "L3"))
                       if _core.cache_bytes(level))
    return (f"CPU: {model}, {os.cpu_count()} CPUs{'; ' + caches if caches else ''}; "
            f"pyroi vector code: {_core.vector_isa()}")


def _versus(results: dict, key: str, *baselines: str, unit: str = "") -> str:
    """``key``'s time and its ratio to each baseline present: "12.30 (x1.5 / x2.1)"."""
    ratios = " / ".join(f"x{results[key] / results[b]:.1f}" for b in baselines if b in results)
    return f"{results[key]:.2f}{unit}" + (f" ({ratios})" if ratios else "")


def run(workloads, thread_counts, repeat, peer_repeat, progress=None,
        warmup_seconds=WARMUP_SECONDS):
    """Measure every workload at every thread count; progress lines go to ``progress``
    (default stderr). Returns rows ``(workload name, threads, results, floor ms)``."""
    progress = sys.stderr if progress is None else progress
    timed = functools.partial(median_ms, warmup_seconds=warmup_seconds)
    tv = load_torchvision()
    ox = load_onnxruntime()
    ov = load_openvino()
    print(f"pyroi {pyroi.__version__}; torchvision: {'yes' if tv else 'absent'}; "
          f"onnxruntime: {'yes' if ox else 'absent'}; "
          f"openvino: {ov.__version__ + ' ' + str(openvino_properties('n')) if ov else 'absent'}"
          f"\n{machine()}", file=progress, flush=True)
    rows = []
    for w in workloads:
        k = len(w.boxes)
        out_shape = (k, w.features.shape[1], w.output_size, w.output_size)
        floor = memory_floor_ms(w.features, out_shape, repeat, warmup_seconds)
        print(f"\n{w.name}: {w.description}", file=progress, flush=True)
        grad = np.ones(out_shape, dtype=w.features.dtype)
        for threads in thread_counts:
            results = {}
            pyroi_forward, pyroi_backward = pyroi_calls(w, threads, grad)
            results["pyroi fwd"] = timed(pyroi_forward, repeat)
            channels_last = pyroi_channels_last_forward(w, threads)
            if channels_last is not None:
                results["pyroi NHWC fwd"] = timed(channels_last, repeat)
                results["pyroi NHWC out fwd"] = timed(
                    pyroi_channels_last_forward(w, threads, channels_last_out=True), repeat)
            with_argmax = pyroi_argmax_forward(w, threads)
            if with_argmax is not None:
                results["pyroi argmax fwd"] = timed(with_argmax, repeat)
            if w.backward:
                results["pyroi bwd"] = timed(pyroi_backward, repeat)
            from_input = pyroi_input_backward(w, threads, grad)
            if from_input is not None:
                results["pyroi input bwd"] = timed(from_input, repeat)
            prroi_extra = pyroi_prroi_extra_calls(w, threads, grad)
            if prroi_extra is not None:
                results["pyroi box bwd"] = timed(prroi_extra[0], repeat)
                results["roi_align avg fwd"] = timed(prroi_extra[1], repeat)
            crop_boxes_backward = pyroi_crop_box_backward(w, threads, grad)
            if crop_boxes_backward is not None:
                results["pyroi boxes bwd"] = timed(crop_boxes_backward, repeat)
            merged = pyroi_merged_calls(w, threads, grad)
            if merged is not None:
                results["pyroi inexact fwd"] = timed(merged[0], repeat)
                results["pyroi inexact bwd"] = timed(merged[1], repeat)
            if tv and w.op in ("roi_align", "roi_pool"):  # torchvision has no max RoIAlign
                torch, ops = tv
                torch.set_num_threads(threads)
                xt = torch.from_numpy(w.features)
                bt = torch.from_numpy(w.boxes)
                op = torchvision_op(ops, w)
                results["torchvision fwd"] = timed(lambda: op(xt, bt), peer_repeat)
                if w.backward:
                    # the backward alone: one forward keeps its graph, and each repeat runs
                    # the backward through it (a difference of two noisy timings could be
                    # anything when the backward is short)
                    xg = xt.clone().requires_grad_()
                    gt = torch.from_numpy(grad)
                    yt = op(xg, bt)

                    def torch_backward():
                        xg.grad = None
                        yt.backward(gt, retain_graph=True)

                    results["torchvision bwd"] = timed(torch_backward, peer_repeat)
                    del yt
            onnx_node = onnx_session_and_feeds(ox, w, threads) if ox else None
            if onnx_node is not None:
                session, feeds = onnx_node
                results["onnxruntime fwd"] = timed(lambda: session.run(None, feeds),
                                                       peer_repeat)
                library = onnxruntime_library()
                if library is not None:
                    with_library = onnx_session_and_feeds(ox, w, threads, library)[0]
                    results["onnxruntime pyroi fwd"] = timed(
                        lambda: with_library.run(None, feeds), repeat)
            openvino_note = ""
            if ov and w.op in ("roi_align", "roi_align_max", "roi_pool"):
                try:
                    node = fastest_openvino_node(ov, w, threads)
                except OpenVinoPrecisionError as error:
                    openvino_note = f"  openvino not reported: {error}"
                else:
                    inputs = openvino_inputs(w.op, w.features, w.boxes)
                    results["openvino e2e"], results["openvino node"] = time_openvino(
                        node, inputs, peer_repeat, warmup_seconds)
                    openvino_note = (f"  openvino node {node.kernel} {node.precision} on "
                                     f"{node.layout}"
                                     + (f" (feeder: {node.feeder})" if node.feeder else ""))
                    del node
            line = [f"  threads={threads}: pyroi fwd {results['pyroi fwd']:8.2f} ms"]
            if "pyroi NHWC fwd" in results:
                line.append(f"NHWC {results['pyroi NHWC fwd']:8.2f} ms")
                line.append(f"NHWC in+out {results['pyroi NHWC out fwd']:8.2f} ms")
            if "pyroi argmax fwd" in results:
                line.append(f"with int32 argmax {results['pyroi argmax fwd']:8.2f} ms")
            if "pyroi inexact fwd" in results:
                line.append(f"exact=False {results['pyroi inexact fwd']:8.2f} ms")
            for peer in ("torchvision fwd", "onnxruntime fwd", "openvino e2e"):
                if peer in results:
                    line.append(f"{peer.replace(' fwd', '')} "
                                + _versus(results, peer, "pyroi fwd", "pyroi argmax fwd",
                                          "pyroi inexact fwd", unit=" ms"))
            if "onnxruntime pyroi fwd" in results:
                mine, theirs = results["onnxruntime pyroi fwd"], results["onnxruntime fwd"]
                line.append(f"onnxruntime + pyroi library {mine:.2f} ms "
                            f"(its own operator x{theirs / mine:.1f})")
            if "openvino node" in results:
                line.append("openvino node " + _versus(results, "openvino node", "pyroi fwd",
                                                       "pyroi NHWC fwd", "pyroi NHWC out fwd",
                                                       unit=" ms"))
            line.append(f"floor {floor:6.2f} ms (pyroi/floor {results['pyroi fwd'] / floor:5.1f})")
            print(" | ".join(line), file=progress, flush=True)
            if openvino_note:
                print(openvino_note, file=progress, flush=True)
            if w.backward:
                line = [f"  threads={threads}: pyroi bwd {results['pyroi bwd']:8.2f} ms"]
                if "pyroi input bwd" in results:
                    line.append(f"from the input {results['pyroi input bwd']:8.2f} ms")
                if "pyroi inexact bwd" in results:
                    line.append(f"exact=False {results['pyroi inexact bwd']:8.2f} ms")
                if "pyroi box bwd" in results:
                    what = "offset" if w.op == "deform_roi_pool" else "box"
                    line.append(f"input and {what} bwd {results['pyroi box bwd']:8.2f} ms")
                    line.append(f"RoIAlign avg fwd {results['roi_align avg fwd']:8.2f} ms "
                                f"(fwd / RoIAlign "
                                f"{results['pyroi fwd'] / results['roi_align avg fwd']:4.2f})")
                if "pyroi boxes bwd" in results:
                    line.append(f"box bwd {results['pyroi boxes bwd']:8.2f} ms")
                if "torchvision bwd" in results:
                    line.append("torchvision bwd "
                                + _versus(results, "torchvision bwd", "pyroi bwd",
                                          "pyroi input bwd", "pyroi inexact bwd", unit=" ms"))
                print(" | ".join(line), file=progress, flush=True)
            rows.append((w.name, threads, results, floor))
    return rows


# Columns of the final table: (title, key in results, keys of pyroi times to compare with).
_TABLE_COLUMNS = (
    ("pyroi fwd", "pyroi fwd", ()),
    ("pyroi NHWC fwd", "pyroi NHWC fwd", ()),
    # channels-last features into a channels-last output (OpenVINO's node's layouts)
    ("pyroi NHWC in+out fwd", "pyroi NHWC out fwd", ()),
    ("pyroi fwd + int32 argmax", "pyroi argmax fwd", ()),
    ("pyroi bwd", "pyroi bwd", ()),
    # RoIPool's backward from the forward's input instead of its argmax
    ("pyroi bwd from input", "pyroi input bwd", ()),
    # RoIAlign's average with exact=False (samples merged per pixel; not bit-exact)
    ("pyroi exact=False fwd", "pyroi inexact fwd", ()),
    ("pyroi exact=False bwd", "pyroi inexact bwd", ()),
    # PrRoIPool: the backward with the box gradient (DeformRoIPool: with the offset
    # gradient), and RoIAlign avg on the same boxes
    ("pyroi input+box/offset bwd", "pyroi box bwd", ()),
    ("RoIAlign avg fwd (/ fwd)", "roi_align avg fwd", ("pyroi fwd",)),
    # crop_and_resize: the box backward alone (the image backward is "pyroi bwd")
    ("pyroi box bwd", "pyroi boxes bwd", ()),
    # torchvision's forward computes argmax: RoIPool's ratios are to both pyroi forwards;
    # RoIAlign's to the exact and the exact=False forward
    ("torchvision fwd (/ fwd / + argmax or exact=False)", "torchvision fwd",
     ("pyroi fwd", "pyroi argmax fwd", "pyroi inexact fwd")),
    # the backward alone; RoIPool's ratios are to both pyroi backwards (argmax / input),
    # RoIAlign's to the exact and the exact=False backward
    ("torchvision bwd (/ bwd / from input or exact=False)", "torchvision bwd",
     ("pyroi bwd", "pyroi input bwd", "pyroi inexact bwd")),
    ("onnxruntime fwd (/ pyroi / with pyroi's library)", "onnxruntime fwd",
     ("pyroi fwd", "onnxruntime pyroi fwd")),
    # a RoiAlign node of the pyroi domain in onnxruntime (pyroi's custom-op library)
    ("onnxruntime + pyroi library fwd", "onnxruntime pyroi fwd", ()),
    ("openvino node (/ NCHW / NHWC / NHWC in+out)", "openvino node",
     ("pyroi fwd", "pyroi NHWC fwd", "pyroi NHWC out fwd")),
    ("openvino e2e", "openvino e2e", ("pyroi fwd",)),
)


def format_table(rows) -> str:
    """The results of :func:`run` as a Markdown table: medians in ms, a peer's time over
    pyroi's in parentheses (above 1: pyroi is faster; OpenVINO's node time over pyroi's from
    NCHW, from NHWC, and from NHWC into a channels-last output), and pyroi's forward over the
    memory floor. Columns without any value (an absent peer) are left out."""
    used = [col for col in _TABLE_COLUMNS if any(col[1] in results for _, _, results, _ in rows)]
    header = ["workload", "threads"] + [f"{title} ms" for title, _, _ in used] + ["fwd/floor"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, threads, results, floor in rows:
        cells = [name, str(threads)]
        for _, key, versus in used:
            cells.append(_versus(results, key, *versus) if key in results else "-")
        cells.append(f"{results['pyroi fwd'] / floor:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Box sides (input pixels) of the scaling run: inside the 1088x800 image up to 800 px, then
# past it (at scale 1/8 the map is 136x100 pixels).
SCALING_SIDES = (100, 200, 400, 800, 1600, 3200, 6400)
SCALING_BOXES = 8


def scaling_boxes(rng, side: float, count: int = SCALING_BOXES) -> np.ndarray:
    """``count`` square boxes of ``side`` px centred near the middle of the 1088x800 image."""
    centres = np.array([544.0, 400.0]) + rng.uniform(-40, 40, (count, 2))
    boxes = np.concatenate([centres - side / 2, centres + side / 2], axis=1)
    return np.concatenate([np.zeros((count, 1)), boxes], axis=1).astype(np.float32)


def run_scaling(sides, threads, repeat, peer_repeat, progress=None,
                warmup_seconds=WARMUP_SECONDS):
    """Adaptive sampling (sampling_ratio 0, 7x7, scale 1/8) on a 1x256x100x136 map for square
    boxes of each side: rows ``(side, samples in the map per channel, samples of the grid per
    channel, pyroi ms, torchvision ms or None)``. torchvision visits every sample of the
    adaptive grid, ``(side / 8 / 7)^2`` per bin, on the map or not; pyroi visits only the
    samples on the map, so once a box covers the map its cost stops growing."""
    progress = sys.stderr if progress is None else progress
    timed = functools.partial(median_ms, warmup_seconds=warmup_seconds)
    rng = np.random.default_rng(2026)
    features = rng.standard_normal((1, 256, 100, 136), dtype=np.float32)
    tv = load_torchvision()
    if tv:
        tv[0].set_num_threads(threads)
    rows = []
    for side in sides:
        boxes = scaling_boxes(rng, side)
        in_map = grid = 0
        for box in boxes[:, 1:]:
            g = pyroi.viz.explain_roi_align(box, 7, 0.125, 0, False, map_size=(100, 136),
                                            dtype=np.float32)
            in_map += int(g.rows.in_map.sum()) * int(g.cols.in_map.sum())
            grid += g.rows.coords.size * g.cols.coords.size
        mine = timed(lambda: pyroi.roi_align(features, boxes, 7, 0.125, 0, False,
                                                 num_threads=threads), repeat)
        theirs = None
        if tv:
            torch, ops = tv
            xt, bt = torch.from_numpy(features), torch.from_numpy(boxes)
            theirs = timed(lambda: ops.roi_align(xt, bt, 7, 0.125, 0, False), peer_repeat)
        print(f"  side {side:5d} px: pyroi {mine:8.2f} ms" +
              (f" | torchvision {theirs:9.2f} ms (x{theirs / mine:7.1f})" if theirs else ""),
              file=progress, flush=True)
        rows.append((side, in_map, grid, mine, theirs))
    return rows


def format_scaling(rows) -> str:
    """The rows of :func:`run_scaling` as a Markdown table."""
    lines = ["| box side px | samples on the map | samples of the grid | pyroi ms | "
             "torchvision ms |", "|---|---|---|---|---|"]
    for side, in_map, grid, mine, theirs in rows:
        peer = f"{theirs:.2f} (x{theirs / mine:.1f})" if theirs is not None else "-"
        lines.append(f"| {side} | {in_map} | {grid} | {mine:.2f} | {peer} |")
    return "\n".join(lines)


# ---- float16 against float32 (--half) ------------------------------------------------------

@dataclass
class HalfCase:
    """One operator on one workload for ``--half``: ``calls(dtype, threads)`` returns its
    (forward, backward or None) on data of ``dtype`` (float16 or float32; the same values,
    the float32 data rounded to float16 once, the same float32 boxes)."""
    name: str
    description: str
    calls: object


def _as_dtype(cache: dict, array: np.ndarray, dtype) -> np.ndarray:
    """``array`` in ``dtype`` (float16: rounded once, kept for every call)."""
    key = (id(array), np.dtype(dtype).str)
    if key not in cache:
        cache[key] = array if array.dtype == dtype else array.astype(dtype)
    return cache[key]


def _rotated_boxes(rng, boxes: np.ndarray) -> np.ndarray:
    """(K, 6) ``[batch, cx, cy, w, h, angle degrees]`` rows from (K, 5) corner rows."""
    x1, y1, x2, y2 = boxes[:, 1], boxes[:, 2], boxes[:, 3], boxes[:, 4]
    angles = rng.uniform(-90, 90, len(boxes))
    return np.stack([boxes[:, 0], (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, angles],
                    axis=1).astype(np.float32)


def make_half_cases(rng, workloads) -> list[HalfCase]:
    """Every operator's float16 and float32 calls: the bench's workloads (RoIAlign avg and
    max, ONNX max, RoIPool) and, on their arrays, the operators they leave out: the
    position-sensitive ones (the VGG map widened to 490 = 10 x 7 x 7 channels), rotated
    RoIAlign (the box head's boxes, turned) and the multi-level RoIAlign (a 4-level pyramid
    of the box head's map)."""
    cache: dict = {}
    cases = []
    for w in workloads:
        if w.op in ("crop_and_resize", "deform_roi_pool"):
            continue  # no float16 call
        def calls(dtype, threads, w=w):
            x = _as_dtype(cache, w.features, dtype)
            k, c = len(w.boxes), w.features.shape[1]
            size, scale = w.output_size, w.spatial_scale
            grad = _as_dtype(cache, _half_grad(cache, rng, (k, c, size, size)), dtype)
            if w.op == "roi_pool":
                _, argmax = pyroi.roi_pool(x, w.boxes, size, scale, return_argmax=True,
                                           argmax_dtype=np.int32)
                return (lambda: pyroi.roi_pool(x, w.boxes, size, scale, return_argmax=True,
                                               argmax_dtype=np.int32, num_threads=threads),
                        lambda: pyroi.roi_pool_backward(grad, w.boxes, argmax, x.shape, size,
                                                        scale, num_threads=threads))
            if w.op == "onnx_max":
                rois = np.ascontiguousarray(w.boxes[:, 1:])
                images = w.boxes[:, 0].astype(np.int64)
                attributes = dict(mode="max", sampling_ratio=w.sampling_ratio,
                                  spatial_scale=scale,
                                  coordinate_transformation_mode="half_pixel")
                _, argmax = pyroi.onnx.roi_align(x, rois, images, return_argmax=True,
                                                 output_height=size, output_width=size,
                                                 **attributes)
                return (lambda: pyroi.onnx.roi_align(x, rois, images, output_height=size,
                                                     output_width=size, num_threads=threads,
                                                     **attributes),
                        lambda: pyroi.onnx.roi_align_backward(grad, rois, images, x.shape,
                                                              argmax=argmax,
                                                              num_threads=threads,
                                                              **attributes))
            if w.op == "prroi_pool":
                return (lambda: pyroi.prroi_pool(x, w.boxes, size, scale, num_threads=threads),
                        lambda: pyroi.prroi_pool_backward(grad, w.boxes, x.shape, scale,
                                                          num_threads=threads))
            args = (size, scale, w.sampling_ratio, w.aligned)
            if w.op == "roi_align_max":
                _, argmax = pyroi.roi_align(x, w.boxes, *args, mode="max", return_argmax=True)
                return (lambda: pyroi.roi_align(x, w.boxes, *args, mode="max",
                                                num_threads=threads),
                        lambda: pyroi.roi_align_backward(grad, w.boxes, x.shape, *args[1:],
                                                         mode="max", argmax=argmax,
                                                         num_threads=threads))
            return (lambda: pyroi.roi_align(x, w.boxes, *args, num_threads=threads),
                    lambda: pyroi.roi_align_backward(grad, w.boxes, x.shape, *args[1:],
                                                     num_threads=threads))
        cases.append(HalfCase(w.name, w.description, calls))
    by_name = {w.name: w for w in workloads}
    vgg, box = by_name.get("vgg_conv5_align"), by_name.get("box_head")
    if vgg is not None:
        ps_features = np.ascontiguousarray(vgg.features[:, :490])

        def ps_calls(forward, backward, extra):
            def calls(dtype, threads):
                x = _as_dtype(cache, ps_features, dtype)
                grad = _as_dtype(cache, _half_grad(cache, rng, (len(vgg.boxes), 10, 7, 7)),
                                 dtype)
                return (lambda: forward(x, vgg.boxes, 7, vgg.spatial_scale, *extra,
                                        num_threads=threads),
                        lambda: backward(grad, vgg.boxes, x.shape, vgg.spatial_scale, *extra,
                                         num_threads=threads))
            return calls

        cases.append(HalfCase("vgg_conv5_ps_align", "PS-RoIAlign, VGG conv5 boxes on "
                              "1x490x38x50, 7x7, sr 2",
                              ps_calls(pyroi.ps_roi_align, pyroi.ps_roi_align_backward, (2,))))
        cases.append(HalfCase("vgg_conv5_ps_pool", "PS-RoIPool, VGG conv5 boxes on "
                              "1x490x38x50, 7x7",
                              ps_calls(pyroi.ps_roi_pool, pyroi.ps_roi_pool_backward, ())))
    if box is not None:
        # the small call's 64 boxes: rotated RoIAlign takes seconds on the box head's 1000
        rotated = _rotated_boxes(rng, by_name["small_call"].boxes if "small_call" in by_name
                                 else box.boxes[:64])

        def rotated_calls(dtype, threads):
            x = _as_dtype(cache, box.features, dtype)
            grad = _as_dtype(cache, _half_grad(cache, rng, (len(rotated), 256, 7, 7)), dtype)
            return (lambda: pyroi.roi_align_rotated(x, rotated, 7, 0.25, 2,
                                                    num_threads=threads),
                    lambda: pyroi.roi_align_rotated_backward(grad, rotated, x.shape, 0.25, 2,
                                                             num_threads=threads))

        cases.append(HalfCase("small_call_rotated", "rotated RoIAlign: the small call's arrays "
                              "(64 boxes), turned -90..90 degrees, 7x7, sr 2", rotated_calls))
        levels = {"p2": box.features}
        for level in ("p3", "p4", "p5"):
            previous = levels[f"p{int(level[1]) - 1}"]
            levels[level] = np.ascontiguousarray(previous[:, :, ::2, ::2])
        image_boxes = [np.ascontiguousarray(box.boxes[box.boxes[:, 0] == i, 1:])
                       for i in range(2)]

        def levels_calls(dtype, threads):
            pyramid = {name: _as_dtype(cache, level, dtype) for name, level in levels.items()}
            pooler = pyroi.MultiScaleRoIAlign(list(levels), 7, 2)
            pooled = pooler(pyramid, image_boxes, [(800, 1088)] * 2)
            grad = _as_dtype(cache, _half_grad(cache, rng, pooled.shape), dtype)

            def forward():
                return pooler(pyramid, image_boxes, [(800, 1088)] * 2, num_threads=threads)

            def backward():
                return pooler.backward(grad, num_threads=threads)
            return forward, backward

        cases.append(HalfCase("box_head_levels", "MultiScaleRoIAlign: the box head's boxes on "
                              "a 4-level pyramid of its map, 7x7, sr 2", levels_calls))
    return cases


def _half_grad(cache: dict, rng, shape) -> np.ndarray:
    """A float32 output gradient of ``shape`` (one per shape, reused)."""
    key = ("grad", tuple(shape))
    if key not in cache:
        cache[key] = rng.standard_normal(shape, dtype=np.float32)
    return cache[key]


def _status_bytes(field_name: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith(field_name + ":"))
    except (OSError, StopIteration):
        return None


def extra_peak_bytes(fn) -> int | None:
    """The peak resident memory ``fn()`` adds: its scratch (Linux: the rise of VmHWM, reset to
    VmRSS through /proc/self/clear_refs; None elsewhere). Called after warm-up calls, so a
    large result comes from pyroi's result cache (pages already resident) and is not in it;
    the scratch kept between calls is given back first, so the call maps its own afresh."""
    limit = pyroi.get_scratch_cache_limit()
    pyroi.set_scratch_cache_limit(0)
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
        before = _status_bytes("VmRSS")
        fn()
        peak = _status_bytes("VmHWM")
    except OSError:
        return None
    finally:
        pyroi.set_scratch_cache_limit(limit)
    return None if before is None or peak is None else peak - before


def interleaved_ms(first, second, repeat: int, warmup_seconds: float = WARMUP_SECONDS):
    """Medians of ``repeat`` calls of each of two functions called alternately (so both see
    the same load), and the median of the per-pair ratios second / first."""
    start = time.perf_counter()
    first(), second()
    while time.perf_counter() - start < warmup_seconds:
        first(), second()
    times: tuple[list, list] = ([], [])
    for i in range(repeat):
        order = ((0, first), (1, second)) if i % 2 == 0 else ((1, second), (0, first))
        for side, fn in order:
            begin = time.perf_counter()
            fn()
            times[side].append((time.perf_counter() - begin) * 1e3)
    ratios = [b / a for a, b in zip(*times)]
    return statistics.median(times[0]), statistics.median(times[1]), statistics.median(ratios)


def run_half(cases, thread_counts, repeat, progress=None, warmup_seconds=WARMUP_SECONDS):
    """float16 against float32 for every case, direction and thread count, interleaved in
    this process: rows ``(case, threads, direction, f32 ms, f16 ms, ratio of medians, median
    of paired ratios, f32 scratch bytes, f16 scratch bytes)``."""
    progress = sys.stderr if progress is None else progress
    print(f"pyroi {pyroi.__version__}; float16 against float32, interleaved\n{machine()}",
          file=progress, flush=True)
    rows = []
    for case in cases:
        print(f"\n{case.name}: {case.description}", file=progress, flush=True)
        for threads in thread_counts:
            wide, half = case.calls(np.float32, threads), case.calls(np.float16, threads)
            for direction, index in (("fwd", 0), ("bwd", 1)):
                if wide[index] is None or half[index] is None:
                    continue
                wide_ms, half_ms, paired = interleaved_ms(wide[index], half[index], repeat,
                                                          warmup_seconds)
                memory = (extra_peak_bytes(wide[index]), extra_peak_bytes(half[index]))
                rows.append((case.name, threads, direction, wide_ms, half_ms,
                             half_ms / wide_ms, paired) + memory)
                print(f"  threads={threads} {direction}: f32 {wide_ms:8.2f} ms | f16 "
                      f"{half_ms:8.2f} ms | f16/f32 {half_ms / wide_ms:5.2f} (paired "
                      f"{paired:5.2f}) | scratch f32 {_mib(memory[0])} f16 {_mib(memory[1])}",
                      file=progress, flush=True)
    return rows


def _mib(value) -> str:
    return "-" if value is None else f"{value / 2**20:.1f} MiB"


def format_half(rows) -> str:
    """The rows of :func:`run_half` as a Markdown table."""
    lines = ["| workload | threads | direction | f32 ms | f16 ms | f16/f32 | paired f16/f32 | "
             "f32 scratch | f16 scratch |", "|---|---|---|---|---|---|---|---|---|"]
    for name, threads, direction, wide, half, ratio, paired, wide_mem, half_mem in rows:
        lines.append(f"| {name} | {threads} | {direction} | {wide:.2f} | {half:.2f} | "
                     f"{ratio:.2f} | {paired:.2f} | {_mib(wide_mem)} | {_mib(half_mem)} |")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (shared by ``pyroi bench`` and ``bench/bench.py``)."""
    parser.add_argument("-w", "--workload", action="append",
                        help="workload (repeatable; default: all): "
                             + ", ".join(WORKLOADS))
    parser.add_argument("-t", "--threads", type=int, action="append",
                        help="thread count (repeatable); default: 1 and 2")
    parser.add_argument("--repeat", type=int, default=7, help="pyroi repeats (median)")
    parser.add_argument("--peer-repeat", type=int, default=3, help="peer repeats (median)")
    parser.add_argument("--quick", action="store_true",
                        help="3 pyroi repeats, 1 peer repeat, no warm-up")
    parser.add_argument("--scaling", action="store_true",
                        help="instead of the workloads: adaptive sampling time against box "
                             f"size ({SCALING_BOXES} square boxes per side, 1 thread unless -t)")
    parser.add_argument("--half", action="store_true",
                        help="instead of the peers: every operator's float16 call against its "
                             "float32 call (interleaved), forward and backward, with the "
                             "scratch each adds (1 thread unless -t)")
    parser.add_argument("--sides", type=int, nargs="+", metavar="PX",
                        help="box sides of --scaling (default: "
                             f"{' '.join(map(str, SCALING_SIDES))})")


def run_from_args(args, parser: argparse.ArgumentParser) -> int:
    """Run the benchmark as ``args`` (from :func:`add_arguments`) say and print the table;
    a bad option is a usage error of ``parser`` (exit status 2)."""
    warmup_seconds = WARMUP_SECONDS
    if args.quick:
        args.repeat, args.peer_repeat, warmup_seconds = 3, 1, 0.0
    for option, values in (("--threads", args.threads or []),
                           ("--repeat", [args.repeat]), ("--peer-repeat", [args.peer_repeat])):
        if any(v < 1 for v in values):
            parser.error(f"{option} must be at least 1")
    if args.sides and any(v < 1 for v in args.sides):
        parser.error("--sides must be at least 1")
    if args.scaling:
        threads = (args.threads or [1])[0]
        rows = run_scaling(args.sides or SCALING_SIDES, threads, args.repeat, args.peer_repeat,
                           warmup_seconds=warmup_seconds)
        print(format_scaling(rows), flush=True)
        return 0
    rng = np.random.default_rng(2026)
    workloads = make_workloads(rng)
    half_cases = make_half_cases(rng, workloads) if args.half else []
    if args.workload:
        known = {w.name for w in (half_cases if args.half else workloads)}
        unknown = set(args.workload) - known
        if unknown:
            parser.error(f"unknown workload(s) {sorted(unknown)}; choose from {sorted(known)}")
        workloads = [w for w in workloads if w.name in args.workload]
        half_cases = [c for c in half_cases if c.name in args.workload]
    if args.half:
        rows = run_half(half_cases, args.threads or [1], args.repeat,
                        warmup_seconds=warmup_seconds)
        print(format_half(rows), flush=True)
        print(f"\n{machine()}", flush=True)
        return 0
    rows = run(workloads, args.threads or [1, 2], args.repeat, args.peer_repeat,
               warmup_seconds=warmup_seconds)
    print(format_table(rows), flush=True)
    print(f"\n{machine()}", flush=True)
    return 0


def main(argv=None) -> int:
    """``bench/bench.py``: parse ``argv`` and run (``pyroi bench`` is the same)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv), parser)


if __name__ == "__main__":
    sys.exit(main())
