"""A job submitted through the API to an OpenCL device runs end to end through a real worker:
the lab's kernels on PoCL here, any OpenCL driver elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import QUICK, submit, tiny_graph, upload, wait_finished


@pytest.mark.django_db(transaction=True)
def test_job_on_an_opencl_device_returns_kernel_timings(start_worker: Any, e2e_api: Any) -> None:
    worker = start_worker(kinds="opencl")
    device = worker.device()
    assert device.kind == "opencl"
    assert device.hardware["wave_size"] >= 1 and device.hardware["max_work_group_size"] >= 1
    assert device.hardware["gpu_name"] and device.hardware["driver"] and "OpenCL" in device.hardware["opencl_version"]

    graph = tiny_graph("opencl-net")
    job_id = submit(e2e_api, upload(e2e_api, graph), device.pk, {**QUICK, "threads": 1})
    job = wait_finished(job_id)
    assert job.state == "succeeded", job.failure_reason

    result = e2e_api.get(f"/api/jobs/{job_id}/").json()["result"]
    assert result["device_info"]["kind"] == "opencl"
    assert result["e2e"]["n"] == QUICK["runs"] and result["cold"]["load_ms"] > 0
    ops = {o["name"]: o for o in result["operators"] if o["index"] is not None}
    assert set(ops) == {op.name for op in graph.operators}
    conv = next(o for o in ops.values() if o["op_type"] == "conv2d")
    # The conv kernel absorbs the batch norm and the ReLU after it (the backend's fusion rule).
    assert conv["mean"] > 0 and conv["n"] == QUICK["runs"] and conv["kernel"]
    fused = [o for o in ops.values() if o["op_type"] in ("batch_norm", "relu")]
    assert fused and all(o["mean"] is None and o["fused_into"] for o in fused)
    # A fresh pool process per job: the job's thread count reached the driver's thread pool
    # (PoCL sizes it from POCL_MAX_PTHREAD_COUNT when OpenCL is first initialized in a process).
    assert result["environment"]["POCL_MAX_PTHREAD_COUNT"] == "1"


@pytest.mark.django_db(transaction=True)
def test_each_job_gets_its_own_thread_count(start_worker: Any, e2e_api: Any) -> None:
    device = start_worker(kinds="opencl").device()
    model_id = upload(e2e_api, tiny_graph("opencl-threads"))
    applied = []
    for threads in (1, 2):
        job = wait_finished(submit(e2e_api, model_id, device.pk, {**QUICK, "threads": threads}))
        assert job.state == "succeeded", job.failure_reason
        applied.append(job.result.environment["POCL_MAX_PTHREAD_COUNT"])
    assert applied == ["1", "2"]
