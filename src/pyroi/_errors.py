"""The exception classes of pyroi.

Every error pyroi raises derives from :class:`PyroiError` and also from the builtin a caller
would expect (``ValueError``, ``TypeError``, ``IndexError``, ``MemoryError``), so
``except ValueError`` keeps working. Each C status code maps to exactly one class.
"""

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "BatchIndexError",
    "BoxError",
    "DTypeError",
    "InvalidArgumentError",
    "PyroiError",
    "PyroiMemoryError",
    "ShapeError",
]


class PyroiError(Exception):
    """Base class of every error raised by pyroi."""


class InvalidArgumentError(PyroiError, ValueError):
    """A parameter has a value outside its documented range (output size, scale, ...)."""


class ArgumentTypeError(PyroiError, TypeError):
    """An argument has the wrong Python type."""


class DTypeError(ArgumentTypeError):
    """An array has an unsupported dtype, or two arrays' dtypes disagree."""


class ShapeError(PyroiError, ValueError):
    """An array has the wrong rank or shape, or unusable strides."""


class BatchIndexError(PyroiError, IndexError):
    """A RoI's batch index is not an integer in [0, N)."""


class BoxError(PyroiError, ValueError):
    """A RoI's coordinates are not finite, or the box is too large to sample."""


class PyroiMemoryError(PyroiError, MemoryError):
    """A scratch allocation in the C core failed."""
