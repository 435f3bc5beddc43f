"""out= and the inputs: an out that shares a byte with any array argument as passed (features,
grad_output, boxes or an array of a boxes list, batch_indices, argmax), in every dtype
including float16, is rejected naming out; arrays carved from one buffer without sharing a
byte (halves, interleaved elements) are accepted and give the same result as separate arrays.
"""

import numpy as np
import pytest

import pyroi
from pyroi import _validate
from pyroi import onnx as ponnx

SIZE = 2
ROWS = np.array([[0, 1, 1, 6, 5], [1, 2.5, 0.5, 9, 7.5], [0, 0, 2, 11, 9]])


def coords_of(op):
    if op == "roi_align_rotated":
        centre = (ROWS[:, 1:3] + ROWS[:, 3:5]) / 2
        return np.concatenate([centre, ROWS[:, 3:5] - ROWS[:, 1:3], np.zeros((3, 1))], axis=1)
    return ROWS[:, 1:]


def channels(op):
    return 2 * SIZE * SIZE if op.startswith("ps_") else 3


def call(op, direction, x, coords, batch, grad=None, argmax=None, out=None, shape=None):
    """One call of ``op`` with (K, n) coordinates and batch_indices; the forward returns
    (output, argmax) for the max-pooling ops."""
    kw = {"batch_indices": batch}
    if out is not None:
        kw["out"] = out
    if direction == "forward":
        if op == "roi_align_max":
            return pyroi.roi_align(x, coords, SIZE, mode="max", return_argmax=True, **kw)
        if op == "roi_pool":
            return pyroi.roi_pool(x, coords, SIZE, return_argmax=True, **kw)
        if op == "onnx_roi_align":
            return ponnx.roi_align(x, coords, batch, output_height=SIZE, output_width=SIZE,
                                   **{k: v for k, v in kw.items() if k == "out"})
        if op == "onnx_max_roi_pool":
            return ponnx.max_roi_pool(x, coords, (SIZE, SIZE), **kw)
        return getattr(pyroi, op)(x, coords, SIZE, **kw)
    if op == "roi_align_max":
        return pyroi.roi_align_backward(grad, coords, shape, mode="max", argmax=argmax, **kw)
    if op == "roi_pool":
        return pyroi.roi_pool_backward(grad, coords, argmax, shape, SIZE, **kw)
    return getattr(pyroi, op + "_backward")(grad, coords, shape, **kw)


def call_list(op, direction, x, boxes, grad=None, argmax=None, out=None):
    """One call of ``op`` with boxes as a list of (L_i, n) arrays, one per image."""
    max_mode = {"mode": "max"} if op == "roi_align_max" else {}
    name = "roi_align" if op == "roi_align_max" else op
    if direction == "forward":
        return getattr(pyroi, name)(x, boxes, SIZE, out=out, **max_mode)
    if op == "roi_pool":
        return pyroi.roi_pool_backward(grad, boxes, argmax, x.shape, SIZE, out=out)
    if op == "roi_align_max":
        max_mode["argmax"] = argmax
    return getattr(pyroi, name + "_backward")(grad, boxes, x.shape, out=out, **max_mode)


FORWARD_OPS = ["roi_align", "roi_align_max", "roi_pool", "ps_roi_align", "ps_roi_pool",
               "roi_align_rotated", "onnx_roi_align", "onnx_max_roi_pool"]
BACKWARD_OPS = ["roi_align", "roi_align_max", "roi_pool", "ps_roi_align", "ps_roi_pool",
                "roi_align_rotated"]
CASES = [(op, "forward") for op in FORWARD_OPS] + [(op, "backward") for op in BACKWARD_OPS]


def arguments(op, dtype):
    """Separate arrays for one call: x, coords, batch indices, grad, argmax, input shape and
    the expected result."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, channels(op), 10, 12)).astype(dtype)
    coords = coords_of(op).astype(dtype)
    batch = ROWS[:, 0].astype(np.int64)
    result = call(op, "forward", x, coords, batch)
    output, argmax = result if isinstance(result, tuple) else (result, None)
    grad = rng.standard_normal(output.shape).astype(dtype)
    return x, coords, batch, grad, argmax, output


def carve(buffer, offset, template):
    """A view of ``buffer`` (bytes) at byte ``offset`` holding a copy of ``template``."""
    view = buffer[offset:offset + template.nbytes].view(template.dtype).reshape(template.shape)
    view[...] = template
    return view


def roles(op, direction):
    """The array arguments of a call that out could overlap (boxes_list: the per-image list
    form, which ONNX has not)."""
    found = ["data", "boxes", "batch_indices"]
    if direction == "backward" and op in ("roi_align_max", "roi_pool"):
        found.append("argmax")
    if not op.startswith("onnx"):
        found.append("boxes_list")
    return found


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("op, direction, role",
                         [case + (role,) for case in CASES for role in roles(*case)],
                         ids=lambda v: v)
def test_out_overlapping_an_input_is_rejected(op, direction, role, dtype):
    x, coords, batch, grad, argmax, output = arguments(op, dtype)
    expected = output if direction == "forward" else call(
        op, "backward", x, coords, batch, grad, argmax, shape=x.shape)
    data = x if direction == "forward" else grad
    # the input first in a buffer, out starting in its middle (a partial overlap)
    source = {"data": data, "boxes": coords, "batch_indices": batch,
              "argmax": argmax, "boxes_list": coords}[role]
    buffer = np.zeros(source.nbytes + expected.nbytes + 64, np.uint8)
    placed = carve(buffer, 0, source)
    start = (source.nbytes // 2) // 16 * 16
    out = buffer[start:start + expected.nbytes].view(expected.dtype).reshape(expected.shape)
    if role == "data":
        data = placed
    elif role == "boxes":
        coords = placed
    elif role == "batch_indices":
        batch = placed
    elif role == "argmax":
        argmax = placed
    before = buffer.copy()
    with pytest.raises(pyroi.InvalidArgumentError, match="out must not share memory"):
        if role == "boxes_list":  # the per-image list form: an array of the list overlaps out
            boxes = [placed[:2], placed[2:]]
            if direction == "forward":
                call_list(op, "forward", x, boxes, out=out)
            else:
                call_list(op, "backward", x, boxes, grad, argmax, out=out)
        elif direction == "forward":
            call(op, "forward", data, coords, batch, out=out)
        else:
            call(op, "backward", x, coords, batch, data, argmax, out=out, shape=x.shape)
    np.testing.assert_array_equal(buffer, before)  # nothing written


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("layout", ["halves", "interleaved"])
@pytest.mark.parametrize("op, direction", CASES, ids=lambda v: v)
def test_out_beside_the_inputs_in_one_buffer_is_accepted(op, direction, layout, dtype):
    """Disjoint parts of one buffer: every input array and out (halves), or the data and out
    on alternate elements (interleaved); the result equals the one of separate arrays."""
    x, coords, batch, grad, argmax, output = arguments(op, dtype)
    data = x if direction == "forward" else grad
    expected = output if direction == "forward" else call(
        op, "backward", x, coords, batch, grad, argmax, shape=x.shape)
    buffer = np.zeros(2 * (data.nbytes + expected.nbytes) + coords.nbytes + batch.nbytes +
                      (argmax.nbytes if argmax is not None else 0) + 256, np.uint8)
    offset = 0
    placed = []
    for array in (coords, batch) + ((argmax,) if argmax is not None else ()):
        placed.append(carve(buffer, offset, array))
        offset += (array.nbytes + 15) // 16 * 16
    coords, batch = placed[0], placed[1]
    argmax = placed[2] if argmax is not None else None
    if layout == "halves":
        data = carve(buffer, offset, data)
        offset += (data.nbytes + 15) // 16 * 16
        out = buffer[offset:offset + expected.nbytes].view(expected.dtype).reshape(
            expected.shape)
    else:  # data on the even elements of a region, out on the odd ones of the same region
        count = max(data.size, expected.size)
        region = buffer[offset:offset + 2 * count * data.itemsize].view(data.dtype)
        region[::2][:data.size] = data.ravel()
        data = region[::2][:data.size].reshape(data.shape)
        out = region[1::2][:expected.size].reshape(expected.shape)
    if direction == "forward":
        result = call(op, "forward", data, coords, batch, out=out)
    else:
        result = call(op, "backward", x, coords, batch, data, argmax, out=out, shape=x.shape)
    result = result[0] if isinstance(result, tuple) else result
    assert result is out
    np.testing.assert_array_equal(out, expected)


def test_an_undecided_overlap_counts_as_one(monkeypatch):
    """When np.shares_memory gives up (max_work reached), out is rejected: the safe answer."""
    x, coords, batch, _, _, output = arguments("roi_align", np.float32)
    region = np.zeros(2 * max(x.size, output.size), np.float32)
    region[::2][:x.size] = x.ravel()
    data = region[::2][:x.size].reshape(x.shape)
    out = region[1::2][:output.size].reshape(output.shape)

    def too_hard(*args, **kwargs):
        raise _validate._TooHardError("Exceeded max_work")

    assert not np.shares_memory(data, out)
    monkeypatch.setattr(np, "shares_memory", too_hard)
    with pytest.raises(pyroi.InvalidArgumentError, match="out must not share memory"):
        pyroi.roi_align(data, coords, SIZE, batch_indices=batch, out=out)


def test_ascend_out_and_workspace():
    from pyroi import ascend

    x, coords, batch, grad, _, _ = arguments("roi_align", np.float32)
    boxes = np.concatenate([batch[:, None].astype(np.float32), coords * 0.5], axis=1)
    expected = ascend.roi_align_v2_backward(grad, boxes, x.shape, SIZE, SIZE, 1.0, 2, True)
    buffer = np.zeros(grad.size + expected.size, np.float32)
    placed = buffer[:grad.size].reshape(grad.shape)
    placed[...] = grad
    out = buffer[grad.size:].reshape(expected.shape)
    assert ascend.roi_align_v2_backward(placed, boxes, x.shape, SIZE, SIZE, 1.0, 2, True,
                                        out=out) is out
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(pyroi.InvalidArgumentError, match="out must not share memory"):
        ascend.roi_align_v2_backward(placed, boxes, x.shape, SIZE, SIZE, 1.0, 2, True,
                                     out=buffer[grad.size // 2:][:expected.size].reshape(
                                         expected.shape))
    workspace = np.zeros(1 << 16, np.uint8)
    with pytest.raises(pyroi.InvalidArgumentError, match="workspace must not share memory"):
        ascend.roi_align_v2_backward(grad, boxes, x.shape, SIZE, SIZE, 1.0, 2, True,
                                     workspace=grad.reshape(-1).view(np.uint8))
    ascend.roi_align_v2_backward(grad, boxes, x.shape, SIZE, SIZE, 1.0, 2, True,
                                 workspace=workspace)
