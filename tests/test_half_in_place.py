"""float16 RoIAlign read and written in place: the avg forward's lane-major orders (image
blocks, row bands, RoI regions and tiles, gathered footprints) widen the float16 pixels they
gather and round each bin once as they store it; the backward's image order widens each RoI's
output gradients as it loads them and rounds grad_input once as it writes it out (streamed
when large), its RoI-region order (few boxes) sums each image's regions in a float32 block and
rounds them once into grad_input; the max
forwards (mmcv's and ONNX's, with their argmax) do as the avg forward in their image and
region orders. Every result must be the float32 call's on the widened tensor, rounded once --
bit for bit, in every order and layout -- and the calls must need no chunk of float32 scratch
beyond the float32 call's own."""

import sys
import textwrap

import numpy as np
import pytest

import pyroi
import pyroi.onnx

import peak_memory


def _boxes(rng, k, height, width, scale, low, high, images=1):
    size = rng.uniform(low, high, (k, 2))
    corner = rng.uniform(0, 1, (k, 2)) * (np.array([width, height]) / scale - size)
    return np.concatenate([rng.integers(0, images, (k, 1)), corner, corner + size],
                          axis=1).astype(np.float32)


# (map shape, boxes (k, smallest, largest side in input pixels), spatial scale, output size,
# sampling ratio): each case leads the forward to another loop order on this machine's caches
CASES = {
    "image_blocks": ((2, 40, 50, 68), (300, 8, 200), 0.25, 7, 2),
    "image_pairs_small_map": ((1, 48, 19, 25), (60, 4, 100), 0.25, 7, 2),
    "row_bands_large_bins": ((1, 32, 200, 272), (40, 100, 700), 0.25, 14, 2),
    "footprint_few_rois": ((2, 33, 200, 272), (24, 16, 64), 0.25, 7, 2),
    "regions_and_tiles": ((1, 17, 300, 400), (3, 8, 40), 0.25, 7, 2),
    "adaptive_sampling": ((1, 20, 60, 80), (30, 10, 300), 0.25, (3, 5), 0),
    "one_channel": ((1, 1, 30, 40), (10, 4, 100), 0.25, 2, 3),
}


def _assert_same_bits(call, tensor, *args, **kwargs):
    """call on the float16 tensor == call on it widened to float32, rounded once"""
    half = call(tensor, *args, **kwargs)
    single = call(tensor.astype(np.float32), *args, **kwargs)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half.view(np.uint16),
                                  single.astype(np.float16).view(np.uint16))


def _assert_rounded_float32(x, boxes, output_size, scale, ratio, **kwargs):
    _assert_same_bits(pyroi.roi_align, x, boxes, output_size, scale, ratio, True, **kwargs)


def _assert_backward_rounded_float32(grad, boxes, shape, scale, ratio, **kwargs):
    _assert_same_bits(pyroi.roi_align_backward, grad, boxes, shape, scale, ratio, True,
                      **kwargs)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("backward", [False, True])
def test_orders_are_rounded_float32(name, threads, backward):
    shape, (k, low, high), scale, output_size, ratio = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    boxes = _boxes(rng, k, shape[2], shape[3], scale, low, high, shape[0])
    if not backward:
        x = (rng.standard_normal(shape) * 100).astype(np.float16)
        _assert_rounded_float32(x, boxes, output_size, scale, ratio, num_threads=threads)
        return
    size = (output_size, output_size) if np.isscalar(output_size) else output_size
    grad = (rng.standard_normal((k, shape[1]) + tuple(size)) * 100).astype(np.float16)
    _assert_backward_rounded_float32(grad, boxes, shape, scale, ratio, num_threads=threads)


def _max_forwards(x, boxes, output_size, scale, ratio, threads):
    """{name: (values, argmax or None)} of every max forward on x"""
    images = boxes[:, 0].astype(np.int64)
    rois = np.ascontiguousarray(boxes[:, 1:])
    size = (output_size, output_size) if np.isscalar(output_size) else output_size
    onnx = {"output_height": size[0], "output_width": size[1], "sampling_ratio": ratio,
            "spatial_scale": scale, "mode": "max", "num_threads": threads}
    return {
        "max": (pyroi.roi_align(x, boxes, output_size, scale, ratio, True, mode="max",
                                num_threads=threads), None),
        "max_argmax": pyroi.roi_align(x, boxes, output_size, scale, ratio, True, mode="max",
                                      return_argmax=True, num_threads=threads),
        "onnx_max": (pyroi.onnx.roi_align(x, rois, images, **onnx), None),
        "onnx_max_argmax": pyroi.onnx.roi_align(x, rois, images, return_argmax=True, **onnx),
    }


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 2])
def test_max_forwards_are_rounded_float32(name, threads):
    shape, (k, low, high), scale, output_size, ratio = CASES[name]
    rng = np.random.default_rng(100 + sorted(CASES).index(name))
    boxes = _boxes(rng, k, shape[2], shape[3], scale, low, high, shape[0])
    boxes[::5, 1:] -= 40  # samples off the map (ONNX max's zero term, mmcv's skipped ones)
    x = np.clip(rng.standard_normal(shape) * 100, -65504, 65504).astype(np.float16)
    x.reshape(-1)[rng.integers(0, x.size, 30)] = np.nan
    x.reshape(-1)[rng.integers(0, x.size, 30)] = -np.inf
    x.reshape(-1)[rng.integers(0, x.size, 30)] = -0.0
    half = _max_forwards(x, boxes, output_size, scale, ratio, threads)
    single = _max_forwards(x.astype(np.float32), boxes, output_size, scale, ratio, threads)
    for call, (values, argmax) in half.items():
        assert values.dtype == np.float16, call
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(values.view(np.uint16),
                                          single[call][0].astype(np.float16).view(np.uint16),
                                          err_msg=call)
        if argmax is not None:
            np.testing.assert_array_equal(argmax, single[call][1], err_msg=call)


def _assert_max_forwards_rounded_float32(x, boxes, output_size, scale, ratio, threads):
    half = _max_forwards(x, boxes, output_size, scale, ratio, threads)
    single = _max_forwards(x.astype(np.float32), boxes, output_size, scale, ratio, threads)
    for call, (values, argmax) in half.items():
        np.testing.assert_array_equal(values.view(np.uint16),
                                      single[call][0].astype(np.float16).view(np.uint16),
                                      err_msg=call)
        if argmax is not None:
            np.testing.assert_array_equal(argmax, single[call][1], err_msg=call)


@pytest.mark.parametrize("threads", [1, 2])
def test_max_forwards_strided_broadcast_and_channels_last(threads):
    rng = np.random.default_rng(8)
    base = (rng.standard_normal((2, 37, 41, 53)) * 10).astype(np.float16)
    boxes = _boxes(rng, 200, 41, 53, 0.5, 2, 80, 2)
    boxes[::9, 1:] -= 30  # partly or wholly off the map
    # channels-last memory (NCHW view), channel- and row-strided views, a batch and a channel
    # broadcast (stride 0)
    for x in (np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
              base[:, ::2], base[:, :, ::2, 1:], np.broadcast_to(base[:1], base.shape),
              np.broadcast_to(base[:, :1], base.shape)):
        _assert_max_forwards_rounded_float32(x, boxes, 5, 0.5, 2, threads)
    nhwc = np.ascontiguousarray(base.transpose(0, 2, 3, 1))
    for argmax in (False, True):
        half = pyroi.roi_align(nhwc, boxes, 5, 0.5, 2, True, mode="max", layout="NHWC",
                               return_argmax=argmax, num_threads=threads)
        single = pyroi.roi_align(nhwc.astype(np.float32), boxes, 5, 0.5, 2, True, mode="max",
                                 layout="NHWC", return_argmax=argmax, num_threads=threads)
        half, single = (half, single) if argmax else ((half, None), (single, None))
        np.testing.assert_array_equal(half[0].view(np.uint16),
                                      single[0].astype(np.float16).view(np.uint16))
        np.testing.assert_array_equal(half[1], single[1])


def test_max_forwards_into_strided_outputs():
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((1, 19, 30, 40)) * 10).astype(np.float16)
    boxes = _boxes(rng, 80, 30, 40, 1.0, 1, 30)
    images = boxes[:, 0].astype(np.int64)
    single = _max_forwards(x.astype(np.float32), boxes, 4, 1.0, 2, 1)
    target = np.full((80, 38, 4, 4), 7, np.float16)
    pyroi.roi_align(x, boxes, 4, 1.0, 2, True, mode="max", out=target[:, ::2])
    pyroi.onnx.roi_align(x, np.ascontiguousarray(boxes[:, 1:]), images, mode="max",
                         output_height=4, output_width=4, sampling_ratio=2, out=target[:, 1::2])
    np.testing.assert_array_equal(target[:, ::2].view(np.uint16),
                                  single["max"][0].astype(np.float16).view(np.uint16))
    np.testing.assert_array_equal(target[:, 1::2].view(np.uint16),
                                  single["onnx_max"][0].astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("threads", [1, 2])
def test_max_forwards_on_maps_too_large_for_blocks(threads):
    # a map of over a million pixels has no lane-major block per worker: the direct order
    # would read the float16 map where it lies, so the calls run in chunks, with the same
    # results and argmax
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((1, 3, 1030, 1040)) * 10).astype(np.float16)
    boxes = _boxes(rng, 12, 1030, 1040, 1.0, 4, 300)
    boxes[::4, 1:] -= 60
    _assert_max_forwards_rounded_float32(x, boxes, 3, 1.0, 2, threads)


def test_backward_strided_and_specials():
    rng = np.random.default_rng(7)
    shape = (2, 24, 41, 53)
    boxes = _boxes(rng, 300, 41, 53, 0.5, 2, 60, 2)
    boxes[::7, 1:] -= 30
    grad = (rng.standard_normal((600, 48, 5, 5)) * 3e3).astype(np.float16)
    grad[3, 1] = np.inf
    grad[4, 2, 1] = np.nan
    grad[5:9] = np.float16(6e-8)
    for g in (grad[::2, ::2], grad[:300, :24], np.ascontiguousarray(grad[:300, :24])):
        _assert_backward_rounded_float32(g, boxes, shape, 0.5, 2, num_threads=1)
    with np.errstate(over="ignore"):  # sums beyond float16's range round to infinity
        big = (grad[:300, :24].astype(np.float32) * 30).clip(-65504, 65504).astype(np.float16)
        _assert_backward_rounded_float32(big, boxes, shape, 0.5, 2, num_threads=2)
    for layout_out in (np.empty((2, 41, 53, 48), np.float16)[..., ::2].transpose(0, 3, 1, 2),
                       np.empty((2, 24, 82, 53), np.float16)[:, :, ::2]):
        pyroi.roi_align_backward(grad[:300, :24], boxes, shape, 0.5, 2, True, out=layout_out)
        single = pyroi.roi_align_backward(grad[:300, :24].astype(np.float32), boxes, shape,
                                          0.5, 2, True)
        np.testing.assert_array_equal(layout_out.view(np.uint16),
                                      single.astype(np.float16).view(np.uint16))


def test_forward_strided_channels_last_and_out_of_map():
    rng = np.random.default_rng(5)
    base = (rng.standard_normal((2, 24, 41, 53)) * 10).astype(np.float16)
    boxes = _boxes(rng, 50, 41, 53, 0.5, 2, 60, 2)
    boxes[::7, 1:] -= 30  # partly or wholly off the map
    # channels-last memory (NCHW view), a channel-strided view, a row-strided view
    for x in (np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
              base[:, ::2], base[:, :, ::2, 1:]):
        _assert_rounded_float32(x, boxes, 5, 0.5, 2, num_threads=1)
    nhwc = np.ascontiguousarray(base.transpose(0, 2, 3, 1))
    half = pyroi.roi_align(nhwc, boxes, 5, 0.5, 2, True, layout="NHWC")
    single = pyroi.roi_align(nhwc.astype(np.float32), boxes, 5, 0.5, 2, True, layout="NHWC")
    np.testing.assert_array_equal(half.view(np.uint16),
                                  single.astype(np.float16).view(np.uint16))


def test_forward_specials_and_rounding_edges():
    rng = np.random.default_rng(6)
    # large values (up to 65504: bins near it round to infinity), infinities, NaN, subnormals
    x = np.clip(rng.standard_normal((1, 20, 30, 40)) * 3e4, -65504, 65504).astype(np.float16)
    x[0, 3, 5:9, 5:9] = np.inf
    x[0, 4, 10, 10] = -np.inf
    x[0, 5, 12:20, 12] = np.nan
    x[0, 6] = np.float16(6e-8)  # subnormals
    x[0, 7, ::2] = -0.0
    boxes = _boxes(rng, 64, 30, 40, 1.0, 1, 30)
    with np.errstate(over="ignore"):
        _assert_rounded_float32(x, boxes, 4, 1.0, 2, num_threads=1)
        target = np.empty((64, 40, 4, 4), np.float16)[:, ::2]  # strided output
        pyroi.roi_align(x, boxes, 4, 1.0, 2, True, out=target)
        np.testing.assert_array_equal(
            target.view(np.uint16),
            pyroi.roi_align(x.astype(np.float32), boxes, 4, 1.0, 2, True).astype(
                np.float16).view(np.uint16))


_PROGRAM = """
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 64, 256, 256), dtype=np.float32)
    boxes = image0_boxes(rng, 400, 800, 200, 1024)
    for name, m in (("float32", x), ("float16", x.astype(np.float16))):
        out = np.ones((400, 64, 7, 7), m.dtype)
        print("forward", name, extra_peak(lambda: pyroi.roi_align(
            m, boxes, 7, 0.25, 2, True, out=out, num_threads=1))[0])
        grad_input = np.ones(m.shape, m.dtype)
        print("backward", name, extra_peak(lambda: pyroi.roi_align_backward(
            out, boxes, m.shape, 0.25, 2, True, out=grad_input, num_threads=1))[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_calls_need_no_float32_chunks():
    # the float32 call's own scratch is all the float16 call needs besides its result; widened
    # chunks of 16 channels of the map (4 MiB) and of the pooled tensor (1.2 MiB) took more
    extra = peak_memory.extra_by_label(_PROGRAM)
    for call in ("forward", "backward"):
        assert extra[call, "float16"] <= extra[call, "float32"] + (1 << 20), extra


# the max calls' case: a 64-channel map of 256 x 256, 400 boxes (DTYPE set by the caller)
_MAX_CASE = """
    import pyroi.onnx
    rng = np.random.default_rng(0)
    m = rng.standard_normal((1, 64, 256, 256), dtype=np.float32).astype(DTYPE)
    boxes = image0_boxes(rng, 400, 800, 200, 1024)
    rois, images = np.ascontiguousarray(boxes[:, 1:]), np.zeros(400, np.int64)
"""

_MAX_PROGRAM = _MAX_CASE + """
    onnx = dict(mode="max", output_height=7, output_width=7, sampling_ratio=2,
                spatial_scale=0.25, num_threads=1)
    out = np.ones((400, 64, 7, 7), m.dtype)
    print("max", extra_peak(lambda: pyroi.roi_align(
        m, boxes, 7, 0.25, 2, True, mode="max", out=out, num_threads=1))[0])
    print("max_argmax", extra_peak(lambda: pyroi.roi_align(
        m, boxes, 7, 0.25, 2, True, mode="max", return_argmax=True, out=out,
        num_threads=1))[0])
    print("onnx_max", extra_peak(lambda: pyroi.onnx.roi_align(
        m, rois, images, out=out, **onnx))[0])
    print("onnx_max_argmax", extra_peak(lambda: pyroi.onnx.roi_align(
        m, rois, images, return_argmax=True, out=out, **onnx))[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_max_forwards_need_no_float32_chunks():
    # as the avg calls: chunks of 16 channels of the map and the pooled tensor took 5 MiB more.
    # One interpreter per dtype: the returned argmax's allocation then maps alike in both
    extra = peak_memory.extra_by_dtype(_MAX_PROGRAM)
    for call in ("max", "max_argmax", "onnx_max", "onnx_max_argmax"):
        assert extra[call, "float16"] <= extra[call, "float32"] + (1 << 20), extra


# ---- the multi-level RoIAlign (MultiScaleRoIAlign), level by level in place ----------------

def _pyramid_case(rng, channels, sizes, count, batch=2):
    features = {str(i): (rng.standard_normal((batch, channels, h, w)) * 50).astype(np.float16)
                for i, (h, w) in enumerate(sizes)}
    corner = rng.uniform(-20, 4 * sizes[0][1], (count, 2))
    side = np.exp(rng.uniform(np.log(2), np.log(16 * sizes[0][0]), (count, 2)))
    boxes = np.concatenate([corner, corner + side], axis=1).astype(np.float32)
    boxes[0] = [50, 50, 40, 60]  # inverted: no level, a zero row
    return features, [boxes[i::batch] for i in range(batch)]


# (channels, level sizes, boxes): many boxes (every level in image blocks), a level without
# boxes (its gradient zero), few boxes on large maps (the backward's levels in RoI regions),
# and a level too large for a block per worker (its direct order reads and adds to the map
# where it lies: the whole call in chunks)
LEVEL_CASES = {
    "image_blocks": (24, [(64, 80), (32, 40), (16, 20), (8, 10)], 400),
    "empty_level": (17, [(40, 40), (20, 20), (10, 10), (5, 5)], 60),
    "few_boxes_large_maps": (16, [(200, 272), (100, 136), (50, 68), (25, 34)], 6),
    "level_too_large_for_blocks": (3, [(1030, 1040), (515, 520)], 8),
}


@pytest.mark.parametrize("name", sorted(LEVEL_CASES))
@pytest.mark.parametrize("threads", [1, 2])
def test_levels_are_rounded_float32(name, threads):
    channels, sizes, count = LEVEL_CASES[name]
    rng = np.random.default_rng(200 + sorted(LEVEL_CASES).index(name))
    features, boxes = _pyramid_case(rng, channels, sizes, count)
    names = sorted(features)
    shapes = [(4 * sizes[0][0], 4 * sizes[0][1])] * 2
    half = pyroi.MultiScaleRoIAlign(names, 7, 2)
    single = pyroi.MultiScaleRoIAlign(names, 7, 2)
    y16 = half(features, boxes, shapes, num_threads=threads)
    y32 = single({k: v.astype(np.float32) for k, v in features.items()}, boxes, shapes)
    assert y16.dtype == np.float16
    np.testing.assert_array_equal(y16.view(np.uint16), y32.astype(np.float16).view(np.uint16))
    with np.errstate(over="ignore"):
        grad = np.clip(rng.standard_normal(y16.shape) * 3e3, -6e4, 6e4).astype(np.float16)
        g16 = half.backward(grad, num_threads=threads)
        g32 = single.backward(grad.astype(np.float32))
        for level in names:
            np.testing.assert_array_equal(g16[level].view(np.uint16),
                                          g32[level].astype(np.float16).view(np.uint16),
                                          err_msg=level)


_LEVELS_PROGRAM = """
    rng = np.random.default_rng(0)
    sizes = [(100, 136), (50, 68), (25, 34), (13, 17)]
    maps = {str(i): rng.standard_normal((2, 64, h, w), dtype=np.float32)
            for i, (h, w) in enumerate(sizes)}
    corner = rng.uniform(0, 500, (1000, 2))
    boxes = np.concatenate([corner, corner + rng.uniform(8, 300, (1000, 2))], 1)
    boxes = [b.astype(np.float32) for b in (boxes[:500], boxes[500:])]
    for name, dtype in (("float32", np.float32), ("float16", np.float16)):
        pooler = pyroi.MultiScaleRoIAlign(sorted(maps), 7, 2)
        pyramid = {k: v.astype(dtype) for k, v in maps.items()}
        out = pooler(pyramid, boxes, [(800, 1088)] * 2)
        print("forward", name, extra_peak(lambda: pooler(pyramid, boxes, [(800, 1088)] * 2,
                                                         num_threads=1))[0])
        grad = np.ones_like(out)
        print("backward", name, extra_peak(lambda: pooler.backward(grad, num_threads=1))[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_levels_need_no_float32_chunks():
    # chunks of 16 channels of every level (and of the pooled tensor) took 4.5 MiB more
    extra = peak_memory.extra_by_label(_LEVELS_PROGRAM)
    for call in ("forward", "backward"):
        assert extra[call, "float16"] <= extra[call, "float32"] + (1 << 20), extra


def _strided_pyramid(rng, channels, sizes, batch=2):
    """float16 maps as views that no contiguous copy has: every other channel of a padded
    buffer, channels-last, and one contiguous"""
    maps = []
    for i, (h, w) in enumerate(sizes):
        if i % 3 == 0:
            wide = rng.standard_normal((batch, 2 * channels, h, w + 3)) * 50
            maps.append(wide.astype(np.float16)[:, ::2, :, 1:w + 1])
        elif i % 3 == 1:
            last = rng.standard_normal((batch, h, w, channels)) * 50
            maps.append(last.astype(np.float16).transpose(0, 3, 1, 2))
        else:
            maps.append((rng.standard_normal((batch, channels, h, w)) * 50).astype(np.float16))
    return maps


def _padded(shape, fill):
    """a float16 view of shape inside a buffer padded in every dimension, filled with fill"""
    buffer = np.full([n + 2 for n in shape], fill, np.float16)
    return buffer, buffer[tuple(slice(1, n + 1) for n in shape)]


@pytest.mark.parametrize("threads", [1, 2])
def test_levels_strided_tensors_in_place(threads):
    """The levels' call on strided maps, a strided pooled tensor and strided gradients: bit
    for bit the float32 call on the widened tensors, rounded once, nothing written outside
    the views. Sides of 8-200 px on a 160 x 200 image: levels 2 and 3 get boxes (many, in image
    blocks), level 4 none (its gradient zero); two inverted boxes have no level (zero rows)."""
    from pyroi import _core

    rng = np.random.default_rng(77)
    channels, sizes, scales = 13, [(40, 50), (20, 25), (10, 13)], [0.25, 0.125, 0.0625]
    maps = _strided_pyramid(rng, channels, sizes)
    corner = rng.uniform(-10, 180, (300, 2))
    coords = np.concatenate([corner, corner + rng.uniform(8, 200, (300, 2))], 1)
    coords[[5, 140]] = [70, 70, 60, 90]
    coords = coords.astype(np.float32)
    images = rng.integers(0, 2, 300).astype(np.int64)
    mapping = (2, 4, 224.0, 4.0, 1e-6)
    shape = (300, channels, 7, 7)
    y32 = np.empty(shape, np.float32)
    _core.roi_align_levels_forward([m.astype(np.float32) for m in maps], scales, coords,
                                   images, y32, 2, False, *mapping, 1)
    buffer, y16 = _padded(shape, 7.0)
    _core.roi_align_levels_forward([m.view(np.uint16) for m in maps], scales, coords, images,
                                   y16.view(np.uint16), 2, False, *mapping, threads)
    np.testing.assert_array_equal(y16.view(np.uint16), y32.astype(np.float16).view(np.uint16))
    assert np.all(y16[[5, 140]] == 0)
    y16[...] = 7.0
    assert np.all(buffer == 7.0)  # nothing written outside the view
    with np.errstate(over="ignore"):
        grad = np.clip(rng.standard_normal(shape) * 3e3, -6e4, 6e4).astype(np.float16)
    grad_view = np.zeros((300, channels, 9, 8), np.float16)[:, :, 1:8, :7]
    grad_view[...] = grad
    g32 = [np.empty(m.shape, np.float32) for m in maps]
    _core.roi_align_levels_backward(grad.astype(np.float32), coords, images, g32, scales, 2,
                                    False, *mapping, 1)
    padded = [_padded(m.shape, 7.0) for m in maps]
    _core.roi_align_levels_backward(grad_view.view(np.uint16), coords, images,
                                    [g.view(np.uint16) for _, g in padded], scales, 2, False,
                                    *mapping, threads)
    for level, ((buffer, half), single) in enumerate(zip(padded, g32)):
        np.testing.assert_array_equal(half.view(np.uint16),
                                      single.astype(np.float16).view(np.uint16),
                                      err_msg=str(level))
        assert (level == 2) == (not np.any(single)), level
        half[...] = 7.0
        assert np.all(buffer == 7.0), level


# ---- the backward's RoI-region order (few boxes on a large map) and streamed write-out -----

def _region_boxes(rng, shape, k=6):
    """few boxes whose samples tap less than a 64th of the map's pixels (output 3 x 3, 2 x 2
    samples a bin): the backward takes the RoI-region order. On both images: a box twice, a
    box inside another (overlapping sums), boxes partly off the map at either side and one
    wholly off it (no taps: zeros)."""
    boxes = _boxes(rng, k, shape[2], shape[3], 0.5, 10, 150, shape[0])
    boxes[1] = boxes[0]
    boxes[2, 1:] = boxes[0, 1:] + np.array([2, 3, -1, -2], np.float32)
    boxes[3, 1:] = [-30, -20, 40, 50]
    boxes[4, 1:] = [2 * shape[3] - 40, 2 * shape[2] - 30, 2 * shape[3] + 60, 2 * shape[2] + 9]
    boxes[5, 1:] = [-90, -90, -50, -60]
    assert boxes[:, 0].min() == 0 and boxes[:, 0].max() == shape[0] - 1
    return boxes


def _region_grad(rng, boxes, channels, scale=100.0):
    grad = rng.standard_normal((len(boxes), channels, 3, 3)) * scale
    return grad.clip(-65504, 65504).astype(np.float16)


REGION_SHAPE = (2, 37, 160, 200)  # three lane blocks, the last of 5 channels


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_backward_regions_are_rounded_float32(threads):
    rng = np.random.default_rng(20 + threads)
    boxes = _region_boxes(rng, REGION_SHAPE)
    grad = _region_grad(rng, boxes, REGION_SHAPE[1])
    _assert_backward_rounded_float32(grad, boxes, REGION_SHAPE, 0.5, 2, num_threads=threads)
    # sums that round to infinity, infinite and NaN gradients, subnormal ones
    big = _region_grad(rng, boxes, REGION_SHAPE[1], 3e4)
    big[0, 3] = np.inf
    big[1, 4, 1] = np.nan
    big[2, 5] = np.float16(6e-8)
    with np.errstate(over="ignore", invalid="ignore"):
        _assert_backward_rounded_float32(big, boxes, REGION_SHAPE, 0.5, 2, num_threads=threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_backward_regions_strided_and_without_boxes(threads):
    rng = np.random.default_rng(30 + threads)
    boxes = _region_boxes(rng, REGION_SHAPE)
    grad = _region_grad(rng, boxes, 2 * REGION_SHAPE[1])
    single = pyroi.roi_align_backward(grad[:, ::2].astype(np.float32), boxes, REGION_SHAPE,
                                      0.5, 2, True, num_threads=threads).astype(np.float16)
    n, c, h, w = REGION_SHAPE
    # channel-strided gradients into: every other channel, rows inside wider rows, and
    # channels-last memory; every element outside the view keeps its value
    buffers = (np.full((n, 2 * c, h, w), 7, np.float16), np.full((n, c, h, w + 3), 7, np.float16),
               np.full((n, h, w, c), 7, np.float16))
    views = (buffers[0][:, 1::2], buffers[1][..., 1:w + 1], buffers[2].transpose(0, 3, 1, 2))
    for buffer, view in zip(buffers, views):
        before = buffer.copy()
        pyroi.roi_align_backward(grad[:, ::2], boxes, REGION_SHAPE, 0.5, 2, True, out=view,
                                 num_threads=threads)
        np.testing.assert_array_equal(view.view(np.uint16), single.view(np.uint16))
        view[...] = 7
        np.testing.assert_array_equal(buffer.view(np.uint16), before.view(np.uint16))
    # no boxes: a zero gradient (+0.0), written over whatever was there
    target = np.full(REGION_SHAPE, np.nan, np.float16)
    pyroi.roi_align_backward(grad[:0, ::2], boxes[:0], REGION_SHAPE, 0.5, 2, True, out=target,
                             num_threads=threads)
    assert not target.view(np.uint16).any()


@pytest.mark.parametrize("threads", [1, 2])
def test_backward_streamed_at_every_line_offset(threads):
    # a float16 grad_input larger than the L2 cache is rounded out with streaming stores in whole
    # 64-byte lines, its runs aligned to channel 0's lines: gradients at element offsets
    # across a line (planes 368 elements apart: every channel at another offset) and in rows
    # of a wider buffer (a run per row) must hold the same bits, and nothing outside them
    rng = np.random.default_rng(40 + threads)
    shape = (1, 32, 360, 368)
    boxes = _boxes(rng, 60, shape[2], shape[3], 0.25, 16, 600)
    boxes[::7, 1:] -= 100
    grad = (rng.standard_normal((60, 32, 7, 7)) * 100).astype(np.float16)
    single = pyroi.roi_align_backward(grad.astype(np.float32), boxes, shape, 0.25, 2, True,
                                      num_threads=threads).astype(np.float16)
    size = int(np.prod(shape))
    flat = np.full(size + 64, 7, np.float16)
    for offset in (0, 1, 5, 16, 31, 33):
        flat[...] = 7
        target = flat[offset:offset + size].reshape(shape)
        pyroi.roi_align_backward(grad, boxes, shape, 0.25, 2, True, out=target,
                                 num_threads=threads)
        np.testing.assert_array_equal(target.view(np.uint16), single.view(np.uint16),
                                      err_msg=str(offset))
        assert (flat[:offset] == 7).all() and (flat[offset + size:] == 7).all()
    wide = np.full(shape[:3] + (shape[3] + 5,), 7, np.float16)
    pyroi.roi_align_backward(grad, boxes, shape, 0.25, 2, True, out=wide[..., 3:-2],
                             num_threads=threads)
    np.testing.assert_array_equal(wide[..., 3:-2].view(np.uint16), single.view(np.uint16))
    assert (wide[..., :3] == 7).all() and (wide[..., -2:] == 7).all()


_REGION_PROGRAM = """
    rng = np.random.default_rng(0)
    m = rng.standard_normal((1, 64, 256, 256), dtype=np.float32).astype(DTYPE)
    boxes = np.array([[0, 10, 20, 200, 180], [0, 100, 90, 900, 700], [0, 50, 50, 60, 70]],
                     np.float32)
    grad = rng.standard_normal((3, 64, 3, 3), dtype=np.float32).astype(DTYPE)
    grad_input = np.ones(m.shape, m.dtype)
    print(extra_peak(lambda: pyroi.roi_align_backward(
        grad, boxes, m.shape, 0.25, 2, True, out=grad_input, num_threads=1))[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_backward_regions_need_no_float32_chunks():
    # three boxes on a 64 x 256 x 256 map: the RoI-region order, which in chunks took 16
    # channels of the map in float32 (4 MiB) more than the float32 call's scratch
    extra = {dtype: int(peak_memory.run(f"DTYPE = np.{dtype}\n" +
                                        textwrap.dedent(_REGION_PROGRAM)))
             for dtype in ("float32", "float16")}
    assert extra["float16"] <= extra["float32"] + (1 << 20), extra


# ---- the max backwards (mmcv's, ONNX's): one channel at a time in float32 planes -----------

def _max_backward(x, boxes, grad, argmax, onnx, out=None, threads=1):
    """The max backward of the forward's winners, as mmcv's or ONNX's."""
    if onnx:
        return pyroi.onnx.roi_align_backward(
            grad, np.ascontiguousarray(boxes[:, 1:]), boxes[:, 0].astype(np.int64), x.shape,
            mode="max", argmax=argmax, sampling_ratio=2, spatial_scale=0.5, out=out,
            num_threads=threads)
    return pyroi.roi_align_backward(grad, boxes, x.shape, 0.5, 2, True, mode="max",
                                    argmax=argmax, out=out, num_threads=threads)


@pytest.mark.parametrize("onnx", [False, True], ids=["mmcv", "onnx"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_max_backwards_are_rounded_float32(onnx, threads):
    """Each pixel's float32 sum of the widened gradients, in the float32 call's order, rounded
    once: also into a channel-strided, row-padded grad_input (nothing else written) and from
    a channels-last gradient; overlapping boxes, boxes off the map, sums past 65504."""
    rng = np.random.default_rng(60 + threads)
    x = (rng.standard_normal((2, 19, 23, 29)) * 4).astype(np.float16)
    corner = rng.uniform(-10, 50, (70, 2))
    boxes = np.concatenate([rng.integers(0, 2, (70, 1)), corner,
                            corner + rng.uniform(1, 40, (70, 2))], axis=1).astype(np.float32)
    boxes[1, 1:] = boxes[0, 1:]  # a box twice
    if onnx:
        _, argmax = pyroi.onnx.roi_align(
            x, np.ascontiguousarray(boxes[:, 1:]), boxes[:, 0].astype(np.int64), mode="max",
            output_height=3, output_width=4, sampling_ratio=2, spatial_scale=0.5,
            return_argmax=True)
    else:
        _, argmax = pyroi.roi_align(x, boxes, (3, 4), 0.5, 2, True, mode="max",
                                    return_argmax=True)
    grad = (rng.standard_normal(argmax.shape) * 3).astype(np.float16)
    grad[0, 0] = 60000.0  # the same pixel twice: past float16's largest, infinity
    single = _max_backward(x.astype(np.float32), boxes, grad.astype(np.float32), argmax, onnx)
    with np.errstate(over="ignore"):
        expected = single.astype(np.float16)
    got = _max_backward(x, boxes, grad, argmax, onnx, threads=threads)
    np.testing.assert_array_equal(got.view(np.uint16), expected.view(np.uint16))
    outer = np.full((2, 38, 23, 32), np.float16(7.0))
    view = outer[:, ::2, :, :29]
    grad_nhwc = np.ascontiguousarray(grad.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    _max_backward(x, boxes, grad_nhwc, argmax, onnx, out=view, threads=threads)
    np.testing.assert_array_equal(view.view(np.uint16), expected.view(np.uint16))
    assert np.all(outer[:, 1::2] == 7.0) and np.all(outer[:, :, :, 29:] == 7.0)


_MAX_BACKWARD_PROGRAM = _MAX_CASE + """
    onnx = dict(mode="max", sampling_ratio=2, spatial_scale=0.25, num_threads=1)
    _, winners = pyroi.roi_align(m, boxes, 7, 0.25, 2, True, mode="max", return_argmax=True)
    _, codes = pyroi.onnx.roi_align(m, rois, images, output_height=7, output_width=7,
                                    return_argmax=True, **onnx)
    grad = np.ones(winners.shape, m.dtype)
    out = np.ones(m.shape, m.dtype)
    print("max", extra_peak(lambda: pyroi.roi_align_backward(
        grad, boxes, m.shape, 0.25, 2, True, mode="max", argmax=winners, out=out,
        num_threads=1))[0])
    print("onnx_max", extra_peak(lambda: pyroi.onnx.roi_align_backward(
        grad, rois, images, m.shape, argmax=codes, out=out, **onnx))[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_max_backwards_need_no_float32_chunks():
    # one channel's float32 planes (256 KiB here) instead of chunks of 16 channels of
    # grad_input and of the gradients (4.8 MiB more before)
    extra = peak_memory.extra_by_dtype(_MAX_BACKWARD_PROGRAM)
    for call in ("max", "onnx_max"):
        assert extra[call, "float16"] <= extra[call, "float32"] + (1 << 20), extra
