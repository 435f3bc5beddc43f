"""threadpoolctl controls pyroi's pool as it controls the native pools of NumPy's ecosystem
(pyroi/_threadpool.py): threadpool_info() lists pyroi, threadpool_limits(1) makes pyroi's
calls run one worker. Each case runs in a child process: whether threadpoolctl was imported
before or after pyroi is part of what is tested."""

import subprocess
import sys

import pytest

pytest.importorskip("threadpoolctl")

CHECK = r"""
import sys
order = sys.argv[1]
if order == "threadpoolctl first":
    import threadpoolctl
    import pyroi
else:
    import pyroi
    assert "threadpoolctl" not in sys.modules  # pyroi does not import it
    import threadpoolctl
import numpy as np
from pyroi import _core

def workers():
    # the thread count pyroi's next call with num_threads=None is given
    return pyroi.get_num_threads()

info = [entry for entry in threadpoolctl.threadpool_info() if entry["user_api"] == "pyroi"]
assert len(info) == 1, threadpoolctl.threadpool_info()
assert info[0]["internal_api"] == "pyroi" and info[0]["version"] == pyroi.__version__, info
assert info[0]["filepath"] == _core.__file__, (info, _core.__file__)
assert info[0]["num_threads"] == pyroi.get_num_threads()
before = workers()
pyroi.set_num_threads(None)
with threadpoolctl.threadpool_limits(1):
    assert workers() == 1
    x = np.random.default_rng(0).standard_normal((1, 64, 64, 64), dtype=np.float32)
    boxes = np.array([[0, 0, 0, 63, 63]] * 200, np.float32)
    pyroi.roi_align(x, boxes, 7, 1.0, 2)
with threadpoolctl.threadpool_limits(limits=1, user_api="pyroi"):
    assert workers() == 1
with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
    assert workers() == before  # another API's limit leaves pyroi alone
assert workers() == before
# lifting the limit restores the automatic choice, not a pinned number
import pyroi._threads as threads
assert threads._default_threads is None
print("OK")
"""

THREADS = r"""
import threading, threadpoolctl, numpy as np, pyroi
x = np.random.default_rng(0).standard_normal((1, 64, 96, 96), dtype=np.float32)
boxes = np.array([[0, 0, 0, 95, 95]] * 400, np.float32)
def busy_threads():
    result = []
    stop = threading.Event()
    def count():
        import os
        while not stop.is_set():
            result.append(len(os.listdir("/proc/self/task")))
    t = threading.Thread(target=count); t.start()
    for _ in range(5):
        pyroi.roi_align(x, boxes, 7, 1.0, 4)
    stop.set(); t.join()
    return max(result)
pyroi.set_num_threads(2)
free = busy_threads()
with threadpoolctl.threadpool_limits(1):
    limited = busy_threads()
print(free, limited)
assert limited < free, (free, limited)
print("OK")
"""


@pytest.mark.parametrize("order", ["threadpoolctl first", "pyroi first"])
def test_threadpool_info_lists_pyroi_and_limits_apply(order):
    run = subprocess.run([sys.executable, "-c", CHECK, order], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "OK", run.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/task")
def test_threadpool_limits_one_starts_no_worker_thread():
    """The OS threads alive during calls: with the limit, the calls start no helper."""
    run = subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), (run.stdout, run.stderr)
