"""The page of an online-scheduling run (job kind ``online_schedule``): live progress while it
runs, then the units it set (t1, the target, the window, the offered load) and every policy on
the same trace: attainment, throughput, goodput, p50/p99 latency, space-time's batch size."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from dashboard.access import team_page
from dashboard.job_pages import render_kind_page, result_url
from server.profiling.models import JobKind, ProfilingJob
from server.tenancy.models import OnlineRunResult
from server.tenancy.summary import strategy_label

_SPEC_LABELS = (
    ("tenants", "R"),
    ("load", "load (x 1/t1)"),
    ("duration_s", "seconds of arrivals"),
    ("target_factor", "target (x t1)"),
    ("window_factor", "window (x t1)"),
    ("seed", "seed"),
)


def _context(job: ProfilingJob) -> dict[str, Any]:
    run = OnlineRunResult.objects.filter(job=job).first()
    spec = run.spec if run is not None else (job.settings or {}).get("spec") or {}
    rows = []
    for line in run.comparison if run is not None else []:
        rows.append({**line, "label": strategy_label(str(line.get("policy")))})
    return {
        "job": job,
        "run": run,
        "workload": spec.get("workload", ""),
        "spec_items": [(label, spec[key]) for key, label in _SPEC_LABELS if spec.get(key) is not None],
        "comparison": rows,
        "result_url": result_url(job),
    }


@require_GET
@team_page
def online_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One online-scheduling run: live progress while active, then every policy on its trace."""
    return render_kind_page(request, pk, JobKind.ONLINE_SCHEDULE, "dashboard/sharing_online.html", _context)


@require_GET
@team_page
def online_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The result part of a run's page alone: swapped in when a watched run finishes."""
    return render_kind_page(request, pk, JobKind.ONLINE_SCHEDULE, "dashboard/sharing_online_result.html", _context)


__all__ = ["online_detail", "online_result"]
