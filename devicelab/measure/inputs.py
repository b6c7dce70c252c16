"""The inputs every backend feeds a graph: fixed, seeded, the same values on every device.

Backends measure with the same inputs so their outputs can be compared (the OpenCL backend is
checked against onnxruntime on exactly these) and so a timing never depends on the data drawn.
"""

from __future__ import annotations

import numpy as np

from devicelab.graph.ir import Graph

INPUT_SEED = 0


def make_inputs(graph: Graph, seed: int = INPUT_SEED) -> dict[str, np.ndarray]:
    """One fixed random array per graph input: standard normal floats, small non-negative integers."""
    rng = np.random.default_rng(seed)
    inputs: dict[str, np.ndarray] = {}
    for name in graph.inputs:
        t = graph.tensors[name]
        dtype = np.dtype(t.dtype)
        if np.issubdtype(dtype, np.floating):
            inputs[name] = rng.standard_normal(t.shape).astype(dtype)
        else:
            inputs[name] = rng.integers(0, 8, size=t.shape).astype(dtype)
    return inputs


__all__ = ["INPUT_SEED", "make_inputs"]
