"""Fusion experiments on a registered device: what a worker calls for a fusion sweep or plan.

A worker knows its devices as ``DeviceInfo``; these functions find the OpenCL device behind one,
check the request, and run the experiment with the job's progress callback (which may raise to
stop it). Progress is split: loading the networks first, measuring after.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from devicelab.backends.base import DeviceInfo
from devicelab.fusion.results import FusionPlanRecord, FusionSweepRecord
from devicelab.fusion.spec import OPENCL, PRECISIONS, PlanOptions
from devicelab.graph.ir import Graph
from devicelab.measure.harness import ReportFn

# The share of a sweep's progress bar that loading the networks takes.
LOAD_SHARE = 0.1


def unique_names(graphs: Sequence[Graph]) -> list[Graph]:
    """The graphs with distinct names: a second copy of a network becomes ``name#2`` (figure 11
    runs two MobileNet-V2 together)."""
    seen: dict[str, int] = {}
    out = []
    for graph in graphs:
        seen[graph.name] = seen.get(graph.name, 0) + 1
        if seen[graph.name] > 1:
            graph = dataclasses.replace(graph, name=f"{graph.name}#{seen[graph.name]}")
        out.append(graph)
    return out


def _scaled(progress: ReportFn | None, start: float, end: float) -> ReportFn | None:
    if progress is None:
        return None

    def report(fraction: float, message: str) -> None:
        progress(start + (end - start) * fraction, message)

    return report


def _opencl_device(info: DeviceInfo, precision: str) -> Any:
    from devicelab.backends.opencl import devices

    if info.kind != OPENCL:
        raise ValueError(f"fusion experiments run on OpenCL devices; {info.name!r} is a {info.kind} device")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    return devices.find_device(info.identity)


def sweep_on_device(
    info: DeviceInfo,
    graphs: Sequence[Graph],
    spec: Mapping[str, Any],
    precision: str = "fp32",
    progress: ReportFn | None = None,
) -> FusionSweepRecord:
    """Load ``graphs`` on the device and run a fusion sweep with ``spec`` (``SweepSpec``'s fields);
    the result as it crosses to the server (read from ``SweepResult.as_dict()``, so what is
    stored is exactly what crossed)."""
    from devicelab.fusion.pool import load_pool
    from devicelab.fusion.sweep import run_sweep

    sweep_spec = spec_from_json(spec)
    found = _opencl_device(info, precision)
    with load_pool(found, unique_names(graphs), precision, _scaled(progress, 0.0, LOAD_SHARE)) as pool:
        result = run_sweep(pool, sweep_spec, _scaled(progress, LOAD_SHARE, 1.0))
    return FusionSweepRecord.from_dict(result.as_dict())


def plan_on_device(
    info: DeviceInfo,
    graphs: Sequence[Graph],
    options: Mapping[str, Any],
    sweep_rows: Sequence[Mapping[str, Any]] | None = None,
    precision: str = "fp32",
    progress: ReportFn | None = None,
) -> FusionPlanRecord:
    """Plan fusion for ``graphs`` run together and compare sequential, the plan and fusing
    everything possible (``plan_run.compare_plan``); the comparison as it crosses to the server."""
    from devicelab.fusion.plan_run import compare_plan

    found = _opencl_device(info, precision)
    comparison = compare_plan(
        found,
        unique_names(graphs),
        sweep_rows=sweep_rows,
        progress=progress,
        precision=precision,
        **PlanOptions.from_dict(options).as_dict(),
    )
    return FusionPlanRecord.from_dict(comparison.as_dict())


def spec_from_json(spec: Mapping[str, Any]) -> Any:
    """A ``SweepSpec`` from its JSON form, checked by its declaration: ``ValueError`` for an
    unknown field or a value that cannot run (``devicelab.spec.SpecError`` naming the field)."""
    from devicelab.fusion.sweep import SweepSpec

    return SweepSpec.from_dict(spec)
