"""A sharing sweep: every workload, every R, every strategy, interleaved, with checked outputs.

For one workload and one R the sweep

1. checks each strategy's footprint against the memory budget (a strategy that does not fit is
   a ``memory_bound`` row; nothing is allocated for it);
2. sets up the tenants (their data on the device) and every strategy that fits;
3. computes each tenant's exclusive result, runs every strategy once and checks its outputs
   against them (``checks``);
4. runs ``warmup`` dropped rounds and ``runs`` kept rounds, each round one step of every
   strategy (and, for SGEMM shapes, one step of numpy's ceiling on the same tenants' operands,
   ``ceiling``) in an order that rotates from round to round, so drift and a burst of other load
   hit all strategies alike and round i's samples are paired across strategies;
5. gives every measured SGEMM row its paired ratio to the ceiling (``of_ceiling``, by round);
6. frees everything, also when a step fails or the progress callback raises (which is how a
   caller stops a sweep: it propagates after the buffers are freed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyopencl as cl

from devicelab.backends.base import BackendError
from devicelab.backends.opencl.devices import FoundDevice, runtime_environment
from devicelab.backends.opencl.runner import GraphRunner
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph
from devicelab.measure.harness import Progress, ReportFn
from devicelab.measure.ratios import paired_ratio
from devicelab.tenancy.ceiling import CeilingProcess, CeilingRun, ceiling_summary
from devicelab.tenancy.checks import NETWORK_TOLERANCE, compare_bitwise, compare_with_numpy, compare_within
from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.gemm_strategies import GEMM_STRATEGIES, SharedOperands, exclusive_results, gemm_footprint
from devicelab.tenancy.memory import MemoryBound, MemoryBudget, base_alignment, is_memory_error
from devicelab.tenancy.network_layers import LayerPlan, plan_layers, step_flops
from devicelab.tenancy.network_strategies import (
    NETWORK_STRATEGIES,
    NetSpaceTime,
    NetworkTenants,
    batched_references,
    build_network_strategy,
    network_footprint,
)
from devicelab.tenancy.rows import SharingRow
from devicelab.tenancy.scheduling import SharingStrategy, rotated
from devicelab.tenancy.spec import DEFAULT_STRATEGIES, DEFAULT_TENANTS, PAPER_SHAPES, STRATEGIES, SharingSpec
from devicelab.tenancy.table1 import table1


@dataclass
class SharingResult:
    """A sweep's rows, with the device, the ceiling and what it took."""

    spec: SharingSpec
    device: dict[str, Any]
    rows: list[SharingRow] = field(default_factory=list)
    ceiling: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    ceiling_runs: list[CeilingRun] = field(default_factory=list)  # ``ceiling`` is theirs when not given

    def largest_tenants(self) -> list[dict[str, Any]]:
        """Per workload and strategy: the largest R measured, the smallest memory-bound R, and the
        largest R the memory model says fits (figure 5)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.rows:
            key = (row.workload["name"], row.strategy)
            entry = out.setdefault(
                key,
                {
                    "workload": row.workload["name"],
                    "strategy": row.strategy,
                    "largest_measured": None,
                    "smallest_memory_bound": None,
                    "largest_that_fits": row.memory.get("largest_tenants_that_fit"),
                },
            )
            if row.status == "ok":
                entry["largest_measured"] = max(entry["largest_measured"] or 0, row.tenants)
            elif row.status == "memory_bound" and (
                entry["smallest_memory_bound"] is None or row.tenants < entry["smallest_memory_bound"]
            ):
                entry["smallest_memory_bound"] = row.tenants
        return list(out.values())

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data: spec, device, ceiling, one row per (workload, R, strategy), table 1 and
        the largest R per strategy (docs/tenancy.md describes every field)."""
        rows = [r.as_dict() for r in self.rows]
        return {
            "format": 1,
            "spec": self.spec.as_dict(),
            "device": self.device,
            "ceiling": self.ceiling if self.ceiling is not None else ceiling_summary(self.ceiling_runs),
            "rows": rows,
            "table1": table1(rows),
            "largest_tenants": self.largest_tenants(),
            "notes": list(self.notes),
            "elapsed_s": self.elapsed_s,
        }


def device_description(found: FoundDevice) -> dict[str, Any]:
    """What the rows were measured on."""
    limits = found.limits
    return {
        "identity": found.identity,
        "name": limits.name,
        "platform": limits.platform,
        "platform_version": limits.platform_version,
        "driver_version": limits.driver_version,
        "device_type": limits.device_type,
        "compute_units": limits.compute_units,
        "global_mem_size": limits.global_mem_size,
        "max_mem_alloc_size": limits.max_mem_alloc_size,
        "preferred_vector_width_float": limits.preferred_vector_width_float,
        "runtime": runtime_environment(),
    }


class _Clock:
    """The sweep's progress: each (workload, R) a share in proportion to R."""

    def __init__(self, progress: Progress, units: Sequence[tuple[str, int]]) -> None:
        self.progress = progress
        self.total = float(sum(r + 1 for _, r in units)) or 1.0
        self.done = 0.0
        self.unit = 0.0

    def begin(self, tenants: int) -> None:
        self.unit = float(tenants + 1)

    def report(self, fraction_of_unit: float, message: str, force: bool = False) -> None:
        if force or self.progress.due():
            self.progress(min(1.0, (self.done + self.unit * fraction_of_unit) / self.total), message)

    def end(self) -> None:
        self.done += self.unit


def _fail_for(error: BaseException) -> tuple[str, str]:
    """A row's status and message for an error while setting up or stepping a strategy."""
    if isinstance(error, MemoryBound):
        return "memory_bound", str(error)
    if isinstance(error, cl.Error) and is_memory_error(error):
        return "memory_bound", f"the driver refused: {error}"
    if isinstance(error, ImportError):
        return "unsupported", f"not installed: {error}"
    return "error", f"{type(error).__name__}: {error}"


_HANDLED = (MemoryBound, cl.Error, BackendError, GraphError, ImportError, ValueError, RuntimeError)


_CEILING = ""  # the ceiling's place in a round's rotation (no strategy has an empty name)


def _interleave(
    strategies: dict[str, SharingStrategy],
    rows: dict[str, SharingRow],
    spec: SharingSpec,
    clock: _Clock,
    label: str,
    ceiling: CeilingProcess | None = None,
) -> None:
    """Warm-up and timed rounds, one step of every strategy (and of the ceiling) per round in a
    rotating order."""
    names = list(strategies) + ([_CEILING] if ceiling is not None else [])
    total = spec.warmup + spec.runs
    tenants = max((s.tenants for s in strategies.values()), default=1)
    for rnd in range(total):
        for i in rotated(len(names), rnd) if names else []:
            name = names[i]
            if name == _CEILING and ceiling is not None and not ceiling.run.error:
                try:
                    ceiling.step(rnd, keep=rnd >= spec.warmup)
                except (RuntimeError, OSError, ValueError) as e:  # context: never a reason to lose the rows
                    ceiling.run.error = f"{type(e).__name__}: {e}"
                continue
            if name not in strategies:
                continue
            try:
                sample = strategies[name].step(rnd % tenants)
            except _HANDLED as e:
                rows[name].fail(*_fail_for(e))
                strategies.pop(name).release()
                continue
            if rnd >= spec.warmup:
                rows[name].add(sample.makespan_ms, sample.latencies_ms, sample.device_ms)
            phase = "warm-up" if rnd < spec.warmup else "timed round"
            done = rnd + 1 if rnd < spec.warmup else rnd + 1 - spec.warmup
            clock.report(
                0.2 + 0.8 * (rnd + 1) / total,
                f"{label}: {phase} {done}/{spec.warmup if rnd < spec.warmup else spec.runs}",
            )


def _release_all(strategies: dict[str, SharingStrategy]) -> None:
    for strategy in strategies.values():
        strategy.release()
    strategies.clear()


def _budget_rows(
    rows: dict[str, SharingRow], budget: MemoryBudget, footprint: Callable[[str], Any], tenants: int
) -> list[str]:
    """Fill each row's memory part; the strategies that fit."""
    fits = []
    for name, row in rows.items():
        if row.status != "ok":
            continue
        fp = footprint(name)
        row.memory = budget.as_dict(fp, tenants)
        try:
            budget.check(fp, tenants, name)
        except MemoryBound as e:
            row.fail("memory_bound", str(e))
            continue
        fits.append(name)
    return fits


def _start_ceiling(shape: GemmShape, tenants: int, spec: SharingSpec) -> tuple[CeilingProcess | None, CeilingRun]:
    """The ceiling's process on these tenants' operands, or the run that says why there is none."""
    try:
        return CeilingProcess(shape.m, shape.n, shape.k, tenants, spec.seed), CeilingRun(
            shape.m, shape.n, shape.k, tenants
        )
    except (RuntimeError, OSError, ValueError) as e:
        return None, CeilingRun(shape.m, shape.n, shape.k, tenants, error=f"{type(e).__name__}: {e}")


def pair_with_ceiling(rows: Sequence[SharingRow], run: CeilingRun) -> None:
    """Each measured row's GFLOP/s over the ceiling's, paired by round (both sides whole)."""
    ceiling = run.gflops_samples()
    for row in rows:
        if row.status != "ok" or not row.makespan_ms or len(row.makespan_ms) != len(ceiling):
            continue
        flops = float(row.workload["flops"]) * row.served_per_step
        mine = [flops / (ms * 1e6) for ms in row.makespan_ms]
        if all(g > 0 for g in mine) and all(g > 0 for g in ceiling):
            row.of_ceiling = paired_ratio(mine, ceiling).as_dict()


def _measure_gemm(
    found: FoundDevice, shape: GemmShape, tenants: int, spec: SharingSpec, clock: _Clock
) -> tuple[list[SharingRow], CeilingRun | None]:
    """Every strategy at one R on one SGEMM shape, and the ceiling measured between them."""
    workload = {"kind": "sgemm", "name": shape.name, "m": shape.m, "n": shape.n, "k": shape.k, "flops": shape.flops}
    # a network-only strategy gets no SGEMM row at all (the sweep's notes say so once)
    rows = {s: SharingRow(workload, tenants, s) for s in spec.strategies if s in GEMM_STRATEGIES}
    budget = MemoryBudget.for_device(found.limits, spec.memory_cap_bytes)
    fits = _budget_rows(rows, budget, lambda s: gemm_footprint(s, shape, tenants), tenants)
    if not fits:
        return list(rows.values()), None
    label = f"{shape.name} R={tenants}"
    clock.report(0.0, f"{label}: setting up", force=True)
    strategies: dict[str, SharingStrategy] = {}
    shared: SharedOperands | None = None
    ceiling: CeilingProcess | None = None
    run: CeilingRun | None = None
    try:
        try:
            shared = SharedOperands(found, shape, tenants, spec.seed)
        except _HANDLED as e:
            for name in fits:
                rows[name].fail(*_fail_for(e))
            return list(rows.values()), None
        for name in fits:
            try:
                strategies[name] = GEMM_STRATEGIES[name](shared)
            except _HANDLED as e:
                rows[name].fail(*_fail_for(e))
        clock.report(0.1, f"{label}: checking outputs", force=True)
        references = exclusive_results(shared)
        for name, strategy in list(strategies.items()):
            row = rows[name]
            row.served_per_step = strategy.tenants
            row.launches_per_step = strategy.launches_per_step
            try:
                strategy.step(0)
                got = strategy.outputs()
            except _HANDLED as e:
                row.fail(*_fail_for(e))
                strategies.pop(name).release()
                continue
            if name == "exclusive_batched":
                row.checks = compare_with_numpy(got, [(shared.host[0][0], b) for _, b in shared.host], None)
                row.checks["tenant0_bitwise_with_exclusive"] = bool((got[0] == references[0]).all())
            elif strategy.same_kernel_as_exclusive:
                row.checks = compare_bitwise(got, references[: len(got)])
            else:
                row.checks = compare_with_numpy(got, shared.host, references)
            if name == "exclusive":
                row.checks["numpy"] = compare_with_numpy(references, shared.host, None)
        if spec.ceiling:
            ceiling, run = _start_ceiling(shape, tenants, spec)
            if ceiling is not None:
                run = ceiling.run
        _interleave(strategies, rows, spec, clock, label, ceiling)
        if run is not None and not run.error:
            pair_with_ceiling(list(rows.values()), run)
    finally:
        _release_all(strategies)
        if ceiling is not None:
            ceiling.release()
        if shared is not None:
            shared.release()
    return list(rows.values()), run


def _network_strategies(
    tenants: NetworkTenants, plan: LayerPlan, fits: list[str], rows: dict[str, SharingRow]
) -> dict[str, SharingStrategy]:
    strategies: dict[str, SharingStrategy] = {}
    # the arenas first: they re-bind the runners' activations to shared regions that every
    # strategy then uses (the same memory, each tenant's own region)
    if any(s.startswith("space_time") for s in fits):
        try:
            tenants.arenas()
        except _HANDLED as e:  # the runners may be half re-bound: no strategy may use them
            for name in fits:
                rows[name].fail(*_fail_for(e))
            return strategies
    for name in fits:
        try:
            strategies[name] = build_network_strategy(name, tenants, plan)
        except _HANDLED as e:
            rows[name].fail(*_fail_for(e))
    return strategies


def _measure_network(
    found: FoundDevice, name: str, graph: Graph, tenants: int, spec: SharingSpec, clock: _Clock
) -> list[SharingRow]:
    """Every strategy at one R on one network."""
    label = f"{name} R={tenants}"
    clock.report(0.0, f"{label}: setting up", force=True)
    workload: dict[str, Any] = {"kind": "network", "name": name}
    rows = {s: SharingRow(workload, tenants, s) for s in spec.strategies}
    for s, row in rows.items():
        if s not in NETWORK_STRATEGIES:
            row.fail("unsupported", f"{s} is for SGEMM workloads; networks run {list(NETWORK_STRATEGIES)}")
    try:
        first = GraphRunner(found, graph, weight_seed=spec.seed)
    except _HANDLED as e:
        for row in rows.values():
            if row.status == "ok":
                row.fail(*_fail_for(e))
        return list(rows.values())
    strategies: dict[str, SharingStrategy] = {}
    owner: NetworkTenants | None = None
    try:
        workload.update(flops=first.graph.flops, steps=len(first.launches))
        plan = plan_layers(first)
        align = base_alignment(found.device)
        budget = MemoryBudget.for_device(found.limits, spec.memory_cap_bytes)
        fits = _budget_rows(rows, budget, lambda s: network_footprint(s, first, plan, align, tenants), tenants)
        if not fits:
            return list(rows.values())
        needs_all = any(s in fits for s in ("time_only", "space_only", "space_time"))
        try:
            owner = NetworkTenants(found, first, tenants, spec.seed, runners=None if needs_all else 1)
        except _HANDLED as e:  # it released the runners it built, the first one too
            for s in fits:
                rows[s].fail(*_fail_for(e))
            return list(rows.values())
        strategies = _network_strategies(owner, plan, fits, rows)
        clock.report(0.1, f"{label}: checking outputs", force=True)
        references = owner.exclusive_results()
        batched_refs = batched_references(owner) if "exclusive_batched" in strategies else []
        details = plan.as_dict(step_flops(first))
        for s, strategy in list(strategies.items()):
            row = rows[s]
            row.served_per_step = strategy.tenants
            row.launches_per_step = strategy.launches_per_step
            if isinstance(strategy, NetSpaceTime):  # with the steps that ran per tenant after all, and why
                row.network = {**details, "fallbacks": {str(k): why for k, why in strategy.fallbacks.items()}}
            try:
                strategy.step(0)
                got = strategy.outputs()
            except _HANDLED as e:
                row.fail(*_fail_for(e))
                strategies.pop(s).release()
                continue
            if s == "exclusive_batched":
                row.checks = compare_within(
                    got, batched_refs, NETWORK_TOLERANCE, "tenant 0's network alone on each input"
                )
            elif strategy.same_kernel_as_exclusive:
                row.checks = compare_bitwise(got, references[: len(got)])
            else:
                row.checks = compare_within(got, references, NETWORK_TOLERANCE, "exclusive")
        _interleave(strategies, rows, spec, clock, label)
    finally:
        _release_all(strategies)
        if owner is not None:
            owner.release()
        else:
            first.release()  # releasing twice is harmless: a released runner owns nothing
    return list(rows.values())


def _resolve(spec: SharingSpec, graphs: Mapping[str, Graph] | None) -> list[tuple[str, Graph]]:
    from devicelab.graph import zoo

    out = []
    for name in spec.networks:
        if graphs is not None and name in graphs:
            out.append((name, graphs[name]))
        else:
            out.append((name, zoo.build(name)))
    return out


def run_sharing_sweep(
    found: FoundDevice,
    spec: SharingSpec,
    progress: ReportFn | None = None,
    graphs: Mapping[str, Graph] | None = None,
) -> SharingResult:
    """Run the sweep (see the module docstring). ``progress(fraction, message)`` is called along
    the way and may raise to stop it (the exception propagates once every buffer is freed);
    ``graphs`` supplies networks by name (else ``spec.networks`` are zoo names)."""
    t0 = time.perf_counter()
    reporter = Progress(progress)
    networks = _resolve(spec, graphs)
    shapes = [GemmShape(*s) for s in spec.shapes]
    units = [(s.name, r) for s in shapes for r in spec.tenants] + [(n, r) for n, _ in networks for r in spec.tenants]
    clock = _Clock(reporter, units)
    result = SharingResult(spec, device_description(found))
    for shape in shapes:
        for r in spec.tenants:
            clock.begin(r)
            rows, run = _measure_gemm(found, shape, r, spec, clock)
            result.rows.extend(rows)
            if run is not None:
                result.ceiling_runs.append(run)
            clock.end()
    network_only = [s for s in spec.strategies if s not in GEMM_STRATEGIES]
    if shapes and network_only:
        result.notes.append(f"{', '.join(network_only)}: for networks only, no rows for the SGEMM shapes")
    for name, graph in networks:
        for r in spec.tenants:
            clock.begin(r)
            result.rows.extend(_measure_network(found, name, graph, r, spec, clock))
            clock.end()
    if found.limits.device_type == "cpu":
        result.notes.append(
            "the device is a CPU driver: its global memory is host memory it declares, not a separate card; "
            "the memory budget is that declared size"
        )
    result.elapsed_s = time.perf_counter() - t0
    reporter(1.0, "done")
    return result


__all__ = [
    "DEFAULT_STRATEGIES",
    "DEFAULT_TENANTS",
    "PAPER_SHAPES",
    "STRATEGIES",
    "SharingResult",
    "SharingSpec",
    "run_sharing_sweep",
]
