"""What every device backend offers, and the plain data that crosses its boundary.

A backend module (``cpu``, ``opencl``, ``android``) exposes ``discover() -> list[DeviceInfo]``
and ``profile(device, graph, settings, progress) -> ProfileResult``. The worker only sees these
shapes; the server turns them into rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from devicelab.graph.ir import Graph
from devicelab.measure.stats import SampleStats

DEVICE_KINDS = ("cpu", "opencl", "android")

ProgressFn = Callable[[float, str], None]
"""Called with a fraction in [0, 1] and a short message as a run advances."""


class BackendError(RuntimeError):
    """A device runtime could not load or run a graph; the message names the backend and the reason."""


@dataclass(frozen=True)
class DeviceInfo:
    """A device a worker found: a stable identity plus its hardware description."""

    kind: str
    identity: str  # stable across restarts: e.g. "cpu:<machine-id>", "opencl:<platform>/<device>"
    name: str
    hardware: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class ProfileSettings:
    """How to measure: backend, threads, cores, precision, warm-up and measured runs."""

    backend: str = "cpu"
    threads: int = 1
    cores: tuple[int, ...] = ()  # CPU affinity; empty means the OS decides
    precision: str = "fp32"
    warmup_runs: int = 5
    runs: int = 30

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ValueError("threads must be >= 1")
        if self.warmup_runs < 0:
            raise ValueError("warmup_runs must be >= 0")
        if self.runs < 1:
            raise ValueError("runs must be >= 1")
        if self.precision not in ("fp32", "fp16", "int8"):
            raise ValueError(f"precision {self.precision!r} is not fp32, fp16 or int8")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        d = asdict(self)
        d["cores"] = list(self.cores)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileSettings:
        """Settings from plain data, rejecting unknown keys."""
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(known)}")
        d = dict(d)
        if "cores" in d:
            d["cores"] = tuple(int(c) for c in d["cores"])
        return cls(**d)


@dataclass(frozen=True)
class OpTiming:
    """Timing of one graph operator, as the runtime really ran it.

    An operator the runtime fused into another's kernel (a ReLU folded into its Conv) has
    ``stats=None`` and ``fused_into`` naming the kernel node that covers it, so predictors can
    learn the runtime's fusion rules. A kernel the runtime inserted on its own (a layout reorder,
    a copy) has ``index=None`` and type ``runtime``: its time is real and is kept, but no graph
    operator owns it.
    """

    index: int | None  # position of the operator in the graph's operator list
    name: str
    type: str
    kernel: str  # what the runtime really ran, e.g. ONNX Runtime's "FusedConv" for Conv + Relu
    input_shapes: list[list[int]]
    output_shapes: list[list[int]]
    attrs: dict[str, Any]
    stats: SampleStats | None
    fused_into: str | None = None  # name of the kernel node that also covers this operator


@dataclass(frozen=True)
class ColdStart:
    """First-use costs, measured apart from warm runs (ms)."""

    load_ms: float  # model load / session or program build / buffer set-up
    first_run_ms: float


@dataclass(frozen=True)
class ProfileResult:
    """Everything one profiling run reports."""

    device: DeviceInfo
    settings: ProfileSettings
    e2e: SampleStats
    samples_ms: list[float]
    cold: ColdStart
    ops: list[OpTiming]
    environment: dict[str, Any] = field(default_factory=dict)  # runtime version, threads, affinity


class Backend(Protocol):
    """A device backend module."""

    def discover(self) -> list[DeviceInfo]: ...

    def profile(
        self, device: DeviceInfo, graph: Graph, settings: ProfileSettings, progress: ProgressFn | None = None
    ) -> ProfileResult: ...
