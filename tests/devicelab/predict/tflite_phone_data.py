"""Phone results of the shapes the android backend stores, made without a phone.

No phone is attached to our machines, and the adb double's ``benchmark_model`` times nothing
real, so the predictor tests of phones build their results here: the TFLite operators are those
our writer emits for the graph (``graph_to_tflite``: which IR operators each TFLite operator
implements), and each operator's time comes from a small cost model of a phone (FLOPs at a
throughput, elements moved, a launch cost, a few percent of seeded noise). The rows have the
shapes ``docs/phones.md`` describes:

* ``cpu``: one row per TFLite operator, ``[<tensor>]:<i>`` with its builtin node type; the IR
  operators it also implements (folded batch norm, fused activation) name it in ``fused_into``;
* ``xnnpack``: ``Delegate/<XNNPACK kernel>:<i>`` rows (GEMM for 1x1 stride-1 convolutions, IGEMM
  for the others, DWConv for depthwise ones ...), builtin rows for what XNNPACK does not take;
* ``gpu``: one ``TfLiteGpuDelegateV2`` partition row timing the first operator, every other
  operator fused into it; the partition's time is the sum of the kernels the TFLite GPU
  delegate runs (``deduce_kernels`` for the phone's GPU family) plus the partition's own cost.

Helper operators the writer adds to implement one IR operator (an explicit PAD before a
convolution, ``X::<suffix>``) add their time to that operator's row. End-to-end statistics are
aggregates only (mean, std, min, max: no median), as the tool prints them.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from devicelab.backends.base import ColdStart, DeviceInfo, OpTiming, ProfileResult, ProfileSettings
from devicelab.graph import Graph
from devicelab.measure.stats import from_aggregate
from devicelab.predict.deduce_tflite_gpu import deduce_kernels, gpu_family
from devicelab.predict.tflite_gpu_records import kernel_work

RUNTIME = "TensorFlow Lite benchmark_model"
GLES = "ARM, Mali-G78, OpenGL ES 3.2 v1.r34p0-01eac0"
PARTITION = "TfLiteGpuDelegateV2"

# TFLite builtin -> the XNNPACK kernel that runs it (absent: XNNPACK leaves it to the builtin kernel)
XNNPACK = {
    "DEPTHWISE_CONV_2D": "Convolution (NHWC, F32) DWConv",
    "FULLY_CONNECTED": "Fully Connected (NC, F32) GEMM",
    "ADD": "Add (ND, F32)",
    "MUL": "Multiply (ND, F32)",
    "MAX_POOL_2D": "Max Pooling (NHWC, F32)",
    "AVERAGE_POOL_2D": "Average Pooling (NHWC, F32)",
    "MEAN": "Global Average Pooling (NWC, F32)",
    "CONCATENATION": "Concatenation (ND, X32)",
    "PAD": "Constant Pad (ND, X32)",
    "RESHAPE": "Copy (NC, X32)",
    "LOGISTIC": "Sigmoid (NC, F32)",
    "HARD_SWISH": "HardSwish (NC, F32)",
    "RELU": "Clamp (NC, F32)",
    "RELU6": "Clamp (NC, F32)",
    "SOFTMAX": "Softmax (NC, F32)",
}


@dataclass(frozen=True)
class PhoneCosts:
    """A phone's speed: GFLOP/s per delegate, ns per element moved, launch costs (ms)."""

    cpu_gflops: float = 6.0
    xnnpack_gflops: float = 14.0
    gpu_gflops: float = 40.0
    ns_per_element: float = 1.2
    gpu_ns_per_element: float = 0.3
    launch_ms: float = 0.004
    gpu_launch_ms: float = 0.02
    partition_ms: float = 0.15
    framework_ms: float = 0.08
    noise: float = 0.02


PHONE = PhoneCosts()


@dataclass(frozen=True)
class Node:
    """One TFLite operator of the written model."""

    index: int
    builtin: str
    helper: bool
    ir_ops: tuple[int, ...]


@functools.lru_cache(maxsize=64)
def _nodes_cached(graph_json: str) -> tuple[Node, ...]:
    from devicelab.graph import graph_from_json
    from devicelab.graph.tflite.writer import graph_to_tflite

    graph = graph_from_json(graph_json)
    position = {o.name: i for i, o in enumerate(graph.operators)}
    return tuple(
        Node(o.index, o.builtin, "::" in o.name, tuple(position[n] for n in o.ir_ops if n in position))
        for o in graph_to_tflite(graph).ops
    )


def tflite_nodes(graph: Graph) -> tuple[Node, ...]:
    """The operators our writer emits for ``graph`` (remembered per graph)."""
    from devicelab.graph import graph_to_json

    return _nodes_cached(graph_to_json(graph))


def _noise(key: str, seed: int, amount: float) -> float:
    """A factor in [1 - amount, 1 + amount], fixed by ``key`` and ``seed``."""
    h = zlib.crc32(f"{seed}|{key}".encode()) / 0xFFFFFFFF
    return 1.0 + amount * (2.0 * h - 1.0)


def _moved(graph: Graph, ops: Sequence[int]) -> float:
    t = graph.tensors
    total = 0.0
    for i in ops:
        o = graph.operators[i]
        for name in [*o.inputs, *o.outputs]:
            n = 1
            for d in t[name].shape:
                n *= int(d)
            total += n
    return total


def xnnpack_label(graph: Graph, node: Node) -> str | None:
    """The XNNPACK kernel that runs a TFLite operator (None: XNNPACK leaves it to the builtin kernel)."""
    if node.builtin == "CONV_2D" and node.ir_ops:
        attrs = graph.operators[node.ir_ops[0]].attrs
        one = list(attrs.get("kernel", [1, 1])) == [1, 1] and list(attrs.get("stride", [1, 1])) == [1, 1]
        return "Convolution (NHWC, F32) " + ("GEMM" if one else "IGEMM")
    return XNNPACK.get(node.builtin)


def _node_ms(graph: Graph, node: Node, delegate: str, phone: PhoneCosts, seed: int) -> float:
    own = node.ir_ops[:1] if node.helper else node.ir_ops
    flops = 0.0 if node.helper else float(sum(graph.op_cost(graph.operators[i]).flops for i in own))
    gflops = phone.xnnpack_gflops if delegate == "xnnpack" and xnnpack_label(graph, node) else phone.cpu_gflops
    if node.builtin == "DEPTHWISE_CONV_2D":
        gflops /= 3.0  # little reuse: depthwise kernels run far below the GEMM rate
    ms = flops / (gflops * 1e6) + _moved(graph, own) * phone.ns_per_element * 1e-6 + phone.launch_ms
    return ms * _noise(f"{graph.name}|{node.index}", seed, phone.noise)


def _gpu_partition_ms(graph: Graph, phone: PhoneCosts, seed: int) -> float:
    family = gpu_family(GLES)
    total = phone.partition_ms
    for k in deduce_kernels(graph, family):
        flops, moved = kernel_work(k)
        rate = (
            phone.gpu_gflops * (1.6 if k.type == "winograd" else 1.0) / (3.0 if k.type == "depthwise_conv2d" else 1.0)
        )
        total += flops / (rate * 1e6) + moved * phone.gpu_ns_per_element * 1e-6 + phone.gpu_launch_ms
    return total * _noise(f"{graph.name}|gpu", seed, phone.noise)


def phone_rows(graph: Graph, delegate: str, runs: int, phone: PhoneCosts = PHONE, seed: int = 0) -> list[OpTiming]:
    """One row per graph operator, as the backend stores a phone's operator profile."""
    ops = graph.operators
    t = graph.tensors

    def shapes(names: Sequence[str]) -> list[list[int]]:
        return [list(t[n].shape) for n in names]

    def row(i: int, name: str, kernel: str, ms: float | None, fused_into: str | None = None) -> OpTiming:
        o = ops[i]
        stats = None if ms is None else from_aggregate(runs, ms)
        return OpTiming(i, name, o.type, kernel, shapes(o.inputs), shapes(o.outputs), dict(o.attrs), stats, fused_into)

    nodes = tflite_nodes(graph)
    if delegate == "gpu":
        covered = sorted({i for n in nodes for i in n.ir_ops})
        name = f"[{graph.outputs[0]}]:{len(nodes)}"
        ms = _gpu_partition_ms(graph, phone, seed)
        out = {covered[0]: row(covered[0], name, PARTITION, ms)}
        out.update({i: row(i, ops[i].name, PARTITION, None, name) for i in covered[1:]})
    else:
        out = {}
        main: dict[int, Node] = {}  # IR operator -> the TFLite operator that runs it
        for helpers in (False, True):  # a helper runs an operator only when nothing else does
            for n in nodes:
                if n.helper == helpers:
                    for i in n.ir_ops:
                        main.setdefault(i, n)
        extra: dict[int, float] = {}  # a helper's time joins its operator's row
        for n in nodes:
            if n.helper and n.ir_ops and main[n.ir_ops[0]] is not n:
                extra[n.ir_ops[0]] = extra.get(n.ir_ops[0], 0.0) + _node_ms(graph, n, delegate, phone, seed)
        for n in nodes:
            mine = [i for i in n.ir_ops if main[i] is n]
            if not mine:
                continue
            label = xnnpack_label(graph, n) if delegate == "xnnpack" else None
            kernel = label or n.builtin
            name = f"Delegate/{label}:{n.index}" if label else ops[mine[0]].name
            ms = _node_ms(graph, n, delegate, phone, seed) + extra.get(mine[0], 0.0)
            out[mine[0]] = row(mine[0], name, kernel, ms)
            for i in mine[1:]:
                out[i] = row(i, ops[i].name, kernel, None, name)
    rows = []
    for i, o in enumerate(ops):
        rows.append(
            out.get(i) or OpTiming(i, o.name, o.type, "", shapes(o.inputs), shapes(o.outputs), dict(o.attrs), None)
        )
    return rows


def phone_device(identity: str = "android:TEST1", model: str = "Pixel 4") -> DeviceInfo:
    """The device a test phone registers as (hardware as ``phone_state.describe`` reads it)."""
    hardware = {
        "serial": identity.split(":", 1)[-1],
        "manufacturer": "Google",
        "model": model,
        "soc": "SM8150",
        "gpu": GLES,
        "cpu_clusters": [
            {"name": "little", "cores": [0, 1, 2, 3], "max_khz": 1785600},
            {"name": "big", "cores": [4, 5, 6, 7], "max_khz": 2841600},
        ],
        "cpu_cores": 8,
    }
    return DeviceInfo("android", identity, f"Google {model} ({hardware['serial']})", hardware)


def phone_result(
    graph: Graph,
    settings: ProfileSettings,
    device: DeviceInfo | None = None,
    phone: PhoneCosts = PHONE,
    seed: int = 0,
) -> ProfileResult:
    """What the android backend reports for ``graph`` measured with ``settings`` on a test phone."""
    delegate = settings.delegate or "xnnpack"
    rows = phone_rows(graph, delegate, settings.runs, phone, seed)
    timed = sum(r.stats.mean for r in rows if r.stats is not None)
    e2e_ms = (timed + phone.framework_ms) * _noise(f"{graph.name}|e2e", seed, phone.noise / 2)
    e2e = from_aggregate(settings.runs, e2e_ms, 0.01 * e2e_ms, 0.98 * e2e_ms, 1.03 * e2e_ms)
    env = {"runtime": RUNTIME, "delegate": delegate, "threads": settings.threads, "cores": list(settings.cores)}
    return ProfileResult(
        device=device or phone_device(),
        settings=settings,
        e2e=e2e,
        samples_ms=[],
        cold=ColdStart(load_ms=20.0 + e2e_ms, first_run_ms=2.0 * e2e_ms),
        ops=rows,
        environment=env,
    )


__all__ = [
    "GLES",
    "PHONE",
    "RUNTIME",
    "PhoneCosts",
    "phone_device",
    "phone_result",
    "phone_rows",
    "tflite_nodes",
    "xnnpack_label",
]
