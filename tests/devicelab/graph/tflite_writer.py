"""Writes small .tflite flatbuffers for the importer's tests, with the `tflite` package's builders.

TensorFlow is not installed here, so these files are the source of truth: the writer lays out
tensors, buffers, operator codes and options exactly as the TFLite schema says (NHWC activations,
OHWI conv filters, [1, KH, KW, C*M] depthwise filters, [out, in] fully-connected weights) and the
layer helpers compute output shapes with TensorFlow's SAME / VALID rules.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.TensorType import TensorType

PLACEHOLDER = BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES
ACT = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4, "SIGN_BIT": 5}
PAD = {"SAME": 0, "VALID": 1}
NP_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "int32": np.int32,
    "int8": np.int8,
    "uint8": np.uint8,
    "int64": np.int64,
}

Options = tuple[str, dict[str, Any]]


@dataclass
class _T:
    name: str
    shape: list[int]
    dtype: str
    buffer: int
    signature: list[int] | None
    quantized: bool


@dataclass
class _Op:
    opcode: int | str  # a BuiltinOperator name or number, or "custom:NAME"
    inputs: list[int]
    outputs: list[int]
    options: Options | None
    extra: dict[str, Any] = field(default_factory=dict)


def same_out(size: int, kernel: int, stride: int, dilation: int = 1) -> int:
    """TensorFlow SAME output size: ceil(in / stride)."""
    return -(-size // stride)


def valid_out(size: int, kernel: int, stride: int, dilation: int = 1) -> int:
    """TensorFlow VALID output size: ceil((in - effective kernel + 1) / stride)."""
    eff = dilation * (kernel - 1) + 1
    return -(-(size - eff + 1) // stride)


class TFLiteWriter:
    """Accumulates tensors and operators of one subgraph and serializes them as a .tflite file."""

    def __init__(self, name: str = "main", with_weights: bool = True) -> None:
        self.name = name
        self.with_weights = with_weights  # False: constant tensors get empty buffers (shape only)
        self.tensors: list[_T] = []
        self.buffers: list[bytes] = [b""]  # buffer 0 is the empty sentinel, as the converter writes it
        self.ops: list[_Op] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.code_style = "both"  # "both", "deprecated" (old files) or "builtin" (builtin_code only)
        self._count = 0

    # -- raw tensors and operators -----------------------------------------------------------

    def tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str = "float32",
        data: bytes | None = None,
        signature: Sequence[int] | None = None,
        quantized: bool = False,
    ) -> int:
        """Add a tensor; ``data`` gives it a buffer of its own (a constant)."""
        buffer = 0
        if data is not None:
            self.buffers.append(data)
            buffer = len(self.buffers) - 1
        self.tensors.append(
            _T(
                name,
                [int(d) for d in shape],
                dtype,
                buffer,
                None if signature is None else [int(d) for d in signature],
                quantized,
            )
        )
        return len(self.tensors) - 1

    def input(self, name: str, shape: Sequence[int], dtype: str = "float32", **kw: Any) -> int:
        """Add a subgraph input."""
        t = self.tensor(name, shape, dtype, **kw)
        self.inputs.append(t)
        return t

    def const(
        self, name: str, shape: Sequence[int], values: Any = None, dtype: str = "float32", force_data: bool = False
    ) -> int:
        """Add a constant; its buffer holds ``values`` (zeros if None) unless weights are left out."""
        if not (self.with_weights or force_data or values is not None):
            return self.tensor(name, shape, dtype, data=None, quantized=dtype in ("int8", "uint8"))
        arr = np.zeros(shape, NP_DTYPES[dtype]) if values is None else np.asarray(values, NP_DTYPES[dtype])
        arr = arr.reshape(shape)
        return self.tensor(name, shape, dtype, data=arr.tobytes(), quantized=dtype in ("int8", "uint8"))

    def op(
        self, opcode: int | str, inputs: Sequence[int], outputs: Sequence[int], options: Options | None = None
    ) -> int:
        """Add an operator (opcode by BuiltinOperator name or number); return its index."""
        self.ops.append(_Op(opcode, list(inputs), list(outputs), options))
        return len(self.ops) - 1

    def shape(self, t: int) -> list[int]:
        """Shape of a tensor."""
        return list(self.tensors[t].shape)

    def dtype(self, t: int) -> str:
        """Type of a tensor."""
        return self.tensors[t].dtype

    def _name(self, kind: str, name: str | None) -> str:
        self._count += 1
        return name or f"{kind}_{self._count}"

    def _out(self, name: str, shape: Sequence[int], like: int) -> int:
        t = self.tensors[like]
        return self.tensor(name, shape, t.dtype, quantized=t.quantized)

    # -- layers (NHWC) -----------------------------------------------------------------------

    def conv2d(
        self,
        x: int,
        cout: int,
        k: int,
        stride: int = 1,
        padding: str = "SAME",
        act: str = "NONE",
        dilation: int = 1,
        bias: bool = True,
        groups: int = 1,
        name: str | None = None,
    ) -> int:
        """CONV_2D with an OHWI filter; ``groups`` > 1 writes a grouped conv (filter Cin / groups)."""
        n, h, w, c = self.shape(x)
        name = self._name("conv", name)
        wdt, bdt = self._weight_types(x)
        filt = self.const(f"{name}/weights", [cout, k, k, c // groups], dtype=wdt)
        b = self.const(f"{name}/bias", [cout], dtype=bdt) if bias else -1
        rule = same_out if padding == "SAME" else valid_out
        y = self._out(name, [n, rule(h, k, stride, dilation), rule(w, k, stride, dilation), cout], x)
        self.op(
            "CONV_2D",
            [x, filt, b],
            [y],
            (
                "Conv2DOptions",
                {
                    "Padding": PAD[padding],
                    "StrideW": stride,
                    "StrideH": stride,
                    "FusedActivationFunction": ACT[act],
                    "DilationWFactor": dilation,
                    "DilationHFactor": dilation,
                },
            ),
        )
        return y

    def dwconv(
        self,
        x: int,
        k: int,
        stride: int = 1,
        padding: str = "SAME",
        act: str = "NONE",
        multiplier: int = 1,
        dilation: int = 1,
        bias: bool = True,
        name: str | None = None,
    ) -> int:
        """DEPTHWISE_CONV_2D with a [1, K, K, C * multiplier] filter."""
        n, h, w, c = self.shape(x)
        name = self._name("dwconv", name)
        cout = c * multiplier
        wdt, bdt = self._weight_types(x)
        filt = self.const(f"{name}/weights", [1, k, k, cout], dtype=wdt)
        b = self.const(f"{name}/bias", [cout], dtype=bdt) if bias else -1
        rule = same_out if padding == "SAME" else valid_out
        y = self._out(name, [n, rule(h, k, stride, dilation), rule(w, k, stride, dilation), cout], x)
        self.op(
            "DEPTHWISE_CONV_2D",
            [x, filt, b],
            [y],
            (
                "DepthwiseConv2DOptions",
                {
                    "Padding": PAD[padding],
                    "StrideW": stride,
                    "StrideH": stride,
                    "DepthMultiplier": multiplier,
                    "FusedActivationFunction": ACT[act],
                    "DilationWFactor": dilation,
                    "DilationHFactor": dilation,
                },
            ),
        )
        return y

    def fc(
        self,
        x: int,
        out: int,
        act: str = "NONE",
        bias: bool = True,
        name: str | None = None,
        in_features: int | None = None,
    ) -> int:
        """FULLY_CONNECTED: input flattened to [-1, in], weights [out, in] (in defaults to the last axis)."""
        shape = self.shape(x)
        fin = in_features or shape[-1]
        name = self._name("fc", name)
        wdt, bdt = self._weight_types(x)
        wt = self.const(f"{name}/weights", [out, fin], dtype=wdt)
        b = self.const(f"{name}/bias", [out], dtype=bdt) if bias else -1
        y = self._out(name, [math.prod(shape) // fin, out], x)
        self.op("FULLY_CONNECTED", [x, wt, b], [y], ("FullyConnectedOptions", {"FusedActivationFunction": ACT[act]}))
        return y

    def pool(
        self, kind: str, x: int, k: int, stride: int, padding: str = "VALID", act: str = "NONE", name: str | None = None
    ) -> int:
        """MAX_POOL_2D or AVERAGE_POOL_2D."""
        n, h, w, c = self.shape(x)
        rule = same_out if padding == "SAME" else valid_out
        y = self._out(self._name("pool", name), [n, rule(h, k, stride), rule(w, k, stride), c], x)
        self.op(
            kind,
            [x],
            [y],
            (
                "Pool2DOptions",
                {
                    "Padding": PAD[padding],
                    "StrideW": stride,
                    "StrideH": stride,
                    "FilterWidth": k,
                    "FilterHeight": k,
                    "FusedActivationFunction": ACT[act],
                },
            ),
        )
        return y

    def binary(self, kind: str, a: int, b: int, act: str = "NONE", name: str | None = None) -> int:
        """ADD / SUB / MUL / DIV with numpy broadcasting."""
        shape = list(np.broadcast_shapes(tuple(self.shape(a)), tuple(self.shape(b))))
        like = a if len(self.shape(a)) >= len(self.shape(b)) else b
        y = self._out(self._name(kind.lower(), name), shape, like)
        opts = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}[kind]
        self.op(kind, [a, b], [y], (opts, {"FusedActivationFunction": ACT[act]}))
        return y

    def unary(self, kind: str, x: int, options: Options | None = None, name: str | None = None) -> int:
        """An element-wise operator with one input (RELU, HARD_SWISH, LOGISTIC, ...)."""
        y = self._out(self._name(kind.lower(), name), self.shape(x), x)
        self.op(kind, [x], [y], options)
        return y

    def mean(self, x: int, axes: Sequence[int], keepdims: bool, name: str | None = None, kind: str = "MEAN") -> int:
        """MEAN (or SUM / REDUCE_MAX) over axes, the axes held in an int32 constant."""
        shape = self.shape(x)
        axes = [a % len(shape) for a in axes]
        out = (
            [1 if i in axes else d for i, d in enumerate(shape)]
            if keepdims
            else [d for i, d in enumerate(shape) if i not in axes]
        )
        name = self._name("mean", name)
        ax = self.const(f"{name}/axes", [len(axes)], axes, dtype="int32")
        y = self._out(name, out, x)
        self.op(kind, [x, ax], [y], ("ReducerOptions", {"KeepDims": keepdims}))
        return y

    def concat(self, xs: Sequence[int], axis: int, act: str = "NONE", name: str | None = None) -> int:
        """CONCATENATION along an NHWC axis."""
        shape = self.shape(xs[0])
        axis_n = axis % len(shape)
        shape[axis_n] = sum(self.shape(x)[axis_n] for x in xs)
        y = self._out(self._name("concat", name), shape, xs[0])
        self.op(
            "CONCATENATION",
            list(xs),
            [y],
            ("ConcatenationOptions", {"Axis": axis, "FusedActivationFunction": ACT[act]}),
        )
        return y

    def split(self, x: int, num: int, axis: int, name: str | None = None) -> list[int]:
        """SPLIT into equal parts: inputs are (axis constant, tensor)."""
        shape = self.shape(x)
        name = self._name("split", name)
        ax = self.const(f"{name}/axis", [], [axis], dtype="int32")
        part = list(shape)
        part[axis % len(shape)] //= num
        outs = [self._out(name if i == 0 else f"{name}:{i}", part, x) for i in range(num)]
        self.op("SPLIT", [ax, x], outs, ("SplitOptions", {"NumSplits": num}))
        return outs

    def split_v(self, x: int, sizes: Sequence[int], axis: int, name: str | None = None) -> list[int]:
        """SPLIT_V into given sizes: inputs are (tensor, sizes constant, axis constant)."""
        shape = self.shape(x)
        name = self._name("split_v", name)
        sz = self.const(f"{name}/sizes", [len(sizes)], list(sizes), dtype="int32")
        ax = self.const(f"{name}/axis", [], [axis], dtype="int32")
        outs = []
        for i, s in enumerate(sizes):
            part = list(shape)
            part[axis % len(shape)] = s
            outs.append(self._out(name if i == 0 else f"{name}:{i}", part, x))
        self.op("SPLIT_V", [x, sz, ax], outs, ("SplitVOptions", {"NumSplits": len(sizes)}))
        return outs

    def pad(
        self,
        x: int,
        paddings: Sequence[Sequence[int]],
        value: float | None = None,
        name: str | None = None,
        with_data: bool = True,
    ) -> int:
        """PAD (or PADV2 when ``value`` is given), paddings as an int32 [rank, 2] constant."""
        shape = self.shape(x)
        name = self._name("pad", name)
        pads = self.tensor(
            f"{name}/paddings",
            [len(shape), 2],
            "int32",
            data=np.asarray(paddings, np.int32).tobytes() if with_data else None,
        )
        out = [d + p[0] + p[1] for d, p in zip(shape, paddings, strict=True)]
        y = self._out(name, out, x)
        if value is None:
            self.op("PAD", [x, pads], [y], ("PadOptions", {}))
        else:
            v = self.const(f"{name}/value", [], [value])
            self.op("PADV2", [x, pads, v], [y], ("PadV2Options", {}))
        return y

    def resize(
        self, x: int, size: Sequence[int], bilinear: bool = True, align_corners: bool = False, name: str | None = None
    ) -> int:
        """RESIZE_BILINEAR or RESIZE_NEAREST_NEIGHBOR to (H, W)."""
        n, _, _, c = self.shape(x)
        name = self._name("resize", name)
        sz = self.const(f"{name}/size", [2], list(size), dtype="int32")
        y = self._out(name, [n, size[0], size[1], c], x)
        if bilinear:
            self.op("RESIZE_BILINEAR", [x, sz], [y], ("ResizeBilinearOptions", {"AlignCorners": align_corners}))
        else:
            self.op(
                "RESIZE_NEAREST_NEIGHBOR",
                [x, sz],
                [y],
                ("ResizeNearestNeighborOptions", {"AlignCorners": align_corners}),
            )
        return y

    def reshape(self, x: int, shape: Sequence[int], name: str | None = None) -> int:
        """RESHAPE, with the target both as an int32 input and in the options (as converters do)."""
        name = self._name("reshape", name)
        target = self.const(f"{name}/shape", [len(shape)], list(shape), dtype="int32")
        y = self._out(name, shape, x)
        self.op("RESHAPE", [x, target], [y], ("ReshapeOptions", {"NewShape": list(shape)}))
        return y

    def squeeze(self, x: int, dims: Sequence[int], name: str | None = None) -> int:
        """SQUEEZE the given size-1 axes."""
        shape = self.shape(x)
        keep = [d for i, d in enumerate(shape) if i not in [a % len(shape) for a in dims]]
        y = self._out(self._name("squeeze", name), keep, x)
        self.op("SQUEEZE", [x], [y], ("SqueezeOptions", {"SqueezeDims": list(dims)}))
        return y

    def transpose(self, x: int, perm: Sequence[int], name: str | None = None, with_data: bool = True) -> int:
        """TRANSPOSE with an int32 permutation constant."""
        shape = self.shape(x)
        name = self._name("transpose", name)
        p = self.tensor(
            f"{name}/perm", [len(perm)], "int32", data=np.asarray(perm, np.int32).tobytes() if with_data else None
        )
        y = self._out(name, [shape[i] for i in perm], x)
        self.op("TRANSPOSE", [x, p], [y], ("TransposeOptions", {}))
        return y

    def softmax(self, x: int, name: str | None = None) -> int:
        """SOFTMAX over the last axis."""
        return self.unary("SOFTMAX", x, ("SoftmaxOptions", {"Beta": 1.0}), name=name)

    def quantize(self, x: int, dtype: str = "int8", name: str | None = None) -> int:
        """QUANTIZE a float tensor to int8 / uint8."""
        y = self.tensor(self._name("quantize", name), self.shape(x), dtype, quantized=True)
        self.op("QUANTIZE", [x], [y])
        return y

    def dequantize(self, x: int, name: str | None = None) -> int:
        """DEQUANTIZE back to float32."""
        y = self.tensor(self._name("dequantize", name), self.shape(x), "float32")
        self.op("DEQUANTIZE", [x], [y])
        return y

    def _weight_types(self, x: int) -> tuple[str, str]:
        # Full-integer quantization: int8 weights with int32 biases; float models keep float32.
        return ("int8", "int32") if self.tensors[x].dtype in ("int8", "uint8") else ("float32", "float32")

    # -- serialization -----------------------------------------------------------------------

    def to_bytes(
        self, inputs: Sequence[int] | None = None, outputs: Sequence[int] | None = None, identifier: bytes = b"TFL3"
    ) -> bytes:
        """Serialize the model (one subgraph) as a .tflite flatbuffer."""
        # import_module, not "import tflite.X": the package's __init__ rebinds tflite.X to the class.
        B, M, OP, OC, Q, S, T = (
            importlib.import_module(f"tflite.{m}")
            for m in ("Buffer", "Model", "Operator", "OperatorCode", "QuantizationParameters", "SubGraph", "Tensor")
        )

        inputs = self.inputs if inputs is None else list(inputs)
        outputs = self.outputs if outputs is None else list(outputs)
        b = flatbuffers.Builder(1024)

        codes: list[int | str] = []
        for o in self.ops:
            if o.opcode not in codes:
                codes.append(o.opcode)
        code_offsets = []
        for code in codes:
            custom = b.CreateString(code[7:]) if isinstance(code, str) and code.startswith("custom:") else None
            num = 32 if custom is not None else (getattr(BuiltinOperator, code) if isinstance(code, str) else code)
            OC.OperatorCodeStart(b)
            if custom is not None:
                OC.OperatorCodeAddCustomCode(b, custom)
            if self.code_style in ("both", "deprecated"):
                OC.OperatorCodeAddDeprecatedBuiltinCode(b, min(num, PLACEHOLDER))
            if self.code_style in ("both", "builtin"):
                OC.OperatorCodeAddBuiltinCode(b, num)
            OC.OperatorCodeAddVersion(b, 1)
            code_offsets.append(OC.OperatorCodeEnd(b))

        buffer_offsets = []
        for data in self.buffers:
            vec = b.CreateByteVector(data) if data else None
            B.BufferStart(b)
            if vec is not None:
                B.BufferAddData(b, vec)
            buffer_offsets.append(B.BufferEnd(b))

        tensor_offsets = []
        for t in self.tensors:
            name = b.CreateString(t.name)
            shape = b.CreateNumpyVector(np.asarray(t.shape, np.int32))
            sig = None if t.signature is None else b.CreateNumpyVector(np.asarray(t.signature, np.int32))
            quant = None
            if t.quantized:
                scale = b.CreateNumpyVector(np.asarray([0.05], np.float32))
                zero = b.CreateNumpyVector(np.asarray([0], np.int64))
                Q.QuantizationParametersStart(b)
                Q.QuantizationParametersAddScale(b, scale)
                Q.QuantizationParametersAddZeroPoint(b, zero)
                quant = Q.QuantizationParametersEnd(b)
            T.TensorStart(b)
            T.TensorAddShape(b, shape)
            if sig is not None:
                T.TensorAddShapeSignature(b, sig)
            T.TensorAddType(b, getattr(TensorType, t.dtype.upper()))
            T.TensorAddBuffer(b, t.buffer)
            T.TensorAddName(b, name)
            if quant is not None:
                T.TensorAddQuantization(b, quant)
            tensor_offsets.append(T.TensorEnd(b))

        op_offsets = []
        for o in self.ops:
            ins = b.CreateNumpyVector(np.asarray(o.inputs, np.int32))
            outs = b.CreateNumpyVector(np.asarray(o.outputs, np.int32))
            opts = _build_options(b, o.options) if o.options is not None else None
            OP.OperatorStart(b)
            OP.OperatorAddOpcodeIndex(b, codes.index(o.opcode))
            OP.OperatorAddInputs(b, ins)
            OP.OperatorAddOutputs(b, outs)
            if opts is not None and o.options is not None:
                OP.OperatorAddBuiltinOptionsType(b, getattr(BuiltinOptions, o.options[0]))
                OP.OperatorAddBuiltinOptions(b, opts)
            op_offsets.append(OP.OperatorEnd(b))

        tensors_vec = _table_vector(b, S.SubGraphStartTensorsVector, tensor_offsets)
        ops_vec = _table_vector(b, S.SubGraphStartOperatorsVector, op_offsets)
        in_vec = b.CreateNumpyVector(np.asarray(inputs, np.int32))
        out_vec = b.CreateNumpyVector(np.asarray(outputs, np.int32))
        sg_name = b.CreateString(self.name)
        S.SubGraphStart(b)
        S.SubGraphAddTensors(b, tensors_vec)
        S.SubGraphAddInputs(b, in_vec)
        S.SubGraphAddOutputs(b, out_vec)
        S.SubGraphAddOperators(b, ops_vec)
        S.SubGraphAddName(b, sg_name)
        subgraph = S.SubGraphEnd(b)

        codes_vec = _table_vector(b, M.ModelStartOperatorCodesVector, code_offsets)
        subgraphs_vec = _table_vector(b, M.ModelStartSubgraphsVector, [subgraph])
        buffers_vec = _table_vector(b, M.ModelStartBuffersVector, buffer_offsets)
        desc = b.CreateString("written by tests/devicelab/graph/tflite_writer.py")
        M.ModelStart(b)
        M.ModelAddVersion(b, 3)
        M.ModelAddOperatorCodes(b, codes_vec)
        M.ModelAddSubgraphs(b, subgraphs_vec)
        M.ModelAddDescription(b, desc)
        M.ModelAddBuffers(b, buffers_vec)
        model = M.ModelEnd(b)
        b.Finish(model, file_identifier=identifier)
        return bytes(b.Output())


def _table_vector(b: flatbuffers.Builder, start: Any, offsets: list[int]) -> int:
    start(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _build_options(b: flatbuffers.Builder, options: Options) -> int:
    """Build an options table from its schema name and {Field: value} (lists become int32 vectors)."""
    kind, fields = options
    mod = importlib.import_module(f"tflite.{kind}")
    vectors = {k: b.CreateNumpyVector(np.asarray(v, np.int32)) for k, v in fields.items() if isinstance(v, list)}
    getattr(mod, f"{kind}Start")(b)
    for key, value in fields.items():
        getattr(mod, f"{kind}Add{key}")(b, vectors.get(key, value))
    return getattr(mod, f"{kind}End")(b)
