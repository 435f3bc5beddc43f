"""float16 rotated RoIAlign read and written in place: the forward widens each tap of the
float16 map as it reads it (F16C; without it the forward runs in chunks) and rounds each bin
once from a float32 tile; the backward records
every RoI's samples once, adds the widened output gradients channel by channel and image by
image into a float32 plane and rounds each pixel once into grad_input. Every result must be
the float32 call's on the widened tensors, rounded once -- bit for bit, for every thread
count, layout and shape -- and the calls must need no chunk of float32 scratch; where the
record of samples would pass its bound (64 MiB) the chunks run, with the same bits."""

import sys
import textwrap

import numpy as np
import pytest

import pyroi

import peak_memory


def _rotated_boxes(rng, k, height, width, scale, low, high, images=1):
    """k rows (image, cx, cy, w, h, angle) in input pixels, some reaching past the map"""
    centre = rng.uniform(-0.1, 1.1, (k, 2)) * (np.array([width, height]) / scale)
    size = rng.uniform(low, high, (k, 2))
    angle = rng.uniform(-180, 180, (k, 1))
    return np.concatenate([rng.integers(0, images, (k, 1)), centre, size, angle],
                          axis=1).astype(np.float32)


def _same_bits(half, single):
    assert half.dtype == np.float16
    with np.errstate(over="ignore"):
        expected = single.astype(np.float16)
    np.testing.assert_array_equal(half.view(np.uint16), expected.view(np.uint16))


def _forward(x, boxes, size, scale, ratio, **kwargs):
    return pyroi.roi_align_rotated(x, boxes, size, scale, ratio, **kwargs)


def _backward(grad, boxes, shape, scale, ratio, **kwargs):
    return pyroi.roi_align_rotated_backward(grad, boxes, shape, scale, ratio, **kwargs)


# (map shape, (boxes, smallest and largest side in input pixels), spatial scale, output size,
# sampling ratio, keywords)
CASES = {
    "many_boxes": ((2, 13, 31, 45), (40, 2, 90), 0.25, 7, 2, {}),
    # adaptive grids of up to ~100 x 100 samples a bin: bins flushed in several parts
    "large_bins": ((1, 5, 60, 70), (6, 100, 240), 1.0, (2, 3), 0, {}),
    "odd_legacy_clockwise": ((3, 3, 17, 11), (25, 1, 40), 0.5, (3, 5), 3,
                             dict(aligned=False, clockwise=True)),
    "one_channel_one_pixel_row": ((2, 1, 1, 29), (12, 1, 20), 1.0, 2, 2, {}),
}


def _case(name):
    shape, (k, low, high), scale, size, ratio, keywords = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    boxes = _rotated_boxes(rng, k, shape[2], shape[3], scale, low, high, shape[0])
    return rng, shape, boxes, scale, size, ratio, keywords


def _pooled_shape(boxes, shape, size):
    size = (size, size) if np.isscalar(size) else size
    return (len(boxes), shape[1]) + tuple(size)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_forward_is_rounded_float32(name, threads):
    rng, shape, boxes, scale, size, ratio, keywords = _case(name)
    x = (rng.standard_normal(shape) * 100).astype(np.float16)
    x.flat[::7] = np.float16(6e-8)  # subnormals widen exactly
    got = _forward(x, boxes, size, scale, ratio, num_threads=threads, **keywords)
    _same_bits(got, _forward(x.astype(np.float32), boxes, size, scale, ratio, **keywords))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_backward_is_rounded_float32(name, threads):
    rng, shape, boxes, scale, size, ratio, keywords = _case(name)
    grad = (rng.standard_normal(_pooled_shape(boxes, shape, size)) * 1000).astype(np.float16)
    got = _backward(grad, boxes, shape, scale, ratio, num_threads=threads, **keywords)
    _same_bits(got, _backward(grad.astype(np.float32), boxes, shape, scale, ratio, **keywords))


@pytest.mark.parametrize("threads", [1, 2])
def test_special_values_and_overflow(threads):
    # NaN, infinities, -0.0, sums past float16's largest (rounded once: infinity), an image
    # without boxes (its gradient +0.0)
    rng = np.random.default_rng(7)
    shape = (3, 6, 20, 24)
    x = np.clip(rng.standard_normal(shape) * 30000, -65504, 65504).astype(np.float16)
    x[0, 1, 5:9, 5:9] = np.nan
    x[0, 2, 10, 10] = np.inf
    x[0, 3, 10, 12] = -np.inf
    x[0, 4] = -0.0
    boxes = _rotated_boxes(rng, 30, 20, 24, 1.0, 2, 16, images=2)  # none on image 2
    _same_bits(_forward(x, boxes, 4, 1.0, 2, num_threads=threads),
               _forward(x.astype(np.float32), boxes, 4, 1.0, 2))
    grad = np.clip(rng.standard_normal((30, 6, 4, 4)) * 60000, -65504, 65504).astype(
        np.float16)
    grad[3, 0, 1, 1] = np.nan
    grad[4, 1] = np.inf
    got = _backward(grad, boxes, shape, 1.0, 2, num_threads=threads)
    _same_bits(got, _backward(grad.astype(np.float32), boxes, shape, 1.0, 2))
    assert np.all(got[2].view(np.uint16) == 0)
    assert np.isinf(got).any() and np.isnan(got).any()


@pytest.mark.parametrize("threads", [1, 2])
def test_strided_and_channels_last(threads):
    rng = np.random.default_rng(3)
    shape = (2, 9, 23, 31)
    boxes = _rotated_boxes(rng, 20, 23, 31, 0.5, 2, 40, images=2)
    wide = (rng.standard_normal((2, 19, 23, 35)) * 50).astype(np.float16)
    x = wide[:, ::2, :, 2:33]  # every other channel, rows not packed
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    expected = _forward(x.astype(np.float32), boxes, (3, 4), 0.5, 2)
    for source in (x, nhwc):
        outer = np.full((20, 20, 5, 4), np.float16(7.0))
        view = outer[:, ::2, 1:4]  # strided output
        _forward(source, boxes, (3, 4), 0.5, 2, num_threads=threads, out=view)
        _same_bits(view, expected)
        assert np.all(outer[:, 1::2] == 7.0) and np.all(outer[:, :, [0, 4]] == 7.0)
    grad_wide = (rng.standard_normal((20, 9, 3, 9)) * 100).astype(np.float16)
    grad = grad_wide[:, :, :, ::2][..., :4]
    expected = _backward(grad.astype(np.float32), boxes, shape, 0.5, 2)
    for layout in ("strided", "channels_last"):
        g = grad if layout == "strided" else np.ascontiguousarray(
            grad.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        outer = np.full((2, 18, 25, 31), np.float16(7.0))
        view = outer[:, ::2, 1:24]
        _backward(g, boxes, shape, 0.5, 2, num_threads=threads, out=view)
        _same_bits(view, expected)
        assert np.all(outer[:, 1::2] == 7.0) and np.all(outer[:, :, [0, 24]] == 7.0)


def test_no_boxes():
    x = np.ones((2, 4, 8, 8), np.float16)
    boxes = np.zeros((0, 6), np.float32)
    assert _forward(x, boxes, 3, 1.0, 2).shape == (0, 4, 3, 3)
    out = np.full((2, 4, 8, 8), np.float16(7.0))
    _backward(np.zeros((0, 4, 3, 3), np.float16), boxes, x.shape, 1.0, 2, out=out)
    assert np.all(out.view(np.uint16) == 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_record_past_its_bound_runs_in_chunks(threads):
    # 8 boxes over a small map, 64 x 64 samples a bin: 1.6 M samples, a record past 64 MiB,
    # so the backward runs in chunks, with the same bits
    rng = np.random.default_rng(11)
    shape = (1, 3, 24, 24)
    boxes = np.array([[0, 12, 12, 20, 20, a] for a in range(0, 80, 10)], np.float32)
    grad = (rng.standard_normal((8, 3, 7, 7)) * 100).astype(np.float16)
    got = _backward(grad, boxes, shape, 1.0, 64, num_threads=threads)
    _same_bits(got, _backward(grad.astype(np.float32), boxes, shape, 1.0, 64))


_PROGRAM = """
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 64, 256, 256), dtype=np.float32)
    k = 32
    boxes = np.concatenate([np.zeros((k, 1)), rng.uniform(0, 1024, (k, 2)),
                            rng.uniform(16, 300, (k, 2)), rng.uniform(-90, 90, (k, 1))],
                           axis=1).astype(np.float32)
    for name, m in (("float32", x), ("float16", x.astype(np.float16))):
        out = np.ones((k, 64, 7, 7), m.dtype)
        print("forward", name, extra_peak(lambda: pyroi.roi_align_rotated(
            m, boxes, 7, 0.25, 2, out=out, num_threads=1))[0])
        grad_input = np.ones(m.shape, m.dtype)
        print("backward", name, extra_peak(lambda: pyroi.roi_align_rotated_backward(
            out, boxes, m.shape, 0.25, 2, out=grad_input, num_threads=1))[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_calls_need_no_float32_chunks():
    # in chunks, 16 channels of the map (4 MiB) and of the pooled tensor took more; in place
    # the backward's float32 plane (256 KiB) and record of samples (about 0.3 MiB) are all.
    # The forward runs in place only with F16C (vector level avx2 or above)
    extra = peak_memory.extra_by_label(textwrap.dedent(_PROGRAM))
    in_place = ["backward"]
    if not pyroi._core.vector_isa().startswith("baseline"):
        in_place.append("forward")
    for call in in_place:
        assert extra[call, "float16"] <= extra[call, "float32"] + (1 << 20), extra
