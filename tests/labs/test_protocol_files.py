"""``GET /api/lab/files/<sha256>``: an uploaded model's bytes, streamed to a lab machine only while
one of its runs holds a running job of that model; otherwise 403, whoever asks."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.graph.onnx import graph_to_onnx_bytes
from server.networks.services import upload_model
from tests.labs.protocol_calls import claim, cpu_profile_record, lab_client, post_result
from tests.server.factories import tiny_graph

pytestmark = pytest.mark.django_db


@pytest.fixture
def onnx_job(
    add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> Any:
    """(client of 'rack', its queued job of an uploaded .onnx model on device 'rack#2', the bytes)."""
    _, token = add_lab("rack")
    data = graph_to_onnx_bytes(tiny_graph("filenet"))
    model, _ = upload_model(member.team, None, data, "filenet.onnx")
    job = make_job(member.team, model=model, device=make_device(worker="rack#2"))
    return lab_client(token), job, data


def _download(client: Any, sha256: str) -> Any:
    return client.get(f"/api/lab/files/{sha256}")


def test_the_file_of_a_job_the_run_holds_is_streamed(onnx_job: Any) -> None:
    client, job, data = onnx_job
    sha256 = hashlib.sha256(data).hexdigest()
    ref = claim(client, job.pk, "run-1", job.device_id).json()["job"]["model"]
    assert ref["sha256"] == sha256

    answer = _download(client, ref["sha256"])

    assert answer.status_code == 200
    assert answer.streaming and answer["Content-Type"] == "application/octet-stream"
    body = b"".join(answer.streaming_content)
    assert hashlib.sha256(body).hexdigest() == answer["X-Checksum-Sha256"] == sha256
    assert len(body) == ref["size"]


def test_before_the_claim_the_file_is_refused(onnx_job: Any) -> None:
    client, job, data = onnx_job
    answer = _download(client, hashlib.sha256(data).hexdigest())
    assert answer.status_code == 403
    assert "no job running on lab machine 'rack' runs a model with sha256" in answer.json()["detail"]


def test_after_the_job_finished_the_file_is_refused(onnx_job: Any) -> None:
    client, job, data = onnx_job
    sha256 = hashlib.sha256(data).hexdigest()
    assert claim(client, job.pk, "run-1", job.device_id).json()["outcome"] == "claimed"
    assert post_result(client, job.pk, "run-1", 1, cpu_profile_record()).status_code == 201

    assert _download(client, sha256).status_code == 403


def test_another_machine_cannot_fetch_the_file(onnx_job: Any, add_lab: Callable[..., Any]) -> None:
    client, job, data = onnx_job
    assert claim(client, job.pk, "run-1", job.device_id).json()["outcome"] == "claimed"
    _, theirs = add_lab("other")

    answer = _download(lab_client(theirs), hashlib.sha256(data).hexdigest())

    assert answer.status_code == 403 and "lab machine 'other'" in answer.json()["detail"]


def test_an_unknown_hash_is_refused(onnx_job: Any) -> None:
    client, job, _ = onnx_job
    assert claim(client, job.pk, "run-1", job.device_id).json()["outcome"] == "claimed"
    assert _download(client, "0" * 64).status_code == 403
