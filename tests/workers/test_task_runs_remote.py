"""A remote run is a job: the task claims it on the worker's CPU device, serves the job's model on
loopback in a process of its own, measures it from this process under every network profile of
the job (interleaved), reports progress, and stores the run with one summary row per profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.graph import graph_to_json
from tests.devicelab.remote.tiny import tiny_classifier
from workers.tasks import run_profiling_job

REQUESTS = 5
# 20 ms one way and 1 MB/s: a 163 kB photo goes up in about 183 ms, the answer down in about 21 ms
SLOW = {"name": "slow-link", "latency_ms": 20, "throughput_mbps": 8, "cv": 0}


@pytest.fixture
def submit(as_device_process: Any, team: Any, agent: Any) -> Callable[..., Any]:
    """``submit(**raw)``: a remote run of the tiny classifier on the agent's CPU device."""
    from server.devices.models import Device
    from server.networks.services import upload_model
    from server.remote.services import submit_remote_run
    from server.selection.services import store_network_profile

    store_network_profile(team, SLOW)
    graph = tiny_classifier()
    model, _ = upload_model(team, None, graph_to_json(graph).encode(), f"{graph.name}.json")
    device = Device.objects.get(pk=agent.devices[0].pk)
    return lambda **raw: submit_remote_run(team, model, device, raw)


def test_a_remote_run_serves_the_model_and_stores_every_profile(submit: Callable[..., Any], agent: Any) -> None:
    import json

    from server.remote.models import RemoteScenarioResult
    from server.remote.services import profile_summaries

    job = submit(profiles=["unshaped", "slow-link"], requests=REQUESTS, warmup=1, seed=3)
    assert job.kind == "remote_scenario" and job.title == "remote run of tiny_classifier"
    assert job.settings["network_profiles"]["unshaped"] is None
    assert job.settings["network_profiles"]["slow-link"]["latency_ms"] == 20.0  # frozen at submission
    seen: list[tuple[float, str]] = []

    def spy(request: Any) -> None:  # the progress the worker posts to the lab API
        if request.method == "POST" and request.url.endswith(f"/api/lab/jobs/{job.pk}/progress"):
            body = json.loads(request.body)
            seen.append((body["fraction"], body["message"]))

    agent.machine.adapter.before = spy
    assert run_profiling_job(job.pk) == "succeeded"

    job.refresh_from_db()
    assert job.state == "succeeded" and job.progress == 1.0
    assert [f for f, _ in seen] == sorted(f for f, _ in seen) and seen[-1] == (1.0, "done")
    assert any(m.startswith("round ") for _, m in seen)
    stored = RemoteScenarioResult.objects.get(job=job)
    assert (stored.model_name, stored.payload, stored.content_type) == ("tiny_classifier", "jpeg", "image/jpeg")
    assert 100_000 < stored.payload_bytes < 1_000_000 and stored.load_ms > 0 and stored.elapsed_s > 0
    assert (stored.requests, stored.warmup) == (REQUESTS, 1) and stored.spec == job.settings
    assert stored.environment["threads"] == 1 and stored.environment["requests"] == REQUESTS
    assert list(stored.data["results"]) == ["unshaped", "slow-link"]
    fast, slow = profile_summaries(stored)
    assert (fast.position, fast.profile, slow.position, slow.profile) == (0, "unshaped", 1, "slow-link")
    for row in (fast, slow):
        measured = stored.data["results"][row.profile]
        assert row.requests == REQUESTS == len(measured["requests"])
        assert row.e2e_median_ms == measured["e2e"]["median"] and row.upload_p90_ms == measured["upload"]["p90"]
        assert 0 < row.compute_median_ms <= row.server_median_ms < row.e2e_median_ms <= row.e2e_p90_ms
        assert set(row.stages_ms) == {"decode", "resize_crop", "normalize", "compute", "postprocess", "other"}
        assert row.stages_ms["decode"] > 0 and row.stages_ms["compute"] == pytest.approx(row.compute_median_ms)
        for r in measured["requests"]:
            parts = r["upload_ms"] + r["server_ms"] + r["download_ms"] + r["remainder_ms"]
            assert r["e2e_ms"] == pytest.approx(parts)  # the remainder: what none of the parts' clocks holds
        assert row.remainder_median_ms == measured["remainder"]["median"]
    # the slow link as it was asked: 20 ms + 163 kB at 1 MB/s up, 20 ms + the answer down
    nbytes = stored.data["results"]["slow-link"]["requests"][0]["upload_bytes"]
    assert slow.upload_median_ms >= 0.99 * (20.0 + nbytes / 1e3)
    assert slow.upload_median_ms > fast.upload_median_ms + 150.0
    assert slow.download_median_ms > fast.download_median_ms + 15.0
    assert 0 <= fast.network_share < slow.network_share <= 1 and slow.network_share > 0.5

    # a second delivery of the same message finds the job done and stores nothing twice
    assert run_profiling_job(job.pk) == "not-queued"
    assert RemoteScenarioResult.objects.filter(job=job).count() == 1


def test_storing_is_idempotent_and_only_for_the_claiming_run(submit: Callable[..., Any]) -> None:
    from devicelab.remote.on_device import remote_on_device
    from server.profiling.services import claim_job
    from server.remote.models import RemoteProfileSummary
    from server.remote.services import ingest_remote
    from workers.context import WorkerContext

    job = submit(profiles=["unshaped"], requests=2, warmup=0, payload="tensor")
    info = next(iter(WorkerContext.from_env().devices.values()))
    result = remote_on_device(info, tiny_classifier(), job.settings)
    # a tensor: the photo preprocessed on the client, 1 x 3 x 64 x 64 float32; the server only runs it
    assert result.payload_bytes == 4 * 3 * 64 * 64 and result.content_type == "application/octet-stream"
    assert result.summaries[0].stages_ms["resize_crop"] == 0.0

    assert claim_job(job.pk, "run-a", device_id=job.device_id) is not None
    assert ingest_remote(job.pk, "run-b", result) is None  # not the run that holds the claim
    stored = ingest_remote(job.pk, "run-a", result)
    assert stored is not None and stored.payload == "tensor" and stored.profiles.count() == 1
    again = ingest_remote(job.pk, "run-a", result)  # a retried store finds it stored
    assert again is not None and again.pk == stored.pk
    assert RemoteProfileSummary.objects.filter(result__job=job).count() == 1
    job.refresh_from_db()
    assert job.state == "succeeded"


def test_a_run_on_a_device_that_is_not_a_cpu_is_refused_by_the_worker(submit: Callable[..., Any]) -> None:
    from devicelab.backends.base import DeviceInfo
    from devicelab.remote.on_device import remote_on_device

    job = submit(profiles=["unshaped"], requests=1)
    gpu = DeviceInfo("opencl", "opencl:test", "Test GPU")
    with pytest.raises(ValueError, match="remote runs are served by a CPU device"):
        remote_on_device(gpu, tiny_classifier(), job.settings)
