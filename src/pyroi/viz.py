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
from dataclasses import dataclass

import numpy as np

from pyroi import _core, _validate, ops

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

    coords: np.ndarray
    taps: np.ndarray
    weights: np.ndarray
    in_map: np.ndarray
    edges: np.ndarray

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


@dataclass(frozen=True)
class RoIAlignGeometry:
    """Where RoIAlign samples one box: the result of :func:`explain_roi_align`.

    A sample ``(iy, ix)`` of bin ``(ph, pw)`` is read when ``rows.in_map[ph, iy]`` and
    ``cols.in_map[pw, ix]`` are both true; it is then
    ``sum(rows.weights[ph, iy, a] * cols.weights[pw, ix, b] *
    plane[rows.taps[ph, iy, a], cols.taps[pw, ix, b]])`` over ``a, b`` in ``{0, 1}``, and an
    average bin is the sum of its samples divided by ``count``.

    Attributes
    ----------
    box : tuple of float
        ``(x1, y1, x2, y2)`` in input-image pixels, as given.
    map_size : tuple of int
        The feature map's ``(H, W)``.
    output_size : tuple of int
        ``(ph, pw)``.
    spatial_scale : float
    sampling_ratio : int
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

    box: tuple
    map_size: tuple
    output_size: tuple
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
    """RoIPool's quantised bins for one box: the result of :func:`explain_roi_pool`.

    Attributes
    ----------
    box : tuple of float
        ``(x1, y1, x2, y2)`` in input-image pixels, as given.
    map_size : tuple of int
        The feature map's ``(H, W)``.
    output_size : tuple of int
        ``(ph, pw)``.
    spatial_scale : float
    roi_pixels : ndarray of int64, shape (4,)
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

    box: tuple
    map_size: tuple
    output_size: tuple
    spatial_scale: float
    roi_pixels: np.ndarray
    row_edges: np.ndarray
    col_edges: np.ndarray


def explain_roi_align(box, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False,
                      *, map_size, dtype=np.float64) -> RoIAlignGeometry:
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
    return RoIAlignGeometry(box=tuple(float(v) for v in coords), map_size=(height, width),
                            output_size=pooled, spatial_scale=scale,
                            sampling_ratio=int(sampling_ratio), aligned=is_aligned,
                            rows=rows, cols=cols)


def explain_roi_pool(box, output_size, spatial_scale=1.0, *, map_size,
                     dtype=np.float64) -> RoIPoolGeometry:
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
    return RoIPoolGeometry(box=tuple(float(v) for v in coords), map_size=(height, width),
                           output_size=pooled, spatial_scale=scale, roi_pixels=roi_pixels,
                           row_edges=row_edges, col_edges=col_edges)


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


def _draw_map(ax, plane, title):
    height, width = plane.shape
    ax.imshow(plane, cmap="Greys", alpha=0.45, origin="upper", interpolation="nearest",
              extent=(-0.5, width - 0.5, height - 0.5, -0.5))
    for h in range(height + 1):
        ax.axhline(h - 0.5, color="0.75", linewidth=0.5)
    for w in range(width + 1):
        ax.axvline(w - 0.5, color="0.75", linewidth=0.5)
    if height * width <= 400:
        size = 7 if height * width <= 100 else 5
        for h in range(height):
            for w in range(width):
                ax.text(w, h + 0.3, f"{plane[h, w]:.3g}", ha="center", va="center",
                        fontsize=size, color="0.35")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("x (feature pixels)")
    ax.set_ylabel("y (feature pixels)")


def _set_limits(ax, height, width, xs, ys):
    """Show the map and everything drawn on it (boxes may hang over the border)."""
    left = min([-0.5] + list(xs)) - 0.5
    right = max([width - 0.5] + list(xs)) + 0.5
    top = min([-0.5] + list(ys)) - 0.5
    bottom = max([height - 0.5] + list(ys)) + 0.5
    ax.set_xlim(left, right)
    ax.set_ylim(bottom, top)  # y grows downwards, as in an image
    ax.set_aspect("equal")


def _draw_roi_align(ax, geometry: RoIAlignGeometry, plane, pooled_values):
    from matplotlib.patches import Rectangle

    height, width = geometry.map_size
    mode = "aligned" if geometry.aligned else "legacy (aligned=False)"
    ratio = geometry.sampling_ratio if geometry.sampling_ratio > 0 else "adaptive"
    _draw_map(ax, plane, f"RoIAlign, {mode}: sampling_ratio {ratio}, "
                         f"{geometry.grid[0]} x {geometry.grid[1]} samples per bin")
    scale = geometry.spatial_scale
    x1, y1, x2, y2 = geometry.box
    # the box itself, where it lies on the map (pixel centres on integers)
    bx = (x1 * scale - 0.5, x2 * scale - 0.5)
    by = (y1 * scale - 0.5, y2 * scale - 0.5)
    ax.add_patch(Rectangle((min(bx), min(by)), abs(bx[1] - bx[0]), abs(by[1] - by[0]),
                           fill=False, edgecolor="tab:blue", linestyle="--", linewidth=1.5,
                           label="box"))
    rows, cols = geometry.rows, geometry.cols
    for edge in rows.edges:
        ax.plot([cols.edges[0], cols.edges[-1]], [edge, edge], color="tab:orange",
                linewidth=1.2)
    for edge in cols.edges:
        ax.plot([edge, edge], [rows.edges[0], rows.edges[-1]], color="tab:orange",
                linewidth=1.2)
    ax.plot([], [], color="tab:orange", label="bins")
    # weights are printed for the first bin only (more would be unreadable)
    annotate_bin = rows.grid * cols.grid <= 16
    for ph in range(rows.coords.shape[0]):
        for iy in range(rows.grid):
            for pw in range(cols.coords.shape[0]):
                for ix in range(cols.grid):
                    y, x = rows.coords[ph, iy], cols.coords[pw, ix]
                    if not (rows.in_map[ph, iy] and cols.in_map[pw, ix]):
                        ax.plot(x, y, marker="x", color="tab:red", markersize=5)
                        continue
                    for a in range(2):
                        for b in range(2):
                            weight = rows.weights[ph, iy, a] * cols.weights[pw, ix, b]
                            if weight == 0:
                                continue
                            ty, tx = rows.taps[ph, iy, a], cols.taps[pw, ix, b]
                            ax.plot([x, tx], [y, ty], color="tab:green",
                                    linewidth=0.5 + 2.0 * float(weight), alpha=0.6)
                            ax.plot(tx, ty, marker="s", color="tab:green", markersize=3)
                            if annotate_bin and ph == 0 and pw == 0:
                                ax.text((x + 2 * tx) / 3, (y + 2 * ty) / 3, f"{weight:.2f}",
                                        fontsize=6, color="darkgreen")
                    ax.plot(x, y, marker="o", color="tab:purple", markersize=4)
    ax.plot([], [], marker="o", linestyle="", color="tab:purple", label="samples")
    ax.plot([], [], color="tab:green", marker="s", markersize=3, label="bilinear taps")
    ax.plot([], [], marker="x", linestyle="", color="tab:red", label="off the map (not read)")
    for ph in range(pooled_values.shape[0]):
        for pw in range(pooled_values.shape[1]):
            cx = (cols.edges[pw] + cols.edges[pw + 1]) / 2
            cy = (rows.edges[ph] + rows.edges[ph + 1]) / 2
            ax.text(cx, cy, f"{pooled_values[ph, pw]:.4g}", ha="center", va="center",
                    fontsize=9, fontweight="bold", color="tab:orange",
                    bbox=dict(facecolor="white", alpha=0.7, edgecolor="none", pad=1))
    _set_limits(ax, height, width, list(bx) + list(cols.edges), list(by) + list(rows.edges))
    ax.legend(loc="upper right", fontsize=7, framealpha=0.8)


def _draw_roi_pool(ax, geometry: RoIPoolGeometry, plane, pooled_values, argmax):
    from matplotlib.patches import Rectangle

    height, width = geometry.map_size
    _draw_map(ax, plane, "RoIPool: the box rounded to whole pixels, bins floor/ceil")
    r0, r1, c0, c1 = (int(v) for v in geometry.roi_pixels)
    ax.add_patch(Rectangle((c0 - 0.5, r0 - 0.5), c1 - c0, r1 - r0, fill=False,
                           edgecolor="tab:blue", linestyle="--", linewidth=1.5,
                           label="rounded RoI"))
    colours = ("tab:orange", "tab:cyan", "tab:olive", "tab:pink")
    for ph, (rb, re) in enumerate(geometry.row_edges):
        for pw, (cb, ce) in enumerate(geometry.col_edges):
            colour = colours[(ph + pw) % len(colours)]
            if re > rb and ce > cb:
                ax.add_patch(Rectangle((cb - 0.5, rb - 0.5), ce - cb, re - rb, alpha=0.2,
                                       facecolor=colour, edgecolor=colour, linewidth=1.5))
                cx, cy = (cb + ce - 1) / 2, (rb + re - 1) / 2
            else:  # clipped away: the bin is 0
                cx = min(max((cb + ce - 1) / 2, 0), width - 1)
                cy = min(max((rb + re - 1) / 2, 0), height - 1)
            ax.text(cx, cy - 0.25, f"{pooled_values[ph, pw]:.4g}", ha="center",
                    va="center", fontsize=9, fontweight="bold", color="black",
                    bbox=dict(facecolor=colour, alpha=0.4, edgecolor="none", pad=1))
            winner = int(argmax[ph, pw])
            if winner >= 0:
                ax.plot(winner % width, winner // width, marker="*", color="tab:red",
                        markersize=9)
    ax.plot([], [], marker="*", linestyle="", color="tab:red", label="maximum of a bin")
    _set_limits(ax, height, width, [c0 - 0.5, c1 - 0.5], [r0 - 0.5, r1 - 0.5])
    ax.legend(loc="upper right", fontsize=7, framealpha=0.8)


def explain(box, output_size=2, spatial_scale=1.0, sampling_ratio=2, aligned=False, *,
            features=None, map_size=None, image=0, channel=0, figsize=(12.0, 6.0)):
    """A picture of RoIAlign and RoIPool on one box, side by side.

    Left: the feature plane (pixel grid and values), the box, RoIAlign's bins, its sample
    points and their bilinear taps (a line to each tap pixel, thicker for a larger weight;
    weights printed in bin (0, 0) when it has at most 16 samples), samples off the map (not read), and
    each bin's value from :func:`pyroi.roi_align`. Right: RoIPool's rounded RoI, its
    quantised bins, each bin's maximum and value from :func:`pyroi.roi_pool`. The geometry is
    the C core's (:func:`explain_roi_align`, :func:`explain_roi_pool`).

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
    figsize : (float, float), default (12, 6)
        Figure size in inches.

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
    >>> [ax.get_title().split(":")[0] for ax in fig.axes]
    ['RoIAlign, legacy (aligned=False)', 'RoIPool']
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
    aligned_values = ops.roi_align(batch, rois, output_size, spatial_scale, sampling_ratio,
                                   aligned)[0, 0]
    pooled_values, argmax = ops.roi_pool(batch, rois, output_size, spatial_scale,
                                         return_argmax=True)
    fig = Figure(figsize=figsize, dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    _draw_roi_align(left, align, plane, aligned_values)
    _draw_roi_pool(right, pool, plane, pooled_values[0, 0], argmax[0, 0])
    x1, y1, x2, y2 = align.box
    fig.suptitle(f"box [{x1:g}, {y1:g}, {x2:g}, {y2:g}], output_size {align.output_size}, "
                 f"spatial_scale {align.spatial_scale:g}, map {height} x {width}",
                 fontsize=11)
    return fig


def save_explain(path, box, output_size=2, spatial_scale=1.0, sampling_ratio=2,
                 aligned=False, *, dpi=100, **options):
    """Draw :func:`explain` and save it to ``path`` (PNG, SVG, PDF: by the file's suffix).

    Parameters
    ----------
    path : str or os.PathLike
        Where to write the picture.
    box, output_size, spatial_scale, sampling_ratio, aligned
        As for :func:`explain`.
    dpi : int, default 100
        Pixels per inch: a PNG is ``figsize * dpi`` pixels (1200 x 600 by default).
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
    import os

    fig = explain(box, output_size, spatial_scale, sampling_ratio, aligned, **options)
    fig.savefig(path, dpi=dpi)
    return os.fspath(path)
