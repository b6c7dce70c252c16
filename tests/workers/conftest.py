"""Fixtures for the worker room's tests: a lab machine with its token, the host CPU (or its first
OpenCL device) registered by a real agent through the lab API, a network, and jobs submitted
through the real services, with this process standing in as the device process.

The lab API is answered in this process (``tests.lab_http``: the real Django views, no socket),
inside the test's transaction; the end-to-end tests run it over real HTTP."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devicelab.backends.base import DeviceInfo
from devicelab.graph import Graph, GraphBuilder, graph_to_json
from tests.lab_http import TEST_SERVER_URL, in_process_session

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


@dataclass
class LabMachineAtHand:
    """A lab machine of the test: its row, its token, and a ``LabServer`` that answers in-process."""

    lab: Any
    token: str
    server: Any
    adapter: Any
    folder: Path
    # a hook for fault tests: called with each prepared request and its response, which it may alter
    after: Callable[[Any, Any], None] | None = None

    def settings(self) -> Any:
        """Its ``LabSettings`` (a folder of its own, the host lock on)."""
        from workers.lab_settings import LabSettings

        return LabSettings(TEST_SERVER_URL, self.token, "memory://", self.folder)


def _answer_whole(machine: LabMachineAtHand) -> None:
    """The in-process adapter hands each body over whole, with no socket behind it: marked as read,
    a streamed download iterates over it (and closing it closes nothing); then ``machine.after``."""
    send = machine.adapter.send

    def send_whole(request: Any, **kwargs: Any) -> Any:
        resp = send(request, **kwargs)
        resp._content_consumed = True
        if machine.after is not None:
            machine.after(request, resp)
        return resp

    machine.adapter.send = send_whole


@pytest.fixture
def make_lab_machine(db: None, tmp_path: Path) -> Callable[[str], LabMachineAtHand]:
    """Factory: ``make_lab_machine(name)`` -> a new lab machine whose ``server`` is the lab API."""
    from server.labs.services import add_lab_machine
    from workers.server_api import LabServer

    def make(name: str) -> LabMachineAtHand:
        lab, token = add_lab_machine(name)
        session, adapter = in_process_session()
        folder = tmp_path / f"lab-{name}"
        machine = LabMachineAtHand(lab, token, LabServer(TEST_SERVER_URL, token, session=session), adapter, folder)
        _answer_whole(machine)
        return machine

    return make


def _started_agent(machine: LabMachineAtHand, kinds: list[str]) -> Any:
    from workers.agent import DeviceAgent
    from workers.outbox import Outbox

    agent = DeviceAgent(machine.server, machine.lab.name, kinds=kinds, outbox=Outbox(machine.folder / "outbox"))
    agent.start()
    agent.machine = machine
    return agent


@pytest.fixture
def make_agent(make_lab_machine: Callable[[str], LabMachineAtHand]) -> Callable[..., Any]:
    """Factory: ``make_agent(worker, instance=None, kinds=None)`` -> an agent (not started) of the lab
    machine the worker name names (``NAME`` or ``NAME#instance``; the machine is added on first use),
    with an outbox in the machine's folder; ``agent.machine`` is the machine."""
    from workers.agent import DeviceAgent
    from workers.outbox import Outbox

    machines: dict[str, LabMachineAtHand] = {}

    def make(worker: str, instance: str | None = None, kinds: list[str] | None = None) -> Any:
        name = worker.split("#", 1)[0]
        if name not in machines:
            machines[name] = make_lab_machine(name)
        machine = machines[name]
        agent = DeviceAgent(
            machine.server, worker, instance=instance, kinds=kinds, outbox=Outbox(machine.folder / "outbox")
        )
        agent.machine = machine
        return agent

    return make


@pytest.fixture
def lab_machine(make_lab_machine: Callable[[str], LabMachineAtHand]) -> LabMachineAtHand:
    """A lab machine named for this test."""
    return make_lab_machine(f"test-worker-{next(_serial)}")


@pytest.fixture
def agent(lab_machine: LabMachineAtHand) -> Any:
    """A started agent (no heartbeat thread) holding this host's real CPU."""
    a = _started_agent(lab_machine, ["cpu"])
    assert len(a.devices) == 1
    return a


def _play_device_process(agent: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """This test process plays the agent's device process: its context, and the lab API in-process."""
    import workers.tasks
    from workers.context import ENV_VAR
    from workers.model_cache import ModelCache
    from workers.outbox import Outbox

    machine: LabMachineAtHand = agent.machine
    monkeypatch.setenv(ENV_VAR, agent.context().to_env()[ENV_VAR])
    settings = machine.settings()
    here = (
        settings,
        machine.server,
        ModelCache(settings.cache_dir, settings.model_cache_bytes),
        Outbox(settings.outbox_dir),
    )
    monkeypatch.setattr(workers.tasks, "lab", lambda: here)


@pytest.fixture
def opencl_agent(make_lab_machine: Callable[[str], LabMachineAtHand], monkeypatch: pytest.MonkeyPatch) -> Any:
    """A started agent holding this machine's first OpenCL device; this process is its device process."""
    agent = _started_agent(make_lab_machine(f"test-opencl-worker-{next(_serial)}"), ["opencl"])
    if not agent.devices:
        pytest.fail("no OpenCL device: install PoCL (make system-deps)")
    agent.devices = agent.devices[:1]
    _play_device_process(agent, monkeypatch)
    return agent


@pytest.fixture
def as_device_process(agent: Any, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Any:
    """This test process plays the agent's device process: it carries the agent's context.

    Its jobs live in the test's transaction, which the thread that keeps a slow run's lease alive
    cannot see (its own database connection): on a loaded machine a run that went quiet for a
    quarter of the lease was answered "not running" and stopped (seen in CI). The lease is made
    long enough that no such report is due within a test."""
    settings.LATENCYLAB_JOB_LEASE_SECONDS = 3600
    _play_device_process(agent, monkeypatch)
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
