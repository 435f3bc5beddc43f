"""Arrays from other libraries: every array argument of every operator, layer and front-end
takes any CPU array exposing ``__dlpack__`` or the array interface (read in place, without a
copy) and the result is a NumPy array; an array on another device is refused naming the
argument and the device. Python lists of boxes take the features' dtype.

The library-neutral parts use small stand-in objects (one exposing only ``__dlpack__``, one
only ``__array_interface__``, one on a "cuda" device), so they run without torch; the torch
parts skip when torch is absent."""

import numpy as np
import pytest

import pyroi
from pyroi import _validate, ascend
from pyroi import onnx as ponnx

try:
    import torch
except ImportError:  # the torch tests skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


class DLPackOnly:
    """An array object that exposes only the DLPack protocol (like an array-API library's)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class InterfaceOnly:
    """An array object that exposes only the NumPy array interface."""

    def __init__(self, array):
        self._array = array
        self.__array_interface__ = array.__array_interface__


class OnDevice:
    """An array on a GPU, by DLPack device (type 2 = CUDA, device 1) or by ``device``."""

    def __init__(self, array, dlpack=True):
        self._array = array
        self.shape, self.dtype = array.shape, array.dtype
        if dlpack:
            self.__dlpack_device__ = lambda: (2, 1)
            self.__dlpack__ = lambda **kwargs: pytest.fail("a device array was read")
        else:
            self.device = "cuda:1"

    def __array__(self, *args, **kwargs):
        pytest.fail("a device array was read")


def _data():
    rng = np.random.default_rng(17)
    features = rng.random((2, 8, 9, 11), dtype=np.float32)
    boxes = np.array([[0, 1.0, 1.5, 7.0, 6.0], [1, 0.0, 2.0, 9.5, 8.0]], np.float32)
    rotated = np.array([[0, 4.0, 4.0, 5.0, 3.0, 30.0], [1, 5.0, 3.0, 4.0, 4.0, -10.0]],
                       np.float32)
    return features, boxes, rotated


def _calls():
    """(name, arrays, call): ``call(**arrays)`` runs one operator; every entry of ``arrays``
    is an array argument (wrapped in the tests)."""
    features, boxes, rotated = _data()
    shape = features.shape
    grad = np.ones((2, 8, 2, 2), np.float32)
    _, pool_argmax = pyroi.roi_pool(features, boxes, 2, return_argmax=True)
    _, max_argmax = pyroi.roi_align(features, boxes, 2, 1.0, 2, mode="max", return_argmax=True)
    coords, indices = boxes[:, 1:].copy(), boxes[:, 0].astype(np.int64)
    ascend_rois, ascend_counts = ascend.pack_rois([coords[:1], coords[1:]])
    v2_boxes = np.array([[0, 1.0, 1.5, 7.0, 6.0], [1, 0.0, 2.0, 9.0, 8.0]], np.float32)
    workspace_size = ascend.roi_align_v2_backward_workspace_size(
        v2_boxes, shape, 2, 2, 1.0, 2, True)
    return [
        ("roi_align", dict(input=features, boxes=boxes),
         lambda **a: pyroi.roi_align(output_size=2, sampling_ratio=2, **a)),
        ("roi_align NHWC", dict(input=features.transpose(0, 2, 3, 1).copy(), boxes=boxes),
         lambda **a: pyroi.roi_align(output_size=2, sampling_ratio=2, layout="NHWC", **a)),
        ("roi_align batch_indices", dict(input=features, boxes=coords, batch_indices=indices),
         lambda **a: pyroi.roi_align(output_size=2, sampling_ratio=2, **a)),
        ("roi_align_backward", dict(grad_output=grad, boxes=boxes),
         lambda **a: pyroi.roi_align_backward(input_shape=shape, sampling_ratio=2, **a)),
        ("roi_align_backward max", dict(grad_output=grad, boxes=boxes, argmax=max_argmax),
         lambda **a: pyroi.roi_align_backward(input_shape=shape, sampling_ratio=2, mode="max",
                                              **a)),
        ("roi_pool", dict(input=features, boxes=boxes),
         lambda **a: pyroi.roi_pool(output_size=2, **a)),
        ("roi_pool_backward", dict(grad_output=grad, boxes=boxes, argmax=pool_argmax),
         lambda **a: pyroi.roi_pool_backward(input_shape=shape, output_size=2, **a)),
        ("ps_roi_align", dict(input=features, boxes=boxes),
         lambda **a: pyroi.ps_roi_align(output_size=2, sampling_ratio=2, **a)),
        ("ps_roi_align_backward", dict(grad_output=grad[:, :2], boxes=boxes),
         lambda **a: pyroi.ps_roi_align_backward(input_shape=shape, sampling_ratio=2, **a)),
        ("ps_roi_pool", dict(input=features, boxes=boxes),
         lambda **a: pyroi.ps_roi_pool(output_size=2, **a)),
        ("ps_roi_pool_backward", dict(grad_output=grad[:, :2], boxes=boxes),
         lambda **a: pyroi.ps_roi_pool_backward(input_shape=shape, **a)),
        ("roi_align_rotated", dict(input=features, rois=rotated),
         lambda **a: pyroi.roi_align_rotated(output_size=2, sampling_ratio=2, **a)),
        ("roi_align_rotated_backward", dict(grad_output=grad, rois=rotated),
         lambda **a: pyroi.roi_align_rotated_backward(input_shape=shape, sampling_ratio=2,
                                                      **a)),
        ("onnx.roi_align", dict(X=features, rois=coords, batch_indices=indices),
         lambda **a: ponnx.roi_align(output_height=2, output_width=2, sampling_ratio=2, **a)),
        ("onnx.max_roi_pool", dict(X=features, rois=boxes),
         lambda **a: ponnx.max_roi_pool(pooled_shape=(2, 2), **a)),
        ("ascend.roi_pooling", dict(x=features, rois=ascend_rois, roi_actual_num=ascend_counts),
         lambda **a: ascend.roi_pooling(pooled_h=2, pooled_w=2, spatial_scale=1.0,
                                        strict=False, **a)),
        ("ascend.roi_align_v2_backward",
         dict(grad_output=grad, boxes=v2_boxes, workspace=np.zeros(workspace_size, np.uint8)),
         lambda **a: ascend.roi_align_v2_backward(input_shape=shape, pooled_height=2,
                                                  pooled_width=2, spatial_scale=1.0,
                                                  sampling_ratio=2, aligned=True, **a)),
        ("RoIAlign layer", dict(input=features, boxes=boxes),
         lambda **a: pyroi.RoIAlign(2, sampling_ratio=2)(**a)),
        ("RoIPool layer", dict(input=features, boxes=boxes),
         lambda **a: pyroi.RoIPool(2)(**a)),
    ]


CALLS = _calls()
CALL_IDS = [name for name, _, _ in CALLS]


def _results(value):
    return value if isinstance(value, tuple) else (value,)


def _assert_same(actual, expected):
    for got, want in zip(_results(actual), _results(expected)):
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("wrap", [DLPackOnly, InterfaceOnly], ids=["dlpack", "interface"])
@pytest.mark.parametrize("name,arrays,call", CALLS, ids=CALL_IDS)
def test_every_array_argument_takes_protocol_objects(name, arrays, call, wrap):
    expected = call(**arrays)
    for argument in arrays:  # one argument wrapped at a time, then all of them
        _assert_same(call(**{**arrays, argument: wrap(arrays[argument])}), expected)
    _assert_same(call(**{k: wrap(v) for k, v in arrays.items()}), expected)


@pytest.mark.parametrize("dlpack", [True, False], ids=["dlpack_device", "device_attribute"])
@pytest.mark.parametrize("name,arrays,call", CALLS, ids=CALL_IDS)
def test_a_device_array_is_refused_naming_argument_and_device(name, arrays, call, dlpack):
    for argument in arrays:
        with pytest.raises(pyroi.ArgumentTypeError, match=rf"{argument} is on device cuda:1"):
            call(**{**arrays, argument: OnDevice(arrays[argument], dlpack)})


def test_conversion_reads_in_place():
    features = np.random.default_rng(0).random((2, 3, 8, 6))[:, :, ::2, 1:]  # strided view
    for wrap in (DLPackOnly, InterfaceOnly):
        array = _validate.float_array(wrap(features), "input", 4)
        assert np.shares_memory(array, features) and array.strides == features.strides


def test_out_may_be_another_librarys_array():
    features, boxes, _ = _data()
    out = np.zeros((2, 8, 2, 2), np.float32)
    result = pyroi.roi_align(features, boxes, 2, sampling_ratio=2, out=DLPackOnly(out))
    assert np.shares_memory(result, out)
    np.testing.assert_array_equal(out, pyroi.roi_align(features, boxes, 2, sampling_ratio=2))


def test_multiscale_takes_protocol_objects():
    features, boxes, _ = _data()
    pooler = pyroi.MultiScaleRoIAlign(["p2", "p3"], 2, 2)
    pyramid = {"p2": features, "p3": features[:, :, ::2, ::2].copy()}
    per_image = [boxes[:1, 1:] * 4, boxes[1:, 1:] * 4]
    expected = pooler(pyramid, per_image, [(36, 44)])
    grad = np.ones_like(expected)
    expected_grad = pooler.backward(grad)
    result = pooler({k: DLPackOnly(v) for k, v in pyramid.items()},
                    [InterfaceOnly(b) for b in per_image], [(36, 44)])
    _assert_same(result, expected)
    gradients = pooler.backward(DLPackOnly(grad))
    for key in expected_grad:
        _assert_same(gradients[key], expected_grad[key])


# ---- Python lists of boxes ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("numbers", ["floats", "ints"])
def test_python_lists_of_boxes_take_the_features_dtype(dtype, numbers):
    features = np.random.default_rng(1).random((2, 2, 9, 9)).astype(dtype)
    rows = [[1.0, 1.0, 6.0, 6.0], [0.5, 2.0, 7.25, 5.0]]
    if numbers == "ints":
        rows = [[1, 1, 6, 6], [0, 2, 7, 5]]
    array = np.asarray(rows, dtype)
    expected = pyroi.roi_align(features, [array[:1], array[1:]], 2, sampling_ratio=2)
    _assert_same(pyroi.roi_align(features, [rows[:1], rows[1:]], 2, sampling_ratio=2),
                 expected)
    _assert_same(pyroi.roi_align(features, rows, 2, sampling_ratio=2, batch_indices=[0, 1]),
                 expected)
    # an image without boxes may be an empty list
    _assert_same(pyroi.roi_align(features, [[], rows], 2, sampling_ratio=2),
                 pyroi.roi_align(features, array, 2, sampling_ratio=2,
                                 batch_indices=[1, 1]))


def test_arrays_in_a_list_keep_their_dtype():
    features = np.zeros((1, 1, 8, 8), np.float32)
    with pytest.raises(pyroi.DTypeError, match="boxes\\[0\\] must have the input's dtype"):
        pyroi.roi_align(features, [np.array([[1.0, 1, 6, 6]])], 2)  # float64 array


@pytest.mark.parametrize("rows,hint", [
    ([[0, 1.0, 1, 6, 6]], r"for rows \[batch_index, x1, y1, x2, y2\] pass a \(K, 5\) array"),
    ([[1.0, 1, 6, 6]], r"the boxes of one image are \[\[\[x1, y1, x2, y2\], \.\.\.\]\]"),
])
def test_a_list_of_rows_gets_a_hint(rows, hint):
    features = np.zeros((1, 1, 8, 8), np.float32)
    with pytest.raises(pyroi.ShapeError, match="a list means one \\(L_i, 4\\) array per image"):
        pyroi.roi_align(features, rows, 2)
    with pytest.raises(pyroi.ShapeError, match=hint):
        pyroi.roi_align(features, rows, 2)


# ---- PyTorch ------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name,arrays,call", CALLS, ids=CALL_IDS)
def test_torch_cpu_tensors(name, arrays, call):
    expected = call(**arrays)
    _assert_same(call(**{k: torch.from_numpy(v) for k, v in arrays.items()}), expected)


@needs_torch
def test_the_issue_call():
    x = torch.rand(2, 4, 10, 12)
    boxes = np.array([[0, 1, 1, 6, 6], [1, 0, 2, 11, 9]], np.float32)
    _assert_same(pyroi.roi_align(x, boxes, 2), pyroi.roi_align(x.numpy(), boxes, 2))


@needs_torch
def test_torch_tensors_are_read_in_place():
    base = torch.rand(2, 6, 10, 12)
    for tensor in (base, base[:, ::2, 1:, :-1], base.permute(0, 2, 3, 1)):
        array = _validate._as_array(tensor, "input")
        assert array.__array_interface__["data"][0] == tensor.data_ptr()
        assert array.strides == tuple(s * tensor.element_size() for s in tensor.stride())


@needs_torch
def test_non_contiguous_and_half_tensors():
    base = torch.rand(2, 8, 10, 12)
    x = base[:, ::2, 1:, :-1]
    assert not x.is_contiguous()
    boxes = torch.tensor([[0, 1, 1, 6, 6], [1, 0, 2, 9, 7]], dtype=torch.float32)
    _assert_same(pyroi.roi_align(x, boxes, 2, sampling_ratio=2),
                 pyroi.roi_align(x.numpy(), boxes.numpy(), 2, sampling_ratio=2))
    nhwc = base.permute(0, 2, 3, 1)
    _assert_same(pyroi.roi_align(nhwc, boxes, 2, sampling_ratio=2, layout="NHWC"),
                 pyroi.roi_align(base.numpy(), boxes.numpy(), 2, sampling_ratio=2))
    half = pyroi.roi_align(x.half(), boxes.half(), 2, sampling_ratio=2)
    assert half.dtype == np.float16
    _assert_same(half, pyroi.roi_align(x.half().numpy(), boxes.half().numpy(), 2,
                                       sampling_ratio=2))


@needs_torch
@pytest.mark.parametrize("argument", ["input", "boxes"])
def test_tensors_that_require_grad_are_refused(argument):
    # Decision: no silent detach. The NumPy result carries no gradient, so a tensor in an
    # autograd graph is refused, as torch's own .numpy() refuses it; .detach() says the
    # caller means it (pyroi.torch is the autograd route).
    arrays = dict(input=torch.rand(1, 2, 8, 8), boxes=torch.tensor([[0, 1.0, 1, 6, 6]]))
    arrays[argument].requires_grad_(True)
    with pytest.raises(pyroi.ArgumentTypeError,
                       match=rf"{argument} requires grad.*{argument}\.detach\(\)"):
        pyroi.roi_align(arrays["input"], arrays["boxes"], 2)
    pyroi.roi_align(arrays["input"].detach(), arrays["boxes"].detach(), 2)


@needs_torch
def test_torch_out_tensor_receives_the_result():
    x = torch.rand(1, 3, 8, 8)
    boxes = torch.tensor([[0, 1.0, 1, 6, 6]])
    out = torch.zeros(1, 3, 2, 2)
    result = pyroi.roi_align(x, boxes, 2, out=out)
    assert type(result) is np.ndarray and result.ctypes.data == out.data_ptr()
    np.testing.assert_array_equal(out.numpy(), pyroi.roi_align(x.numpy(), boxes.numpy(), 2))


@needs_torch
def test_torch_meta_tensor_is_refused():
    x = torch.empty(1, 2, 8, 8, device="meta")
    with pytest.raises(pyroi.ArgumentTypeError, match="input is on device meta"):
        pyroi.roi_align(x, np.array([[0, 1, 1, 6, 6]], np.float32), 2)


def test_layer_backward_after_python_list_boxes():
    features = np.random.default_rng(2).random((2, 2, 9, 9)).astype(np.float32)
    rows = [[[1, 1.5, 6, 6]], [[0.5, 2, 7, 5]]]
    layer, reference = pyroi.RoIAlign(2, sampling_ratio=2), pyroi.RoIAlign(2, sampling_ratio=2)
    as_arrays = [np.asarray(r, np.float32) for r in rows]
    _assert_same(layer(features, rows), reference(features, as_arrays))
    rows[0][0][0] = 3.0  # later changes by the caller do not reach backward
    grad = np.ones((2, 2, 2, 2), np.float32)
    _assert_same(layer.backward(grad), reference.backward(grad))


def test_python_numbers_beyond_the_features_dtype_are_named():
    features = np.zeros((1, 1, 8, 8), np.float32)
    with pytest.raises(pyroi.InvalidArgumentError,
                       match=r"boxes\[0\] holds 1e\+39, beyond the range of float32"):
        pyroi.roi_align(features, [[[1, 1, 1e39, 3]]], 2)
    with pytest.raises(pyroi.ArgumentTypeError, match="boxes cannot be converted"):
        pyroi.roi_align(features, [[1, 1, 10**400, 3]], 2, batch_indices=[0])
    with pytest.raises(pyroi.BoxError, match="non-finite"):  # inf given is inf
        pyroi.roi_align(features, [[[1, 1, float("inf"), 3]]], 2)
