"""The OpenCL backend's fusion rule: which operators of a graph share one kernel.

This backend's own rule (the predictors learn it from ``plan.kernels_for_graph``):

1. **Epilogue anchors.** ``conv2d``, ``depthwise_conv2d`` and ``fully_connected`` run with a fused
   bias and activation, as mobile frameworks (MNN, TFLite GPU) do; element-wise ``add`` / ``sub``
   / ``mul`` / ``div`` and a standalone ``batch_norm`` take a fused activation too.
2. **Batch norm folds into the producer.** A ``batch_norm`` directly after a ``conv2d`` or
   ``depthwise_conv2d`` (or after a ``fully_connected`` whose output is 2-D, so the features are
   the channel axis) is folded into that operator's weights and bias.
3. **One activation follows.** An activation (relu, relu6, hard_swish, hard_sigmoid, sigmoid,
   swish, tanh, gelu, leaky_relu, elu, clip) directly after an anchor, or after the batch norm
   folded into it, is applied in the anchor's epilogue.
4. **Only a sole consumer is absorbed.** An operator is absorbed only when it is the one reader
   of its producer's output and that output is not a graph output (else the unfused value would
   be needed and is never written).
5. **Views cost nothing.** ``reshape`` and ``flatten`` alias their input's buffer (NCHW is
   contiguous) and run no kernel; only a view of a graph input is materialized by a copy.
6. **Several kernels for one operator.** ``concat`` runs one ``copy_slice`` per input and
   ``split`` one per output.
7. Every other operator is one kernel of its own.

Rules 5 to 7 are the plan's (``plan.kernels_for_graph``); this module groups the operators.
"""

from __future__ import annotations

from devicelab.graph.ir import Graph, Operator

ACTIVATIONS: dict[str, int] = {  # IR type -> code of the kernels' fused activation (``ll_act``)
    "relu": 1,
    "relu6": 2,
    "hard_swish": 3,
    "sigmoid": 4,
    "swish": 5,
    "tanh": 6,
    "hard_sigmoid": 7,
    "leaky_relu": 8,
    "elu": 9,
    "clip": 10,
    "gelu": 11,
}
BINARY_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3}
BN_FOLDERS = ("conv2d", "depthwise_conv2d", "fully_connected")
EPILOGUE_ANCHORS = (*BN_FOLDERS, *BINARY_OPS, "batch_norm")
VIEWS = ("reshape", "flatten")


def _sole_consumer(graph: Graph, op: Operator, consumers: dict[str, list[Operator]]) -> Operator | None:
    """The one operator reading ``op``'s single output, if it reads nothing else and that output
    is not a graph output."""
    if len(op.outputs) != 1 or op.outputs[0] in graph.outputs:
        return None
    readers = consumers.get(op.outputs[0], [])
    if len(readers) != 1 or len(readers[0].inputs) != 1:
        return None
    return readers[0]


def fusion_groups(graph: Graph) -> list[list[Operator]]:
    """The operators of a canonical graph grouped by the fusion rule, in topological order: each
    group is an anchor and what it absorbs (a view is a group of its own)."""
    consumers = graph.consumers()
    absorbed: set[str] = set()
    groups: list[list[Operator]] = []
    for op in graph.topological_order():
        if op.name in absorbed:
            continue
        chain = [op]
        if op.type in EPILOGUE_ANCHORS:
            nxt = _sole_consumer(graph, op, consumers)
            foldable = op.type in BN_FOLDERS and (
                op.type != "fully_connected" or len(graph.tensors[op.outputs[0]].shape) == 2
            )
            if nxt is not None and nxt.type == "batch_norm" and foldable:
                chain.append(nxt)
                nxt = _sole_consumer(graph, nxt, consumers)
            if nxt is not None and nxt.type in ACTIVATIONS:
                chain.append(nxt)
        absorbed.update(o.name for o in chain)
        groups.append(chain)
    return groups


__all__ = ["ACTIVATIONS", "BINARY_OPS", "BN_FOLDERS", "EPILOGUE_ANCHORS", "VIEWS", "fusion_groups"]
