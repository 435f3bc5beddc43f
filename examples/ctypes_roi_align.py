"""RoIAlign through the pyroi C library from Python's ctypes (no compiler, no NumPy).

Usage::

    python examples/ctypes_roi_align.py [path/to/libpyroi.so]

The library is the argument, else ``$PYROI_LIBRARY``, else whatever
``ctypes.util.find_library("pyroi")`` finds (an installed libpyroi on the loader's path).
It pools a 4 x 5 map whose pixel (y, x) holds 10 * y + x with the box (1, 1, 3, 3) into 2 x 2
bins (aligned=True, 2 samples per axis): the bins are the map at the bin centres,
11 12 / 21 22. The exit status is 0 when they are.

The ctypes declarations below transcribe ``pyroi.h``; keep them in step with it (the version
check at the start catches a library from another release).
"""

import ctypes
import ctypes.util
import os
import sys

PYROI_OK = 0
EXPECTED_VERSION = (0, 1)  # the major.minor these declarations were written for

c_int64_4 = ctypes.c_int64 * 4
int64_p = ctypes.POINTER(ctypes.c_int64)  # an int64_t[4] parameter is a pointer in C


class RoIAlignParams(ctypes.Structure):
    """``pyroi_roi_align_params`` (field order and types as in pyroi.h)."""

    _fields_ = [
        ("pooled_height", ctypes.c_int64),
        ("pooled_width", ctypes.c_int64),
        ("spatial_scale_h", ctypes.c_double),
        ("spatial_scale_w", ctypes.c_double),
        ("sampling_ratio", ctypes.c_int64),
        ("aligned", ctypes.c_int),
        ("num_threads", ctypes.c_int),
        ("cancel", ctypes.c_void_p),  # pyroi_cancel *, NULL: not cancellable
    ]


def load(path=None):
    path = path or os.environ.get("PYROI_LIBRARY") or ctypes.util.find_library("pyroi")
    if not path:
        raise SystemExit("libpyroi not found: pass its path or set PYROI_LIBRARY")
    lib = ctypes.CDLL(path)
    lib.pyroi_version_number.restype = ctypes.c_int
    lib.pyroi_version_number.argtypes = []
    lib.pyroi_version_string.restype = ctypes.c_char_p
    lib.pyroi_version_string.argtypes = []
    lib.pyroi_status_string.restype = ctypes.c_char_p
    lib.pyroi_status_string.argtypes = [ctypes.c_int]
    lib.pyroi_roi_align_params_init.restype = None
    lib.pyroi_roi_align_params_init.argtypes = [ctypes.POINTER(RoIAlignParams)]
    lib.pyroi_roi_align_forward_f32.restype = ctypes.c_int
    lib.pyroi_roi_align_forward_f32.argtypes = [
        ctypes.POINTER(ctypes.c_float), int64_p, int64_p,         # input, shape, strides
        ctypes.POINTER(ctypes.c_float), ctypes.c_int64, ctypes.c_int64,  # boxes, K, row stride
        int64_p,                                                  # batch_indices
        ctypes.POINTER(ctypes.c_float), int64_p,                  # output, output strides
        ctypes.POINTER(RoIAlignParams),
    ]
    return lib


def check(lib, status, what):
    if status != PYROI_OK:
        message = lib.pyroi_status_string(status).decode()
        raise SystemExit(f"{what} failed: {message} (status {status})")


def main(argv):
    lib = load(argv[1] if len(argv) > 1 else None)
    number = lib.pyroi_version_number()
    version = lib.pyroi_version_string().decode()
    if (number // 10000, number // 100 % 100) != EXPECTED_VERSION:
        raise SystemExit(f"libpyroi {version} does not match these declarations")

    height, width, k, pooled = 4, 5, 1, 2
    features = (ctypes.c_float * (height * width))(
        *[10.0 * y + x for y in range(height) for x in range(width)])
    shape = c_int64_4(1, 1, height, width)
    strides = c_int64_4(height * width, height * width, width, 1)
    boxes = (ctypes.c_float * 4)(1.0, 1.0, 3.0, 3.0)
    batch_indices = (ctypes.c_int64 * k)(0)
    output = (ctypes.c_float * (k * pooled * pooled))()
    output_strides = c_int64_4(pooled * pooled, pooled * pooled, pooled, 1)

    params = RoIAlignParams()
    lib.pyroi_roi_align_params_init(ctypes.byref(params))
    params.pooled_height = params.pooled_width = pooled
    params.sampling_ratio = 2
    params.aligned = 1
    status = lib.pyroi_roi_align_forward_f32(features, shape, strides, boxes, k, 4,
                                             batch_indices, output, output_strides,
                                             ctypes.byref(params))
    check(lib, status, "pyroi_roi_align_forward_f32")
    bins = list(output)
    print(f"libpyroi {version} via ctypes: box (1, 1, 3, 3) -> "
          f"{bins[0]:g} {bins[1]:g} / {bins[2]:g} {bins[3]:g}")

    # A failing call: batch index 1 with a single image.
    batch_indices[0] = 1
    status = lib.pyroi_roi_align_forward_f32(features, shape, strides, boxes, k, 4,
                                             batch_indices, output, output_strides,
                                             ctypes.byref(params))
    print(f"batch index 1 of 1 image -> status {status}: "
          f"{lib.pyroi_status_string(status).decode()}")
    return 0 if bins == [11.0, 12.0, 21.0, 22.0] and status != PYROI_OK else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
