"""An online-scheduling run submitted through the API runs end to end on a real worker's OpenCL
device (PoCL here): the worker measures t1, replays one seeded trace under time-only, space-only
and space-time, checks every output against the tenant's exclusive run, and the server stores the
comparison. Small on purpose: a small SGEMM shape, three tenants, half a second of arrivals."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import wait_finished

SPEC = {"workload": "64x32x128", "tenants": 3, "load": 0.5, "duration_s": 0.5, "target_factor": 8}


@pytest.mark.django_db(transaction=True)
def test_an_online_run_replays_one_trace_under_every_policy_on_a_worker(start_worker: Any, e2e_api: Any) -> None:
    from server.tenancy.models import OnlineRunResult

    device = start_worker(kinds="opencl").device()
    response = e2e_api.post("/api/sharing/online/", {"device": device.pk, "spec": SPEC}, format="json")
    assert response.status_code == 201, response.content
    job_id = int(response.json()["id"])
    job = wait_finished(job_id, timeout=180)
    assert job.state == "succeeded", job.failure_reason
    assert OnlineRunResult.objects.filter(job_id=job_id).count() == 1

    body = e2e_api.get(f"/api/sharing/online/{job_id}/").json()
    result = body["result"]
    assert result["spec"]["workload"] == "64x32x128" and result["spec"]["tenants"] == 3
    assert result["t1_ms"] > 0 and result["target_ms"] == pytest.approx(8 * result["t1_ms"])
    assert result["offered_per_s"] == pytest.approx(0.5 / (result["t1_ms"] / 1e3))
    assert [p["policy"] for p in result["comparison"]] == ["time_only", "space_only", "space_time"]
    for p in result["comparison"]:
        assert p["status"] == "ok" and p["outputs_correct"] is True, p
        assert 0 <= p["attainment"] <= 1 and p["per_s"] > 0 and p["p99_ms"] >= p["p50_ms"] > 0, p
    assert result["comparison"][0]["mean_batch"] == 1.0  # time-only serves one request at a time
    assert "requests" not in result["policies"]["space_time"]  # the per-request records stay on the worker
    listed = e2e_api.get("/api/sharing/online/").json()["results"]
    assert [j["id"] for j in listed] == [job_id]
