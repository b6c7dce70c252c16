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
from typing import Annotated, Required, TypedDict

from devicelab.measure.environment import HostLockRecord
from devicelab.tenancy.sweep import SharingSpec
from devicelab.wire import JsonDict, JsonRecord, OwnJson, PayloadError, is_number


class OpenCLRuntime(TypedDict, total=False):
    """How the OpenCL runtime was brought up (``opencl.devices.runtime_environment``)."""

    pyopencl: str  # pyopencl's version
    initialized: bool  # whether this process had initialized OpenCL when it was read
    POCL_MAX_PTHREAD_COUNT: str | None  # PoCL's thread-pool size in force (None: the driver's default)


class SharingDevice(TypedDict, total=False):
    """What a sweep's rows were measured on (``tenancy.sweep.device_description``)."""

    identity: str  # the lab's identity of the OpenCL device
    name: Required[str]  # the device's name
    platform: str  # the OpenCL platform's name
    platform_version: str  # the platform's OpenCL version string
    driver_version: str  # the device's driver version
    device_type: str  # CPU, GPU, ...
    compute_units: int  # the device's compute units
    global_mem_size: int  # bytes of global memory
    max_mem_alloc_size: int  # the largest single buffer (bytes)
    preferred_vector_width_float: int  # the device's preferred float vector width
    runtime: OpenCLRuntime  # how the OpenCL runtime was brought up
    host_lock: HostLockRecord  # whether it held the host's processors alone (a lab machine's CPU devices)


@dataclass(frozen=True)
class Throughput(JsonRecord):
    """A row's throughput: of the median makespan, and per timed round."""

    gflops: float | None
    per_s: float | None  # requests served per second
    gflops_samples: tuple[float | None, ...]


@dataclass(frozen=True)
class Latency(JsonRecord):
    """A row's request latencies (ms): pooled percentiles, and each tenant's."""

    p50: float
    p99: float
    per_tenant: tuple[JsonDict, ...]  # tenant, p50, p99, samples


@dataclass(frozen=True)
class Straggler(JsonRecord):
    """The slowest tenant against the fastest, by median latency."""

    fastest_tenant: int
    slowest_tenant: int
    fastest_p50_ms: float
    slowest_p50_ms: float
    gap_ms: float
    gap_ratio: float | None  # None when the fastest median is 0


@dataclass(frozen=True)
class SharingRowRecord(JsonRecord):
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
    of_ceiling: JsonDict | None = None  # the row over numpy's ceiling, paired by round (a RatioEstimate)

    def _check_json(self, where: str) -> None:
        """The keys of its JSON objects that the server reads."""
        for key in ("name", "kind"):
            if not isinstance(self.workload.get(key), str):
                raise PayloadError(f"{where}.workload.{key} must be a string, got {self.workload.get(key)!r:.80}")
        memory_bytes = self.memory.get("bytes")
        if memory_bytes is not None and not is_number(memory_bytes):
            raise PayloadError(f"{where}.memory.bytes must be a number or null, got {memory_bytes!r:.80}")

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
class SharingSweepRecord(JsonRecord):
    """A sharing sweep as it crosses to the server (``sharing_on_device``'s result)."""

    format: int  # the layout of ``SharingResult.as_dict()``
    spec: Annotated[SharingSpec, OwnJson("a sharing spec")]
    device: SharingDevice
    ceiling: (
        JsonDict | None
    )  # numpy's SGEMM on every tenant's operands per (shape, R) (``tenancy.ceiling``), or the error
    rows: tuple[SharingRowRecord, ...]
    table1: tuple[JsonDict, ...]
    largest_tenants: tuple[JsonDict, ...]
    notes: tuple[str, ...]
    elapsed_s: float
    time_budget_s: float | None
    complete: bool  # every (workload, R) unit was measured within the budget
    not_measured: tuple[JsonDict, ...]  # the units the budget left out: workload, tenants

    json_name = "sharing sweep"

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
