"""float16 RoIPool read and written in place. The forward's lane-major orders (image blocks,
RoI regions) widen the float16 pixels they gather and round each bin once as the tile is
written out. A bin is one of its pixels, -FLT_MAX (nothing above it) or 0 (empty), so every
result must be the float32 call's on the widened map, rounded once -- bit for bit, argmax
included, in every order, layout and thread count -- and the call needs no float32 copy of
the map or the output. The backward from an argmax does the same in its image blocks: each
RoI's run of gradients widened as it is added, each pixel's sum rounded once."""

import sys

import numpy as np
import pytest

import pyroi

import peak_memory


def _boxes(rng, k, height, width, scale, low, high, images=1):
    size = rng.uniform(low, high, (k, 2))
    corner = rng.uniform(-0.2, 1.1, (k, 2)) * (np.array([width, height]) / scale)
    return np.concatenate([rng.integers(0, images, (k, 1)), corner, corner + size],
                          axis=1).astype(np.float32)


def _map(rng, shape, specials=True):
    """float16 values with many ties (few distinct values), signed zeros, NaN and infinities"""
    x = (rng.integers(-6, 7, shape) * 0.25).astype(np.float16)
    if specials:
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, (4, max(1, flat.size // 50)))
        flat[picks[0]] = np.float16(-0.0)
        flat[picks[1]] = np.float16(np.nan)
        flat[picks[2]] = np.float16(-np.inf)
        flat[picks[3]] = np.float16(np.inf)
    return x


def _narrow(single):
    """the float16 bits of a float32 result (-FLT_MAX, nothing above it, rounds to -inf)"""
    with np.errstate(over="ignore"):
        return single.astype(np.float16).view(np.uint16)


def _assert_rounded_float32(x, boxes, output_size, scale, **kwargs):
    half, half_argmax = pyroi.roi_pool(x, boxes, output_size, scale, return_argmax=True,
                                       **kwargs)
    single, single_argmax = pyroi.roi_pool(x.astype(np.float32), boxes, output_size, scale,
                                           return_argmax=True, **kwargs)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half.view(np.uint16),
                                  _narrow(single))
    np.testing.assert_array_equal(half_argmax, single_argmax)
    value_only = pyroi.roi_pool(x, boxes, output_size, scale, **kwargs)
    np.testing.assert_array_equal(value_only.view(np.uint16), half.view(np.uint16))


# (map shape, boxes (k, smallest, largest side in input pixels), spatial scale, output size):
# many RoIs gather whole images; few RoIs on a larger map gather their regions
CASES = {
    "image_blocks": ((2, 40, 38, 50), (300, 4, 500), 1 / 16, 7),
    "image_blocks_odd_channels": ((1, 17, 19, 23), (60, 2, 300), 1 / 16, (3, 5)),
    "regions": ((2, 33, 200, 272), (5, 8, 60), 0.25, 7),
    "one_channel": ((1, 1, 30, 40), (10, 1, 100), 0.5, 2),
    "bins_larger_than_rois": ((1, 48, 12, 16), (40, 1, 20), 1.0, 9),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_orders_are_rounded_float32(name, threads, layout):
    shape, (k, low, high), scale, output_size = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    x = _map(rng, shape)
    boxes = _boxes(rng, k, shape[2], shape[3], scale, low, high, shape[0])
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    _assert_rounded_float32(x, boxes, output_size, scale, num_threads=threads)
    _assert_rounded_float32(x, boxes, output_size, scale, num_threads=threads,
                            argmax_dtype=np.int32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("offset", [0, 1, 13])
def test_streamed_outputs_are_rounded_float32(threads, offset):
    """Outputs above the L2 cache's size (float16 bytes) go out by streaming stores, with the int32
    or int64 argmax: the same bits, also into an `out=` that starts `offset` elements past a
    cache line (partial lines at the ends of every RoI's run)."""
    rng = np.random.default_rng(40 + offset)
    x = _map(rng, (1, 288, 38, 50))
    boxes = _boxes(rng, 320, 38, 50, 1 / 16, 4, 500)  # 320 x 288 x 49 x 2 B: 8.6 MiB
    _assert_rounded_float32(x, boxes, 7, 1 / 16, num_threads=threads)
    _assert_rounded_float32(x, boxes, 7, 1 / 16, num_threads=threads, argmax_dtype=np.int32)
    buffer = np.empty(320 * 288 * 49 + 64, np.float16)
    start = (-buffer.ctypes.data // 2) % 32 + offset
    target = buffer[start:start + 320 * 288 * 49].reshape(320, 288, 7, 7)
    pyroi.roi_pool(x, boxes, 7, 1 / 16, out=target, num_threads=threads)
    single = pyroi.roi_pool(x.astype(np.float32), boxes, 7, 1 / 16)
    np.testing.assert_array_equal(target.view(np.uint16), _narrow(single))


def test_strided_outputs_and_maps():
    rng = np.random.default_rng(5)
    x = _map(rng, (2, 37, 40, 50))
    boxes = _boxes(rng, 120, 40, 50, 0.5, 1, 90, 2)
    single = pyroi.roi_pool(x.astype(np.float32), boxes, (4, 3), 0.5)
    # an output whose channels are not one run (each bin row a run of its own)
    target = np.zeros((120, 37, 4, 6), np.float16)[:, :, :, ::2]
    pyroi.roi_pool(x, boxes, (4, 3), 0.5, out=target)
    np.testing.assert_array_equal(target.view(np.uint16),
                                  _narrow(single))
    # a map of every other pixel and channel
    wide = np.zeros((2, 74, 80, 100), np.float16)
    wide[:, ::2, ::2, ::2] = x
    view = wide[:, ::2, ::2, ::2]
    np.testing.assert_array_equal(pyroi.roi_pool(view, boxes, (4, 3), 0.5).view(np.uint16),
                                  _narrow(single))


def test_all_nan_bins_empty_bins_and_no_rois():
    x = np.full((1, 20, 8, 9), np.nan, np.float16)
    x[0, :, 0, 0] = -np.inf
    # on the map, entirely off it (empty bins: 0, argmax -1), and inverted
    boxes = np.array([[0, 0, 0, 8, 7], [0, 50, 50, 90, 90], [0, 6, 6, 1, 1]], np.float32)
    out, argmax = pyroi.roi_pool(x, boxes, 3, 1.0, return_argmax=True, num_threads=1)
    single, single_argmax = pyroi.roi_pool(x.astype(np.float32), boxes, 3, 1.0,
                                           return_argmax=True)
    np.testing.assert_array_equal(out.view(np.uint16), _narrow(single))
    np.testing.assert_array_equal(argmax, single_argmax)
    assert np.all(np.isneginf(out[0]))  # -FLT_MAX rounds to -inf in float16
    assert np.all(out[1] == 0) and np.all(argmax[1] == -1)
    empty = pyroi.roi_pool(x, np.zeros((0, 5), np.float32), 3, 1.0)
    assert empty.shape == (0, 20, 3, 3) and empty.dtype == np.float16


def test_signed_zero_ties_keep_the_first():
    x = np.zeros((1, 16, 4, 4), np.float16)
    x[0, ::2] = np.float16(-0.0)  # even channels: -0 first in row-major order, +0 later
    x[0, ::2, 3, 3] = 0.0
    x[0, 1::2, 0, 0] = 0.0        # odd channels: +0 first, -0 later
    x[0, 1::2, 1:, :] = np.float16(-0.0)
    boxes = np.array([[0, 0, 0, 3, 3]], np.float32)
    out = pyroi.roi_pool(x, boxes, 1, 1.0)
    assert np.all(np.signbit(out[0, ::2])) and not np.any(np.signbit(out[0, 1::2]))
    _assert_rounded_float32(x, boxes, 1, 1.0)


def test_map_too_large_for_blocks_runs_in_chunks():
    # a plane beyond the lane-major scratch: the direct order reads float32 chunks
    rng = np.random.default_rng(9)
    x = _map(rng, (1, 2, 1100, 1100), specials=False)
    boxes = _boxes(rng, 6, 1100, 1100, 1.0, 10, 400)
    _assert_rounded_float32(x, boxes, 3, 1.0, num_threads=2)


def _assert_backward_rounded_float32(grad, argmax, boxes, shape, output_size, scale,
                                     **kwargs):
    half = pyroi.roi_pool_backward(grad, boxes, argmax, shape, output_size, scale, **kwargs)
    single = pyroi.roi_pool_backward(grad.astype(np.float32), boxes, argmax, shape,
                                     output_size, scale)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half.view(np.uint16), _narrow(single))


# (map shape, RoIs, output size): image blocks kept until every argmax entry was read (a
# small map), and written out one at a time after a check of the argmax (blocks of every
# image and channel beyond the scratch limit)
BACKWARD_CASES = {
    "kept_blocks": ((2, 45, 19, 23), 200, (3, 5)),
    "blocks_written_per_item": ((2, 160, 200, 272), 600, 7),
}


@pytest.mark.parametrize("name", sorted(BACKWARD_CASES))
@pytest.mark.parametrize("argmax_dtype", [np.int64, np.int32])
def test_backward_is_rounded_float32(name, argmax_dtype):
    shape, k, output_size = BACKWARD_CASES[name]
    rng = np.random.default_rng(sorted(BACKWARD_CASES).index(name))
    x = _map(rng, shape)
    boxes = _boxes(rng, k, shape[2], shape[3], 0.25, 4, 400, shape[0])
    out, argmax = pyroi.roi_pool(x, boxes, output_size, 0.25, return_argmax=True,
                                 argmax_dtype=argmax_dtype)
    # sums that round, overflow to infinity, and NaN and infinite gradients
    grad = np.clip(rng.standard_normal(out.shape) * 2e4, -6e4, 6e4).astype(np.float16)
    grad.reshape(-1)[rng.integers(0, grad.size, 3)] = [np.nan, np.inf, -np.inf]
    for threads in (1, 2, 3):
        _assert_backward_rounded_float32(grad, argmax, boxes, shape, output_size, 0.25,
                                         num_threads=threads)


def test_backward_strided_gradients_and_bad_argmax():
    rng = np.random.default_rng(3)
    shape = (1, 40, 30, 20)
    x = _map(rng, shape)
    boxes = _boxes(rng, 150, 30, 20, 1.0, 1, 30)
    _, argmax = pyroi.roi_pool(x, boxes, 4, 1.0, return_argmax=True)
    # every other bin: the chunks' order, the same bits
    grad = (rng.standard_normal((150, 40, 4, 8)) * 100).astype(np.float16)[:, :, :, ::2]
    _assert_backward_rounded_float32(grad, argmax, boxes, shape, 4, 1.0)
    # a bad entry read in place: an error and grad_input left as it was
    grad = np.ascontiguousarray(grad)
    bad = argmax.copy()
    bad[149, 39, 3, 3] = 30 * 20
    target = np.full(shape, 7, np.float16)
    with pytest.raises(pyroi.PyroiError):
        pyroi.roi_pool_backward(grad, boxes, bad, shape, 4, 1.0, out=target)
    assert np.all(target == 7)


_PROGRAM = """
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 512, 38, 50), dtype=np.float32)
    boxes = image0_boxes(rng, 300, 400, 300, 800)
    for name, m in (("float32", x), ("float16", x.astype(np.float16))):
        out = np.ones((300, 512, 7, 7), m.dtype)
        print(name, extra_peak(lambda: pyroi.roi_pool(m, boxes, 7, 1 / 16, out=out,
                                                      num_threads=1))[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_forward_needs_no_float32_chunks():
    # widened chunks of the map and the output took 4 MB more than the float32 call's scratch
    extra = peak_memory.extra_by_label(_PROGRAM)
    assert extra["float16"] <= extra["float32"] + (1 << 20), extra
