"""GPU predictors from today's LiteRT: per-dispatch rows measured through the Android backend.

LiteRT 2.x's ``benchmark_model`` times the GPU delegate one OpenCL dispatch at a time and prints
no ``TfLiteGpuDelegateV2`` partition row. Jobs measured on the adb double speaking that layout go
through the backend (push, run, CSV op table, op mapping) into records, and those records alone
train a GPU predictor whose kernels are measured and which answers for networks it never saw."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from devicelab.backends.android import backend
from devicelab.backends.base import DeviceInfo, ProfileSettings
from devicelab.graph import Graph, nas, zoo
from devicelab.predict.deduce_tflite_gpu import gpu_family
from devicelab.predict.deducers import deducer_from_dict, kernels_measured, learn_deducer
from devicelab.predict.predictor import Scenario, train_predictor
from devicelab.predict.records import ProfileRecord, record_from_result, stat
from devicelab.predict.tflite_anatomy import anatomy
from devicelab.predict.tflite_gpu_records import TfliteGpuRecordDeducer, dispatch_rows, is_gpu_dispatch
from tests.adb_double.benchmark_tool import benchmark_model_binary
from tests.adb_double.phones import Phone
from tests.adb_double.server import discovered_phone

SETTINGS = {"backend": "android", "delegate": "gpu", "runs": 5, "warmup_runs": 1, "cooldown_c": 90.0}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DeviceInfo, list[ProfileRecord]]]:
    """GPU jobs of 8 networks measured on a phone whose tool prints per-dispatch GPU rows."""
    phone = Phone("PIXEL7-1")
    phone.time_scale = 0.001
    phone.cooling_time_scale = 50.0
    tool = benchmark_model_binary(gpu_rows="kernels")
    with discovered_phone(phone, tool, tmp_path_factory.mktemp("tool")) as info:
        # the last network is held out: the predictor never sees it
        graphs: list[Graph] = [
            *nas.sample("synthetic", 7, 5),
            zoo.build("mobilenet_v1_0.25"),
            zoo.build("mobilenet_v1_0.5"),
        ]
        settings = ProfileSettings.from_dict(SETTINGS)
        records = [record_from_result(g, backend.profile(info, g, settings, lambda f, m: None, None)) for g in graphs]
        yield info, records


def test_the_gpu_delegate_is_timed_dispatch_by_dispatch_without_a_partition_row(
    measured: tuple[DeviceInfo, list[ProfileRecord]],
) -> None:
    _, records = measured
    for r in records:
        an = anatomy(r)
        assert not an.partitions  # no TfLiteGpuDelegateV2 row
        rows = dispatch_rows(r)
        assert len(rows) > 1 and all(an.rows[a].name.startswith("Delegate/") for a in rows)
        assert all(is_gpu_dispatch(an.rows[a].kernel) for a in rows)


def test_measured_gpu_jobs_alone_train_a_kernel_level_gpu_predictor_that_answers(
    measured: tuple[DeviceInfo, list[ProfileRecord]],
) -> None:
    info, measured_records = measured
    records, (held_out,) = measured_records[:-1], measured_records[-1:]
    gpu = str(info.hardware["gpu"])
    deducer = learn_deducer("tflite_gpu", records, gpu=gpu)
    assert isinstance(deducer, TfliteGpuRecordDeducer) and deducer.family == gpu_family(gpu)
    assert kernels_measured(deducer) and deducer.shares.per_partition_ms == 0.0
    samples = deducer.samples(records)
    for record, sample in zip(records, samples, strict=True):
        # each dispatch row's time goes to the deduced kernels it ran, all of it
        rows = anatomy(record).rows
        rows_ms = sum(stat(rows[a].stats, "median") for a in dispatch_rows(record))  # type: ignore[arg-type]
        assert sample.measured and all(k.latency_ms is not None and k.latency_ms > 0 for k in sample.measured)
        assert sample.kernel_sum_ms <= rows_ms * (1 + 1e-9) and sample.kernel_sum_ms > 0.9 * rows_ms
    scenario = Scenario("tflite_gpu", info.identity, precision="fp32", gpu=gpu, delegate="gpu")
    predictor = train_predictor(samples, deducer, scenario, "lasso", search="fast", min_networks=5)
    assert not predictor.meta.get("uncovered")  # the server's refusal ("'conv2d' in 1 network") is gone
    unseen = [held_out.graph, zoo.build("mobilenet_v1"), *nas.sample("synthetic", 2, 99)]
    predictions = predictor.predict(unseen, breakdown=True)
    predicted = [p.latency_ms for p in predictions]
    assert all(math.isfinite(v) and v > 0 for v in predicted)
    assert predicted[0] < predicted[1] / 2  # MobileNet 0.5 well below the full one
    # the kernels of the held-out network, predicted from measured kernels, add up to what its
    # dispatch rows measured (its end to end also holds the constant overhead, fitted on the
    # synthetic networks whose CPU-run operators make it larger than MobileNet's)
    (truth,) = deducer.samples([held_out])
    kernels_ms = sum(k.latency_ms for k in predictions[0].kernels or ())
    assert abs(kernels_ms - truth.kernel_sum_ms) / truth.kernel_sum_ms < 0.1, (kernels_ms, truth.kernel_sum_ms)
    assert 0.5 < predicted[0] / held_out.e2e_ms() < 2.0
    assert deducer.to_dict()["kernel_latencies"] == "the GPU delegate's per-dispatch rows"
    assert deducer_from_dict(deducer.to_dict()).kernels(unseen[0]) == deducer.kernels(unseen[0])
