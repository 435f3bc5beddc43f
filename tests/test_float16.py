"""float16: every operator takes float16 data (boxes float16 or float32), computes in float32
and rounds the result once -- so it equals the float32 operator on the widened arrays, rounded
to float16 (within float16 rounding of the float32 result)."""

import numpy as np
import pytest

import pyroi
from conftest import random_rois
from pyroi import ascend
from pyroi import onnx as ponnx


def _case(seed=0, channels=4, k=9, rotated=False):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, channels, 9, 11)).astype(np.float16)
    rois = random_rois(rng, 2, 9, 11, k, np.float64, spatial_scale=0.5, inverted="both")
    if rotated:
        centre = (rois[:, 1:3] + rois[:, 3:5]) / 2
        size = np.abs(rois[:, 3:5] - rois[:, 1:3])
        angle = rng.uniform(-90, 90, (k, 1))
        rois = np.concatenate([rois[:, :1], centre, size, angle], axis=1)
    return x, rois.astype(np.float16)


def _widened(value):
    if isinstance(value, np.ndarray) and value.dtype == np.float16:
        return value.astype(np.float32)
    return value


FORWARD = {
    "roi_align": lambda x, b: pyroi.roi_align(x, b, (2, 3), 0.5, 2, True),
    "roi_align_max": lambda x, b: pyroi.roi_align(x, b, (2, 3), 0.5, 0, False, mode="max",
                                                  return_argmax=True),
    "roi_pool": lambda x, b: pyroi.roi_pool(x, b, (3, 2), 0.5, return_argmax=True),
    "roi_pool_int32": lambda x, b: pyroi.roi_pool(x, b, (3, 2), 0.5, return_argmax=True,
                                                  argmax_dtype=np.int32),
    "ps_roi_align": lambda x, b: pyroi.ps_roi_align(x, b, 2, 0.5, 2),
    "ps_roi_pool": lambda x, b: pyroi.ps_roi_pool(x, b, 2, 0.5),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
@pytest.mark.parametrize("boxes_dtype", [np.float16, np.float32])
def test_forward_is_rounded_float32(name, boxes_dtype):
    x, rois = _case(1)
    rois = rois.astype(boxes_dtype)
    half = FORWARD[name](x, rois)
    single = FORWARD[name](x.astype(np.float32), rois.astype(np.float32))
    if isinstance(half, tuple):
        np.testing.assert_array_equal(half[1], single[1])  # argmax unchanged
        assert half[1].dtype == single[1].dtype
        half, single = half[0], single[0]
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, single.astype(np.float16))
    # within float16 rounding of the float32 result
    assert np.all(np.abs(half.astype(np.float32) - single) <=
                  np.spacing(np.abs(single).astype(np.float16)).astype(np.float32) / 2)


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_big_endian_float16_is_float16(name):
    # a byte-swapped float16 map is float16 too: the same result as the native one (it once
    # asked for float32 boxes, and the multi-level layer crashed in the binding)
    x, rois = _case(2)
    native = FORWARD[name](x, rois)
    swapped = FORWARD[name](x.astype(x.dtype.newbyteorder()),
                            rois.astype(rois.dtype.newbyteorder()))
    for a, b in zip(*(r if isinstance(r, tuple) else (r,) for r in (native, swapped))):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_rotated_forward_and_backward():
    x, rois = _case(2, rotated=True)
    half = pyroi.roi_align_rotated(x, rois, 2, 0.5, 2)
    single = pyroi.roi_align_rotated(x.astype(np.float32), rois.astype(np.float32), 2, 0.5, 2)
    np.testing.assert_array_equal(half, single.astype(np.float16))
    grad = np.ones_like(half)
    g16 = pyroi.roi_align_rotated_backward(grad, rois, x.shape, 0.5, 2)
    g32 = pyroi.roi_align_rotated_backward(grad.astype(np.float32), rois.astype(np.float32),
                                           x.shape, 0.5, 2)
    assert g16.dtype == np.float16
    np.testing.assert_array_equal(g16, g32.astype(np.float16))


def test_backward_ops():
    x, rois = _case(3)
    r32 = rois.astype(np.float32)
    grad = np.random.default_rng(0).standard_normal((rois.shape[0], 4, 2, 2)).astype(np.float16)
    g32 = grad.astype(np.float32)
    pairs = [
        (pyroi.roi_align_backward(grad, rois, x.shape, 0.5, 2, True),
         pyroi.roi_align_backward(g32, r32, x.shape, 0.5, 2, True)),
        (pyroi.ps_roi_align_backward(grad[:, :1], rois, x.shape, 0.5, 2),
         pyroi.ps_roi_align_backward(g32[:, :1], r32, x.shape, 0.5, 2)),
        (pyroi.ps_roi_pool_backward(grad[:, :1], rois, x.shape, 0.5),
         pyroi.ps_roi_pool_backward(g32[:, :1], r32, x.shape, 0.5)),
    ]
    _, argmax = pyroi.roi_pool(x, rois, 2, 0.5, return_argmax=True)
    pairs.append((pyroi.roi_pool_backward(grad, rois, argmax, x.shape, 2, 0.5),
                  pyroi.roi_pool_backward(g32, r32, argmax, x.shape, 2, 0.5)))
    _, argmax32 = pyroi.roi_pool(x, rois, 2, 0.5, return_argmax=True, argmax_dtype=np.int32)
    pairs.append((pyroi.roi_pool_backward(grad, rois, argmax32, x.shape, 2, 0.5),
                  pyroi.roi_pool_backward(g32, r32, argmax32, x.shape, 2, 0.5)))
    _, winners = pyroi.roi_align(x, rois, 2, 0.5, mode="max", return_argmax=True)
    pairs.append((pyroi.roi_align_backward(grad, rois, x.shape, 0.5, mode="max",
                                           argmax=winners),
                  pyroi.roi_align_backward(g32, r32, x.shape, 0.5, mode="max",
                                           argmax=winners)))
    for half, single in pairs:
        assert half.dtype == np.float16
        np.testing.assert_array_equal(half, single.astype(np.float16))


def test_accumulates_in_float32():
    """16 samples exactly on pixels [2048, 1, 1, 2] per row: the float32 mean is 8208 / 16 =
    513; accumulating in float16 (spacing 2 at 2048) would drop the ones and give 512.5."""
    x = np.tile(np.array([2048, 1, 1, 2], np.float16), (4, 1)).reshape(1, 1, 4, 4)
    rois = np.array([[0, 0, 0, 4, 4]], np.float16)
    y = pyroi.roi_align(x, rois, 1, 1.0, 4, True)
    assert y.dtype == np.float16 and y[0, 0, 0, 0] == 513.0


def test_list_boxes_out_and_errors():
    x, rois = _case(4)
    parts = [rois[rois[:, 0] == i, 1:] for i in range(2)]
    ordered = np.concatenate([rois[rois[:, 0] == i] for i in range(2)])
    np.testing.assert_array_equal(pyroi.roi_align(x, parts, 2, 0.5),
                                  pyroi.roi_align(x, ordered, 2, 0.5))
    out = np.zeros((rois.shape[0], 4, 2, 2), np.float16)
    assert pyroi.roi_align(x, rois, 2, 0.5, out=out) is out
    np.testing.assert_array_equal(out, pyroi.roi_align(x, rois, 2, 0.5))
    with pytest.raises(pyroi.DTypeError, match="out"):
        pyroi.roi_align(x, rois, 2, 0.5, out=np.zeros((rois.shape[0], 4, 2, 2), np.float32))
    with pytest.raises(pyroi.DTypeError, match="boxes"):
        pyroi.roi_align(x, rois.astype(np.float64), 2)
    with pytest.raises(pyroi.DTypeError, match="boxes"):
        pyroi.roi_align(x.astype(np.float32), rois, 2)  # float32 data needs float32 boxes


def test_layer_float16():
    x, rois = _case(5)
    layer = pyroi.RoIAlign(2, 0.5, 2, aligned=True)
    y = layer(x, rois)
    assert y.dtype == np.float16
    g = layer.backward(np.ones_like(y), lda_coeff=2.0)
    assert g.dtype == np.float16
    expected = 2 * pyroi.roi_align_backward(np.ones(y.shape, np.float32),
                                            rois.astype(np.float32), x.shape, 0.5, 2, True)
    np.testing.assert_allclose(g.astype(np.float32), expected, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_onnx_float16(mode):
    x, rois = _case(6)
    batch = rois[:, 0].astype(np.int64)
    coords = np.ascontiguousarray(rois[:, 1:])
    half = ponnx.roi_align(x, coords, batch, mode=mode, output_height=2, output_width=2,
                           sampling_ratio=2, spatial_scale=0.5)
    single = ponnx.roi_align(x.astype(np.float32), coords.astype(np.float32), batch, mode=mode,
                             output_height=2, output_width=2, sampling_ratio=2,
                             spatial_scale=0.5)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, single.astype(np.float16))
    pooled = ponnx.max_roi_pool(x, rois, (2, 2), 0.5)
    np.testing.assert_array_equal(pooled, ponnx.max_roi_pool(
        x.astype(np.float32), rois.astype(np.float32), (2, 2), 0.5).astype(np.float16))


def test_ascend_float16():
    x = np.abs(np.random.default_rng(7).standard_normal((2, 3, 10, 12))).astype(np.float16)
    boxes = [np.array([[0, 0, 100, 80], [16, 16, 64, 64]], np.float16),
             np.array([[8, 0, 180, 150]], np.float16)]
    rois, counts = ascend.pack_rois(boxes)
    assert rois.dtype == np.float16
    half = ascend.roi_pooling(x, rois, counts, pooled_h=3, pooled_w=3)
    single = ascend.roi_pooling(x.astype(np.float32), rois.astype(np.float32), counts,
                                pooled_h=3, pooled_w=3)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(half, single.astype(np.float16))
    v2 = np.array([[0, 0, 0, 100, 80], [1.5, 16, 16, 64, 64]], np.float16)
    grad = np.ones((2, 3, 2, 2), np.float16)
    g16 = ascend.roi_align_v2_backward(grad, v2, x.shape, 2, 2, 1 / 16, 2, True)
    g32 = ascend.roi_align_v2_backward(grad.astype(np.float32), v2.astype(np.float32), x.shape,
                                       2, 2, 1 / 16, 2, True)
    np.testing.assert_array_equal(g16, g32.astype(np.float16))
    assert ascend.roi_align_v2_backward_workspace_size(v2, x.shape, 2, 2, 1 / 16, 2, True) == \
        ascend.roi_align_v2_backward_workspace_size(v2.astype(np.float32), x.shape, 2, 2,
                                                    1 / 16, 2, True)


def test_multiscale_float16():
    rng = np.random.default_rng(8)
    x = {"a": rng.random((1, 2, 32, 32)).astype(np.float16),
         "b": rng.random((1, 2, 16, 16)).astype(np.float16)}
    boxes = [np.array([[0, 0, 50, 60], [10, 10, 100, 120], [1, 2, 3, 4]], np.float16)]
    half = pyroi.MultiScaleRoIAlign(["a", "b"], 3, 2)
    single = pyroi.MultiScaleRoIAlign(["a", "b"], 3, 2)
    y16 = half(x, boxes, [(128, 128)])
    y32 = single({k: v.astype(np.float32) for k, v in x.items()},
                 [boxes[0].astype(np.float32)], [(128, 128)])
    assert y16.dtype == np.float16
    np.testing.assert_array_equal(y16, y32.astype(np.float16))
    swapped = pyroi.MultiScaleRoIAlign(["a", "b"], 3, 2)
    np.testing.assert_array_equal(
        swapped({k: v.astype(v.dtype.newbyteorder()) for k, v in x.items()}, boxes,
                [(128, 128)]), y16)
    g16 = half.backward(np.ones_like(y16))
    g32 = single.backward(np.ones(y32.shape, np.float32))
    for name in ("a", "b"):
        assert g16[name].dtype == np.float16
        np.testing.assert_array_equal(g16[name], g32[name].astype(np.float16))


def _pyramid(seed):
    rng = np.random.default_rng(seed)
    x = {"a": rng.standard_normal((2, 20, 32, 32)).astype(np.float16),
         "b": rng.standard_normal((2, 20, 16, 16)).astype(np.float16)}
    boxes = [np.array([[0, 0, 50, 60], [10, 10, 100, 120], [1, 2, 3, 4], [5, 5, 2, 9]],
                      np.float16),
             np.array([[0, 0, 128, 128], [30, 20, 40, 90]], np.float16)]
    return x, boxes


def test_multiscale_float16_levels_through_c():
    """The float16 pyramid goes to pyroi_roi_align_levels_forward_f16 / _backward_f16 as it
    is (uint16 views of its bits, float32 boxes): the float32 calls' results rounded once."""
    from pyroi import _core

    x, boxes = _pyramid(3)
    coords = np.concatenate(boxes).astype(np.float32)
    images = np.array([0, 0, 0, 0, 1, 1], np.int64)
    mapping = (2, 3, 224.0 / 8, 4.0, 1e-6)  # canonical scale: both levels get boxes
    wide = [v.astype(np.float32) for v in x.values()]
    y32 = np.empty((6, 20, 3, 3), np.float32)
    _core.roi_align_levels_forward(wide, [0.25, 0.125], coords, images, y32, 2, False,
                                   *mapping, 1)
    y16 = np.empty(y32.shape, np.float16)
    _core.roi_align_levels_forward([v.view(np.uint16) for v in x.values()], [0.25, 0.125],
                                   coords, images, y16.view(np.uint16), 2, False, *mapping, 2)
    np.testing.assert_array_equal(y16, y32.astype(np.float16))
    grad = np.random.default_rng(4).standard_normal(y32.shape).astype(np.float16)
    g32 = [np.empty(v.shape, np.float32) for v in x.values()]
    _core.roi_align_levels_backward(grad.astype(np.float32), coords, images, g32,
                                    [0.25, 0.125], 2, False, *mapping, 1)
    g16 = [np.empty(v.shape, np.float16) for v in x.values()]
    _core.roi_align_levels_backward(grad.view(np.uint16), coords, images,
                                    [g.view(np.uint16) for g in g16], [0.25, 0.125], 2, False,
                                    *mapping, 2)
    for half, single in zip(g16, g32):
        assert np.any(single != 0)
        np.testing.assert_array_equal(half, single.astype(np.float16))
    with pytest.raises(pyroi.DTypeError, match="float64 boxes go with float64 tensors only"):
        _core.roi_align_levels_forward([v.view(np.uint16) for v in x.values()], [0.25, 0.125],
                                       coords.astype(np.float64), images, y16.view(np.uint16),
                                       2, False, *mapping, 1)


@pytest.mark.parametrize("lda_coeff", [1.0, 0.3])
def test_multiscale_float16_backward_rounds_once(lda_coeff):
    """The layer's float16 gradient is lda_coeff * (the float32 gradient), rounded once:
    scaled before rounding when lda_coeff is not 1."""
    x, boxes = _pyramid(5)
    half = pyroi.MultiScaleRoIAlign(["a", "b"], 3, 2)
    single = pyroi.MultiScaleRoIAlign(["a", "b"], 3, 2)
    y16 = half(x, boxes, [(128, 128), (128, 128)])
    y32 = single({k: v.astype(np.float32) for k, v in x.items()},
                 [b.astype(np.float32) for b in boxes], [(128, 128), (128, 128)])
    np.testing.assert_array_equal(y16, y32.astype(np.float16))
    grad = np.random.default_rng(6).standard_normal(y16.shape).astype(np.float16) * 1000
    g16 = half.backward(grad, lda_coeff)
    g32 = single.backward(grad.astype(np.float32), lda_coeff)
    for name in ("a", "b"):
        assert g16[name].dtype == np.float16
        np.testing.assert_array_equal(g16[name], g32[name].astype(np.float16))


@pytest.mark.parametrize("aligned", [False, True])
def test_c_float16_entry_points_match(aligned):
    """pyroi_roi_align_forward_f16 / _backward_f16 (C widening and rounding) give the same
    bits as the NumPy float16 path (NumPy's astype rounding), on data with subnormals, huge
    values (overflow to inf on output) and ties."""
    from pyroi import _core

    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 5, 9, 11)) * np.exp2(rng.integers(-26, 16, (2, 5, 9, 11)))
    with np.errstate(over="ignore"):
        x = x.astype(np.float16)
    rois = random_rois(rng, 2, 9, 11, 12, np.float32, spatial_scale=0.5, inverted="both")
    coords = np.ascontiguousarray(rois[:, 1:])
    batch = rois[:, 0].astype(np.int64)
    expected = pyroi.roi_align(x, rois, (2, 3), 0.5, 2, aligned)
    out = np.empty(expected.shape, np.float16)
    _core.roi_align_forward(x.view(np.uint16), coords, batch, out.view(np.uint16), 2, 3,
                            0.5, 0.5, 2, aligned, 1)
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))
    grad = np.clip(rng.standard_normal(expected.shape) * 3e4, -6e4, 6e4).astype(np.float16)
    expected_grad = pyroi.roi_align_backward(grad, rois, x.shape, 0.5, 2, aligned)
    grad_input = np.empty(x.shape, np.float16)
    _core.roi_align_backward(grad.view(np.uint16), coords, batch,
                             grad_input.view(np.uint16), 0.5, 0.5, 2, aligned, 2)
    np.testing.assert_array_equal(grad_input.view(np.uint16), expected_grad.view(np.uint16))
    assert np.isinf(expected_grad).any() or np.abs(expected_grad).max() > 1e4


_INT_FEATURES = np.zeros((1, 4, 6, 6), np.int32)
_BOXES = np.array([[0, 0, 0, 2, 2]], np.float32)


@pytest.mark.parametrize("name, call", [
    ("input", lambda: pyroi.roi_align(_INT_FEATURES, _BOXES, 2)),
    ("grad_output", lambda: pyroi.roi_align_backward(_INT_FEATURES[:, :, :2, :2], _BOXES,
                                                     (1, 4, 6, 6))),
    ("input", lambda: pyroi.roi_pool(_INT_FEATURES, _BOXES, 2)),
    ("input", lambda: pyroi.ps_roi_pool(_INT_FEATURES, _BOXES, 1)),
    ("input", lambda: pyroi.RoIAlign(2)(_INT_FEATURES, _BOXES)),
    ("X", lambda: ponnx.roi_align(_INT_FEATURES, _BOXES[:, 1:], np.zeros(1, np.int64))),
    ("x", lambda: ascend.roi_pooling(_INT_FEATURES, *ascend.pack_rois([_BOXES[:, 1:]]),
                                     pooled_h=2, pooled_w=2)),
], ids=["roi_align", "roi_align_backward", "roi_pool", "ps_roi_pool", "RoIAlign", "onnx",
        "ascend"])
def test_wrong_dtype_message_lists_float16(name, call):
    """An integer feature map is refused with a message that names the argument and every
    dtype the operators accept, float16 included."""
    with pytest.raises(pyroi.DTypeError, match=f"^{name} must be a float16, float32 or "
                                               "float64 array, got dtype int32$"):
        call()
