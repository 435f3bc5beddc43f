"""pyroi's ONNX Runtime custom-op library (src/onnxruntime/): sessions that register
pyroi.onnx.custom_ops_library() run the ``pyroi`` domain's RoiAlign and MaxRoiPool with the
bits of onnxruntime's own operators and of pyroi.onnx, and the ``mmcv`` domain's
MMCVRoiAlign / MMCVRoIAlignRotated (the nodes mmcv's exporters write) with the bits of
pyroi's mmcv conventions, in float32, float64 and float16, for every thread count; bad
attributes and inputs are runtime errors naming them. Skips without onnx / onnxruntime; on
CI (CI=true) a missing library fails."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import pyroi
from pyroi import onnx as ponnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
         np.float16: TensorProto.FLOAT16}


@pytest.fixture(scope="module")
def library():
    try:
        return ponnx.custom_ops_library()
    except FileNotFoundError as exc:
        if os.environ.get("CI") == "true":
            raise  # CI builds it: its absence is a build failure
        pytest.skip(str(exc))


def model(op, attributes, inputs, dtype=np.float32, domain="pyroi", opset=16):
    """One node of `op` (domain "pyroi" or "mmcv", or "" for onnxruntime's own) on inputs
    (X or input), rois and, for RoiAlign, batch_indices; shapes left to the runtime."""
    values = [helper.make_tensor_value_info(inputs[0], TYPES[dtype], None),
              helper.make_tensor_value_info("rois", TYPES[dtype], None)]
    if "batch_indices" in inputs:
        values.append(helper.make_tensor_value_info("batch_indices", TensorProto.INT64, None))
    node = helper.make_node(op, inputs, ["Y"], domain=domain, **attributes)
    graph = helper.make_graph([node], op, values,
                              [helper.make_tensor_value_info("Y", TYPES[dtype], None)])
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=imports).SerializeToString()


def session(library, graph, threads=None, override=None):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # onnxruntime's max-mode warning
    if threads is not None:
        options.add_session_config_entry("pyroi.num_threads", str(threads))
    if override is not None:
        options.add_session_config_entry("pyroi.override_roi_align", override)
    if library is not None:
        options.register_custom_ops_library(library)
    return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def random_case(seed, dtype=np.float32, num_rois=50):
    rng = np.random.default_rng(seed)
    X = rng.random((2, 6, 23, 31)).astype(dtype)
    corner = rng.uniform(-8, 40, (num_rois, 2))  # some boxes off the map
    size = rng.uniform(0, 24, (num_rois, 2))
    rois = np.concatenate([corner, corner + size], 1).astype(dtype)
    batch = rng.integers(0, 2, num_rois).astype(np.int64)
    return X, rois, batch


def assert_same_bits(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.tobytes() == expected.tobytes()


ROI_ALIGN_CASES = [dict(mode=mode, coordinate_transformation_mode=transform,
                        sampling_ratio=ratio, output_height=5, output_width=4,
                        spatial_scale=0.625)
                   for mode in ("avg", "max") for transform in ("half_pixel", "output_half_pixel")
                   for ratio in (0, 2)]


@pytest.mark.parametrize("attributes", ROI_ALIGN_CASES,
                         ids=lambda a: f"{a['mode']}-{a['coordinate_transformation_mode']}-"
                                       f"sr{a['sampling_ratio']}")
def test_roi_align_gives_onnxruntimes_bits(library, attributes):
    X, rois, batch = random_case(1)
    feed = dict(X=X, rois=rois, batch_indices=batch)
    inputs = ["X", "rois", "batch_indices"]
    ours = session(library, model("RoiAlign", attributes, inputs)).run(None, feed)[0]
    theirs = session(None, model("RoiAlign", attributes, inputs, domain="")).run(None, feed)[0]
    assert_same_bits(ours, theirs)
    assert_same_bits(ours, ponnx.roi_align(X, rois, batch, **attributes))


def test_roi_align_defaults_are_roi_align_16s(library):
    """No attributes: avg, 1 x 1, adaptive sampling, scale 1, half_pixel."""
    X, rois, batch = random_case(2)
    feed = dict(X=X, rois=rois, batch_indices=batch)
    inputs = ["X", "rois", "batch_indices"]
    ours = session(library, model("RoiAlign", {}, inputs)).run(None, feed)[0]
    theirs = session(None, model("RoiAlign", {}, inputs, domain="")).run(None, feed)[0]
    assert ours.shape == (50, 6, 1, 1)
    assert_same_bits(ours, theirs)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_other_dtypes_give_pyroi_onnx_bits(library, dtype, mode):
    X, rois, batch = random_case(3, dtype)
    attributes = dict(mode=mode, output_height=3, output_width=3, sampling_ratio=2,
                      spatial_scale=0.5)
    ours = session(library, model("RoiAlign", attributes, ["X", "rois", "batch_indices"],
                                  dtype)).run(None, dict(X=X, rois=rois, batch_indices=batch))[0]
    assert_same_bits(ours, ponnx.roi_align(X, rois, batch, **attributes))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_max_roi_pool_gives_onnxruntimes_bits(library, dtype):
    X, rois, batch = random_case(4, dtype)
    rois5 = np.concatenate([batch[:, None].astype(dtype), rois], 1)
    attributes = dict(pooled_shape=[3, 4], spatial_scale=0.5)
    ours = session(library, model("MaxRoiPool", attributes, ["X", "rois"], dtype)).run(
        None, dict(X=X, rois=rois5))[0]
    assert_same_bits(ours, ponnx.max_roi_pool(X, rois5, (3, 4), 0.5))
    if dtype == np.float32:  # onnxruntime's MaxRoiPool is float32 only
        theirs = session(None, model("MaxRoiPool", attributes, ["X", "rois"], dtype,
                                     domain="")).run(None, dict(X=X, rois=rois5))[0]
        assert_same_bits(ours, theirs)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_every_thread_count_gives_the_same_bits(library, mode):
    X, rois, batch = random_case(5, num_rois=300)
    graph = model("RoiAlign", dict(mode=mode, output_height=7, output_width=7,
                                   sampling_ratio=2), ["X", "rois", "batch_indices"])
    feed = dict(X=X, rois=rois, batch_indices=batch)
    results = [session(library, graph, threads).run(None, feed)[0] for threads in (1, 2, 3, 0)]
    for result in results[1:]:
        assert_same_bits(result, results[0])


def test_no_rois(library):
    X, rois, batch = random_case(6, num_rois=0)
    ours = session(library, model("RoiAlign", dict(output_height=2, output_width=3),
                                  ["X", "rois", "batch_indices"])).run(
        None, dict(X=X, rois=rois.reshape(0, 4), batch_indices=batch))[0]
    assert ours.shape == (0, 6, 2, 3)
    pooled = session(library, model("MaxRoiPool", dict(pooled_shape=[2, 2]), ["X", "rois"])).run(
        None, dict(X=X, rois=np.zeros((0, 5), np.float32)))[0]
    assert pooled.shape == (0, 6, 2, 2)


def test_the_domain_needs_the_library():
    """Without the library the pyroi domain is unknown: the tests above run its kernels."""
    with pytest.raises(Exception, match="pyroi"):
        session(None, model("RoiAlign", {}, ["X", "rois", "batch_indices"]))


def _run(library, op, attributes, inputs, feed, dtype=np.float32):
    return session(library, model(op, attributes, inputs, dtype)).run(None, feed)


BAD_ATTRIBUTES = [
    (dict(mode="median"), "mode"),
    (dict(coordinate_transformation_mode="tf_crop_and_resize"), "coordinate_transformation_mode"),
    (dict(output_height=0), "output_height"),
    (dict(sampling_ratio=-1), "sampling_ratio"),
    (dict(sampling_ratio=1025), "sampling_ratio"),
]


@pytest.mark.parametrize("attributes, named", BAD_ATTRIBUTES, ids=[n for _, n in BAD_ATTRIBUTES])
def test_bad_attributes_are_errors_naming_them(library, attributes, named):
    X, rois, batch = random_case(7)
    with pytest.raises(Exception, match=named):
        _run(library, "RoiAlign", attributes, ["X", "rois", "batch_indices"],
             dict(X=X, rois=rois, batch_indices=batch))


def test_bad_inputs_are_errors_naming_them(library):
    X, rois, batch = random_case(8)
    inputs = ["X", "rois", "batch_indices"]
    with pytest.raises(Exception, match="batch_indices"):
        _run(library, "RoiAlign", {}, inputs, dict(X=X, rois=rois, batch_indices=batch + 2))
    not_finite = rois.copy()
    not_finite[7, 2] = np.inf
    with pytest.raises(Exception, match="rois"):
        _run(library, "RoiAlign", {}, inputs, dict(X=X, rois=not_finite, batch_indices=batch))
    with pytest.raises(Exception, match="rois must be"):
        _run(library, "RoiAlign", {}, inputs, dict(X=X, rois=rois[:, :3].copy(),
                                                   batch_indices=batch))
    with pytest.raises(Exception, match="batch_indices"):
        _run(library, "RoiAlign", {}, inputs, dict(X=X, rois=rois, batch_indices=batch[:-1]))
    with pytest.raises(Exception, match="X must have 4"):
        _run(library, "RoiAlign", {}, inputs, dict(X=X[0], rois=rois, batch_indices=batch))
    rois5 = np.concatenate([batch[:, None].astype(np.float32), rois], 1)
    rois5[3, 0] = 0.5
    with pytest.raises(Exception, match="batch_indices"):
        _run(library, "MaxRoiPool", dict(pooled_shape=[2, 2]), ["X", "rois"],
             dict(X=X, rois=rois5))
    with pytest.raises(Exception, match="pooled_shape"):
        _run(library, "MaxRoiPool", {}, ["X", "rois"], dict(X=X, rois=rois5))


def test_bad_thread_config_is_an_error(library):
    with pytest.raises(Exception, match="pyroi.num_threads"):
        session(library, model("RoiAlign", {}, ["X", "rois", "batch_indices"]), threads="two")


def test_the_library_exports_one_symbol_and_needs_nothing_of_onnxruntime(library):
    if shutil.which("nm") is None or shutil.which("readelf") is None or \
            not library.endswith(".so"):
        pytest.skip("needs binutils and an ELF library")
    symbols = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True,
                             text=True, check=True).stdout.split()
    assert [s for s in symbols if not s.startswith(("0", "T", "t"))] == ["RegisterCustomOps"]
    needed = subprocess.run(["readelf", "-d", library], capture_output=True, text=True,
                            check=True).stdout
    assert "onnxruntime" not in needed and "NEEDED" in needed


def mmcv_model(op, attributes, dtype=np.float32):
    return model(op, attributes, ["input", "rois"], dtype, domain="mmcv", opset=11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("aligned", [1, 0])
def test_mmcv_roi_align_gives_mmcvs_bits(library, dtype, mode, aligned):
    """As mmcv's exporters write it (mmdeploy's symbolic: output_height_i, output_width_i,
    spatial_scale_f, sampling_ratio_i, mode_s, aligned_i); mmcv's kernels are pyroi's
    roi_align with mode= and aligned= (tests/test_roi_align_max.py pins them to mmcv)."""
    X, rois, batch = random_case(9, dtype)
    rois5 = np.concatenate([batch[:, None].astype(dtype), rois], 1)
    attributes = dict(output_height=5, output_width=3, spatial_scale=0.5, sampling_ratio=2,
                      mode=mode, aligned=aligned)
    ours = session(library, mmcv_model("MMCVRoiAlign", attributes, dtype)).run(
        None, dict(input=X, rois=rois5))[0]
    expected = pyroi.roi_align(X, rois5, (5, 3), 0.5, 2, bool(aligned), mode=mode)
    assert_same_bits(ours, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("aligned, clockwise", [(1, 0), (0, 1)])
def test_mmcv_roi_align_rotated_gives_mmcvs_bits(library, dtype, aligned, clockwise):
    rng = np.random.default_rng(10)
    X = rng.random((2, 4, 21, 27)).astype(dtype)
    centres = rng.uniform(0, 27, (40, 2))
    sizes = rng.uniform(1, 15, (40, 2))
    angles = rng.uniform(-np.pi, np.pi, (40, 1))
    batch = rng.integers(0, 2, (40, 1))
    rois6 = np.concatenate([batch, centres, sizes, angles], 1).astype(dtype)
    attributes = dict(output_height=4, output_width=6, spatial_scale=0.75, sampling_ratio=0,
                      aligned=aligned, clockwise=clockwise)
    ours = session(library, mmcv_model("MMCVRoIAlignRotated", attributes, dtype)).run(
        None, dict(input=X, rois=rois6))[0]
    expected = pyroi.roi_align_rotated(X, rois6, (4, 6), 0.75, 0, bool(aligned),
                                       bool(clockwise), angle="radians")
    assert_same_bits(ours, expected)


def test_mmcv_nodes_need_their_output_size(library):
    X, rois, batch = random_case(11)
    rois5 = np.concatenate([batch[:, None].astype(np.float32), rois], 1)
    with pytest.raises(Exception, match="output_height"):
        session(library, mmcv_model("MMCVRoiAlign", dict(output_width=2))).run(
            None, dict(input=X, rois=rois5))
    with pytest.raises(Exception, match="rois must be"):
        session(library, mmcv_model("MMCVRoIAlignRotated",
                                    dict(output_height=2, output_width=2))).run(
            None, dict(input=X, rois=rois5))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_mmcv_prroi_pool_gives_pyroi_prroi_pool_bits(library, dtype):
    """mmcv's exported mmcv::PrRoIPool (pooled_height_i, pooled_width_i, spatial_scale_f)."""
    X, rois, batch = random_case(12, dtype)
    rois5 = np.concatenate([batch[:, None].astype(dtype), rois], 1)
    attributes = dict(pooled_height=3, pooled_width=5, spatial_scale=0.5)
    ours = session(library, mmcv_model("PrRoIPool", attributes, dtype)).run(
        None, dict(input=X, rois=rois5))[0]
    assert_same_bits(ours, pyroi.prroi_pool(X, rois5, (3, 5), 0.5))
    with pytest.raises(Exception, match="pooled_height"):
        session(library, mmcv_model("PrRoIPool", dict(pooled_width=2), dtype)).run(
            None, dict(input=X, rois=rois5))


OVERRIDE_CASES = [(opset, mode, ratio) for opset in (10, 16, 22) for mode in ("avg", "max")
                  for ratio in (0, 2)]


@pytest.mark.parametrize("opset, mode, ratio", OVERRIDE_CASES,
                         ids=[f"opset{o}-{m}-sr{r}" for o, m, r in OVERRIDE_CASES])
def test_the_override_gives_onnxruntimes_own_bits(library, opset, mode, ratio):
    """pyroi.override_roi_align=1: standard RoiAlign nodes run on pyroi with onnxruntime's
    bits; each opset's default coordinate mode (RoiAlign-10 never shifts); opset 22, which
    onnxruntime 1.32 cannot run, gives RoiAlign-16's bits."""
    X, rois, batch = random_case(13)
    feed = dict(X=X, rois=rois, batch_indices=batch)
    inputs = ["X", "rois", "batch_indices"]
    attributes = dict(mode=mode, output_height=3, output_width=4, sampling_ratio=ratio,
                      spatial_scale=0.5)
    ours = session(library, model("RoiAlign", attributes, inputs, domain="", opset=opset),
                   override="1").run(None, feed)[0]
    theirs = session(None, model("RoiAlign", attributes, inputs, domain="",
                                 opset=min(opset, 16))).run(None, feed)[0]
    assert_same_bits(ours, theirs)
    shifted = opset >= 16
    assert_same_bits(ours, ponnx.roi_align(X, rois, batch, opset=16, **attributes,
                                           coordinate_transformation_mode="half_pixel" if
                                           shifted else "output_half_pixel"))


def test_the_override_runs_pyroi_and_is_opt_in(library):
    """A half_pixel box inverted on one axis with adaptive sampling: onnxruntime's own kernel
    fails ("Integer overflow"), pyroi computes it. Only sessions that ask get the override."""
    X, _, _ = random_case(14)
    rois = np.array([[9.0, 2.0, 1.0, 9.0]], np.float32)  # grid_w = ceil(-8 / 2) < 0
    feed = dict(X=X, rois=rois, batch_indices=np.zeros(1, np.int64))
    graph = model("RoiAlign", dict(output_height=2, output_width=2), ["X", "rois",
                                                                       "batch_indices"],
                  domain="", opset=16)
    ours = session(library, graph, override="1").run(None, feed)[0]
    assert ours.shape == (1, 6, 2, 2) and np.isfinite(ours).all()
    for override in (None, "0"):
        with pytest.raises(Exception, match="[Oo]verflow"):
            session(library, graph, override=override).run(None, feed)
    with pytest.raises(Exception, match="override_roi_align"):
        session(library, graph, override="yes")
    with pytest.raises(Exception, match="coordinate_transformation_mode"):
        session(library, model("RoiAlign", dict(coordinate_transformation_mode="half_pixel"),
                               ["X", "rois", "batch_indices"], domain="", opset=10),
                override="1").run(None, feed)


@pytest.mark.parametrize("opset", [10, 16])
def test_rewritten_models_give_the_same_bits_and_round_trip(library, opset, tmp_path):
    """pyroi.onnx.rewrite_model / `pyroi onnx-rewrite`: standard RoiAlign and MaxRoiPool nodes
    moved to the pyroi domain give onnxruntime's own results (RoiAlign-10's coordinate mode
    written out), and moving them back gives the model it started from."""
    from pyroi.cli import main

    X, rois, batch = random_case(15)
    rois5 = np.concatenate([batch[:, None].astype(np.float32), rois], 1)
    values = [helper.make_tensor_value_info(n, t, None) for n, t in
              (("X", TensorProto.FLOAT), ("rois", TensorProto.FLOAT),
               ("batch_indices", TensorProto.INT64), ("rois5", TensorProto.FLOAT))]
    nodes = [helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["A"], mode="max",
                              output_height=3, output_width=2, sampling_ratio=2),
             helper.make_node("MaxRoiPool", ["X", "rois5"], ["P"], pooled_shape=[2, 3])]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("A", "P")]
    original = helper.make_model(helper.make_graph(nodes, "g", values, outputs),
                                 opset_imports=[helper.make_opsetid("", opset)])
    moved, count = ponnx.rewrite_model(original)
    assert count == 2 and [n.domain for n in moved.graph.node] == ["pyroi", "pyroi"]
    feed = dict(X=X, rois=rois, batch_indices=batch, rois5=rois5)
    ours = session(library, moved.SerializeToString()).run(None, feed)
    theirs = session(None, original.SerializeToString()).run(None, feed)
    for a, b in zip(ours, theirs):
        assert_same_bits(a, b)
    back, count = ponnx.rewrite_model(moved, back=True)
    assert count == 2 and back.SerializeToString() == original.SerializeToString()
    source, target = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(original, source)
    assert main(["onnx-rewrite", str(source), str(target)]) == 0
    assert onnx.load(target).SerializeToString() == moved.SerializeToString()


def test_rewrite_refuses_what_roi_align_10_cannot_express(tmp_path):
    from pyroi.cli import main

    node = helper.make_node("RoiAlign", ["X", "rois", "b"], ["Y"], domain="pyroi",
                            coordinate_transformation_mode="half_pixel")
    model = helper.make_model(helper.make_graph([node], "g", [], []),
                              opset_imports=[helper.make_opsetid("", 10),
                                             helper.make_opsetid("pyroi", 1)])
    with pytest.raises(pyroi.InvalidArgumentError, match="before opset 16"):
        ponnx.rewrite_model(model, back=True)
    with pytest.raises(pyroi.ArgumentTypeError, match="ModelProto"):
        ponnx.rewrite_model(b"not a model")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    assert main(["onnx-rewrite", str(bad), str(tmp_path / "out.onnx")]) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_position_sensitive_ops_give_pyroi_bits(library, dtype):
    """pyroi::PSRoIAlign and pyroi::PSRoIPool: RoiAlign's inputs, torchvision's semantics,
    C / (output_height * output_width) output channels."""
    rng = np.random.default_rng(16)
    X = rng.random((2, 24, 19, 23)).astype(dtype)
    _, rois, batch = random_case(16, dtype)
    feed = dict(X=X, rois=rois, batch_indices=batch)
    inputs = ["X", "rois", "batch_indices"]
    align = session(library, model("PSRoIAlign", dict(output_height=2, output_width=3,
                                                      spatial_scale=0.5, sampling_ratio=2),
                                   inputs, dtype)).run(None, feed)[0]
    assert_same_bits(align, pyroi.ps_roi_align(X, rois, (2, 3), 0.5, 2, batch_indices=batch))
    pool = session(library, model("PSRoIPool", dict(output_height=3, output_width=2,
                                                    spatial_scale=0.5),
                                  inputs, dtype)).run(None, feed)[0]
    assert pool.shape == (50, 4, 3, 2)
    assert_same_bits(pool, pyroi.ps_roi_pool(X, rois, (3, 2), 0.5, batch_indices=batch))
    with pytest.raises(Exception, match="multiple of"):
        session(library, model("PSRoIPool", dict(output_height=5, output_width=5), inputs,
                               dtype)).run(None, feed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("angle", ["degrees", "radians"])
def test_rotated_op_gives_pyroi_bits(library, dtype, angle):
    rng = np.random.default_rng(17)
    X = rng.random((2, 4, 21, 27)).astype(dtype)
    rois = np.concatenate([rng.uniform(0, 27, (30, 2)), rng.uniform(1, 15, (30, 2)),
                           rng.uniform(-180, 180, (30, 1))], 1).astype(dtype)
    batch = rng.integers(0, 2, 30).astype(np.int64)
    attributes = dict(output_height=3, output_width=5, spatial_scale=0.75, sampling_ratio=2,
                      aligned=0, clockwise=1, angle=angle)
    ours = session(library, model("RoIAlignRotated", attributes,
                                  ["X", "rois", "batch_indices"], dtype)).run(
        None, dict(X=X, rois=rois, batch_indices=batch))[0]
    expected = pyroi.roi_align_rotated(X, rois, (3, 5), 0.75, 2, False, True, angle=angle,
                                       batch_indices=batch)
    assert_same_bits(ours, expected)
    with pytest.raises(Exception, match="angle"):
        session(library, model("RoIAlignRotated", dict(angle="turns"),
                               ["X", "rois", "batch_indices"], dtype)).run(
            None, dict(X=X, rois=rois, batch_indices=batch))


# ---- pyroi::CropAndResize: onnxruntime's contrib com.microsoft.CropAndResize -------------

def crop_model(domain, attributes, dtype=np.float32, index_type=TensorProto.INT32,
               size_type=TensorProto.INT32):
    """One CropAndResize node (domain "pyroi" or "com.microsoft": onnxruntime's own)."""
    values = [helper.make_tensor_value_info("X", TYPES[dtype], None),
              helper.make_tensor_value_info("rois", TYPES[dtype], None),
              helper.make_tensor_value_info("batch_indices", index_type, None),
              helper.make_tensor_value_info("crop_size", size_type, None)]
    node = helper.make_node("CropAndResize", ["X", "rois", "batch_indices", "crop_size"],
                            ["Y"], domain=domain, **attributes)
    graph = helper.make_graph([node], "crop", values,
                              [helper.make_tensor_value_info("Y", TYPES[dtype], None)])
    imports = [helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)]
    return helper.make_model(graph, opset_imports=imports).SerializeToString()


def crop_case(seed, dtype=np.float32, num_rois=40):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((2, 5, 19, 23)).astype(dtype)
    corner = rng.uniform(-0.3, 1.1, (num_rois, 2))  # some boxes reach off the image
    rois = np.concatenate([corner, corner + rng.uniform(-0.2, 0.9, (num_rois, 2))], 1)
    return X, rois.astype(dtype), rng.integers(0, 2, num_rois).astype(np.int32)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("crop", [(1, 1), (7, 7), (3, 8)])
def test_crop_and_resize_gives_onnxruntimes_bits(library, mode, crop):
    X, rois, batch = crop_case(31 + crop[1])
    attributes = dict(mode=mode, extrapolation_value=-0.75)
    feed = dict(X=X, rois=rois, batch_indices=batch, crop_size=np.array(crop, np.int32))
    ours = session(library, crop_model("pyroi", attributes)).run(None, feed)[0]
    try:
        theirs_session = session(None, crop_model("com.microsoft", attributes))
    except Exception as error:  # a build without the contrib ops
        pytest.skip(f"onnxruntime has no com.microsoft CropAndResize: {error}")
    assert ours.shape == (len(rois), 5) + crop
    assert_same_bits(ours, theirs_session.run(None, feed)[0])
    assert_same_bits(ours, ponnx.crop_and_resize(X, rois, batch, crop, **attributes))


def test_crop_and_resize_float64_int64_threads_and_no_rois(library):
    X, rois, batch = crop_case(41, np.float64, num_rois=200)
    graph = crop_model("pyroi", {}, np.float64, TensorProto.INT64, TensorProto.INT64)
    feed = dict(X=X, rois=rois, batch_indices=batch.astype(np.int64),
                crop_size=np.array([6, 5], np.int64))
    results = [session(library, graph, threads).run(None, feed)[0] for threads in (1, 2, 3)]
    assert_same_bits(results[0], ponnx.crop_and_resize(X, rois, batch, (6, 5)))
    for result in results[1:]:
        assert_same_bits(result, results[0])
    empty = dict(feed, rois=rois[:0], batch_indices=feed["batch_indices"][:0])
    assert session(library, graph).run(None, empty)[0].shape == (0, 5, 6, 5)


def test_crop_and_resize_bad_inputs_are_errors_naming_them(library):
    X, rois, batch = crop_case(43)
    feed = dict(X=X, rois=rois, batch_indices=batch, crop_size=np.array([2, 2], np.int32))
    graph = session(library, crop_model("pyroi", {}))
    for crop_size in ([0, 2], [2], [2, 2, 2]):
        with pytest.raises(Exception, match="crop_size"):
            graph.run(None, dict(feed, crop_size=np.array(crop_size, np.int32)))
    with pytest.raises(Exception, match="batch_indices"):
        graph.run(None, dict(feed, batch_indices=batch + 2))
    not_finite = rois.copy()
    not_finite[3, 1] = np.nan
    with pytest.raises(Exception, match="rois"):
        graph.run(None, dict(feed, rois=not_finite))
    with pytest.raises(Exception, match="mode"):
        session(library, crop_model("pyroi", dict(mode="bicubic"))).run(None, feed)
    with pytest.raises(Exception, match="float16"):
        session(library, crop_model("pyroi", {}, np.float16)).run(
            None, dict(feed, X=X.astype(np.float16), rois=rois.astype(np.float16)))
