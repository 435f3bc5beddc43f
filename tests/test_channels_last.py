"""RoIAlign avg forward on channels-last features (``layout="NHWC"``) sampled in place: the
lane-major kernel reads the caller's pixels directly, RoI by RoI, when the channels are packed,
each pixel is a whole number of 64-byte lane groups apart and a bin's taps fit in the L1 cache;
other channel counts and strides, and many samples per bin, take the gathering orders. Both
must give torchvision's bits, on any thread count, and the in-place path must not allocate a
copy of the map, however many RoIs sample it."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyroi
from conftest import inverted_policy, random_rois

# float32 lanes: 16 per group, float64: 8. Multiples take the in-place kernel (one group, a
# pair, pairs and a single group); the others take the gathering orders.
CHANNELS = {np.float32: [16, 32, 48, 64, 3, 17, 20], np.float64: [8, 16, 24, 5, 12]}
CASES = [(dtype, c) for dtype, counts in CHANNELS.items() for c in counts]
CASE_IDS = [f"{np.dtype(d).name}-C{c}" for d, c in CASES]


def _case(seed, dtype, channels, aligned, sampling_ratio, num_rois, height=40, width=50):
    rng = np.random.default_rng(seed)
    nchw = rng.standard_normal((3, channels, height, width)).astype(dtype)
    nchw[1, :, 4, 5] = np.nan  # a NaN pixel: only the RoIs sampling it see NaN
    boxes = random_rois(rng, 3, height, width, num_rois, dtype, spatial_scale=0.5,
                        inverted=inverted_policy(aligned, sampling_ratio))
    boxes[-1] = (1, 6, 4, 16, 14)  # around the NaN pixel (map coordinates: half of these)
    return nchw, boxes


def _nhwc(nchw):
    return np.ascontiguousarray(nchw.transpose(0, 2, 3, 1))


# Few and many RoIs (fewer and more samples than pixels) are sampled in place.
@pytest.mark.parametrize("num_rois", [10, 400])
@pytest.mark.parametrize("aligned,sampling_ratio", [(True, 2), (False, 0), (True, 0),
                                                    (False, 3)])
@pytest.mark.parametrize("dtype,channels", CASES, ids=CASE_IDS)
def test_channels_last_matches_torchvision(tv, dtype, channels, aligned, sampling_ratio,
                                           num_rois):
    """Off-map, tiny, zero-size and inverted boxes, a NaN pixel: torchvision's bits."""
    nchw, boxes = _case(channels, dtype, channels, aligned, sampling_ratio, num_rois)
    expected = tv.roi_align(nchw, boxes, (3, 4), 0.5, sampling_ratio, aligned)
    got = pyroi.roi_align(_nhwc(nchw), boxes, (3, 4), 0.5, sampling_ratio, aligned,
                          layout="NHWC")
    assert np.isnan(expected).any() and np.isfinite(expected).any()
    np.testing.assert_array_equal(got, expected)


# 256 float32 channels (1 KB pixels): 4 samples per bin (4 KB of taps each) are sampled in
# place, 9 and adaptive grids of large boxes (16 and more) take the gathering orders.
@pytest.mark.parametrize("sampling_ratio", [2, 3, 0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channels_last_wide_pixels_either_order(tv, dtype, sampling_ratio):
    rng = np.random.default_rng(11)
    nchw = rng.standard_normal((2, 256, 24, 30)).astype(dtype)
    boxes = random_rois(rng, 2, 24, 30, 40, dtype, spatial_scale=0.5)
    boxes[0] = (1, 0, 0, 60, 48)  # the whole map: adaptive grids of 9 x 9 per bin
    expected = tv.roi_align(nchw, boxes, (5, 6), 0.5, sampling_ratio, True)
    np.testing.assert_array_equal(
        pyroi.roi_align(_nhwc(nchw), boxes, (5, 6), 0.5, sampling_ratio, True,
                        layout="NHWC"), expected)


@pytest.mark.parametrize("num_rois", [20, 600])
@pytest.mark.parametrize("dtype,channels", [(np.float32, 48), (np.float64, 24),
                                            (np.float32, 17)])
def test_channels_last_same_bits_on_any_thread_count(dtype, channels, num_rois):
    nchw, boxes = _case(7, dtype, channels, True, 2, num_rois)
    nhwc = _nhwc(nchw)
    one = pyroi.roi_align(nhwc, boxes, 7, 0.5, 2, True, layout="NHWC", num_threads=1)
    for threads in (2, 3, 8):
        np.testing.assert_array_equal(
            pyroi.roi_align(nhwc, boxes, 7, 0.5, 2, True, layout="NHWC", num_threads=threads),
            one)
    np.testing.assert_array_equal(one, pyroi.roi_align(nchw, boxes, 7, 0.5, 2, True))


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_channels_last_map_larger_than_the_l3_cache(tv, mode):
    """An image larger than the CPU's L3 cache: the in-place kernels (avg, and max without
    argmax) prefetch each next bin row's pixels
    (src/c/roi_align/roi_align_prefetch_template.h), a hint that must change no bit and read no
    list past its end. A RoI over the whole map with
    64 x 64 bins of 5 x 5 samples taps more distinct columns (about 640) than the prefetch
    keeps (256). avg is pinned to torchvision, max to the NCHW orders (pinned to mmcv in
    test_roi_align_max.py), a NaN pixel making one RoI redo its max channel by channel."""
    from pyroi import _core

    l3 = _core.cache_bytes(3) or 16 << 20  # the kernels' assumption where the CPU says nothing
    if l3 > 256 << 20:
        pytest.skip(f"an image larger than this CPU's {l3 >> 20} MB L3 cache is too large here")
    channels = 16  # 64-byte pixels: 25 samples per bin still fit the L1 cache (in place)
    side = int(np.ceil(np.sqrt(l3 / (channels * 4)))) + 8
    rng = np.random.default_rng(3)
    nhwc = rng.standard_normal((1, side, side, channels), dtype=np.float32)
    assert nhwc.nbytes > l3
    boxes = random_rois(rng, 1, side, side, 24, np.float32, spatial_scale=0.5)
    boxes[0] = (0, 0, 0, 2 * side, 2 * side)
    boxes[1] = (0, -40, -40, 2 * side + 40, 2 * side + 40)  # beyond every edge
    nchw = np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
    if mode == "avg":
        expected = tv.roi_align(nchw, boxes, 64, 0.5, 5, True)
    else:
        nhwc[0, 100, 100, 3] = nchw[0, 3, 100, 100] = np.nan
        expected = pyroi.roi_align(nchw, boxes, 64, 0.5, 5, True, mode="max")
        assert np.isnan(expected).any()
    for threads in (1, 2):
        np.testing.assert_array_equal(
            pyroi.roi_align(nhwc, boxes, 64, 0.5, 5, True, mode=mode, layout="NHWC",
                            num_threads=threads),
            expected)


@pytest.mark.parametrize("view", ["channel_slice", "row_padding", "column_step"])
def test_channels_last_views_read_in_place(tv, view):
    """Pixels further apart than their channels (a slice of a wider map's channels, padded
    rows, every other column): read where they are, same bits."""
    rng = np.random.default_rng(5)
    wide = rng.standard_normal((2, 40, 60, 64)).astype(np.float32)
    nhwc = {"channel_slice": wide[..., 16:48],
            "row_padding": wide[:, :, :53, :32],
            "column_step": wide[:, :, ::2, :32]}[view]
    boxes = random_rois(rng, 2, nhwc.shape[1], nhwc.shape[2], 8, np.float32)
    expected = tv.roi_align(np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2)), boxes, 5, 1.0,
                            2, True)
    np.testing.assert_array_equal(
        pyroi.roi_align(nhwc, boxes, 5, 1.0, 2, True, layout="NHWC"), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channels_last_without_rois_or_pixels(dtype):
    nhwc = np.ones((2, 9, 7, 32), dtype)
    out = pyroi.roi_align(nhwc, np.zeros((0, 5), dtype), 3, layout="NHWC")
    assert out.shape == (0, 32, 3, 3)
    empty = np.ones((2, 0, 7, 32), dtype)  # no rows: every sample is off the map
    boxes = np.array([[1, 0, 0, 4, 4]], dtype)
    np.testing.assert_array_equal(pyroi.roi_align(empty, boxes, 3, layout="NHWC"),
                                  np.zeros((1, 32, 3, 3), dtype))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux /proc")
@pytest.mark.parametrize("num_rois", [200, 3000])
def test_channels_last_allocates_no_copy_of_the_map(num_rois):
    """A 64 MB map whose every pixel the RoIs sample, 200 RoIs (0.08 samples per pixel) or
    3000 (1.2, the box head's density): the gathering orders would copy it into a lane block
    (32 MB per worker); the in-place kernel needs only bin tiles."""
    script = textwrap.dedent("""
        import numpy as np
        import pyroi

        def peak_kb():  # this process's peak RSS (getrusage's would include its parent's)
            with open("/proc/self/status") as status:
                return next(int(line.split()[1]) for line in status
                            if line.startswith("VmHWM:"))

        rng = np.random.default_rng(0)
        nhwc = rng.standard_normal((1, 500, 1000, 32), dtype=np.float32)
        corners = rng.uniform(0, 1, (NUM_ROIS, 2)) * [900, 400]  # x1, y1: in the map
        boxes = np.concatenate([np.zeros((NUM_ROIS, 1)), corners, corners + 100], 1)
        boxes = boxes.astype(np.float32)
        out = np.ones((NUM_ROIS, 32, 7, 7), np.float32)  # not part of the growth
        before = peak_kb()
        pyroi.roi_align(nhwc, boxes, 7, 1.0, 2, True, layout="NHWC", num_threads=1, out=out)
        print(peak_kb() - before)
    """).replace("NUM_ROIS", str(num_rois))
    grown_kb = int(subprocess.run([sys.executable, "-c", script], check=True,
                                  capture_output=True, text=True).stdout)
    assert grown_kb < 16 * 1024
