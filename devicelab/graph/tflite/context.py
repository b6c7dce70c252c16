"""What an operator handler may ask of the TFLite import in progress, and the NHWC -> NCHW layout.

The importer owns the state of one conversion; the handlers only see the ``Converter``
interface, so ``mappers`` never imports ``importer`` (the importer imports the mappers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Tensor
from devicelab.graph.tflite.wire import RawOp

NHWC_TO_NCHW_AXIS = (0, 2, 3, 1)
NCHW_FROM_NHWC = (0, 3, 1, 2)  # IR axis j holds NHWC axis NCHW_FROM_NHWC[j]


def to_nchw(shape: Sequence[int]) -> tuple[int, ...]:
    """A 4-D NHWC shape as NCHW; other ranks unchanged."""
    if len(shape) == 4:
        n, h, w, c = shape
        return (n, c, h, w)
    return tuple(shape)


@dataclass
class OpContext:
    """The TFLite operator being converted."""

    op: RawOp
    kind: str  # TFLite op name, e.g. CONV_2D
    node: str  # IR name of the operator (its first output tensor's name)

    def input(self, k: int) -> int:
        """Index of input ``k`` (or -1 when absent)."""
        return self.op.inputs[k] if k < len(self.op.inputs) else -1

    def fail(self, reason: str) -> GraphError:
        """A GraphError naming this operator."""
        return GraphError(f"{reason} (operator #{self.op.index})", node=self.node, op=self.kind)


class Converter(Protocol):
    """The state of one TFLite conversion, as the operator handlers read and extend it."""

    tensors: dict[str, Tensor]  # IR tensors declared so far, by name
    alias: dict[int, int]  # dropped QUANTIZE / DEQUANTIZE outputs -> the tensor they stand for
    live: set[int]  # TFLite tensors computed at run time (the rest are constants)

    def raw_shape(self, i: int) -> list[int]:
        """The TFLite (NHWC) shape of a tensor, with a dynamic batch read as 1."""
        ...

    def dtype(self, i: int) -> str:
        """The IR dtype of a tensor."""
        ...

    def is_live(self, i: int) -> bool:
        """Whether a tensor is computed at run time (as opposed to a constant)."""
        ...

    def declare(self, i: int) -> str:
        """Create the IR tensor of TFLite tensor ``i`` and mark it live."""
        ...

    def fresh(self, base: str, shape: Sequence[int], dtype: str) -> str:
        """A new intermediate IR tensor whose name clashes with no TFLite tensor."""
        ...

    def x(self, c: OpContext, i: int, what: str = "input") -> str:
        """IR name of an activation input, or a GraphError if it is a constant or absent."""
        ...

    def const(self, c: OpContext, i: int, what: str) -> list[int]:
        """Shape of a constant input (filters, weights), or a GraphError."""
        ...

    def const_ints(self, i: int) -> list[int] | None:
        """Values of a small int32/int64 constant, or None when its buffer is empty."""
        ...

    def const_float(self, i: int) -> float | None:
        """Value of a float32 scalar constant, or None."""
        ...

    def emit(self, op_type: str, inputs: list[str], outputs: list[str], attrs: dict[str, Any], name: str) -> None:
        """Append an IR operator with a name no other operator has."""
        ...

    def emit_act(self, c: OpContext, op_type: str, inputs: list[str], attrs: dict[str, Any], fused: int) -> None:
        """Emit an operator writing the TFLite output, with its fused activation split off."""
        ...

    def options(self, c: OpContext, expected: str, required: bool = False) -> dict[str, Any]:
        """The operator's options, checked to be of the type its opcode needs."""
        ...


# Converts one TFLite operator by emitting IR operators through the converter.
Handler = Callable[[Converter, OpContext], None]
