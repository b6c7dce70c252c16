"""The TFLite GPU deduction on phones measured here: partitions timed whole, kernels given shares."""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest

from devicelab.backends.base import ProfileSettings
from devicelab.graph import Graph, nas, zoo
from devicelab.measure.stats import from_aggregate
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer, deduce_kernels, gpu_family
from devicelab.predict.deducers import deducer_from_dict, deduction_agreement, kernels_measured, learn_deducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import feature_group
from devicelab.predict.kernels import Kernel
from devicelab.predict.predictor import Scenario, train_predictor
from devicelab.predict.records import ProfileRecord, record_from_result
from devicelab.predict.tflite_gpu_records import (
    TfliteGpuRecordDeducer,
    fit_share_model,
    kernel_work,
    learn_tflite_gpu_deducer,
    partitions_of,
)
from tests.devicelab.predict.tflite_phone_data import GLES, phone_result

RUNS = 20


@functools.lru_cache(maxsize=1)
def _train_graphs() -> tuple[Graph, ...]:
    return (*nas.sample("synthetic", 10, 5), zoo.build("mobilenet_v1_0.25"), zoo.build("squeezenet_1_1"))


def _records(graphs: tuple[Graph, ...] | None = None, seed: int = 0) -> list[ProfileRecord]:
    settings = ProfileSettings(backend="android", delegate="gpu", runs=RUNS)
    return [record_from_result(g, phone_result(g, settings, seed=seed)) for g in graphs or _train_graphs()]


def test_the_gpu_family_comes_from_the_phones_gles_renderer() -> None:
    assert gpu_family(GLES) == "mali"
    assert gpu_family("Qualcomm, Adreno (TM) 640, OpenGL ES 3.2 V@415.0") == "adreno6xx"
    assert gpu_family("Imagination Technologies, PowerVR Rogue GE8320, OpenGL ES 3.2") == "powervr"


def test_the_share_model_recovers_how_a_partition_splits_over_its_kernels() -> None:
    # partitions whose kernels cost a known linear function of their work, per feature group
    per_flop = {"conv": 2e-8, "fc": 5e-8, "grouped_conv": 4e-8, "pool": 1e-8, "mean": 1e-8}
    per_element = {"elementwise": 3e-7, "concat_split": 2e-7, "conv": 1e-7, "pad": 2e-7}

    def truth(k: Kernel) -> float:
        flops, moved = kernel_work(k)
        g = feature_group(k.type)
        return per_flop.get(g, 0.0) * flops + per_element.get(g, 0.0) * moved + 0.01

    partitions = []
    for g in _train_graphs():
        kernels = deduce_kernels(g, "mali")
        partitions.append((kernels, sum(truth(k) for k in kernels) + 0.2))
    model = fit_share_model(partitions)
    assert model.how == "nnls" and model.per_partition_ms == pytest.approx(0.2, rel=0.5)
    errors = []
    for kernels, ms in partitions:
        for k, share in zip(kernels, model.split(kernels, ms), strict=True):
            if truth(k) > 0.01 * ms:  # the kernels that make up the partition's time
                errors.append(abs(share - truth(k)) / truth(k))
    assert np.median(errors) < 0.05 and np.percentile(errors, 90) < 0.2, np.percentile(errors, [50, 90, 100])


def test_few_partitions_split_by_their_work() -> None:
    kernels = deduce_kernels(zoo.build("squeezenet_1_1"), "mali")
    model = fit_share_model([(kernels, 5.0)])
    assert model.how == "work"
    shares = model.split(kernels, 5.0)
    assert all(s > 0 for s in shares) and sum(shares) == pytest.approx(5.0)


def test_samples_give_each_deduced_kernel_a_share_of_its_partitions_measured_time() -> None:
    records = _records()
    deducer = learn_deducer("tflite_gpu", records, gpu=GLES)
    assert isinstance(deducer, TfliteGpuRecordDeducer) and deducer.family == "mali"
    assert not kernels_measured(deducer) and deduction_agreement(deducer, records) is None
    for record, sample in zip(records, deducer.samples(records), strict=True):
        ((_, partition_ms),) = partitions_of(record, deducer.kernels(record.graph))
        assert sample.deduced is not None and [k.type for k in sample.measured] == [k.type for k in sample.deduced]
        assert all(k.latency_ms is not None and k.latency_ms > 0 for k in sample.measured)
        assert sample.kernel_sum_ms <= partition_ms * (1 + 1e-9)
        assert sample.kernel_sum_ms > 0.8 * partition_ms  # the partition's own cost is small
        assert sample.e2e_ms == record.e2e.mean and math.isnan(record.e2e.median)


def test_operators_the_delegate_left_to_the_cpu_are_no_kernel_of_the_partition() -> None:
    g = zoo.build("squeezenet_1_1")
    (record,) = _records((g,))
    # the anchor of the last kernel (the global mean; the flatten after it is no kernel of its
    # own) ran on the CPU: a builtin row of its own, outside the partition
    last = deduce_kernels(g, "mali")[-1].ops[0]
    ops = list(record.ops)
    ops[last] = dataclasses.replace(ops[last], kernel="MEAN", stats=from_aggregate(RUNS, 0.05), fused_into=None)
    record = dataclasses.replace(record, ops=tuple(ops))
    deducer = learn_tflite_gpu_deducer(_records(), "mali")
    measured = deducer.measured(record)
    assert measured and all(last not in k.ops for k in measured)
    assert any(last in k.ops for k in deducer.kernels(g))


def test_records_without_a_gpu_partition_cannot_train_a_gpu_predictor() -> None:
    g = zoo.build("squeezenet_1_1")
    record = record_from_result(g, phone_result(g, ProfileSettings(backend="android", delegate="cpu", runs=RUNS)))
    with pytest.raises(PredictorError, match="GPU delegate"):
        learn_tflite_gpu_deducer([record], "mali")


def test_the_artifact_deduces_as_the_plain_gpu_deducer_and_keeps_the_share_model() -> None:
    deducer = learn_tflite_gpu_deducer(_records(), "mali")
    data = deducer.to_dict()
    assert data["shares"]["how"] == "nnls" and data["kernel_latencies"]
    loaded = deducer_from_dict(data)
    assert isinstance(loaded, TfliteGpuDeducer) and loaded.family == "mali"
    g = nas.sample("synthetic", 1, 42)[0]
    assert loaded.kernels(g) == deducer.kernels(g)


def test_a_gpu_predictor_from_partition_times_is_sane_and_orders_networks_by_size() -> None:
    records = _records()
    deducer = learn_deducer("tflite_gpu", records, gpu=GLES)
    scenario = Scenario("tflite_gpu", "android:t", precision="fp32", gpu=GLES, delegate="gpu")
    predictor = train_predictor(deducer.samples(records), deducer, scenario, "lasso", search="fast")
    graphs = [zoo.build(n) for n in ("mobilenet_v1_0.25", "mobilenet_v1_0.5", "mobilenet_v1")]
    predicted = [p.latency_ms for p in predictor.predict(graphs)]
    assert all(math.isfinite(v) and v > 0 for v in predicted)
    assert predicted == sorted(predicted) and predicted[0] < predicted[-1] / 2
    truth = [r.e2e_ms() for r in _records(tuple(graphs))]
    assert all(abs(p - t) / t < 0.35 for p, t in zip(predicted, truth, strict=True)), (predicted, truth)
