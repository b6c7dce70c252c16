"""What the lab-API tests (``test_protocol_*.py``) share: a client that sends a lab token, the
calls of ``devicelab.lab_protocol`` as a lab machine posts them, records built from real
devicelab objects, and a private queue prefix for the messages a registration or a heartbeat
sends to the broker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from devicelab.backends.base import DeviceInfo
from devicelab.graph import Graph
from devicelab.lab_protocol import Claim, Ending, JobKind, Progress, Registration, ResultPost, as_json
from tests.server.factories import tiny_graph


def lab_client(token: str) -> Any:
    """An API client that authenticates as a lab machine: ``Authorization: Lab <token>``."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Lab {token}")
    return client


def post(client: Any, path: str, record: Any) -> Any:
    """POST a record (or a plain JSON object) to ``path`` as JSON."""
    data = record if isinstance(record, dict) else as_json(record)
    return client.post(path, data, format="json")


def cpu_info(identity: str, name: str = "lab cpu") -> DeviceInfo:
    """A CPU device as a lab machine reports it."""
    return DeviceInfo("cpu", identity, name, {"cpu_model": "Test CPU 3000", "arch": "x86_64"})


def register(client: Any, worker: str, run: str, devices: list[DeviceInfo], start: bool = False) -> Any:
    """``POST /api/lab/devices``."""
    return post(client, "/api/lab/devices", Registration(worker=worker, run=run, devices=devices, start=start))


def claim(client: Any, job_id: int, run: str, device: int, peek: bool = False, key: str = "") -> Any:
    """``POST /api/lab/jobs/<id>/claim`` (``peek``: only whether it would be claimed; ``key``:
    the call's)."""
    return post(client, f"/api/lab/jobs/{job_id}/claim", Claim(run=run, device=device, peek=peek, key=key))


def progress(client: Any, job_id: int, run: str, fraction: float = 0.5) -> Any:
    """``POST /api/lab/jobs/<id>/progress``."""
    return post(client, f"/api/lab/jobs/{job_id}/progress", Progress(run=run, fraction=fraction))


def end(client: Any, job_id: int, how: str, run: str, reason: str) -> Any:
    """``POST /api/lab/jobs/<id>/fail`` or ``.../retry``."""
    return post(client, f"/api/lab/jobs/{job_id}/{how}", Ending(run=run, reason=reason))


def post_result(
    client: Any, job_id: int, run: str, attempt: int, result: dict[str, Any], kind: JobKind = "profile"
) -> Any:
    """``POST /api/lab/jobs/<id>/result``."""
    return post(client, f"/api/lab/jobs/{job_id}/result", ResultPost(run, attempt, kind, result))


@cache
def cpu_profile_record(graph: Graph | None = None) -> dict[str, Any]:
    """A ``ProfileRecord`` (as posted) of a real run of ``graph`` (the tiny CNN) on this host's CPU
    through onnxruntime: three runs, one warm-up."""
    from devicelab.backends.base import ProfileSettings
    from devicelab.backends.profile_record import ProfileRecord
    from devicelab.backends.registry import backend_for

    backend = backend_for("cpu")
    info = backend.discover()[0]
    settings = ProfileSettings.from_dict({"runs": 3, "warmup_runs": 1})
    result = backend.profile_job(info, graph or tiny_graph(), settings, lambda f, m: None, None)
    record = ProfileRecord.of(result).as_dict()
    assert isinstance(record, dict)
    return record


@pytest.fixture
def queue_prefix(settings: Any) -> Iterator[str]:
    """Messages sent here (a registration's re-sends, a heartbeat's) go to queues of their own,
    removed at the end."""
    from server.taskqueue import purge_queues

    prefix = f"lab-protocol-{uuid.uuid4().hex[:12]}."
    settings.LATENCYLAB_QUEUE_PREFIX = prefix
    yield prefix
    purge_queues(prefix)
