"""Shared helpers and fixtures for the pyroi test suite.

Helpers are plain functions (imported by the test modules with ``from conftest import
...``); fixtures wrap the optional torchvision oracle so that tests needing it skip cleanly
when torch or torchvision is not installed.
"""

import functools
import os
import re
import sys
import zlib

import numpy as np
import pytest

# Make ``import reference`` / ``from conftest import ...`` work under every pytest import
# mode (prepend, append, importlib).
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from reference import roi_align_backward_ref, roi_align_ref  # noqa: E402

DTYPES = (np.float32, np.float64)
DTYPE_IDS = ["f32", "f64"]
SAMPLING_RATIOS = (-1, 0, 1, 2, 3)

# Tolerances for everything that is not the dedicated bit-exact test.
TOLERANCE = {
    np.dtype(np.float32): dict(rtol=1e-5, atol=1e-5),
    np.dtype(np.float64): dict(rtol=1e-10, atol=1e-10),
}


def assert_close(actual, expected, dtype=None, err_msg=""):
    """allclose with the per-dtype tolerance of the suite (shape and dtype checked too)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    dtype = np.dtype(dtype if dtype is not None else expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == dtype, (actual.dtype, dtype)
    np.testing.assert_allclose(actual, expected, err_msg=err_msg, **TOLERANCE[dtype])


def stable_seed(*parts):
    """A seed derived from the test parameters (stable across runs and processes)."""
    return zlib.crc32(repr(parts).encode("utf-8"))


# --------------------------------------------------------------------------------------
# random data
# --------------------------------------------------------------------------------------

def random_input(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def inverted_policy(aligned, sampling_ratio):
    """Which inverted boxes torchvision 0.29.1 accepts for this configuration.

    aligned=True with adaptive sampling raises in torchvision when exactly one axis has a
    negative size (docs/semantics.md §3.2), so only boxes inverted on both axes are allowed there.
    """
    if aligned and sampling_ratio <= 0:
        return "both"
    return "any"


# Kinds of extent drawn independently for the x and y axis of a box.
_AXIS_KINDS = ("inside", "large", "tiny", "zero", "outside_low", "outside_high", "halo",
               "integer", "inverted")


def _axis_extent(rng, kind, size):
    """(start, end) along one axis, in *feature-map* pixels, for a map of ``size`` pixels."""
    if kind == "inside":
        start = rng.uniform(0.0, size)
        return start, start + rng.uniform(0.5, max(size / 2.0, 0.6))
    if kind == "large":
        start = rng.uniform(-0.3 * size - 0.5, 0.3 * size)
        return start, start + rng.uniform(0.6 * size, 1.3 * size + 1.0)
    if kind == "tiny":
        start = rng.uniform(-1.0, size + 0.5)
        return start, start + rng.uniform(0.0, 0.4)
    if kind == "zero":
        start = rng.uniform(-0.5, size + 0.5)
        return start, start
    if kind == "outside_low":
        # every sample (even after the legacy size >= 1 clamp) lies below -1
        start = rng.uniform(-7.0, -4.0)
        return start, start + rng.uniform(0.0, 2.0)
    if kind == "outside_high":
        start = size + rng.uniform(1.6, 4.0)
        return start, start + rng.uniform(0.0, 3.0)
    if kind == "halo":
        start = rng.uniform(-1.5, 0.3)
        return start, start + rng.uniform(0.0, 1.5)
    if kind == "integer":
        start = float(rng.integers(-1, size + 1))
        return start, start + float(rng.integers(0, 5))
    if kind == "inverted":
        start = rng.uniform(0.0, size + 1.0)
        return start, start - rng.uniform(0.2, 3.0)
    raise AssertionError(kind)


def random_rois(rng, num_images, height, width, num_rois, dtype, spatial_scale=1.0,
                inverted="any"):
    """Random (K, 5) boxes ``[b, x1, y1, x2, y2]`` in input-image coordinates.

    The mix covers boxes inside the map, covering it, tiny, zero-size, in the one-pixel halo,
    fully outside (beyond the [-1, H] band), with integer coordinates (samples exactly on
    pixels) and - depending on ``inverted`` ("none", "both", "any") - inverted on one or
    both axes.  Coordinates are drawn in feature-map pixels and divided by the scale.
    """
    unscale = 1.0 / spatial_scale if spatial_scale > 0 else 1.0
    kinds = [k for k in _AXIS_KINDS if k != "inverted" or inverted != "none"]
    rois = np.zeros((num_rois, 5), dtype=np.float64)
    for k in range(num_rois):
        kind_x = kinds[rng.integers(len(kinds))]
        kind_y = kinds[rng.integers(len(kinds))]
        if k < 2:
            # every case pools real data: the first RoIs overlap the map
            kind_x = kind_y = ("large", "inside")[k]
        if inverted == "both" and (kind_x == "inverted") != (kind_y == "inverted"):
            kind_x = kind_y = "inverted"
        x1, x2 = _axis_extent(rng, kind_x, width)
        y1, y2 = _axis_extent(rng, kind_y, height)
        batch = rng.integers(num_images) if num_images > 0 else 0
        rois[k] = (batch, x1 * unscale, y1 * unscale, x2 * unscale, y2 * unscale)
    return rois.astype(dtype)


def rois_to_list(rois, num_images):
    """Split (K, 5) boxes into torchvision's list form; returns (list, reordered (K, 5)).

    The list form orders RoIs by image, so the equivalent (K, 5) array is returned too.
    """
    batch = rois[:, 0].astype(np.int64)
    entries = [np.ascontiguousarray(rois[batch == i, 1:]) for i in range(num_images)]
    reordered = np.concatenate(
        [rois[batch == i] for i in range(num_images)], axis=0) if num_images else rois[:0]
    return entries, reordered


# Random-case configurations: map sizes are odd/even/degenerate, output sizes square and
# not, scales dyadic and not.  ``as_list`` passes the boxes in torchvision's list form.
CASE_CONFIGS = {
    "odd9x11": dict(N=2, C=3, H=9, W=11, K=15, output_size=(3, 2), scale=0.7, as_list=False),
    "map1x1": dict(N=1, C=2, H=1, W=1, K=10, output_size=2, scale=1.0, as_list=False),
    "H1": dict(N=2, C=2, H=1, W=13, K=10, output_size=(1, 4), scale=0.5, as_list=False),
    "W1": dict(N=1, C=1, H=12, W=1, K=10, output_size=(5, 1), scale=1.0, as_list=False),
    "fpn16": dict(N=3, C=4, H=16, W=15, K=20, output_size=7, scale=0.25, as_list=False),
    "list7x5": dict(N=2, C=2, H=7, W=5, K=12, output_size=(2, 3), scale=0.3, as_list=True),
}


def make_case(config_name, dtype, aligned, sampling_ratio, inverted=None, salt=""):
    """Deterministic random case: returns (x, boxes, rois, params).

    ``boxes`` is what is passed to the function under test ((K, 5) array or list of
    (L, 4) arrays); ``rois`` is the equivalent (K, 5) array (same RoI order as the output);
    ``params`` holds output_size / spatial_scale / sampling_ratio / aligned.
    """
    cfg = CASE_CONFIGS[config_name]
    if inverted is None:
        inverted = "any"
    rng = np.random.default_rng(
        stable_seed(config_name, np.dtype(dtype).name, aligned, sampling_ratio, inverted, salt))
    x = random_input(rng, (cfg["N"], cfg["C"], cfg["H"], cfg["W"]), dtype)
    rois = random_rois(rng, cfg["N"], cfg["H"], cfg["W"], cfg["K"], dtype,
                       spatial_scale=cfg["scale"], inverted=inverted)
    if cfg["as_list"]:
        boxes, rois = rois_to_list(rois, cfg["N"])
    else:
        boxes = rois
    params = dict(output_size=cfg["output_size"], spatial_scale=cfg["scale"],
                  sampling_ratio=sampling_ratio, aligned=aligned)
    return x, boxes, rois, params


@functools.lru_cache(maxsize=None)
def reference_case(config_name, dtype_name, aligned, sampling_ratio, inverted="any"):
    """make_case plus the reference forward, a random grad_output and the reference backward.

    Cached because several test modules compare against the same slow reference; callers
    must not modify the returned arrays (they are marked read-only).
    """
    dtype = np.dtype(dtype_name)
    x, boxes, rois, params = make_case(config_name, dtype, aligned, sampling_ratio, inverted)
    forward = roi_align_ref(x, rois, **params)
    rng = np.random.default_rng(stable_seed("grad", config_name, dtype_name, aligned,
                                            sampling_ratio, inverted))
    grad_output = random_input(rng, forward.shape, dtype)
    backward = roi_align_backward_ref(grad_output, rois, x.shape, **backward_params(params))
    arrays = [x, rois, forward, grad_output, backward]
    arrays += boxes if isinstance(boxes, list) else [boxes]
    for array in arrays:
        array.setflags(write=False)
    return x, boxes, rois, params, forward, grad_output, backward


def backward_params(params):
    """The forward keyword arguments minus output_size (backward takes it from grad_output)."""
    return {key: value for key, value in params.items() if key != "output_size"}


def pooled_shape(output_size):
    if isinstance(output_size, int):
        return output_size, output_size
    return tuple(output_size)


def writable(value):
    """Fresh writable copies of an array or a list of arrays (cached cases are read-only)."""
    if isinstance(value, list):
        return [np.array(v, copy=True) for v in value]
    return np.array(value, copy=True)


def central_differences(func, x, g, eps=1e-6):
    """d<func(x), g>/dx by central differences, element by element."""
    numeric = np.zeros(x.shape)
    for index in np.ndindex(*x.shape):
        plus = x.copy()
        plus[index] += eps
        minus = x.copy()
        minus[index] -= eps
        numeric[index] = (np.vdot(func(plus), g) - np.vdot(func(minus), g)) / (2 * eps)
    return numeric


# --------------------------------------------------------------------------------------
# the same values in other memory layouts (inputs read in place)
# --------------------------------------------------------------------------------------

def channels_last_view(x):
    """An NCHW view of channels-last memory."""
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def strided_view(x, steps=(2, 2, 2, 2)):
    """A view every ``steps`` elements of a larger buffer (NaN, or 0 for integers, between)."""
    big = np.zeros(tuple(s * n for s, n in zip(steps, x.shape)), dtype=x.dtype)
    if x.dtype.kind == "f":
        big[...] = np.nan
    index = tuple(slice(None, None, s) for s in steps)
    big[index] = x
    return big[index]


def negative_strides_view(x):
    """A view with every stride negative."""
    flip = (slice(None, None, -1),) * x.ndim
    return np.ascontiguousarray(x[flip])[flip]


def read_only(x):
    y = x.copy()
    y.setflags(write=False)
    return y


# --------------------------------------------------------------------------------------
# ``out=`` arrays of every layout
# --------------------------------------------------------------------------------------

OUT_VIEWS = ("contiguous", "strided", "transposed", "negative")


def out_view(shape, dtype, view_kind):
    """A NaN-filled (K, C, ph, pw) ``out`` laid out as ``view_kind``, and the buffer under it
    ("strided" skips every other channel and column, so a write beside the view shows)."""
    k, c, ph, pw = shape
    if view_kind == "strided":
        buffer = np.full((k, 2 * c, ph, 2 * pw + 1), np.nan, dtype)
        return buffer[:, ::2, :, 1::2], buffer
    if view_kind == "transposed":
        buffer = np.full((pw, ph, c, k), np.nan, dtype)
        return buffer.T, buffer
    buffer = np.full(shape, np.nan, dtype)
    return (buffer if view_kind == "contiguous" else buffer[::-1, :, ::-1, ::-1]), buffer


def check_out_view(run, expected, view_kind):
    """``run(out)`` writes ``expected`` into an ``out`` laid out as ``view_kind``, returns that
    very array (first, when it returns a tuple) and writes nothing else of its buffer.
    Returns what ``run`` returned."""
    out, buffer = out_view(expected.shape, expected.dtype, view_kind)
    assert (view_kind == "contiguous") == out.flags.c_contiguous
    result = run(out)
    assert (result[0] if isinstance(result, tuple) else result) is out
    np.testing.assert_array_equal(out, expected, err_msg=view_kind)
    if view_kind == "strided":
        untouched = np.ones(buffer.shape, bool)
        untouched[:, ::2, :, 1::2] = False
        assert np.all(np.isnan(buffer[untouched]))
    return result


# --------------------------------------------------------------------------------------
# argument errors: small valid fixtures (so each error test breaks exactly one argument) and
# message checks that name the argument and the RoI without pinning the wording
# --------------------------------------------------------------------------------------

ERROR_SHAPE = (2, 3, 6, 7)
ERROR_NUM_ROIS = 5
BAD_ROI = 3  # the malformed RoI in per-RoI error tests


def error_input(dtype=np.float32):
    return np.random.default_rng(0).standard_normal(ERROR_SHAPE).astype(dtype)


def error_rois(dtype=np.float32):
    return np.array([[0, 0, 0, 4, 4], [1, 1, 1, 5, 3], [0, 2, 1, 6, 5], [1, 0.5, 0.5, 2, 2],
                     [0, 3, 2, 4, 5]], dtype=dtype)


def error_grad(dtype=np.float32, num_rois=ERROR_NUM_ROIS, channels=ERROR_SHAPE[1],
               pooled=(2, 2)):
    return np.ones((num_rois, channels) + pooled, dtype=dtype)


def assert_names(excinfo, *names):
    """The message mentions at least one of ``names`` as a word (case-insensitive)."""
    message = str(excinfo.value)
    assert any(re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])",
                         message, re.IGNORECASE) for name in names), (names, message)


def assert_names_roi(excinfo, index):
    """The message identifies the RoI by its index ("RoI 3", "roi #3", "boxes[3]", ...)."""
    pattern = r"(roi|box|boxes|row)\D{0,12}(?<![0-9])" + str(index) + r"(?![0-9])"
    assert re.search(pattern, str(excinfo.value), re.IGNORECASE), (index, str(excinfo.value))


# --------------------------------------------------------------------------------------
# torchvision oracle (optional)
# --------------------------------------------------------------------------------------

def require_torchvision():
    """Import torch and torchvision or skip the calling test.

    Any ImportError skips (not only a missing module): torchvision is an optional oracle,
    and a wheel whose compiled ops do not load should not fail the pyroi suite.
    """
    try:
        import torch
        import torchvision
        import torchvision.ops  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"torch/torchvision not available: {exc}")
    return torch, torchvision


class TorchvisionOracle:
    """torchvision.ops' pooling operators on NumPy arrays (CPU kernels), forward and input
    gradient: ``forward("ps_roi_pool", x, boxes, *args)`` calls
    ``torchvision.ops.ps_roi_pool`` with the same arguments.

    Arrays are copied before torch.from_numpy: it warns on read-only arrays (the cached
    reference cases are read-only) and the suite runs with warnings as errors.
    """

    def __init__(self, torch, torchvision):
        self.torch = torch
        self.ops = torchvision.ops

    def tensor(self, array):
        return self.torch.from_numpy(np.array(array, copy=True))

    def _boxes(self, boxes):
        if isinstance(boxes, (list, tuple)):
            return [self.tensor(b) for b in boxes]
        return self.tensor(boxes)

    def forward(self, op, x, boxes, *args, **kwargs):
        with self.torch.no_grad():
            out = getattr(self.ops, op)(self.tensor(x), self._boxes(boxes), *args, **kwargs)
        return out.numpy().copy()

    def grad(self, op, x, boxes, grad_output, *args, **kwargs):
        """Gradient of <op(x), grad_output> w.r.t. x via autograd."""
        xt = self.tensor(x).requires_grad_(True)
        out = getattr(self.ops, op)(xt, self._boxes(boxes), *args, **kwargs)
        out.backward(self.tensor(grad_output))
        if xt.grad is None:  # no RoIs: autograd never reached the input
            return np.zeros_like(x)
        return xt.grad.numpy().copy()

    roi_align = functools.partialmethod(forward, "roi_align")
    roi_align_grad = functools.partialmethod(grad, "roi_align")


@pytest.fixture
def tv():
    """The torchvision oracle; skips the test when torch/torchvision are missing."""
    torch, torchvision = require_torchvision()
    return TorchvisionOracle(torch, torchvision)


# --------------------------------------------------------------------------------------
# known answers (docs/semantics.md §3.6, §11.2-§11.5)
# --------------------------------------------------------------------------------------

def _plane(rows):
    return np.asarray(rows, dtype=np.float64)[None, None]


def _edge_table():
    """docs/semantics.md §3.6: 6x7 arange map, 2x2 output, spatial_scale 1."""
    x = np.arange(42, dtype=np.float64).reshape(1, 1, 6, 7)
    rows = [
        # box, sampling_ratio, aligned, expected (2x2 flattened), torchvision accepts it
        ([1, 1, 1, 4], -1, False, [13.5, 14, 24, 24.5], True),
        ([1, 1, 1, 4], -1, True, [0, 0, 0, 0], True),
        ([1, 1, 1, 4], 2, False, [13.5, 14, 24, 24.5], True),
        ([1, 1, 1, 4], 2, True, [9.25, 9.25, 19.75, 19.75], True),
        ([2, 2, 2, 2], 2, False, [18, 18.5, 21.5, 22], True),
        ([2, 2, 2, 2], 2, True, [12, 12, 12, 12], True),
        ([4, 4, 1, 1], -1, False, [34, 34.5, 37.5, 38], True),
        ([4, 4, 1, 1], -1, True, [0, 0, 0, 0], True),
        ([4, 4, 1, 1], 2, False, [34, 34.5, 37.5, 38], True),
        ([4, 4, 1, 1], 2, True, [22, 20.5, 11.5, 10], True),
        ([4, 1, 1, 4], -1, False, [16.5, 17, 27, 27.5], True),
        # torchvision raises here; pyroi defines the result as zeros
        ([4, 1, 1, 4], -1, True, [0, 0, 0, 0], False),
        ([5, 4, 9, 8], -1, False, [39, 0, 0, 0], True),
        ([5, 4, 9, 8], -1, True, [37, 18.75, 20.25, 10.25], True),
    ]
    for sr in (-1, 1, 2):
        for aligned in (False, True):
            rows.append(([-20, -20, -10, -10], sr, aligned, [0, 0, 0, 0], True))
    cases = []
    for box, sr, aligned, expected, tv_ok in rows:
        name = "edge_{}_sr{}_{}".format("_".join(str(v) for v in box), sr,
                                        "aligned" if aligned else "legacy")
        cases.append(dict(
            name=name, x=x, boxes=np.array([[0] + box], dtype=np.float64), output_size=2,
            spatial_scale=1.0, sampling_ratio=sr, aligned=aligned,
            expected=np.array(expected, dtype=np.float64).reshape(1, 1, 2, 2),
            grad_output=None, expected_grad=None, atol=0.0, torchvision_ok=tv_ok))
    return cases


def _mmcv_cases():
    """docs/semantics.md §11.3 (mmcv tests): aligned=True, sr=2, scale 1, 2x2, grad ones."""
    cases = []
    x1 = _plane([[1, 2], [3, 4]])
    y1 = [[1.0, 1.25], [1.5, 1.75]]
    g1 = [[3.0625, 0.4375], [0.4375, 0.0625]]
    cases.append(dict(name="mmcv_2x2", x=x1, expected=np.array([[y1]]),
                      expected_grad=np.array([[g1]])))
    x2 = np.array([[[[1, 2], [3, 4]], [[4, 3], [2, 1]]]], dtype=np.float64)
    cases.append(dict(name="mmcv_2ch", x=x2,
                      expected=np.array([[y1, [[4.0, 3.75], [3.5, 3.25]]]]),
                      expected_grad=np.array([[g1, g1]])))
    x3 = _plane([[1, 2, 5, 6], [3, 4, 7, 8], [9, 10, 13, 14], [11, 12, 15, 16]])
    g3 = [[0.47265625, 0.4296875, 0.4296875, 0.04296875],
          [0.4296875, 0.390625, 0.390625, 0.0390625],
          [0.4296875, 0.390625, 0.390625, 0.0390625],
          [0.04296875, 0.0390625, 0.0390625, 0.00390625]]
    cases.append(dict(name="mmcv_4x4", x=x3, boxes=np.array([[0, 0, 0, 3, 3]], float),
                      expected=np.array([[[[1.9375, 4.75], [7.5625, 10.375]]]]),
                      expected_grad=np.array([[g3]])))
    out = []
    for case in cases:
        boxes = case.get("boxes", np.array([[0, 0, 0, 1, 1]], dtype=np.float64))
        out.append(dict(name=case["name"], x=case["x"], boxes=boxes, output_size=(2, 2),
                        spatial_scale=1.0, sampling_ratio=2, aligned=True,
                        expected=case["expected"].astype(np.float64),
                        grad_output=np.ones_like(case["expected"], dtype=np.float64),
                        expected_grad=case["expected_grad"].astype(np.float64), atol=0.0,
                        torchvision_ok=True))
    return out


def _detectron2_cases():
    """docs/semantics.md §11.4 (detectron2 tests)."""
    x = np.arange(25, dtype=np.float64).reshape(1, 1, 5, 5)
    box = np.array([[0, 1, 1, 3, 3]], dtype=np.float64)
    legacy = [[7.5, 8, 8.5, 9], [10, 10.5, 11, 11.5], [12.5, 13, 13.5, 14], [15, 15.5, 16, 16.5]]
    shifted = [[4.5, 5, 5.5, 6], [7, 7.5, 8, 8.5], [9.5, 10, 10.5, 11], [12, 12.5, 13, 13.5]]
    cases = []
    for aligned, expected in ((False, legacy), (True, shifted)):
        cases.append(dict(name="detectron2_arange_" + ("aligned" if aligned else "legacy"),
                          x=x, boxes=box, output_size=4, spatial_scale=1.0, sampling_ratio=0,
                          aligned=aligned, expected=np.array([[expected]], dtype=np.float64),
                          grad_output=None, expected_grad=None, atol=0.0,
                          torchvision_ok=True))
    rng = np.random.default_rng(20240611)
    img = rng.uniform(0.0, 1.0, (1, 1, 5, 5))
    cases.append(dict(name="detectron2_empty_box", x=img,
                      boxes=np.array([[0, 3, 4, 5, 4]], dtype=np.float64), output_size=7,
                      spatial_scale=1.0, sampling_ratio=0, aligned=True,
                      expected=np.zeros((1, 1, 7, 7)), grad_output=np.ones((1, 1, 7, 7)),
                      expected_grad=np.zeros((1, 1, 5, 5)), atol=0.0, torchvision_ok=True))
    return cases


def _torchvision_issue_cases():
    """docs/semantics.md §11.5 (torchvision issues #1875 and #2481)."""
    return [
        dict(name="tv1875_height_clamped", x=_plane([[1, 2, 3], [4, 5, 6], [7, 8, 9]]),
             boxes=np.array([[0, 0, 2, 2, 0]], dtype=np.float64), output_size=(2, 2),
             spatial_scale=1.0, sampling_ratio=1, aligned=False,
             expected=np.array([[[[7.5, 8.5], [7.5, 8.5]]]]), grad_output=None,
             expected_grad=None, atol=0.0, torchvision_ok=True),
        dict(name="tv2481_list_boxes", x=np.arange(36, dtype=np.float64).reshape(1, 1, 6, 6),
             boxes=[np.array([[0, 2, 2, 4]], dtype=np.float64)], output_size=2,
             spatial_scale=1.0, sampling_ratio=-1, aligned=False,
             expected=np.array([[[[15.5, 16.5], [21.5, 22.5]]]]), grad_output=None,
             expected_grad=None, atol=0.0, torchvision_ok=True),
    ]


# onnxruntime's AvgModePositive test: channel 0 of its expected output (6 significant digits)
AVG_MODE_POSITIVE_C0 = np.array([
    [[2.95833, 3.20833, 3.45833, 3.70833], [4.625, 4.875, 5.125, 5.375],
     [6.29167, 6.54167, 6.79167, 7.04167]],
    np.zeros((3, 4)),
    [[7.39583, 7.39583, 7.42708, 7.64583], [9.0625, 9.0625, 9.09375, 9.3125],
     [10.7292, 10.7292, 10.7604, 10.9792]],
    [[4.27083, 4.52083, 4.77083, 5.02083], [5.9375, 6.1875, 6.4375, 6.6875],
     [7.60417, 7.85417, 8.10417, 8.35417]],
    [[6.77083, 6.77083, 6.77083, 6.80208], [8.4375, 8.4375, 8.4375, 8.46875],
     [10.1042, 10.1042, 10.1042, 10.1354]],
])


def _onnxruntime_cases():
    """docs/semantics.md §11.2 (onnxruntime AvgModePositive); printed to 6 significant digits."""
    x = np.arange(75, dtype=np.float64).reshape(1, 3, 5, 5)
    boxes = np.array([[0, 7, 5, 7, 5], [0, -15, -15, -15, -15], [0, -10, 21, -10, 21],
                      [0, 13, 8, 13, 8], [0, -14, 19, -14, 19]], dtype=np.float64)
    # average pooling is affine: channel c = channel 0 + 25 c (the map is arange)
    legacy = np.stack([AVG_MODE_POSITIVE_C0 + 25.0 * c for c in range(3)], axis=1)
    shifted_c0 = np.array([0.0, 0.0, 0.0, 0.3125, 0.0])
    shifted_offset = np.array([1.0, 0.0, 0.0, 1.0, 0.0])  # RoIs whose samples hit the map
    shifted = np.zeros((5, 3, 3, 4))
    for k in range(5):
        for c in range(3):
            shifted[k, c] = shifted_c0[k] + 25.0 * c * shifted_offset[k]
    common = dict(x=x, boxes=boxes, output_size=(3, 4), spatial_scale=1.0 / 16,
                  sampling_ratio=2, grad_output=None, expected_grad=None, atol=5e-5,
                  torchvision_ok=True)
    return [dict(name="onnxruntime_avg_output_half_pixel", aligned=False, expected=legacy,
                 **common),
            dict(name="onnxruntime_avg_half_pixel", aligned=True, expected=shifted, **common)]


KNOWN_ANSWERS = (_edge_table() + _mmcv_cases() + _detectron2_cases()
                 + _torchvision_issue_cases() + _onnxruntime_cases())
KNOWN_ANSWER_IDS = [case["name"] for case in KNOWN_ANSWERS]


def cast_boxes(boxes, dtype):
    if isinstance(boxes, (list, tuple)):
        return [np.asarray(b, dtype=dtype) for b in boxes]
    return np.asarray(boxes, dtype=dtype)


def known_answer_args(case, dtype):
    """(x, boxes, kwargs) of a known-answer case in ``dtype``."""
    kwargs = dict(output_size=case["output_size"], spatial_scale=case["spatial_scale"],
                  sampling_ratio=case["sampling_ratio"], aligned=case["aligned"])
    return case["x"].astype(dtype), cast_boxes(case["boxes"], dtype), kwargs


def assert_known(actual, expected, dtype, atol):
    """Known answers are exact binary fractions (atol 0) or printed decimals (atol > 0)."""
    actual = np.asarray(actual)
    assert actual.dtype == np.dtype(dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if np.dtype(dtype) == np.float32:
        atol = max(atol, 1e-5)
        rtol = 1e-6
    else:
        rtol = 1e-12
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
