"""Precise RoI Pooling (docs/semantics.md §12): against the cell-by-cell float64 reference
(tests/reference_prroi_pool.py), mmcv's and vacancy/PreciseRoIPooling's known answers,
central finite differences of the map and the boxes, the adjoint identity, thread-count
invariance, float16, argument errors and hostile boxes."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import pyroi
from reference_prroi_pool import (prroi_pool_backward_ref, prroi_pool_boxes_fd,
                                  prroi_pool_ref)

RNG = np.random.default_rng(20261207)


# ---- known answers ----------------------------------------------------------------------
# open-mmlab/mmcv tests/test_ops/test_prroi_pool.py at commit
# 1917af534fa467cadcf11c60758e75409335c4a8: inputs (features, rois), 2x2 output, scale 1,
# output.backward(ones); expected outputs, input gradients and rois gradients as listed
# there, compared by mmcv with np.allclose(..., 1e-3) (rtol 1e-3).
MMCV_INPUTS = [
    ([[[[1., 2.], [3., 4.]]]], [[0., 0., 0., 1., 1.]]),
    ([[[[1., 2.], [3., 4.]], [[4., 3.], [2., 1.]]]], [[0., 0., 0., 1., 1.]]),
    ([[[[1., 2., 5., 6.], [3., 4., 7., 8.], [9., 10., 13., 14.], [11., 12., 15., 16.]]]],
     [[0., 0., 0., 3., 3.]]),
]
MMCV_OUTPUTS = [
    ([[[[1.75, 2.25], [2.75, 3.25]]]], [[[[1., 1.], [1., 1.]]]], [[0., 2., 4., 2., 4.]]),
    ([[[[1.75, 2.25], [2.75, 3.25]], [[3.25, 2.75], [2.25, 1.75]]]],
     [[[[1., 1.], [1., 1.]], [[1., 1.], [1., 1.]]]], [[0., 0., 0., 0., 0.]]),
    ([[[[3.75, 6.91666651], [10.08333302, 13.25]]]],
     [[[[0.11111111, 0.22222224, 0.22222222, 0.11111111],
        [0.22222224, 0.444444448, 0.44444448, 0.22222224],
        [0.22222224, 0.44444448, 0.44444448, 0.22222224],
        [0.11111111, 0.22222224, 0.22222224, 0.11111111]]]],
     [[0.0, 3.33333302, 6.66666603, 3.33333349, 6.66666698]]),
]


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mmcv_known_answers(case, dtype):
    x = np.array(MMCV_INPUTS[case][0], dtype)
    rois = np.array(MMCV_INPUTS[case][1], dtype)
    output, input_grad, rois_grad = (np.array(v, dtype) for v in MMCV_OUTPUTS[case])
    y = pyroi.prroi_pool(x, rois, (2, 2), 1.0)
    grad_input, grad_rois = pyroi.prroi_pool_backward(np.ones_like(y), rois, x.shape, 1.0,
                                                      input=x)
    for got, want in ((y, output), (grad_input, input_grad), (grad_rois, rois_grad)):
        assert got.dtype == dtype
        assert np.allclose(got, want, 1e-3)  # mmcv's tolerance
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # and far closer


def test_vacancy_unit_bins_are_a_two_by_two_average_pool():
    """vacancy/PreciseRoIPooling pytorch/tests/test_prroi_pooling2d.py::test_forward, re-derived:
    with scale 0.5 the boxes (0, 0, 14, 14) and (14, 14, 28, 28) become 7 x 7 unit bins on
    pixel corners, and the integral of the bilinear patch over a unit cell is the mean of
    its four corners: F.avg_pool2d(features, 2, stride=1) at the boxes' cells."""
    features = RNG.random((4, 16, 24, 32)).astype(np.float32)
    rois = np.array([[0, 0, 0, 14, 14], [1, 14, 14, 28, 28]], np.float32)
    out = pyroi.prroi_pool(features, rois, 7, 0.5)
    gold = (features[:, :, :-1, :-1] + features[:, :, 1:, :-1] + features[:, :, :-1, 1:]
            + features[:, :, 1:, 1:]) / 4
    np.testing.assert_allclose(out[0], gold[0, :, :7, :7], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], gold[1, :, 7:14, 7:14], rtol=1e-5, atol=1e-6)


def test_a_box_straddling_the_border_averages_the_fading_surface():
    """A constant-1 map 4 wide: x in [3, 4] falls linearly to 0, [4, 5] is 0: mean 0.25."""
    x = np.ones((1, 1, 4, 4))
    assert pyroi.prroi_pool(x, np.array([[0, 3, 0, 5, 1.]]), 1)[0, 0, 0, 0] == pytest.approx(0.25)
    # inside, a constant map is reproduced exactly by every bin
    np.testing.assert_allclose(pyroi.prroi_pool(x, np.array([[0, 0.3, 0.1, 2.9, 3.]]), 3), 1.0,
                               rtol=1e-14)


# ---- the reference ----------------------------------------------------------------------

def random_boxes(count, height, width, images):
    x1 = RNG.uniform(-3, width + 1, count)
    y1 = RNG.uniform(-3, height + 1, count)
    return np.stack([RNG.integers(0, images, count), x1, y1,
                     x1 + RNG.uniform(0.01, width, count), y1 + RNG.uniform(0.01, height, count)],
                    axis=1)


EDGE_BOXES = np.array([
    [0, 3, 0, 5, 1],          # straddling the right border
    [0, -2.5, -2.5, -0.5, -0.5],  # fading in from the top-left corner
    [1, 20, 20, 25, 25],       # off the map
    [1, -8, -8, -1, -1],       # off the map, exactly at the fade's end
    [0, 1, 1, 1.0001, 1.0002],  # tiny
    [0, 2, 2, 1, 3],           # inverted in x: 0
    [1, 1, 1, 3, 1],           # empty in y: 0
    [0, 4, 4, 2, 2],           # inverted
    [1, -100, -50, 100, 60],   # far larger than the map
    [0, 0.5, 0.5, 6.5, 4.5],   # straddling two borders, odd sizes
])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("output_size, scale", [((2, 3), 1.0), (1, 0.5), ((5, 4), 2.0)])
def test_forward_and_input_gradient_match_the_reference(dtype, output_size, scale):
    x = RNG.standard_normal((2, 3, 7, 9)).astype(dtype)
    boxes = np.concatenate([random_boxes(12, 7 / scale, 9 / scale, 2), EDGE_BOXES]).astype(dtype)
    y = pyroi.prroi_pool(x, boxes, output_size, scale)
    tol = 2e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(y, prroi_pool_ref(x, boxes, output_size, scale), rtol=tol,
                               atol=tol)
    g = RNG.standard_normal(y.shape).astype(dtype)
    grad_input, grad_boxes = pyroi.prroi_pool_backward(g, boxes, x.shape, scale)
    assert grad_boxes is None
    np.testing.assert_allclose(grad_input, prroi_pool_backward_ref(g, boxes, x.shape, scale),
                               rtol=tol, atol=tol)


def test_degenerate_boxes_give_zero_outputs_and_gradients():
    x = RNG.standard_normal((2, 2, 6, 6))
    boxes = EDGE_BOXES[[2, 3, 5, 6, 7]]
    y = pyroi.prroi_pool(x, boxes, 3)
    assert not y.any()
    grad_input, grad_boxes = pyroi.prroi_pool_backward(np.ones_like(y), boxes, x.shape, input=x)
    assert not grad_input.any() and not grad_boxes.any()


def test_no_rois_and_no_channels():
    x = RNG.standard_normal((1, 2, 4, 4))
    boxes = np.zeros((0, 5))
    y = pyroi.prroi_pool(x, boxes, 2)
    assert y.shape == (0, 2, 2, 2)
    grad_input, grad_boxes = pyroi.prroi_pool_backward(y, boxes, x.shape, input=x)
    assert grad_input.shape == x.shape and not grad_input.any()
    assert grad_boxes.shape == (0, 5)
    empty = np.zeros((1, 0, 4, 4))
    rois = np.array([[0, 0, 0, 2, 2.]])
    assert pyroi.prroi_pool(empty, rois, 2).shape == (1, 0, 2, 2)
    _, grad_boxes = pyroi.prroi_pool_backward(np.zeros((1, 0, 2, 2)), rois, empty.shape,
                                              input=empty)
    assert not grad_boxes.any()


# ---- gradients ----------------------------------------------------------------------------

def test_box_gradient_matches_finite_differences():
    """Central differences of the reference forward, float64, boxes away from the clamp."""
    x = RNG.standard_normal((2, 3, 7, 9))
    # EDGE_BOXES[4] is tiny and starts on a pixel, where the surface has a kink: a step of
    # 1e-6 against bins of 2.5e-5 would not resolve it; the same box off the kink does
    tiny = np.array([[0, 1.3, 1.4, 1.3001, 1.4002]])
    boxes = np.concatenate([random_boxes(10, 7, 9, 2), EDGE_BOXES[[0, 1, 8, 9]], tiny])
    for output_size, scale in (((2, 3), 1.0), (1, 0.5), ((4, 4), 1.5)):
        g = RNG.standard_normal((boxes.shape[0], 3, *np.broadcast_to(output_size, 2)))
        _, grad_boxes = pyroi.prroi_pool_backward(g, boxes, x.shape, scale, input=x)
        fd = prroi_pool_boxes_fd(x, boxes, g, output_size, scale)
        np.testing.assert_allclose(grad_boxes, fd, rtol=1e-4, atol=2e-5)
        assert (grad_boxes[:, 0] == 0).all()


def test_box_gradient_of_pyroi_forward_by_finite_differences_float64():
    """The same against pyroi's own forward (its separable form), tighter."""
    x = RNG.standard_normal((1, 4, 8, 8))
    boxes = random_boxes(6, 8, 8, 1)
    g = RNG.standard_normal((6, 4, 3, 2))
    _, grad_boxes = pyroi.prroi_pool_backward(g, boxes, x.shape, input=x)
    h = 1e-6
    for k in range(6):
        for col in range(1, 5):
            plus, minus = boxes.copy(), boxes.copy()
            plus[k, col] += h
            minus[k, col] -= h
            fd = (np.sum(pyroi.prroi_pool(x, plus, (3, 2)) * g)
                  - np.sum(pyroi.prroi_pool(x, minus, (3, 2)) * g)) / (2 * h)
            assert grad_boxes[k, col] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_input_gradient_matches_finite_differences():
    x = RNG.standard_normal((1, 2, 5, 6))
    boxes = np.array([[0, 0.3, -0.7, 4.2, 3.9], [0, 2.5, 1.5, 6.5, 5.5]])
    g = RNG.standard_normal((2, 2, 2, 2))
    grad_input, _ = pyroi.prroi_pool_backward(g, boxes, x.shape)
    fd = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[index] += 1e-6
        minus[index] -= 1e-6
        fd[index] = (np.sum(pyroi.prroi_pool(plus, boxes, 2) * g)
                     - np.sum(pyroi.prroi_pool(minus, boxes, 2) * g)) / 2e-6
    np.testing.assert_allclose(grad_input, fd, rtol=1e-6, atol=1e-8)


def test_adjoint_identity():
    x = RNG.standard_normal((3, 4, 11, 13))
    boxes = np.concatenate([random_boxes(40, 11, 13, 3), EDGE_BOXES])
    y = pyroi.prroi_pool(x, boxes, (3, 4), 0.8)
    g = RNG.standard_normal(y.shape)
    grad_input, _ = pyroi.prroi_pool_backward(g, boxes, x.shape, 0.8)
    assert np.vdot(y, g) == pytest.approx(np.vdot(x, grad_input), rel=1e-12)


def test_box_gradient_forms():
    """The box gradient comes back in the form the boxes were given."""
    x = RNG.standard_normal((2, 2, 6, 6))
    rows = random_boxes(5, 6, 6, 2)
    rows[:, 0] = [0, 1, 0, 1, 1]
    g = RNG.standard_normal((5, 2, 2, 2))
    _, by_rows = pyroi.prroi_pool_backward(g, rows, x.shape, input=x)
    _, by_indices = pyroi.prroi_pool_backward(g, rows[:, 1:], x.shape, input=x,
                                              batch_indices=rows[:, 0].astype(np.int64))
    np.testing.assert_array_equal(by_rows[:, 1:], by_indices)
    order = np.argsort(rows[:, 0], kind="stable")
    listed = [rows[rows[:, 0] == i, 1:] for i in range(2)]
    _, by_list = pyroi.prroi_pool_backward(g[order], listed, x.shape, input=x)
    assert [part.shape for part in by_list] == [(2, 4), (3, 4)]
    np.testing.assert_array_equal(np.concatenate(by_list), by_rows[order, 1:])


# ---- threads, float16 ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_are_bit_identical_for_every_thread_count(dtype):
    x = RNG.standard_normal((2, 70, 24, 20)).astype(dtype)  # 70 channels: blocks of 8
    boxes = np.concatenate([random_boxes(60, 24, 20, 2), EDGE_BOXES]).astype(dtype)
    g = RNG.standard_normal((boxes.shape[0], 70, 7, 7)).astype(dtype)
    results = []
    for threads in (1, 2, 3, 4):
        y = pyroi.prroi_pool(x, boxes, 7, num_threads=threads)
        gi, gb = pyroi.prroi_pool_backward(g, boxes, x.shape, input=x, num_threads=threads)
        results.append((y, gi, gb))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()


def test_float16_is_the_float32_result_rounded_once():
    x32 = RNG.standard_normal((2, 5, 9, 10)).astype(np.float32)
    x16 = x32.astype(np.float16)
    boxes = np.concatenate([random_boxes(20, 9, 10, 2), EDGE_BOXES]).astype(np.float32)
    y16 = pyroi.prroi_pool(x16, boxes, 3)
    assert y16.dtype == np.float16
    expected = pyroi.prroi_pool(x16.astype(np.float32), boxes, 3).astype(np.float16)
    np.testing.assert_array_equal(y16, expected)
    g16 = RNG.standard_normal(y16.shape).astype(np.float16)
    gi16, gb = pyroi.prroi_pool_backward(g16, boxes, x16.shape, input=x16)
    gi32, gb32 = pyroi.prroi_pool_backward(g16.astype(np.float32), boxes, x16.shape,
                                           input=x16.astype(np.float32))
    assert gi16.dtype == np.float16 and gb.dtype == np.float32
    np.testing.assert_array_equal(gi16, gi32.astype(np.float16))
    np.testing.assert_array_equal(gb, gb32)


def test_layer_forward_and_backward():
    layer = pyroi.PrRoIPool((2, 3), 0.5)
    assert layer.output_size == (2, 3) and layer.spatial_scale == 0.5
    x = RNG.standard_normal((2, 3, 8, 8))
    boxes = random_boxes(4, 16, 16, 2)
    y = layer(x, boxes)
    g = RNG.standard_normal(y.shape)
    x_before = x.copy()
    x += 1.0  # the layer kept its own copy of the input
    grad_input, grad_boxes = layer.backward(g, 2.0)
    want_input, want_boxes = pyroi.prroi_pool_backward(g, boxes, x.shape, 0.5, input=x_before)
    np.testing.assert_allclose(grad_input, 2 * want_input, rtol=1e-15)
    np.testing.assert_allclose(grad_boxes, 2 * want_boxes, rtol=1e-15)
    layer.eval()
    layer(x, boxes)
    with pytest.raises(pyroi.PyroiError):
        layer.backward(g)


# ---- bad and hostile input ------------------------------------------------------------------

def test_bad_arguments_raise_naming_them():
    x = np.ones((1, 2, 4, 4), np.float32)
    boxes = np.array([[0, 0, 0, 2, 2]], np.float32)
    with pytest.raises(pyroi.DTypeError, match="input"):
        pyroi.prroi_pool(x.astype(np.int32), boxes, 2)
    with pytest.raises(pyroi.ShapeError, match="input"):
        pyroi.prroi_pool(x[0], boxes, 2)
    with pytest.raises(pyroi.InvalidArgumentError, match="output_size"):
        pyroi.prroi_pool(x, boxes, 0)
    with pytest.raises(pyroi.InvalidArgumentError, match="spatial_scale"):
        pyroi.prroi_pool(x, boxes, 2, -1.0)
    with pytest.raises(pyroi.InvalidArgumentError, match="num_threads"):
        pyroi.prroi_pool(x, boxes, 2, num_threads=-2)
    with pytest.raises(pyroi.BatchIndexError, match="boxes"):
        pyroi.prroi_pool(x, np.array([[1, 0, 0, 2, 2]], np.float32), 2)
    with pytest.raises(pyroi.DTypeError, match="boxes"):
        pyroi.prroi_pool(x, boxes.astype(np.float64), 2)
    g = np.ones((1, 2, 2, 2), np.float32)
    with pytest.raises(pyroi.ShapeError, match="input"):
        pyroi.prroi_pool_backward(g, boxes, x.shape, input=x[:, :, :3])
    with pytest.raises(pyroi.DTypeError, match="input"):
        pyroi.prroi_pool_backward(g, boxes, x.shape, input=x.astype(np.float64))
    with pytest.raises(pyroi.ShapeError, match="channels"):
        pyroi.prroi_pool_backward(g, boxes, (1, 3, 4, 4))
    with pytest.raises(pyroi.ShapeError, match="boxes"):
        pyroi.prroi_pool_backward(np.ones((2, 2, 2, 2), np.float32), boxes, x.shape)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_boxes_raise_box_error(bad):
    x = np.ones((1, 1, 4, 4))
    boxes = np.array([[0, 0, 0, 2, 2], [0, 1, bad, 3, 3]])
    with pytest.raises(pyroi.BoxError, match="RoI 1"):
        pyroi.prroi_pool(x, boxes, 2)
    with pytest.raises(pyroi.BoxError, match="RoI 1"):
        pyroi.prroi_pool_backward(np.ones((2, 1, 2, 2)), boxes, x.shape, input=x)


def test_boxes_that_overflow_when_scaled_raise_box_error():
    x = np.ones((1, 1, 4, 4))
    with pytest.raises(pyroi.BoxError, match="RoI 0"):
        pyroi.prroi_pool(x, np.array([[0, -1e300, 0, 1e300, 2]]), 1, 1e10)


def test_huge_boxes_cost_the_map_not_the_box():
    x = RNG.standard_normal((1, 8, 64, 64))
    boxes = np.array([[0, -1e30, -1e30, 1e30, 1e30], [0, -1e9, -2e9, 3e9, 1e9],
                      [0, -3e38, 1, 3e38, 2]])
    start = time.perf_counter()
    y = pyroi.prroi_pool(x, boxes, 7)
    grad_input, grad_boxes = pyroi.prroi_pool_backward(np.ones_like(y), boxes, x.shape, input=x)
    assert time.perf_counter() - start < 5.0
    assert np.isfinite(y).all() and np.isfinite(grad_input).all()
    assert np.isfinite(grad_boxes).all()
    # one bin over the whole map and beyond: the map's integral over the bin's area
    one = pyroi.prroi_pool(x, np.array([[0, -1e6, -1e6, 1e6, 1e6]]), 1)
    assert one[0, :, 0, 0] == pytest.approx(x[0].sum(axis=(1, 2)) / 4e12, rel=1e-9)


def test_out_is_written_and_checked():
    x = RNG.standard_normal((1, 2, 5, 5))
    boxes = np.array([[0, 0.5, 0.5, 3.5, 4.5]])
    out = np.full((1, 2, 2, 2), np.nan)
    assert pyroi.prroi_pool(x, boxes, 2, out=out) is out
    np.testing.assert_allclose(out, prroi_pool_ref(x, boxes, 2), rtol=1e-12)
    with pytest.raises(pyroi.ShapeError):
        pyroi.prroi_pool(x, boxes, 2, out=np.zeros((1, 2, 3, 3)))


CHILD = r"""
import signal, sys, time
import numpy as np
import pyroi
signal.signal(signal.SIGINT, signal.default_int_handler)
op = sys.argv[1]
x = np.ones((1, 16, 2048, 2048), np.float32)
boxes = np.tile(np.array([[0, -10, -10, 2100, 2100]], np.float32), (200, 1))
g = np.ones((200, 16, 7, 7), np.float32)
call = {"forward": lambda: pyroi.prroi_pool(x, boxes, 7, num_threads=1),
        "backward": lambda: pyroi.prroi_pool_backward(g, boxes, x.shape, num_threads=1),
        "boxes": lambda: pyroi.prroi_pool_backward(g, boxes, x.shape, input=x,
                                                   num_threads=1)}[op]
print("READY", flush=True)
try:
    call()
    print("FINISHED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", time.monotonic(), flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt", reason="POSIX signals")
@pytest.mark.parametrize("op", ["forward", "backward", "boxes"])
def test_sigint_stops_whole_map_boxes_quickly(op):
    """Each RoI is 49 whole-map bins of 16 channels on a 2048^2 map (~ 0.3 s of work a RoI on
    one Zen 1 thread, less on Zen 4: 200 of them, so that the call outlasts the second before
    the signal): the cancel flag is read by the work done, not by the RoIs."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, op], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "READY", child.stderr.read()
        time.sleep(1.0)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    words = out.split()
    assert words[:1] == ["INTERRUPTED"], (out, err)
    assert float(words[1]) - sent < 0.5


# ---- pyroi.torch ----------------------------------------------------------------------------

def test_torch_autograd_through_the_map_and_the_boxes():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    for case in range(3):  # mmcv's known answers, through autograd
        x = torch.tensor(MMCV_INPUTS[case][0], requires_grad=True)
        rois = torch.tensor(MMCV_INPUTS[case][1], requires_grad=True)
        y = pt.prroi_pool(x, rois, (2, 2), 1.0)
        y.backward(torch.ones_like(y))
        output, input_grad, rois_grad = MMCV_OUTPUTS[case]
        np.testing.assert_allclose(y.detach().numpy(), output, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), input_grad, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(rois.grad.numpy(), rois_grad, rtol=1e-6, atol=1e-6)
    x = torch.randn(2, 3, 6, 7, dtype=torch.float64, requires_grad=True)
    coords = torch.tensor([[0.3, 0.2, 4.1, 3.3], [1.2, 2.3, 5.5, 4.9]], dtype=torch.float64,
                          requires_grad=True)
    images = torch.tensor([[0.], [1.]], dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda a, c: pt.prroi_pool(a, torch.cat([images, c], 1), (2, 3), 0.9), (x, coords))
    layer = pt.PrRoIPool((2, 3), 0.9)
    assert repr(layer) == "PrRoIPool(output_size=(2, 3), spatial_scale=0.9)"
    rois = torch.cat([images, coords.detach()], 1)
    assert torch.equal(layer(x, rois), pt.prroi_pool(x, rois, (2, 3), 0.9))


@pytest.mark.filterwarnings(  # opcheck's own gradient comparison reads a non-leaf's .grad
    "ignore:The .grad attribute of a Tensor that is not a leaf")
def test_torch_opcheck_and_compile():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    from torch.library import opcheck
    x = torch.randn(2, 3, 6, 7, dtype=torch.float64, requires_grad=True)
    rois = torch.tensor([[0, 0.3, 0.2, 4.1, 3.3], [1, 1.2, 2.3, 5.5, 4.9]], dtype=torch.float64,
                        requires_grad=True)
    opcheck(torch.ops.pyroi.prroi_pool.default, (x, rois, 0.9, 2, 3))
    grad = torch.randn(2, 3, 2, 3, dtype=torch.float64)
    opcheck(torch.ops.pyroi._prroi_pool_backward.default, (grad, rois.detach(), x.detach(), 0.9))
    compiled = torch.compile(lambda a, b: pt.prroi_pool(a, b, 2), fullgraph=True)
    assert torch.equal(compiled(x, rois), pt.prroi_pool(x, rois, 2))
