"""What "the reader reads back what the writer wrote, operator for operator" means, as assertions.

Each TFLite operator of an export (DEQUANTIZE of fp16 weights aside, which the reader folds away)
reads back as one IR operator named after its output tensor, plus ``<name>/act`` when it carries
a fused activation. An IR operator therefore comes back as:

* itself, same type (in canonical form) and key attributes, named as before, when one TFLite
  operator computes it; a convolution then always has a bias (LiteRT requires one), and a
  window with padding TFLite's SAME cannot express comes with a ``X::pad`` before it;
* ``<producer>/act`` when it was an activation fused into its producer;
* nothing when it was a batch norm folded into a convolution's (or 2-D fc's) weights;
* the operators of its documented decomposition (swish: sigmoid ``X::sigmoid`` + mul ``X``, ...)
  whose last one is named ``X``.

The reader adds one operator of its own, a free ``<name>/layout`` reshape after a reduce that drops
axes of a 4-D tensor; it stands for no TFLite operator.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from devicelab.graph import Graph, Operator
from devicelab.graph.tflite import TfliteExport
from devicelab.graph.tflite.wire import decode

# (IR type, the TFLite operator that writes its result) -> the IR type that operator reads back as.
DECOMPOSED = {
    ("swish", "MUL"): "mul",
    ("hard_sigmoid", "MUL"): "mul",
    ("batch_norm", "ADD"): "add",
    ("channel_shuffle", "RESHAPE"): "reshape",
    ("avg_pool2d", "MUL"): "mul",  # a VALID average over a PAD, rescaled at the borders
    ("reduce_mean", "TRANSPOSE"): "transpose",  # dropped axes restored to NCHW order
    ("reduce_max", "TRANSPOSE"): "transpose",
    ("reduce_sum", "TRANSPOSE"): "transpose",
}


def canonical_type(graph: Graph, op: Operator) -> str:
    """The type ``op`` reads back as when one TFLite operator computes it."""
    a = op.attrs
    if op.type == "conv2d" and a["groups"] == graph.tensors[op.inputs[0]].shape[1] > 1:
        return "depthwise_conv2d"
    if op.type == "clip":
        return {(0.0, 6.0): "relu6", (0.0, None): "relu"}.get((a["min"], a["max"]), "clip")
    if op.type == "flatten":
        return "reshape"
    if op.type in ("reduce_mean", "reduce_max") and a["keepdims"] and a["axes"] == [2, 3]:
        if len(graph.tensors[op.inputs[0]].shape) == 4:
            return {"reduce_mean": "global_avg_pool", "reduce_max": "global_max_pool"}[op.type]
    return op.type


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(float(a), float(b), rel_tol=1e-3, abs_tol=1e-6)


def _spatial_pads(back: Graph, name: str) -> list[int]:
    """[top, left, bottom, right] of a 4-D IR pad operator."""
    p = back.op(name).attrs["pads"]
    return [p[2], p[3], p[6], p[7]]


def assert_same_attrs(graph: Graph, back: Graph, op: Operator) -> None:
    """The key attributes of ``op`` survived the round trip."""
    a, b = op.attrs, back.op(op.name).attrs
    where = f"{op.name} ({op.type}): {a} read back as {b}"
    if op.type in ("conv2d", "depthwise_conv2d"):
        keys = ["kernel", "stride", "dilation"] + (["multiplier"] if op.type == "depthwise_conv2d" else [])
        assert all(a[k] == b[k] for k in keys), where
        if op.type == "conv2d":
            assert (
                b.get("out_channels", b.get("multiplier", 0) * graph.tensors[op.inputs[0]].shape[1])
                == (a["out_channels"])
            ), where
        assert b["bias"] is True, where
        pads = b["pads"]
        if f"{op.name}::pad" in {o.name for o in back.operators}:
            assert pads == [0, 0, 0, 0], where
            pads = _spatial_pads(back, f"{op.name}::pad")
        assert pads == a["pads"], where
    elif op.type in ("max_pool2d", "avg_pool2d"):
        assert (b["kernel"], b["stride"]) == (a["kernel"], a["stride"]), where
    elif op.type == "fully_connected":
        assert b["out_features"] == a["out_features"], where
    elif op.type in ("add", "sub", "mul", "div"):
        assert len(back.op(op.name).inputs) == len(op.inputs), where
        if len(op.inputs) == 1:
            assert b["const_first"] == a["const_first"], where
            if "const_value" in a:
                assert _close(b.get("const_value"), a["const_value"]), where
    elif op.type == "clip" and canonical_type(graph, op) == "clip":
        lower = f"{op.name}::lower"  # both bounds: MAXIMUM then MINIMUM, two one-sided clips
        lo = back.op(lower).attrs["min"] if lower in {o.name for o in back.operators} else b["min"]
        assert _close(lo, a["min"]) and _close(b["max"], a["max"]), where
    elif op.type in ("leaky_relu", "elu"):
        assert _close(b["alpha"], a["alpha"]), where
    elif op.type == "pad":
        assert (b["pads"], b["mode"]) == (a["pads"], a["mode"]) and _close(b["value"], a["value"]), where
    elif op.type in ("concat", "softmax", "split", "reduce_mean", "reduce_max", "reduce_sum", "transpose", "resize"):
        if canonical_type(graph, op) == op.type:
            assert b == a, where
    elif op.type not in ("reshape", "flatten"):  # their one attribute is the output shape, checked apart
        assert b == a, where


def assert_reads_back(graph: Graph, export: TfliteExport, back: Graph) -> None:
    """``back`` (the reader's graph of ``export``) is ``graph`` operator for operator."""
    checked = graph.check()
    written = [e for e in export.ops if e.builtin != "DEQUANTIZE"]
    assert all(e.ir_ops == () for e in export.ops if e.builtin == "DEQUANTIZE")
    # One IR operator per TFLite operator, plus one per fused activation, in the file's order.
    raw = decode(export.data)
    expected = []
    for e in written:
        expected.append(e.name)
        fuses = len(e.ir_ops) > 1 and checked.op(e.ir_ops[-1]).type != "batch_norm"
        code = raw.ops[e.index].options.get("FusedActivationFunction", 0)
        assert bool(code) == fuses or (code == 3 and e.name.endswith("::shifted")), e  # hard_sigmoid's relu6
        if code:
            expected.append(f"{e.name}/act")
    # The reader's own free reshape after a reduce that leaves 4-D axes in NHWC order is no
    # TFLite operator (the writer's TRANSPOSE that follows restores the IR's order).
    assert [o.name for o in back.operators if not o.name.endswith("/layout")] == expected
    # Every IR operator is implemented, and helpers are named after the one they serve.
    assert {n for e in written for n in e.ir_ops} == {o.name for o in checked.operators}
    for e in written:
        if e.name not in e.ir_ops:
            prefix = e.name.split("::")[0]
            assert "::" in e.name and e.ir_ops == (prefix,), e
    by_result = {e.name: e for e in written if e.name in e.ir_ops}
    owner = {n: e for e in written for n in e.ir_ops if e.name in e.ir_ops}
    for op in checked.operators:
        e = owner[op.name]
        if op.name == e.name:
            read = back.op(op.name)
            decomposed = DECOMPOSED.get((op.type, e.builtin))
            assert read.type == (decomposed or canonical_type(checked, op)), (op.name, op.type, e.builtin, read.type)
            shapes = [back.tensors[t].shape for t in read.outputs]
            assert shapes == [checked.tensors[t].shape for t in op.outputs], op.name
            if decomposed is None:
                assert_same_attrs(checked, back, op)
        elif op.type == "batch_norm" and checked.op(e.ir_ops[0]).type in ("conv2d", "depthwise_conv2d"):
            assert op.name not in {o.name for o in back.operators}
        elif op.type == "batch_norm":
            assert checked.op(e.ir_ops[0]).type == "fully_connected" and back.op(e.name).attrs["bias"]
        else:
            assert back.op(f"{e.name}/act").type == canonical_type(checked, op), op.name
    assert set(by_result) <= {o.name for o in back.operators}
    assert back.inputs == checked.inputs
    assert [back.tensors[t].shape for t in back.inputs] == [checked.tensors[t].shape for t in checked.inputs]
    assert [back.tensors[t].shape for t in back.outputs] == [checked.tensors[t].shape for t in checked.outputs]


def nhwc(array: np.ndarray) -> np.ndarray:
    """A 4-D NCHW array as NHWC; other ranks unchanged."""
    return np.ascontiguousarray(array.transpose(0, 2, 3, 1)) if array.ndim == 4 else array


def run_litert(data: bytes, feeds: dict[str, np.ndarray], builtin_kernels: bool = False) -> list[np.ndarray]:
    """LiteRT's outputs for NCHW ``feeds`` by input name (XNNPACK, or TFLite's own kernels)."""
    kind = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if builtin_kernels else OpResolverType.AUTO
    interpreter = Interpreter(model_content=data, experimental_op_resolver_type=kind)
    interpreter.allocate_tensors()
    for d in interpreter.get_input_details():
        interpreter.set_tensor(d["index"], nhwc(feeds[d["name"]]).astype(np.float32))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def random_feeds(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Gaussian inputs for every graph input (NCHW)."""
    rng = np.random.default_rng(seed)
    return {t: rng.standard_normal(graph.tensors[t].shape).astype(np.float32) for t in graph.inputs}
