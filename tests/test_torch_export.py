"""ONNX export of pyroi.torch's operators and of a converted model, through both of torch's
exporters, run by onnxruntime (pyroi-domain nodes by pyroi's custom-op library); and
pyroi.torch.unconvert. docs/torch.md, "Exporting to ONNX"."""

import collections
import copy
import importlib.util
import io
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import pyroi  # noqa: E402
import pyroi.onnx  # noqa: E402
import pyroi.torch as pt  # noqa: E402

needs_onnxscript = pytest.mark.skipif(importlib.util.find_spec("onnxscript") is None,
                                      reason="the dynamo exporter needs onnxscript")

TORCHSCRIPT_OPSETS = [11, 16, 20]  # 20: the TorchScript exporter's last
DYNAMO_OPSETS = [18, 22]  # onnxruntime 1.32 has no RoiAlign-22 kernel: pyroi's library runs it


@pytest.fixture(scope="module")
def library():
    try:
        return pyroi.onnx.custom_ops_library()
    except FileNotFoundError as exc:
        if os.environ.get("CI") == "true":
            raise  # CI builds it: its absence is a build failure
        pytest.skip(str(exc))


class Call(torch.nn.Module):
    """A module calling ``function`` on its inputs: what the exporters take."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, *args):
        return self.function(*args)


def export(module, args, opset, dynamo):
    """The ModelProto of ``module`` exported with ``args``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            return torch.onnx.export(module, args, dynamo=True, opset_version=opset,
                                     custom_translation_table=pt.onnx_translation_table(),
                                     verbose=False).model_proto
        buffer = io.BytesIO()
        torch.onnx.export(module, args, buffer, dynamo=False, opset_version=opset)
        return onnx.load_from_string(buffer.getvalue())


def run(model, args, library=None, override=False):
    """onnxruntime's outputs of ``model`` on ``args`` (inputs by position; ones the export
    dropped as unused are left out)."""
    options = ort.SessionOptions()
    if override:  # RoiAlign nodes of opsets onnxruntime has no kernel for
        options.add_session_config_entry("pyroi.override_roi_align", "1")
    if library is not None:
        options.register_custom_ops_library(library)
    session = ort.InferenceSession(model.SerializeToString(), options)
    graph_inputs = [value.name for value in model.graph.input]
    names = {value.name for value in session.get_inputs()}
    feed = {name: arg.detach().numpy() for name, arg in zip(graph_inputs, args) if name in names}
    return session.run(None, feed)


def node_types(model):
    return [node.op_type for node in model.graph.node if node.op_type != "Constant"]


def attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def only(model, op_type):
    nodes = [node for node in model.graph.node if node.op_type == op_type]
    assert len(nodes) == 1, node_types(model)
    return nodes[0]


def close(actual, expected):
    np.testing.assert_allclose(actual, expected.detach().numpy(), rtol=1e-5, atol=1e-5)


def feature_map(seed, shape=(2, 18, 24, 28)):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def random_rois(seed, count=12, columns=4):
    """(K, 5) rows on a 48 x 56 image (the map at scale 0.5), some past the edges."""
    generator = torch.Generator().manual_seed(seed)
    corners = torch.rand((count, 2, 2), generator=generator) * torch.tensor([56.0, 48.0]) * 1.2
    corners = corners - 4
    images = torch.randint(0, 2, (count, 1), generator=generator).float()
    return torch.cat([images, corners.min(dim=1).values, corners.max(dim=1).values], dim=1)


def rotated_rois(seed, count=8):
    generator = torch.Generator().manual_seed(seed)
    centre = torch.rand((count, 2), generator=generator) * 40
    size = torch.rand((count, 2), generator=generator) * 20 + 1
    angle = torch.rand((count, 1), generator=generator) * 360 - 180
    images = torch.randint(0, 2, (count, 1), generator=generator).float()
    return torch.cat([images, centre, size, angle], dim=1)


# ------------------------------------------------------------------------------------------
# standard nodes: RoiAlign, MaxRoiPool


# aligned=True before opset 16 is an error: test_roi_align_aligned_before_opset_16
@pytest.mark.parametrize("opset, aligned", [(opset, aligned) for opset in TORCHSCRIPT_OPSETS
                                            for aligned in (False, True)
                                            if opset >= 16 or not aligned])
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
def test_roi_align_torchscript(opset, aligned, sampling_ratio):
    x, rois = feature_map(0), random_rois(1)
    module = Call(lambda x, rois: pt.roi_align(x, rois, (3, 4), 0.5, sampling_ratio, aligned))
    model = export(module, (x, rois), opset, dynamo=False)
    node = only(model, "RoiAlign")
    expected = {"output_height": 3, "output_width": 4, "spatial_scale": 0.5,
                "sampling_ratio": max(sampling_ratio, 0)}
    if opset >= 16:
        expected["coordinate_transformation_mode"] = (
            b"half_pixel" if aligned else b"output_half_pixel")
    assert attributes(node) == expected
    # the batch column split off as torchvision's export does it
    assert node_types(model) == ["Gather", "Squeeze", "Cast", "Gather", "RoiAlign"]
    close(run(model, (x, rois))[0], module(x, rois))


@needs_onnxscript
@pytest.mark.parametrize("opset", DYNAMO_OPSETS)
@pytest.mark.parametrize("aligned", [False, True])
def test_roi_align_dynamo(opset, aligned, library):
    x, rois = feature_map(2), random_rois(3)
    module = Call(lambda x, rois: pt.roi_align(x, rois, 3, 0.5, 0, aligned))
    model = export(module, (x, rois), opset, dynamo=True)
    node = only(model, "RoiAlign")
    assert attributes(node)["coordinate_transformation_mode"] == (
        b"half_pixel" if aligned else b"output_half_pixel")
    override = opset >= 22
    close(run(model, (x, rois), library if override else None, override)[0], module(x, rois))


def test_roi_align_aligned_before_opset_16():
    module = Call(lambda x, rois: pt.roi_align(x, rois, 3, 0.5, 2, aligned=True))
    with pytest.raises(pyroi.InvalidArgumentError, match="aligned=True needs ONNX opset 16"):
        export(module, (feature_map(0), random_rois(1)), 11, dynamo=False)


@pytest.mark.parametrize("opset", [11, 16])
@pytest.mark.parametrize("grad", [False, True])  # with a gradient: the op that keeps an argmax
def test_roi_pool_torchscript(opset, grad):
    x, rois = feature_map(4).requires_grad_(grad), random_rois(5)
    module = Call(lambda x, rois: pt.roi_pool(x, rois, (3, 4), 0.5))
    model = export(module, (x, rois), opset, dynamo=False)
    assert node_types(model) == ["MaxRoiPool"]
    assert attributes(only(model, "MaxRoiPool")) == {"pooled_shape": [3, 4],
                                                     "spatial_scale": 0.5}
    close(run(model, (x, rois))[0], module(x, rois))


@needs_onnxscript
@pytest.mark.parametrize("grad", [False, True])
def test_roi_pool_dynamo(grad):
    x, rois = feature_map(6).requires_grad_(grad), random_rois(7)
    module = Call(lambda x, rois: pt.roi_pool(x, rois, (2, 3), 0.5))
    model = export(module, (x, rois), 18, dynamo=True)
    assert node_types(model) == ["MaxRoiPool"]
    close(run(model, (x, rois))[0], module(x, rois))


# ------------------------------------------------------------------------------------------
# nodes of pyroi's ONNX Runtime library

x_map = feature_map(8)
CUSTOM = {
    # name: (function, inputs, domain, node, attributes)
    "ps_roi_align": (lambda x, r: pt.ps_roi_align(x, r, 3, 0.5, -1), (x_map, random_rois(9)),
                     "pyroi", "PSRoIAlign",
                     {"output_height": 3, "output_width": 3, "spatial_scale": 0.5,
                      "sampling_ratio": 0}),
    "ps_roi_pool": (lambda x, r: pt.ps_roi_pool(x, r, (3, 3), 0.5), (x_map, random_rois(10)),
                    "pyroi", "PSRoIPool",
                    {"output_height": 3, "output_width": 3, "spatial_scale": 0.5}),
    "roi_align_rotated": (
        lambda x, r: pt.roi_align_rotated(x, r, (3, 4), 0.5, 2, True, True),
        (x_map, rotated_rois(11)), "pyroi", "RoIAlignRotated",
        {"output_height": 3, "output_width": 4, "spatial_scale": 0.5, "sampling_ratio": 2,
         "aligned": 1, "clockwise": 1, "angle": b"degrees"}),
    "roi_align_rotated_radians": (
        lambda x, r: pt.roi_align_rotated(x, r, 2, 0.5, 0, False, False, angle="radians"),
        (x_map, rotated_rois(12) / torch.tensor([1, 1, 1, 1, 1, 57.0])), "pyroi",
        "RoIAlignRotated",
        {"output_height": 2, "output_width": 2, "spatial_scale": 0.5, "sampling_ratio": 0,
         "aligned": 0, "clockwise": 0, "angle": b"radians"}),
    "prroi_pool": (lambda x, r: pt.prroi_pool(x, r, (3, 4), 0.5), (x_map, random_rois(13)),
                   "mmcv", "PrRoIPool",
                   {"pooled_height": 3, "pooled_width": 4, "spatial_scale": 0.5}),
    "crop_and_resize": (
        lambda x, b, i: pt.crop_and_resize(x, b, i, (5, 6), "bilinear", 0.5),
        (x_map, torch.tensor([[0.1, 0.2, 0.7, 0.9], [0.3, -0.1, 0.5, 0.4]]), torch.tensor([1, 0])),
        "pyroi", "CropAndResize", {"mode": b"bilinear", "extrapolation_value": 0.5}),
    "crop_and_resize_nearest": (
        lambda x, b, i: pt.crop_and_resize(x, b, i, (4, 4), "nearest"),
        (x_map, torch.tensor([[0.1, 0.2, 0.7, 0.9]]), torch.tensor([1])),
        "pyroi", "CropAndResize", {"mode": b"nearest", "extrapolation_value": 0.0}),
}


@pytest.mark.parametrize("dynamo", [False, pytest.param(True, marks=needs_onnxscript)])
@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_custom_domain_nodes(name, dynamo, library):
    function, args, domain, op_type, expected = CUSTOM[name]
    module = Call(function)
    model = export(module, args, 16 if not dynamo else 18, dynamo)
    nodes = [node for node in model.graph.node if node.domain]
    assert [(node.domain, node.op_type) for node in nodes] == [(domain, op_type)]
    assert attributes(nodes[0]) == expected
    assert domain in {opset.domain for opset in model.opset_import}
    close(run(model, args, library)[0], module(*args))


@pytest.mark.parametrize("dynamo", [False, pytest.param(True, marks=needs_onnxscript)])
@pytest.mark.parametrize("inputs", ["none", "offset", "both", "mask"])
def test_deform_roi_pool_node(inputs, dynamo):
    """No runtime has a DeformRoIPool node yet: the node as written (the torch operator's
    arguments as attributes; an absent offset before a mask as ONNX's empty input)."""
    x, rois = feature_map(15, (2, 4, 16, 16)), random_rois(16, count=3)
    offset = torch.randn((3, 2, 3, 3), generator=torch.Generator().manual_seed(17)) * 0.1
    mask = torch.rand((3, 1, 3, 3), generator=torch.Generator().manual_seed(18))

    def pool(x, rois, offset, mask):
        return pt.deform_roi_pool(x, rois, offset if inputs in ("offset", "both") else None, 3,
                                  0.5, 2, 0.25, mask=mask if inputs in ("both", "mask") else None)

    model = export(Call(pool), (x, rois, offset, mask), 18 if dynamo else 16, dynamo)
    node = only(model, "DeformRoIPool")
    assert node.domain == "pyroi"
    assert attributes(node) == {"spatial_scale": 0.5, "pooled_height": 3, "pooled_width": 3,
                                "sampling_ratio": 2, "gamma": 0.25}
    present = {"none": [True, True], "offset": [True, True, True],
               "both": [True, True, True, True], "mask": [True, True, False, True]}[inputs]
    assert [bool(name) for name in node.input] == present


def test_crop_and_resize_other_layouts_refused():
    image = feature_map(14)
    boxes, indices = torch.tensor([[0.1, 0.2, 0.7, 0.9]]), torch.tensor([0])
    module = Call(lambda x, b, i: pt.crop_and_resize(x.permute(0, 2, 3, 1), b, i, (3, 3),
                                                     layout="NHWC"))
    with pytest.raises(pyroi.InvalidArgumentError, match="layout='NHWC'"):
        export(module, (image, boxes, indices), 16, dynamo=False)


# ------------------------------------------------------------------------------------------
# multi_scale_roi_align: per-level RoiAlign nodes


def pyramid(seed, batch=2, channels=8):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn((batch, channels, 64 // 2 ** i, 80 // 2 ** i), generator=generator)
            for i in range(4)]


def pyramid_rois(seed, count=40):
    generator = torch.Generator().manual_seed(seed)
    corner = torch.rand((count, 2), generator=generator) * torch.tensor([300.0, 240.0])
    size = torch.rand((count, 2), generator=generator) * 200 + 2
    images = torch.randint(0, 2, (count, 1), generator=generator).float()
    rois = torch.cat([images, corner, corner + size], dim=1)
    rois[3, 3] = rois[3, 1] - 5  # a negative area: no level, a zero row
    return rois


@pytest.mark.parametrize("exporter", [11, 16, pytest.param("dynamo", marks=needs_onnxscript)])
@pytest.mark.parametrize("maps", [4, 3])  # 3: levels 2..5 with no map for level 5
def test_fused_pyramid_operator(exporter, maps):
    """The one-call operator itself in the graph (as a plain trace records it)."""
    scales = [0.25, 0.125, 0.0625, 0.03125]

    def pool(*args):
        return torch.ops.pyroi.multi_scale_roi_align(list(args[:maps]), args[-1], scales[:maps],
                                                     7, 7, 2, 2, 5, 224.0, 4.0, 1e-6)

    args = (*pyramid(15)[:maps], pyramid_rois(16))
    dynamo = exporter == "dynamo"
    model = export(Call(pool), args, 18 if dynamo else exporter, dynamo)
    assert collections.Counter(node_types(model))["RoiAlign"] == maps
    assert not [node for node in model.graph.node if node.domain]
    expected = pool(*args)
    assert not expected[3].any()
    close(run(model, args)[0], expected)


class BoxChain(torch.nn.Module):
    """Faster R-CNN's box pooler, head and predictor on given features and proposals."""

    def __init__(self, heads):
        super().__init__()
        self.pool, self.head, self.predictor = (heads.box_roi_pool, heads.box_head,
                                                heads.box_predictor)

    def forward(self, f0, f1, f2, f3, boxes):
        pooled = self.pool({"0": f0, "1": f1, "2": f2, "3": f3}, [boxes], [(256, 320)])
        return self.predictor(self.head(pooled))


@pytest.fixture(scope="module")
def faster_rcnn():
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, box_score_thresh=0.0)
    return model.eval()


@needs_onnxscript
def test_box_chain_dynamo(faster_rcnn):
    chain = pt.convert(BoxChain(copy.deepcopy(faster_rcnn.roi_heads)))
    args = (*pyramid(17, batch=1, channels=256), pyramid_rois(18)[:, 1:])
    with torch.no_grad():
        expected = chain(*args)
    model = export(chain, args, 18, dynamo=True)
    counts = collections.Counter(node_types(model))
    assert counts["RoiAlign"] == 4 and not [node for node in model.graph.node if node.domain]
    for actual, wanted in zip(run(model, args), expected):
        close(actual, wanted)


# ------------------------------------------------------------------------------------------
# a converted Faster R-CNN, TorchScript exporter


def test_faster_rcnn_torchscript(faster_rcnn):
    """The converted model exports to the graph torchvision's exports (node for node, by
    type), onnxruntime runs both to the same bits, close to the eager model."""
    images = torch.rand((2, 3, 320, 480), generator=torch.Generator().manual_seed(1))
    converted = pt.convert(copy.deepcopy(faster_rcnn))
    with torch.no_grad():
        eager = converted(images)
    theirs = export(faster_rcnn, (images,), 16, dynamo=False)
    ours = export(converted, (images,), 16, dynamo=False)
    assert collections.Counter(node_types(ours)) == collections.Counter(node_types(theirs))
    assert collections.Counter(node_types(ours))["RoiAlign"] == 4
    assert not [node for node in ours.graph.node if node.domain]
    outputs = run(ours, (images,))
    for actual, wanted in zip(outputs, run(theirs, (images,))):
        np.testing.assert_array_equal(actual, wanted)
    for image, detections in enumerate(eager):
        boxes, labels, scores = outputs[3 * image:3 * image + 3]
        np.testing.assert_array_equal(labels, detections["labels"].numpy())
        np.testing.assert_allclose(scores, detections["scores"].numpy(), atol=1e-3)
        # random weights amplify float differences in a few boxes (exp of large deltas)
        near = np.abs(boxes - detections["boxes"].numpy()).max(axis=1) < 0.05
        assert near.mean() > 0.9, near.mean()


# ------------------------------------------------------------------------------------------
# unconvert


def test_unconvert_faster_rcnn(faster_rcnn):
    images = torch.rand((1, 3, 320, 480), generator=torch.Generator().manual_seed(2))
    model = pt.unconvert(pt.convert(copy.deepcopy(faster_rcnn)))
    kinds = {type(m) for m in model.modules()}
    assert torchvision.ops.MultiScaleRoIAlign in kinds
    assert not [m for m in model.modules() if type(m).__module__ == "pyroi.torch"]
    pooler, original = model.roi_heads.box_roi_pool, faster_rcnn.roi_heads.box_roi_pool
    assert pooler.scales == original.scales  # inferred or not, as in the original
    with torch.no_grad():
        expected, actual = faster_rcnn(images), model(images)
    for wanted, got in zip(expected, actual):
        for key in wanted:
            assert torch.equal(got[key], wanted[key]), key


@pytest.mark.parametrize("module", [
    torchvision.ops.RoIAlign((3, 4), 0.5, 2, aligned=True),
    torchvision.ops.RoIPool(3, 0.25),
    torchvision.ops.PSRoIAlign(3, 0.5, -1),
    torchvision.ops.PSRoIPool((2, 2), 0.5),
    torchvision.ops.MultiScaleRoIAlign(["a", "b"], 7, 2, canonical_scale=200,
                                       canonical_level=3),
], ids=repr)
def test_unconvert_module(module):
    module.train(False)
    back = pt.unconvert(pt.convert(copy.deepcopy(module)))
    assert type(back) is type(module)
    assert vars(back).keys() == vars(module).keys()
    for key, value in vars(module).items():
        if not key.startswith("_"):
            assert getattr(back, key) == value, key
    assert back.training is False and repr(back) == repr(module)


def test_unconvert_keeps_inferred_levels():
    pooler = torchvision.ops.MultiScaleRoIAlign(["0", "1"], 7, 2)
    features = {"0": torch.rand(1, 4, 32, 32), "1": torch.rand(1, 4, 16, 16)}
    boxes, shapes = [torch.tensor([[1.0, 2.0, 60.0, 90.0], [5.0, 5.0, 20.0, 30.0]])], [(128, 128)]
    expected = pooler(features, boxes, shapes)
    back = pt.unconvert(pt.convert(pooler))
    assert back.scales == pooler.scales
    mapper, original = back.map_levels, pooler.map_levels
    assert type(mapper) is type(original)
    assert vars(mapper) == vars(original)
    assert torch.equal(back(features, boxes, shapes), expected)


def test_unconvert_leaves_pyroi_only_modules():
    model = torch.nn.Sequential(pt.RoIAlignRotated(3), pt.PrRoIPool(2), pt.RoIAlign(2, 1.0, 2))
    back = pt.unconvert(model)
    assert back is model
    assert [type(m) for m in back] == [pt.RoIAlignRotated, pt.PrRoIPool,
                                       torchvision.ops.RoIAlign]
