"""The operator kinds of ParallelFusion's sweeps (seed paper 000, section 5, figures 8 and 10).

The paper's footnote 4 names six kinds, and the issue adds two:

* ``C``: a convolution with a window larger than 1x1 (any stride, any groups short of depthwise);
* ``C_1x1``: a 1x1 convolution (pointwise), other than a squeeze;
* ``S``: a squeeze, the first 1x1 convolution of SqueezeNet's fire module: **a 1x1 convolution
  that reduces the channels and whose output (after its own activation or batch norm) feeds two
  or more convolutions**, the expands. Inception-V3's 1x1 convolution before the 1x3/3x1 pair of
  its last blocks has the same shape and is a squeeze too;
* ``P``: pooling, windowed or global (max or average);
* ``DWC``: a depthwise convolution with a stride other than 1 (the footnote's ``DWC_s1`` is the
  stride-1 one, so plain ``DWC`` stands for the rest);
* ``DWC_s1``: a depthwise convolution with stride 1;
* ``FC``: a fully connected layer or a matrix product;
* ``EW``: element-wise work: add, sub, mul, div, a standalone activation or batch norm.

A kernel of the OpenCL plan has the kind of its anchor (the operator that owns it; a bias, a
folded batch norm or an activation absorbed into a convolution does not change its kind), and
its MFLOPs are the anchor's (``devicelab.graph.ops``: 2 x MACs for convolutions and FC, one per
window element for pooling, one per element for element-wise work). Kernels of any other
operator (concat copies, resize, pad, softmax, transposes...) have no kind and stay out of the
sweeps. Needs no OpenCL driver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from devicelab.backends.opencl.plan import PlannedKernel
from devicelab.fusion.spec import KINDS, check_kinds, kind_order
from devicelab.graph.ir import Graph, Operator

KIND_MEANINGS: dict[str, str] = {
    "C": "convolution with a window larger than 1x1",
    "C_1x1": "1x1 convolution (pointwise), not a squeeze",
    "S": "squeeze: a channel-reducing 1x1 convolution feeding two or more convolutions (SqueezeNet's fire)",
    "P": "pooling (windowed or global, max or average)",
    "DWC": "depthwise convolution with a stride other than 1",
    "DWC_s1": "depthwise convolution with stride 1",
    "FC": "fully connected layer or matrix product",
    "EW": "element-wise: add, sub, mul, div, a standalone activation or batch norm",
}
POOLS = frozenset({"max_pool2d", "avg_pool2d", "global_avg_pool", "global_max_pool"})
DENSE = frozenset({"fully_connected", "matmul"})
CONVOLUTIONS = frozenset({"conv2d", "depthwise_conv2d"})
# what "elementwise" in the vocabulary holds but does not touch each element once on its own
NOT_ELEMENTWISE = frozenset({"softmax", "resize"})
# operators a convolution kernel absorbs before its output is read (the plan's epilogue)
EPILOGUE_CATEGORIES = frozenset({"elementwise"})


def is_depthwise(graph: Graph, op: Operator) -> bool:
    """A depthwise convolution: its own type, or a conv2d with one group per input channel (the
    plan runs both on the depthwise kernels)."""
    if op.type == "depthwise_conv2d":
        return True
    if op.type != "conv2d":
        return False
    cin = graph.tensors[op.inputs[0]].shape[1]
    groups = op.attrs["groups"]
    return bool(groups > 1 and groups == cin and op.attrs["out_channels"] % cin == 0)


def _read_by(graph: Graph, op: Operator, consumers: Mapping[str, list[Operator]]) -> list[Operator]:
    """The operators reading ``op``'s value after its epilogue: a chain of sole-consumer
    single-input element-wise operators (its activation, a batch norm) is looked through."""
    tensor = op.outputs[0]
    for _ in range(4):  # an epilogue is at most a batch norm and an activation
        readers = consumers.get(tensor, [])
        if len(readers) != 1 or len(readers[0].inputs) != 1 or readers[0].category not in EPILOGUE_CATEGORIES:
            return readers
        if readers[0].type in NOT_ELEMENTWISE:
            return readers
        tensor = readers[0].outputs[0]
    return consumers.get(tensor, [])


def is_squeeze(graph: Graph, op: Operator, consumers: Mapping[str, list[Operator]] | None = None) -> bool:
    """A fire module's squeeze: a 1x1 convolution that reduces the channels and whose output
    feeds two or more convolutions."""
    if op.type != "conv2d" or op.attrs["kernel"] != [1, 1] or is_depthwise(graph, op):
        return False
    cin = graph.tensors[op.inputs[0]].shape[1]
    if op.attrs["out_channels"] >= cin:
        return False
    readers = _read_by(graph, op, consumers if consumers is not None else graph.consumers())
    return sum(r.type in CONVOLUTIONS for r in readers) >= 2


def operator_kind(graph: Graph, op: Operator, consumers: Mapping[str, list[Operator]] | None = None) -> str | None:
    """The kind of one operator of a canonical graph (``KINDS``), or None for the others."""
    if op.type in CONVOLUTIONS:
        if is_depthwise(graph, op):
            return "DWC_s1" if op.attrs["stride"] == [1, 1] else "DWC"
        if op.attrs["kernel"] != [1, 1]:
            return "C"
        return "S" if is_squeeze(graph, op, consumers) else "C_1x1"
    if op.type in POOLS:
        return "P"
    if op.type in DENSE:
        return "FC"
    if op.category == "elementwise" and op.type not in NOT_ELEMENTWISE:
        return "EW"
    return None


def operator_mflops(graph: Graph, op: Operator) -> float:
    """An operator's FLOPs in millions (``devicelab.graph.ops``' count)."""
    return graph.op_cost(op).flops / 1e6


@dataclass(frozen=True)
class KindedKernel:
    """One planned kernel of a graph with its kind and its anchor operator's MFLOPs."""

    name: str  # the planned kernel's name (unique in its plan)
    kernel: str  # the kernel function
    anchor: str  # the operator that owns it
    op_type: str  # the anchor's type
    kind: str | None
    mflops: float

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "name": self.name,
            "kernel": self.kernel,
            "anchor": self.anchor,
            "op_type": self.op_type,
            "kind": self.kind,
            "mflops": self.mflops,
        }


def classify_kernels(graph: Graph, planned: Sequence[PlannedKernel]) -> list[KindedKernel]:
    """Every planned kernel of a canonical graph with its kind (None: not a sweep kind) and MFLOPs."""
    consumers = graph.consumers()
    out = []
    for pk in planned:
        op = graph.op(pk.anchor)
        out.append(
            KindedKernel(
                name=pk.name,
                kernel=pk.kernel,
                anchor=op.name,
                op_type=op.type,
                kind=operator_kind(graph, op, consumers),
                mflops=operator_mflops(graph, op),
            )
        )
    return out


__all__ = [
    "KINDS",
    "KIND_MEANINGS",
    "KindedKernel",
    "check_kinds",
    "classify_kernels",
    "is_depthwise",
    "is_squeeze",
    "kind_order",
    "operator_kind",
    "operator_mflops",
]
