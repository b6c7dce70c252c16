"""The seeded inputs every backend feeds a graph."""

from __future__ import annotations

import numpy as np

from devicelab.graph import GraphBuilder
from devicelab.measure.inputs import make_inputs


def test_inputs_are_seeded_and_shaped() -> None:
    b = GraphBuilder("tiny", (1, 3, 5, 7))
    graph = b.build(b.relu(b.input))
    first, again, other = make_inputs(graph), make_inputs(graph), make_inputs(graph, seed=1)
    [name] = graph.inputs
    assert first[name].shape == (1, 3, 5, 7) and first[name].dtype == np.float32
    np.testing.assert_array_equal(first[name], again[name])
    assert not np.array_equal(first[name], other[name])
    assert abs(float(first[name].mean())) < 0.5 and 0.5 < float(first[name].std()) < 1.5
