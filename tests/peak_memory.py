"""The memory a pyroi call maps for itself: the rise of the peak resident set (VmHWM, reset
through /proc/self/clear_refs, Linux only) over a second call in a fresh interpreter, so that
the first call's result buffers and code pages are already there, with no scratch kept between
calls (pyroi.set_scratch_cache_limit(0)). Shared by the float16 memory tests."""

import subprocess
import sys
import textwrap

_MEASURE = textwrap.dedent("""
    import numpy as np, pyroi

    # every call maps its scratch afresh: a block kept from the first call would hide it
    pyroi.set_scratch_cache_limit(0)

    def status(field):
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field + ":"))

    def extra_peak(call):
        # (bytes the second call mapped above its start, bytes of the arrays it returned)
        call()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # VmHWM := VmRSS
        before = status("VmRSS")
        result = call()
        return status("VmHWM") - before, sum(np.asarray(r).nbytes for r in (
            result if isinstance(result, tuple) else (result,)))

    def image0_boxes(rng, k, corner_high, far_low, far_high):
        # k rows (0, x1, y1, x2, y2) on image 0: one corner in [0, corner_high)^2, the other
        # drawn from [far_low, far_high)^2 and moved to no less than the first
        boxes = np.concatenate([np.zeros((k, 1)), rng.uniform(0, corner_high, (k, 2)),
                                rng.uniform(far_low, far_high, (k, 2))],
                               axis=1).astype(np.float32)
        boxes[:, 3:] = np.maximum(boxes[:, 1:3], boxes[:, 3:])
        return boxes
""")


def run(program):
    """Runs program, which may call extra_peak, in a fresh interpreter; returns its stdout."""
    return subprocess.run([sys.executable, "-c", _MEASURE + textwrap.dedent(program)],
                          capture_output=True, text=True, check=True).stdout


def extra_by_label(program):
    """Runs program, whose every printed line is labels and then bytes (``forward float16
    1234``), as run(); returns {labels: bytes}, labels a tuple of the words (one word alone:
    that word)."""
    extra = {}
    for line in run(program).split("\n"):
        if line:
            *labels, value = line.split()
            extra[labels[0] if len(labels) == 1 else tuple(labels)] = int(value)
    return extra


def extra_by_dtype(program):
    """program run as extra_by_label once per dtype (float32, float16) in an interpreter of
    its own with DTYPE that NumPy dtype, so that allocations the two share map alike in
    both; returns {(labels, dtype name): bytes}."""
    return {(labels, dtype): value for dtype in ("float32", "float16")
            for labels, value in extra_by_label(f"DTYPE = np.{dtype}\n" +
                                                textwrap.dedent(program)).items()}
