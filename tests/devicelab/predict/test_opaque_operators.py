"""Operators outside the graph IR (``opaque``: a TFLite ARG_MAX, a custom operator) get no kernel
prediction: the phone deducers leave them out and a prediction says so in a warning; the deducers
of backends that could not run them refuse with a PredictorError, never a KeyError."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.graph.tflite import graph_from_tflite_bytes
from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.deduce_opencl import OpenclDeducer
from devicelab.predict.deduce_tflite_cpu import TfliteCpuDeducer
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.ranges import OPAQUE_OPERATORS, PredictionWarning
from tests.devicelab.graph.opaque_models import argmax_model, custom_op_model

MODELS = [argmax_model, custom_op_model]


def _opaque_indices(graph: Any) -> set[int]:
    return {i for i, o in enumerate(graph.operators) if o.type == "opaque"}


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize(
    "deducer", [TfliteGpuDeducer("mali"), TfliteGpuDeducer("adreno"), TfliteCpuDeducer({}, {}, {})]
)
def test_the_phone_deducers_leave_opaque_operators_out(make: Any, deducer: Any) -> None:
    graph = graph_from_tflite_bytes(make())
    kernels = deducer.kernels(graph)
    covered = {i for k in kernels for i in k.ops}
    assert kernels and not covered & _opaque_indices(graph)
    assert covered | _opaque_indices(graph) == set(range(len(graph.operators)))  # every other operator is covered


@pytest.mark.parametrize("deducer", [OpenclDeducer(), CpuDeducer({}, {}, {}, 8, {})])
def test_a_backend_that_cannot_run_them_refuses_cleanly(deducer: Any) -> None:
    with pytest.raises(PredictorError, match="opaque"):
        deducer.kernels(graph_from_tflite_bytes(argmax_model()))


def test_the_warning_reads_and_round_trips() -> None:
    w = PredictionWarning(OPAQUE_OPERATORS, "ARG_MAX", 1)
    assert "outside the graph IR (ARG_MAX)" in w.message() and "not in this prediction" in w.message()
    assert PredictionWarning.from_data(w.to_data()) == w


def test_a_prediction_warns_that_the_opaque_operators_are_not_in_it(qed_s10_gbdt: Any) -> None:
    custom, argmax = qed_s10_gbdt.predict(
        [graph_from_tflite_bytes(custom_op_model()), graph_from_tflite_bytes(argmax_model())]
    )
    assert argmax.latency_ms > 0 and custom.latency_ms > 0
    (w,) = [w for w in argmax.warnings if w.code == OPAQUE_OPERATORS]
    assert (w.kernel_type, w.kernels) == ("ARG_MAX", 1)
    assert [w.kernel_type for w in custom.warnings if w.code == OPAQUE_OPERATORS] == ["MyLab_Upsample"]
