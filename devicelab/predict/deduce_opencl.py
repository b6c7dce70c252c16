"""Kernel deduction for the lab's OpenCL backend: a thin adapter over its own plan.

The OpenCL backend decides its kernels itself (``devicelab.backends.opencl.plan``: its fusion
rule, its kernel choice), so deduction is that plan, read without a device. A kernel here is one
*anchor* with everything fused into it; the several launches of a concat or split (one
``copy_slice`` per piece) are one kernel, as the backend's ``OpTiming`` rows time them (one row
per anchor, its launches summed). Types are the backend's kernel names (``conv2d``,
``conv2d_1x1``, ``depthwise_conv2d``, ...), with ``copy_slice`` split by what it implements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from devicelab.graph.ir import Graph
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import op_kind, op_raw_features
from devicelab.predict.kernels import Kernel
from devicelab.predict.records import ProfileRecord, stat
from devicelab.predict.samples import Sample

KIND = "opencl"
# The backend's kernel names as kernel types: the kind (Table 3 group) they belong to.
_KIND_OF_KERNEL = {
    "conv2d": "conv2d",
    "conv2d_1x1": "conv2d_1x1",
    "depthwise_conv2d": "depthwise_conv2d",
    "fully_connected": "fully_connected",
    "matmul": "matmul",
    "pool2d": "pooling",
    "global_pool": "mean",
    "reduce": "mean",
    "pad": "pad",
}


def kernel_type(backend_kernel: str, op_type: str, attrs: dict[str, Any], input_shapes: list[Any]) -> str:
    """The predictor's kernel type for one of the backend's kernels anchored at an operator."""
    kind = _KIND_OF_KERNEL.get(backend_kernel)
    if kind is None:
        # copy_slice (concat, split, a materialized view), binary, activation, softmax, ...:
        # the operator says what the kernel does.
        kind = op_kind(op_type, attrs, input_shapes)
    if kind == "conv2d" and attrs.get("groups", 1) > 1:
        kind = "grouped_conv2d"
    return kind if kind == backend_kernel else f"{kind}/{backend_kernel}"


class OpenclDeducer:
    """The OpenCL backend's plan as kernels."""

    kind = KIND

    def kernels(self, graph: Graph) -> list[Kernel]:
        """The kernels the backend launches for ``graph``, one per anchor."""
        return [k for k, _ in self.sited_kernels(graph)]

    def sited_kernels(self, graph: Graph) -> list[tuple[Kernel, int]]:
        """``kernels``, each with its anchor operator (which places it in launch order)."""
        from devicelab.backends.opencl.plan import PlanError, kernels_for_graph

        try:
            planned = kernels_for_graph(graph)
        except PlanError as e:
            raise PredictorError(f"the opencl backend cannot run graph {graph.name!r}: {e}") from None
        index = {o.name: i for i, o in enumerate(graph.operators)}
        t = graph.tensors
        out: list[tuple[Kernel, int]] = []
        seen: set[str] = set()
        for k in planned:
            if k.anchor in seen:
                continue  # the other launches of a concat / split: one kernel per anchor
            seen.add(k.anchor)
            a = index[k.anchor]
            op = graph.operators[a]
            ktype = kernel_type(k.kernel, op.type, op.attrs, [t[n].shape for n in op.inputs])
            out.append((Kernel(ktype, tuple(index[n] for n in k.ops), op_raw_features(graph, op), k.name), a))
        return out

    def measured(self, record: ProfileRecord, statistic: str = "median") -> list[Kernel]:
        """The kernels a record measured (rows with timings are anchors), with latencies (ms)."""
        g = record.graph
        index = {o.name: i for i, o in enumerate(g.operators)}
        members: dict[int, list[int]] = {r.index: [r.index] for r in record.ops if r.index is not None and r.stats}
        for r in record.ops:
            # A fused operator names the kernel that covers it: its anchor, "#i" for one launch of several.
            if r.index is not None and r.stats is None and r.fused_into:
                a = index.get(r.fused_into.split("#")[0])
                if a in members:
                    members[a].append(r.index)
        t = g.tensors
        out = []
        for r in record.ops:
            if r.index is None or r.stats is None:
                continue
            op = g.operators[r.index]
            ktype = kernel_type(r.kernel, op.type, op.attrs, [t[n].shape for n in op.inputs])
            out.append(
                Kernel(
                    ktype,
                    tuple(members.get(r.index, [r.index])),
                    op_raw_features(g, op),
                    r.name,
                    stat(r.stats, statistic),
                )
            )
        return out

    def samples(self, records: Sequence[ProfileRecord], statistic: str = "median") -> list[Sample]:
        """Training / test samples from OpenCL records."""
        return [
            Sample(r.graph.name, tuple(self.measured(r, statistic)), r.e2e_ms(statistic), tuple(self.kernels(r.graph)))
            for r in records
        ]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the rule lives in the backend's code, versioned with it)."""
        return {"kind": KIND}


__all__ = ["OpenclDeducer", "kernel_type"]
