"""RoIAlign's box gradient, pyroi.roi_align_backward_boxes (docs/semantics.md §3.8): central
finite differences of pyroi.roi_align in float64 away from kinks, the hand-differentiated
transcription of torchvision's kernel (tests/reference_roi_align_boxes.py) and torch's
autograd through a pure-torch RoIAlign, the clamps (halo, border, legacy size), empty and
inverted boxes, the boxes' forms, thread-count bit-identity, and argument errors."""

import math

import numpy as np
import pytest

import pyroi
from reference_roi_align_boxes import roi_align_boxes_ref

RNG = np.random.default_rng(20261208)


def _map(n=2, c=3, h=9, w=11, dtype=np.float64):
    return RNG.standard_normal((n, c, h, w)).astype(dtype)


def _boxes(k, n, h, w, scale=1.0, margin=1.5):
    """Random (K, 5) boxes reaching a little past the map (samples in the halo too)."""
    x = RNG.uniform(-margin, w / scale + margin, (k, 2))
    y = RNG.uniform(-margin, h / scale + margin, (k, 2))
    return np.column_stack([RNG.integers(0, n, k), x.min(1), y.min(1), x.max(1), y.max(1)])


def _loss(grad, x, boxes, **kw):
    return float(np.sum(grad * pyroi.roi_align(x, boxes, grad.shape[2:], **kw)))


def _central_differences(grad, x, boxes, h=1e-6, **kw):
    fd = np.zeros_like(boxes)
    for k in range(boxes.shape[0]):
        for j in range(1, 5):
            plus, minus = boxes.copy(), boxes.copy()
            plus[k, j] += h
            minus[k, j] -= h
            fd[k, j] = (_loss(grad[k:k + 1], x, plus[k:k + 1], **kw)
                        - _loss(grad[k:k + 1], x, minus[k:k + 1], **kw)) / (2 * h)
    return fd


def _adaptive_grid_is_steady(boxes, pooled, scale, aligned, h):
    """Whether ceil(size / pooled) stays put within +-h of every coordinate."""
    offset = 0.5 if aligned else 0.0
    for row in boxes:
        for first, second, bins in ((row[2], row[4], pooled[0]), (row[1], row[3], pooled[1])):
            size = (second * scale - offset) - (first * scale - offset)
            if not aligned:
                size = max(size, 1.0)
            per_bin = size / bins
            if abs(per_bin - round(per_bin)) < 4 * h * scale / bins + 1e-9:
                return False
    return True


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [2, 3, -1])
def test_central_differences_of_the_forward(aligned, sampling_ratio):
    x = _map()
    scale = 0.8
    boxes = _boxes(6, 2, 9, 11, scale)
    pooled = (2, 3)
    assert sampling_ratio > 0 or _adaptive_grid_is_steady(boxes, pooled, scale, aligned, 1e-6)
    grad = RNG.standard_normal((6, 3) + pooled)
    kw = dict(spatial_scale=scale, sampling_ratio=sampling_ratio, aligned=aligned)
    result = pyroi.roi_align_backward_boxes(grad, x, boxes, **kw)
    fd = _central_differences(grad, x, boxes, **kw)
    assert result.shape == (6, 5) and result.dtype == np.float64
    assert np.all(result[:, 0] == 0)
    np.testing.assert_allclose(result, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [1, 2, 0, -1])
def test_matches_the_transcription_of_torchvision(aligned, sampling_ratio):
    x = _map(c=2, h=7, w=8)
    boxes = _boxes(5, 2, 7, 8, 0.5, margin=3.0)
    grad = RNG.standard_normal((5, 2, 3, 2))
    kw = dict(spatial_scale=0.5, sampling_ratio=sampling_ratio, aligned=aligned)
    result = pyroi.roi_align_backward_boxes(grad, x, boxes, **kw)
    expected = roi_align_boxes_ref(grad, x, boxes, 0.5, sampling_ratio, aligned)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


def _torch_roi_align(torch, x, rois, pooled, scale, sampling_ratio, aligned):
    """RoIAlign in plain torch operations (torchvision's sampler, vectorised per RoI), so that
    autograd differentiates it with respect to rois."""
    _, _, height, width = x.shape
    offset = 0.5 if aligned else 0.0
    outputs = []
    for k in range(rois.shape[0]):
        roi = rois[k]
        n = int(roi[0].item())
        axes = []
        for first, second, bins, extent in ((roi[2], roi[4], pooled[0], height),
                                            (roi[1], roi[3], pooled[1], width)):
            start = first * scale - offset
            size = second * scale - offset - start
            if not aligned:
                size = torch.where(size < 1, torch.ones_like(size), size)
            grid = sampling_ratio if sampling_ratio > 0 else max(
                math.ceil(size.item() / bins), 0)
            steps = (torch.arange(bins, dtype=x.dtype)[:, None]
                     + (torch.arange(grid, dtype=x.dtype)[None, :] + 0.5) / grid)
            position = (start + steps * (size / bins)).reshape(-1)
            inside = (position >= -1) & (position <= extent)
            coord = torch.where(position <= 0, torch.zeros_like(position), position)
            low = torch.floor(coord).long()
            at_end = low >= extent - 1
            low = torch.where(at_end, torch.full_like(low, extent - 1), low)
            high = torch.where(at_end, low, low + 1)
            coord = torch.where(at_end, low.to(x.dtype), coord)
            frac = coord - low.to(x.dtype)
            axes.append((low, high, 1 - frac, frac, inside, grid))
        (yl, yh, hy, ly, yin, gh), (xl, xh, hx, lx, xin, gw) = axes
        if gh == 0 or gw == 0:
            outputs.append(torch.zeros((x.shape[1],) + tuple(pooled), dtype=x.dtype) * roi.sum())
            continue
        plane = x[n]
        value = (hy[:, None] * hx[None, :] * plane[:, yl][:, :, xl]
                 + hy[:, None] * lx[None, :] * plane[:, yl][:, :, xh]
                 + ly[:, None] * hx[None, :] * plane[:, yh][:, :, xl]
                 + ly[:, None] * lx[None, :] * plane[:, yh][:, :, xh])
        value = value * (yin[:, None] & xin[None, :]).to(x.dtype)
        value = value.reshape(x.shape[1], pooled[0], gh, pooled[1], gw)
        outputs.append(value.sum(dim=(2, 4)) / (gh * gw))
    return torch.stack(outputs)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [2, -1])
def test_matches_torch_autograd(aligned, sampling_ratio):
    torch = pytest.importorskip("torch")
    x = _map(c=3, h=10, w=9)
    boxes = _boxes(6, 2, 10, 9, 0.7, margin=2.0)
    pooled = (3, 2)
    grad = RNG.standard_normal((6, 3) + pooled)
    rois = torch.tensor(boxes, requires_grad=True)
    out = _torch_roi_align(torch, torch.tensor(x), rois, pooled, 0.7, sampling_ratio, aligned)
    kw = dict(spatial_scale=0.7, sampling_ratio=sampling_ratio, aligned=aligned)
    np.testing.assert_allclose(out.detach().numpy(), pyroi.roi_align(x, boxes, pooled, **kw),
                               rtol=1e-12, atol=1e-12)
    (out * torch.tensor(grad)).sum().backward()
    expected = rois.grad.numpy().copy()
    expected[:, 0] = 0
    result = pyroi.roi_align_backward_boxes(grad, x, boxes, **kw)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


def test_off_the_map_and_in_the_clamped_ring_give_zero():
    x = _map(n=1, h=8, w=8)
    grad = RNG.standard_normal((3, 3, 2, 2))
    boxes = np.array([[0, 20, 20, 30, 30],          # beyond the halo
                      [0, -30, -30, -20, -20],
                      [0, -0.95, -0.95, -0.5, -0.5]])  # every sample in [-1, 0): clamped
    # legacy: the third box's size is raised to 1, its samples at -0.825 .. -0.075 on both
    # axes; aligned: the same positions once shifted by +0.5
    assert np.all(pyroi.roi_align_backward_boxes(grad, x, boxes, sampling_ratio=2) == 0)
    shifted = boxes + [0, 0.5, 0.5, 0.5, 0.5]
    shifted[2, 3:] = shifted[2, 1:3] + 1.0
    assert np.all(pyroi.roi_align_backward_boxes(grad, x, shifted, sampling_ratio=2,
                                                 aligned=True) == 0)
    # past the last pixel (>= H - 1) the sampler clamps too: samples at 7.35 .. 8.1 (x) and
    # 7.45 .. 8.2 (y) on an 8 x 8 map
    tail = np.array([[0, 7.1, 7.2, 7.9, 7.95]])
    assert np.all(pyroi.roi_align_backward_boxes(grad[:1], x, tail, sampling_ratio=2) == 0)


def test_no_rois():
    x = _map()
    result = pyroi.roi_align_backward_boxes(np.zeros((0, 3, 2, 2)), x, np.zeros((0, 5)))
    assert result.shape == (0, 5) and result.dtype == np.float64
    listed = pyroi.roi_align_backward_boxes(np.zeros((0, 3, 2, 2)), x,
                                            [np.zeros((0, 4)), np.zeros((0, 4))])
    assert [a.shape for a in listed] == [(0, 4), (0, 4)]


def test_legacy_size_clamp_gives_the_far_edge_nothing():
    x = _map(n=1)
    grad = RNG.standard_normal((2, 3, 2, 2))
    boxes = np.array([[0, 1.3, 2.21, 6.7, 2.63],    # 0.42 tall: y2 moves nothing
                      [0, 3.37, 1.1, 3.12, 6.3]])   # inverted in x: raised to 1, x2 nothing
    kw = dict(sampling_ratio=2, aligned=False)
    result = pyroi.roi_align_backward_boxes(grad, x, boxes, **kw)
    assert result[0, 4] == 0 and result[0, 2] != 0
    assert result[1, 3] == 0 and result[1, 1] != 0
    np.testing.assert_allclose(result, _central_differences(grad, x, boxes, **kw),
                               rtol=1e-6, atol=1e-7)


def test_inverted_aligned_boxes():
    x = _map(n=1)
    grad = RNG.standard_normal((1, 3, 2, 2))
    boxes = np.array([[0, 6.3, 5.7, 2.1, 1.9]])
    fixed = dict(sampling_ratio=2, aligned=True)
    np.testing.assert_allclose(pyroi.roi_align_backward_boxes(grad, x, boxes, **fixed),
                               _central_differences(grad, x, boxes, **fixed),
                               rtol=1e-6, atol=1e-7)
    # adaptive: the grid is empty, the forward 0, and so is its gradient
    assert np.all(pyroi.roi_align_backward_boxes(grad, x, boxes, sampling_ratio=-1,
                                                 aligned=True) == 0)


def test_kinks_take_the_cell_the_forward_reads():
    # one sample at y = 2 exactly on a map whose rows rise 0, 1, 4, 9, ...: the slope is the
    # row difference below (9 - 4 = 5), not above (4 - 1)
    x = np.tile((np.arange(6.0) ** 2)[:, None], (1, 1, 1, 6))
    boxes = np.array([[0, 1.5, 1.5, 2.5, 2.5]])   # sample at (2, 2)
    result = pyroi.roi_align_backward_boxes(np.ones((1, 1, 1, 1)), x, boxes, sampling_ratio=1)
    np.testing.assert_array_equal(result, [[0, 0, 2.5, 0, 2.5]])


def test_forms_of_boxes():
    x = _map()
    boxes = _boxes(5, 2, 9, 11)
    boxes[:, 0] = [0, 0, 1, 1, 1]
    grad = RNG.standard_normal((5, 3, 2, 2))
    rows = pyroi.roi_align_backward_boxes(grad, x, boxes, sampling_ratio=2)
    listed = pyroi.roi_align_backward_boxes(grad, x, [boxes[:2, 1:], boxes[2:, 1:]],
                                            sampling_ratio=2)
    flat = pyroi.roi_align_backward_boxes(grad, x, boxes[:, 1:], sampling_ratio=2,
                                          batch_indices=boxes[:, 0].astype(np.int64))
    np.testing.assert_array_equal(np.vstack(listed), rows[:, 1:])
    np.testing.assert_array_equal(flat, rows[:, 1:])


def test_float32_agrees_with_float64():
    x = _map()
    boxes = _boxes(6, 2, 9, 11)
    grad = RNG.standard_normal((6, 3, 2, 2))
    double = pyroi.roi_align_backward_boxes(grad, x, boxes, sampling_ratio=2)
    single = pyroi.roi_align_backward_boxes(grad.astype(np.float32), x.astype(np.float32),
                                            boxes.astype(np.float32), sampling_ratio=2)
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, double, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_identical_for_every_thread_count(dtype):
    x = _map(n=2, c=8, h=24, w=20, dtype=dtype)
    boxes = _boxes(61, 2, 24, 20).astype(dtype)
    grad = RNG.standard_normal((61, 8, 3, 3)).astype(dtype)
    results = [pyroi.roi_align_backward_boxes(grad, x, boxes, 0.9, -1, True, num_threads=t)
               for t in (1, 2, 3)]
    for result in results[1:]:
        assert result.tobytes() == results[0].tobytes()


def test_strided_views_are_read_in_place():
    x = _map()
    boxes = _boxes(4, 2, 9, 11)
    grad = RNG.standard_normal((4, 3, 2, 2))
    expected = pyroi.roi_align_backward_boxes(grad, x, boxes, sampling_ratio=2)
    views = (np.asfortranarray(grad), x.transpose(0, 2, 3, 1).copy().transpose(0, 3, 1, 2),
             np.asfortranarray(boxes))
    np.testing.assert_array_equal(
        pyroi.roi_align_backward_boxes(*views, sampling_ratio=2), expected)


def test_non_finite_boxes_are_refused_as_by_the_forward():
    x = _map()
    grad = np.ones((2, 3, 2, 2))
    for bad in (np.nan, np.inf):
        boxes = np.array([[0, 1, 1, 4, 4], [1, 1, bad, 4, 4]])
        with pytest.raises(pyroi.BoxError, match="boxes") as forward:
            pyroi.roi_align(x, boxes, 2)
        with pytest.raises(pyroi.BoxError, match="boxes") as backward:
            pyroi.roi_align_backward_boxes(grad, x, boxes)
        assert str(backward.value) == str(forward.value)


def test_bad_arguments_name_themselves():
    x = _map()
    boxes = np.array([[0., 1, 1, 4, 4]])
    grad = np.ones((1, 3, 2, 2))
    cases = [
        ((grad[0], x, boxes), {}, pyroi.ShapeError, "grad_output"),
        ((grad, x[0], boxes), {}, pyroi.ShapeError, "input"),
        ((grad, x.astype(np.float32), boxes), {}, pyroi.DTypeError, "input"),
        ((grad.astype(np.float16), x.astype(np.float16), boxes.astype(np.float16)), {},
         pyroi.DTypeError, "float16"),
        ((np.ones((1, 2, 2, 2)), x, boxes), {}, pyroi.ShapeError, "channels"),
        ((np.ones((2, 3, 2, 2)), x, boxes), {}, pyroi.ShapeError, "boxes"),
        ((np.ones((1, 3, 0, 2)), x, boxes), {}, pyroi.InvalidArgumentError, "output size"),
        ((grad, x, np.array([[2., 1, 1, 4, 4]])), {}, pyroi.BatchIndexError, "boxes"),
        ((grad, x, boxes), {"spatial_scale": -1.0}, pyroi.InvalidArgumentError,
         "spatial_scale"),
        ((grad, x, boxes), {"sampling_ratio": 1.5}, pyroi.PyroiError, "sampling_ratio"),
        ((grad, x, boxes), {"num_threads": -2}, pyroi.PyroiError, "num_threads"),
        ((grad, x, boxes), {"aligned": "yes"}, pyroi.PyroiError, "aligned"),
    ]
    for args, kwargs, error, word in cases:
        with pytest.raises(error, match=word):
            pyroi.roi_align_backward_boxes(*args, **kwargs)


# ---- pyroi.torch: roi_align's box gradient through autograd -------------------------------

@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [2, -1])
def test_torch_autograd_gives_the_box_gradient(aligned, sampling_ratio):
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    x = _map(c=3, h=10, w=9)
    boxes = _boxes(6, 2, 10, 9, 0.7, margin=2.0)
    grad = RNG.standard_normal((6, 3, 3, 2))
    input_t = torch.tensor(x, requires_grad=True)
    rois = torch.tensor(boxes, requires_grad=True)
    out = pt.roi_align(input_t, rois, (3, 2), 0.7, sampling_ratio, aligned)
    out.backward(torch.tensor(grad))
    kw = dict(spatial_scale=0.7, sampling_ratio=sampling_ratio, aligned=aligned)
    assert np.array_equal(rois.grad.numpy(), pyroi.roi_align_backward_boxes(grad, x, boxes, **kw))
    assert np.array_equal(input_t.grad.numpy(),
                          pyroi.roi_align_backward(grad, boxes, x.shape, **kw))
    # and it is the derivative: torch's autograd through a pure-torch RoIAlign
    reference = torch.tensor(boxes, requires_grad=True)
    _torch_roi_align(torch, torch.tensor(x), reference, (3, 2), 0.7, sampling_ratio,
                     aligned).backward(torch.tensor(grad))
    expected = reference.grad.numpy().copy()
    expected[:, 0] = 0
    np.testing.assert_allclose(rois.grad.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_torch_gradcheck_through_the_boxes():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    x = torch.tensor(_map(c=2, h=8, w=9), requires_grad=True)
    coords = torch.tensor([[0.3, 0.2, 4.1, 3.3], [1.2, 2.3, 5.5, 4.9]], dtype=torch.float64,
                          requires_grad=True)
    images = torch.tensor([[0.], [1.]], dtype=torch.float64)
    for aligned in (False, True):
        assert torch.autograd.gradcheck(
            lambda a, c: pt.roi_align(a, torch.cat([images, c], 1), (2, 3), 0.9, 2, aligned),
            (x, coords))
    # the list form: each image's (L, 4) tensor gets its rows of the gradient
    parts = [coords[:1].detach().requires_grad_(), coords[1:].detach().requires_grad_()]
    pt.roi_align(x, parts, 2, 0.9, 2, True).sum().backward()
    rows = torch.cat([images, coords.detach()], 1)
    full = pyroi.roi_align_backward_boxes(np.ones((2, 2, 2, 2)), x.detach().numpy(),
                                          rows.numpy(), 0.9, 2, True)
    assert np.array_equal(torch.cat([p.grad for p in parts]).numpy(), full[:, 1:])


def test_torch_boxes_without_grad_get_none_and_the_input_gradient_is_unchanged():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    x = _map(c=3, h=10, w=9).astype(np.float32)
    boxes = _boxes(5, 2, 10, 9).astype(np.float32)
    rois = torch.tensor(boxes)
    input_t = torch.tensor(x, requires_grad=True)
    pt.roi_align(input_t, rois, 2, 1.0, 2, False).sum().backward()
    assert rois.grad is None
    by_hand = pyroi.roi_align_backward(np.ones((5, 3, 2, 2), np.float32), boxes, x.shape,
                                       1.0, 2, False)
    assert np.array_equal(input_t.grad.numpy(), by_hand)
    # boxes alone: the input needs no gradient
    rois = torch.tensor(boxes, requires_grad=True)
    pt.roi_align(torch.tensor(x), rois, 2, 1.0, 2, False).sum().backward()
    assert np.array_equal(rois.grad.numpy(), pyroi.roi_align_backward_boxes(
        np.ones((5, 3, 2, 2), np.float32), x, boxes, 1.0, 2, False))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_torch_half_box_gradient_is_computed_in_float32(name):
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    dtype = getattr(torch, name)
    x = torch.tensor(_map(n=1, c=2, h=6, w=6)).to(dtype)
    rois = torch.tensor([[0, 0.5, 0.75, 3.25, 4.5]], dtype=dtype, requires_grad=True)
    pt.roi_align(x, rois, 2, 1.0, 2, True).float().sum().backward()
    assert rois.grad.dtype == dtype
    expected = pyroi.roi_align_backward_boxes(np.ones((1, 2, 2, 2), np.float32),
                                              x.float().numpy(),
                                              rois.detach().float().numpy(), 1.0, 2, True)
    assert torch.equal(rois.grad, torch.from_numpy(expected).to(dtype))


@pytest.mark.filterwarnings(  # opcheck's own gradient comparison reads a non-leaf's .grad
    "ignore:The .grad attribute of a Tensor that is not a leaf")
def test_torch_opcheck_and_compile_with_box_gradients():
    torch = pytest.importorskip("torch")
    import pyroi.torch as pt
    from torch.library import opcheck
    x = torch.tensor(_map(c=2, h=8, w=9), requires_grad=True)
    rois = torch.tensor([[0, 0.3, 0.2, 4.1, 3.3], [1, 1.2, 2.3, 5.5, 4.9]], dtype=torch.float64,
                        requires_grad=True)
    opcheck(torch.ops.pyroi.roi_align.default, (x, rois, 0.9, 2, 3, 2, True))
    grad = torch.randn(2, 2, 2, 3, dtype=torch.float64)
    opcheck(torch.ops.pyroi._roi_align_backward_boxes.default,
            (grad, rois.detach(), x.detach(), 0.9, 2, True))
    compiled = torch.compile(lambda a, b: pt.roi_align(a, b, (2, 3), 0.9, 2, True),
                             fullgraph=True)
    compiled(x, rois).backward(grad)
    eager = rois.detach().requires_grad_()
    pt.roi_align(x.detach(), eager, (2, 3), 0.9, 2, True).backward(grad)
    assert torch.equal(rois.grad, eager.grad)


# ---- the layer: pyroi.RoIAlign.backward_boxes -----------------------------------------------

def test_layer_backward_boxes():
    x = _map(c=3, h=10, w=9)
    boxes = _boxes(5, 2, 10, 9, 0.7)
    layer = pyroi.RoIAlign((3, 2), 0.7, 2, aligned=True)
    y = layer(x, boxes)
    grad = RNG.standard_normal(y.shape)
    expected = pyroi.roi_align_backward_boxes(grad, x, boxes, 0.7, 2, True)
    assert np.array_equal(layer.backward_boxes(grad, x), expected)
    assert np.array_equal(layer.backward_boxes(grad, x, lda_coeff=0.5), 0.5 * expected)
    # the list form comes back as a list
    parts = [boxes[boxes[:, 0] == i, 1:] for i in range(2)]
    y = layer(x, parts)
    grad = RNG.standard_normal(y.shape)
    result = layer.backward_boxes(grad, x)
    expected = pyroi.roi_align_backward_boxes(grad, x, parts, 0.7, 2, True)
    assert isinstance(result, list) and all(np.array_equal(a, b) for a, b in zip(result, expected))


def test_layer_backward_boxes_refuses_what_it_cannot_do():
    x = _map(c=2, h=6, w=6)
    boxes = _boxes(2, 2, 6, 6)
    layer = pyroi.RoIAlign(2, mode="max")
    y = layer(x, boxes)
    with pytest.raises(pyroi.InvalidArgumentError, match="mode"):
        layer.backward_boxes(np.ones_like(y), x)
    layer = pyroi.RoIAlign(2)
    y = layer(x, boxes)
    with pytest.raises(pyroi.ShapeError, match="input"):
        layer.backward_boxes(np.ones_like(y), x[:1])
    with pytest.raises(pyroi.ShapeError, match="grad_output"):
        layer.backward_boxes(np.ones((1, 2, 2, 2)), x)
    layer.eval()
    layer(x, boxes)
    with pytest.raises(pyroi.PyroiError):
        layer.backward_boxes(np.ones_like(y), x)
