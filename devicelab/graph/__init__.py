"""The graph language of the lab: one IR for every network, with readers, writers and costs.

Nothing here imports Django; heavy readers (onnx, tflite) are imported only when used.
"""

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, OpCost, Operator, Tensor
from devicelab.graph.jsonio import SCHEMA_VERSION, graph_from_dict, graph_from_json, graph_to_dict, graph_to_json
from devicelab.graph.limits import DEFAULT_LIMITS, ImportLimits, LimitExceeded
from devicelab.graph.load import detect_format, load_graph, load_graph_file
from devicelab.graph.ops import OPS

__all__ = [
    "DEFAULT_LIMITS",
    "OPS",
    "SCHEMA_VERSION",
    "Graph",
    "GraphBuilder",
    "GraphError",
    "ImportLimits",
    "LimitExceeded",
    "OpCost",
    "Operator",
    "Tensor",
    "detect_format",
    "graph_from_dict",
    "graph_from_json",
    "graph_to_dict",
    "graph_to_json",
    "load_graph",
    "load_graph_file",
]
