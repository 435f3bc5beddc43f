"""Threads: results are bit-identical for every thread count, the process default can be
set, Python threads may call concurrently, and a fork()ed child can call pyroi."""

import hashlib
import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import pyroi


def large_case(dtype, seed=0):
    """Big enough (about 10^7 tap reads) that every call really uses several threads."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 48, 40, 44)).astype(dtype)
    k = 300
    corners = rng.uniform(-8, 52, (k, 2))
    sizes = rng.uniform(0, 30, (k, 2))
    boxes = np.concatenate(
        [(np.arange(k) % 2)[:, None], corners, corners + sizes], axis=1
    ).astype(dtype)
    grad = rng.standard_normal((k, 48, 7, 7)).astype(dtype)
    return x, boxes, grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_bit_identical_for_every_thread_count(dtype, aligned, sampling_ratio):
    x, boxes, grad = large_case(dtype)
    kwargs = dict(spatial_scale=0.75, sampling_ratio=sampling_ratio, aligned=aligned)
    y1 = pyroi.roi_align(x, boxes, 7, num_threads=1, **kwargs)
    g1 = pyroi.roi_align_backward(grad, boxes, x.shape, num_threads=1, **kwargs)
    for threads in (2, 3, 8):
        y = pyroi.roi_align(x, boxes, 7, num_threads=threads, **kwargs)
        g = pyroi.roi_align_backward(grad, boxes, x.shape, num_threads=threads, **kwargs)
        assert y.tobytes() == y1.tobytes(), threads
        assert g.tobytes() == g1.tobytes(), threads


def test_default_thread_count_can_be_set():
    try:
        pyroi.set_num_threads(3)
        assert pyroi.get_num_threads() == 3
        pyroi.set_num_threads(None)
        assert pyroi.get_num_threads() >= 1
        with pytest.raises(pyroi.InvalidArgumentError, match="num_threads"):
            pyroi.set_num_threads(0)
        with pytest.raises(pyroi.ArgumentTypeError, match="num_threads"):
            pyroi.set_num_threads(2.5)
    finally:
        pyroi.set_num_threads(None)


def test_environment_variable_sets_the_default():
    code = "import pyroi; print(pyroi.get_num_threads())"
    env = dict(os.environ, PYROI_NUM_THREADS="5")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(__file__) or ".")
    assert out.stdout.strip() == "5"
    env["PYROI_NUM_THREADS"] = "zero"
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(__file__) or ".")
    assert bad.returncode != 0 and "PYROI_NUM_THREADS" in bad.stderr


def run_in_threads(worker, count):
    """Run ``worker()`` in ``count`` Python threads at once; return when all have ended."""
    threads = [threading.Thread(target=worker) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_concurrent_python_threads_match_serial():
    x, boxes, grad = large_case(np.float32, seed=1)
    expected_y = pyroi.roi_align(x, boxes, 7, 0.75, 2, True, num_threads=1)
    expected_g = pyroi.roi_align_backward(grad, boxes, x.shape, 0.75, 2, True, num_threads=1)
    failures = []

    def worker():
        for _ in range(3):
            y = pyroi.roi_align(x, boxes, 7, 0.75, 2, True, num_threads=2)
            g = pyroi.roi_align_backward(grad, boxes, x.shape, 0.75, 2, True, num_threads=2)
            if y.tobytes() != expected_y.tobytes() or g.tobytes() != expected_g.tobytes():
                failures.append("mismatch")

    run_in_threads(worker, 4)
    assert not failures


def _child_call(queue):
    x, boxes, _ = large_case(np.float32, seed=2)
    y = pyroi.roi_align(x, boxes, 7, 0.75, 2, True, num_threads=2)
    queue.put(hashlib.sha256(y.tobytes()).hexdigest())  # small: a big item blocks the join


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
def test_forked_child_can_call_after_threaded_parent_call():
    x, boxes, _ = large_case(np.float32, seed=2)
    expected = pyroi.roi_align(x, boxes, 7, 0.75, 2, True, num_threads=2).tobytes()
    expected = hashlib.sha256(expected).hexdigest()
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_call, args=(queue,))
    child.start()
    child.join(timeout=120)
    if child.is_alive():  # a hang: what a persistent GNU OpenMP pool does after fork
        child.kill()
        pytest.fail("the forked child hung in pyroi")
    assert child.exitcode == 0
    assert queue.get(timeout=10) == expected


# --------------------------------------------------------------------------------------
# every operator: concurrent Python threads and a forked child (hostile-input issue)
# --------------------------------------------------------------------------------------

def _every_op_case(seed=3):
    """A case big enough that num_threads=2 really starts a second thread in every op."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 36, 30, 33)).astype(np.float32)  # 36 = 4 * 3 * 3 (ps ops)
    k = 120
    corner = rng.uniform(-4, 30, (k, 2))
    size = rng.uniform(1, 20, (k, 2))
    boxes = np.concatenate([(np.arange(k) % 2)[:, None], corner, corner + size],
                           axis=1).astype(np.float32)
    rois = np.concatenate([boxes[:, :1], corner + size / 2, size,
                           rng.uniform(-90, 90, (k, 1))], axis=1).astype(np.float32)
    return x, boxes, rois


def _every_op_calls(x, boxes, rois, threads):
    """(name, result bytes) of the forward and backward of every operator."""
    out = {}
    y = pyroi.roi_align(x, boxes, 3, 0.5, 2, True, num_threads=threads)
    out["roi_align"] = y
    out["roi_align_backward"] = pyroi.roi_align_backward(y, boxes, x.shape, 0.5, 2, True,
                                                         num_threads=threads)
    y, arg = pyroi.roi_align(x, boxes, 3, 0.5, 0, mode="max", return_argmax=True,
                             num_threads=threads)
    out["roi_align_max"] = y
    out["roi_align_max_backward"] = pyroi.roi_align_backward(
        y, boxes, x.shape, 0.5, 0, mode="max", argmax=arg, num_threads=threads)
    y, arg = pyroi.roi_pool(x, boxes, 3, 0.5, return_argmax=True, num_threads=threads)
    out["roi_pool"] = y
    out["roi_pool_backward"] = pyroi.roi_pool_backward(y, boxes, arg, x.shape, 3, 0.5,
                                                       num_threads=threads)
    y = pyroi.ps_roi_align(x, boxes, 3, 0.5, 2, num_threads=threads)
    out["ps_roi_align"] = y
    out["ps_roi_align_backward"] = pyroi.ps_roi_align_backward(y, boxes, x.shape, 0.5, 2,
                                                               num_threads=threads)
    y = pyroi.ps_roi_pool(x, boxes, 3, 0.5, num_threads=threads)
    out["ps_roi_pool"] = y
    out["ps_roi_pool_backward"] = pyroi.ps_roi_pool_backward(y, boxes, x.shape, 0.5,
                                                             num_threads=threads)
    y = pyroi.roi_align_rotated(x, rois, 3, 0.5, 2, num_threads=threads)
    out["roi_align_rotated"] = y
    out["roi_align_rotated_backward"] = pyroi.roi_align_rotated_backward(
        y, rois, x.shape, 0.5, 2, num_threads=threads)
    pooler = pyroi.MultiScaleRoIAlign(["p2", "p3"], 3, 2)
    levels = {"p2": x, "p3": np.ascontiguousarray(x[:, :, ::2, ::2])}
    per_image = [boxes[boxes[:, 0] == i, 1:] * 4 for i in range(2)]
    y = pooler(levels, per_image, [(120, 132)] * 2, num_threads=threads)
    out["multiscale"] = y
    grads = pooler.backward(y, num_threads=threads)
    out["multiscale_backward"] = np.concatenate([grads["p2"].ravel(), grads["p3"].ravel()])
    return {name: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
            for name, v in out.items()}


def test_every_op_from_concurrent_python_threads_matches_serial():
    x, boxes, rois = _every_op_case()
    expected = _every_op_calls(x, boxes, rois, 1)
    assert _every_op_calls(x, boxes, rois, 3) == expected  # and each is thread-count free
    results, errors = [], []

    def worker():
        try:
            results.append(_every_op_calls(x, boxes, rois, 2))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    run_in_threads(worker, 4)
    assert not errors
    assert len(results) == 4
    for result in results:
        mismatched = [name for name in expected if result[name] != expected[name]]
        assert not mismatched


def _child_every_op(queue):
    x, boxes, rois = _every_op_case()
    queue.put(_every_op_calls(x, boxes, rois, 2))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
def test_forked_child_runs_every_op():
    x, boxes, rois = _every_op_case()
    expected = _every_op_calls(x, boxes, rois, 2)  # threads started (and joined) in the parent
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_every_op, args=(queue,))
    child.start()
    child.join(timeout=120)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung in pyroi")
    assert child.exitcode == 0
    assert queue.get(timeout=10) == expected
