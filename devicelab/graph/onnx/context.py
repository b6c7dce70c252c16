"""What a node mapper may ask of the import in progress.

The importer drives the walk and owns its state; the mappers only see this interface, so
``mappers`` never imports ``importer`` (the importer imports the mappers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import onnx

from devicelab.graph.ir import Tensor


class ImportContext(Protocol):
    """The state of one ONNX conversion, as the node mappers read and extend it."""

    opset: int
    tensors: dict[str, Tensor]  # IR activation tensors found so far, by ONNX value name
    alias: dict[str, str]  # ONNX values that are another value under a new name

    def is_const(self, t: str) -> bool:
        """Whether ``t`` is an initializer or a folded constant."""
        ...

    def const(self, t: str, node: str, op: str, max_values: int | None = None) -> np.ndarray:
        """The value of constant ``t``, or an error saying it is computed at run time (or that it
        holds more than ``max_values`` values, checked before they are read)."""
        ...

    def const_shape(self, t: str) -> tuple[int, ...]:
        """The shape of constant ``t``, without reading its data."""
        ...

    def optional_const(
        self, ins: list[str], i: int, name: str, op: str, max_values: int | None = None
    ) -> np.ndarray | None:
        """The constant at input ``i`` (at most ``max_values`` values), or None when the input is absent."""
        ...

    def inferred(self, t: str, name: str, op: str, why: str) -> tuple[int, ...]:
        """The output shape from ONNX shape inference, or an error saying it cannot be resolved."""
        ...

    def act(self, t: str, node: str, op: str, what: str = "input") -> Tensor:
        """The activation tensor ``t``, or an error saying that a constant is not supported there."""
        ...

    def emit(
        self,
        node: onnx.NodeProto,
        name: str,
        ir_type: str,
        inputs: list[str],
        attrs: dict[str, Any],
        outputs: list[str] | None = None,
    ) -> None:
        """Append one IR operator for an ONNX node, inferring its output shapes by the IR's rules."""
        ...


# (context, node, node name, inputs with aliases resolved, attributes) -> emits IR operators.
Mapper = Callable[[ImportContext, onnx.NodeProto, str, list[str], dict[str, Any]], None]
