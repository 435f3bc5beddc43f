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
""")


def run(program):
    """Runs program, which may call extra_peak, in a fresh interpreter; returns its stdout."""
    return subprocess.run([sys.executable, "-c", _MEASURE + textwrap.dedent(program)],
                          capture_output=True, text=True, check=True).stdout
