"""Fixtures for the worker room's tests: the host CPU (or its first OpenCL device) registered by a
real agent, a network, and jobs submitted through the real services, with this process standing in
as the device process."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import DeviceInfo
from devicelab.graph import Graph, GraphBuilder, graph_to_json

_serial = itertools.count(1)

QUICK = {"runs": 3, "warmup_runs": 1}


def tiny_graph(name: str = "tiny") -> Graph:
    """Five operators on a 16x16 input."""
    b = GraphBuilder(name, (1, 3, 16, 16))
    x = b.relu(b.bn(b.conv(b.input, 8, 3, stride=2, bias=False)))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def fake_cpu(n: int) -> DeviceInfo:
    """A CPU device as a backend would report it, on a machine that is not this one."""
    return DeviceInfo("cpu", f"cpu:machine-{n}", f"Test CPU {n}", {"cpu_model": "Test CPU 3000", "arch": "x86_64"})


@pytest.fixture
def agent(db: None) -> Any:
    """A started agent (no heartbeat thread) holding this host's real CPU."""
    from workers.agent import DeviceAgent

    a = DeviceAgent(f"test-worker-{next(_serial)}", kinds=["cpu"])
    a.start()
    assert len(a.devices) == 1
    return a


@pytest.fixture
def opencl_agent(db: None, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A started agent holding this machine's first OpenCL device; this process is its device process."""
    from workers.agent import DeviceAgent
    from workers.context import ENV_VAR

    agent = DeviceAgent(f"test-opencl-worker-{next(_serial)}", kinds=["opencl"])
    agent.start()
    if not agent.devices:
        pytest.fail("no OpenCL device: install PoCL (make system-deps)")
    monkeypatch.setenv(ENV_VAR, agent.context().to_env()[ENV_VAR])
    return agent


@pytest.fixture
def as_device_process(agent: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """This test process plays the agent's device process: it carries the agent's context."""
    from workers.context import ENV_VAR

    monkeypatch.setenv(ENV_VAR, agent.context().to_env()[ENV_VAR])
    return agent.context()


@pytest.fixture
def team(make_member: Callable[..., Any]) -> Any:
    """A team (with one member)."""
    return make_member().team


@pytest.fixture
def make_job(agent: Any, team: Any) -> Callable[..., Any]:
    """Factory: ``make_job(settings=None, graph=None, device_pk=None)`` -> a queued job on the agent's
    device, submitted through ``submit_profiling_job`` (the test transaction never commits, so no
    message is sent)."""
    from server.devices.models import Device
    from server.networks.services import upload_model
    from server.profiling.services import submit_profiling_job

    def make(settings: dict[str, Any] | None = None, graph: Graph | None = None, device_pk: int | None = None) -> Any:
        graph = graph or tiny_graph(f"net{next(_serial)}")
        model, _ = upload_model(team, None, graph_to_json(graph).encode(), f"{graph.name}.json")
        device = Device.objects.get(pk=device_pk or agent.devices[0].pk)
        return submit_profiling_job(team, model, device, settings or QUICK)

    return make
