"""Fixtures of the dashboard tests: signed-in browser clients and jobs with stored results.

Devices, networks and jobs come from the server tests' fixtures (made through the real
services); a finished job is claimed and ingested through ``claim_job`` and ``ingest_result``,
as a worker does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.graph import Graph
from tests.dashboard.factories import graph_with_ops, measured_result
from tests.server import conftest as server_fixtures

# The server tests' fixtures (devices, networks and jobs through the real services), shared here.
make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
make_job = server_fixtures.make_job
media_in_tmp = server_fixtures.media_in_tmp


@pytest.fixture
def web_client() -> Callable[[Any], Any]:
    """Factory: a Django test client signed in (session) as ``member``'s user."""
    from django.test import Client

    def make(member: Any) -> Any:
        client = Client()
        client.force_login(member.user)
        return client

    return make


@pytest.fixture
def finish_job() -> Callable[..., Any]:
    """Factory: ``finish_job(job, graph, scale=1.0)`` claims a queued job and ingests a result
    for ``graph`` (its operators' times multiplied by ``scale``)."""
    from server.profiling.services import claim_job, ingest_result

    def finish(job: Any, graph: Graph, scale: float = 1.0, samples: int = 40) -> Any:
        token = f"test-{uuid.uuid4().hex[:8]}"
        assert claim_job(job.pk, token) is not None
        assert ingest_result(job.pk, token, measured_result(graph, samples=samples, scale=scale)) is not None
        job.refresh_from_db()
        return job

    return finish


@pytest.fixture
def finished_job(
    make_network: Callable[..., Any], make_job: Callable[..., Any], finish_job: Callable[..., Any]
) -> Callable[..., Any]:
    """Factory: ``finished_job(team, graph=None, device=None, model=None, scale=1.0)`` -> a
    succeeded job with a result (a new 24-operator network unless ``model`` or ``graph`` is given)."""

    def make(team: Any, graph: Graph | None = None, device: Any = None, model: Any = None, scale: float = 1.0) -> Any:
        if model is not None:
            from server.networks.services import model_graph

            graph = model_graph(model)
        graph = graph or graph_with_ops(24, name=f"net-{uuid.uuid4().hex[:6]}")
        model = model or make_network(team, graph)
        return finish_job(make_job(team, model=model, device=device), graph, scale=scale)

    return make
