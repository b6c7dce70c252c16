"""A QDQ-quantized ResNet-18 uploaded through the API profiles with precision int8 on a real
worker's CPU: the file that ran is the upload (its SHA-256 is in the result), and the kernels
onnxruntime ran are mapped onto the IR's operators, adding up to the end-to-end time."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.e2e.helpers import submit, wait_finished
from tests.quantized_models import resnet18_qdq, sha256


@pytest.mark.django_db(transaction=True)
def test_a_qdq_resnet18_uploads_and_profiles_with_int8(start_worker: Any, e2e_api: Any, settings: Any) -> None:
    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = 64 * 1024 * 1024  # parsed in the request, ready at once
    worker = start_worker()
    device = worker.device()
    data = resnet18_qdq()
    created = e2e_api.post("/api/models/", {"file": SimpleUploadedFile("resnet18_int8.onnx", data)}, format="multipart")
    assert created.status_code == 201, created.content
    model = created.json()
    assert model["state"] == "ready" and model["sha256"] == sha256(data)
    assert set(model["summary"]["macs_by_dtype"]) == {"int8"}

    job_id = submit(e2e_api, model["id"], device.pk, {"runs": 5, "warmup_runs": 1, "precision": "int8"})
    job = wait_finished(job_id, timeout=180)
    assert job.state == "succeeded", job.failure_reason

    result = e2e_api.get(f"/api/jobs/{job_id}/").json()["result"]
    env = result["environment"]
    assert env["model_format"] == "onnx as uploaded"
    assert env["model_sha256"] == model["sha256"]
    ops = [o for o in result["operators"] if o["index"] is not None]
    convs = [o for o in ops if o["op_type"] == "conv2d"]
    assert len(convs) == 20 and all(o["mean"] is not None and "Conv" in o["kernel"] for o in convs)
    assert any("QLinearConv" in o["kernel"] for o in convs)
    kernel_sum = sum(o["mean"] for o in result["operators"] if o["mean"] is not None)
    assert 0.6 < kernel_sum / result["e2e"]["mean"] < 1.4
