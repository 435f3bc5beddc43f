"""RoIPool's backward from the forward's input (``roi_pool_backward(..., input=x)``): bit for
bit the argmax backward fed the forward's argmax, and so torchvision's autograd, in both of
its C orders (the lane-major one that finds the winners again, and the fallback through a
temporary argmax), for every thread count."""

import numpy as np
import pytest

import pyroi

THREADS = (1, 2, 3)


def _case(rng, dtype, num_images, channels, height, width, num_rois, special=False,
          size=None):
    """A map with many ties (small integers), optionally NaN and -inf, boxes partly off the
    map and inverted, and random scale and output size."""
    x = rng.integers(-3, 4, size=(num_images, channels, height, width)).astype(dtype)
    if special:
        x[rng.random(x.shape) < 0.1] = np.nan
        x[rng.random(x.shape) < 0.1] = -np.inf
        x[rng.random(x.shape) < 0.02] = np.inf
    corners = rng.uniform(-4, max(height, width) + 4, size=(num_rois, 4))
    boxes = np.concatenate([rng.integers(0, num_images, size=(num_rois, 1)), corners], 1)
    boxes = boxes.astype(dtype)
    size = size or (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    scale = float(rng.choice([1.0, 0.5, 2.0, 1 / 3]))
    return x, boxes, size, scale


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _check(x, boxes, size, scale, g=None, rng=None):
    out, argmax = pyroi.roi_pool(x, boxes, size, scale, return_argmax=True)
    if g is None:
        g = (rng.integers(-4, 5, size=out.shape) * 0.37).astype(x.dtype)
    expected = pyroi.roi_pool_backward(g, boxes, argmax, x.shape, size, scale)
    for threads in THREADS:
        got = pyroi.roi_pool_backward(g, boxes, input=x, output_size=size,
                                      spatial_scale=scale, num_threads=threads)
        _same_bits(got, expected)
    return g, expected


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [False, True], ids=["ties", "nan_inf"])
def test_random_matches_argmax_backward(dtype, special):
    rng = np.random.default_rng(1234 + special)
    for _ in range(40):
        num_images = int(rng.integers(1, 3))
        x, boxes, size, scale = _case(rng, dtype, num_images, int(rng.integers(1, 40)),
                                      int(rng.integers(1, 14)), int(rng.integers(1, 14)),
                                      int(rng.integers(0, 30)), special)
        _check(x, boxes, size, scale, rng=rng)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("num_rois", [300, 2], ids=["lane_order", "through_argmax"])
def test_both_orders_on_a_larger_map(dtype, num_rois):
    """300 RoIs take the lane-major order; 2 on a 23 x 31 map the fallback."""
    rng = np.random.default_rng(7)
    x, boxes, _, _ = _case(rng, dtype, 2, 37, 23, 31, num_rois, special=True)
    _check(x, boxes, (7, 7), 1.0, rng=rng)
    _check(x, boxes, (3, 5), 0.5, rng=rng)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_input_and_gradients(dtype):
    rng = np.random.default_rng(3)
    x, boxes, size, scale = _case(rng, dtype, 2, 35, 11, 9, 50, special=True, size=(4, 3))
    x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    g = (rng.integers(-4, 5, size=(50, 35, 4, 3)) * 0.37).astype(dtype)
    for view in (x_nhwc, x[:, :, ::-1, :], np.repeat(x, 2, axis=3)[:, :, :, ::2]):
        _check(view, boxes, size, scale, g=g)
    g_strided = np.ascontiguousarray(g.transpose(3, 2, 1, 0)).transpose(3, 2, 1, 0)
    _check(x, boxes, size, scale, g=g_strided)
    ones = np.broadcast_to(np.ones((1, 1, 1, 1), dtype), g.shape)  # sum().backward()'s
    _check(x, boxes, size, scale, g=ones)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_edge_cases(dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 17, 6, 7)).astype(dtype)
    # K = 0: a zero gradient
    g0 = np.zeros((0, 17, 2, 2), dtype)
    got = pyroi.roi_pool_backward(g0, np.zeros((0, 5), dtype), input=x)
    _same_bits(got, np.zeros_like(x))
    # every bin clipped away, inverted, one-pixel and whole-map boxes
    boxes = np.array([[0, 50, 50, 60, 60], [1, -9, -9, -5, -5], [0, 5, 4, 1, 1],
                      [1, 3, 3, 3, 3], [0, 0, 0, 6, 5]], dtype)
    _check(x, boxes, (3, 2), 1.0, rng=rng)
    # all -inf and NaN: no winner, no gradient
    x[:] = -np.inf
    x[0, :, 2:, :] = np.nan
    _, expected = _check(x, boxes, (2, 2), 1.0, rng=rng)
    assert not expected.any()
    # no channels, no pixels
    _check(np.zeros((1, 0, 4, 4), dtype), boxes[:1] * 0, 2, 1.0, rng=rng)
    got = pyroi.roi_pool_backward(np.ones((1, 3, 2, 2), dtype), boxes[:1] * 0,
                                  input=np.zeros((1, 3, 0, 4), dtype))
    assert got.shape == (1, 3, 0, 4)


def test_float16():
    """float16 maps and gradients (float32 boxes): the float16 argmax backward's bits (its
    chunks widen to float32 and round each sum once, as the in-place image blocks must)."""
    rng = np.random.default_rng(11)
    for num_rois in (300, 2):
        x, boxes, size, scale = _case(rng, np.float16, 2, 45, 13, 10, num_rois, special=True)
        boxes32 = boxes.astype(np.float32)
        g, _ = _check(x, boxes32, size, scale, rng=rng)
        _check(np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2), boxes32,
               size, scale, g=g)


@pytest.mark.parametrize("special", [False, True], ids=["ties", "nan_inf"])
def test_float16_in_place_random(special):
    """The float16 call read and written in place (image blocks) against the float32 call on
    the widened tensors, rounded once: gradients large enough that sums round and overflow,
    NaN and infinite gradients, odd channel counts, 1-3 threads."""
    rng = np.random.default_rng(99 + special)
    for _ in range(30):
        x, boxes, size, scale = _case(rng, np.float16, int(rng.integers(1, 3)),
                                      int(rng.integers(1, 40)), int(rng.integers(1, 14)),
                                      int(rng.integers(1, 14)), int(rng.integers(20, 60)),
                                      special)
        boxes32 = boxes.astype(np.float32)
        out = pyroi.roi_pool(x, boxes32, size, scale)
        g = np.clip(rng.standard_normal(out.shape) * rng.choice([1.0, 3e3, 3e4]), -6e4,
                    6e4).astype(np.float16)
        if special:
            g.flat[rng.integers(0, g.size, 3)] = [np.nan, np.inf, -np.inf][:min(3, g.size)]
        with np.errstate(over="ignore"):  # sums past float16's range round to infinity
            expected = pyroi.roi_pool_backward(g.astype(np.float32), boxes32,
                                               input=x.astype(np.float32), output_size=size,
                                               spatial_scale=scale).astype(np.float16)
        for threads in THREADS:
            _same_bits(pyroi.roi_pool_backward(g, boxes32, input=x, output_size=size,
                                               spatial_scale=scale, num_threads=threads),
                       expected)


def test_float16_in_place_strided():
    """Strided float16 tensors: a channels-last map, gradients with every bin apart, and a
    grad_input written through a strided out."""
    rng = np.random.default_rng(5)
    x, boxes, _, _ = _case(rng, np.float16, 2, 37, 23, 31, 300, special=True)
    boxes32 = boxes.astype(np.float32)
    out = pyroi.roi_pool(x, boxes32, (7, 7), 1.0)
    wide = (rng.standard_normal(out.shape[:2] + (14, 14)) * 100).astype(np.float16)
    g = wide[:, :, ::2, ::2]
    expected = pyroi.roi_pool_backward(g.astype(np.float32), boxes32,
                                       input=x.astype(np.float32), output_size=(7, 7),
                                       spatial_scale=1.0).astype(np.float16)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    grad_input = np.full((2, 23, 31, 37), 5, np.float16).transpose(0, 3, 1, 2)
    for threads in (1, 2):
        result = pyroi.roi_pool_backward(g, boxes32, input=nhwc, output_size=(7, 7),
                                         spatial_scale=1.0, out=grad_input,
                                         num_threads=threads)
        assert result is grad_input
        _same_bits(np.ascontiguousarray(result), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torchvision_autograd(tv, dtype):
    rng = np.random.default_rng(17)
    for num_rois in (200, 3):
        x, boxes, size, scale = _case(rng, dtype, 2, 21, 15, 12, num_rois, special=True)
        g = (rng.integers(-4, 5, size=(num_rois, 21) + size) * 0.37).astype(dtype)
        got = pyroi.roi_pool_backward(g, boxes, input=x, output_size=size,
                                      spatial_scale=scale)
        np.testing.assert_array_equal(got, tv.grad("roi_pool", x, boxes, g, size, scale))


def test_validation():
    x = np.zeros((1, 3, 5, 5), np.float32)
    boxes = np.array([[0, 0, 0, 4, 4]], np.float32)
    out, argmax = pyroi.roi_pool(x, boxes, 2, return_argmax=True)
    g = np.ones_like(out)
    with pytest.raises(pyroi.InvalidArgumentError, match="exactly one of argmax"):
        pyroi.roi_pool_backward(g, boxes, argmax, x.shape, 2, input=x)
    with pytest.raises(pyroi.InvalidArgumentError, match="neither"):
        pyroi.roi_pool_backward(g, boxes, None, x.shape, 2)
    with pytest.raises(pyroi.DTypeError, match="input"):
        pyroi.roi_pool_backward(g, boxes, input=x.astype(np.float64))
    with pytest.raises(pyroi.ShapeError, match="input_shape"):
        pyroi.roi_pool_backward(g, boxes, input_shape=(1, 3, 6, 5), input=x)
    with pytest.raises(pyroi.ShapeError):
        pyroi.roi_pool_backward(g, boxes, input=np.zeros((1, 4, 5, 5), np.float32))
    with pytest.raises(pyroi.ShapeError, match="input"):
        pyroi.roi_pool_backward(g, boxes, input=np.zeros((1, 3, 5), np.float32))
    with pytest.raises(pyroi.BoxError):
        pyroi.roi_pool_backward(g, np.array([[0, 0, np.nan, 4, 4]], np.float32), input=x)
    with pytest.raises(pyroi.BatchIndexError):
        pyroi.roi_pool_backward(g, np.array([[1, 0, 0, 4, 4]], np.float32), input=x)
    with pytest.raises(pyroi.ShapeError, match="output_size"):
        pyroi.roi_pool_backward(g, boxes, output_size=3, input=x)
    # the positional argmax call is unchanged
    _same_bits(pyroi.roi_pool_backward(g, boxes, argmax, x.shape, 2),
               pyroi.roi_pool_backward(g, boxes, input=x))


# ---- the rule that tells a training layer which of the two to keep --------------------------

def test_rule_on_shapes_every_cpu_agrees_on():
    """Whatever the L2 cache: a map of 16 pixels with many bins pays (its 2 KB block fits any
    cache), a 1000 x 1000 map (a 128 MB block) never does, few bins next to the map's pixels
    never do (the lane-major order is not taken), and an empty call keeps no argmax."""
    pays = pyroi._core.roi_pool_backward_from_input_pays
    assert pays((2, 64, 4, 4), 10, 7, 7)
    assert not pays((1, 16, 1000, 1000), 5000, 7, 7)
    assert not pays((1, 16, 40, 40), 2, 2, 2)
    assert pays((1, 16, 40, 40), 0, 7, 7)
    assert pays((0, 16, 40, 40), 5, 7, 7)
    assert not pays((1, 16, 8, 8), 3, 2 ** 40, 2 ** 40)  # no overflow: nothing fits


def test_rule_checks_its_arguments():
    pays = pyroi._core.roi_pool_backward_from_input_pays
    with pytest.raises(pyroi.ShapeError):
        pays((1, -1, 4, 4), 3, 2, 2)
    with pytest.raises(pyroi.ShapeError):
        pays((1, 1, 4, 4), -3, 2, 2)
    with pytest.raises(pyroi.ShapeError):
        pays((1, 1, 4), 3, 2, 2)
    with pytest.raises(pyroi.PyroiError, match="output size"):
        pays((1, 1, 4, 4), 3, 0, 2)


@pytest.fixture(params=[True, False], ids=["keeps_input", "keeps_argmax"])
def rule(request, monkeypatch):
    """Forces the C core's rule either way, and records what the layer's forward asked for."""
    asked = []
    real_roi_pool = pyroi.layers.roi_pool

    def recording(*args, **kwargs):
        asked.append(kwargs.get("return_argmax", False))
        return real_roi_pool(*args, **kwargs)

    monkeypatch.setattr(pyroi._core, "roi_pool_backward_from_input_pays",
                        lambda *args: request.param)
    monkeypatch.setattr(pyroi.layers, "roi_pool", recording)
    return request.param, asked


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_layer_keeps_what_the_rule_says_and_its_gradient_is_the_same(rule, dtype):
    keeps_input, asked = rule
    rng = np.random.default_rng(11)
    x, boxes, _, _ = _case(rng, dtype, 2, 20, 9, 11, 40, special=dtype != np.float16)
    layer = pyroi.RoIPool((3, 2), 0.5)
    out = layer(x, boxes)
    assert asked == [not keeps_input]  # the forward made an argmax only when kept
    g = (rng.integers(-4, 5, size=out.shape) * 0.37).astype(dtype)
    got = layer.backward(g, lda_coeff=2.0)
    _, argmax = pyroi.roi_pool(x, boxes, (3, 2), 0.5, return_argmax=True)
    wide = np.float32 if dtype == np.float16 else dtype
    expected = pyroi.roi_pool_backward(g.astype(wide) * wide(2.0), boxes.astype(wide), argmax,
                                       x.shape, (3, 2), 0.5).astype(dtype)
    _same_bits(got, expected)


def test_layer_gradient_ignores_later_changes_to_the_input(rule):
    """The layer keeps a copy: writing the caller's array between forward and backward
    does not move the gradient (keeping the array itself would)."""
    rng = np.random.default_rng(12)
    x, boxes, _, _ = _case(rng, np.float32, 1, 16, 12, 12, 60)
    layer = pyroi.RoIPool(3)
    out = layer(x, boxes)
    expected = pyroi.roi_pool_backward(np.ones_like(out), boxes, input=x.copy(), output_size=3)
    x[...] = rng.permutation(x.ravel()).reshape(x.shape)
    _same_bits(layer.backward(np.ones_like(out)), expected)
