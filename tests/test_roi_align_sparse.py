"""The avg forward's image order gathering only the pixels its RoIs tap (a footprint of
row segments per image) gives torchvision's bits: RoIs clustered in a part of each image,
many enough to take the image order, with boxes partly off the map, empty, inverted or
spanning whole rows, every channel-block count, both dtypes, aligned or not, fixed or
adaptive sampling, one or more threads. tests/c/test_sparse_reads.c checks that nothing
else is read. A few small RoIs on a large map take the RoI-tile order instead (each RoI's
tapped pixels gathered into a small tile of the worker's): the same bits, and no scratch the
size of an image."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyroi

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")


def _clustered_rois(rng, images, height, width, per_image, dtype):
    """Boxes (in pixels) gathered round one spot of each image, some odd ones among them."""
    rois = []
    for n in range(images):
        cy, cx = rng.uniform(0, height), rng.uniform(0, width)
        for _ in range(per_image):
            y1, x1 = cy + rng.uniform(-12, 8), cx + rng.uniform(-30, 20)
            h, w = rng.uniform(-2, 14), rng.uniform(-4, 40)
            rois.append((n, x1, y1, x1 + w, y1 + h))
    rois.append((0, -5, 3, width + 5, 5))  # whole rows
    rois.append((images - 1, width - 3, height - 2, width + 9, height + 6))  # off the corner
    rois.append((0, 10, 10, 10, 10))  # a point
    return np.array(rois, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [3, 16, 40])
@pytest.mark.parametrize("aligned,sampling_ratio", [(True, 2), (False, 0), (True, 0)])
def test_sparse_image_order_matches_torchvision(dtype, channels, aligned, sampling_ratio):
    rng = np.random.default_rng([channels, int(aligned), sampling_ratio,
                                 np.dtype(dtype).itemsize])
    images, height, width = 2, 60, 150
    x = rng.standard_normal((images, channels, height, width)).astype(dtype)
    rois = _clustered_rois(rng, images, height, width, 14, dtype)
    expected = torchvision.ops.roi_align(torch.from_numpy(x), torch.from_numpy(rois), (5, 4),
                                         1.0, sampling_ratio, aligned).numpy()
    for threads in (1, 2):
        out = pyroi.roi_align(x, rois, (5, 4), 1.0, sampling_ratio, aligned,
                              num_threads=threads)
        assert out.tobytes() == expected.tobytes()


def _scattered_rois(rng, height, width, dtype):
    """A few small boxes (in pixels) anywhere in one image, and the odd ones: partly and
    wholly off the map, inverted, a point, a thin one as tall as the map."""
    rois = []
    for _ in range(6):
        y1, x1 = rng.uniform(-4, height), rng.uniform(-4, width)
        rois.append((0, x1, y1, x1 + rng.uniform(1, 30), y1 + rng.uniform(1, 20)))
    rois.append((0, width - 4, -6, width + 9, 5))  # over the top right corner
    rois.append((0, width + 3, 10, width + 20, 20))  # right of the map: no sample in it
    rois.append((0, 40, 30, 20, 12))  # inverted
    rois.append((0, 7, 9, 7, 9))  # a point
    rois.append((0, 3, -2, 5, height + 2))  # thin, every row
    return np.array(rois, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [1, 16, 17, 40])
@pytest.mark.parametrize("aligned,sampling_ratio", [(True, 2), (False, 0), (True, 0)])
def test_tile_order_matches_torchvision(dtype, channels, aligned, sampling_ratio):
    rng = np.random.default_rng([channels, int(aligned), sampling_ratio,
                                 np.dtype(dtype).itemsize, 3])
    height, width = 240, 300  # the RoIs' tiles: well under a quarter of the map
    x = rng.standard_normal((1, channels, height, 2 * width)).astype(dtype)
    rois = _scattered_rois(rng, height, width, dtype)
    for view in (x[..., :width], x[..., ::2]):  # packed rows, and every other column
        expected = torchvision.ops.roi_align(torch.from_numpy(np.ascontiguousarray(view)),
                                             torch.from_numpy(rois), (7, 6), 1.0,
                                             sampling_ratio, aligned).numpy()
        for threads in (1, 2):
            out = pyroi.roi_align(view, rois, (7, 6), 1.0, sampling_ratio, aligned,
                                  num_threads=threads)
            assert out.tobytes() == expected.tobytes()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux /proc")
def test_tile_order_needs_no_image_sized_scratch():
    """64 thin RoIs on a grid, each tapping 56 rows of a 31 MB map: gathered into a block the
    size of the image (30 MB per worker), their regions fault in a page per row and RoI
    (about 14 MB); their tiles need a few KB."""
    script = textwrap.dedent("""
        import numpy as np
        import pyroi

        def peak_kb():  # this process's peak RSS (getrusage's would include its parent's)
            with open("/proc/self/status") as status:
                return next(int(line.split()[1]) for line in status
                            if line.startswith("VmHWM:"))

        x = np.ones((1, 16, 700, 700), np.float32)
        x1, y1 = np.divmod(np.arange(64), 8)[0] * 85 + 5, np.arange(64) % 8 * 85 + 5
        boxes = np.stack([np.zeros(64), x1, y1, x1 + 4, y1 + 60], 1).astype(np.float32)
        out = np.ones((64, 16, 14, 14), np.float32)  # not part of the growth
        before = peak_kb()
        pyroi.roi_align(x, boxes, 14, 1.0, 2, True, num_threads=1, out=out)
        print(peak_kb() - before)
    """)
    grown_kb = int(subprocess.run([sys.executable, "-c", script], check=True,
                                  capture_output=True, text=True).stdout)
    assert grown_kb < 2 * 1024
