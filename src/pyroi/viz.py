"""Pictures of what RoIAlign and RoIPool compute for one box (``pyroi explain``).

The geometry (bin boundaries, sample positions, which samples are read, their bilinear taps
and weights, RoIPool's quantised bins) comes from the C core's explain functions
(``pyroi_roi_align_sample_axes_*``, ``pyroi_roi_pool_bin_edges_*``): the code the operators
run, not a second copy of their rules. :func:`explain_roi_align` and :func:`explain_roi_pool`
return it as arrays and need only NumPy; :func:`explain` and :func:`save_explain` draw it and
need matplotlib (``pip install pyroi[viz]``), imported when they are called.

Coordinates in the pictures are feature-map pixels with pixel ``(h, w)`` centred on
``(x, y) = (w, h)``, the convention of the bilinear sampler: a sample at ``y = 2.25`` reads
rows 2 and 3 with weights 0.75 and 0.25.
"""

# May import: _core, _validate, ops (and matplotlib, lazily).

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pyroi import _core, _validate, ops

if TYPE_CHECKING:  # matplotlib stays an optional extra, imported when a picture is drawn
    from matplotlib.figure import Figure

__all__ = [
    "AxisSamples",
    "RoIAlignGeometry",
    "RoIPoolGeometry",
    "explain",
    "explain_roi_align",
    "explain_roi_pool",
    "save_explain",
]

_INSTALL_HINT = "pyroi.viz needs matplotlib to draw: pip install pyroi[viz]"


@dataclass(frozen=True)
class AxisSamples:
    """The samples of one axis (rows or columns) of a RoIAlign sampling grid.

    Attributes
    ----------
    coords : ndarray, shape (bins, grid)
        Sample coordinates in feature-map pixels; sample ``i`` of bin ``b`` is
        ``coords[b, i]``.
    taps : ndarray of int64, shape (bins, grid, 2)
        The two pixels ``(lo, hi)`` each sample reads along this axis; ``(-1, -1)`` for a
        sample outside ``[-1, extent]``, which is not read.
    weights : ndarray, shape (bins, grid, 2)
        Their weights ``(w_lo, w_hi)``, summing to 1; ``(0, 0)`` where not read.
    in_map : ndarray of bool, shape (bins, grid)
        Whether the sample lies in ``[-1, extent]`` and is read.
    edges : ndarray, shape (bins + 1,)
        Bin boundaries: bin ``b`` spans ``edges[b] .. edges[b + 1]``.

    Examples
    --------
    >>> from pyroi import viz
    >>> g = viz.explain_roi_align([0, 0, 4, 4], 2, sampling_ratio=2, map_size=(6, 6))
    >>> g.cols.grid, g.cols.coords.tolist()
    (2, [[0.5, 1.5], [2.5, 3.5]])
    """

    coords: npt.NDArray[np.floating[Any]]
    taps: npt.NDArray[np.int64]
    weights: npt.NDArray[np.floating[Any]]
    in_map: npt.NDArray[np.bool_]
    edges: npt.NDArray[np.floating[Any]]

    @property
    def grid(self) -> int:
        """Samples per bin along this axis.

        Examples
        --------
        >>> from pyroi import viz
        >>> viz.explain_roi_align([0, 0, 6, 3], 2, map_size=(8, 8)).cols.grid
        3
        """
        return int(self.coords.shape[1])


# The attributes both explain results share, documented once.
_BOX_ATTRIBUTES = """\
    box : tuple of float
        ``(x1, y1, x2, y2)`` in input-image pixels, as given.
    map_size : tuple of int
        The feature map's ``(H, W)``.
    output_size : tuple of int
        ``(ph, pw)``.
    spatial_scale : float
"""


@dataclass(frozen=True)
class RoIAlignGeometry:
    __doc__ = f"""Where RoIAlign samples one box: the result of :func:`explain_roi_align`.

    A sample ``(iy, ix)`` of bin ``(ph, pw)`` is read when ``rows.in_map[ph, iy]`` and
    ``cols.in_map[pw, ix]`` are both true; it is then
    ``sum(rows.weights[ph, iy, a] * cols.weights[pw, ix, b] *
    plane[rows.taps[ph, iy, a], cols.taps[pw, ix, b]])`` over ``a, b`` in ``{{0, 1}}``, and an
    average bin is the sum of its samples divided by ``count``.

    Attributes
    ----------
{_BOX_ATTRIBUTES}    sampling_ratio : int
        As given (``<= 0``: adaptive).
    aligned : bool
    rows, cols : AxisSamples
        The y and x samples.

    Examples
    --------
    >>> from pyroi import viz
    >>> g = viz.explain_roi_align([0, 0, 4, 4], 2, sampling_ratio=2, aligned=True,
    ...                           map_size=(6, 6))
    >>> g.grid, g.count, g.rows.edges.tolist()
    ((2, 2), 4, [-0.5, 1.5, 3.5])
    """

    box: tuple[float, float, float, float]
    map_size: tuple[int, int]
    output_size: tuple[int, int]
    spatial_scale: float
    sampling_ratio: int
    aligned: bool
    rows: AxisSamples
    cols: AxisSamples

    @property
    def grid(self) -> tuple[int, int]:
        """Samples per bin ``(grid_h, grid_w)``.

        Examples
        --------
        >>> from pyroi import viz
        >>> viz.explain_roi_align([0, 0, 6, 3], 2, map_size=(8, 8)).grid
        (2, 3)
        """
        return self.rows.grid, self.cols.grid

    @property
    def count(self) -> int:
        """The divisor of an average bin: ``max(grid_h * grid_w, 1)``.

        Examples
        --------
        >>> from pyroi import viz
        >>> viz.explain_roi_align([0, 0, 6, 3], 2, sampling_ratio=3, map_size=(8, 8)).count
        9
        """
        return max(self.rows.grid * self.cols.grid, 1)


@dataclass(frozen=True)
class RoIPoolGeometry:
    __doc__ = f"""RoIPool's quantised bins for one box: the result of :func:`explain_roi_pool`.

    Attributes
    ----------
{_BOX_ATTRIBUTES}    roi_pixels : ndarray of int64, shape (4,)
        The rounded RoI before clipping: first row, end row, first column, end column (ends
        exclusive).
    row_edges : ndarray of int64, shape (ph, 2)
        Bin ``ph`` covers rows ``row_edges[ph, 0] .. row_edges[ph, 1] - 1`` (clipped to the
        map; empty when equal).
    col_edges : ndarray of int64, shape (pw, 2)
        The same for columns. Bin ``(ph, pw)`` is the maximum over both ranges (0 if empty).

    Examples
    --------
    >>> from pyroi import viz
    >>> g = viz.explain_roi_pool([1, 1, 2, 2], 3, map_size=(4, 4))
    >>> g.roi_pixels.tolist(), g.row_edges.tolist()
    ([1, 3, 1, 3], [[1, 2], [1, 3], [2, 3]])
    """

    box: tuple[float, float, float, float]
    map_size: tuple[int, int]
    output_size: tuple[int, int]
    spatial_scale: float
    roi_pixels: npt.NDArray[np.int64]
    row_edges: npt.NDArray[np.int64]
    col_edges: npt.NDArray[np.int64]


def explain_roi_align(box: npt.ArrayLike, output_size: int | tuple[int, int],
                      spatial_scale: float = 1.0, sampling_ratio: int = -1,
                      aligned: bool = False, *, map_size: tuple[int, int],
                      dtype: npt.DTypeLike = np.float64) -> RoIAlignGeometry:
    """Where :func:`pyroi.roi_align` samples one box, computed by the C core.

    Parameters
    ----------
    box : sequence of 4 float
        ``[x1, y1, x2, y2]`` in input-image pixels (one row of ``roi_align``'s boxes).
    output_size, spatial_scale, sampling_ratio, aligned
        As for :func:`pyroi.roi_align`.
    map_size : (int, int)
        The feature map's ``(H, W)``: samples outside ``[-1, H] x [-1, W]`` are not read.
    dtype : {float64, float32}, default float64
        The dtype of the computation: float32 reproduces ``roi_align`` on float32 data bit
        for bit (positions are rounded in that dtype).

    Returns
    -------
    RoIAlignGeometry

    Raises
    ------
    pyroi.BoxError
        A coordinate is not finite, or the adaptive grid is too large.
    pyroi.InvalidArgumentError
        More than 65536 samples along an axis (a picture of them would be unreadable).

    Examples
    --------
    Legacy RoIAlign (``aligned=False``) puts the samples of a box from 0 to 4 halfway
    between pixels:

    >>> from pyroi import viz
    >>> g = viz.explain_roi_align([0, 0, 4, 4], 2, sampling_ratio=2, map_size=(6, 6))
    >>> g.rows.coords[0].tolist(), g.rows.taps[0, 0].tolist(), g.rows.weights[0, 0].tolist()
    ([0.5, 1.5], [0, 1], [0.5, 0.5])
    """
    kind = _validate.float_dtype(dtype)
    coords = _validate.single_box(box, kind)
    pooled = _validate.output_size(output_size)
    scale = _validate.spatial_scale(spatial_scale)
    ratio = _validate.sampling_ratio(sampling_ratio)
    is_aligned = _validate.flag(aligned, "aligned")
    height, width = _validate.map_size(map_size)
    args = (coords, height, width, pooled[0], pooled[1], scale, scale, ratio, is_aligned)
    grid_h, grid_w = _core.roi_align_sample_grid(*args)
    axes = []
    for bins, grid, name in ((pooled[0], grid_h, "y"), (pooled[1], grid_w, "x")):
        count = _validate.explain_sample_count(bins, grid, name)
        axes.append((np.empty(count, kind), np.empty((count, 2), np.int64),
                     np.empty((count, 2), kind), np.empty(count, np.int8),
                     np.empty(bins + 1, kind)))
    _core.roi_align_sample_axes(*args, *axes[0], *axes[1])
    rows, cols = (
        AxisSamples(coords=c.reshape(bins, grid), taps=t.reshape(bins, grid, 2),
                    weights=w.reshape(bins, grid, 2), in_map=m.reshape(bins, grid).astype(bool),
                    edges=e)
        for (c, t, w, m, e), bins, grid in zip(axes, pooled, (grid_h, grid_w))
    )
    return RoIAlignGeometry(box=_box(coords), map_size=(height, width),
                            output_size=pooled, spatial_scale=scale,
                            sampling_ratio=int(sampling_ratio), aligned=is_aligned,
                            rows=rows, cols=cols)


def explain_roi_pool(box: npt.ArrayLike, output_size: int | tuple[int, int],
                     spatial_scale: float = 1.0, *, map_size: tuple[int, int],
                     dtype: npt.DTypeLike = np.float64) -> RoIPoolGeometry:
    """The quantised bins :func:`pyroi.roi_pool` uses for one box, computed by the C core.

    Parameters
    ----------
    box : sequence of 4 float
        ``[x1, y1, x2, y2]`` in input-image pixels.
    output_size, spatial_scale
        As for :func:`pyroi.roi_pool`.
    map_size : (int, int)
        The feature map's ``(H, W)``; bins are clipped to it.
    dtype : {float64, float32}, default float64
        The dtype in which the box is scaled and rounded (as ``roi_pool`` on such data).

    Returns
    -------
    RoIPoolGeometry

    Examples
    --------
    A 2 x 2-pixel RoI pooled to 3 x 3 bins repeats pixels (neighbouring bins share them):

    >>> from pyroi import viz
    >>> g = viz.explain_roi_pool([1, 1, 2, 2], 3, map_size=(4, 4))
    >>> g.col_edges.tolist()
    [[1, 2], [1, 3], [2, 3]]
    """
    kind = _validate.float_dtype(dtype)
    coords = _validate.single_box(box, kind)
    pooled = _validate.output_size(output_size)
    scale = _validate.spatial_scale(spatial_scale)
    height, width = _validate.map_size(map_size)
    roi_pixels = np.empty(4, np.int64)
    row_edges = np.empty((pooled[0], 2), np.int64)
    col_edges = np.empty((pooled[1], 2), np.int64)
    _core.roi_pool_bin_edges(coords, height, width, scale, scale, roi_pixels, row_edges,
                             col_edges)
    return RoIPoolGeometry(box=_box(coords), map_size=(height, width),
                           output_size=pooled, spatial_scale=scale, roi_pixels=roi_pixels,
                           row_edges=row_edges, col_edges=col_edges)


def _box(coords: npt.ArrayLike) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = (float(v) for v in np.asarray(coords))
    return x1, y1, x2, y2


# ---- drawing (matplotlib) ------------------------------------------------------------------

def _matplotlib():
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ModuleNotFoundError(_INSTALL_HINT) from None
    return matplotlib, Figure, FigureCanvasAgg


def _default_map_size(box, spatial_scale) -> tuple[int, int]:
    """A map that shows the whole box and a pixel around it (4 to 32 pixels a side)."""
    x1, y1, x2, y2 = (float(v) * spatial_scale for v in box)
    height = min(max(math.ceil(max(y1, y2)) + 2, 4), 32)
    width = min(max(math.ceil(max(x1, x2)) + 2, 4), 32)
    return height, width


def _sample_plane(height: int, width: int) -> np.ndarray:
    """The feature map drawn when none is given: 10 * row + column, easy to check by hand."""
    rows, cols = np.mgrid[0:height, 0:width]
    return (10.0 * rows + cols).astype(np.float64)


# Room around the map in the pictures: the sampler reads samples in [-1, H] x [-1, W], a
# quarter pixel beyond the map's outer pixel edges (-0.5, H - 0.5) on each side.
_VIEW_MARGIN = 0.75
# Most samples of bin (0, 0) listed in the weight table, and numbered on the map.
_TABLE_SAMPLES = 6


def _view(height: int, width: int) -> tuple[float, float, float, float]:
    """(left, right, top, bottom) of a picture: the map and the band the sampler reads."""
    return (-0.5 - _VIEW_MARGIN, width - 0.5 + _VIEW_MARGIN,
            -0.5 - _VIEW_MARGIN, height - 0.5 + _VIEW_MARGIN)


def _draw_map(ax, plane, title):
    """The plane's pixels and (for small maps) their values; returns the value labels."""
    height, width = plane.shape
    ax.imshow(plane, cmap="Greys", alpha=0.45, origin="upper", interpolation="nearest",
              extent=(-0.5, width - 0.5, height - 0.5, -0.5))
    for h in range(height + 1):
        ax.axhline(h - 0.5, color="0.75", linewidth=0.5)
    for w in range(width + 1):
        ax.axvline(w - 0.5, color="0.75", linewidth=0.5)
    labels = []
    if height * width <= 400:
        size = 7 if height * width <= 100 else 5
        for h in range(height):
            for w in range(width):
                labels.append(ax.text(w, h + 0.3, f"{plane[h, w]:.3g}", ha="center",
                                      va="center", fontsize=size, color="0.35", clip_on=True))
    left, right, top, bottom = _view(height, width)
    ax.set_xlim(left, right)
    ax.set_ylim(bottom, top)  # y grows downwards, as in an image
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("x (feature pixels)")
    ax.set_ylabel("y (feature pixels)")
    return labels


def _mark_off_view(ax, rect, name, ends):
    """Arrows and labels where the rectangle ``rect`` (x0, y0, x1, y1, drawn) leaves the view:
    the picture is clipped to the map, and the label names where the box continues
    (``ends``: the left, top, right and bottom ends as the user knows them)."""
    left, right = ax.get_xlim()
    bottom, top = ax.get_ylim()
    x0, x1 = sorted((rect[0], rect[2]))
    y0, y1 = sorted((rect[1], rect[3]))
    style = dict(fontsize=7, color="tab:blue",
                 bbox=dict(facecolor="white", alpha=0.9, edgecolor="tab:blue", pad=1.5))
    beyond = [end for outside, end in zip((x0 < left, y0 < top, x1 > right, y1 > bottom), ends)
              if outside]
    sentence = (f"The {name} reaches beyond the map (to {', '.join(beyond)}): the view is "
                f"clipped to the map, arrows point where it continues." if beyond else "")
    if x1 < left or x0 > right or y1 < top or y0 > bottom:  # nothing of it in view
        return [ax.text((left + right) / 2, (top + bottom) / 2,
                        f"the {name} lies off the map:\n{ends[0]} .. {ends[2]}, "
                        f"{ends[1]} .. {ends[3]}", ha="center", va="center", **style)], sentence
    # where along the border an arrow may stand: the middle of the box's visible part, or
    # nearer its ends, a little or further inwards (_declutter takes the first spot that
    # covers no other label)
    fractions = (0.5, 0.2, 0.8)
    along_x = [max(x0, left) + f * (min(x1, right) - max(x0, left)) for f in fractions]
    along_y = [max(y0, top) + f * (min(y1, bottom) - max(y0, top)) for f in fractions]
    inwards = [f * (right - left) for f in (0.12, 0.06, 0.2)]
    texts = []
    for outside, end, spots in (
            (x0 < left, ends[0], [(left + d, y, "left", (left, y))
                                  for d in inwards for y in along_y]),
            (x1 > right, ends[2], [(right - d, y, "right", (right, y))
                                   for d in inwards for y in along_y]),
            (y0 < top, ends[1], [(x, top + d, "center", (x, top))
                                 for d in inwards for x in along_x]),
            (y1 > bottom, ends[3], [(x, bottom - d, "center", (x, bottom))
                                    for d in inwards for x in along_x])):
        if outside:
            x, y, align, tip = spots[0]
            text = ax.annotate(
                f"{name} continues\nto {end}", xy=tip, xytext=(x, y), ha=align, va="center",
                arrowprops=dict(arrowstyle="->", color="tab:blue", linewidth=1.2), **style)
            text._pyroi_spots = [(x, y, align, "center", tip) for x, y, align, tip in spots]
            texts.append(text)
    return texts, sentence


def _number(value) -> str:
    """A pixel index or coordinate, short even when huge (a box's saturated end)."""
    return str(value) if isinstance(value, int) and abs(value) < 10**6 else f"{value:.4g}"


def _bin_zero_table(geometry: RoIAlignGeometry, plane, value) -> str:
    """The weights of bin (0, 0) as text: every sample's four taps and interpolated value,
    and their mean."""
    rows, cols = geometry.rows, geometry.cols
    if rows.grid == 0 or cols.grid == 0:
        return f"bin (0, 0) has no samples: it is {value:.4g}"
    lines = [f"bin (0, 0) = mean of its {rows.grid * cols.grid} samples = {value:.4g};  "
             f"sample = sum of weight x pixel:"]
    shown = 0
    for iy in range(rows.grid):
        for ix in range(cols.grid):
            shown += 1
            if shown > _TABLE_SAMPLES:
                continue
            y, x = rows.coords[0, iy], cols.coords[0, ix]
            if not (rows.in_map[0, iy] and cols.in_map[0, ix]):
                lines.append(f" {shown:>2} ({x:7.4g}, {y:7.4g})  off the map: 0 (not read)")
                continue
            terms, total = [], 0.0
            for a in range(2):
                for b in range(2):
                    weight = rows.weights[0, iy, a] * cols.weights[0, ix, b]
                    pixel = plane[rows.taps[0, iy, a], cols.taps[0, ix, b]]
                    total += float(weight) * float(pixel)
                    terms.append(f"{weight:.2f}x{pixel:.3g}")
            lines.append(f" {shown:>2} ({x:7.4g}, {y:7.4g})  " + " + ".join(terms)
                         + f" = {total:.4g}")
    if shown > _TABLE_SAMPLES:
        lines.append(f"    ... and {shown - _TABLE_SAMPLES} more samples")
    return "\n".join(lines)


def _draw_roi_align(ax, geometry: RoIAlignGeometry, plane, pooled_values):
    from matplotlib.patches import Rectangle

    height, width = geometry.map_size
    mode = "aligned=True" if geometry.aligned else "legacy, aligned=False"
    ratio = geometry.sampling_ratio if geometry.sampling_ratio > 0 else "adaptive"
    labels = _draw_map(ax, plane, f"RoIAlign ({mode}):\nsampling_ratio {ratio}, "
                                  f"{geometry.grid[0]} x {geometry.grid[1]} samples per bin")
    scale = geometry.spatial_scale
    x1, y1, x2, y2 = geometry.box
    # the box on the pixel grid: pixel (h, w) covers [w - 0.5, w + 0.5] here, so an image
    # coordinate x lands at x * scale - 0.5 (the shift aligned=True applies to the bins)
    box = (x1 * scale - 0.5, y1 * scale - 0.5, x2 * scale - 0.5, y2 * scale - 0.5)
    ax.add_patch(Rectangle((min(box[0], box[2]), min(box[1], box[3])), abs(box[2] - box[0]),
                           abs(box[3] - box[1]), fill=False, edgecolor="tab:blue",
                           linestyle="--", linewidth=1.5, label="box"))
    rows, cols = geometry.rows, geometry.cols
    for edge in rows.edges:
        ax.plot([cols.edges[0], cols.edges[-1]], [edge, edge], color="tab:orange",
                linewidth=1.2)
    for edge in cols.edges:
        ax.plot([edge, edge], [rows.edges[0], rows.edges[-1]], color="tab:orange",
                linewidth=1.2)
    ax.plot([], [], color="tab:orange", label="bins")
    left, right = ax.get_xlim()
    bottom, top = ax.get_ylim()
    ys, xs = rows.coords.ravel(), cols.coords.ravel()
    read_y, read_x = rows.in_map.ravel(), cols.in_map.ravel()
    in_y, in_x = (ys >= top) & (ys <= bottom), (xs >= left) & (xs <= right)
    # every sample in view (the others are counted in the caption), read or not
    grid_y, grid_x = np.meshgrid(ys[in_y], xs[in_x], indexing="ij")
    read = np.logical_and.outer(read_y[in_y], read_x[in_x])
    ax.scatter(grid_x[read], grid_y[read], s=14, color="tab:purple", zorder=3,
               label="samples")
    ax.scatter(grid_x[~read], grid_y[~read], s=22, marker="x", color="tab:red", zorder=3,
               label="not read: off the map (counts as 0)")
    # bin (0, 0): its samples numbered and joined to their four taps (width ~ weight); the
    # weights themselves are in the table below the map
    numbers, shown = [], 0
    for iy in range(rows.grid):
        for ix in range(cols.grid):
            shown += 1
            y, x = rows.coords[0, iy], cols.coords[0, ix]
            if shown > _TABLE_SAMPLES or not (top <= y <= bottom and left <= x <= right):
                continue
            number = ax.text(x, y, str(shown), fontsize=8, color="indigo", zorder=4,
                             ha="left", va="bottom", clip_on=True)
            number._pyroi_spots = [(x + dx, y + dy, ha, va, None) for dx, dy, ha, va in (
                (0.08, -0.08, "left", "bottom"), (0.08, 0.08, "left", "top"),
                (-0.08, -0.08, "right", "bottom"), (-0.08, 0.08, "right", "top"))]
            numbers.append(number)
            if not (rows.in_map[0, iy] and cols.in_map[0, ix]):
                continue
            for a in range(2):
                for b in range(2):
                    weight = float(rows.weights[0, iy, a] * cols.weights[0, ix, b])
                    if weight > 0:
                        ty, tx = rows.taps[0, iy, a], cols.taps[0, ix, b]
                        ax.plot([x, tx], [y, ty], color="tab:green", alpha=0.7,
                                linewidth=0.4 + 2.5 * weight, zorder=2)
                        ax.plot(tx, ty, marker="s", color="tab:green", markersize=3)
    ax.plot([], [], color="tab:green", marker="s", markersize=3,
            label="bin (0, 0): taps of its numbered samples")
    values = []
    for ph in range(pooled_values.shape[0]):
        for pw in range(pooled_values.shape[1]):
            cx = (cols.edges[pw] + cols.edges[pw + 1]) / 2
            cy = (rows.edges[ph] + rows.edges[ph + 1]) / 2
            if left <= cx <= right and top <= cy <= bottom:
                values.append(ax.text(cx, cy, f"{pooled_values[ph, pw]:.4g}", ha="center",
                                      va="center", fontsize=9, fontweight="bold",
                                      color="tab:orange", zorder=5, clip_on=True,
                                      bbox=dict(facecolor="white", alpha=0.8, edgecolor="none",
                                                pad=1)))
    left_end, right_end = sorted((x1, x2))
    top_end, bottom_end = sorted((y1, y2))
    marks, beyond = _mark_off_view(ax, box, "box", (f"x = {left_end:.4g}", f"y = {top_end:.4g}",
                                            f"x = {right_end:.4g}", f"y = {bottom_end:.4g}"))
    off = int(rows.coords.size * cols.coords.size - in_y.sum() * in_x.sum())
    return values + marks, numbers, labels, off, beyond


def _draw_roi_pool(ax, geometry: RoIPoolGeometry, plane, pooled_values, argmax):
    from matplotlib.patches import Rectangle

    height, width = geometry.map_size
    labels = _draw_map(ax, plane, "RoIPool:\nthe box rounded to whole pixels, bins floor / ceil")
    r0, r1, c0, c1 = (int(v) for v in geometry.roi_pixels)
    rect = (c0 - 0.5, r0 - 0.5, c1 - 0.5, r1 - 0.5)
    ax.add_patch(Rectangle((rect[0], rect[1]), c1 - c0, r1 - r0, fill=False,
                           edgecolor="tab:blue", linestyle="--", linewidth=1.5,
                           label="rounded box"))
    colours = ("tab:orange", "tab:cyan", "tab:olive", "tab:pink")
    values = []
    for ph, (rb, re) in enumerate(geometry.row_edges):
        for pw, (cb, ce) in enumerate(geometry.col_edges):
            colour = colours[(ph + pw) % len(colours)]
            if not (re > rb and ce > cb):  # clipped away: empty, 0 (said in the caption)
                continue
            ax.add_patch(Rectangle((cb - 0.5, rb - 0.5), ce - cb, re - rb, alpha=0.2,
                                   facecolor=colour, edgecolor=colour, linewidth=1.5))
            cx, cy = (cb + ce - 1) / 2, (rb + re - 1) / 2
            values.append(ax.text(cx, cy - 0.25, f"{pooled_values[ph, pw]:.4g}", ha="center",
                                  va="center", fontsize=9, fontweight="bold", color="black",
                                  zorder=5, clip_on=True, bbox=dict(facecolor=colour, alpha=0.4,
                                                      edgecolor="none", pad=1)))
            winner = int(argmax[ph, pw])
            if winner >= 0:
                ax.plot(winner % width, winner // width, marker="*", color="tab:red",
                        markersize=9)
    ax.plot([], [], marker="*", linestyle="", color="tab:red", label="maximum of a bin")
    marks, beyond = _mark_off_view(ax, rect, "rounded box", (
        f"column {_number(c0)}", f"row {_number(r0)}", f"column {_number(c1 - 1)}",
        f"row {_number(r1 - 1)}"))
    return values + marks, labels, beyond


def _declutter(canvas, fig, fixed, ranked):
    """No two visible texts overlap, and none on a map spills out of it: the ``fixed`` texts
    (the captions) stay where they are; each text in
    ``ranked`` order takes the first of its spots (``_pyroi_spots``: (x, y, ha, va, arrow
    tip or None), e.g. a sample number's corners around its sample) where it overlaps no text
    kept before it, else it is hidden (e.g. a pixel value under a bin's value)."""
    from matplotlib.text import Text

    canvas.draw()
    renderer = canvas.get_renderer()
    kept = [t.get_window_extent(renderer) for t in fixed] + [
        t.get_window_extent(renderer) for legend in fig.legends for t in legend.findobj(Text)
        if t.get_visible() and t.get_text()]
    for text in ranked:
        if not text.get_visible() or not text.get_text():
            continue
        inside = text.axes.get_window_extent(renderer) if text.get_clip_on() else None
        for spot in getattr(text, "_pyroi_spots", [None]):
            if spot is not None:
                x, y, ha, va, tip = spot
                text.set_position((x, y))
                text.set_horizontalalignment(ha)
                text.set_verticalalignment(va)
                if tip is not None:  # an arrow's label moves with its arrow
                    text.xy = tip
            extent = text.get_window_extent(renderer)
            if inside is not None and not (inside.x0 <= extent.x0 and extent.x1 <= inside.x1
                                           and inside.y0 <= extent.y0
                                           and extent.y1 <= inside.y1):
                continue
            if not any(extent.overlaps(other) for other in kept):
                kept.append(extent)
                break
        else:
            text.set_visible(False)


def _wrap(text: str, width: int = 84) -> str:
    import textwrap

    return "\n".join(textwrap.fill(part, width) for part in text.split("\n"))


def explain(box: npt.ArrayLike, output_size: int | tuple[int, int] = 2,
            spatial_scale: float = 1.0, sampling_ratio: int = 2, aligned: bool = False, *,
            features: npt.ArrayLike | None = None, map_size: tuple[int, int] | None = None,
            image: int = 0, channel: int = 0,
            figsize: tuple[float, float] | None = None) -> Figure:
    """A picture of RoIAlign and RoIPool on one box, side by side, for learning what they do.

    Left: the feature plane (pixel grid and values), the box (dashed), RoIAlign's bins, its
    sample points, samples off the map (not read), each bin's value from
    :func:`pyroi.roi_align`, and for bin (0, 0) its numbered samples joined to their bilinear
    taps (thicker for a larger weight), with a table below of every weight, sample value and
    their mean. Right: RoIPool's rounded box, its quantised bins, each bin's maximum and value
    from :func:`pyroi.roi_pool`. Below each panel a sentence says what it computes; in legacy
    mode (``aligned=False``) a caption says why the bins sit half a pixel off the box. The
    view is the map (and the band the sampler reads around it): a box reaching beyond it is
    clipped, with arrows naming where it continues. The geometry is the C core's
    (:func:`explain_roi_align`, :func:`explain_roi_pool`).

    Parameters
    ----------
    box : sequence of 4 float
        ``[x1, y1, x2, y2]`` in input-image pixels.
    output_size, spatial_scale, sampling_ratio, aligned
        As for :func:`pyroi.roi_align` (RoIPool uses ``output_size`` and ``spatial_scale``).
    features : ndarray, optional
        The feature map, ``(H, W)``, ``(C, H, W)`` or ``(N, C, H, W)``, float32 or float64;
        plane ``(image, channel)`` is drawn and pooled. Default: a map of ``map_size``
        holding ``10 * row + column``.
    map_size : (int, int), optional
        ``(H, W)`` of the default map; by default large enough to show the box (4 to 32
        pixels a side). Not used with ``features``.
    image, channel : int, default 0
        Which plane of ``features`` to draw.
    figsize : (float, float), optional
        Figure size in inches; by default 13 wide and as tall as the maps need (about 9).

    Returns
    -------
    matplotlib.figure.Figure
        Not attached to pyplot (no window opens); save it with ``fig.savefig``.

    Raises
    ------
    ModuleNotFoundError
        matplotlib is not installed (``pip install pyroi[viz]``).

    Examples
    --------
    >>> from pyroi import viz
    >>> fig = viz.explain([1.2, 0.7, 4.1, 3.3], output_size=2, sampling_ratio=2)
    >>> [ax.get_title().split(":")[0] for ax in fig.axes[:2]]
    ['RoIAlign (legacy, aligned=False)', 'RoIPool']
    """
    _, Figure, FigureCanvasAgg = _matplotlib()
    if features is None:
        scale = _validate.spatial_scale(spatial_scale)
        coords = _validate.single_box(box, np.dtype(np.float64))
        size = (_validate.map_size(map_size) if map_size is not None
                else _default_map_size(coords, scale))
        plane = _sample_plane(*size)
    else:
        plane = _validate.feature_plane(features, image, channel)
    dtype = plane.dtype
    height, width = plane.shape
    align = explain_roi_align(box, output_size, spatial_scale, sampling_ratio, aligned,
                              map_size=(height, width), dtype=dtype)
    pool = explain_roi_pool(box, output_size, spatial_scale, map_size=(height, width),
                            dtype=dtype)
    rois = np.concatenate([[0], np.asarray(align.box)]).astype(dtype)[None]
    batch = plane[None, None]
    aligned_values = np.asarray(ops.roi_align(batch, rois, output_size, spatial_scale,
                                              sampling_ratio, aligned))[0, 0]
    pooled_values, argmax = ops.roi_pool(batch, rois, output_size, spatial_scale,
                                         return_argmax=True)
    fig = Figure(figsize=figsize or (13.0, 9.0), dpi=100, layout="constrained")
    canvas = FigureCanvasAgg(fig)
    (left, right), (left_text, right_text) = fig.subplots(2, 2)
    align_labels, numbers, align_pixels, off, align_beyond = _draw_roi_align(
        left, align, plane, aligned_values)
    pool_labels, pool_pixels, pool_beyond = _draw_roi_pool(right, pool, plane,
                                                           pooled_values[0, 0], argmax[0, 0])
    samples = align.rows.coords.size * align.cols.coords.size
    grid = f"{align.grid[0]} x {align.grid[1]}"
    align_sentence = (
        f"RoIAlign: each bin is the MEAN of its {grid} samples, and each sample is "
        f"interpolated bilinearly from the 4 pixels around it (no rounding).")
    if off:
        align_sentence += f" {off} of the {samples} samples lie beyond this view."
    align_sentence += " " + align_beyond
    if align.aligned:
        shift = ("aligned=True: the box corners are shifted by -0.5 pixel, so the bins "
                 "(orange) cover exactly the box (dashed).")
    else:
        shift = ("Why the bins sit half a pixel right of and below the box: legacy RoIAlign "
                 "(aligned=False) reads box coordinates as pixel centres (pixel w is centred "
                 "on x = w) without the -0.5 shift that aligned=True applies, and makes the box "
                 "at least 1 x 1 pixel.")
    pool_sentence = (
        "RoIPool: the box is rounded to whole pixels (dashed) and cut into bins with floor / "
        "ceil (bins may share pixels or be empty); each bin is the MAXIMUM of the pixels it "
        "covers (stars), with no interpolation and no averaging.")
    empty = int(np.count_nonzero(argmax[0, 0] < 0))
    if empty:
        pool_sentence += (f" {empty} of its {argmax[0, 0].size} bins cover no pixel of the map:"
                          f" they are 0.")
    pool_sentence += " " + pool_beyond
    align_text = _wrap(align_sentence + "\n" + shift)
    table = _bin_zero_table(align, plane, aligned_values[0, 0])
    pool_text = _wrap(pool_sentence)
    captions = [
        left_text.text(0, 1, align_text, va="top", ha="left", fontsize=9,
                       transform=left_text.transAxes),
        left_text.text(0, 0, table, va="bottom", ha="left", fontsize=7.5, family="monospace",
                       transform=left_text.transAxes),
        right_text.text(0, 1, pool_text, va="top", ha="left", fontsize=9,
                        transform=right_text.transAxes)]
    for ax in (left_text, right_text):
        ax.set_axis_off()
    # one legend for both maps, at the bottom; the text panels as tall as their lines
    handles: dict[str, Any] = {}
    for ax in (left, right):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center",
               ncol=len(handles), fontsize=7.5, frameon=False)
    text_height = max(align_text.count("\n") + 1, pool_text.count("\n") + 1) * 9 * 1.3 / 72 \
        + (table.count("\n") + 1) * 7.5 * 1.3 / 72 + 0.35
    if figsize is None:  # 13 inches wide, the maps as tall as their aspect needs
        view_left, view_right, view_top, view_bottom = _view(height, width)
        aspect = (view_bottom - view_top) / (view_right - view_left)
        map_height = min(max(5.6 * aspect, 2.5), 6.0) + 0.9  # titles and x labels
        fig.set_size_inches(13.0, map_height + text_height + 1.0)  # + title and legend
    left.get_gridspec().set_height_ratios(
        (max(fig.get_size_inches()[1] - text_height - 1.0, 1.0), text_height))
    x1, y1, x2, y2 = align.box
    fig.suptitle(f"box [{x1:g}, {y1:g}, {x2:g}, {y2:g}], output_size {align.output_size}, "
                 f"spatial_scale {align.spatial_scale:g}, map {height} x {width}\n"
                 "RoIAlign averages interpolated samples; RoIPool takes the maximum of rounded "
                 "pixels", fontsize=11)
    _declutter(canvas, fig, captions, align_labels + pool_labels + numbers + align_pixels
               + pool_pixels)
    return fig


def save_explain(path: str | os.PathLike[str], box: npt.ArrayLike,
                 output_size: int | tuple[int, int] = 2, spatial_scale: float = 1.0,
                 sampling_ratio: int = 2, aligned: bool = False, *, dpi: int = 100,
                 **options: Any) -> str:
    """Draw :func:`explain` and save it to ``path`` (PNG, SVG, PDF: by the file's suffix).

    Parameters
    ----------
    path : str or os.PathLike
        Where to write the picture.
    box, output_size, spatial_scale, sampling_ratio, aligned
        As for :func:`explain`.
    dpi : int, default 100
        Pixels per inch: a PNG is ``figsize * dpi`` pixels (1300 wide by default).
    **options
        ``features``, ``map_size``, ``image``, ``channel``, ``figsize`` of :func:`explain`.

    Returns
    -------
    str
        The path written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from pyroi import viz
    >>> path = viz.save_explain(pathlib.Path(tempfile.mkdtemp()) / "explain.png",
    ...                         [1, 1, 4, 3], output_size=2)
    >>> pathlib.Path(path).read_bytes()[:4]
    b'\\x89PNG'
    """
    fig = explain(box, output_size, spatial_scale, sampling_ratio, aligned, **options)
    fig.savefig(path, dpi=dpi)
    return os.fspath(path)
