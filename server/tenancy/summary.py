"""A sharing sweep's stored rows summarized the way seed 003 draws them (figures 3-5 and 7, table 1).

Each function reads one sweep with one lean query (the rows' columns and the small parts of their
``data`` a figure needs, never the raw samples) and returns plain data for the pages:

* ``workload_figures``: one workload's rows per strategy against R, for figure 7 (throughput,
  with numpy's SGEMM on the same cores as the ceiling), figures 3-4 (pooled p50 and p99 latency,
  the fastest and the slowest tenant's p50, the straggler gap) and figure 5 (the footprint per R,
  memory-bound rows marked, the device's memory, the budget, the largest R that fits);
* ``table1``: space-time over the next best approach per workload at the paper's R = 10 and
  R = 20 and its geometric mean over R in [2, 120], beside the paper's V100 values (seed 003,
  table 1) where the workload is one of its shapes; read from the stored table 1, which the sweep
  computed from these rows (``devicelab.tenancy.table1``);
* ``row_counts``, ``not_measured`` and ``headlines``: what was measured, refused, checked and
  left out by the time budget, and the table 1 geometric means a list of sweeps shows.

Only measured rows (``ok``) have a throughput and latencies; a memory-bound row has its footprint
(figure 5 marks it), an unsupported or failed one only its reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from devicelab.measure.ratios import RatioEstimate
from devicelab.tenancy.spec import STRATEGIES
from devicelab.tenancy.table1 import R_RANGE
from server.tenancy.models import SharingMeasurement, SharingStatus, SharingSweepResult
from server.tenancy.services import sharing_rows

STRATEGY_LABELS: dict[str, str] = {
    "exclusive": "exclusive",
    "exclusive_batched": "exclusive, batched",
    "time_only": "time-only",
    "space_only": "space-only",
    "space_time": "space-time",
    "space_time_vbatched": "space-time, variable-sized",
    "space_time_clblast": "space-time, CLBlast",
    "space_time_native": "space-time, backend kernels",
}


def strategy_label(strategy: str) -> str:
    """How a strategy reads on the pages."""
    return STRATEGY_LABELS.get(strategy, strategy)


def strategy_sort_key(strategy: str) -> tuple[int, str]:
    """The sweep's order of strategies (``devicelab.tenancy.sweep.STRATEGIES``), unknown ones after."""
    return (STRATEGIES.index(strategy), "") if strategy in STRATEGIES else (len(STRATEGIES), strategy)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _ratio(value: Any) -> RatioEstimate | None:
    """A stored ``RatioEstimate.as_dict()`` (None: absent, or stored before ratios were paired)."""
    if not isinstance(value, Mapping):
        return None
    try:
        return RatioEstimate.from_dict(value)
    except (ValueError, TypeError):
        return None


# -- one workload's rows -----------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One stored row's measures: its columns, the fastest and slowest tenant's p50 and the
    memory model of its strategy (both from ``data``)."""

    workload: str
    tenants: int
    strategy: str
    status: str
    gflops: float | None
    per_s: float | None
    p50_ms: float | None  # pooled over every tenant's requests
    p99_ms: float | None
    fastest_p50_ms: float | None  # the fastest tenant's own p50 (figure 4)
    slowest_p50_ms: float | None
    gap_ms: float | None
    gap_ratio: float | None
    memory_bytes: int | None  # the footprint at this R (also for a memory-bound row)
    fixed_bytes: int | None  # footprint = fixed + R x per_tenant
    per_tenant_bytes: int | None
    budget_bytes: int | None
    device_memory_bytes: int | None
    cap_bytes: int | None
    largest_fit: int | None  # the largest R the memory model says fits
    correct: bool | None
    error: str
    of_ceiling: RatioEstimate | None = None  # GFLOP/s over numpy's ceiling, paired by round


_COLUMNS = (
    "workload",
    "tenants",
    "strategy",
    "status",
    "throughput_gflops",
    "throughput_per_s",
    "latency_p50_ms",
    "latency_p99_ms",
    "straggler_gap_ms",
    "straggler_gap_ratio",
    "memory_bytes",
    "correct",
    "error",
    "data__straggler",
    "data__memory",
    "data__of_ceiling",
)


def cells(sweep: SharingSweepResult, workload: str | None = None, strategy: str | None = None) -> list[Cell]:
    """A sweep's rows (of one workload and strategy, when given) as ``Cell``s, in the order they
    were measured."""
    out = []
    for (
        name,
        tenants,
        row_strategy,
        status,
        gflops,
        per_s,
        p50,
        p99,
        gap_ms,
        gap_ratio,
        memory_bytes,
        correct,
        error,
        straggler,
        memory,
        of_ceiling,
    ) in sharing_rows(sweep, workload=workload, strategy=strategy).values_list(*_COLUMNS):
        straggler, memory = _mapping(straggler), _mapping(memory)
        out.append(
            Cell(
                workload=name,
                tenants=tenants,
                strategy=row_strategy,
                status=status,
                gflops=gflops,
                per_s=per_s,
                p50_ms=p50,
                p99_ms=p99,
                fastest_p50_ms=_number(straggler.get("fastest_p50_ms")),
                slowest_p50_ms=_number(straggler.get("slowest_p50_ms")),
                gap_ms=gap_ms,
                gap_ratio=gap_ratio,
                memory_bytes=memory_bytes,
                fixed_bytes=_int(memory.get("fixed_bytes")),
                per_tenant_bytes=_int(memory.get("per_tenant_bytes")),
                budget_bytes=_int(memory.get("budget_bytes")),
                device_memory_bytes=_int(memory.get("device_global_mem_bytes")),
                cap_bytes=_int(memory.get("cap_bytes")),
                largest_fit=_int(memory.get("largest_tenants_that_fit")),
                correct=correct,
                error=error,
                of_ceiling=_ratio(of_ceiling),
            )
        )
    return out


@dataclass(frozen=True)
class StrategySeries:
    """One strategy's rows of one workload against R: the measured ones (figures 7 and 3-4) and
    the ones with a footprint, measured or memory-bound (figure 5)."""

    strategy: str
    label: str
    measured: tuple[Cell, ...]  # status ok, by R
    footprints: tuple[Cell, ...]  # a footprint known (ok or memory-bound), by R
    largest_measured: int | None
    smallest_memory_bound: int | None
    largest_fit: int | None  # None: the footprint does not grow with R (one tenant)
    fixed_bytes: int | None
    per_tenant_bytes: int | None

    @property
    def memory_bound(self) -> tuple[Cell, ...]:
        """The rows refused because their footprint did not fit."""
        return tuple(c for c in self.footprints if c.status == SharingStatus.MEMORY_BOUND)


@dataclass(frozen=True)
class Ceiling:
    """numpy's SGEMM of the workload's shape on the same cores (``devicelab.tenancy.ceiling``):
    over every tenant's own operands per R, the better of one BLAS thread and all, interleaved
    with the strategies' rounds (``per_tenants``: R -> median GFLOP/s of its rounds)."""

    gflops: float  # the median over every round of every R
    best_gflops: float
    numpy: str
    blas: str
    what: str = ""  # what it is a ceiling of ('' for a sweep stored before it said)
    per_tenants: tuple[tuple[int, float], ...] = ()  # (R, median GFLOP/s), by R


@dataclass(frozen=True)
class WorkloadFigures:
    """What figures 3-5 and 7 draw of one workload."""

    workload: str
    kind: str  # sgemm or network
    tenants: tuple[int, ...]  # every R with a row, ascending
    series: tuple[StrategySeries, ...]  # in the sweep's order of strategies
    ceiling: Ceiling | None
    device_memory_bytes: int | None
    budget_bytes: int | None  # what the strategies may allocate (below the device's memory with a cap)
    cap_bytes: int | None

    def strategy(self, name: str) -> StrategySeries | None:
        """The series of the strategy called ``name``."""
        return next((s for s in self.series if s.strategy == name), None)

    @property
    def measured(self) -> bool:
        """Whether any strategy has a measured row."""
        return any(s.measured for s in self.series)


def workload_kind(sweep: SharingSweepResult, workload: str) -> str:
    """``sgemm`` for a shape the spec names, ``network`` otherwise."""
    shapes = {"x".join(str(v) for v in s) for s in (sweep.spec or {}).get("shapes") or []}
    return "sgemm" if workload in shapes else "network"


def ceiling_of(sweep: SharingSweepResult, workload: str) -> Ceiling | None:
    """numpy's SGEMM for a shape, as the sweep measured it (None: not measured, failed, or a network)."""
    stored = _mapping(sweep.ceiling)
    shape = _mapping(_mapping(stored.get("shapes")).get(workload))
    median, best = _number(shape.get("gflops")), _number(shape.get("best_gflops"))
    if median is None:
        return None
    per: list[tuple[int, float]] = []
    for r, run in _mapping(shape.get("per_tenants")).items():
        g = _number(_mapping(run).get("gflops"))
        if str(r).isdigit() and g is not None:
            per.append((int(r), g))
    return Ceiling(
        median,
        best if best is not None else median,
        str(stored.get("numpy") or ""),
        str(stored.get("blas") or ""),
        str(stored.get("what") or ""),
        tuple(sorted(per)),
    )


def _largest(sweep: SharingSweepResult) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {
        (str(e.get("workload")), str(e.get("strategy"))): e
        for e in sweep.largest_tenants or []
        if isinstance(e, Mapping)
    }


_FOOTPRINT_STATUSES = (SharingStatus.OK, SharingStatus.MEMORY_BOUND)


def workload_figures(sweep: SharingSweepResult, workload: str) -> WorkloadFigures:
    """One workload's rows per strategy against R, with its ceiling and memory limits."""
    rows = cells(sweep, workload)
    by_strategy: dict[str, list[Cell]] = {}
    for c in rows:
        by_strategy.setdefault(c.strategy, []).append(c)
    largest = _largest(sweep)
    series = []
    for strategy in sorted(by_strategy, key=strategy_sort_key):
        mine = sorted(by_strategy[strategy], key=lambda c: c.tenants)
        # a footprint drawn: measured, or refused for it (an unsupported or failed row has none to show)
        footprints = tuple(c for c in mine if c.memory_bytes is not None and c.status in _FOOTPRINT_STATUSES)
        stored = largest.get((workload, strategy), {})
        model = footprints[-1] if footprints else None
        series.append(
            StrategySeries(
                strategy=strategy,
                label=strategy_label(strategy),
                measured=tuple(c for c in mine if c.status == SharingStatus.OK),
                footprints=footprints,
                largest_measured=_int(stored.get("largest_measured")),
                smallest_memory_bound=_int(stored.get("smallest_memory_bound")),
                largest_fit=_int(stored.get("largest_that_fits")) if stored else (model.largest_fit if model else None),
                fixed_bytes=model.fixed_bytes if model else None,
                per_tenant_bytes=model.per_tenant_bytes if model else None,
            )
        )
    with_memory = [c for c in rows if c.budget_bytes is not None]
    device = _int((sweep.device or {}).get("global_mem_size"))
    return WorkloadFigures(
        workload=workload,
        kind=workload_kind(sweep, workload),
        tenants=tuple(sorted({c.tenants for c in rows})),
        series=tuple(series),
        ceiling=ceiling_of(sweep, workload),
        device_memory_bytes=device
        if device is not None
        else (with_memory[0].device_memory_bytes if with_memory else None),
        budget_bytes=with_memory[0].budget_bytes if with_memory else None,
        cap_bytes=with_memory[0].cap_bytes if with_memory else None,
    )


# -- table 1 -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PaperColumn:
    """One column of the paper's table 1: R SGEMMs of a shape on a V100."""

    label: str
    r10: float
    r20: float
    geomean: float  # over 2 <= R <= 120
    next_best: str

    @property
    def next_best_label(self) -> str:
        """The paper's next best approach, as the pages name it."""
        return strategy_label(self.next_best)


# Seed 003, table 1: "Space-time scheduling throughput increases over next best approach. R SGEMM
# kernel evaluations are queued on a NVIDIA V100 GPU."
PAPER_TABLE1: dict[str, PaperColumn] = {
    "512x1x512": PaperColumn("Matrix-vector: RNN", 1.21, 2.14, 2.48, "time_only"),
    "256x128x1152": PaperColumn("ResNet-18 conv2_2", 1.68, 2.88, 3.23, "space_only"),
    "256x256x256": PaperColumn("Square matrix-matrix", 2.42, 2.47, 4.93, "space_only"),
}
PAPER_TENANTS = (10, 20)  # the R of the paper's two single-R rows


@dataclass(frozen=True)
class Speedup:
    """Space-time over the next best at one R: the paired ratio over rounds with its interval
    (``ratio``; None for a sweep stored before ratios were paired), and the next best."""

    tenants: int
    speedup: float
    next_best: str
    ratio: RatioEstimate | None

    @property
    def label(self) -> str:
        """``1.04x [1.01-1.07]`` ("within noise" when the interval holds 1), or the bare ratio."""
        return self.ratio.label() if self.ratio is not None else f"{self.speedup:.2f}x"

    @property
    def verdict(self) -> str:
        """above / below / within noise ('' when no interval was stored)."""
        return self.ratio.verdict if self.ratio is not None else ""

    @property
    def next_best_label(self) -> str:
        """The next best approach, as the pages name it."""
        return strategy_label(self.next_best)


@dataclass(frozen=True)
class Table1Column:
    """One workload's column of table 1, with the paper's beside it when the paper has the shape."""

    workload: str
    kind: str
    r10: Speedup | None  # None: R = 10 not measured (or space-time or both rivals not)
    r20: Speedup | None
    geomean: float | None  # over the R in [2, 120] with a speed-up
    next_best: str | None  # the approach that was next best at most R
    next_best_counts: Mapping[str, int]
    per_tenants: tuple[Speedup, ...]
    peers: tuple[tuple[str, float | None], ...]  # the other super-kernels: (label, geomean)
    paper: PaperColumn | None
    significant: Significance | None = None  # None for a sweep stored before ratios were paired

    @property
    def tenants(self) -> tuple[int, ...]:
        """The R the geometric mean is over."""
        return tuple(s.tenants for s in self.per_tenants)

    @property
    def next_best_label(self) -> str:
        """The approach that was next best at most R, as the pages name it ('' when none)."""
        return strategy_label(self.next_best) if self.next_best else ""


def _speedup(raw: Mapping[str, Any]) -> Speedup | None:
    tenants, speedup = _int(raw.get("tenants")), _number(raw.get("speedup"))
    if tenants is None or speedup is None:
        return None
    return Speedup(tenants, speedup, str(raw.get("next_best") or ""), _ratio(raw.get("ratio")))


def _counts(raw: Any) -> Significance | None:
    counts = _mapping(raw)
    values = [_int(counts.get(k)) for k in ("above", "below", "within noise")]
    if any(v is None for v in values):
        return None
    above, below, noise = (int(v or 0) for v in values)
    return Significance(above, below, noise)


@dataclass(frozen=True)
class Significance:
    """How many R had a speed-up significantly above 1, below 1, or within noise (the headline)."""

    above: int
    below: int
    within_noise: int

    @property
    def total(self) -> int:
        """Every R with a speed-up."""
        return self.above + self.below + self.within_noise

    def __str__(self) -> str:
        return f"above 1 at {self.above} of {self.total} R, below at {self.below}, within noise at {self.within_noise}"


def table1(sweep: SharingSweepResult) -> list[Table1Column]:
    """Table 1 of the sweep, one column per workload in the sweep's order (a workload without a
    space-time speed-up has an empty column)."""
    entries = {}
    for entry in sweep.table1 or []:
        if isinstance(entry, Mapping):
            entries[str(_mapping(entry.get("workload")).get("name"))] = entry
    columns = []
    for workload in sweep.workloads or []:
        entry = _mapping(entries.get(workload))
        per = tuple(s for s in (_speedup(_mapping(p)) for p in entry.get("per_tenants") or []) if s is not None)
        at = {s.tenants: s for s in per}
        peers = tuple(
            (strategy_label(str(name)), _number(_mapping(peer).get("speedup_geomean")))
            for name, peer in sorted(_mapping(entry.get("peers")).items(), key=lambda kv: strategy_sort_key(kv[0]))
        )
        counts = {str(k): int(v) for k, v in _mapping(entry.get("next_best_counts")).items() if _int(v) is not None}
        columns.append(
            Table1Column(
                workload=workload,
                kind=workload_kind(sweep, workload),
                r10=at.get(PAPER_TENANTS[0]),
                r20=at.get(PAPER_TENANTS[1]),
                geomean=_number(entry.get("speedup_geomean")),
                next_best=str(entry["next_best"]) if entry.get("next_best") else None,
                next_best_counts=counts,
                per_tenants=per,
                peers=peers,
                paper=PAPER_TABLE1.get(workload),
                significant=_counts(entry.get("significant")),
            )
        )
    return columns


@dataclass(frozen=True)
class Headline:
    """A workload's table 1 geometric mean, as a list of sweeps shows it."""

    workload: str
    geomean: float
    next_best: str | None
    significant: Significance | None = None  # the R above / below / within noise


def headlines(stored_table1: Iterable[Any]) -> list[Headline]:
    """The geometric means of a stored table 1 (``SharingSweepResult.table1``), workloads without
    one left out."""
    out = []
    for entry in stored_table1 or []:
        entry = _mapping(entry)
        geomean = _number(entry.get("speedup_geomean"))
        if geomean is not None:
            name = str(_mapping(entry.get("workload")).get("name") or "?")
            out.append(
                Headline(
                    name,
                    geomean,
                    str(entry["next_best"]) if entry.get("next_best") else None,
                    _counts(entry.get("significant")),
                )
            )
    return out


# -- what was measured -------------------------------------------------------------------------


@dataclass(frozen=True)
class RowCounts:
    """A sweep's rows by status, and how many measured rows failed their output check."""

    rows: int
    measured: int
    memory_bound: int
    unsupported: int
    errors: int
    incorrect: int  # measured, but an output differed from the tenant's exclusive run
    unchecked: int  # measured without a check


def row_counts(sweep: SharingSweepResult) -> RowCounts:
    """How many rows were measured, refused (memory, unsupported, error) and checked (one query)."""
    ok = Q(status=SharingStatus.OK)
    counts = SharingMeasurement.objects.filter(sweep=sweep).aggregate(
        rows=Count("pk"),
        measured=Count("pk", filter=ok),
        memory_bound=Count("pk", filter=Q(status=SharingStatus.MEMORY_BOUND)),
        unsupported=Count("pk", filter=Q(status=SharingStatus.UNSUPPORTED)),
        errors=Count("pk", filter=Q(status=SharingStatus.ERROR)),
        incorrect=Count("pk", filter=ok & Q(correct=False)),
        unchecked=Count("pk", filter=ok & Q(correct__isnull=True)),
    )
    return RowCounts(**counts)


@dataclass(frozen=True)
class NotMeasured:
    """A workload's R values that the time budget left out."""

    workload: str
    tenants: tuple[int, ...]


def not_measured(sweep: SharingSweepResult) -> list[NotMeasured]:
    """The units the time budget left out, grouped by workload in the order they were due."""
    grouped: dict[str, list[int]] = {}
    for unit in sweep.not_measured or []:
        unit = _mapping(unit)
        tenants = _int(unit.get("tenants"))
        if tenants is not None:
            grouped.setdefault(str(unit.get("workload") or "?"), []).append(tenants)
    return [NotMeasured(w, tuple(r)) for w, r in grouped.items()]


def strategies_of(sweep: SharingSweepResult) -> list[str]:
    """The strategies the sweep has rows of, in the sweep's order."""
    names = set(SharingMeasurement.objects.filter(sweep=sweep).values_list("strategy", flat=True).distinct())
    return sorted(names, key=strategy_sort_key)


__all__ = [
    "PAPER_TABLE1",
    "PAPER_TENANTS",
    "R_RANGE",
    "STRATEGY_LABELS",
    "Ceiling",
    "Cell",
    "Headline",
    "NotMeasured",
    "PaperColumn",
    "RowCounts",
    "Significance",
    "Speedup",
    "StrategySeries",
    "Table1Column",
    "WorkloadFigures",
    "ceiling_of",
    "cells",
    "headlines",
    "not_measured",
    "row_counts",
    "strategies_of",
    "strategy_label",
    "strategy_sort_key",
    "table1",
    "workload_figures",
    "workload_kind",
]
