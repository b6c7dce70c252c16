"""How the emulated TensorFlow Lite runtime runs a model: delegation, kernels, and their times.

Delegation follows ``Subgraph::ReplaceNodeSubsetsWithDelegateKernels``: a delegate claims runs of
consecutive supported nodes (XNNPACK and NNAPI every run, the GPU delegate the largest one by
default), each run becomes one new node appended after the model's nodes, named by its output
tensors (``[a, b]:31``) and typed by the delegate kernel (``TfLiteGpuDelegateV2``). XNNPACK
reports the operators it runs inside its nodes to the profiler (``Delegate/Add (ND, F32):9``)
instead of its node (LiteRT; TensorFlow 2.8 showed the ``TfLiteXNNPackDelegate`` node).

Times are synthetic but consistent: an operator's multiply-adds and bytes over the speed of the
cores its threads run on (frequency now × work per cycle of the core kind), or of the GPU/NPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tests.adb_double.tflite_model import ModelOp, TfliteModel

XNNPACK, GPU, NNAPI = "XNNPACK", "GPU", "NNAPI"
KERNEL_NAMES = {XNNPACK: "TfLiteXNNPackDelegate", GPU: "TfLiteGpuDelegateV2", NNAPI: "TfLiteNnapiDelegate"}

# -- what each delegate supports -------------------------------------------------------------------

_BINARY = {
    "ADD": "Add",
    "SUB": "Subtract",
    "MUL": "Multiply",
    "DIV": "Divide",
    "MAXIMUM": "Maximum",
    "MINIMUM": "Minimum",
}
_UNARY = {
    "RELU": "Clamp",
    "RELU6": "Clamp",
    "RELU_N1_TO_1": "Clamp",
    "HARD_SWISH": "HardSwish",
    "LOGISTIC": "Sigmoid",
    "TANH": "Tanh",
    "LEAKY_RELU": "Leaky ReLU",
    "PRELU": "PReLU",
    "ELU": "ELU",
    "ABS": "Abs",
    "NEG": "Negate",
    "SQUARE": "Square",
    "SQRT": "Square Root",
    "RSQRT": "Reciprocal Square Root",
    "FLOOR": "Floor",
    "CEIL": "Ceiling",
    "EXP": "Exp",
    "LOG": "Log",
    "GELU": "GELU",
}
_COPIES = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS"}


def xnnpack_operators(op: ModelOp) -> list[str] | None:
    """The XNNPACK operators (profiling names) one TFLite operator becomes; None: not delegated."""
    if op.custom:
        return None
    dt = op.dtype
    conv = {"F32": "F32", "F16": "F16", "QS8": "QC8", "QU8": "QU8"}[dt]
    ew = {"F32": "F32", "F16": "F16", "QS8": "QS8", "QU8": "QU8"}[dt]
    bits = "X8" if dt in ("QS8", "QU8") else ("X16" if dt == "F16" else "X32")
    name = op.name
    if name == "CONV_2D":
        gemm = op.kernel_hw == (1, 1) and op.stride == 1
        return [f"Convolution (NHWC, {conv}) {'GEMM' if gemm else 'IGEMM'}"]
    if name == "DEPTHWISE_CONV_2D":
        return [f"Convolution (NHWC, {conv}) DWConv"]
    if name == "FULLY_CONNECTED":
        return [f"Fully Connected (NC, {ew}) GEMM"]
    if name == "TRANSPOSE_CONV":
        return [f"Deconvolution (NHWC, {ew})"]
    if name == "BATCH_MATMUL":
        return [f"Batch Matrix Multiply (NC, {ew})"]
    if name in _BINARY:
        return [f"{_BINARY[name]} (ND, {ew})"]
    if name == "SQUARED_DIFFERENCE":
        return [f"Squared Difference (NC, {ew})"]
    if name in _UNARY:
        return [f"{_UNARY[name]} (NC, {ew})"]
    if name == "AVERAGE_POOL_2D":
        return [f"Average Pooling (NHWC, {ew})"]
    if name == "MAX_POOL_2D":
        return [f"Max Pooling (NHWC, {'S8' if dt == 'QS8' else ew})"]
    if name == "MEAN":
        return [f"Mean (ND, {ew})"]
    if name == "SOFTMAX":
        return [f"Softmax (NC, {ew})"]
    if name in _COPIES:
        return [f"Copy (NC, {bits})"]
    if name == "CONCATENATION":
        return [f"Copy (NC, {bits})"] * max(1, len([t for t in op.inputs if t >= 0]))
    if name in ("PAD", "PADV2"):
        return [f"Constant Pad (ND, {bits})"]
    if name == "TRANSPOSE":
        return [f"Transpose (ND, {bits})"]
    if name in ("SLICE", "STRIDED_SLICE"):
        return [f"Slice (ND, {bits})"]
    if name in ("SPLIT", "SPLIT_V"):
        return [f"Slice (ND, {bits})"] * max(1, len(op.outputs))
    if name == "RESIZE_BILINEAR":
        return [f"Resize Bilinear (NHWC, {ew})"]
    if name == "DEPTH_TO_SPACE":
        return [f"Depth To Space (NHWC, {bits})"]
    if name == "SPACE_TO_DEPTH":
        return [f"Space To Depth (NHWC, {bits})"]
    return None


# The builtins the GPU delegate's model builder has parsers for (model_builder.cc).
GPU_SUPPORTED = frozenset(
    "ABS ADD ADD_N AVERAGE_POOL_2D BATCH_MATMUL CAST CONCATENATION CONV_2D COS CUMSUM DENSIFY DEPTH_TO_SPACE "
    "DEPTHWISE_CONV_2D DEQUANTIZE DIV ELU EQUAL EXP FLOOR FLOOR_DIV FLOOR_MOD FULLY_CONNECTED GATHER GELU GREATER "
    "GREATER_EQUAL HARD_SWISH LEAKY_RELU LESS LESS_EQUAL LOG LOGICAL_AND LOGISTIC LSTM MAX_POOL_2D MAXIMUM MEAN "
    "MINIMUM MIRROR_PAD MUL NEG NOT_EQUAL ONE_HOT PACK PAD PADV2 POW PRELU QUANTIZE REDUCE_MAX REDUCE_MIN "
    "REDUCE_PROD RELU RELU_0_TO_1 RELU6 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR RSQRT SELECT "
    "SELECT_V2 SIGN SIN SLICE SOFTMAX SPACE_TO_DEPTH SPLIT SPLIT_V SQRT SQUARE SQUARED_DIFFERENCE STRIDED_SLICE SUB "
    "SUM TANH TILE TRANSPOSE TRANSPOSE_CONV UNPACK".split()
)
GPU_CUSTOM_SUPPORTED = frozenset(
    {"Convolution2DTransposeBias", "MaxPoolingWithArgmax2D", "MaxUnpooling2D", "Resampler"}
)
NNAPI_SUPPORTED = GPU_SUPPORTED - {"CUMSUM", "DENSIFY", "ONE_HOT", "SIGN", "GELU", "RELU_0_TO_1", "LSTM"}


def gpu_refusal(op: ModelOp) -> str | None:
    """Why the GPU delegate leaves an operator on the CPU (its log line), or None."""
    if op.custom:
        return None if op.name in GPU_CUSTOM_SUPPORTED else f"CUSTOM {op.name}: Operation is not supported."
    return None if op.name in GPU_SUPPORTED else f"{op.name}: Operation is not supported."


def supports(delegate: str, op: ModelOp) -> bool:
    """Whether a delegate takes this operator."""
    if delegate == XNNPACK:
        return xnnpack_operators(op) is not None and op.name not in ("QUANTIZE", "DEQUANTIZE")
    if delegate == GPU:
        return gpu_refusal(op) is None
    return not op.custom and op.name in NNAPI_SUPPORTED


# -- the execution plan ----------------------------------------------------------------------------


@dataclass
class Node:
    """A node of the execution plan: one builtin operator, or a delegate kernel over a partition."""

    index: int
    ops: list[ModelOp]
    delegate: str | None
    outputs: list[str]

    @property
    def label(self) -> str:
        """The profiler's name for the node: its output tensors and its index."""
        return f"[{', '.join(self.outputs)}]:{self.index}"


@dataclass
class Application:
    """What applying one delegate did."""

    delegate: str
    kernels: int  # delegate nodes created
    replaced: int  # operators claimed
    plan_size: int  # nodes in the plan before
    subsets: int  # node subsets the partitioning yielded (claimed and not)
    refusals: list[str] = field(default_factory=list)


class Plan:
    """The execution plan of subgraph 0, rewritten as delegates are applied."""

    def __init__(self, model: TfliteModel) -> None:
        self.model = model
        self.nodes = [Node(op.index, [op], None, op.output_names) for op in model.ops]
        self.next_index = len(model.ops)

    def apply(self, delegate: str, max_partitions: int = 0) -> Application:
        """Let a delegate claim what it supports; ``max_partitions`` <= 0 means no limit."""
        runs: list[list[int]] = []  # runs of consecutive supported builtin nodes (plan positions)
        refusals: set[str] = set()
        current: list[int] = []
        for pos, node in enumerate(self.nodes):
            ok = node.delegate is None and supports(delegate, node.ops[0])
            if not ok and delegate == GPU:
                # The GPU delegate names what it refuses, builtins and other delegates' kernels.
                if node.delegate is not None:
                    refusals.add(f"DELEGATE {KERNEL_NAMES[node.delegate]}: Operation is not supported.")
                else:
                    refusals.add(gpu_refusal(node.ops[0]) or f"{node.ops[0].name}: Operation is not supported.")
            if ok:
                current.append(pos)
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
        chosen = runs
        if max_partitions > 0 and len(runs) > max_partitions:
            ranked = sorted(range(len(runs)), key=lambda k: (-len(runs[k]), k))[:max_partitions]
            chosen = [runs[k] for k in sorted(ranked)]
        claimed = {pos for run in chosen for pos in run}
        subsets = sum(1 for pos in range(len(self.nodes)) if pos == 0 or (pos in claimed) != (pos - 1 in claimed))
        app = Application(
            delegate,
            len(chosen),
            len(claimed),
            len(self.nodes),
            subsets if self.nodes else 0,
            sorted(refusals),
        )
        if not chosen:
            return app
        starts = {run[0]: run for run in chosen}
        new_nodes: list[Node] = []
        pos = 0
        while pos < len(self.nodes):
            if pos in starts:
                run = starts[pos]
                ops = [op for p in run for op in self.nodes[p].ops]
                new_nodes.append(Node(self.next_index, ops, delegate, self._outputs(ops)))
                self.next_index += 1
                pos = run[-1] + 1
            else:
                new_nodes.append(self.nodes[pos])
                pos += 1
        self.nodes = new_nodes
        return app

    def _outputs(self, ops: list[ModelOp]) -> list[str]:
        inside = {op.index for op in ops}
        read_outside = {t for op in self.model.ops if op.index not in inside for t in op.inputs}
        graph_outputs = set(self.model.outputs)
        names = []
        for op in ops:
            for t, name in zip(op.outputs, op.output_names, strict=True):
                if t in read_outside or t in graph_outputs:
                    names.append(name)
        return names

    @property
    def fully_delegated(self) -> bool:
        """One node left, and it is a delegate kernel."""
        return len(self.nodes) == 1 and self.nodes[0].delegate is not None

    def delegated_ops(self, delegate: str) -> int:
        """How many model operators this delegate runs."""
        return sum(len(n.ops) for n in self.nodes if n.delegate == delegate)


# -- kernels and their times -----------------------------------------------------------------------


@dataclass
class Kernel:
    """What the profiler sees as one event of a run."""

    type: str
    name: str
    executor: str  # "builtin", "xnnpack", "gpu" or "nnapi"
    ops: list[ModelOp]
    share: float = 1.0  # the part of its operator's time (one TFLite op -> several XNNPACK ops)


def kernels(plan: Plan, xnnpack_per_op: bool, xnnpack_fp16: bool = False) -> list[Kernel]:
    """The events one run produces, in execution order (``xnnpack_fp16``: XNNPACK runs float
    operators in half precision, as with ``--xnnpack_force_fp16=true``)."""
    out: list[Kernel] = []
    for node in plan.nodes:
        if node.delegate == XNNPACK and xnnpack_fp16:
            node = Node(
                node.index,
                [replace(op, dtype="F16") if op.dtype == "F32" else op for op in node.ops],
                XNNPACK,
                node.outputs,
            )
        if node.delegate is None:
            op = node.ops[0]
            out.append(Kernel(op.name, node.label, "builtin", [op]))
        elif node.delegate == XNNPACK and xnnpack_per_op:
            k = 0
            for op in node.ops:
                names = xnnpack_operators(op) or []
                for name in names:
                    out.append(Kernel(name, f"Delegate/{name}:{k}", "xnnpack", [op], 1.0 / len(names)))
                    k += 1
        else:
            executor = {XNNPACK: "xnnpack", GPU: "gpu", NNAPI: "nnapi"}[node.delegate]
            out.append(Kernel(KERNEL_NAMES[node.delegate], node.label, executor, node.ops))
    return out


# Multiply-adds per cycle per unit of core speed (GHz × work per cycle of the core kind).
_HEAVY = {"CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL", "TRANSPOSE_CONV"}
_CPU_RATE = {
    "xnnpack": {"F32": 7.0, "F16": 12.0, "QS8": 20.0, "QU8": 16.0},
    "builtin": {"F32": 4.0, "F16": 4.0, "QS8": 10.0, "QU8": 9.0},
}
_LIGHT_RATE = {"xnnpack": 2.5, "builtin": 1.2}  # elements per cycle of cheap operators
_CPU_OVERHEAD_US = {"xnnpack": 0.8, "builtin": 1.5}
CORE_BANDWIDTH = 6e9  # bytes/s one core streams
MAX_BANDWIDTH = 18e9
GPU_RATE = {True: 120e9, False: 60e9}  # MAC/s with and without fp16 ("precision loss allowed")
GPU_LIGHT = 12e9
GPU_PARTITION_US, GPU_OP_US = 250.0, 12.0
NPU_RATE = {"QS8": 600e9, "QU8": 600e9}
NPU_FLOAT_RATE = {True: 150e9, False: 70e9}
NPU_PARTITION_US, NPU_OP_US = 400.0, 2.0


@dataclass
class Hardware:
    """The speeds a run sees now: the cores its threads run on, and the accelerators' settings."""

    core_speeds: list[float]  # GHz × work per cycle of each core the threads occupy, fastest first
    threads: int
    gpu_fp16: bool = True
    npu_fp16: bool = False


def _cpu_us(op: ModelOp, executor: str, hw: Hardware) -> float:
    used = hw.core_speeds[: max(1, hw.threads)]
    capacity = sum(used) * 1e9 / (1.0 + 0.08 * (len(used) - 1))
    if hw.threads > len(hw.core_speeds):
        capacity /= 1.0 + 0.1 * (hw.threads - len(hw.core_speeds))
    if op.name in _HEAVY or op.name == "DEPTHWISE_CONV_2D":
        rate = _CPU_RATE[executor][op.dtype] * (0.3 if op.name == "DEPTHWISE_CONV_2D" else 1.0)
    else:
        rate = _LIGHT_RATE[executor]
    compute = op.macs / (rate * capacity)
    memory = op.bytes / min(CORE_BANDWIDTH * len(used), MAX_BANDWIDTH)
    overhead = _CPU_OVERHEAD_US[executor] + (2.0 if hw.threads > 1 else 0.0)
    return overhead + 1e6 * max(compute, memory)


def _gpu_us(op: ModelOp, hw: Hardware) -> float:
    rate = GPU_RATE[hw.gpu_fp16] if op.name in _HEAVY or op.name == "DEPTHWISE_CONV_2D" else GPU_LIGHT
    return GPU_OP_US + 1e6 * max(op.macs / rate, op.bytes / 25e9)


def _npu_us(op: ModelOp, hw: Hardware) -> float:
    rate = NPU_RATE.get(op.dtype, NPU_FLOAT_RATE[hw.npu_fp16])
    return NPU_OP_US + 1e6 * max(op.macs / rate, op.bytes / 20e9)


def kernel_us(kernel: Kernel, hw: Hardware) -> float:
    """A kernel's time for one run on this hardware, before noise (µs)."""
    if kernel.executor in ("builtin", "xnnpack"):
        return sum(_cpu_us(op, kernel.executor, hw) for op in kernel.ops) * kernel.share
    if kernel.executor == "gpu":
        return GPU_PARTITION_US + sum(_gpu_us(op, hw) for op in kernel.ops)
    return NPU_PARTITION_US + sum(_npu_us(op, hw) for op in kernel.ops)


KernelTimer = Callable[[Kernel, Hardware], float]
