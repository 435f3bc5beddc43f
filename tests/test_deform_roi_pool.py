"""Deformable RoI pooling (docs/semantics.md §14): aligned RoIAlign's bits with zero offsets,
mmcv's known answers, the step-by-step reference (tests/reference_deform_roi_pool.py), central
finite differences of the map, the offsets and the mask (samples pushed into the halo ring
and off the map included), the adjoint identity, where mmcv's offset formula departs from the
derivative, thread-count invariance, argument errors and hostile offsets."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import pyroi
from reference_deform_roi_pool import (deform_roi_pool_backward_ref,
                                       deform_roi_pool_offset_grad_ref, deform_roi_pool_ref)

RNG = np.random.default_rng(20261208)


def _case(dtype, n=2, c=3, h=9, w=11, k=6, pooled=(3, 2), spread=0.8, seed=0):
    """A map, RoIs (some off the map, tiny, inverted), offsets and a mask."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    corners = rng.uniform(-4, max(h, w) + 4, (k, 4))
    corners[0] = [1, 1, 1.3, 1.2]  # tiny
    corners[1] = [7, 6, 2, 1]  # inverted
    rois = np.concatenate([rng.integers(0, n, (k, 1)), corners], 1).astype(dtype)
    offset = (rng.standard_normal((k, 2) + pooled) * spread).astype(dtype)
    mask = rng.uniform(0, 1, (k, 1) + pooled).astype(dtype)
    return x, rois, offset, mask


# ---- known answers ----------------------------------------------------------------------
# open-mmlab/mmcv tests/test_ops/test_deform_roi_pool.py at commit
# 0a4cd90a005c6c98558fc385422e409a672e495a: DeformRoIPoolPack((2, 2), C, spatial_scale=1,
# sampling_ratio=2) - whose offset head's last layer starts at zero, so the offsets are 0 -,
# output.backward(ones); expected outputs and input gradients as listed there, compared with
# np.allclose(..., 1e-3).
MMCV_INPUTS = [
    ([[[[1., 2.], [3., 4.]]]], [[0., 0., 0., 1., 1.]]),
    ([[[[1., 2.], [3., 4.]], [[4., 3.], [2., 1.]]]], [[0., 0., 0., 1., 1.]]),
    ([[[[1., 2., 5., 6.], [3., 4., 7., 8.], [9., 10., 13., 14.], [11., 12., 15., 16.]]]],
     [[0., 0., 0., 3., 3.]]),
]
MMCV_OUTPUTS = [
    ([[[[1, 1.25], [1.5, 1.75]]]], [[[[3.0625, 0.4375], [0.4375, 0.0625]]]]),
    ([[[[1., 1.25], [1.5, 1.75]], [[4, 3.75], [3.5, 3.25]]]],
     [[[[3.0625, 0.4375], [0.4375, 0.0625]], [[3.0625, 0.4375], [0.4375, 0.0625]]]]),
    ([[[[1.9375, 4.75], [7.5625, 10.375]]]],
     [[[[0.47265625, 0.4296875, 0.4296875, 0.04296875],
        [0.4296875, 0.390625, 0.390625, 0.0390625],
        [0.4296875, 0.390625, 0.390625, 0.0390625],
        [0.04296875, 0.0390625, 0.0390625, 0.00390625]]]]),
]


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zero_offset", [False, True])
def test_mmcv_known_answers(case, dtype, zero_offset):
    x = np.array(MMCV_INPUTS[case][0], dtype)
    rois = np.array(MMCV_INPUTS[case][1], dtype)
    output, input_grad = (np.array(v, dtype) for v in MMCV_OUTPUTS[case])
    offset = np.zeros((1, 2, 2, 2), dtype) if zero_offset else None
    y = pyroi.deform_roi_pool(x, rois, offset, (2, 2), 1.0, 2)
    grad_input, _, _ = pyroi.deform_roi_pool_backward(np.ones_like(y), rois, x.shape, offset,
                                                      1.0, 2)
    for got, want in ((y, output), (grad_input, input_grad)):
        assert got.dtype == dtype
        assert np.allclose(got, want, 1e-3)  # mmcv's tolerance
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)  # and far closer


# ---- zero offsets: aligned RoIAlign, bit for bit ----------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ratio", [0, 1, 3])
def test_zero_offsets_are_aligned_roi_align_bit_for_bit(dtype, ratio):
    x, rois, _, _ = _case(dtype, c=5, h=13, w=17, k=40, pooled=(7, 5), seed=ratio)
    for offset in (None, np.zeros((40, 2, 7, 5), dtype)):
        y = pyroi.deform_roi_pool(x, rois, offset, (7, 5), 0.75, ratio)
        assert np.array_equal(y, pyroi.roi_align(x, rois, (7, 5), 0.75, ratio, True))
        g = RNG.standard_normal(y.shape).astype(dtype)
        grad_input, _, _ = pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 0.75, ratio)
        assert np.array_equal(grad_input,
                              pyroi.roi_align_backward(g, rois, x.shape, 0.75, ratio, True))


# ---- the reference ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ratio", [0, 2])
@pytest.mark.parametrize("with_mask", [False, True])
def test_forward_and_input_gradient_match_the_reference(dtype, ratio, with_mask):
    x, rois, offset, mask = _case(dtype, spread=3.0, seed=ratio + 7 * with_mask)
    mask = mask if with_mask else None
    y = pyroi.deform_roi_pool(x, rois, offset, (3, 2), 0.9, ratio, 0.1, mask=mask)
    ref = deform_roi_pool_ref(x, rois, offset, (3, 2), 0.9, ratio, 0.1, mask)
    assert np.array_equal(y, ref)  # the same roundings in the same order
    g = RNG.standard_normal(y.shape).astype(dtype)
    grad_input, _, _ = pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 0.9, ratio,
                                                      0.1, mask=mask)
    ref = deform_roi_pool_backward_ref(g, rois, x.shape, offset, 0.9, ratio, 0.1, mask)
    assert np.array_equal(grad_input, ref)


@pytest.mark.parametrize("with_mask", [False, True])
def test_offset_and_mask_gradients_match_the_reference(with_mask):
    x, rois, offset, mask = _case(np.float64, spread=3.0, seed=11)
    mask = mask if with_mask else None
    g = RNG.standard_normal((6, 3, 3, 2))
    _, grad_offset, grad_mask = pyroi.deform_roi_pool_backward(
        g, rois, x.shape, offset, 0.9, 0, 0.1, input=x, mask=mask)
    ref_offset, ref_mask = deform_roi_pool_offset_grad_ref(g, x, rois, offset, 0.9, 0, 0.1, mask)
    np.testing.assert_allclose(grad_offset, ref_offset, rtol=1e-12, atol=1e-12)
    if with_mask:
        np.testing.assert_allclose(grad_mask, ref_mask, rtol=1e-12, atol=1e-12)
    else:
        assert grad_mask is None


# ---- finite differences (float64) -----------------------------------------------------------

def _loss(x, rois, offset, mask, g, ratio=2):
    y = pyroi.deform_roi_pool(x, rois, offset, g.shape[2:], 1.0, ratio, 0.1, mask=mask)
    return float((y * g).sum())


def _away_from_kinks(x_shape, rois, offset, ratio, step):
    """Offsets whose every sample is at least `step` away from a whole coordinate and from the
    halo's edges on both axes (there the derivative jumps), else None."""
    from reference_deform_roi_pool import _bins
    for _, _, _, _, points, _, _, _ in _bins(x_shape, rois, offset, offset.shape[2:], 1.0, ratio,
                                             0.1, np.float64):
        for y, x in points:
            for value in (y, x):
                if abs(value - round(value)) < 20 * step:
                    return False
    return True


def test_offset_gradient_matches_finite_differences_also_in_the_halo_ring():
    """Offsets large enough to push bins into the one-pixel ring outside the map and off it;
    each offset is tested where no sample sits near a kink."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 6, 7))
    rois = np.array([[0, 0.3, 0.2, 6.1, 5.7], [0, 3.3, 2.1, 6.9, 6.4], [0, -0.7, -0.4, 2.2, 1.9]])
    g = rng.standard_normal((3, 2, 2, 3))
    step, checked = 1e-6, 0
    for trial in range(40):
        offset = rng.uniform(-6, 6, (3, 2, 2, 3))
        if not _away_from_kinks(x.shape, rois, offset, 2, step):
            continue
        _, grad_offset, _ = pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 1.0, 2, 0.1,
                                                           input=x)
        fd = np.zeros_like(offset)
        for index in np.ndindex(offset.shape):
            up, down = offset.copy(), offset.copy()
            up[index] += step
            down[index] -= step
            fd[index] = (_loss(x, rois, up, None, g) - _loss(x, rois, down, None, g)) / (2 * step)
        np.testing.assert_allclose(grad_offset, fd, rtol=1e-6, atol=1e-7)
        checked += 1
    assert checked >= 10


def test_mask_and_input_gradients_match_finite_differences():
    x, rois, offset, mask = _case(np.float64, seed=5, spread=2.0)
    g = RNG.standard_normal((6, 3, 3, 2))
    grad_input, _, grad_mask = pyroi.deform_roi_pool_backward(
        g, rois, x.shape, offset, 1.0, 2, 0.1, input=x, mask=mask)
    step = 1e-6
    for index in list(np.ndindex(mask.shape))[::3]:
        up, down = mask.copy(), mask.copy()
        up[index] += step
        down[index] -= step
        fd = (_loss(x, rois, offset, up, g) - _loss(x, rois, offset, down, g)) / (2 * step)
        assert grad_mask[index] == pytest.approx(fd, rel=1e-6, abs=1e-8)
    for index in list(np.ndindex(x.shape))[::17]:
        up, down = x.copy(), x.copy()
        up[index] += step
        down[index] -= step
        fd = (_loss(up, rois, offset, mask, g) - _loss(down, rois, offset, mask, g)) / (2 * step)
        assert grad_input[index] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_adjoint_identity():
    x, rois, offset, mask = _case(np.float64, c=4, seed=9, spread=2.0)
    y = pyroi.deform_roi_pool(x, rois, offset, (3, 2), 0.8, 0, 0.1, mask=mask)
    g = RNG.standard_normal(y.shape)
    grad_input, _, _ = pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 0.8, 0, 0.1,
                                                      mask=mask)
    assert float((y * g).sum()) == pytest.approx(float((x * grad_input).sum()), rel=1e-12)


# ---- mmcv's offset formula in the halo ring ----------------------------------------------

def test_mmcv_offset_formula_departs_from_the_derivative_in_the_halo_ring():
    """A bin sampled once at y in the bottom ring (H - 1, H): the forward moves with x along
    the last row, so d/d offset_x is the row's slope; mmcv's formula (from the unclamped y,
    with y_low = y_high) gives 0. Left ring x in (-1, 0): the forward is flat in x, mmcv gives
    the slope of columns 0 -> 1."""
    x = np.arange(20, dtype=np.float64).reshape(1, 1, 4, 5) ** 1.5
    g = np.ones((1, 1, 1, 1))
    for roi, offset in (([0, 1.2, 3.0, 2.2, 4.0], [0.0, 1.5]),   # y = 3 + 0.15: bottom ring
                        ([0, 0.0, 1.0, 1.0, 2.0], [-7.0, 0.0])):  # x = 0 - 0.7: left ring
        rois = np.array([roi])
        shift = np.array(offset).reshape(1, 2, 1, 1)
        _, grad_offset, _ = pyroi.deform_roi_pool_backward(g, rois, x.shape, shift, 1.0, 1, 0.1,
                                                           input=x)
        exact, _ = deform_roi_pool_offset_grad_ref(g, x, rois, shift, 1.0, 1, 0.1)
        mmcv, _ = deform_roi_pool_offset_grad_ref(g, x, rois, shift, 1.0, 1, 0.1, formula="mmcv")
        step = 1e-6
        up, down = shift.copy(), shift.copy()
        up[0, 0] += step
        down[0, 0] -= step
        fd = (_loss(x, rois, up, None, g, 1) - _loss(x, rois, down, None, g, 1)) / (2 * step)
        assert grad_offset[0, 0, 0, 0] == pytest.approx(fd, rel=1e-7, abs=1e-9)
        assert exact[0, 0, 0, 0] == pytest.approx(fd, rel=1e-7, abs=1e-9)
        assert abs(mmcv[0, 0, 0, 0] - fd) > 0.05


def test_bins_moved_off_the_map_give_zero_and_no_gradient():
    x, rois, _, mask = _case(np.float64, seed=4)
    offset = np.full((6, 2, 3, 2), 1e6)
    y = pyroi.deform_roi_pool(x, rois, offset, (3, 2), 1.0, 2)
    assert not y.any()
    grad_input, grad_offset, grad_mask = pyroi.deform_roi_pool_backward(
        np.ones_like(y), rois, x.shape, offset, 1.0, 2, input=x, mask=mask)
    assert not grad_input.any() and not grad_offset.any() and not grad_mask.any()


# ---- threads, forms, empty calls ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_are_bit_identical_for_every_thread_count(dtype):
    x, rois, offset, mask = _case(dtype, c=70, h=20, w=24, k=60, pooled=(4, 3), seed=2)
    g = RNG.standard_normal((60, 70, 4, 3)).astype(dtype)
    results = []
    for threads in (1, 2, 3, 8):
        y = pyroi.deform_roi_pool(x, rois, offset, (4, 3), 1.0, 0, mask=mask,
                                  num_threads=threads)
        grads = pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 1.0, 0, input=x,
                                               mask=mask, num_threads=threads)
        results.append((y,) + grads)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


def test_box_forms_and_strided_arrays():
    x, rois, offset, mask = _case(np.float32, seed=6)
    want = pyroi.deform_roi_pool(x, rois, offset, (3, 2), mask=mask)
    as_list = [rois[rois[:, 0] == n, 1:] for n in range(2)]
    order = np.argsort(rois[:, 0], kind="stable")
    got = pyroi.deform_roi_pool(x, as_list, offset[order], (3, 2), mask=mask[order])
    assert np.array_equal(got, want[order])
    got = pyroi.deform_roi_pool(x, rois[:, 1:], offset, (3, 2), mask=mask,
                                batch_indices=rois[:, 0].astype(np.int64))
    assert np.array_equal(got, want)
    wide = np.zeros((6, 4, 5, 2), np.float32)
    wide[:, 1:3, ::2] = offset
    got = pyroi.deform_roi_pool(np.asfortranarray(x), rois, wide[:, 1:3, ::2], (3, 2),
                                mask=mask[:, :, ::-1][:, :, ::-1])
    assert np.array_equal(got, want)


def test_no_rois_and_no_channels():
    x = np.ones((2, 3, 5, 5))
    none = np.zeros((0, 5))
    assert pyroi.deform_roi_pool(x, none, np.zeros((0, 2, 2, 2)), 2).shape == (0, 3, 2, 2)
    grad_input, grad_offset, _ = pyroi.deform_roi_pool_backward(
        np.zeros((0, 3, 2, 2)), none, x.shape, input=x)
    assert grad_input.shape == x.shape and not grad_input.any()
    assert grad_offset.shape == (0, 2, 2, 2)
    empty = np.ones((1, 0, 5, 5))
    rois = np.array([[0, 0, 0, 3, 3.]])
    assert pyroi.deform_roi_pool(empty, rois, None, 2).shape == (1, 0, 2, 2)
    _, grad_offset, grad_mask = pyroi.deform_roi_pool_backward(
        np.zeros((1, 0, 2, 2)), rois, empty.shape, np.ones((1, 2, 2, 2)), input=empty,
        mask=np.ones((1, 1, 2, 2)))
    assert not grad_offset.any() and not grad_mask.any()


# ---- errors and hostile input --------------------------------------------------------------

def test_bad_arguments_raise_naming_them():
    x = np.ones((1, 2, 4, 4), np.float32)
    rois = np.array([[0, 0, 0, 2, 2]], np.float32)
    offset = np.zeros((1, 2, 2, 2), np.float32)
    with pytest.raises(pyroi.ShapeError, match="offset"):
        pyroi.deform_roi_pool(x, rois, offset[:, :1], 2)
    with pytest.raises(pyroi.ShapeError, match="offset"):
        pyroi.deform_roi_pool(x, rois, offset, 3)
    with pytest.raises(pyroi.DTypeError, match="offset"):
        pyroi.deform_roi_pool(x, rois, offset.astype(np.float64), 2)
    with pytest.raises(pyroi.ShapeError, match="mask"):
        pyroi.deform_roi_pool(x, rois, offset, 2, mask=np.ones((1, 2, 2, 2), np.float32))
    with pytest.raises(pyroi.InvalidArgumentError, match="gamma"):
        pyroi.deform_roi_pool(x, rois, offset, 2, gamma=float("nan"))
    with pytest.raises(pyroi.InvalidArgumentError, match="sampling_ratio"):
        pyroi.deform_roi_pool(x, rois, offset, 2, sampling_ratio=5000)
    with pytest.raises(pyroi.DTypeError, match="float16"):
        pyroi.deform_roi_pool(x.astype(np.float16), rois, None, 2)
    with pytest.raises(pyroi.BatchIndexError, match="rois"):
        pyroi.deform_roi_pool(x, np.array([[1, 0, 0, 2, 2]], np.float32), offset, 2)
    with pytest.raises(pyroi.ShapeError, match="input"):
        pyroi.deform_roi_pool_backward(np.ones((1, 2, 2, 2), np.float32), rois, x.shape,
                                       input=x[:, :, :3])
    with pytest.raises(pyroi.ShapeError, match="rois"):
        pyroi.deform_roi_pool_backward(np.ones((2, 2, 2, 2), np.float32), rois, x.shape)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_offsets_and_boxes_raise_naming_them(bad):
    x = np.ones((1, 1, 4, 4))
    rois = np.array([[0, 0, 0, 2, 2], [0, 1, 1, 3, 3]], np.float64)
    offset = np.zeros((2, 2, 1, 1))
    offset[1, 1] = bad
    with pytest.raises(pyroi.InvalidArgumentError, match="offset"):
        pyroi.deform_roi_pool(x, rois, offset, 1)
    with pytest.raises(pyroi.InvalidArgumentError, match="offset"):
        pyroi.deform_roi_pool_backward(np.ones((2, 1, 1, 1)), rois, x.shape, offset, input=x)
    bad_rois = rois.copy()
    bad_rois[1, 2] = bad
    with pytest.raises(pyroi.BoxError, match="RoI 1"):
        pyroi.deform_roi_pool(x, bad_rois, None, 1)


def test_huge_finite_offsets_and_boxes():
    x = RNG.standard_normal((1, 4, 16, 16))
    rois = np.array([[0, -1e30, -1e30, 1e30, 1e30], [0, 2, 2, 9, 9]])
    offset = np.broadcast_to(np.array([1e300, -1e300, 3.0, 1e-300]).reshape(2, 2, 1, 1),
                             (2, 2, 2, 2))
    start = time.perf_counter()
    y = pyroi.deform_roi_pool(x, rois, offset, 2, sampling_ratio=2)
    grads = pyroi.deform_roi_pool_backward(np.ones_like(y), rois, x.shape, offset, 1.0, 2, input=x)
    assert time.perf_counter() - start < 5.0
    assert np.isfinite(y).all() and all(np.isfinite(a).all() for a in grads if a is not None)


CHILD = r"""
import signal, sys, time
import numpy as np
import pyroi
signal.signal(signal.SIGINT, signal.default_int_handler)
op = sys.argv[1]
x = np.ones((1, 16, 512, 512), np.float32)
rois = np.tile(np.array([[0, -10, -10, 520, 520]], np.float32), (400, 1))
offset = np.full((400, 2, 2, 2), 0.01, np.float32)
g = np.ones((400, 16, 2, 2), np.float32)
call = {"forward": lambda: pyroi.deform_roi_pool(x, rois, offset, 2, 1.0, 1024, num_threads=1),
        "backward": lambda: pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 1.0, 1024,
                                                           num_threads=1),
        "offset": lambda: pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 1.0, 1024,
                                                         input=x, num_threads=1)}[op]
print("READY", flush=True)
try:
    call()
    print("FINISHED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", time.monotonic(), flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt", reason="POSIX signals")
@pytest.mark.parametrize("op", ["forward", "backward", "offset"])
def test_sigint_stops_at_the_sampling_ratio_limit_quickly(op):
    """sampling_ratio 1024: a bin is 2^20 samples of 16 channels; the cancel flag is read by
    the work done, not by the bins."""
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

def test_torch_known_answers_through_the_pack_module():
    """mmcv's own test: DeformRoIPoolPack((2, 2), C, sampling_ratio=2), output.backward(ones);
    and the modulated pack with its zeroed mask head halves both."""
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    for case in range(3):
        x = torch.tensor(MMCV_INPUTS[case][0], requires_grad=True)
        rois = torch.tensor(MMCV_INPUTS[case][1])
        output, input_grad = MMCV_OUTPUTS[case]
        for module, factor in ((pt.DeformRoIPoolPack, 1.0), (pt.ModulatedDeformRoIPoolPack, 0.5)):
            x.grad = None
            y = module((2, 2), x.shape[1], spatial_scale=1.0, sampling_ratio=2)(x, rois)
            y.backward(torch.ones_like(y))
            np.testing.assert_allclose(y.detach().numpy(), np.array(output) * factor, rtol=1e-6)
            np.testing.assert_allclose(x.grad.numpy(), np.array(input_grad) * factor, rtol=1e-6)


def test_torch_modules_have_mmcvs_parameters():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    pack = pt.ModulatedDeformRoIPoolPack((7, 7), 256, 1024)
    assert [(k, tuple(v.shape)) for k, v in pack.state_dict().items()] == [
        ("offset_fc.0.weight", (1024, 12544)), ("offset_fc.0.bias", (1024,)),
        ("offset_fc.2.weight", (1024, 1024)), ("offset_fc.2.bias", (1024,)),
        ("offset_fc.4.weight", (98, 1024)), ("offset_fc.4.bias", (98,)),
        ("mask_fc.0.weight", (1024, 12544)), ("mask_fc.0.bias", (1024,)),
        ("mask_fc.2.weight", (49, 1024)), ("mask_fc.2.bias", (49,))]
    assert isinstance(pack.mask_fc[3], torch.nn.Sigmoid)
    assert not pack.offset_fc[4].weight.any() and not pack.mask_fc[2].weight.any()


def test_torch_autograd_matches_numpy_and_gradcheck():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    x, rois, offset, mask = _case(np.float64, seed=12, spread=2.0)
    tx = torch.tensor(x, requires_grad=True)
    toff = torch.tensor(offset, requires_grad=True)
    tmask = torch.tensor(mask, requires_grad=True)
    y = pt.deform_roi_pool(tx, torch.tensor(rois), toff, (3, 2), 0.9, 0, 0.1, mask=tmask)
    assert np.array_equal(y.detach().numpy(),
                          pyroi.deform_roi_pool(x, rois, offset, (3, 2), 0.9, 0, 0.1, mask=mask))
    g = RNG.standard_normal(y.shape)
    y.backward(torch.tensor(g))
    want = pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 0.9, 0, 0.1, input=x,
                                          mask=mask)
    for got, expected in zip((tx.grad, toff.grad, tmask.grad), want):
        assert np.array_equal(got.numpy(), expected)
    # gradcheck away from kinks: small offsets on a smooth random map, a fixed grid
    small = torch.tensor(offset * 0.05, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, o, m: pt.deform_roi_pool(a, torch.tensor(rois), o, (3, 2), 0.9, 2, mask=m),
        (tx, small, tmask))
    # no offset, or mmcv's empty tensor: aligned RoIAlign; the offset gets no gradient
    for none in (None, torch.zeros(0)):
        z = pt.deform_roi_pool(tx, torch.tensor(rois), none, (3, 2), 0.9, 2)
        assert np.array_equal(z.detach().numpy(), pyroi.roi_align(x, rois, (3, 2), 0.9, 2, True))


@pytest.mark.filterwarnings(  # opcheck's own gradient comparison reads a non-leaf's .grad
    "ignore:The .grad attribute of a Tensor that is not a leaf")
def test_torch_opcheck_compile_and_narrow_dtypes():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    from torch.library import opcheck
    x, rois, offset, mask = (torch.tensor(a) for a in _case(np.float64, seed=13))
    x.requires_grad_(True)
    offset.requires_grad_(True)
    mask.requires_grad_(True)
    opcheck(torch.ops.pyroi.deform_roi_pool.default, (x, rois, offset, mask, 0.9, 3, 2, 2, 0.1))
    opcheck(torch.ops.pyroi.deform_roi_pool.default, (x, rois, None, None, 0.9, 3, 2, 0, 0.1))
    grad = torch.randn(6, 3, 3, 2, dtype=torch.float64)
    opcheck(torch.ops.pyroi._deform_roi_pool_backward.default,
            (grad, rois, x.detach(), offset.detach(), mask.detach(), 0.9, 2, 0.1, True))
    compiled = torch.compile(lambda a, b, o: pt.deform_roi_pool(a, b, o, (3, 2), 0.9),
                             fullgraph=True)
    assert torch.equal(compiled(x, rois, offset), pt.deform_roi_pool(x, rois, offset, (3, 2), 0.9))
    for dtype in (torch.float16, torch.bfloat16):  # computed in float32, rounded once
        narrow = pt.deform_roi_pool(x.detach().to(dtype), rois.to(dtype), offset.detach().to(dtype),
                                    (3, 2), 0.9)
        wide = pt.deform_roi_pool(x.detach().to(dtype).float(), rois.to(dtype).float(),
                                  offset.detach().to(dtype).float(), (3, 2), 0.9)
        assert narrow.dtype == dtype and torch.equal(narrow, wide.to(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_and_lane_major_orders_give_the_same_bits(dtype):
    """Two small RoIs on a large map take the direct order (the samples are not worth
    gathering the map for); with 300 large RoIs added the call takes the lane-major one. The
    two small RoIs' outputs, and the input gradient (the added RoIs' gradients 0), agree bit
    for bit, and both match the reference."""
    rng = np.random.default_rng(21)
    x = rng.standard_normal((1, 19, 120, 130)).astype(dtype)
    small = np.array([[0, 10.3, 20.1, 14.2, 23.9], [0, 60.7, 50.2, 66.1, 58.3]], dtype)
    large = np.concatenate([np.zeros((300, 1)), rng.uniform(0, 40, (300, 2)),
                            rng.uniform(80, 120, (300, 2))], 1).astype(dtype)
    rois = np.concatenate([small, large])
    offset = rng.uniform(-2, 2, (302, 2, 3, 2)).astype(dtype)
    mask = rng.uniform(0, 1, (302, 1, 3, 2)).astype(dtype)
    direct = pyroi.deform_roi_pool(x, small, offset[:2], (3, 2), 1.0, 0, mask=mask[:2])
    both = pyroi.deform_roi_pool(x, rois, offset, (3, 2), 1.0, 0, mask=mask)
    assert np.array_equal(direct, both[:2])
    assert np.array_equal(direct, deform_roi_pool_ref(x, small, offset[:2], (3, 2), 1.0, 0, 0.1,
                                                      mask[:2]))
    g = np.zeros(both.shape, dtype)
    g[:2] = rng.standard_normal((2, 19, 3, 2))
    want, _, _ = pyroi.deform_roi_pool_backward(g[:2], small, x.shape, offset[:2], 1.0, 0,
                                                mask=mask[:2])
    got, _, _ = pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 1.0, 0, mask=mask)
    assert np.array_equal(want, got)
    assert np.array_equal(want, deform_roi_pool_backward_ref(g[:2], small, x.shape, offset[:2],
                                                             1.0, 0, 0.1, mask[:2]))
    # the offset and mask gradients: the direct task and the two lane-major passes
    _, want_offset, want_mask = pyroi.deform_roi_pool_backward(
        g[:2], small, x.shape, offset[:2], 1.0, 0, input=x, mask=mask[:2])
    _, got_offset, got_mask = pyroi.deform_roi_pool_backward(g, rois, x.shape, offset, 1.0, 0,
                                                             input=x, mask=mask)
    assert np.array_equal(want_offset, got_offset[:2]) and np.array_equal(want_mask, got_mask[:2])
    ref_offset, ref_mask = deform_roi_pool_offset_grad_ref(g[:2], x, small, offset[:2], 1.0, 0,
                                                           0.1, mask[:2])
    tolerance = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(want_offset, ref_offset, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(want_mask, ref_mask, rtol=tolerance, atol=tolerance)
