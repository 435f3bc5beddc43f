"""pyroi against OpenVINO's CPU plugin (skipped without openvino): which pyroi call each
OpenVINO pooling node matches, and how closely.

- ROIAlign-9 ``avg``: ``aligned_mode="asymmetric"`` is ``roi_align(aligned=False)``,
  ``"half_pixel_for_nn"`` is ``aligned=True``, ``sampling_ratio=0`` is adaptive. Not
  bit-exact: OpenVINO places the samples as ``y1 + i * bin + (iy + 0.5) * (bin / grid)``
  (torchvision: ``... + (iy + 0.5) * bin / grid``), interpolates with fused multiply-adds and
  multiplies the sum by ``1 / count``. The difference stays below ``1e-5`` of the map's
  largest magnitude (measured: 5e-7).
- ROIAlign-9 ``max``: the largest interpolated sample, clamped at 0 (its running maximum
  starts at 0): ``np.maximum(roi_align(..., mode="max"), 0)``, to the same tolerance. No pyroi
  mode is that as it stands: ``mode="max"`` keeps a bin whose samples are all negative
  negative (mmcv's definition), ``pyroi.onnx.roi_align(mode="max")`` takes the largest
  weighted tap.
- ROIPooling ``max``: ``roi_pool``, bit for bit, except where torchvision's float bin edges
  differ from OpenVINO's exact integer ones: ``ceil(fl((i + 1) * fl(side / pooled)))`` can
  exceed ``ceil((i + 1) * side / pooled)`` (a 57-px RoI pooled to 7: ``fl(7 * fl(57 / 7))`` is
  57.000004), and then pyroi's bin reaches one pixel further, past the RoI, as torchvision's
  does.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

import pyroi
from pyroi import bench

ov = pytest.importorskip("openvino")

# |OpenVINO - pyroi| <= AVG_TOLERANCE * max |features| for the RoIAlign mappings.
AVG_TOLERANCE = 1e-5


def openvino_run(op, features, boxes, output_size, spatial_scale, sampling_ratio=0,
                 aligned=False, feeder="max_pool"):
    model = bench.openvino_model(ov, op, features.shape, len(boxes), output_size,
                                 spatial_scale, sampling_ratio, aligned, feeder)
    node = bench.OpenVinoNode(ov, model, 1)
    return node(bench.openvino_inputs(op, features, boxes)).copy()


def random_case(seed, count=60):
    """A 2x16x13x17 map and ``count`` boxes at scale 0.5, some partly or wholly off the map,
    some thinner than a pixel."""
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((2, 16, 13, 17), dtype=np.float32)
    corner = rng.uniform(-6, 38, (count, 2))
    sides = rng.uniform(0, 30, (count, 2))
    images = rng.integers(0, 2, (count, 1))
    boxes = np.concatenate([images, corner, corner + sides], axis=1).astype(np.float32)
    return features, boxes


def assert_close(theirs, ours, features):
    limit = AVG_TOLERANCE * float(np.abs(features).max())
    assert np.abs(theirs - ours).max() <= limit


AVG_CASES = [  # (sampling_ratio, aligned): asymmetric / half_pixel_for_nn, fixed / adaptive
    (2, False), (0, False), (2, True), (0, True), (3, True), (1, False)]


@pytest.mark.parametrize("feeder", [None, *bench.OPENVINO_FEEDERS])
@pytest.mark.parametrize("sampling_ratio, aligned", AVG_CASES)
def test_roi_align_avg_matches_within_tolerance(sampling_ratio, aligned, feeder):
    features, boxes = random_case(sampling_ratio * 2 + aligned)
    theirs = openvino_run("roi_align", features, boxes, 4, 0.5, sampling_ratio, aligned,
                          feeder)
    assert_close(theirs, pyroi.roi_align(features, boxes, 4, 0.5, sampling_ratio, aligned),
                 features)


@pytest.mark.parametrize("sampling_ratio", [2, 0])
def test_the_aligned_modes_are_not_interchangeable(sampling_ratio):
    # the tolerance tells the mappings apart: the other aligned mode is far outside it
    features, boxes = random_case(7)
    theirs = openvino_run("roi_align", features, boxes, 4, 0.5, sampling_ratio, True)
    crossed = pyroi.roi_align(features, boxes, 4, 0.5, sampling_ratio, False)
    assert np.abs(theirs - crossed).max() > 100 * AVG_TOLERANCE * np.abs(features).max()


@pytest.mark.parametrize("feeder", [None, *bench.OPENVINO_FEEDERS])
@pytest.mark.parametrize("sampling_ratio, aligned", [(2, True), (0, False), (1, True)])
def test_roi_align_max_is_pyroi_max_clamped_at_zero(sampling_ratio, aligned, feeder):
    features, boxes = random_case(11 + sampling_ratio)
    theirs = openvino_run("roi_align_max", features, boxes, 4, 0.5, sampling_ratio, aligned,
                          feeder)
    ours = pyroi.roi_align(features, boxes, 4, 0.5, sampling_ratio, aligned, mode="max")
    assert_close(theirs, np.maximum(ours, 0), features)
    # unclamped, pyroi's max keeps the bins whose samples are all negative
    assert (ours < -0.1).sum() > 10
    assert np.abs(theirs - ours).max() > 0.1


@pytest.mark.parametrize("output_size", [3, 7])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roi_pooling_is_roi_pool_bit_for_bit(seed, output_size):
    features, boxes = random_case(20 + seed, count=200)
    theirs = openvino_run("roi_pool", features, boxes, output_size, 0.5)
    np.testing.assert_array_equal(theirs, pyroi.roi_pool(features, boxes, output_size, 0.5))


def float_bin_end_exceeds_exact(side, pooled):
    """Whether a bin's end, ``ceil(fl((i + 1) * fl(side / pooled)))`` in float32 (torchvision,
    pyroi), exceeds the exact ``ceil((i + 1) * side / pooled)`` (OpenVINO) for some bin."""
    size = np.float32(side) / np.float32(pooled)
    return any(math.ceil(np.float32(i + 1) * size) > math.ceil(Fraction((i + 1) * side, pooled))
               for i in range(pooled))


@pytest.mark.parametrize("output_size", [7, 11, 13, 14])
def test_roi_pooling_bin_edges_deviate_where_the_float_edge_rounds_up(output_size):
    # RoIs of 1..60 pixels from pixel 2 on an 80x80 ramp (each bin's maximum is its
    # bottom-right pixel), far from the map's edges (no clamp hides a longer bin)
    ramp = np.arange(80 * 80, dtype=np.float32).reshape(1, 1, 80, 80)
    sides = np.arange(1, 61)
    boxes = np.zeros((len(sides), 5), np.float32)
    boxes[:, 1:3] = 2
    boxes[:, 3:5] = 2 + sides[:, None] - 1  # the end pixel is inclusive
    theirs = openvino_run("roi_pool", ramp, boxes, output_size, 1.0)
    ours, argmax = pyroi.roi_pool(ramp, boxes, output_size, 1.0, return_argmax=True)
    differ = {int(side) for side, a, b in zip(sides, theirs, ours) if not np.array_equal(a, b)}
    assert differ == {s for s in sides if float_bin_end_exceeds_exact(int(s), output_size)}
    for side in differ:  # pyroi's last bin column reaches one pixel past the RoI
        assert argmax[side - 1, 0, 0, -1] % 80 == 2 + side


def test_roi_pooling_57_pixels_to_7():
    assert {side for side in range(1, 61) if float_bin_end_exceeds_exact(side, 7)} == {57}
    ramp = np.arange(80 * 80, dtype=np.float32).reshape(1, 1, 80, 80)
    boxes = np.array([[0, 2, 2, 58, 58]], np.float32)
    theirs = openvino_run("roi_pool", ramp, boxes, 7, 1.0)
    ours = pyroi.roi_pool(ramp, boxes, 7, 1.0)
    np.testing.assert_array_equal(theirs[..., :-1, :-1], ours[..., :-1, :-1])
    assert theirs[0, 0, 0, -1] == ramp[0, 0, 10, 58]  # OpenVINO's last column ends at 58
    assert ours[0, 0, 0, -1] == ramp[0, 0, 10, 59]  # pyroi's (torchvision's) at 59


class _FakeOpenVino:
    """Enough of the openvino module to compile a model whose pooling node runs in
    ``precision``."""

    def __init__(self, precision):
        self.precision = precision

    def Core(self):  # noqa: N802 - OpenVINO's name
        return self

    def compile_model(self, model, device, properties):
        assert device == "CPU" and properties["INFERENCE_PRECISION_HINT"] == "f32"
        return self

    def create_infer_request(self):
        return None

    def get_runtime_model(self):
        return self

    def get_ordered_ops(self):
        info = {"layerType": "ROIAlign", "runtimePrecision": self.precision,
                "primitiveType": "jit_avx512_bf16", "outputLayouts": "aBcd16b"}

        class Any(str):
            def astype(self, _):
                return str(self)

        class Op:
            def get_rt_info(self):
                return {key: Any(value) for key, value in info.items()}

        return [Op()]


def test_a_node_not_in_f32_is_refused():
    with pytest.raises(bench.OpenVinoPrecisionError, match="bf16, not f32"):
        bench.OpenVinoNode(_FakeOpenVino("bf16"), None, 1)
    assert bench.OpenVinoNode(_FakeOpenVino("f32"), None, 1).precision == "f32"


def test_the_runtime_reports_f32_and_the_vectorised_kernel():
    # whichever feeder gets it on this CPU, the bench's node runs a vectorised kernel on
    # channel-blocked (aBcd8b, aBcd16b) or channels-last (acdb) features, in f32
    features, boxes = random_case(3)
    workload = bench.Workload("case", "", features, boxes, 4, 0.5, 0, False)
    for op in ("roi_align", "roi_align_max", "roi_pool"):
        workload.op = op
        node = bench.fastest_openvino_node(ov, workload, 2)
        assert node.precision == "f32"
        assert node.kernel.startswith("jit_")
        assert node.layout.startswith("aBcd") or node.layout == "acdb", node.layout
        node(bench.openvino_inputs(op, features, boxes))
        assert node.node_ms() > 0


def test_bench_reports_openvino(capsys):
    rng = np.random.default_rng(0)
    workloads = [w for w in bench.make_workloads(rng) if w.name in ("small_call", "vgg_conv5_pool")]
    rows = bench.run(workloads, [1], 1, 1, warmup_seconds=0.0)
    progress = capsys.readouterr().err
    assert f"openvino: {ov.__version__}" in progress and "INFERENCE_PRECISION_HINT" in progress
    assert "openvino node jit_" in progress
    assert " f32 on aBcd" in progress or " f32 on acdb" in progress
    for _, _, results, _ in rows:
        assert {"openvino node", "openvino e2e", "pyroi NHWC fwd",
                "pyroi NHWC out fwd"} <= set(results)
    header = bench.format_table(rows).splitlines()[0]
    assert "openvino node (/ NCHW / NHWC / NHWC in+out) ms" in header
    assert "pyroi NHWC fwd ms" in header and "pyroi NHWC in+out fwd ms" in header
