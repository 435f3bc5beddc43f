"""float16 PS-RoIAlign and PS-RoIPool read and written in place: the forwards widen each
element of the float16 map as they read it and round each bin's average once; the backwards
add a pass of output channels' widened gradients into float32 planes (their PH * PW input
planes of every image, as many channels as fit the L2 cache) and round them once into
grad_input. All need F16C; without it they run in chunks of float32 channels.
Every result must be the float32 call's on the widened tensors, rounded once -- bit for bit,
for every thread count, layout and shape -- and the calls must need no chunk of float32
scratch."""

import sys
import textwrap

import numpy as np
import pytest

import pyroi

import peak_memory


def _boxes(rng, k, height, width, scale, low, high, images=1):
    """k rows (image, x1, y1, x2, y2) in input pixels, some reaching past the map"""
    size = rng.uniform(low, high, (k, 2))
    corner = rng.uniform(-0.2, 1.1, (k, 2)) * (np.array([width, height]) / scale)
    return np.concatenate([rng.integers(0, images, (k, 1)), corner, corner + size],
                          axis=1).astype(np.float32)


# op name -> (forward(x, boxes, size, scale, **kw), backward(grad, boxes, shape, scale, **kw))
OPS = {
    "ps_roi_pool": (pyroi.ps_roi_pool, pyroi.ps_roi_pool_backward),
    "ps_roi_align": (
        lambda x, b, size, scale, **kw: pyroi.ps_roi_align(x, b, size, scale, 2, **kw),
        lambda g, b, shape, scale, **kw: pyroi.ps_roi_align_backward(g, b, shape, scale, 2,
                                                                     **kw)),
    "ps_roi_align_adaptive": (
        lambda x, b, size, scale, **kw: pyroi.ps_roi_align(x, b, size, scale, 0, **kw),
        lambda g, b, shape, scale, **kw: pyroi.ps_roi_align_backward(g, b, shape, scale, 0,
                                                                     **kw)),
}


def _same_bits(half, single):
    assert half.dtype == np.float16
    with np.errstate(over="ignore"):
        expected = single.astype(np.float16)
    np.testing.assert_array_equal(half.view(np.uint16), expected.view(np.uint16))


# (map shape, (boxes, smallest and largest side in input pixels), spatial scale, output size)
CASES = {
    "vgg_like": ((1, 3 * 49, 38, 50), (120, 32, 500), 1 / 16, 7),
    "rectangular_bins": ((2, 2 * 15, 31, 45), (40, 2, 90), 0.25, (3, 5)),
    "one_output_channel": ((3, 4, 17, 11), (25, 1, 40), 0.5, 2),
    "one_pixel_row": ((2, 9, 1, 29), (12, 1, 20), 1.0, 3),
}


def _case(name, seed_offset):
    """CASES[name] as (shape, k, scale, size, rng, boxes); seed_offset tells forward from
    backward tests apart"""
    shape, (k, low, high), scale, size = CASES[name]
    rng = np.random.default_rng(seed_offset + sorted(CASES).index(name))
    return shape, k, scale, size, rng, _boxes(rng, k, shape[2], shape[3], scale, low, high,
                                              shape[0])


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 2])
def test_forward_is_rounded_float32(op, name, threads):
    forward = OPS[op][0]
    shape, k, scale, size, rng, boxes = _case(name, 0)
    x = (rng.standard_normal(shape) * 100).astype(np.float16)
    _same_bits(forward(x, boxes, size, scale, num_threads=threads),
               forward(x.astype(np.float32), boxes, size, scale))


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("threads", [1, 2])
def test_forward_special_values(op, threads):
    forward = OPS[op][0]
    # NaN, infinities, -0.0 and values near float16's largest (their averages round to it or
    # past it), an image without boxes, bins off the map (0)
    rng = np.random.default_rng(7)
    shape = (3, 2 * 9, 20, 24)
    x = np.clip(rng.standard_normal(shape) * 30000, -65504, 65504).astype(np.float16)
    x[0, 1] = np.nan  # each read by one bin of every RoI of image 0
    x[0, 2] = np.inf
    x[0, 3, 10, 12] = -np.inf
    x[0, 4] = -0.0
    x[1, 5] = 65504
    boxes = _boxes(rng, 30, 20, 24, 1.0, 2, 16, images=2)  # none on image 2
    got = forward(x, boxes, 3, 1.0, num_threads=threads)
    _same_bits(got, forward(x.astype(np.float32), boxes, 3, 1.0))
    assert np.isnan(got).any() and np.isinf(got).any()


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("threads", [1, 2])
def test_forward_strided_and_channels_last(op, threads):
    forward = OPS[op][0]
    rng = np.random.default_rng(3)
    boxes = _boxes(rng, 20, 23, 31, 0.5, 2, 40, images=2)
    wide = (rng.standard_normal((2, 2 * 2 * 12, 23, 35)) * 50).astype(np.float16)
    x = wide[:, ::2, :, 2:33]  # every other channel, rows not packed: 24 = 2 x (3 x 4)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    expected = forward(x.astype(np.float32), boxes, (3, 4), 0.5)
    for source in (x, nhwc):
        outer = np.full((20, 4, 5, 4), np.float16(7.0))
        view = outer[:, ::2, 1:4]  # strided output
        forward(source, boxes, (3, 4), 0.5, num_threads=threads, out=view)
        _same_bits(view, expected)
        assert np.all(outer[:, 1::2] == 7.0) and np.all(outer[:, :, [0, 4]] == 7.0)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 2])
def test_backward_is_rounded_float32(op, name, threads):
    backward = OPS[op][1]
    shape, k, scale, size, rng, boxes = _case(name, 10)
    ph, pw = (size, size) if np.isscalar(size) else size
    grad = (rng.standard_normal((k, shape[1] // (ph * pw), ph, pw)) * 100).astype(np.float16)
    _same_bits(backward(grad, boxes, shape, scale, num_threads=threads),
               backward(grad.astype(np.float32), boxes, shape, scale))


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("threads", [1, 2])
def test_backward_special_values_strided_and_channels_last(op, threads):
    backward = OPS[op][1]
    # NaN and infinite gradients, sums past float16's largest (rounded once: infinity), an
    # image without boxes (+0.0), strided and channels-last gradients into a strided grad_input
    rng = np.random.default_rng(5)
    shape = (3, 2 * 12, 23, 31)
    boxes = _boxes(rng, 40, 23, 31, 0.5, 2, 60, images=2)  # none on image 2
    boxes[3:5, 0] = 0
    wide = np.clip(rng.standard_normal((40, 2, 3, 9)) * 60000, -65504, 65504).astype(
        np.float16)
    grad = wide[:, :, :, ::2][..., :4]  # (40, 2, 3, 4), columns not packed
    boxes[3:5, 1:] = [4, 6, 40, 30]  # on the map
    grad[3, 0, 1, 1] = np.nan
    grad[4, 1] = np.inf
    expected = backward(grad.astype(np.float32), boxes, shape, 0.5)
    for g in (grad, np.ascontiguousarray(grad.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)):
        outer = np.full((3, 48, 25, 31), np.float16(7.0))
        view = outer[:, ::2, 1:24]
        backward(g, boxes, shape, 0.5, num_threads=threads, out=view)
        _same_bits(view, expected)
        assert np.all(outer[:, 1::2] == 7.0) and np.all(outer[:, :, [0, 24]] == 7.0)
        assert np.all(view[2].view(np.uint16) == 0)
        assert np.isinf(view).any() and np.isnan(view).any()


@pytest.mark.parametrize("op", sorted(OPS))
def test_no_boxes(op):
    forward, backward = OPS[op]
    x = np.ones((2, 18, 8, 8), np.float16)
    boxes = np.zeros((0, 5), np.float32)
    assert forward(x, boxes, 3, 1.0).shape == (0, 2, 3, 3)
    out = np.full(x.shape, np.float16(7.0))
    backward(np.zeros((0, 2, 3, 3), np.float16), boxes, x.shape, 1.0, out=out)
    assert np.all(out.view(np.uint16) == 0)


_PROGRAM = """
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 8 * 9, 256, 256), dtype=np.float32)
    k = 64
    corner = rng.uniform(0, 900, (k, 2))
    boxes = np.concatenate([np.zeros((k, 1)), corner, corner + rng.uniform(16, 300, (k, 2))],
                           axis=1).astype(np.float32)
    calls = {
        "ps_roi_pool": (lambda m, out: pyroi.ps_roi_pool(m, boxes, 3, 0.25, out=out,
                                                         num_threads=1),
                        lambda g, shape, out: pyroi.ps_roi_pool_backward(
                            g, boxes, shape, 0.25, out=out, num_threads=1)),
        "ps_roi_align": (lambda m, out: pyroi.ps_roi_align(m, boxes, 3, 0.25, 2, out=out,
                                                           num_threads=1),
                         lambda g, shape, out: pyroi.ps_roi_align_backward(
                             g, boxes, shape, 0.25, 2, out=out, num_threads=1)),
    }
    for op, (forward, backward) in calls.items():
        for name, m in (("float32", x), ("float16", x.astype(np.float16))):
            out = np.ones((k, 8, 3, 3), m.dtype)
            print(op, "forward", name, extra_peak(lambda: forward(m, out))[0])
            grad_input = np.ones(m.shape, m.dtype)
            print(op, "backward", name, extra_peak(lambda: backward(out, m.shape,
                                                                    grad_input))[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.skipif(pyroi._core.vector_isa().startswith("baseline"),
                    reason="in place only with F16C (vector level avx2 or above)")
def test_calls_need_no_float32_chunks():
    # in chunks, 18 channels of the 256 x 256 map (4.5 MiB) took more; in place the backward's
    # scratch is its float32 planes: as many output channels' 9 planes (2.25 MiB each) as fit
    # the L2 cache, at least one
    extra = peak_memory.extra_by_label(textwrap.dedent(_PROGRAM))
    planes = max(pyroi._core.cache_bytes(2) // (9 << 18), 1) * (9 << 18)
    for op in ("ps_roi_pool", "ps_roi_align"):
        assert extra[op, "forward", "float16"] <= extra[op, "forward", "float32"] + (1 << 20), (
            extra)
        assert (extra[op, "backward", "float16"] <=
                extra[op, "backward", "float32"] + planes + (1 << 20)), extra
