"""The avg forward's row bands give torchvision's bits. On an image larger than the L2 cache
the image order gathers a band of rows at a time (sized from the L2 cache) and every RoI adds
the samples whose upper row lies in the band to running sums kept from band to band. The
maps here are wide (or, for one test, one column wide and tall), so that a band holds a few
rows on any L2 cache up to 2 MB and the RoIs cross many band edges: RoIs of every height
from a point to the whole map, partly or wholly off the map, clamped at the top and bottom
rows, inverted (their samples' rows descend: those images take the whole-image order), empty
bin rows, NaN and infinite pixels, odd channel counts, both dtypes, fixed and adaptive
sampling, one or two threads."""

import numpy as np
import pytest

import pyroi

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")


def _band_crossing_rois(rng, images, height, width, count, inverted=False):
    """Boxes on a height x width map at scale 0.5 (in input pixels: twice the map's), of
    heights 0 to the map's, crossing rows anywhere, some off the map above, below and to the
    sides; first, overlapping tiles over each image whose samples tap every pixel (else the
    image order gathers only the pixels tapped, without bands)."""
    rows, cols = 2.0 * height, 2.0 * width
    rois = [(n, x, y, x + 1200.0, y + 20.0) for n in range(images)
            for y in range(-3, int(rows), 16) for x in range(-40, int(cols), 900)]
    for i in range(count):
        n = i % images
        y1 = rng.uniform(-12, rows + 4)
        h = rng.choice([0.0, rng.uniform(0, 4), rng.uniform(2, 24), rng.uniform(10, rows)])
        x1 = rng.uniform(-40, cols)
        w = rng.uniform(0, min(cols, 600))
        if inverted and i % 3 == 0:
            rois.append((n, x1 + w, y1 + h, x1, y1))
        else:
            rois.append((n, x1, y1, x1 + w, y1 + h))
    rois.append((0, 6, -60, 80, -4))  # above the map
    rois.append((images - 1, 6, rows + 4, 80, rows + 60))  # below it
    rois.append((0, 10, -1.8, 120, 0.8))  # clamped to the top row
    rois.append((images - 1, 10, rows - 2.4, 120, rows + 1.8))  # and to the bottom row
    return np.array(rois)


def _check(x, rois, output_size, sampling_ratio, aligned, threads=(1, 2)):
    rois = rois.astype(x.dtype)
    expected = torchvision.ops.roi_align(torch.from_numpy(x), torch.from_numpy(rois),
                                         output_size, 0.5, sampling_ratio, aligned).numpy()
    for n in threads:
        out = pyroi.roi_align(x, rois, output_size, 0.5, sampling_ratio, aligned,
                              num_threads=n)
        assert out.tobytes() == expected.tobytes()


CASES = [(dtype, channels, aligned, sampling_ratio)
         for dtype in (np.float32, np.float64) for channels in (5, 16, 21)
         for aligned, sampling_ratio in ((True, 2), (False, 0), (True, 3))]


@pytest.mark.parametrize("dtype,channels,aligned,sampling_ratio", CASES)
def test_bands_match_torchvision(dtype, channels, aligned, sampling_ratio):
    rng = np.random.default_rng(CASES.index((dtype, channels, aligned, sampling_ratio)))
    images, height, width = 2, 37, 4096
    x = rng.standard_normal((images, channels, 2 * height, 2 * width)).astype(dtype)
    rois = _band_crossing_rois(rng, images, 2 * height, 2 * width, 60)
    _check(x, rois, (7, 5), sampling_ratio, aligned)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bands_with_inverted_boxes(dtype):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 16, 2 * 33, 2 * 4096)).astype(dtype)
    rois = _band_crossing_rois(rng, 2, 2 * 33, 2 * 4096, 45, inverted=True)
    _check(x, rois, (6, 6), 2, True)
    # one image with an inverted box, the other without: each image decides its own order
    rois = _band_crossing_rois(rng, 2, 2 * 33, 2 * 4096, 45)
    rois = np.concatenate([rois, [[1, 50.0, 60.0, 10.0, 2.0]]])
    _check(x, rois, (6, 6), 2, True)


def test_bands_with_nan_and_infinite_pixels():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 16, 2 * 29, 2 * 4096)).astype(np.float32)
    x[0, 3, 17, :] = np.nan  # a whole row: the samples of every band edge near it
    x[0, 5, ::7, ::5] = np.inf
    x[0, 6, 1::9, 2::3] = -np.inf
    x[0, :, 0, 0] = 1.0  # torchvision adds 0 * P[0, 0] for samples off the map (semantics.md)
    rois = _band_crossing_rois(rng, 1, 2 * 29, 2 * 4096, 50)
    _check(x, rois, (7, 7), 2, True)


def test_bands_on_a_one_column_map():
    # 16 float channels of one column: a band is the L2 cache's size / 64 bytes rows
    rng = np.random.default_rng(3)
    height = 40_000
    x = rng.standard_normal((1, 16, height, 1)).astype(np.float32)
    y1 = rng.uniform(-10, height, 40)
    h = rng.uniform(0, 3000, 40)
    rois = np.stack([np.zeros(40), np.full(40, -0.5), y1, np.full(40, 1.5), y1 + h], axis=1)
    rois = np.concatenate([[[0, -1, -1, 2, height + 1]], rois])
    _check(x, rois, (9, 1), 2, True, threads=(1,))
    _check(x, rois, (5, 2), 0, False, threads=(1,))


def test_bands_rois_beside_the_map():
    """RoIs whose rows are in the map but whose columns are all off it (no sample lands):
    zeros, though their row taps lie in bands after the first (the tiles of such RoIs were
    once left holding an earlier RoI's sums there)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 20, 120, 160)).astype(np.float32)
    rois = [(n, x1, y1, x1 + rng.uniform(4, 200), y1 + rng.uniform(4, 150))
            for n, x1, y1 in zip(rng.integers(0, 2, 300), rng.uniform(-20, 320, 300),
                                 rng.uniform(-20, 240, 300))]
    rois += [(n, 326.3, y, 328.4, y + 56.2) for n in (0, 1) for y in (20.0, 134.5, 200.0)]
    for _ in range(3):  # later calls reuse the scratch of earlier ones
        _check(x, np.array(rois), (7, 7), 2, False)
