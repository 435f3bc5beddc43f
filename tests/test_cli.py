"""The ``pyroi`` command line: every subcommand as a subprocess (exit codes, messages,
files it writes), and the file formats through ``pyroi.cli.main`` in this process."""

import json
import os
import pathlib
import platform
import subprocess
import sys

import numpy as np
import pytest

import pyroi
from pyroi import cli

# Run the installed package, from a directory outside the source tree.
_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [os.path.dirname(os.path.dirname(os.path.abspath(pyroi.__file__)))]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def run(args, cwd, prelude="pass"):
    """``python -m pyroi ARGS`` (with Python code run first, e.g. to hide a module)."""
    code = f"{prelude}; import sys, runpy; sys.argv = ['pyroi'] + {list(args)!r}; " \
           "runpy.run_module('pyroi', run_name='__main__', alter_sys=True)"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_ENV,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(3)
    features = rng.random((2, 8, 12, 14)).astype(np.float32)
    boxes = np.array([[0, 1, 1, 10, 12], [1, 3, 4, 18, 9], [0, 2.5, 0.5, 6, 7]], np.float32)
    np.save(tmp_path / "features.npy", features)
    np.savez(tmp_path / "features.npz", other=np.zeros(3), maps=features)
    np.save(tmp_path / "boxes.npy", boxes)
    (tmp_path / "boxes4.csv").write_text(
        "x1,y1,x2,y2\n" + "".join(",".join(f"{v:g}" for v in b[1:]) + "\n" for b in boxes))
    (tmp_path / "boxes5.csv").write_text(
        "# image, x1, y1, x2, y2\n" + "".join(",".join(f"{v:g}" for v in b) + "\n"
                                               for b in boxes))
    (tmp_path / "boxes.json").write_text(json.dumps(
        {"boxes": boxes[:, 1:].tolist(), "batch_indices": boxes[:, 0].astype(int).tolist()}))
    (tmp_path / "rows.json").write_text(json.dumps(boxes.tolist()))
    rois = np.array([[0, 6, 5, 8, 4, 30], [1, 3, 3, 2, 6, -10]], np.float32)
    np.save(tmp_path / "rois.npy", rois)
    return tmp_path, features, boxes, rois


# ---- subprocesses: every subcommand ----------------------------------------------------------

def test_sample_run(tmp_path):
    result = run([], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "embedded sample" in result.stdout and "(4, 8, 2, 2)" in result.stdout
    # the bins of the first box (inside the map) are checkable by hand: 10 * row + col
    assert "19.5000   21.5000   34.5000   36.5000" in result.stdout
    result = run(["align", "-o", "sample.npy", "--aligned", "--sampling-ratio", "2"], tmp_path)
    assert result.returncode == 0, result.stderr
    sample = np.load(os.path.join(os.path.dirname(pyroi.__file__), "data", "sample.npz"))
    expected = pyroi.roi_align(sample["features"], sample["boxes"], 2, 1.0, 2, True)
    np.testing.assert_array_equal(np.load(tmp_path / "sample.npy"), expected)


@pytest.mark.parametrize("op, function, extra", [
    ("align", pyroi.roi_align, {}),
    ("pool", pyroi.roi_pool, {}),
    ("ps-align", pyroi.ps_roi_align, {}),
    ("ps-pool", pyroi.ps_roi_pool, {}),
    ("align-rotated", pyroi.roi_align_rotated, {}),
])
def test_each_op_writes_what_the_api_returns(files, op, function, extra):
    path, features, boxes, rois = files
    rotated = op == "align-rotated"
    result = run([op, "features.npy", "rois.npy" if rotated else "boxes.npy", "-o", "out.npy",
                  "--spatial-scale", "0.5"], path)
    assert result.returncode == 0, result.stderr
    assert "out.npy" in result.stdout and "float32" in result.stdout
    expected = function(features, rois if rotated else boxes, 2, 0.5)
    np.testing.assert_array_equal(np.load(path / "out.npy"), expected)


def test_explain_writes_a_png(files):
    pytest.importorskip("matplotlib")
    import matplotlib.image

    path, *_ = files
    result = run(["explain", "--box", "1.2,0.7,4.1,3.3", "--output-size", "2",
                  "--sampling-ratio", "2", "--aligned", "-o", "explain.png"], path)
    assert result.returncode == 0, result.stderr
    with open(path / "explain.png", "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"
    height, width = matplotlib.image.imread(path / "explain.png").shape[:2]
    assert width == 1300 and 700 <= height <= 1100  # 13 inches wide, the maps' height


def test_explain_without_matplotlib(tmp_path):
    result = run(["explain", "--box", "1,1,3,3"], tmp_path,
                 prelude="import sys; sys.modules['matplotlib'] = None")
    assert result.returncode == 1
    assert "pip install pyroi[viz]" in result.stderr
    assert "Traceback" not in result.stderr


def test_bench_prints_a_table(tmp_path):
    # peers hidden: the run must not need them (and stays fast); progress goes to stderr
    result = run(["bench", "--quick", "-w", "small_call", "-t", "1"], tmp_path,
                 prelude="import sys; "
                         "sys.modules['torch'] = sys.modules['onnx'] = sys.modules['openvino'] = None")
    assert result.returncode == 0, result.stderr
    assert "torchvision: absent" in result.stderr and "small_call:" in result.stderr
    assert "openvino: absent" in result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("| workload | threads | pyroi fwd ms | pyroi NHWC fwd ms | "
                               "pyroi NHWC in+out fwd ms | pyroi bwd ms |")
    assert "torchvision" not in lines[0] and "openvino" not in lines[0]
    assert lines[2].startswith("| small_call | 1 |")
    # the machine: the CPU model and the vector code the C core's dispatch chose
    from pyroi import _core

    assert lines[-1].startswith("CPU: ") and lines[-1] in result.stderr
    assert lines[-1].endswith(f"; pyroi vector code: {_core.vector_isa()}")
    if _core.cache_bytes(2):
        assert f"L2 {_core.cache_bytes(2) // 1024} KB" in lines[-1]
    assert run(["bench", "-w", "nope"], tmp_path).returncode == 2


@pytest.mark.parametrize("name", ["small_call", "vgg_conv5_pool"])
def test_bench_channels_last_output_call_gives_the_forward(name):
    """The bench's "NHWC in+out" call writes the forward's values into a channels-last
    output that starts on a 64-byte line (where the C core streams whole lines)."""
    from pyroi import bench

    w = next(w for w in bench.make_workloads(np.random.default_rng(0)) if w.name == name)
    expected = bench.pyroi_calls(w, 1, None)[0]()
    got = bench.pyroi_channels_last_forward(w, 1, channels_last_out=True)()
    assert got.strides[1] == got.itemsize and got.ctypes.data % 64 == 0
    np.testing.assert_array_equal(got, expected)


def test_cache_bytes_are_the_ones_the_os_reports():
    # the C core's own reading of the CPU (CPUID) agrees with Linux's, where both say
    from pyroi import _core

    assert _core.cache_bytes(0) == 0 and _core.cache_bytes(4) == 0
    sysfs = pathlib.Path("/sys/devices/system/cpu/cpu0/cache")
    reported = {}
    for index in sysfs.glob("index*"):
        try:
            level, kind, size = ((index / name).read_text().strip()
                                 for name in ("level", "type", "size"))
        except OSError:
            continue
        if kind in ("Data", "Unified") and size.endswith("K"):
            reported[int(level)] = int(size[:-1]) * 1024
    for level in (1, 2, 3):
        if _core.cache_bytes(level) and level in reported:
            assert _core.cache_bytes(level) == reported[level]
        assert _core.cache_bytes(level) >= 0


def test_vector_isa_is_the_one_the_cpu_supports():
    from pyroi import _core

    isa = _core.vector_isa()
    names = ("baseline", "avx2", "x86-64-v4")
    assert isa in names + ("baseline-only build",)
    if isa == "baseline-only build" or platform.machine() != "x86_64" or \
            sys.platform != "linux":
        return
    # The kernel lists a feature only where it also saves its registers. The C core asks the
    # CPU itself (cpu.c), so this holds for every compiler's build, zig's too, whose runtime
    # answers no feature to the compilers' own CPU query. (pni: SSE3, abm: LZCNT)
    flags = set(next(line for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).split(":", 1)[1].split())
    avx2 = {"pni", "ssse3", "sse4_1", "sse4_2", "popcnt", "avx", "avx2"}
    v4 = avx2 | {"fma", "cx16", "movbe", "f16c", "bmi1", "bmi2", "abm", "lahf_lm", "avx512f",
                 "avx512vl", "avx512bw", "avx512dq", "avx512cd"}
    level = 2 if v4 <= flags else 1 if avx2 <= flags else 0
    # lowered to the cap of PYROI_MAX_VECTOR_ISA (tests/test_isa_cap.py), as CI runs the suite
    cap = os.environ.get("PYROI_MAX_VECTOR_ISA", "").lower()
    assert isa == (names[min(level, names.index(cap))] if cap else names[level])


def test_bench_scaling(tmp_path):
    # the sample counts come from the C core's explain API: on-map samples stop growing once
    # the boxes (at scale 1/8) cover the 100x136 map, the grid keeps growing with side^2
    result = run(["bench", "--scaling", "--quick", "--sides", "80", "160", "3200", "6400"],
                 tmp_path, prelude="import sys; sys.modules['torch'] = None")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("| box side px | samples on the map | samples of the grid |")
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    assert [row[0] for row in rows] == ["80", "160", "3200", "6400"]
    on_map = [int(row[1]) for row in rows]
    grid = [int(row[2]) for row in rows]
    # 80 px = 10 map px: ceil(10 / 7) = 2 samples per bin and axis, 8 boxes of 14 x 14
    assert on_map[0] == grid[0] == 8 * 14 * 14
    assert grid[3] == 8 * (7 * 115) ** 2  # ceil(800 / 7) = 115
    # samples about 0.99 px apart over [-1, 100] x [-1, 136]
    assert on_map[3] <= 8 * 103 * 139 < grid[3] // 40
    assert all(row[4] == "-" for row in rows)  # torchvision hidden
    assert run(["bench", "--scaling", "--sides", "0"], tmp_path).returncode == 2


def test_bench_half(tmp_path):
    # float16 against float32, both directions of an operator the workloads leave out and of
    # one they have; the scratch column is Linux's (VmHWM), "-" elsewhere
    result = run(["bench", "--half", "--quick", "-w", "vgg_conv5_ps_pool", "-w",
                  "vgg_conv5_pool"], tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("| workload | threads | direction | f32 ms | f16 ms | f16/f32 |")
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:6]]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("vgg_conv5_pool", "1", "fwd"), ("vgg_conv5_pool", "1", "bwd"),
        ("vgg_conv5_ps_pool", "1", "fwd"), ("vgg_conv5_ps_pool", "1", "bwd")]
    for row in rows:
        wide, half, ratio = float(row[3]), float(row[4]), float(row[5])
        assert wide > 0 and half > 0 and abs(ratio - half / wide) < 0.01 + 0.01 * ratio
        assert row[8] == "-" or row[8].endswith(" MiB")
    assert lines[-1].startswith("CPU: ")
    assert run(["bench", "--half", "-w", "nope"], tmp_path).returncode == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_bench_scratch_is_measured_past_the_kept_block():
    # an NCHW RoIAlign's lane block (3.5 MiB mapped; the pages its RoIs read, some hundreds of
    # KiB, touched) stays mapped for the next call, which then adds almost nothing to the
    # peak; the bench's scratch column gives the kept block back first, so the call's own
    # scratch shows
    from pyroi import bench
    x = np.random.default_rng(0).standard_normal((1, 64, 200, 272), dtype=np.float32)
    boxes = np.array([[0, 8, 8, 900, 700]] * 50, np.float32)
    call = lambda: pyroi.roi_align(x, boxes, 7, 0.25, 2, True, num_threads=1)  # noqa: E731

    def kept_block_peak():  # the measurement without giving the kept block back
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
        before = bench._status_bytes("VmRSS")
        call()
        return bench._status_bytes("VmHWM") - before

    call()
    call()
    limit = pyroi.get_scratch_cache_limit()
    assert limit > 0 and pyroi._core.scratch_cache_bytes() > 1 << 20
    hidden = kept_block_peak()
    assert bench.extra_peak_bytes(call) > 4 * max(hidden, 16 << 10), hidden
    assert pyroi.get_scratch_cache_limit() == limit  # restored


@pytest.mark.parametrize("command", [[], ["align"], ["pool"], ["ps-align"], ["ps-pool"],
                                     ["align-rotated"], ["explain"], ["bench"]])
def test_help(tmp_path, command):
    result = run(command + ["--help"], tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: pyroi")


@pytest.mark.parametrize("args, message", [
    (["align", "missing.npy", "boxes.npy"], "missing.npy"),
    (["align", "features.npy", "nothing.csv"], "nothing.csv"),
    (["pool", "boxes4.csv", "boxes.npy"], "boxes4.csv"),
    (["align", "features.npy", "features.npy"], "BOXES must be rows"),
    (["align", "features.npy", "boxes.npy", "--output-size", "0"], "output_size"),
    (["ps-align", "features.npy", "boxes.npy", "--output-size", "3"], "channels"),
    (["align", "features.npy", "boxes.npy", "--batch-index", "1"], "batch index column"),
    (["align", "features.npy", "boxes4.csv", "--batch-index", "5"], "batch index 5"),
])
def test_input_errors_exit_1(files, args, message):
    path, *_ = files
    result = run(args, path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [
    ["align", "--output-size", "x"],
    ["align", "--mode", "mean"],
    ["frobnicate"],
    ["align", "features.npy"],
    ["explain", "--box", "1,2,3"],
    ["explain"],
    ["pool", "--sampling-ratio", "2"],
])
def test_usage_errors_exit_2(files, args):
    path, *_ = files
    result = run(args, path)
    assert result.returncode == 2
    assert "usage: pyroi" in result.stderr


# ---- in process: file formats and flags ----------------------------------------------------

def check(capsys, argv, path, expected):
    out = str(path / "out.npy")
    assert cli.main(argv + ["-o", out]) == 0
    assert out in capsys.readouterr().out
    result = np.load(out)
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("boxes_file, extra", [
    ("boxes.npy", []), ("boxes5.csv", []), ("boxes.json", []), ("rows.json", []),
])
def test_box_formats(files, capsys, boxes_file, extra):
    path, features, boxes, _ = files
    expected = pyroi.roi_align(features, boxes, (3, 4), 0.5, 2, True)
    check(capsys, ["align", str(path / "features.npy"), str(path / boxes_file),
                   "--output-size", "3,4", "--spatial-scale", "0.5", "--sampling-ratio", "2",
                   "--aligned"] + extra, path, expected)


def test_csv_of_four_numbers_and_batch_index(files, capsys):
    path, features, boxes, _ = files
    expected = pyroi.roi_pool(features, boxes[:, 1:], 3, batch_indices=np.ones(3, np.int64))
    check(capsys, ["pool", str(path / "features.npy"), str(path / "boxes4.csv"),
                   "--output-size", "3", "--batch-index", "1"], path, expected)
    expected = pyroi.roi_pool(features, boxes[:, 1:], 3, batch_indices=np.zeros(3, np.int64))
    check(capsys, ["pool", str(path / "features.npy"), str(path / "boxes4.csv"),
                   "--output-size", "3"], path, expected)


def test_npz_key_dtype_and_flags(files, capsys):
    path, features, boxes, rois = files
    npz = str(path / "features.npz")
    expected = pyroi.roi_align(features.astype(np.float64), boxes.astype(np.float64), 2,
                               mode="max", num_threads=2)
    check(capsys, ["align", npz, str(path / "boxes.npy"), "--key", "maps", "--dtype",
                   "float64", "--mode", "max", "--num-threads", "2"], path, expected)
    nhwc = str(path / "nhwc.npy")
    np.save(nhwc, features.transpose(0, 2, 3, 1))
    check(capsys, ["align", nhwc, str(path / "boxes.npy"), "--layout", "NHWC"], path,
          pyroi.roi_align(features, boxes, 2))
    expected = pyroi.roi_align_rotated(features, rois, 2, 1.0, 0, False, True,
                                       angle="radians")
    check(capsys, ["align-rotated", str(path / "features.npy"), str(path / "rois.npy"),
                   "--no-aligned", "--clockwise", "--angle", "radians"], path, expected)
    # npz default: the first array; the first here is 1-d, so it is a shape error
    assert cli.main(["align", npz, str(path / "boxes.npy")]) == 1
    assert "input must have 4 dimensions" in capsys.readouterr().err


def test_explain_in_process(files, capsys):
    pytest.importorskip("matplotlib")
    path, features, *_ = files
    assert cli.main(["explain", "--box", "2,2,14,10", "--features", str(path / "features.npz"),
                     "--key", "maps", "--image", "1", "--channel", "3", "--spatial-scale",
                     "0.5", "--sampling-ratio", "0", "-o", str(path / "e.svg")]) == 0
    assert (path / "e.svg").read_text().lstrip().startswith("<?xml")
    assert cli.main(["explain", "--box", "1,1,3,3", "--features", str(path / "features.npy"),
                     "--channel", "99", "-o", str(path / "e.png")]) == 1
    assert "channel 99" in capsys.readouterr().err


# ---- rough edges a new user hit --------------------------------------------------------------

def test_negative_numbers_are_values(files, capsys):
    path, features, boxes, _ = files
    pytest.importorskip("matplotlib")
    out = str(path / "negative.png")
    assert cli.main(["explain", "--box", "-2,-1,3,2.5", "-o", out]) == 0
    assert os.path.exists(out)
    # a negative scale reaches pyroi, which names it (exit 1), not argparse (exit 2)
    assert cli.main(["align", str(path / "features.npy"), str(path / "boxes.npy"),
                     "--spatial-scale", "-1e-3"]) == 1
    assert "spatial_scale must be finite and non-negative" in capsys.readouterr().err
    assert cli._attach_negative_values(cli.build_parser(), [
        "explain", "--box", "-2,-1,3,2.5", "--spatial-scale", "-.5", "-o", "x.png"]) == [
        "explain", "--box=-2,-1,3,2.5", "--spatial-scale=-.5", "-o", "x.png"]


@pytest.mark.parametrize("content", [b"garbage", b"\x93NUMPY\x01\x00v\x00{'descr': '<f4'"])
@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_corrupt_numpy_file(tmp_path, capsys, content, suffix):
    (tmp_path / f"bad{suffix}").write_bytes(content)
    np.save(tmp_path / "boxes.npy", np.zeros((1, 5), np.float32))
    assert cli.main(["align", str(tmp_path / f"bad{suffix}"), str(tmp_path / "boxes.npy")]) == 1
    error = capsys.readouterr().err
    assert f"is not a valid {suffix} file" in error and "pickle" not in error


def test_help_texts(tmp_path):
    text = run(["align", "--help"], tmp_path).stdout
    assert "(default: None)" not in text
    for option in text.split("\n  -"):
        assert option.count("(default") <= 1, option
    mode = text[text.index("  --mode"):text.index("  --layout")]
    assert "mean" in mode and "maximum" in mode
    from pyroi import bench

    text = " ".join(run(["bench", "--help"], tmp_path).stdout.split())
    for name in bench.WORKLOADS:
        assert name in text


@pytest.mark.skipif(os.name != "posix", reason="SIGPIPE")
@pytest.mark.parametrize("args", [["align"], ["sample", "-o", "sample"]])
def test_a_reader_that_exits_stops_the_command_quietly(tmp_path, args):
    code = f"import sys, runpy; sys.argv = ['pyroi'] + {args!r}; " \
           "runpy.run_module('pyroi', run_name='__main__', alter_sys=True)"
    process = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, env=_ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # as `pyroi ... | head -0` does
    with process.stderr:
        error = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, error  # 128 + SIGPIPE, as Unix tools exit
    assert error == ""


def test_a_box_too_large_to_sample_says_why(files, capsys):
    path, *_ = files
    (path / "huge.csv").write_text("0,1,1,1e30,5\n")
    assert cli.main(["align", str(path / "features.npy"), str(path / "huge.csv")]) == 1
    error = capsys.readouterr().err
    assert "RoI 0 is too large to sample (its coordinates are finite)" in error
    assert "more than 2147483647 samples" in error and "fixed sampling_ratio" in error
    assert "not finite, or" not in error


@pytest.mark.parametrize("text, message", [
    ("0,1,1,5,5x\n0,1,1,4,4\n", "line 1, column 5: '5x' is not a number"),
    ("0,1,1,5,5,\n", "line 1, column 6: '' is not a number"),
    ("0;1;1;5;5\n", "line 1, column 1: '0;1;1;5;5' is not a number (fields are separated by "
                    "commas)"),
    ("0,a,b,c,d\n", "line 1, column 2: 'a' is not a number"),
    ("x1,y1,x2,y2\n1,1,5,5\n2,2,4,oops\n", "line 3, column 4: 'oops' is not a number"),
    ("# boxes\n\nb,x1,y1,x2,y2\n0,1,1,5,5\n0,1,1,5\n", "line 5 has 4 fields, line 4 has 5"),
])
def test_csv_errors_name_line_and_column(files, capsys, text, message):
    path, *_ = files
    (path / "bad.csv").write_text(text)
    assert cli.main(["align", str(path / "features.npy"), str(path / "bad.csv")]) == 1
    assert message in capsys.readouterr().err


def test_csv_header_is_skipped_only_when_it_holds_no_number(files, capsys):
    path, features, boxes, _ = files
    expected = pyroi.roi_align(features, boxes, 2)
    rows = "".join(",".join(f"{v:g}" for v in b) + "\n" for b in boxes)
    for header in ("batch_index,x1,y1,x2,y2\n", '"b","x1","y1","x2","y2"\n', ""):
        (path / "h.csv").write_text("# comment\n" + header + rows)
        check(capsys, ["align", str(path / "features.npy"), str(path / "h.csv")], path,
              expected)


def test_output_name_printed_is_the_file_written(files, capsys):
    path, features, boxes, _ = files
    out = str(path / "res.dat")
    assert cli.main(["align", str(path / "features.npy"), str(path / "boxes.npy"),
                     "-o", out]) == 0
    assert capsys.readouterr().out.rstrip().endswith(out + ".npy")
    np.testing.assert_array_equal(np.load(out + ".npy"), pyroi.roi_align(features, boxes, 2))


def test_sample_files_feed_the_other_commands(tmp_path, capsys):
    folder = str(tmp_path / "sample")
    assert cli.main(["sample", "-o", folder]) == 0
    assert f"pyroi align {folder}/features.npy {folder}/boxes.csv" in capsys.readouterr().out
    sample = np.load(os.path.join(os.path.dirname(pyroi.__file__), "data", "sample.npz"))
    for op, rows, function in (("align", "boxes.csv", pyroi.roi_align),
                               ("align-rotated", "rois.csv", pyroi.roi_align_rotated)):
        out = str(tmp_path / f"{op}.npy")
        assert cli.main([op, f"{folder}/features.npy", f"{folder}/{rows}", "-o", out]) == 0
        expected = function(sample["features"], sample[rows[:-4]], 2)
        np.testing.assert_array_equal(np.load(out), expected)


def test_bench_crop_and_resize_calls_compute_what_onnxruntime_does():
    """box_head_crop's pyroi forward, onnxruntime's contrib node and (where built) the pyroi
    library's node give the same bits; its backward calls run on the workload's arrays."""
    from pyroi import bench

    w = next(w for w in bench.make_workloads(np.random.default_rng(0))
             if w.name == "box_head_crop")
    # normalised to the map: the box head's boxes, some reaching past its edges
    assert w.boxes.shape == (1000, 5) and -0.5 < w.boxes[:, 1:].min() < 0 < 1 < w.boxes[:, 1:].max() < 1.5
    grad = np.ones((1000, 256, 7, 7), np.float32)
    forward, image_backward = bench.pyroi_calls(w, 2, grad)
    ours = forward()
    assert image_backward().shape == w.features.shape
    assert bench.pyroi_crop_box_backward(w, 2, grad)().shape == (1000, 4)
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    session, feeds = bench.onnx_session_and_feeds((onnx, ort), w, 2)
    np.testing.assert_array_equal(session.run(None, feeds)[0], ours)
    library = bench.onnxruntime_library()
    if library is not None:
        session = bench.onnx_session_and_feeds((onnx, ort), w, 2, library)[0]
        np.testing.assert_array_equal(session.run(None, feeds)[0], ours)
