"""float16 without a float32 copy: a float16 call's extra memory is the C core's scratch of
one channel chunk, not a float32 copy of the map (or of the gradient it writes). Measured as
the peak resident set (VmHWM, reset through /proc/self/clear_refs) of a fresh process."""

import sys

import pytest

import peak_memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc/self/status")

_PROGRAM = """
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 256, 256, 256), dtype=np.float32).astype(np.float16)
    boxes = np.array([[0, 10, 20, 200, 240], [0, 0, 0, 255, 255], [0, 50, 60, 70, 80]],
                     np.float16)
    y = pyroi.roi_align(x, boxes, 7, 1.0, 2, True)
    grad = np.ones_like(y)
    calls = {
        "roi_align": lambda: pyroi.roi_align(x, boxes, 7, 1.0, 2, True, num_threads=1),
        "roi_align_backward": lambda: pyroi.roi_align_backward(grad, boxes, x.shape, 1.0, 2,
                                                               True, num_threads=1),
        "roi_pool": lambda: pyroi.roi_pool(x, boxes, 7, 1.0, return_argmax=True,
                                           num_threads=1),
        "ps_roi_align": lambda: pyroi.ps_roi_align(x[:, :245], boxes, 7, 1.0, 2,
                                                   num_threads=1),
    }
    # MultiScaleRoIAlign's levels, one C call (they were widened to float32 in NumPy first)
    pooler = pyroi.MultiScaleRoIAlign(["p2", "p3"], 7, 2)
    pyramid = {"p2": x, "p3": np.ascontiguousarray(x[:, :, ::2, ::2])}
    image_boxes = [np.ascontiguousarray(boxes[:, 1:]) * 4]
    pooler(pyramid, image_boxes, [(1024, 1024)])
    calls["multiscale"] = lambda: pooler(pyramid, image_boxes, [(1024, 1024)], num_threads=1)
    for name, call in calls.items():
        extra, result_bytes = extra_peak(call)
        print(name, extra, result_bytes)
"""


def test_float16_calls_make_no_float32_copy():
    output = peak_memory.run(_PROGRAM)
    copy_bytes = 256 * 256 * 256 * 4  # a float32 copy of the map: 64 MiB
    for line in output.split("\n"):
        if not line:
            continue
        name, extra, result_bytes = line.split()
        # the result itself, plus scratch far below a float32 copy (one thread: 16 channels,
        # 4 MiB here). The NumPy widening this replaced copied the whole map (and failed with
        # RecursionError on maps of more than 2**21 elements per image).
        assert int(extra) - int(result_bytes) < copy_bytes // 4, line
