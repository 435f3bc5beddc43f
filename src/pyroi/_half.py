"""float16 support for the public operators: dispatch to the C core's float16 entry points.

A float16 feature map (or output gradient) goes to the C ``*_f16`` entry point of its
operator as it is: the C core widens it chunk by chunk of channels into float32 scratch, runs
the float32 kernel -- so every sum and product is accumulated in float32, never in half --
and rounds the result once to float16 (round to nearest even). The result is therefore the
float32 result within float16 rounding (half an ulp of float16); beyond the float16 range it
is infinity (silently, as the C entry points). No float32 copy of the map or gradient is made
here or in C: the extra memory is the C core's scratch of one chunk.

Only the boxes are widened here, to the float32 the C entry points take (exactly, and they are
small): float16 or float32 boxes are accepted with float16 data (float64 boxes are rejected,
as any dtype mismatch is), Python numbers are float16, the data's dtype, first. ``out=`` must
be float16. Integer arrays (argmax, batch indices) pass through.
"""

# May import: _errors, _validate.

from __future__ import annotations

import functools
import inspect

import numpy as np

from pyroi import _validate
from pyroi._errors import DTypeError

_HALF = np.dtype(np.float16)
# Elements scaled per C call by the layers' float16 gradient scaling (pyroi.layers): Python
# handles Ctrl-C only between calls, so a large gradient is scaled in slices of a few
# milliseconds each.
_SLICE_ELEMENTS = 1 << 21


def _is_half(value) -> bool:
    """Whether ``value`` is a float16 NumPy array, of either byte order (convert other arrays
    with ``_validate._as_array`` first)."""
    return isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.dtype.itemsize == 2


def _widened(array: np.ndarray) -> np.ndarray:
    """A float16 array widened exactly to float32 (a copy): for a computation that cannot run
    in chunks of channels (PrRoIPool's box gradient sums over every channel)."""
    return array.astype(np.float32)


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


def float16_support(data: str, boxes: tuple = ("boxes",)):
    """Decorator: ``function`` also accepts float16 for its argument ``data`` (the feature map
    or output gradient), which it passes on to the C core's float16 entry points, with the
    ``boxes`` arguments widened to float32."""

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
            if isinstance(value, np.ndarray) and not _is_half(value):
                return function(*args, **kwargs)
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return function(*args, **kwargs)  # let the function report it
            if not _is_half(bound.arguments.get(data)):
                return function(*args, **kwargs)
            out = bound.arguments.get("out")
            if isinstance(out, np.ndarray):  # the widened boxes are copies: check the caller's
                _validate._disjoint_from(out, tuple(bound.arguments.get(name) for name in boxes),
                                         "out")
            for name in boxes:
                if bound.arguments.get(name) is not None:
                    bound.arguments[name] = _widen_boxes(bound.arguments[name], name)
            return function(*bound.args, **bound.kwargs)

        return wrapper

    return decorate
