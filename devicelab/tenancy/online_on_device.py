"""An online-scheduling run on a registered device: what a worker calls for a job of kind
``online_schedule``.

It measures ``t1`` (one request of one tenant served alone, ``online.request_service_ms``),
builds the spec's seeded Poisson trace (R tenants sharing ``load / t1`` requests per second, each
request's target ``target_factor x t1``), replays it under every policy (``online.run_online``)
and returns an ``OnlineRunRecord``: the comparison per policy, and each policy's summary without
its per-request records (a few seconds of arrivals are thousands of them; the benchmark keeps
them on request).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from devicelab.backends.base import DeviceInfo
from devicelab.graph.ir import Graph
from devicelab.measure.harness import ReportFn
from devicelab.tenancy.online_spec import OnlineSpec
from devicelab.wire import JsonDict, JsonRecord, OwnJson

OPENCL = "opencl"


@dataclass(frozen=True)
class OnlineRunRecord(JsonRecord):
    """An online-scheduling run as it crosses to the server."""

    spec: Annotated[OnlineSpec, OwnJson("an online spec")]
    device: JsonDict  # the OpenCL device (``tenancy.sweep.device_description``)
    t1_ms: float  # one request of one tenant served alone
    target_ms: float
    window_ms: float
    offered_per_s: float  # requests per second the trace offers, all tenants together
    comparison: tuple[JsonDict, ...]  # per policy: attainment, req/s, goodput, GFLOP/s, p50/p99, batch
    policies: JsonDict  # per policy its summary (overall, per tenant, batches, checks), no per-request records
    trace: JsonDict  # the trace's seed, loads and summary (not its requests)
    notes: tuple[str, ...]
    elapsed_s: float

    json_name = "online run"


def _stripped(data: dict[str, Any]) -> dict[str, Any]:
    for policy in data["policies"].values():
        policy.pop("requests", None)
        policy.pop("batch_records", None)
    return data


def online_on_device(
    info: DeviceInfo,
    spec_dict: Mapping[str, Any],
    progress: ReportFn | None = None,
    graphs: Mapping[str, Graph] | None = None,
) -> OnlineRunRecord:
    """Run the spec (``OnlineSpec.as_dict()``'s fields) on the OpenCL device ``info`` names (see the
    module docstring); ``progress(fraction, message)`` may raise to stop it."""
    from devicelab.backends.opencl import devices
    from devicelab.tenancy.arrivals import poisson_trace, uniform_loads
    from devicelab.tenancy.online import OnlineWorkload, request_service_ms, run_online

    t0 = time.perf_counter()
    spec = OnlineSpec.from_dict(spec_dict)
    if info.kind != OPENCL:
        raise ValueError(f"online scheduling runs on OpenCL devices; {info.name!r} is a {info.kind} device")
    found = devices.find_device(info.identity)
    if spec.is_sgemm:
        workload = OnlineWorkload.sgemm(spec.workload, seed=spec.seed)
    else:
        workload = OnlineWorkload.of_network(spec.workload, seed=spec.seed)
    if progress is not None:
        progress(0.0, f"{workload.name}: one request alone (t1)")
    t1 = request_service_ms(found, workload, seconds=0.5, graphs=graphs)
    target_ms, window_ms = spec.target_factor * t1, spec.window_factor * t1
    offered = spec.load / (t1 / 1e3)
    trace = poisson_trace(uniform_loads(spec.tenants, offered, target_ms), seed=spec.seed, duration_s=spec.duration_s)
    result = run_online(
        found, workload, trace, list(spec.policies) or None, window_ms=window_ms, progress=progress, graphs=graphs
    )
    data = _stripped(result.as_dict())
    return OnlineRunRecord(
        spec=spec,
        device=data["device"],
        t1_ms=t1,
        target_ms=target_ms,
        window_ms=window_ms,
        offered_per_s=offered,
        comparison=tuple(data["comparison"]),
        policies=data["policies"],
        trace={**{k: v for k, v in data["trace"].items() if k != "requests"}, "summary": data["trace_summary"]},
        notes=tuple(data["notes"]),
        elapsed_s=time.perf_counter() - t0,
    )


__all__ = ["OnlineRunRecord", "online_on_device"]
