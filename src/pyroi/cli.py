"""The ``pyroi`` command line (also ``python -m pyroi``).

    pyroi align FEATURES BOXES -o OUT.npy [--output-size 7 --spatial-scale 0.0625 ...]
    pyroi pool | ps-align | ps-pool | align-rotated FEATURES BOXES -o OUT.npy
    pyroi align                      # the embedded sample: a small map and four boxes
    pyroi explain --box 1.2,0.7,4.1,3.3 --output-size 2 --sampling-ratio 2 -o explain.png
    pyroi sample -o DIR              # the embedded sample as DIR/features.npy, DIR/boxes.csv
    pyroi bench --quick -w small_call -t 1
    pyroi bench --model maskrcnn -t 1 -t 2 --repeat 3   # in torchvision's Mask R-CNN (torch)

FEATURES is a ``.npy`` or ``.npz`` file (``--key`` picks the array of an ``.npz``; default:
its only, else first, array) holding ``(N, C, H, W)`` (``--layout NHWC`` for align: ``(N, H,
W, C)``). BOXES is a ``.npy``, ``.csv`` or ``.json`` file of rows ``[batch_index, x1, y1, x2,
y2]`` or ``[x1, y1, x2, y2]`` (then every box is on image ``--batch-index``, default 0);
align-rotated rows are ``[batch_index, cx, cy, w, h, angle]`` or ``[cx, cy, w, h, angle]``.
A ``.json`` file is a list of rows or ``{"boxes": [...], "batch_indices": [...]}``; a ``.csv``
file has one box per line, comma-separated (``#`` comments are skipped, and a first line of
names without a number as a header; any other field that is not a number is an error naming
its line and column). The computation is the library's: the command line reads files, checks
them, calls :mod:`pyroi` and writes the result as ``.npy``.

Exit status: 0 on success, 1 for an input or runtime error (a file that cannot be read, a
wrong shape, an error of pyroi), 2 for a usage error (unknown or malformed options), 141
(128 + SIGPIPE, quietly, as Unix tools) when the reader of the output exits first.
"""

# May import: the package (``pyroi``), viz, bench, detector_bench (on use: it imports torch),
# onnx (on use: it needs the onnx package).

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import zipfile
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
    except OSError as error:
        raise InputError(f"cannot read {what} file {path!r}: {_reason(error)}") from None
    except (ValueError, EOFError) as error:  # not NumPy's format (it would try a pickle)
        raise _not_valid(what, path, suffix, error) from None
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
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
            raise _not_valid(what, path, suffix, error) from None


def _not_valid(what: str, path: str, suffix: str, error: Exception) -> InputError:
    """The error for a file that is not a valid .npy / .npz (NumPy's own message then advises
    loading it as a pickle, which is unsafe and not what the user asked for)."""
    reason = _reason(error)
    if "pickle" in reason:
        reason = f"it does not start with the {suffix} format's header"
    return InputError(f"{what} file {path!r} is not a valid {suffix} file: {reason}")


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
    """Rows of numbers, one box per line. ``#`` starts a comment; the first non-empty line
    is skipped only as a header, i.e. when every field is a name and none is a number (a
    typo such as ``5x`` in a first row of numbers is an error, not a header). Every other
    problem names its line (counted in the file, from 1) and column."""
    rows, numbers, header_seen = [], [], False
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [field.strip() for field in line.split(",")]
        values = [_csv_number(field) for field in fields]
        if not header_seen and all(_HEADER_FIELD.fullmatch(f) for f in fields) and all(
                v is None for v in values):
            header_seen = True  # a header: names, no number
            continue
        header_seen = True
        for column, (field, value) in enumerate(zip(fields, values), 1):
            if value is None:
                separator = " (fields are separated by commas)" if re.search(
                    r"[;\t|]", field) else ""
                raise InputError(
                    f"BOXES file {path!r}: line {number}, column {column}: {field!r} is not a "
                    f"number{separator}")
        if rows and len(values) != len(rows[0]):
            raise InputError(
                f"BOXES file {path!r}: line {number} has {len(values)} fields, line "
                f"{numbers[0]} has {len(rows[0])}")
        rows.append(values)
        numbers.append(number)
    return np.array(rows, dtype=np.float64).reshape(len(rows), -1 if rows else 0)


# A header field: a name (optionally quoted), e.g. x1 or "batch_index".
_HEADER_FIELD = re.compile(r"""(["']?)[A-Za-z_][\w .-]*\1""")


def _csv_number(field: str) -> float | None:
    try:
        return float(field)
    except ValueError:
        return None


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
        written = _npy_path(args.output)
        try:
            np.save(written, result)
        except OSError as error:
            raise InputError(f"cannot write {written!r}: {_reason(error)}") from None
        print(f"pyroi {op}: {_summary(result)} -> {written}")
    elif not on_sample:
        print(f"pyroi {op}: {_summary(result)} (not written: give -o OUT.npy)")
    return 0


def _npy_path(path: str) -> str:
    """The file np.save writes for ``path`` (it appends .npy to any other name)."""
    return path if path.endswith(".npy") else path + ".npy"


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


# ---- sample, explain and bench --------------------------------------------------------------

def _run_sample(args) -> int:
    """Write the embedded sample as files the other commands read: features.npy and the
    boxes (boxes.csv) and rotated RoIs (rois.csv) as rows with their batch index."""
    sample = _sample()
    try:
        os.makedirs(args.output, exist_ok=True)
        np.save(os.path.join(args.output, "features.npy"), sample["features"])
        for name, header in (("boxes", "batch_index,x1,y1,x2,y2"),
                             ("rois", "batch_index,cx,cy,w,h,angle")):
            lines = [header] + [",".join(np.format_float_positional(v, trim="-") for v in row)
                                for row in sample[name]]
            with open(os.path.join(args.output, f"{name}.csv"), "w", encoding="utf-8") as file:
                file.write("\n".join(lines) + "\n")
    except OSError as error:
        raise InputError(f"cannot write {args.output!r}: {_reason(error)}") from None
    features = os.path.join(args.output, "features.npy")
    print(f"pyroi sample: wrote {features} {sample['features'].shape} "
          f"{sample['features'].dtype}, {os.path.join(args.output, 'boxes.csv')} "
          f"({len(sample['boxes'])} boxes), {os.path.join(args.output, 'rois.csv')} "
          f"({len(sample['rois'])} rotated RoIs)")
    print(f"try: pyroi align {features} {os.path.join(args.output, 'boxes.csv')}")
    return 0


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

class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows "(default: ...)" for options with a default value, unless the help already says
    what the default is (options whose default None means "see the help")."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default is None or "default" in text:
            return text
        return super()._get_help_string(action)


# An option's value that argparse would take for an option because it starts with "-":
# one or more comma-separated numbers, e.g. --box -2,-1,3,2.5 or --spatial-scale -1e-3.
_NEGATIVE_VALUE = re.compile(r"-\s*[\d.][\w.+-]*(\s*,\s*[-+]?[\d.][\w.+-]*)*,?")


def _attach_negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--option -2,-1`` as ``--option=-2,-1`` for every option that takes one value, so
    that negative numbers work as values (argparse reads "-2,-1" as an unknown option)."""
    takes_value = set()
    parsers = [parser]
    while parsers:
        current = parsers.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif action.option_strings and action.nargs is None and isinstance(
                    action, (argparse._StoreAction, argparse._AppendAction)):
                takes_value.update(action.option_strings)
    joined, index = [], 0
    while index < len(argv):
        token = argv[index]
        if (token in takes_value and index + 1 < len(argv)
                and _NEGATIVE_VALUE.fullmatch(argv[index + 1])):
            joined.append(f"{token}={argv[index + 1]}")
            index += 2
            continue
        if token == "--":  # the rest is positional
            joined.extend(argv[index:])
            break
        joined.append(token)
        index += 1
    return joined


def _add_op_parser(subparsers, op: str):
    rotated = op == "align-rotated"
    parser = subparsers.add_parser(
        op, help=_OPS[op], description=f"{_OPS[op]} of FEATURES over BOXES, written as .npy. "
        "Without FEATURES and BOXES: the embedded sample, printed.",
        formatter_class=_HelpFormatter)
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
        parser.add_argument("--mode", choices=("avg", "max"), default="avg",
                            help="a bin is the mean of its bilinear samples (avg, "
                                 "torchvision) or their maximum (max, mmcv)")
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
    sample = subparsers.add_parser(
        "sample", help="write the embedded sample as files (features.npy, boxes.csv, rois.csv)",
        description="Write the embedded sample (the map and boxes `pyroi align` uses without "
        "inputs) into DIR: features.npy (N, C, H, W), boxes.csv (batch_index, x1, y1, x2, y2) "
        "and rois.csv (batch_index, cx, cy, w, h, angle), for `pyroi align DIR/features.npy "
        "DIR/boxes.csv`.")
    sample.add_argument("-o", "--output", required=True, metavar="DIR",
                        help="directory to write into (made if missing; files are replaced)")
    sample.set_defaults(command="sample")
    explain = subparsers.add_parser(
        "explain", help="draw RoIAlign's samples and taps and RoIPool's bins for one box",
        description="Draw, for one box, the feature map, RoIAlign's bins, sample points and "
        "bilinear taps (weights), and beside it RoIPool's quantised bins. Needs matplotlib "
        "(pip install pyroi[viz]).", formatter_class=_HelpFormatter)
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
    rewrite = subparsers.add_parser(
        "onnx-rewrite", help="move an ONNX model's RoiAlign / MaxRoiPool nodes to the pyroi "
                             "domain (pyroi's ONNX Runtime library runs them)",
        description="Write a copy of the ONNX model IN to OUT whose standard RoiAlign and "
        "MaxRoiPool nodes are in the pyroi domain, which pyroi's ONNX Runtime custom-op "
        "library runs (pyroi.onnx.custom_ops_library()); results unchanged. Needs the onnx "
        "package (pip install pyroi[onnx]).")
    rewrite.add_argument("input", metavar="IN", help="the ONNX model to read")
    rewrite.add_argument("output", metavar="OUT", help="the ONNX model to write")
    rewrite.add_argument("--back", action="store_true",
                         help="move pyroi-domain nodes back to ONNX's own domain instead")
    rewrite.set_defaults(command="onnx-rewrite")
    bench_parser = subparsers.add_parser(
        "bench", help="benchmark against the installed peers (torchvision, onnxruntime)",
        description=bench.__doc__.split("\n\n")[1].replace("\n", " "))
    bench.add_arguments(bench_parser)
    # pyroi.detector_bench (imported on use: it imports torch)
    bench_parser.add_argument("--model", choices=("fasterrcnn", "maskrcnn"),
                              help="instead of the workloads: torchvision's detector as built "
                                   "and as converted by pyroi.torch.convert (RoI pooling time, "
                                   "eval forward, train step; -t and --repeat apply)")
    bench_parser.add_argument("--size", type=int, default=512,
                              help="--model: image side in pixels (default 512)")
    bench_parser.add_argument("--batch", type=int, default=2,
                              help="--model: images per batch (default 2)")
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
    try:
        try:
            return _main(parser, sys.argv[1:] if argv is None else list(argv))
        finally:  # (also after --help) a reader that exited shows here, not at interpreter exit
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """The reader of standard output exited (``pyroi ... | head -1``): stop quietly, as Unix
    tools do, with their status 128 + SIGPIPE (141; there is no signal number on Windows)."""
    try:  # further writes (the interpreter's final flush) go nowhere instead of failing
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file
        pass
    return 128 + getattr(signal, "SIGPIPE", 13)


def _main(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    args = parser.parse_args(_attach_negative_values(parser, argv))
    command = getattr(args, "command", None)
    if command is None:  # bare `pyroi` / `python -m pyroi`: the sample, through `pyroi align`
        args = parser.parse_args(["align"])
        command = "align"
    if command in _OPS and (args.features is None) != (args.boxes is None):
        parser.error(f"{command}: give both FEATURES and BOXES, or neither (the embedded "
                     f"sample)")
    try:
        if command == "bench" and args.model is not None:
            from pyroi import detector_bench

            return detector_bench.run(args.model, args.size, args.batch, args.threads or [1, 2],
                                      args.repeat)
        if command == "bench":
            from pyroi import bench

            return bench.run_from_args(args, args.bench_parser)
        if command == "explain":
            return _run_explain(args)
        if command == "sample":
            return _run_sample(args)
        if command == "onnx-rewrite":
            return _run_onnx_rewrite(args)
        return _run_op(command, args)
    except InputError as error:
        return _fail(command, str(error))
    except pyroi.PyroiError as error:
        return _fail(command, str(error))
    except BrokenPipeError:
        raise
    except OSError as error:
        return _fail(command, f"{getattr(error, 'filename', '') or ''} {_reason(error)}".strip())


def _run_onnx_rewrite(args) -> int:
    try:
        import onnx
    except ImportError as error:
        raise InputError(f"needs the onnx package (pip install pyroi[onnx]): {error}") from None
    from pyroi import onnx as pyroi_onnx

    try:
        model = onnx.load(args.input)
    except OSError:
        raise
    except Exception as error:  # protobuf's decode errors
        raise InputError(f"{args.input}: not an ONNX model ({error})") from None
    moved, count = pyroi_onnx.rewrite_model(model, back=args.back)
    onnx.save(moved, args.output)
    where = "ONNX's own domain" if args.back else "the pyroi domain"
    print(f"{args.output}: {count} node{'s' if count != 1 else ''} moved to {where}")
    return 0


def _fail(command: str, message: str) -> int:
    print(f"pyroi {command}: error: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
