"""The closed operator vocabulary of the graph IR: attributes, shape rules and costs.

Every operator type the lab knows is one ``OpSpec`` in ``OPS`` (``vocabulary``). A spec fills in
default attributes (``attributes``: so two graphs that mean the same thing compare equal), infers
output shapes from input shapes (``shapes``), counts multiply-adds, FLOPs and parameters
(``costs``) and gives its outputs' dtype (``dtypes``: an operator on int8 / uint8 tensors is its
quantized form); ``infer`` checks one operator against its spec. The conventions are documented in
``docs/graph-format.md``; in short, shapes are NCHW with the batch dimension, MACs count only
the multiply-adds of conv / fully-connected / matmul, biases and batch norm add parameters but
no MACs (batch norm is treated as folded into the preceding convolution for MACs).
"""

from devicelab.graph.ops.common import DTYPES, Attrs, CostFn, Shape, numel
from devicelab.graph.ops.dtypes import QUANTIZED, is_quantized_dtype
from devicelab.graph.ops.infer import (
    normalize_and_infer,
    normalize_and_infer_memo,
    normalize_infer_and_size_memo,
    output_dtype,
    output_dtypes,
)
from devicelab.graph.ops.vocabulary import OPAQUE, OPS, OpSpec, spec

__all__ = [
    "DTYPES",
    "OPAQUE",
    "OPS",
    "QUANTIZED",
    "Attrs",
    "CostFn",
    "OpSpec",
    "Shape",
    "normalize_and_infer",
    "normalize_and_infer_memo",
    "normalize_infer_and_size_memo",
    "is_quantized_dtype",
    "numel",
    "output_dtype",
    "output_dtypes",
    "spec",
]
