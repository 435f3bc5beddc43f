"""Another Python thread writes the boxes, batch indices or argmax while a call reads them
(calls release the GIL). The results are then unspecified - any numbers, or a PyroiError for
the values the call saw - but the process must not crash and no call may read or write
outside its arrays: CI runs this file under AddressSanitizer too. Every operator, forward and
backward, with (K, 5) boxes and with (K, 4) boxes + batch_indices, and the multi-scale
RoIAlign's one-call pyramid entry."""

import os
import sys
import threading
import time

import numpy as np
import pytest

import pyroi
import pyroi.onnx

N, C, H, W, K = 2, 8, 24, 24, 16
SECONDS = float(os.environ.get("PYROI_CONCURRENT_SECONDS", "0.3"))  # per call and box form

# What the writer cycles through: small boxes (one sample per bin), boxes covering the map
# (many samples per bin), hostile coordinates; valid and hostile indices and argmax.
SMALL = np.tile([1.0, 1.0, 1.5, 1.5, 0.0], (K, 1))
LARGE = np.tile([-4.0, -4.0, 4.0 * W, 4.0 * H, 45.0], (K, 1))
HOSTILE = np.resize([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e38, -5.0, 1e6], (K, 5))
GOOD_INDEX = np.arange(K) % N
BAD_INDEX = np.resize([-1, N, 2**62, -(2**62), 2**40], K)
BAD_ROW_INDEX = np.resize([-1.0, float(N), 0.5, np.nan, 1e30, np.inf], K)


def coordinates(pattern, count):
    return pattern[:, :count]


class Writer(threading.Thread):
    """Keeps writing hostile and valid values into the given arrays until stopped."""

    def __init__(self, boxes, batch_indices=None, argmax=None):
        super().__init__(daemon=True)
        self.boxes, self.batch_indices, self.argmax = boxes, batch_indices, argmax
        self.stopped = threading.Event()
        self.writes = 0

    def run(self):
        coords = self.boxes.shape[1] - (1 if self.rows else 0)
        step = 0
        while not self.stopped.is_set():
            pattern = (SMALL, LARGE, HOSTILE, LARGE)[step % 4]
            values = self.boxes[:, 1:] if self.rows else self.boxes
            np.copyto(values, coordinates(pattern, coords), casting="unsafe")
            if self.rows:
                self.boxes[:, 0] = BAD_ROW_INDEX if step % 3 == 2 else GOOD_INDEX
            if self.batch_indices is not None:
                self.batch_indices[:] = BAD_INDEX if step % 3 == 2 else GOOD_INDEX
            if self.argmax is not None:
                hostile = np.resize([-2, H * W, 2**62, -(2**62), 1 << 20], self.argmax.shape)
                self.argmax[...] = hostile if step % 3 == 1 else self.valid_argmax
            step += 1
            self.writes += 1

    @property
    def rows(self):
        return self.batch_indices is None


def hammer(call, writer):
    """Runs call repeatedly for SECONDS while writer scribbles; only PyroiError may escape."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # hand the GIL over often: writes land during calls
    calls = 0
    writer.start()
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline or calls < 20:
            try:
                call()
            except pyroi.PyroiError:
                pass  # the values seen were invalid: a clean refusal is a valid outcome
            calls += 1
    finally:
        writer.stopped.set()
        writer.join()
        sys.setswitchinterval(previous)
    assert calls >= 20 and writer.writes > 0


def inputs(dtype, rows, coords=4):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    if rows:
        boxes = np.concatenate([GOOD_INDEX[:, None], SMALL[:, :coords]], axis=1).astype(dtype)
        return x, boxes, None, {}
    boxes = SMALL[:, :coords].astype(dtype)
    batch_indices = GOOD_INDEX.astype(np.int64)
    return x, boxes, batch_indices, {"batch_indices": batch_indices}


FORMS = [pytest.param(True, id="K5"), pytest.param(False, id="K4+batch_indices")]


@pytest.mark.parametrize("rows", FORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_roi_align_avg(rows, dtype):
    x, boxes, bi, kw = inputs(dtype, rows)
    grad = np.ones((K, C, 2, 2), dtype)
    hammer(lambda: pyroi.roi_align(x, boxes, 2, 0.5, **kw), Writer(boxes, bi))
    hammer(lambda: pyroi.roi_align_backward(grad, boxes, x.shape, 0.5, **kw), Writer(boxes, bi))


@pytest.mark.parametrize("rows", FORMS)
def test_roi_align_max(rows):
    x, boxes, bi, kw = inputs(np.float32, rows)
    _, argmax = pyroi.roi_align(x, boxes, 2, 0.5, mode="max", return_argmax=True, **kw)
    grad = np.ones((K, C, 2, 2), np.float32)
    hammer(lambda: pyroi.roi_align(x, boxes, 2, 0.5, mode="max", return_argmax=True, **kw),
           Writer(boxes, bi))
    writer = Writer(boxes, bi, argmax)
    writer.valid_argmax = argmax.copy()
    hammer(lambda: pyroi.roi_align_backward(grad, boxes, x.shape, 0.5, mode="max",
                                            argmax=argmax, **kw), writer)


@pytest.mark.parametrize("rows", FORMS)
def test_ps_roi_align_and_ps_roi_pool(rows):
    x, boxes, bi, kw = inputs(np.float32, rows)
    grad = np.ones((K, C // 4, 2, 2), np.float32)
    hammer(lambda: pyroi.ps_roi_align(x, boxes, 2, 0.5, **kw), Writer(boxes, bi))
    hammer(lambda: pyroi.ps_roi_align_backward(grad, boxes, x.shape, 0.5, **kw),
           Writer(boxes, bi))
    hammer(lambda: pyroi.ps_roi_pool(x, boxes, 2, 0.5, **kw), Writer(boxes, bi))
    hammer(lambda: pyroi.ps_roi_pool_backward(grad, boxes, x.shape, 0.5, **kw),
           Writer(boxes, bi))


@pytest.mark.parametrize("rows", FORMS)
def test_roi_align_rotated(rows):
    x, rois, bi, kw = inputs(np.float32, rows, coords=5)
    grad = np.ones((K, C, 2, 2), np.float32)
    hammer(lambda: pyroi.roi_align_rotated(x, rois, 2, 0.5, **kw), Writer(rois, bi))
    hammer(lambda: pyroi.roi_align_rotated_backward(grad, rois, x.shape, 0.5, **kw),
           Writer(rois, bi))


def test_onnx_max():
    x, boxes, bi, _ = inputs(np.float32, rows=False)
    hammer(lambda: pyroi.onnx.roi_align(x, boxes, bi, mode="max", output_height=2,
                                        output_width=2), Writer(boxes, bi))


@pytest.mark.parametrize("rows", FORMS)
def test_roi_pool_with_argmax(rows):
    x, boxes, bi, kw = inputs(np.float32, rows)
    y, argmax = pyroi.roi_pool(x, boxes, 2, 0.5, return_argmax=True, **kw)
    hammer(lambda: pyroi.roi_pool(x, boxes, 2, 0.5, return_argmax=True, **kw),
           Writer(boxes, bi))
    writer = Writer(boxes, bi, argmax)
    writer.valid_argmax = argmax.copy()
    hammer(lambda: pyroi.roi_pool_backward(y, boxes, argmax, x.shape, 2, 0.5, **kw), writer)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multi_scale_roi_align(dtype):
    """The one-call pyramid entry (pyroi_roi_align_levels_*), forward and backward, through the
    binding that pyroi.MultiScaleRoIAlign and pyroi.torch's call, on the caller's (K, 4) boxes
    and batch indices (the layers pass their own copy; torch is not imported here: this file
    runs under AddressSanitizer, where importing torch aborted, in its triton package)."""
    from pyroi import _core

    x, boxes, batch_indices, _ = inputs(dtype, rows=False)
    features = [x, np.ascontiguousarray(x[:, :, ::2, ::2])]
    # levels 2 and 3, boxes of 4 px or more on the second map: the writer's boxes move RoIs
    # between the levels while a call runs
    mapping = (2, 3, 4.0, 3.0, 1e-6)
    scales = [0.5, 0.25]
    result = np.empty((K, C, 2, 2), dtype)
    grad = np.ones((K, C, 2, 2), dtype)
    maps = [np.empty_like(feature) for feature in features]
    hammer(lambda: _core.roi_align_levels_forward(features, scales, boxes, batch_indices,
                                                  result, 0, False, *mapping, 2),
           Writer(boxes, batch_indices))
    hammer(lambda: _core.roi_align_levels_backward(grad, boxes, batch_indices, maps, scales, 0,
                                                   False, *mapping, 2),
           Writer(boxes, batch_indices))


# ---- index arrays on every path of the backwards ---------------------------------------------
# A writer that flips a whole argmax between a hostile value and the forward's, as fast as NumPy
# writes, while the backward runs on one thread (the case that crashed RoIPool's backward: a
# compiler split its "copy, check, form offsets" loop into two loops that each loaded argmax).
# Each case names the threshold of the C core's path choice it stands on.


class ArgmaxWriter(threading.Thread):
    def __init__(self, argmax, hostile):
        super().__init__(daemon=True)
        self.argmax, self.valid = argmax, argmax.copy()
        self.hostile = np.asarray(hostile).astype(argmax.dtype)
        self.stopped = threading.Event()
        self.writes = 0

    def run(self):
        while not self.stopped.is_set():
            self.argmax[...] = self.hostile
            self.argmax[...] = self.valid
            self.writes += 1


def race_argmax(call, argmax, hostile, seconds=SECONDS, min_calls=5):
    """Runs call while the argmax flips; each call is a clean PyroiError or a finished one."""
    writer = ArgmaxWriter(argmax, hostile)
    calls = 0
    writer.start()
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline or calls < min_calls:
            try:
                call()
            except pyroi.PyroiError:
                pass
            calls += 1
    finally:
        writer.stopped.set()
        writer.join()
    assert writer.writes > 0


def pool_boxes(count, side, rng):
    """count boxes of [0, side/2]..[side/2 + 4, side - 1] corners (most bins hold pixels)."""
    low = rng.uniform(0, side // 2, (count, 2))
    high = rng.uniform(side // 2 + 4, side - 1, (count, 2))
    return np.concatenate([np.zeros((count, 1)), low, high], axis=1).astype(np.float32)


# (features shape, boxes, output size, how argmax is laid out): RoIPool's backward path
ROI_POOL_PATHS = [
    # image blocks kept whole in scratch (N x C/16 blocks of H x W lanes <= 64 MiB): the
    # kernels check each run of argmax as they copy it (the case that crashed; on a build
    # with the split loop it crashed within 0.5-5 s, so it runs 4 s)
    pytest.param((1, 64, 64, 64), 400, 7, "packed", id="blocks-kept-whole-runs"),
    # the same with int32 entries (torchvision's width)
    pytest.param((1, 64, 64, 64), 400, 7, "int32", id="blocks-kept-int32"),
    # 9 x 9 bins: a channel's bins one run, but a block's channels not (81 * 16 > 1024)
    pytest.param((1, 32, 48, 48), 200, 9, "packed", id="blocks-kept-channel-runs"),
    # argmax transposed in its bin axes: the strided adds, one entry at a time
    pytest.param((1, 32, 48, 48), 200, 7, "strided", id="blocks-kept-strided"),
    # more image blocks than the 64 MiB scratch holds: argmax checked in a first pass, then
    # read again by the kernels (1 x 1040 channels of 128 x 128: 65 blocks of 1 MiB)
    pytest.param((1, 1040, 128, 128), 90, 7, "packed", id="blocks-beyond-scratch-limit"),
    # few bins for the map (bins * 4 < N * H * W): the direct order, channel by channel
    pytest.param((1, 64, 64, 64), 2, 7, "packed", id="direct-order"),
]


@pytest.mark.parametrize("shape, count, size, layout", ROI_POOL_PATHS)
def test_roi_pool_backward_argmax_on_every_path(shape, count, size, layout):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape, dtype=np.float32)
    boxes = pool_boxes(count, shape[2], rng)
    dtype = np.int32 if layout == "int32" else np.int64
    y, argmax = pyroi.roi_pool(x, boxes, size, 1.0, return_argmax=True, argmax_dtype=dtype)
    if layout == "strided":
        argmax = np.swapaxes(np.swapaxes(argmax, 2, 3).copy(), 2, 3)
    grad = np.ones_like(y)
    expected = pyroi.roi_pool_backward(grad, boxes, argmax, x.shape, size, 1.0)
    hostile = (2**31 - 1) if dtype == np.int32 else (1 << 40)
    seconds = max(SECONDS, 4.0) if count == 400 and layout == "packed" else SECONDS
    race_argmax(lambda: pyroi.roi_pool_backward(grad, boxes, argmax, x.shape, size, 1.0,
                                                num_threads=1), argmax, hostile, seconds)
    # the argmax is whole again: the same call gives the same bits
    np.testing.assert_array_equal(
        pyroi.roi_pool_backward(grad, boxes, argmax, x.shape, size, 1.0), expected)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_roi_pool_backward_float16_and_float32_argmax_race(dtype):
    """float16 gradients take their own tasks (widened runs); the argmax is read the same way."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 64, 64, 64)).astype(dtype)
    boxes = pool_boxes(300, 64, rng).astype(dtype)
    y, argmax = pyroi.roi_pool(x, boxes, 7, 1.0, return_argmax=True)
    grad = np.ones_like(y)
    race_argmax(lambda: pyroi.roi_pool_backward(grad, boxes, argmax, x.shape, 7, 1.0,
                                                num_threads=1), argmax, -(2**62))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("mode", ["max", "onnx_max"])
def test_roi_align_max_backward_argmax_race(dtype, mode):
    """RoIAlign's max backwards (mmcv's and ONNX's rule): an argmax code addresses a sample's
    taps; float16 takes the float32-planes path."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 32, 48, 48)).astype(dtype)
    boxes = pool_boxes(200, 48, rng).astype(dtype)
    hostile = [1 << 40, -5, 2**62]
    if mode == "max":
        y, argmax = pyroi.roi_align(x, boxes, 7, 1.0, sampling_ratio=2, aligned=True,
                                    mode="max", return_argmax=True)
        call = lambda: pyroi.roi_align_backward(  # noqa: E731
            np.ones_like(y), boxes, x.shape, 1.0, sampling_ratio=2, aligned=True, mode="max",
            argmax=argmax, num_threads=1)
    else:
        rois, indices = np.ascontiguousarray(boxes[:, 1:]), np.zeros(len(boxes), np.int64)
        y, argmax = pyroi.onnx.roi_align(x, rois, indices, mode="max", output_height=7,
                                         output_width=7, sampling_ratio=2, return_argmax=True)
        call = lambda: pyroi.onnx.roi_align_backward(  # noqa: E731
            np.ones_like(y), rois, indices, x.shape, mode="max", argmax=argmax,
            sampling_ratio=2, num_threads=1)
    race_argmax(call, argmax, np.resize(hostile, argmax.shape))


class OffsetWriter(Writer):
    """A Writer that also scribbles on deformable pooling's offsets and mask: valid, zero,
    huge and non-finite values (the offsets decide which pixels a bin reads)."""

    def __init__(self, boxes, batch_indices, offset, mask):
        super().__init__(boxes, batch_indices)
        self.offset, self.mask = offset, mask

    def run(self):
        patterns = [0.0, 1e30, np.nan, -3.7, np.inf, 2.0, -1e6]
        original = super().run
        step = 0

        def offsets_too():
            nonlocal step
            while not self.stopped.is_set():
                self.offset[...] = patterns[step % len(patterns)]
                self.offset[::2, 1] = patterns[(step + 3) % len(patterns)]
                self.mask[...] = patterns[(step + 1) % len(patterns)]
                step += 1

        helper = threading.Thread(target=offsets_too, daemon=True)
        helper.start()
        original()
        helper.join()


@pytest.mark.parametrize("rows", FORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("side", [pytest.param(24, id="lane-major"),
                                  pytest.param(300, id="direct")])
def test_deform_roi_pool(rows, dtype, side):
    """Both loop orders (a small map: image blocks; a large one with small boxes: direct),
    forward, input backward and offset backward."""
    x, boxes, bi, kw = inputs(dtype, rows)
    x = np.random.default_rng(3).standard_normal((N, C, side, side)).astype(dtype)
    offset = np.zeros((K, 2, 2, 2), dtype)
    mask = np.ones((K, 1, 2, 2), dtype)
    grad = np.ones((K, C, 2, 2), dtype)
    hammer(lambda: pyroi.deform_roi_pool(x, boxes, offset, 2, 0.5, mask=mask, **kw),
           OffsetWriter(boxes, bi, offset, mask))
    hammer(lambda: pyroi.deform_roi_pool_backward(grad, boxes, x.shape, offset, 0.5, mask=mask,
                                                  **kw),
           OffsetWriter(boxes, bi, offset, mask))
    hammer(lambda: pyroi.deform_roi_pool_backward(grad, boxes, x.shape, offset, 0.5, input=x,
                                                  mask=mask, **kw),
           OffsetWriter(boxes, bi, offset, mask))
