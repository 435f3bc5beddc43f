"""Type stubs of pyroi.viz (explain geometry from the C core; pictures with matplotlib)."""

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure

__all__ = [
    "AxisSamples",
    "RoIAlignGeometry",
    "RoIPoolGeometry",
    "explain",
    "explain_roi_align",
    "explain_roi_pool",
    "save_explain",
]

@dataclass(frozen=True)
class AxisSamples:
    coords: npt.NDArray[np.floating[Any]]
    taps: npt.NDArray[np.int64]
    weights: npt.NDArray[np.floating[Any]]
    in_map: npt.NDArray[np.bool_]
    edges: npt.NDArray[np.floating[Any]]
    @property
    def grid(self) -> int: ...

@dataclass(frozen=True)
class RoIAlignGeometry:
    box: tuple[float, float, float, float]
    map_size: tuple[int, int]
    output_size: tuple[int, int]
    spatial_scale: float
    sampling_ratio: int
    aligned: bool
    rows: AxisSamples
    cols: AxisSamples
    @property
    def grid(self) -> tuple[int, int]: ...
    @property
    def count(self) -> int: ...

@dataclass(frozen=True)
class RoIPoolGeometry:
    box: tuple[float, float, float, float]
    map_size: tuple[int, int]
    output_size: tuple[int, int]
    spatial_scale: float
    roi_pixels: npt.NDArray[np.int64]
    row_edges: npt.NDArray[np.int64]
    col_edges: npt.NDArray[np.int64]

def explain(box: npt.ArrayLike, output_size: int | tuple[int, int] = 2, spatial_scale: float = 1.0,
            sampling_ratio: int = 2, aligned: bool = False, *,
            features: npt.ArrayLike | None = None, map_size: tuple[int, int] | None = None,
            image: int = 0, channel: int = 0,
            figsize: tuple[float, float] | None = None) -> Figure: ...

def explain_roi_align(box: npt.ArrayLike, output_size: int | tuple[int, int],
                      spatial_scale: float = 1.0, sampling_ratio: int = -1, aligned: bool = False,
                      *, map_size: tuple[int, int],
                      dtype: npt.DTypeLike = ...) -> RoIAlignGeometry: ...

def explain_roi_pool(box: npt.ArrayLike, output_size: int | tuple[int, int],
                     spatial_scale: float = 1.0, *, map_size: tuple[int, int],
                     dtype: npt.DTypeLike = ...) -> RoIPoolGeometry: ...

def save_explain(path: str | os.PathLike[str], box: npt.ArrayLike,
                 output_size: int | tuple[int, int] = 2, spatial_scale: float = 1.0,
                 sampling_ratio: int = 2, aligned: bool = False, *, dpi: int = 100,
                 **options: Any) -> str: ...
