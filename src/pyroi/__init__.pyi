"""Type stubs of the pyroi package namespace."""

from pyroi import ascend as ascend
from pyroi import onnx as onnx
from pyroi import viz as viz
from pyroi._errors import (
    ArgumentTypeError as ArgumentTypeError,
    BatchIndexError as BatchIndexError,
    BoxError as BoxError,
    DTypeError as DTypeError,
    InvalidArgumentError as InvalidArgumentError,
    PyroiError as PyroiError,
    PyroiMemoryError as PyroiMemoryError,
    PyramidLevelsWarning as PyramidLevelsWarning,
    ShapeError as ShapeError,
)
from pyroi._threads import get_num_threads as get_num_threads
from pyroi._threads import set_num_threads as set_num_threads
from pyroi._results import get_result_cache_limit as get_result_cache_limit
from pyroi._results import set_result_cache_limit as set_result_cache_limit
from pyroi._results import get_scratch_cache_limit as get_scratch_cache_limit
from pyroi._results import set_scratch_cache_limit as set_scratch_cache_limit
from pyroi.layers import (
    CropAndResize as CropAndResize,
    MultiScaleRoIAlign as MultiScaleRoIAlign,
    PSRoIAlign as PSRoIAlign,
    PSRoIPool as PSRoIPool,
    RoIAlign as RoIAlign,
    RoIAlignRotated as RoIAlignRotated,
    RoIPool as RoIPool,
)
from pyroi.ops import (
    crop_and_resize as crop_and_resize,
    crop_and_resize_backward_boxes as crop_and_resize_backward_boxes,
    crop_and_resize_backward_image as crop_and_resize_backward_image,
    ps_roi_align as ps_roi_align,
    ps_roi_align_backward as ps_roi_align_backward,
    ps_roi_pool as ps_roi_pool,
    ps_roi_pool_backward as ps_roi_pool_backward,
    roi_align as roi_align,
    roi_align_backward as roi_align_backward,
    roi_align_backward_boxes as roi_align_backward_boxes,
    roi_align_rotated as roi_align_rotated,
    roi_align_rotated_backward as roi_align_rotated_backward,
    roi_pool as roi_pool,
    roi_pool_backward as roi_pool_backward,
)
from pyroi.layers import PrRoIPool as PrRoIPool
from pyroi.ops import prroi_pool as prroi_pool
from pyroi.ops import prroi_pool_backward as prroi_pool_backward
from pyroi.ops import deform_roi_pool as deform_roi_pool
from pyroi.ops import deform_roi_pool_backward as deform_roi_pool_backward

__version__: str
