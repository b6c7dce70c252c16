"""Write an IR graph as a runnable ONNX model with random weights.

Operators on int8 / uint8 tensors are written in their quantized ONNX form (``quant_emitters``).

The IR keeps no weights, so the exporter draws them: deterministic for a seed, scaled by fan-in
so activations stay finite through deep graphs, batch-norm variances positive, divisor
constants away from zero. onnxruntime runs the result; the importer reads it back to the same
``Graph``.

Naming contract (the CPU backend maps onnxruntime's per-node profile back onto IR operators by
it, so keep it stable):

* Every ONNX node emitted for IR operator ``X`` is named exactly ``X`` or, for the helper nodes of
  a multi-node decomposition, ``X::<suffix>``. The node that writes ``X``'s output tensor is the
  one named exactly ``X``. Decompositions: swish = ``X::sigmoid`` + ``X`` (Mul); relu6 = one Clip
  ``X``; channel_shuffle = ``X::reshape`` + ``X::transpose`` + ``X`` (Reshape); fully_connected on
  a rank > 2 input with bias = ``X::matmul`` + ``X`` (Add); gelu below opset 20 = ``X::div``,
  ``X::erf``, ``X::add``, ``X::mul`` + ``X`` (Mul); hard_swish below opset 14 =
  ``X::hard_sigmoid`` + ``X`` (Mul).
* ONNX value names equal IR tensor names; helper values and initializers (weights, shapes,
  constants) are named ``X::<suffix>`` too, so ``name.split("::")[0]`` always gives the IR operator.

Round-trip caveats (all documented in the tests): an IR ``clip`` with min 0 and max 6 reads back
as ``relu6``; a ``conv2d`` whose groups equal its input channels (> 1) and whose output channels
are a multiple of them reads back as ``depthwise_conv2d``; a one-element constant of a binary
operator without ``const_value`` gets a random value, which reads back as ``const_value``;
``hard_sigmoid`` followed by ``mul`` with the same input reads back as ``hard_swish`` (and the
same for ``sigmoid`` and ``swish``); on int8 / uint8 tensors a ``clip`` reads back as ``relu6`` (or
``relu`` without a max: quantized bounds carry no scale), and a ``quantize_linear`` of int8 values
as a ``dequantize_linear`` then a ``quantize_linear``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from devicelab.graph import ops
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, Operator
from devicelab.graph.onnx.emitters import EMITTERS
from devicelab.graph.onnx.quant_emitters import MICROSOFT, QUANT_EMITTERS, quantized_emitter

MIN_EXPORT_OPSET = 11
MAX_EXPORT_OPSET = 21

_ELEM = {
    "float32": onnx.TensorProto.FLOAT,
    "float16": onnx.TensorProto.FLOAT16,
    "int8": onnx.TensorProto.INT8,
    "uint8": onnx.TensorProto.UINT8,
    "int32": onnx.TensorProto.INT32,
    "int64": onnx.TensorProto.INT64,
}


def graph_to_onnx_model(graph: Graph, opset: int = 17, seed: int = 0) -> onnx.ModelProto:
    """An ONNX model of the graph with random weights drawn from ``seed``."""
    if not MIN_EXPORT_OPSET <= opset <= MAX_EXPORT_OPSET:
        raise GraphError(f"ONNX export supports opsets {MIN_EXPORT_OPSET} to {MAX_EXPORT_OPSET}, not {opset}")
    checked = copy.deepcopy(graph).check()  # canonical attrs, without touching the caller's graph
    return _Exporter(checked, opset, seed).run()


def graph_to_onnx_bytes(graph: Graph, opset: int = 17, seed: int = 0) -> bytes:
    """The serialized ONNX model of the graph."""
    data: bytes = graph_to_onnx_model(graph, opset=opset, seed=seed).SerializeToString()
    return data


def operator_weights(graph: Graph, seed: int = 0, opset: int = 17) -> dict[str, dict[str, np.ndarray]]:
    """The constants the exporter gives each IR operator for ``seed``: ``{op: {suffix: array}}``.

    Exactly the initializers of ``graph_to_onnx_model(graph, opset, seed)`` (one draw serves
    both), keyed by IR operator and by the part after ``::`` in the initializer's name
    (``weight``, ``bias``, ``scale``, ``mean``, ``var``, ``const``, ...). Layouts are ONNX's: a
    convolution's weight is (out, in / groups, kh, kw); a fully_connected weight is (out, in) for
    a 2-D input (Gemm) and (in, out) otherwise (MatMul). Another runtime fed these computes the
    same function as the exported model.
    """
    if not MIN_EXPORT_OPSET <= opset <= MAX_EXPORT_OPSET:
        raise GraphError(f"ONNX export supports opsets {MIN_EXPORT_OPSET} to {MAX_EXPORT_OPSET}, not {opset}")
    exporter = _Exporter(copy.deepcopy(graph).check(), opset, seed)
    exporter.run()
    return exporter.weights


class _Exporter:
    """One export: collects nodes and initializers while walking the graph."""

    def __init__(self, graph: Graph, opset: int, seed: int) -> None:
        self.graph = graph
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.weights: dict[str, dict[str, np.ndarray]] = {}  # what operator_weights returns

    def run(self) -> onnx.ModelProto:
        """Build the model."""
        g = self.graph
        for op in g.operators:
            if op.type in ("quantize_linear", "dequantize_linear"):
                emit = QUANT_EMITTERS[op.type]
            elif op.inputs and ops.is_quantized_dtype(self.dtype(op.inputs[0])):
                emit = quantized_emitter(self, op)
            else:
                found = EMITTERS.get(op.type)
                if found is None:
                    raise GraphError(f"operator type {op.type!r} has no ONNX export", node=op.name, op=op.type)
                emit = found
            emit(self, op)
        inputs = [self._value_info(t) for t in g.inputs]
        outputs = [self._value_info(t) for t in g.outputs]
        onnx_graph = helper.make_graph(self.nodes, g.name, inputs, outputs, initializer=self.inits)
        opsets = [helper.make_opsetid("", self.opset)]
        if any(n.domain == MICROSOFT for n in self.nodes):  # onnxruntime's quantized operators
            opsets.append(helper.make_opsetid(MICROSOFT, 1))
        model = helper.make_model(onnx_graph, opset_imports=opsets, producer_name="latencylab")
        model.ir_version = helper.find_min_ir_version_for(opsets[:1])  # onnx does not know com.microsoft's
        return model

    # -- helpers -----------------------------------------------------------------------------

    def _value_info(self, t: str) -> onnx.ValueInfoProto:
        tensor = self.graph.tensors[t]
        return helper.make_tensor_value_info(t, _ELEM[tensor.dtype], list(tensor.shape))

    def shape(self, t: str) -> tuple[int, ...]:
        """Shape of an IR tensor."""
        return self.graph.tensors[t].shape

    def dtype(self, t: str) -> str:
        """IR dtype of a tensor."""
        return self.graph.tensors[t].dtype

    def float_type(self, op: Operator) -> type:
        """numpy float type for the weights of ``op``: its input's, or float32 for integer graphs."""
        return np.float16 if self.graph.tensors[op.inputs[0]].dtype == "float16" else np.float32

    def const_type(self, op: Operator) -> Any:
        """numpy type of constants combined element-wise with ``op``'s input."""
        dtype = self.graph.tensors[op.inputs[0]].dtype
        return np.dtype(dtype) if dtype != "float32" else np.float32

    def init(self, name: str, value: np.ndarray) -> str:
        """Add an initializer; return its name."""
        value = np.asarray(value)
        self.inits.append(numpy_helper.from_array(value, name))
        op_name, _, suffix = name.partition("::")
        self.weights.setdefault(op_name, {})[suffix] = value
        return name

    def ints(self, name: str, values: list[int]) -> str:
        """Add an int64 vector initializer."""
        return self.init(name, np.asarray(values, dtype=np.int64))

    def node(self, op_type: str, inputs: list[str], outputs: list[str], name: str, **attrs: Any) -> None:
        """Append a node."""
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))

    def normal(self, shape: tuple[int, ...] | list[int], std: float, dtype: type) -> np.ndarray:
        """Gaussian values."""
        return (self.rng.standard_normal(tuple(shape), dtype=np.float32) * std).astype(dtype)

    def uniform(self, shape: tuple[int, ...] | list[int], lo: float, hi: float, dtype: Any) -> np.ndarray:
        """Uniform values in [lo, hi)."""
        return self.rng.uniform(lo, hi, tuple(shape)).astype(dtype)
