"""pyroi: fast, exact region-of-interest pooling for NumPy, from a portable C99 core.

Operators match their reference implementations (torchvision, ONNX Runtime) and read any
NumPy layout without copies. See ``roi_align`` and ``roi_align_backward``.
"""

# May import: every public module (it re-exports their names); nothing imports it but
#   bench and cli, which use the public API as a caller would.

from pyroi import _core, _errors, layers, ops
from pyroi._errors import (
    ArgumentTypeError,
    BatchIndexError,
    BoxError,
    DTypeError,
    InvalidArgumentError,
    PyroiError,
    PyroiMemoryError,
    PyramidLevelsWarning,
    ShapeError,
)
from pyroi._threads import get_num_threads, set_num_threads
from pyroi._results import get_result_cache_limit, set_result_cache_limit
from pyroi._results import get_scratch_cache_limit, set_scratch_cache_limit
from pyroi.ops import roi_align, roi_align_backward, roi_align_backward_boxes
from pyroi.ops import roi_pool, roi_pool_backward
from pyroi.ops import roi_align_rotated, roi_align_rotated_backward
from pyroi.ops import ps_roi_align, ps_roi_align_backward, ps_roi_pool, ps_roi_pool_backward
from pyroi.ops import prroi_pool, prroi_pool_backward
from pyroi.ops import deform_roi_pool, deform_roi_pool_backward
from pyroi.ops import (crop_and_resize, crop_and_resize_backward_boxes,
                       crop_and_resize_backward_image)

__version__ = _core.version_string()

# threadpoolctl's view of pyroi's pool, registered when threadpoolctl is imported
from pyroi import _threadpool  # noqa: E402

_threadpool.install()

if _core.version_number() != _core.header_version_number():  # pragma: no cover
    raise ImportError(
        f"pyroi: the C library is version {_core.version_number()} but the extension was "
        f"built against {_core.header_version_number()}"
    )

# PYROI_MAX_VECTOR_ISA naming no vector level: the C core runs its baseline code (a typo must
# not run the code it meant to avoid); said at import too, not only where the level is printed.
if _core.vector_isa().startswith("baseline ("):
    import warnings

    warnings.warn(f"pyroi: vector code {_core.vector_isa()}", RuntimeWarning, stacklevel=2)

from pyroi.layers import CropAndResize  # noqa: E402
from pyroi.layers import (MultiScaleRoIAlign, PSRoIAlign, PSRoIPool, RoIAlign,  # noqa: E402
                          RoIAlignRotated, RoIPool)
from pyroi.layers import PrRoIPool  # noqa: E402

# the operators, layers and exceptions are listed once, in their modules
__all__ = ["__version__", "get_num_threads", "get_result_cache_limit", "get_scratch_cache_limit",
           "set_num_threads", "set_result_cache_limit", "set_scratch_cache_limit"]
__all__ += _errors.__all__
__all__ += ops.__all__
__all__ += layers.__all__

# Compatibility front-ends, as submodules: pyroi.onnx (ONNX RoiAlign / MaxRoiPool as
# onnxruntime computes them; the onnx package is needed only by pyroi.onnx.run_node).
from pyroi import onnx  # noqa: E402

__all__ += ["onnx"]

# pyroi.ascend: Ascend ROIPooling layout / limits and aclnnRoiAlignV2Backward's signature.
from pyroi import ascend  # noqa: E402

__all__ += ["ascend"]

# pyroi.viz: the geometry RoIAlign / RoIPool use for one box (from the C core) and pictures of
# it (matplotlib, imported only when drawing: pip install pyroi[viz]).
from pyroi import viz  # noqa: E402

__all__ += ["viz"]
