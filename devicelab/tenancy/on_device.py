"""A sharing sweep on a registered device: what a worker calls for a job of kind ``sharing_sweep``.

A worker knows its devices as ``DeviceInfo``; ``sharing_on_device`` finds the OpenCL device behind
one and runs the sweep with the job's progress callback (which may raise to stop it).

It runs the sweep one unit, one (workload, R), at a time through ``run_sharing_sweep``, which
measures each unit on its own anyway (every strategy of a unit interleaved round by round, nothing
shared between units), so the rows are those of one call with the whole spec. Units are what make a
time budget possible: when the budget runs out, the unit under way is stopped through its progress
callback (the sweep frees every buffer, context and thread before the stop propagates) and dropped
whole, the units not started are listed as ``not_measured``, and the units measured are kept.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from devicelab.backends.base import DeviceInfo
from devicelab.graph.ir import Graph
from devicelab.measure.harness import ReportFn
from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.results import SharingSweepRecord
from devicelab.tenancy.sweep import SharingResult, SharingSpec, device_description, run_sharing_sweep

OPENCL = "opencl"


class BudgetSpent(Exception):
    """The sweep's time budget ran out during a unit: stop it (raised from the progress callback)."""


@dataclass(frozen=True)
class Unit:
    """One workload at one R, as a spec of its own."""

    workload: str
    tenants: int
    spec: SharingSpec

    @property
    def weight(self) -> float:
        """Its share of the progress bar: set-up and steps grow with R (as the sweep's own clock)."""
        return float(self.tenants + 1)


def sweep_units(spec: SharingSpec) -> list[Unit]:
    """The sweep's units in the order ``run_sharing_sweep`` measures them: every SGEMM shape at
    every R, then every network at every R."""

    def one(shapes: tuple[tuple[int, int, int], ...], networks: tuple[str, ...], r: int) -> SharingSpec:
        # each SGEMM unit measures its own ceiling, interleaved with its strategies (tenancy.ceiling)
        return replace(spec, shapes=shapes, networks=networks, tenants=(r,))

    units = [Unit(GemmShape(*shape).name, r, one((shape,), (), r)) for shape in spec.shapes for r in spec.tenants]
    units += [Unit(name, r, one((), (name,), r)) for name in spec.networks for r in spec.tenants]
    return units


def _opencl_device(info: DeviceInfo) -> Any:
    from devicelab.backends.opencl import devices

    if info.kind != OPENCL:
        raise ValueError(f"sharing sweeps run on OpenCL devices; {info.name!r} is a {info.kind} device")
    return devices.find_device(info.identity)


def _unit_progress(progress: ReportFn | None, start: float, end: float, deadline: float | None) -> ReportFn:
    """A unit's progress callback: its fractions mapped to ``start`` .. ``end`` of the job's bar,
    and ``BudgetSpent`` once the deadline has passed (except at the unit's end: it is complete)."""

    def report(fraction: float, message: str) -> None:
        if deadline is not None and fraction < 1.0 and time.monotonic() >= deadline:
            raise BudgetSpent(message)
        if progress is not None:
            progress(start + (end - start) * fraction, message)

    return report


def sharing_on_device(
    info: DeviceInfo,
    spec_dict: Mapping[str, Any],
    progress: ReportFn | None = None,
    time_budget_s: float | None = None,
    graphs: Mapping[str, Graph] | None = None,
) -> SharingSweepRecord:
    """Run a sharing sweep with ``spec_dict`` (``SharingSpec.as_dict()``'s fields) on the device
    ``info`` names, within ``time_budget_s`` seconds when given; the record of
    ``SharingResult.as_dict()`` with ``time_budget_s``, ``complete`` and ``not_measured``
    (``[{workload, tenants}]``) beside.
    ``graphs`` supplies networks by name (else the spec's networks are zoo names)."""
    from devicelab.graph import zoo

    t0 = time.perf_counter()
    deadline = None if time_budget_s is None else time.monotonic() + float(time_budget_s)
    spec = SharingSpec.from_dict(spec_dict)
    found = _opencl_device(info)
    # built once: every unit of a network runs the same graph
    networks = {name: graphs[name] if graphs and name in graphs else zoo.build(name) for name in spec.networks}
    result = SharingResult(spec, device_description(found))
    units = sweep_units(spec)
    total = sum(u.weight for u in units) or 1.0
    done = 0.0
    not_measured: list[Unit] = []
    for unit in units:
        if not_measured or (deadline is not None and time.monotonic() >= deadline):
            not_measured.append(unit)
            continue
        report = _unit_progress(progress, done / total, (done + unit.weight) / total, deadline)
        try:
            part = run_sharing_sweep(found, unit.spec, report, networks)
        except BudgetSpent:
            not_measured.append(unit)
            continue
        result.rows.extend(part.rows)
        result.ceiling_runs.extend(part.ceiling_runs)
        result.notes.extend(n for n in part.notes if n not in result.notes)
        done += unit.weight
    if not_measured:
        first = not_measured[0]
        result.notes.append(
            f"the time budget of {time_budget_s:.0f} s ran out: {len(not_measured)} of {len(units)} "
            f"(workload, R) units were not measured, from {first.workload} at R = {first.tenants} on"
        )
    result.elapsed_s = time.perf_counter() - t0
    out = result.as_dict()
    out["time_budget_s"] = time_budget_s
    out["complete"] = not not_measured
    out["not_measured"] = [{"workload": u.workload, "tenants": u.tenants} for u in not_measured]
    if progress is not None:
        progress(1.0, "done")
    return SharingSweepRecord.from_dict(out)


__all__ = ["BudgetSpent", "Unit", "sharing_on_device", "sweep_units"]
