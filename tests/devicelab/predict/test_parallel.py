"""A large batch split over worker processes: the same answers as one process, and a worker
that dies loses nothing."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from devicelab.graph import graph_to_dict, nas
from devicelab.graph.nas import nb201
from devicelab.predict import qed
from devicelab.predict.batch import answer_items
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.parallel import BatchPool, chunks
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor
from tests.waiting import wait_for

DEVICE = "s10"


@pytest.fixture(scope="module")
def predictor() -> ScenarioPredictor:
    """A Lasso predictor of the qed Mali G76 phone, trained on its real measurements."""
    family = qed.DEVICES[DEVICE][1]
    return train_predictor(
        qed.gpu_samples(DEVICE),
        TfliteGpuDeducer(family),
        Scenario("tflite_gpu", f"qed:{DEVICE}", precision="fp16", gpu=qed.DEVICES[DEVICE][0]),
        "lasso",
        search="fast",
        overhead_kinds=("elementwise", "reshape", "split", "pad"),
    )


@pytest.fixture(scope="module")
def items() -> list[tuple[int, Any]]:
    """Graph JSON NAS samples and NAS-Bench-201 cells, as a request carries them."""
    graphs = [{"name": f"g{i}", "graph": graph_to_dict(g)} for i, g in enumerate(nas.sample("synthetic", 36, 5))]
    cells = [{"name": f"c{i}", "nb201": c} for i, c in enumerate(nb201.sample_strings(12, 3))]
    return list(enumerate(graphs[:18] + cells + graphs[18:]))


def same(a: dict[int, Any], b: dict[int, Any]) -> bool:
    """The same answers: names, kernels and models exactly, latencies to the last few bits (a
    model's matrix product may round differently when its batch has other rows)."""
    assert sorted(a) == sorted(b)
    for i in a:
        x, y = dict(a[i]), dict(b[i])
        kx, ky = x.pop("kernels", []), y.pop("kernels", [])
        assert x.pop("name") == y.pop("name")
        wx, wy = x.pop("warnings"), y.pop("warnings")
        # from the features alone: exactly the same, but for the time of the kernels they concern
        effect = ("kernels_ms", "share")
        assert [{k: v for k, v in w.items() if k not in effect} for w in wx] == [
            {k: v for k, v in w.items() if k not in effect} for w in wy
        ]
        assert [w["share"] for w in wx] == pytest.approx([w["share"] for w in wy], rel=1e-12)
        assert x == pytest.approx(y, rel=1e-12)
        assert [(k["name"], k["type"], k["ops"], k["model"]) for k in kx] == [
            (k["name"], k["type"], k["ops"], k["model"]) for k in ky
        ]
        assert [k["latency_ms"] for k in kx] == pytest.approx([k["latency_ms"] for k in ky], rel=1e-12)
    return True


@pytest.fixture
def pool() -> Iterator[BatchPool]:
    p = BatchPool(2)
    yield p
    p.close()


def test_chunks_keep_order_and_split_evenly() -> None:
    parts = chunks(list(range(11)), 3)
    assert parts == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    assert chunks([1, 2], 4) == [[1], [2]]
    assert chunks([], 2) == [[]]


def test_a_worker_answers_as_this_process_does(predictor: ScenarioPredictor, items: list, pool: BatchPool) -> None:
    alone, errors = answer_items(predictor, items)
    assert errors == [] and sorted(alone) == list(range(len(items)))
    for breakdown in (False, True):
        expected = answer_items(predictor, items, breakdown)[0]
        together, errors = pool.answer("s10", predictor, items, breakdown)
        assert errors == []
        assert same(together, expected)
    assert pool.chunks_answered == {"caller": 2, "worker": 2}
    assert all(r["latency_ms"] > 0 for r in alone.values())
    assert "kernels" in together[len(items) - 1] and "kernels" not in alone[0]


def test_bad_architectures_in_several_chunks_are_all_named(
    predictor: ScenarioPredictor, items: list, pool: BatchPool
) -> None:
    bad = list(items)
    bad[3] = (3, {"name": "typo", "nb201": "|bogus~0|+|none~0|none~1|+|none~0|none~1|none~2|"})
    bad[40] = (40, {"name": "nograph", "graph": {"schema_version": 1}})
    results, errors = pool.answer("s10", predictor, bad)
    assert [(e["index"], e["name"]) for e in errors] == [(3, "typo"), (40, "nograph")]
    assert "bogus" in errors[0]["error"] and errors[1]["error"].startswith("graph:")


def test_a_worker_that_dies_loses_nothing(predictor: ScenarioPredictor, items: list, pool: BatchPool) -> None:
    expected = answer_items(predictor, items)[0]
    assert same(pool.answer("s10", predictor, items)[0], expected)
    (pid,) = pool.worker_pids()
    os.kill(pid, signal.SIGKILL)

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(gone, 10, f"pool worker {pid} to die", interval=0.05)
    # The dead worker's chunk is answered here; the pool starts a new worker for the next batch.
    assert same(pool.answer("s10", predictor, items)[0], expected)
    assert pool.chunks_answered["fallback"] + pool.chunks_answered["caller"] >= 3
    assert same(pool.answer("s10", predictor, items)[0], expected)
    (new_pid,) = pool.worker_pids()
    assert new_pid != pid
    assert same(pool.answer("s10", predictor, items)[0], expected)
    assert pool.chunks_answered["worker"] >= 2


def test_one_process_answers_alone(predictor: ScenarioPredictor, items: list) -> None:
    single = BatchPool(1)
    assert single.worker_pids() == []
    assert same(single.answer("s10", predictor, items)[0], answer_items(predictor, items)[0])
    assert single.chunks_answered == {"caller": 1}
    with pytest.raises(ValueError, match="at least 1"):
        BatchPool(0)


def test_a_chunk_that_is_not_json_data_is_answered_here(
    predictor: ScenarioPredictor, items: list, pool: BatchPool
) -> None:
    odd = list(items)
    odd[-1] = (len(items) - 1, {"name": "odd", "graph": {1, 2}})  # a set: a Python caller's object, not JSON
    results, errors = pool.answer("s10", predictor, odd)
    assert [(e["index"], e["name"]) for e in errors] == [(len(items) - 1, "odd")]
    assert "graph JSON object, not set" in errors[0]["error"]
    assert pool.chunks_answered == {"caller": 2}
