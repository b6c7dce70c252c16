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

from dataclasses import asdict, dataclass
from typing import Any, TypedDict, cast

from devicelab.measure.stats import SampleStats
from devicelab.wire import Fields, JsonDict, PayloadError, is_int, optional_number, read


@dataclass(frozen=True)
class OperatorRef:
    """Which operator of which network a measurement ran, as stored beside the result."""

    model: str
    name: str  # the planned kernel's name (the anchor operator's, with "#i" for a part)
    kernel: str  # the kernel function
    op_type: str
    kind: str
    mflops: float
    global_size: tuple[int, ...]  # its logical work size
    local_size: tuple[int, ...] | None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "model": self.model,
            "name": self.name,
            "kernel": self.kernel,
            "op_type": self.op_type,
            "kind": self.kind,
            "mflops": self.mflops,
            "global_size": list(self.global_size),
            "local_size": None if self.local_size is None else list(self.local_size),
        }

    @classmethod
    def from_fields(cls, f: Fields) -> OperatorRef:
        """Read back from ``as_dict``'s JSON."""
        ref = cls(
            model=f.text("model"),
            name=f.text("name"),
            kernel=f.text("kernel"),
            op_type=f.text("op_type"),
            kind=f.text("kind"),
            mflops=f.number("mflops"),
            global_size=f.integers("global_size"),
            local_size=f.optional("local_size", f.integers),
        )
        f.done()
        return ref


@dataclass(frozen=True)
class OutputCheck:
    """How a fused kernel's outputs compare with the sequential run's."""

    correct: bool  # the same elements written, each bit for bit or within the tolerance
    bitwise: bool
    max_relative_error: float  # the largest difference relative to the largest value (0 when bitwise)
    note: str  # why it is not correct ("" when it is)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "correct": self.correct,
            "bitwise": self.bitwise,
            "max_relative_error": self.max_relative_error,
            "note": self.note,
        }

    @classmethod
    def from_fields(cls, f: Fields) -> OutputCheck:
        """Read back from ``as_dict``'s JSON."""
        check = cls(
            correct=f.flag("correct"),
            bitwise=f.flag("bitwise"),
            max_relative_error=f.number("max_relative_error"),
            note=f.text("note"),
        )
        f.done()
        return check


@dataclass(frozen=True)
class SideTiming:
    """One side's timed runs: device spans and host wall times (ms), raw and summarized."""

    device: SampleStats
    wall: SampleStats
    device_samples_ms: tuple[float, ...]
    wall_samples_ms: tuple[float, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "device": self.device.as_dict(),
            "wall": self.wall.as_dict(),
            "device_samples_ms": list(self.device_samples_ms),
            "wall_samples_ms": list(self.wall_samples_ms),
        }

    @classmethod
    def from_fields(cls, f: Fields) -> SideTiming:
        """Read back from ``as_dict``'s JSON."""
        timing = cls(
            device=f.record("device", SampleStats.from_fields),
            wall=f.record("wall", SampleStats.from_fields),
            device_samples_ms=f.numbers("device_samples_ms"),
            wall_samples_ms=f.numbers("wall_samples_ms"),
        )
        f.done()
        return timing


@dataclass(frozen=True)
class CombinationCount:
    """How many combinations of kinds of one size there are, and how many the sweep plans."""

    size: int
    total: int
    planned: int

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)

    @classmethod
    def from_fields(cls, f: Fields) -> CombinationCount:
        """Read back from ``as_dict``'s JSON."""
        count = cls(size=f.integer("size"), total=f.integer("total"), planned=f.integer("planned"))
        f.done()
        return count


class SweepEnvironment(TypedDict, total=False):
    """Where a sweep ran and what its numbers mean (``SweepResult.environment``)."""

    platform: str  # the OpenCL platform's name
    driver_version: str  # the device's driver version
    device_wave_size: int  # the device's preferred work-group size multiple
    time_definition: str  # what "device" and "wall" time measure
    throughput_definition: str  # how a row's throughput is computed
    noise_definition: str  # how a row's throughput noise is computed


class PlanEnvironment(TypedDict, total=False):
    """What a plan comparison's numbers mean (``PlanComparison.environment``)."""

    time_definition: str  # what "device" and "wall" time measure
    ratio_definition: str  # how a strategy's time ratio is computed
    throughput_definition: str  # how a strategy's throughput is computed
    noise_definition: str  # how its throughput noise is computed
    check_definition: str  # what the output check compares


@dataclass(frozen=True)
class FusionRowRecord:
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
    throughput: float | None  # median over rounds of sequential / fused device time
    throughput_noise: float | None
    throughput_wall: float | None
    correct: bool | None  # None: not run
    check: OutputCheck | None
    error: str  # why the set was refused ("" when measured)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: one stored row."""
        return {
            "experiment": self.experiment,
            "kinds": list(self.kinds),
            "size": self.size,
            "instance": self.instance,
            "variant": self.variant,
            "rounded": self.rounded,
            "requested_layout": self.requested_layout,
            "layout": self.layout,
            "wave_size": self.wave_size,
            "operators": [op.as_dict() for op in self.operators],
            "mflops": list(self.mflops),
            "total_mflops": self.total_mflops,
            "fused_global_size": None if self.fused_global_size is None else list(self.fused_global_size),
            "fused_local_size": None if self.fused_local_size is None else list(self.fused_local_size),
            "padding": self.padding,
            "padding_fraction": self.padding_fraction,
            "sequential": None if self.sequential is None else self.sequential.as_dict(),
            "fused": None if self.fused is None else self.fused.as_dict(),
            "throughput": self.throughput,
            "throughput_noise": self.throughput_noise,
            "throughput_wall": self.throughput_wall,
            "correct": self.correct,
            "check": None if self.check is None else self.check.as_dict(),
            "error": self.error,
        }

    @classmethod
    def from_fields(cls, f: Fields) -> FusionRowRecord:
        """Read back from ``as_dict``'s JSON."""
        row = cls(
            experiment=f.text("experiment"),
            kinds=f.texts("kinds"),
            size=f.integer("size"),
            instance=f.integer("instance"),
            variant=f.text("variant"),
            rounded=f.flag("rounded"),
            requested_layout=f.text("requested_layout"),
            layout=f.text("layout"),
            wave_size=f.integer("wave_size"),
            operators=f.records("operators", OperatorRef.from_fields),
            mflops=f.numbers("mflops"),
            total_mflops=f.number("total_mflops"),
            fused_global_size=f.optional("fused_global_size", f.integers),
            fused_local_size=f.optional("fused_local_size", f.integers),
            padding=f.optional("padding", f.integer),
            padding_fraction=f.optional("padding_fraction", f.number),
            sequential=f.optional("sequential", lambda k: f.record(k, SideTiming.from_fields)),
            fused=f.optional("fused", lambda k: f.record(k, SideTiming.from_fields)),
            throughput=f.optional("throughput", f.number),
            throughput_noise=f.optional("throughput_noise", f.number),
            throughput_wall=f.optional("throughput_wall", f.number),
            correct=f.optional("correct", f.flag),
            check=f.optional("check", lambda k: f.record(k, OutputCheck.from_fields)),
            error=f.text("error"),
        )
        f.done()
        return row

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
class FusionSweepRecord:
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

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "device": self.device,
            "wave_size": self.wave_size,
            "precision": self.precision,
            "models": list(self.models),
            "spec": dict(self.spec),
            "operators_per_kind": dict(self.operators_per_kind),
            "representatives": {k: [r.as_dict() for r in refs] for k, refs in self.representatives.items()},
            "combinations": [c.as_dict() for c in self.combinations],
            "sampled": self.sampled,
            "notes": list(self.notes),
            "rows": [r.as_dict() for r in self.rows],
            "planned_units": self.planned_units,
            "measured_units": self.measured_units,
            "elapsed_s": self.elapsed_s,
            "environment": dict(self.environment),
        }

    @classmethod
    def from_fields(cls, f: Fields) -> FusionSweepRecord:
        """Read from the JSON ``as_dict`` wrote."""
        representatives = {
            kind: tuple(
                OperatorRef.from_fields(Fields(ref, f"{f.path('representatives')}.{kind}[{i}]"))
                for i, ref in enumerate(refs)
            )
            for kind, refs in f.mapping("representatives", lambda v: isinstance(v, list), "a list").items()
        }
        record = cls(
            device=f.text("device"),
            wave_size=f.integer("wave_size"),
            precision=f.text("precision"),
            models=f.texts("models"),
            spec=f.obj("spec"),
            operators_per_kind=f.mapping("operators_per_kind", is_int, "an integer"),
            representatives=representatives,
            combinations=f.records("combinations", CombinationCount.from_fields),
            sampled=f.flag("sampled"),
            notes=f.texts("notes"),
            rows=f.records("rows", FusionRowRecord.from_fields),
            planned_units=f.integer("planned_units"),
            measured_units=f.integer("measured_units"),
            elapsed_s=f.number("elapsed_s"),
            environment=cast(SweepEnvironment, f.shaped("environment", SweepEnvironment)),
        )
        f.done()
        return record

    @classmethod
    def from_dict(cls, data: object) -> FusionSweepRecord:
        """The inverse of ``as_dict``; ``PayloadError`` naming the first missing, mistyped or
        unknown key."""
        return read(data, "fusion sweep", cls.from_fields)


@dataclass(frozen=True)
class PlanRatio:
    """A fused strategy against sequential, round by round (``RatioSummary.as_dict()``)."""

    time_ratio: SampleStats  # of the per-round strategy / sequential device time
    time_ratio_samples: tuple[float, ...]
    throughput: float  # median over rounds of sequential / strategy device time
    throughput_noise: float
    wall_time_ratio: float | None  # None where it was not finite

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "time_ratio": self.time_ratio.as_dict(),
            "time_ratio_samples": list(self.time_ratio_samples),
            "throughput": self.throughput,
            "throughput_noise": self.throughput_noise,
            "wall_time_ratio": self.wall_time_ratio,
        }

    @classmethod
    def from_fields(cls, f: Fields) -> PlanRatio:
        """Read back from ``as_dict``'s JSON."""
        ratio = cls(
            time_ratio=f.record("time_ratio", SampleStats.from_fields),
            time_ratio_samples=f.numbers("time_ratio_samples"),
            throughput=f.number("throughput"),
            throughput_noise=f.number("throughput_noise"),
            wall_time_ratio=f.optional("wall_time_ratio", f.number),
        )
        f.done()
        return ratio


@dataclass(frozen=True)
class PlanCheck:
    """A fused strategy's outputs against the sequential run's (``StrategyCheck.as_dict()``)."""

    correct: bool
    failed: tuple[str, ...]  # the buffers (``graph/tensor``) that differ
    outputs: JsonDict  # ``OutputCheck.as_dict()``, a non-finite error as None
    buffers: JsonDict

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {"correct": self.correct, "failed": list(self.failed), "outputs": self.outputs, "buffers": self.buffers}

    @classmethod
    def from_fields(cls, f: Fields) -> PlanCheck:
        """Read back from ``as_dict``'s JSON."""
        check = cls(
            correct=f.flag("correct"), failed=f.texts("failed"), outputs=f.obj("outputs"), buffers=f.obj("buffers")
        )
        f.done()
        return check


@dataclass(frozen=True)
class FusionPlanRecord:
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

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "version": self.version,
            "device": self.device,
            "platform": self.platform,
            "driver_version": self.driver_version,
            "wave_size": self.wave_size,
            "precision": self.precision,
            "round_to_wave": self.round_to_wave,
            "max_group": self.max_group,
            "min_throughput": self.min_throughput,
            "warmup": self.warmup,
            "runs": self.runs,
            "models": list(self.models),
            "graphs": list(self.graphs),
            "strategies": list(self.strategies),
            "launches": dict(self.launches),
            "kernels": list(self.kernels),
            "plans": dict(self.plans),
            "timing": {s: t.as_dict() for s, t in self.timing.items()},
            "ratios": {s: r.as_dict() for s, r in self.ratios.items()},
            "checks": {s: c.as_dict() for s, c in self.checks.items()},
            "correct": self.correct,
            "benefit_sources": dict(self.benefit_sources),
            "predicted_ms": dict(self.predicted_ms),
            "model": dict(self.model),
            "measured": list(self.measured),
            "probes": list(self.probes),
            "refusals": dict(self.refusals),
            "notes": list(self.notes),
            "elapsed_s": self.elapsed_s,
            "environment": dict(self.environment),
        }

    @classmethod
    def from_fields(cls, f: Fields) -> FusionPlanRecord:
        """Read from the JSON ``as_dict`` wrote."""
        record = cls(
            version=f.integer("version"),
            device=f.text("device"),
            platform=f.text("platform"),
            driver_version=f.text("driver_version"),
            wave_size=f.integer("wave_size"),
            precision=f.text("precision"),
            round_to_wave=f.flag("round_to_wave"),
            max_group=f.integer("max_group"),
            min_throughput=f.number("min_throughput"),
            warmup=f.integer("warmup"),
            runs=f.integer("runs"),
            models=f.texts("models"),
            graphs=f.objs("graphs"),
            strategies=f.texts("strategies"),
            launches=f.mapping("launches", is_int, "an integer"),
            kernels=f.objs("kernels"),
            plans=f.mapping("plans", lambda v: isinstance(v, dict), "a JSON object"),
            timing=f.by_name("timing", SideTiming.from_fields),
            ratios=f.by_name("ratios", PlanRatio.from_fields),
            checks=f.by_name("checks", PlanCheck.from_fields),
            correct=f.flag("correct"),
            benefit_sources=f.mapping("benefit_sources", lambda v: isinstance(v, dict), "a JSON object"),
            predicted_ms=f.mapping("predicted_ms", optional_number, "a number or null"),
            model=f.obj("model"),
            measured=f.objs("measured"),
            probes=f.objs("probes"),
            refusals=f.mapping("refusals", is_int, "an integer"),
            notes=f.texts("notes"),
            elapsed_s=f.number("elapsed_s"),
            environment=cast(PlanEnvironment, f.shaped("environment", PlanEnvironment)),
        )
        f.done()
        for strategy in ("sequential", "plan", "fuse_all"):
            if strategy not in record.timing:
                raise PayloadError(f"fusion plan.timing.{strategy} is missing")
        for strategy in ("plan", "fuse_all"):
            if strategy not in record.ratios:
                raise PayloadError(f"fusion plan.ratios.{strategy} is missing")
        return record

    @classmethod
    def from_dict(cls, data: object) -> FusionPlanRecord:
        """The inverse of ``as_dict``; ``PayloadError`` naming the first missing, mistyped or
        unknown key."""
        return read(data, "fusion plan", cls.from_fields)

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
