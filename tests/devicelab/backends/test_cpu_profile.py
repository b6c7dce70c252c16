"""Profiling IR graphs on the host CPU through onnxruntime: the measurement discipline and the
mapping of onnxruntime's kernels back onto IR operators."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

import onnx
import pytest

from devicelab.backends import cpu, ort_mapping, ort_profile
from devicelab.backends.base import BackendError, DeviceInfo, ProfileResult, ProfileSettings
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.measure.harness import split_evenly

RUNS = 5
CONV_KERNELS = {"Conv", "FusedConv", "NchwcConv"}
HAS_AFFINITY = hasattr(os, "sched_setaffinity")


def small_net() -> Graph:
    """A small residual conv net: conv-bn-relu, a residual block, pooling, depthwise, classifier."""
    b = GraphBuilder("small_net", (1, 3, 48, 48))
    x = b.relu(b.bn(b.conv(b.input, 16, 3, name="stem_conv"), name="stem_bn"), name="stem_relu")
    y = b.bn(b.conv(x, 16, 3, name="block_conv"), name="block_bn")
    x = b.relu(b.add(y, x, name="block_add"), name="block_relu")
    x = b.max_pool(x, 2, name="pool")
    x = b.relu6(b.bn(b.dwconv(x, 3, name="dw_conv"), name="dw_bn"), name="dw_relu6")
    return b.build(b.classifier(x, 10))


def tiny_net() -> Graph:
    """One conv and a ReLU: the quickest graph that still starts onnxruntime's thread pool."""
    b = GraphBuilder("tiny_net", (1, 8, 32, 32))
    return b.build(b.relu(b.conv(b.input, 16, 3)))


@pytest.fixture(scope="module")
def device() -> DeviceInfo:
    return cpu.discover()[0]


@pytest.fixture(scope="module")
def profiled(device: DeviceInfo) -> tuple[Graph, ProfileResult, list[tuple[float, str]]]:
    graph = small_net()
    calls: list[tuple[float, str]] = []
    result = cpu.profile(
        device, graph, ProfileSettings(threads=1, warmup_runs=2, runs=RUNS), progress=lambda f, m: calls.append((f, m))
    )
    return graph, result, calls


def _row(result: ProfileResult, name: str):  # noqa: ANN202 - test helper
    return next(r for r in result.ops if r.name == name and r.index is not None)


# -- per-operator rows -----------------------------------------------------------------------


def test_every_ir_operator_is_reported_exactly_once_timed_or_fused(profiled) -> None:
    graph, result, _ = profiled
    ir_rows = [r for r in result.ops if r.index is not None]
    assert [(r.index, r.name, r.type) for r in ir_rows] == [(i, o.name, o.type) for i, o in enumerate(graph.operators)]
    for r in ir_rows:
        assert (r.stats is None) != (r.fused_into is None), r
        if r.stats is not None:
            assert r.stats.n == RUNS
    assert ir_rows[0].input_shapes == [[1, 3, 48, 48]] and ir_rows[0].output_shapes == [[1, 16, 48, 48]]
    assert ir_rows[0].attrs["out_channels"] == 16


def test_kernel_names_are_recorded(profiled) -> None:
    graph, result, _ = profiled
    assert all(r.kernel for r in result.ops)
    for name in ("stem_conv", "block_conv", "dw_conv"):
        row = _row(result, name)
        assert row.stats is not None and row.kernel in CONV_KERNELS
    owners = result.environment["kernel_owner"]
    assert set(owners.values()) - {None} <= {o.name for o in graph.operators}


def test_relu_after_conv_is_reported_fused_into_the_conv_kernel(profiled) -> None:
    _, result, _ = profiled
    owners = result.environment["kernel_owner"]
    for conv, followers in (("stem_conv", ("stem_bn", "stem_relu")), ("dw_conv", ("dw_bn", "dw_relu6"))):
        for name in followers:
            row = _row(result, name)
            assert row.stats is None and row.fused_into is not None
            assert owners[row.fused_into] == conv  # the kernel node covering it is the conv's
            assert row.kernel == _row(result, conv).kernel


def test_runtime_inserted_kernels_keep_their_time_without_an_owner(profiled) -> None:
    _, result, _ = profiled
    owners = result.environment["kernel_owner"]
    for r in result.ops:
        if r.index is None:
            assert r.type == "runtime" and r.stats is not None and owners[r.name] is None
    assert sum(1 for o in owners.values() if o is None) == sum(1 for r in result.ops if r.index is None)


def test_per_operator_times_add_up_to_most_of_the_profiled_run(profiled) -> None:
    # With one thread the kernels of a run execute one after another inside it, so their sum can
    # not exceed the run; 50% is far below the 70-99% measured here, even with the machine busy.
    # (Against the unprofiled end-to-end mean, measured in another session, the ratio was
    # 0.80-1.16 on an idle 2-core VM but swung far wider under other load: not asserted.)
    _, result, _ = profiled
    total = sum(r.stats.mean for r in result.ops if r.stats is not None)
    run = result.environment["profiled_e2e_mean_ms"]
    assert 0.5 * run <= total <= run * 1.001 + 0.005


def test_the_profiled_session_is_warmed_up_like_the_timed_one(profiled) -> None:
    # A fresh onnxruntime session's second run is still slow (its memory pattern is being set up:
    # measured 7.3 ms against 3.8 ms for the runs after it). With only the first profiled run
    # dropped, a profile of 2 runs summed its kernels to 1.5x the network's end-to-end time.
    _, result, _ = profiled
    env = result.environment
    assert env["profiled_runs_dropped"] == 1 + 2  # the first run and warmup_runs=2, as in the timed session
    assert env["profiled_runs"] == RUNS
    assert all(r.stats.n == RUNS for r in result.ops if r.stats is not None)


# -- measurement discipline ------------------------------------------------------------------


def test_cold_start_is_measured_apart_from_the_warm_runs(profiled) -> None:
    _, result, _ = profiled
    assert result.cold.load_ms > 0 and result.cold.first_run_ms > 0
    assert len(result.samples_ms) == RUNS == result.e2e.n
    assert result.e2e.mean == pytest.approx(sum(result.samples_ms) / RUNS)
    assert result.e2e.min > 0


def test_progress_reaches_one_in_order(profiled) -> None:
    _, _, calls = profiled
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[0] <= 0.05 and fractions[-1] == 1.0
    messages = " ".join(m for _, m in calls)
    assert f"timed run {RUNS}/{RUNS}" in messages and "profiled run" in messages


def test_environment_records_runtime_and_settings(profiled) -> None:
    _, result, _ = profiled
    env = result.environment
    assert env["runtime"] == cpu.runtime_version() and env["runtime"].startswith("onnxruntime ")
    assert "CPUExecutionProvider" in env["providers"]
    assert env["graph_optimization_level"] == "ORT_ENABLE_ALL"
    assert env["threads"] == 1 and env["inter_op_threads"] == 1 and env["execution_mode"] == "sequential"
    assert env["cores"] == [] and env["cpu_model"] == cpu.discover()[0].name
    if HAS_AFFINITY:
        assert env["affinity"] == sorted(os.sched_getaffinity(0))
        assert env["runtime_threads_affinity"] == []  # one thread: onnxruntime starts no pool threads


@pytest.fixture
def session_order(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Which session each run of the next profile ran in (True: the profiled one), in order."""
    order: list[bool] = []
    real_run = cpu._run

    def recording_run(session, feeds, graph):  # noqa: ANN001, ANN202 - a spy on the real thing
        order.append(session.get_session_options().enable_profiling)
        return real_run(session, feeds, graph)

    monkeypatch.setattr(cpu, "_run", recording_run)
    return order


def test_timed_runs_alternate_between_the_plain_and_the_profiled_session_in_blocks(
    device: DeviceInfo, session_order: list[bool]
) -> None:
    # A burst of other load must hit end-to-end and per-operator timing alike: the two sessions
    # take turns, each block starting with a dropped run that refills the caches.
    runs, warmup = 7, 1
    result = cpu.profile(device, tiny_net(), ProfileSettings(threads=1, warmup_runs=warmup, runs=runs))
    blocks = result.environment["blocks"]
    assert blocks == [2, 2, 1, 1, 1] and sum(blocks) == runs == cpu.BLOCKS + 2
    expected = [False] * (1 + warmup) + [True] * (1 + warmup)  # first runs and warm-up, both sessions
    for k in blocks:
        expected += [False] * (1 + k) + [True] * (1 + k)
    assert session_order == expected
    assert len(result.samples_ms) == runs and result.environment["profiled_runs"] == runs
    assert all(r.stats.n == runs for r in result.ops if r.stats is not None)


def test_with_a_thread_pool_the_plain_runs_all_come_before_the_profiled_ones(
    device: DeviceInfo, session_order: list[bool]
) -> None:
    # ONNX Runtime's pool threads spin after each run: an idle session's threads would take
    # cores from the running one (2 threads alternating: end-to-end 1.47x the kernel sum).
    runs, warmup = 4, 1
    result = cpu.profile(device, tiny_net(), ProfileSettings(threads=2, warmup_runs=warmup, runs=runs))
    assert session_order == [False] * (1 + warmup + runs) + [True] * (1 + warmup + runs)
    assert result.environment["blocks"] == []
    assert len(result.samples_ms) == runs and result.environment["profiled_runs"] == runs
    assert all(r.stats.n == runs for r in result.ops if r.stats is not None)


def test_fewer_runs_than_blocks_make_one_block_per_run() -> None:
    assert split_evenly(1, cpu.BLOCKS) == [1]
    assert split_evenly(3, cpu.BLOCKS) == [1, 1, 1]
    assert split_evenly(30, cpu.BLOCKS) == [6] * 5


def test_parse_profile_keeps_the_runs_asked_for_in_order(tmp_path: Path) -> None:
    # Three runs of 100, 200 and 300 us; one kernel event in each.
    events = []
    for i, dur in enumerate((100, 200, 300)):
        ts = 1000 * (i + 1)
        events.append({"cat": "Session", "name": "model_run", "ts": ts, "dur": dur})
        events.append(
            {"cat": "Node", "name": "k_kernel_time", "ts": ts + 1, "dur": dur // 2, "args": {"op_name": "Relu"}}
        )
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(events))
    profiles, run_ms = ort_profile.parse_profile(path, keep=[2, 0])
    assert run_ms == [0.3, 0.1] and profiles["k"].per_run_ms == [0.15, 0.05]
    profiles, run_ms = ort_profile.parse_profile(path, skip_runs=1)
    assert run_ms == [0.2, 0.3] and profiles["k"].per_run_ms == [0.1, 0.15]
    with pytest.raises(BackendError, match="holds 3 runs, expected run 3"):
        ort_profile.parse_profile(path, keep=[1, 3])
    with pytest.raises(BackendError, match="holds 3 runs, expected more than 3"):
        ort_profile.parse_profile(path, skip_runs=3)


@pytest.mark.skipif(not HAS_AFFINITY, reason="needs Linux CPU affinity")
def test_two_threads_pinned_to_core_zero(device: DeviceInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path)
    before = os.sched_getaffinity(0)
    result = cpu.profile(device, tiny_net(), ProfileSettings(threads=2, cores=(0,), warmup_runs=1, runs=3))
    env = result.environment
    assert env["threads"] == 2 and env["cores"] == [0] and env["affinity"] == [0]
    # onnxruntime's pool thread was created while the caller was pinned, so it is pinned too.
    assert env["runtime_threads_affinity"] == ["0"]
    assert os.sched_getaffinity(0) == before  # the caller's affinity is restored
    # The profile JSON and the saved optimized model lived in a temp dir that is gone now.
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not [p for p in tmp_path.iterdir() if p.name != "tmp"]


@pytest.mark.skipif(not HAS_AFFINITY, reason="needs Linux CPU affinity")
def test_pinned_sets_and_restores_the_calling_threads_affinity() -> None:
    tid = threading.get_native_id()
    before = cpu.thread_affinities([tid])[tid]
    with cpu.pinned([0]) as applied:
        assert applied == [0]
        assert cpu.thread_affinities([tid])[tid] == "0"
    assert cpu.thread_affinities([tid])[tid] == before


# -- rejected requests -----------------------------------------------------------------------


def test_cores_that_do_not_exist_are_rejected(device: DeviceInfo) -> None:
    with pytest.raises(ValueError, match="do not exist on this CPU"):
        cpu.profile(device, tiny_net(), ProfileSettings(cores=(999,), runs=1))
    with pytest.raises(ValueError, match=r"cores\[1\] must be at least 0, got -1"):
        ProfileSettings(cores=(0, -1), runs=1)  # no core id is negative, whatever the device


def test_settings_and_devices_this_backend_cannot_honour_are_rejected(device: DeviceInfo) -> None:
    graph = tiny_net()
    with pytest.raises(ValueError, match="fp32"):
        cpu.profile(device, graph, ProfileSettings(precision="fp16", runs=1))
    with pytest.raises(ValueError, match="backend 'opencl'"):
        cpu.profile(device, graph, ProfileSettings(backend="opencl", runs=1))
    with pytest.raises(ValueError, match="cannot profile a 'opencl' device"):
        cpu.profile(replace(device, kind="opencl"), graph, ProfileSettings(runs=1))
    with pytest.raises(ValueError, match="is not this host's CPU"):
        cpu.profile(replace(device, identity="cpu:some-other-machine"), graph, ProfileSettings(runs=1))


def test_a_graph_onnxruntime_cannot_run_raises_backend_error(device: DeviceInfo) -> None:
    b = GraphBuilder("int_conv", (1, 3, 8, 8), dtype="int32")  # ORT has no integer Conv kernel
    graph = b.build(b.conv(b.input, 4, 3, name="the_conv"))
    with pytest.raises(BackendError, match="could not load graph 'int_conv'.*the_conv") as info:
        cpu.profile(device, graph, ProfileSettings(runs=1))
    assert isinstance(info.value, RuntimeError)


# -- the kernel-to-operator mapping rules, on kernel graphs shaped like onnxruntime's ----------


def _head_graph() -> Graph:
    b = GraphBuilder("head", (1, 3, 8, 8))
    x = b.relu(b.bn(b.conv(b.input, 4, 3, name="c"), name="n"), name="r")
    x = b.flatten(b.global_avg_pool(x, name="gap"), name="fl")
    return b.build(b.act(b.fc(x, 10, name="fc"), "hard_swish", name="hs"))


def test_mapping_fused_conv_and_an_inlined_function() -> None:
    # ORT_ENABLE_EXTENDED style (what an ARM host runs): FusedConv keeps the conv's name and
    # writes the ReLU's output; the inlined HardSwish is an anonymous HardSigmoid + Mul.
    K = ort_profile.KernelNode
    nodes = ort_profile.topological(
        [
            K("c", "FusedConv", "com.microsoft", ["input", "c::weight"], ["r"], "Relu"),
            K("gap", "GlobalAveragePool", "", ["r"], ["gap"]),
            K("fl", "Flatten", "", ["gap"], ["fl"]),
            K("fc", "Gemm", "", ["fl", "fc::weight", "fc::bias"], ["fc"]),
            K("HardSigmoid#4", "HardSigmoid", "", ["fc"], ["_inlfunc_HardSwish_HS_X"]),
            K("Mul#5", "Mul", "", ["fc", "_inlfunc_HardSwish_HS_X"], ["hs"]),
        ]
    )
    km = ort_mapping.map_kernels(_head_graph(), nodes)
    assert km.owner == {"c": "c", "gap": "gap", "fl": "fl", "fc": "fc", "HardSigmoid#4": "hs", "Mul#5": "hs"}
    assert km.fused_into == {"n": "c", "r": "c"}


def test_mapping_nchwc_kernels_named_after_their_epilogue() -> None:
    # ORT_ENABLE_ALL on x86: the NCHWc Conv is named after the ReLU it absorbed, tensors are
    # renamed reorder_token_*, and a ReorderOutput hands the result back in NCHW.
    K = ort_profile.KernelNode
    nodes = ort_profile.topological(
        [
            K("r_nchwc", "Conv", "com.microsoft.nchwc", ["input", "reorder"], ["t0"], "Relu"),
            K("gap_nchwc", "GlobalAveragePool", "com.microsoft.nchwc", ["t0"], ["t1"]),
            K("ReorderOutput", "ReorderOutput", "com.microsoft.nchwc", ["t1"], ["gap"]),
            K("fl", "Flatten", "", ["gap"], ["fl"]),
            K("fc", "Gemm", "", ["fl", "fc::weight", "fc::bias"], ["fc"]),
            K("hs", "HardSwish", "", ["fc"], ["hs"]),
        ]
    )
    km = ort_mapping.map_kernels(_head_graph(), nodes)
    assert km.owner["r_nchwc"] == "c" and km.owner["gap_nchwc"] == "gap"
    assert km.owner["ReorderOutput"] is None
    assert km.fused_into == {"n": "r_nchwc", "r": "r_nchwc"}
    assert nodes[0].kernel == "NchwcConv" and nodes[2].kernel == "ReorderOutput"


def test_mapping_residual_add_goes_to_the_conv_that_runs_last() -> None:
    b = GraphBuilder("res", (1, 8, 8, 8))
    x = b.relu(b.conv(b.input, 8, 3, name="c1"), name="r1")
    y = b.bn(b.conv(x, 8, 3, name="c2"), name="b2")
    graph = b.build(b.relu(b.add(y, x, name="add"), name="r2"))
    K = ort_profile.KernelNode
    nodes = ort_profile.topological(
        [
            K("ReorderOutput", "ReorderOutput", "com.microsoft.nchwc", ["t1"], ["r2"]),  # order on purpose
            K("r1_nchwc", "Conv", "com.microsoft.nchwc", ["input", "w1"], ["t0"], "Relu"),
            K("b2_nchwc", "Conv", "com.microsoft.nchwc", ["t0", "w2", "", "t0"], ["t1"], "Relu"),
        ]
    )
    assert [n.name for n in nodes] == ["r1_nchwc", "b2_nchwc", "ReorderOutput"]
    km = ort_mapping.map_kernels(graph, nodes)
    assert km.owner == {"r1_nchwc": "c1", "b2_nchwc": "c2", "ReorderOutput": None}
    assert km.fused_into == {"r1": "r1_nchwc", "b2": "b2_nchwc", "add": "b2_nchwc", "r2": "b2_nchwc"}


def test_anonymous_and_duplicate_nodes_get_unique_names() -> None:
    h = onnx.helper
    graph = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["a"]),
            h.make_node("Relu", ["a"], ["b"], name="r"),
            h.make_node("Relu", ["b"], ["c"], name="r"),
        ],
        "g",
        [],
        [],
    )
    named = ort_profile.name_nodes_uniquely(h.make_model(graph))
    assert [n.name for n in named.graph.node] == ["Relu#0", "r", "r#2"]
