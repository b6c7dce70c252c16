"""A .tflite with operators outside the graph IR (ARG_MAX, a custom operator) runs on an emulated
phone as uploaded, and every operator, the opaque ones included, gets its measured time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from devicelab.backends.base import BackendError, ModelFile
from devicelab.graph.tflite import graph_from_tflite_bytes
from tests.adb_double import benchmark_tool
from tests.adb_double.server import AdbDouble
from tests.adb_double.tflite_model import TfliteModel, read_model
from tests.devicelab.backends.android.test_backend_on_double import farm, pixel, run
from tests.devicelab.graph.opaque_models import argmax_model, custom_op_model

__all__ = ["farm"]  # the fixture, shared with the backend's tests


@pytest.fixture
def tool_with_custom_op(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``benchmark_model`` built with the model's custom operator registered (as users build it
    for their own operators): the double runs ``MyLab_Upsample`` instead of refusing it."""

    def linked(data: bytes) -> TfliteModel:
        model = read_model(data)
        for op in model.ops:
            if op.name == "MyLab_Upsample":
                op.custom = False
        return model

    monkeypatch.setattr(benchmark_tool, "read_model", linked)


@pytest.mark.parametrize(
    ("make", "opaque", "kernel"),
    [(argmax_model, "classes", "ARG_MAX"), (custom_op_model, "upsampled", "MyLab_Upsample")],
)
@pytest.mark.parametrize("delegate", ["cpu", "xnnpack", "gpu"])  # the GPU delegate leaves it to the CPU
def test_a_tflite_with_an_opaque_operator_runs_and_times_it(
    farm: AdbDouble, tool_with_custom_op: None, make: Callable[[], bytes], opaque: str, kernel: str, delegate: str
) -> None:
    data = make()
    graph = graph_from_tflite_bytes(data, "uploaded")
    assert [o.name for o in graph.opaque_operators()] == [opaque]
    info, _ = pixel(farm)
    r = run(info, graph, ModelFile("tflite", data, "uploaded.tflite"), delegate=delegate)
    assert r.environment["model_format"] == "tflite as uploaded"
    rows = {graph.operators[t.index].name: t for t in r.ops if t.index is not None}  # a delegate keeps its name
    assert set(rows) == {o.name for o in graph.operators}
    row = rows[opaque]
    assert row.type == "opaque" and row.kernel == kernel
    assert row.stats is not None and row.stats.n == 5 and row.stats.mean > 0  # the tool prints averages
    assert row.output_shapes == [list(graph.tensors[t].shape) for t in graph.op(opaque).outputs]
    assert not [t for t in r.ops if t.index is None and t.kernel == kernel]  # not left as a runtime row


def test_a_custom_operator_the_stock_tool_lacks_fails_the_job_naming_it(farm: AdbDouble) -> None:
    data = custom_op_model()
    info, _ = pixel(farm)
    with pytest.raises(BackendError, match="unresolved custom op: MyLab_Upsample"):
        run(info, graph_from_tflite_bytes(data, "uploaded"), ModelFile("tflite", data, "u.tflite"), delegate="cpu")


@pytest.mark.parametrize("delegate", ["cpu", "xnnpack"])
def test_a_measured_opaque_operator_trains_no_kernel_and_breaks_no_learning(
    farm: AdbDouble, tool_with_custom_op: None, delegate: str
) -> None:
    from devicelab.predict.deduce_tflite_cpu import learn_tflite_cpu_deducer
    from devicelab.predict.records import record_from_result

    info, _ = pixel(farm)
    records = []
    for make in (argmax_model, custom_op_model):
        data = make()
        graph = graph_from_tflite_bytes(data, make.__name__)
        records.append(
            record_from_result(graph, run(info, graph, ModelFile("tflite", data, "m.tflite"), delegate=delegate))
        )
    deducer = learn_tflite_cpu_deducer(records)
    for sample, record in zip(deducer.samples(records), records, strict=True):
        opaque = {i for i, o in enumerate(record.graph.operators) if o.type == "opaque"}
        assert sample.measured and not {i for k in sample.measured for i in k.ops} & opaque
        assert sample.deduced and not {i for k in sample.deduced for i in k.ops} & opaque
