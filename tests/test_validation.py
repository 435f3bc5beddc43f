"""The argument checks every operator shares (``_validate.py``) and the exception hierarchy
(``_errors.py``), exercised through pyroi.roi_align / pyroi.roi_align_backward: the features,
the boxes in each form (rows, per-image list, coordinates + ``batch_indices``), the batch
index, ``spatial_scale``, ``num_threads`` and ``out=``. The checks that depend on RoIAlign's
geometry (``output_size``, ``sampling_ratio``, the adaptive grid, the backward's
``input_shape``) are in test_roi_align.py; each other family's module tests its own.

Each test checks the exception class (which also subclasses the matching builtin) and that
the message names the offending argument - and, for per-RoI errors, the RoI index - without
pinning the exact wording.
"""

import numpy as np
import pytest

import pyroi
from conftest import (BAD_ROI, ERROR_NUM_ROIS as K, ERROR_SHAPE, assert_names, assert_names_roi,
                      error_grad as make_grad, error_input as make_input,
                      error_rois as make_rois)

N, C, H, W = ERROR_SHAPE


# --------------------------------------------------------------------------------------
# the hierarchy
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, bases", [
    ("PyroiError", (Exception,)),
    ("DTypeError", (pyroi.PyroiError, TypeError)),
    ("ShapeError", (pyroi.PyroiError, ValueError)),
    ("InvalidArgumentError", (pyroi.PyroiError, ValueError)),
    ("BatchIndexError", (pyroi.PyroiError, IndexError)),
    ("BoxError", (pyroi.PyroiError, ValueError)),
])
def test_exception_hierarchy(name, bases):
    cls = getattr(pyroi, name)
    assert isinstance(cls, type)
    for base in bases:
        assert issubclass(cls, base), (name, base)


def test_valid_arguments_do_not_raise():
    """The fixtures below are valid, so each error test isolates one bad argument."""
    x, rois = make_input(), make_rois()
    out = pyroi.roi_align(x, rois, 2, 1.0, -1, False, num_threads=1)
    assert out.shape == (K, C, 2, 2)
    grad = pyroi.roi_align_backward(make_grad(), rois, (N, C, H, W), num_threads=1)
    assert grad.shape == (N, C, H, W)


# --------------------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(C, H, W), (1, N, C, H, W), (H, W), ()],
                         ids=["3d", "5d", "2d", "0d"])
def test_input_wrong_rank(shape):
    x = np.zeros(shape, np.float32)
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align(x, make_rois(), 2)
    assert_names(excinfo, "input")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_,
                                   np.complex64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_input_wrong_dtype(dtype):
    x = np.zeros((N, C, H, W), dtype)
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align(x, make_rois(), 2)
    assert_names(excinfo, "input")


def test_input_object_array():
    x = np.empty((N, C, H, W), dtype=object)
    x[...] = 1.0
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align(x, make_rois(np.float64), 2)
    assert_names(excinfo, "input")


# --------------------------------------------------------------------------------------
# boxes
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("input_dtype, boxes_dtype", [
    (np.float32, np.float64), (np.float64, np.float32), (np.float32, np.int64),
    (np.float64, np.int32), (np.float32, np.float16), (np.float32, np.bool_),
])
def test_boxes_dtype_mismatch(input_dtype, boxes_dtype):
    rois = make_rois(np.float64).astype(boxes_dtype)
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align(make_input(input_dtype), rois, 2)
    assert_names(excinfo, "boxes")


def test_list_boxes_dtype_mismatch():
    boxes = [np.array([[0, 0, 2, 2]], np.float32), np.array([[1, 1, 3, 3]], np.float64)]
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align(make_input(np.float32), boxes, 2)
    assert_names(excinfo, "boxes")


@pytest.mark.parametrize("shape", [(K, 4), (K, 6), (5,), (1, K, 5), (0,)],
                         ids=["K4", "K6", "1d5", "3d", "1d0"])
def test_boxes_wrong_shape(shape):
    rois = np.zeros(shape, np.float32)
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align(make_input(), rois, 2)
    assert_names(excinfo, "boxes")


@pytest.mark.parametrize("entry_shape", [(2, 5), (2, 3), (4,), (1, 2, 4)],
                         ids=["L5", "L3", "1d", "3d"])
def test_list_boxes_entry_wrong_shape(entry_shape):
    boxes = [np.zeros((1, 4), np.float32), np.zeros(entry_shape, np.float32)]
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align(make_input(), boxes, 2)
    assert_names(excinfo, "boxes")


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("column", [1, 2, 3, 4])
def test_nonfinite_box_coordinate(column, value):
    rois = make_rois()
    rois[BAD_ROI, column] = value
    with pytest.raises(pyroi.BoxError) as excinfo:
        pyroi.roi_align(make_input(), rois, 2)
    assert_names(excinfo, "boxes")
    assert_names_roi(excinfo, BAD_ROI)


def test_nonfinite_box_in_list_form():
    boxes = [np.array([[0, 0, 2, 2]], np.float64), np.array([[1, 1, np.nan, 3]], np.float64)]
    with pytest.raises(pyroi.BoxError) as excinfo:
        pyroi.roi_align(make_input(np.float64), boxes, 2)
    assert_names(excinfo, "boxes")


@pytest.mark.parametrize("batch_index", [0.5, -1.0, float(N), 1.25, -0.5, 1e9],
                         ids=["0.5", "-1", "N", "1.25", "-0.5", "1e9"])
def test_bad_batch_index(batch_index):
    rois = make_rois()
    rois[BAD_ROI, 0] = batch_index
    with pytest.raises(pyroi.BatchIndexError) as excinfo:
        pyroi.roi_align(make_input(), rois, 2)
    assert_names(excinfo, "boxes", "batch", "batch_index", "batch index")  # an IndexError too
    assert_names_roi(excinfo, BAD_ROI)


@pytest.mark.parametrize("value", [np.nan, np.inf], ids=["nan", "inf"])
def test_nonfinite_batch_index(value):
    """A NaN/inf batch index is rejected (as a bad batch index or a bad box)."""
    rois = make_rois()
    rois[BAD_ROI, 0] = value
    with pytest.raises(pyroi.PyroiError) as excinfo:
        pyroi.roi_align(make_input(), rois, 2)
    assert isinstance(excinfo.value, (pyroi.BatchIndexError, pyroi.BoxError))
    assert_names_roi(excinfo, BAD_ROI)


def test_list_boxes_longer_than_batch():
    """List position is the image index: a non-empty entry at position N is out of range."""
    boxes = [np.zeros((0, 4), np.float32)] * N + [np.array([[0, 0, 2, 2]], np.float32)]
    with pytest.raises(pyroi.BatchIndexError):
        pyroi.roi_align(make_input(), boxes, 2)


def test_bad_box_writes_nothing_to_out():
    rois = make_rois()
    rois[BAD_ROI, 2] = np.nan
    out = np.full((K, C, 2, 2), 42.0, np.float32)
    with pytest.raises(pyroi.BoxError):
        pyroi.roi_align(make_input(), rois, 2, out=out)
    assert np.all(out == 42.0)
    grad_out = np.full((N, C, H, W), 42.0, np.float32)
    with pytest.raises(pyroi.BoxError):
        pyroi.roi_align_backward(make_grad(), rois, (N, C, H, W), out=grad_out)
    assert np.all(grad_out == 42.0)


# --------------------------------------------------------------------------------------
# scalar arguments every operator takes
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("spatial_scale", [-1.0, -1e-9, np.nan, np.inf, -np.inf], ids=str)
def test_bad_spatial_scale(spatial_scale):
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.roi_align(make_input(), make_rois(), 2, spatial_scale)
    assert_names(excinfo, "spatial_scale")


@pytest.mark.parametrize("num_threads", [0, -1])
def test_bad_num_threads(num_threads):
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.roi_align(make_input(), make_rois(), 2, num_threads=num_threads)
    assert_names(excinfo, "num_threads")


# --------------------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(K, C, 2, 3), (K, C, 2), (K + 1, C, 2, 2), (K, C + 1, 2, 2),
                                   (K, C, 2, 2, 1)], ids=str)
def test_out_wrong_shape(shape):
    out = np.zeros(shape, np.float32)
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align(make_input(), make_rois(), 2, out=out)
    assert_names(excinfo, "out")


@pytest.mark.parametrize("input_dtype, out_dtype", [(np.float32, np.float64),
                                                    (np.float64, np.float32),
                                                    (np.float32, np.int32)])
def test_out_wrong_dtype(input_dtype, out_dtype):
    out = np.zeros((K, C, 2, 2), out_dtype)
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align(make_input(input_dtype), make_rois(input_dtype), 2, out=out)
    assert_names(excinfo, "out")


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_out_read_only(direction):
    if direction == "forward":
        out = np.zeros((K, C, 2, 2), np.float32)
        call = lambda: pyroi.roi_align(make_input(), make_rois(), 2, out=out)  # noqa: E731
    else:
        out = np.zeros((N, C, H, W), np.float32)
        call = lambda: pyroi.roi_align_backward(make_grad(), make_rois(), (N, C, H, W),  # noqa: E731
                                                out=out)
    out.setflags(write=False)
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        call()
    assert_names(excinfo, "out")
    assert np.all(out == 0)


# --------------------------------------------------------------------------------------
# backward
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.complex64],
                         ids=lambda d: np.dtype(d).name)
def test_backward_grad_output_wrong_dtype(dtype):
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align_backward(make_grad().astype(dtype), make_rois(), (N, C, H, W))
    assert_names(excinfo, "grad_output")


def test_backward_boxes_dtype_mismatch():
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align_backward(make_grad(np.float32), make_rois(np.float64), (N, C, H, W))
    assert_names(excinfo, "boxes")


def test_backward_boxes_wrong_shape():
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_backward(make_grad(), make_rois()[:, 1:], (N, C, H, W))
    assert_names(excinfo, "boxes")


@pytest.mark.parametrize("batch_index", [0.5, -1.0, float(N)], ids=["0.5", "-1", "N"])
def test_backward_bad_batch_index(batch_index):
    rois = make_rois()
    rois[BAD_ROI, 0] = batch_index
    with pytest.raises(pyroi.BatchIndexError) as excinfo:
        pyroi.roi_align_backward(make_grad(), rois, (N, C, H, W))
    assert_names_roi(excinfo, BAD_ROI)


def test_backward_batch_index_checked_against_input_shape():
    rois = make_rois()  # uses images 0 and 1
    with pytest.raises(pyroi.BatchIndexError):
        pyroi.roi_align_backward(make_grad(), rois, (1, C, H, W))


@pytest.mark.parametrize("value", [np.nan, np.inf], ids=["nan", "inf"])
def test_backward_nonfinite_box(value):
    rois = make_rois()
    rois[BAD_ROI, 3] = value
    with pytest.raises(pyroi.BoxError) as excinfo:
        pyroi.roi_align_backward(make_grad(), rois, (N, C, H, W))
    assert_names(excinfo, "boxes")
    assert_names_roi(excinfo, BAD_ROI)


@pytest.mark.parametrize("spatial_scale", [-2.0, np.nan, np.inf], ids=str)
def test_backward_bad_spatial_scale(spatial_scale):
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.roi_align_backward(make_grad(), make_rois(), (N, C, H, W), spatial_scale)
    assert_names(excinfo, "spatial_scale")


@pytest.mark.parametrize("num_threads", [0, -1])
def test_backward_bad_num_threads(num_threads):
    with pytest.raises(pyroi.InvalidArgumentError) as excinfo:
        pyroi.roi_align_backward(make_grad(), make_rois(), (N, C, H, W),
                                 num_threads=num_threads)
    assert_names(excinfo, "num_threads")


def test_backward_out_wrong_shape():
    out = np.zeros((N, C, H, W + 1), np.float32)
    with pytest.raises(pyroi.ShapeError) as excinfo:
        pyroi.roi_align_backward(make_grad(), make_rois(), (N, C, H, W), out=out)
    assert_names(excinfo, "out")


def test_backward_out_wrong_dtype():
    out = np.zeros((N, C, H, W), np.float64)
    with pytest.raises(pyroi.DTypeError) as excinfo:
        pyroi.roi_align_backward(make_grad(np.float32), make_rois(), (N, C, H, W), out=out)
    assert_names(excinfo, "out")


def test_batch_indices_form_errors():
    x = np.zeros((2, 1, 4, 4), np.float32)
    coords = np.zeros((3, 4), np.float32)
    with pytest.raises(pyroi.BatchIndexError, match="RoI 1"):
        pyroi.roi_align(x, coords, 2, batch_indices=np.array([0, 2, 0]))
    with pytest.raises(pyroi.BatchIndexError, match="RoI 2"):
        pyroi.roi_align(x, coords, 2, batch_indices=np.array([0, 1, -1]))
    with pytest.raises(pyroi.DTypeError, match="batch_indices"):
        pyroi.roi_align(x, coords, 2, batch_indices=np.array([0.0, 1.0, 0.0]))
    with pytest.raises(pyroi.ShapeError, match="batch_indices"):
        pyroi.roi_align(x, coords, 2, batch_indices=np.array([0, 1]))
    with pytest.raises(pyroi.ShapeError, match="boxes"):
        pyroi.roi_align(x, np.zeros((3, 5), np.float32), 2, batch_indices=np.array([0, 1, 0]))
    with pytest.raises(pyroi.ShapeError, match="batch_indices"):
        pyroi.roi_align(x, coords, 2)  # (K, 4) without batch_indices, as torchvision rejects
