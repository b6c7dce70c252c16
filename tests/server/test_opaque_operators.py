"""A .tflite with operators outside the graph IR (ARG_MAX, a custom operator) uploads through the
API with them in its operator table as opaque operators; a job of it is taken for a phone, which
runs the file as uploaded, and refused at submission, naming the operator, for a device that runs
the IR itself (OpenCL) or another format (the CPU backend's ONNX)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from devicelab.backends.base import Capabilities
from server.profiling.models import ProfilingJob
from tests.devicelab.graph.opaque_models import argmax_model, custom_op_model

pytestmark = pytest.mark.django_db

OPENCL_GPU = Capabilities(precisions=("fp32", "fp16"), max_threads=8, formats=("ir",))
CPU = Capabilities(max_threads=2, runtimes=("onnxruntime 1.20.1",), formats=("onnx",))
PHONE = Capabilities(max_threads=8, runtimes=("tflite benchmark_model",), formats=("tflite",), delegates=("cpu",))


def _upload(api: Any, data: bytes, filename: str) -> dict[str, Any]:
    response = api.post("/api/models/", {"file": SimpleUploadedFile(filename, data)}, format="multipart")
    assert response.status_code == 201, response.json()
    body: dict[str, Any] = response.json()
    return body


def _submit(api: Any, model_id: int, device: Any) -> Any:
    return api.post("/api/jobs/", {"model": model_id, "device": device.pk, "settings": {}}, format="json")


@pytest.mark.parametrize(
    ("make", "name", "op", "custom"),
    [(argmax_model, "classes", "ARG_MAX", False), (custom_op_model, "upsampled", "MyLab_Upsample", True)],
)
def test_the_upload_shows_the_opaque_operator_in_its_table(
    api: Any, make: Any, name: str, op: str, custom: bool
) -> None:
    body = _upload(api, make(), "net.tflite")
    assert body["format"] == "tflite" and body["state"] == "ready"
    table = api.get(f"/api/models/{body['id']}/").json()["operators"]
    (row,) = [r for r in table if r["type"] == "opaque"]
    assert (row["name"], row["attrs"]["op"], row["attrs"]["custom"], row["macs"]) == (name, op, custom, 0)
    assert row["output_shapes"] and row["input_shapes"]


def test_a_phone_takes_the_job_and_opencl_is_refused_naming_the_operator(api: Any, make_device: Any) -> None:
    body = _upload(api, argmax_model(), "argmax.tflite")
    phone = make_device(kind="android", capabilities=PHONE)
    assert _submit(api, body["id"], phone).status_code == 201
    for device in (make_device(kind="opencl", capabilities=OPENCL_GPU), make_device(kind="cpu", capabilities=CPU)):
        response = _submit(api, body["id"], device)
        assert response.status_code == 400, response.json()
        text = " ".join(response.json()["model"])
        assert "ARG_MAX" in text and "'classes'" in text and device.name in text
    assert ProfilingJob.objects.count() == 1


def test_a_custom_operator_is_refused_on_an_opencl_device_registered_without_capabilities(
    api: Any, make_device: Any
) -> None:
    body = _upload(api, custom_op_model(), "custom.tflite")
    response = _submit(api, body["id"], make_device(kind="opencl"))
    assert response.status_code == 400 and "custom operator MyLab_Upsample" in " ".join(response.json()["model"])
    assert _submit(api, body["id"], make_device(kind="android")).status_code == 201


def test_a_model_without_opaque_operators_still_runs_on_opencl(
    api: Any, make_device: Any, member: Any, make_network: Any
) -> None:
    model = make_network(member.team)
    assert _submit(api, model.pk, make_device(kind="opencl", capabilities=OPENCL_GPU)).status_code == 201


@pytest.fixture
def phone(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    """A phone on the adb double, its DeviceInfo as the Android backend discovers it."""
    from tests.adb_double.benchmark_tool import benchmark_model_binary
    from tests.adb_double.phones import Phone
    from tests.adb_double.server import discovered_phone

    pixel = Phone("PIXEL7-1")
    pixel.time_scale = 0.01
    pixel.cooling_time_scale = 50.0
    with discovered_phone(pixel, benchmark_model_binary(), tmp_path) as info:
        yield info


def test_a_phone_job_of_the_upload_reports_the_opaque_operators_time(api: Any, phone: Any) -> None:
    """Submitted through the API, run by the Android backend on the phone with the uploaded file
    (as the worker hands it over), ingested: the job's operator table times ARG_MAX."""
    from devicelab.backends.android import backend
    from devicelab.backends.base import ModelFile, ProfileSettings
    from server.devices.services import register_devices
    from server.networks.models import NetworkModel
    from server.networks.services import model_graph
    from server.profiling.services import claim_job, ingest_result

    data = argmax_model()
    body = _upload(api, data, "argmax.tflite")
    (device,) = register_devices("worker-a", [phone])
    settings = {"delegate": "cpu", "runs": 5, "warmup_runs": 1, "cooldown_c": 90.0}
    created = api.post("/api/jobs/", {"model": body["id"], "device": device.pk, "settings": settings}, format="json")
    assert created.status_code == 201, created.json()
    job = ProfilingJob.objects.get(pk=created.json()["id"])
    assert claim_job(job.pk, "run-1") is not None
    graph = model_graph(NetworkModel.objects.get(pk=body["id"]))
    result = backend.profile(
        phone, graph, ProfileSettings.from_dict(job.settings), lambda f, m: None, ModelFile("tflite", data, "a.tflite")
    )
    assert ingest_result(job.pk, "run-1", result) is not None
    rows = api.get(f"/api/jobs/{job.pk}/").json()["result"]["operators"]
    (row,) = [r for r in rows if r["op_type"] == "opaque"]
    assert (row["name"], row["kernel"], row["n"]) == ("classes", "ARG_MAX", 5) and row["mean"] > 0
    assert row["output_shapes"] == [[1, 16, 16]]


def test_a_remote_run_of_it_is_refused_naming_the_operator(api: Any, make_device: Any) -> None:
    body = _upload(api, argmax_model(), "argmax.tflite")
    cpu = make_device(kind="cpu", capabilities=CPU)
    response = api.post(
        "/api/remote/runs/", {"model": body["id"], "device": cpu.pk, "profiles": ["unshaped"]}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert "ARG_MAX" in str(response.json()) and cpu.name in str(response.json()), response.json()
    assert not ProfilingJob.objects.exists()


def test_a_fusion_sweep_or_plan_of_it_is_refused_naming_the_operator(api: Any, make_device: Any) -> None:
    body = _upload(api, custom_op_model(), "custom.tflite")
    gpu = make_device(kind="opencl", capabilities=OPENCL_GPU)
    for path in ("/api/fusion/sweeps/", "/api/fusion/plans/"):
        response = api.post(path, {"device": gpu.pk, "models": [body["id"]]}, format="json")
        assert response.status_code == 400, response.json()
        assert "MyLab_Upsample" in str(response.json()) and gpu.name in str(response.json()), response.json()
    assert not ProfilingJob.objects.exists()
