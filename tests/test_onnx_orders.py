"""The loop orders of ONNX RoiAlign ``mode="max"`` are exact.

The C core computes onnxruntime's max over weighted taps in one of three loop orders, picked
by the same schedule as the average kernel (roi_align_driver_template.h): "direct" (RoI by RoI, the
planes read in place; maps over the lane-major scratch limit), "region" (each RoI's region of
a block of 16 float / 8 double channels copied channels-last; the RoIs sample less than a
quarter of the map) and "image" (whole images copied channels-last). `core_order` restates
that rule so each case below provably takes the order it is named after. Every order must
give onnxruntime's bits, the slow reference's bits (docs/semantics.md §4.1), the other orders' bits
on the same data, and the same bytes for every thread count -- with NaN / inf features,
negative values (the out-of-map value z = 0 * X[b, c, 0, 0] is -0.0 there, and differs per
channel), out-of-map samples and empty bins.
"""

import functools
import math

import numpy as np
import pytest

from conftest import inverted_policy, random_input, random_rois, stable_seed
from pyroi import onnx as ponnx
from reference_onnx import onnx_roi_align_max_ref
from test_onnx import assert_bits_equal, onnx_mod, ort, ort_roi_align  # noqa: F401 (fixtures)

SCRATCH_BYTES = 64 << 20  # per worker: (H * W + bins) lane lines of 64 bytes
OUTPUT = (3, 4)  # output_height, output_width
SCALE = 0.8  # an ONNX float attribute: exact in float32 as 0.800000011920929


def _in_map_samples(edge1, edge2, bins, sampling_ratio, extent, aligned, scale, T):
    """In-map samples of one axis of a box over all its bins, with the kernel's arithmetic
    (docs/semantics.md §3.2-§3.3): the length of that axis's tap table."""
    scale = T(scale)
    offset = T(0.5) if aligned else T(0)
    start = T(edge1) * scale - offset
    size = (T(edge2) * scale - offset) - start
    if not aligned and size < T(1):
        size = T(1)
    bin_size = size / T(bins)
    if sampling_ratio > 0:
        grid = sampling_ratio
    else:
        samples = math.ceil(size / T(bins))
        grid = samples if samples > 0 else 0
    count = 0
    for b in range(bins):
        origin = start + T(b) * bin_size
        for i in range(grid):
            coord = origin + (T(i + 0.5) * bin_size) / T(grid)
            count += bool(extent > 0 and T(-1) <= coord <= T(extent))
    return count


def core_order(x_shape, rois, sampling_ratio, aligned, output=OUTPUT, spatial_scale=SCALE,
               float_attribute=True):
    """The loop order the C core picks for ONNX max on this call (pyroi.roi_align: the scale
    is not an ONNX float attribute, so not rounded to float32 first)."""
    n, _, h, w = x_shape
    ph, pw = output
    if not (h * w > 0 and (h * w + ph * pw) * 64 <= SCRATCH_BYTES):
        return "direct"
    T = rois.dtype.type
    scale = np.float32(spatial_scale) if float_attribute else spatial_scale
    sampled = sum(
        _in_map_samples(y1, y2, ph, sampling_ratio, h, aligned, scale, T)
        * _in_map_samples(x1, x2, pw, sampling_ratio, w, aligned, scale, T)
        for x1, y1, x2, y2 in rois)
    return "image" if 4 * sampled >= n * h * w else "region"


def _values(rng, shape, dtype, kind):
    """Feature maps: "normal" random values, or "special": small integers, mostly negative
    (exact zeros, ties and -0.0 taps), NaN, +-inf, and a corner pixel X[b, c, 0, 0] that
    cycles through NaN, inf, -inf, negative, +-0 and positive over the channels, so that z
    differs from lane to lane."""
    if kind == "normal":
        return random_input(rng, shape, dtype)
    x = (rng.integers(-3, 4, shape) - 2).astype(dtype)
    u = rng.uniform(size=shape)
    x[u < 0.08] = np.nan
    x[(u >= 0.08) & (u < 0.12)] = np.inf
    x[(u >= 0.12) & (u < 0.16)] = -np.inf
    corners = np.array([np.nan, np.inf, -np.inf, -2.0, 0.0, -0.0, 3.0], dtype)
    for c in range(shape[1]):
        x[:, c, 0, 0] = corners[(c + np.arange(shape[0])) % corners.size]
    return x


def _small_boxes(rng, count, height, width, dtype):
    """Few small boxes in feature pixels (some partly or fully off the map, some inverted),
    divided by the scale."""
    corners = rng.uniform(-6, [width + 2, height + 2], (count, 2))
    sides = rng.uniform(-2, 7, (count, 2))
    sides[0] = (3, 4)  # one box pools real data
    corners[0] = (2, 3)
    return (np.concatenate([corners, corners + sides], axis=1) / SCALE).astype(dtype)


def _corner_boxes(rng, count, dtype):
    """Boxes within 40 pixels of the map's top-left corner, partly above or left of it:
    everything they read lies in X[..., :42, :42]."""
    corners = rng.uniform(-8, 28, (count, 2))
    sides = rng.uniform(-1, 12, (count, 2))
    boxes = np.concatenate([corners, corners + sides], axis=1)
    return (boxes / SCALE).astype(dtype)


# name: (N, H, W), K
ORDER_CASES = {
    "image": ((2, 15, 19), 80),  # many boxes of every kind on a small map
    "region": ((2, 64, 72), 3),  # a few small boxes on a larger map
    "direct": ((1, 1030, 1024), 40),  # over 2^20 pixels: no lane-major scratch
}


def order_inputs(salt, name, channels, dtype_name, aligned, sampling_ratio, kind,
                 inverted="any"):
    """(x, boxes (K, 4), batch indices (K,) int64) of the loop order ``name``: the inputs
    of both max modes' order tests (``salt`` keeps their random draws apart)."""
    (n, h, w), k = ORDER_CASES[name]
    dtype = np.dtype(dtype_name)
    rng = np.random.default_rng(stable_seed(salt, name, channels, dtype_name, aligned,
                                            sampling_ratio, kind))
    x = _values(rng, (n, channels, h, w), dtype, kind)
    if name == "image":
        rois = random_rois(rng, n, h, w, k, dtype, spatial_scale=SCALE, inverted=inverted)
        return x, np.ascontiguousarray(rois[:, 1:]), rois[:, 0].astype(np.int64)
    boxes = (_small_boxes(rng, k, h, w, dtype) if name == "region"
             else _corner_boxes(rng, k, dtype))
    return x, boxes, np.arange(k, dtype=np.int64) % n


@functools.lru_cache(maxsize=None)
def order_case(name, channels, dtype_name, aligned, sampling_ratio, kind):
    x, boxes, batch = order_inputs("onnx-orders", name, channels, dtype_name, aligned,
                                   sampling_ratio, kind, inverted_policy(aligned, sampling_ratio))
    if aligned and sampling_ratio <= 0:  # onnxruntime rejects boxes inverted on one axis
        flip = (boxes[:, 2] < boxes[:, 0]) != (boxes[:, 3] < boxes[:, 1])
        boxes[flip, 2] = boxes[flip, 0]
    assert core_order(x.shape, boxes, sampling_ratio, aligned) == name
    for array in (x, boxes, batch):
        array.setflags(write=False)
    return x, boxes, batch


def _kwargs(aligned, sampling_ratio):
    return dict(mode="max", output_height=OUTPUT[0], output_width=OUTPUT[1],
                sampling_ratio=sampling_ratio, spatial_scale=SCALE,
                coordinate_transformation_mode="half_pixel" if aligned
                else "output_half_pixel")


def _pyroi_all_threads(x, boxes, batch, kwargs):
    """The result with 1 thread, after checking 2 and 3 threads give the same bytes."""
    y = ponnx.roi_align(x, boxes, batch, num_threads=1, **kwargs)
    for threads in (2, 3):
        assert ponnx.roi_align(x, boxes, batch, num_threads=threads, **kwargs).tobytes() == \
            y.tobytes()
    return y


ORDER_CHANNELS = [("image", 5), ("image", 16), ("image", 37), ("region", 5), ("region", 16),
                  ("region", 37), ("direct", 3)]


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("sampling_ratio", [0, 1, 2])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,channels", ORDER_CHANNELS)
def test_orders_bit_exact_with_onnxruntime(onnx_mod, ort, name, channels, dtype, aligned,
                                           sampling_ratio, kind):
    x, boxes, batch = order_case(name, channels, np.dtype(dtype).name, aligned, sampling_ratio,
                                 kind)
    kwargs = _kwargs(aligned, sampling_ratio)
    expected = ort_roi_align(onnx_mod, ort, x, boxes, batch, 16, **kwargs)
    assert_bits_equal(_pyroi_all_threads(x, boxes, batch, kwargs), expected)


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,channels", [("image", 19), ("region", 19), ("direct", 3)])
def test_orders_bit_exact_with_reference(name, channels, dtype, aligned, kind):
    """Against the slow reference of docs/semantics.md §4.1 (runs without onnxruntime); the first
    16 RoIs only, to keep it fast."""
    sampling_ratio = 0 if aligned else 2
    x, boxes, batch = order_case(name, channels, np.dtype(dtype).name, aligned, sampling_ratio,
                                 kind)
    actual = _pyroi_all_threads(x, boxes, batch, _kwargs(aligned, sampling_ratio))
    expected = onnx_roi_align_max_ref(x, boxes[:16], batch[:16], OUTPUT[0], OUTPUT[1],
                                      sampling_ratio, SCALE, aligned)
    assert_bits_equal(actual[:16], expected)


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels", [5, 37])
def test_region_and_image_orders_agree(channels, dtype, kind):
    """A few small RoIs take the region order; adding many large RoIs of the same images
    switches the call to whole-image blocks, and the first RoIs keep their bits."""
    x, boxes, batch = order_case("region", channels, np.dtype(dtype).name, True, 0, kind)
    rng = np.random.default_rng(3)
    n, _, h, w = x.shape
    large = rng.uniform(-4, 8, (40, 4)) + [0, 0, w, h]
    more = np.concatenate([boxes, (large / SCALE).astype(boxes.dtype)])
    more_batch = np.concatenate([batch, np.arange(40) % n])
    assert core_order(x.shape, boxes, 0, True) == "region"
    assert core_order(x.shape, more, 0, True) == "image"
    kwargs = _kwargs(True, 0)
    few = _pyroi_all_threads(x, boxes, batch, kwargs)
    many = _pyroi_all_threads(x, more, more_batch, kwargs)
    assert many[:len(boxes)].tobytes() == few.tobytes()


@pytest.mark.parametrize("kind", ["normal", "special"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aligned,sampling_ratio", [(False, 2), (False, 0), (True, 0)])
def test_direct_and_lane_major_orders_agree(dtype, aligned, sampling_ratio, kind):
    """RoIs near the top-left corner read only X[..., :42, :42] (samples beyond the map lie
    above or left of it, in both maps), so the 1030 x 1024 map (direct order) and its
    48 x 48 corner (a view; lane-major orders) pool the same bits."""
    x, boxes, batch = order_case("direct", 3, np.dtype(dtype).name, aligned, sampling_ratio,
                                 kind)
    corner = x[:, :, :48, :48]
    kwargs = _kwargs(aligned, sampling_ratio)
    assert core_order(corner.shape, boxes, sampling_ratio, aligned) == "image"
    direct = _pyroi_all_threads(x, boxes, batch, kwargs)
    assert_bits_equal(_pyroi_all_threads(corner, boxes, batch, kwargs), direct)
    # a few of the boxes on the corner: the region order
    assert core_order(corner.shape, boxes[:1], sampling_ratio, aligned) == "region"
    assert_bits_equal(_pyroi_all_threads(corner, boxes[:1], batch[:1], kwargs), direct[:1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,channels", [("image", 37), ("region", 37)])
def test_orders_with_strided_arrays(name, channels, dtype):
    """Views (channels-last memory, reversed rows) and a strided out= give the bytes of the
    contiguous call on the lane-major orders."""
    x, boxes, batch = order_case(name, channels, np.dtype(dtype).name, True, 2, "special")
    kwargs = _kwargs(True, 2)
    expected = ponnx.roi_align(x, boxes, batch, **kwargs)
    channels_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    flipped = np.ascontiguousarray(x[:, ::-1, ::-1])[:, ::-1, ::-1]
    for view in (channels_last, flipped):
        assert ponnx.roi_align(view, boxes, batch, **kwargs).tobytes() == expected.tobytes()
    buffer = np.full(expected.shape[:3] + (2 * expected.shape[3],), 7, expected.dtype)
    out = buffer[..., ::2]
    assert ponnx.roi_align(x, boxes, batch, out=out, **kwargs) is out
    assert np.ascontiguousarray(out).tobytes() == expected.tobytes()
    assert np.all(buffer[..., 1::2] == 7)



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["image", "region"])
def test_place_of_out_of_map_samples(name, dtype):
    """z is offered at its place among the in-map samples: after row 0 of a bin that crosses
    the right edge of the map, after every row of a bin that crosses the bottom edge. Features
    are -1 except a few +0 pixels; where z = -0.0 (corner -1) the sign of the zero result
    tells where it was offered, where z = +0 (corner +1) it does not."""
    h, w = (8, 8) if name == "image" else (64, 72)
    x = -np.ones((1, 20, h, w), dtype)
    x[:, 1::2, 0, 0] = 1  # z = +0 on odd channels, -0.0 on even ones
    # right edge, 1 x 1 bin, 2 x 2 samples: row 0 at y = 2.3 (rows 2, 3, all -1: negative),
    # row 1 at y = 4.3 reads the +0 at (4, W - 2); columns at W - 1.25 (in) and W + 1.25 (out)
    x[:, :, 4, w - 2] = 0
    right = [w - 2.5, 1.3, w + 2.5, 5.3]
    # bottom edge, 3 x 3 samples: rows at H - 2.25 (negative), H - 0.75 (clamped to row
    # H - 1, which holds a +0 at column 2), H + 0.75 (out); columns at 2.35, 3.85, 5.35
    x[:, :, h - 1, 2] = 0
    bottom = [1.6, h - 3, 6.1, h + 1.5]
    boxes = np.array([right, bottom], dtype)
    batch = np.zeros(2, np.int64)
    kwargs = dict(mode="max", output_height=1, output_width=1, spatial_scale=1.0,
                  coordinate_transformation_mode="output_half_pixel")
    expected = np.empty((2, 20, 1, 1), dtype)
    expected[0] = np.where(np.arange(20) % 2 == 0, -0.0, 0.0)[:, None, None]  # z before row 1
    expected[1] = 0.0  # z after the +0 of row 1
    # on the small map, boxes over the whole map make the call gather whole images
    fillers = np.tile(np.array([[0, 0, w, h]], dtype), (8 if name == "image" else 0, 1))
    for sampling_ratio, box in ((2, 0), (3, 1)):
        one = boxes[box:box + 1]
        more = np.concatenate([one, fillers])
        more_batch = np.zeros(len(more), np.int64)
        assert core_order(x.shape, more, sampling_ratio, False, (1, 1), 1.0) == name
        y = _pyroi_all_threads(x, more, more_batch, {**kwargs, "sampling_ratio": sampling_ratio})
        reference = onnx_roi_align_max_ref(x, one, batch[:1], 1, 1, sampling_ratio, 1.0, False)
        assert_bits_equal(reference, expected[box:box + 1])
        assert_bits_equal(y[:1], expected[box:box + 1])
