"""Type stubs of pyroi._core, the Cython bindings over the C core (internal: use the
functions of pyroi, pyroi.onnx, pyroi.ascend and pyroi.viz).

Array arguments are memoryviews of NumPy arrays that _validate.py has already checked: data
as float32 or float64 (one dtype per call, ``_Real``), batch indices and argmax as int64.
Functions that fill an output array return None; a non-OK C status raises the exception
class of that status.
"""

from collections.abc import Sequence
from typing import Any, Union

from typing_extensions import Self, disjoint_base

import numpy as np
import numpy.typing as npt

from pyroi._errors import (
    BatchIndexError as BatchIndexError,
    BoxError as BoxError,
    InvalidArgumentError as InvalidArgumentError,
    PyroiError as PyroiError,
    PyroiMemoryError as PyroiMemoryError,
    ShapeError as ShapeError,
)

_Real = Union[npt.NDArray[np.float32], npt.NDArray[np.float64]]
_Half = Union[_Real, npt.NDArray[np.uint16]]  # float16 tensors: uint16 views of their bits
_Ints = npt.NDArray[np.int64]
_Argmax = Union[_Ints, npt.NDArray[np.int32]]  # RoIPool's argmax: int64 or int32

# Largest adaptive sampling grid per bin and axis (PYROI_MAX_SAMPLING_GRID).
MAX_SAMPLING_GRID: int
# Largest fixed sampling_ratio (PYROI_MAX_SAMPLING_RATIO).
MAX_SAMPLING_RATIO: int

# The C library's version string.
def version_string() -> str: ...

# The instruction set the C core's vector loops run on this CPU ("x86-64-v4", "avx2",
# "baseline", "baseline-only build").
def vector_isa() -> str: ...
def cache_bytes(level: int) -> int: ...
def set_scratch_cache_limit(limit: int) -> int: ...
def scratch_cache_limit() -> int: ...
def scratch_cache_bytes() -> int: ...

# The C library's version as MAJOR * 10000 + MINOR * 100 + PATCH.
def version_number() -> int: ...

# PYROI_VERSION_NUMBER of the header this extension was compiled against.
def header_version_number() -> int: ...

# The operators (_core.pyx runs each through one marshalling path, run()): map tensors
# (N, C, H, W) are a forward's input and a backward's grad_input, pooled ones (K, C', PH, PW)
# its output and grad_output; boxes (K, 4), or (K, 5) rotated; argmax int64 of the pooled shape.

# RoIAlign forward into output (K, C, pooled_height, pooled_width); float16 tensors as
# uint16 views of their bits, with float32 boxes.
def roi_align_forward(input: _Half, boxes: _Real, batch_indices: _Ints, output: _Half,
                      pooled_height: int, pooled_width: int, spatial_scale_h: float,
                      spatial_scale_w: float, sampling_ratio: int, aligned: bool,
                      num_threads: int, merge_samples: bool = False) -> None: ...
# RoIAlign backward: overwrite grad_input (N, C, H, W) with the input gradient.
def roi_align_backward(grad_output: _Half, boxes: _Real, batch_indices: _Ints, grad_input: _Half,
                       spatial_scale_h: float, spatial_scale_w: float, sampling_ratio: int,
                       aligned: bool, num_threads: int, merge_samples: bool = False) -> None: ...
# RoIAlign (avg) box backward: write grad_boxes (K, 4), the gradient of each box's x1, y1,
# x2, y2, from grad_output and the forward's input.
def roi_align_backward_boxes(grad_output: _Real, input: _Real, boxes: _Real,
                             batch_indices: _Ints, grad_boxes: _Real, spatial_scale_h: float,
                             spatial_scale_w: float, sampling_ratio: int, aligned: bool,
                             num_threads: int) -> None: ...
# RoIAlign max mode into output and argmax (or None); onnx: ONNX's max over weighted taps
# (argmax: winner codes 4 * sample + tap), else mmcv's.
def roi_align_max_forward(input: _Real, boxes: _Real, batch_indices: _Ints, output: _Real,
                          argmax: _Ints | None, pooled_height: int, pooled_width: int,
                          spatial_scale_h: float, spatial_scale_w: float, sampling_ratio: int,
                          aligned: bool, num_threads: int, onnx: bool = False) -> None: ...
# RoIAlign max-mode backward (onnx: of ONNX's max, from its winner codes; else of mmcv's).
def roi_align_max_backward(grad_output: _Real, argmax: _Ints, boxes: _Real, batch_indices: _Ints,
                           grad_input: _Real, spatial_scale_h: float, spatial_scale_w: float,
                           sampling_ratio: int, aligned: bool, num_threads: int,
                           onnx: bool = False) -> None: ...
# RoIPool forward into output (K, C, pooled_height, pooled_width) and argmax (or None).
def roi_pool_forward(input: _Real, boxes: _Real, batch_indices: _Ints, output: _Real,
                     argmax: _Argmax | None, pooled_height: int, pooled_width: int,
                     spatial_scale_h: float, spatial_scale_w: float, num_threads: int) -> None: ...
# RoIPool backward: overwrite grad_input (N, C, H, W) with the input gradient.
def roi_pool_backward(grad_output: _Real, argmax: _Argmax, batch_indices: _Ints, grad_input: _Real,
                      spatial_scale_h: float, spatial_scale_w: float,
                      num_threads: int) -> None: ...
# RoIPool backward from the forward's input (N, C, H, W) and boxes instead of its argmax.
def roi_pool_backward_from_input(grad_output: _Real, input: _Real, boxes: _Real,
                                 batch_indices: _Ints, grad_input: _Real,
                                 spatial_scale_h: float, spatial_scale_w: float,
                                 num_threads: int) -> None: ...
# PSRoIAlign forward into output (K, C / (PH * PW), PH, PW), and its backward.
def crop_and_resize_forward(image: _Real, boxes: _Real, box_indices: _Ints, crops: _Real,
                            crop_height: int, crop_width: int, method: int, placement: int,
                            extrapolation_value: float, num_threads: int) -> None: ...
def crop_and_resize_backward_image(grads: _Real, boxes: _Real, box_indices: _Ints,
                                   grad_image: _Real, method: int, placement: int,
                                   num_threads: int) -> None: ...
def crop_and_resize_backward_boxes(grads: _Real, image: _Real, boxes: _Real, box_indices: _Ints,
                                   grad_boxes: _Real, method: int, placement: int,
                                   num_threads: int) -> None: ...
def ps_roi_align_forward(input: _Real, boxes: _Real, batch_indices: _Ints, output: _Real,
                         pooled_height: int, pooled_width: int, spatial_scale_h: float,
                         spatial_scale_w: float, sampling_ratio: int, num_threads: int) -> None: ...
def ps_roi_align_backward(grad_output: _Real, boxes: _Real, batch_indices: _Ints,
                          grad_input: _Real, spatial_scale_h: float, spatial_scale_w: float,
                          sampling_ratio: int, num_threads: int) -> None: ...
# PSRoIPool forward into output (K, C / (PH * PW), PH, PW), and its backward.
def ps_roi_pool_forward(input: _Real, boxes: _Real, batch_indices: _Ints, output: _Real,
                        pooled_height: int, pooled_width: int, spatial_scale_h: float,
                        spatial_scale_w: float, num_threads: int) -> None: ...
def ps_roi_pool_backward(grad_output: _Real, boxes: _Real, batch_indices: _Ints,
                         grad_input: _Real, spatial_scale_h: float, spatial_scale_w: float,
                         num_threads: int) -> None: ...
# Rotated RoIAlign forward (boxes: (K, 5) rows cx, cy, w, h, angle), and its backward.
def roi_align_rotated_forward(input: _Real, boxes: _Real, batch_indices: _Ints, output: _Real,
                              pooled_height: int, pooled_width: int, spatial_scale_h: float,
                              spatial_scale_w: float, sampling_ratio: int, aligned: bool,
                              clockwise: bool, angle_in_degrees: bool,
                              num_threads: int) -> None: ...
def roi_align_rotated_backward(grad_output: _Real, boxes: _Real, batch_indices: _Ints,
                               grad_input: _Real, spatial_scale_h: float,
                               spatial_scale_w: float, sampling_ratio: int, aligned: bool,
                               clockwise: bool, angle_in_degrees: bool,
                               num_threads: int) -> None: ...
# PrRoIPool forward into output (K, C, PH, PW), its input backward and its box backward.
def prroi_pool_forward(input: _Real, boxes: _Real, batch_indices: _Ints, output: _Real,
                       pooled_height: int, pooled_width: int, spatial_scale_h: float,
                       spatial_scale_w: float, num_threads: int) -> None: ...
def prroi_pool_backward(grad_output: _Real, boxes: _Real, batch_indices: _Ints,
                        grad_input: _Real, spatial_scale_h: float, spatial_scale_w: float,
                        num_threads: int) -> None: ...
def prroi_pool_backward_boxes(grad_output: _Real, input: _Real, boxes: _Real,
                              batch_indices: _Ints, grad_boxes: _Real, spatial_scale_h: float,
                              spatial_scale_w: float, num_threads: int) -> None: ...
# Deformable RoI pooling forward, input backward, offset (and mask) backward; offset, mask and
# their gradients (K, 2 or 1, PH, PW) or None.
def deform_roi_pool_forward(input: _Real, boxes: _Real, batch_indices: _Ints,
                            offset: _Real | None, mask: _Real | None, output: _Real,
                            pooled_height: int, pooled_width: int, spatial_scale_h: float,
                            spatial_scale_w: float, sampling_ratio: int, gamma: float,
                            num_threads: int) -> None: ...
def deform_roi_pool_backward(grad_output: _Real, boxes: _Real, batch_indices: _Ints,
                             offset: _Real | None, mask: _Real | None, grad_input: _Real,
                             spatial_scale_h: float, spatial_scale_w: float,
                             sampling_ratio: int, gamma: float, num_threads: int) -> None: ...
def deform_roi_pool_backward_offset(grad_output: _Real, input: _Real, boxes: _Real,
                                    batch_indices: _Ints, offset: _Real | None,
                                    mask: _Real | None, grad_offset: _Real | None,
                                    grad_mask: _Real | None, spatial_scale_h: float,
                                    spatial_scale_w: float, sampling_ratio: int,
                                    gamma: float, num_threads: int) -> None: ...
# Bytes of workspace roi_align_backward_with_workspace uses (the aclnn-style query).
def roi_align_backward_workspace_size(boxes: _Real, batch_indices: _Ints,
                                      grad_input_shape: Sequence[int], pooled_height: int,
                                      pooled_width: int, spatial_scale_h: float,
                                      spatial_scale_w: float, sampling_ratio: int,
                                      aligned: bool, num_threads: int) -> int: ...
# RoIAlign backward with every scratch byte taken from workspace (uint8, any size).
def roi_align_backward_with_workspace(grad_output: _Real, boxes: _Real, batch_indices: _Ints,
                                      grad_input: _Real, spatial_scale_h: float,
                                      spatial_scale_w: float, sampling_ratio: int,
                                      aligned: bool, num_threads: int,
                                      workspace: npt.NDArray[Any]) -> None: ...

# target = scale * source in float32, rounded once to float16 (uint16 bit patterns).
def scale_f32_to_f16(source: npt.NDArray[np.float32], scale: float,
                     target: npt.NDArray[np.uint16]) -> None: ...
# Write the batch index of each row [batch_index, coordinates...] into batch_indices:
# (0, -1), or (1, k) for the first bad batch index, (2, k) for the first non-finite box.
def roi_rows_batch_indices(rows: _Real, num_images: int,
                           batch_indices: _Ints) -> tuple[int, int]: ...
# Write the pyramid level index (or -1) of each (x1, y1, x2, y2) row into levels.
def fpn_levels(boxes: _Real, levels: _Ints, min_level: int, max_level: int,
               canonical_scale: float, canonical_level: float, eps: float) -> None: ...
# Most levels of a pyramid (PYROI_MAX_FPN_LEVELS).
MAX_FPN_LEVELS: int
# Multi-scale RoIAlign forward: each RoI pooled from its pyramid level into its row of output
# (float16 tensors as uint16 views, with float32 boxes).
def roi_align_levels_forward(inputs: list[_Half], scales: list[float], boxes: _Real,
                             batch_indices: _Ints, output: _Half, sampling_ratio: int,
                             aligned: bool, min_level: int, max_level: int,
                             canonical_scale: float, canonical_level: float, eps: float,
                             num_threads: int) -> None: ...
# Multi-scale RoIAlign backward: overwrite each level's grad_input (N, C, H_l, W_l).
def roi_align_levels_backward(grad_output: _Half, boxes: _Real, batch_indices: _Ints,
                              grad_inputs: list[_Half], scales: list[float], sampling_ratio: int,
                              aligned: bool, min_level: int, max_level: int,
                              canonical_scale: float, canonical_level: float, eps: float,
                              num_threads: int) -> None: ...

# (grid_h, grid_w): the samples per bin of one box's RoIAlign grid.
def roi_align_sample_grid(box: _Real, height: int, width: int, pooled_height: int,
                          pooled_width: int, spatial_scale_h: float, spatial_scale_w: float,
                          sampling_ratio: int, aligned: bool) -> tuple[int, int]: ...
# Fill the per-axis sample arrays of one box (sized from roi_align_sample_grid).
def roi_align_sample_axes(box: _Real, height: int, width: int, pooled_height: int,
                          pooled_width: int, spatial_scale_h: float, spatial_scale_w: float,
                          sampling_ratio: int, aligned: bool, row_coords: _Real,
                          row_taps: _Ints, row_weights: _Real,
                          row_in_map: npt.NDArray[np.int8], row_edges: _Real,
                          col_coords: _Real, col_taps: _Ints, col_weights: _Real,
                          col_in_map: npt.NDArray[np.int8], col_edges: _Real) -> None: ...
# Fill RoIPool's quantised RoI (4,) and bin ranges (ph, 2), (pw, 2) of one box.
def roi_pool_bin_edges(box: _Real, height: int, width: int, spatial_scale_h: float,
                       spatial_scale_w: float, roi_pixels: _Ints, row_edges: _Ints,
                       col_edges: _Ints) -> None: ...
# Whether a RoIPool training layer should keep its input rather than an argmax (C's rule).
def roi_pool_backward_from_input_pays(input_shape: tuple[int, ...], num_rois: int,
                                      pooled_height: int, pooled_width: int) -> bool: ...

# Result buffers kept for reuse (pyroi._results holds the policy).
def set_result_cache_limit(limit: int) -> int: ...
def result_cache_limit() -> int: ...
def result_cache_bytes() -> int: ...

@disjoint_base
class ResultBuffer:
    def __new__(cls, size: int) -> Self: ...
