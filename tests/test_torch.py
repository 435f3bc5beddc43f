"""pyroi.torch: torchvision.ops' RoI functions and modules on pyroi's kernels, as custom
operators with autograd, checked bit for bit against torchvision (forward, backward, inside
Faster / Mask R-CNN), with gradcheck, opcheck, torch.compile and torch.export."""

import copy
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import pyroi  # noqa: E402
import pyroi.torch as pt  # noqa: E402
from pyroi import _core  # noqa: E402

tv = torchvision.ops


def feature_map(seed, shape=(2, 8, 24, 28), dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)


def random_rois(seed, num_images=2, count=12, height=24, width=28, scale=2.0,
                dtype=torch.float32):
    """(K, 5) rows in image pixels (scale x the map), corners ordered, some past the edges."""
    generator = torch.Generator().manual_seed(seed)
    corners = torch.rand((count, 2, 2), generator=generator, dtype=torch.float64)
    corners = corners * torch.tensor([width, height], dtype=torch.float64) * 1.2 - 2
    first, second = corners.min(dim=1).values, corners.max(dim=1).values
    images = torch.randint(0, num_images, (count, 1), generator=generator).double()
    return torch.cat([images, first * scale, second * scale], dim=1).to(dtype)


def rotated_rois(seed, count=10, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    centre = torch.rand((count, 2), generator=generator, dtype=torch.float64) * 24
    size = torch.rand((count, 2), generator=generator, dtype=torch.float64) * 12 + 1
    angle = torch.rand((count, 1), generator=generator, dtype=torch.float64) * 360 - 180
    images = torch.randint(0, 2, (count, 1), generator=generator).double()
    return torch.cat([images, centre, size, angle], dim=1).to(dtype)


def same_bits(actual, expected):
    """Identical values bit for bit (NaN payloads and signed zeros included)."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    views = {2: torch.int16, 4: torch.int32, 8: torch.int64}
    if actual.is_floating_point():
        size = actual.element_size()
        actual = actual.contiguous().view(views[size])
        expected = expected.contiguous().view(views[size])
    assert torch.equal(actual, expected)


# (pyroi.torch function, torchvision function, extra arguments after output_size)
FUNCTIONS = [
    (pt.roi_align, tv.roi_align, (0.5, -1, False)),
    (pt.roi_align, tv.roi_align, (0.5, 2, True)),
    (pt.roi_align, tv.roi_align, (0.5, 0, True)),
    (pt.roi_pool, tv.roi_pool, (0.5,)),
    (pt.ps_roi_align, tv.ps_roi_align, (0.5, -1)),
    (pt.ps_roi_align, tv.ps_roi_align, (0.5, 2)),
    (pt.ps_roi_pool, tv.ps_roi_pool, (0.5,)),
]
FUNCTION_IDS = ["roi_align", "roi_align_r2_aligned", "roi_align_r0_aligned", "roi_pool",
                "ps_roi_align", "ps_roi_align_r2", "ps_roi_pool"]


@pytest.mark.parametrize("ours, theirs, extra", FUNCTIONS, ids=FUNCTION_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_and_backward_bits_equal_torchvision(ours, theirs, extra, dtype):
    x = feature_map(1, dtype=dtype).requires_grad_()
    rois = random_rois(2, dtype=dtype)
    mine = ours(x, rois, (2, 3) if "ps" not in ours.__name__ else 2, *extra)
    reference = theirs(x, rois, (2, 3) if "ps" not in ours.__name__ else 2, *extra)
    same_bits(mine, reference)
    grad = torch.randn(mine.shape, dtype=dtype, generator=torch.Generator().manual_seed(3))
    (gx_mine,) = torch.autograd.grad(mine, x, grad)
    (gx_reference,) = torch.autograd.grad(reference, x, grad)
    same_bits(gx_mine, gx_reference)


@pytest.mark.parametrize("ours, theirs, extra", FUNCTIONS, ids=FUNCTION_IDS)
def test_lists_of_boxes_and_non_contiguous_inputs(ours, theirs, extra):
    base = feature_map(4, shape=(2, 30, 28, 8)).requires_grad_()
    x = base.permute(0, 3, 1, 2)[:, :, 2:, 1:]  # channels last, sliced: (2, 8, 28, 29)...
    assert not x.is_contiguous()
    rois = random_rois(5)
    boxes = [rois[rois[:, 0] == i, 1:] for i in range(2)]
    output_size = 2 if "ps" in ours.__name__ else (3, 2)
    mine = ours(x, boxes, output_size, *extra)
    reference = theirs(x.contiguous(), boxes, output_size, *extra)
    same_bits(mine, reference)
    grad = torch.randn(mine.shape, generator=torch.Generator().manual_seed(6)).permute(
        0, 1, 3, 2).contiguous().permute(0, 1, 3, 2)  # a non-contiguous output gradient too
    (gx_mine,) = torch.autograd.grad(mine, base, grad)
    (gx_reference,) = torch.autograd.grad(reference, base, grad)
    same_bits(gx_mine, gx_reference)


def test_empty_list_of_boxes():
    x = feature_map(7)
    assert pt.roi_align(x, [], 3).shape == (0, 8, 3, 3)
    assert pt.roi_align(x, [torch.zeros((0, 4)), torch.zeros((0, 4))], 3).shape == (0, 8, 3, 3)


def test_roi_align_rotated_equals_pyroi():
    x = feature_map(8, dtype=torch.float64).requires_grad_()
    rois = rotated_rois(9, dtype=torch.float64)
    y = pt.roi_align_rotated(x, rois, (3, 2), 0.5, 2)
    expected = pyroi.roi_align_rotated(x.detach().numpy(), rois.numpy(), (3, 2), 0.5, 2)
    np.testing.assert_array_equal(y.detach().numpy(), expected)
    grad = torch.randn(y.shape, dtype=torch.float64)
    (gx,) = torch.autograd.grad(y, x, grad)
    np.testing.assert_array_equal(gx.numpy(), pyroi.roi_align_rotated_backward(
        grad.numpy(), rois.numpy(), x.shape, 0.5, 2))
    as_list = [rois[rois[:, 0] == i, 1:] for i in range(2)]
    radians = pt.roi_align_rotated(x, as_list, 2, 0.5, 1, False, True, angle="radians")
    np.testing.assert_array_equal(radians.detach().numpy(), pyroi.roi_align_rotated(
        x.detach().numpy(), [r.numpy() for r in as_list], 2, 0.5, 1, False, True,
        angle="radians"))


GRADCHECK = [
    lambda x, r: pt.roi_align(x, r, (2, 3), 0.5, 2, True),
    lambda x, r: pt.roi_align(x, r, 2, 0.5, -1, False),
    lambda x, r: pt.roi_pool(x, r, (2, 3), 0.5),
    lambda x, r: pt.ps_roi_align(x, r, 2, 0.5, 2),
    lambda x, r: pt.ps_roi_pool(x, r, 2, 0.5),
    lambda x, r: pt.roi_align_rotated(x, rotated_rois(10, 4, torch.float64)
                                        * torch.tensor([1, 0.3, 0.3, 0.3, 0.3, 1]), 2, 1.0, 2),
]


@pytest.mark.parametrize("function", GRADCHECK,
                         ids=["roi_align", "roi_align_adaptive", "roi_pool", "ps_roi_align",
                              "ps_roi_pool", "roi_align_rotated"])
def test_gradcheck_float64(function):
    x = feature_map(11, shape=(2, 4, 6, 7), dtype=torch.float64).requires_grad_()
    rois = random_rois(12, count=4, height=6, width=7, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda v: function(v, rois), (x,), fast_mode=True)


def op_cases():
    x = feature_map(13, shape=(2, 8, 10, 12)).requires_grad_()
    rois = random_rois(14, count=5, height=10, width=12)
    return [
        (torch.ops.pyroi.roi_align, (x, rois, 0.5, 2, 3, 2, True)),
        (torch.ops.pyroi.roi_align, (x.double(), rois.double(), 0.5, 2, 3, -1, False)),
        (torch.ops.pyroi.roi_align, (x.double(), rois.double(), 0.5, 2, 3, 0, False, False)),
        (torch.ops.pyroi.roi_pool, (x, rois, 0.5, 2, 3)),
        (torch.ops.pyroi.ps_roi_align, (x, rois, 0.5, 2, 2, 2)),
        (torch.ops.pyroi.ps_roi_pool, (x, rois, 0.5, 2, 2)),
        (torch.ops.pyroi.roi_align_rotated,
         (x, rotated_rois(15, 4), 0.5, 2, 3, 2, True, False, "degrees")),
        (torch.ops.pyroi._roi_align_backward,
         (torch.randn(5, 8, 2, 3), rois, 0.5, 2, 3, 2, 8, 10, 12, 2, True)),
        (torch.ops.pyroi._roi_align_backward,
         (torch.randn(5, 8, 2, 3), rois, 0.5, 2, 3, 2, 8, 10, 12, 0, True, False)),
        (torch.ops.pyroi._ps_roi_align_backward,
         (torch.randn(5, 2, 2, 2), rois, 0.5, 2, 2, 2, 2, 8, 10, 12)),
        (torch.ops.pyroi._ps_roi_pool_backward,
         (torch.randn(5, 2, 2, 2), rois, 0.5, 2, 2, 2, 8, 10, 12)),
        (torch.ops.pyroi._roi_align_rotated_backward,
         (torch.randn(4, 8, 2, 3), rotated_rois(15, 4), 0.5, 2, 3, 2, 8, 10, 12, 2, True, False,
          "degrees")),
        (torch.ops.pyroi.roi_pool_values, (x, rois, 0.5, 2, 3)),
        (torch.ops.pyroi._roi_pool_backward_from_input,
         (torch.randn(5, 8, 2, 3), rois, x.detach(), 0.5, 2, 3)),
        (torch.ops.pyroi.multi_scale_roi_align, pyramid_op_args(x)),
        (torch.ops.pyroi._multi_scale_roi_align_backward,
         (torch.randn(5, 8, 2, 3), rois, [1.0, 0.5], [2, 8, 20, 24, 2, 8, 10, 12], 2, 3, 4,
          224.0, 4.0, 1e-6)),
    ]


def pyramid_op_args(x):
    """Arguments of torch.ops.pyroi.multi_scale_roi_align: a two-level pyramid whose finer
    level is x upsampled, RoIs on both levels (min_level 3, max_level 4, canonical_scale 8)."""
    fine = torch.nn.functional.interpolate(x.detach(), scale_factor=2).requires_grad_()
    rois = random_rois(14, count=5, height=10, width=12)
    return ([fine, x], rois, [1.0, 0.5], 2, 3, 2, 3, 4, 8.0, 4.0, 1e-6)


# opcheck's own comparison of gradients reads .grad of a non-leaf tensor (a torch warning)
OPCHECK_WARNING = "ignore:The .grad attribute of a Tensor that is not a leaf"


@pytest.mark.filterwarnings(OPCHECK_WARNING)
@pytest.mark.parametrize("index", range(16))
def test_opcheck(index):
    op, args = op_cases()[index]
    torch.library.opcheck(op, args)


@pytest.mark.filterwarnings(OPCHECK_WARNING)
def test_multi_scale_gradcheck_float64():
    x = feature_map(11, shape=(2, 3, 6, 7), dtype=torch.float64).requires_grad_()
    fine = feature_map(12, shape=(2, 3, 12, 14), dtype=torch.float64).requires_grad_()
    rois = random_rois(12, count=6, height=6, width=7, dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda a, b: torch.ops.pyroi.multi_scale_roi_align([a, b], rois, [1.0, 0.5], 2, 2, 2,
                                                           3, 4, 8.0, 4.0, 1e-6),
        (fine, x), fast_mode=True)


def test_opcheck_roi_pool_backward():
    x = feature_map(16, shape=(2, 8, 10, 12))
    rois = random_rois(17, count=5, height=10, width=12)
    _, argmax = torch.ops.pyroi.roi_pool(x, rois, 0.5, 2, 3)
    torch.library.opcheck(torch.ops.pyroi._roi_pool_backward,
                          (torch.randn(5, 8, 2, 3), rois, argmax, 0.5, 2, 3, 2, 8, 10, 12))


def test_ops_take_torchvisions_arguments():
    """torchvision's argument list, then only arguments with defaults (roi_align's exact)."""
    for name in ("roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"):
        ours = getattr(torch.ops.pyroi, name).default._schema.arguments
        theirs = getattr(torch.ops.torchvision, name).default._schema.arguments
        assert [(a.name, str(a.type)) for a in ours[:len(theirs)]] == \
            [(a.name, str(a.type)) for a in theirs]
        assert all(a.has_default_value() for a in ours[len(theirs):])
    assert [a.name for a in torch.ops.pyroi.roi_align.default._schema.arguments][-1] == "exact"


class Heads(torch.nn.Module):
    """One of each pyroi.torch module."""

    def __init__(self):
        super().__init__()
        self.align = pt.RoIAlign((2, 3), 0.5, 2, aligned=True)
        self.pool = pt.RoIPool(2, 0.5)
        self.ps_align = pt.PSRoIAlign(2, 0.5, 2)
        self.ps_pool = pt.PSRoIPool(2, 0.5)
        self.rotated = pt.RoIAlignRotated(2, 0.5, 2)

    def forward(self, x, rois, rotated):
        return (self.align(x, rois).sum() + self.pool(x, rois).sum()
                + self.ps_align(x, rois).sum() + self.ps_pool(x, rois).sum()
                + self.rotated(x, rotated).sum() + self.pyramid(x, rois).sum())

    @staticmethod
    def pyramid(x, rois):
        fine = torch.nn.functional.interpolate(x, scale_factor=2)
        return torch.ops.pyroi.multi_scale_roi_align([fine, x], rois, [1.0, 0.5], 2, 3, 2, 3, 4,
                                                     8.0, 4.0, 1e-6)


def test_torch_compile_fullgraph():
    torch._dynamo.reset()
    heads = Heads()
    x = feature_map(18, shape=(2, 8, 10, 12)).requires_grad_()
    rois, rotated = random_rois(19, count=5, height=10, width=12), rotated_rois(20, 4)
    compiled = torch.compile(heads, fullgraph=True, backend="aot_eager")
    expected = heads(x, rois, rotated)
    actual = compiled(x, rois, rotated)
    same_bits(actual, expected)
    (g_actual,) = torch.autograd.grad(actual, x)
    (g_expected,) = torch.autograd.grad(expected, x)
    same_bits(g_actual, g_expected)


def test_torch_export():
    heads = Heads()
    x = feature_map(21, shape=(2, 8, 10, 12))
    rois, rotated = random_rois(22, count=5, height=10, width=12), rotated_rois(23, 4)
    exported = torch.export.export(heads, (x, rois, rotated))
    targets = {str(node.target) for node in exported.graph.nodes if node.op == "call_function"}
    # no gradient is asked for: RoIPool's values alone, without an argmax
    for name in ("roi_align", "roi_pool_values", "ps_roi_align", "ps_roi_pool",
                 "roi_align_rotated", "multi_scale_roi_align"):
        assert f"pyroi.{name}.default" in targets
    same_bits(exported.module()(x, rois, rotated), heads(x, rois, rotated))


@pytest.mark.parametrize("ours, theirs, args", [
    (pt.RoIAlign, tv.RoIAlign, ((7, 7), 0.25, 2)),
    (pt.RoIAlign, tv.RoIAlign, (14, 1.0, -1, True)),
    (pt.RoIPool, tv.RoIPool, (7, 0.0625)),
    (pt.PSRoIAlign, tv.PSRoIAlign, (3, 0.5, 2)),
    (pt.PSRoIPool, tv.PSRoIPool, (3, 0.5)),
    (pt.MultiScaleRoIAlign, tv.MultiScaleRoIAlign, (["0", "1"], 7, 2)),
])
def test_modules_repr_and_results_as_torchvision(ours, theirs, args):
    assert repr(ours(*args)) == repr(theirs(*args))
    if ours is pt.MultiScaleRoIAlign:
        return
    x = feature_map(24, shape=(2, 9 * 4, 20, 22))
    rois = random_rois(25, height=20, width=22)
    same_bits(ours(*args)(x, rois), theirs(*args)(x, rois))


def test_roi_align_rotated_module_repr_as_pyroi_layer():
    assert repr(pt.RoIAlignRotated(7, 0.5)) == repr(pyroi.RoIAlignRotated(7, 0.5))


def pyramid(seed, dtype=torch.float32):
    return {name: feature_map(seed + i, shape=(2, 4, 64 >> i, 48 >> i), dtype=dtype)
            .requires_grad_() for i, name in enumerate(["0", "1", "2", "pool"])}


def pyramid_boxes(seed):
    rois = random_rois(seed, count=40, height=64, width=48, scale=4.0)
    rois[:5, 3:] = rois[:5, 1:3] + 1  # tiny boxes: the finest level
    return [rois[rois[:, 0] == i, 1:] for i in range(2)]


def test_multiscale_roi_align_bits_equal_torchvision():
    ours = pt.MultiScaleRoIAlign(["0", "1", "2"], (7, 5), 2)
    theirs = tv.MultiScaleRoIAlign(["0", "1", "2"], (7, 5), 2)
    features, boxes = pyramid(26), pyramid_boxes(27)
    mine = ours(features, boxes, [(256, 192), (250, 180)])
    reference = theirs(features, boxes, [(256, 192), (250, 180)])
    assert ours.scales == theirs.scales
    assert vars(ours.map_levels) == vars(theirs.map_levels)
    same_bits(mine, reference)
    grad = torch.randn(mine.shape)
    levels = [features[n] for n in ("0", "1", "2")]
    for g_mine, g_reference in zip(torch.autograd.grad(mine, levels, grad),
                                   torch.autograd.grad(reference, levels, grad)):
        same_bits(g_mine, g_reference)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_multiscale_strided_pyramid_bits_equal_torchvision(dtype):
    """Channels-last and sliced levels, float32 and float64: forward and every level's
    gradient as torchvision's."""
    features = {name: (value.detach().to(memory_format=torch.channels_last) if i % 2 else
                       value.detach()[:, :, :, :].transpose(2, 3).contiguous().transpose(2, 3))
                .to(dtype).requires_grad_()
                for i, (name, value) in enumerate(pyramid(30).items())}
    boxes = [b.to(dtype) for b in pyramid_boxes(31)]
    ours = pt.MultiScaleRoIAlign(["0", "1", "2"], 4, -1)
    theirs = tv.MultiScaleRoIAlign(["0", "1", "2"], 4, -1)
    mine = ours(features, boxes, [(256, 192), (256, 192)])
    reference = theirs(features, boxes, [(256, 192), (256, 192)])
    same_bits(mine, reference)
    grad = torch.randn(mine.shape, dtype=dtype)
    levels = [features[n] for n in ("0", "1", "2")]
    for g_mine, g_reference in zip(torch.autograd.grad(mine, levels, grad),
                                   torch.autograd.grad(reference, levels, grad)):
        same_bits(g_mine, g_reference)


def test_multiscale_is_one_c_call_each_way_without_copies(monkeypatch):
    """A float32 pyramid is pooled by one C call forward and one backward (no per-level
    calls), which read the levels and the output gradient and write the output and the
    levels' gradients in the tensors' own memory."""
    seen = {}

    def spy(name):
        original = getattr(_core, name)

        def record(*args):
            seen.setdefault(name, []).append(args)
            return original(*args)

        monkeypatch.setattr(_core, name, record)

    for name in ("roi_align_levels_forward", "roi_align_levels_backward", "roi_align_forward",
                 "roi_align_backward"):
        spy(name)
    features = pyramid(32)
    levels = [features[n] for n in ("0", "1", "2")]
    pooler = pt.MultiScaleRoIAlign(["0", "1", "2"], 3, 2)
    y = pooler(features, pyramid_boxes(33), [(256, 192)])
    grad = torch.randn(y.shape)
    gradients = torch.autograd.grad(y, levels, grad)
    assert sorted(seen) == ["roi_align_levels_backward", "roi_align_levels_forward"]
    assert [len(calls) for calls in seen.values()] == [1, 1]
    address = lambda a: a.__array_interface__["data"][0]  # noqa: E731
    maps, _, _, _, output = seen["roi_align_levels_forward"][0][:5]
    assert [address(m) for m in maps] == [level.data_ptr() for level in levels]
    assert address(output) == y.data_ptr()
    grad_seen, _, _, grad_maps = seen["roi_align_levels_backward"][0][:4]
    assert address(grad_seen) == grad.data_ptr()
    assert [address(m) for m in grad_maps] == [g.data_ptr() for g in gradients]


class _PoolerModule(torch.nn.Module):
    """torchvision's ONNX test of MultiScaleRoIAlign (test/test_onnx.py,
    test_multi_scale_roi_align): levels of 64 and 16 px on 512 px images, scales 1/8 and 1/32,
    so level 4 has no map."""

    def __init__(self, names=("feat1", "feat2")):
        super().__init__()
        self.model = tv.MultiScaleRoIAlign(list(names), 3, 2)
        self.image_sizes = [(512, 512)]

    def forward(self, features, boxes):
        return self.model(features, boxes, self.image_sizes)


def _onnx_test_inputs(seed):
    generator = torch.Generator().manual_seed(seed)
    features = {"feat1": torch.rand(1, 5, 64, 64, generator=generator).requires_grad_(),
                "feat2": torch.rand(1, 5, 16, 16, generator=generator).requires_grad_()}
    boxes = torch.rand(6, 4, generator=generator) * 256
    boxes[:, 2:] += boxes[:, :2]
    return features, [boxes]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_converted_pooler_of_a_pyramid_that_skips_a_level_gives_torchvision_bits(dtype):
    """torchvision's ONNX test module, converted: both of its inputs (the second call reuses
    the scales the first inferred), forward bits and every level's gradient; plus boxes that
    reach the missing level (zero rows)."""
    theirs = _PoolerModule()
    ours = pt.convert(copy.deepcopy(theirs))
    assert isinstance(ours.model, pt.MultiScaleRoIAlign)
    for seed in (0, 1, 2):
        features, boxes = _onnx_test_inputs(seed)
        if seed == 2:  # large boxes: level 5 (no map at its position) and level 4 (feat2)
            boxes = [torch.tensor([[0.0, 0.0, 500.0, 500.0], [10.0, 10.0, 300.0, 310.0],
                                   [0.0, 0.0, 40.0, 30.0]])]
        features = {name: value.detach().to(dtype).requires_grad_()
                    for name, value in features.items()}
        boxes = [b.to(dtype) for b in boxes]
        expected = theirs(features, boxes)
        if seed == 0:
            with pytest.warns(pyroi.PyramidLevelsWarning, match="level"):
                mine = ours(features, boxes)
        else:
            mine = ours(features, boxes)
        assert ours.model.scales == theirs.model.scales == [0.125, 0.03125]
        same_bits(mine, expected)
        if seed == 2:
            assert not mine[0].any() and mine[1].any()
        grad = torch.randn(mine.shape, generator=torch.Generator().manual_seed(seed)).to(dtype)
        levels = list(features.values())
        for g_mine, g_reference in zip(torch.autograd.grad(mine, levels, grad),
                                       torch.autograd.grad(expected, levels, grad)):
            same_bits(g_mine, g_reference)


def test_multiscale_strict_levels_refuses_a_pyramid_that_skips_a_level():
    features, boxes = _onnx_test_inputs(0)
    pooler = pt.MultiScaleRoIAlign(["feat1", "feat2"], 3, 2, strict_levels=True)
    with pytest.raises(pyroi.ShapeError, match="strict_levels"):
        pooler(features, boxes, [(512, 512)])


def test_multiscale_levels_must_agree():
    pooler = pt.MultiScaleRoIAlign(["0", "1"], 2, 2)
    boxes = [torch.tensor([[0.0, 0.0, 20.0, 20.0]])]
    with pytest.raises(pyroi.ShapeError, match="level 1 has \\(N, C\\) \\(1, 3\\)"):
        pooler({"0": torch.zeros(1, 4, 16, 16), "1": torch.zeros(1, 3, 8, 8)}, boxes,
               [(64, 64)])
    with pytest.raises(pyroi.DTypeError, match="level 1 has dtype torch.float64"):
        pooler({"0": torch.zeros(1, 4, 16, 16), "1": torch.zeros(1, 4, 8, 8).double()}, boxes,
               [(64, 64)])


def test_multiscale_box_of_no_level_is_zeros():
    """A box of negative area belongs to no level: its row is zeros, also when the result
    reuses memory of an earlier result (pyroi's result cache)."""
    features = {"0": feature_map(44, shape=(1, 256, 16, 16)),
                "1": feature_map(45, shape=(1, 256, 8, 8))}
    boxes = random_rois(46, num_images=1, count=20, height=16, width=16, scale=4.0)[:, 1:]
    ours = pt.MultiScaleRoIAlign(["0", "1"], 8, 2)
    theirs = tv.MultiScaleRoIAlign(["0", "1"], 8, 2)
    ours(features, [boxes], [(64, 64)])  # a result of the same size, all rows written, freed
    inverted = boxes.clone()
    inverted[3, 2] = inverted[3, 0] - 5
    expected = theirs(features, [inverted], [(64, 64)])
    assert not expected[3].any()
    same_bits(ours(features, [inverted], [(64, 64)]), expected)


def test_convert_replaces_torchvision_modules_in_place():
    theirs = tv.MultiScaleRoIAlign(["0", "1", "2"], 3, 2, canonical_scale=112)
    features, boxes = pyramid(28), pyramid_boxes(29)
    theirs(features, boxes, [(256, 192)])  # infers the scales from this image size
    model = torch.nn.Sequential(
        tv.RoIAlign(3, 0.5, 2, True), tv.RoIPool(3, 0.5),
        torch.nn.ModuleDict({"ps": tv.PSRoIAlign(2, 0.5, 1), "pool": tv.PSRoIPool(2, 0.5),
                             "multi": theirs}),
        torch.nn.Conv2d(1, 1, 1))
    model[1].eval()
    conv = model[3]
    converted = pt.convert(model)
    assert converted is model and model[3] is conv
    kinds = [type(model[0]), type(model[1]), type(model[2]["ps"]), type(model[2]["pool"]),
             type(model[2]["multi"])]
    assert kinds == [pt.RoIAlign, pt.RoIPool, pt.PSRoIAlign, pt.PSRoIPool, pt.MultiScaleRoIAlign]
    assert repr(model[0]) == "RoIAlign(output_size=3, spatial_scale=0.5, sampling_ratio=2, " \
                             "aligned=True)"
    assert model[0].training and not model[1].training
    mine = model[2]["multi"]
    assert mine.canonical_scale == 112 and mine.scales == theirs.scales
    assert vars(mine.map_levels) == vars(theirs.map_levels)
    # the scales inferred from (256, 192) are kept: a larger image now changes nothing
    same_bits(mine(features, boxes, [(1024, 1024)]), theirs(features, boxes, [(1024, 1024)]))


def test_convert_returns_the_replacement_of_a_top_level_module_and_skips_subclasses():
    assert type(pt.convert(tv.RoIAlign(2, 1.0, 2))) is pt.RoIAlign

    class Custom(tv.RoIAlign):
        pass

    custom = Custom(2, 1.0, 2)
    assert pt.convert(custom) is custom


def test_zero_copies_for_contiguous_float32(monkeypatch):
    """The feature map, the boxes and the output gradient reach the C core as views of the
    tensors' memory, and the results are tensors over the memory the C core wrote."""
    seen = {}

    def spy(name):
        original = getattr(_core, name)

        def record(*args):
            seen[name] = args
            return original(*args)

        monkeypatch.setattr(_core, name, record)

    spy("roi_align_forward")
    spy("roi_align_backward")
    x = feature_map(30, shape=(2, 16, 40, 40)).requires_grad_()
    rois = random_rois(31, count=50, height=40, width=40)
    y = pt.roi_align(x, rois, 7, 0.5, 2)
    features, coords, _, result = seen["roi_align_forward"][:4]
    address = lambda a: a.__array_interface__["data"][0]  # noqa: E731
    assert address(features) == x.data_ptr()
    assert address(coords) == rois.data_ptr() + rois.element_size()  # columns 1..4 of rois
    assert address(result) == y.data_ptr()
    grad = torch.ones_like(y)
    (gx,) = torch.autograd.grad(y, x, grad)
    grad_seen, _, _, grad_input = seen["roi_align_backward"][:4]
    assert address(grad_seen) == grad.data_ptr() and address(grad_input) == gx.data_ptr()


def test_thread_count_is_torchs(monkeypatch):
    counts = []
    original = _core.roi_align_forward
    monkeypatch.setattr(_core, "roi_align_forward",
                        lambda *args: counts.append(args[10]) or original(*args))  # num_threads
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        pt.roi_align(feature_map(32), random_rois(33), 2)
    finally:
        torch.set_num_threads(previous)
    pt.roi_align(feature_map(32), random_rois(33), 2)
    assert counts == [1, previous]


@pytest.mark.parametrize("ours, theirs, extra", FUNCTIONS[:1] + FUNCTIONS[3:5],
                         ids=["roi_align", "roi_pool", "ps_roi_align"])
def test_float16_as_pyroi_and_bfloat16_rounded_once(ours, theirs, extra):
    x = feature_map(34)
    rois = random_rois(35)
    size = 2
    half = ours(x.half(), rois.half(), size, *extra)
    numpy_function = getattr(pyroi, ours.__name__)
    expected = numpy_function(x.half().numpy(), rois.half().numpy(), size, *extra)
    assert half.dtype == torch.float16
    np.testing.assert_array_equal(half.numpy(), expected)
    xb = x.bfloat16().requires_grad_()
    rb = rois.bfloat16()
    brain = ours(xb, rb, size, *extra)
    wide = ours(xb.detach().float(), rb.float(), size, *extra)
    assert brain.dtype == torch.bfloat16
    same_bits(brain, wide.to(torch.bfloat16))
    grad = torch.randn(brain.shape).bfloat16()
    (gx,) = torch.autograd.grad(brain, xb, grad)
    xf = xb.detach().float().requires_grad_()
    (gx_wide,) = torch.autograd.grad(ours(xf, rb.float(), size, *extra), xf, grad.float())
    same_bits(gx, gx_wide.to(torch.bfloat16))


def test_other_devices_go_to_torchvision():
    x = torch.empty((2, 8, 10, 12), device="meta")
    rois = torch.empty((5, 5), device="meta")
    for ours in (pt.roi_align, pt.roi_pool, pt.ps_roi_align, pt.ps_roi_pool):
        y = ours(x, rois, 2)
        assert y.device.type == "meta" and y.shape[0] == 5 and y.shape[2:] == (2, 2)
    assert pt.RoIAlign(2, 1.0, 2)(x, [torch.empty((3, 4), device="meta")]).shape == (3, 8, 2, 2)


def test_other_devices_without_torchvision_raise_naming_the_device(monkeypatch):
    monkeypatch.setattr(pt, "_torchvision", lambda: None)
    x = torch.empty((2, 8, 10, 12), device="meta")
    with pytest.raises(pyroi.InvalidArgumentError, match="device meta"):
        pt.roi_align(x, torch.empty((5, 5), device="meta"), 2)
    with pytest.raises(pyroi.InvalidArgumentError, match="device meta"):
        pt.MultiScaleRoIAlign(["0"], 2, 2)({"0": x}, [torch.empty((3, 4), device="meta")],
                                           [(20, 24)])


def test_roi_align_rotated_on_another_device_raises_naming_it():
    x = torch.empty((2, 8, 10, 12), device="meta")
    with pytest.raises(pyroi.InvalidArgumentError, match="device meta"):
        pt.roi_align_rotated(x, torch.empty((5, 6), device="meta"), 2)


def test_boxes_on_another_device_than_input():
    with pytest.raises(pyroi.InvalidArgumentError, match="boxes is on device meta"):
        pt.roi_align(feature_map(36), torch.empty((5, 5), device="meta"), 2)


@pytest.mark.parametrize("call, error, message", [
    (lambda x, r: pt.roi_align(x, r.double(), 2), pyroi.DTypeError, "boxes must have"),
    (lambda x, r: pt.roi_align(x, r[:, :4], 2), pyroi.ShapeError, "boxes must have shape"),
    (lambda x, r: pt.roi_align(x, [r[:, 1:], r[:, :3]], 2), pyroi.ShapeError, r"boxes\[1\]"),
    (lambda x, r: pt.roi_align(x, "r", 2), pyroi.ArgumentTypeError, "boxes must be"),
    (lambda x, r: pt.roi_align(x.numpy(), r, 2), pyroi.ArgumentTypeError, "input must be"),
    (lambda x, r: pt.roi_align(x, r, 0), pyroi.InvalidArgumentError, "output_size"),
    (lambda x, r: pt.roi_align(x, r, 2, -1.0), pyroi.InvalidArgumentError, "spatial_scale"),
    (lambda x, r: pt.roi_align(x, r, 2, 1.0, 2.5), pyroi.ArgumentTypeError, "sampling_ratio"),
    (lambda x, r: pt.roi_pool(x, r + torch.tensor([5.0, 0, 0, 0, 0]), 2), pyroi.BatchIndexError,
     "batch index"),
    (lambda x, r: pt.ps_roi_align(x, r, 3), pyroi.ShapeError, "input"),
    (lambda x, r: pt.roi_align(x[0], r, 2), pyroi.ShapeError, "input must have 4 dimensions"),
    (lambda x, r: pt.roi_align(x.int(), r, 2), pyroi.DTypeError, "input"),
    (lambda x, r: pt.roi_align_rotated(x, r, 2, angle="turns"), pyroi.InvalidArgumentError,
     "angle"),
    (lambda x, r: pt.RoIAlign(2, 1.0, 1.5), pyroi.ArgumentTypeError, "sampling_ratio"),
])
def test_errors_are_pyrois_naming_the_argument(call, error, message):
    x, rois = feature_map(37), random_rois(38)
    rois[3, 1] = float("nan") if error is pyroi.BoxError else rois[3, 1]
    if "rotated" in repr(call.__code__.co_names):
        rois = rotated_rois(39)
    with pytest.raises(error, match=message):
        call(x, rois)


def test_non_finite_box_raises_box_error():
    rois = random_rois(40)
    rois[3, 2] = float("inf")
    with pytest.raises(pyroi.BoxError, match="RoI 3"):
        pt.roi_align(feature_map(41), rois, 2)


def test_import_pyroi_does_not_import_torch():
    code = "import sys, pyroi; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")


# ------------------------------------------------------------------------------------------
# torchvision's detectors, converted: the same detections, losses and gradients


DETECTORS = ["fasterrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn"]


def detector(name):
    """A detector with random weights from a fixed seed (nothing is downloaded), small
    images (the test's budget), and its pyroi conversion."""
    torch.manual_seed(0)
    model = getattr(torchvision.models.detection, name)(
        weights=None, weights_backbone=None, min_size=256, max_size=320,
        rpn_pre_nms_top_n_train=300, rpn_post_nms_top_n_train=300,
        rpn_pre_nms_top_n_test=200, rpn_post_nms_top_n_test=200,
        box_batch_size_per_image=128)
    converted = pt.convert(copy.deepcopy(model))
    assert type(converted.roi_heads.box_roi_pool) is pt.MultiScaleRoIAlign
    return model, converted


def images(seed):
    generator = torch.Generator().manual_seed(seed)
    return [torch.rand((3, 256, 320), generator=generator),
            torch.rand((3, 300, 240), generator=generator)]


def targets(masks):
    boxes = [torch.tensor([[20.0, 30, 120, 160], [100, 50, 220, 200], [10, 10, 60, 40]]),
             torch.tensor([[30.0, 40, 200, 250], [50, 60, 90, 110]])]
    result = []
    for i, box in enumerate(boxes):
        target = {"boxes": box, "labels": torch.arange(1, len(box) + 1)}
        if masks:
            height, width = (256, 320) if i == 0 else (300, 240)
            mask = torch.zeros((len(box), height, width), dtype=torch.uint8)
            for k, (x1, y1, x2, y2) in enumerate(box.long().tolist()):
                mask[k, y1:y2, x1:x2] = 1
            target["masks"] = mask
        result.append(target)
    return result


@pytest.mark.parametrize("name", DETECTORS)
def test_detector_eval_and_train_bit_identical(name):
    model, converted = detector(name)
    model.eval()
    converted.eval()
    batch = images(42)
    with torch.no_grad():
        expected = model(batch)
        actual = converted(batch)
    for mine, reference in zip(actual, expected):
        assert mine.keys() == reference.keys() and len(reference["boxes"]) > 0
        for key in reference:
            same_bits(mine[key], reference[key])
    model.train()
    converted.train()
    truth = targets(name.startswith("mask"))
    gradients = []
    for network in (model, converted):
        torch.manual_seed(1)  # the proposal samplers draw the same RoIs
        losses = network(images(43), truth)
        sum(losses.values()).backward()
        gradients.append((losses, {n: p.grad for n, p in network.named_parameters()
                                   if p.grad is not None}))
    (losses_tv, grads_tv), (losses_pyroi, grads_pyroi) = gradients
    assert losses_tv.keys() == losses_pyroi.keys()
    for key in losses_tv:
        same_bits(losses_pyroi[key].detach(), losses_tv[key].detach())
    assert grads_tv.keys() == grads_pyroi.keys() and len(grads_tv) > 50
    for key in grads_tv:
        same_bits(grads_pyroi[key], grads_tv[key])


def test_pyroi_bench_model_runs_the_detector_bench(monkeypatch):
    """`pyroi bench --model` is a thin entry to pyroi.detector_bench.run (bench/detector.py's
    code), with bench's -t and --repeat."""
    from pyroi import cli, detector_bench

    calls = []
    monkeypatch.setattr(detector_bench, "run", lambda *args: calls.append(args) or 0)
    assert cli.main(["bench", "--model", "maskrcnn", "--size", "256", "--batch", "1", "-t", "1",
                     "-t", "2", "--repeat", "2"]) == 0
    assert calls == [("maskrcnn", 256, 1, [1, 2], 2)]


def test_detector_bench_prints_the_table(capsys):
    from pyroi import detector_bench

    previous = torch.get_num_threads()
    try:
        assert detector_bench.run("fasterrcnn", size=96, batch_size=1, thread_counts=[1],
                                  repeat=1) == 0
    finally:
        torch.set_num_threads(previous)
    lines = capsys.readouterr().out.splitlines()
    assert "CPU: " in lines[0] and "load average" in lines[0]
    rows = [line for line in lines if line.startswith("| 1 |")]
    assert [row.split(" | ")[1] for row in rows] == ["eval forward", "train step"]
    assert lines[-1].startswith("load average after: ")


def test_roi_pool_keeps_an_int32_argmax_like_torchvision():
    """torch.ops.pyroi.roi_pool returns torchvision's int32 argmax (dtype and values; its fake
    says int32 too), which autograd saves for the backward: half the bytes of int64."""
    x = feature_map(18, shape=(2, 8, 10, 12))
    rois = random_rois(19, count=6, height=10, width=12)
    out, argmax = torch.ops.pyroi.roi_pool(x, rois, 0.5, 2, 3)
    tv_out, tv_argmax = torch.ops.torchvision.roi_pool(x, rois, 0.5, 2, 3)
    assert argmax.dtype == tv_argmax.dtype == torch.int32
    assert torch.equal(out, tv_out) and torch.equal(argmax, tv_argmax)
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fake = torch.ops.pyroi.roi_pool(torch.empty(2, 8, 10, 12), torch.empty(6, 5), 0.5, 2, 3)
    assert fake[1].dtype == torch.int32


# ---- RoIPool: what autograd keeps (an argmax, or the input) --------------------------------

@pytest.fixture(params=[True, False], ids=["keeps_input", "keeps_argmax"])
def input_pays(request, monkeypatch):
    """Forces the C core's rule (keep the input rather than an argmax) either way."""
    monkeypatch.setattr(_core, "roi_pool_backward_from_input_pays", lambda *args: request.param)
    return request.param


def _roi_pool_graph_op(output):
    return type(output.grad_fn).__name__


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_roi_pool_keeps_what_the_rule_says_with_torchvisions_gradient(input_pays, dtype):
    x = feature_map(30, dtype=dtype).requires_grad_()
    rois = random_rois(31, count=40, dtype=dtype)
    y = pt.roi_pool(x, rois, (3, 2), 0.5)
    assert ("roi_pool_values" in _roi_pool_graph_op(y)) == input_pays
    expected = tv.roi_pool(x, rois, (3, 2), 0.5)
    same_bits(y, expected)
    grad = torch.randn(y.shape, dtype=dtype)
    same_bits(torch.autograd.grad(y, x, grad)[0], torch.autograd.grad(expected, x, grad)[0])


def test_roi_pool_without_a_gradient_makes_no_argmax(monkeypatch):
    asked = []
    real = pyroi.ops.roi_pool

    def recording(*args, **kwargs):
        asked.append(kwargs.get("return_argmax", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(pyroi.ops, "roi_pool", recording)
    x, rois = feature_map(32), random_rois(33)
    same_bits(pt.roi_pool(x, rois, 2, 0.5), tv.roi_pool(x, rois, 2, 0.5))
    with torch.no_grad():
        y = pt.RoIPool(2, 0.5)(x.requires_grad_(), rois)
    assert y.grad_fn is None and asked == [False, False]


def test_roi_pool_gradcheck_from_the_input(monkeypatch):
    monkeypatch.setattr(_core, "roi_pool_backward_from_input_pays", lambda *args: True)
    x = feature_map(11, shape=(2, 4, 6, 7), dtype=torch.float64).requires_grad_()
    rois = random_rois(12, count=4, height=6, width=7, dtype=torch.float64)
    assert "roi_pool_values" in _roi_pool_graph_op(pt.roi_pool(x, rois, (2, 3), 0.5))
    assert torch.autograd.gradcheck(lambda v: pt.roi_pool(v, rois, (2, 3), 0.5), (x,),
                                    fast_mode=True)


def test_roi_pool_input_changed_before_backward_is_refused(monkeypatch):
    """Autograd keeps the input itself: writing it in place before the backward raises
    (torch's version counter) instead of a gradient of other values."""
    monkeypatch.setattr(_core, "roi_pool_backward_from_input_pays", lambda *args: True)
    base = feature_map(34).requires_grad_()
    x = base * 1.0
    y = pt.roi_pool(x, random_rois(35), 2, 0.5)
    x.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_roi_pool_compiled_keeps_the_argmax(monkeypatch):
    """A traced graph may run other shapes than the rule saw: it keeps torchvision's argmax
    (and the same gradient)."""
    monkeypatch.setattr(_core, "roi_pool_backward_from_input_pays", lambda *args: True)
    torch._dynamo.reset()
    x = feature_map(36).requires_grad_()
    rois = random_rois(37, count=30)
    compiled = torch.compile(lambda v: pt.roi_pool(v, rois, 2, 0.5), fullgraph=True,
                             backend="aot_eager")
    actual = compiled(x)
    expected = pt.roi_pool(x, rois, 2, 0.5)
    assert "roi_pool_values" in _roi_pool_graph_op(expected)
    same_bits(actual, expected)
    same_bits(torch.autograd.grad(actual.sum(), x)[0], torch.autograd.grad(expected.sum(), x)[0])


def test_roi_pool_backward_fills_no_gradient_for_the_argmax(monkeypatch):
    """The argmax output gets no zero-filled gradient (as large as the output: 27 ms of a
    72 ms backward on the box head's map before)."""
    monkeypatch.setattr(_core, "roi_pool_backward_from_input_pays", lambda *args: False)
    x = feature_map(38).requires_grad_()
    y = pt.roi_pool(x, random_rois(39, count=30), 2, 0.5)
    assert "roi_pool_values" not in _roi_pool_graph_op(y)
    grad = torch.ones_like(y)
    with torch.profiler.profile() as profile:
        torch.autograd.grad(y, x, grad)
    names = {event.name for event in profile.events()}
    assert "pyroi::_roi_pool_backward" in names
    assert not names & {"aten::zeros", "aten::fill_", "aten::zero_"}


def test_roi_align_exact_false():
    """exact=False (samples merged per pixel): the NumPy call's bits, forward and gradient,
    a gradient that gradcheck accepts (the adjoint of the merged forward), the module's
    argument and repr; max-style misuse is impossible here (avg only)."""
    x = feature_map(21, shape=(2, 4, 30, 34), dtype=torch.float64).requires_grad_()
    rois = random_rois(22, count=6, height=30, width=34, dtype=torch.float64)
    rois[:, 3:] = rois[:, 1:3] + 40.0  # large boxes: many samples per pixel at scale 0.5
    y = pt.roi_align(x, rois, 3, 0.5, 0, True, exact=False)
    expected = pyroi.roi_align(x.detach().numpy(), rois.numpy(), 3, 0.5, 0, True, exact=False)
    assert y.detach().numpy().tobytes() == expected.tobytes()
    assert not torch.equal(y, pt.roi_align(x, rois, 3, 0.5, 0, True))
    g = torch.randn_like(y)
    (grad,) = torch.autograd.grad(y, x, g)
    assert grad.numpy().tobytes() == pyroi.roi_align_backward(
        g.numpy(), rois.numpy(), tuple(x.shape), 0.5, 0, True, exact=False).tobytes()
    small = x[:, :, :12, :12].detach().clone().requires_grad_()
    small_rois = torch.cat([rois[:, :1], rois[:, 1:] / 3], 1)
    assert torch.autograd.gradcheck(
        lambda v: pt.roi_align(v, small_rois, 2, 0.5, 0, True, exact=False), (small,),
        fast_mode=True)
    module = pt.RoIAlign(3, 0.5, 0, True, exact=False)
    assert repr(module).endswith("aligned=True, exact=False)")
    assert torch.equal(module(x, rois), y)
    with pytest.raises(TypeError, match="exact"):
        pt.roi_align(x, rois, 3, exact="no")
