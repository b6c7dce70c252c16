"""The fusion pages: a team's fusion sweeps and plans, one sweep drawn as seed paper 000's
figures 8 to 10, and one plan's end-to-end comparison.

A sweep or plan is a job (``ProfilingJob`` of kind ``fusion_sweep`` / ``fusion_plan``): while it
is queued or running its page shows the job page's live progress bar, and when it finishes the
result part is swapped in (``sweep_result`` / ``plan_result``, as ``job_result`` does for a
profiling job). Reads go through ``server.fusion.summary`` (sweeps) and the stored comparison
(plans), charts through ``fusion_figures``. Another team's job answers 404, as everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import fusion_figures as charts
from dashboard.access import team_page
from dashboard.fusion_paper import PAPER_DEVICE, PAPER_FIGURES, PAPER_METHOD
from dashboard.fusion_tables import TableRow, sweep_rows_html
from dashboard.job_pages import page_url, render_kind_page, result_url
from devicelab.fusion.spec import KINDS
from server.fusion import summary
from server.fusion.models import FusionMeasurement, FusionPlanResult, FusionSweepResult
from server.fusion.services import sweep_rows
from server.profiling.models import JobKind, ProfilingJob

FUSION_KINDS = (JobKind.FUSION_SWEEP, JobKind.FUSION_PLAN)
JOBS_PER_PAGE = 50
MAX_TABLE_ROWS = 500  # rows of a sweep's table shown at once; the filters narrow the rest


def _related(job: ProfilingJob, name: str) -> Any:
    """A reverse one-to-one (``fusion_sweep``, ``fusion_plan``), None where there is none."""
    try:
        return getattr(job, name)
    except ObjectDoesNotExist:
        return None


def networks_of(job: ProfilingJob) -> list[str]:
    """The networks a fusion job measures, by name: the stored result's, else what was asked."""
    stored = _related(job, "fusion_sweep") or _related(job, "fusion_plan")
    if stored is not None and stored.networks:
        return [str(n) for n in stored.networks]
    settings = job.settings or {}
    return [str(n) for n in [*(settings.get("zoo") or []), *(settings.get("model_names") or [])]]


# -- the list ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FusionListRow:
    """One fusion job as listed: what it measured and its headline number."""

    job: ProfilingJob
    url: str
    networks: list[str]
    sweep: FusionSweepResult | None
    plan: FusionPlanResult | None
    pairs: summary.Headline | None  # a sweep's rounded pairs


@require_GET
@team_page
def fusion_list(request: HttpRequest) -> HttpResponse:
    """The team's fusion sweeps and plans, newest first (``?kind=fusion_sweep|fusion_plan``)."""
    team = request.team  # type: ignore[attr-defined]
    jobs = (
        ProfilingJob.objects.for_team(team)
        .filter(kind__in=FUSION_KINDS)
        .select_related("device", "fusion_sweep", "fusion_plan")
        .defer("fusion_plan__data", "fusion_sweep__environment", "fusion_sweep__representatives")
    )
    kind = request.GET.get("kind", "")
    if kind in FUSION_KINDS:
        jobs = jobs.filter(kind=kind)
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    listed: list[ProfilingJob] = list(page.object_list)
    pairs = summary.pair_medians(j.pk for j in listed if j.kind == JobKind.FUSION_SWEEP)
    rows = [
        FusionListRow(
            job,
            page_url(job),
            networks_of(job),
            _related(job, "fusion_sweep"),
            _related(job, "fusion_plan"),
            pairs.get(job.pk),
        )
        for job in listed
    ]
    return render(
        request,
        "dashboard/fusion_list.html",
        {"page": page, "rows": rows, "kind": kind, "kinds": [(k.value, k.label) for k in FUSION_KINDS]},
    )


# -- one job -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowFilter:
    """What a sweep's table shows (GET parameters): rows holding a kind, of one size, variant,
    experiment; each empty for any."""

    kind: str = ""
    size: int | None = None
    variant: str = ""
    experiment: str = ""

    @classmethod
    def from_request(cls, request: HttpRequest) -> RowFilter:
        """The filter from ``?kind=&size=&variant=&experiment=`` (unknown values ignored)."""
        kind = request.GET.get("kind", "")
        size = request.GET.get("size", "").strip()
        variant = request.GET.get("variant", "")
        experiment = request.GET.get("experiment", "")
        return cls(
            kind=kind if kind in KINDS else "",
            size=int(size) if size.isdigit() and 0 < int(size) < 100 else None,
            variant=variant if variant in (summary.ROUNDED, summary.UNROUNDED) else "",
            experiment=experiment if experiment in ("combination", "identical") else "",
        )

    @property
    def active(self) -> bool:
        """Whether anything is filtered."""
        return bool(self.kind or self.size or self.variant or self.experiment)


def _operators_text(operators: Any) -> str:
    if not isinstance(operators, list):
        return ""
    names = [f"{op.get('model', '?')}/{op.get('name', '?')}" for op in operators if isinstance(op, dict)]
    if len(names) > 1 and len(set(names)) == 1:
        return f"{len(names)} × {names[0]}"
    return ", ".join(names)


def _table(sweep: FusionSweepResult, chosen: RowFilter) -> tuple[list[TableRow], int]:
    rows = sweep_rows(
        sweep,
        experiment=chosen.experiment or None,
        size=chosen.size,
        variant=chosen.variant or None,
        contains=[chosen.kind] if chosen.kind else None,
    )
    values = rows.values_list(
        "kinds",
        "experiment",
        "size",
        "instance",
        "variant",
        "data__operators",
        "total_mflops",
        "throughput",
        "data__ratio",
        "busy_ratio",
        "padding_fraction",
        "correct",
        "error",
    )
    table = [
        TableRow(
            " + ".join(summary.split_kinds(k)),
            e,
            s,
            i,
            v,
            _operators_text(ops),
            m,
            t,
            summary.estimate_of(ratio),
            busy,
            p,
            c,
            err,
        )
        for k, e, s, i, v, ops, m, t, ratio, busy, p, c, err in values
    ]
    # the figures' order: combinations before identical operators, by size, kinds in the paper's order
    table.sort(
        key=lambda r: (
            r.experiment != "combination",
            r.size,
            [summary.kind_sort_key(k) for k in r.kinds.split(" + ")],
            r.operators,
            r.instance,
            summary.variant_sort_key(r.variant),
        )
    )
    return table[:MAX_TABLE_ROWS], len(table)


def _spec_items(spec: dict[str, Any]) -> list[tuple[str, str]]:
    items = []
    for key, label in (
        ("sizes", "sizes"),
        ("kinds", "kinds"),
        ("representatives", "operators per kind"),
        ("instances", "draws per combination"),
        ("max_combinations", "at most"),
        ("identical_counts", "identical N"),
        ("warmup", "warm-up rounds"),
        ("runs", "timed rounds"),
        ("seed", "seed"),
        ("time_budget_s", "time budget"),
    ):
        value = spec.get(key)
        if value is None or value == []:
            continue
        if isinstance(value, list):
            text = ", ".join(str(v) for v in value)
        elif key == "time_budget_s":
            text = f"{float(value):g} s"
        else:
            text = str(value)
        items.append((label, text))
    return items


def _sweep_charts(sweep: FusionSweepResult) -> dict[str, Any]:
    matrix = summary.pair_matrix(sweep)
    triples = summary.triples(sweep)
    identical = summary.identical_series(sweep)
    points = summary.mflops_points(sweep)
    return {
        "pairs": charts.pair_heatmap(matrix) if matrix.kinds else None,
        "triples": charts.triples_distribution(triples) if triples else None,
        "identical": charts.identical_lines(identical) if identical else None,
        "mflops": charts.mflops_scatter(points) if points else None,
        "pair_counts": {v: matrix.counts(v) for v in matrix.variants},
    }


def _sweep_context(request: HttpRequest, job: ProfilingJob) -> dict[str, Any]:
    sweep: FusionSweepResult | None = FusionSweepResult.objects.filter(job=job).first()
    # what the worker ran once stored (the budget filled in), what was asked before
    spec = sweep.spec if sweep is not None and sweep.spec else (job.settings or {}).get("spec") or {}
    context: dict[str, Any] = {
        "job": job,
        "sweep": sweep,
        "networks": networks_of(job),
        "spec_items": _spec_items(spec),
        "result_url": result_url(job),
    }
    if sweep is None:
        return context
    chosen = RowFilter.from_request(request)
    table, total = _table(sweep, chosen)
    sizes = sorted(set(FusionMeasurement.objects.filter(sweep=sweep).values_list("size", flat=True)))
    context.update(
        {
            "paper": PAPER_FIGURES,
            "paper_device": PAPER_DEVICE,
            "paper_method": PAPER_METHOD,
            "headlines": summary.headlines(sweep),
            "checks": summary.check_counts(sweep),
            "charts": _sweep_charts(sweep),
            "combinations": [c for c in sweep.combinations if isinstance(c, dict)],
            "operators_per_kind": sorted(
                (sweep.operators_per_kind or {}).items(), key=lambda kv: summary.kind_sort_key(kv[0])
            ),
            "table": table,
            "table_rows": sweep_rows_html(table),
            "table_total": total,
            "table_capped": total > len(table),
            "filter": chosen,
            "filter_kinds": [k for k in KINDS if k in (sweep.operators_per_kind or {})] or list(KINDS),
            "filter_sizes": sizes,
        }
    )
    return context


@require_GET
@team_page
def sweep_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One fusion sweep: live progress while active; then its headline, figures 8a, 8b, 9 and 10,
    its notes and checks, and its rows (filtered by ``?kind=&size=&variant=&experiment=``)."""
    return render_kind_page(
        request, pk, JobKind.FUSION_SWEEP, "dashboard/fusion_sweep.html", lambda job: _sweep_context(request, job)
    )


@require_GET
@team_page
def sweep_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The result part of a sweep's page alone: swapped in when a watched sweep finishes."""
    return render_kind_page(
        request,
        pk,
        JobKind.FUSION_SWEEP,
        "dashboard/fusion_sweep_result.html",
        lambda job: _sweep_context(request, job),
    )


# -- a plan ------------------------------------------------------------------------------------


def _plan_context(job: ProfilingJob) -> dict[str, Any]:
    stored: FusionPlanResult | None = FusionPlanResult.objects.filter(job=job).first()
    settings = job.settings or {}
    sweep_id = settings.get("sweep")
    sweep_job = (
        ProfilingJob.objects.filter(team_id=job.team_id, pk=sweep_id, kind=JobKind.FUSION_SWEEP).first()
        if isinstance(sweep_id, int)
        else None
    )
    view = summary.plan_view(stored) if stored is not None else None
    return {
        "job": job,
        "plan": stored,
        "view": view,
        "networks": networks_of(job),
        "options": sorted((settings.get("options") or {}).items()),
        "sweep_job": sweep_job,
        "chart": charts.plan_comparison(view.strategies) if view is not None and view.strategies else None,
        "paper_device": PAPER_DEVICE,
        "result_url": result_url(job),
    }


@require_GET
@team_page
def plan_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One fusion plan run: live progress while active; then sequential, the plan and fuse-all
    end to end, their ratios and output checks, and the plan's steps."""
    return render_kind_page(request, pk, JobKind.FUSION_PLAN, "dashboard/fusion_plan.html", _plan_context)


@require_GET
@team_page
def plan_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The result part of a plan's page alone: swapped in when a watched plan finishes."""
    return render_kind_page(request, pk, JobKind.FUSION_PLAN, "dashboard/fusion_plan_result.html", _plan_context)


__all__ = [
    "FUSION_KINDS",
    "fusion_list",
    "networks_of",
    "plan_detail",
    "plan_result",
    "sweep_detail",
    "sweep_result",
]
