"""pyroi.ascend: ROIPooling (Ascend's padded [batch, 5, N] layout, limits, separate h/w
scales), pack_rois, and aclnnRoiAlignV2Backward (signature and documented constraints)."""

import numpy as np
import pytest

import pyroi
from conftest import random_input, stable_seed
from pyroi import ascend
from reference import roi_align_backward_ref
from reference_roi_pool import roi_pool_ref


def _pool_case(dtype, counts, seed=0, height=12, width=14, channels=3):
    """Random features and per-image boxes (dyadic coordinates, so any dyadic scale is
    exact) in input-image pixels of a map scaled by 1/16 (h) and 1/8 (w)."""
    rng = np.random.default_rng(stable_seed("ascend", np.dtype(dtype).name, tuple(counts), seed))
    x = random_input(rng, (len(counts), channels, height, width), dtype)
    boxes = []
    for count in counts:
        x1 = rng.integers(-16, width * 8, count) / 2.0
        y1 = rng.integers(-32, height * 16, count) / 2.0
        w = rng.integers(0, width * 8, count) / 2.0
        h = rng.integers(0, height * 16, count) / 2.0
        boxes.append(np.stack([x1, y1, x1 + w, y1 + h], axis=1).astype(dtype))
    return x, boxes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("counts", [(5, 0, 17), (16,), (1, 3)])
def test_roi_pooling_matches_reference(dtype, counts):
    x, boxes = _pool_case(dtype, counts)
    rois, actual = ascend.pack_rois(boxes)
    y = ascend.roi_pooling(x, rois, actual, pooled_h=3, pooled_w=4, spatial_scale_h=1 / 16,
                           spatial_scale_w=1 / 8)
    n = rois.shape[2]
    assert y.shape == (len(counts) * n, x.shape[1], 3, 4) and y.dtype == dtype
    for b, part in enumerate(boxes):
        rows = y[b * n:(b + 1) * n]
        np.testing.assert_array_equal(rows[len(part):], 0)
        if len(part):
            # separate scales: pre-multiply x by scale_w / scale_h = 2 (exact) and use scale_h
            wide = np.concatenate([np.full((len(part), 1), b, dtype), part], axis=1)
            wide[:, [1, 3]] *= 2
            expected = roi_pool_ref(x, wide, (3, 4), 1 / 16)[0]
            np.testing.assert_array_equal(rows[:len(part)], expected)


def test_roi_pooling_single_scale_is_roi_pool_and_torchvision(tv):
    import torch
    import torchvision

    x, boxes = _pool_case(np.float32, (7, 9), seed=1)
    rois, actual = ascend.pack_rois(boxes)
    y = ascend.roi_pooling(x, rois, actual, pooled_h=2, pooled_w=5, spatial_scale=0.25)
    flat = np.concatenate([np.concatenate([np.full((len(p), 1), b, np.float32), p], axis=1)
                           for b, p in enumerate(boxes)])
    expected = torchvision.ops.roi_pool(torch.from_numpy(x), torch.from_numpy(flat), (2, 5),
                                        0.25).numpy()
    real = np.concatenate([y[0:7], y[16:25]])
    np.testing.assert_array_equal(real, expected)
    np.testing.assert_array_equal(real, pyroi.roi_pool(x, flat, (2, 5), 0.25))


def test_roi_pooling_defaults_and_field_batch_index():
    x, boxes = _pool_case(np.float32, (2, 2), seed=2)
    rois, _ = ascend.pack_rois(boxes)
    everything = ascend.roi_pooling(x, rois, pooled_h=2, pooled_w=2)  # all N columns real
    assert everything.shape == (32, 3, 2, 2)
    # padding columns are [0, 0, 0, 0, 0] boxes of image 0: pooled, not zeroed
    np.testing.assert_array_equal(everything[2], pyroi.roi_pool(
        x, np.zeros((1, 5), np.float32), 2, 0.0625)[0])
    # the batch_index field decides the image: point image 1's column 0 at image 0
    swapped = rois.copy()
    swapped[1, 0, 0] = 0
    y = ascend.roi_pooling(x, swapped, np.array([[2] + [0] * 7] * 2, np.int32), pooled_h=2,
                           pooled_w=2)
    box = np.concatenate([[0], boxes[1][0]]).astype(np.float32)[None]
    np.testing.assert_array_equal(y[16], pyroi.roi_pool(x, box, 2, 0.0625)[0])


def test_roi_pooling_out_and_threads():
    x, boxes = _pool_case(np.float64, (40, 33), seed=3, height=30, width=30, channels=8)
    rois, actual = ascend.pack_rois(boxes)
    y1 = ascend.roi_pooling(x, rois, actual, pooled_h=7, pooled_w=7, num_threads=1)
    out = np.full((2 * 48, 8, 7, 7), 9.0)
    assert ascend.roi_pooling(x, rois, actual, pooled_h=7, pooled_w=7, num_threads=3,
                              out=out) is out
    np.testing.assert_array_equal(out, y1)


def test_roi_pooling_strict_limits():
    x, boxes = _pool_case(np.float32, (3,), seed=4)
    rois, actual = ascend.pack_rois(boxes)
    for size in (1, 21):
        with pytest.raises(pyroi.InvalidArgumentError, match=r"pooled_h must be in \[2, 20\]"):
            ascend.roi_pooling(x, rois, actual, pooled_h=size, pooled_w=2)
        with pytest.raises(pyroi.InvalidArgumentError, match="pooled_w"):
            ascend.roi_pooling(x, rois, actual, pooled_h=2, pooled_w=size)
        y = ascend.roi_pooling(x, rois, actual, pooled_h=size, pooled_w=size, strict=False)
        assert y.shape == (16, 3, size, size)
    odd = np.ascontiguousarray(rois[:, :, :5])
    with pytest.raises(pyroi.ShapeError, match="multiple of 16"):
        ascend.roi_pooling(x, odd, actual, pooled_h=2, pooled_w=2)
    y = ascend.roi_pooling(x, odd, actual, pooled_h=2, pooled_w=2, strict=False)
    assert y.shape == (5, 3, 2, 2)
    big = np.zeros((1, 5, 6016), np.float32)
    with pytest.raises(pyroi.ShapeError, match="6000"):
        ascend.roi_pooling(x, big, pooled_h=2, pooled_w=2)
    with pytest.raises(pyroi.DTypeError, match="int32"):
        ascend.roi_pooling(x, rois, actual.astype(np.int64), pooled_h=2, pooled_w=2)
    y = ascend.roi_pooling(x, rois, actual.astype(np.int64)[:, :1], pooled_h=2, pooled_w=2,
                           strict=False)
    np.testing.assert_array_equal(y, ascend.roi_pooling(x, rois, actual, pooled_h=2, pooled_w=2))


def test_roi_pooling_errors():
    x, boxes = _pool_case(np.float32, (3, 1), seed=5)
    rois, actual = ascend.pack_rois(boxes)
    kw = dict(pooled_h=2, pooled_w=2)
    with pytest.raises(pyroi.ShapeError, match=r"\(batch, 5, N\)"):
        ascend.roi_pooling(x, rois[:1], actual, **kw)
    with pytest.raises(pyroi.ShapeError, match=r"\(batch, 5, N\)"):
        ascend.roi_pooling(x, rois[:, :4], actual, **kw)
    with pytest.raises(pyroi.ShapeError, match="roi_actual_num"):
        ascend.roi_pooling(x, rois, actual[:, :7], **kw)
    bad = actual.copy()
    bad[1, 0] = 17
    with pytest.raises(pyroi.InvalidArgumentError, match=r"roi_actual_num\[1, 0\]"):
        ascend.roi_pooling(x, rois, bad, **kw)
    bad[1, 0] = -1
    with pytest.raises(pyroi.InvalidArgumentError, match=r"roi_actual_num\[1, 0\]"):
        ascend.roi_pooling(x, rois, bad, **kw)
    wrong_image = rois.copy()
    wrong_image[1, 0, 0] = 2
    with pytest.raises(pyroi.BatchIndexError, match=r"rois\[1\] \(columns are RoIs\): RoI 0 "):
        ascend.roi_pooling(x, wrong_image, actual, **kw)
    nan_box = rois.copy()
    nan_box[0, 2, 2] = np.nan
    with pytest.raises(pyroi.BoxError, match=r"rois\[0\] \(columns are RoIs\): RoI 2 "):
        ascend.roi_pooling(x, nan_box, actual, **kw)
    with pytest.raises(pyroi.DTypeError, match="rois"):
        ascend.roi_pooling(x, rois.astype(np.float64), actual, **kw)
    with pytest.raises(pyroi.InvalidArgumentError, match="spatial_scale_w"):
        ascend.roi_pooling(x, rois, actual, spatial_scale_w=-1.0, **kw)
    with pytest.raises(pyroi.InvalidArgumentError, match="spatial_scale"):
        ascend.roi_pooling(x, rois, actual, spatial_scale=np.inf, **kw)


def test_pack_rois():
    rois, actual = ascend.pack_rois([np.ones((3, 4)), np.zeros((0, 4)), 2 * np.ones((17, 4))])
    assert rois.shape == (3, 5, 32) and rois.dtype == np.float64
    assert actual.dtype == np.int32 and actual.shape == (3, 8)
    assert actual[:, 0].tolist() == [3, 0, 17] and not actual[:, 1:].any()
    np.testing.assert_array_equal(rois[0, :, :3], [[0] * 3] + [[1] * 3] * 4)
    np.testing.assert_array_equal(rois[2, 0, :17], 2)
    assert not rois[0, :, 3:].any() and not rois[1].any()
    small, _ = ascend.pack_rois([], dtype=np.float32)
    assert small.shape == (0, 5, 16) and small.dtype == np.float32
    assert ascend.pack_rois([[[0, 0, 1, 1]]])[0].dtype == np.float32
    with pytest.raises(pyroi.ArgumentTypeError, match="list"):
        ascend.pack_rois(np.zeros((2, 4)))
    with pytest.raises(pyroi.ShapeError, match=r"boxes\[1\]"):
        ascend.pack_rois([np.zeros((1, 4)), np.zeros((1, 5))])
    with pytest.raises(pyroi.ShapeError, match="6000"):
        ascend.pack_rois([np.zeros((6001, 4))])
    assert ascend.pack_rois([np.zeros((6001, 4))], strict=False)[0].shape == (1, 5, 6016)
    with pytest.raises(pyroi.DTypeError, match="dtype"):
        ascend.pack_rois([np.zeros((1, 4))], dtype=np.int32)


# ---- aclnnRoiAlignV2Backward ---------------------------------------------------------------

def _v2_case(dtype, seed=0, k=12, shape=(2, 3, 9, 11), scale=0.5):
    rng = np.random.default_rng(stable_seed("v2", np.dtype(dtype).name, seed))
    n, c, h, w = shape
    x1 = rng.uniform(0, w / scale, k)
    y1 = rng.uniform(0, h / scale, k)
    x2 = x1 + rng.uniform(0, 1, k) * (w / scale - x1)
    y2 = y1 + rng.uniform(0, 1, k) * (h / scale - y1)
    ids = rng.integers(0, n, k) + rng.uniform(0, 0.99, k)  # fractional: floored
    boxes = np.stack([ids, x1, y1, x2, y2], axis=1).astype(dtype)
    boxes[0] = (0, 0, 0, w / scale, h / scale)  # the documented bounds are inclusive
    grad = random_input(rng, (k, c, 2, 3), dtype)
    return grad, boxes, shape, scale


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_v2_backward_matches_reference(dtype, aligned, sampling_ratio):
    grad, boxes, shape, scale = _v2_case(dtype)
    result = ascend.roi_align_v2_backward(grad, boxes, shape, 2, 3, scale, sampling_ratio,
                                          aligned)
    floored = boxes.copy()
    floored[:, 0] = np.floor(boxes[:, 0])
    expected = roi_align_backward_ref(grad, floored, shape, spatial_scale=scale,
                                      sampling_ratio=sampling_ratio, aligned=aligned)
    tolerance = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12,
                                                                            atol=1e-12)
    np.testing.assert_allclose(result, expected, **tolerance)
    np.testing.assert_array_equal(result, pyroi.roi_align_backward(
        grad, floored, shape, scale, sampling_ratio, aligned))


@pytest.mark.parametrize("aligned", [False, True])
def test_v2_backward_bit_exact_vs_torchvision(tv, aligned):
    grad, boxes, shape, scale = _v2_case(np.float32, seed=1)
    floored = boxes.copy()
    floored[:, 0] = np.floor(boxes[:, 0])
    x = np.zeros(shape, np.float32)
    expected = tv.roi_align_grad(x, floored, grad, (2, 3), scale, 0, aligned)
    actual = ascend.roi_align_v2_backward(grad, boxes, shape, 2, 3, scale, 0, aligned)
    np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))


def test_v2_backward_is_adjoint_and_deterministic():
    grad, boxes, shape, scale = _v2_case(np.float64, seed=2, k=40, shape=(2, 16, 20, 20))
    floored = boxes.copy()
    floored[:, 0] = np.floor(boxes[:, 0])
    x = np.random.default_rng(0).standard_normal(shape)
    forward = pyroi.roi_align(x, floored, (2, 3), scale, 2, True)
    backward = ascend.roi_align_v2_backward(grad, boxes, shape, 2, 3, scale, 2, True,
                                            num_threads=1)
    np.testing.assert_allclose(np.vdot(forward, grad), np.vdot(x, backward), rtol=1e-12)
    for threads in (2, 3):
        again = ascend.roi_align_v2_backward(grad, boxes, shape, 2, 3, scale, 2, True,
                                             num_threads=threads)
        np.testing.assert_array_equal(again, backward)
    out = np.full(shape, 5.0)
    assert ascend.roi_align_v2_backward(grad, boxes, shape, 2, 3, scale, 2, True,
                                        out=out) is out
    np.testing.assert_array_equal(out, backward)


def test_v2_backward_floors_image_id():
    grad, boxes, shape, scale = _v2_case(np.float32, seed=3, k=2)
    boxes[:, 0] = (0.999, 1.5)
    result = ascend.roi_align_v2_backward(grad, boxes, shape, 2, 3, scale, 1, True)
    by_index = boxes.copy()
    by_index[:, 0] = (0, 1)
    np.testing.assert_array_equal(
        result, pyroi.roi_align_backward(grad, by_index, shape, scale, 1, True))
    boxes[0, 0] = -0.5  # floor -> -1 (torchvision would truncate to 0)
    with pytest.raises(pyroi.BatchIndexError, match=r"RoI 0 .*floored: -1"):
        ascend.roi_align_v2_backward(grad, boxes, shape, 2, 3, scale, 1, True)
    boxes[0, 0] = 2.0
    with pytest.raises(pyroi.BatchIndexError, match=r"\[0, 2\)"):
        ascend.roi_align_v2_backward(grad, boxes, shape, 2, 3, scale, 1, True)


def _violate(boxes, k, column, value):
    changed = boxes.copy()
    changed[k, column] = value
    return changed


def test_v2_backward_constraint_errors():
    grad, boxes, shape, scale = _v2_case(np.float32, seed=4, k=3)
    _, _, h, w = shape
    args = (2, 3, scale, 0, True)
    cases = [
        (_violate(boxes, 1, 1, -0.5), "0 <= x1"),
        (_violate(boxes, 2, 2, -1.0), "0 <= y1"),
        (_violate(boxes, 1, 1, boxes[1, 3] + 1), "x1 <= x2"),
        (_violate(boxes, 1, 2, boxes[1, 4] + 1), "y1 <= y2"),
        (_violate(boxes, 2, 3, w / scale + 0.5), "x2 <= W / spatial_scale"),
        (_violate(boxes, 2, 4, h / scale + 0.5), "y2 <= H / spatial_scale"),
    ]
    for bad, rule in cases:
        with pytest.raises(pyroi.BoxError, match=rule):
            ascend.roi_align_v2_backward(grad, bad, shape, *args)
    with pytest.raises(pyroi.BoxError, match="RoI 1"):
        ascend.roi_align_v2_backward(grad, _violate(boxes, 1, 2, np.nan), shape, *args)
    with pytest.raises(pyroi.BatchIndexError, match="finite"):
        ascend.roi_align_v2_backward(grad, _violate(boxes, 1, 0, np.inf), shape, *args)


def test_v2_backward_argument_errors():
    grad, boxes, shape, scale = _v2_case(np.float32, seed=5, k=3)
    call = ascend.roi_align_v2_backward
    with pytest.raises(pyroi.InvalidArgumentError, match="spatial_scale must be > 0"):
        call(grad, boxes, shape, 2, 3, 0.0, 0, True)
    with pytest.raises(pyroi.InvalidArgumentError, match="spatial_scale"):
        call(grad, boxes, shape, 2, 3, -1.0, 0, True)
    with pytest.raises(pyroi.InvalidArgumentError, match="sampling_ratio must be >= 0"):
        call(grad, boxes, shape, 2, 3, scale, -1, True)
    with pytest.raises(pyroi.ShapeError, match="input_shape"):
        call(grad, boxes, shape[:3], 2, 3, scale, 0, True)
    with pytest.raises(pyroi.ShapeError, match="channels"):
        call(grad, boxes, (2, 4, 9, 11), 2, 3, scale, 0, True)
    with pytest.raises(pyroi.ShapeError, match="K must match"):
        call(grad, boxes[:2], shape, 2, 3, scale, 0, True)
    with pytest.raises(pyroi.ShapeError, match="pooled_height"):
        call(grad, boxes, shape, 3, 3, scale, 0, True)
    with pytest.raises(pyroi.ShapeError, match=r"\(K, 5\)"):
        call(grad, boxes[:, 1:], shape, 2, 3, scale, 0, True)
    with pytest.raises(pyroi.DTypeError, match="boxes"):
        call(grad, boxes.astype(np.float64), shape, 2, 3, scale, 0, True)
    with pytest.raises(pyroi.ArgumentTypeError, match="aligned"):
        call(grad, boxes, shape, 2, 3, scale, 0, "yes")


def test_v2_backward_two_phase_workspace():
    grad, boxes, shape, scale = _v2_case(np.float32, seed=6, k=30, shape=(2, 20, 15, 13))
    args = (2, 3, scale, 0, True)
    expected = ascend.roi_align_v2_backward(grad, boxes, shape, *args)
    size = ascend.roi_align_v2_backward_workspace_size(boxes, shape, *args)
    assert size > 0
    workspace = np.full(size, 0xAB, np.uint8)
    np.testing.assert_array_equal(
        ascend.roi_align_v2_backward(grad, boxes, shape, *args, workspace=workspace), expected)
    assert (workspace != 0xAB).any()  # the call really used it
    smaller = size
    failed = False
    while smaller > 16:
        smaller //= 2
        try:
            result = ascend.roi_align_v2_backward(grad, boxes, shape, *args,
                                                  workspace=np.empty(smaller, np.uint8))
        except pyroi.PyroiMemoryError:
            failed = True
            break
        np.testing.assert_array_equal(result, expected)
    assert failed  # too small for the tap tables: a clean error
    with pytest.raises(pyroi.DTypeError, match="workspace"):
        ascend.roi_align_v2_backward(grad, boxes, shape, *args,
                                     workspace=np.empty(size, np.int8))
    with pytest.raises(pyroi.InvalidArgumentError, match="contiguous"):
        ascend.roi_align_v2_backward(grad, boxes, shape, *args,
                                     workspace=np.empty(2 * size, np.uint8)[::2])
    with pytest.raises(pyroi.DTypeError, match="workspace"):  # a list converts to int64
        ascend.roi_align_v2_backward(grad, boxes, shape, *args, workspace=[0] * size)
    # any writeable buffer of bytes works (the array interface / buffer protocol)
    np.testing.assert_array_equal(ascend.roi_align_v2_backward(
        grad, boxes, shape, *args, workspace=bytearray(size)), expected)
    with pytest.raises(pyroi.InvalidArgumentError, match="writeable"):
        ascend.roi_align_v2_backward(grad, boxes, shape, *args, workspace=memoryview(bytes(size)))
    # nothing to write: no workspace at all
    empty = ascend.roi_align_v2_backward_workspace_size(boxes, (2, 20, 15, 13)[:1] + (0, 15, 13),
                                                        *args)
    assert empty == 0
    with pytest.raises(pyroi.InvalidArgumentError, match="sampling_ratio"):
        ascend.roi_align_v2_backward_workspace_size(boxes, shape, 2, 3, scale, -2, True)
    with pytest.raises(pyroi.DTypeError, match="boxes"):
        ascend.roi_align_v2_backward_workspace_size(boxes.astype(np.int32), shape, *args)
