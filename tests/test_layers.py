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
