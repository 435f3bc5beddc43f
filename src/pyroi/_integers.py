"""Checks of integer arguments: the bottom of the validation layer.

Owns :func:`integer` and :func:`positive_int` (re-exported by :mod:`pyroi._validate`, where
callers find them); they live here so that :mod:`pyroi._threads` can check
``set_num_threads``'s argument without importing :mod:`pyroi._validate`, which imports it.
"""

# May import: _errors (and NumPy).

from __future__ import annotations

import operator

import numpy as np

from pyroi._errors import ArgumentTypeError, InvalidArgumentError


def integer(value, name: str) -> int:
    """A Python or NumPy integer (not a bool, not a float with an integral value)."""
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}") from None


def positive_int(value, name: str) -> int:
    number = integer(value, name)
    if number <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {number}")
    return number
