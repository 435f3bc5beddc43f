"""Type stubs of pyroi.onnx (ONNX RoiAlign / MaxRoiPool as onnxruntime computes them)."""

from typing import Any

import numpy.typing as npt

__all__ = ["max_roi_pool", "roi_align", "run_node"]

def max_roi_pool(
    X: npt.ArrayLike,
    rois: npt.ArrayLike,
    pooled_shape: int | tuple[int, int],
    spatial_scale: float = 1.0,
    *,
    batch_indices: npt.ArrayLike | None = None,
    num_threads: int | None = None,
    out: npt.NDArray[Any] | None = None,
) -> npt.NDArray[Any]: ...

def roi_align(
    X: npt.ArrayLike,
    rois: npt.ArrayLike,
    batch_indices: npt.ArrayLike,
    *,
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
    coordinate_transformation_mode: str | None = None,
    opset: int = 16,
    num_threads: int | None = None,
    out: npt.NDArray[Any] | None = None,
) -> npt.NDArray[Any]: ...

def run_node(
    node: Any,
    X: npt.ArrayLike,
    rois: npt.ArrayLike,
    batch_indices: npt.ArrayLike | None = None,
    *,
    opset: int = 16,
    num_threads: int | None = None,
) -> npt.NDArray[Any]: ...
