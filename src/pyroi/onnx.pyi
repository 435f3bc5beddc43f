"""Type stubs of pyroi.onnx (ONNX RoiAlign / MaxRoiPool as onnxruntime computes them, and as
trainable layers)."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pyroi.layers import _RoILayer
from pyroi.ops import _Pooled

__all__ = ["MaxRoiPool", "RoiAlign", "crop_and_resize", "custom_ops_library", "max_roi_pool",
           "rewrite_model", "roi_align", "roi_align_backward", "run_node"]

class _OnnxLayer(_RoILayer):
    lda_coeff: float
    name: str | None
    def __init__(self, training: bool, lda_coeff: float, name: str | None) -> None: ...
    def backward(  # type: ignore[override]
        self, grad_output: npt.ArrayLike, *, num_threads: int | None = None
    ) -> npt.NDArray[Any]: ...
    def to_node(self, inputs: Sequence[str] | None = None,
                outputs: Sequence[str] = ("Y",)) -> Any: ...

class RoiAlign(_OnnxLayer):
    opset: int
    coordinate_transformation_mode: str | None
    mode: str
    output_height: int
    output_width: int
    sampling_ratio: int
    spatial_scale: float
    def __init__(self, *, coordinate_transformation_mode: str | None = None, mode: str = "avg",
                 output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
                 spatial_scale: float = 1.0, training: bool = True, lda_coeff: float = 1.0,
                 name: str | None = None, opset: int = 16) -> None: ...
    def __call__(  # type: ignore[override]
        self,
        X: npt.ArrayLike,
        rois: npt.ArrayLike,
        batch_indices: npt.ArrayLike,
        *,
        num_threads: int | None = None,
    ) -> npt.NDArray[Any]: ...
    @classmethod
    def from_node(cls, node: Any, *, opset: int = 16, training: bool = True,
                  lda_coeff: float = 1.0) -> RoiAlign: ...

class MaxRoiPool(_OnnxLayer):
    pooled_shape: tuple[int, int]
    spatial_scale: float
    def __init__(self, pooled_shape: int | tuple[int, int], spatial_scale: float = 1.0, *,
                 training: bool = True, lda_coeff: float = 1.0,
                 name: str | None = None) -> None: ...
    def __call__(  # type: ignore[override]
        self, X: npt.ArrayLike, rois: npt.ArrayLike, *, num_threads: int | None = None
    ) -> npt.NDArray[Any]: ...
    @classmethod
    def from_node(cls, node: Any, *, training: bool = True,
                  lda_coeff: float = 1.0) -> MaxRoiPool: ...

def roi_align_backward(grad_output: npt.ArrayLike, rois: npt.ArrayLike,
                       batch_indices: npt.ArrayLike, input_shape: Sequence[int], *,
                       mode: str = "avg", argmax: npt.ArrayLike | None = None,
                       sampling_ratio: int = 0, spatial_scale: float = 1.0,
                       coordinate_transformation_mode: str | None = None, opset: int = 16,
                       num_threads: int | None = None,
                       out: npt.NDArray[Any] | None = None) -> npt.NDArray[Any]: ...

def max_roi_pool(X: npt.ArrayLike, rois: npt.ArrayLike, pooled_shape: int | tuple[int, int],
                 spatial_scale: float = 1.0, *, batch_indices: npt.ArrayLike | None = None,
                 return_argmax: bool = False, num_threads: int | None = None,
                 out: npt.NDArray[Any] | None = None) -> _Pooled: ...

def roi_align(X: npt.ArrayLike, rois: npt.ArrayLike, batch_indices: npt.ArrayLike, *,
              mode: str = "avg", output_height: int = 1, output_width: int = 1,
              sampling_ratio: int = 0, spatial_scale: float = 1.0,
              coordinate_transformation_mode: str | None = None, opset: int = 16,
              return_argmax: bool = False, num_threads: int | None = None,
              out: npt.NDArray[Any] | None = None) -> _Pooled: ...

def custom_ops_library() -> str: ...
def rewrite_model(model: Any, *, back: bool = False) -> tuple[Any, int]: ...
def run_node(node: Any, X: npt.ArrayLike, rois: npt.ArrayLike,
             batch_indices: npt.ArrayLike | None = None,
             crop_size: npt.ArrayLike | None = None, *, opset: int = 16,
             num_threads: int | None = None) -> npt.NDArray[Any]: ...
def crop_and_resize(X: npt.ArrayLike, rois: npt.ArrayLike, batch_indices: npt.ArrayLike,
                    crop_size: npt.ArrayLike, *, mode: str = "bilinear",
                    extrapolation_value: float = 0.0,
                    num_threads: int | None = None) -> npt.NDArray[Any]: ...
