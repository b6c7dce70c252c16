"""How much an import may compute and describe: bounds checked before anything is allocated.

A model file is small, but what it describes need not be: a 143-byte ONNX file can ask for
``Range(0, 2**28)`` to be folded at import time, and an input declared ``[1, 3, 100000, 100000]``
costs nothing to read but 112 GiB to run. Every reader (ONNX, TFLite, graph JSON, ``load``) takes
an ``ImportLimits`` and checks each count against it *before* the constant is computed or the
shape is accepted, and refuses with ``LimitExceeded`` (a ``GraphError``) naming the node, its
operator type and the numbers. The limits are plain data so that a server can set them from its
settings; ``DEFAULT_LIMITS`` holds every network of the zoo with a wide margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from devicelab.graph import ops
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph
from devicelab.graph.ops.costs import zero


@dataclass(frozen=True)
class ImportLimits:
    """Bounds on one import; every count is of tensor elements (or of operators), not bytes.

    ``max_tensor_elements``: the most elements one tensor the model describes may hold: every
    activation (graph inputs, and every inferred output), every declared initializer or constant,
    and every operator's weights. The zoo's largest activation is 6.3 million elements (DeepLab-V3
    at 513x513) and its largest operator weighs 2.4 million; the default, 2**27 (134 million, 512
    MiB of float32), refuses ``[1, 3, 100000, 100000]`` (3e10).

    ``max_folded_elements``: the most elements an import may compute by folding constants (ONNX
    ``Range``, ``ConstantOfShape``, ``Expand``, ...), summed over the whole model, since a model can
    fold many constants each under a per-node bound. Real models fold shape vectors and masks; the
    default, 2**24 (16.7 million, 128 MiB of int64, about twice that at the peak of one fold), also
    holds a MobileNet's or a ResNet-18's weights put through a constant ``Transpose``.

    ``max_operators``: the most nodes a model may have once ONNX local functions are inlined (a
    kilobyte of nested functions can expand to millions of nodes) and the most operators any
    reader accepts.
    """

    max_tensor_elements: int = 2**27
    max_folded_elements: int = 2**24
    max_operators: int = 2**20

    def __post_init__(self) -> None:
        for name in ("max_tensor_elements", "max_folded_elements", "max_operators"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"ImportLimits.{name} must be a positive int, got {value!r}")


DEFAULT_LIMITS = ImportLimits()
# For re-reading a graph the lab stored itself only to show it (its operator table): reading graph
# JSON allocates nothing per element, and a model stored before the limits, or under higher ones,
# must still show. Anything that runs or predicts a stored graph reads it under the real limits.
NO_LIMITS = ImportLimits(2**62, 2**62, 2**62)


class LimitExceeded(GraphError):
    """A model over one of its import's ``ImportLimits``; ``limit`` names which, ``count`` and
    ``maximum`` give the numbers."""

    def __init__(self, reason: str, *, limit: str, count: int, maximum: int, node: str | None, op: str | None) -> None:
        super().__init__(reason, node=node, op=op)
        self.limit = limit
        self.count = count
        self.maximum = maximum


def check_graph(graph: Graph, limits: ImportLimits) -> Graph:
    """Check a whole graph against ``limits`` (every tensor, every operator's weights, the operator
    count) and return it; the readers end with this, after their own earlier checks."""
    check_operators(len(graph.operators), limits)
    for t in graph.inputs:
        check_elements(graph.tensors[t].shape, limits, node=t, what="the graph input")
    for o in graph.operators:
        out_shapes = graph.output_shapes(o)
        for t, shape in zip(o.outputs, out_shapes, strict=False):
            check_elements(shape, limits, node=o.name, op=o.type, what=f"its output {t!r}")
        s = ops.spec(o.type, o.name)
        if s.params is not zero:
            check_weights(s.params(graph.input_shapes(o), out_shapes, o.attrs), limits, node=o.name, op=o.type)
    return graph


def check_elements(
    shape: Sequence[int], limits: ImportLimits, *, node: str | None, op: str | None = None, what: str = "its output"
) -> None:
    """Refuse a tensor of ``shape`` (``what`` says which) holding more than ``max_tensor_elements``."""
    count = math.prod(int(d) for d in shape)
    if count > limits.max_tensor_elements:
        raise LimitExceeded(
            f"{what} has shape {list(shape)}, {count} elements; the limit is "
            f"{limits.max_tensor_elements} elements per tensor",
            limit="max_tensor_elements",
            count=count,
            maximum=limits.max_tensor_elements,
            node=node,
            op=op,
        )


def check_weights(count: int, limits: ImportLimits, *, node: str, op: str) -> None:
    """Refuse an operator whose weights hold more than ``max_tensor_elements`` elements."""
    if count > limits.max_tensor_elements:
        raise LimitExceeded(
            f"its weights would hold {count} elements; the limit is {limits.max_tensor_elements} elements per tensor",
            limit="max_tensor_elements",
            count=count,
            maximum=limits.max_tensor_elements,
            node=node,
            op=op,
        )


def check_operators(count: int, limits: ImportLimits, what: str = "operators") -> None:
    """Refuse a model of more than ``max_operators`` operators (``what`` says what was counted)."""
    if count > limits.max_operators:
        raise LimitExceeded(
            f"the model has {count} {what}; the limit is {limits.max_operators}",
            limit="max_operators",
            count=count,
            maximum=limits.max_operators,
            node=None,
            op=None,
        )


class FoldBudget:
    """The elements one import has folded so far, against ``max_folded_elements``."""

    def __init__(self, limits: ImportLimits) -> None:
        self.limits = limits
        self.spent = 0

    def check(self, count: int, *, node: str, op: str) -> None:
        """Refuse, before computing it, a constant of ``count`` elements that would overrun the budget."""
        maximum = self.limits.max_folded_elements
        if self.spent + count > maximum:
            so_far = f" ({self.spent} folded before it)" if self.spent else ""
            raise LimitExceeded(
                f"would fold {count} elements{so_far}; the limit is {maximum} folded elements per model",
                limit="max_folded_elements",
                count=self.spent + count,
                maximum=maximum,
                node=node,
                op=op,
            )

    def spend(self, count: int) -> None:
        """Record a constant of ``count`` elements as folded."""
        self.spent += count


__all__ = [
    "DEFAULT_LIMITS",
    "FoldBudget",
    "ImportLimits",
    "LimitExceeded",
    "NO_LIMITS",
    "check_elements",
    "check_graph",
    "check_operators",
    "check_weights",
]
