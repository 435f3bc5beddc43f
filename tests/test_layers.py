"""Layer objects: forward equals the function, backward equals lda_coeff times the function's
gradient, training mode keeps what backward needs and nothing else."""

import numpy as np
import pytest

import pyroi


def case(seed=0, channels=8, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, channels, 12, 13)).astype(dtype)
    corner = rng.uniform(-3, 10, (9, 2))
    boxes = np.concatenate([rng.integers(0, 2, (9, 1)), corner,
                            corner + rng.uniform(0.5, 8, (9, 2))], axis=1).astype(dtype)
    return rng, x, boxes


def rotated_rois(boxes):
    centre = (boxes[:, 1:3] + boxes[:, 3:5]) / 2
    size = boxes[:, 3:5] - boxes[:, 1:3]
    angle = np.linspace(-90, 90, len(boxes))[:, None]
    return np.concatenate([boxes[:, :1], centre, size, angle], axis=1).astype(boxes.dtype)


LAYERS = {
    "RoIAlign": (lambda: pyroi.RoIAlign((2, 3), 0.8, 2, True),
                 lambda x, b: pyroi.roi_align(x, b, (2, 3), 0.8, 2, True),
                 lambda g, x, b, extra: pyroi.roi_align_backward(g, b, x.shape, 0.8, 2, True)),
    "RoIAlign-max": (lambda: pyroi.RoIAlign(2, 0.8, 2, False, mode="max"),
                     lambda x, b: pyroi.roi_align(x, b, 2, 0.8, 2, False, mode="max"),
                     lambda g, x, b, extra: pyroi.roi_align_backward(
                         g, b, x.shape, 0.8, 2, False, mode="max",
                         argmax=pyroi.roi_align(x, b, 2, 0.8, 2, False, mode="max",
                                                return_argmax=True)[1])),
    "RoIPool": (lambda: pyroi.RoIPool(2, 0.8),
                lambda x, b: pyroi.roi_pool(x, b, 2, 0.8),
                lambda g, x, b, extra: pyroi.roi_pool_backward(
                    g, b, pyroi.roi_pool(x, b, 2, 0.8, return_argmax=True)[1], x.shape, 2, 0.8)),
    "PSRoIAlign": (lambda: pyroi.PSRoIAlign(2, 0.8, 2),
                   lambda x, b: pyroi.ps_roi_align(x, b, 2, 0.8, 2),
                   lambda g, x, b, extra: pyroi.ps_roi_align_backward(g, b, x.shape, 0.8, 2)),
    "PSRoIPool": (lambda: pyroi.PSRoIPool(2, 0.8),
                  lambda x, b: pyroi.ps_roi_pool(x, b, 2, 0.8),
                  lambda g, x, b, extra: pyroi.ps_roi_pool_backward(g, b, x.shape, 0.8)),
    "RoIAlignRotated": (lambda: pyroi.RoIAlignRotated(2, 0.8, 2),
                        lambda x, b: pyroi.roi_align_rotated(x, rotated_rois(b), 2, 0.8, 2),
                        lambda g, x, b, extra: pyroi.roi_align_rotated_backward(
                            g, rotated_rois(b), x.shape, 0.8, 2)),
}


def layer_boxes(name, boxes):
    return rotated_rois(boxes) if name == "RoIAlignRotated" else boxes


@pytest.mark.parametrize("name", sorted(LAYERS))
@pytest.mark.parametrize("lda_coeff", [1.0, 0.25, -3.0])
def test_layer_equals_functions(name, lda_coeff):
    make, forward, backward = LAYERS[name]
    rng, x, boxes = case()
    layer = make()
    out = layer(x, layer_boxes(name, boxes))
    np.testing.assert_array_equal(out, forward(x, boxes))
    grad = rng.standard_normal(out.shape).astype(out.dtype)
    expected = backward(grad, x, boxes, None) * out.dtype.type(lda_coeff)
    np.testing.assert_array_equal(layer.backward(grad, lda_coeff=lda_coeff), expected)
    assert name.split("-")[0] in repr(layer)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_backward_uses_the_boxes_of_the_call(name):
    make, _, backward = LAYERS[name]
    rng, x, boxes = case(1)
    layer = make()
    given = layer_boxes(name, boxes.copy())
    out = layer(x, given)
    given[:, 1:] += 3.0  # the caller reuses its buffer: backward must not see it
    grad = np.ones_like(out)
    np.testing.assert_array_equal(layer.backward(grad), backward(grad, x, boxes, None))


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_inference_mode_keeps_nothing(name):
    make, _, _ = LAYERS[name]
    _, x, boxes = case(2)
    layer = make()
    layer.training = False
    out = layer(x, layer_boxes(name, boxes))
    with pytest.raises(pyroi.PyroiError, match="training"):
        layer.backward(np.ones_like(out))


def test_batch_indices_form_and_errors():
    _, x, boxes = case(3)
    layer = pyroi.RoIAlign(2, 0.8, 2)
    out = layer(x, boxes[:, 1:], batch_indices=boxes[:, 0].astype(np.int64))
    np.testing.assert_array_equal(out, pyroi.roi_align(x, boxes, 2, 0.8, 2))
    np.testing.assert_array_equal(layer.backward(np.ones_like(out)),
                                  pyroi.roi_align_backward(np.ones_like(out), boxes, x.shape,
                                                           0.8, 2))
    with pytest.raises(pyroi.InvalidArgumentError, match="lda_coeff"):
        layer.backward(np.ones_like(out), lda_coeff=float("inf"))
    with pytest.raises(pyroi.InvalidArgumentError, match="mode"):
        pyroi.RoIAlign(2, mode="median")
    with pytest.raises(pyroi.InvalidArgumentError, match="output_size"):
        pyroi.RoIPool(0)
    with pytest.raises(pyroi.InvalidArgumentError, match="angle"):
        pyroi.RoIAlignRotated(2, angle="turns")


# ---- the saved state: what backward may use, and when it must refuse -----------------------

ALL_LAYERS = sorted(LAYERS) + ["MultiScaleRoIAlign"]


def run_layer(name, layer, x, boxes, cast=lambda b: b):
    """One forward of ``layer`` (a LAYERS entry or a MultiScaleRoIAlign) on ``x``; the boxes
    in the layer's form are passed through ``cast``."""
    if name == "MultiScaleRoIAlign":
        pyramid = {"p2": x, "p3": np.ascontiguousarray(x[:, :, ::2, ::2])}
        per_image = [cast(boxes[boxes[:, 0] == i, 1:]) for i in range(x.shape[0])]
        return layer(pyramid, per_image, [(24, 26)])
    return layer(x, cast(layer_boxes(name, boxes)))


def make_layer(name):
    if name == "MultiScaleRoIAlign":
        return pyroi.MultiScaleRoIAlign(["p2", "p3"], 2, 2)
    return LAYERS[name][0]()


def first_gradient(gradient):
    return gradient["p2"] if isinstance(gradient, dict) else gradient


@pytest.mark.parametrize("name", ALL_LAYERS)
def test_grad_output_of_another_shape_or_dtype_is_rejected(name):
    """Every layer and mode checks grad_output against its forward (shape and dtype) and
    names grad_output and the expected shape; before, the avg / rotated / PS layers returned
    a gradient for a (K, C, 3, 3) grad_output after a 2x2 forward, and max mode blamed an
    argmax the caller never passed."""
    _, x, boxes = case(4)
    layer = make_layer(name)
    out = run_layer(name, layer, x, boxes)
    k, c, ph, pw = out.shape
    for shape in [(k, c, ph + 1, pw + 1), (k, c, ph, pw + 1), (k + 1, c, ph, pw),
                  (k, c + 1, ph, pw), (k, c, ph, pw, 1)]:
        with pytest.raises(pyroi.ShapeError, match=r"grad_output.*\(" + f"{k}, {c}, {ph}, {pw}"):
            layer.backward(np.ones(shape, out.dtype))
    with pytest.raises(pyroi.DTypeError, match="grad_output.*float32"):
        layer.backward(np.ones(out.shape, np.float64))
    with pytest.raises(pyroi.DTypeError, match="grad_output"):
        layer.backward(np.ones(out.shape, np.float16))
    # the layer still works with the right one, and a non-native byte order is the same dtype
    expected = first_gradient(layer.backward(np.ones_like(out)))
    swapped = np.ones(out.shape, out.dtype.newbyteorder(">"))
    np.testing.assert_array_equal(first_gradient(layer.backward(swapped)), expected)


@pytest.mark.parametrize("name", ALL_LAYERS)
def test_a_forward_that_raises_clears_the_saved_state(name):
    _, x, boxes = case(5)
    layer = make_layer(name)
    out = run_layer(name, layer, x, boxes)
    bad = boxes.copy()
    bad[0, 1] = np.nan
    with pytest.raises(pyroi.BoxError):
        run_layer(name, layer, x, bad)
    with pytest.raises(pyroi.PyroiError, match="training"):
        layer.backward(np.ones_like(out))


@pytest.mark.parametrize("name", ALL_LAYERS)
def test_switching_training_off_stops_backward(name):
    _, x, boxes = case(6)
    layer = make_layer(name)
    out = run_layer(name, layer, x, boxes)
    layer.training = False
    with pytest.raises(pyroi.PyroiError, match="training"):
        layer.backward(np.ones_like(out))
    layer.training = True  # what the training call kept was discarded with the switch
    with pytest.raises(pyroi.PyroiError, match="training"):
        layer.backward(np.ones_like(out))
    assert first_gradient(layer.backward(np.ones_like(run_layer(name, layer, x, boxes)))) \
        .shape == x.shape


@pytest.mark.parametrize("name", ALL_LAYERS)
def test_train_and_eval_return_the_layer(name):
    layer = make_layer(name)
    assert layer.training is True
    assert layer.eval() is layer and layer.training is False
    assert layer.train() is layer and layer.training is True
    assert layer.train(False) is layer and layer.training is False
    with pytest.raises(pyroi.ArgumentTypeError, match="training"):
        layer.train("no")


@pytest.mark.parametrize("name", ALL_LAYERS)
def test_saved_state_is_per_thread(name):
    """A layer shared by threads: each thread's backward uses its own last forward (before,
    a few of many calls returned another thread's gradient)."""
    import threading

    layer = make_layer(name)
    cases = [case(10 + t) for t in range(4)]
    expected = []
    for _, x, boxes in cases:
        out = run_layer(name, make_layer(name), x, boxes)
        reference = make_layer(name)
        run_layer(name, reference, x, boxes)
        expected.append(first_gradient(reference.backward(np.ones_like(out))))
    barrier = threading.Barrier(len(cases))
    failures = []

    def work(t):
        _, x, boxes = cases[t]
        for _ in range(25):
            out = run_layer(name, layer, x, boxes)
            barrier.wait()  # every thread has run its forward before any backward
            gradient = first_gradient(layer.backward(np.ones_like(out)))
            if not np.array_equal(gradient, expected[t]):
                failures.append(t)
            barrier.wait()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.parametrize("name", ALL_LAYERS)
def test_a_layer_can_be_copied_and_pickled(name):
    import copy
    import pickle

    _, x, boxes = case(7)
    layer = make_layer(name)
    out = run_layer(name, layer, x, boxes)
    for clone in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
        assert clone.training is True
        with pytest.raises(pyroi.PyroiError, match="training"):  # forward state not copied
            clone.backward(np.ones_like(out))
        again = run_layer(name, clone, x, boxes)
        np.testing.assert_array_equal(again, out)
        assert first_gradient(clone.backward(np.ones_like(again))).shape == x.shape


@pytest.mark.parametrize("name", ALL_LAYERS)
@pytest.mark.parametrize("lda_coeff", [0.1, 3.0, -1.0 / 3.0, 1e-3])
def test_float16_gradient_is_rounded_once(name, lda_coeff):
    """The float16 gradient is the float32 layer's gradient (lda_coeff applied in float32)
    rounded once to float16; before, lda_coeff was applied to the already rounded float16."""
    rng, x, boxes = case(8)
    half, single = make_layer(name), make_layer(name)
    y16 = run_layer(name, half, x.astype(np.float16), boxes, lambda b: b.astype(np.float16))
    y32 = run_layer(name, single, x.astype(np.float16).astype(np.float32), boxes,
                    lambda b: b.astype(np.float16).astype(np.float32))
    assert y16.dtype == np.float16
    np.testing.assert_array_equal(y16, y32.astype(np.float16))
    grad = rng.standard_normal(y16.shape).astype(np.float16)
    g16 = half.backward(grad, lda_coeff=lda_coeff)
    g32 = single.backward(grad.astype(np.float32), lda_coeff=lda_coeff)
    for got, wide in ((g16, g32),) if not isinstance(g16, dict) else \
            ((g16[k], g32[k]) for k in g16):
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, wide.astype(np.float16))


def test_float16_gradient_single_rounding_differs_from_double():
    """A case where rounding twice gives another float16 than rounding once (so the test
    above can fail): lda_coeff = 0.1 applied to a gradient already rounded to float16."""
    rng, x, boxes = case(8)
    layer = pyroi.RoIAlign(2, 0.8, 2, True)
    y = layer(x.astype(np.float16), boxes.astype(np.float16))
    grad = rng.standard_normal(y.shape).astype(np.float16)
    once = layer.backward(grad, lda_coeff=0.1)
    twice = layer.backward(grad) * np.float16(0.1)
    assert not np.array_equal(once, twice)


@pytest.mark.parametrize("name", ALL_LAYERS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_lda_coeff_must_be_finite_in_the_computation_dtype(name, dtype):
    """1e39 is a finite Python float but overflows float32 (the float16 and float32
    computations' dtype) to inf and gave NaN gradients; it is rejected naming lda_coeff."""
    _, x, boxes = case(9)
    layer = make_layer(name)
    out = run_layer(name, layer, x.astype(dtype), boxes.astype(dtype))
    grad = np.ones_like(out)
    for coeff in (float("nan"), float("inf"), 10**400):
        with pytest.raises(pyroi.InvalidArgumentError, match="lda_coeff"):
            layer.backward(grad, lda_coeff=coeff)
    if dtype == np.float64:
        gradient = first_gradient(layer.backward(grad, lda_coeff=1e39))
        assert np.isfinite(gradient).all()
    else:
        with pytest.raises(pyroi.InvalidArgumentError, match="lda_coeff.*float32"):
            layer.backward(grad, lda_coeff=1e39)
        layer.backward(grad, lda_coeff=3e38)  # finite in float32 (the product may overflow)


def test_help_of_multiscale_call_shows_its_signature():
    import inspect
    import pydoc

    call = pyroi.MultiScaleRoIAlign.__call__
    assert call.__name__ == "__call__"
    assert list(inspect.signature(call).parameters) == ["self", "x", "boxes", "image_shapes",
                                                        "num_threads"]
    text = pydoc.render_doc(call)
    assert "_float16" not in text and "Pool every box from its level" in text
    assert "float16" not in pyroi.MultiScaleRoIAlign.backward.__name__
