"""A model uploaded through the API is profiled by a real worker process on the host CPU, and
GET /api/jobs/{id}/ returns its per-operator timings and, asked for, the time breakdown of one
inference (the other end-to-end jobs skip it: tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import QUICK, submit, tiny_graph, upload, wait_finished


@pytest.mark.django_db(transaction=True)
def test_uploaded_model_is_profiled_by_the_worker(start_worker: Any, e2e_api: Any) -> None:
    worker = start_worker()
    device = worker.device()
    assert device.kind == "cpu" and device.worker == worker.name

    graph = tiny_graph("api-net")
    model_id = upload(e2e_api, graph)
    job_id = submit(e2e_api, model_id, device.pk, {**QUICK, "breakdown": True})

    job = wait_finished(job_id)
    assert job.state == "succeeded", job.failure_reason
    assert job.attempts == 1 and job.progress == 1.0

    body = e2e_api.get(f"/api/jobs/{job_id}/").json()
    assert body["state"] == "succeeded"
    result = body["result"]
    assert result["attempt"] == 1
    assert result["e2e"]["n"] == QUICK["runs"] and result["e2e"]["mean"] > 0
    assert len(result["samples_ms"]) == QUICK["runs"]
    assert result["cold"]["load_ms"] > 0
    assert result["device_info"]["kind"] == "cpu"
    assert result["settings"]["runs"] == QUICK["runs"]
    # Every graph operator has a row, in graph order: timed, or fused into a timed kernel.
    ops = [o for o in result["operators"] if o["index"] is not None]
    assert [o["index"] for o in sorted(ops, key=lambda o: o["index"])] == list(range(len(graph.operators)))
    assert {o["name"] for o in ops} == {op.name for op in graph.operators}
    timed = [o for o in ops if o["mean"] is not None]
    assert timed and all(o["mean"] >= 0 and o["n"] == QUICK["runs"] for o in timed)
    conv = next(o for o in ops if o["op_type"] == "conv2d")
    assert conv["mean"] is not None and conv["input_shapes"] == [[1, 3, 16, 16]]
    fused = [o for o in ops if o["mean"] is None]
    assert all(o["fused_into"] for o in fused)
    # The time breakdown of one inference: the photos' preparation on this machine, then the model.
    breakdown = result["time_breakdown"]
    assert breakdown["applicable"] and breakdown["input"]["shape"] == [1, 3, 16, 16]
    for pipeline in breakdown["pipelines"]:
        stages = {s["name"]: s for s in pipeline["stages"]}
        assert stages["decode"]["median_ms"] > 0 and stages["inference"]["samples_ms"] == result["samples_ms"]
