"""RoIAlign max mode (mmcv's definition) without argmax on channels-last features
(``layout="NHWC"``) sampled in place: when the channels are packed, each pixel is a whole number
of 64-byte lane groups apart and a bin's taps fit in the L1 cache, the value-only kernel reads
the caller's pixels RoI by RoI, pairs of lane groups bin by bin, and redoes a RoI that met a NaN
with the scalar rule. Its values must be the slow reference's (tests/test_roi_align_max.py) and
the NCHW call's, bit for bit, for every thread count and wherever the map starts (NumPy's large
arrays start 16 bytes past a cache line); other channel counts take the gathering orders."""

import numpy as np
import pytest

import pyroi
from conftest import random_rois
from test_roi_align_max import max_ref
from test_roi_align_max_orders import _assert_bits

# float32 lanes: 16 per group, float64: 8. Multiples are sampled in place (one group, a pair,
# pairs and a last single group); the others take the gathering orders.
CHANNELS = {np.float32: [16, 32, 48, 80, 17, 20], np.float64: [8, 16, 24, 5, 12]}
CASES = [(dtype, c) for dtype, counts in CHANNELS.items() for c in counts]
CASE_IDS = [f"{np.dtype(d).name}-C{c}" for d, c in CASES]


def _nhwc_at(nchw, offset):
    """nchw's values stored channels-last, starting `offset` elements into a fresh buffer
    (a start that is not on a cache line, nor on a vector, when offset is not 0)."""
    nhwc = nchw.transpose(0, 2, 3, 1)
    buffer = np.empty(nchw.size + offset, nchw.dtype)
    view = buffer[offset:].reshape(nhwc.shape)
    view[...] = nhwc
    return view


def _case(seed, dtype, channels, num_rois, height=13, width=17):
    rng = np.random.default_rng(seed)
    nchw = rng.standard_normal((2, channels, height, width)).astype(dtype)
    nchw[1, :, 4, 5] = np.nan  # a NaN pixel: the RoIs that sample it are redone
    nchw[0, channels - 1, 6, 7] = np.inf
    nchw[0, 0, 8, 2] = -np.inf
    boxes = random_rois(rng, 2, height, width, num_rois, dtype, spatial_scale=0.5)
    boxes[-1] = (1, 6, 4, 16, 14)  # around the NaN pixel (map coordinates: half of these)
    boxes[-2] = (0, -40, -40, -20, -30)  # off the map: every sample is worth 0
    boxes[-3] = (0, 30, 20, 100, 90)  # partly off the map
    return nchw, boxes


@pytest.mark.parametrize("offset", [0, 3])
@pytest.mark.parametrize("aligned,sampling_ratio", [(True, 2), (False, 0), (False, 1)])
@pytest.mark.parametrize("dtype,channels", CASES, ids=CASE_IDS)
def test_matches_reference_wherever_the_map_starts(dtype, channels, aligned, sampling_ratio,
                                                   offset):
    """Off-map, partly off-map, tiny and inverted boxes, NaN and infinite pixels, odd map
    sizes: the reference's bits, on 1, 2 and 3 threads."""
    nchw, boxes = _case(channels * 10 + sampling_ratio, dtype, channels, 24)
    with np.errstate(invalid="ignore"):
        expected, _ = max_ref(nchw, boxes, (3, 4), 0.5, sampling_ratio, aligned)
    assert np.isnan(expected).any() and np.isfinite(expected).any()
    nhwc = _nhwc_at(nchw, offset)
    for threads in (1, 2, 3):
        got = pyroi.roi_align(nhwc, boxes, (3, 4), 0.5, sampling_ratio, aligned, mode="max",
                              layout="NHWC", num_threads=threads)
        _assert_bits(got, expected)


@pytest.mark.parametrize("dtype,channels", [(np.float32, 256), (np.float32, 48),
                                            (np.float64, 40)])
def test_many_rois_equal_nchw(dtype, channels):
    """Many RoIs on wide pixels (1 KB for 256 float32 channels: the box head's), the same
    bytes as the NCHW call (pinned to the reference by tests/test_roi_align_max_orders.py)
    and as the call with argmax, on every thread count."""
    nchw, boxes = _case(channels, dtype, channels, 300, height=29, width=37)
    args = ((7, 7), 0.5, 2, True)
    expected = pyroi.roi_align(nchw, boxes, *args, mode="max", num_threads=1)
    with_argmax, _ = pyroi.roi_align(nchw, boxes, *args, mode="max", return_argmax=True)
    assert expected.tobytes() == with_argmax.tobytes()
    nhwc = _nhwc_at(nchw, 4)
    for threads in (1, 2, 3):
        got = pyroi.roi_align(nhwc, boxes, *args, mode="max", layout="NHWC",
                              num_threads=threads)
        assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_rois_and_empty_bins(dtype):
    """K = 0 gives an empty result; RoIs without samples give 0 in every bin."""
    nchw, boxes = _case(3, dtype, 32, 4)
    nhwc = _nhwc_at(nchw, 1)
    none = pyroi.roi_align(nhwc, boxes[:0], (2, 2), 1.0, 2, False, mode="max", layout="NHWC")
    assert none.shape[0] == 0
    # aligned boxes of zero size with an adaptive grid: no samples at all
    flat = np.array([[0, 3, 3, 3, 3], [1, 5, 2, 5, 2]], dtype)
    got = pyroi.roi_align(nhwc, flat, (2, 2), 1.0, 0, True, mode="max", layout="NHWC")
    expected, argmax = max_ref(nchw, flat, (2, 2), 1.0, 0, True)
    assert (argmax == -1).all()
    _assert_bits(got, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_of_both_infinite_signs_without_nan(dtype):
    """Samples near the largest value, positive on the left and negative on the right,
    overflow the kernel's per-lane NaN watch to +inf and -inf, whose sum is NaN although no
    sample is: the RoI is redone with the scalar rule and keeps the reference's bits."""
    big = np.finfo(dtype).max / 2
    x = np.full((1, 48, 8, 8), big, dtype)  # float32: a pair and a single lane group
    x[:, :, :, 4:] = -big
    x[:, 7] = -x[:, 7]  # one lane the other way round
    x[:, [20, 33], :4, :4] = np.inf  # and two with infinite taps
    rois = np.array([[0, 0.5, 0.5, 7.5, 7.5], [0, 0.5, 0.5, 7.5, 7.5]], dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        expected, _ = max_ref(x, rois, 2, 1.0, 2, False)
    assert np.isinf(expected[0, 33, 0, 0]) and not np.isnan(expected).any()
    for threads in (1, 2):
        got = pyroi.roi_align(_nhwc_at(x, 2), rois, 2, 1.0, 2, False, mode="max",
                              layout="NHWC", num_threads=threads)
        _assert_bits(got, expected)
