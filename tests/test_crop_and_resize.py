"""crop_and_resize (docs/semantics.md §13): TensorFlow's known answers, the float64
reference, onnxruntime's contrib CropAndResize bit for bit, gradients by finite differences
and the adjoint identity, thread-count independence, bad input."""

import numpy as np
import pytest

import pyroi
import reference_crop_and_resize as ref

RNG = np.random.default_rng


def nhwc(a):
    return np.ascontiguousarray(np.transpose(a, (0, 2, 3, 1)))


# ---- TensorFlow's known answers ---------------------------------------------------------
# tensorflow/core/kernels/image/crop_and_resize_op_test.cc at tensorflow commit
# 0e152a80f14b1375c479b996d21c638816a25b50: inputs and expected crops, NHWC, 1 channel.
IMAGE_2x2 = [1, 2, 3, 4]
IMAGE_3x3 = [1, 2, 3, 4, 5, 6, 7, 8, 9]
TF_CASES = [
    # (image, (H, W), boxes, crop_size, method, extrapolation_value, expected)
    (IMAGE_2x2, (2, 2), [[0, 0, 1, 1]], (1, 1), "bilinear", 0, [2.5]),
    (IMAGE_2x2, (2, 2), [[0, 0, 1, 1]], (1, 1), "nearest", 0, [4.0]),
    (IMAGE_2x2, (2, 2), [[1, 1, 0, 0]], (1, 1), "bilinear", 0, [2.5]),
    (IMAGE_2x2, (2, 2), [[1, 1, 0, 0]], (1, 1), "nearest", 0, [4.0]),
    (IMAGE_2x2, (2, 2), [[0, 0, 1, 1]], (3, 3), "bilinear", 0,
     [1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4]),
    (IMAGE_2x2, (2, 2), [[0, 0, 1, 1]], (3, 3), "nearest", 0, [1, 2, 2, 3, 4, 4, 3, 4, 4]),
    (IMAGE_2x2, (2, 2), [[1, 1, 0, 0]], (3, 3), "bilinear", 0,
     [4, 3.5, 3, 3, 2.5, 2, 2, 1.5, 1]),
    (IMAGE_2x2, (2, 2), [[1, 1, 0, 0]], (3, 3), "nearest", 0, [4, 4, 3, 4, 4, 3, 2, 2, 1]),
    (IMAGE_3x3, (3, 3), [[0, 0, 1, 1], [0, 0, 0.5, 0.5]], (2, 2), "bilinear", 0,
     [1, 3, 7, 9, 1, 2, 4, 5]),
    (IMAGE_3x3, (3, 3), [[0, 0, 1, 1], [0, 0, 0.5, 0.5]], (2, 2), "nearest", 0,
     [1, 3, 7, 9, 1, 2, 4, 5]),
    (IMAGE_3x3, (3, 3), [[1, 1, 0, 0], [0.5, 0.5, 0, 0]], (2, 2), "bilinear", 0,
     [9, 7, 3, 1, 5, 4, 2, 1]),
    (IMAGE_3x3, (3, 3), [[1, 1, 0, 0], [0.5, 0.5, 0, 0]], (2, 2), "nearest", 0,
     [9, 7, 3, 1, 5, 4, 2, 1]),
    (IMAGE_2x2, (2, 2), [[-1, -1, 1, 1]], (3, 3), "bilinear", -1,
     [-1, -1, -1, -1, 1, 2, -1, 3, 4]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(TF_CASES)))
def test_tensorflow_known_answers(case, dtype):
    values, (h, w), boxes, crop, method, fill, expected = TF_CASES[case]
    image = np.array(values, dtype).reshape(1, h, w, 1)
    boxes = np.array(boxes, dtype)
    result = pyroi.crop_and_resize(image, boxes, np.zeros(len(boxes), np.int32), crop, method,
                                   fill)
    assert result.shape == (len(boxes), crop[0], crop[1], 1)
    np.testing.assert_array_equal(result.ravel(), np.array(expected, dtype))


def test_tensorflow_no_crop():
    image = np.array(IMAGE_2x2, np.float32).reshape(1, 2, 2, 1)
    result = pyroi.crop_and_resize(image, np.zeros((0, 4), np.float32), np.zeros(0, np.int32),
                                   (3, 3))
    assert result.shape == (0, 3, 3, 1)


def test_tensorflow_sharding_999():
    # TestWithSharding: a 999 x 999 ramp, boxes [0, 0, .5, .5] and [.5, .5, 1, 1], crop 500
    length, half = 999, 500
    image = np.tile(np.arange(length, dtype=np.float32), (length, 1)).reshape(1, length, length, 1)
    boxes = np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1]], np.float32)
    result = pyroi.crop_and_resize(image, boxes, [0, 0], (half, half))
    np.testing.assert_array_equal(result[0, :, :, 0], np.tile(np.arange(half), (half, 1)))
    np.testing.assert_array_equal(result[1, :, :, 0], np.tile(np.arange(499, 999), (half, 1)))


def test_tensorflow_bad_box_index():
    image = np.array(IMAGE_2x2, np.float32).reshape(1, 2, 2, 1)
    with pytest.raises(pyroi.BatchIndexError, match="box_indices"):
        pyroi.crop_and_resize(image, np.array([[0, 0, 1, 1]], np.float32), [1], (3, 3))


# ---- the float64 reference ----------------------------------------------------------------
def random_case(seed, n=2, c=3, h=7, w=5, k=6, spread=1.6, dtype=np.float64):
    rng = RNG(seed)
    image = rng.standard_normal((n, c, h, w)).astype(dtype)
    boxes = (rng.random((k, 4)) * spread - (spread - 1) / 2).astype(dtype)  # some outside, some flipped
    indices = rng.integers(0, n, k)
    return image, boxes, indices


@pytest.mark.parametrize("crop", [(1, 1), (1, 4), (4, 1), (3, 5), (7, 7)])
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("fill", [0.0, -2.5])
def test_reference_float64(crop, method, fill):
    image, boxes, indices = random_case(sum(crop) * 7 + len(method))
    expected = ref.forward(image, boxes, indices, crop, method, fill)
    got = pyroi.crop_and_resize(image, boxes, indices, crop, method, fill, layout="NCHW")
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    got_nhwc = pyroi.crop_and_resize(nhwc(image), boxes, indices, crop, method, fill)
    np.testing.assert_array_equal(got_nhwc, nhwc(got))


def test_reference_float32_odd_sizes():
    image, boxes, indices = random_case(3, n=3, c=5, h=9, w=11, k=20, dtype=np.float32)
    expected = ref.forward(image, boxes, indices, (5, 3))
    got = pyroi.crop_and_resize(image, boxes, indices, (5, 3), layout="NCHW")
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5)


def test_extrapolation_nan_and_empty():
    image, boxes, indices = random_case(4)
    boxes[0] = [-3, -3, -2, -2]  # wholly outside
    got = pyroi.crop_and_resize(image, boxes, indices, (2, 2), extrapolation_value=float("nan"),
                                layout="NCHW")
    assert np.isnan(got[0]).all()
    assert pyroi.crop_and_resize(image, boxes[:0], indices[:0], (2, 3), layout="NCHW").shape == (
        0, 3, 2, 3)


# ---- onnxruntime's contrib CropAndResize, bit for bit --------------------------------------
def ort_crop_and_resize(image, boxes, indices, crop, mode, fill):
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    node = helper.make_node("CropAndResize", ["X", "rois", "batch_indices", "crop_size"], ["Y"],
                            domain="com.microsoft", mode=mode, extrapolation_value=fill)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("rois", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("batch_indices", TensorProto.INT32, None),
         helper.make_tensor_value_info("crop_size", TensorProto.INT32, None)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    try:
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
    except Exception as error:  # a build without the contrib ops
        pytest.skip(f"onnxruntime has no com.microsoft CropAndResize: {error}")
    return session.run(None, {"X": image, "rois": boxes, "batch_indices": indices.astype(np.int32),
                              "crop_size": np.array(crop, np.int32)})[0]


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("crop", [(1, 1), (2, 5), (7, 7), (14, 14)])
def test_onnxruntime_bit_exact(mode, crop):
    # random boxes: no nearest pick at an exact .5 tie (tie-free), the case where the two
    # placements can disagree by an ulp; with placement="onnxruntime" they agree everywhere
    image, boxes, indices = random_case(11 + crop[0], n=2, c=4, h=13, w=17, k=25,
                                        dtype=np.float32)
    expected = ort_crop_and_resize(image, boxes, indices, crop, mode, 0.5)
    got = pyroi.crop_and_resize(image, boxes, indices, crop, mode, 0.5, layout="NCHW",
                                placement="onnxruntime")
    np.testing.assert_array_equal(got, expected)


def test_placements_differ_at_a_tie():
    # W = 4, x from 0.05 to 0.5, crop 3 (float32): TensorFlow's last x is
    # 0.15 + 2 * 0.675 = 1.4999999 (-> 1), onnxruntime's 0.5 * 3 = 1.5 (-> 2)
    image = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    boxes = np.array([[0, 0.05, 0, 0.5]], np.float32)
    tf = pyroi.crop_and_resize(image, boxes, [0], (1, 3), "nearest", layout="NCHW")
    ort = pyroi.crop_and_resize(image, boxes, [0], (1, 3), "nearest", layout="NCHW",
                                placement="onnxruntime")
    assert tf[0, 0, 0, 2] == 1 and ort[0, 0, 0, 2] == 2
    np.testing.assert_array_equal(tf[..., :2], ort[..., :2])
    np.testing.assert_array_equal(
        ort, ort_crop_and_resize(image, boxes, np.array([0]), (1, 3), "nearest", 0.0))


# ---- gradients ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("crop", [(1, 1), (1, 3), (3, 4)])
def test_image_gradient_reference_and_adjoint(method, crop):
    image, boxes, indices = random_case(21 + crop[1])
    grads = RNG(5).standard_normal((len(boxes), image.shape[1]) + crop)
    got = pyroi.crop_and_resize_backward_image(grads, boxes, indices, image.shape, method,
                                               layout="NCHW")
    np.testing.assert_allclose(got, ref.backward_image(grads, boxes, indices, image.shape,
                                                       method), rtol=0, atol=1e-12)
    # adjoint: <forward(x), g> == <x, backward(g)>
    forward = pyroi.crop_and_resize(image, boxes, indices, crop, method, layout="NCHW")
    assert np.vdot(forward, grads) == pytest.approx(np.vdot(image, got), rel=1e-12)
    got_nhwc = pyroi.crop_and_resize_backward_image(nhwc(grads), boxes, indices,
                                                    nhwc(image).shape, method)
    np.testing.assert_array_equal(got_nhwc, nhwc(got))


def test_image_gradient_finite_differences():
    image, boxes, indices = random_case(31, n=1, c=2, h=5, w=6, k=3)
    grads = RNG(6).standard_normal((3, 2, 3, 4))
    analytic = pyroi.crop_and_resize_backward_image(grads, boxes, indices, image.shape,
                                                    layout="NCHW")
    step = 1e-6
    numeric = np.zeros_like(image)
    for index in np.ndindex(image.shape):
        plus, minus = image.copy(), image.copy()
        plus[index] += step
        minus[index] -= step
        numeric[index] = np.vdot(
            pyroi.crop_and_resize(plus, boxes, indices, (3, 4), layout="NCHW")
            - pyroi.crop_and_resize(minus, boxes, indices, (3, 4), layout="NCHW"), grads) / (2 * step)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("crop", [(1, 1), (1, 3), (3, 4)])
def test_box_gradient_finite_differences(crop):
    rng = RNG(41 + crop[1])
    image = rng.standard_normal((2, 3, 6, 7))
    # inside, flipped, half outside: samples away from whole pixels and the image's edges
    boxes = np.array([[0.13, 0.21, 0.77, 0.69], [0.83, 0.73, 0.17, 0.29],
                      [-0.31, 0.12, 0.57, 1.37]])
    indices = np.array([0, 1, 0])
    grads = rng.standard_normal((3, 3) + crop)
    analytic = pyroi.crop_and_resize_backward_boxes(grads, image, boxes, indices, layout="NCHW")
    step = 1e-7
    numeric = np.zeros_like(boxes)
    for index in np.ndindex(boxes.shape):
        plus, minus = boxes.copy(), boxes.copy()
        plus[index] += step
        minus[index] -= step
        numeric[index] = np.vdot(
            pyroi.crop_and_resize(image, plus, indices, crop, layout="NCHW")
            - pyroi.crop_and_resize(image, minus, indices, crop, layout="NCHW"), grads) / (2 * step)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)
    got_nhwc = pyroi.crop_and_resize_backward_boxes(nhwc(grads), nhwc(image), boxes, indices)
    np.testing.assert_array_equal(got_nhwc, analytic)


def test_box_gradient_kink_rule():
    # a sample on a whole pixel takes the slope of the next cell (TensorFlow: 0); at the last
    # pixel that of the cell before it
    image = np.array([0.0, 1.0, 5.0], np.float64).reshape(1, 1, 1, 3)  # x slopes 1, then 4
    g = np.ones((1, 1, 1, 1))
    at_1 = pyroi.crop_and_resize_backward_boxes(g, image, np.array([[0, 0.5, 0, 0.5]]), [0],
                                                layout="NCHW")
    assert at_1[0, 1] == pytest.approx(4 * 0.5 * 2) and at_1[0, 3] == pytest.approx(4.0)
    at_end = pyroi.crop_and_resize_backward_boxes(g, image, np.array([[0, 1.0, 0, 1.0]]), [0],
                                                  layout="NCHW")
    assert at_end[0, 1] == pytest.approx(4.0)


# ---- threads, errors, hostile input -------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threads_bit_identical(dtype):
    image, boxes, indices = random_case(51, n=2, c=40, h=23, w=19, k=64, dtype=dtype)
    grads = RNG(7).standard_normal((64, 7, 7, 40)).astype(dtype)
    image = nhwc(image)
    results = []
    for threads in (1, 2, 3, 4):
        results.append((
            pyroi.crop_and_resize(image, boxes, indices, (7, 7), num_threads=threads),
            pyroi.crop_and_resize_backward_image(grads, boxes, indices, image.shape,
                                                 num_threads=threads),
            pyroi.crop_and_resize_backward_image(grads, boxes, indices, image.shape, "nearest",
                                                 num_threads=threads),
            pyroi.crop_and_resize_backward_boxes(grads, image, boxes, indices,
                                                 num_threads=threads)))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_bad_input_names_the_argument():
    image, boxes, indices = random_case(61, dtype=np.float32)
    image = nhwc(image)
    grads = np.zeros((len(boxes), 2, 2, 3), np.float32)
    with pytest.raises(pyroi.InvalidArgumentError, match="method"):
        pyroi.crop_and_resize(image, boxes, indices, (2, 2), "bicubic")
    with pytest.raises(pyroi.InvalidArgumentError, match="method"):
        pyroi.crop_and_resize_backward_boxes(grads, image, boxes, indices, "nearest")
    with pytest.raises(pyroi.PyroiError, match="crop_size"):
        pyroi.crop_and_resize(image, boxes, indices, (0, 2))
    with pytest.raises(pyroi.PyroiError, match="crop_size"):
        pyroi.crop_and_resize(image, boxes, indices, (2, 2, 2))
    with pytest.raises(pyroi.BatchIndexError, match="box_indices"):
        pyroi.crop_and_resize(image, boxes, np.full(len(boxes), -1), (2, 2))
    with pytest.raises(pyroi.ShapeError, match="box_indices"):
        pyroi.crop_and_resize(image, boxes, indices[:, None], (2, 2))
    with pytest.raises(pyroi.PyroiError, match="batch_indices|box_indices"):
        pyroi.crop_and_resize(image, boxes, indices[:2], (2, 2))
    with pytest.raises(pyroi.DTypeError, match="boxes"):
        pyroi.crop_and_resize(image, boxes.astype(np.float64), indices, (2, 2))
    with pytest.raises(pyroi.DTypeError, match="image"):
        pyroi.crop_and_resize(image.astype(np.float16), boxes, indices, (2, 2))
    with pytest.raises(pyroi.InvalidArgumentError, match="layout"):
        pyroi.crop_and_resize(image, boxes, indices, (2, 2), layout="CHWN")
    with pytest.raises(pyroi.InvalidArgumentError, match="placement"):
        pyroi.crop_and_resize(image, boxes, indices, (2, 2), placement="openvino")
    with pytest.raises(pyroi.ShapeError, match="channels"):
        pyroi.crop_and_resize_backward_image(grads, boxes, indices, (2, 7, 5, 4))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_boxes_raise_naming_the_box(bad):
    image, boxes, indices = random_case(71)
    boxes[3, 2] = bad
    with pytest.raises(pyroi.BoxError, match="RoI 3"):
        pyroi.crop_and_resize(image, boxes, indices, (2, 2), layout="NCHW")
    with pytest.raises(pyroi.BoxError, match="RoI 3"):
        pyroi.crop_and_resize_backward_image(np.zeros((6, 3, 2, 2)), boxes, indices,
                                             image.shape, layout="NCHW")
    with pytest.raises(pyroi.BoxError, match="RoI 3"):
        pyroi.crop_and_resize_backward_boxes(np.zeros((6, 3, 2, 2)), image, boxes, indices,
                                             layout="NCHW")


def test_huge_finite_boxes_extrapolate():
    image, boxes, indices = random_case(81, dtype=np.float32)
    boxes[0] = [-3e38, 3e38, 3e38, -3e38]  # positions overflow to inf / NaN: extrapolated
    got = pyroi.crop_and_resize(image, boxes, indices, (3, 3), extrapolation_value=7,
                                layout="NCHW")
    assert np.isfinite(got).all()


# ---- front-ends: the layer, pyroi.onnx ----------------------------------------------------
def test_layer_forward_and_backward():
    image, boxes, indices = random_case(91)
    image = nhwc(image)
    layer = pyroi.CropAndResize((3, 4))
    crops = layer(image, boxes, indices)
    np.testing.assert_array_equal(crops, pyroi.crop_and_resize(image, boxes, indices, (3, 4)))
    grads = RNG(9).standard_normal(crops.shape)
    np.testing.assert_array_equal(
        layer.backward(grads, lda_coeff=2.0),
        2.0 * pyroi.crop_and_resize_backward_image(grads, boxes, indices, image.shape))
    np.testing.assert_array_equal(
        layer.backward_boxes(grads, image),
        pyroi.crop_and_resize_backward_boxes(grads, image, boxes, indices))
    layer.eval()
    with pytest.raises(pyroi.PyroiError, match="training"):
        layer.backward(grads)


def test_onnx_run_node_com_microsoft():
    onnx = pytest.importorskip("onnx")
    from pyroi import onnx as ponnx
    image, boxes, indices = random_case(93, dtype=np.float32)
    node = onnx.helper.make_node("CropAndResize", ["X", "rois", "batch_indices", "crop_size"],
                                 ["Y"], domain="com.microsoft", mode="nearest",
                                 extrapolation_value=-0.1)
    got = ponnx.run_node(node, image, boxes, indices.astype(np.int32),
                         np.array([5, 6], np.int32))
    np.testing.assert_array_equal(got, ort_crop_and_resize(image, boxes, indices, (5, 6),
                                                           "nearest", -0.1))
    bad = onnx.helper.make_node("CropAndResize", ["X", "rois", "b", "c"], ["Y"],
                                domain="com.microsoft", method="bilinear")
    with pytest.raises(pyroi.InvalidArgumentError, match="method"):
        ponnx.run_node(bad, image, boxes, indices, [2, 2])


# ---- pyroi.torch ----------------------------------------------------------------------------

def _torch_case(torch, layout="NCHW"):
    rng = RNG(77)
    image = rng.standard_normal((2, 3, 7, 8))
    if layout == "NHWC":
        image = np.ascontiguousarray(image.transpose(0, 2, 3, 1))
    boxes = np.array([[0.1, 0.2, 0.7, 0.9], [0.3, -0.1, 0.8, 0.6], [0.9, 0.8, 0.2, 0.1]])
    return image, boxes, np.array([0, 1, 1], np.int32)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("placement", ["tensorflow", "onnxruntime"])
def test_torch_matches_the_numpy_functions(layout, placement):
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    image, boxes, indices = _torch_case(torch, layout)
    image_t = torch.tensor(image, requires_grad=True)
    boxes_t = torch.tensor(boxes, requires_grad=True)
    kw = dict(layout=layout, placement=placement)
    crops = pt.crop_and_resize(image_t, boxes_t, torch.tensor(indices), (3, 4), "bilinear", 0.5,
                               **kw)
    expected = pyroi.crop_and_resize(image, boxes, indices, (3, 4), "bilinear", 0.5, **kw)
    assert np.array_equal(crops.detach().numpy(), expected)
    grad = RNG(78).standard_normal(expected.shape)
    crops.backward(torch.tensor(grad))
    assert np.array_equal(image_t.grad.numpy(), pyroi.crop_and_resize_backward_image(
        grad, boxes, indices, image.shape, **kw))
    assert np.array_equal(boxes_t.grad.numpy(), pyroi.crop_and_resize_backward_boxes(
        grad, image, boxes, indices, **kw))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_torch_gradcheck_image_and_boxes(layout):
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    image, boxes, indices = _torch_case(torch, layout)
    indices_t = torch.tensor(indices)
    assert torch.autograd.gradcheck(
        lambda a, b: pt.crop_and_resize(a, b, indices_t, (3, 4), layout=layout),
        (torch.tensor(image, requires_grad=True), torch.tensor(boxes, requires_grad=True)))


def test_torch_nearest_gives_the_boxes_no_gradient():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    image, boxes, indices = _torch_case(torch)
    image_t = torch.tensor(image, requires_grad=True)
    boxes_t = torch.tensor(boxes, requires_grad=True)
    pt.crop_and_resize(image_t, boxes_t, torch.tensor(indices), (3, 4), "nearest").sum().backward()
    assert boxes_t.grad is None
    assert np.array_equal(image_t.grad.numpy(), pyroi.crop_and_resize_backward_image(
        np.ones((3, 3, 3, 4)), boxes, indices, image.shape, "nearest", layout="NCHW"))


@pytest.mark.filterwarnings(  # opcheck's own gradient comparison reads a non-leaf's .grad
    "ignore:The .grad attribute of a Tensor that is not a leaf")
def test_torch_opcheck_compile_and_module():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    from torch.library import opcheck
    image, boxes, indices = _torch_case(torch)
    image_t = torch.tensor(image, requires_grad=True)
    boxes_t = torch.tensor(boxes, requires_grad=True)
    indices_t = torch.tensor(indices, dtype=torch.int64)
    opcheck(torch.ops.pyroi.crop_and_resize.default,
            (image_t, boxes_t, indices_t, 3, 4, "bilinear", 0.5, "NCHW", "tensorflow"))
    opcheck(torch.ops.pyroi.crop_and_resize.default,
            (image_t, boxes_t, indices_t, 2, 5, "nearest", 0.0, "NCHW", "onnxruntime"))
    grad = torch.randn(3, 3, 3, 4, dtype=torch.float64)
    opcheck(torch.ops.pyroi._crop_and_resize_backward_image.default,
            (grad, boxes_t.detach(), indices_t, [2, 3, 7, 8], "bilinear", "NCHW", "tensorflow"))
    opcheck(torch.ops.pyroi._crop_and_resize_backward_boxes.default,
            (grad, image_t.detach(), boxes_t.detach(), indices_t, "NCHW", "tensorflow"))
    layer = pt.CropAndResize((3, 4), extrapolation_value=0.5)
    assert repr(layer) == ("CropAndResize(crop_size=(3, 4), method='bilinear', "
                           "extrapolation_value=0.5, layout='NCHW', placement='tensorflow')")
    compiled = torch.compile(layer, fullgraph=True)
    assert torch.equal(compiled(image_t, boxes_t, indices_t), layer(image_t, boxes_t, indices_t))


def test_torch_bad_arguments_name_themselves():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    image, boxes, indices = _torch_case(torch)
    image_t, boxes_t, indices_t = torch.tensor(image), torch.tensor(boxes), torch.tensor(indices)
    with pytest.raises(pyroi.ArgumentTypeError, match="boxes"):
        pt.crop_and_resize(image_t, boxes, indices_t, (3, 4))
    with pytest.raises(pyroi.InvalidArgumentError, match="layout"):
        pt.crop_and_resize(image_t, boxes_t, indices_t, (3, 4), layout="CHW")
    with pytest.raises(pyroi.InvalidArgumentError, match="method"):
        pt.CropAndResize((3, 4), "bicubic")
    with pytest.raises(pyroi.BatchIndexError, match="box_ind"):
        pt.crop_and_resize(image_t, boxes_t, torch.tensor([0, 1, 2]), (3, 4))
    with pytest.raises(pyroi.DTypeError):
        pt.crop_and_resize(image_t.half(), boxes_t.half(), indices_t, (3, 4))
