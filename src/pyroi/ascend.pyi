"""Type stubs of pyroi.ascend (Ascend ROIPooling and aclnnRoiAlignV2Backward)."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["pack_rois", "roi_align_v2_backward", "roi_align_v2_backward_workspace_size",
           "roi_pooling"]

def pack_rois(boxes: npt.ArrayLike, *, dtype: npt.DTypeLike | None = None,
              strict: bool = True) -> tuple[npt.NDArray[Any], npt.NDArray[np.int32]]: ...

def roi_align_v2_backward(grad_output: npt.ArrayLike, boxes: npt.ArrayLike,
                          input_shape: Sequence[int], pooled_height: int, pooled_width: int,
                          spatial_scale: float, sampling_ratio: int, aligned: bool, *,
                          workspace: npt.NDArray[np.uint8] | None = None,
                          num_threads: int | None = None,
                          out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def roi_align_v2_backward_workspace_size(boxes: npt.ArrayLike, input_shape: Sequence[int],
                                         pooled_height: int, pooled_width: int,
                                         spatial_scale: float, sampling_ratio: int, aligned: bool,
                                         *, num_threads: int | None = None) -> int: ...

def roi_pooling(x: npt.ArrayLike, rois: npt.ArrayLike, roi_actual_num: npt.ArrayLike | None = None,
                *, pooled_h: int, pooled_w: int, spatial_scale: float | None = None,
                spatial_scale_h: float = 0.0625, spatial_scale_w: float = 0.0625,
                strict: bool = True, num_threads: int | None = None,
                out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...
