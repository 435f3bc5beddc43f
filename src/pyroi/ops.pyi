"""Type stubs of pyroi.ops (the operators; exported from pyroi)."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

# a result, or (result, argmax) when return_argmax is set
_Pooled = npt.NDArray[Any] | tuple[npt.NDArray[Any], npt.NDArray[np.int64]]
# RoIPool's argmax: int64 or int32 (argmax_dtype)
_PooledArgmax = npt.NDArray[Any] | tuple[npt.NDArray[Any], npt.NDArray[np.int64 | np.int32]]

__all__ = [
    "deform_roi_pool",
    "deform_roi_pool_backward",
    "prroi_pool",
    "prroi_pool_backward",
    "crop_and_resize",
    "crop_and_resize_backward_boxes",
    "crop_and_resize_backward_image",
    "ps_roi_align",
    "ps_roi_align_backward",
    "ps_roi_pool",
    "ps_roi_pool_backward",
    "roi_align",
    "roi_align_backward",
    "roi_align_backward_boxes",
    "roi_align_rotated",
    "roi_align_rotated_backward",
    "roi_pool",
    "roi_pool_backward",
]

def roi_align(input: npt.ArrayLike, boxes: npt.ArrayLike, output_size: int | tuple[int, int],
              spatial_scale: float = 1.0, sampling_ratio: int = -1, aligned: bool = False, *,
              mode: str = "avg", return_argmax: bool = False,
              batch_indices: npt.ArrayLike | None = None, layout: str = "NCHW",
              num_threads: int | None = None,
              out: npt.NDArray[Any] | None = None, exact: bool = True) -> _Pooled: ...

def roi_align_backward(grad_output: npt.ArrayLike, boxes: npt.ArrayLike, input_shape: Sequence[int],
                       spatial_scale: float = 1.0, sampling_ratio: int = -1, aligned: bool = False,
                       *, mode: str = "avg", argmax: npt.ArrayLike | None = None,
                       batch_indices: npt.ArrayLike | None = None, layout: str = "NCHW",
                       num_threads: int | None = None,
                       out: npt.NDArray[Any] | None = None,
                       exact: bool = True) -> npt.NDArray[Any]: ...

def roi_align_backward_boxes(grad_output: npt.ArrayLike, input: npt.ArrayLike,
                             boxes: npt.ArrayLike,
                             spatial_scale: float = 1.0, sampling_ratio: int = -1,
                             aligned: bool = False, *,
                             batch_indices: npt.ArrayLike | None = None,
                             num_threads: int | None = None,
                             ) -> npt.NDArray[Any] | list[npt.NDArray[Any]]: ...

def roi_pool(input: npt.ArrayLike, boxes: npt.ArrayLike, output_size: int | tuple[int, int],
             spatial_scale: float = 1.0, *, return_argmax: bool = False,
             argmax_dtype: npt.DTypeLike = ...,
             batch_indices: npt.ArrayLike | None = None, num_threads: int | None = None,
             out: npt.NDArray[Any] | None = None) -> _PooledArgmax: ...

def roi_pool_backward(grad_output: npt.ArrayLike, boxes: npt.ArrayLike,
                      argmax: npt.ArrayLike | None = None,
                      input_shape: Sequence[int] | None = None,
                      output_size: int | tuple[int, int] | None = None,
                      spatial_scale: float = 1.0, *, input: npt.ArrayLike | None = None,
                      batch_indices: npt.ArrayLike | None = None,
                      num_threads: int | None = None,
                      out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def ps_roi_align(input: npt.ArrayLike, boxes: npt.ArrayLike, output_size: int | tuple[int, int],
                 spatial_scale: float = 1.0, sampling_ratio: int = -1, *,
                 batch_indices: npt.ArrayLike | None = None, num_threads: int | None = None,
                 out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def ps_roi_align_backward(grad_output: npt.ArrayLike, boxes: npt.ArrayLike,
                          input_shape: Sequence[int], spatial_scale: float = 1.0,
                          sampling_ratio: int = -1, *, batch_indices: npt.ArrayLike | None = None,
                          num_threads: int | None = None,
                          out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def ps_roi_pool(input: npt.ArrayLike, boxes: npt.ArrayLike, output_size: int | tuple[int, int],
                spatial_scale: float = 1.0, *, batch_indices: npt.ArrayLike | None = None,
                num_threads: int | None = None,
                out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def ps_roi_pool_backward(grad_output: npt.ArrayLike, boxes: npt.ArrayLike,
                         input_shape: Sequence[int], spatial_scale: float = 1.0, *,
                         batch_indices: npt.ArrayLike | None = None, num_threads: int | None = None,
                         out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def roi_align_rotated(input: npt.ArrayLike, rois: npt.ArrayLike, output_size: int | tuple[int, int],
                      spatial_scale: float = 1.0, sampling_ratio: int = 0, aligned: bool = True,
                      clockwise: bool = False, *, angle: str = "degrees",
                      batch_indices: npt.ArrayLike | None = None, num_threads: int | None = None,
                      out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def roi_align_rotated_backward(grad_output: npt.ArrayLike, rois: npt.ArrayLike,
                               input_shape: Sequence[int], spatial_scale: float = 1.0,
                               sampling_ratio: int = 0, aligned: bool = True,
                               clockwise: bool = False, *, angle: str = "degrees",
                               batch_indices: npt.ArrayLike | None = None,
                               num_threads: int | None = None,
                               out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def prroi_pool(input: npt.ArrayLike, boxes: npt.ArrayLike, output_size: int | tuple[int, int],
               spatial_scale: float = 1.0, *, batch_indices: npt.ArrayLike | None = None,
               num_threads: int | None = None,
               out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def prroi_pool_backward(
    grad_output: npt.ArrayLike, boxes: npt.ArrayLike, input_shape: Sequence[int],
    spatial_scale: float = 1.0, *, input: npt.ArrayLike | None = None,
    batch_indices: npt.ArrayLike | None = None, num_threads: int | None = None,
    out: npt.NDArray[Any] | None = None,
) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | list[npt.NDArray[Any]] | None]: ...
def deform_roi_pool(input: npt.ArrayLike, rois: npt.ArrayLike,
                    offset: npt.ArrayLike | None = None,
                    output_size: int | tuple[int, int] = 7, spatial_scale: float = 1.0,
                    sampling_ratio: int = 0, gamma: float = 0.1, *,
                    mask: npt.ArrayLike | None = None,
                    batch_indices: npt.ArrayLike | None = None,
                    num_threads: int | None = None,
                    out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def deform_roi_pool_backward(
    grad_output: npt.ArrayLike, rois: npt.ArrayLike, input_shape: Sequence[int],
    offset: npt.ArrayLike | None = None, spatial_scale: float = 1.0, sampling_ratio: int = 0,
    gamma: float = 0.1, *, input: npt.ArrayLike | None = None,
    mask: npt.ArrayLike | None = None, batch_indices: npt.ArrayLike | None = None,
    num_threads: int | None = None, out: npt.NDArray[Any] | None = None,
) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | None, npt.NDArray[Any] | None]: ...

def crop_and_resize(image: npt.ArrayLike, boxes: npt.ArrayLike, box_indices: npt.ArrayLike,
                    crop_size: Sequence[int] | npt.ArrayLike, method: str = "bilinear",
                    extrapolation_value: float = 0.0, *, layout: str = "NHWC",
                    placement: str = "tensorflow", num_threads: int | None = None,
                    out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def crop_and_resize_backward_image(grads: npt.ArrayLike, boxes: npt.ArrayLike,
                                   box_indices: npt.ArrayLike, image_shape: Sequence[int],
                                   method: str = "bilinear", *, layout: str = "NHWC",
                                   placement: str = "tensorflow",
                                   num_threads: int | None = None,
                                   out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def crop_and_resize_backward_boxes(grads: npt.ArrayLike, image: npt.ArrayLike,
                                   boxes: npt.ArrayLike, box_indices: npt.ArrayLike,
                                   method: str = "bilinear", *, layout: str = "NHWC",
                                   placement: str = "tensorflow",
                                   num_threads: int | None = None,
                                   out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...
