"""Type stubs of pyroi.torch (torchvision.ops' RoI functions and modules on pyroi's kernels)."""

from collections.abc import Callable, Sequence
from typing import Any

from torch import Tensor, nn

__all__ = ["CropAndResize", "DeformRoIPool", "DeformRoIPoolPack", "ModulatedDeformRoIPoolPack",
           "deform_roi_pool", "MultiScaleRoIAlign", "PSRoIAlign", "PSRoIPool", "PrRoIPool",
           "RoIAlign", "RoIAlignRotated", "RoIPool", "convert", "crop_and_resize",
           "onnx_translation_table", "prroi_pool", "ps_roi_align", "ps_roi_pool", "roi_align",
           "roi_align_rotated", "roi_pool", "unconvert"]

_Boxes = Tensor | Sequence[Tensor]
_Size = int | tuple[int, int] | list[int]

def roi_align(input: Tensor, boxes: _Boxes, output_size: _Size, spatial_scale: float = 1.0,
              sampling_ratio: int = -1, aligned: bool = False, *,
              exact: bool = True) -> Tensor: ...
def roi_pool(input: Tensor, boxes: _Boxes, output_size: _Size,
             spatial_scale: float = 1.0) -> Tensor: ...
def ps_roi_align(input: Tensor, boxes: _Boxes, output_size: _Size, spatial_scale: float = 1.0,
                 sampling_ratio: int = -1) -> Tensor: ...
def ps_roi_pool(input: Tensor, boxes: _Boxes, output_size: _Size,
                spatial_scale: float = 1.0) -> Tensor: ...
def roi_align_rotated(input: Tensor, rois: _Boxes, output_size: _Size,
                      spatial_scale: float = 1.0, sampling_ratio: int = 0,
                      aligned: bool = True, clockwise: bool = False, *,
                      angle: str = "degrees") -> Tensor: ...

class RoIAlign(nn.Module):
    output_size: _Size
    spatial_scale: float
    sampling_ratio: int
    aligned: bool
    exact: bool
    def __init__(self, output_size: _Size, spatial_scale: float, sampling_ratio: int,
                 aligned: bool = False, *,
                 exact: bool = True) -> None: ...
    def forward(self, input: Tensor, rois: _Boxes) -> Tensor: ...

class RoIPool(nn.Module):
    output_size: _Size
    spatial_scale: float
    def __init__(self, output_size: _Size, spatial_scale: float) -> None: ...
    def forward(self, input: Tensor, rois: _Boxes) -> Tensor: ...

class PSRoIAlign(nn.Module):
    output_size: _Size
    spatial_scale: float
    sampling_ratio: int
    def __init__(self, output_size: _Size, spatial_scale: float, sampling_ratio: int) -> None: ...
    def forward(self, input: Tensor, rois: _Boxes) -> Tensor: ...

class PSRoIPool(RoIPool): ...

def prroi_pool(input: Tensor, rois: _Boxes, output_size: _Size,
               spatial_scale: float = 1.0) -> Tensor: ...

class PrRoIPool(nn.Module):
    output_size: tuple[int, int]
    spatial_scale: float
    def __init__(self, output_size: _Size, spatial_scale: float = 1.0) -> None: ...
    def forward(self, features: Tensor, rois: _Boxes) -> Tensor: ...

def deform_roi_pool(input: Tensor, rois: _Boxes, offset: Tensor | None, output_size: _Size,
                    spatial_scale: float = 1.0, sampling_ratio: int = 0, gamma: float = 0.1, *,
                    mask: Tensor | None = None) -> Tensor: ...

class DeformRoIPool(nn.Module):
    output_size: tuple[int, int]
    spatial_scale: float
    sampling_ratio: int
    gamma: float
    def __init__(self, output_size: _Size, spatial_scale: float = 1.0, sampling_ratio: int = 0,
                 gamma: float = 0.1) -> None: ...
    def forward(self, input: Tensor, rois: _Boxes, offset: Tensor | None = None) -> Tensor: ...

class DeformRoIPoolPack(DeformRoIPool):
    output_channels: int
    deform_fc_channels: int
    offset_fc: nn.Sequential
    def __init__(self, output_size: _Size, output_channels: int, deform_fc_channels: int = 1024,
                 spatial_scale: float = 1.0, sampling_ratio: int = 0,
                 gamma: float = 0.1) -> None: ...
    def forward(self, input: Tensor, rois: _Boxes) -> Tensor: ...  # type: ignore[override]

class ModulatedDeformRoIPoolPack(DeformRoIPoolPack):
    mask_fc: nn.Sequential

def crop_and_resize(image: Tensor, boxes: Tensor, box_indices: Tensor,
                    crop_size: Sequence[int], method: str = "bilinear",
                    extrapolation_value: float = 0.0, *, layout: str = "NCHW",
                    placement: str = "tensorflow") -> Tensor: ...

class CropAndResize(nn.Module):
    crop_size: tuple[int, int]
    method: str
    extrapolation_value: float
    layout: str
    placement: str
    def __init__(self, crop_size: Sequence[int], method: str = "bilinear",
                 extrapolation_value: float = 0.0, *, layout: str = "NCHW",
                 placement: str = "tensorflow") -> None: ...
    def forward(self, image: Tensor, boxes: Tensor, box_indices: Tensor) -> Tensor: ...

class RoIAlignRotated(nn.Module):
    output_size: tuple[int, int]
    spatial_scale: float
    sampling_ratio: int
    aligned: bool
    clockwise: bool
    angle: str
    def __init__(self, output_size: _Size, spatial_scale: float = 1.0,
                 sampling_ratio: int = 0, aligned: bool = True, clockwise: bool = False, *,
                 angle: str = "degrees") -> None: ...
    def forward(self, input: Tensor, rois: _Boxes) -> Tensor: ...

class _LevelMapper:
    k_min: int
    k_max: int
    s0: int
    lvl0: int
    eps: float
    def __init__(self, k_min: int, k_max: int, canonical_scale: int = 224,
                 canonical_level: int = 4, eps: float = 1e-06) -> None: ...
    def __call__(self, boxlists: Sequence[Tensor]) -> Tensor: ...
    def levels(self, boxes: Tensor) -> Tensor: ...

class MultiScaleRoIAlign(nn.Module):
    featmap_names: list[str]
    output_size: tuple[int, ...]
    sampling_ratio: int
    scales: list[float] | None
    map_levels: Any
    canonical_scale: int
    canonical_level: int
    def __init__(self, featmap_names: list[str], output_size: _Size, sampling_ratio: int, *,
                 canonical_scale: int = 224, canonical_level: int = 4,
                 strict_levels: bool = False) -> None: ...
    def forward(self, x: dict[str, Tensor], boxes: list[Tensor],
                image_shapes: list[tuple[int, int]]) -> Tensor: ...

def convert(module: nn.Module) -> nn.Module: ...
def unconvert(module: nn.Module) -> nn.Module: ...
def onnx_translation_table() -> dict[Any, Callable[..., Any]]: ...
