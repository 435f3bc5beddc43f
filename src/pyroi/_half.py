"""float16 support for the public operators, by widening to float32.

A float16 feature map (or output gradient) is converted to float32 (exactly: every float16
is a float32), the float32 operator runs -- so every sum and product is accumulated in float32,
never in half -- and the result is rounded once to float16 (round to nearest even). The
result is therefore the float32 result within float16 rounding (half an ulp of float16); beyond the
float16 range it is infinity (silently, as the C entry points).

Why here and not in C: C99 has no half type (``_Float16`` is an optional C23 / compiler
extension), so C entry points would take ``uint16_t`` storage and convert anyway; converting
once per call in NumPy costs the same single pass over the data, keeps one kernel per
operator, and reuses the float32 kernels' validation and bit-exactness unchanged. The price
is a float32 copy of the float16 arrays for the duration of the call. (C entry points
``*_f16`` converting per plane into float32 scratch are the planned next step.)

Boxes may be float16 or float32 with float16 data (float64 boxes are rejected, as any dtype
mismatch is); ``out=`` must be float16. Integer arrays (argmax, batch indices) pass through.
"""

# May import: _errors, _validate.

from __future__ import annotations

import functools
import inspect

import numpy as np

from pyroi import _validate
from pyroi._errors import DTypeError

_HALF = np.dtype(np.float16)
# Elements converted per NumPy call: Python handles Ctrl-C only between calls, so a large map
# is converted in slices of a few milliseconds each.
_SLICE_ELEMENTS = 1 << 21


def _converted(array: np.ndarray, dtype) -> np.ndarray:
    """``array.astype(dtype)`` (C order), slice by slice along the leading axes."""
    result = np.empty(array.shape, dtype)
    _convert_into(result, array)
    return result


def _convert_into(target: np.ndarray, source: np.ndarray) -> None:
    if source.size <= _SLICE_ELEMENTS or source.ndim == 0:
        target[...] = source
        return
    step = max(1, _SLICE_ELEMENTS // (source.size // source.shape[0]))
    for i in range(0, source.shape[0], step):
        _convert_into(target[i:i + step], source[i:i + step])


def _is_half(value) -> bool:
    """Whether ``value`` is a float16 NumPy array (convert other arrays with
    ``_validate._as_array`` first)."""
    return isinstance(value, np.ndarray) and value.dtype == _HALF


def _widen_boxes(value, name: str):
    """float16 / float32 boxes (array or list of arrays) as float32; Python numbers are
    float16, the data's dtype, first."""
    if isinstance(value, (list, tuple)):
        return [_widen_part(part, f"{name}[{i}]") for i, part in enumerate(value)]
    return _widen_part(value, name)


def _widen_part(value, name: str):
    array = _validate._as_array(value, name, _HALF)
    if array.dtype.kind == "f" and array.dtype.itemsize <= 4:
        return array.astype(np.float32)
    raise DTypeError(
        f"{name} must be float16 or float32 when the data is float16, got dtype {array.dtype}"
    )


def _narrow(result, out, inputs=()):
    """The float32 result as float16, in ``out`` when given (checked like any ``out=``,
    against the call's arguments ``inputs``)."""
    with np.errstate(over="ignore"):  # beyond 65504: infinity, as documented
        half = _converted(result, np.float16)
    if out is None:
        return half
    target = _validate.output_array(out, half.shape, _HALF, inputs)
    target[...] = half
    return target


def float16_support(data: str, boxes: tuple = ("boxes",)):
    """Decorator: ``function`` also accepts float16 for its argument ``data`` (the feature map
    or output gradient), widening it and the ``boxes`` arguments to float32 and rounding the
    first result back to float16."""

    def decorate(function):
        signature = inspect.signature(function)
        for name in (data, *boxes):
            if name not in signature.parameters:  # a misnamed decoration fails at import
                raise TypeError(f"{function.__name__} has no parameter {name!r}")

        # where `data` sits when passed by position: the common float32/float64 call is
        # recognised from it without binding the whole signature (a few microseconds)
        position = list(signature.parameters).index(data)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            by_position = len(args) > position
            value = args[position] if by_position else kwargs.get(data)
            if value is not None and not isinstance(value, np.ndarray):
                value = _validate._as_array(value, data)  # another library's array: NumPy
                if by_position:
                    args = args[:position] + (value,) + args[position + 1:]
                else:
                    kwargs = {**kwargs, data: value}
            if isinstance(value, np.ndarray) and value.dtype != _HALF:
                return function(*args, **kwargs)
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return function(*args, **kwargs)  # let the function report it
            if not _is_half(bound.arguments.get(data)):
                return function(*args, **kwargs)
            out = bound.arguments.pop("out", None)
            given = tuple(bound.arguments.values())  # the arguments as passed, for out=
            bound.arguments[data] = _converted(bound.arguments[data], np.float32)
            for name in boxes:
                if bound.arguments.get(name) is not None:
                    bound.arguments[name] = _widen_boxes(bound.arguments[name], name)
            result = function(*bound.args, **bound.kwargs)
            if isinstance(result, tuple):
                return (_narrow(result[0], out, given),) + result[1:]
            return _narrow(result, out, given)

        return wrapper

    return decorate
