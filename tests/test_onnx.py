"""pyroi.onnx: ONNX RoiAlign (avg and onnxruntime's max) and MaxRoiPool, against onnxruntime
(bit for bit), the ONNX backend node tests, onnxruntime's unit-test expectations and a slow
reference written from docs/semantics.md §4.1. Tests needing onnx / onnxruntime skip without
them."""

import numpy as np
import pytest

import pyroi
from conftest import AVG_MODE_POSITIVE_C0, inverted_policy, random_input, random_rois, stable_seed
from pyroi import onnx as ponnx
from reference_onnx import onnx_roi_align_max_ref


def _optional(name):
    """Import an optional oracle or skip (any ImportError: also a broken install)."""
    try:
        return __import__(name)
    except ImportError as exc:
        pytest.skip(f"{name} not available: {exc}")


@pytest.fixture
def onnx_mod():
    return _optional("onnx")


@pytest.fixture
def ort(onnx_mod):
    return _optional("onnxruntime")


def assert_bits_equal(actual, expected):
    """Bit-for-bit equality (signed zeros and NaN payload-agnostic NaN positions)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    nan_a, nan_e = np.isnan(actual), np.isnan(expected)
    assert np.array_equal(nan_a, nan_e)
    uint = np.uint32 if actual.dtype == np.float32 else np.uint64
    a = np.where(nan_a, 0, actual).view(uint)
    e = np.where(nan_e, 0, expected).view(uint)
    mismatch = np.flatnonzero(a != e)
    assert mismatch.size == 0, (
        f"{mismatch.size} elements differ, first at {mismatch[:5]}: "
        f"{actual.ravel()[mismatch[:5]]} vs {expected.ravel()[mismatch[:5]]}"
    )


def _ort_session(onnx_mod, ort, node, inputs, opset):
    from onnx import TensorProto, helper

    types = {np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.float32): TensorProto.FLOAT,
             np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.int64): TensorProto.INT64}
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(name, types[array.dtype], array.shape)
         for name, array in zip(node.input, inputs)],
        [helper.make_tensor_value_info("Y", types[inputs[0].dtype], None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(node.input, inputs)))[0]


def ort_roi_align(onnx_mod, ort, X, rois, batch_indices, opset, **attributes):
    node = onnx_mod.helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"],
                                     **attributes)
    return _ort_session(onnx_mod, ort, node, [X, rois, batch_indices], opset)


# ---- random cases against onnxruntime ------------------------------------------------------

# (opset, coordinate_transformation_mode): RoiAlign-10, and 16 with each mode and the default
# (onnxruntime 1.32 has no RoiAlign-22 kernel)
COORDINATE_CASES = [(10, None), (16, "half_pixel"), (16, "output_half_pixel"), (16, None)]


def random_onnx_case(dtype, aligned, sampling_ratio, salt=""):
    rng = np.random.default_rng(stable_seed("onnx", np.dtype(dtype).name, aligned,
                                            sampling_ratio, salt))
    n, c, h, w, k = 2, 3, 9, 11, 14
    x = random_input(rng, (n, c, h, w), dtype)
    scale = 0.7
    rois = random_rois(rng, n, h, w, k, dtype, spatial_scale=scale,
                       inverted=inverted_policy(aligned, sampling_ratio))
    return x, np.ascontiguousarray(rois[:, 1:]), rois[:, 0].astype(np.int64), scale


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("opset,ctm", COORDINATE_CASES)
@pytest.mark.parametrize("sampling_ratio", [0, 1, 2])
def test_random_bit_exact_vs_onnxruntime(onnx_mod, ort, dtype, mode, opset, ctm,
                                         sampling_ratio):
    aligned = ctm == "half_pixel" or (ctm is None and opset >= 16)
    x, rois, batch, scale = random_onnx_case(dtype, aligned, sampling_ratio)
    attributes = dict(mode=mode, output_height=3, output_width=2,
                      sampling_ratio=sampling_ratio, spatial_scale=scale)
    if ctm is not None:
        attributes["coordinate_transformation_mode"] = ctm
    expected = ort_roi_align(onnx_mod, ort, x, rois, batch, opset, **attributes)
    actual = ponnx.roi_align(x, rois, batch, opset=opset, **attributes)
    assert_bits_equal(actual, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_max_matches_reference(dtype, aligned, sampling_ratio):
    """The slow reference of docs/semantics.md §4.1 (runs without onnxruntime)."""
    x, rois, batch, scale = random_onnx_case(dtype, aligned, sampling_ratio, salt="ref")
    ctm = "half_pixel" if aligned else "output_half_pixel"
    actual = ponnx.roi_align(x, rois, batch, mode="max", output_height=3, output_width=2,
                             sampling_ratio=sampling_ratio, spatial_scale=scale,
                             coordinate_transformation_mode=ctm)
    expected = onnx_roi_align_max_ref(x, rois, batch, 3, 2, sampling_ratio, scale, aligned)
    assert_bits_equal(actual, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aligned", [False, True])
def test_avg_is_pyroi_roi_align(dtype, aligned):
    x, rois, batch, scale = random_onnx_case(dtype, aligned, 0, salt="avg")
    ctm = "half_pixel" if aligned else "output_half_pixel"
    actual = ponnx.roi_align(x, rois, batch, output_height=2, output_width=3,
                             spatial_scale=scale, coordinate_transformation_mode=ctm)
    expected = pyroi.roi_align(x, rois, (2, 3), float(np.float32(scale)), 0, aligned,
                               batch_indices=batch)
    assert_bits_equal(actual, expected)


def test_float64_scale_is_the_float32_attribute():
    """docs/semantics.md §9.1: the FLOAT attribute 0.3 acts as float32(0.3) also on float64
    data."""
    x, rois, batch, _ = random_onnx_case(np.float64, False, 2, salt="g10")
    actual = ponnx.roi_align(x, rois, batch, spatial_scale=0.3, sampling_ratio=2,
                             coordinate_transformation_mode="output_half_pixel")
    narrowed = pyroi.roi_align(x, rois, 1, float(np.float32(0.3)), 2, batch_indices=batch)
    exact = pyroi.roi_align(x, rois, 1, 0.3, 2, batch_indices=batch)
    assert_bits_equal(actual, narrowed)
    assert not np.array_equal(actual, exact)


# ---- ONNX backend node tests ---------------------------------------------------------------

BACKEND_TESTS = ("test_roialign_aligned_false", "test_roialign_aligned_true",
                 "test_roialign_mode_max")


def _backend_test_dir(onnx_mod, name, tmp_path_factory):
    """The node test directory shipped in the onnx package, or (wheels without
    backend/test/data) one written from onnx's own case generator, in the same format."""
    import os

    shipped = os.path.join(os.path.dirname(onnx_mod.__file__), "backend", "test", "data",
                           "node", name)
    if os.path.isdir(shipped):
        return shipped
    from onnx import numpy_helper
    from onnx.backend.test.case import node as node_cases
    from onnx.backend.test.case.node import roialign as roialign_cases

    # importing the case module runs its exporters, which register the cases
    cases = [c for c in node_cases._NodeTestCases if c.name == name]
    if not cases:
        getattr(roialign_cases.RoiAlign, "export_" + name[len("test_"):])()
        cases = [c for c in node_cases._NodeTestCases if c.name == name]
    case = cases[0]
    directory = tmp_path_factory.mktemp(name)
    onnx_mod.save(case.model, str(directory / "model.onnx"))
    data = directory / "test_data_set_0"
    data.mkdir()
    inputs, outputs = case.data_sets[0]
    for i, (array, info) in enumerate(zip(inputs, case.model.graph.input)):
        (data / f"input_{i}.pb").write_bytes(
            numpy_helper.from_array(array, info.name).SerializeToString())
    for i, (array, info) in enumerate(zip(outputs, case.model.graph.output)):
        (data / f"output_{i}.pb").write_bytes(
            numpy_helper.from_array(array, info.name).SerializeToString())
    return str(directory)


def _load_backend_test(onnx_mod, directory):
    import glob
    import os

    from onnx import numpy_helper

    model = onnx_mod.load(os.path.join(directory, "model.onnx"))

    def read(pattern):
        arrays = []
        for path in sorted(glob.glob(os.path.join(directory, "test_data_set_0", pattern))):
            tensor = onnx_mod.TensorProto()
            with open(path, "rb") as f:
                tensor.ParseFromString(f.read())
            arrays.append(numpy_helper.to_array(tensor))
        return arrays

    return model, read("input_*.pb"), read("output_*.pb")


@pytest.mark.parametrize("name", BACKEND_TESTS)
def test_onnx_backend_node_tests(onnx_mod, name, tmp_path_factory):
    model, inputs, outputs = _load_backend_test(
        onnx_mod, _backend_test_dir(onnx_mod, name, tmp_path_factory))
    opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")][0]
    (node,) = model.graph.node
    actual = ponnx.run_node(node, *inputs, opset=opset)
    # the loader's tolerance (onnx/backend/test/loader: rtol 1e-3, atol 1e-7)
    np.testing.assert_allclose(actual, outputs[0], rtol=1e-3, atol=1e-7)
    if name == "test_roialign_mode_max":  # onnxruntime matches these expectations exactly
        assert_bits_equal(actual, outputs[0])


@pytest.mark.parametrize("name", BACKEND_TESTS)
def test_onnx_backend_node_tests_vs_onnxruntime(onnx_mod, ort, name, tmp_path_factory):
    model, inputs, _ = _load_backend_test(
        onnx_mod, _backend_test_dir(onnx_mod, name, tmp_path_factory))
    opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")][0]
    assert opset >= 16
    # onnxruntime 1.32 implements RoiAlign up to 16; RoiAlign-22 only adds bfloat16, so the
    # same node runs unchanged as RoiAlign-16
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = 16
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    expected = session.run(None, {i.name: a for i, a in zip(model.graph.input, inputs)})[0]
    actual = ponnx.run_node(model.graph.node[0], *inputs, opset=opset)
    assert_bits_equal(actual, expected)


# ---- onnxruntime unit tests (docs/semantics.md §11.2) and verified quirks (§11.6) ----------

def _ort_unit_inputs(dtype):
    x = np.arange(75, dtype=dtype).reshape(1, 3, 5, 5)
    rois = np.array([[7, 5, 7, 5], [-15, -15, -15, -15], [-10, 21, -10, 21], [13, 8, 13, 8],
                     [-14, 19, -14, 19]], dtype=dtype)
    return x, rois, np.zeros(5, np.int64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("opset,ctm", [(10, None), (16, "output_half_pixel")])
def test_avg_mode_positive(dtype, opset, ctm):
    x, rois, batch = _ort_unit_inputs(dtype)
    y = ponnx.roi_align(x, rois, batch, output_height=3, output_width=4, sampling_ratio=2,
                        spatial_scale=1 / 16, opset=opset,
                        coordinate_transformation_mode=ctm)
    expected = np.stack([AVG_MODE_POSITIVE_C0 + 25.0 * c for c in range(3)], axis=1)
    np.testing.assert_allclose(y, expected, atol=5e-5, rtol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_mode_positive_half_pixel(dtype):
    x, rois, batch = _ort_unit_inputs(dtype)
    y = ponnx.roi_align(x, rois, batch, output_height=3, output_width=4, sampling_ratio=2,
                        spatial_scale=1 / 16)  # opset 16 default: half_pixel
    c0 = np.array([0.0, 0.0, 0.0, 0.3125, 0.0])
    hits = np.array([1.0, 0.0, 0.0, 1.0, 0.0])
    expected = (c0[:, None] + 25.0 * np.arange(3)[None, :] * hits[:, None])[:, :, None, None]
    np.testing.assert_allclose(y, np.broadcast_to(expected, y.shape), atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_mode_positive(dtype):
    x, rois, batch = _ort_unit_inputs(dtype)
    y = ponnx.roi_align(x, rois, batch, mode="max", output_height=3, output_width=4,
                        sampling_ratio=2, spatial_scale=1 / 16, opset=10)
    roi0_c0 = [[2.10938, 2.95313, 3.375, 2.53125], [3.35938, 4.70313, 5.375, 4.03125],
               [3.51563, 4.92188, 5.625, 4.21875]]
    np.testing.assert_allclose(y[0, 0], roi0_c0, atol=5e-5, rtol=0)
    np.testing.assert_allclose(y[0, 1, 0], [10.8984, 15.2578, 17.4375, 13.0781], atol=5e-5)
    for c in range(3):  # RoI 1 samples lie in [-1, 0]: all clamped onto pixel (0, 0)
        np.testing.assert_array_equal(y[1, c], np.full((3, 4), 25.0 * c))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_mode_unit_tests_vs_onnxruntime(onnx_mod, ort, dtype):
    x, rois, batch = _ort_unit_inputs(dtype)
    attributes = dict(mode="max", output_height=3, output_width=4, sampling_ratio=2,
                      spatial_scale=1 / 16)
    expected = ort_roi_align(onnx_mod, ort, x, rois, batch, 10, **attributes)
    assert_bits_equal(ponnx.roi_align(x, rois, batch, opset=10, **attributes), expected)


@pytest.mark.parametrize("sign,ctm,max_value,avg_value", [
    (1, "output_half_pixel", 1.0, 2.5),
    (-1, "output_half_pixel", -0.25, -2.5),
    (1, "half_pixel", 1.0, 1.0),
    (-1, "half_pixel", -0.0, -1.0),
])
def test_max_quirks(sign, ctm, max_value, avg_value):
    """docs/semantics.md §11.6: a quarter of the peak, and -0.0 beating every negative tap."""
    x = sign * np.array([[[[1, 2], [3, 4]]]], np.float32)
    rois = np.array([[0, 0, 1, 1]], np.float32)
    batch = np.zeros(1, np.int64)
    kwargs = dict(sampling_ratio=1, coordinate_transformation_mode=ctm)
    y_max = ponnx.roi_align(x, rois, batch, mode="max", **kwargs)
    y_avg = ponnx.roi_align(x, rois, batch, mode="avg", **kwargs)
    assert_bits_equal(y_max, np.full((1, 1, 1, 1), max_value, np.float32))
    assert_bits_equal(y_avg, np.full((1, 1, 1, 1), avg_value, np.float32))


def test_mode_is_case_insensitive():
    x = np.array([[[[1, 2], [3, 4]]]], np.float64)
    rois = np.array([[0, 0, 1, 1]], np.float64)
    batch = np.zeros(1, np.int64)
    assert_bits_equal(ponnx.roi_align(x, rois, batch, mode="Max"),
                      ponnx.roi_align(x, rois, batch, mode="max"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("corner", [np.inf, -np.inf, np.nan])
def test_max_out_of_map_sample_reads_pixel_zero(dtype, corner):
    """An out-of-map sample contributes 0 * X[b, c, 0, 0]: NaN when that is not finite --
    but only if it comes first (M keeps its first argument unless the second is larger)."""
    x = np.arange(1, 17, dtype=dtype).reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = corner
    rois = np.array([[-30, -30, -20, -20], [-3, 1, 3, 3], [1, 1, 8, 3]], dtype=dtype)
    batch = np.zeros(3, np.int64)
    kwargs = dict(mode="max", sampling_ratio=2, output_height=1, output_width=1,
                  coordinate_transformation_mode="output_half_pixel")
    y = ponnx.roi_align(x, rois, batch, **kwargs)
    expected = onnx_roi_align_max_ref(x, rois, batch, 1, 1, 2, 1.0, False)
    assert_bits_equal(y, expected)
    assert np.isnan(y[0, 0, 0, 0])  # every sample outside


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_out_of_map_vs_onnxruntime(onnx_mod, ort, dtype):
    x = np.arange(1, 17, dtype=dtype).reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = np.inf
    rois = np.array([[-30, -30, -20, -20], [-3, 1, 3, 3], [1, 1, 8, 3], [2, -6, 3, 2]],
                    dtype=dtype)
    batch = np.zeros(4, np.int64)
    attributes = dict(mode="max", sampling_ratio=2, coordinate_transformation_mode="half_pixel")
    expected = ort_roi_align(onnx_mod, ort, x, rois, batch, 16, **attributes)
    assert_bits_equal(ponnx.roi_align(x, rois, batch, **attributes), expected)


# ---- layouts, threads, edge shapes ---------------------------------------------------------

@pytest.mark.parametrize("mode", ["avg", "max"])
def test_strided_input_and_out(mode):
    x, rois, batch, scale = random_onnx_case(np.float32, True, 2, salt="strided")
    kwargs = dict(mode=mode, output_height=2, output_width=3, sampling_ratio=2,
                  spatial_scale=scale)
    expected = ponnx.roi_align(x, rois, batch, **kwargs)
    transposed = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    flipped = np.ascontiguousarray(x[:, :, ::-1])[:, :, ::-1]
    for view in (transposed, flipped):
        assert_bits_equal(ponnx.roi_align(view, rois, batch, **kwargs), expected)
    out = np.zeros((rois.shape[0], x.shape[1], 3, 2), np.float32).transpose(0, 1, 3, 2)
    result = ponnx.roi_align(x, rois, batch, out=out, **kwargs)
    assert result is out
    assert_bits_equal(out, expected)


def test_max_threads_bit_identical():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 48, 40, 44)).astype(np.float32)
    k = 300
    corners = rng.uniform(-8, 52, (k, 2))
    rois = np.concatenate([corners, corners + rng.uniform(0, 30, (k, 2))], axis=1)
    rois = rois.astype(np.float32)
    batch = (np.arange(k) % 2).astype(np.int64)
    kwargs = dict(mode="max", output_height=7, output_width=7, spatial_scale=0.75)
    y1 = ponnx.roi_align(x, rois, batch, num_threads=1, **kwargs)
    for threads in (2, 3):
        assert_bits_equal(ponnx.roi_align(x, rois, batch, num_threads=threads, **kwargs), y1)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_empty_shapes(mode):
    x = np.zeros((1, 2, 3, 3), np.float32)
    empty = ponnx.roi_align(x, np.zeros((0, 4), np.float32), np.zeros(0, np.int64), mode=mode,
                            output_height=2, output_width=2)
    assert empty.shape == (0, 2, 2, 2)
    no_channels = ponnx.roi_align(np.zeros((1, 0, 3, 3), np.float32),
                                  np.ones((2, 4), np.float32), np.zeros(2, np.int64), mode=mode)
    assert no_channels.shape == (2, 0, 1, 1)
    no_pixels = ponnx.roi_align(np.zeros((1, 2, 0, 3), np.float32),
                                np.ones((1, 4), np.float32), np.zeros(1, np.int64), mode=mode)
    assert_bits_equal(no_pixels, np.zeros((1, 2, 1, 1), np.float32))


def test_empty_grid_is_zero():
    """A zero-size aligned RoI with adaptive sampling has no samples: 0 (no division)."""
    x = -np.ones((1, 1, 4, 4), np.float32)
    y = ponnx.roi_align(x, np.array([[1, 1, 1, 3]], np.float32), np.zeros(1, np.int64),
                        mode="max", output_height=2, output_width=2)
    assert_bits_equal(y, np.zeros((1, 1, 2, 2), np.float32))


# ---- errors --------------------------------------------------------------------------------

def _args():
    return (np.zeros((1, 1, 4, 4), np.float32), np.array([[0, 0, 2, 2]], np.float32),
            np.zeros(1, np.int64))


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(sampling_ratio=-1), pyroi.InvalidArgumentError, "sampling_ratio"),
    (dict(coordinate_transformation_mode="align_corners"), pyroi.InvalidArgumentError,
     "coordinate_transformation_mode"),
    (dict(coordinate_transformation_mode="half_pixel", opset=10), pyroi.InvalidArgumentError,
     "opset"),
    (dict(opset=9), pyroi.InvalidArgumentError, "opset"),
    (dict(mode="mean"), pyroi.InvalidArgumentError, "mode"),
    (dict(output_height=0), pyroi.InvalidArgumentError, "output_height"),
    (dict(output_width=1.5), pyroi.ArgumentTypeError, "output_width"),
    (dict(spatial_scale=-1.0), pyroi.InvalidArgumentError, "spatial_scale"),
    (dict(spatial_scale=1e300), pyroi.InvalidArgumentError, "float32"),
    (dict(num_threads=0), pyroi.InvalidArgumentError, "num_threads"),
])
def test_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        ponnx.roi_align(*_args(), **kwargs)


def test_input_errors():
    x, rois, batch = _args()
    with pytest.raises(pyroi.DTypeError, match="int64"):
        ponnx.roi_align(x, rois, batch.astype(np.int32))
    with pytest.raises(pyroi.BatchIndexError, match="RoI 0"):
        ponnx.roi_align(x, rois, np.array([1], np.int64))
    with pytest.raises(pyroi.ShapeError, match="rois"):
        ponnx.roi_align(x, np.zeros((1, 5), np.float32), batch)
    with pytest.raises(pyroi.ShapeError, match="batch_indices"):
        ponnx.roi_align(x, rois, np.zeros(2, np.int64))
    with pytest.raises(pyroi.DTypeError, match="rois"):
        ponnx.roi_align(x, rois.astype(np.float64), batch)
    with pytest.raises(pyroi.BoxError, match="RoI 0"):
        ponnx.roi_align(x, np.array([[0, np.nan, 1, 1]], np.float32), batch)
    with pytest.raises(pyroi.DTypeError, match="X"):
        ponnx.roi_align(x.astype(np.int32), rois, batch)


# ---- MaxRoiPool ----------------------------------------------------------------------------

def _random_pool_case(seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = random_input(rng, (2, 3, 9, 11), dtype)
    rois = random_rois(rng, 2, 9, 11, 16, dtype, spatial_scale=0.5, inverted="any")
    return x, rois


def test_max_roi_pool_is_roi_pool():
    for dtype in (np.float32, np.float64):
        x, rois = _random_pool_case(1, dtype)
        assert_bits_equal(ponnx.max_roi_pool(x, rois, (3, 2), 0.5),
                          pyroi.roi_pool(x, rois, (3, 2), 0.5))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_max_roi_pool_vs_onnxruntime(onnx_mod, ort, seed):
    x, rois = _random_pool_case(seed)
    x[0, 1] = -np.abs(x[0, 1])  # all-negative bins
    node = onnx_mod.helper.make_node("MaxRoiPool", ["X", "rois"], ["Y"], pooled_shape=[3, 2],
                                     spatial_scale=0.5)
    expected = _ort_session(onnx_mod, ort, node, [x, rois], 1)
    assert_bits_equal(ponnx.run_node(node, x, rois), expected)
    assert_bits_equal(ponnx.max_roi_pool(x, rois, [3, 2], spatial_scale=0.5), expected)


def test_max_roi_pool_errors():
    x, rois = _random_pool_case(3)
    with pytest.raises(pyroi.InvalidArgumentError, match="pooled_shape"):
        ponnx.max_roi_pool(x, rois, (3, 2, 1))
    with pytest.raises(pyroi.InvalidArgumentError, match="pooled_shape"):
        ponnx.max_roi_pool(x, rois, (0, 2))
    with pytest.raises(pyroi.ShapeError, match="rois"):
        ponnx.max_roi_pool(x, rois[:, 1:], (2, 2))


# ---- run_node ------------------------------------------------------------------------------

def test_run_node_reads_attributes(onnx_mod):
    x, rois, batch, scale = random_onnx_case(np.float32, False, 2, salt="node")
    node = onnx_mod.helper.make_node(
        "RoiAlign", ["X", "rois", "batch_indices"], ["Y"], mode="max", output_height=3,
        output_width=2, sampling_ratio=2, spatial_scale=scale,
        coordinate_transformation_mode="output_half_pixel")
    expected = ponnx.roi_align(x, rois, batch, mode="max", output_height=3, output_width=2,
                               sampling_ratio=2, spatial_scale=scale,
                               coordinate_transformation_mode="output_half_pixel")
    assert_bits_equal(ponnx.run_node(node, x, rois, batch), expected)
    bare = onnx_mod.helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"])
    assert_bits_equal(ponnx.run_node(bare, x, rois, batch, opset=10),
                      ponnx.roi_align(x, rois, batch, opset=10))


def test_run_node_errors(onnx_mod):
    x, rois, batch = _args()
    make = onnx_mod.helper.make_node
    with pytest.raises(pyroi.InvalidArgumentError, match="op_type"):
        ponnx.run_node(make("Relu", ["X"], ["Y"]), x, rois, batch)
    with pytest.raises(pyroi.InvalidArgumentError, match="attribute"):
        ponnx.run_node(make("RoiAlign", ["X", "r", "b"], ["Y"], pooled=3), x, rois, batch)
    with pytest.raises(pyroi.InvalidArgumentError, match="batch_indices"):
        ponnx.run_node(make("RoiAlign", ["X", "r", "b"], ["Y"]), x, rois)
    with pytest.raises(pyroi.InvalidArgumentError, match="domain"):
        ponnx.run_node(make("RoiAlign", ["X", "r", "b"], ["Y"], domain="com.x"), x, rois, batch)
    with pytest.raises(pyroi.InvalidArgumentError, match="pooled_shape"):
        ponnx.run_node(make("MaxRoiPool", ["X", "r"], ["Y"]), x, rois)
    with pytest.raises(pyroi.ArgumentTypeError, match="NodeProto"):
        ponnx.run_node("RoiAlign", x, rois, batch)


def test_run_node_mmcv_deform_roi_pool(onnx_mod):
    """mmcv's exported mmcv::MMCVDeformRoIPool (its symbolic: pooled_height_i, pooled_width_i,
    spatial_scale_f, sampling_ratio_f, gamma_f; inputs X, rois and, given one, offset)."""
    rng = np.random.default_rng(stable_seed("mmcv-deform"))
    x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    rois = np.array([[0, 1.3, 0.7, 8.2, 6.9], [1, -2.0, 3.1, 4.4, 12.0]], np.float32)
    offset = rng.standard_normal((2, 2, 3, 2)).astype(np.float32)
    node = onnx_mod.helper.make_node("MMCVDeformRoIPool", ["X", "rois", "offset"], ["Y"],
                                     domain="mmcv", pooled_height=3, pooled_width=2,
                                     spatial_scale=0.75, sampling_ratio=2.0, gamma=0.2)
    assert_bits_equal(ponnx.run_node(node, x, rois, offset),
                      pyroi.deform_roi_pool(x, rois, offset, (3, 2), 0.75, 2, 0.2))
    # no offset input, or mmcv's empty one: aligned RoIAlign
    for none in (None, np.zeros(0, np.float32)):
        assert_bits_equal(ponnx.run_node(node, x, rois, none),
                          pyroi.roi_align(x, rois, (3, 2), 0.75, 2, True))
    with pytest.raises(pyroi.InvalidArgumentError, match="whole number"):
        ponnx.run_node(onnx_mod.helper.make_node(
            "MMCVDeformRoIPool", ["X", "rois"], ["Y"], domain="mmcv", pooled_height=2,
            pooled_width=2, sampling_ratio=1.5), x, rois)
    with pytest.raises(pyroi.InvalidArgumentError, match="pooled_height"):
        ponnx.run_node(onnx_mod.helper.make_node("MMCVDeformRoIPool", ["X", "rois"], ["Y"],
                                                 domain="mmcv", pooled_width=2), x, rois)
    with pytest.raises(pyroi.ShapeError, match="offset"):
        ponnx.run_node(node, x, rois, offset[:, :1])


def test_run_node_mmcv_prroi_pool(onnx_mod):
    """mmcv's exported node (its symbolic: pooled_height_i, pooled_width_i, spatial_scale_f)."""
    rng = np.random.default_rng(stable_seed("mmcv-prroi"))
    x = rng.standard_normal((2, 3, 9, 11))
    rois = np.array([[0, 1.3, 0.7, 8.2, 6.9], [1, -2.0, 3.1, 4.4, 12.0], [1, 5, 5, 2, 7]])
    node = onnx_mod.helper.make_node("PrRoIPool", ["X", "rois"], ["Y"], domain="mmcv",
                                     pooled_height=3, pooled_width=2, spatial_scale=0.75)
    assert_bits_equal(ponnx.run_node(node, x, rois), pyroi.prroi_pool(x, rois, (3, 2), 0.75))
    bare = onnx_mod.helper.make_node("PrRoIPool", ["X", "rois"], ["Y"], domain="mmcv",
                                     pooled_height=2, pooled_width=4)
    assert_bits_equal(ponnx.run_node(bare, x, rois), pyroi.prroi_pool(x, rois, (2, 4)))
    with pytest.raises(pyroi.InvalidArgumentError, match="pooled_width"):
        ponnx.run_node(onnx_mod.helper.make_node("PrRoIPool", ["X", "rois"], ["Y"],
                                                 domain="mmcv", pooled_height=2), x, rois)
    with pytest.raises(pyroi.InvalidArgumentError, match="attribute 'mode'"):
        ponnx.run_node(onnx_mod.helper.make_node("PrRoIPool", ["X", "rois"], ["Y"],
                                                 domain="mmcv", pooled_height=2,
                                                 pooled_width=2, mode="avg"), x, rois)
    with pytest.raises(pyroi.InvalidArgumentError, match="two inputs"):
        ponnx.run_node(bare, x, rois, np.zeros(3, np.int64))
    with pytest.raises(pyroi.ShapeError, match="boxes"):
        ponnx.run_node(bare, x, rois[:, 1:])


# ---- RoIs inverted on one axis (half_pixel, adaptive): onnxruntime's error -----------------

INVERSION_ROIS = {
    "x_inverted": ([6, 1, 2, 5], True),     # grid_w = ceil(-4 / 2) = -2, grid_h > 0: error
    "y_inverted": ([1, 6, 5, 2], True),
    "both_inverted": ([6, 6, 2, 2], False),  # product >= 0: pools 0
    "x_slightly": ([3, 1, 2, 5], False),     # ceil(-1 / 2) = 0: no samples, pools 0
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(INVERSION_ROIS))
def test_one_axis_inverted_like_onnxruntime(onnx_mod, ort, dtype, case):
    box, raises = INVERSION_ROIS[case]
    x = np.arange(64, dtype=dtype).reshape(1, 1, 8, 8)
    rois = np.array([[0, 0, 4, 4], box], dtype=dtype)
    batch = np.zeros(2, np.int64)
    attributes = dict(output_height=2, output_width=2, sampling_ratio=0)
    if raises:
        with pytest.raises(Exception):
            ort_roi_align(onnx_mod, ort, x, rois, batch, 16, **attributes)
        with pytest.raises(pyroi.BoxError, match="RoI 1"):
            ponnx.roi_align(x, rois, batch, **attributes)
        # legacy mode and fixed sampling are fine
        ponnx.roi_align(x, rois, batch, coordinate_transformation_mode="output_half_pixel",
                        **attributes)
        ponnx.roi_align(x, rois, batch, **{**attributes, "sampling_ratio": 2})
    else:
        for mode in ("avg", "max"):
            expected = ort_roi_align(onnx_mod, ort, x, rois, batch, 16, mode=mode,
                                     **attributes)
            assert_bits_equal(ponnx.roi_align(x, rois, batch, mode=mode, **attributes),
                              expected)
