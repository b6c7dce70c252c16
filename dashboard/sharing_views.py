"""The sharing pages: a team's sharing sweeps, and one sweep drawn as seed 003's figures 3-5 and 7
with its table 1 beside the paper's.

A sharing sweep is a job (``ProfilingJob`` of kind ``sharing_sweep``): while it is queued or
running its page shows the live progress bar, and when it finishes the result part is swapped in
(``sweep_result``, as the fusion pages do). The figures show one workload at a time (``?workload=``,
the first by default); the row table shows that workload's rows, or all (``?workload=all``), of one
strategy or all (``?strategy=``). Reads go through ``server.tenancy.summary``, charts through
``sharing_figures``. Another team's job answers 404, as everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import sharing_figures as charts
from dashboard.access import team_page
from dashboard.formatting import size
from dashboard.job_pages import page_url, render_kind_page, result_url
from dashboard.sharing_tables import sharing_rows_html
from server.profiling.models import JobKind, ProfilingJob
from server.tenancy import summary
from server.tenancy.models import SharingSweepResult

JOBS_PER_PAGE = 50
ALL_WORKLOADS = "all"


def _stored(job: ProfilingJob) -> SharingSweepResult | None:
    """The job's stored sweep (the reverse one-to-one), None before it is stored."""
    try:
        sweep: SharingSweepResult = job.sharing_sweep  # type: ignore[attr-defined]
    except ObjectDoesNotExist:
        return None
    return sweep


def _spec(job: ProfilingJob, sweep: SharingSweepResult | None) -> dict[str, Any]:
    """What the worker ran once stored, what was asked before."""
    if sweep is not None and sweep.spec:
        return dict(sweep.spec)
    return dict((job.settings or {}).get("spec") or {})


def workloads_of(job: ProfilingJob, sweep: SharingSweepResult | None = None) -> list[str]:
    """The workloads a sharing sweep measures: SGEMM shapes as MxNxK, then networks."""
    if sweep is not None and sweep.workloads:
        return [str(w) for w in sweep.workloads]
    spec = _spec(job, None)
    shapes = ["x".join(str(v) for v in s) for s in spec.get("shapes") or [] if isinstance(s, list)]
    return shapes + [str(n) for n in spec.get("networks") or []]


# -- the list ----------------------------------------------------------------------------------

ONLINE_RUNS_LISTED = 20  # the newest online runs under the sweeps (each has its own page)


@dataclass(frozen=True)
class SharingListRow:
    """One sharing sweep as listed: what it measures and its table 1 headline."""

    job: ProfilingJob
    url: str
    workloads: list[str]
    tenants: list[int]
    sweep: SharingSweepResult | None
    headlines: list[summary.Headline]


@require_GET
@team_page
def sharing_list(request: HttpRequest) -> HttpResponse:
    """The team's sharing sweeps, newest first, with state, progress and table 1's geometric means;
    then its newest online-scheduling runs."""
    team = request.team  # type: ignore[attr-defined]
    jobs = (
        ProfilingJob.objects.for_team(team)
        .filter(kind=JobKind.SHARING_SWEEP)
        .select_related("device", "sharing_sweep")
        .defer("sharing_sweep__environment", "sharing_sweep__ceiling", "sharing_sweep__device")
    )
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    rows = []
    for job in page.object_list:
        sweep = _stored(job)
        rows.append(
            SharingListRow(
                job,
                page_url(job),
                workloads_of(job, sweep),
                [int(t) for t in _spec(job, sweep).get("tenants") or []],
                sweep,
                summary.headlines(sweep.table1) if sweep is not None else [],
            )
        )
    online = (
        ProfilingJob.objects.for_team(team)
        .filter(kind=JobKind.ONLINE_SCHEDULE)
        .select_related("device", "online_run")
        .defer("online_run__policies", "online_run__trace", "online_run__device")[:ONLINE_RUNS_LISTED]
    )
    return render(request, "dashboard/sharing_list.html", {"page": page, "rows": rows, "online": online})


# -- one sweep ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowFilter:
    """What a sweep's page shows (GET parameters): the figures' workload, and the table's rows
    of that workload (or all) and of one strategy (or all)."""

    workload: str  # a workload of the sweep, or ALL_WORKLOADS (the table only)
    strategy: str = ""

    @classmethod
    def from_request(cls, request: HttpRequest, workloads: list[str], strategies: list[str]) -> RowFilter:
        """The filter from ``?workload=&strategy=`` (unknown values ignored: the first workload,
        every strategy)."""
        workload = request.GET.get("workload", "")
        strategy = request.GET.get("strategy", "")
        if workload not in workloads and workload != ALL_WORKLOADS:
            workload = workloads[0] if workloads else ALL_WORKLOADS
        return cls(workload, strategy if strategy in strategies else "")

    def figures_workload(self, workloads: list[str]) -> str | None:
        """The workload the figures draw: the chosen one, or the first when the table shows all."""
        if self.workload in workloads:
            return self.workload
        return workloads[0] if workloads else None


def _spec_items(spec: dict[str, Any], time_budget_s: Any) -> list[tuple[str, str]]:
    items = []
    tenants = [str(t) for t in spec.get("tenants") or []]
    if tenants:
        items.append(("R", ", ".join(tenants)))
    strategies = spec.get("strategies") or []
    if strategies:
        items.append(("strategies", ", ".join(summary.strategy_label(str(s)) for s in strategies)))
    for key, label in (("warmup", "warm-up rounds"), ("runs", "timed rounds"), ("seed", "seed")):
        if spec.get(key) is not None:
            items.append((label, str(spec[key])))
    if spec.get("memory_cap_bytes"):
        cap = int(spec["memory_cap_bytes"])
        items.append(("memory cap", f"{size(cap)} ({cap:,} bytes)"))
    if isinstance(time_budget_s, int | float) and not isinstance(time_budget_s, bool):
        items.append(("time budget", f"{float(time_budget_s):g} s"))
    return items


def _figures(sweep: SharingSweepResult, workload: str | None) -> dict[str, Any]:
    if workload is None:
        return {"view": None, "charts": {}}
    view = summary.workload_figures(sweep, workload)
    measured = view.measured
    return {
        "view": view,
        "charts": {
            "throughput": charts.throughput_lines(view) if measured else None,
            "latency": charts.latency_lines(view) if measured else None,
            "straggler": charts.straggler_lines(view) if measured else None,
            "memory": charts.memory_lines(view) if any(s.footprints for s in view.series) else None,
        },
    }


def _sweep_context(request: HttpRequest, job: ProfilingJob) -> dict[str, Any]:
    sweep: SharingSweepResult | None = SharingSweepResult.objects.filter(job=job).first()
    workloads = workloads_of(job, sweep)
    settings = job.settings or {}
    context: dict[str, Any] = {
        "job": job,
        "sweep": sweep,
        "workloads": workloads,
        "spec_items": _spec_items(
            _spec(job, sweep), sweep.time_budget_s if sweep is not None else settings.get("time_budget_s")
        ),
        "result_url": result_url(job),
    }
    if sweep is None:
        return context
    strategies = summary.strategies_of(sweep)
    chosen = RowFilter.from_request(request, workloads, strategies)
    shown = chosen.figures_workload(workloads)
    table = summary.cells(
        sweep, workload=None if chosen.workload == ALL_WORKLOADS else chosen.workload, strategy=chosen.strategy or None
    )
    order = {w: i for i, w in enumerate(workloads)}
    table.sort(key=lambda c: (order.get(c.workload, len(order)), c.tenants, summary.strategy_sort_key(c.strategy)))
    context.update(
        {
            **_figures(sweep, shown),
            "shown_workload": shown,
            "table1": summary.table1(sweep),
            "paper_tenants": summary.PAPER_TENANTS,
            "r_range": summary.R_RANGE,
            "counts": summary.row_counts(sweep),
            "not_measured": summary.not_measured(sweep),
            "table": table,
            "table_rows": sharing_rows_html(table),
            "filter": chosen,
            "filter_strategies": [(s, summary.strategy_label(s)) for s in strategies],
            "all_workloads": ALL_WORKLOADS,
            "device_memory": (sweep.device or {}).get("global_mem_size"),
        }
    )
    return context


@require_GET
@team_page
def sweep_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One sharing sweep: live progress while active; then figure 7 (throughput against R per
    strategy, numpy's ceiling), figures 3-4 (latency p50/p99, the straggler gap), figure 5
    (memory, the device's and the largest R that fits), table 1 beside the paper's, notes, and
    its rows (``?workload=&strategy=``)."""
    return render_kind_page(
        request, pk, JobKind.SHARING_SWEEP, "dashboard/sharing_sweep.html", lambda job: _sweep_context(request, job)
    )


@require_GET
@team_page
def sweep_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The result part of a sweep's page alone: swapped in when a watched sweep finishes."""
    return render_kind_page(
        request,
        pk,
        JobKind.SHARING_SWEEP,
        "dashboard/sharing_sweep_result.html",
        lambda job: _sweep_context(request, job),
    )


__all__ = ["sharing_list", "sweep_detail", "sweep_result", "workloads_of"]
