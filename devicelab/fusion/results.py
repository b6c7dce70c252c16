"""What a fusion job hands to the server: a sweep's rows (``FusionSweepRecord``) or a plan's
comparison (``FusionPlanRecord``), typed, with the JSON that carries them across a process or
machine boundary (``as_dict`` / ``from_dict``, exact both ways).

The records are built from the in-process results' own JSON (``SweepResult.as_dict()``,
``PlanComparison.as_dict()``), so what the server stores is exactly what crossed. The small value
types a row is made of (``OperatorRef``, ``SideTiming``, ``OutputCheck``, ``CombinationCount``)
live here, importable without OpenCL, and are the ones the sweep itself builds. Detail that the
server only stores and the pages read later (a plan's kernels and steps, its latency model) stays
a JSON object (``JsonDict``); every key the server reads is a typed field.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TypedDict

from devicelab.measure.environment import HostLockRecord
from devicelab.measure.ratios import RatioEstimate
from devicelab.measure.stats import SampleStats
from devicelab.wire import JsonDict, JsonRecord, PayloadError


@dataclass(frozen=True)
class OperatorRef(JsonRecord):
    """Which operator of which network a measurement ran, as stored beside the result."""

    model: str
    name: str  # the planned kernel's name (the anchor operator's, with "#i" for a part)
    kernel: str  # the kernel function
    op_type: str
    kind: str
    mflops: float
    global_size: tuple[int, ...]  # its logical work size
    local_size: tuple[int, ...] | None


@dataclass(frozen=True)
class OutputCheck(JsonRecord):
    """How a fused kernel's outputs compare with the sequential run's."""

    correct: bool  # the same elements written, each bit for bit or within the tolerance
    bitwise: bool
    max_relative_error: float  # the largest difference relative to the largest value (0 when bitwise)
    note: str  # why it is not correct ("" when it is)


@dataclass(frozen=True)
class SideTiming(JsonRecord):
    """One side's timed runs: device spans, busy times and host wall times (ms), raw and summarized."""

    device: SampleStats
    wall: SampleStats
    device_samples_ms: tuple[float, ...]  # span: first kernel start to last kernel end, gaps included
    wall_samples_ms: tuple[float, ...]
    # busy: the sum of the kernels' own start-to-end times, the gaps between launches left out
    busy_samples_ms: tuple[float, ...] = ()


@dataclass(frozen=True)
class CombinationCount(JsonRecord):
    """How many combinations of kinds of one size there are, and how many the sweep plans."""

    size: int
    total: int
    planned: int


class SweepEnvironment(TypedDict, total=False):
    """Where a sweep ran and what its numbers mean (``SweepResult.environment``)."""

    platform: str  # the OpenCL platform's name
    driver_version: str  # the device's driver version
    device_wave_size: int  # the device's preferred work-group size multiple
    time_definition: str  # what "device" and "wall" time measure
    throughput_definition: str  # how a row's throughput is computed
    noise_definition: str  # how a row's throughput noise is computed
    host_lock: HostLockRecord  # whether it held the host's processors alone (a lab machine's CPU devices)


class PlanEnvironment(TypedDict, total=False):
    """What a plan comparison's numbers mean (``PlanComparison.environment``)."""

    time_definition: str  # what "device" and "wall" time measure
    ratio_definition: str  # how a strategy's time ratio is computed
    throughput_definition: str  # how a strategy's throughput is computed
    noise_definition: str  # how its throughput noise is computed
    check_definition: str  # what the output check compares
    host_lock: HostLockRecord  # whether it held the host's processors alone (a lab machine's CPU devices)


@dataclass(frozen=True)
class FusionRowRecord(JsonRecord):
    """One set of operators and one fused variant, as stored (``FusionRow.as_dict()``)."""

    experiment: str  # "combination" or "identical"
    kinds: tuple[str, ...]
    size: int  # how many operators are fused
    instance: int
    variant: str  # "rounded" or "unrounded"
    rounded: bool
    requested_layout: str  # "auto", "packed" or "paper"
    layout: str  # the layout used ("" when the fuser refused the set)
    wave_size: int
    operators: tuple[OperatorRef, ...]
    mflops: tuple[float, ...]  # each operator's
    total_mflops: float
    fused_global_size: tuple[int, ...] | None
    fused_local_size: tuple[int, ...] | None
    padding: int | None  # work-items of the fused launch that belong to no operator
    padding_fraction: float | None
    sequential: SideTiming | None
    fused: SideTiming | None
    throughput: float | None  # the span ratio's point estimate (``ratio.ratio``)
    ratio: RatioEstimate | None  # sequential / fused device span, paired over rounds, with its interval
    busy_ratio: RatioEstimate | None  # sequential / fused sum of the kernels' own times, paired over rounds
    throughput_wall: float | None
    correct: bool | None  # None: not run
    check: OutputCheck | None
    error: str  # why the set was refused ("" when measured)

    @classmethod
    def of(cls, row: object) -> FusionRowRecord:
        """The record of a sweep's row (``FusionRow``, whose sizes, MFLOPs and check are derived
        from its operators): each field read from the row's attribute of that name."""
        return cls(**{f.name: getattr(row, f.name) for f in fields(cls)})

    @property
    def stored_variant(self) -> str:
        """The variant the row is stored, filtered and drawn under (``stored_variant``)."""
        return stored_variant(self.variant, self.requested_layout)


def stored_variant(variant: str, requested_layout: str | None) -> str:
    """A row's variant as stored, filtered and drawn: ``rounded`` / ``unrounded`` for the fuser's
    default layout, prefixed by the layout a sweep asked for besides it (``paper rounded``), so
    figures never mix the layouts (rows from before layouts have none: the default)."""
    requested = requested_layout or "auto"
    return variant if requested == "auto" else f"{requested} {variant}"


@dataclass(frozen=True)
class FusionSweepRecord(JsonRecord):
    """A finished sweep as it crosses to the server (``SweepResult.as_dict()``)."""

    device: str
    wave_size: int
    precision: str
    models: tuple[str, ...]
    spec: JsonDict  # ``SweepSpec.as_dict()``: the spec as it ran, its own declaration's JSON
    operators_per_kind: dict[str, int]
    representatives: dict[str, tuple[OperatorRef, ...]]
    combinations: tuple[CombinationCount, ...]
    sampled: bool  # combinations sampled, or stopped early by the time budget
    notes: tuple[str, ...]
    rows: tuple[FusionRowRecord, ...]
    planned_units: int
    measured_units: int
    elapsed_s: float
    environment: SweepEnvironment

    json_name = "fusion sweep"


@dataclass(frozen=True)
class PlanRatio(JsonRecord):
    """A fused strategy against sequential, round by round (``RatioSummary.as_dict()``)."""

    time_ratio: SampleStats  # of the per-round strategy / sequential device time
    time_ratio_samples: tuple[float, ...]
    throughput: float  # the span ratio's point estimate (``ratio.ratio``)
    ratio: RatioEstimate  # sequential / strategy device span, paired over rounds, with its interval
    busy_ratio: RatioEstimate | None  # the same on the kernels' busy times (None: no busy samples)
    wall_time_ratio: float | None  # None where it was not finite


@dataclass(frozen=True)
class PlanCheck(JsonRecord):
    """A fused strategy's outputs against the sequential run's (``StrategyCheck.as_dict()``)."""

    correct: bool
    failed: tuple[str, ...]  # the buffers (``graph/tensor``) that differ
    outputs: JsonDict  # ``OutputCheck.as_dict()``, a non-finite error as None
    buffers: JsonDict


@dataclass(frozen=True)
class FusionPlanRecord(JsonRecord):
    """A plan comparison as it crosses to the server (``PlanComparison.as_dict()``, layout
    ``version`` 1; that method's docstring describes every key)."""

    version: int
    device: str
    platform: str
    driver_version: str
    wave_size: int
    precision: str
    round_to_wave: bool
    max_group: int
    min_throughput: float
    warmup: int
    runs: int
    models: tuple[str, ...]  # each graph's model name
    graphs: tuple[JsonDict, ...]
    strategies: tuple[str, ...]
    launches: dict[str, int]  # per strategy
    kernels: tuple[JsonDict, ...]
    plans: dict[str, JsonDict]  # per strategy: its steps
    timing: dict[str, SideTiming]  # per strategy
    ratios: dict[str, PlanRatio]  # plan and fuse_all against sequential
    checks: dict[str, PlanCheck]  # plan and fuse_all against sequential
    correct: bool
    benefit_sources: dict[str, JsonDict]
    predicted_ms: dict[str, float | None]
    model: JsonDict  # the latency model's constants, calibration and notes
    measured: tuple[JsonDict, ...]
    probes: tuple[JsonDict, ...]
    refusals: dict[str, int]
    notes: tuple[str, ...]
    elapsed_s: float
    environment: PlanEnvironment

    json_name = "fusion plan"

    def _check_json(self, where: str) -> None:
        """The strategies the pages compare must be there."""
        for strategy in ("sequential", "plan", "fuse_all"):
            if strategy not in self.timing:
                raise PayloadError(f"{where}.timing.{strategy} is missing")
        for strategy in ("plan", "fuse_all"):
            if strategy not in self.ratios:
                raise PayloadError(f"{where}.ratios.{strategy} is missing")

    def median_ms(self, strategy: str) -> float:
        """A strategy's median device time over the timed rounds (ms)."""
        return self.timing[strategy].device.median


__all__ = [
    "CombinationCount",
    "FusionPlanRecord",
    "FusionRowRecord",
    "FusionSweepRecord",
    "OperatorRef",
    "OutputCheck",
    "PlanCheck",
    "PlanEnvironment",
    "PlanRatio",
    "SideTiming",
    "SweepEnvironment",
    "stored_variant",
]
