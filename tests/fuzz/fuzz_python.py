"""atheris harness over the Python API of pyroi.

Each input is decoded into one call of a public operator (forward, backward, a layer or the
multi-scale pooler) with arguments drawn from everything a caller might pass: hostile boxes
(NaN, inf, 1e30, inverted, bad batch indices), every box form, odd shapes, every NumPy
layout, wrong types, out= arrays good and bad. A call must either return a result of the
documented shape (finite for tame data, the same bits for every thread count) or raise a
pyroi.PyroiError; anything else (another exception, a crash, a hang) is a finding.

After that call, the rest of the input picks one of the selectors added later (EXTRAS; an
exhausted input picks "none", so the kept corpus still decodes to the calls it was kept
for): float16 calls (equal to the float32 call rounded once), pyroi.onnx, pyroi.ascend,
sequences on one layer (training switches, forwards that raise, wrong grad_output shapes and
dtypes, hostile lda_coeff) and function backwards with grad_output, boxes and argmax of
mismatched shapes.

    pip install atheris
    python tests/fuzz/fuzz_python.py -atheris_runs=1000000 [corpus_dir]
    python tests/fuzz/fuzz_python.py tests/fuzz/corpus/python/*   # replay inputs
"""

import sys
import warnings

import atheris
import numpy as np

# NumPy's casts of NaN to integers (the harness makes such arrays on purpose) warn
warnings.simplefilter("ignore", RuntimeWarning)

with atheris.instrument_imports(include=["pyroi"]):
    import pyroi
    from pyroi import ascend
    from pyroi import onnx as ponnx

OPS = ["roi_align", "roi_align_max", "roi_pool", "ps_roi_align", "ps_roi_pool",
       "roi_align_rotated"]
SAMPLING = {"roi_align", "roi_align_max", "ps_roi_align", "roi_align_rotated"}
GROUPED = {"ps_roi_align", "ps_roi_pool"}

COORDINATES = [np.nan, np.inf, -np.inf, 1e30, -1e30, 3e38, 1e6, -1e6, 1e-40, -0.0, 2.0**31,
               1e15, 0.5, 0.0]
BATCH_VALUES = [-1.0, 1.5, np.nan, np.inf, 1e30, -0.5, 2.0**62]
SCALES = [np.nan, np.inf, -1.0, 0.0, 1e300, 2**2000, np.float32(0.5), "1", None, 1e-30,
          np.array(0.5), True]
RATIOS = [1024, 1025, 2**31, -2**70, 2.0, None, np.int64(2), 64, "2", True]
SIZES = [0, -1, 2**40, 2.5, None, "2", (1, 2, 3), (2, 0), np.int64(2), np.array(2), 2**70,
         (1, 2**62), True]
THREADS = [None, 1, 2, 3, 0, -1, 2**40, 2.5, "2"]
DTYPES = [np.int32, np.bool_, np.complex64, np.float16, object]


class Decoder:
    def __init__(self, data):
        self.fdp = atheris.FuzzedDataProvider(data)

    def int(self, low, high):
        return self.fdp.ConsumeIntInRange(low, high)

    def pick(self, options):
        return options[self.int(0, len(options) - 1)]

    def chance(self, one_in):
        # an exhausted provider yields the lower bound: make that "no"
        return self.int(0, one_in - 1) == one_in - 1

    def float(self, low, high):
        return low + (high - low) * self.int(0, 1000) / 1000.0


def layout(d, array):
    """A view of ``array`` with a decoded memory layout (same values)."""
    kind = d.int(0, 7)
    if kind == 1:
        return np.asfortranarray(array)
    if kind == 2 and array.ndim == 4:
        return np.ascontiguousarray(array.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    if kind == 3:
        return np.ascontiguousarray(array[..., ::-1])[..., ::-1]
    if kind == 4:
        big = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        big[..., ::2] = array
        return big[..., ::2]
    if kind == 5 and array.ndim == 4 and array.shape[0] > 0 and array.shape[3] > 0:
        return np.broadcast_to(array[:1, :, :, :1], array.shape)  # zero strides
    if kind == 6:
        return array.astype(array.dtype.newbyteorder(">"))
    return array


def decode_boxes(d, dtype, num_images, coords, tame):
    """Boxes in one of the accepted forms (or a wrong one), and whether they are tame."""
    count = d.int(0, 5)
    rows = np.zeros((count, 1 + coords))
    for k in range(count):
        rows[k, 0] = d.int(0, max(num_images - 1, 0))
        for j in range(1, 1 + coords):
            rows[k, j] = d.float(-6.0, 16.0)
        if coords == 5:
            rows[k, 5] = d.float(-360.0, 360.0)
        if d.chance(6):
            rows[k, d.int(1, coords)] = d.pick(COORDINATES)
            tame = False
        if d.chance(10):
            rows[k, 0] = d.pick(BATCH_VALUES)
    rows = rows.astype(dtype)
    form = d.int(0, 9)
    if form == 1:  # one array per image
        batch = rows[:, 0]
        return [rows[batch == i, 1:] for i in range(max(num_images, 0) + d.int(0, 1))], \
            None, tame
    if form == 2:  # ONNX style
        indices = np.nan_to_num(rows[:, 0], nan=-1, posinf=-1, neginf=-1)
        indices = np.clip(indices, -2**62, 2**62).astype(np.int64)
        return rows[:, 1:], d.pick([indices, indices.astype(np.int32), indices.tolist(),
                                    indices.astype(np.float64), indices[:-1]]), tame
    if form == 3:
        return rows.tolist(), None, tame
    if form == 4:
        return rows[:, 1:], None, tame  # (K, coords) without batch_indices
    if form == 5:
        return rows.astype(d.pick([np.float32, np.float64, np.int64])), None, tame
    return layout(d, rows), None, tame


def decode_input(d, dtype, op, pooled):
    n, h, w = d.int(0, 3), d.pick([0, 1, 2, 3, 5, 8]), d.pick([0, 1, 2, 3, 5, 8])
    c = d.int(0, 3)
    if op in GROUPED and isinstance(pooled, tuple):
        c = c * pooled[0] * pooled[1] + (1 if d.chance(8) else 0)
    x = np.random.default_rng(d.int(0, 255)).uniform(-4, 4, (n, c, h, w)).astype(dtype)
    tame = True
    if d.chance(8) and x.size:
        x.flat[d.int(0, x.size - 1)] = d.pick([np.nan, np.inf, -np.inf])
        tame = False
    return x, tame


def call_forward(op, x, boxes, size, kwargs):
    if op == "roi_align_max":
        return pyroi.roi_align(x, boxes, size, mode="max", return_argmax=True, **kwargs)
    if op == "roi_pool":
        return pyroi.roi_pool(x, boxes, size, return_argmax=True, **kwargs)
    return getattr(pyroi, op)(x, boxes, size, **kwargs)


def call_backward(op, grad, boxes, shape, size, argmax, kwargs):
    if op == "roi_align_max":
        return pyroi.roi_align_backward(grad, boxes, shape, mode="max", argmax=argmax, **kwargs)
    if op == "roi_pool":
        return pyroi.roi_pool_backward(grad, boxes, argmax, shape, size, **kwargs)
    return getattr(pyroi, op + "_backward")(grad, boxes, shape, **kwargs)


def check_result(result, shape, tame):
    assert isinstance(result, np.ndarray), type(result)
    assert result.shape == shape, (result.shape, shape)
    if tame:
        assert np.isfinite(result).all(), "non-finite result from finite data"


def one_call(data):
    d = Decoder(data)
    classic_call(d)
    EXTRAS[d.pick(sorted(EXTRAS))](d)  # "a-none" sorts first: what an exhausted input picks


def classic_call(d):
    """The harness's first call: an operator, its backward, a layer or the pooler."""
    op = d.pick(OPS)
    dtype = d.pick([np.float32, np.float64])
    pooled = (d.int(1, 3), d.int(1, 3))
    size = pooled if d.int(0, 1) else pooled[0]
    if size == pooled[0]:
        pooled = (size, size)
    if d.chance(12):
        size = d.pick(SIZES)
    x, tame = decode_input(d, dtype, op, pooled)
    coords = 5 if op == "roi_align_rotated" else 4
    boxes, batch_indices, tame = decode_boxes(d, dtype, x.shape[0], coords, tame)
    kwargs = {}
    if d.chance(4):
        kwargs["spatial_scale"] = d.pick(SCALES) if d.chance(3) else d.float(0.0, 2.0)
    if op in SAMPLING:
        ratio = d.int(-1, 4)
        if d.chance(10):
            ratio = d.pick(RATIOS)
        kwargs["sampling_ratio"] = ratio
        if ratio == 1024 or ratio == 64:  # valid but slow: only on tiny calls
            x = x[:, :1]
    if op in ("roi_align", "roi_align_max", "roi_align_rotated") and d.int(0, 1):
        kwargs["aligned"] = d.pick([True, False, np.bool_(True), "yes", None, 2])
    if batch_indices is not None:
        kwargs["batch_indices"] = batch_indices
    if d.chance(4):
        kwargs["num_threads"] = d.pick(THREADS)
    if d.chance(20):
        x = x.astype(d.pick(DTYPES))
        tame = False
    x = layout(d, x) if not d.chance(20) else x.tolist()
    direction = d.int(0, 3)  # 0-1 forward, 2 backward, 3 layer

    try:
        result = call_forward(op, x, boxes, size, kwargs)
    except pyroi.PyroiError:
        return
    output, argmax = result if isinstance(result, tuple) else (result, None)
    features = np.asarray(x)
    # the bins the call was asked for (size may have been replaced by an odd valid value)
    pooled = tuple(int(v) for v in size) if isinstance(size, tuple) else (int(size),) * 2
    channels = features.shape[1] // (pooled[0] * pooled[1]) if op in GROUPED \
        else features.shape[1]
    check_result(output, (output.shape[0], channels) + tuple(pooled), tame)
    if d.chance(8):  # the same bits whatever the thread count
        again = dict(kwargs, num_threads=d.pick([1, 2, 3]))
        other = call_forward(op, x, boxes, size, again)
        other = other[0] if isinstance(other, tuple) else other
        assert other.tobytes() == output.tobytes(), "result depends on num_threads"
    if direction == 2:
        grad = np.random.default_rng(1).uniform(-2, 2, output.shape).astype(output.dtype)
        if d.chance(6):
            grad = layout(d, grad)
        if argmax is not None and d.chance(6) and argmax.size:
            argmax = argmax.copy()
            argmax.flat[d.int(0, argmax.size - 1)] = d.pick([-2, 10**6, 2**62, -1])
        out = None
        if d.chance(4):
            out = d.pick([np.empty(features.shape, output.dtype),
                          np.empty(features.shape, np.float16), features,
                          np.empty(features.shape[:-1] + (features.shape[-1] + 1,),
                                   output.dtype)])
        try:
            gradient = call_backward(op, grad, boxes, features.shape, size, argmax,
                                     dict(kwargs, out=out) if out is not None else kwargs)
        except pyroi.PyroiError:
            return
        check_result(gradient, features.shape, tame)
    elif direction == 3:
        make = {"roi_align": lambda: pyroi.RoIAlign(size, 1.0, 2),
                "roi_align_max": lambda: pyroi.RoIAlign(size, 1.0, 2, mode="max"),
                "roi_pool": lambda: pyroi.RoIPool(size, 1.0),
                "ps_roi_align": lambda: pyroi.PSRoIAlign(size, 1.0, 0),
                "ps_roi_pool": lambda: pyroi.PSRoIPool(size, 1.0),
                "roi_align_rotated": lambda: pyroi.RoIAlignRotated(size, 1.0, 0)}[op]
        try:
            layer = make()
            y = layer(x, boxes, batch_indices=batch_indices)
            g = layer.backward(np.ones_like(y), lda_coeff=d.pick([1.0, 0.5, np.nan, "x"]))
        except pyroi.PyroiError:
            return
        check_result(g, features.shape, tame)
    elif direction == 1 and coords == 4 and not isinstance(boxes, list):
        # the multi-scale pooler over a two-level pyramid made from the input
        ratio = kwargs.get("sampling_ratio", 2)
        levels = {"a": x, "b": features[:, :, ::2, ::2]}
        try:
            pooler = pyroi.MultiScaleRoIAlign(["a", "b"], size, ratio)
            per_image = [np.asarray(boxes)[:, -4:]] if np.ndim(boxes) == 2 else boxes
            y = pooler(levels, per_image, [(16, 16)])
            pooler.backward(np.ones_like(y))
        except pyroi.PyroiError:
            return


# ---- selectors added later (each decodes from the bytes the first call left) -------------

def expected_shape(op, features, pooled):
    channels = features.shape[1] // (pooled[0] * pooled[1]) if op in GROUPED \
        else features.shape[1]
    return channels


def float16_call(d):
    """A float16 operator call: float16 (or float32, or wrong float64) boxes, an out= that
    may be good, of another dtype, or overlap the input. A result equals the float32 call on
    the widened data rounded once to float16."""
    op = d.pick(OPS)
    pooled = (d.int(1, 3), d.int(1, 3))
    x, tame = decode_input(d, np.float16, op, pooled)
    coords = 5 if op == "roi_align_rotated" else 4
    boxes, batch_indices, tame = decode_boxes(d, np.float32, x.shape[0], coords, tame)
    box_dtype = d.pick([np.float16, np.float32, np.float64])

    def cast(value, dtype=box_dtype):
        if isinstance(value, list):
            return [np.asarray(part).astype(dtype) for part in value]
        return np.asarray(value).astype(dtype)

    kwargs = {"batch_indices": batch_indices} if batch_indices is not None else {}
    if op in SAMPLING:
        kwargs["sampling_ratio"] = d.int(-1, 3)
    x = layout(d, x)
    try:
        result = call_forward(op, x, cast(boxes), pooled, kwargs)
    except pyroi.PyroiError:
        return
    output, argmax = result if isinstance(result, tuple) else (result, None)
    assert output.dtype == np.float16, output.dtype
    wide = x.astype(np.float32)
    wide_boxes = cast(cast(boxes), np.float32)
    single = call_forward(op, wide, wide_boxes, pooled, kwargs)
    single = single[0] if isinstance(single, tuple) else single
    with np.errstate(over="ignore"):
        assert output.tobytes() == single.astype(np.float16).tobytes(), "float16 != float32"
    grad = np.random.default_rng(2).uniform(-2, 2, output.shape).astype(np.float16)
    out = None
    choice = d.int(0, 3)
    if choice == 1:
        out = np.empty(x.shape, np.float16)
    elif choice == 2:
        out = np.empty(x.shape, np.float32)
    elif choice == 3 and not (x.size and grad.size):  # nothing to overlap
        choice = 0
    elif choice == 3:
        buffer = np.zeros(grad.size + x.size, np.float16)  # out overlapping grad_output
        buffer[:grad.size] = grad.ravel()
        grad = buffer[:grad.size].reshape(grad.shape)
        out = buffer[grad.size // 2:][:x.size].reshape(x.shape)
    try:
        gradient = call_backward(op, grad, cast(boxes), x.shape, pooled, argmax,
                                 dict(kwargs, out=out) if out is not None else kwargs)
    except pyroi.PyroiError:
        return
    assert choice in (0, 1), "a bad out= was accepted"
    check_result(gradient, x.shape, False)
    assert gradient.dtype == np.float16
    reference = call_backward(op, grad.astype(np.float32), wide_boxes, x.shape, pooled, argmax,
                              kwargs)
    with np.errstate(over="ignore"):
        assert gradient.tobytes() == reference.astype(np.float16).tobytes()


ONNX_MODES = ["avg", "max", "AVG", "median", b"max", 3]
COORDINATE_MODES = [None, "half_pixel", "output_half_pixel", "asymmetric", b"half_pixel", 1]
OPSETS = [16, 10, 22, 9, 15, 2**40, "16"]


def onnx_call(d):
    """pyroi.onnx.roi_align / max_roi_pool with hostile attributes and inputs."""
    dtype = d.pick([np.float32, np.float64, np.float16])
    x, tame = decode_input(d, dtype, "roi_align", (1, 1))
    boxes, batch_indices, tame = decode_boxes(d, dtype, x.shape[0], 4, tame)
    rows = np.asarray(boxes, dtype=np.float64) if not isinstance(boxes, list) else \
        np.zeros((0, 5))
    if rows.ndim != 2 or rows.shape[1] not in (4, 5):
        rows = np.zeros((0, 5))
    rois = rows[:, -4:].astype(dtype)
    indices = np.clip(np.nan_to_num(rows[:, 0] if rows.shape[1] == 5 else np.zeros(len(rows)),
                                    nan=-1), -5, 5).astype(np.int64)
    if d.chance(6):
        indices = d.pick([indices.astype(np.int32), indices[:-1], indices.tolist(), None])
    height, width = d.int(1, 3), d.int(1, 3)
    if d.chance(8):
        height = d.pick(SIZES)
    attributes = dict(output_height=height, output_width=width,
                      sampling_ratio=d.pick([0, 1, 2, -1, 1025, 2.0]),
                      spatial_scale=d.pick([1.0, 0.5, 1e39, np.nan, -1.0, 0.0]),
                      mode=d.pick(ONNX_MODES), opset=d.pick(OPSETS))
    if d.int(0, 1):
        attributes["coordinate_transformation_mode"] = d.pick(COORDINATE_MODES)
    x = layout(d, x)
    try:
        if d.int(0, 1):
            result = ponnx.roi_align(x, rois, indices, **attributes)
        else:
            result = ponnx.max_roi_pool(x, rows.astype(dtype) if rows.shape[1] == 5 else rois,
                                        (height, width), attributes["spatial_scale"])
    except pyroi.PyroiError:
        return
    pooled = (height, width) if isinstance(height, int) else result.shape[2:]
    check_result(result, (result.shape[0], x.shape[1]) + tuple(pooled), False)
    assert result.dtype == np.dtype(dtype)


def ascend_call(d):
    """pyroi.ascend: pack_rois and roi_pooling (strict or not), the V2 backward and its
    workspace size, with hostile counts, sizes and boxes."""
    dtype = d.pick([np.float32, np.float64, np.float16])
    x, tame = decode_input(d, dtype, "roi_pool", (2, 2))
    strict = d.int(0, 1) == 0
    per_image = [np.array([[d.float(-4, 40) for _ in range(4)] for _ in range(d.int(0, 3))],
                          dtype).reshape(-1, 4) for _ in range(x.shape[0])]
    if d.chance(6) and per_image:
        per_image[0] = per_image[0].astype(np.float64)
    try:
        rois, counts = ascend.pack_rois(per_image, strict=strict)
        if d.chance(5):
            counts = d.pick([counts.astype(np.int64), counts[:, :1], -counts, counts + 100])
        size = (d.int(1, 4), d.int(1, 4)) if not d.chance(8) else (d.pick(SIZES), 2)
        y = ascend.roi_pooling(layout(d, x), rois, counts, pooled_h=size[0], pooled_w=size[1],
                               spatial_scale=d.pick([None, 0.5, np.nan, 0.0]), strict=strict)
        check_result(y, (y.shape[0], x.shape[1]) + tuple(size), False)
    except pyroi.PyroiError:
        pass
    h, w = x.shape[2], x.shape[3]
    boxes = np.array([[d.int(0, max(x.shape[0], 1)) - (1 if d.chance(10) else 0),
                       d.float(0, w), d.float(0, h), d.float(0, w + 1), d.float(0, h + 1)]
                      for _ in range(d.int(0, 3))], np.float64).reshape(-1, 5).astype(dtype)
    pooled = (d.int(1, 3), d.int(1, 3))
    grad = np.ones((boxes.shape[0], x.shape[1]) + pooled, dtype)
    if d.chance(6):
        grad = grad[:, :, :1]
    ratio, aligned = d.int(-1, 3), d.int(0, 1) == 1
    try:
        size = ascend.roi_align_v2_backward_workspace_size(boxes, x.shape, pooled[0], pooled[1],
                                                           1.0, ratio, aligned)
        assert isinstance(size, int) and size >= 0
        overlapping = d.chance(4) and grad.size > 0
        workspace = grad.reshape(-1).view(np.uint8) if overlapping else d.pick(
            [None, np.empty(size, np.uint8), np.empty(max(size - 1, 0), np.uint8)])
        gradient = ascend.roi_align_v2_backward(grad, boxes, x.shape, pooled[0], pooled[1], 1.0,
                                                ratio, aligned, workspace=workspace)
    except pyroi.PyroiError:
        return
    assert not overlapping, "a workspace overlapping grad_output was accepted"
    check_result(gradient, x.shape, False)


def deform_call(d):
    """deform_roi_pool and its backward with hostile offsets and masks: non-finite, huge,
    wrong shapes, dtypes and layouts (each a PyroiError or a result of the right shape)."""
    dtype = d.pick([np.float32, np.float64])
    x, tame = decode_input(d, dtype, "deform_roi_pool", (2, 2))
    boxes, batch_indices, tame = decode_boxes(d, dtype, x.shape[0], 4, tame)
    count = sum(len(b) for b in boxes) if isinstance(boxes, list) else len(np.asarray(boxes))
    pooled = (d.int(1, 3), d.int(1, 3))
    offset = np.random.default_rng(d.int(0, 255)).uniform(-3, 3, (count, 2) + pooled)
    offset = offset.astype(dtype)
    if d.chance(4) and offset.size:
        offset.flat[d.int(0, offset.size - 1)] = d.pick([np.nan, np.inf, 1e300, -1e38, 1e-45])
        tame = False
    if d.chance(8):
        offset = d.pick([None, offset[:, :1], offset.astype(np.float16), offset.T, "x"])
    mask = None if d.chance(2) else layout(d, np.full((count, 1) + pooled, 0.5, dtype))
    kwargs = {"sampling_ratio": d.int(-1, 3), "gamma": d.pick([0.1, 0.0, -2.0, np.nan, 1e300]),
              "mask": mask}
    if batch_indices is not None:
        kwargs["batch_indices"] = batch_indices
    try:
        y = pyroi.deform_roi_pool(layout(d, x), boxes, offset, pooled, **kwargs)
    except pyroi.PyroiError:
        return
    check_result(y, (count, x.shape[1]) + pooled, tame and kwargs["gamma"] != 1e300)
    try:
        grads = pyroi.deform_roi_pool_backward(np.ones_like(y), boxes, x.shape, offset,
                                               input=x if d.int(0, 1) else None, **kwargs)
    except pyroi.PyroiError:
        return
    check_result(grads[0], x.shape, False)


LAYER_MAKERS = {"roi_align": lambda: pyroi.RoIAlign(2, 1.0, 2),
                "roi_align_max": lambda: pyroi.RoIAlign(2, 1.0, 2, mode="max"),
                "roi_pool": lambda: pyroi.RoIPool(2, 1.0),
                "ps_roi_align": lambda: pyroi.PSRoIAlign(2, 1.0, 0),
                "ps_roi_pool": lambda: pyroi.PSRoIPool(2, 1.0),
                "roi_align_rotated": lambda: pyroi.RoIAlignRotated(2, 1.0, 0)}
COEFFICIENTS = [1.0, 0.5, -2.0, 1e39, 3e38, np.nan, np.inf, 10**400, "x", None,
                np.float32(2.0), np.float16(0.1), True, 1e-45]


def layer_sequence(d):
    """Several steps on one layer: forwards (some raising), training switches, backwards with
    good and wrong grad_output and hostile lda_coeff. backward must return the gradient of
    the last successful training forward exactly (lda_coeff times the function's), or raise
    a PyroiError when there is none, training is off, or grad_output does not match."""
    op = d.pick(OPS)
    layer = LAYER_MAKERS[op]()
    dtype = d.pick([np.float32, np.float64, np.float16])
    last = None  # (output, function gradient of ones) of the last successful training call
    for _ in range(d.int(1, 6)):
        step = d.int(0, 3)
        if step == 0:
            x, tame = decode_input(d, dtype, op, (2, 2))
            coords = 5 if op == "roi_align_rotated" else 4
            boxes, batch_indices, tame = decode_boxes(d, dtype, x.shape[0], coords, tame)
            try:
                output = layer(x, boxes, batch_indices=batch_indices)
            except pyroi.PyroiError:
                last = None
                continue
            if layer.training:  # the same call through the functions
                kwargs = {"batch_indices": batch_indices} if batch_indices is not None else {}
                if op in SAMPLING:
                    kwargs["sampling_ratio"] = 0 if op in ("ps_roi_align",
                                                           "roi_align_rotated") else 2
                result = call_forward(op, x, boxes, 2, kwargs)
                argmax = result[1] if isinstance(result, tuple) else None
                last = (output, call_backward(op, np.ones_like(output), boxes, x.shape, 2,
                                              argmax, kwargs))
            else:
                last = None
        elif step == 1:
            mode = d.int(0, 2)
            if mode == 0:
                assert layer.eval() is layer
            elif mode == 1:
                assert layer.train() is layer
            else:
                layer.training = d.pick([True, False, 1, 0])
            if not layer.training:
                last = None
        else:
            coeff = d.pick(COEFFICIENTS)
            shape_change = d.int(0, 4) if last is not None else 0
            grad = np.ones_like(last[0]) if last is not None else np.ones((1, 1, 2, 2), dtype)
            if shape_change == 1:
                grad = np.ones(grad.shape[:2] + (grad.shape[2] + 1, grad.shape[3]), grad.dtype)
            elif shape_change == 2:
                grad = grad.astype(d.pick([np.float16, np.float32, np.float64]))
            elif shape_change == 3:
                grad = grad[:-1] if len(grad) else grad
            try:
                gradient = layer.backward(grad, lda_coeff=coeff)
            except pyroi.PyroiError:
                continue
            assert last is not None, "backward without a training forward returned"
            assert grad.shape == last[0].shape and grad.dtype == last[0].dtype, \
                "backward accepted a grad_output of another shape or dtype"
            assert gradient.shape == last[1].shape and gradient.dtype == last[1].dtype
            if coeff == 1.0 and not isinstance(coeff, (bool, np.bool_)):
                assert gradient.tobytes() == last[1].tobytes(), "layer gradient != function's"


def mismatched_backward(d):
    """Function backwards whose grad_output, boxes or argmax disagree in shape: a
    PyroiError, or a gradient of input_shape."""
    op = d.pick(OPS)
    dtype = d.pick([np.float32, np.float64])
    pooled = (d.int(1, 3), d.int(1, 3))
    x, tame = decode_input(d, dtype, op, pooled)
    coords = 5 if op == "roi_align_rotated" else 4
    boxes, batch_indices, tame = decode_boxes(d, dtype, x.shape[0], coords, tame)
    kwargs = {"batch_indices": batch_indices} if batch_indices is not None else {}
    try:
        result = call_forward(op, x, boxes, pooled, kwargs)
    except pyroi.PyroiError:
        return
    output, argmax = result if isinstance(result, tuple) else (result, None)
    k, c, ph, pw = output.shape
    grad_shape = d.pick([(k, c, ph + 1, pw), (k + 1, c, ph, pw), (k, c + 1, ph, pw),
                         (k, c, ph, pw, 1), (k, c, ph), (max(k - 1, 0), c, ph, pw),
                         (k, c, ph, pw)])
    grad = np.ones(grad_shape, dtype)
    if argmax is not None and d.chance(3):
        argmax = d.pick([argmax[:, :, :1], argmax.astype(np.int32), argmax.astype(np.float64),
                         argmax[:-1], np.zeros((k, c, ph, pw), np.uint64)])
    shape = d.pick([x.shape, x.shape[:3], (x.shape[0] + 1,) + x.shape[1:],
                    (x.shape[0], x.shape[1] + 1) + x.shape[2:], (-1,) + x.shape[1:]])
    try:
        gradient = call_backward(op, grad, boxes, shape, pooled, argmax, kwargs)
    except pyroi.PyroiError:
        return
    check_result(gradient, tuple(shape), False)


def nothing(d):
    """The selector an exhausted input picks: the first call only."""


EXTRAS = {"a-none": nothing, "float16": float16_call, "onnx": onnx_call, "ascend": ascend_call,
          "layer": layer_sequence, "wrong_gradient": mismatched_backward, "deform": deform_call}


def main():
    atheris.Setup(sys.argv, one_call)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
