"""What an emitter may ask of the TFLite export in progress, and the layout helpers emitters share.

An emitter sees the export through ``EmitContext`` and writes one ``Group``: an IR operator
together with the batch norm folded into its weights and the activation fused into its
``fused_activation_function``. The TFLite tensor a group writes is named after its operator;
helper tensors of a multi-operator decomposition (the PAD before a convolution, the LOGISTIC of a
swish) are named ``X::<suffix>``, so ``name.split("::")[0]`` always gives the IR operator. The
emitters live in ``emit_layers`` (weights and windows) and ``emit_tensors`` (the rest); the
writer owns the context, so neither imports ``writer``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Operator
from devicelab.graph.ops import Shape
from devicelab.graph.tflite.context import NCHW_FROM_NHWC
from devicelab.graph.tflite.encode import Options


def to_nhwc(shape: Sequence[int]) -> list[int]:
    """A 4-D NCHW shape as NHWC; other ranks unchanged."""
    if len(shape) == 4:
        n, c, h, w = shape
        return [n, h, w, c]
    return list(shape)


def tflite_axis(axis: int, rank: int) -> int:
    """The TFLite axis of an IR axis of a tensor of this rank."""
    return NCHW_FROM_NHWC[axis] if rank == 4 else axis


def activation_code(op: Operator) -> int | None:
    """The ``fused_activation_function`` that computes ``op``, or None if it cannot be fused.

    TANH (4) is in the schema but never fused: LiteRT's conv kernels clamp instead of applying
    it and its fully connected kernel refuses it, so a tanh stays a TANH operator.
    """
    if op.type in ("relu", "relu6"):
        return 1 if op.type == "relu" else 3
    if op.type == "clip":
        return {(0.0, None): 1, (-1.0, 1.0): 2, (0.0, 6.0): 3}.get((op.attrs["min"], op.attrs["max"]))
    return None


@dataclass
class Group:
    """An IR operator with the batch norm folded into it and the activation fused into it."""

    op: Operator
    bn: Operator | None = None
    act: Operator | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The IR operators the group computes, in graph order."""
        return tuple(o.name for o in (self.op, self.bn, self.act) if o is not None)

    @property
    def outputs(self) -> list[str]:
        """The IR tensors that the group's result holds."""
        last = self.act or self.bn
        return list(last.outputs) if last is not None else list(self.op.outputs)

    @property
    def fused(self) -> int:
        """The group's ``fused_activation_function`` (0: none)."""
        code = activation_code(self.act) if self.act is not None else None
        return code or 0


class EmitContext(Protocol):
    """The export in progress, as the emitters see it."""

    group: Group  # the group being written

    def shape(self, t: str) -> Shape:
        """IR (NCHW) shape of an IR tensor."""
        ...

    def x(self, t: str) -> int:
        """The TFLite tensor that holds IR activation ``t``."""
        ...

    def weights(self, op: Operator) -> dict[str, np.ndarray]:
        """The seeded draws of ``op`` in ONNX layouts (``operator_weights``), by suffix."""
        ...

    def const(self, name: str, value: Any, weight: bool = True) -> int:
        """A float32 constant; in fp16 a weight becomes float16 data and a DEQUANTIZE."""
        ...

    def ints(self, name: str, values: Sequence[int], shape: Sequence[int] | None = None) -> int:
        """An int32 constant (shape: a vector of the values unless given)."""
        ...

    def result(self, k: int = 0) -> int:
        """The TFLite tensor of the group's output ``k``, named after its operator."""
        ...

    def helper(self, suffix: str, shape: Sequence[int]) -> int:
        """An intermediate float32 tensor named ``X::<suffix>`` (TFLite shape)."""
        ...

    def add(
        self, builtin: str, inputs: list[int], outputs: list[int], options: Options | None = None, version: int = 1
    ) -> None:
        """Append a TFLite operator."""
        ...


# Writes one group as TFLite operators through the context.
Emitter = Callable[[EmitContext, Operator], None]


def cannot(op: Operator, why: str) -> GraphError:
    """The error for an IR operator that TFLite cannot express."""
    return GraphError(f"TFLite cannot express this operator: {why}", node=op.name, op=op.type)


def tflite_layout(value: np.ndarray, rank: int) -> np.ndarray:
    """A constant broadcast against a tensor of ``rank``, in that tensor's TFLite layout."""
    if rank != 4 or value.ndim == 0:
        return value
    return value.reshape((1,) * (4 - value.ndim) + value.shape).transpose(0, 2, 3, 1)


def reshape_options(target: list[int]) -> Options:
    """The options of a RESHAPE to ``target`` (converters write it both as input and option)."""
    return ("ReshapeOptions", {"NewShape": target})
