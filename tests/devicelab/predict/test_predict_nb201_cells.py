"""NAS-Bench-201 networks built from their cell ops (``nb201_cells``) are the general builder's graphs.

Which operators a network holds depends on which of its six edges are ``none`` (64 patterns:
dead nodes, edges that never reach the output, the all-zero cell); each pattern is checked with
the other edges filled three ways, so every op appears on every edge. (All 15625 cells were
compared once when the module was written: 0 differences.)"""

from __future__ import annotations

import itertools
import random

import orjson
import pytest

from devicelab.graph import GraphError, graph_to_dict
from devicelab.graph.nas import nb201, nb201_cells
from devicelab.predict.batch import answer_items
from devicelab.predict.predictor import ScenarioPredictor

LIVE_OPS = ("skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")


def cells() -> list[tuple[str, ...]]:
    """Every pattern of ``none`` edges, its other edges filled three ways."""
    rng = random.Random(201)
    out = []
    for pattern in itertools.product((True, False), repeat=len(nb201.EDGES)):
        for fill in range(3):
            out.append(
                tuple("none" if dead else (LIVE_OPS[fill] if fill < 2 else rng.choice(LIVE_OPS)) for dead in pattern)
            )
    return out


@pytest.mark.parametrize("chunk", range(4))
def test_the_same_graph_as_the_general_builder(chunk: int) -> None:
    for ops in cells()[chunk::4]:
        fast = nb201_cells.from_cell(ops, name="cell")
        general = nb201.from_string(nb201.to_string(ops), name="cell")
        assert fast == general, ops
        # the same document, key order of the attributes included
        assert orjson.dumps(graph_to_dict(fast)) == orjson.dumps(graph_to_dict(general)), ops
        fast.check()  # names, edges, order and every shape, derived again


def test_a_cell_string_and_a_bad_one() -> None:
    arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|nor_conv_3x3~2|"
    assert nb201_cells.from_string(arch) == nb201.from_string(arch)
    with pytest.raises(GraphError, match="unknown op 'conv_5x5'"):
        nb201_cells.from_string(arch.replace("nor_conv_1x1", "conv_5x5"))
    with pytest.raises(GraphError, match="a cell needs 6 ops"):
        nb201_cells.from_cell(("none",) * 5)


def test_graphs_are_independent() -> None:
    ops = ("nor_conv_3x3",) * 6
    a, b = nb201_cells.from_cell(ops), nb201_cells.from_cell(ops)
    a.operators[3].attrs["out_channels"] = 1
    assert b.operators[3].attrs["out_channels"] == 16
    assert a.operators[3] is not b.operators[3]


@pytest.fixture(scope="module")
def predictor(qed_s10_gbdt: ScenarioPredictor) -> ScenarioPredictor:
    """A GBDT predictor of the qed Mali G76 phone (conftest.py)."""
    return qed_s10_gbdt


def test_a_batch_of_cells_is_predicted_as_from_the_general_graphs(predictor: ScenarioPredictor) -> None:
    strings = nb201.sample_strings(40, 9)
    answered, errors = answer_items(predictor, [(i, {"name": f"c{i}", "nb201": s}) for i, s in enumerate(strings)])
    assert not errors
    general = predictor.predict([nb201.from_string(s, name=f"c{i}") for i, s in enumerate(strings)], on_missing="zero")
    assert [answered[i]["latency_ms"] for i in range(len(strings))] == [p.latency_ms for p in general]
    assert [answered[i]["warnings"] for i in range(len(strings))] == [
        [w.to_dict(p.latency_ms) for w in p.warnings] for p in general
    ]
