"""atheris harness over the Python API of pyroi.

Each input is decoded into one call of a public operator (forward, backward, a layer or the
multi-scale pooler) with arguments drawn from everything a caller might pass: hostile boxes
(NaN, inf, 1e30, inverted, bad batch indices), every box form, odd shapes, every NumPy
layout, wrong types, out= arrays good and bad. A call must either return a result of the
documented shape (finite for tame data, the same bits for every thread count) or raise a
pyroi.PyroiError; anything else (another exception, a crash, a hang) is a finding.

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


def main():
    atheris.Setup(sys.argv, one_call)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
