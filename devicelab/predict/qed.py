"""Reader of the qed measurements (real phones; see ``../shared/data/README.md``).

``qed_tflite_cnn_ops_gpu*.csv`` holds one row per TFLite operator of a network on the GPU
delegate (fp16): the operator's configuration as a Python dict literal, and per device its
latency (microseconds) and the kernel that ran it. ``qed_tflite_cnn_e2e*.csv`` holds one row per
network with the end-to-end latency per device and setting. Element-wise operators are not
listed; what they cost ends up in the overhead (paper 001, section 4.2, Fig. 10).

Each row becomes an IR view (operator type, shapes, canonical attributes) so its features come
from ``features.raw_features``, the function that also serves IR graphs. Row semantics
(checked against the rows' FLOPS in ``ir_view``): ``Input_shape`` is the input height of the
operator as it ran (a padded height when the network has an explicit PAD before it),
``Filter`` the output channels (the depth multiplier of a depthwise conv), ``Kernel`` the number
of inputs of a concatenation, and ``0`` for a mean over the whole input.
"""

from __future__ import annotations

import ast
import csv
import difflib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devicelab.graph import ops as ir_ops
from devicelab.graph.errors import GraphError
from devicelab.predict.deduce_tflite_gpu import (
    anchor_kind,
    combine_dw_plus_1x1,
    deduce_kernels,
    dw_plus_1x1_supported,
    kind_from_name,
    linked_labels,
)
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import raw_features
from devicelab.predict.kernels import Kernel
from devicelab.predict.samples import Sample

OPS_FILE = "qed_tflite_cnn_ops_gpu.train.csv"
E2E_FILE = "qed_tflite_cnn_e2e.train.csv"
# The (ops, end-to-end) file names a folder may hold, in the order they are looked for: ours (the
# training part in ../shared/data), the public repository's as published at commit 40ba833
# (``dataset/``, all 102 networks, the same columns as ours), and its later renaming
# (``dataset/cnn/``, kept in Git LFS). ``find_files`` also looks in those two subfolders, so a
# clone of the repository can be given as it is.
FILE_NAMES: tuple[tuple[str, str], ...] = (
    (OPS_FILE, E2E_FILE),
    ("tflite_cnn_ops_gpu.csv", "tflite_cnn_e2e.csv"),
    ("tflite_cnn_real_ops_gpu.csv", "tflite_cnn_real_e2e.csv"),
)
REPOSITORY_FOLDERS = ("", "dataset", "dataset/cnn")
_LFS_POINTER = "version https://git-lfs.github.com/spec/"

# The qed data lists no element-wise, reshape, split or pad kernels: their time is in the
# end-to-end latency only, so a predictor learns it as overhead (paper 001, section 4.2, Fig. 10).
OVERHEAD_KINDS = ("elementwise", "reshape", "split", "pad")

# The six phones of the paper's Table 1 and the Algorithm 3.2 family of their GPUs.
DEVICES: dict[str, tuple[str, str]] = {
    "pixel4": ("Adreno 640", "adreno6xx"),
    "s10": ("Mali-G76", "mali"),
    "mi8se": ("Adreno 616", "adreno6xx"),
    "a03s": ("PowerVR GE8320", "powervr"),
    "iphone7": ("Apple A10 (PowerVR GT7600 Plus, custom)", "apple"),
    "iphonexs": ("Apple A12 (G11P)", "apple"),
}


# Where the lab's workspace keeps its shared folder, for a checkout made elsewhere (a CI clone
# under /tmp has no ``../shared`` of its own).
WORKSPACE_SHARED_DATA = Path("/work/shared/data")


def default_data_dir() -> Path:
    """``$LATENCYLAB_QED_DATA``; else the first ``shared/data`` holding the qed files beside the
    repository or beside one of its parent folders (``../shared/data`` for a checkout next to
    it), else the workspace's ``/work/shared/data``; else ``../shared/data`` (missing: the
    readers then say where they looked)."""
    env = os.environ.get("LATENCYLAB_QED_DATA")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    for folder in (*repo.parents, WORKSPACE_SHARED_DATA.parents[1]):
        candidate = folder / "shared" / "data"
        if (candidate / OPS_FILE).is_file():
            return candidate
    return repo.parent / "shared" / "data"


def find_files(folder: Path | str) -> tuple[Path, Path]:
    """The ops and end-to-end files in ``folder`` under any name of ``FILE_NAMES`` (also in its
    ``dataset/`` or ``dataset/cnn/`` subfolder: a clone of the public repository), the first pair
    found; ``PredictorError`` saying which names it looked for."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PredictorError(f"the qed data folder {folder} does not exist or is not a folder")
    for sub in REPOSITORY_FOLDERS:
        for ops_name, e2e_name in FILE_NAMES:
            ops, e2e = folder / sub / ops_name, folder / sub / e2e_name
            if ops.is_file() and e2e.is_file():
                return ops, e2e
    pairs = "; ".join(f"{a} + {b}" for a, b in FILE_NAMES)
    raise PredictorError(
        f"no qed files in {folder} (nor in its dataset/ or dataset/cnn/ subfolder): expected one of these "
        f"pairs: {pairs}"
    )


def _open_csv(path: Path, what: str) -> Any:
    """``path`` opened for ``csv``; ``PredictorError`` when it cannot be read or is a Git LFS
    pointer (a clone made without ``git lfs``) instead of the data."""
    try:
        handle = path.open(newline="")
    except OSError as e:
        raise PredictorError(f"cannot read the qed {what} file {path}: {e.strerror}") from None
    if handle.read(len(_LFS_POINTER)) == _LFS_POINTER:
        handle.close()
        raise PredictorError(
            f"{path} is a Git LFS pointer, not the data: run `git lfs pull` in the clone of the repository"
        )
    handle.seek(0)
    return handle


@dataclass(frozen=True)
class QedOp:
    """One operator row: its network, configuration, IR view and per-device measurements."""

    model: str
    row: int  # line number in the file (1 = header)
    operation: str  # CONV_2D, DEPTHWISE_CONV_2D, CONV_2D_GROUP, FULLY_CONNECTED, MEAN, ...
    feature: dict[str, Any]
    op_type: str
    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    attrs: dict[str, Any]
    latency_us: dict[str, float]  # device -> operator latency (microseconds)
    kernel: dict[str, str]  # device -> name of the kernel that ran it

    @property
    def raw(self) -> tuple[float, ...]:
        """``features.raw_features`` of the row."""
        return raw_features(self.op_type, self.input_shapes, self.output_shapes, self.attrs)


def parse_feature(text: str, where: str = "") -> dict[str, Any]:
    """The feature column (a Python dict literal) as a dict, or ``PredictorError`` saying why not."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as e:
        raise PredictorError(f"{where}: the feature column is not a Python dict literal ({e})") from None
    if not isinstance(value, dict):
        raise PredictorError(f"{where}: the feature column is a {type(value).__name__}, not a dict")
    return value


def _int(feature: dict[str, Any], key: str, where: str) -> int:
    try:
        return int(feature[key])
    except (KeyError, ValueError, TypeError):
        raise PredictorError(f"{where}: feature {key!r} is {feature.get(key)!r}, expected an integer") from None


def _same_pads(size: int, out: int, k: int, s: int) -> list[int]:
    total = max(0, (out - 1) * s + k - size)
    return [total // 2, total // 2, total - total // 2, total - total // 2]


def ir_view(
    operation: str, f: dict[str, Any], where: str = ""
) -> tuple[str, list[tuple[int, ...]], list[tuple[int, ...]], dict[str, Any]]:
    """The IR operator a row describes: type, input shapes, output shapes, canonical attributes."""
    c = _int(f, "Input_channel", where)
    inputs: list[tuple[int, ...]]
    attrs: dict[str, Any]
    if operation == "FULLY_CONNECTED":
        op_type, inputs, attrs = "fully_connected", [(1, c)], {"out_features": _int(f, "Filter", where)}
    elif operation == "CONCATENATION":
        h, n, total = _int(f, "Input_shape", where), _int(f, "Kernel", where), _int(f, "Filter", where)
        # Only the first input's channels are recorded; the rest share the remainder.
        rest = [(total - c) // (n - 1)] * (n - 1) if n > 1 else []
        if rest:
            rest[-1] += total - c - sum(rest)
        op_type, inputs, attrs = "concat", [(1, ch, h, h) for ch in [c, *rest]], {"axis": 1}
    elif operation == "MEAN":
        h = _int(f, "Input_shape", where)
        op_type, inputs, attrs = "global_avg_pool", [(1, c, h, h)], {}
    else:
        h, out = _int(f, "Input_shape", where), _int(f, "Output_shape", where)
        k, s = _int(f, "Kernel", where), _int(f, "Stride", where)
        window: dict[str, Any] = {"kernel": [k, k], "stride": [s, s], "pads": _same_pads(h, out, k, s)}
        inputs = [(1, c, h, h)]
        if operation in ("CONV_2D", "CONV_2D_GROUP"):
            groups = _int(f, "Group", where)
            op_type, attrs = "conv2d", {**window, "out_channels": _int(f, "Filter", where), "groups": groups}
        elif operation == "DEPTHWISE_CONV_2D":
            op_type, attrs = "depthwise_conv2d", {**window, "multiplier": _int(f, "Filter", where)}
        elif operation == "MAX_POOL_2D":
            op_type, attrs = "max_pool2d", window
        elif operation == "AVERAGE_POOL_2D":
            op_type, attrs = "avg_pool2d", window
        else:
            raise PredictorError(f"{where}: unknown operation {operation!r}")
    try:
        attrs, outputs = ir_ops.normalize_and_infer(op_type, attrs, inputs)
    except GraphError as e:
        raise PredictorError(f"{where}: {operation} {f} is not a valid operator: {e}") from None
    if operation not in ("FULLY_CONNECTED", "CONCATENATION", "MEAN") and outputs[0][2] != _int(
        f, "Output_shape", where
    ):
        raise PredictorError(f"{where}: {operation} {f} does not give output height {f['Output_shape']}")
    flops = str(f.get("FLOPS", "-"))
    if flops.isdigit():
        ours = ir_ops.spec(op_type).flops([tuple(x) for x in inputs], [tuple(y) for y in outputs], attrs)
        if ours != int(flops):
            raise PredictorError(f"{where}: {operation} {f}: FLOPS {flops} but the configuration gives {ours}")
    return op_type, [tuple(x) for x in inputs], [tuple(y) for y in outputs], attrs


def read_ops(path: Path | str | None = None, devices: Iterable[str] | None = None) -> list[QedOp]:
    """Every operator row of an ops file (default: the training file in ``default_data_dir()``)."""
    path = Path(path) if path is not None else default_data_dir() / OPS_FILE
    with _open_csv(path, "operator") as handle:
        reader = csv.DictReader(handle)
        fields = reader.fieldnames or []
        devs = list(devices) if devices is not None else [d for d in DEVICES if f"{d}|gpu|kernel" in fields]
        missing = [c for c in ("model", "operation", "feature") if c not in fields]
        if missing:
            raise PredictorError(f"{path}: columns {missing} are missing; found {fields[:6]}...")
        out = []
        for line, r in enumerate(reader, start=2):
            where = f"{path.name} line {line}"
            feature = parse_feature(r["feature"], where)
            op_type, ins, outs, attrs = ir_view(r["operation"], feature, where)
            lat, ker = {}, {}
            for d in devs:
                value, name = r.get(f"{d}|gpu|float"), r.get(f"{d}|gpu|kernel")
                if value not in (None, "") and name:
                    lat[d] = float(value)
                    ker[d] = name
            out.append(
                QedOp(r["model"], line, r["operation"], feature, op_type, tuple(ins), tuple(outs), attrs, lat, ker)
            )
    return out


def read_e2e(path: Path | str | None = None) -> dict[str, dict[str, float]]:
    """End-to-end latencies: model -> ``"<device>|<setting>|<float|quant>|<mean|std>"`` -> microseconds."""
    path = Path(path) if path is not None else default_data_dir() / E2E_FILE
    out: dict[str, dict[str, float]] = {}
    with _open_csv(path, "end-to-end") as handle:
        reader = csv.DictReader(handle)
        if "model" not in (reader.fieldnames or []):
            raise PredictorError(f"{path}: column 'model' is missing; found {(reader.fieldnames or [])[:6]}...")
        for line, r in enumerate(reader, start=2):
            values = {}
            for k, v in r.items():
                if k and "|" in k and v not in (None, ""):
                    try:
                        values[k] = float(v)
                    except ValueError:
                        raise PredictorError(f"{path.name} line {line}: column {k!r} is {v!r}, not a number") from None
            out[r["model"]] = values
    return out


def by_model(rows: Iterable[QedOp]) -> dict[str, list[QedOp]]:
    """Rows grouped by network, in file order."""
    out: dict[str, list[QedOp]] = {}
    for r in rows:
        out.setdefault(r.model, []).append(r)
    return out


def deduce_rows(rows: Sequence[QedOp], family: str) -> list[Kernel]:
    """The kernels deduced for one network's rows on a GPU family (without its graph).

    Kernel selection is ``deduce_tflite_gpu.anchor_kind`` (Algorithm 3.2 and the conversions it
    documents). The rows hold no graph, so Apple's depthwise + 1x1 kernel is recognized on a
    depthwise row followed by a conv row that reads its output (same size and channels).
    """
    kernels: list[Kernel] = []
    i = 0
    while i < len(rows):
        r = rows[i]
        if family == "apple" and r.op_type == "depthwise_conv2d" and i + 1 < len(rows):
            nxt = rows[i + 1]
            reads_it = nxt.op_type == "conv2d" and nxt.input_shapes[0][1:] == r.output_shapes[0][1:]
            if reads_it and dw_plus_1x1_supported(r.attrs, r.input_shapes[0], nxt.attrs, nxt.input_shapes[0]):
                kernels.append(Kernel("dw_conv_plus_1x1", (i, i + 1), combine_dw_plus_1x1(r.raw, nxt.raw)))
                i += 2
                continue
        kind = anchor_kind(family, r.op_type, r.attrs, r.input_shapes, r.output_shapes)
        kernels.append(Kernel(kind, (i,), r.raw))
        i += 1
    return kernels


def measured_kernels(rows: Sequence[QedOp], device: str) -> list[Kernel]:
    """The kernels one network ran on ``device``, typed from their names, with latencies (ms).

    Rows that name the same kernel (the two operators of a depthwise + 1x1 kernel) are one
    kernel; its latency is the largest the rows report (they repeat the kernel's time).
    """
    kernels: list[Kernel] = []
    i = 0
    while i < len(rows):
        r = rows[i]
        name = r.kernel[device]
        j = i + 1
        while j < len(rows) and rows[j].kernel.get(device) == name:
            j += 1
        kind = kind_from_name(name)
        raw = r.raw if j == i + 1 else combine_dw_plus_1x1(r.raw, rows[j - 1].raw)
        latency = max(rows[k].latency_us[device] for k in range(i, j)) / 1000.0
        kernels.append(Kernel(kind, tuple(range(i, j)), raw, name, latency))
        i = j
    return kernels


def kernel_match(rows: Sequence[QedOp], device: str, family: str | None = None) -> tuple[int, int]:
    """How many of the rows' deduced kernel kinds equal the measured ones: (matched, rows)."""
    family = family or DEVICES[device][1]
    matched = total = 0
    for model_rows in by_model(rows).values():
        model_rows = [r for r in model_rows if device in r.kernel]
        deduced: dict[int, str] = {}
        for k in deduce_rows(model_rows, family):
            for i in k.ops:
                deduced[i] = k.type
        for i, r in enumerate(model_rows):
            total += 1
            matched += deduced.get(i) == kind_from_name(r.kernel[device])
    return matched, total


# qed networks (pytorchcv names) with a counterpart in the zoo, and the zoo's name for it
ZOO_COUNTERPARTS = {
    "proxylessnas_mobile": "proxylessnas_mobile",
    "densenet121": "densenet121",
    "ghostnet": "ghostnet_1.0",
    "mobilenet_w1": "mobilenet_v1",
    "mobilenet_wd2": "mobilenet_v1_0.5",
    "mobilenetv3_large_w1": "mobilenet_v3_large",
    "squeezenet_v1_0": "squeezenet_1_0",
    "squeezenet_v1_1": "squeezenet_1_1",
    "mnasnet_b1": "mnasnet1_0",
    "mobilenetv2b_w1": "mobilenet_v2",
    "regnetx004": "regnetx_400mf",
    "regnety004": "regnety_400mf",
}
# kernel kinds the qed files list (element-wise, reshape, split and pad kernels are not listed)
LISTED_KINDS = frozenset(
    {
        "conv2d",
        "winograd",
        "grouped_conv2d",
        "depthwise_conv2d",
        "dw_conv_plus_1x1",
        "fully_connected",
        "mean",
        "pooling",
        "concat",
    }
)


def fusion_match(rows: Sequence[QedOp], device: str, family: str | None = None) -> dict[str, float | int]:
    """Fused chains: the kernels deduced from each zoo counterpart's *graph* against the kernels
    ``device`` ran for the qed network, in order (matched with difflib): the share whose kind
    matches, and whose kind and number of fused operators match."""
    from devicelab.graph import zoo

    family = family or DEVICES[device][1]
    models = by_model(rows)
    exact = kinds = total = 0
    for qname, zname in ZOO_COUNTERPARTS.items():
        if qname not in models:
            continue
        measured, prev = [], None
        for r in models[qname]:
            name = r.kernel[device]
            if name != prev:
                measured.append((kind_from_name(name), len(linked_labels(name))))
            prev = name
        deduced = [
            (k.type, len(linked_labels(k.name)))
            for k in deduce_kernels(zoo.build(zname), family)
            if k.type in LISTED_KINDS
        ]
        total += len(measured)
        exact += sum(
            b.size for b in difflib.SequenceMatcher(a=measured, b=deduced, autojunk=False).get_matching_blocks()
        )
        kinds += sum(
            b.size
            for b in difflib.SequenceMatcher(
                a=[x[0] for x in measured], b=[x[0] for x in deduced], autojunk=False
            ).get_matching_blocks()
        )
    return {
        "kernels": total,
        "kind_share": kinds / total,
        "kind_and_fused_count_share": exact / total,
    }


def gpu_samples(
    device: str, rows: Sequence[QedOp] | None = None, e2e: dict[str, dict[str, float]] | None = None
) -> list[Sample]:
    """One sample per network with GPU measurements on ``device``: measured kernels, the
    end-to-end GPU latency, and the kernels deduced from the rows."""
    if device not in DEVICES:
        raise PredictorError(f"unknown qed device {device!r}; the devices are {list(DEVICES)}")
    rows = rows if rows is not None else read_ops()
    e2e = e2e if e2e is not None else read_e2e()
    column = f"{device}|gpu|float|mean"
    family = DEVICES[device][1]
    samples = []
    for model, model_rows in by_model(rows).items():
        model_rows = [r for r in model_rows if device in r.kernel]
        if not model_rows or column not in e2e.get(model, {}):
            continue
        samples.append(
            Sample(
                model,
                tuple(measured_kernels(model_rows, device)),
                e2e[model][column] / 1000.0,
                tuple(deduce_rows(model_rows, family)),
            )
        )
    return samples


__all__ = [
    "DEVICES",
    "E2E_FILE",
    "FILE_NAMES",
    "LISTED_KINDS",
    "OPS_FILE",
    "OVERHEAD_KINDS",
    "ZOO_COUNTERPARTS",
    "QedOp",
    "by_model",
    "deduce_rows",
    "default_data_dir",
    "find_files",
    "fusion_match",
    "gpu_samples",
    "ir_view",
    "kernel_match",
    "measured_kernels",
    "parse_feature",
    "read_e2e",
    "read_ops",
]
