"""Fixtures for the server tests: devices, networks and jobs, made through the real services
(registration, upload, submission)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import Capabilities, DeviceInfo
from devicelab.graph import Graph
from tests.server.factories import graph_bytes, tiny_graph

_serial = itertools.count(1)


@pytest.fixture(autouse=True)
def media_in_tmp(settings: Any, tmp_path: Any) -> None:
    """Uploaded files go to a temporary folder, not var/media."""
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def make_device(db: None) -> Callable[..., Any]:
    """Factory: register a device through ``register_devices`` (online, heart-beating now),
    optionally with the capabilities its backend would declare."""
    from server.devices.services import register_devices

    def make(
        kind: str = "cpu",
        worker: str = "worker-a",
        hardware: dict[str, Any] | None = None,
        identity: str | None = None,
        name: str | None = None,
        capabilities: Capabilities | None = None,
    ) -> Any:
        n = next(_serial)
        if hardware is None:
            hardware = {
                "cpu": {"cpu_model": "Test CPU 3000", "arch": "x86_64"},
                "opencl": {"gpu_name": "Test GPU", "driver": "1.0"},
                "android": {"model": "Pixel Test", "soc": "sm8150"},
            }[kind]
        info = DeviceInfo(kind, identity or f"{kind}:test-{n}", name or f"{kind} device {n}", hardware, capabilities)
        return register_devices(worker, [info])[0]

    return make


@pytest.fixture
def make_network(db: None) -> Callable[..., Any]:
    """Factory: upload a graph-JSON network for a team through ``upload_model``."""
    from server.networks.services import upload_model

    def make(team: Any, graph: Graph | None = None, user: Any = None) -> Any:
        graph = graph or tiny_graph(f"net{next(_serial)}")
        model, _ = upload_model(team, user, graph_bytes(graph), f"{graph.name}.json")
        return model

    return make


@pytest.fixture
def make_job(make_device: Callable[..., Any], make_network: Callable[..., Any]) -> Callable[..., Any]:
    """Factory: submit a job through ``submit_profiling_job`` (a new network and device unless given)."""
    from server.profiling.services import submit_profiling_job

    def make(team: Any, model: Any = None, device: Any = None, settings: dict[str, Any] | None = None) -> Any:
        return submit_profiling_job(team, model or make_network(team), device or make_device(), settings or {})

    return make
