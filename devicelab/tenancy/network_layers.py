"""Which steps of a network space-time runs as batched super-kernels, and their launches.

The tenants run the same architecture with their own weights (section 2's simplified service),
so the backend plans the same kernels for every tenant: step k of one tenant has the shape of
step k of every other. A step is **batched** across the R tenants when it is a GEMM:

* a convolution with one group on a batch of one image (``conv2d``, ``conv2d_flat`` and
  ``conv2d_1x1`` kernels), with its batch norm folded and a relu or relu6 after it (or none):
  C (cout x oh*ow) = W (cout x cin*kh*kw) x col (cin*kh*kw x oh*ow) + bias. A 1x1 convolution
  with stride 1 and no padding reads its input as ``col`` directly; any other first runs the
  batched ``im2col`` kernel into a per-tenant scratch region (two launches for the step);
* a fully connected layer on one row, with the same epilogue: C (nout x 1) = W (nout x k) x x.

The batched GEMM is the SGEMM of ``gemm.py``; its weights are the tenants' folded weights in
GEMM layout, in one buffer per layer, so a batched layer's numbers differ from the backend
kernel's by rounding only (checked within the network tolerance).

Every other step (depthwise convolutions, pooling, element-wise adds, global pooling, grouped
convolutions, activations that are not relu/relu6, copies) is batched too: the backend's own
kernel for the step with a tenant axis (``network_axis``, ``tenant_axis``), one launch over every
tenant that computes what the R launches of the kernel would, bit for bit. A step runs per tenant
(R launches) only where its kernel cannot be given a tenant axis; the plan says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from devicelab.backends.opencl.runner import GraphRunner
from devicelab.backends.opencl.weights import fold_batch_norm
from devicelab.graph.ir import Operator
from devicelab.tenancy.gemm import FLOAT_BYTES, GemmShape
from devicelab.tenancy.network_axis import AxisLayer, axis_layer

CONV_KERNELS = ("conv2d", "conv2d_flat", "conv2d_1x1")
EPILOGUES = ("relu", "relu6")


@dataclass(frozen=True)
class Im2col:
    """The geometry of a convolution's im2col."""

    cin: int
    ih: int
    iw: int
    oh: int
    ow: int
    kh: int
    kw: int
    sh: int
    sw: int
    pt: int
    pl: int
    dh: int
    dw: int

    @property
    def rows(self) -> int:
        return self.cin * self.kh * self.kw

    @property
    def elems(self) -> int:
        return self.rows * self.oh * self.ow


@dataclass(frozen=True)
class BatchedLayer:
    """One step of the plan run as a batched GEMM across tenants."""

    index: int  # the step (launch) index in every tenant's plan
    kind: str  # "conv" or "fully_connected"
    anchor: str  # the operator whose weights it uses
    batch_norm: str | None
    epsilon: float
    activation: str  # none, relu, relu6
    shape: GemmShape
    input_tensor: str
    output_tensor: str
    im2col: Im2col | None  # None: the input is the GEMM's B as it is

    @property
    def weight_bytes(self) -> int:
        """The tenant's weights and bias in GEMM layout."""
        return (self.shape.m * self.shape.k + self.shape.m) * FLOAT_BYTES

    def weights(self, tenant_weights: dict[str, dict[str, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """(W as m x k, bias of m) in fp32 with the batch norm folded, as the backend folds it."""
        w = tenant_weights[self.anchor]
        bn = tenant_weights[self.batch_norm] if self.batch_norm else None
        folded, bias = fold_batch_norm(w["weight"], w.get("bias"), bn, self.epsilon)
        return (
            np.ascontiguousarray(folded.reshape(self.shape.m, self.shape.k), np.float32),
            np.ascontiguousarray(bias, np.float32),
        )


@dataclass
class LayerPlan:
    """The steps of a network and how each is batched (a GEMM, the backend's kernel with a tenant
    axis), with why any other is not."""

    batched: dict[int, BatchedLayer] = field(default_factory=dict)  # the GEMM steps
    axis: dict[int, AxisLayer] = field(default_factory=dict)  # the tenant-axis steps
    native: dict[int, AxisLayer] = field(default_factory=dict)  # every step that can have a tenant axis
    native_why: dict[int, str] = field(default_factory=dict)  # why the others cannot
    steps: list[dict[str, Any]] = field(default_factory=list)  # one per step, for the report

    @property
    def gathered_bytes(self) -> int:
        """Per tenant: the tenant-axis steps' own buffers, copied into per-step buffers."""
        return sum(a.gathered_bytes for a in self.axis.values())

    @property
    def native_gathered_bytes(self) -> int:
        """The same when every step runs with a tenant axis (``space_time_native``)."""
        return sum(a.gathered_bytes for a in self.native.values())

    def without_gemm(self) -> LayerPlan:
        """The plan of ``space_time_native``: every step with a tenant axis where it has one."""
        steps = [
            {k: v for k, v in s.items() if k not in ("gemm", "im2col", "not_gemm", "why")}
            | (
                {"batched": True, "how": "tenant_axis"}
                if s["step"] in self.native
                else {"batched": False, "why": self.native_why[s["step"]]}
            )
            for s in self.steps
        ]
        return LayerPlan(
            axis=dict(self.native), native=dict(self.native), native_why=dict(self.native_why), steps=steps
        )

    @property
    def col_elems(self) -> int:
        """The largest im2col scratch one tenant needs."""
        return max([b.im2col.elems for b in self.batched.values() if b.im2col] + [0])

    def as_dict(self, flops_by_step: list[int]) -> dict[str, Any]:
        """What is batched, for the result rows."""
        total = sum(flops_by_step) or 1
        batched_flops = sum(flops_by_step[i] for i in (*self.batched, *self.axis))
        return {
            "steps": len(self.steps),
            "batched_steps": len(self.batched) + len(self.axis),
            "gemm_steps": len(self.batched),
            "axis_steps": len(self.axis),
            "per_tenant_steps": len(self.steps) - len(self.batched) - len(self.axis),
            "batched_flops_fraction": batched_flops / total,
            "gemm_flops_fraction": sum(flops_by_step[i] for i in self.batched) / total,
            "plan": self.steps,
        }


def _epilogue(chain: list[Operator]) -> tuple[str | None, float, str] | None:
    """(batch norm name, epsilon, activation) of an anchor's chain, or None when it has
    something the batched GEMM does not apply."""
    bn: str | None = None
    eps = 0.0
    act = "none"
    for op in chain[1:]:
        if op.type == "batch_norm" and bn is None and act == "none":
            bn, eps = op.name, float(op.attrs["epsilon"])
        elif op.type in EPILOGUES and act == "none":
            act = op.type
        else:
            return None
    return bn, eps, act


def _conv_layer(runner: GraphRunner, index: int, chain: list[Operator]) -> BatchedLayer | str:
    op = chain[0]
    a = op.attrs
    if op.type != "conv2d" or a["groups"] != 1:
        return "a grouped or depthwise convolution"
    n, cin, ih, iw = runner.graph.tensors[op.inputs[0]].shape
    if n != 1:
        return "a batch of more than one image per tenant"
    epilogue = _epilogue(chain)
    if epilogue is None:
        return f"an epilogue other than batch norm and relu/relu6 ({[o.type for o in chain[1:]]})"
    out = chain[-1].outputs[0]
    _, cout, oh, ow = runner.graph.tensors[out].shape
    kh, kw = a["kernel"]
    sh, sw = a["stride"]
    dh, dw = a["dilation"]
    pads = a["pads"]
    direct = (kh, kw) == (1, 1) and (sh, sw) == (1, 1) and not any(pads)
    geometry = None if direct else Im2col(cin, ih, iw, oh, ow, kh, kw, sh, sw, pads[0], pads[1], dh, dw)
    return BatchedLayer(
        index,
        "conv",
        op.name,
        epilogue[0],
        epilogue[1],
        epilogue[2],
        GemmShape(cout, oh * ow, cin * kh * kw),
        op.inputs[0],
        out,
        geometry,
    )


def _fc_layer(runner: GraphRunner, index: int, chain: list[Operator]) -> BatchedLayer | str:
    op = chain[0]
    xs = runner.graph.tensors[op.inputs[0]].shape
    if len(xs) != 2 or xs[0] != 1:
        return "a fully connected layer on more than one row"
    epilogue = _epilogue(chain)
    if epilogue is None:
        return f"an epilogue other than batch norm and relu/relu6 ({[o.type for o in chain[1:]]})"
    return BatchedLayer(
        index,
        "fully_connected",
        op.name,
        epilogue[0],
        epilogue[1],
        epilogue[2],
        GemmShape(int(op.attrs["out_features"]), 1, int(xs[1])),
        op.inputs[0],
        chain[-1].outputs[0],
        None,
    )


def plan_layers(runner: GraphRunner, *, tenant_axis: bool = True) -> LayerPlan:
    """Which of a tenant's steps space-time batches, and how (the same for every tenant of the
    network); ``tenant_axis=False`` batches the GEMM steps only (to compare). Call it before any
    strategy re-binds the runner's activations to arenas. Beside, every step's tenant-axis form
    (``LayerPlan.native``), which ``space_time_native`` runs for GEMM-able steps too."""
    plan = LayerPlan()
    for index, launch in enumerate(runner.launches):
        planned = launch.planned
        chain = [runner.ops[name] for name in planned.ops]
        native = axis_layer(runner, index)
        if isinstance(native, AxisLayer):
            plan.native[index] = native
        else:
            plan.native_why[index] = native
        layer: BatchedLayer | str
        if planned.kernel in CONV_KERNELS:
            layer = _conv_layer(runner, index, chain)
        elif planned.kernel == "fully_connected":
            layer = _fc_layer(runner, index, chain)
        else:
            layer = f"the {planned.kernel} kernel is not a GEMM"
        entry: dict[str, Any] = {"step": index, "kernel": planned.kernel, "ops": [o.type for o in chain]}
        if isinstance(layer, BatchedLayer):
            plan.batched[index] = layer
            entry.update(batched=True, how="gemm", gemm=layer.shape.name, im2col=layer.im2col is not None)
            plan.steps.append(entry)
            continue
        axis = native if tenant_axis else "no tenant axis: turned off"
        if isinstance(axis, AxisLayer):
            plan.axis[index] = axis
            entry.update(batched=True, how="tenant_axis", not_gemm=layer)
        else:
            entry.update(batched=False, why=f"{layer}; {axis}")
        plan.steps.append(entry)
    return plan


def step_flops(runner: GraphRunner) -> list[int]:
    """FLOPs of each step of the plan (the operators it runs)."""
    return [
        sum(runner.graph.op_cost(runner.ops[name]).flops for name in launch.planned.ops) for launch in runner.launches
    ]


__all__ = ["BatchedLayer", "Im2col", "LayerPlan", "plan_layers", "step_flops"]
