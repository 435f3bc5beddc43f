"""Type stubs of pyroi.layers (layer objects with a training mode; exported from pyroi)."""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy.typing as npt
from typing_extensions import Self

__all__ = ["CropAndResize", "DeformRoIPool", "MultiScaleRoIAlign", "PSRoIAlign", "PSRoIPool",
           "PrRoIPool", "RoIAlign", "RoIAlignRotated", "RoIPool"]

class _TrainableLayer:
    training: bool
    def train(self, mode: bool = True) -> Self: ...
    def eval(self) -> Self: ...

class _RoILayer(_TrainableLayer):
    def __call__(self, input: npt.ArrayLike, boxes: npt.ArrayLike, *,
                 batch_indices: npt.ArrayLike | None = None,
                 num_threads: int | None = None) -> npt.NDArray[Any]: ...
    def backward(self, grad_output: npt.ArrayLike, lda_coeff: float = 1.0, *,
                 num_threads: int | None = None) -> npt.NDArray[Any]: ...

class RoIAlign(_RoILayer):
    output_size: tuple[int, int]
    spatial_scale: float
    sampling_ratio: int
    aligned: bool
    mode: str
    exact: bool
    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float = 1.0,
                 sampling_ratio: int = -1, aligned: bool = False, mode: str = "avg", *,
                 exact: bool = True) -> None: ...
    def backward_boxes(self, grad_output: npt.ArrayLike, input: npt.ArrayLike,
                       lda_coeff: float = 1.0, *, num_threads: int | None = None
                       ) -> npt.NDArray[Any] | list[npt.NDArray[Any]]: ...

class RoIPool(_RoILayer):
    output_size: tuple[int, int]
    spatial_scale: float
    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float = 1.0) -> None: ...

class PSRoIAlign(_RoILayer):
    output_size: tuple[int, int]
    spatial_scale: float
    sampling_ratio: int
    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float = 1.0,
                 sampling_ratio: int = -1) -> None: ...

class PSRoIPool(_RoILayer):
    output_size: tuple[int, int]
    spatial_scale: float
    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float = 1.0) -> None: ...

class PrRoIPool(_RoILayer):
    output_size: tuple[int, int]
    spatial_scale: float
    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float = 1.0) -> None: ...
    def backward(  # type: ignore[override]
        self, grad_output: npt.ArrayLike, lda_coeff: float = 1.0, *,
        num_threads: int | None = None,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | list[npt.NDArray[Any]]]: ...

class DeformRoIPool(_RoILayer):
    output_size: tuple[int, int]
    spatial_scale: float
    sampling_ratio: int
    gamma: float
    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float = 1.0,
                 sampling_ratio: int = 0, gamma: float = 0.1) -> None: ...
    def __call__(  # type: ignore[override]
        self, input: npt.ArrayLike, rois: npt.ArrayLike, offset: npt.ArrayLike | None = None,
        mask: npt.ArrayLike | None = None, *, batch_indices: npt.ArrayLike | None = None,
        num_threads: int | None = None,
    ) -> npt.NDArray[Any]: ...
    def backward(  # type: ignore[override]
        self, grad_output: npt.ArrayLike, lda_coeff: float = 1.0, *,
        num_threads: int | None = None,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | None, npt.NDArray[Any] | None]: ...

class RoIAlignRotated(_RoILayer):
    output_size: tuple[int, int]
    spatial_scale: float
    sampling_ratio: int
    aligned: bool
    clockwise: bool
    angle: str
    def __init__(self, output_size: int | tuple[int, int], spatial_scale: float = 1.0,
                 sampling_ratio: int = 0, aligned: bool = True, clockwise: bool = False, *,
                 angle: str = "degrees") -> None: ...

class MultiScaleRoIAlign(_TrainableLayer):
    featmap_names: list[str]
    output_size: tuple[int, int]
    sampling_ratio: int
    canonical_scale: int
    canonical_level: int
    strict_levels: bool
    scales: list[float] | None
    min_level: int | None
    max_level: int | None
    def __init__(self, featmap_names: Sequence[str], output_size: int | tuple[int, int],
                 sampling_ratio: int, *, canonical_scale: int = 224,
                 canonical_level: int = 4, strict_levels: bool = False) -> None: ...
    def __call__(self, x: Mapping[str, npt.ArrayLike], boxes: Sequence[npt.ArrayLike],
                 image_shapes: Sequence[tuple[int, int]], *,
                 num_threads: int | None = None) -> npt.NDArray[Any]: ...
    def backward(self, grad_output: npt.ArrayLike, lda_coeff: float = 1.0, *,
                 num_threads: int | None = None) -> dict[str, npt.NDArray[Any]]: ...

class CropAndResize(_TrainableLayer):
    crop_size: tuple[int, int]
    method: str
    extrapolation_value: float
    layout: str
    placement: str
    def __init__(self, crop_size: Sequence[int], method: str = "bilinear",
                 extrapolation_value: float = 0.0, *, layout: str = "NHWC",
                 placement: str = "tensorflow") -> None: ...
    def __call__(self, image: npt.ArrayLike, boxes: npt.ArrayLike, box_indices: npt.ArrayLike,
                 *, num_threads: int | None = None) -> npt.NDArray[Any]: ...
    def backward(self, grad_output: npt.ArrayLike, lda_coeff: float = 1.0, *,
                 num_threads: int | None = None) -> npt.NDArray[Any]: ...
    def backward_boxes(self, grad_output: npt.ArrayLike, image: npt.ArrayLike,
                       lda_coeff: float = 1.0, *,
                       num_threads: int | None = None) -> npt.NDArray[Any]: ...
