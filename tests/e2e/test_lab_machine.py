"""A lab machine as it is deployed: a separate worker process with a folder of its own, a server URL,
a lab token and the broker, and no database settings. It profiles a model uploaded to the server
that it has never seen (fetched by its SHA-256), survives a model file corrupted on the wire, and
stops when its token is revoked."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from onnx import TensorProto, helper, numpy_helper

from tests.e2e.helpers import LONG, QUICK, long_graph, submit, upload, wait_finished, wait_running
from tests.e2e.lab_proxy import CorruptingProxy
from tests.waiting import wait_for


def tiny_onnx(seed: int = 0) -> bytes:
    """A Conv + Relu ONNX model with its own weights (the bytes differ per seed)."""
    rng = np.random.default_rng(seed)
    weight = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])],
        initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def upload_onnx(api: Any, data: bytes, name: str) -> dict[str, Any]:
    """Upload ONNX bytes through the API; the model's body."""
    created = api.post("/api/models/", {"file": SimpleUploadedFile(f"{name}.onnx", data)}, format="multipart")
    assert created.status_code == 201, created.content
    return dict(created.json())


def environ_of(pid: int) -> dict[str, str]:
    """A process's environment, as the kernel holds it."""
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)


@pytest.mark.django_db(transaction=True)
def test_a_lab_worker_without_database_profiles_a_model_it_never_saw(
    start_worker: Any, e2e_api: Any, settings: Any
) -> None:
    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = 64 * 1024 * 1024  # parsed in the request, ready at once
    worker = start_worker()
    device = worker.device()
    env = environ_of(worker.proc.pid)
    assert not {"DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"} & set(env), sorted(env)
    assert env["LATENCYLAB_LAB_TOKEN"] and env["LATENCYLAB_SERVER_URL"].startswith("http://")

    model = upload_onnx(e2e_api, tiny_onnx(1), "lab-first-sight")
    job_id = submit(e2e_api, model["id"], device.pk, QUICK)
    job = wait_finished(job_id, timeout=120)
    assert job.state == "succeeded", job.failure_reason

    result = e2e_api.get(f"/api/jobs/{job_id}/").json()["result"]
    assert result["environment"]["model_sha256"] == model["sha256"]
    assert result["environment"]["model_format"] == "onnx as uploaded"
    assert result["environment"]["host_lock"]["held"] is True
    ops = [o for o in result["operators"] if o["index"] is not None]
    assert {o["op_type"] for o in ops} >= {"conv2d", "relu"}
    assert any(o["mean"] is not None for o in ops)
    # The file came over HTTP into the machine's own cache, by its hash.
    cached = Path(env["LATENCYLAB_LAB_DIR"]) / "models" / model["sha256"]
    assert cached.is_file() and hashlib.sha256(cached.read_bytes()).hexdigest() == model["sha256"]


@pytest.mark.django_db(transaction=True)
def test_a_model_file_corrupted_in_transit_is_fetched_again(
    start_worker: Any, e2e_api: Any, settings: Any, live_server: Any
) -> None:
    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = 64 * 1024 * 1024
    with CorruptingProxy(live_server.url, corrupt=1) as proxy:
        worker = start_worker(server_url=proxy.url)
        device = worker.device()
        model = upload_onnx(e2e_api, tiny_onnx(2), "lab-corrupted-once")
        job = wait_finished(submit(e2e_api, model["id"], device.pk, QUICK), timeout=120)
        assert job.state == "succeeded", job.failure_reason
        assert (proxy.corrupted, proxy.downloads) == (1, 2)
    assert "arrived with sha256" in worker.log_tail(400)


@pytest.mark.django_db(transaction=True)
def test_a_model_file_corrupted_every_time_fails_the_job_saying_why(
    start_worker: Any, e2e_api: Any, settings: Any, live_server: Any
) -> None:
    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = 64 * 1024 * 1024
    with CorruptingProxy(live_server.url, corrupt=10**6) as proxy:
        worker = start_worker(server_url=proxy.url)
        device = worker.device()
        model = upload_onnx(e2e_api, tiny_onnx(3), "lab-corrupted-always")
        job = wait_finished(submit(e2e_api, model["id"], device.pk, QUICK), timeout=120)
    assert job.state == "failed"
    assert model["sha256"] in job.failure_reason and "corrupted 2 times" in job.failure_reason, job.failure_reason


@pytest.mark.django_db(transaction=True)
def test_a_revoked_token_stops_the_machine_mid_job(start_worker: Any, e2e_api: Any) -> None:
    from server.devices.models import Device
    from server.labs.models import LabMachine
    from server.labs.services import revoke_lab_machine
    from server.profiling.models import JobResult

    worker = start_worker()
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, long_graph("lab-revoked")), device.pk, {**LONG, "runs": 2000})
    wait_running(job_id, timeout=90)

    revoke_lab_machine(LabMachine.objects.get(name=worker.machine), reason="the machine was stolen")

    # Its next call is refused: it logs the server's message and stops on its own.
    assert worker.proc is not None
    code = worker.proc.wait(timeout=120)
    assert code == 5, worker.log_tail()
    log = worker.log_tail(400)
    assert "was revoked" in log and "the machine was stolen" in log
    device = Device.objects.get(pk=device.pk)
    assert device.status == "offline" and "revoked" in device.offline_reason
    # The job went back to the queue (its device offline) without a result from this machine.
    job = wait_for(lambda: (j := _job(job_id)).state != "running" and j, 60, "the job to leave the machine")
    assert job.state == "queued", (job.state, job.failure_reason)
    assert not JobResult.objects.filter(job_id=job_id).exists()


def _job(job_id: int) -> Any:
    from server.profiling.models import ProfilingJob

    return ProfilingJob.objects.get(pk=job_id)
