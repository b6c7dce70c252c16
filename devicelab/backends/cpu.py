"""The host CPU backend: runs IR graphs through ONNX Runtime and times them, whole and per operator.

Measurement discipline (the product of this module):

* The graph is exported with fixed seeded weights and fed one fixed seeded input.
* A session is built the way a user would run it: ``ORT_ENABLE_ALL`` graph optimizations, the
  CPU execution provider, ``intra_op_num_threads = settings.threads``, one inter-op thread,
  sequential execution.
* Core pinning: ONNX Runtime's worker threads inherit the CPU affinity of the thread that
  creates the session (checked on Linux by reading ``/proc/self/task/*/status``), so the calling
  thread is pinned with ``os.sched_setaffinity`` around session creation and every run, and its
  old affinity is restored afterwards.
* Cold start is measured apart: ``load_ms`` is session creation (graph optimization included),
  ``first_run_ms`` the first inference. Then ``warmup_runs`` discarded runs, then ``runs`` timed
  end-to-end runs (``time.perf_counter_ns``) in a session *without* profiling, whose overhead
  would otherwise leak into the numbers.
* Per-operator times come from ONNX Runtime's profiler, on the optimized graph ORT saved for
  this model (nodes uniquely named, loaded with optimizations off: the same kernels, and every
  profiled kernel is a node we can read), run ``runs + 1`` times with the first dropped as
  warm-up. ``map_kernels`` says which kernel implements which IR operator.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from devicelab.backends import cpu_topology
from devicelab.backends.base import (
    BackendError,
    ColdStart,
    DeviceInfo,
    OpTiming,
    ProfileResult,
    ProfileSettings,
    ProgressFn,
)
from devicelab.graph import ops as ir_ops
from devicelab.graph.ir import Graph
from devicelab.measure.stats import summarize

KIND = "cpu"
INPUT_SEED = 0
WEIGHT_SEED = 0
OPTIMIZATION_LEVEL = "ORT_ENABLE_ALL"
_NCHWC_DOMAIN = "com.microsoft.nchwc"


# ---------------------------------------------------------------------------------------------
# Discovery


def runtime_version() -> str:
    """``onnxruntime <version>``."""
    return f"onnxruntime {ort.__version__}"


def host_identity() -> str:
    """This machine's CPU identity: ``cpu:<machine-id>`` (hostname when there is no machine-id)."""
    return f"{KIND}:{cpu_topology.machine_identity()}"


def discover() -> list[DeviceInfo]:
    """The host CPU as one device."""
    topo = cpu_topology.read_topology()
    hardware = topo.as_hardware()
    hardware["runtime"] = runtime_version()
    return [DeviceInfo(kind=KIND, identity=host_identity(), name=topo.model, hardware=hardware)]


# ---------------------------------------------------------------------------------------------
# Validation, affinity, sessions


def _check_request(device: DeviceInfo, settings: ProfileSettings, online: Sequence[int]) -> tuple[int, ...]:
    """Reject a device or settings this backend cannot honour; return the sorted, distinct cores."""
    if device.kind != KIND:
        raise ValueError(f"the cpu backend cannot profile a {device.kind!r} device")
    if device.identity != host_identity():
        raise ValueError(f"device {device.identity!r} is not this host's CPU ({host_identity()!r})")
    if settings.backend != KIND:
        raise ValueError(f"settings ask for backend {settings.backend!r}, this is the cpu backend")
    if settings.precision != "fp32":
        raise ValueError(f"the cpu backend runs fp32 graphs only, not {settings.precision!r}")
    cores = tuple(sorted(set(settings.cores)))
    missing = [c for c in cores if c not in set(online)]
    if missing:
        raise ValueError(f"cores {missing} do not exist on this CPU; its online cores are {list(online)}")
    if cores and not hasattr(os, "sched_setaffinity"):
        raise ValueError("core pinning needs os.sched_setaffinity, which this OS does not offer")
    return cores


def _current_affinity() -> list[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


@contextmanager
def pinned(cores: Sequence[int]) -> Iterator[list[int]]:
    """Pin the calling thread to ``cores`` (no-op when empty); yield the affinity really in force."""
    if not cores:
        yield _current_affinity()
        return
    old = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, set(cores))
    except OSError as e:  # a core outside this process's cpuset: EINVAL
        raise ValueError(f"cannot pin to cores {list(cores)}: {e.strerror}; allowed now: {sorted(old)}") from None
    try:
        yield sorted(os.sched_getaffinity(0))
    finally:
        os.sched_setaffinity(0, old)


def _thread_ids() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def thread_affinities(tids: Sequence[int]) -> dict[int, str]:
    """``Cpus_allowed_list`` of the given threads of this process (Linux; empty elsewhere)."""
    out: dict[int, str] = {}
    for tid in tids:
        try:
            text = Path(f"/proc/self/task/{tid}/status").read_text()
        except OSError:
            continue
        m = re.search(r"^Cpus_allowed_list:\s*(\S+)", text, re.MULTILINE)
        if m:
            out[tid] = m.group(1)
    return out


def _session_options(settings: ProfileSettings, *, optimize: bool = True, save_optimized: Path | None = None,
                     profile_prefix: Path | None = None) -> ort.SessionOptions:
    """Options a user would run with, optionally saving the optimized graph or profiling."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = settings.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    level = OPTIMIZATION_LEVEL if optimize else "ORT_DISABLE_ALL"
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    so.log_severity_level = 3  # errors still raise; the NCHWc "hardware specific model" warning is noise here
    if save_optimized is not None:
        so.optimized_model_filepath = str(save_optimized)
    if profile_prefix is not None:
        so.enable_profiling = True
        so.profile_file_prefix = str(profile_prefix)
    return so


_ORT_ERROR = re.compile(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*(\w+)\s*:\s*(.*)", re.DOTALL)


def _backend_error(what: str, graph: Graph, err: Exception) -> BackendError:
    """A clear ``BackendError`` from an ONNX Runtime exception: what failed, for which graph, why."""
    text = str(err).strip()
    m = _ORT_ERROR.search(text)
    reason = f"{m.group(1)}: {m.group(2).strip()}" if m else text or type(err).__name__
    return BackendError(f"cpu backend (onnxruntime {ort.__version__}) could not {what} graph {graph.name!r}: {reason}")


def _new_session(model: bytes, options: ort.SessionOptions, graph: Graph) -> ort.InferenceSession:
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # ORT raises its own pybind exception types (Fail, InvalidGraph, ...)
        raise _backend_error("load", graph, e) from e


def _run(session: ort.InferenceSession, feeds: dict[str, np.ndarray], graph: Graph) -> None:
    try:
        session.run(None, feeds)
    except Exception as e:
        raise _backend_error("run", graph, e) from e


def make_feeds(graph: Graph, seed: int = INPUT_SEED) -> dict[str, np.ndarray]:
    """One fixed random input per graph input (standard normal floats, small non-negative integers)."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for name in graph.inputs:
        t = graph.tensors[name]
        dtype = np.dtype(t.dtype)
        if np.issubdtype(dtype, np.floating):
            feeds[name] = rng.standard_normal(t.shape).astype(dtype)
        else:
            feeds[name] = rng.integers(0, 8, size=t.shape).astype(dtype)
    return feeds


def _check_inputs(session: ort.InferenceSession, graph: Graph) -> None:
    wanted = [i.name for i in session.get_inputs()]
    unknown = [n for n in wanted if n not in graph.inputs]
    if unknown:
        raise BackendError(f"exported graph {graph.name!r} asks for inputs {unknown} that the IR graph does not declare")


# ---------------------------------------------------------------------------------------------
# Reading ONNX Runtime's profile


@dataclass
class KernelNode:
    """One node of the optimized model ONNX Runtime really executes."""

    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    activation: str | None = None  # a fused kernel's activation attribute (FusedConv, NCHWc Conv)
    position: int = 0  # index in execution (topological) order

    @property
    def kernel(self) -> str:
        """The kernel's name: its op type, with NCHWc layout kernels marked (``NchwcConv``)."""
        if self.domain == _NCHWC_DOMAIN and not self.op_type.startswith("Reorder"):
            return "Nchwc" + self.op_type
        return self.op_type


@dataclass
class NodeProfile:
    """Per-run kernel durations (ms) of one node, plus the shapes the profiler saw."""

    op_type: str
    per_run_ms: list[float]
    input_shapes: list[list[int]] = field(default_factory=list)
    output_shapes: list[list[int]] = field(default_factory=list)


def name_nodes_uniquely(model: onnx.ModelProto) -> onnx.ModelProto:
    """Give every node a unique name, in place: ORT leaves the nodes it creates by inlining a
    function (HardSwish -> HardSigmoid + Mul) unnamed, and its profiler would then report them
    as ``<OpType>_<internal index>``, which the saved model cannot be matched against."""
    seen: set[str] = set()
    for i, node in enumerate(model.graph.node):
        if not node.name or node.name in seen:
            node.name = f"{node.name or node.op_type}#{i}"
        seen.add(node.name)
    return model


def kernel_nodes(model: onnx.ModelProto) -> list[KernelNode]:
    """Nodes of an optimized model (uniquely named), in a topological order."""
    nodes = []
    for n in model.graph.node:
        act = next((a.s.decode() for a in n.attribute if a.name == "activation" and a.s), None)
        nodes.append(KernelNode(n.name, n.op_type, n.domain, list(n.input), list(n.output), act))
    return topological(nodes)


def topological(nodes: list[KernelNode]) -> list[KernelNode]:
    """Nodes ordered producers first (stable Kahn); ``position`` set to the order."""
    writer = {v: i for i, n in enumerate(nodes) for v in n.outputs if v}
    deps = [{writer[v] for v in n.inputs if v in writer and writer[v] != i} for i, n in enumerate(nodes)]
    users: list[list[int]] = [[] for _ in nodes]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    indeg = [len(d) for d in deps]
    ready = deque(i for i, d in enumerate(indeg) if d == 0)
    order: list[int] = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
    order += [i for i in range(len(nodes)) if i not in set(order)]  # a cycle cannot happen; keep every node
    out = [nodes[i] for i in order]
    for pos, n in enumerate(out):
        n.position = pos
    return out


def _shapes(arg: Any) -> list[list[int]]:
    """ORT's ``input_type_shape`` ([{"float": [1, 3, 8, 8]}, ...]) as plain shapes."""
    shapes: list[list[int]] = []
    if isinstance(arg, list):
        for item in arg:
            if isinstance(item, dict):
                for dims in item.values():
                    shapes.append([int(d) for d in dims])
    return shapes


def parse_profile(path: Path, skip_runs: int = 1) -> tuple[dict[str, NodeProfile], list[float]]:
    """Per-node kernel times of each run after the first ``skip_runs``, and each run's duration (ms).

    ONNX Runtime writes Chrome-trace events: one ``model_run`` (cat ``Session``) per inference and
    one ``<node>_kernel_time`` (cat ``Node``) per executed kernel, times in microseconds. Kernel
    events are assigned to the run whose time span holds them; a node that did not show up in a
    run counts 0 there.
    """
    raw = json.loads(path.read_text())
    events = raw.get("traceEvents", []) if isinstance(raw, dict) else raw
    runs = sorted((e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"),
                  key=lambda e: e["ts"])
    starts = [e["ts"] for e in runs]
    measured = len(runs) - skip_runs
    if measured < 1:
        raise BackendError(f"the onnxruntime profile holds {len(runs)} runs, expected more than {skip_runs}")
    profiles: dict[str, NodeProfile] = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        run = bisect.bisect_right(starts, e["ts"]) - 1 - skip_runs
        if run < 0 or run >= measured:
            continue
        node = name[: -len("_kernel_time")]
        args = e.get("args", {})
        p = profiles.get(node)
        if p is None:
            p = profiles[node] = NodeProfile(str(args.get("op_name", "")), [0.0] * measured,
                                             _shapes(args.get("input_type_shape")),
                                             _shapes(args.get("output_type_shape")))
        p.per_run_ms[run] += float(e.get("dur", 0)) / 1000.0
    run_ms = [float(e["dur"]) / 1000.0 for e in runs[skip_runs:]]
    return profiles, run_ms


# ---------------------------------------------------------------------------------------------
# Mapping kernel nodes back to IR operators

# Which IR categories a heavy kernel can implement: a conv kernel named after the ReLU it absorbed
# was renamed by a fusion (NCHWc names a Conv+BN+ReLU kernel after the BN or the ReLU).
_KERNEL_FAMILY = {
    "Conv": "conv", "FusedConv": "conv", "NhwcFusedConv": "conv", "NhwcConv": "conv", "ConvTranspose": "conv",
    "QLinearConv": "conv", "ConvInteger": "conv",
    "Gemm": "fc", "FusedGemm": "fc", "MatMul": "fc", "FusedMatMul": "fc", "QGemm": "fc", "MatMulInteger": "fc",
    "MaxPool": "pool", "AveragePool": "pool", "GlobalAveragePool": "global_pool", "GlobalMaxPool": "global_pool",
}
_IR_FAMILY = {"conv": "conv", "dwconv": "conv", "fc": "fc", "matmul": "fc", "pool": "pool", "mean": "global_pool"}
# Which IR types a light kernel ORT created without a usable name can belong to: the exporter's
# decompositions, and ORT's own (HardSwish inlined as HardSigmoid + Mul; Gelu re-fused).
_KERNEL_IR_TYPES = {
    "Relu": {"relu"}, "Clip": {"relu6", "clip"}, "HardSigmoid": {"hard_sigmoid", "hard_swish"},
    "HardSwish": {"hard_swish"}, "Sigmoid": {"sigmoid", "swish"}, "Tanh": {"tanh"},
    "Mul": {"mul", "swish", "hard_swish", "gelu"}, "Add": {"add", "fully_connected", "gelu"}, "Sub": {"sub"},
    "Div": {"div", "gelu"}, "Erf": {"gelu"}, "Gelu": {"gelu"}, "FastGelu": {"gelu"}, "BiasGelu": {"gelu"},
    "LeakyRelu": {"leaky_relu"}, "Elu": {"elu"}, "Softmax": {"softmax"}, "Concat": {"concat"},
    "Split": {"split"}, "Pad": {"pad"}, "Reshape": {"reshape", "channel_shuffle", "flatten"},
    "Transpose": {"transpose", "channel_shuffle"}, "Flatten": {"flatten"}, "Resize": {"resize"},
    "ReduceMean": {"reduce_mean", "global_avg_pool"}, "ReduceMax": {"reduce_max", "global_max_pool"},
    "ReduceSum": {"reduce_sum"}, "BatchNormalization": {"batch_norm"},
}
# The IR types behind a fused kernel's ``activation`` attribute (FusedConv, NCHWc Conv).
_ACTIVATION_IR_TYPES = {
    "Relu": {"relu"}, "Clip": {"relu6", "clip"}, "HardSigmoid": {"hard_sigmoid"}, "HardSwish": {"hard_swish"},
    "Sigmoid": {"sigmoid"}, "Tanh": {"tanh"}, "LeakyRelu": {"leaky_relu"},
}
# IR categories ORT folds into the kernel *before* them (epilogues: BN, activations, bias adds);
# other eliminated operators (pad, transpose, reshape) are folded into the kernel after them.
_EPILOGUE_CATEGORIES = {"elementwise"}
# Kernels that only move data between layouts or devices: never an IR operator's own work.
_PASS_THROUGH = {"ReorderInput", "ReorderOutput", "MemcpyToHost", "MemcpyFromHost"}


def _family_compatible(kernel_op_type: str, ir_type: str) -> bool:
    """Can a (heavy) kernel type implement an IR operator type? Unknown kernel types can."""
    family = _KERNEL_FAMILY.get(kernel_op_type)
    if family is None:
        return True
    return _IR_FAMILY.get(ir_ops.spec(ir_type).category) == family


def _may_implement(kernel_op_type: str, ir_type: str) -> bool:
    """Family check, refined for light kernels by the decomposition table."""
    types = _KERNEL_IR_TYPES.get(kernel_op_type)
    if types is not None:
        return ir_type in types
    return _family_compatible(kernel_op_type, ir_type)


def _is_epilogue(ir_type: str) -> bool:
    return ir_ops.spec(ir_type).category in _EPILOGUE_CATEGORIES


_NAME_SEPARATORS = " /_:#"


def _name_origin(node_name: str, ir_names: list[str]) -> str | None:
    """The IR operator a kernel node is named after.

    The exporter names nodes ``X`` or ``X::suffix``; ORT keeps those names or decorates them
    (``X_nchwc``, ``X_bn_nchwc``, ``fused X``, ``fused X::matmul/MatMulAddFusion``). The longest IR
    name found in the node name, bounded by the start/end or by a separator, wins.
    """
    best: str | None = None
    for x in ir_names:  # longest first
        if best is not None and len(x) < len(best):
            break
        start = node_name.find(x)
        while start >= 0:
            end = start + len(x)
            left_ok = start == 0 or node_name[start - 1] in _NAME_SEPARATORS
            right_ok = end == len(node_name) or node_name[end] in _NAME_SEPARATORS
            if left_ok and right_ok:
                best = x
                break
            start = node_name.find(x, start + 1)
        if best is not None:
            break
    return best


def _nearest(start: str, step: Callable[[str], list[str]], passable: Callable[[str], bool],
             wanted: Callable[[str], bool]) -> str | None:
    """Breadth-first from ``start`` along ``step`` through passable operators to the first wanted one."""
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in step(queue.popleft()):
            if nxt in seen or not passable(nxt):
                continue
            if wanted(nxt):
                return nxt
            seen.add(nxt)
            queue.append(nxt)
    return None


def _reach(starts: list[str], step: Callable[[str], list[str]]) -> set[str]:
    """Everything reachable from ``starts`` along ``step`` (the starts excluded unless revisited)."""
    seen: set[str] = set()
    queue = deque(starts)
    while queue:
        for nxt in step(queue.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


@dataclass
class KernelMap:
    """Which kernel nodes each IR operator owns, and which node covers each fused operator."""

    owner: dict[str, str | None]  # kernel node -> IR operator (None: inserted by the runtime)
    fused_into: dict[str, str]  # IR operator without a kernel of its own -> the kernel node covering it

    def nodes_of(self, op_name: str) -> list[str]:
        """Kernel nodes owned by an IR operator."""
        return [n for n, o in self.owner.items() if o == op_name]


def map_kernels(graph: Graph, nodes: list[KernelNode]) -> KernelMap:
    """Attribute every kernel node to the IR operator it implements, and every fused IR operator
    to the kernel that now covers it. ``nodes`` must be topologically ordered with unique names.

    Ownership of a kernel node (layout / copy nodes, ``_PASS_THROUGH``, are never owned):

    1. by name (``_name_origin``): ``X``, ``X::helper`` and ORT's decorations of them;
    2. by the tensors it writes: the IR operator that writes a tensor of the same name;
    3. if a heavy kernel (conv, gemm, pool) cannot implement the operator it is named after (an
       NCHWc ``Conv`` named after the ``relu`` it absorbed), the nearest operator of the right
       family reachable through operators without a kernel of their own takes it over: upstream
       only for epilogue types (activations, BN, element-wise), downstream then upstream for
       others (pad, transpose). If none fits, the named operator keeps it (NCHWc runs a lone BN
       as a 1x1 depthwise Conv, ``X_bn_nchwc``);
    4. by the tensors it reads, for a kernel ORT created without a name (an inlined HardSwish
       becomes an anonymous HardSigmoid + Mul): the IR operator of a matching type that consumes
       what it consumes;
    5. inside a region whose tensors were all renamed (NCHWc ``reorder_token_*``): the owner of
       a nearest upstream kernel if the kernel continues its decomposition (a Mul after that
       operator's HardSigmoid); else the first operator of a matching type, without a kernel,
       between the owners of its nearest owned upstream and downstream kernels, skipping the
       activation an upstream kernel absorbed (its ``activation`` attribute).

    A node left without an owner was inserted by the runtime (layout reorders, copies).

    An IR operator left without a kernel was fused; the node covering it is, in order:

    a. the node that writes the operator's output tensor (the end of a fused chain keeps its
       output name: FusedConv writes the ReLU's output), looking back through reorders;
    b. for epilogue types: the node covering the producers of its inputs, the latest of them
       when there are several (an ``add`` fused into the second conv of a residual block); for
       other types (pad, transpose, reshape), the node covering the consumers of its outputs,
       the earliest of them;
    c. the other direction of (b);
    d. the nearest IR operator, either direction, that has a kernel.
    """
    ir_names = sorted((o.name for o in graph.operators), key=len, reverse=True)
    op_by_name = {o.name: o for o in graph.operators}
    position = {o.name: i for i, o in enumerate(graph.operators)}
    producer = graph.producers()
    consumers = graph.consumers()
    by_name = {n.name: n for n in nodes}
    writer = {v: n for n in nodes for v in n.outputs if v}
    readers: dict[str, list[KernelNode]] = {}
    for n in nodes:
        for v in n.inputs:
            readers.setdefault(v, []).append(n)

    def ups(op_name: str) -> list[str]:
        return [producer[t].name for t in op_by_name[op_name].inputs if t in producer]

    def downs(op_name: str) -> list[str]:
        return [c.name for t in op_by_name[op_name].outputs for c in consumers.get(t, [])]

    def neighbours(op_name: str) -> list[str]:
        return ups(op_name) + downs(op_name)

    # 1 + 2: origins by name, then by written tensor.
    owner: dict[str, str | None] = {}
    for n in nodes:
        origin = None
        if n.op_type not in _PASS_THROUGH:
            origin = _name_origin(n.name, ir_names)
            if origin is None:
                origin = next((producer[v].name for v in n.outputs if v in producer), None)
        owner[n.name] = origin

    # 3: a heavy kernel of the wrong family hands itself over; topological order lets earlier
    # kernels claim their operators first.
    named = {o for o in owner.values() if o is not None}
    for n in nodes:
        origin = owner[n.name]
        if origin is None or _family_compatible(n.op_type, op_by_name[origin].type):
            continue
        def fits_kernel(op_name: str, kernel_type: str = n.op_type) -> bool:
            return _family_compatible(kernel_type, op_by_name[op_name].type)

        for step in (ups,) if _is_epilogue(op_by_name[origin].type) else (downs, ups):
            claimed = _nearest(origin, step, lambda o: o not in named, fits_kernel)
            if claimed is not None:
                owner[n.name] = claimed
                named.add(claimed)
                break

    # 4 + 5: anonymous kernels, in topological order so their upstream neighbours are settled.
    def nearest_owned(n: KernelNode, forward: bool) -> list[KernelNode]:
        """The nearest owned kernels upstream (or downstream) of ``n``, through unowned ones."""
        found: list[KernelNode] = []
        seen, queue = {n.name}, deque([n])
        while queue:
            cur = queue.popleft()
            nexts = ([r for v in cur.outputs for r in readers.get(v, [])] if forward
                     else [writer[v] for v in cur.inputs if v in writer])
            for k in nexts:
                if k.name in seen:
                    continue
                seen.add(k.name)
                if owner[k.name] is not None:
                    found.append(k)
                else:
                    queue.append(k)
        return found

    def absorbed_by(k: KernelNode) -> set[str]:
        """The IR activation a fused kernel took in (its ``activation`` attribute), if any: the
        first matching operator after its owner, past the BN / adds folded in before it."""
        wanted = _ACTIVATION_IR_TYPES.get(k.activation or "", set())
        start = owner[k.name]
        if not wanted or start is None:
            return set()
        hit = _nearest(start, downs, lambda o: o not in named or op_by_name[o].type in wanted,
                       lambda o: op_by_name[o].type in wanted)
        return {hit} if hit is not None else set()

    def kernel_types(op_name: str) -> set[str]:
        return {k.op_type for k in nodes if owner[k.name] == op_name}

    for n in nodes:
        if owner[n.name] is not None or n.op_type in _PASS_THROUGH:
            continue
        fits = [c.name for v in n.inputs for c in consumers.get(v, []) if _may_implement(n.op_type, c.type)]
        fits.sort(key=lambda o: (o in named, position[o]))
        if not fits:
            up_kernels = nearest_owned(n, forward=False)
            up = [u for k in up_kernels if (u := owner[k.name]) is not None]
            down = [d for k in nearest_owned(n, forward=True) if (d := owner[k.name]) is not None]
            # Continuing an upstream operator's decomposition (the Mul after its HardSigmoid)...
            fits = [u for u in dict.fromkeys(up) if _may_implement(n.op_type, op_by_name[u].type)
                    and n.op_type not in kernel_types(u)]
            if not fits:
                # ...or the first matching operator without a kernel between the upstream and
                # downstream owners, skipping the activation an upstream kernel absorbed.
                after = set(op_by_name)
                for u in up:
                    after &= _reach([u], downs)
                before = set(op_by_name)
                for d in down:
                    before &= _reach([d], ups) | {d}
                skip = set().union(*(absorbed_by(k) for k in up_kernels)) if up_kernels else set()
                fits = sorted((o for o in after & before if o not in named and o not in skip
                               and _may_implement(n.op_type, op_by_name[o].type)), key=lambda o: position[o])
        if fits:
            owner[n.name] = fits[0]
            named.add(fits[0])

    owned: dict[str, list[KernelNode]] = {}
    for n in nodes:
        if owner[n.name] is not None:
            owned.setdefault(owner[n.name], []).append(n)  # type: ignore[arg-type]

    # Ancestor sets over the kernel graph, to find which of several candidates runs last.
    ancestors: dict[str, int] = {}
    bit = {n.name: 1 << i for i, n in enumerate(nodes)}
    for n in nodes:  # already topological
        acc = 0
        for v in n.inputs:
            w = writer.get(v)
            if w is not None and w.name != n.name:
                acc |= ancestors.get(w.name, 0) | bit[w.name]
        ancestors[n.name] = acc

    def latest(cands: list[KernelNode]) -> KernelNode:
        for c in cands:
            if all(o.name == c.name or ancestors[c.name] & bit[o.name] for o in cands):
                return c
        return max(cands, key=lambda c: c.position)

    def through_pass(n: KernelNode) -> KernelNode:
        """Step back from a layout reorder to the kernel that fed it."""
        seen: set[str] = set()
        while n.op_type in _PASS_THROUGH and n.name not in seen:
            seen.add(n.name)
            prev = next((writer[v] for v in n.inputs if v in writer), None)
            if prev is None:
                break
            n = prev
        return n

    fused: dict[str, str] = {}
    resolving: set[str] = set()

    def cover(op_name: str, as_producer: bool) -> KernelNode | None:
        """The kernel node standing for an operator's work (its last kernel when seen as a
        producer, its first as a consumer)."""
        if op_name in owned:
            ks = owned[op_name]
            return max(ks, key=lambda k: k.position) if as_producer else min(ks, key=lambda k: k.position)
        name = resolve(op_name)
        return by_name[name] if name is not None else None

    def via_producers(o: Any) -> KernelNode | None:
        cands = [c for t in o.inputs if t in producer if (c := cover(producer[t].name, True)) is not None]
        return latest(cands) if cands else None

    def via_consumers(o: Any) -> KernelNode | None:
        cands = [c for t in o.outputs for u in consumers.get(t, []) if (c := cover(u.name, False)) is not None]
        return min(cands, key=lambda c: c.position) if cands else None

    def resolve(op_name: str) -> str | None:
        if op_name in fused:
            return fused[op_name]
        if op_name in resolving:
            return None
        resolving.add(op_name)
        try:
            o = op_by_name[op_name]
            found: KernelNode | None = None
            for t in o.outputs:  # (a)
                if t in writer:
                    found = through_pass(writer[t])
                    break
            if found is None:  # (b), (c)
                order = (via_producers, via_consumers) if _is_epilogue(o.type) else (via_consumers, via_producers)
                for rule in order:
                    found = rule(o)
                    if found is not None:
                        break
            if found is not None:
                fused[op_name] = found.name
            return found.name if found is not None else None
        finally:
            resolving.discard(op_name)

    for op in graph.operators:
        if op.name not in owned and resolve(op.name) is None and nodes:
            # (d) the nearest operator, either direction, that has a kernel.
            near = _nearest(op.name, neighbours, lambda _: True, lambda x: x in owned)
            fused[op.name] = owned[near][0].name if near is not None else through_pass(nodes[-1]).name
    return KernelMap(owner, fused)


def op_timings(graph: Graph, nodes: list[KernelNode], profiles: dict[str, NodeProfile], kmap: KernelMap,
               runs: int) -> list[OpTiming]:
    """One row per IR operator (timed, or fused into a kernel) then one per runtime-inserted kernel.

    An operator owning several kernels (``X`` and its ``X::`` helpers, an inlined function) gets
    their per-run sums; a kernel the profiler never saw counts 0 (it did no timed work).
    """
    by_name = {n.name: n for n in nodes}
    rows: list[OpTiming] = []
    for index, o in enumerate(graph.operators):
        mine = sorted((by_name[n] for n in kmap.nodes_of(o.name)), key=lambda k: k.position)
        shapes_in = [list(s) for s in graph.input_shapes(o)]
        shapes_out = [list(s) for s in graph.output_shapes(o)]
        if mine:
            per_run = [0.0] * runs
            for k in mine:
                for i, ms in enumerate(profiles[k.name].per_run_ms if k.name in profiles else []):
                    per_run[i] += ms
            kernel = "+".join(dict.fromkeys(k.kernel for k in mine))
            rows.append(OpTiming(index, o.name, o.type, kernel, shapes_in, shapes_out, dict(o.attrs),
                                 summarize(per_run)))
        else:
            into = kmap.fused_into[o.name]
            rows.append(OpTiming(index, o.name, o.type, by_name[into].kernel if into in by_name else "",
                                 shapes_in, shapes_out, dict(o.attrs), None, fused_into=into))
    seen = set(by_name)
    for n in nodes:
        if kmap.owner[n.name] is None and n.name in profiles:
            p = profiles[n.name]
            rows.append(OpTiming(None, n.name, "runtime", n.kernel, p.input_shapes, p.output_shapes, {},
                                 summarize(p.per_run_ms)))
    for name, p in profiles.items():  # a profiled kernel missing from the saved model: keep its time
        if name not in seen:
            rows.append(OpTiming(None, name, "runtime", p.op_type, p.input_shapes, p.output_shapes, {},
                                 summarize(p.per_run_ms)))
    return rows


# ---------------------------------------------------------------------------------------------
# Profiling


class _Progress:
    """Monotonic progress reporting that tolerates no callback."""

    def __init__(self, fn: ProgressFn | None) -> None:
        self.fn = fn
        self.last = 0.0

    def __call__(self, fraction: float, message: str) -> None:
        self.last = max(self.last, min(1.0, fraction))
        if self.fn is not None:
            self.fn(self.last, message)


def _timed_runs(session: ort.InferenceSession, feeds: dict[str, np.ndarray], graph: Graph, count: int,
                progress: _Progress, start: float, end: float, label: str) -> list[float]:
    """Run ``count`` times; return each run's wall time (ms), reporting progress about ten times."""
    every = max(1, count // 10)
    samples: list[float] = []
    for i in range(count):
        t0 = time.perf_counter_ns()
        _run(session, feeds, graph)
        samples.append((time.perf_counter_ns() - t0) / 1e6)
        if (i + 1) % every == 0 or i + 1 == count:
            progress(start + (end - start) * (i + 1) / count, f"{label} {i + 1}/{count}")
    return samples


def profile(device: DeviceInfo, graph: Graph, settings: ProfileSettings,
            progress: ProgressFn | None = None) -> ProfileResult:
    """Measure a graph on the host CPU: cold start, end-to-end samples and per-operator times."""
    from devicelab.graph.onnx_export import graph_to_onnx_bytes

    topo = cpu_topology.read_topology()
    cores = _check_request(device, settings, topo.online)
    report = _Progress(progress)
    report(0.0, "exporting graph to ONNX")
    model = graph_to_onnx_bytes(graph, seed=WEIGHT_SEED)
    feeds = make_feeds(graph)
    env: dict[str, Any] = {
        "runtime": runtime_version(),
        "runtime_version": ort.__version__,
        "providers": ["CPUExecutionProvider"],
        "threads": settings.threads,
        "inter_op_threads": 1,
        "execution_mode": "sequential",
        "graph_optimization_level": OPTIMIZATION_LEVEL,
        "cores": list(cores),
        "cpu_model": topo.model,
        "input_seed": INPUT_SEED,
        "weight_seed": WEIGHT_SEED,
        "op_timing_source": "onnxruntime profiler on the saved optimized graph",
    }

    # Phase 1: cold start and end-to-end timing, as a user would run the model, profiler off.
    with pinned(cores) as applied:
        env["affinity"] = applied
        report(0.02, "creating session")
        before = _thread_ids()
        t0 = time.perf_counter_ns()
        session = _new_session(model, _session_options(settings), graph)
        load_ms = (time.perf_counter_ns() - t0) / 1e6
        # The intra-op pool's threads were created just now and inherited the pinned affinity.
        env["runtime_threads_affinity"] = sorted(set(thread_affinities(sorted(_thread_ids() - before)).values()))
        env["providers"] = session.get_providers()
        _check_inputs(session, graph)
        report(0.06, "first run")
        t0 = time.perf_counter_ns()
        _run(session, feeds, graph)
        first_ms = (time.perf_counter_ns() - t0) / 1e6
        _timed_runs(session, feeds, graph, settings.warmup_runs, report, 0.08, 0.15, "warm-up")
        samples = _timed_runs(session, feeds, graph, settings.runs, report, 0.15, 0.55, "timed run")
        del session

    # Phase 2: per-operator times. ORT saves the graph it optimized; every node gets a unique name
    # and the saved graph is profiled as is (optimizations off: it is already optimized, ORT's
    # documented offline mode), so each profiled kernel is a node of a graph we can read.
    with tempfile.TemporaryDirectory(prefix="devicelab-ort-") as tmp, pinned(cores):
        workdir = Path(tmp)
        report(0.56, "saving the optimized graph")
        saved = workdir / "optimized.onnx"
        _new_session(model, _session_options(settings, save_optimized=saved), graph)  # saves, then dropped
        optimized = name_nodes_uniquely(onnx.load(str(saved)))
        nodes = kernel_nodes(optimized)
        report(0.58, "creating profiled session")
        session = _new_session(optimized.SerializeToString(),
                               _session_options(settings, optimize=False, profile_prefix=workdir / "ort_profile"),
                               graph)
        try:
            _timed_runs(session, feeds, graph, settings.runs + 1, report, 0.6, 0.95, "profiled run")
        finally:
            profile_path = Path(session.end_profiling())
            del session
        report(0.96, "reading the profile")
        profiles, run_ms = parse_profile(profile_path, skip_runs=1)

    kmap = map_kernels(graph, nodes)
    rows = op_timings(graph, nodes, profiles, kmap, len(run_ms))
    env["kernel_nodes"] = len(nodes)
    env["kernel_owner"] = {n.name: kmap.owner[n.name] for n in nodes}  # kernel node -> IR operator (None: runtime)
    env["profiled_e2e_mean_ms"] = float(np.mean(run_ms))
    report(1.0, "done")
    return ProfileResult(
        device=device,
        settings=settings,
        e2e=summarize(samples),
        samples_ms=samples,
        cold=ColdStart(load_ms=load_ms, first_run_ms=first_ms),
        ops=rows,
        environment=env,
    )


__all__ = ["KIND", "discover", "profile", "map_kernels", "parse_profile", "pinned", "thread_affinities",
           "runtime_version", "host_identity", "make_feeds", "KernelNode", "KernelMap", "kernel_nodes",
           "name_nodes_uniquely"]
