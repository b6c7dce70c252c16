"""The task hands the CPU backend the uploaded ONNX file, which runs as uploaded: the result
records its SHA-256, the upload's; a quantized upload runs with int8, and int8 for a float model
fails the job saying why."""

from __future__ import annotations

from typing import Any

from server.networks.services import upload_model
from server.profiling.services import submit_profiling_job
from tests.quantized_models import resnet18_fp32, resnet18_qdq, sha256
from workers.tasks import run_profiling_job

QUICK = {"runs": 3, "warmup_runs": 1}


def _job(agent: Any, team: Any, data: bytes, filename: str, settings: dict[str, Any]) -> Any:
    from server.devices.models import Device

    model, _ = upload_model(team, None, data, filename)
    return submit_profiling_job(team, model, Device.objects.get(pk=agent.devices[0].pk), settings)


def test_an_uploaded_float_onnx_runs_as_uploaded(as_device_process: Any, agent: Any, team: Any) -> None:
    job = _job(agent, team, resnet18_fp32(), "resnet18.onnx", QUICK)
    assert run_profiling_job(job.pk) == "succeeded", job.failure_reason
    job.refresh_from_db()
    env = job.result.environment
    assert env["model_format"] == "onnx as uploaded"
    assert env["model_sha256"] == job.model.sha256 == sha256(resnet18_fp32())


def test_a_quantized_upload_runs_with_int8(as_device_process: Any, agent: Any, team: Any) -> None:
    job = _job(agent, team, resnet18_qdq(), "resnet18_int8.onnx", {**QUICK, "precision": "int8"})
    assert run_profiling_job(job.pk) == "succeeded"
    job.refresh_from_db()
    env = job.result.environment
    assert env["model_sha256"] == job.model.sha256 and env["model_precision"] == "int8"
    assert job.result.operators.filter(op_type="conv2d").exclude(mean=None).count() == 20


def test_int8_for_a_float_upload_fails_the_job_saying_why(as_device_process: Any, agent: Any, team: Any) -> None:
    job = _job(agent, team, resnet18_fp32(), "resnet18.onnx", {**QUICK, "precision": "int8"})
    assert run_profiling_job(job.pk) == "failed"
    job.refresh_from_db()
    assert "precision int8 needs a quantized model" in job.failure_reason
    assert "quantize_static" in job.failure_reason
