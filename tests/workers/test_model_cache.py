"""A job of an uploaded ONNX model on the CPU fetches the file from the lab API by its SHA-256 into
the machine's cache, once: the next job of the same model reads it from the disk. A download whose
bytes arrive corrupted is fetched again; corrupted twice, the job fails naming the mismatch. The
cache stays within its byte bound by removing the files used longest ago."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devicelab.graph.onnx import graph_to_onnx_bytes
from devicelab.lab_protocol import ModelRef
from tests.workers.conftest import QUICK, tiny_graph
from workers.model_cache import ModelCache
from workers.tasks import run_profiling_job


def _onnx(name: str) -> bytes:
    return graph_to_onnx_bytes(tiny_graph(name), seed=0)


@pytest.fixture
def submit(as_device_process: Any, agent: Any, team: Any) -> Callable[[bytes, str], Any]:
    """``submit(data, filename)``: a queued job of an uploaded model on the agent's CPU."""
    from server.devices.models import Device
    from server.networks.services import upload_model
    from server.profiling.services import submit_profiling_job

    device = Device.objects.get(pk=agent.devices[0].pk)

    def make(data: bytes, filename: str) -> Any:
        model, _ = upload_model(team, None, data, filename)
        return submit_profiling_job(team, model, device, QUICK)

    return make


@pytest.fixture
def downloads(agent: Any) -> list[str]:
    """The paths of the model files the machine downloads."""
    seen: list[str] = []

    def count(request: Any) -> None:
        if request.method == "GET" and "/api/lab/files/" in request.url:
            seen.append(request.path_url)

    agent.machine.adapter.before = count
    return seen


def _corrupt(agent: Any, times: int) -> list[int]:
    """Flip a byte in the next ``times`` file downloads on their way; returns the count so far."""
    done: list[int] = []

    def flip(request: Any, resp: Any) -> None:
        if "/api/lab/files/" in request.url and resp.status_code == 200 and len(done) < times:
            resp._content = bytes([resp._content[0] ^ 0xFF]) + resp._content[1:]
            done.append(1)

    agent.machine.after = flip
    return done


def test_a_model_is_fetched_by_its_hash_once(
    submit: Callable[[bytes, str], Any], agent: Any, downloads: list[str]
) -> None:
    data = _onnx("cached")
    first = submit(data, "cached.onnx")
    sha = first.model.sha256

    assert run_profiling_job(first.pk) == "succeeded", first.failure_reason
    cached = agent.machine.folder / "models" / sha
    assert downloads == [f"/api/lab/files/{sha}"]
    assert cached.read_bytes() == data
    first.refresh_from_db()
    assert first.result.environment["model_sha256"] == sha

    second = submit(data, "cached-again.onnx")  # the same bytes: the same stored model file's hash
    assert second.model.sha256 == sha
    assert run_profiling_job(second.pk) == "succeeded"
    assert len(downloads) == 1  # read from the cache
    second.refresh_from_db()
    assert second.result.environment["model_sha256"] == sha


def test_a_download_corrupted_once_is_fetched_again(
    submit: Callable[[bytes, str], Any], agent: Any, downloads: list[str]
) -> None:
    data = _onnx("flaky")
    job = submit(data, "flaky.onnx")
    corrupted = _corrupt(agent, times=1)

    assert run_profiling_job(job.pk) == "succeeded", job.failure_reason
    assert len(corrupted) == 1 and len(downloads) == 2
    assert (agent.machine.folder / "models" / job.model.sha256).read_bytes() == data


def test_a_download_corrupted_twice_fails_the_job_naming_the_mismatch(
    submit: Callable[[bytes, str], Any], agent: Any, downloads: list[str]
) -> None:
    job = submit(_onnx("broken"), "broken.onnx")
    _corrupt(agent, times=2)

    assert run_profiling_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.state == "failed" and len(downloads) == 2
    assert f"not {job.model.sha256}" in job.failure_reason and "sha256" in job.failure_reason
    assert "corrupted 2 times" in job.failure_reason
    folder = agent.machine.folder / "models"
    assert not folder.exists() or list(folder.iterdir()) == []  # nothing half-written is kept


def test_the_cache_keeps_within_its_bound_removing_the_least_recently_used(
    submit: Callable[[bytes, str], Any],
    agent: Any,
    downloads: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import workers.tasks

    a, b = _onnx("model_a"), _onnx("model_b_wider")
    settings, server, _, outbox = workers.tasks.lab()
    bound = max(len(a), len(b)) + 16  # room for one of them
    cache = ModelCache(settings.cache_dir, bound)
    monkeypatch.setattr(workers.tasks, "lab", lambda: (settings, server, cache, outbox))
    job_a, job_b = submit(a, "a.onnx"), submit(b, "b.onnx")

    assert run_profiling_job(job_a.pk) == "succeeded"
    assert run_profiling_job(job_b.pk) == "succeeded"

    kept = sorted(p.name for p in settings.cache_dir.iterdir())
    assert kept == [job_b.model.sha256]  # a, used longest ago, made room for b
    assert sum(p.stat().st_size for p in settings.cache_dir.iterdir()) <= bound
    again = submit(a, "a-again.onnx")
    assert run_profiling_job(again.pk) == "succeeded"
    assert len(downloads) == 3  # fetched again once evicted


def test_evict_removes_the_files_used_longest_ago(tmp_path: Path) -> None:
    cache = ModelCache(tmp_path, max_bytes=250)
    refs = [ModelRef(f"{n:064x}", 100, "onnx", f"m{n}.onnx") for n in range(3)]
    now = time.time()
    for age, ref in zip((300, 200, 100), refs, strict=True):
        path = cache.path_of(ref)
        path.write_bytes(bytes(100))
        os.utime(path, (now - age, now - age))

    assert cache.fetch(refs[0], server=None) == bytes(100)  # in the cache: used now, no server asked

    removed = cache.evict()
    assert removed == [cache.path_of(refs[1])]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([refs[0].sha256, refs[2].sha256])
