"""Results of 1 MiB and more are allocated over reusable buffers (pyroi/_results.py): a freed
result's memory serves the next result of the same size. These tests pin what a user can
see: ordinary writeable C-contiguous arrays, no stale data, views keep memory alive, the limit
turns reuse off, and bad limits are rejected."""

import os
import subprocess
import sys

import numpy as np
import pytest

import pyroi
from pyroi import _core


def address(array):
    return array.__array_interface__["data"][0]


@pytest.fixture
def cache_limit():
    previous = pyroi.set_result_cache_limit(64 << 20)
    yield
    pyroi.set_result_cache_limit(previous)


def large_case(dtype=np.float32):
    rng = np.random.default_rng(7)
    features = rng.standard_normal((1, 32, 40, 50)).astype(dtype)
    boxes = np.concatenate([np.zeros((300, 1)), rng.uniform(0, 30, (300, 2)),
                            rng.uniform(31, 50, (300, 2))], axis=1).astype(dtype)
    return features, boxes  # result 300 x 32 x 7 x 7 float32: 1.9 MB


def test_results_are_ordinary_arrays_and_memory_is_reused(cache_limit):
    features, boxes = large_case()
    first = pyroi.roi_align(features, boxes, 7, 1.0, 2, True)
    assert first.nbytes >= 1 << 20
    assert first.flags.c_contiguous and first.flags.writeable and first.flags.aligned
    assert address(first) % 64 == 0
    expected = first.copy()
    where = address(first)
    first[...] = np.nan  # what a reused buffer holds before the next call
    del first
    assert _core.result_cache_bytes() >= expected.nbytes
    second = pyroi.roi_align(features, boxes, 7, 1.0, 2, True)
    assert address(second) == where
    assert np.array_equal(second, expected)  # every element written again


def test_a_kept_buffer_serves_a_result_of_at_least_half_its_size(cache_limit):
    """A detector alternates eval forwards and train steps whose results differ in size: the
    smaller results reuse the larger ones' pages rather than fresh ones."""
    pyroi.set_result_cache_limit(0)  # nothing kept from earlier tests
    pyroi.set_result_cache_limit(64 << 20)
    features, boxes = large_case()
    first = pyroi.roi_align(features, boxes, 7, 1.0, 2, True)  # 1.9 MB
    where = address(first)
    del first
    smaller = pyroi.roi_align(features, boxes[:200], 7, 1.0, 2, True)  # 1.25 MB
    assert address(smaller) == where
    assert np.array_equal(smaller, pyroi.roi_align(features, boxes, 7, 1.0, 2, True)[:200])
    del smaller
    kept = _core.result_cache_bytes()
    features = np.concatenate([features] * 4, axis=1)  # 128 channels: 300 boxes 7.5 MB
    too_large_for = pyroi.roi_align(features, boxes[:120], 7, 1.0, 2, True)  # 3 MB
    assert address(too_large_for) != where  # 1.9 MB buffer is less than 3 MB
    del too_large_for
    big = pyroi.roi_align(features, boxes, 7, 1.0, 2, True)
    where = address(big)
    del big
    small = pyroi.roi_align(features, boxes[:140], 7, 1.0, 2, True)  # 3.5 MB < half of 7.5
    assert address(small) != where
    assert _core.result_cache_bytes() >= kept


def test_a_view_keeps_its_memory(cache_limit):
    features, boxes = large_case()
    result = pyroi.roi_align(features, boxes, 7, 1.0, 2, True)
    view = result[5:9]
    expected = view.copy()
    del result
    other = pyroi.roi_align(features, boxes, 7, 1.0, 2, True)
    other[...] = -1.0
    assert np.array_equal(view, expected)


def test_backward_and_float64_results(cache_limit):
    features, boxes = large_case(np.float64)
    grad = np.ones((300, 32, 7, 7))
    first = pyroi.roi_align_backward(grad, boxes, features.shape, 1.0, 2, True)
    expected = first.copy()
    first[...] = np.nan
    del first
    second = pyroi.roi_align_backward(grad, boxes, features.shape, 1.0, 2, True)
    assert np.array_equal(second, expected)


def test_limit_zero_turns_reuse_off():
    previous = pyroi.set_result_cache_limit(0)
    try:
        assert pyroi.get_result_cache_limit() == 0
        assert _core.result_cache_bytes() == 0
        features, boxes = large_case()
        result = pyroi.roi_align(features, boxes, 7, 1.0, 2, True)
        del result
        assert _core.result_cache_bytes() == 0
    finally:
        pyroi.set_result_cache_limit(previous)


def test_limit_bounds_what_is_kept(cache_limit):
    pyroi.set_result_cache_limit(3 << 20)
    features, boxes = large_case()
    results = [pyroi.roi_align(features, boxes, 7, 1.0, 2, True) for _ in range(4)]
    del results
    assert 0 < _core.result_cache_bytes() <= 3 << 20


@pytest.mark.parametrize("limit", [-1, 1.5, "big", True, None, 2**64])
def test_bad_limits_are_rejected(limit):
    with pytest.raises(pyroi.InvalidArgumentError, match="limit"):
        pyroi.set_result_cache_limit(limit)


@pytest.mark.parametrize("text,ok", [("0", True), ("1048576", True), ("-5", False),
                                     ("lots", False), (str(2**64), False),
                                     (str(2**63), False)])
def test_environment_variable(text, ok):
    code = "import pyroi; print(pyroi.get_result_cache_limit())"
    env = dict(os.environ, PYROI_RESULT_CACHE_BYTES=text)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if ok:
        assert run.returncode == 0 and run.stdout.strip() == text
    else:
        assert run.returncode != 0 and "PYROI_RESULT_CACHE_BYTES" in run.stderr


@pytest.mark.parametrize("text", ["-5", str(2**64)])
def test_bad_environment_value_does_not_break_import(text):
    # as a bad PYROI_NUM_THREADS: import works, each call that needs the limit names it
    code = ("import pyroi, numpy as np\n"
            "try:\n    pyroi.get_result_cache_limit()\n"
            "except pyroi.InvalidArgumentError as e:\n    print('ERR', e)\n"
            "pyroi.roi_align(np.ones((1, 1, 4, 4), np.float32), np.zeros((1, 5), np.float32), 2)\n"
            "print(pyroi.set_result_cache_limit(1 << 20), pyroi.get_result_cache_limit())")
    env = dict(os.environ, PYROI_RESULT_CACHE_BYTES=text)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    first, second = run.stdout.splitlines()
    assert first.startswith("ERR") and "PYROI_RESULT_CACHE_BYTES" in first
    assert second == f"{256 << 20} {1 << 20}"


RSS_CHILD = r"""
import sys, threading, numpy as np, pyroi
limit, threads, calls, scratch_limit = map(int, sys.argv[1:5])
pyroi.set_result_cache_limit(limit)
pyroi.set_scratch_cache_limit(scratch_limit)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
boxes = np.array([[0, 0, 0, 4, 4]], np.float32)
grad = np.ones((1, 1, 2, 2), np.float32)
pyroi.roi_align_backward(grad, boxes, (1, 1, 512, 512), 1.0, 2)  # warm up
before = rss()
def work(seed):
    rng, live = np.random.default_rng(seed), []
    for i in range(calls):
        side = int(rng.integers(512, 2800))  # results of 1-30 MB
        live.append(pyroi.roi_align_backward(grad, boxes, (1, 1, side, side), 1.0, 2,
                                             num_threads=1))
        if len(live) > 2:
            live.pop(0)
workers = [threading.Thread(target=work, args=(seed,)) for seed in range(threads)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
print((rss() - before) / 2**20)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="Linux /proc")
@pytest.mark.parametrize("limit_mib,threads,calls,scratch_mib",
                         [(0, 1, 400, 0), (64, 1, 400, 0), (64, 8, 20, 0), (0, 1, 400, 64)])
def test_memory_stays_within_the_limit(limit_mib, threads, calls, scratch_mib):
    # results of 1-30 MB, at most 2-3 alive per thread, none at the end: freed buffers beyond
    # the limit go back to the OS. With malloc'd buffers glibc kept hundreds of MB (measured
    # with the allocator before mapped blocks: 8 threads, 64 MiB: 510-610 MB; this tree: 45-65)
    # The calls' scratch (lane blocks of up to 64 MB) adds at most its own limit.
    run = subprocess.run([sys.executable, "-c", RSS_CHILD, str(limit_mib << 20), str(threads),
                          str(calls), str(scratch_mib << 20)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    growth_mib = float(run.stdout)
    assert growth_mib < limit_mib + scratch_mib + 32, growth_mib


# ---- the C core's spare scratch block (pyroi.set_scratch_cache_limit) ---------------------

def minor_faults():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def huge_pages_always():
    path = "/sys/kernel/mm/transparent_hugepage/enabled"
    if not os.path.exists(path):
        return False
    with open(path) as f:
        return "[always]" in f.read()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts page faults (Linux)")
def test_a_calls_scratch_is_kept_for_the_next_call():
    # from NCHW the map is gathered into a lane-major block of 200 x 272 pixels x 64 bytes
    # (3.5 MB, mapped): kept, the next call touches no fresh page of it
    rng = np.random.default_rng(3)
    features = rng.standard_normal((1, 16, 200, 272), dtype=np.float32)
    boxes = np.concatenate([np.zeros((400, 1)), rng.uniform(0, 500, (400, 2)),
                            rng.uniform(500, 1000, (400, 2))], axis=1).astype(np.float32)
    out = np.empty((400, 16, 7, 7), np.float32)

    def faults_of_a_call():
        before = minor_faults()
        pyroi.roi_align(features, boxes, 7, 0.25, 2, True, num_threads=1, out=out)
        return minor_faults() - before

    previous = pyroi.set_scratch_cache_limit(0)
    try:
        faults_of_a_call()
        unkept = [faults_of_a_call() for _ in range(3)]
        expected = out.copy()
        assert _core.scratch_cache_bytes() == 0
        assert pyroi.set_scratch_cache_limit(64 << 20) == 0
        assert pyroi.get_scratch_cache_limit() == 64 << 20
        faults_of_a_call()
        assert _core.scratch_cache_bytes() >= 200 * 272 * 64
        kept = [faults_of_a_call() for _ in range(3)]
        np.testing.assert_array_equal(out, expected)
        # the block's ~850 pages (other allocations fault a few hundred either way); with
        # transparent huge pages always on, the block takes a few 2 MB faults: nothing to see
        if not huge_pages_always():
            assert min(unkept) - max(kept) > 300, (unkept, kept)
        pyroi.set_scratch_cache_limit(1 << 20)  # below the block: it is given back
        assert _core.scratch_cache_bytes() == 0
    finally:
        pyroi.set_scratch_cache_limit(previous)


@pytest.mark.parametrize("limit", [-1, 1.5, "big", True, None, 2**64])
def test_bad_scratch_limits_are_rejected(limit):
    with pytest.raises(pyroi.InvalidArgumentError, match="limit"):
        pyroi.set_scratch_cache_limit(limit)


FORK_CHILD = r"""
import os, sys, threading, numpy as np, pyroi
rng = np.random.default_rng(3)
features = rng.standard_normal((1, 16, 200, 272), dtype=np.float32)
boxes = np.concatenate([np.zeros((400, 1)), rng.uniform(0, 500, (400, 2)),
                        rng.uniform(500, 1000, (400, 2))], axis=1).astype(np.float32)
expected = pyroi.roi_align(features, boxes, 7, 0.25, 2, True, num_threads=1)
stop = threading.Event()
def busy():  # takes and gives the spare block, and its lock, all the time
    while not stop.is_set():
        pyroi.roi_align(features, boxes, 7, 0.25, 2, True, num_threads=1)
thread = threading.Thread(target=busy)
thread.start()
for _ in range(int(sys.argv[1])):
    pid = os.fork()
    if pid == 0:  # the child: its copy of the spare block and of the lock must work
        same = np.array_equal(pyroi.roi_align(features, boxes, 7, 0.25, 2, True,
                                              num_threads=2), expected)
        os._exit(0 if same else 3)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        print("child", os.waitstatus_to_exitcode(status))
        break
stop.set()
thread.join()
print("done")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_fork_while_another_thread_uses_the_scratch_cache():
    # the child of a fork made while another thread takes and gives the spare scratch block
    # (its lock is held around every fork: pthread_atfork) computes with it, same results
    run = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", FORK_CHILD,
                          "20"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["done"], run.stdout
