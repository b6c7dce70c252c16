"""The fusion planner's three strategies on PoCL: two graphs run together and one graph's
branches, every written buffer checked against the sequential run, timed interleaved."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from devicelab.backends.opencl.runner import GraphRunner
from devicelab.fusion.plan_load import load_graphs
from devicelab.fusion.plan_run import compare_plan
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.mobilenet_v2 import build_mobilenet_v2

RUNS = 3


def separable(name: str) -> Graph:
    """A MobileNet-like block: 1x1, depthwise 3x3, 1x1, residual add (odd sizes)."""
    b = GraphBuilder(name, (1, 8, 15, 13))
    x = b.relu6(b.conv(b.input, 16, 1, name="expand"))
    x = b.relu6(b.dwconv(x, 3, name="dw"))
    x = b.conv(x, 8, 1, name="project")
    return b.build(b.add(x, b.input, name="residual"))


def stem(name: str) -> Graph:
    """A 3x3 convolution, a pooling, a 1x1 convolution."""
    b = GraphBuilder(name, (1, 3, 17, 11))
    x = b.relu(b.conv(b.input, 8, 3, name="conv3"))
    x = b.max_pool(x, 3, stride=2, name="pool")
    return b.build(b.conv(x, 12, 1, name="pw"))


def inception_module() -> Graph:
    """GoogLeNet's module, small: four branches joined by a concat."""
    b = GraphBuilder("inception", (1, 8, 13, 11))
    b1 = b.relu(b.conv(b.input, 8, 1, name="b1"))
    b2 = b.relu(b.conv(b.relu(b.conv(b.input, 6, 1, name="b2_reduce")), 8, 3, name="b2"))
    b3 = b.relu(b.conv(b.relu(b.conv(b.input, 4, 1, name="b3_reduce")), 4, 3, name="b3"))
    b4 = b.relu(b.conv(b.max_pool(b.input, 3, 1, pad=1, name="b4_pool"), 4, 1, name="b4"))
    return b.build(b.concat([b1, b2, b3, b4], name="join"))


def assert_schedules_valid(d: dict[str, Any]) -> None:
    """Every kernel in one step of each strategy, after every kernel it follows."""
    for strategy, plan in d["plans"].items():
        step = {}
        for s in plan["steps"]:
            for i in s["kernels"]:
                step[i] = s["index"]
        assert sorted(step) == list(range(len(d["kernels"]))), strategy
        for k in d["kernels"]:
            assert k["group"][strategy] == step[k["index"]]
            for a in k["after"]:
                assert step[a] < step[k["index"]], f"{strategy}: {k['graph']}/{k['name']} runs before kernel {a}"


def assert_measured_and_checked(d: dict[str, Any], runs: int) -> None:
    json.dumps(d, allow_nan=False)  # stored as JSON in PostgreSQL
    assert d["version"] == 1 and d["strategies"] == ["sequential", "plan", "fuse_all"]
    assert d["launches"]["sequential"] == len(d["kernels"]) == sum(g["kernels"] for g in d["graphs"])
    assert d["launches"]["plan"] <= d["launches"]["sequential"]
    assert d["launches"]["fuse_all"] < d["launches"]["sequential"]
    for strategy in d["strategies"]:
        timing = d["timing"][strategy]
        assert len(timing["device_samples_ms"]) == runs and timing["device"]["median"] > 0
    for strategy in ("plan", "fuse_all"):
        check = d["checks"][strategy]
        assert check["correct"], check
        assert check["outputs"]["correct"] and check["buffers"]["correct"]
        assert check["buffers"]["max_relative_error"] <= 1e-6
        ratio = d["ratios"][strategy]
        assert len(ratio["time_ratio_samples"]) == runs and ratio["throughput"] > 0
        assert ratio["time_ratio"]["n"] == runs
    assert d["correct"]
    assert_schedules_valid(d)


def test_two_graphs_run_together(found) -> None:
    graphs = [separable("separable"), stem("stem")]
    reports: list[tuple[float, str]] = []
    # measured: the two graphs' first kernels (a 1x1 and a 3x3 convolution) fused win big
    result = compare_plan(
        found,
        graphs,
        sweep_rows={("C_1x1", "C"): 5.0},
        warmup=1,
        runs=RUNS,
        progress=lambda f, m: reports.append((f, m)),
    )
    d = result.as_dict()
    assert_measured_and_checked(d, RUNS)
    assert d["models"] == ["separable", "stem"] and d["wave_size"] == found.limits.wave_size
    first = d["plans"]["plan"]["steps"][0]
    assert first["labels"] == ["separable/expand", "stem/conv3"]
    assert first["source"] == "measured" and first["predicted_throughput"] == pytest.approx(5.0)
    assert d["benefit_sources"]["plan"]["measured"] >= 1
    assert d["measured"] == [{"kinds": ["C", "C_1x1"], "throughput": 5.0, "rows": 0, "experiments": []}]
    # no sweep timings: the model was calibrated on the device
    assert d["model"]["calibration"] == "device kernel times; fusion costs from device probes"
    assert d["probes"] and all(p["fused_ms"] > 0 for p in d["probes"])
    assert all(k["measured_ms"] > 0 for k in d["kernels"])
    # fuse-all fuses across the graphs
    graphs_of = {k["index"]: k["graph"] for k in d["kernels"]}
    assert any(len({graphs_of[i] for i in s["kernels"]}) == 2 for s in d["plans"]["fuse_all"]["steps"])
    fractions = [f for f, _ in reports]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_one_graphs_branches(found) -> None:
    result = compare_plan(found, [inception_module()], warmup=1, runs=RUNS)
    d = result.as_dict()
    assert_measured_and_checked(d, RUNS)
    by_name = {k["name"]: k for k in d["kernels"]}
    heads = {by_name[n]["index"] for n in ("b1", "b2_reduce", "b3_reduce", "b4_pool")}
    first_fused = next(s for s in d["plans"]["fuse_all"]["steps"] if s["fused"])
    assert set(first_fused["kernels"]) == heads  # the four branch heads are ready together
    # the concat's parts write one buffer: each follows the one before
    parts = sorted((k for k in d["kernels"] if k["name"].startswith("join#")), key=lambda k: k["name"])
    assert len(parts) == 4
    for before, after in zip(parts, parts[1:], strict=False):
        assert before["index"] in after["after"]
    assert d["measured"] == [] and d["benefit_sources"]["plan"]["measured"] == 0


def test_dependencies_come_from_the_runners_buffers(found) -> None:
    loaded = load_graphs(found, [inception_module(), inception_module()])
    try:
        assert [i.graph for i in loaded.infos] == ["inception", "inception#2"]
        kernels = loaded.kernels
        assert [k.graph for k in kernels[:2]] == ["inception", "inception#2"]  # interleaved
        graph_of = {k.index: k.graph for k in kernels}
        for k in kernels:
            assert all(graph_of[a] == k.graph for a in k.after)  # graphs are independent
        runner = GraphRunner(found, inception_module())
        try:
            assert sum(1 for k in kernels if k.graph == "inception") == len(runner.launches)
        finally:
            runner.release()
        outputs = [w for w in loaded.written if w.is_output]
        assert [w.graph for w in outputs] == ["inception", "inception#2"]
        assert all(w.nbytes == 1 * 24 * 13 * 11 * 4 for w in outputs)
    finally:
        loaded.release()


def test_a_progress_callback_that_raises_stops_it(found) -> None:
    def stop(fraction: float, message: str) -> None:
        if message.startswith("checking"):
            raise RuntimeError("stopped")

    with pytest.raises(RuntimeError, match="stopped"):
        compare_plan(found, [stem("stem"), stem("stem")], warmup=0, runs=1, progress=stop)


@pytest.mark.slow
def test_two_mobilenet_v2_at_a_small_resolution(found) -> None:
    t0 = time.monotonic()
    graphs = [build_mobilenet_v2("mobilenet_v2", 1.0, 32) for _ in range(2)]
    d = compare_plan(found, graphs, warmup=1, runs=RUNS).as_dict()
    assert_measured_and_checked(d, RUNS)
    assert d["models"] == ["mobilenet_v2", "mobilenet_v2"]
    assert d["launches"]["fuse_all"] <= d["launches"]["sequential"] // 2 + 1  # the copies fuse in step
    assert time.monotonic() - t0 < 120
