"""A remote run submitted through the API runs end to end on a real worker's CPU device: the
worker serves the uploaded model on loopback (a process of its own, the model loaded once) and
measures it from itself under two network profiles, ``unshaped`` and a slow profile the team
stored through the API; its progress moves, the run is stored with one summary per profile, and
the slow profile's upload is as long as its link asks (20 ms + 163 kB at 1 MB/s), far longer than
the unshaped one's.

Small on purpose: a 64 x 64 classifier, 5 requests per profile after 1 warm-up (about 2 s of
measuring; docs/remote.md has runs of zoo models)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.devicelab.remote.tiny import tiny_classifier
from tests.e2e.helpers import upload, wait_finished

REQUESTS = 5
SLOW = {"name": "slow-link", "latency_ms": 20, "throughput_mbps": 8, "cv": 0, "source": "e2e: 1 MB/s, 20 ms"}


@pytest.mark.django_db(transaction=True)
def test_a_remote_run_measures_two_profiles_through_a_worker(start_worker: Any, e2e_api: Any) -> None:
    device = start_worker().device()
    assert device.kind == "cpu"
    stored = e2e_api.post("/api/network-profiles/", SLOW, format="json")
    assert stored.status_code == 201, stored.content
    model_id = upload(e2e_api, tiny_classifier())

    body = {"model": model_id, "device": device.pk, "profiles": ["unshaped", "slow-link"], "requests": REQUESTS}
    response = e2e_api.post("/api/remote/runs/", {**body, "warmup": 1}, format="json")
    assert response.status_code == 202, response.content
    run_id = response.json()["id"]

    job = wait_finished(run_id, timeout=90)
    assert job.state == "succeeded", job.failure_reason
    assert job.attempts == 1 and job.progress == 1.0 and job.kind == "remote_scenario"

    detail = e2e_api.get(f"/api/remote/runs/{run_id}/").json()
    result = detail["result"]
    assert result["model_name"] == "tiny_classifier" and result["payload"] == "jpeg" and result["load_ms"] > 0
    assert 100_000 < result["payload_bytes"] < 1_000_000 and result["requests"] == REQUESTS
    fast, slow = result["profiles"]
    assert (fast["profile"], slow["profile"]) == ("unshaped", "slow-link")
    assert fast["requests"] == slow["requests"] == REQUESTS
    for p in (fast, slow):
        assert 0 < p["compute_median_ms"] <= p["server_median_ms"] < p["e2e_median_ms"] <= p["e2e_p90_ms"]
        for r in result["data"]["results"][p["profile"]]["requests"]:
            # each part timed on its own; what no part's clock holds is the remainder, its own part
            parts = r["upload_ms"] + r["server_ms"] + r["download_ms"] + r["remainder_ms"]
            assert r["e2e_ms"] == pytest.approx(parts) and r["remainder_ms"] >= 0
    # the slow profile as stored: 20 ms one way, 8 Mbit/s both ways
    link = result["data"]["results"]["slow-link"]["requests"][0]
    assert link["shape"] == {"uplink_bytes_per_s": 1e6, "downlink_bytes_per_s": 1e6, "one_way_delay_ms": 20.0}
    expected_upload = 20.0 + link["upload_bytes"] / 1e3  # ms: the delay, then the bytes at 1 MB/s
    assert slow["upload_median_ms"] >= 0.99 * expected_upload
    assert slow["upload_median_ms"] <= 1.3 * expected_upload + 15.0  # generous: a loaded machine only adds
    assert slow["upload_median_ms"] > fast["upload_median_ms"] + 150.0
    assert slow["download_median_ms"] > fast["download_median_ms"] + 15.0  # the delay down
    assert slow["network_share"] > 0.5 > fast["network_share"]
    assert result["spec"]["network_profiles"]["slow-link"]["source"] == SLOW["source"]
