"""Write an IR graph as a runnable .tflite model with seeded random weights, as the converter would.

What is written (the rules are TFLite's converter's, so phones run what they would run for the
same network converted from TensorFlow or PyTorch):

* **Layout.** 4-D activations are NHWC; weights are in TFLite's layouts (OHWI convolution
  filters, [1, KH, KW, C*M] depthwise filters, [out, in] fully connected weights). Other ranks
  keep their shape, and axis attributes follow the layout, as the reader maps them back.
* **Weights.** Exactly the draws of the ONNX export for the same seed (``operator_weights``),
  moved to TFLite's layouts, so LiteRT and onnxruntime compute the same function. A convolution
  without bias gets a zero bias (LiteRT's conv kernels require one, and the converter writes
  one). With ``precision="fp16"`` every weight (filters, biases, element-wise constants) is
  stored as float16 and read through a DEQUANTIZE to float32 placed just before its operator,
  as the converter's float16 quantization writes it; scalars that come from attributes
  (hard_sigmoid's 3 and 1/6, clip bounds, pad values) and all activations stay float32.
* **Fusion.** A batch norm whose input is written only for it by a conv2d, depthwise_conv2d or
  (2-D) fully_connected is folded into that operator's weights and bias. An activation (relu,
  relu6, or a clip to [0, inf), [-1, 1] or [0, 6]) that is the only reader of a conv, depthwise
  conv, fully connected, add, sub, mul, div or batch norm result becomes that operator's
  ``fused_activation_function``. Not tanh: LiteRT's kernels do not apply a fused TANH. A tensor
  that is a graph output is never fused away.
* **Decompositions.** What TFLite has no operator for is written as the converter writes it:
  swish as LOGISTIC + MUL, hard_sigmoid as ADD 3 (fused RELU6) + MUL 1/6, a lone batch norm as
  MUL + ADD, channel_shuffle as RESHAPE + TRANSPOSE + RESHAPE, a clip as MAXIMUM / MINIMUM, a
  conv2d with one group per input channel as DEPTHWISE_CONV_2D.
* **Padding.** A window whose IR pads are TensorFlow's SAME (or zero) is written SAME (VALID);
  any other padding, PyTorch's symmetric pads on a stride-2 layer say, becomes an explicit PAD
  (PADV2 with float32's lowest value before a max pool) and a VALID window; an average pool over
  such padding is followed by a MUL that rescales the border windows to the IR's divisor.
* **Names.** Every tensor is named. The tensor an operator group writes is named after its IR
  operator (``benchmark_model`` names operators by their output tensor), helpers and weights are
  ``X::<suffix>``; ``TfliteExport.ops`` says which IR operators each TFLite operator implements.
* **Limits.** An operator TFLite cannot express (a softmax over a non-last axis, a 4-D matmul or
  fully connected input, edge padding, an elu with alpha != 1, a clip without bounds) raises a
  ``GraphError`` naming it; so do activations of a dtype other than float32.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, Operator
from devicelab.graph.ops import Shape
from devicelab.graph.tflite.emit import Emitter, Group, activation_code, to_nhwc
from devicelab.graph.tflite.emit_layers import LAYER_EMITTERS
from devicelab.graph.tflite.emit_tensors import TENSOR_EMITTERS
from devicelab.graph.tflite.encode import OpRecord, Options, TensorRecord, encode_model

PRECISIONS = ("fp32", "fp16")
DESCRIPTION = "LatencyLab TFLite writer"
DEQUANTIZE_FP16_VERSION = 3  # DEQUANTIZE reads float16 from version 3 on

# IR operator type -> the emitter that writes it.
EMITTERS: dict[str, Emitter] = {**LAYER_EMITTERS, **TENSOR_EMITTERS}
# IR operators that a batch norm folds into, and those that take a fused activation.
_FOLDS_BATCH_NORM = ("conv2d", "depthwise_conv2d", "fully_connected")
_FUSES_ACTIVATION = ("conv2d", "depthwise_conv2d", "fully_connected", "add", "sub", "mul", "div", "batch_norm")


@dataclass(frozen=True)
class ExportedOp:
    """One operator of the written model and the IR operators it implements."""

    index: int  # position in subgraph 0's operator list (the ":N" benchmark_model prints)
    builtin: str  # "CONV_2D", "DEQUANTIZE", ...
    name: str  # its output tensor's name: the IR operator's, X::<suffix> for a helper, the weight's for DEQUANTIZE
    ir_ops: tuple[str, ...]  # e.g. ("conv1", "bn1", "relu1"); () for a DEQUANTIZE of fp16 weights


@dataclass(frozen=True)
class TfliteExport:
    """A written .tflite model and the map from its operators back to the IR."""

    data: bytes
    ops: tuple[ExportedOp, ...]
    precision: str  # "fp32" or "fp16"


def graph_to_tflite(graph: Graph, *, precision: str = "fp32", seed: int = 0) -> TfliteExport:
    """A .tflite model of the graph with random weights drawn from ``seed``, or a ``GraphError``."""
    # The ONNX export draws the weights; imported here so that reading TFLite never loads onnx.
    from devicelab.graph.onnx import operator_weights

    if precision not in PRECISIONS:
        raise GraphError(f"TFLite precision {precision!r} is not one of {list(PRECISIONS)}")
    checked = copy.deepcopy(graph).check()  # canonical attrs, without touching the caller's graph
    _check_float32(checked)
    writer = _Writer(checked, operator_weights(checked, seed=seed), precision)
    return writer.run()


def graph_to_tflite_bytes(graph: Graph, *, precision: str = "fp32", seed: int = 0) -> bytes:
    """The .tflite bytes of the graph (``graph_to_tflite(...).data``)."""
    return graph_to_tflite(graph, precision=precision, seed=seed).data


def _check_float32(graph: Graph) -> None:
    producers = graph.producers()
    for name, t in graph.tensors.items():
        if t.dtype != "float32":
            op = producers.get(name)
            raise GraphError(
                f"tensor {name!r} is {t.dtype}; the TFLite writer writes float32 activations only "
                "(a quantized model needs scales and zero points the IR does not carry)",
                node=op.name if op else name,
                op=op.type if op else None,
            )


def plan_groups(graph: Graph) -> list[Group]:
    """The graph's operators in order, each with the batch norm and activation it absorbs."""
    consumers = graph.consumers()
    outputs = set(graph.outputs)

    def sole_reader(op: Operator) -> Operator | None:
        if len(op.outputs) != 1 or op.outputs[0] in outputs:
            return None
        readers = consumers.get(op.outputs[0], [])
        return readers[0] if len(readers) == 1 and readers[0].inputs == op.outputs else None

    absorbed: set[str] = set()
    groups = []
    for op in graph.operators:
        if op.name in absorbed:
            continue
        group, nxt = Group(op), sole_reader(op)
        # batch_norm works on IR axis 1: the channels of a conv, the features of a 2-D fc only.
        foldable = op.type in _FOLDS_BATCH_NORM and (
            op.type != "fully_connected" or len(graph.output_shapes(op)[0]) == 2
        )
        if nxt is not None and nxt.type == "batch_norm" and foldable:
            group.bn, nxt = nxt, sole_reader(nxt)
        if nxt is not None and op.type in _FUSES_ACTIVATION and activation_code(nxt) is not None:
            group.act = nxt
        absorbed.update(group.names[1:])
        groups.append(group)
    return groups


class _Writer:
    """One export: the records of the model being written, and the emitters' context."""

    def __init__(self, graph: Graph, drawn: dict[str, dict[str, np.ndarray]], precision: str) -> None:
        self.graph = graph
        self.drawn = drawn
        self.precision = precision
        self.tensors: list[TensorRecord] = []
        self.buffers: list[bytes] = [b""]  # buffer 0: the empty sentinel of every activation
        self.ops: list[OpRecord] = []
        self.exported: list[ExportedOp] = []
        self.where: dict[str, int] = {}  # IR tensor -> the TFLite tensor holding it
        self.taken: set[str] = set()
        self.group = Group(graph.operators[0])
        self.results: dict[int, int] = {}  # the current group's output k -> its TFLite tensor

    def run(self) -> TfliteExport:
        """Write every group and serialize the model."""
        g = self.graph
        for t in g.inputs:
            self.where[t] = self.tensor(t, to_nhwc(self.shape(t)), "float32")
        inputs = [self.where[t] for t in g.inputs]
        for group in plan_groups(g):
            emit = EMITTERS.get(group.op.type)
            if emit is None:
                raise GraphError(f"operator type {group.op.type!r} has no TFLite export", node=group.op.name)
            self.group, self.results = group, {}
            emit(self, group.op)
        outputs = [self.where[t] for t in g.outputs]
        data = encode_model(g.name, self.tensors, self.buffers, self.ops, inputs, outputs, DESCRIPTION)
        return TfliteExport(data, tuple(self.exported), self.precision)

    # -- tensors -----------------------------------------------------------------------------

    def tensor(self, name: str, shape: Sequence[int], dtype: str, data: bytes | None = None) -> int:
        """Add a tensor under a name no other tensor has; ``data`` makes it a constant."""
        base, k = name, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        buffer = 0
        if data is not None:
            self.buffers.append(data)
            buffer = len(self.buffers) - 1
        self.tensors.append(TensorRecord(name, [int(d) for d in shape], dtype, buffer))
        return len(self.tensors) - 1

    def shape(self, t: str) -> Shape:
        """IR (NCHW) shape of an IR tensor."""
        return self.graph.tensors[t].shape

    def x(self, t: str) -> int:
        """The TFLite tensor that holds IR activation ``t``."""
        return self.where[t]

    def weights(self, op: Operator) -> dict[str, np.ndarray]:
        """The seeded draws of ``op`` in ONNX layouts, by suffix."""
        return self.drawn.get(op.name, {})

    def const(self, name: str, value: Any, weight: bool = True) -> int:
        """A float32 constant; in fp16 a weight becomes float16 data and a DEQUANTIZE."""
        array = np.array(value, dtype=np.float32, order="C")  # a scalar stays 0-D
        if not (weight and self.precision == "fp16"):
            return self.tensor(name, array.shape, "float32", array.tobytes())
        half = self.tensor(f"{name}_fp16", array.shape, "float16", array.astype(np.float16).tobytes())
        out = self.tensor(name, array.shape, "float32")
        self._append("DEQUANTIZE", [half], [out], None, DEQUANTIZE_FP16_VERSION, ())
        return out

    def ints(self, name: str, values: Sequence[int], shape: Sequence[int] | None = None) -> int:
        """An int32 constant (shape: a vector of the values unless given)."""
        array = np.asarray(list(values), dtype=np.int32)
        dims = [len(array)] if shape is None else list(shape)
        return self.tensor(name, dims, "int32", array.reshape(dims).tobytes())

    def result(self, k: int = 0) -> int:
        """The TFLite tensor of the group's output ``k``, named after its operator."""
        if k not in self.results:
            ir = self.group.outputs[k]
            name = self.group.op.name if k == 0 else f"{self.group.op.name}::{k}"
            self.results[k] = self.where[ir] = self.tensor(name, to_nhwc(self.shape(ir)), "float32")
        return self.results[k]

    def helper(self, suffix: str, shape: Sequence[int]) -> int:
        """An intermediate float32 tensor named ``X::<suffix>`` (TFLite shape)."""
        return self.tensor(f"{self.group.op.name}::{suffix}", shape, "float32")

    # -- operators ---------------------------------------------------------------------------

    def add(
        self, builtin: str, inputs: list[int], outputs: list[int], options: Options | None = None, version: int = 1
    ) -> None:
        """Append a TFLite operator; the one writing the group's result implements the whole group."""
        writes_result = any(o in self.results.values() for o in outputs)
        ir_ops = self.group.names if writes_result else (self.group.op.name,)
        self._append(builtin, inputs, outputs, options, version, ir_ops)

    def _append(
        self,
        builtin: str,
        inputs: list[int],
        outputs: list[int],
        options: Options | None,
        version: int,
        ir_ops: tuple[str, ...],
    ) -> None:
        index = len(self.ops)
        self.ops.append(OpRecord(builtin, list(inputs), list(outputs), options, version))
        self.exported.append(ExportedOp(index, builtin, self.tensors[outputs[0]].name, ir_ops))
