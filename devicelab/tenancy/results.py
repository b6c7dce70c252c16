"""What a sharing job hands to the server: a sweep's rows with the device, the ceiling and what
was not measured (``SharingSweepRecord``), typed, with the JSON that carries it across a process
or machine boundary (``as_dict`` / ``from_dict``, exact both ways).

``sharing_on_device`` builds it from ``SharingResult.as_dict()`` and its budget's outcome, so what
the server stores is exactly what crossed. Every key the server reads is a typed field; detail it
only stores for the pages (samples, per-tenant latencies, memory and check reports) stays a JSON
object (``JsonDict``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, cast

from devicelab.tenancy.sweep import SharingSpec
from devicelab.wire import Fields, JsonDict, PayloadError, optional_number, read


class OpenCLRuntime(TypedDict, total=False):
    """How the OpenCL runtime was brought up (``opencl.devices.runtime_environment``)."""

    pyopencl: str  # pyopencl's version
    initialized: bool  # whether this process had initialized OpenCL when it was read
    POCL_MAX_PTHREAD_COUNT: str | None  # PoCL's thread-pool size in force (None: the driver's default)


class SharingDevice(TypedDict, total=False):
    """What a sweep's rows were measured on (``tenancy.sweep.device_description``)."""

    identity: str  # the lab's identity of the OpenCL device
    name: str  # the device's name
    platform: str  # the OpenCL platform's name
    platform_version: str  # the platform's OpenCL version string
    driver_version: str  # the device's driver version
    device_type: str  # CPU, GPU, ...
    compute_units: int  # the device's compute units
    global_mem_size: int  # bytes of global memory
    max_mem_alloc_size: int  # the largest single buffer (bytes)
    preferred_vector_width_float: int  # the device's preferred float vector width
    runtime: OpenCLRuntime  # how the OpenCL runtime was brought up


@dataclass(frozen=True)
class Throughput:
    """A row's throughput: of the median makespan, and per timed round."""

    gflops: float | None
    per_s: float | None  # requests served per second
    gflops_samples: tuple[float | None, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {"gflops": self.gflops, "per_s": self.per_s, "gflops_samples": list(self.gflops_samples)}

    @classmethod
    def from_fields(cls, f: Fields) -> Throughput:
        """Read back from ``as_dict``'s JSON."""
        samples = f.array("gflops_samples")
        for i, v in enumerate(samples):
            if not optional_number(v):
                raise PayloadError(f"{f.path('gflops_samples')}[{i}] must be a number or null, got {v!r:.80}")
        out = cls(
            gflops=f.optional("gflops", f.number),
            per_s=f.optional("per_s", f.number),
            gflops_samples=tuple(None if v is None else float(v) for v in samples),
        )
        f.done()
        return out


@dataclass(frozen=True)
class Latency:
    """A row's request latencies (ms): pooled percentiles, and each tenant's."""

    p50: float
    p99: float
    per_tenant: tuple[JsonDict, ...]  # tenant, p50, p99, samples

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {"p50": self.p50, "p99": self.p99, "per_tenant": list(self.per_tenant)}

    @classmethod
    def from_fields(cls, f: Fields) -> Latency:
        """Read back from ``as_dict``'s JSON."""
        out = cls(p50=f.number("p50"), p99=f.number("p99"), per_tenant=f.objs("per_tenant"))
        f.done()
        return out


@dataclass(frozen=True)
class Straggler:
    """The slowest tenant against the fastest, by median latency."""

    fastest_tenant: int
    slowest_tenant: int
    fastest_p50_ms: float
    slowest_p50_ms: float
    gap_ms: float
    gap_ratio: float | None  # None when the fastest median is 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "fastest_tenant": self.fastest_tenant,
            "slowest_tenant": self.slowest_tenant,
            "fastest_p50_ms": self.fastest_p50_ms,
            "slowest_p50_ms": self.slowest_p50_ms,
            "gap_ms": self.gap_ms,
            "gap_ratio": self.gap_ratio,
        }

    @classmethod
    def from_fields(cls, f: Fields) -> Straggler:
        """Read back from ``as_dict``'s JSON."""
        out = cls(
            fastest_tenant=f.integer("fastest_tenant"),
            slowest_tenant=f.integer("slowest_tenant"),
            fastest_p50_ms=f.number("fastest_p50_ms"),
            slowest_p50_ms=f.number("slowest_p50_ms"),
            gap_ms=f.number("gap_ms"),
            gap_ratio=f.optional("gap_ratio", f.number),
        )
        f.done()
        return out


@dataclass(frozen=True)
class SharingRowRecord:
    """One strategy at one R on one workload, as stored (``SharingRow.as_dict()``)."""

    workload: JsonDict  # name, kind ("sgemm" or "network") and its sizes and FLOPs
    tenants: int
    strategy: str
    status: str  # "ok", "memory_bound", ...
    error: str
    served_per_step: int
    launches_per_step: int
    makespan_ms: JsonDict | None  # samples and their statistics
    device_ms: JsonDict | None
    throughput: Throughput | None
    latency_ms: Latency | None
    straggler: Straggler | None
    memory: JsonDict  # the memory model's footprint ("bytes") and what fits
    checks: JsonDict  # "correct" and each check's own report
    network: JsonDict | None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: one stored row."""
        return {
            "workload": dict(self.workload),
            "tenants": self.tenants,
            "strategy": self.strategy,
            "status": self.status,
            "error": self.error,
            "served_per_step": self.served_per_step,
            "launches_per_step": self.launches_per_step,
            "makespan_ms": self.makespan_ms,
            "device_ms": self.device_ms,
            "throughput": None if self.throughput is None else self.throughput.as_dict(),
            "latency_ms": None if self.latency_ms is None else self.latency_ms.as_dict(),
            "straggler": None if self.straggler is None else self.straggler.as_dict(),
            "memory": dict(self.memory),
            "checks": dict(self.checks),
            "network": self.network,
        }

    @classmethod
    def from_fields(cls, f: Fields) -> SharingRowRecord:
        """Read back from ``as_dict``'s JSON."""
        workload = f.obj("workload")
        for key in ("name", "kind"):
            if not isinstance(workload.get(key), str):
                raise PayloadError(f"{f.path('workload')}.{key} must be a string, got {workload.get(key)!r:.80}")
        memory_bytes = f.obj("memory").get("bytes")
        if memory_bytes is not None and not optional_number(memory_bytes):
            raise PayloadError(f"{f.path('memory')}.bytes must be a number or null, got {memory_bytes!r:.80}")
        row = cls(
            workload=workload,
            tenants=f.integer("tenants"),
            strategy=f.text("strategy"),
            status=f.text("status"),
            error=f.text("error"),
            served_per_step=f.integer("served_per_step"),
            launches_per_step=f.integer("launches_per_step"),
            makespan_ms=f.optional("makespan_ms", f.obj),
            device_ms=f.optional("device_ms", f.obj),
            throughput=f.optional("throughput", lambda k: f.record(k, Throughput.from_fields)),
            latency_ms=f.optional("latency_ms", lambda k: f.record(k, Latency.from_fields)),
            straggler=f.optional("straggler", lambda k: f.record(k, Straggler.from_fields)),
            memory=f.obj("memory"),
            checks=f.obj("checks"),
            network=f.optional("network", f.obj),
        )
        f.done()
        return row

    @property
    def workload_name(self) -> str:
        """The workload's name (``512x512x512``, a zoo network's)."""
        return str(self.workload["name"])

    @property
    def workload_kind(self) -> str:
        """The workload's kind."""
        return str(self.workload["kind"])

    @property
    def memory_bytes(self) -> int | None:
        """The memory model's footprint of the row (bytes), where it has one."""
        value = self.memory.get("bytes")
        return None if value is None else int(value)

    @property
    def correct(self) -> bool | None:
        """Whether every check of the row passed (the exclusive row's own check against numpy
        too); None when the row was not checked."""
        if "correct" not in self.checks:
            return None
        nested = [c["correct"] for c in self.checks.values() if isinstance(c, Mapping) and "correct" in c]
        return bool(self.checks["correct"]) and all(nested)


@dataclass(frozen=True)
class SharingSweepRecord:
    """A sharing sweep as it crosses to the server (``sharing_on_device``'s result)."""

    format: int  # the layout of ``SharingResult.as_dict()``
    spec: SharingSpec
    device: SharingDevice
    ceiling: JsonDict | None  # numpy's SGEMM GFLOP/s on the host, or the error that stopped it
    rows: tuple[SharingRowRecord, ...]
    table1: tuple[JsonDict, ...]
    largest_tenants: tuple[JsonDict, ...]
    notes: tuple[str, ...]
    elapsed_s: float
    time_budget_s: float | None
    complete: bool  # every (workload, R) unit was measured within the budget
    not_measured: tuple[JsonDict, ...]  # the units the budget left out: workload, tenants

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "format": self.format,
            "spec": self.spec.as_dict(),
            "device": dict(self.device),
            "ceiling": self.ceiling,
            "rows": [r.as_dict() for r in self.rows],
            "table1": list(self.table1),
            "largest_tenants": list(self.largest_tenants),
            "notes": list(self.notes),
            "elapsed_s": self.elapsed_s,
            "time_budget_s": self.time_budget_s,
            "complete": self.complete,
            "not_measured": list(self.not_measured),
        }

    @classmethod
    def from_fields(cls, f: Fields) -> SharingSweepRecord:
        """Read from the JSON ``as_dict`` wrote."""
        raw_spec = f.obj("spec")
        try:
            spec = SharingSpec.from_dict(raw_spec)
        except (TypeError, ValueError) as exc:
            raise PayloadError(f"{f.path('spec')} is not a sharing spec: {exc}") from None
        device = f.shaped("device", SharingDevice)
        if not isinstance(device.get("name"), str):
            raise PayloadError(f"{f.path('device')}.name must be a string, got {device.get('name')!r:.80}")
        if "runtime" in device and not isinstance(device["runtime"], Mapping):
            raise PayloadError(f"{f.path('device')}.runtime must be a JSON object, got {device['runtime']!r:.80}")
        record = cls(
            format=f.integer("format"),
            spec=spec,
            device=cast(SharingDevice, device),
            ceiling=f.optional("ceiling", f.obj),
            rows=f.records("rows", SharingRowRecord.from_fields),
            table1=f.objs("table1"),
            largest_tenants=f.objs("largest_tenants"),
            notes=f.texts("notes"),
            elapsed_s=f.number("elapsed_s"),
            time_budget_s=f.optional("time_budget_s", f.number),
            complete=f.flag("complete"),
            not_measured=f.objs("not_measured"),
        )
        f.done()
        return record

    @classmethod
    def from_dict(cls, data: object) -> SharingSweepRecord:
        """The inverse of ``as_dict``; ``PayloadError`` naming the first missing, mistyped or
        unknown key."""
        return read(data, "sharing sweep", cls.from_fields)

    @property
    def workloads(self) -> list[str]:
        """The spec's workloads by name: SGEMM shapes (``MxNxK``), then networks."""
        return [f"{m}x{n}x{k}" for m, n, k in self.spec.shapes] + list(self.spec.networks)


__all__ = [
    "Latency",
    "OpenCLRuntime",
    "SharingDevice",
    "SharingRowRecord",
    "SharingSweepRecord",
    "Straggler",
    "Throughput",
]
