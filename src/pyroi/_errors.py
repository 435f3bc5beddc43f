"""The exception classes of pyroi.

Every error pyroi raises derives from :class:`PyroiError` and also from the builtin a caller
would expect (``ValueError``, ``TypeError``, ``IndexError``, ``MemoryError``), so
``except ValueError`` keeps working. Each C status code maps to exactly one class.
"""

# May import: nothing of this package (the bottom layer).

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "BatchIndexError",
    "BoxError",
    "DTypeError",
    "InvalidArgumentError",
    "PyroiError",
    "PyroiMemoryError",
    "PyramidLevelsWarning",
    "ShapeError",
]


class PyroiError(Exception):
    """Base class of every error raised by pyroi.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> try:
    ...     pyroi.roi_align(np.zeros((1, 1, 4, 4)), np.zeros((1, 5)), 0)
    ... except pyroi.PyroiError as error:
    ...     print(type(error).__name__, "-", error)
    InvalidArgumentError - output_size must be positive, got 0
    """


class InvalidArgumentError(PyroiError, ValueError):
    """A parameter has a value outside its documented range (output size, scale, ...).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> pyroi.roi_pool(np.zeros((1, 1, 4, 4)), np.zeros((1, 5)), 2, spatial_scale=-1.0)
    Traceback (most recent call last):
    pyroi._errors.InvalidArgumentError: spatial_scale must be finite and non-negative, got -1.0
    """


class ArgumentTypeError(PyroiError, TypeError):
    """An argument has the wrong Python type.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> pyroi.roi_pool(np.zeros((1, 1, 4, 4)), np.zeros((1, 5)), 2.5)
    Traceback (most recent call last):
    pyroi._errors.ArgumentTypeError: output_size must be an integer, got 2.5
    """


class DTypeError(ArgumentTypeError):
    """An array has an unsupported dtype, or two arrays' dtypes disagree.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> pyroi.roi_pool(np.zeros((1, 1, 4, 4)), np.zeros((1, 5), np.float32), 2)
    Traceback (most recent call last):
    pyroi._errors.DTypeError: boxes must have the input's dtype float64, got float32
    """


class ShapeError(PyroiError, ValueError):
    """An array has the wrong rank or shape, or unusable strides.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> pyroi.roi_pool(np.zeros((4, 4)), np.zeros((1, 5)), 2)
    Traceback (most recent call last):
    pyroi._errors.ShapeError: input must have 4 dimensions, got shape (4, 4)
    """


class BatchIndexError(PyroiError, IndexError):
    """A RoI's batch index is not an integer in [0, N).

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> pyroi.roi_pool(np.zeros((1, 1, 4, 4)), np.array([[1.0, 0, 0, 2, 2]]), 2)
    Traceback (most recent call last):
    pyroi._errors.BatchIndexError: boxes: RoI 0 has batch index 1.0; it must be an integer in [0, 1)
    """


class BoxError(PyroiError, ValueError):
    """A RoI's coordinates are not finite, or the box is too large to sample.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> pyroi.roi_pool(np.zeros((1, 1, 4, 4)), np.array([[0, 0, 0, np.nan, 2]]), 2)
    Traceback (most recent call last):
    pyroi._errors.BoxError: boxes: RoI 0 has a non-finite coordinate [0.0, 0.0, nan, 2.0]
    """


class PyroiMemoryError(PyroiError, MemoryError):
    """A scratch allocation in the C core failed.

    Examples
    --------
    >>> import numpy as np, pyroi
    >>> issubclass(pyroi.PyroiMemoryError, MemoryError)
    True
    """


class PyramidLevelsWarning(UserWarning):
    """A feature pyramid's maps are not one per level (e.g. scales 1/8 and 1/32 skip level
    4): the boxes of a level with no map at its position are zero, and maps past the last
    level receive no box -- torchvision's result, which ``MultiScaleRoIAlign`` gives
    (``strict_levels=True`` makes it a :class:`ShapeError` instead).

    Examples
    --------
    >>> import warnings, numpy as np, pyroi
    >>> pooler = pyroi.MultiScaleRoIAlign(["p3", "p5"], output_size=1, sampling_ratio=1)
    >>> features = {"p3": np.ones((1, 1, 32, 32), np.float32),
    ...             "p5": np.ones((1, 1, 8, 8), np.float32)}
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     pooled = pooler(features, [np.array([[0, 0, 500, 500]], np.float32)], [(256, 256)])
    >>> caught[0].category.__name__, float(pooled.sum())  # level 5: no map at position 2
    ('PyramidLevelsWarning', 0.0)
    """
