"""The one place where arguments are checked against the documented constraints and boxes
are normalised to ``(coords, batch_indices)``. No computation on feature data happens here.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from pyroi._errors import (
    ArgumentTypeError,
    BatchIndexError,
    BoxError,
    DTypeError,
    InvalidArgumentError,
    ShapeError,
)

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Largest samples-per-bin count the C core accepts (its grid counters are 32-bit like the peers').
MAX_SAMPLING_RATIO = 2**31 - 1


def _kernel_ready(array: np.ndarray) -> np.ndarray:
    """The array itself when the C core can read it in place, else a native aligned copy
    (non-native byte order, misaligned data, strides that are not whole elements)."""
    itemsize = array.dtype.itemsize
    if (
        array.dtype.isnative
        and array.flags.aligned
        and all(s % itemsize == 0 for s in array.strides)
    ):
        return array
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))


def float_array(value, name: str, ndim: int) -> np.ndarray:
    """A float32/float64 array of rank ``ndim`` (any strides; copied only if unreadable)."""
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if array.dtype.newbyteorder("=") not in FLOAT_DTYPES:
        raise DTypeError(f"{name} must be a float32 or float64 array, got dtype {array.dtype}")
    if array.ndim != ndim:
        raise ShapeError(f"{name} must have {ndim} dimensions, got shape {array.shape}")
    return _kernel_ready(array)


def positive_int(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}") from None
    if number <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {number}")
    return number


def output_size(value) -> tuple[int, int]:
    """``output_size`` as (height, width): an int ``s`` means (s, s), as torchvision."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise InvalidArgumentError(
                f"output_size must be an int or a pair (height, width), got {value!r}"
            )
        return (positive_int(value[0], "output_size[0]"), positive_int(value[1], "output_size[1]"))
    size = positive_int(value, "output_size")
    return (size, size)


def spatial_scale(value, name: str = "spatial_scale") -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a real number, got {value!r}")
    scale = float(value)
    if not np.isfinite(scale) or scale < 0:
        raise InvalidArgumentError(f"{name} must be finite and non-negative, got {scale!r}")
    return scale


def sampling_ratio(value) -> int:
    """Samples per bin per axis; any value <= 0 means adaptive (normalised to 0)."""
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"sampling_ratio must be an integer, got {value!r}")
    try:
        ratio = operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"sampling_ratio must be an integer, got {value!r}") from None
    if ratio > MAX_SAMPLING_RATIO:
        raise InvalidArgumentError(
            f"sampling_ratio must be at most {MAX_SAMPLING_RATIO}, got {ratio}"
        )
    return max(ratio, 0)


def num_threads(value) -> int:
    """Thread count for one call: None means the process default (pyroi.get_num_threads)."""
    if value is None:
        from pyroi._threads import get_num_threads

        return get_num_threads()
    return positive_int(value, "num_threads")


def flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_, int, np.integer)):
        raise ArgumentTypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def _check_finite_coords(coords: np.ndarray, name: str) -> None:
    finite = np.isfinite(coords).all(axis=1)
    if not finite.all():
        k = int(np.argmin(finite))
        raise BoxError(
            f"{name}: RoI {k} has a non-finite coordinate {coords[k].tolist()}"
        )


def boxes(value, dtype: np.dtype, num_images: int, batch_indices=None, name: str = "boxes"):
    """Normalise boxes in every accepted form to ``(coords (K,4), batch_indices (K,) int64)``.

    Accepted forms (the one normalisation every operator uses):

    * a ``(K, 5)`` array ``[batch_index, x1, y1, x2, y2]`` (torchvision);
    * a list/tuple of ``(L_i, 4)`` arrays, list position = image index (torchvision);
    * a ``(K, 4)`` array ``[x1, y1, x2, y2]`` with ``batch_indices`` a ``(K,)`` integer array
      (ONNX style).

    Coordinates must have ``dtype`` (as torchvision requires) and be finite; batch indices
    must be integers in ``[0, num_images)``. Errors name the first offending RoI.
    """
    if batch_indices is not None:
        coords, indices = _coords_with_indices(value, batch_indices, dtype, name)
    elif isinstance(value, (list, tuple)):
        coords, indices = _coords_from_list(value, dtype, num_images, name)
    else:
        coords, indices = _coords_from_rois(value, dtype, name)
    invalid = (indices < 0) | (indices >= num_images)
    if invalid.any():
        k = int(np.argmax(invalid))
        raise BatchIndexError(
            f"{name}: RoI {k} has batch index {indices[k]}; it must be an integer in "
            f"[0, {num_images})"
        )
    coords = coords.astype(coords.dtype.newbyteorder("="), copy=False)
    if coords.strides[1] != coords.itemsize or not coords.flags.aligned:
        coords = np.ascontiguousarray(coords)
    _check_finite_coords(coords, name)
    return coords, np.ascontiguousarray(indices, dtype=np.int64)


def _as_array(value) -> np.ndarray:
    return value if isinstance(value, np.ndarray) else np.asarray(value)


def _check_coords_dtype(array: np.ndarray, dtype: np.dtype, name: str) -> None:
    if array.dtype.newbyteorder("=") != dtype:
        raise DTypeError(f"{name} must have the input's dtype {dtype}, got {array.dtype}")


def _coords_with_indices(value, batch_indices, dtype, name):
    coords = _as_array(value)
    if coords.ndim != 2 or coords.shape[1] != 4:
        raise ShapeError(
            f"{name} must have shape (K, 4) [x1, y1, x2, y2] when batch_indices is given, "
            f"got shape {coords.shape}"
        )
    _check_coords_dtype(coords, dtype, name)
    indices = _as_array(batch_indices)
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"batch_indices must be an integer array, got dtype {indices.dtype}")
    if indices.shape != (coords.shape[0],):
        raise ShapeError(
            f"batch_indices must have shape ({coords.shape[0]},) to match {name}, "
            f"got {indices.shape}"
        )
    if indices.dtype.kind == "u" and indices.dtype.itemsize == 8 and indices.size:
        too_big = indices > np.iinfo(np.int64).max
        if too_big.any():
            k = int(np.argmax(too_big))
            raise BatchIndexError(f"{name}: RoI {k} has batch index {indices[k]}")
    return coords, indices.astype(np.int64)


def _coords_from_list(value, dtype, num_images, name):
    parts = []
    for i, part in enumerate(value):
        array = _as_array(part)
        if array.ndim != 2 or array.shape[1] != 4:
            raise ShapeError(
                f"{name}[{i}] must have shape (L, 4) [x1, y1, x2, y2], got {array.shape}"
            )
        _check_coords_dtype(array, dtype, f"{name}[{i}]")
        parts.append(array)
    if not parts:
        return np.empty((0, 4), dtype=dtype), np.empty(0, dtype=np.int64)
    coords = np.concatenate([p.astype(dtype, copy=False) for p in parts])
    indices = np.repeat(np.arange(len(parts), dtype=np.int64), [len(p) for p in parts])
    return coords, indices


def _coords_from_rois(value, dtype, name):
    array = _as_array(value)
    if array.ndim != 2 or array.shape[1] != 5:
        raise ShapeError(
            f"{name} must have shape (K, 5) [batch_index, x1, y1, x2, y2], be a list of "
            f"(L, 4) arrays, or have shape (K, 4) with batch_indices=; got shape {array.shape}"
        )
    _check_coords_dtype(array, dtype, name)
    column = array[:, 0]
    integral = np.isfinite(column) & (column == np.floor(column))
    if not integral.all():
        k = int(np.argmin(integral))
        raise BatchIndexError(
            f"{name}: RoI {k} has batch index {column[k].item()!r}; it must be an integer"
        )
    # clip before the cast so huge values stay out of range instead of wrapping
    limit = float(np.iinfo(np.int64).max // 2)
    return array[:, 1:5], np.clip(column, -limit, limit).astype(np.int64)


def output_array(out, shape: tuple, dtype: np.dtype, inputs: tuple, name: str = "out"):
    """A fresh array, or ``out`` after checking it can receive the result."""
    if out is None:
        return np.empty(shape, dtype=dtype)
    if not isinstance(out, np.ndarray):
        raise ArgumentTypeError(f"{name} must be a NumPy array, got {type(out).__name__}")
    if out.dtype != dtype:
        raise DTypeError(f"{name} must have dtype {dtype}, got {out.dtype}")
    if out.shape != tuple(shape):
        raise ShapeError(f"{name} must have shape {tuple(shape)}, got {out.shape}")
    if not out.flags.writeable:
        raise InvalidArgumentError(f"{name} must be writeable")
    if not out.flags.aligned or any(s % out.itemsize for s in out.strides):
        raise ShapeError(f"{name} must be aligned with strides that are whole elements")
    for array in inputs:
        if np.may_share_memory(out, array):
            raise InvalidArgumentError(f"{name} must not share memory with the inputs")
    return out


def shape4(value, name: str) -> tuple[int, int, int, int]:
    try:
        dims = tuple(operator.index(d) for d in value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be a sequence of 4 integers, got {value!r}") from None
    if len(dims) != 4 or any(d < 0 for d in dims):
        raise ShapeError(f"{name} must be 4 non-negative integers (N, C, H, W), got {value!r}")
    return dims


def argmax_array(value, shape: tuple, plane_size: int, name: str = "argmax",
                 check_values: bool = True) -> np.ndarray:
    """The argmax of a max-pooling forward as a native int64 array (any strides; copied only
    if it is another integer type or unreadable in place).

    It must have ``shape`` and hold only -1 (nothing to propagate) or pixel indices in
    ``[0, plane_size)``; errors name the first offending element. With ``check_values``
    false the values are left to the caller (``argmax_values``), e.g. when the C core checks
    them anyway and a second pass here would cost as much as the kernel.
    """
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if array.dtype.kind not in "iu":
        raise DTypeError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.shape != tuple(shape):
        raise ShapeError(f"{name} must have shape {tuple(shape)}, got {array.shape}")
    if check_values:
        argmax_values(array, plane_size, name)
    if array.dtype.newbyteorder("=") != np.dtype(np.int64):
        return array.astype(np.int64)
    return _kernel_ready(array)


def argmax_values(array: np.ndarray, plane_size: int, name: str = "argmax") -> None:
    """Every entry of an integer ``array`` is -1 or in ``[0, plane_size)``; the error names
    the first offending element."""
    if array.size and (array.min() < -1 or array.max() >= plane_size):
        invalid = (array < -1) | (array >= plane_size)
        index = np.unravel_index(int(np.argmax(invalid)), array.shape)
        index = tuple(int(i) for i in index)
        raise InvalidArgumentError(
            f"{name}[{', '.join(map(str, index))}] (RoI {index[0]}) is {array[index]}; "
            f"it must be -1 or a pixel index in [0, {plane_size})"
        )


def output_size_matches(output_size_hw: tuple, shape: tuple, name: str) -> None:
    """The (height, width) of an output size equals the last two entries of ``shape``."""
    if tuple(shape[2:]) != tuple(output_size_hw):
        raise ShapeError(
            f"output_size {tuple(output_size_hw)} does not match {name} of shape "
            f"{tuple(shape)}"
        )
