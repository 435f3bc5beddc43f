"""The levels of a feature pyramid as the one-call pyramid entry of the C core takes them.

torchvision's ``MultiScaleRoIAlign`` infers ``min_level`` and ``max_level`` from the first
and the last map's scale, assigns each box a level in ``[min_level, max_level]`` and pools
the boxes of level ``min_level + i`` from the ``i``-th map (by position, at that map's own
scale); boxes of a level with no map at its position stay zero. The C core's entry takes one
map per level from ``min_level`` to ``max_level``. When the maps are one per level (each
halves the previous one), both agree. When they are not -- a pyramid that skips a level
(scales 1/8, 1/32: three levels, two maps), or repeats one -- this module gives the C core
torchvision's reading: the maps in their positions, an empty map (no pixel: every bin zero,
no gradient) at each position past the last map, and the maps past the last level left out
(no box reaches them: their gradient is zero)."""

# May import: _errors (and NumPy).

import warnings

import numpy as np

from pyroi._errors import PyramidLevelsWarning, ShapeError

MAX_LEVELS = 16  # PYROI_MAX_FPN_LEVELS of pyroi.h


def level_count(min_level: int, max_level: int) -> int:
    """The levels the box assignment uses (0 when max_level < min_level: no box is pooled,
    as torchvision's clamp then puts every box below level 0)."""
    return max(max_level - min_level + 1, 0)


def check_levels(scales, min_level: int, max_level: int, strict: bool) -> None:
    """Warns (or, ``strict``, raises ShapeError) where the maps are not one per level."""
    levels = level_count(min_level, max_level)
    if levels == len(scales) and levels <= MAX_LEVELS:
        return
    message = (f"the pyramid's {len(scales)} maps have scales {list(scales)}, which span "
               f"levels {min_level}..{max_level}: ")
    if levels > len(scales):
        message += (f"levels {min_level + len(scales)}..{max_level} have no map at their "
                    "position, so their boxes are zero (as torchvision pools them)")
    elif levels == 0:
        message += "no box has a level, so every output is zero (as torchvision)"
    else:
        message += (f"maps {levels}..{len(scales) - 1} receive no box (as torchvision pools "
                    "them)")
    if strict:
        raise ShapeError(message + "; strict_levels=True asks for one map per level")
    if levels > MAX_LEVELS:
        raise ShapeError(message + f"; the C core pools at most {MAX_LEVELS} levels")
    warnings.warn(message, PyramidLevelsWarning, stacklevel=3)


def positions(maps, scales, min_level: int, max_level: int, empty):
    """The maps and scales of the C call: ``maps`` by position, ``empty(like)`` for each level
    past the last map (a (N, C, 0, 0) array like the first map), and only the first
    ``level_count`` maps. Returns ``(maps, scales)``; both empty when no level is used."""
    levels = level_count(min_level, max_level)
    used_maps, used_scales = list(maps[:levels]), [float(s) for s in scales[:levels]]
    for level in range(len(used_maps), levels):
        used_maps.append(empty(maps[0]))
        used_scales.append(float(2.0 ** -(min_level + level)))
    return used_maps, used_scales


def empty_map(like: np.ndarray) -> np.ndarray:
    """A map of no pixel with the batch, channels and dtype of ``like``."""
    return np.empty((like.shape[0], like.shape[1], 0, 0), like.dtype)
