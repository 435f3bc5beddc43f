"""The one place where arguments are checked against the documented constraints and boxes
are normalised to ``(coords, batch_indices)``. No computation on feature data happens here.
"""

# May import: _core, _errors, _integers, _results, _threads (never a front-end).

from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from pyroi import _core, _results
from pyroi._integers import integer, positive_int
from pyroi._errors import (
    ArgumentTypeError,
    BatchIndexError,
    BoxError,
    DTypeError,
    InvalidArgumentError,
    PyroiMemoryError,
    ShapeError,
)
from pyroi._threads import get_num_threads

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# float16 data (the C core's *_f16 entry points) comes with float32 coordinates.
HALF_DTYPE = np.dtype(np.float16)
# Largest fixed samples-per-bin count per axis the C core accepts (PYROI_MAX_SAMPLING_RATIO,
# pyroi._core.MAX_SAMPLING_RATIO): it bounds every call to 2**20 samples per output element.
MAX_SAMPLING_RATIO = 1024
# Largest value of a C int64 (output sizes, shapes) and of a C int (num_threads).
_INT64_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1


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


def coordinate_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of the boxes that go with data of ``dtype``: its own, float32 for float16."""
    return np.dtype(np.float32) if dtype == HALF_DTYPE else dtype


def float_array(value, name: str, ndim: int) -> np.ndarray:
    """A float16/float32/float64 array of rank ``ndim`` (any strides; copied only if
    unreadable). float16 reaches only the operators that _half dispatches (their boxes
    widened to float32 there)."""
    array = _as_array(value, name)
    if array.dtype.newbyteorder("=") not in FLOAT_DTYPES + (HALF_DTYPE,):
        raise DTypeError(
            f"{name} must be a float16, float32 or float64 array, got dtype {array.dtype}")
    if array.ndim != ndim:
        raise ShapeError(f"{name} must have {ndim} dimensions, got shape {array.shape}")
    return _kernel_ready(array)


def real_array(value, name: str, ndim: int, operator: str) -> np.ndarray:
    """:func:`float_array` for an operator without float16 (float32 or float64 only)."""
    array = float_array(value, name, ndim)
    if array.dtype.itemsize == 2:
        raise DTypeError(f"{operator}: {name} is float16, which it does not offer yet "
                         "(widen it to float32)")
    return array


def output_size(value) -> tuple[int, int]:
    """``output_size`` as (height, width): an int ``s`` means (s, s), as torchvision."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise InvalidArgumentError(
                f"output_size must be an int or a pair (height, width), got {value!r}"
            )
        sizes = (positive_int(value[0], "output_size[0]"), positive_int(value[1], "output_size[1]"))
    else:
        size = positive_int(value, "output_size")
        sizes = (size, size)
    if max(sizes) > _INT64_MAX:
        raise InvalidArgumentError(f"output_size must be at most 2**63 - 1, got {value!r}")
    return sizes


def spatial_scale(value, name: str = "spatial_scale") -> float:
    return real_number(value, name, non_negative=True)


def real_number(value, name: str, non_negative: bool = False) -> float:
    """A finite real number (any sign, or >= 0 when non_negative)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a real number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range
        raise InvalidArgumentError(f"{name} must be finite, got {value!r}") from None
    if not math.isfinite(number) or (non_negative and number < 0):
        sign = " and non-negative" if non_negative else ""
        raise InvalidArgumentError(f"{name} must be finite{sign}, got {number!r}")
    return number


def sampling_ratio(value) -> int:
    """Samples per bin per axis; any value <= 0 means adaptive (normalised to 0)."""
    ratio = integer(value, "sampling_ratio")
    if ratio > MAX_SAMPLING_RATIO:
        raise InvalidArgumentError(
            f"sampling_ratio must be at most {MAX_SAMPLING_RATIO} samples per bin and axis "
            f"(or <= 0 for adaptive sampling), got {ratio}"
        )
    return max(ratio, 0)


def num_threads(value) -> int:
    """Thread count for one call: None means the process default (pyroi.get_num_threads).

    Counts beyond a C int are treated as 2**31 - 1 (the C core uses at most 64 workers, and
    results do not depend on the count)."""
    if value is None:
        return min(get_num_threads(), _INT_MAX)
    return min(positive_int(value, "num_threads"), _INT_MAX)


def flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_, int, np.integer)):
        raise ArgumentTypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def _check_finite_coords(coords: np.ndarray, name: str) -> None:
    if np.isfinite(coords).all():
        return
    finite = np.isfinite(coords).all(axis=1)
    if not finite.all():
        k = int(np.argmin(finite))
        raise BoxError(
            f"{name}: RoI {k} has a non-finite coordinate {coords[k].tolist()}"
        )


def boxes(value, dtype: np.dtype, num_images: int, batch_indices=None, name: str = "boxes",
          coords_per_box: int = 4):
    """Normalise boxes in every accepted form to ``(coords (K,4), batch_indices (K,) int64)``.

    Accepted forms (the one normalisation every operator uses):

    * a ``(K, 5)`` array ``[batch_index, x1, y1, x2, y2]`` (torchvision);
    * a list/tuple of ``(L_i, 4)`` arrays, list position = image index (torchvision);
    * a ``(K, 4)`` array ``[x1, y1, x2, y2]`` with ``batch_indices`` a ``(K,)`` integer array
      (ONNX style).

    ``coords_per_box`` other than 4 (rotated boxes: 5, ``[cx, cy, w, h, angle]``) widens
    every form by that many coordinates: ``(K, 1 + n)``, ``(L_i, n)`` and ``(K, n)``.

    Coordinates must have ``dtype`` (as torchvision requires; float32 for float16 data) and
    be finite; batch indices must be integers in ``[0, num_images)``. Errors name the first
    offending RoI.
    """
    dtype = coordinate_dtype(dtype)
    if batch_indices is None and not isinstance(value, (list, tuple)):
        return _coords_from_rois(value, dtype, num_images, name, coords_per_box)
    if batch_indices is not None:
        coords, indices = _coords_with_indices(value, batch_indices, dtype, name, coords_per_box)
    else:
        coords, indices = _coords_from_list(value, dtype, num_images, name, coords_per_box)
    if indices.size and (indices.min() < 0 or indices.max() >= num_images):
        invalid = (indices < 0) | (indices >= num_images)
        k = int(np.argmax(invalid))
        shown = indices[k]
        raise BatchIndexError(
            f"{name}: RoI {k} has batch index {shown}; it must be an integer in "
            f"[0, {num_images})"
        )
    coords = coords.astype(coords.dtype.newbyteorder("="), copy=False)
    if coords.strides[1] != coords.itemsize or not coords.flags.aligned:
        coords = np.ascontiguousarray(coords)
    _check_finite_coords(coords, name)
    return coords, np.ascontiguousarray(indices, dtype=np.int64)


def same_channels(shape, grad: np.ndarray) -> None:
    """An input_shape (N, C, H, W) and a grad_output (K, C, PH, PW) with the same C."""
    if shape[1] != grad.shape[1]:
        raise ShapeError(
            f"input_shape has {shape[1]} channels but grad_output has {grad.shape[1]}")


def positive_pooled_size(grad: np.ndarray) -> None:
    """A grad_output with a positive output size (PH, PW > 0)."""
    if grad.shape[2] <= 0 or grad.shape[3] <= 0:
        raise InvalidArgumentError(
            f"grad_output must have a positive output size, got shape {grad.shape}")


def backward_boxes(value, grad: np.ndarray, num_images: int, batch_indices=None,
                   name: str = "boxes", coords_per_box: int = 4):
    """:func:`boxes` for a backward: also one RoI per row of ``grad`` (grad_output)."""
    coords, indices = boxes(value, grad.dtype, num_images, batch_indices, name, coords_per_box)
    if coords.shape[0] != grad.shape[0]:
        raise ShapeError(
            f"{name} has {coords.shape[0]} RoIs but grad_output has {grad.shape[0]}")
    return coords, indices


# DLPack device types whose memory the CPU reads (NumPy imports them): CPU, CUDA and ROCm
# pinned host memory, CUDA managed memory; the names of the others, for messages.
_HOST_DEVICES = (1, 3, 11, 13)
_DLPACK_DEVICES = {2: "cuda", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
                   12: "ext_dev", 14: "oneapi", 15: "webgpu", 16: "hexagon", 17: "maia"}


def forward_input(value, grad: np.ndarray, shape, name: str = "input") -> np.ndarray:
    """The forward's input given to a backward that reads it: a 4-d array of ``shape`` (the
    backward's input_shape) and of ``grad``'s dtype (grad_output's)."""
    features = float_array(value, name, 4)
    if features.dtype != grad.dtype:
        raise DTypeError(f"{name} has dtype {features.dtype} but grad_output has {grad.dtype}")
    if tuple(features.shape) != tuple(shape):
        raise ShapeError(f"{name} has shape {features.shape} but input_shape is {tuple(shape)}")
    return features


def bin_array(value, name: str, shape: tuple, dtype: np.dtype) -> np.ndarray | None:
    """A per-bin array of deformable pooling (offset ``(K, 2, PH, PW)``, mask ``(K, 1, PH,
    PW)``) of the data's dtype and exactly ``shape``, or None when absent."""
    if value is None:
        return None
    array = float_array(value, name, 4)
    if array.dtype != dtype:
        raise DTypeError(f"{name} has dtype {array.dtype} but the data has {dtype}")
    if tuple(array.shape) != tuple(shape):
        raise ShapeError(f"{name} must have shape {tuple(shape)}, got {array.shape}")
    return array


def gamma(value) -> float:
    """Deformable pooling's offset factor: a finite real number."""
    return real_number(value, "gamma")


def _device_of(value) -> str | None:
    """The device of an array object whose memory is not the CPU's, or None: a ``device``
    attribute naming the CPU settles it, else ``__dlpack_device__`` (host-readable types are
    the CPU's), else the ``device`` attribute."""
    device = getattr(value, "device", None)
    label = str(device) if device is not None and not callable(device) else None
    if label is not None and "cpu" in str(getattr(device, "type", label)).lower():
        return None  # the cheap answer (torch.device("cpu"), "cpu", JAX's CpuDevice)
    if hasattr(value, "__dlpack_device__"):
        try:
            kind, index = value.__dlpack_device__()
        except Exception:  # e.g. torch's "meta" tensors: judged by .device below
            pass
        else:
            if int(kind) in _HOST_DEVICES:
                return None
            kind_name = _DLPACK_DEVICES.get(int(kind), f"DLPack device type {int(kind)}")
            return label or f"{kind_name}:{index}"
    return label


def _holds_python_numbers(value) -> bool:
    """Whether ``value`` is a Python int or float, or a list/tuple of such (nested): data
    without a dtype of its own (NumPy scalars and arrays inside keep theirs)."""
    if type(value) in (int, float):
        return True
    return isinstance(value, (list, tuple)) and all(_holds_python_numbers(v) for v in value)


def _as_array(value, name: str = "boxes", dtype=None) -> np.ndarray:
    """The one conversion of an array argument to NumPy: an ndarray as is; any CPU array
    exposing ``__dlpack__`` (PyTorch, JAX, array-API libraries) or the array interface /
    buffer protocol as a NumPy view of its memory (no copy); Python lists, tuples and numbers
    with ``dtype`` when given (they carry none: boxes take the features' dtype).

    Raises ArgumentTypeError naming ``name`` for an array on another device, a tensor that
    requires grad (NumPy results carry no gradient: pass ``.detach()``; autograd is
    ``pyroi.torch``'s), and anything NumPy cannot convert.
    """
    if isinstance(value, np.ndarray):
        return value
    device = _device_of(value)
    if device is not None:
        raise ArgumentTypeError(
            f"{name} is on device {device}; pyroi computes on the CPU: copy it to host memory "
            f"first (e.g. .cpu())")
    if getattr(value, "requires_grad", False) is True:
        raise ArgumentTypeError(
            f"{name} requires grad, but pyroi's NumPy functions record no gradient: pass "
            f"{name}.detach() (autograd through pyroi is pyroi.torch)")
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (BufferError, TypeError, ValueError, RuntimeError) as error:
            dlpack_error = error  # e.g. a dtype DLPack cannot carry: try the array interface
    else:
        dlpack_error = None
    plain = dtype is not None and _holds_python_numbers(value)
    try:
        with np.errstate(over="ignore"):
            array = np.asarray(value, dtype=dtype if plain else None)
    except (ValueError, TypeError, RuntimeError, OverflowError) as error:
        # ragged nesting, unconvertible objects, Python ints beyond the dtype
        raise ArgumentTypeError(
            f"{name} cannot be converted to an array: {dlpack_error or error}") from None
    if plain and array.dtype.kind == "f" and not np.isfinite(array).all():
        given = np.asarray(value, dtype=np.float64)
        overflow = np.isinf(array) & np.isfinite(given)
        if overflow.any():
            raise InvalidArgumentError(
                f"{name} holds {float(given[overflow][0])!r}, beyond the range of {array.dtype} "
                f"(the features' dtype)")
    return array


def _check_coords_dtype(array: np.ndarray, dtype: np.dtype, name: str) -> None:
    if array.dtype != dtype and array.dtype.newbyteorder("=") != dtype:
        raise DTypeError(f"{name} must have the input's dtype {dtype}, got {array.dtype}")


# The coordinates of a box, by count, for messages.
_BOX_FIELDS = {4: "x1, y1, x2, y2", 5: "cx, cy, w, h, angle"}


def _box_fields(coords_per_box):
    return _BOX_FIELDS.get(coords_per_box, f"{coords_per_box} coordinates")


def _coords_with_indices(value, batch_indices, dtype, name, coords_per_box=4):
    coords = _as_array(value, name, dtype)
    if coords.ndim != 2 or coords.shape[1] != coords_per_box:
        raise ShapeError(
            f"{name} must have shape (K, {coords_per_box}) [{_box_fields(coords_per_box)}] "
            f"when batch_indices is given, got shape {coords.shape}"
        )
    _check_coords_dtype(coords, dtype, name)
    indices = _as_array(batch_indices, "batch_indices")
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


def _coords_from_list(value, dtype, num_images, name, coords_per_box=4):
    parts = []
    for i, part in enumerate(value):
        array = _as_array(part, f"{name}[{i}]", dtype)
        if array.shape == (0,):  # [] : an image without boxes
            array = array.reshape(0, coords_per_box)
        if array.ndim != 2 or array.shape[1] != coords_per_box:
            hint = ""
            if array.ndim == 1 and array.shape[0] in (coords_per_box, coords_per_box + 1):
                hint = (f"; a list means one (L_i, {coords_per_box}) array per image (as in "
                        f"torchvision): " + (
                            f"for rows [batch_index, {_box_fields(coords_per_box)}] pass a "
                            f"(K, {coords_per_box + 1}) array, e.g. np.asarray({name}, dtype)"
                            if array.shape[0] == coords_per_box + 1 else
                            f"the boxes of one image are [[[{_box_fields(coords_per_box)}], "
                            f"...]]"))
            raise ShapeError(
                f"{name}[{i}] must have shape (L, {coords_per_box}) "
                f"[{_box_fields(coords_per_box)}], got {array.shape}{hint}"
            )
        _check_coords_dtype(array, dtype, f"{name}[{i}]")
        parts.append(array)
    if not parts:
        return np.empty((0, coords_per_box), dtype=dtype), np.empty(0, dtype=np.int64)
    coords = np.concatenate([p.astype(dtype, copy=False) for p in parts])
    indices = np.repeat(np.arange(len(parts), dtype=np.int64), [len(p) for p in parts])
    return coords, indices


# Rows checked per C call: Python handles Ctrl-C only between calls (a few ms each).
_ROWS_PER_CHECK = 1 << 16


def _rows_batch_indices(array, num_images, indices):
    """``_core.roi_rows_batch_indices`` over slices of the rows, with its result: the first
    non-integer batch index, else the first out of range, else the first non-finite row."""
    firsts = {}  # kind (0 non-integer, 1 out of range, 2 not finite) -> first RoI
    for begin in range(0, array.shape[0], _ROWS_PER_CHECK):
        problem, k = _core.roi_rows_batch_indices(array[begin:begin + _ROWS_PER_CHECK],
                                                  num_images,
                                                  indices[begin:begin + _ROWS_PER_CHECK])
        if problem:
            given = array[begin + k, 0]
            kind = 2 if problem == 2 else 1 if np.floor(given) == given else 0
            firsts.setdefault(kind, begin + k)
            if kind == 0:
                break
    if not firsts:
        return 0, -1
    kind = min(firsts)
    return (2 if kind == 2 else 1), firsts[kind]


def _coords_from_rois(value, dtype, num_images, name, coords_per_box=4):
    """The ``(K, 1 + n)`` form, checked in one pass in C (pyroi_roi_rows_batch_indices):
    every batch index an integer, then in range, then every coordinate finite, each error
    naming its first RoI."""
    array = _as_array(value, name, dtype)
    if array.ndim != 2 or array.shape[1] != 1 + coords_per_box:
        raise ShapeError(
            f"{name} must have shape (K, {1 + coords_per_box}) "
            f"[batch_index, {_box_fields(coords_per_box)}], be a list of "
            f"(L, {coords_per_box}) arrays, or have shape (K, {coords_per_box}) with "
            f"batch_indices=; got shape {array.shape}"
        )
    _check_coords_dtype(array, dtype, name)
    if not (array.dtype.isnative and array.flags.aligned and array.strides[1] == array.itemsize
            and array.strides[0] % array.itemsize == 0):
        array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))
    indices = np.empty(array.shape[0], dtype=np.int64)
    problem, k = _rows_batch_indices(array, num_images, indices)
    if problem == 1:
        given = array[k, 0]
        if not np.floor(given) == given:  # NaN too; +-inf counts as out of range
            raise BatchIndexError(
                f"{name}: RoI {k} has batch index {given.item()!r}; it must be an integer")
        raise BatchIndexError(
            f"{name}: RoI {k} has batch index {given.item()}; it must be an integer in "
            f"[0, {num_images})"
        )
    if problem == 2:
        raise BoxError(f"{name}: RoI {k} has a non-finite coordinate "
                       f"{array[k, 1:1 + coords_per_box].tolist()}")
    return array[:, 1:1 + coords_per_box], indices


def output_array(out, shape: tuple, dtype: np.dtype, inputs: tuple, name: str = "out",
                 shape_from: str = "output_size"):
    """A fresh array, or ``out`` after checking it can receive the result. ``shape_from``
    names the argument that sets the shape, for the error when it cannot be allocated."""
    if out is None:
        try:
            return _results.empty(tuple(shape), dtype)
        except MemoryError:
            raise PyroiMemoryError(
                f"cannot allocate the result of shape {tuple(shape)} (from {shape_from})"
            ) from None
        except ValueError:  # NumPy cannot represent the shape at all
            raise InvalidArgumentError(
                f"{shape_from} gives a result of shape {tuple(shape)}, too large for NumPy"
            ) from None
    out = _as_array(out, name)  # another library's CPU array: written through a view
    if out.dtype != dtype:
        raise DTypeError(f"{name} must have dtype {dtype}, got {out.dtype}")
    if out.shape != tuple(shape):
        raise ShapeError(f"{name} must have shape {tuple(shape)}, got {out.shape}")
    if not out.flags.writeable:
        raise InvalidArgumentError(f"{name} must be writeable")
    if not out.flags.aligned or any(s % out.itemsize for s in out.strides):
        raise ShapeError(f"{name} must be aligned with strides that are whole elements")
    if _overlaps_itself(out):
        raise ShapeError(
            f"{name} must not have elements that share memory, got strides {out.strides} for "
            f"shape {out.shape}"
        )
    _disjoint_from(out, inputs, name)
    return out


# The most work np.shares_memory may spend deciding whether two arrays share a byte (its
# max_work: candidate solutions of the overlap equation tried). Slices, strided and
# interleaved views of one buffer are decided in a few steps; past the bound the answer is
# "they overlap", the safe one.
OVERLAP_MAX_WORK = 1 << 12
_TooHardError = getattr(np, "exceptions", np).TooHardError  # NumPy < 1.25: np.TooHardError


def _arrays_in(values):
    """The NumPy arrays among ``values`` and the items of lists and tuples among them (a list
    of boxes, one array per image)."""
    for value in values:
        if isinstance(value, np.ndarray):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (item for item in value if isinstance(item, np.ndarray))


def shares_memory(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two arrays have a byte in common: exact up to OVERLAP_MAX_WORK, True beyond."""
    if not np.may_share_memory(first, second):  # the bounds are apart: a quick no
        return False
    try:
        # (NumPy's stubs list only -1 and 0 for max_work; any positive bound is documented)
        return bool(np.shares_memory(first, second,
                                     max_work=OVERLAP_MAX_WORK))  # type: ignore[arg-type]
    except _TooHardError:
        return True


def _disjoint_from(array: np.ndarray, inputs: tuple, name: str) -> None:
    """``array`` (an output or scratch buffer) shares no byte with any array of ``inputs``:
    the caller's arguments as passed (lists of arrays included) and the arrays made from
    them. Other objects (scalars, None, lists of numbers) hold no memory an array shares."""
    for other in _arrays_in(inputs):
        if shares_memory(array, other):
            raise InvalidArgumentError(
                f"{name} must not share memory with the inputs (it overlaps an input array of "
                f"shape {other.shape} and dtype {other.dtype})")


def _overlaps_itself(array: np.ndarray) -> bool:
    """Whether two elements of ``array`` may share memory (a broadcast or as_strided view).
    The C core's test: sorted by |stride|, every axis must step past all the smaller ones reach
    (exact for every layout that slicing and transposition produce)."""
    if array.size == 0:
        return False
    reached = 0
    axes = sorted((abs(stride) // array.itemsize, size)
                  for size, stride in zip(array.shape, array.strides) if size > 1)
    for stride, size in axes:
        if stride <= reached:
            return True
        reached += stride * (size - 1)
    return False


def shape4(value, name: str) -> tuple[int, int, int, int]:
    return _sizes(value, name, 4, "a sequence of 4 integers",
                  "4 non-negative integers (N, C, H, W)")


def _sizes(value, name: str, count: int, integers: str, sizes: str) -> tuple:
    """count non-negative int64 values; the messages say what value must be."""
    try:
        dims = tuple(operator.index(d) for d in value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be {integers}, got {value!r}") from None
    if len(dims) != count or any(d < 0 or d > _INT64_MAX for d in dims):
        raise ShapeError(f"{name} must be {sizes}, got {value!r}")
    return dims


def argmax_array(value, shape: tuple, plane_size: int | None, name: str = "argmax",
                 check_values: bool = True, keep_int32: bool = False) -> np.ndarray:
    """The argmax of a max-pooling forward as a native int64 array, or with ``keep_int32``
    int32 when it is int32 (any strides; copied only if it is another integer type or
    unreadable in place).

    It must have ``shape`` and hold only -1 (nothing to propagate) or pixel indices in
    ``[0, plane_size)``; errors name the first offending element. With ``check_values``
    false the values are left to the caller (``argmax_values``), e.g. when the C core checks
    them anyway and a second pass here would cost as much as the kernel; so does
    ``plane_size=None`` (the range differs per RoI: RoIAlign max mode).
    """
    if value is None:
        raise InvalidArgumentError(f"{name} is required: pass the argmax the forward returned")
    array = _as_array(value, name)
    if array.dtype.kind not in "iu":
        raise DTypeError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.shape != tuple(shape):
        raise ShapeError(f"{name} must have shape {tuple(shape)}, got {array.shape}")
    if check_values and plane_size is not None:
        argmax_values(array, plane_size, name)
    if keep_int32 and array.dtype.newbyteorder("=") == np.dtype(np.int32):
        return _kernel_ready(array)
    if array.dtype.newbyteorder("=") != np.dtype(np.int64):
        return array.astype(np.int64)
    return _kernel_ready(array)


def argmax_dtype(value) -> np.dtype:
    """The dtype of the argmax a forward returns: int64 or int32 (np.int32, "int32" or any
    other spelling NumPy reads as one of them)."""
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype not in (np.dtype(np.int64), np.dtype(np.int32)):
        raise DTypeError(f"argmax_dtype must be np.int64 or np.int32, got {value!r}")
    return dtype


def int32_argmax_plane(input_shape: tuple) -> None:
    """An int32 argmax can index every pixel of the planes of an input of this shape."""
    if input_shape[2] * input_shape[3] > 2**31:
        raise ShapeError(
            f"argmax_dtype=np.int32 cannot index planes of {input_shape[2]} x {input_shape[3]} "
            f"pixels (more than 2**31): use np.int64"
        )


def argmax_values(array: np.ndarray, plane_size: int, name: str = "argmax") -> None:
    """Every entry of an integer ``array`` is -1 or in ``[0, plane_size)``; the error names
    the first offending element."""
    if array.size and (array.min() < -1 or array.max() >= plane_size):
        invalid = (array < -1) | (array >= plane_size)
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(invalid)), array.shape))
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


def ps_output_channels(channels: int, pooled: tuple[int, int], name: str = "input") -> int:
    """Output channels ``C / (PH * PW)`` of a position-sensitive operator.

    ``C`` must be a multiple of ``PH * PW`` (one input channel per output channel and bin).
    """
    pooled_height, pooled_width = pooled
    group = pooled_height * pooled_width
    if channels % group:
        raise ShapeError(
            f"{name} has {channels} channels, which is not a multiple of the pooled size "
            f"output_size height * width = {pooled_height} * {pooled_width} = {group}"
        )
    return channels // group


ANGLE_UNITS = ("degrees", "radians")


def angle_unit(value) -> bool:
    """``angle=`` of the rotated operators: "degrees" (detectron2) or "radians" (mmcv).
    Returns True for degrees."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"angle must be 'degrees' or 'radians', got {value!r}")
    if value not in ANGLE_UNITS:
        raise InvalidArgumentError(f"angle must be 'degrees' or 'radians', got {value!r}")
    return value == "degrees"


def pooling_mode(value) -> bool:
    """``mode=`` of RoIAlign: "avg" or "max"; returns True for max."""
    if value not in ("avg", "max"):
        raise InvalidArgumentError(f'mode must be "avg" or "max", got {value!r}')
    return value == "max"


def merge_samples(exact, is_max: bool) -> bool:
    """``exact=`` of RoIAlign: False merges an average's samples (C ``merge_samples``); a max
    mode takes one sample's value, with nothing to merge."""
    merge = not flag(exact, "exact")
    if merge and is_max:
        raise InvalidArgumentError('exact=False needs mode="avg": a max mode takes one '
                                   'sample, which has nothing to merge')
    return merge


def crop_layer_options(target, crop_size, method, extrapolation_value, layout, placement):
    """Checks a crop_and_resize layer's (NumPy or torch) bound arguments and sets them on
    ``target``: crop_size, method, extrapolation_value, layout, placement."""
    target.crop_size = int_pair(crop_size, "crop_size")
    crop_method(method)
    is_channels_last(layout)
    crop_placement(placement)
    target.method = method
    target.extrapolation_value = any_real(extrapolation_value, "extrapolation_value")
    target.layout = layout
    target.placement = placement


def is_channels_last(layout) -> bool:
    """``layout=``: "NCHW" (default) or "NHWC" (channels last); returns True for NHWC."""
    if layout not in ("NCHW", "NHWC"):
        raise InvalidArgumentError(f'layout must be "NCHW" or "NHWC", got {layout!r}')
    return layout == "NHWC"


def nchw_view(features: np.ndarray, layout) -> np.ndarray:
    """An (N, C, H, W) view of ``features`` given in ``layout`` (no copy)."""
    return features.transpose(0, 3, 1, 2) if is_channels_last(layout) else features


# ------------------------------------------------------------------------------------------
# compatibility front-ends (pyroi.onnx, pyroi.ascend)

def onnx_float_attribute(value, name: str) -> float:
    """An ONNX FLOAT attribute: stored as float32, so the value is rounded to float32 (and
    widened back to a Python float, as onnxruntime's double kernel widens it)."""
    number = spatial_scale(value, name)
    with np.errstate(over="ignore"):
        narrowed = float(np.float32(number))
    if not np.isfinite(narrowed):
        raise InvalidArgumentError(f"{name} overflows float32, got {number!r}")
    return narrowed


def non_negative_int(value, name: str) -> int:
    number = integer(value, name)
    if number < 0:
        raise InvalidArgumentError(f"{name} must be >= 0, got {number}")
    return number


ONNX_ROI_ALIGN_MODES = ("avg", "max")
ONNX_COORDINATE_MODES = ("half_pixel", "output_half_pixel")


def onnx_mode(value) -> bool:
    """ONNX RoiAlign ``mode`` ("avg" or "max", compared case-insensitively as onnxruntime
    does); returns True for max."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str) or value.lower() not in ONNX_ROI_ALIGN_MODES:
        raise InvalidArgumentError(f'mode must be "avg" or "max", got {value!r}')
    return value.lower() == "max"


def onnx_opset(value) -> int:
    number = integer(value, "opset")
    if number < 10:
        raise InvalidArgumentError(f"RoiAlign exists from opset 10 on, got opset {number}")
    return number


def onnx_aligned(mode, opset: int) -> bool:
    """Whether an ONNX RoiAlign shifts by half a pixel: ``coordinate_transformation_mode``
    (None = attribute absent) under ``opset``. RoiAlign-10 (opsets 10-15) has no attribute and
    never shifts; from 16 on the default is "half_pixel". onnxruntime treats every string other
    than "half_pixel" as "output_half_pixel"; pyroi rejects unknown strings instead."""
    if isinstance(mode, bytes):
        mode = mode.decode("utf-8", "replace")
    if mode is None:
        return opset >= 16
    if opset < 16:
        raise InvalidArgumentError(
            f"coordinate_transformation_mode={mode!r} does not exist in RoiAlign before opset "
            f"16 (opset {opset}); leave it None (RoiAlign-10 never shifts)"
        )
    if not isinstance(mode, str) or mode not in ONNX_COORDINATE_MODES:
        raise InvalidArgumentError(
            f'coordinate_transformation_mode must be "half_pixel" or "output_half_pixel", '
            f"got {mode!r} (onnxruntime silently treats unknown strings as output_half_pixel)"
        )
    return mode == "half_pixel"


def int64_indices(value, name: str = "batch_indices") -> np.ndarray:
    """An int64 index array (ONNX tensor(int64)); other dtypes are rejected."""
    array = _as_array(value, name)
    if array.dtype.newbyteorder("=") != np.dtype(np.int64):
        raise DTypeError(f"{name} must be an int64 array, got dtype {array.dtype}")
    return array


def int_pair(value, name: str) -> tuple[int, int]:
    """A pair of positive integers (an ONNX INTS attribute of length 2)."""
    try:
        items = list(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be a pair of integers, got {value!r}") from None
    if len(items) != 2:
        raise InvalidArgumentError(f"{name} must have 2 entries (height, width), got {value!r}")
    return (positive_int(items[0], f"{name}[0]"), positive_int(items[1], f"{name}[1]"))


ASCEND_POOLED_RANGE = (2, 20)
ASCEND_MAX_ROIS = 6000
ASCEND_ROI_ALIGN = 16


def ascend_pooled(value, name: str, strict: bool) -> int:
    """pooled_h / pooled_w of Ascend ROIPooling: in [2, 20] (the documented hardware table)
    when strict, else any positive integer."""
    size = positive_int(value, name)
    low, high = ASCEND_POOLED_RANGE
    if strict and not low <= size <= high:
        raise InvalidArgumentError(
            f"{name} must be in [{low}, {high}] (Ascend ROIPooling limit; strict=False lifts "
            f"it), got {size}"
        )
    return size


def ascend_roi_count(count: int, strict: bool, name: str = "rois") -> None:
    """The padded RoI count N of Ascend ROIPooling: a multiple of 16, at most 6000."""
    if strict and (count % ASCEND_ROI_ALIGN or count > ASCEND_MAX_ROIS):
        raise ShapeError(
            f"{name} must hold N RoIs per image with N a multiple of {ASCEND_ROI_ALIGN} and at "
            f"most {ASCEND_MAX_ROIS} (Ascend ROIPooling limit; strict=False lifts it), got "
            f"N = {count}"
        )


def ascend_scales(scale, scale_h, scale_w) -> tuple[float, float]:
    """(scale_h, scale_w) of Ascend ROIPooling: ``spatial_scale`` (``scale``) when given sets
    both, else ``spatial_scale_h`` and ``spatial_scale_w``."""
    if scale is not None:
        both = spatial_scale(scale)
        return both, both
    return (spatial_scale(scale_h, "spatial_scale_h"), spatial_scale(scale_w, "spatial_scale_w"))


def ascend_actual_counts(value, batch: int, count: int, strict: bool) -> np.ndarray:
    """Column 0 of roi_actual_num [batch, 8] (int32 when strict) as int64 counts in [0, N];
    None means every one of the N RoIs of each image is real."""
    if value is None:
        return np.full(batch, count, dtype=np.int64)
    array = _as_array(value, "roi_actual_num")
    if array.dtype.kind not in "iu" or (strict and array.dtype != np.int32):
        raise DTypeError(
            f"roi_actual_num must be an int32 array{'' if strict else ' (or any integers)'}, "
            f"got dtype {array.dtype}"
        )
    if array.ndim != 2 or array.shape[0] != batch or array.shape[1] < 1 or (
            strict and array.shape[1] != 8):
        raise ShapeError(
            f"roi_actual_num must have shape ({batch}, 8), got {array.shape}"
        )
    counts = array[:, 0].astype(np.int64)
    invalid = (counts < 0) | (counts > count)
    if invalid.any():
        b = int(np.argmax(invalid))
        raise InvalidArgumentError(
            f"roi_actual_num[{b}, 0] is {counts[b]}; it must be in [0, {count}] (N)"
        )
    return counts


def strictly_positive_scale(value, name: str = "spatial_scale") -> float:
    scale = spatial_scale(value, name)
    if not scale > 0:
        raise InvalidArgumentError(f"{name} must be > 0, got {scale!r}")
    return scale


def ascend_v2_boxes(value, dtype: np.dtype, input_shape: tuple, scale: float):
    """Boxes of aclnnRoiAlignV2Backward: (K, 5) ``(image_id, x1, y1, x2, y2)`` of ``dtype``;
    image_id floored and in [0, B); 0 <= x1 <= x2 <= W / scale and 0 <= y1 <= y2 <= H / scale
    (bounds formed in float64). Returns (coords (K, 4), image ids (K,) int64)."""
    array = _as_array(value, "boxes", dtype)
    if array.ndim != 2 or array.shape[1] != 5:
        raise ShapeError(
            f"boxes must have shape (K, 5) [image_id, x1, y1, x2, y2], got {array.shape}"
        )
    _check_coords_dtype(array, dtype, "boxes")
    num_images, _, height, width = input_shape
    column = array[:, 0].astype(np.float64)
    finite = np.isfinite(column)
    if not finite.all():
        k = int(np.argmin(finite))
        raise BatchIndexError(f"boxes: RoI {k} has image_id {column[k]!r}; it must be finite")
    image = np.floor(column)
    invalid = (image < 0) | (image >= num_images)
    if invalid.any():
        k = int(np.argmax(invalid))
        raise BatchIndexError(
            f"boxes: RoI {k} has image_id {column[k]!r} (floored: {image[k]:g}); it must be in "
            f"[0, {num_images})"
        )
    coords = np.ascontiguousarray(array[:, 1:], dtype=array.dtype.newbyteorder("="))
    _check_finite_coords(coords, "boxes")
    wide = coords.astype(np.float64)
    limits = {"x": width / scale, "y": height / scale}
    for axis, (first, second) in (("x", (0, 2)), ("y", (1, 3))):
        low, high = wide[:, first], wide[:, second]
        for bad, rule in (
            (low < 0, f"0 <= {axis}1"),
            (low > high, f"{axis}1 <= {axis}2"),
            (high > limits[axis], f"{axis}2 <= {'W' if axis == 'x' else 'H'} / spatial_scale "
                                  f"= {limits[axis]:g}"),
        ):
            if bad.any():
                k = int(np.argmax(bad))
                raise BoxError(
                    f"boxes: RoI {k} = {array[k].tolist()} violates {rule} "
                    f"(aclnnRoiAlignV2Backward constraint)"
                )
    return coords, image.astype(np.int64)


def workspace_array(value, inputs: tuple, name: str = "workspace") -> np.ndarray:
    """A caller's scratch buffer: a writeable, contiguous 1-D uint8 array not overlapping
    ``inputs``."""
    value = _as_array(value, name)
    if value.dtype != np.uint8 or value.ndim != 1:
        raise DTypeError(f"{name} must be a 1-D uint8 array, got {value.dtype} {value.shape}")
    if not value.flags.c_contiguous or not value.flags.writeable:
        raise InvalidArgumentError(f"{name} must be contiguous and writeable")
    _disjoint_from(value, inputs, name)
    return value


def onnx_negative_grid(coords: np.ndarray, scale: float, pooled: tuple[int, int],
                       name: str = "rois") -> None:
    """onnxruntime's rejection of half_pixel RoIs with adaptive sampling whose grid is
    negative on exactly one axis (its buffer size grid_h * grid_w * ... becomes negative: a
    SafeInt "Integer overflow" error). The grid is ceil(size / pooled) with the size formed as
    the kernel forms it, in the coordinates' dtype: (x2 * s - 0.5) - (x1 * s - 0.5)."""
    if coords.shape[0] == 0:
        return
    T = coords.dtype.type
    s, half = T(scale), T(0.5)
    with np.errstate(over="ignore", invalid="ignore"):
        width = (coords[:, 2] * s - half) - (coords[:, 0] * s - half)
        height = (coords[:, 3] * s - half) - (coords[:, 1] * s - half)
        grid_w = np.ceil(width / T(pooled[1]))
        grid_h = np.ceil(height / T(pooled[0]))
    bad = ((grid_w < 0) & (grid_h > 0)) | ((grid_w > 0) & (grid_h < 0))
    if bad.any():
        k = int(np.argmax(bad))
        raise BoxError(
            f"{name}: RoI {k} = {coords[k].tolist()} is inverted on exactly one axis, which "
            f"onnxruntime rejects with half_pixel and adaptive sampling (sampling_ratio=0) "
            f"(its sample count grid_h * grid_w = {int(grid_h[k])} * {int(grid_w[k])} is "
            f"negative)"
        )


# ---- pyroi.viz / pyroi explain: one box and a map size ------------------------------------

# Most samples per axis that pyroi.viz computes for one box (a picture of more is unreadable
# anyway); an adaptive grid of a huge box can ask for billions.
MAX_EXPLAIN_SAMPLES = 1 << 16


def float_dtype(value, name: str = "dtype") -> np.dtype:
    """float32 or float64, from anything np.dtype accepts."""
    try:
        dtype = np.dtype(value)
    except TypeError:
        raise DTypeError(f"{name} must be float32 or float64, got {value!r}") from None
    if dtype not in FLOAT_DTYPES:
        raise DTypeError(f"{name} must be float32 or float64, got {dtype}")
    return dtype


def single_box(value, dtype: np.dtype, name: str = "box") -> np.ndarray:
    """One box ``[x1, y1, x2, y2]`` of finite numbers, as a contiguous array of ``dtype``."""
    array = _as_array(value, name)
    if array.dtype.kind not in "iuf":
        raise DTypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if array.shape != (4,):
        raise ShapeError(f"{name} must be 4 numbers [x1, y1, x2, y2], got shape {array.shape}")
    with np.errstate(over="ignore"):
        box = np.ascontiguousarray(array, dtype=dtype)
    if not np.isfinite(box).all():
        raise BoxError(f"{name} must be finite in {dtype}, got {array.tolist()}")
    return box


def map_size(value, name: str = "map_size") -> tuple[int, int]:
    """A feature map's ``(H, W)``: two non-negative integers."""
    return _sizes(value, name, 2, "two integers (H, W)", "two non-negative integers (H, W)")


def explain_sample_count(bins: int, grid: int, axis: str) -> int:
    """The samples of one axis that pyroi.viz would compute, at most MAX_EXPLAIN_SAMPLES."""
    count = bins * grid
    if count > MAX_EXPLAIN_SAMPLES:
        raise InvalidArgumentError(
            f"the box has {bins} bins x {grid} samples along {axis}: more than the "
            f"{MAX_EXPLAIN_SAMPLES} pyroi.viz draws (use a fixed sampling_ratio)"
        )
    return count


def feature_plane(value, image: int, channel: int, name: str = "features") -> np.ndarray:
    """One (H, W) plane of a float32/float64 array of 2 (H, W), 3 (C, H, W) or 4 (N, C, H, W)
    dimensions."""
    array = _as_array(value, name)
    if array.dtype.newbyteorder("=") not in FLOAT_DTYPES:
        raise DTypeError(f"{name} must be a float32 or float64 array, got dtype {array.dtype}")
    if array.ndim not in (2, 3, 4):
        raise ShapeError(
            f"{name} must be (H, W), (C, H, W) or (N, C, H, W), got shape {array.shape}"
        )
    full = array.reshape((1,) * (4 - array.ndim) + array.shape)
    for index, size, label in ((image, full.shape[0], "image"), (channel, full.shape[1],
                                                                   "channel")):
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
            raise ArgumentTypeError(f"{label} must be an integer, got {index!r}")
        if not 0 <= index < size:
            raise InvalidArgumentError(
                f"{label} {index} is out of range for {name} of shape {array.shape}"
            )
    return _kernel_ready(np.ascontiguousarray(full[image, channel]))


# ------------------------------------------------------------------------------------------
# crop_and_resize (docs/semantics.md §13)

CROP_METHODS = {"bilinear": 0, "nearest": 1}
CROP_PLACEMENTS = {"tensorflow": 0, "onnxruntime": 1}


def crop_method(value, name: str = "method") -> int:
    """``method=``: "bilinear" or "nearest", as its C code (PYROI_CROP_BILINEAR / _NEAREST)."""
    if not isinstance(value, str) or value not in CROP_METHODS:
        raise InvalidArgumentError(f'{name} must be "bilinear" or "nearest", got {value!r}')
    return CROP_METHODS[value]


def crop_placement(value) -> int:
    """``placement=``: "tensorflow" (default) or "onnxruntime" (first and last samples exact)."""
    if not isinstance(value, str) or value not in CROP_PLACEMENTS:
        raise InvalidArgumentError(
            f'placement must be "tensorflow" or "onnxruntime", got {value!r}')
    return CROP_PLACEMENTS[value]


def any_real(value, name: str) -> float:
    """A real number, NaN and infinities included (TensorFlow's extrapolation_value)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise InvalidArgumentError(f"{name} must fit a float, got {value!r}") from None


def crop_image(value, name: str) -> np.ndarray:
    """A float32/float64 4-d array (crop_and_resize has no float16 path)."""
    array = float_array(value, name, 4)
    if array.dtype == HALF_DTYPE or array.dtype.itemsize == 2:
        raise DTypeError(f"{name} must be float32 or float64 (crop_and_resize has no float16 "
                         f"path), got dtype {array.dtype}")
    return array


def crop_boxes(value, box_indices, dtype: np.dtype, num_images: int):
    """crop_and_resize's ``boxes`` (K, 4) ``[y1, x1, y2, x2]`` and ``box_indices`` (K,)
    through the one normalisation (:func:`boxes`), errors naming ``box_indices``."""
    indices = _as_array(box_indices, "box_indices")
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"box_indices must be an integer array, got dtype {indices.dtype}")
    if indices.ndim != 1:
        raise ShapeError(f"box_indices must have shape (K,), got {indices.shape}")
    if indices.size:
        wide = indices.astype(object) if indices.dtype.itemsize == 8 else indices
        bad = (wide < 0) | (wide >= num_images)
        if bad.any():
            k = int(np.argmax(bad))
            raise BatchIndexError(
                f"box_indices: box {k} has index {indices[k]}; it must be an integer in "
                f"[0, {num_images})")
    return boxes(value, dtype, num_images, indices)


def onnx_any_float_attribute(value, name: str) -> float:
    """An ONNX FLOAT attribute of any value (NaN, infinities, either sign), rounded to the
    float32 it is stored as."""
    number = any_real(value, name)
    with np.errstate(over="ignore"):
        return float(np.float32(number))
