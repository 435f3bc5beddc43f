"""PYROI_MAX_VECTOR_ISA: the environment variable that caps the vector level the C core
dispatches on (src/c/core/cpu.c). Each case runs a fresh interpreter, since the variable is read
once, at the library's first CPU query: capped, the reported level is the cap (or lower), a
value naming no level caps at the baseline and says so, and every operator family gives the
same bits at every level (the vector variants compute the same thing in the same order)."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import pyroi
from pyroi import _core

# The installed package, run from outside the source tree.
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(pyroi.__file__)))
_NAMES = ("baseline", "avx2", "x86-64-v4")


def run_python(code, cap, cwd, stderr=None):
    """Run ``code`` in a new interpreter with PYROI_MAX_VECTOR_ISA = ``cap`` (None: unset);
    returns its stdout (and appends its stderr to the list ``stderr``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYROI_MAX_VECTOR_ISA"}
    env["PYTHONPATH"] = os.pathsep.join([_PACKAGE_ROOT] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    if cap is not None:
        env["PYROI_MAX_VECTOR_ISA"] = cap
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    if stderr is not None:
        stderr.append(result.stderr)
    return result.stdout.strip()


def isa_under(cap, cwd, stderr=None):
    """vector_isa() after ``import pyroi`` in an interpreter capped at ``cap``."""
    return run_python("import pyroi; print(pyroi._core.vector_isa())", cap, cwd, stderr)


def uncapped_isa(cwd):
    return isa_under(None, cwd)


@pytest.mark.parametrize("cap", ["baseline", "BASELINE", "avx2", "x86-64-v4", ""])
def test_the_cap_lowers_the_level_and_never_raises_it(cap, tmp_path):
    full = uncapped_isa(tmp_path)
    stderr = []
    isa = isa_under(cap, tmp_path, stderr)
    assert "PYROI_MAX_VECTOR_ISA" not in stderr[0]
    if full == "baseline-only build":
        assert isa == full  # nothing to cap
    elif cap == "":
        assert isa == full  # empty: as if unset
    else:
        assert isa == _NAMES[min(_NAMES.index(full), _NAMES.index(cap.lower()))]


@pytest.mark.parametrize("cap", ["avx3", "AVX-2", "sse2", " avx2"])
def test_a_value_naming_no_level_caps_at_the_baseline_and_says_so(cap, tmp_path):
    stderr = []
    isa = isa_under(cap, tmp_path, stderr)
    if uncapped_isa(tmp_path) != "baseline-only build":
        assert isa.startswith("baseline (PYROI_MAX_VECTOR_ISA not understood")
        assert "baseline, avx2 or x86-64-v4" in isa
        # and `import pyroi` warns
        assert f"RuntimeWarning: pyroi: vector code {isa}" in stderr[0]


# Every operator family forward and backward, float32 and float64, NCHW and NHWC where the
# family has it, 2 threads, on random maps with NaN and infinities and boxes partly outside
# the map: the arrays, by name, in an .npz.
_ALL_FAMILIES = r"""
import sys
import numpy as np
import pyroi

rng = np.random.default_rng(19)
results = {}
for dtype in (np.float32, np.float64):
    d = np.dtype(dtype).name
    x = rng.standard_normal((2, 18, 23, 29)).astype(dtype)
    x.flat[rng.choice(x.size, 40, replace=False)] = np.nan
    x.flat[rng.choice(x.size, 20, replace=False)] = np.inf
    x.flat[rng.choice(x.size, 20, replace=False)] = -np.inf
    k = 11
    corners = rng.uniform(-6, 34, (k, 2, 2))
    boxes = np.concatenate([rng.integers(0, 2, (k, 1)), corners.min(1), corners.max(1)],
                           axis=1).astype(dtype)
    boxes[0, 1:] = [3, 4, 3.5, 4.5]  # under a pixel
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    for mode in ("avg", "max"):
        for ratio in (2, -1):
            key = f"{d}_align_{mode}_{ratio}"
            out = pyroi.roi_align(x, boxes, (5, 4), 0.8, ratio, True, mode=mode,
                                  return_argmax=mode == "max", num_threads=2)
            out, argmax = out if mode == "max" else (out, None)
            results[key] = out
            if argmax is not None:
                results[key + "_argmax"] = argmax
            results[key + "_nhwc"] = pyroi.roi_align(
                nhwc, boxes, (5, 4), 0.8, ratio, True, mode=mode, layout="NHWC", num_threads=2)
            grad = rng.standard_normal(out.shape).astype(dtype)
            grad.flat[::17] = np.inf
            results[key + "_bwd"] = pyroi.roi_align_backward(
                grad, boxes, x.shape, 0.8, ratio, True, mode=mode,
                argmax=argmax, num_threads=2)
    pooled, argmax = pyroi.roi_pool(x, boxes, (3, 4), 0.7, return_argmax=True, num_threads=2)
    results[f"{d}_pool"], results[f"{d}_pool_argmax"] = pooled, argmax
    results[f"{d}_pool_bwd"] = pyroi.roi_pool_backward(
        rng.standard_normal(pooled.shape).astype(dtype), boxes, argmax, x.shape, (3, 4), 0.7,
        num_threads=2)
    ps = x[:, :16]  # 4 output channels of 2 x 2 bins
    results[f"{d}_ps_align"] = pyroi.ps_roi_align(ps, boxes, 2, 0.8, 2, num_threads=2)
    results[f"{d}_ps_align_bwd"] = pyroi.ps_roi_align_backward(
        rng.standard_normal((k, 4, 2, 2)).astype(dtype), boxes, ps.shape, 0.8, 2, num_threads=2)
    results[f"{d}_ps_pool"] = pyroi.ps_roi_pool(ps, boxes, 2, 0.8, num_threads=2)
    results[f"{d}_ps_pool_bwd"] = pyroi.ps_roi_pool_backward(
        rng.standard_normal((k, 4, 2, 2)).astype(dtype), boxes, ps.shape, 0.8, num_threads=2)
    rois = np.concatenate([boxes[:, :1], rng.uniform(0, 30, (k, 2)), rng.uniform(1, 20, (k, 2)),
                           rng.uniform(-180, 180, (k, 1))], axis=1).astype(dtype)
    results[f"{d}_rotated"] = pyroi.roi_align_rotated(x, rois, (3, 5), 0.9, 2, True, True)
    results[f"{d}_rotated_bwd"] = pyroi.roi_align_rotated_backward(
        rng.standard_normal((k, 18, 3, 5)).astype(dtype), rois, x.shape, 0.9, 2, True, True)
    for mode in ("avg", "max"):
        results[f"{d}_onnx_{mode}"] = pyroi.onnx.roi_align(
            x, boxes[:, 1:], boxes[:, 0].astype(np.int64), mode=mode, output_height=3,
            output_width=4, sampling_ratio=0, spatial_scale=0.8, num_threads=2)
    results[f"{d}_onnx_max_roi_pool"] = pyroi.onnx.max_roi_pool(x, boxes, (3, 4), 0.7)
    pooler = pyroi.MultiScaleRoIAlign(["p2", "p3"], output_size=3, sampling_ratio=2)
    pyramid = {"p2": x, "p3": np.ascontiguousarray(x[:, :, ::2, ::2])}
    image_boxes = [np.abs(boxes[boxes[:, 0] == i, 1:]) * 4 for i in (0, 1)]
    for b in image_boxes:
        b[:, 2:] += b[:, :2]
    pooled = pooler(pyramid, image_boxes, [(92, 116)] * 2)
    results[f"{d}_multi_scale"] = pooled
    results.update({f"{d}_multi_scale_bwd_{i}": g for i, g in enumerate(
        pooler.backward(rng.standard_normal(pooled.shape).astype(dtype)))})
np.savez(sys.argv[1], **results)
"""


def family_results(cap, cwd):
    path = pathlib.Path(cwd) / f"results-{cap}.npz"
    run_python(f"import sys; sys.argv = ['', {str(path)!r}]\n" + _ALL_FAMILIES, cap, cwd)
    with np.load(path) as data:
        return {name: data[name] for name in data.files}


def test_every_family_gives_the_same_bits_at_every_level(tmp_path):
    if _core.vector_isa() == "baseline-only build":
        pytest.skip("one level only")
    full = family_results(None, tmp_path)
    assert any(np.isnan(a).any() for a in full.values())
    for cap in ("baseline", "avx2"):
        capped = family_results(cap, tmp_path)
        assert capped.keys() == full.keys()
        for name, array in full.items():
            assert capped[name].dtype == array.dtype and capped[name].shape == array.shape, name
            assert capped[name].tobytes() == array.tobytes(), (cap, name)
