"""pyroi.viz: the explain geometry (from the C core) reproduces the operators, and the
pictures are valid PNGs (skipped without matplotlib)."""

import numpy as np
import pytest

import pyroi
from pyroi import viz

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def rebuild_roi_align(geometry, plane):
    """An avg RoIAlign bin grid from the explain taps and weights alone."""
    rows, cols = geometry.rows, geometry.cols
    ph, pw = geometry.output_size
    out = np.zeros((ph, pw))
    for i in range(ph):
        for j in range(pw):
            total = 0.0
            for iy in range(rows.grid):
                for ix in range(cols.grid):
                    if not (rows.in_map[i, iy] and cols.in_map[j, ix]):
                        continue
                    for a in range(2):
                        for b in range(2):
                            total += (rows.weights[i, iy, a] * cols.weights[j, ix, b] *
                                      plane[rows.taps[i, iy, a], cols.taps[j, ix, b]])
            out[i, j] = total / geometry.count
    return out


def rebuild_roi_pool(geometry, plane):
    ph, pw = geometry.output_size
    out = np.zeros((ph, pw))
    for i, (r0, r1) in enumerate(geometry.row_edges):
        for j, (c0, c1) in enumerate(geometry.col_edges):
            if r1 > r0 and c1 > c0:
                out[i, j] = plane[r0:r1, c0:c1].max()
    return out


def random_box(rng, height, width, scale):
    x1, y1 = rng.uniform(-3, width + 2) / scale, rng.uniform(-3, height + 2) / scale
    x2, y2 = x1 + rng.uniform(-1, 8) / scale, y1 + rng.uniform(-1, 8) / scale
    return [x1, y1, x2, y2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_roi_align_taps_reproduce_the_op(dtype):
    rng = np.random.default_rng(8)
    height, width = 7, 9
    features = rng.standard_normal((1, 1, height, width)).astype(dtype)
    for trial in range(60):
        scale = (1.0, 0.5, 0.25)[trial % 3]
        box = random_box(rng, height, width, scale)
        ratio = trial % 4 - 1  # -1 (adaptive), 0, 1, 2
        aligned = trial % 2 == 0
        size = (2, 3) if trial % 5 else 1
        g = viz.explain_roi_align(box, size, scale, ratio, aligned, map_size=(height, width),
                                  dtype=dtype)
        rois = np.array([[0] + list(g.box)], dtype=dtype)
        expected = pyroi.roi_align(features, rois, size, scale, ratio, aligned)[0, 0]
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(rebuild_roi_align(g, features[0, 0].astype(np.float64)),
                                   expected, rtol=tol, atol=tol, err_msg=str((box, trial)))


def test_roi_align_geometry_known_answer():
    g = viz.explain_roi_align([-20, 3, -15, 8], 2, sampling_ratio=0, map_size=(6, 6))
    assert g.grid == (3, 3) and g.count == 9
    # 3 + 2.5 * 5/6 is past H - 1: both taps on the last row; 3 + 5.5 * 5/6 is off the map
    assert g.rows.taps[0, 2].tolist() == [5, 5] and g.rows.weights[0, 2].tolist() == [1, 0]
    assert not g.rows.in_map[1, 2] and g.rows.taps[1, 2].tolist() == [-1, -1]
    assert not g.cols.in_map.any()
    assert g.rows.edges.tolist() == [3.0, 5.5, 8.0]
    # an aligned box inverted on one axis with adaptive sampling has no samples there
    g = viz.explain_roi_align([1, 4, 3, 2], 2, sampling_ratio=0, aligned=True,
                              map_size=(6, 6))
    assert g.grid == (0, 1) and g.rows.coords.shape == (2, 0) and g.count == 1


def test_roi_pool_edges_reproduce_the_op():
    rng = np.random.default_rng(9)
    height, width = 6, 8
    features = rng.standard_normal((1, 1, height, width))
    for trial in range(60):
        scale = (1.0, 0.5)[trial % 2]
        box = random_box(rng, height, width, scale)
        size = (2, 3) if trial % 3 else 4
        g = viz.explain_roi_pool(box, size, scale, map_size=(height, width))
        expected = pyroi.roi_pool(features, np.array([[0] + list(g.box)]), size, scale)[0, 0]
        np.testing.assert_array_equal(rebuild_roi_pool(g, features[0, 0]), expected)


def test_roi_pool_known_answer():
    g = viz.explain_roi_pool([-2.5, 0.5, 9.4, 0.5], (1, 3), map_size=(4, 8),
                             dtype=np.float32)
    assert g.roi_pixels.tolist() == [1, 2, -3, 10]
    assert g.row_edges.tolist() == [[1, 2]]
    assert g.col_edges.tolist() == [[0, 2], [1, 6], [5, 8]]


@pytest.mark.parametrize("call, error", [
    (lambda: viz.explain_roi_align([0, 0, np.nan, 1], 2, map_size=(4, 4)), pyroi.BoxError),
    (lambda: viz.explain_roi_align([0, 0, 1], 2, map_size=(4, 4)), pyroi.ShapeError),
    (lambda: viz.explain_roi_align([0, 0, 1, 1], 0, map_size=(4, 4)),
     pyroi.InvalidArgumentError),
    (lambda: viz.explain_roi_align([0, 0, 1, 1], 2, map_size=(4, -1)), pyroi.ShapeError),
    (lambda: viz.explain_roi_align([0, 0, 1, 1], 2, map_size=4), pyroi.ArgumentTypeError),
    (lambda: viz.explain_roi_align([0, 0, 1, 1], 2, map_size=(4, 4), dtype=np.int32),
     pyroi.DTypeError),
    (lambda: viz.explain_roi_align([0, 0, 1e6, 1e6], 1, sampling_ratio=0, map_size=(4, 4)),
     pyroi.InvalidArgumentError),
    (lambda: viz.explain_roi_align([0, 0, 1e30, 1], 1, sampling_ratio=0, map_size=(4, 4)),
     pyroi.BoxError),
    (lambda: viz.explain_roi_pool([0, 0, 1, 1], 2, -1.0, map_size=(4, 4)),
     pyroi.InvalidArgumentError),
    (lambda: viz.explain_roi_pool([0, 0, 1e300, 1], 2, 1e10, map_size=(4, 4)),
     pyroi.BoxError),
    (lambda: viz.explain_roi_pool(["a", 0, 1, 1], 2, map_size=(4, 4)), pyroi.DTypeError),
])
def test_errors(call, error):
    with pytest.raises(error):
        call()


def test_explain_png(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.image

    path = viz.save_explain(tmp_path / "explain.png", [1.2, 0.7, 4.1, 3.3], 2,
                            sampling_ratio=2, aligned=True)
    with open(path, "rb") as png:
        data = png.read()
    assert data[:8] == PNG_SIGNATURE
    image = matplotlib.image.imread(path)
    assert image.shape[1] == 1300 and 700 <= image.shape[0] <= 1100


def test_explain_figure_with_features():
    pytest.importorskip("matplotlib")
    features = np.random.default_rng(1).random((2, 3, 8, 9)).astype(np.float32)
    fig = viz.explain([-4, 2, 14, 12], (2, 3), 0.5, 0, True, features=features, image=1,
                      channel=2)
    assert len(fig.axes) == 4  # two maps, each with its explanation below
    with pytest.raises(pyroi.InvalidArgumentError, match="channel 3"):
        viz.explain([0, 0, 2, 2], features=features, channel=3)


def test_explain_without_matplotlib(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install pyroi\[viz\]"):
        viz.explain([0, 0, 2, 2])


# ---- the picture a student reads (issue: overlapping weights, unexplained shift, huge boxes)

PICTURES = {
    "tour, legacy": ([1.2, 0.7, 4.1, 3.3], dict(output_size=2, sampling_ratio=2)),
    "aligned, off the map": ([-2, -1, 3, 2.5], dict(output_size=3, sampling_ratio=0,
                                                    aligned=True)),
    "box larger than the map": ([1, 1, 1e30, 5], {}),
    "many samples": ([0.3, 0.2, 9.7, 8.1], dict(output_size=(3, 4), sampling_ratio=0)),
    "features": ([-4, 2, 14, 12], dict(output_size=(2, 3), spatial_scale=0.5, sampling_ratio=0,
                                       aligned=True, features=np.random.default_rng(1).random(
                                           (2, 3, 8, 9)).astype(np.float32), image=1)),
}


def _texts(fig):
    """The visible, non-empty texts of a drawn figure with their pixel boxes."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    ticks, drawn = set(), []
    for ax in fig.axes:  # tick labels count only where their tick is in view (drawn)
        for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update((id(tick.label1), id(tick.label2)))
                if min(limits) <= tick.get_loc() <= max(limits):
                    drawn += [tick.label1, tick.label2]
    texts = [t for t in fig.findobj(Text) if id(t) not in ticks] + drawn
    return [(t.get_text(), t.get_window_extent(renderer)) for t in texts
            if t.get_visible() and t.get_text() and t.get_figure() is not None]


@pytest.mark.parametrize("name", PICTURES)
def test_explain_texts_do_not_overlap(name):
    pytest.importorskip("matplotlib")
    box, options = PICTURES[name]
    fig = viz.explain(box, **options)
    fig.canvas.draw()
    texts = _texts(fig)
    assert len(texts) > 10
    for i, (text, extent) in enumerate(texts):
        for other, other_extent in texts[i + 1:]:
            # a text may contain another's box only if they are the same artist's parts
            assert not extent.overlaps(other_extent), (text, other)
    width, height = fig.canvas.get_width_height()
    for text, extent in texts:  # and all of them inside the picture
        assert -1 <= extent.x0 and extent.x1 <= width + 1, text
        assert -1 <= extent.y0 and extent.y1 <= height + 1, text


def _all_text(fig):
    return " ".join(text for text, _ in _texts(fig)).replace("\n", " ")


def test_explain_says_what_each_panel_computes():
    pytest.importorskip("matplotlib")
    fig = viz.explain([1.2, 0.7, 4.1, 3.3], 2, sampling_ratio=2)
    fig.canvas.draw()
    words = _all_text(fig)
    assert "each bin is the MEAN of its 2 x 2 samples" in words
    assert "interpolated bilinearly" in words
    assert "each bin is the MAXIMUM of the pixels" in words
    assert "RoIAlign averages interpolated samples; RoIPool takes the maximum" in words


def test_explain_captions_the_legacy_half_pixel_shift():
    pytest.importorskip("matplotlib")
    legacy = viz.explain([1.2, 0.7, 4.1, 3.3], 2, sampling_ratio=2, aligned=False)
    legacy.canvas.draw()
    assert "bins sit half a pixel right of and below the box" in _all_text(legacy)
    aligned = viz.explain([1.2, 0.7, 4.1, 3.3], 2, sampling_ratio=2, aligned=True)
    aligned.canvas.draw()
    words = _all_text(aligned)
    assert "half a pixel right" not in words and "cover exactly the box" in words


def test_explain_weight_table_matches_the_geometry():
    pytest.importorskip("matplotlib")
    box = [1.2, 0.7, 4.1, 3.3]
    g = viz.explain_roi_align(box, 2, sampling_ratio=2, map_size=(6, 7))
    fig = viz.explain(box, 2, sampling_ratio=2)
    fig.canvas.draw()
    table = next(text for text, _ in _texts(fig) if text.startswith("bin (0, 0) = mean"))
    lines = table.splitlines()
    assert len(lines) == 1 + g.grid[0] * g.grid[1]
    # sample 1: its four weights, the products with 10 * row + col, and the mean on top
    weights = np.outer(g.rows.weights[0, 0], g.cols.weights[0, 0]).ravel()
    assert all(f"{w:.2f}x" in lines[1] for w in weights)
    value = pyroi.roi_align(viz._sample_plane(6, 7)[None, None],
                            np.array([[0.0] + box]), 2, 1.0, 2)[0, 0, 0, 0]
    assert f"= {value:.4g};" in lines[0]


def test_explain_clips_a_huge_box_to_the_map():
    pytest.importorskip("matplotlib")
    fig = viz.explain([1, 1, 1e30, 5])
    fig.canvas.draw()
    align, pool = fig.axes[:2]
    height, width = 7, 32  # the default map: as large as the box, at most 32 pixels a side
    for ax in (align, pool):
        assert ax.get_xlim() == pytest.approx(viz._view(height, width)[:2])
        assert ax.get_ylim() == pytest.approx(viz._view(height, width)[:1:-1])
    words = _all_text(fig)
    assert "box continues to x = 1e+30" in words
    assert "rounded box continues to column" in words
    assert "The box reaches beyond the map (to x = 1e+30)" in words
    assert "16 of the 16 samples lie beyond this view" in words
