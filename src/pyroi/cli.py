"""The ``pyroi`` command line (also ``python -m pyroi``).

    pyroi align FEATURES BOXES -o OUT.npy [--output-size 7 --spatial-scale 0.0625 ...]
    pyroi pool | ps-align | ps-pool | align-rotated FEATURES BOXES -o OUT.npy
    pyroi align                      # the embedded sample: a small map and four boxes
    pyroi explain --box 1.2,0.7,4.1,3.3 --output-size 2 --sampling-ratio 2 -o explain.png
    pyroi bench --quick -w small_call -t 1

FEATURES is a ``.npy`` or ``.npz`` file (``--key`` picks the array of an ``.npz``; default:
its only, else first, array) holding ``(N, C, H, W)`` (``--layout NHWC`` for align: ``(N, H,
W, C)``). BOXES is a ``.npy``, ``.csv`` or ``.json`` file of rows ``[batch_index, x1, y1, x2,
y2]`` or ``[x1, y1, x2, y2]`` (then every box is on image ``--batch-index``, default 0);
align-rotated rows are ``[batch_index, cx, cy, w, h, angle]`` or ``[cx, cy, w, h, angle]``.
A ``.json`` file is a list of rows or ``{"boxes": [...], "batch_indices": [...]}``; a ``.csv``
file has one box per line (``#`` comments and one header line are skipped). The computation
is the library's: the command line reads files, checks them, calls :mod:`pyroi` and writes
the result as ``.npy``.

Exit status: 0 on success, 1 for an input or runtime error (a file that cannot be read, a
wrong shape, an error of pyroi), 2 for a usage error (unknown or malformed options).
"""

# May import: the package (``pyroi``), viz, bench.

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import resources

import numpy as np

import pyroi

__all__ = ["main"]

_OPS = {
    "align": "RoIAlign (torchvision.ops.roi_align; --mode max: mmcv's max mode)",
    "pool": "RoIPool (torchvision.ops.roi_pool, Caffe, ONNX MaxRoiPool)",
    "ps-align": "position-sensitive RoIAlign (torchvision.ops.ps_roi_align)",
    "ps-pool": "position-sensitive RoIPool (torchvision.ops.ps_roi_pool)",
    "align-rotated": "rotated RoIAlign (detectron2 ROIAlignRotated; mmcv with --angle radians)",
}


class InputError(Exception):
    """A problem with the user's files or values: reported in one line, exit status 1."""


# ---- argument types (argparse turns their ValueError into a usage error, exit 2) ----------

def _numbers(text: str, count: int | tuple, kind=float, name: str = "value"):
    parts = [p for p in text.replace(" ", "").split(",") if p != ""]
    counts = count if isinstance(count, tuple) else (count,)
    if len(parts) not in counts:
        raise argparse.ArgumentTypeError(
            f"expected {' or '.join(map(str, counts))} comma-separated numbers, got {text!r}")
    try:
        return [kind(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of {kind.__name__}s: {text!r}") from None


def _output_size(text: str):
    sizes = _numbers(text, (1, 2), int)
    return sizes[0] if len(sizes) == 1 else tuple(sizes)


def _box(text: str):
    return _numbers(text, 4, float)


def _map_size(text: str):
    return tuple(_numbers(text, 2, int))


# ---- reading files -----------------------------------------------------------------------

def _load_array(path: str, key: str | None, what: str) -> np.ndarray:
    """An array from a .npy or .npz file (``key``: the .npz member; default its only or
    first array)."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".npy", ".npz"):
        raise InputError(f"{what} file {path!r}: expected a .npy or .npz file")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise InputError(f"cannot read {what} file {path!r}: {_reason(error)}") from None
    if isinstance(loaded, np.ndarray):
        if key is not None:
            raise InputError(f"--key {key!r} applies to .npz files, not {path!r}")
        return loaded
    with loaded:
        names = loaded.files
        if not names:
            raise InputError(f"{what} file {path!r} holds no arrays")
        if key is None:
            key = names[0]
        elif key not in names:
            raise InputError(f"{what} file {path!r} has no array {key!r} (it has {names})")
        try:
            return loaded[key]
        except (OSError, ValueError, EOFError) as error:
            raise InputError(f"cannot read {what} file {path!r}: {_reason(error)}") from None


def _reason(error: Exception) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def _load_boxes(path: str, key: str | None):
    """(rows, batch_indices or None) from a .npy, .npz, .csv or .json file."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix in (".npy", ".npz"):
        return _load_array(path, key, "BOXES"), None
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read BOXES file {path!r}: {_reason(error)}") from None
    if suffix == ".csv":
        return _parse_csv(text, path), None
    if suffix == ".json":
        return _parse_json(text, path)
    raise InputError(f"BOXES file {path!r}: expected a .npy, .npz, .csv or .json file")


def _parse_csv(text: str, path: str) -> np.ndarray:
    rows = []
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    for number, line in enumerate(lines, 1):
        try:
            rows.append([float(field) for field in line.split(",")])
        except ValueError:
            if number == 1:
                continue  # a header line
            raise InputError(f"BOXES file {path!r}: line {number} is not a row of numbers: "
                             f"{line!r}") from None
    if len({len(r) for r in rows}) > 1:
        raise InputError(f"BOXES file {path!r}: rows have different lengths")
    return np.array(rows, dtype=np.float64).reshape(len(rows), -1 if rows else 0)


def _parse_json(text: str, path: str):
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"BOXES file {path!r} is not valid JSON: {error}") from None
    indices = None
    if isinstance(data, dict):
        if "boxes" not in data:
            raise InputError(f"BOXES file {path!r}: a JSON object needs a \"boxes\" list")
        indices = data.get("batch_indices")
        data = data["boxes"]
    try:
        rows = np.array(data, dtype=np.float64)
        if indices is not None:
            indices = np.array(indices)
    except (TypeError, ValueError) as error:
        raise InputError(f"BOXES file {path!r}: not a list of rows of numbers ({error})") from None
    if rows.size == 0:
        rows = rows.reshape(0, 0)
    if indices is not None and indices.dtype.kind not in "iu":
        if indices.size == 0:
            indices = indices.astype(np.int64)
        else:
            raise InputError(f"BOXES file {path!r}: batch_indices must be integers")
    return rows, indices


def _prepare(features: np.ndarray, rows: np.ndarray, indices, args, coords: int):
    """Features and boxes in the dtypes the API takes, and batch indices if the rows have
    only coordinates."""
    if args.dtype is not None:
        features = features.astype(args.dtype)
    elif features.dtype.kind in "iub":
        features = features.astype(np.float32)  # integer maps: read as float32
    elif features.dtype.kind != "f":
        raise InputError(f"FEATURES must hold real numbers, got dtype {features.dtype}")
    box_dtype = np.float32 if features.dtype == np.float16 else features.dtype
    if rows.ndim != 2 or (rows.shape[0] and rows.shape[1] not in (coords, coords + 1)):
        fields = "batch_index, " + ("cx, cy, w, h, angle" if coords == 5 else "x1, y1, x2, y2")
        raise InputError(f"BOXES must be rows of {coords + 1} numbers [{fields}] or {coords} "
                         f"without the batch index, got shape {rows.shape}")
    if rows.shape[0] == 0:
        rows = rows.reshape(0, coords)
    if rows.dtype.kind not in "iuf":
        raise InputError(f"BOXES must hold real numbers, got dtype {rows.dtype}")
    rows = rows.astype(box_dtype)
    if rows.shape[1] == coords + 1:
        if indices is not None or args.batch_index is not None:
            raise InputError("the boxes have a batch index column: drop batch_indices / "
                             "--batch-index, or give rows without it")
        return features, rows, None
    if indices is None:
        indices = np.full(rows.shape[0], args.batch_index or 0, dtype=np.int64)
    return features, rows, indices


# ---- the operator subcommands ---------------------------------------------------------------

def _call(op: str, features, boxes, indices, args):
    size = args.output_size
    common = dict(batch_indices=indices, num_threads=args.num_threads)
    if op == "align":
        return pyroi.roi_align(features, boxes, size, args.spatial_scale, args.sampling_ratio,
                               args.aligned, mode=args.mode, layout=args.layout, **common)
    if op == "pool":
        return pyroi.roi_pool(features, boxes, size, args.spatial_scale, **common)
    if op == "ps-align":
        return pyroi.ps_roi_align(features, boxes, size, args.spatial_scale,
                                  args.sampling_ratio, **common)
    if op == "ps-pool":
        return pyroi.ps_roi_pool(features, boxes, size, args.spatial_scale, **common)
    return pyroi.roi_align_rotated(features, boxes, size, args.spatial_scale,
                                   args.sampling_ratio, args.aligned, args.clockwise,
                                   angle=args.angle, **common)


def _sample():
    with resources.files("pyroi").joinpath("data/sample.npz").open("rb") as handle:
        with np.load(handle, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}


def _summary(result: np.ndarray) -> str:
    if result.size:
        span = f"min {result.min():.6g}, max {result.max():.6g}"
    else:
        span = "no elements"
    return f"output {result.shape} {result.dtype}: {span}"


def _run_op(op: str, args) -> int:
    coords = 5 if op == "align-rotated" else 4
    on_sample = args.features is None
    if on_sample:
        sample = _sample()
        features = sample["features"]
        rows, indices = sample["rois" if coords == 5 else "boxes"], None
        if op.startswith("ps-"):  # C = 2 output channels x the bins: repeat the planes
            channels = np.arange(2 * _bins(args.output_size)) % features.shape[1]
            features = features[:, channels]
    else:
        features = _load_array(args.features, args.key, "FEATURES")
        rows, indices = _load_boxes(args.boxes, args.boxes_key)
    features, rows, indices = _prepare(features, rows, indices, args, coords)
    result = _call(op, features, rows, indices, args)
    if on_sample:
        _print_sample(op, features, rows, result, args)
    if args.output is not None:
        try:
            np.save(args.output, result)
        except OSError as error:
            raise InputError(f"cannot write {args.output!r}: {_reason(error)}") from None
        print(f"pyroi {op}: {_summary(result)} -> {args.output}")
    elif not on_sample:
        print(f"pyroi {op}: {_summary(result)} (not written: give -o OUT.npy)")
    return 0


def _bins(output_size) -> int:
    if isinstance(output_size, tuple):
        return output_size[0] * output_size[1]
    return output_size * output_size


def _print_sample(op, features, rows, result, args):
    print(f"pyroi {pyroi.__version__}: {op} on the embedded sample (pyroi/data/sample.npz)")
    print(f"features {features.shape} {features.dtype}: channel 0 = 10*row + col, "
          f"channel 1 = -channel 0, channel c >= 2 = channel 0 + 100*c")
    print(f"output_size {args.output_size}, spatial_scale {args.spatial_scale:g}"
          + (f", sampling_ratio {args.sampling_ratio}" if op != "pool" and op != "ps-pool"
             else "")
          + (f", aligned {args.aligned}" if op in ("align", "align-rotated") else ""))
    print(_summary(result) + "; channel 0 of each RoI, bins row by row:")
    for row, bins in zip(rows, result[:, 0]):
        corners = ", ".join(f"{v:g}" for v in row)
        values = "  ".join(f"{v:8.4f}" for v in bins.ravel())
        print(f"  [{corners}] -> {values}")


# ---- explain and bench -------------------------------------------------------------------

def _run_explain(args) -> int:
    from pyroi import viz

    features = None
    if args.features is not None:
        features = _load_array(args.features, args.key, "FEATURES")
        if features.dtype.kind in "iub":
            features = features.astype(np.float32)
        elif features.dtype == np.float16:
            features = features.astype(np.float32)
    try:
        path = viz.save_explain(args.output, args.box, args.output_size, args.spatial_scale,
                                args.sampling_ratio, args.aligned, dpi=args.dpi,
                                features=features, map_size=args.map_size, image=args.image,
                                channel=args.channel)
    except ModuleNotFoundError as error:  # matplotlib
        raise InputError(str(error)) from None
    print(f"pyroi explain: wrote {path}")
    return 0


# ---- the parser ------------------------------------------------------------------------------

def _add_op_parser(subparsers, op: str):
    rotated = op == "align-rotated"
    parser = subparsers.add_parser(
        op, help=_OPS[op], description=f"{_OPS[op]} of FEATURES over BOXES, written as .npy. "
        "Without FEATURES and BOXES: the embedded sample, printed.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("features", metavar="FEATURES", nargs="?",
                        help="(N, C, H, W) feature maps, .npy or .npz")
    parser.add_argument("boxes", metavar="BOXES", nargs="?",
                        help="RoIs, .npy, .npz, .csv or .json" + (
                            ": rows [batch_index,] cx, cy, w, h, angle" if rotated
                            else ": rows [batch_index,] x1, y1, x2, y2"))
    parser.add_argument("-o", "--output", metavar="OUT.npy", help="write the result here")
    parser.add_argument("--key", help="array of an .npz FEATURES file (default: the first)")
    parser.add_argument("--boxes-key", help="array of an .npz BOXES file (default: the first)")
    parser.add_argument("--batch-index", type=int, metavar="B",
                        help="image of every box when the rows have no batch index "
                             "(default 0)")
    parser.add_argument("--output-size", type=_output_size, default=2, metavar="H[,W]",
                        help="output bins per RoI")
    parser.add_argument("--spatial-scale", type=float, default=1.0, metavar="S",
                        help="box coordinates x S = feature coordinates (e.g. 0.0625)")
    if op != "pool" and op != "ps-pool":
        parser.add_argument("--sampling-ratio", type=int, default=0 if rotated else -1,
                            metavar="R", help="samples per bin and axis; <= 0: adaptive")
    if op == "align" or rotated:
        parser.add_argument("--aligned", action=argparse.BooleanOptionalAction,
                            default=rotated, help="half-pixel shift of the box corners")
    if op == "align":
        parser.add_argument("--mode", choices=("avg", "max"), default="avg")
        parser.add_argument("--layout", choices=("NCHW", "NHWC"), default="NCHW",
                            help="FEATURES layout")
    if rotated:
        parser.add_argument("--clockwise", action="store_true",
                            help="angles turn clockwise (mmcv clockwise=True)")
        parser.add_argument("--angle", choices=("degrees", "radians"), default="degrees",
                            help="unit of the angle column")
    parser.add_argument("--dtype", choices=("float16", "float32", "float64"),
                        help="compute in this dtype (default: the features' own; integer "
                             "maps as float32)")
    parser.add_argument("--num-threads", type=int, metavar="T",
                        help="threads (default: pyroi.get_num_threads())")
    parser.set_defaults(command=op)


def build_parser() -> argparse.ArgumentParser:
    """The ``pyroi`` argument parser (all subcommands)."""
    from pyroi import bench

    parser = argparse.ArgumentParser(
        prog="pyroi", description="Region-of-interest pooling from the command line. "
        "Without a command: `pyroi align` on the embedded sample.",
        epilog="Exit status: 0 ok, 1 input or runtime error, 2 usage error.")
    parser.add_argument("--version", action="version", version=f"pyroi {pyroi.__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for op in _OPS:
        _add_op_parser(subparsers, op)
    explain = subparsers.add_parser(
        "explain", help="draw RoIAlign's samples and taps and RoIPool's bins for one box",
        description="Draw, for one box, the feature map, RoIAlign's bins, sample points and "
        "bilinear taps (weights), and beside it RoIPool's quantised bins. Needs matplotlib "
        "(pip install pyroi[viz]).", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    explain.add_argument("--box", type=_box, required=True, metavar="X1,Y1,X2,Y2",
                         help="the box, in input-image pixels")
    explain.add_argument("--output-size", type=_output_size, default=2, metavar="H[,W]")
    explain.add_argument("--sampling-ratio", type=int, default=2, metavar="R",
                         help="samples per bin and axis; <= 0: adaptive")
    explain.add_argument("--aligned", action=argparse.BooleanOptionalAction, default=False,
                         help="half-pixel shift of the box corners")
    explain.add_argument("--spatial-scale", type=float, default=1.0, metavar="S")
    explain.add_argument("--features", metavar="FILE",
                         help="feature map (.npy/.npz; (H, W), (C, H, W) or (N, C, H, W)); "
                              "default: 10*row + col")
    explain.add_argument("--key", help="array of an .npz features file")
    explain.add_argument("--image", type=int, default=0, help="image of --features drawn")
    explain.add_argument("--channel", type=int, default=0, help="channel of --features drawn")
    explain.add_argument("--map-size", type=_map_size, metavar="H,W",
                         help="size of the default map (default: fits the box)")
    explain.add_argument("-o", "--output", default="explain.png", metavar="FILE",
                         help="picture to write (.png, .svg, .pdf)")
    explain.add_argument("--dpi", type=int, default=100, help="pixels per inch")
    explain.set_defaults(command="explain")
    bench_parser = subparsers.add_parser(
        "bench", help="benchmark against the installed peers (torchvision, onnxruntime)",
        description=bench.__doc__.split("\n\n")[1].replace("\n", " "))
    bench.add_arguments(bench_parser)
    bench_parser.set_defaults(command="bench", bench_parser=bench_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``pyroi`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit
    status (0 ok, 1 input or runtime error, 2 usage error, which argparse exits with).

    Examples
    --------
    >>> from pyroi.cli import main
    >>> main(["pool", "--output-size", "1"])  # the embedded sample  # doctest: +ELLIPSIS
    pyroi ...: pool on the embedded sample (pyroi/data/sample.npz)
    ...
      [0, 1, 1, 5, 4] ->  45.0000
    ...
    0
    """
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    command = getattr(args, "command", None)
    if command is None:  # bare `pyroi` / `python -m pyroi`: the sample, through `pyroi align`
        args = parser.parse_args(["align"])
        command = "align"
    if command in _OPS and (args.features is None) != (args.boxes is None):
        parser.error(f"{command}: give both FEATURES and BOXES, or neither (the embedded "
                     f"sample)")
    try:
        if command == "bench":
            from pyroi import bench

            return bench.run_from_args(args, args.bench_parser)
        if command == "explain":
            return _run_explain(args)
        return _run_op(command, args)
    except InputError as error:
        return _fail(command, str(error))
    except pyroi.PyroiError as error:
        return _fail(command, str(error))
    except OSError as error:
        return _fail(command, f"{getattr(error, 'filename', '') or ''} {_reason(error)}".strip())


def _fail(command: str, message: str) -> int:
    print(f"pyroi {command}: error: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
