"""The process-wide default thread count of pyroi calls.

The C core is stateless: every call receives its thread count. This module holds the
default used when a call passes ``num_threads=None``: ``set_num_threads(n)`` if called,
else the environment variable ``PYROI_NUM_THREADS`` (read at the first call that needs it),
else the CPUs this process may run on.
Results never depend on the thread count.
"""

# May import: _errors, _integers.

from __future__ import annotations

import os

from pyroi._errors import InvalidArgumentError
from pyroi._integers import positive_int

ENV_VARIABLE = "PYROI_NUM_THREADS"
_default_threads: int | None = None


_cpus_at_import: int | None = None


def _available_cpus() -> int:
    """CPUs this process may run on, read once (a system call per op would cost more than
    small calls take)."""
    global _cpus_at_import
    if _cpus_at_import is None:
        try:
            _cpus_at_import = max(1, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError):  # not Linux
            _cpus_at_import = max(1, os.cpu_count() or 1)
    return _cpus_at_import


_environment_threads: int | None = None
_environment_read = False


def _from_environment() -> int | None:
    """PYROI_NUM_THREADS, read at the first call that needs it and kept (reading the
    environment costs about a microsecond, a tenth of a small call). An invalid value is
    not kept: every call reports it."""
    global _environment_threads, _environment_read
    if _environment_read:
        return _environment_threads
    text = os.environ.get(ENV_VARIABLE, "").strip()
    if text:
        _environment_threads = _parse_environment(text)
    _environment_read = True
    return _environment_threads


def _parse_environment(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgumentError(
            f"{ENV_VARIABLE} must be a positive integer, got {text!r}"
        ) from None
    if value < 1:
        raise InvalidArgumentError(f"{ENV_VARIABLE} must be a positive integer, got {text!r}")
    return value


def get_num_threads() -> int:
    """The thread count a call uses when it passes ``num_threads=None``.

    Examples
    --------
    >>> import pyroi
    >>> pyroi.get_num_threads() >= 1
    True
    """
    if _default_threads is not None:
        return _default_threads
    from_env = _from_environment()
    return from_env if from_env is not None else _available_cpus()


def set_num_threads(num_threads: int | None) -> None:
    """Set the default thread count of later calls; ``None`` restores the automatic choice
    (``PYROI_NUM_THREADS``, else the CPUs available to this process).

    Small calls use fewer threads than this when starting threads would cost more than it
    saves; results are bit-identical for every thread count.

    Examples
    --------
    >>> import pyroi
    >>> pyroi.set_num_threads(1)
    >>> pyroi.get_num_threads()
    1
    >>> pyroi.set_num_threads(None)
    """
    global _default_threads
    if num_threads is None:
        _default_threads = None
        return
    _default_threads = positive_int(num_threads, "num_threads")
