"""The avg forward's image order gathering only the pixels its RoIs tap (a footprint of
row segments per image) gives torchvision's bits: RoIs clustered in a part of each image,
many enough to take the image order, with boxes partly off the map, empty, inverted or
spanning whole rows, every channel-block count, both dtypes, aligned or not, fixed or
adaptive sampling, one or more threads. tests/c/test_sparse_reads.c checks that nothing
else is read."""

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
