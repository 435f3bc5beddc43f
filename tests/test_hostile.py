"""Hostile input for every public operator: each case gets its documented result or a clear
exception naming the argument (README, "Hostile input policy").

Boxes straight from a detector (NaN, inf, 1e30, inverted, zero-size, far outside, bad batch
indices), degenerate shapes, out-of-range parameters, odd memory layouts, bad out= arrays,
wrong types - for every operator, forward and backward, and for the layer classes. Then sizes
past 2**31 elements (views of little memory), and the fuzzer's regression inputs. Every test
is small: the file runs in seconds (the 8.6 GB cases only with PYROI_BIG_TESTS=1).
"""

import os
import re
import time

import numpy as np
import pytest

import pyroi
from conftest import assert_names as names

N, H, W = 2, 10, 12
K = 3
BAD = 1  # the RoI made hostile


# --------------------------------------------------------------------------------------
# the operators behind one interface
# --------------------------------------------------------------------------------------

class Op:
    """One operator: forward(x, boxes, size, **kw) and backward(grad, boxes, x_shape, size,
    argmax, **kw), with what the tests need to know about it."""

    def __init__(self, name, forward, backward, coords=4, sampling=True, group=False,
                 argmax=None, rois_name="boxes"):
        self.name = name
        self.forward = forward
        self.backward = backward
        self.coords = coords          # coordinates per box (rotated: 5)
        self.sampling = sampling      # takes sampling_ratio
        self.group = group            # position-sensitive: C = C_out * ph * pw
        self.argmax = argmax          # forward returning (output, argmax), for the backward
        self.rois_name = rois_name    # how messages call the boxes

    def channels(self, size):
        ph, pw = (size, size) if isinstance(size, int) else size
        return 2 * ph * pw if self.group else 3

    def input(self, dtype=np.float32, size=2, n=N, h=H, w=W, channels=None):
        rng = np.random.default_rng(0)
        c = self.channels(size) if channels is None else channels
        return rng.standard_normal((n, c, h, w)).astype(dtype)

    def boxes(self, dtype=np.float32, rows=None):
        """K valid boxes inside the map as (K, 1 + coords) rows; ``rows`` gives axis-aligned
        [b, x1, y1, x2, y2] rows instead, converted for rotated RoIs (angle 0)."""
        if rows is None:
            rows = [[0, 1, 1, 6, 5], [1, 2.5, 0.5, 9, 7.5], [0, 0, 2, 11, 9]]
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, 5)
        if self.coords == 5:
            centre = (rows[:, 1:3] + rows[:, 3:5]) / 2
            size = rows[:, 3:5] - rows[:, 1:3]
            rows = np.concatenate([rows[:, :1], centre, size, np.zeros((len(rows), 1))], axis=1)
        return rows.astype(dtype)

    def argmax_of(self, x, boxes, size, **kw):
        if self.argmax is None:
            return None
        return self.argmax(x, boxes, size, **kw)[1]

    def grad(self, x, boxes, size, dtype=None):
        num_rois = sum(len(b) for b in boxes) if isinstance(boxes, list) else len(boxes)
        ph, pw = (size, size) if isinstance(size, int) else size
        c_out = x.shape[1] // (ph * pw) if self.group else x.shape[1]
        rng = np.random.default_rng(1)
        return rng.standard_normal((num_rois, c_out, ph, pw)).astype(dtype or x.dtype)

    def __repr__(self):
        return self.name


def _kw(op, kw):
    """Drop sampling_ratio/aligned for operators without them."""
    kw = dict(kw)
    if not op.sampling:
        kw.pop("sampling_ratio", None)
    return kw


OPS = [
    Op("roi_align",
       lambda x, b, s, **k: pyroi.roi_align(x, b, s, **k),
       lambda g, b, shape, s, a, **k: pyroi.roi_align_backward(g, b, shape, **k)),
    Op("roi_align_max",
       lambda x, b, s, **k: pyroi.roi_align(x, b, s, mode="max", **k),
       lambda g, b, shape, s, a, **k: pyroi.roi_align_backward(g, b, shape, mode="max", argmax=a,
                                                               **k),
       argmax=lambda x, b, s, **k: pyroi.roi_align(x, b, s, mode="max", return_argmax=True,
                                                   **k)),
    Op("roi_pool",
       lambda x, b, s, **k: pyroi.roi_pool(x, b, s, **k),
       lambda g, b, shape, s, a, **k: pyroi.roi_pool_backward(g, b, a, shape, s, **k),
       sampling=False,
       argmax=lambda x, b, s, **k: pyroi.roi_pool(x, b, s, return_argmax=True, **k)),
    Op("ps_roi_align",
       lambda x, b, s, **k: pyroi.ps_roi_align(x, b, s, **k),
       lambda g, b, shape, s, a, **k: pyroi.ps_roi_align_backward(g, b, shape, **k),
       group=True),
    Op("ps_roi_pool",
       lambda x, b, s, **k: pyroi.ps_roi_pool(x, b, s, **k),
       lambda g, b, shape, s, a, **k: pyroi.ps_roi_pool_backward(g, b, shape, **k),
       sampling=False, group=True),
    Op("roi_align_rotated",
       lambda x, b, s, **k: pyroi.roi_align_rotated(x, b, s, **k),
       lambda g, b, shape, s, a, **k: pyroi.roi_align_rotated_backward(g, b, shape, **k),
       coords=5, rois_name="rois"),
    # without offsets (the translated bins' own hostile cases: tests/test_deform_roi_pool.py)
    Op("deform_roi_pool",
       lambda x, b, s, **k: pyroi.deform_roi_pool(x, b, None, s, **k),
       lambda g, b, shape, s, a, **k: pyroi.deform_roi_pool_backward(g, b, shape, **k)[0],
       rois_name="rois"),
]
SAMPLING_OPS = [op for op in OPS if op.sampling]
# The values of `aligned` each operator with that flag takes (the others have no such flag).
ALIGNED_FLAG = {name: [False, True] for name in ("roi_align", "roi_align_max",
                                                 "roi_align_rotated")}
ALIGN_FAMILY = {"roi_align", "roi_align_max", "ps_roi_align", "roi_align_rotated"}
DIRECTIONS = ["forward", "backward"]


def run(op, direction, x, boxes, size=2, grad=None, argmax=None, **kw):
    """The forward, or the backward with a matching grad_output (and argmax when needed)."""
    kw = _kw(op, kw)
    if direction == "forward":
        return op.forward(x, boxes, size, **kw)
    if grad is None:
        grad = op.grad(x, boxes, size)
    if argmax is None and op.argmax is not None:
        try:
            argmax = op.argmax_of(x, boxes, size,
                                  **{k: v for k, v in kw.items() if k != "out"})
        except pyroi.PyroiError:  # the boxes are hostile: the backward must reject them first
            argmax = np.full(grad.shape, -1, np.int64)
    return op.backward(grad, boxes, x.shape, size, argmax, **kw)


def names_roi(excinfo, index):
    assert re.search(r"RoI\s*" + str(index) + r"(?![0-9])", str(excinfo.value)), str(excinfo.value)


# --------------------------------------------------------------------------------------
# boxes straight from a detector
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_nonfinite_coordinate_is_a_box_error(op, value, direction):
    x = op.input()
    for column in range(1, 1 + op.coords):
        boxes = op.boxes()
        boxes[BAD, column] = value
        with pytest.raises(pyroi.BoxError) as excinfo:
            run(op, direction, x, boxes)
        names(excinfo, op.rois_name)
        names_roi(excinfo, BAD)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_nonfinite_box_writes_nothing(op, direction):
    x = op.input()
    boxes = op.boxes()
    boxes[BAD, 2] = np.nan
    shape = (K, op.channels(2) // (4 if op.group else 1), 2, 2) if direction == "forward" \
        else x.shape
    out = np.full(shape, 42.0, np.float32)
    with pytest.raises(pyroi.BoxError):
        run(op, direction, x, boxes, out=out)
    assert np.all(out == 42.0)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("sampling_ratio", [0, 2], ids=["adaptive", "fixed"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_coordinates_of_1e30(op, sampling_ratio, direction):
    """A 2e30-pixel box: the adaptive grid would exceed 2**31 - 1 samples per bin (BoxError);
    with a fixed grid every sample is far outside the map (zeros); RoIPool's rounded corners
    saturate and the box covers the map (finite maxima)."""
    x = op.input()
    boxes = op.boxes()
    if op.coords == 5:
        boxes[BAD, 1:6] = [5, 5, 2e30, 2e30, 30]
    else:
        boxes[BAD, 1:5] = [-1e30, -1e30, 1e30, 1e30]
    if op.sampling and sampling_ratio == 0:
        with pytest.raises(pyroi.BoxError) as excinfo:
            run(op, direction, x, boxes, sampling_ratio=sampling_ratio)
        names_roi(excinfo, BAD)
        return
    result = run(op, direction, x, boxes, sampling_ratio=sampling_ratio)
    assert np.isfinite(result).all()
    if direction == "forward" and op.name in ALIGN_FAMILY:
        assert not result[BAD].any()


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("sampling_ratio", [0, 2], ids=["adaptive", "fixed"])
@pytest.mark.parametrize("op, aligned", [(op, aligned) for op in OPS
                                         for aligned in ALIGNED_FLAG.get(op.name, [None])],
                         ids=lambda v: repr(v) if isinstance(v, Op) else f"aligned={v}")
def test_inverted_and_zero_area_boxes_give_finite_results(op, aligned, sampling_ratio,
                                                          direction):
    rows = [[0, 6, 5, 1, 1],      # inverted on both axes
            [1, 6, 1, 1, 5],      # inverted along x only
            [0, 3, 3, 3, 3],      # a point
            [1, 2, 4, 8, 4]]      # zero height
    x = op.input()
    kw = dict(sampling_ratio=sampling_ratio)
    if aligned is not None:
        kw["aligned"] = aligned
    result = run(op, direction, x, op.boxes(rows=rows), **kw)
    assert np.isfinite(result).all()
    if direction == "forward" and sampling_ratio == 0 and (
            op.name == "ps_roi_align" or (op.name == "roi_align" and aligned)):
        # documented: no samples on an axis of negative or zero size gives +0.0 (the peers:
        # NaN from 0/0, -0.0, or an exception)
        assert not result[1].any() and not np.signbit(result[1]).any()
    if op.name == "ps_roi_align" and direction == "forward" and sampling_ratio == 0:
        assert not result[2].any() and not np.signbit(result[2]).any()


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_boxes_far_outside_the_image_pool_zeros(op, direction):
    rows = [[0, 1e4, 1e4, 1e4 + 9, 1e4 + 7], [1, -5e3, -40, -4e3, -30], [0, -60, 3, -50, 9]]
    x = op.input()
    kw = {}
    if op.argmax is not None and direction == "forward":
        result, argmax = op.argmax(x, op.boxes(rows=rows), 2)
        if op.name == "roi_pool":
            assert np.all(argmax == -1)  # empty bins
    result = run(op, direction, x, op.boxes(rows=rows), **kw)
    assert np.isfinite(result).all() and not result.any()


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("batch_index", [-1.0, float(N), 1.5, np.nan, np.inf, 1e30, -0.5],
                         ids=["-1", "N", "1.5", "nan", "inf", "1e30", "-0.5"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_bad_batch_index(op, batch_index, direction):
    boxes = op.boxes()
    boxes[BAD, 0] = batch_index
    with pytest.raises(pyroi.BatchIndexError) as excinfo:
        run(op, direction, op.input(), boxes)
    assert isinstance(excinfo.value, IndexError)
    names(excinfo, op.rois_name)
    names_roi(excinfo, BAD)


def test_bad_batch_index_message_shows_the_value_given():
    boxes = OPS[0].boxes()
    boxes[BAD, 0] = 1e30
    with pytest.raises(pyroi.BatchIndexError, match=r"1(\.0+\d*)?e\+30"):
        pyroi.roi_align(OPS[0].input(), boxes, 2)


@pytest.mark.parametrize("indices, error, word", [
    ([0, -1, 0], pyroi.BatchIndexError, "RoI 1"),
    ([0, N, 0], pyroi.BatchIndexError, "RoI 1"),
    (np.array([0, 2**64 - 1, 0], np.uint64), pyroi.BatchIndexError, "RoI 1"),
    ([0.0, 1.0, 0.0], pyroi.DTypeError, "batch_indices"),
    ([True, False, True], pyroi.DTypeError, "batch_indices"),
    ([0, 1], pyroi.ShapeError, "batch_indices"),
    (np.int64(0), pyroi.ShapeError, "batch_indices"),
    ([None, 0, 0], pyroi.DTypeError, "batch_indices"),
    ([[0], [1, 2], [0]], pyroi.ArgumentTypeError, "batch_indices"),
], ids=["-1", "N", "uint64max", "float", "bool", "short", "0d", "None", "ragged"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_bad_batch_indices_argument(op, indices, error, word):
    coords = op.boxes()[:, 1:]
    with pytest.raises(error) as excinfo:
        op.forward(op.input(), coords, 2, batch_indices=indices)
    assert word in str(excinfo.value)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_list_longer_than_the_batch(op, direction):
    boxes = [np.zeros((0, op.coords), np.float32)] * N + [op.boxes()[:1, 1:]]
    with pytest.raises(pyroi.BatchIndexError):
        run(op, direction, op.input(), boxes)


# --------------------------------------------------------------------------------------
# degenerate sizes
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["array", "list", "empty_list", "indices"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_no_rois(op, form):
    x = op.input()
    boxes = {"array": op.boxes()[:0],
             "list": [np.zeros((0, op.coords), np.float32)] * N,
             "empty_list": [],
             "indices": op.boxes()[:0, 1:]}[form]
    kw = {"batch_indices": np.zeros(0, np.int64)} if form == "indices" else {}
    y = op.forward(x, boxes, 2, **kw)
    assert y.shape == (0, x.shape[1] // 4 if op.group else x.shape[1], 2, 2)
    grad = np.zeros(y.shape, np.float32)
    argmax = np.zeros(y.shape, np.int64) if op.argmax is not None else None
    g = op.backward(grad, boxes, x.shape, 2, argmax, **kw)
    assert g.shape == x.shape and not g.any()


@pytest.mark.parametrize("axis", ["N", "C", "H", "W"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_empty_feature_map_axis(op, axis):
    """N = 0 (with no RoIs), C = 0, H = 0 or W = 0: empty or all-zero results, never a read."""
    shape = dict(n=N, h=H, w=W, channels=None)
    shape[{"N": "n", "C": "channels", "H": "h", "W": "w"}[axis]] = 0
    x = op.input(**shape)
    boxes = op.boxes()[:0] if axis == "N" else op.boxes()
    y = op.forward(x, boxes, 2)
    c_out = x.shape[1] // 4 if op.group else x.shape[1]
    assert y.shape == (len(boxes), c_out, 2, 2)
    assert np.isfinite(y).all() and not y.any()
    g = run(op, "backward", x, boxes)
    assert g.shape == x.shape
    if axis == "N":
        boxes = op.boxes()  # batch indices 0 and 1 of an empty batch
        with pytest.raises(pyroi.BatchIndexError):
            op.forward(x, boxes, 2)


@pytest.mark.parametrize("size", [0, -1, (2, 0), (0, 2), (-3, 2), 2**70, (1, 2**64)],
                         ids=["0", "-1", "2x0", "0x2", "-3x2", "2^70", "1x2^64"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_bad_output_size(op, size):
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        op.forward(op.input(), op.boxes(), size)
    names(excinfo, "output_size", "output_size[0]", "output_size[1]")


@pytest.mark.parametrize("size", [2.0, "2", None, (2, 2, 2), True], ids=str)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_output_size_of_wrong_type(op, size):
    with pytest.raises(pyroi.PyroiError) as excinfo:
        op.forward(op.input(), op.boxes(), size)
    names(excinfo, "output_size", "output_size[0]")


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_output_too_large_to_allocate_names_output_size(op):
    """(1 + K) x C x 2**40 x 2**40 bins cannot exist: a clear error, not NumPy's."""
    for boxes in (op.boxes(), op.boxes()[:0]):
        with pytest.raises(pyroi.PyroiError) as excinfo:
            op.forward(op.input(channels=0 if op.group else None), boxes, 2**40)
        assert isinstance(excinfo.value, (MemoryError, ValueError))
        names(excinfo, "output_size")


@pytest.mark.parametrize("input_shape", [(N, 3, 2**40, 2**40), (2**63, 3, 1, 1)], ids=str)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_backward_input_shape_too_large(op, input_shape):
    grad = np.zeros((0, 3, 2, 2), np.float32) if not op.group else np.zeros((0, 1, 1, 1),
                                                                             np.float32)
    shape = input_shape if not op.group else (input_shape[0], 1) + input_shape[2:]
    argmax = np.zeros(grad.shape, np.int64)
    size = grad.shape[2:]
    with pytest.raises(pyroi.PyroiError) as excinfo:
        op.backward(grad, op.boxes()[:0], shape, size, argmax)
    names(excinfo, "input_shape")


@pytest.mark.parametrize("op", [op for op in OPS if op.name != "roi_pool"], ids=repr)
def test_backward_grad_output_with_no_bins(op):
    grad = np.zeros((K, 3, 0, 2), np.float32)
    with pytest.raises(pyroi.PyroiError) as excinfo:
        op.backward(grad, op.boxes(), (N, 3, H, W), (0, 2), None)
    names(excinfo, "grad_output", "output_size")


# --------------------------------------------------------------------------------------
# (K, 1 + n) boxes: one pass in C (pyroi_roi_rows_batch_indices) checks and splits them
# --------------------------------------------------------------------------------------

def _rois(dtype, count, coords, seed=0):
    rng = np.random.default_rng(seed)
    rois = rng.uniform(-50, 50, (count, 1 + coords)).astype(dtype)
    rois[:, 0] = rng.integers(0, N, count)
    if count:
        rois[0, 0] = -0.0  # image 0
        rois[-1, 0] = N - 1
    return rois


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("coords", [4, 5])
@pytest.mark.parametrize("layout", ["contiguous", "every other row", "read-only",
                                    "column-major", "byte-swapped"])
def test_rois_rows_split_like_the_batch_indices_form(dtype, count, coords, layout):
    from pyroi import _validate
    rois = _rois(dtype, count, coords)
    given = rois
    if layout == "every other row":
        given = np.repeat(rois, 2, axis=0)[::2]
    elif layout == "read-only":
        given = rois.copy()
        given.flags.writeable = False
    elif layout == "column-major":
        given = np.asfortranarray(rois)
    elif layout == "byte-swapped":
        given = rois.astype(np.dtype(dtype).newbyteorder())
    coords_out, indices = _validate.boxes(given, np.dtype(dtype), N, coords_per_box=coords)
    expected = _validate.boxes(np.ascontiguousarray(rois[:, 1:]), np.dtype(dtype), N,
                               batch_indices=rois[:, 0].astype(np.int64), coords_per_box=coords)
    assert coords_out.dtype == np.dtype(dtype) and coords_out.dtype.isnative
    assert count == 0 or coords_out.strides[1] == coords_out.itemsize
    np.testing.assert_array_equal(coords_out, expected[0])
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices, expected[1])


_NOT_FINITE = r"RoI 2 has a non-finite coordinate"
_NOT_INTEGER = r"RoI 2 has batch index .*; it must be an integer$"
_OUT_OF_RANGE = rf"RoI 2 has batch index .*; it must be an integer in \[0, {N}\)$"


@pytest.mark.parametrize("column, value, error, pattern", [
    (1, np.nan, pyroi.BoxError, _NOT_FINITE),
    (2, np.inf, pyroi.BoxError, _NOT_FINITE),
    (4, -np.inf, pyroi.BoxError, _NOT_FINITE),
    (0, 0.5, pyroi.BatchIndexError, _NOT_INTEGER),
    (0, np.nan, pyroi.BatchIndexError, _NOT_INTEGER),
    (0, -0.5, pyroi.BatchIndexError, _NOT_INTEGER),
    (0, -1.0, pyroi.BatchIndexError, _OUT_OF_RANGE),
    (0, float(N), pyroi.BatchIndexError, _OUT_OF_RANGE),
    (0, np.inf, pyroi.BatchIndexError, _OUT_OF_RANGE),
    (0, -np.inf, pyroi.BatchIndexError, _OUT_OF_RANGE),
    (0, 1e30, pyroi.BatchIndexError, _OUT_OF_RANGE),
    (0, 2.0**63, pyroi.BatchIndexError, _OUT_OF_RANGE),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rois_rows_name_the_first_offender(column, value, error, pattern, dtype):
    from pyroi import _validate
    rois = _rois(dtype, 5, 4)
    rois[2, column] = value
    rois[4, column] = value
    with pytest.raises(error, match=pattern):
        _validate.boxes(rois, np.dtype(dtype), N)


def test_rois_rows_report_in_order_integer_then_range_then_finite():
    """A later RoI's non-integer index is reported before an earlier out-of-range one, and
    either before a non-finite coordinate: the order the checks had as separate passes."""
    from pyroi import _validate
    rois = _rois(np.float32, 6, 4)
    rois[1, 3] = np.nan
    rois[2, 0] = N + 3
    rois[4, 0] = 0.25
    with pytest.raises(pyroi.BatchIndexError, match="RoI 4 .*must be an integer$"):
        _validate.boxes(rois, np.dtype(np.float32), N)
    rois[4, 0] = 0
    with pytest.raises(pyroi.BatchIndexError, match=r"RoI 2 .*\[0, 2\)"):
        _validate.boxes(rois, np.dtype(np.float32), N)
    rois[2, 0] = 1
    with pytest.raises(pyroi.BoxError, match="RoI 1 "):
        _validate.boxes(rois, np.dtype(np.float32), N)


# --------------------------------------------------------------------------------------
# sampling: every call bounded in time and memory
# --------------------------------------------------------------------------------------

def test_sampling_ratio_cap_equals_the_c_constant():
    from pyroi import _core, _validate
    assert _core.MAX_SAMPLING_RATIO == _validate.MAX_SAMPLING_RATIO == 1024


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("ratio", [1025, 2**31 - 1, 2**31, 2**63, 2**70])
@pytest.mark.parametrize("op", SAMPLING_OPS, ids=repr)
def test_sampling_ratio_above_the_cap(op, ratio, direction):
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        run(op, direction, op.input(), op.boxes(), sampling_ratio=ratio)
    names(excinfo, "sampling_ratio")


@pytest.mark.parametrize("ratio", [1025, 2**31 - 1])
def test_sampling_ratio_above_the_cap_in_layers(ratio):
    for make in (lambda: pyroi.RoIAlign(2, 1.0, ratio), lambda: pyroi.PSRoIAlign(2, 1.0, ratio),
                 lambda: pyroi.RoIAlignRotated(2, 1.0, ratio),
                 lambda: pyroi.MultiScaleRoIAlign(["0"], 2, ratio)):
        with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
            make()
        names(excinfo, "sampling_ratio")


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", SAMPLING_OPS, ids=repr)
def test_sampling_ratio_at_the_cap_is_computed(op, direction):
    """1024 x 1024 samples per bin: accepted, and close to a finer-than-needed integral."""
    x = op.input(n=1, size=1, channels=1 if not op.group else None)
    boxes = op.boxes(rows=[[0, 2, 1, 7.5, 6.5]])
    at_cap = run(op, direction, x, boxes, size=1, sampling_ratio=1024)
    finer = run(op, direction, x, boxes, size=1, sampling_ratio=64)
    assert np.isfinite(at_cap).all()
    if op.name != "roi_align_max":
        np.testing.assert_allclose(at_cap, finer, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op, angle", [(op, angle) for op in SAMPLING_OPS
                                       for angle in ([0, 30, 45] if op.coords == 5 else [0])],
                         ids=lambda v: repr(v) if isinstance(v, Op) else f"angle={v}")
def test_adaptive_sampling_of_a_huge_box_finishes(op, angle, direction):
    """A 1e6-pixel box (1e9 for rotated RoIs, also turned) with adaptive sampling: about 1.4e5
    samples per bin and axis, but only those near the map are visited. Asserted: it returns
    (no timing)."""
    x = op.input(dtype=np.float32, size=7)
    rows = [[0, -5e5, -5e5, 5e5, 5e5], [1, 3, 2, 3 + 1e6, 2 + 1e6], [0, 1, 1, 6, 5]]
    boxes = op.boxes(rows=rows)
    if op.coords == 5:
        boxes[:2, 5] = angle
        boxes[0, 3:5] = 1e9  # a 1e9 x 1e9 turned box centred on the map
    result = run(op, direction, x, boxes, size=7, sampling_ratio=0)
    assert np.isfinite(result).all()
    if direction == "forward":
        small = op.forward(x, boxes[2:], 7, sampling_ratio=0)
        np.testing.assert_array_equal(result[2:], small)  # the other RoIs are unaffected


def test_huge_turned_box_matches_the_same_box_per_row():
    """The row band that makes huge rotated RoIs cheap skips only rows without in-map samples:
    a thin turned box (few rows, each long) gives the same bits with 1 and 7 output rows."""
    x = np.random.default_rng(2).standard_normal((1, 2, 9, 11)).astype(np.float32)
    rois = np.array([[0, 5, 4, 3e6, 0.75, 37.0], [0, 5, 4, 0.75, 3e6, -61.0]], np.float32)
    once = pyroi.roi_align_rotated(x, rois, (1, 9), 1.0, 0)
    assert np.isfinite(once).all() and once.any()
    for threads in (1, 2):
        again = pyroi.roi_align_rotated(x, rois, (1, 9), 1.0, 0, num_threads=threads)
        np.testing.assert_array_equal(again, once)


# --------------------------------------------------------------------------------------
# memory layouts: every NumPy view reads like its contiguous copy
# --------------------------------------------------------------------------------------

def _layouts(x):
    """(name, view) pairs equal in value to x."""
    base = np.empty((x.shape[0], x.shape[1], 2 * x.shape[2], 3 * x.shape[3]), x.dtype)
    base[:, :, ::2, ::3] = x
    flipped = np.ascontiguousarray(x[:, :, ::-1, ::-1])[:, :, ::-1, ::-1]
    channels_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    return [("fortran", np.asfortranarray(x)), ("strided", base[:, :, ::2, ::3]),
            ("negative", flipped), ("channels_last", channels_last),
            ("list", x.astype(np.float64).tolist() if x.dtype == np.float64 else None)]


@pytest.mark.parametrize("layout", ["fortran", "strided", "negative", "channels_last",
                                    "broadcast", "list"])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_input_layouts_equal_contiguous(op, direction, layout):
    dtype = np.float64 if layout == "list" else np.float32
    x = op.input(dtype=dtype)
    if layout == "broadcast":  # zero strides over N and W
        x = np.broadcast_to(x[:1, :, :, :1], x.shape)
    boxes = op.boxes(dtype=dtype)
    grad = op.grad(x, boxes, 2)
    argmax = op.argmax_of(np.ascontiguousarray(x), boxes, 2)
    if direction == "forward":
        expected = op.forward(np.ascontiguousarray(x), boxes, 2)
        views = dict(_layouts(np.ascontiguousarray(x)))
        views["broadcast"] = x
        got = op.forward(views[layout], boxes, 2)
    else:
        expected = op.backward(grad, boxes, x.shape, 2, argmax)
        views = dict(_layouts(grad))
        views["broadcast"] = np.broadcast_to(grad[:1], grad.shape)
        if layout == "broadcast":
            expected = op.backward(np.ascontiguousarray(views["broadcast"]), boxes, x.shape, 2,
                                   argmax)
        got = op.backward(views[layout], boxes, x.shape, 2, argmax)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype


@pytest.mark.parametrize("layout", ["fortran", "every_other_row", "reversed", "big_endian",
                                    "list_of_arrays"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_box_layouts_equal_contiguous(op, layout):
    x = op.input()
    boxes = op.boxes()
    expected = op.forward(x, boxes, 2)
    if layout == "fortran":
        view = np.asfortranarray(boxes)
    elif layout == "every_other_row":
        wide = np.zeros((2 * K, boxes.shape[1]), boxes.dtype)
        wide[::2] = boxes
        view = wide[::2]
    elif layout == "reversed":
        view = np.ascontiguousarray(boxes[::-1])[::-1]
    elif layout == "big_endian":
        view = boxes.astype(boxes.dtype.newbyteorder(">"))
    else:
        batch = boxes[:, 0].astype(int)
        order = np.argsort(batch, kind="stable")
        view = [boxes[batch == i, 1:] for i in range(N)]
        expected = expected[order]
    np.testing.assert_array_equal(op.forward(x, view, 2), expected)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_strided_and_reversed_out(op, direction):
    x = op.input()
    boxes = op.boxes()
    expected = run(op, direction, x, boxes)
    big = np.full((2,) + expected.shape[:-1] + (2 * expected.shape[-1],), 7.0, np.float32)
    for out in (big[1, ..., ::2], big[0, ::-1, :, :, ::-2][::-1]):
        result = run(op, direction, x, boxes, out=out)
        assert result is out
        np.testing.assert_array_equal(out, expected)


# --------------------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("problem", ["read_only", "wrong_shape", "wrong_dtype", "not_array",
                                     "aliases_input", "aliases_boxes", "overlapping",
                                     "misaligned"])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_bad_out(op, direction, problem):
    x = op.input()
    boxes = op.boxes()
    shape = run(op, direction, x, boxes).shape
    error = {"read_only": pyroi.InvalidArgumentError, "wrong_shape": pyroi.ShapeError,
             "wrong_dtype": pyroi.DTypeError, "not_array": pyroi.ArgumentTypeError,
             "aliases_input": pyroi.InvalidArgumentError,
             "aliases_boxes": pyroi.InvalidArgumentError, "overlapping": pyroi.ShapeError,
             "misaligned": pyroi.ShapeError}[problem]
    grad = op.grad(x, boxes, 2)
    size = int(np.prod(shape))
    if problem == "read_only":
        out = np.zeros(shape, np.float32)
        out.setflags(write=False)
    elif problem == "wrong_shape":
        out = np.zeros(shape[:-1] + (shape[-1] + 1,), np.float32)
    elif problem == "wrong_dtype":
        out = np.zeros(shape, np.float64)
    elif problem == "not_array":
        out = np.zeros(shape, np.float32).tolist()
    elif problem == "aliases_input":  # out overlaps the features / grad_output it reads
        source = x if direction == "forward" else grad
        buffer = np.zeros(source.size + size, np.float32)
        buffer[:source.size] = source.ravel()
        if direction == "forward":
            x = buffer[:source.size].reshape(source.shape)
        else:
            grad = buffer[:source.size].reshape(source.shape)
        out = buffer[source.size // 2:source.size // 2 + size].reshape(shape)
    elif problem == "aliases_boxes":
        buffer = np.zeros(size + boxes.size, np.float32)
        buffer[:boxes.size] = boxes.ravel()
        boxes = buffer[:boxes.size].reshape(boxes.shape)
        out = buffer[boxes.size // 2:boxes.size // 2 + size].reshape(shape)
    elif problem == "overlapping":
        out = np.lib.stride_tricks.as_strided(np.zeros(size, np.float32), shape,
                                              (0,) + np.zeros(shape).strides[1:])
    else:  # float32 elements at an odd byte address
        out = np.ndarray(shape, np.float32, buffer=np.zeros(size * 4 + 1, np.uint8)[1:].data)
        assert not out.flags.aligned
    before = np.array(out, copy=True) if isinstance(out, np.ndarray) else None
    with pytest.raises(error) as excinfo:
        run(op, direction, x, boxes, grad=grad, out=out)
    names(excinfo, "out")
    if before is not None and problem not in ("aliases_input", "aliases_boxes"):
        np.testing.assert_array_equal(np.asarray(out), before)


# --------------------------------------------------------------------------------------
# types
# --------------------------------------------------------------------------------------

# float16 is supported (computed in float32, see test_float16.py), so it is not listed here
BAD_DTYPES = [np.int32, np.int64, np.uint8, np.bool_, np.complex64, object]


@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("argument", ["input", "boxes", "grad_output"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_unsupported_dtypes(op, argument, dtype):
    x = op.input()
    boxes = op.boxes()
    if argument == "input":
        with pytest.raises(pyroi.DTypeError) as excinfo:
            op.forward(x.astype(dtype), boxes.astype(np.float64) if dtype is object else boxes,
                       2)
        names(excinfo, "input")
    elif argument == "boxes":
        with pytest.raises(pyroi.DTypeError) as excinfo:
            op.forward(x, boxes.astype(dtype), 2)
        names(excinfo, op.rois_name)
    else:
        grad = op.grad(x, boxes, 2).astype(dtype)
        argmax = np.zeros(grad.shape, np.int64) if op.argmax is not None else None
        with pytest.raises(pyroi.DTypeError) as excinfo:
            op.backward(grad, boxes, x.shape, 2, argmax)
        names(excinfo, "grad_output")


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_mixed_float_dtypes(op):
    x = op.input(np.float32)
    with pytest.raises(pyroi.DTypeError) as excinfo:
        op.forward(x, op.boxes(np.float64), 2)
    names(excinfo, op.rois_name)
    with pytest.raises(pyroi.DTypeError) as excinfo:
        op.forward(x, op.boxes(), 2, out=np.zeros((K, 1, 2, 2), np.float64))
    names(excinfo, "out")


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_python_lists(op):
    """Nested lists are arrays (float64); a list of boxes means one entry per image."""
    x = op.input(np.float64)
    boxes = op.boxes(np.float64)
    expected = op.forward(x, boxes, 2)
    np.testing.assert_array_equal(op.forward(x.tolist(), boxes, 2), expected)
    per_image = [[row[1:].tolist() for row in boxes if row[0] == i] for i in range(N)]
    order = np.argsort(boxes[:, 0], kind="stable")
    np.testing.assert_array_equal(op.forward(x, per_image, 2), expected[order])
    with pytest.raises(pyroi.ShapeError) as excinfo:  # (K, 5) rows as a list: per image
        op.forward(x, boxes.tolist(), 2)
    names(excinfo, f"{op.rois_name}[0]")


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_ragged_and_unconvertible_arguments(op):
    x = op.input(np.float64)
    with pytest.raises(pyroi.ArgumentTypeError) as excinfo:
        op.forward([[[[1.0], [1.0, 2.0]]]], op.boxes(np.float64), 2)
    names(excinfo, "input")
    with pytest.raises(pyroi.ArgumentTypeError) as excinfo:
        op.forward(x, [[[1.0] * op.coords, [1.0]]], 2)
    names(excinfo, f"{op.rois_name}[0]")
    for value in (None, "boxes", {}):
        with pytest.raises(pyroi.PyroiError) as excinfo:
            op.forward(x, value, 2)
        names(excinfo, op.rois_name)


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_zero_d_arrays(op):
    x = op.input()
    boxes = op.boxes()
    with pytest.raises(pyroi.ShapeError) as excinfo:
        op.forward(np.float32(1.0), boxes, 2)
    names(excinfo, "input")
    with pytest.raises(pyroi.ShapeError) as excinfo:
        op.forward(x, np.array(1.0, np.float32), 2)
    names(excinfo, op.rois_name)
    with pytest.raises(pyroi.ShapeError) as excinfo:
        op.forward(x, boxes[:1, 1:], 2, batch_indices=np.array(0))
    names(excinfo, "batch_indices")
    # 0-d integer arrays are integers (operator.index); a 0-d float array is not a scalar
    np.testing.assert_array_equal(op.forward(x, boxes, np.array(2)), op.forward(x, boxes, 2))
    with pytest.raises(pyroi.ArgumentTypeError) as excinfo:
        op.forward(x, boxes, 2, spatial_scale=np.array(0.5))
    names(excinfo, "spatial_scale")
    grad = np.zeros((), np.float32)
    with pytest.raises(pyroi.ShapeError) as excinfo:
        op.backward(grad, boxes, x.shape, 2, np.zeros((), np.int64))
    names(excinfo, "grad_output")


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_scalar_extremes(op):
    x = op.input()
    boxes = op.boxes()
    expected = op.forward(x, boxes, 2, num_threads=1)
    # more threads than a C int: treated as the most (results never depend on the count)
    np.testing.assert_array_equal(op.forward(x, boxes, 2, num_threads=2**40), expected)
    for scale in (2**2000, float("nan"), -1.0, float("inf")):
        with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
            op.forward(x, boxes, 2, spatial_scale=scale)
        names(excinfo, "spatial_scale")
    for threads in (0, -1, 2.5):
        with pytest.raises(pyroi.PyroiError) as excinfo:
            op.forward(x, boxes, 2, num_threads=threads)
        names(excinfo, "num_threads")
    if op.sampling:
        np.testing.assert_array_equal(op.forward(x, boxes, 2, sampling_ratio=-2**70),
                                      op.forward(x, boxes, 2, sampling_ratio=0))


def test_spatial_scale_that_overflows_a_box():
    """float32 coordinate * 1e300 is inf: rejected like a non-finite box."""
    for op in OPS:
        with pytest.raises(pyroi.BoxError) as excinfo:
            op.forward(op.input(), op.boxes(), 2, spatial_scale=1e300)
        names_roi(excinfo, 0)


# --------------------------------------------------------------------------------------
# layer classes and the multi-scale pooler
# --------------------------------------------------------------------------------------

LAYERS = {
    "RoIAlign": (lambda: pyroi.RoIAlign(2, 1.0, 2, True), 4, False),
    "RoIAlign-max": (lambda: pyroi.RoIAlign(2, 1.0, 2, False, mode="max"), 4, False),
    "RoIPool": (lambda: pyroi.RoIPool(2, 1.0), 4, False),
    "PSRoIAlign": (lambda: pyroi.PSRoIAlign(2, 1.0, 0), 4, True),
    "PSRoIPool": (lambda: pyroi.PSRoIPool(2, 1.0), 4, True),
    "RoIAlignRotated": (lambda: pyroi.RoIAlignRotated(2, 1.0, 0), 5, False),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_with_hostile_boxes(name):
    make, coords, group = LAYERS[name]
    op = next(o for o in OPS if o.coords == coords and o.group == group)
    x = op.input()
    layer = make()
    with pytest.raises(pyroi.PyroiError):
        layer.backward(np.zeros((K, 3, 2, 2), np.float32))  # no call yet
    boxes = op.boxes()
    boxes[BAD, 1] = np.nan
    with pytest.raises(pyroi.BoxError) as excinfo:
        layer(x, boxes)
    names_roi(excinfo, BAD)
    boxes[BAD, 0] = -1
    with pytest.raises(pyroi.BatchIndexError):
        layer(x, boxes)
    # inverted, zero-size and far-away boxes: finite forward and backward
    boxes = op.boxes(rows=[[0, 6, 5, 1, 1], [1, 3, 3, 3, 3], [0, 1e4, 1e4, 1e4 + 5, 1e4 + 5]])
    y = layer(x, boxes)
    g = layer.backward(np.ones_like(y), lda_coeff=0.5)
    assert np.isfinite(y).all() and np.isfinite(g).all() and g.shape == x.shape
    with pytest.raises(pyroi.PyroiError) as excinfo:
        layer.backward(np.ones_like(y), lda_coeff=float("nan"))
    names(excinfo, "lda_coeff")
    with pytest.raises(pyroi.PyroiError):
        layer.backward(np.ones((K + 1,) + y.shape[1:], np.float32))


def _pyramid(dtype=np.float32, heights=(16, 8)):
    rng = np.random.default_rng(4)
    return {str(i): rng.standard_normal((2, 3, h, h + 1)).astype(dtype)
            for i, h in enumerate(heights)}


def test_multiscale_with_hostile_boxes():
    features = _pyramid()
    pooler = pyroi.MultiScaleRoIAlign(["0", "1"], 2, 2)
    good = [np.array([[1, 1, 30, 30], [5, 5, 60, 40]], np.float32),
            np.array([[0, 0, 64, 64]], np.float32)]
    pooler(features, good, [(64, 64), (64, 64)])
    for value in (np.nan, np.inf):
        bad = [good[0].copy(), good[1]]
        bad[0][1, 2] = value
        with pytest.raises(pyroi.BoxError) as excinfo:
            pooler(features, bad, [(64, 64)])
        names_roi(excinfo, 1)
    # a box inverted on one axis (negative area) belongs to no level: zero row, no gradient
    inverted = [np.array([[30, 1, 1, 30], [5, 5, 60, 40]], np.float32),
                np.zeros((0, 4), np.float32)]
    y = pooler(features, inverted, [(64, 64)])
    assert not y[0].any() and y[1].any()
    gradients = pooler.backward(np.ones_like(y))
    assert all(np.isfinite(g).all() for g in gradients.values())
    # no boxes at all
    y = pooler(features, [np.zeros((0, 4), np.float32)] * 2, [(64, 64)])
    assert y.shape == (0, 3, 2, 2)
    assert not any(g.any() for g in pooler.backward(y).values())
    # a batch index past the images, wrong dtype, wrong container
    with pytest.raises(pyroi.BatchIndexError):
        pooler(features, good + [good[1]], [(64, 64)])
    with pytest.raises(pyroi.DTypeError):
        pooler(features, [b.astype(np.float64) for b in good], [(64, 64)])
    with pytest.raises(pyroi.ArgumentTypeError):
        pooler(features, np.zeros((2, 5), np.float32), [(64, 64)])
    with pytest.raises(pyroi.PyroiError):
        pooler({"other": features["0"]}, good, [(64, 64)])


def test_multiscale_scale_inference_with_degenerate_shapes():
    """Found by the Python fuzzer: a level of height 0 (or image heights <= 0) made the scale
    log2(0) and the level int(-inf): OverflowError. Now an error naming the argument."""
    features = _pyramid()
    good = [np.array([[1, 1, 30, 30]], np.float32)] * 2
    empty_level = dict(features, **{"1": np.zeros((2, 3, 0, 9), np.float32)})
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.MultiScaleRoIAlign(["0", "1"], 2, 2)(empty_level, good, [(64, 64)])
    names(excinfo, "features['1']")
    for shapes in ([(0, 64)], [(-5, 3)], [(64,)], [("a", 3)], [None]):
        with pytest.raises(pyroi.PyroiError) as excinfo:
            pyroi.MultiScaleRoIAlign(["0", "1"], 2, 2)(features, good, shapes)
        names(excinfo, "image_shapes")


# --------------------------------------------------------------------------------------
# sizes past 2**31 elements
# --------------------------------------------------------------------------------------

BIG = 50000  # a 50000 x 50000 map: 2.5e9 pixels per plane, past 2**31


def _huge_view():
    """A (1, 1, BIG, BIG) float32 view of 400 000 floats: pixel (h, w) is a[7h + w], so rows
    differ and every read address depends on both coordinates."""
    a = np.random.default_rng(5).standard_normal(7 * (BIG - 1) + BIG).astype(np.float32)
    view = np.lib.stride_tricks.as_strided(a, (1, 1, BIG, BIG), (0, 0, 7 * 4, 4),
                                           writeable=False)
    return view


# boxes near the far corner, some crossing it; dyadic, so that the big and the shifted small
# case compute the same sample positions bit for bit
_FAR = [[0, BIG - 40, BIG - 36, BIG - 8, BIG - 4], [0, BIG - 20.5, BIG - 30, BIG + 3.5, BIG - 10],
        [0, BIG - 2, BIG - 6, BIG + 6, BIG + 2], [0, BIG - 33, BIG - 33, BIG - 33, BIG - 29]]
CROP = 64


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_far_corner_of_a_huge_view_equals_a_small_crop(op):
    big = _huge_view()
    x = big if not op.group else np.broadcast_to(big, (1, 4, BIG, BIG))
    crop = x[:, :, BIG - CROP:, BIG - CROP:]
    boxes = op.boxes(rows=_FAR)
    shifted = boxes.copy()
    shifted[:, 1:3] -= BIG - CROP
    if op.coords == 4:
        shifted[:, 3:5] -= BIG - CROP
    assert x.shape[2] * x.shape[3] > 2**31
    kw = dict(sampling_ratio=2) if op.sampling else {}
    if op.argmax is not None:
        got, got_arg = op.argmax(x, boxes, 2, **kw)
        want, want_arg = op.argmax(np.ascontiguousarray(crop), shifted, 2, **kw)
        if op.name == "roi_pool":  # in-plane index h * W + w: past 2**31 on the big map
            rows, cols = np.divmod(want_arg, CROP)
            expected = np.where(want_arg < 0, -1,
                                (rows + BIG - CROP) * np.int64(BIG) + cols + BIG - CROP)
            np.testing.assert_array_equal(got_arg, expected)
            assert got_arg.max() > 2**31
        else:
            np.testing.assert_array_equal(got_arg, want_arg)
    else:
        got = op.forward(x, boxes, 2, **kw)
        want = op.forward(np.ascontiguousarray(crop), shifted, 2, **kw)
    np.testing.assert_array_equal(got, want)
    assert got.any()


def test_offsets_past_2_31_elements_of_real_memory():
    """A real (1, 1, BIG, BIG) float32 array (10 GB of address space, mostly untouched zero
    pages) with a patch at the far corner: element offsets beyond 2**31 are read correctly."""
    try:
        x = np.zeros((1, 1, BIG, BIG), np.float32)
    except MemoryError:
        pytest.skip("no 10 GB of address space")
    patch = np.random.default_rng(6).standard_normal((CROP, CROP)).astype(np.float32)
    x[0, 0, BIG - CROP:, BIG - CROP:] = patch
    crop = np.ascontiguousarray(x[:, :, BIG - CROP:, BIG - CROP:])
    boxes = OPS[0].boxes(rows=_FAR)
    shifted = boxes.copy()
    shifted[:, 1:5] -= BIG - CROP
    for aligned in (False, True):
        np.testing.assert_array_equal(pyroi.roi_align(x, boxes, 2, 1.0, 2, aligned),
                                      pyroi.roi_align(crop, shifted, 2, 1.0, 2, aligned))
    y, argmax = pyroi.roi_pool(x, boxes, 3, return_argmax=True)
    y_small, argmax_small = pyroi.roi_pool(crop, shifted, 3, return_argmax=True)
    np.testing.assert_array_equal(y, y_small)
    rows, cols = np.divmod(argmax_small, CROP)
    np.testing.assert_array_equal(
        argmax, np.where(argmax_small < 0, -1,
                         (rows + BIG - CROP) * np.int64(BIG) + cols + BIG - CROP))
    del x


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_broadcast_batch_of_2_61_images(op):
    """A zero-stride batch of 2**61 - 1 images: batch indices near 2**61 address the same
    pixel. The RoIs are grouped by image by sorting them, so no table grows with the batch
    (per-image tables once made this a PyroiMemoryError, and before that a heap overflow)."""
    x = np.broadcast_to(np.full((1, 1, 1, 1), 3.0, np.float32), (2**61 - 1, 1, 1, 1))
    coords = op.boxes(rows=[[0, 0, 0, 1, 1], [0, -0.25, 0, 0.5, 0.75]])[:, 1:]
    indices = np.array([2**61 - 2, 0])
    small = op.forward(x[:1], coords, 1, batch_indices=np.zeros(2, np.int64))
    y = op.forward(x, coords, 1, batch_indices=indices)
    np.testing.assert_array_equal(y, small)


def peak_rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@pytest.mark.parametrize("images", [10**8, 2**40])
@pytest.mark.parametrize("call", ["roi_align", "roi_align_max", "roi_pool"])
def test_broadcast_batch_costs_what_its_rois_cost(call, images):
    """One RoI on the last image of a broadcast batch of 1e8 or 2**40 images: time and memory
    follow the RoIs and the output (16 elements), not the batch. Per-image grouping tables
    took 2.5-3.6 s and 800 MB for 1e8 images, and were a PyroiMemoryError for 2**40."""
    plane = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    x = np.broadcast_to(plane, (images, 1, 8, 8))
    boxes = np.array([[1.0, 1.0, 6.0, 6.0]], np.float32)
    indices = np.array([images - 1])
    forward = {"roi_align": lambda x, **kw: pyroi.roi_align(x, boxes, 4, **kw),
               "roi_align_max": lambda x, **kw: pyroi.roi_align(x, boxes, 4, mode="max", **kw),
               "roi_pool": lambda x, **kw: pyroi.roi_pool(x, boxes, 4, **kw)}[call]
    expected = forward(plane, batch_indices=np.zeros(1, np.int64))
    rss_before = peak_rss_mb()
    started = time.perf_counter()
    y = forward(x, batch_indices=indices)
    seconds = time.perf_counter() - started
    np.testing.assert_array_equal(y, expected)
    assert seconds < 0.5, seconds
    assert peak_rss_mb() - rss_before < 100.0


big_tests = pytest.mark.skipif(os.environ.get("PYROI_BIG_TESTS") != "1",
                               reason="8.6 GB arrays: set PYROI_BIG_TESTS=1")


@big_tests
def test_output_past_2_31_elements():
    side = 46341  # side**2 > 2**31
    x = np.random.default_rng(7).standard_normal((1, 1, 6, 7)).astype(np.float32)
    boxes = np.array([[0, 0.5, 0.25, 6.5, 5.25]], np.float32)
    out = np.full((1, 1, side, side), np.nan, np.float32)
    pyroi.roi_align(x, boxes, side, 1.0, 1, True, out=out)
    assert out.size > 2**31
    # the last column equals one bin spanning the box's last column of bins (same rows)
    width = (6.5 - 0.5) / side
    last_column = np.array([[0, 6.5 - width, 0.25, 6.5, 5.25]], np.float32)
    tail = pyroi.roi_align(x, last_column, (side, 1), 1.0, 1, True)
    assert np.isfinite(out[0, 0, -3:]).all() and np.isfinite(out[0, 0, :, -3:]).all()
    np.testing.assert_allclose(out[0, 0, :, -1], tail[0, 0, :, 0], rtol=1e-4, atol=1e-5)
    del out


@big_tests
def test_grad_input_past_2_31_elements():
    side = 46341
    boxes = np.array([[0, side - 6, side - 5, side - 2, side - 1]], np.float32)
    grad = np.random.default_rng(8).standard_normal((1, 1, 2, 2)).astype(np.float32)
    g = pyroi.roi_align_backward(grad, boxes, (1, 1, side, side), 1.0, 2, True)
    assert g.size > 2**31
    corner = g[0, 0, side - 8:, side - 8:]
    np.testing.assert_allclose(corner.sum(dtype=np.float64), grad.sum(dtype=np.float64),
                               rtol=1e-5)
    assert not g[0, 0, : side - 8].any()
    del g
