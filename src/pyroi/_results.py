"""Where pyroi's results are allocated: NumPy arrays over buffers that are reused; and the
limit of the C core's spare scratch block kept between calls (``set_scratch_cache_limit``).

A result of ``MIN_CACHED_BYTES`` or more is made over a ``_core.ResultBuffer`` (64-byte
aligned). When such an array (and every view of it) is gone, its memory is not given back to
the OS but kept, up to a byte limit, for the next result of the same size (or, failing that,
of at least half its size: a loop alternating between two shapes reuses the larger one's
memory). Why: the OS zeroes every fresh page before a process may use it, and for the
large results of these operators that costs as much as the operator itself (measured on the
development machine: 10 ms for a 56 MB gradient, of a 27 ms backward); a training or
inference loop asks for the same sizes on every call. Smaller results are plain ``np.empty`` arrays.

The limit is ``pyroi.set_result_cache_limit`` if called, else ``PYROI_RESULT_CACHE_BYTES``
(bytes, read at the first call that needs it; an invalid value is reported by every such call,
as for ``PYROI_NUM_THREADS``), else 256 MiB; 0 turns the reuse off and frees what is kept.
The buffers are pages of their own (the C core's allocator), so an evicted buffer goes back to
the OS: the process holds at most the limit beyond its live results. Results are ordinary
writeable NumPy arrays (their ``base`` is the buffer); every operator writes every element of
its result, so a reused buffer never shows old data.
"""

# May import: _core, _errors.

from __future__ import annotations

import math
import os

import numpy as np

from pyroi import _core
from pyroi._errors import InvalidArgumentError

ENV_VARIABLE = "PYROI_RESULT_CACHE_BYTES"
DEFAULT_LIMIT = 256 << 20
MIN_CACHED_BYTES = 1 << 20  # below this, np.empty is as fast (its allocator reuses memory)
MAX_LIMIT = 2**63 - 1


_limit_known = False  # set once the limit came from set_result_cache_limit or the environment


def _limit_from_environment() -> int:
    text = os.environ.get(ENV_VARIABLE, "").strip()
    if not text:
        return DEFAULT_LIMIT
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_LIMIT:
        raise InvalidArgumentError(
            f"{ENV_VARIABLE} must be an integer number of bytes in [0, 2**63 - 1], got {text!r}")
    return value


def _limit() -> int:
    """The limit in force, reading the environment at the first call that needs it (an
    invalid value is not kept: every call reports it)."""
    global _limit_known
    if not _limit_known:
        _core.set_result_cache_limit(_limit_from_environment())
        _limit_known = True
    return int(_core.result_cache_limit())


def _checked_limit(limit) -> int:
    """``limit`` as an int of bytes in [0, MAX_LIMIT], or InvalidArgumentError."""
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)):
        raise InvalidArgumentError(f"limit must be an integer number of bytes, got {limit!r}")
    if limit < 0 or limit > MAX_LIMIT:
        raise InvalidArgumentError(f"limit must be in [0, 2**63 - 1] bytes, got {limit}")
    return int(limit)


def set_result_cache_limit(limit: int) -> int:
    """Set how many bytes of freed results pyroi keeps for reuse.

    Results of 1 MiB and more are allocated by pyroi; when one is freed, its memory is kept
    for the next result of the same size or at least half of it (up to this many bytes in
    all) instead of being returned to the operating system, which would have to zero fresh
    pages for the next call. ``0`` turns the reuse off and frees what is kept.

    Parameters
    ----------
    limit : int
        Bytes, >= 0. The default is 256 MiB, or ``PYROI_RESULT_CACHE_BYTES``.

    Returns
    -------
    int
        The previous limit.

    Examples
    --------
    >>> import pyroi
    >>> previous = pyroi.set_result_cache_limit(0)   # no reuse
    >>> pyroi.get_result_cache_limit()
    0
    >>> _ = pyroi.set_result_cache_limit(previous)
    """
    limit = _checked_limit(limit)
    global _limit_known
    previous = _core.set_result_cache_limit(limit)
    if not _limit_known:  # the environment's limit, which this call overrides
        _limit_known = True
        try:
            previous = _limit_from_environment()
        except InvalidArgumentError:
            previous = DEFAULT_LIMIT
    return int(previous)


def get_result_cache_limit() -> int:
    """The bytes of freed results pyroi keeps for reuse (see `set_result_cache_limit`).

    Examples
    --------
    >>> import pyroi
    >>> pyroi.get_result_cache_limit() >= 0
    True
    """
    return _limit()


def set_scratch_cache_limit(limit: int) -> int:
    """Set how many bytes of scratch memory pyroi keeps mapped between calls.

    A call's scratch of 1 MiB or more (the lane-major blocks pyroi gathers NCHW features into,
    a float16 call's chunks) comes from the operating system, which zeroes each fresh page on
    its first touch: on the development machine that cost 18 % of a 64-box call from NCHW at
    1 thread and 37 % at 2. So the largest such block freed at the end of a call stays mapped
    for the next call (on any thread) if it is at most this many bytes; one block at most.
    ``0`` keeps none and frees what is kept. The C library's ``pyroi_set_scratch_cache_limit``.

    Parameters
    ----------
    limit : int
        Bytes, >= 0. The default is 64 MiB.

    Returns
    -------
    int
        The previous limit.

    Examples
    --------
    >>> import pyroi
    >>> previous = pyroi.set_scratch_cache_limit(0)   # give scratch back after every call
    >>> pyroi.get_scratch_cache_limit()
    0
    >>> _ = pyroi.set_scratch_cache_limit(previous)
    """
    return int(_core.set_scratch_cache_limit(_checked_limit(limit)))


def get_scratch_cache_limit() -> int:
    """The bytes of scratch pyroi keeps mapped between calls at most (see
    `set_scratch_cache_limit`).

    Examples
    --------
    >>> import pyroi
    >>> pyroi.get_scratch_cache_limit() >= 0
    True
    """
    return int(_core.scratch_cache_limit())


def empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """An uninitialised C-contiguous result array (raises MemoryError / ValueError as
    np.empty does)."""
    dtype = np.dtype(dtype)
    count = math.prod(shape)
    if count < 0 or any(n < 0 for n in shape):
        return np.empty(shape, dtype=dtype)  # NumPy's own error
    nbytes = count * dtype.itemsize
    if nbytes < MIN_CACHED_BYTES or nbytes > 2**62:
        return np.empty(shape, dtype=dtype)
    _limit()  # reports a bad PYROI_RESULT_CACHE_BYTES; with 0, freed buffers go straight back
    buffer = _core.ResultBuffer(nbytes)
    # ResultBuffer exports the buffer protocol, which NumPy's overloads cannot name
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape(  # type: ignore[call-overload]
        shape)

