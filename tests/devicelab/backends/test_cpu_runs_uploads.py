"""The CPU backend runs an uploaded ONNX file as uploaded (its own weights and quantization), maps
the kernels onnxruntime ran back to the IR operators, and accepts int8 for quantized models only."""

from __future__ import annotations

import json

import onnx
import pytest

from devicelab.backends import cpu
from devicelab.backends.base import (
    DeviceInfo,
    ModelFile,
    ProfileResult,
    ProfileSettings,
    cold_start_payload,
    read_cold_start_model,
)
from devicelab.graph.ir import Graph
from devicelab.graph.onnx import graph_from_onnx_bytes
from tests.quantized_models import resnet18_fp32, resnet18_qdq, resnet18_qoperator, sha256

QUICK = {"runs": 6, "warmup_runs": 1}


@pytest.fixture(scope="module")
def device() -> DeviceInfo:
    return cpu.discover()[0]


def _profile(device: DeviceInfo, data: bytes | None, graph: Graph, **settings: object) -> ProfileResult:
    file = ModelFile("onnx", data, "model.onnx") if data is not None else None
    return cpu.profile(device, graph, ProfileSettings(**{**QUICK, **settings}), None, file)  # type: ignore[arg-type]


def _kernel_sum_ms(result: ProfileResult) -> float:
    return sum(o.stats.mean for o in result.ops if o.stats is not None)


def test_an_uploaded_fp32_model_runs_as_uploaded_cold_starts_included(device: DeviceInfo) -> None:
    data = resnet18_fp32()
    graph = graph_from_onnx_bytes(data, name="resnet18-real-weights")
    r = _profile(device, data, graph, cold_runs=2)
    env = r.environment
    assert env["model_format"] == "onnx as uploaded"
    assert env["model_sha256"] == sha256(data)
    assert "weight_seed" not in env  # the upload's weights ran, not seeded ones
    assert env["model_precision"] == "fp32"
    # the two fresh processes loaded the same file (written once, passed by its path)
    assert r.cold_starts is not None and len(r.cold_starts.samples) == 2
    assert 0.5 < _kernel_sum_ms(r) / r.e2e.mean < 1.5
    convs = [o for o in r.ops if o.type == "conv2d"]
    assert len(convs) == 20 and all(o.stats is not None or o.fused_into for o in convs)


def test_a_graph_that_arrived_as_ir_is_exported_with_seeded_weights(device: DeviceInfo) -> None:
    graph = graph_from_onnx_bytes(resnet18_fp32(), name="resnet18-as-ir")
    env = _profile(device, None, graph).environment
    assert env["model_format"] == "onnx exported by latencylab (seeded weights)"
    assert env["weight_seed"] == cpu.WEIGHT_SEED and env["model_sha256"] != sha256(resnet18_fp32())


@pytest.mark.parametrize("form", ["qdq", "qoperator"])
def test_a_quantized_resnet18_runs_its_int8_kernels_mapped_to_ir_operators(device: DeviceInfo, form: str) -> None:
    data = resnet18_qdq() if form == "qdq" else resnet18_qoperator()
    graph = graph_from_onnx_bytes(data, name=f"resnet18-{form}")
    assert set(graph.macs_by_dtype()) == {"int8" if form == "qdq" else "uint8"}
    r = _profile(device, data, graph, precision="int8")
    env = r.environment
    assert env["model_format"] == "onnx as uploaded" and env["model_sha256"] == sha256(data)
    assert env["model_precision"] == "int8"
    # every convolution owns the kernel onnxruntime ran for it: int8 QLinearConv where its QDQ
    # fusion applies (not where a DequantizeLinear feeds two operators: a conv and a residual add)
    convs = [o for o in r.ops if o.type == "conv2d"]
    assert len(convs) == 20
    assert all(o.stats is not None and "Conv" in o.kernel for o in convs), [(o.name, o.kernel) for o in convs]
    int8_convs = [o for o in convs if "QLinearConv" in o.kernel]
    assert len(int8_convs) == 20 if form == "qoperator" else len(int8_convs) >= 7, [(o.name, o.kernel) for o in convs]
    # and the kernels that ran add up to the network's time: nothing lost, nothing counted twice
    assert 0.6 < _kernel_sum_ms(r) / r.e2e.mean < 1.4
    runtime_ms = sum(o.stats.mean for o in r.ops if o.index is None and o.stats is not None)
    assert runtime_ms < 0.2 * _kernel_sum_ms(r)  # layout transposes only
    assert all(owner is None or owner in {o.name for o in graph.operators} for owner in env["kernel_owner"].values())


def test_unnamed_nodes_of_an_upload_still_map(device: DeviceInfo) -> None:
    model = onnx.load_from_string(resnet18_qdq())
    for node in model.graph.node:
        node.name = ""
    data = model.SerializeToString()
    graph = graph_from_onnx_bytes(data, name="unnamed")
    r = _profile(device, data, graph, precision="int8")
    assert r.environment["model_sha256"] == sha256(data)  # the file as uploaded ran, names and all
    convs = [o for o in r.ops if o.type == "conv2d"]
    assert len(convs) == 20 and all(o.stats is not None and "Conv" in o.kernel for o in convs)
    assert sum("QLinearConv" in o.kernel for o in convs) >= 7


def test_a_quantized_graph_that_arrived_as_ir_exports_and_runs_in_int8(device: DeviceInfo) -> None:
    graph = graph_from_onnx_bytes(resnet18_qoperator(), name="qoperator-as-ir")
    r = _profile(device, None, graph, precision="int8", runs=3)
    assert r.environment["model_format"].startswith("onnx exported")
    assert any("QLinearConv" in o.kernel for o in r.ops if o.type == "conv2d")


def test_int8_is_refused_for_a_float_model_and_fp32_for_a_quantized_one(device: DeviceInfo) -> None:
    floating = graph_from_onnx_bytes(resnet18_fp32(), name="float")
    with pytest.raises(ValueError, match="precision int8 needs a quantized model, and 'float' has no quantized"):
        _profile(device, resnet18_fp32(), floating, precision="int8")
    quantized = graph_from_onnx_bytes(resnet18_qdq(), name="qdq")
    with pytest.raises(ValueError, match="'qdq' is a quantized model .* profile it with precision int8, not fp32"):
        _profile(device, resnet18_qdq(), quantized, precision="fp32")
    with pytest.raises(ValueError, match="runs fp32 and int8 models, not 'fp16'"):
        _profile(device, None, floating, precision="fp16")


def test_a_fresh_process_gets_the_upload_by_path_not_in_the_json(device: DeviceInfo, tmp_path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(resnet18_qdq())
    graph = graph_from_onnx_bytes(resnet18_qdq(), name="qdq")
    payload = cold_start_payload(device, graph, ProfileSettings(precision="int8"), path, "onnx")
    assert payload["model_file"] == {"path": str(path), "format": "onnx"}
    assert len(json.dumps(payload)) < len(resnet18_qdq()) / 10  # no bytes inline
    read = read_cold_start_model(payload)
    assert read is not None and read.sha256 == sha256(resnet18_qdq())
    times = cpu.cold_start_entry(payload)
    assert times["load_ms"] > 0 and times["first_run_ms"] > 0
