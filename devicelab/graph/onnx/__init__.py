"""ONNX, read into the graph IR and written from it.

Reading goes through these phases, one module each, driven by ``importer``, within the import's
``ImportLimits`` (``devicelab.graph.limits``):

1. ``wire``: refuse bytes that are not a ModelProto before protobuf sees them (a top-level field
   whose length runs past the end of the file), then parse, wrapping every parser error in a
   ``GraphError``.
2. ``prepare``: check the model's size (nodes once local functions are inlined, initializers'
   declared elements), refuse tensors whose data is in an external file, the opset and the
   operator vocabulary, fix the graph inputs' shapes (a symbolic batch dimension becomes 1, any
   other is an error naming the input) and order the nodes. ``onnx.shape_inference`` never runs
   over the whole model (its data propagation allocates per element of what a file declares);
   a mapper that needs its rule for one output runs it on a model of that one node.
3. ``fold``: nodes whose inputs are all constants, ``Shape`` of an activation included, are
   evaluated with numpy and never become IR operators; each result's size is known, and checked
   against the model's folding budget, before it is computed. ``Identity`` and ``Dropout`` are
   dropped.
4. ``mappers``: every other node maps to one IR operator whose weights become attributes.
5. ``fuse``: multi-node patterns (FC bias, swish, hard_swish, GELU, channel shuffle) become one
   IR operator named after the node that writes the pattern's output.

Opsets 11 to 21 are tested; older opsets down to 7 are read too. ``export`` writes an IR graph as a
runnable ONNX model with random weights (one emitter per IR operator type in ``emitters``), which
the importer reads back to the same graph.
"""

from devicelab.graph.onnx.export import graph_to_onnx_bytes, graph_to_onnx_model, operator_weights
from devicelab.graph.onnx.importer import (
    OnnxImport,
    graph_from_onnx_bytes,
    graph_from_onnx_model,
    import_onnx_model,
)
from devicelab.graph.onnx.prepare import count_onnx_nodes
from devicelab.graph.onnx.wire import parse_onnx_bytes

__all__ = [
    "OnnxImport",
    "count_onnx_nodes",
    "graph_from_onnx_bytes",
    "graph_from_onnx_model",
    "graph_to_onnx_bytes",
    "graph_to_onnx_model",
    "import_onnx_model",
    "operator_weights",
    "parse_onnx_bytes",
]
