"""Fixtures for the server tests: devices, networks, jobs and measured results, built with the
real services (registration, upload, submission)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import ColdStart, DeviceInfo, OpTiming, ProfileResult, ProfileSettings
from devicelab.graph import Graph, GraphBuilder, graph_to_json
from devicelab.measure.stats import summarize

_serial = itertools.count(1)


def tiny_graph(name: str = "tiny", channels: int = 8) -> Graph:
    """A five-operator CNN: conv, bn, relu, global pool, fc."""
    b = GraphBuilder(name, (1, 3, 16, 16))
    x = b.relu(b.bn(b.conv(b.input, channels, 3, stride=2, bias=False)))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def graph_bytes(graph: Graph | None = None) -> bytes:
    """A graph as graph-JSON bytes."""
    return graph_to_json(graph or tiny_graph()).encode()


def profile_result(graph: Graph, device: DeviceInfo | None = None, fused: bool = True,
                   runtime_kernel: bool = True) -> ProfileResult:
    """A ProfileResult for ``graph`` as a backend reports it: one timing per operator (the ReLU
    fused into the conv when ``fused``) plus a runtime-inserted kernel."""
    ops = []
    for index, op in enumerate(graph.operators):
        is_fused = fused and op.type == "relu"
        ops.append(OpTiming(
            index=index, name=op.name, type=op.type, kernel="FusedConv" if op.type == "conv2d" and fused else op.type,
            input_shapes=[list(s) for s in graph.input_shapes(op)],
            output_shapes=[list(s) for s in graph.output_shapes(op)], attrs=dict(op.attrs),
            stats=None if is_fused else summarize([0.1 + 0.01 * index, 0.11 + 0.01 * index, 0.12 + 0.01 * index]),
            fused_into=graph.operators[0].name if is_fused else None))
    if runtime_kernel:
        ops.append(OpTiming(index=None, name="reorder_0", type="runtime", kernel="ReorderInput",
                            input_shapes=[[1, 3, 16, 16]], output_shapes=[[1, 3, 16, 16]], attrs={},
                            stats=summarize([0.01, 0.02, 0.015])))
    samples = [1.0, 1.1, 1.05, 0.98, 1.02]
    return ProfileResult(
        device=device or DeviceInfo("cpu", "cpu:test", "test cpu", {}), settings=ProfileSettings(),
        e2e=summarize(samples), samples_ms=samples, cold=ColdStart(load_ms=12.5, first_run_ms=3.25), ops=ops,
        environment={"runtime": "test"})


@pytest.fixture
def make_device(db: None) -> Callable[..., Any]:
    """Factory: register a device through ``register_devices`` (online, heart-beating now)."""
    from server.devices.services import register_devices

    def make(kind: str = "cpu", worker: str = "worker-a", hardware: dict[str, Any] | None = None,
             identity: str | None = None, name: str | None = None) -> Any:
        n = next(_serial)
        if hardware is None:
            hardware = {"cpu": {"cpu_model": "Test CPU 3000", "arch": "x86_64"},
                        "opencl": {"gpu_name": "Test GPU", "driver": "1.0"},
                        "android": {"model": "Pixel Test", "soc": "sm8150"}}[kind]
        info = DeviceInfo(kind, identity or f"{kind}:test-{n}", name or f"{kind} device {n}", hardware)
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
