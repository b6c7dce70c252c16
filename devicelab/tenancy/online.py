"""The online space-time scheduler (issue 21 item 6; seed 003, section 4: "the space-time scheduler
must dynamically schedule kernels as they arrive"), against time-only and space-only sharing on
the same arrival trace, on a real OpenCL device in real time.

``run_online(found, workload, trace, policies, window_ms=...)`` sets up R tenants of the sharing
core (``gemm_strategies.SharedOperands`` for an SGEMM shape, ``network_strategies.NetworkTenants``
for a network: the same tenants, data and kernels as the offline sweep), computes every tenant's
exclusive result, then for each policy in turn warms its server up and replays the trace
(``online_policies``: the rules of each policy, and space-time's launch rule, are stated there).
Every request's output is compared with its tenant's exclusive run. It returns an
``OnlineResult`` whose ``as_dict()`` is plain JSON (docs/tenancy.md, "Online scheduling"):
per policy the attainment (share of requests within their target), throughput (requests/s,
goodput and GFLOP/s), p50/p99 latency, per tenant and overall, the batches of space-time, the
output checks and every request's record.

Django-free; pyopencl is imported (through the servers), as for the rest of ``devicelab.tenancy``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.backends.opencl.runner import GraphRunner
from devicelab.graph.ir import Graph
from devicelab.measure.harness import Progress, ReportFn
from devicelab.tenancy.arrivals import ArrivalTrace
from devicelab.tenancy.checks import NETWORK_TOLERANCE
from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.gemm_strategies import SharedOperands, exclusive_results, gemm_footprint
from devicelab.tenancy.memory import Footprint, MemoryBound, MemoryBudget, base_alignment, is_memory_error
from devicelab.tenancy.network_layers import plan_layers
from devicelab.tenancy.network_strategies import NetworkTenants, network_footprint
from devicelab.tenancy.online_policies import (
    NETWORK_ONLY_POLICIES,
    POLICIES,
    BatchRecord,
    LaunchRule,
    Replay,
    RequestRecord,
    ServiceEstimate,
    calibrate,
)
from devicelab.tenancy.online_servers import RequestServer, gemm_server, network_server
from devicelab.tenancy.sweep import device_description

DEFAULT_WINDOW_MS = 5.0
MAX_DIFFERING_LISTED = 16


@dataclass(frozen=True)
class OnlineWorkload:
    """What a request computes: one SGEMM of ``shape`` (m, n, k), or one inference of ``network``
    (a zoo name, or a graph handed to ``run_online``); tenant r's data from ``(seed, r)`` as in
    the offline sweep."""

    kind: str  # "sgemm" or "network"
    shape: tuple[int, int, int] | None = None
    network: str | None = None
    seed: int = 0

    @classmethod
    def sgemm(cls, shape: str | tuple[int, int, int], seed: int = 0) -> OnlineWorkload:
        """An SGEMM workload from ``"256x128x1152"`` or ``(256, 128, 1152)``."""
        g = GemmShape.parse(shape) if isinstance(shape, str) else GemmShape(*shape)
        return cls("sgemm", shape=(g.m, g.n, g.k), seed=seed)

    @classmethod
    def of_network(cls, name: str, seed: int = 0) -> OnlineWorkload:
        """A network workload."""
        return cls("network", network=name, seed=seed)

    @property
    def name(self) -> str:
        """``MxNxK`` or the network's name."""
        if self.kind == "sgemm" and self.shape is not None:
            return GemmShape(*self.shape).name
        return str(self.network)

    def validate(self) -> None:
        """``ValueError`` naming what is wrong."""
        if self.kind == "sgemm":
            if self.shape is None or len(self.shape) != 3 or min(self.shape) < 1 or self.network is not None:
                raise ValueError(f"an SGEMM workload needs three positive sizes and no network, not {self!r}")
        elif self.kind == "network":
            if not self.network or self.shape is not None:
                raise ValueError(f"a network workload needs a network name and no shape, not {self!r}")
        else:
            raise ValueError(f"a workload is 'sgemm' or 'network', not {self.kind!r}")

    def as_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "kind": self.kind,
            "name": self.name,
            "shape": list(self.shape) if self.shape else None,
            "network": self.network,
            "seed": self.seed,
        }


def _latency(ms: Sequence[float]) -> dict[str, float] | None:
    if not ms:
        return None
    a = np.asarray(ms, dtype=np.float64)
    return {
        "p50": float(np.percentile(a, 50)),
        "p99": float(np.percentile(a, 99)),
        "mean": float(a.mean()),
        "max": float(a.max()),
    }


def summarize_records(records: Sequence[RequestRecord], flops: int, span_s: float | None) -> dict[str, Any]:
    """Attainment, latency and throughput of some requests; throughput over ``span_s`` (the
    policy's first arrival to last finish, the same span for a tenant's share as for all)."""
    served = [r for r in records if r.finish_s is not None]
    met = sum(r.met for r in records)
    latencies = [r.latency_ms for r in served if r.latency_ms is not None]
    rate = len(served) / span_s if span_s else None
    return {
        "requests": len(records),
        "served": len(served),
        "met": met,
        "attainment": met / len(records) if records else None,
        "latency_ms": _latency(latencies),
        "throughput": {
            "per_s": rate,
            "goodput_per_s": met / span_s if span_s else None,
            "gflops": rate * flops / 1e9 if rate is not None else None,
        },
    }


@dataclass
class PolicyResult:
    """One policy's replay of the trace."""

    policy: str
    flops_per_request: int
    status: str = "ok"  # ok, memory_bound
    error: str = ""
    records: list[RequestRecord] = field(default_factory=list)
    batches: list[BatchRecord] = field(default_factory=list)
    rule: str = ""  # how outputs were checked
    estimate: dict[str, Any] | None = None  # space-time's service estimate
    replay_s: float = 0.0

    def span_s(self) -> float | None:
        """First arrival to last finish (s)."""
        served = [r for r in self.records if r.finish_s is not None]
        if not served:
            return None
        return max(r.finish_s for r in served if r.finish_s is not None) - min(
            r.request.arrival_s for r in self.records
        )

    def checks(self) -> dict[str, Any]:
        """Every request's output against its tenant's exclusive run."""
        checked = [r for r in self.records if r.correct is not None]
        differing = [r.request.id for r in checked if not r.correct]
        return {
            "against": "exclusive",
            "rule": self.rule,
            "correct": bool(checked) and len(checked) == len(self.records) and not differing,
            "requests_checked": len(checked),
            "requests_differing": differing[:MAX_DIFFERING_LISTED],
            "max_relative_error": max((r.relative_error for r in checked), default=0.0),
        }

    def batch_summary(self) -> dict[str, Any] | None:
        """Space-time's batches: how many, their sizes and why each was launched."""
        if not self.batches:
            return None
        sizes = [len(b.requests) for b in self.batches]
        return {
            "count": len(sizes),
            "mean_size": float(np.mean(sizes)),
            "max_size": max(sizes),
            "sizes": {str(k): v for k, v in sorted(Counter(sizes).items())},
            "reasons": dict(Counter(b.reason for b in self.batches)),
        }

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data (docs/tenancy.md, "Online scheduling")."""
        span = self.span_s()
        tenants = sorted({r.request.tenant for r in self.records})
        starts = [r.device_start_ns for r in self.records if r.device_start_ns is not None]
        device_t0 = min(starts) if starts else None
        per_tenant = []
        for t in tenants:
            row = summarize_records([r for r in self.records if r.request.tenant == t], self.flops_per_request, span)
            per_tenant.append({"tenant": t, **row})
        return {
            "policy": self.policy,
            "status": self.status,
            "error": self.error,
            "overall": summarize_records(self.records, self.flops_per_request, span),
            "span_s": span,
            "per_tenant": per_tenant,
            "batches": self.batch_summary(),
            "checks": self.checks() if self.status == "ok" else None,
            "service_estimate": self.estimate,
            "replay_s": self.replay_s,
            "requests": [r.as_dict(device_t0) for r in self.records],
            "batch_records": [b.as_dict() for b in self.batches],
        }


@dataclass
class OnlineResult:
    """Every policy's replay of one trace on one workload and device."""

    workload: OnlineWorkload
    trace: ArrivalTrace
    rule: LaunchRule
    device: dict[str, Any]
    policies: list[PolicyResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def comparison(self) -> list[dict[str, Any]]:
        """One line per policy: attainment, throughput, p50/p99, mean batch size."""
        out: list[dict[str, Any]] = []
        for p in self.policies:
            if p.status != "ok":
                out.append({"policy": p.policy, "status": p.status})
                continue
            overall = summarize_records(p.records, p.flops_per_request, p.span_s())
            lat = overall["latency_ms"] or {}
            batches = p.batch_summary()
            out.append(
                {
                    "policy": p.policy,
                    "status": p.status,
                    "attainment": overall["attainment"],
                    "per_s": overall["throughput"]["per_s"],
                    "goodput_per_s": overall["throughput"]["goodput_per_s"],
                    "gflops": overall["throughput"]["gflops"],
                    "p50_ms": lat.get("p50"),
                    "p99_ms": lat.get("p99"),
                    "mean_batch": batches["mean_size"] if batches else 1.0,
                    "outputs_correct": p.checks()["correct"],
                }
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data (format 1): the workload, the trace (every request), the rule, the
        device, the comparison and each policy's full result."""
        return {
            "format": 1,
            "workload": self.workload.as_dict(),
            "trace": self.trace.as_dict(),
            "trace_summary": self.trace.summary(),
            "rule": self.rule.as_dict(),
            "device": self.device,
            "comparison": self.comparison(),
            "policies": {p.policy: p.as_dict() for p in self.policies},
            "notes": list(self.notes),
            "elapsed_s": self.elapsed_s,
        }


class _Tenants(ABC):
    """The workload's R tenants on the device, their exclusive results, and a server per policy."""

    references: list[np.ndarray]
    flops: int

    @abstractmethod
    def footprint(self, policy: str) -> Footprint:
        """What ``policy`` allocates for these tenants."""

    @abstractmethod
    def server(self, policy: str) -> RequestServer:
        """A server of ``policy`` on these tenants."""

    @abstractmethod
    def release(self) -> None:
        """Free the tenants."""


class _GemmTenants(_Tenants):
    def __init__(self, found: FoundDevice, shape: GemmShape, tenants: int, seed: int) -> None:
        self.shape = shape
        self.tenants = tenants
        self.flops = shape.flops
        self.shared = SharedOperands(found, shape, tenants, seed)
        try:
            self.references = exclusive_results(self.shared)
        except BaseException:
            self.shared.release()
            raise

    def footprint(self, policy: str) -> Footprint:
        return gemm_footprint(policy, self.shape, self.tenants)

    def server(self, policy: str) -> RequestServer:
        return gemm_server(policy, self.shared)

    def release(self) -> None:
        self.shared.release()


class _NetworkTenants(_Tenants):
    def __init__(self, found: FoundDevice, graph: Graph, tenants: int, seed: int) -> None:
        self.tenants = tenants
        first = GraphRunner(found, graph, weight_seed=seed)
        self.first = first
        try:
            self.flops = first.graph.flops
            self.plan = plan_layers(first)
            self.align = base_alignment(found.device)
            self.owner = NetworkTenants(found, first, tenants, seed)  # releases every runner if it fails
        except BaseException:
            first.release()
            raise
        try:
            self.references = self.owner.exclusive_results()
        except BaseException:
            self.owner.release()
            raise

    def footprint(self, policy: str) -> Footprint:
        return network_footprint(policy, self.first, self.plan, self.align, self.tenants)

    def server(self, policy: str) -> RequestServer:
        return network_server(policy, self.owner, self.plan)

    def release(self) -> None:
        self.owner.release()


def _check_outputs(
    references: Sequence[np.ndarray], bitwise: bool
) -> tuple[Callable[[RequestRecord, np.ndarray], None], str]:
    """A request's output against its tenant's exclusive result (and the rule's name)."""

    def check(record: RequestRecord, got: np.ndarray) -> None:
        want = references[record.request.tenant]
        if got.shape != want.shape:
            record.correct, record.relative_error = False, float("inf")
            return
        same = bool(np.array_equal(got.view(np.uint8), want.view(np.uint8)))
        if same:
            record.correct, record.relative_error = True, 0.0
            return
        scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-30)
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        record.relative_error = float(np.max(diff)) / scale if diff.size else 0.0
        record.correct = (
            not bitwise and bool(np.isfinite(record.relative_error)) and record.relative_error <= NETWORK_TOLERANCE
        )

    return check, "bitwise" if bitwise else f"relative error <= {NETWORK_TOLERANCE:g}"


def _warm_up(server: RequestServer, tenants: int) -> None:
    """Serve every tenant once (program loads, first-touch of buffers), not recorded."""
    for t in range(tenants):
        server.serve([t])


def _replay(
    name: str,
    server: RequestServer,
    tenants: _Tenants,
    trace: ArrivalTrace,
    rule: LaunchRule,
    report: Callable[[str, int, str], None],
) -> PolicyResult:
    check, check_rule = _check_outputs(tenants.references, server.bitwise)
    result = PolicyResult(name, tenants.flops, rule=check_rule)
    batching = name.startswith("space_time")
    report(name, 0, "calibrating batch times" if batching else "warming up")
    estimate: ServiceEstimate | None = None
    if batching:
        estimate = ServiceEstimate(calibrate(server, rule.max_batch), rule.max_batch)
    else:
        _warm_up(server, trace.tenants)
    replay = Replay(trace, server, check, tick=lambda done: report(name, done, "replaying"))
    t0 = time.perf_counter()
    if name == "time_only":
        replay.time_only()
    elif name == "space_only":
        replay.space_only()
    else:
        assert estimate is not None
        replay.space_time(rule, estimate)
    result.replay_s = time.perf_counter() - t0
    result.records, result.batches = replay.records, replay.batches
    result.estimate = estimate.as_dict() if estimate is not None else None
    return result


def _set_up(found: FoundDevice, workload: OnlineWorkload, tenants: int, graphs: Mapping[str, Graph] | None) -> _Tenants:
    if workload.kind == "sgemm":
        assert workload.shape is not None
        return _GemmTenants(found, GemmShape(*workload.shape), tenants, workload.seed)
    return _NetworkTenants(found, _resolve_graph(workload, graphs), tenants, workload.seed)


def request_service_ms(
    found: FoundDevice, workload: OnlineWorkload, seconds: float = 1.0, graphs: Mapping[str, Graph] | None = None
) -> float:
    """Mean host wall ms per request of one tenant served alone, back to back for ``seconds`` (the
    time-only server: its kernels and the download of its result; one request before, not timed):
    the unit in which a benchmark states its offered load (load 1 = this rate, sustained). A
    sustained mean rather than the median of a short burst, so that other load on the machine at
    the time weighs in as it will during the replay."""
    workload.validate()
    tenants = _set_up(found, workload, 1, graphs)
    try:
        server = tenants.server("time_only")
        try:
            server.serve([0])
            count = 0
            t0 = time.perf_counter()
            while count < 3 or time.perf_counter() - t0 < seconds:
                server.serve([0])
                count += 1
            elapsed = time.perf_counter() - t0
        finally:
            server.release()
    finally:
        tenants.release()
    return elapsed / count * 1e3


def _resolve_graph(workload: OnlineWorkload, graphs: Mapping[str, Graph] | None) -> Graph:
    from devicelab.graph import zoo

    assert workload.network is not None
    if graphs is not None and workload.network in graphs:
        return graphs[workload.network]
    return zoo.build(workload.network)


def run_online(
    found: FoundDevice,
    workload: OnlineWorkload,
    trace: ArrivalTrace,
    policies: Sequence[str] | None = None,
    *,
    window_ms: float = DEFAULT_WINDOW_MS,
    max_batch: int | None = None,
    margin: float = 0.25,
    guard_ms: float = 1.0,
    memory_cap_bytes: int | None = None,
    progress: ReportFn | None = None,
    graphs: Mapping[str, Graph] | None = None,
) -> OnlineResult:
    """Replay ``trace`` under each of ``policies`` (module docstring). Space-time batches within
    ``window_ms`` up to ``max_batch`` requests (default: the trace's R) and launches early for
    deadlines (``margin``, ``guard_ms``: ``online_policies``). ``progress(fraction, message)``
    may raise to stop the run (it propagates once every buffer and thread is freed)."""
    t_start = time.perf_counter()
    workload.validate()
    if policies is None:  # every policy the workload has
        policies = [p for p in POLICIES if workload.kind == "network" or p not in NETWORK_ONLY_POLICIES]
    trace.validate()
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies or len(set(policies)) != len(policies):
        raise ValueError(f"policies must be distinct names of {list(POLICIES)}, not {list(policies)}")
    if workload.kind != "network" and set(policies) & set(NETWORK_ONLY_POLICIES):
        raise ValueError(f"{list(NETWORK_ONLY_POLICIES)} serve network workloads only, not {workload.kind}")
    rule = LaunchRule(window_ms, trace.tenants if max_batch is None else max_batch, margin, guard_ms)
    rule.validate()
    if rule.max_batch > trace.tenants:  # a batch holds at most one request per tenant
        raise ValueError(f"the largest batch is at most the trace's {trace.tenants} tenants, not {rule.max_batch}")
    reporter = Progress(progress)
    result = OnlineResult(workload, trace, rule, device_description(found))
    n = max(1, len(trace.requests))

    def report(policy: str, done: int, what: str) -> None:
        i = list(policies).index(policy)
        fraction = 0.1 + 0.9 * (i + done / n) / len(policies)
        if done == 0 or reporter.due():
            reporter(fraction, f"{workload.name} R={trace.tenants} {policy}: {what} ({done}/{n} requests)")

    reporter(0.0, f"{workload.name} R={trace.tenants}: setting up the tenants")
    tenants = _set_up(found, workload, trace.tenants, graphs)
    servers: dict[str, RequestServer] = {}
    outcomes: dict[str, PolicyResult] = {}
    try:
        budget = MemoryBudget.for_device(found.limits, memory_cap_bytes)
        for name in policies:
            try:
                budget.check(tenants.footprint(name), trace.tenants, name)
                servers[name] = tenants.server(name)
            except (MemoryBound, cl.Error) as e:
                if isinstance(e, cl.Error) and not is_memory_error(e):
                    raise
                outcomes[name] = PolicyResult(name, tenants.flops, status="memory_bound", error=str(e))
        for name in policies:
            if name in servers:
                outcomes[name] = _replay(name, servers[name], tenants, trace, rule, report)
    finally:
        for server in servers.values():
            server.release()
        tenants.release()
    result.policies = [outcomes[p] for p in policies]
    if found.limits.device_type == "cpu":
        result.notes.append(
            "the device is a CPU driver: the policies' host threads and the device's worker threads share the "
            "same cores, so host-side scheduling work is not free"
        )
    result.elapsed_s = time.perf_counter() - t_start
    reporter(1.0, "done")
    return result


__all__ = [
    "DEFAULT_WINDOW_MS",
    "POLICIES",
    "OnlineResult",
    "OnlineWorkload",
    "PolicyResult",
    "request_service_ms",
    "run_online",
    "summarize_records",
]
