"""TFLite on a phone's CPU (builtin kernels and XNNPACK): kernels learned from benchmark_model records."""

from __future__ import annotations

import dataclasses
import functools
import math

import pytest

from devicelab.backends.android.benchmark_output import OperatorProfile, OperatorRow, OutputMode, ToolVersion
from devicelab.backends.android.op_mapping import nodes_from_export, op_timings
from devicelab.backends.base import ProfileSettings
from devicelab.graph import Graph, nas, zoo
from devicelab.graph.tflite.writer import graph_to_tflite
from devicelab.predict.deduce_tflite_cpu import TfliteCpuDeducer, learn_tflite_cpu_deducer
from devicelab.predict.deducers import deducer_from_dict, deduction_agreement, learn_deducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.predictor import Scenario, train_predictor
from devicelab.predict.records import ProfileRecord, record_from_result
from devicelab.predict.tflite_anatomy import anatomy, label_variant
from tests.devicelab.predict.tflite_phone_data import PARTITION, phone_result, phone_rows, tflite_nodes, xnnpack_label

RUNS = 20


@functools.lru_cache(maxsize=1)
def _train_graphs() -> tuple[Graph, ...]:
    return (*nas.sample("synthetic", 10, 5), zoo.build("mobilenet_v1_0.25"), zoo.build("squeezenet_1_1"))


def _records(delegate: str, graphs: tuple[Graph, ...] | None = None, seed: int = 0) -> list[ProfileRecord]:
    settings = ProfileSettings(backend="android", delegate=delegate, runs=RUNS)
    return [record_from_result(g, phone_result(g, settings, seed=seed)) for g in graphs or _train_graphs()]


def test_a_builtin_kernel_covers_its_fused_activation_and_folded_batch_norm() -> None:
    records = _records("cpu")
    deducer = learn_deducer("tflite_cpu", records)
    assert isinstance(deducer, TfliteCpuDeducer)
    assert deducer.fuses("conv2d", "batch_norm") and deducer.fuses("conv2d", "relu6")
    assert not deducer.fuses("conv2d", "add") and not deducer.fuses("concat", "relu")
    mobilenet = zoo.build("mobilenet_v1_0.25")
    kernels = deducer.kernels(mobilenet)
    first = kernels[0]
    assert first.type == "conv2d/conv_2d"
    assert [mobilenet.operators[i].type for i in first.ops] == ["conv2d", "batch_norm", "relu6"]
    assert {k.type for k in kernels} >= {"depthwise_conv2d/depthwise_conv_2d", "fully_connected/fully_connected"}
    # every operator is in exactly one kernel: none lost, none twice
    covered = sorted(i for k in kernels for i in k.ops)
    assert covered == list(range(len(mobilenet.operators)))


def test_xnnpack_runs_1x1_convolutions_as_gemm_and_the_others_as_igemm() -> None:
    deducer = learn_deducer("tflite_cpu", _records("xnnpack"))
    g = zoo.build("mobilenet_v1_0.25")
    types = {}
    for k in deducer.kernels(g):
        op = g.operators[k.ops[0]]
        if op.type == "conv2d":
            types[(tuple(op.attrs["kernel"]), tuple(op.attrs["stride"]))] = k.type
    assert types[((1, 1), (1, 1))] == "conv2d/convolution_gemm"
    assert types[((3, 3), (2, 2))] == "conv2d/convolution_igemm"
    assert label_variant("Convolution (NHWC, F32) DWConv") == "convolution_dwconv"


def test_the_rules_reproduce_held_out_networks_as_measured() -> None:
    for delegate in ("cpu", "xnnpack"):
        deducer = learn_deducer("tflite_cpu", _records(delegate))
        held_out = _records(delegate, tuple(nas.sample("synthetic", 4, 91)), seed=3)
        agreement = deduction_agreement(deducer, held_out)
        assert agreement is not None
        assert agreement["operator_match"] == 1.0, (delegate, agreement)
        assert agreement["kernel_type_match"] > 0.95, (delegate, agreement)


def test_measured_kernels_are_the_timed_rows_with_the_mean_for_the_missing_median() -> None:
    (record,) = _records("xnnpack", (zoo.build("squeezenet_1_1"),))
    assert math.isnan(record.e2e.median) and record.e2e_ms() == record.e2e.mean  # the tool reports no median
    deducer = learn_tflite_cpu_deducer([record])
    kernels = deducer.measured(record)
    timed = [o for o in record.ops if o.stats is not None]
    assert len(kernels) == len(timed)
    assert sum(k.latency_ms or 0 for k in kernels) == pytest.approx(sum(o.stats.mean for o in timed))  # type: ignore[union-attr]
    (sample,) = deducer.samples([record])
    assert sample.e2e_ms == record.e2e.mean and sample.deduced is not None


def test_the_deducer_travels_in_an_artifact() -> None:
    deducer = learn_deducer("tflite_cpu", _records("xnnpack"))
    again = deducer_from_dict(deducer.to_dict())
    g = nas.sample("synthetic", 1, 42)[0]
    assert again.kernels(g) == deducer.kernels(g)


def test_a_cpu_run_timed_as_one_delegate_partition_cannot_teach_the_rules() -> None:
    g = zoo.build("squeezenet_1_1")
    settings = ProfileSettings(backend="android", delegate="gpu", runs=RUNS)
    record = record_from_result(g, phone_result(g, settings))
    with pytest.raises(PredictorError, match="one delegate partition"):
        learn_tflite_cpu_deducer([record])


def test_a_predictor_trained_on_cpu_records_orders_networks_by_size() -> None:
    records = _records("xnnpack")
    deducer = learn_deducer("tflite_cpu", records)
    predictor = train_predictor(
        deducer.samples(records),
        deducer,
        Scenario("tflite_cpu", "android:t", delegate="xnnpack"),
        "lasso",
        search="fast",
    )
    graphs = [zoo.build(n) for n in ("mobilenet_v1_0.25", "mobilenet_v1_0.5", "mobilenet_v1")]
    predicted = [p.latency_ms for p in predictor.predict(graphs)]
    assert all(math.isfinite(v) and v > 0 for v in predicted)
    assert predicted == sorted(predicted) and predicted[0] < predicted[-1] / 4
    truth = [r.e2e_ms() for r in _records("xnnpack", tuple(graphs))]
    assert all(abs(p - t) / t < 0.25 for p, t in zip(predicted, truth, strict=True)), (predicted, truth)


# -- the backend's own mapping ---------------------------------------------------------------------


def _tool_profile(graph: Graph, delegate: str) -> OperatorProfile:
    """The run-phase table benchmark_model prints for the graph written by our writer."""
    nodes = tflite_nodes(graph)
    rows = []
    for n in nodes:
        label = xnnpack_label(graph, n) if delegate == "xnnpack" else None
        name = f"Delegate/{label}:{n.index}" if label else f"[out{n.index}]:{n.index}"
        rows.append(OperatorRow(label or n.builtin, None, 0.5, 0.1 + n.index / 100, 0, 0, 0, 1, name))
    if delegate == "gpu":
        rows = [OperatorRow(PARTITION, None, 2.0, 2.0, 100, 100, 0, 1, f"[{graph.outputs[0]}]:{len(nodes)}")]
    return OperatorProfile(tuple(rows), ToolVersion.LITERT_NO_START, OutputMode.CSV, True)


@pytest.mark.parametrize("delegate", ["cpu", "xnnpack", "gpu"])
def test_rows_made_by_the_backends_mapping_are_read_as_the_test_phone_writes_them(delegate: str) -> None:
    # the test phone's rows (tflite_phone_data) have the shapes op_mapping gives the tool's table
    # (on a network whose TFLite operators each implement their own IR operators)
    g = zoo.build("mobilenet_v1_0.25")
    nodes = nodes_from_export(graph_to_tflite(g).ops, g)
    mapped, _ = op_timings(g, nodes, _tool_profile(g, delegate), RUNS)
    ours = phone_rows(g, delegate, RUNS)
    record = record_from_result(g, phone_result(g, ProfileSettings(backend="android", delegate=delegate, runs=RUNS)))
    a = anatomy(record)
    b = anatomy(dataclasses.replace(record, ops=tuple(mapped)))
    assert a.owner == b.owner and a.partitions == b.partitions and a.uncovered == b.uncovered
    owners = len(set(a.owner.values()))
    assert owners == 1 if delegate == "gpu" else owners > 20
    assert [(o.name, o.kernel, o.fused_into) for o in ours] == [(o.name, o.kernel, o.fused_into) for o in mapped]
