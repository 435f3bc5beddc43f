"""pyroi.onnx.RoiAlign / MaxRoiPool as trainable layers: forward bits against onnxruntime for
every attribute combination, the avg gradient against torchvision's autograd, the max-mode
gradient against finite differences and an independent reference, lda_coeff, the strict
backward, and the round trip with an onnx.NodeProto."""

import itertools

import numpy as np
import pytest

import pyroi
from pyroi import onnx as ponnx
from conftest import central_differences, random_rois, require_torchvision, stable_seed
from reference_onnx import onnx_roi_align_max_backward_ref, onnx_roi_align_max_ref
from test_onnx import _ort_session
from test_onnx_orders import SCALE, order_case
from test_onnx_orders import _kwargs as order_kwargs


def _optional(name):
    return pytest.importorskip(name, reason=f"{name} is an optional dependency")


def assert_bits_equal(actual, expected):
    """Same dtype, shape and bits (NaN positions compared, not their payloads)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    nan_a, nan_e = np.isnan(actual), np.isnan(expected)
    assert np.array_equal(nan_a, nan_e)
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[actual.dtype.itemsize]
    a = np.where(nan_a, 0, actual).view(uint)
    e = np.where(nan_e, 0, expected).view(uint)
    mismatch = np.flatnonzero(a != e)
    assert mismatch.size == 0, (
        f"{mismatch.size} of {a.size} elements differ, first at {mismatch[:5]}: "
        f"{actual.ravel()[mismatch[:5]]} vs {expected.ravel()[mismatch[:5]]}")


def case(dtype, salt, num_rois=9, shape=(2, 3, 7, 9), spatial_scale=1.0, inverted="none"):
    """X (N, C, H, W), rois (K, 4), batch_indices (K,) int64: boxes inside, across, outside
    the map, tiny and integer-aligned (samples on pixels)."""
    rng = np.random.default_rng(stable_seed("onnx_layer", salt))
    n, c, h, w = shape
    X = rng.standard_normal(shape).astype(dtype)
    rows = random_rois(rng, n, h, w, num_rois, np.float64, spatial_scale, inverted=inverted)
    return X, rows[:, 1:].astype(dtype), rows[:, 0].astype(np.int64)


def ort_run(node, inputs, opset):
    """Runs one node in onnxruntime (CPU, one thread) after onnx.checker accepted it."""
    onnx = _optional("onnx")
    context = onnx.checker.C.CheckerContext()
    context.ir_version = 8
    context.opset_imports = {"": opset}
    onnx.checker.check_node(node, context)
    return _ort_session(onnx, _optional("onnxruntime"), node, inputs, opset)


# (opset, coordinate_transformation_mode): RoiAlign-10 has no mode
COORDINATES = [(10, None), (16, "half_pixel"), (16, "output_half_pixel")]
MODES = ["avg", "max"]
RATIOS = [0, 2]
DTYPES = [np.float32, np.float64, np.float16]


# ---- forward: the layer, its node in onnxruntime ---------------------------------------------

@pytest.mark.parametrize("opset,coordinates", COORDINATES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sampling_ratio", RATIOS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_equals_onnxruntime_on_its_node(opset, coordinates, mode, sampling_ratio,
                                                dtype):
    _optional("onnx")  # to_node / from_node build onnx protos
    X, rois, batch_indices = case(dtype, (opset, coordinates, mode, sampling_ratio),
                                  spatial_scale=0.5)
    layer = ponnx.RoiAlign(coordinate_transformation_mode=coordinates, mode=mode,
                           output_height=3, output_width=2, sampling_ratio=sampling_ratio,
                           spatial_scale=0.5, opset=opset)
    output = layer(X, rois, batch_indices)
    # float16: pyroi computes in float32 and rounds once; onnxruntime gives the same bits
    assert_bits_equal(output, ort_run(layer.to_node(), [X, rois, batch_indices], opset))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (2, 40, 30, 30)])
def test_max_forward_with_winners_is_the_same_forward(dtype, shape):
    """Recording the winners changes no output bit."""
    X, rois, batch_indices = case(dtype, ("winners", shape), num_rois=40, shape=shape)
    for threads in (1, 3):
        plain = ponnx.roi_align(X, rois, batch_indices, mode="max", output_height=2,
                                output_width=3, num_threads=threads)
        output, argmax = ponnx.roi_align(X, rois, batch_indices, mode="max", output_height=2,
                                         output_width=3, return_argmax=True,
                                         num_threads=threads)
        assert_bits_equal(output, plain)
        assert argmax.dtype == np.int64 and argmax.shape == output.shape
        assert argmax.min() >= -1


def test_return_argmax_needs_max_mode():
    X, rois, b = case(np.float32, "argmax-avg")
    with pytest.raises(pyroi.InvalidArgumentError, match="max"):
        ponnx.roi_align(X, rois, b, return_argmax=True)


# ---- avg backward: torchvision's autograd ---------------------------------------------------

@pytest.mark.parametrize("opset,coordinates", COORDINATES)
@pytest.mark.parametrize("sampling_ratio", RATIOS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_backward_equals_torchvision_autograd(opset, coordinates, sampling_ratio, dtype):
    torch, torchvision = require_torchvision()
    X, rois, batch_indices = case(dtype, ("avg-grad", opset, coordinates, sampling_ratio),
                                  spatial_scale=0.5)
    layer = ponnx.RoiAlign(coordinate_transformation_mode=coordinates, output_height=3,
                           output_width=2, sampling_ratio=sampling_ratio, spatial_scale=0.5,
                           opset=opset)
    output = layer(X, rois, batch_indices)
    grad_output = np.random.default_rng(1).standard_normal(output.shape).astype(dtype)

    xt = torch.from_numpy(X.copy()).requires_grad_(True)
    boxes = torch.from_numpy(np.concatenate([batch_indices[:, None].astype(dtype), rois], 1))
    yt = torchvision.ops.roi_align(xt, boxes, (3, 2), spatial_scale=0.5,
                                   sampling_ratio=sampling_ratio,
                                   aligned=coordinates == "half_pixel")
    yt.backward(torch.from_numpy(grad_output.copy()))
    assert_bits_equal(output, yt.detach().numpy())
    assert_bits_equal(layer.backward(grad_output), xt.grad.numpy())


# ---- max backward: the independent reference, finite differences, threads ------------------

def _max_layer_gradient(X, rois, batch_indices, grad_output, **attributes):
    layer = ponnx.RoiAlign(mode="max", **attributes)
    layer(X, rois, batch_indices)
    return layer.backward(grad_output)


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("sampling_ratio", RATIOS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_backward_equals_the_reference(aligned, sampling_ratio, dtype):
    X, rois, batch_indices = case(dtype, ("max-ref", aligned, sampling_ratio), num_rois=7,
                                  shape=(2, 2, 6, 7), spatial_scale=0.5)
    mode = "half_pixel" if aligned else "output_half_pixel"
    grad_output = np.random.default_rng(2).standard_normal((7, 2, 2, 3)).astype(dtype)
    expected = onnx_roi_align_max_backward_ref(X, rois, batch_indices, grad_output,
                                               sampling_ratio, 0.5, aligned)
    actual = _max_layer_gradient(X, rois, batch_indices, grad_output, output_height=2,
                                 output_width=3, sampling_ratio=sampling_ratio,
                                 spatial_scale=0.5, coordinate_transformation_mode=mode)
    assert_bits_equal(actual, expected)


@pytest.mark.parametrize("data", ["negative", "nan", "ties", "outside"])
def test_max_backward_rules_equal_the_reference(data):
    """The rules for -0.0, NaN, ties and out-of-map samples, on data that exercises them."""
    X, rois, batch_indices = case(np.float64, ("rules", data), num_rois=8, shape=(1, 2, 5, 5))
    if data == "negative":  # samples on pixels give -0.0 taps that beat the negative ones
        X = -np.abs(X) - 1.0
        rois = np.round(rois)
    elif data == "nan":
        X[0, :, 1::2, ::2] = np.nan
    elif data == "ties":
        X = np.round(X)  # many equal taps
    else:  # RoIs beyond the map: out-of-map samples win (non-finite pixel (0, 0) too)
        X[0, 1, 0, 0] = np.inf
        rois[:4] = rois[:4] + np.array([7.0, -9.0, 7.0, -9.0])
    grad_output = np.random.default_rng(3).standard_normal((8, 2, 2, 2))
    grad_output[0, 0, 0, 0] = np.inf  # g * 0 is NaN: the rule is visible
    for aligned, ratio in itertools.product([True, False], [0, 1, 2]):
        expected = onnx_roi_align_max_backward_ref(X, rois, batch_indices, grad_output, ratio,
                                                   1.0, aligned)
        layer = ponnx.RoiAlign(
            mode="max", output_height=2, output_width=2, sampling_ratio=ratio,
            coordinate_transformation_mode="half_pixel" if aligned else "output_half_pixel")
        with np.errstate(invalid="ignore"):
            layer(X, rois, batch_indices)
        assert_bits_equal(layer.backward(grad_output), expected)


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,channels", [("image", 19), ("region", 19), ("direct", 3)])
def test_winners_of_every_loop_order_give_the_reference_gradient(name, channels, dtype,
                                                                 aligned, kind):
    """Each forward loop order records the winners (test_onnx_orders: the cases provably take
    the order they are named after; "special" data has NaN, +-inf, ties, -0.0 taps and a
    different z per channel); the first 16 RoIs' gradient is the reference's, bit for bit."""
    sampling_ratio = 0 if aligned else 2
    x, boxes, batch = order_case(name, channels, np.dtype(dtype).name, aligned, sampling_ratio,
                                 kind)
    kwargs = order_kwargs(aligned, sampling_ratio)
    with np.errstate(invalid="ignore"):
        output, argmax = ponnx.roi_align(x, boxes, batch, return_argmax=True, **kwargs)
        assert_bits_equal(output, ponnx.roi_align(x, boxes, batch, **kwargs))
    grad_output = np.random.default_rng(7).standard_normal(output[:16].shape).astype(dtype)
    del kwargs["output_height"], kwargs["output_width"]
    for threads in (1, 3):
        actual = ponnx.roi_align_backward(grad_output, boxes[:16], batch[:16], x.shape,
                                          argmax=argmax[:16], num_threads=threads, **kwargs)
        expected = onnx_roi_align_max_backward_ref(x, boxes[:16], batch[:16], grad_output,
                                                   sampling_ratio, SCALE, aligned)
        assert_bits_equal(actual, expected)


def test_max_backward_rules_by_hand():
    """One RoI on a 2 x 2 map [[a, b], [c, d]] with one sample: output_half_pixel puts it at
    the centre (four terms of weight 0.25), half_pixel on pixel (0, 0) (weights 1, 0, 0, 0)."""
    b = np.zeros(1, np.int64)

    def gradient(X, roi, g=1.0, **attributes):
        layer = ponnx.RoiAlign(mode="max", sampling_ratio=1, **attributes)
        with np.errstate(invalid="ignore"):
            layer(np.asarray(X, np.float64).reshape(1, 1, 2, 2), np.array([roi], np.float64), b)
        return layer.backward(np.full((1, 1, 1, 1), g))[0, 0]

    # sample at the centre: four taps of weight 0.25; the largest pixel's term wins
    np.testing.assert_array_equal(gradient([1, 4, 3, 2], [0, 0, 1, 1],
                                           coordinate_transformation_mode="output_half_pixel"),
                                  [[0, 0.25], [0, 0]])
    # ties: all taps equal, the first (top-left) wins
    np.testing.assert_array_equal(gradient([2, 2, 2, 2], [0, 0, 1, 1],
                                           coordinate_transformation_mode="output_half_pixel"),
                                  [[0.25, 0], [0, 0]])
    # NaN first tap: kept, and it takes the gradient
    np.testing.assert_array_equal(gradient([np.nan, 4, 3, 2], [0, 0, 1, 1],
                                           coordinate_transformation_mode="output_half_pixel"),
                                  [[0.25, 0], [0, 0]])
    # a NaN met later never wins
    np.testing.assert_array_equal(gradient([1, np.nan, 3, 2], [0, 0, 1, 1],
                                           coordinate_transformation_mode="output_half_pixel"),
                                  [[0, 0], [0.25, 0]])
    # negative data, sample on pixel (0, 0): -0.0 of a weight-0 tap beats -1 * 1: g * 0 there
    g = gradient([-1, -4, -3, -2], [0, 0, 1, 1], g=-3.0,
                 coordinate_transformation_mode="half_pixel")
    np.testing.assert_array_equal(g, np.zeros((2, 2)))
    # out-of-map sample: term 0 * P[0, 0]; finite g adds nothing, infinite g gives NaN there
    np.testing.assert_array_equal(gradient([1, 4, 3, 2], [5, 5, 6, 6],
                                           coordinate_transformation_mode="output_half_pixel"),
                                  np.zeros((2, 2)))
    g = gradient([1, 4, 3, 2], [5, 5, 6, 6], g=np.inf,
                 coordinate_transformation_mode="output_half_pixel")
    assert np.isnan(g[0, 0]) and not np.isnan(g.ravel()[1:]).any()


def test_max_backward_passes_finite_differences():
    """float64, values far from ties: the winners do not move under the perturbation."""
    rng = np.random.default_rng(stable_seed("finite differences"))
    shape = (2, 2, 6, 7)
    X = rng.permutation(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape) / 10 + 1
    rois = np.array([[0.3, 0.6, 5.2, 4.1], [1.1, 0.2, 3.3, 5.7], [-0.6, 2.2, 6.9, 6.8],
                     [2.5, 1.5, 4.5, 3.5]])
    batch_indices = np.array([0, 1, 1, 0], np.int64)
    grad_output = rng.standard_normal((4, 2, 2, 2))
    attributes = dict(output_height=2, output_width=2, sampling_ratio=2)
    gradient = _max_layer_gradient(X, rois, batch_indices, grad_output, **attributes)

    numeric = central_differences(
        lambda values: ponnx.roi_align(values, rois, batch_indices, mode="max", **attributes),
        X, grad_output)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-7)
    assert np.count_nonzero(gradient) > 10


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_is_identical_for_every_thread_count(mode, dtype):
    X, rois, batch_indices = case(dtype, ("threads", mode), num_rois=60, shape=(2, 19, 12, 13))
    layer = ponnx.RoiAlign(mode=mode, output_height=3, output_width=3)
    output = layer(X, rois, batch_indices)
    grad_output = np.random.default_rng(4).standard_normal(output.shape).astype(dtype)
    first = layer.backward(grad_output, num_threads=1)
    for threads in (2, 3, 8):
        assert_bits_equal(layer.backward(grad_output, num_threads=threads), first)


def test_max_backward_rejects_foreign_winners():
    X, rois, b = case(np.float64, "bad winners", num_rois=3)
    output, argmax = ponnx.roi_align(X, rois, b, mode="max", sampling_ratio=2,
                                     return_argmax=True)
    g = np.ones_like(output)
    for bad in (-2, 4 * 2 * 2):  # below -1; past the 4 taps of the 2 x 2 samples of a bin
        tampered = argmax.copy()
        tampered[0, 0, 0, 0] = bad
        with pytest.raises(pyroi.InvalidArgumentError, match="argmax"):
            ponnx.roi_align_backward(g, rois, b, X.shape, mode="max", argmax=tampered,
                                     sampling_ratio=2)
    with pytest.raises(pyroi.InvalidArgumentError, match="argmax"):
        ponnx.roi_align_backward(g, rois, b, X.shape, mode="max", sampling_ratio=2)
    with pytest.raises(pyroi.InvalidArgumentError, match="argmax"):
        ponnx.roi_align_backward(g, rois, b, X.shape, argmax=argmax, sampling_ratio=2)


def test_winner_codes_that_would_overflow_are_refused():
    """More than 2^61 samples per bin: the codes 4 * s + t cannot be stored."""
    X = np.ones((1, 1, 4, 4), np.float32)
    rois = np.array([[0, 0, 2e9, 2e9]], np.float32)
    b = np.zeros(1, np.int64)
    ponnx.roi_align(X, rois, b, mode="max")  # without winners: fine
    with pytest.raises(pyroi.BoxError):
        ponnx.roi_align(X, rois, b, mode="max", return_argmax=True)


# ---- lda_coeff, training and the strict backward ---------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_lda_coeff_scales_the_gradient_exactly(mode, dtype):
    X, rois, b = case(dtype, ("lda", mode))
    grad_output = None
    gradients = {}
    for coeff in (1.0, 0.3, -2.5):
        layer = ponnx.RoiAlign(mode=mode, output_height=2, output_width=2, lda_coeff=coeff)
        output = layer(X, rois, b)
        if grad_output is None:
            grad_output = np.random.default_rng(5).standard_normal(output.shape).astype(dtype)
        gradients[coeff] = layer.backward(grad_output)
    assert np.count_nonzero(gradients[1.0]) > 0
    if dtype == np.float16:  # scaled in float32, then rounded once (the float32 layer's bits)
        layer = ponnx.RoiAlign(mode=mode, output_height=2, output_width=2)
        layer(X.astype(np.float32), rois.astype(np.float32), b)
        wide = layer.backward(grad_output.astype(np.float32))
        for coeff in (1.0, 0.3, -2.5):
            assert_bits_equal(gradients[coeff], (wide * np.float32(coeff)).astype(np.float16))
        return
    for coeff in (0.3, -2.5):
        assert_bits_equal(gradients[coeff], gradients[1.0] * np.dtype(dtype).type(coeff))


def test_max_roi_pool_layer_gradient_is_torchvision_roi_pool_autograd():
    _optional("onnx")  # to_node / from_node build onnx protos
    torch, torchvision = require_torchvision()
    X, rois, b = case(np.float32, "max roi pool")
    rows = np.concatenate([b[:, None].astype(np.float32), rois], 1)
    layer = ponnx.MaxRoiPool((3, 2), spatial_scale=0.5, lda_coeff=0.25)
    output = layer(X, rows)
    grad_output = np.random.default_rng(6).standard_normal(output.shape).astype(np.float32)
    xt = torch.from_numpy(X.copy()).requires_grad_(True)
    yt = torchvision.ops.roi_pool(xt, torch.from_numpy(rows.copy()), (3, 2), 0.5)
    yt.backward(torch.from_numpy(grad_output.copy()))
    assert_bits_equal(output, yt.detach().numpy())
    assert_bits_equal(layer.backward(grad_output), xt.grad.numpy() * np.float32(0.25))
    assert_bits_equal(output, ort_run(layer.to_node(), [X, rows], 16))


@pytest.mark.parametrize("make", [
    lambda **kw: ponnx.RoiAlign(mode="max", output_height=2, **kw),
    lambda **kw: ponnx.RoiAlign(output_height=2, **kw),
    lambda **kw: ponnx.MaxRoiPool((2, 1), **kw),
])
def test_backward_is_strict(make):
    X, rois, b = case(np.float32, "strict")
    rows = np.concatenate([b[:, None].astype(np.float32), rois], 1)

    def call(layer, boxes=None):
        if isinstance(layer, ponnx.MaxRoiPool):
            return layer(X, rows if boxes is None else np.concatenate([rows[:, :1], boxes], 1))
        return layer(X, rois if boxes is None else boxes, b)

    layer = make()
    with pytest.raises(pyroi.PyroiError, match="training"):
        layer.backward(np.ones((9, 3, 2, 1), np.float32))  # no call yet
    output = call(layer)
    good = np.ones_like(output)
    with pytest.raises(pyroi.ShapeError, match="shape"):
        layer.backward(good[:-1])
    with pytest.raises(pyroi.DTypeError, match="dtype"):
        layer.backward(good.astype(np.float64))
    assert layer.backward(good).shape == X.shape
    # a failed call leaves nothing behind to differentiate
    bad = rois.copy()
    bad[3, 0] = np.nan
    with pytest.raises(pyroi.BoxError):
        call(layer, bad)
    with pytest.raises(pyroi.PyroiError, match="training"):
        layer.backward(good)
    # training=False keeps nothing (max mode records no winners) and refuses backward
    quiet = make(training=False)
    assert_bits_equal(call(quiet), output)
    with pytest.raises(pyroi.PyroiError, match="training"):
        quiet.backward(good)


def test_backward_follows_the_boxes_of_the_call_not_later_changes():
    X, rois, b = case(np.float64, "copies")
    layer = ponnx.RoiAlign(mode="max", output_height=2, output_width=2)
    output = layer(X, rois, b)
    expected = layer.backward(np.ones_like(output))
    rois += 1.0
    b[:] = 0
    assert_bits_equal(layer.backward(np.ones_like(output)), expected)


# ---- attributes, defaults, nodes --------------------------------------------------------------

def test_defaults_are_onnx_defaults():
    layer = ponnx.RoiAlign()
    assert (layer.coordinate_transformation_mode, layer.mode, layer.output_height,
            layer.output_width, layer.sampling_ratio) == ("half_pixel", "avg", 1, 1, 0)
    # ONNX's spatial_scale default is 1.0 (a default of 0 would pool every RoI at the origin)
    assert layer.spatial_scale == 1.0
    assert (layer.training, layer.lda_coeff, layer.name, layer.opset) == (True, 1.0, None, 16)
    assert ponnx.RoiAlign(opset=10).coordinate_transformation_mode is None
    X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    y = layer(X, np.array([[1, 1, 3, 3]], np.float32), np.zeros(1, np.int64))
    assert y[0, 0, 0, 0] == 7.5  # the box's centre (2, 2) - 0.5, not the origin


def test_attributes_are_validated_as_onnx_does():
    with pytest.raises(pyroi.InvalidArgumentError, match="opset"):
        ponnx.RoiAlign(coordinate_transformation_mode="half_pixel", opset=10)
    with pytest.raises(pyroi.InvalidArgumentError, match="coordinate_transformation_mode"):
        ponnx.RoiAlign(coordinate_transformation_mode="align_corners")
    with pytest.raises(pyroi.InvalidArgumentError, match="mode"):
        ponnx.RoiAlign(mode="sum")
    with pytest.raises(pyroi.InvalidArgumentError, match="sampling_ratio"):
        ponnx.RoiAlign(sampling_ratio=-1)
    with pytest.raises(pyroi.PyroiError, match="lda_coeff"):
        ponnx.RoiAlign(lda_coeff="x")
    with pytest.raises(pyroi.PyroiError, match="name"):
        ponnx.RoiAlign(name=3)
    assert ponnx.RoiAlign(mode="MAX").mode == "max"
    assert ponnx.RoiAlign(spatial_scale=0.3).spatial_scale == float(np.float32(0.3))


@pytest.mark.parametrize("opset,coordinates", COORDINATES)
@pytest.mark.parametrize("mode", MODES)
def test_node_round_trip(opset, coordinates, mode):
    _optional("onnx")  # to_node / from_node build onnx protos
    onnx = _optional("onnx")
    layer = ponnx.RoiAlign(coordinate_transformation_mode=coordinates, mode=mode,
                           output_height=7, output_width=5, sampling_ratio=2,
                           spatial_scale=0.0625, name="box_head", opset=opset)
    node = layer.to_node(["features", "proposals", "images"], ["pooled"])
    helper, types = onnx.helper, onnx.TensorProto
    graph = helper.make_graph(
        [node], "detector",
        [helper.make_tensor_value_info("features", types.FLOAT, [2, 3, 7, 9]),
         helper.make_tensor_value_info("proposals", types.FLOAT, ["K", 4]),
         helper.make_tensor_value_info("images", types.INT64, ["K"])],
        [helper.make_tensor_value_info("pooled", types.FLOAT, ["K", 3, 7, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    assert (node.op_type, node.name, list(node.input), list(node.output)) == (
        "RoiAlign", "box_head", ["features", "proposals", "images"], ["pooled"])
    names = {a.name for a in node.attribute}
    assert ("coordinate_transformation_mode" in names) == (opset >= 16)
    again = ponnx.RoiAlign.from_node(node, opset=opset, lda_coeff=0.5, training=False)
    assert repr(again) == repr(layer).replace("training=True, lda_coeff=1.0",
                                              "training=False, lda_coeff=0.5")
    assert again.to_node(["features", "proposals", "images"], ["pooled"]) == node
    # what run_node computes from the node is the layer's forward
    X, rois, b = case(np.float32, ("round trip", opset, coordinates, mode), spatial_scale=0.0625)
    assert_bits_equal(ponnx.run_node(node, X, rois, b, opset=opset), layer(X, rois, b))


def test_from_node_takes_the_opset_defaults_and_validates():
    _optional("onnx")  # to_node / from_node build onnx protos
    onnx = _optional("onnx")
    helper = onnx.helper
    node = helper.make_node("RoiAlign", ["X", "rois", "b"], ["Y"])
    assert repr(ponnx.RoiAlign.from_node(node)) == repr(ponnx.RoiAlign())
    assert ponnx.RoiAlign.from_node(node, opset=10).coordinate_transformation_mode is None
    with pytest.raises(pyroi.InvalidArgumentError, match="op_type"):
        ponnx.RoiAlign.from_node(helper.make_node("MaxRoiPool", ["X", "r"], ["Y"],
                                                  pooled_shape=[1, 1]))
    with pytest.raises(pyroi.InvalidArgumentError, match="domain"):
        ponnx.RoiAlign.from_node(helper.make_node("RoiAlign", ["X", "r", "b"], ["Y"],
                                                  domain="com.example"))
    with pytest.raises(pyroi.InvalidArgumentError, match="attribute"):
        ponnx.RoiAlign.from_node(helper.make_node("RoiAlign", ["X", "r", "b"], ["Y"], foo=1))
    with pytest.raises(pyroi.InvalidArgumentError, match="inputs"):
        ponnx.RoiAlign.from_node(helper.make_node("RoiAlign", ["X", "r"], ["Y"]))
    with pytest.raises(pyroi.ArgumentTypeError):
        ponnx.RoiAlign.from_node("RoiAlign")
    with pytest.raises(pyroi.InvalidArgumentError, match="coordinate_transformation_mode"):
        ponnx.RoiAlign.from_node(helper.make_node(
            "RoiAlign", ["X", "r", "b"], ["Y"], coordinate_transformation_mode="half_pixel"),
            opset=10)
    pool = helper.make_node("MaxRoiPool", ["X", "r"], ["Y"], pooled_shape=[2, 3],
                            spatial_scale=0.5, name="pool")
    layer = ponnx.MaxRoiPool.from_node(pool)
    assert (layer.pooled_shape, layer.spatial_scale, layer.name) == ((2, 3), 0.5, "pool")
    assert layer.to_node(["X", "r"]) == pool
    with pytest.raises(pyroi.InvalidArgumentError, match="pooled_shape"):
        ponnx.MaxRoiPool.from_node(helper.make_node("MaxRoiPool", ["X", "r"], ["Y"]))


def test_layers_are_exported():
    assert {"RoiAlign", "MaxRoiPool", "roi_align_backward"} <= set(ponnx.__all__)


def test_docs_state_the_spatial_scale_default():
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "onnx.md").read_text()
    assert "spatial_scale" in text and "1.0" in text and "origin" in text


def test_reference_forward_still_matches_the_kernel():
    """The reference's winner tracking left its forward unchanged."""
    X, rois, b = case(np.float64, "reference forward")
    expected = onnx_roi_align_max_ref(X, rois, b, 2, 2, 0, 1.0, True)
    assert_bits_equal(ponnx.roi_align(X, rois, b, mode="max", output_height=2, output_width=2),
                      expected)
