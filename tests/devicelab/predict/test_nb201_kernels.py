"""NAS-Bench-201 kernels deduced on three cells per stage (``nb201_kernels``) are the five-cell network's.

Each deducer the predictors use is compared on the check cells (every pattern of ``none`` edges:
dead nodes, edges that never reach the output, the all-zero cell, and each op on all six edges)
and a seeded sample; the slow test compares all 15,625 cells for the host CPU's learned rules and
a Mali GPU. A batch answered through them equals the general path to the last bit."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest

from devicelab.graph.ir import Graph
from devicelab.graph.nas import nb201, nb201_cells
from devicelab.predict import nb201_kernels
from devicelab.predict.batch import answer_items
from devicelab.predict.cpu_learning import learn_cpu_deducer
from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.deduce_opencl import OpenclDeducer
from devicelab.predict.deduce_tflite_cpu import TfliteCpuDeducer
from devicelab.predict.deduce_tflite_gpu import GPU_FAMILIES, TfliteGpuDeducer
from devicelab.predict.kernels import Kernel
from devicelab.predict.predictor import ScenarioPredictor
from devicelab.predict.records import ProfileRecord

EDGE_CASES = [
    ("none",) * 6,  # the all-zero cell: mul(x, 0)
    ("skip_connect",) * 6,  # sums of the input only
    ("nor_conv_1x1", "none", "none", "none", "none", "none"),  # the output is disconnected
    ("none", "nor_conv_3x3", "avg_pool_3x3", "skip_connect", "none", "none"),  # node 1 dead, 1->2 dropped
    ("nor_conv_3x3", "nor_conv_1x1", "none", "none", "none", "skip_connect"),  # node 1 leads nowhere
    ("none", "none", "none", "nor_conv_3x3", "none", "none"),  # one edge straight to the output
]


def tflite_cpu_deducer() -> TfliteCpuDeducer:
    """TFLite CPU rules of the kind a phone teaches: conv + BN + ReLU and add + ReLU fused."""
    return TfliteCpuDeducer(
        {"conv2d|batch_norm": (5, 0), "conv2d|relu": (4, 1), "batch_norm|relu": (2, 0), "add|relu": (3, 1)},
        {"flatten": (3, 0)},
        {"conv2d|1x1|s1": "gemm", "conv2d|*": "igemm", "elementwise|*": "add", "pooling|*": "average_pool_2d"},
    )


@pytest.fixture(scope="module")
def cpu_deducer(cpu_records: dict[str, list[ProfileRecord]]) -> CpuDeducer:
    """The host CPU runtime's rules, learned from what it recorded."""
    return learn_cpu_deducer([*cpu_records["synthetic"], *cpu_records["probes"]])


def general(deducer: nb201_kernels.SitedDeducer, cell: Sequence[str]) -> list[Kernel]:
    return deducer.kernels(nb201_cells.from_cell(cell))


def same_kernels(a: Sequence[Kernel], b: Sequence[Kernel]) -> bool:
    return [(k.type, k.raw) for k in a] == [(k.type, k.raw) for k in b]


def sample(n: int, seed: int) -> list[tuple[str, ...]]:
    rng = random.Random(seed)
    return [tuple(rng.choice(nb201.OPS) for _ in nb201.EDGES) for _ in range(n)]


@pytest.mark.parametrize("family", GPU_FAMILIES)
def test_tflite_gpu_kernels_of_every_family(family: str) -> None:
    d = TfliteGpuDeducer(family)
    for cell in EDGE_CASES + nb201_kernels.CHECK_CELLS + sample(60, 1):
        assert same_kernels(nb201_kernels.cell_kernels(d, cell), general(d, cell)), cell
    assert nb201_kernels.verified(d)


@pytest.mark.parametrize("which", ["tflite_cpu", "opencl"])
def test_tflite_cpu_and_opencl_kernels(which: str) -> None:
    d: nb201_kernels.SitedDeducer = tflite_cpu_deducer() if which == "tflite_cpu" else OpenclDeducer()
    for cell in EDGE_CASES + sample(40, 2):
        assert same_kernels(nb201_kernels.cell_kernels(d, cell), general(d, cell)), cell
    assert nb201_kernels.verified(d)


@pytest.mark.slow
def test_host_cpu_kernels(cpu_deducer: CpuDeducer) -> None:
    for cell in EDGE_CASES + nb201_kernels.CHECK_CELLS + sample(100, 3):
        assert same_kernels(nb201_kernels.cell_kernels(cpu_deducer, cell), general(cpu_deducer, cell)), cell
    assert nb201_kernels.verified(cpu_deducer)


@pytest.mark.slow
def test_every_cell_on_a_mali_gpu() -> None:
    d = TfliteGpuDeducer("mali")
    cells = list(itertools.product(nb201.OPS, repeat=len(nb201.EDGES)))
    assert nb201_kernels.agrees(d, cells) == []


class _PositionDependent(TfliteGpuDeducer):
    """A deducer whose rules are not local: the last cell of a stage runs an extra kernel when the
    network has more than three cells per stage."""

    def sited_kernels(self, graph: Graph) -> list[tuple[Kernel, int]]:
        out = super().sited_kernels(graph)
        for i, o in enumerate(graph.operators):
            if o.name.startswith("stage0/cell3/"):
                out.append((Kernel("elementwise", (i,), out[0][0].raw), i))
                break
        return out

    def kernels(self, graph: Graph) -> list[Kernel]:
        return [k for k, _ in self.sited_kernels(graph)]


def test_a_deducer_that_is_not_local_takes_the_general_path() -> None:
    d = _PositionDependent("mali")
    assert not nb201_kernels.verified(d)
    assert nb201_kernels.verified(d) is False  # remembered
    assert nb201_kernels.agrees(d, [("nor_conv_3x3",) * 6]) == [("nor_conv_3x3",) * 6]


@pytest.fixture(scope="module")
def predictor(qed_s10_gbdt: ScenarioPredictor) -> ScenarioPredictor:
    """A GBDT predictor of the qed Mali G76 phone (conftest.py)."""
    return qed_s10_gbdt


def test_a_batch_answers_as_the_general_path_and_a_breakdown_names_the_real_kernels(
    predictor: ScenarioPredictor,
) -> None:
    cells = EDGE_CASES + sample(40, 4) + [EDGE_CASES[1]]  # a cell twice in one batch
    items = [(i, {"name": f"c{i}", "nb201": nb201.to_string(c)}) for i, c in enumerate(cells)]
    answered, errors = answer_items(predictor, items)
    assert not errors
    reference = predictor.predict([nb201_cells.from_cell(c, name=f"c{i}") for i, c in enumerate(cells)])
    assert [answered[i]["latency_ms"] for i in range(len(cells))] == [p.latency_ms for p in reference]
    assert [answered[i]["kernels_ms"] for i in range(len(cells))] == [p.kernels_ms for p in reference]
    assert [answered[i]["warnings"] for i in range(len(cells))] == [
        [w.to_dict(p.latency_ms) for w in p.warnings] for p in reference
    ]
    # a breakdown goes through the five-cell graph: the kernels' own names and operators
    detailed, errors = answer_items(predictor, items[:3], breakdown=True)
    assert not errors
    full = predictor.predict([nb201_cells.from_cell(c) for c in cells[:3]], breakdown=True)
    for i in range(3):
        assert detailed[i]["latency_ms"] == full[i].latency_ms
        assert [k["name"] for k in detailed[i]["kernels"]] == [k.name for k in full[i].kernels or ()]


def test_two_copies_of_one_set_of_rules_are_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert nb201_kernels.verified(TfliteGpuDeducer("adreno"))

    def fail(*args: object) -> list[tuple[str, ...]]:
        raise AssertionError("checked again")

    monkeypatch.setattr(nb201_kernels, "agrees", fail)
    copy = TfliteGpuDeducer("adreno")
    assert nb201_kernels.known(copy) is None
    assert nb201_kernels.verified(copy) and nb201_kernels.known(copy) is True
