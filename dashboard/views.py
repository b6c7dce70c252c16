"""Dashboard pages: each reads through ``queries``, draws through ``figures``, acts through the
services (``upload_model``, ``submit_profiling_job``, ``cancel_job``), and renders a template.

Another team's model, job or comparison id answers 404, as in the API.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard import figures, job_pages, operator_export, queries
from dashboard.access import team_page
from dashboard.conditions import conditions
from dashboard.formatting import hardware_rows
from dashboard.forms import ModelUploadForm, SubmitJobsForm, initial_from_job
from dashboard.inference_breakdown import breakdown_figures, breakdown_of
from server.devices.models import Device, DeviceKind
from server.networks.models import ModelState, NetworkModel
from server.networks.services import UploadTooLarge, check_declared_size, operator_table_shown
from server.profiling.models import JobResult, JobState, ProfilingJob
from server.profiling.services import cancel_job, rerun_job

RECENT_JOBS = 15
JOBS_PER_PAGE = 50
MAX_PROGRESS_IDS = 200
TOP_DELTAS = 25
PARSING_REFRESH_SECONDS = 3


def _int_param(request: HttpRequest, key: str) -> int | None:
    value = request.GET.get(key, "").strip()
    return int(value) if value.isdigit() else None


# -- overview and devices ----------------------------------------------------------------------


@require_GET
@team_page
def overview(request: HttpRequest) -> HttpResponse:
    """The device fleet, queue depths, the team's recent jobs."""
    team = request.team  # type: ignore[attr-defined]
    rows = queries.fleet(team)
    return render(
        request,
        "dashboard/overview.html",
        {
            "fleet": rows,
            "fleet_counts": queries.fleet_counts(rows),
            # Lab machines and their addresses are the staff's business only.
            "lab_machines": queries.lab_machines() if request.user.is_staff else None,
            "phone_groups": queries.phone_groups([r.device for r in rows]),
            "job_counts": queries.team_job_counts(team),
            "model_count": NetworkModel.objects.for_team(team).count(),
            "recent_jobs": list(queries.job_list(team)[:RECENT_JOBS]),
        },
    )


@require_GET
@team_page
def device_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One device: hardware, queue, the team's jobs on it, latency of each model over time (a
    dataset device: its imported measurements instead)."""
    team = request.team  # type: ignore[attr-defined]
    device = get_object_or_404(Device, pk=pk)  # devices are lab-wide
    if device.kind == DeviceKind.IMPORTED:
        return _dataset_device(request, device)
    depth = queries.queue_depth(team, device)
    running = queries.running_job(device)
    series = queries.latency_history(team, device)
    chart = (
        figures.latency_over_time({s.label: [figures.LatencyPoint(*p) for p in s.points] for s in series})
        if series
        else None
    )
    # Only phones' workers record temperatures: other devices' pages skip the query.
    temperatures = queries.thermal_history(team, device) if device.kind == DeviceKind.ANDROID else []
    group = queries.same_model(device)
    return render(
        request,
        "dashboard/device.html",
        {
            "device": device,
            "hardware": hardware_rows(device.hardware or {}),
            "thermal_chart": _thermal_figure(temperatures) if temperatures else None,
            "thermal_jobs": len(temperatures),
            "same_model": group,
            "same_model_others": [d for d in [*group.measured, *group.imported] if d.pk != device.pk] if group else [],
            "depth": depth,
            "running": running if running is not None and running.team_id == team.pk else None,
            "busy_elsewhere": running is not None and running.team_id != team.pk,
            "jobs": list(queries.job_list(team).filter(device=device)[:JOBS_PER_PAGE]),
            "latency_chart": chart,
            "series_count": len(series),
        },
    )


def _dataset_device(request: HttpRequest, device: Device) -> HttpResponse:
    """A device known only from imported measurements: no worker, queue or jobs, but every
    network measured on it with its end-to-end latency and kernels."""
    group = queries.same_model(device)
    measurements = queries.imported_measurements(device)
    return render(
        request,
        "dashboard/device_dataset.html",
        {
            "device": device,
            "hardware": hardware_rows(device.hardware or {}),
            "same_model": group,
            "same_model_others": [d for d in [*group.measured, *group.imported] if d.pk != device.pk] if group else [],
            "measurements": measurements,
            "kernel_count": sum(m.kernels for m in measurements),
        },
    )


def _hottest(zones: dict[str, float]) -> tuple[str, float] | None:
    return max(zones.items(), key=lambda kv: kv[1]) if zones else None


def _battery(zones: dict[str, float]) -> float | None:
    return next((c for zone, c in sorted(zones.items()) if "battery" in zone.lower()), None)


def _thermal_figure(history: list[queries.JobTemperatures]) -> str:
    return figures.thermal_over_time(
        [
            figures.ThermalPoint(
                at=t.at,
                job_id=t.job_id,
                hottest_before=_hottest(t.before_c),
                hottest_after=_hottest(t.after_c),
                battery_before=_battery(t.before_c),
                threshold_c=t.threshold_c,
            )
            for t in history
        ]
    )


# -- models ------------------------------------------------------------------------------------


# CSRF is checked only after the size (csrf_protect below): its check reads the whole body of a
# form post, which would receive a 2 GB upload only to refuse it. Log-in comes first, so a
# refusal by size tells nobody but a signed-in user anything.
@csrf_exempt
@require_http_methods(["GET", "POST"])
@team_page
def model_list(request: HttpRequest) -> HttpResponse:
    """The team's models and the upload form (refusals shown next to the file field); an upload
    whose declared size is over the limit is refused (413) before its body is read."""
    if request.method == "POST":
        try:
            check_declared_size(request.META.get("CONTENT_LENGTH"))
        except UploadTooLarge:
            declared = int(request.META["CONTENT_LENGTH"])
            return _models_page(request, ModelUploadForm.too_large(declared), status=413)
    return _model_list(request)


@csrf_protect
def _model_list(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    posted = request.method == "POST"
    form = ModelUploadForm(request.POST if posted else None, request.FILES if posted else None)
    if request.method == "POST" and form.is_valid():
        saved = form.save(team, request.user)
        if saved is not None:
            model, created = saved
            if not created:
                messages.info(request, f"These bytes were already uploaded as {model.name} (#{model.pk}).")
            elif model.state == ModelState.PARSING:
                messages.success(request, f"Uploaded {model.name}: it is being parsed; this page shows it when ready.")
            else:
                messages.success(request, f"Uploaded {model.name}: {model.num_operators} operators.")
            return redirect("dashboard:model", pk=model.pk)
    # A refused form is shown again with 200, as Django forms are: the errors are on the page.
    return _models_page(request, form)


def _models_page(request: HttpRequest, form: ModelUploadForm, status: int = 200) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    context = {"form": form, "models": list(queries.model_list(team))}
    return render(request, "dashboard/models.html", context, status=status)


@require_GET
@team_page
def model_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One model: operator table, MACs and parameters per type, its jobs; while it is parsing, a
    note that reloads the page; once failed, the reason."""
    team = request.team  # type: ignore[attr-defined]
    # The parsed graph is read only to build a table this page shows (operator_table_shown).
    model = get_object_or_404(NetworkModel.objects.for_team(team).defer("graph"), pk=pk)
    if not model.is_ready:
        parsing = model.state == ModelState.PARSING
        context = {"model": model, "refresh_seconds": PARSING_REFRESH_SECONDS if parsing else None}
        return render(request, "dashboard/model.html", context)
    if not operator_table_shown(model):
        return render(
            request,
            "dashboard/model.html",
            {
                "model": model,
                "table_omitted": True,
                "table_max": settings.LATENCYLAB_OPERATOR_TABLE_MAX,
                "type_counts": sorted((model.summary or {}).get("op_types", {}).items(), key=lambda kv: -kv[1]),
                "jobs": list(queries.job_list(team).filter(model=model)[:JOBS_PER_PAGE]),
            },
        )
    table, types = queries.model_costs(model)
    names = [t.op_type for t in types]
    with_params = [t for t in types if t.params]
    with_params.sort(key=lambda t: -t.params)
    return render(
        request,
        "dashboard/model.html",
        {
            "model": model,
            "operators": table,
            "types": types,
            "op_types": sorted(names),
            "macs_chart": figures.macs_by_op_type(names, [t.macs for t in types], [t.count for t in types]),
            "params_chart": figures.params_by_op_type([t.op_type for t in with_params], [t.params for t in with_params])
            if with_params
            else None,
            "jobs": list(queries.job_list(team).filter(model=model)[:JOBS_PER_PAGE]),
        },
    )


# -- jobs --------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@team_page
def submit_jobs(request: HttpRequest) -> HttpResponse:
    """Pick models (the team's or the zoo's), devices and settings; one job per (model, device).
    ``?from=<job>`` starts from that job's model, device and settings; ``?model=`` and ``?device=``
    pre-select."""
    team = request.team  # type: ignore[attr-defined]
    source = _int_param(request, "from")
    source_job = queries.job_for_team(team, source) if source is not None else None
    initial: dict[str, Any] = initial_from_job(source_job) if source_job is not None else {}
    for key, field in (("model", "models"), ("device", "devices")):
        ids = [int(v) for v in request.GET.getlist(key) if v.isdigit()]
        if ids:
            initial[field] = ids
    form = SubmitJobsForm(team, request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        jobs = form.save(request.user)
        if len(jobs) == 1:
            return redirect("dashboard:job", pk=jobs[0].pk)
        if jobs:
            messages.success(request, f"Queued {len(jobs)} jobs: " + ", ".join(f"#{j.pk}" for j in jobs) + ".")
            return redirect("dashboard:jobs")
    offline = Device.objects.offline().exclude(kind=DeviceKind.IMPORTED).count()  # dataset devices never run jobs
    return render(request, "dashboard/submit.html", {"form": form, "offline_devices": offline})


@require_GET
@team_page
def job_list(request: HttpRequest) -> HttpResponse:
    """The team's jobs, newest first, filterable by state, model and device."""
    team = request.team  # type: ignore[attr-defined]
    jobs = queries.job_list(team)
    state = request.GET.get("state", "")
    if state in JobState.values:
        jobs = jobs.filter(state=state)
    for key in ("model", "device"):
        value = _int_param(request, key)
        if value is not None:
            jobs = jobs.filter(**{f"{key}_id": value})
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "dashboard/jobs.html",
        {"page": page, "state": state, "states": JobState.choices, "query": query.urlencode()},
    )


def _job_figures(result: JobResult, breakdown: queries.Breakdown) -> dict[str, str | None]:
    timed = [r for r in breakdown.rows if r.timed]
    points = [figures.OperatorPoint(r.position, r.name, r.op_type, r.ms or 0.0) for r in timed]
    top = [figures.OperatorPoint(r.position, r.name, r.op_type, r.ms or 0.0) for r in breakdown.top]
    return {
        "histogram": figures.samples_histogram(result.samples_ms, result.e2e_median, result.e2e_p90)
        if result.samples_ms and result.e2e_median is not None and result.e2e_p90 is not None
        else None,
        "cold": figures.cold_vs_warm(
            result.load_ms,
            result.first_run_ms,
            result.e2e_central,
            "median" if result.e2e_median is not None else "mean",
        ),
        "by_type": figures.time_by_op_type(
            [t.op_type for t in breakdown.by_type],
            [t.total_ms for t in breakdown.by_type],
            [t.count for t in breakdown.by_type],
        )
        if breakdown.by_type
        else None,
        "per_op": figures.time_per_operator(points) if points else None,
        "top": figures.top_operators(top) if top else None,
    }


def _job_result_context(team: Any, job: ProfilingJob) -> dict[str, Any]:
    result = queries.result_of(job)
    if result is None:
        return {"job": job, "result": None}
    breakdown = queries.operator_breakdown(result)
    others = [j for j in queries.comparable_jobs(team, limit=100) if j.pk != job.pk]
    stages = breakdown_of(result)
    return {
        "job": job,
        "result": result,
        "ops": breakdown,
        "stages": stages,
        "charts": {**_job_figures(result, breakdown), **breakdown_figures(result, stages)},
        "conditions": conditions(result.environment),
        "compare_with": others,
    }


@require_GET
@team_page
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One job: live progress while active; then statistics, histogram, cold start, operators."""
    team = request.team  # type: ignore[attr-defined]
    job = queries.job_for_team(team, pk)
    if job is None:
        raise Http404("no such job in your team")
    if job_pages.has_page(job):  # a fusion sweep or plan, a sharing sweep: its kind's own page
        return redirect(job_pages.page_url(job))
    return render(request, "dashboard/job.html", _job_result_context(team, job))


@require_GET
@team_page
def job_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The result part of the job page alone: swapped in when a watched job finishes."""
    team = request.team  # type: ignore[attr-defined]
    job = queries.job_for_team(team, pk)
    if job is None:
        raise Http404("no such job in your team")
    if job_pages.has_page(job):
        return redirect(job_pages.result_url(job))
    return render(request, "dashboard/_job_result.html", _job_result_context(team, job))


@require_GET
@team_page
def job_progress(request: HttpRequest) -> JsonResponse:
    """``?ids=1,2,3`` -> state and progress of those of the team's jobs, for the live bars."""
    team = request.team  # type: ignore[attr-defined]
    raw = request.GET.get("ids", "")
    ids = [int(x) for x in raw.split(",") if x.strip().isdigit()][:MAX_PROGRESS_IDS]
    return JsonResponse({"jobs": queries.progress_of(team, ids) if ids else []})


@require_POST
@team_page
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a queued or running job of the team."""
    team = request.team  # type: ignore[attr-defined]
    job = get_object_or_404(ProfilingJob.objects.for_team(team), pk=pk)
    if cancel_job(job, user=request.user):
        messages.success(request, f"Job #{job.pk} cancelled.")
    else:
        messages.warning(request, f"Job #{job.pk} already {job.state}; only queued or running jobs can be cancelled.")
    return redirect("dashboard:job", pk=job.pk)


@require_POST
@team_page
def job_rerun(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue a finished job again: same model, device and settings (``rerun_job``); a refusal (the
    device is offline, the settings are no longer offered) is shown on the job's page."""
    team = request.team  # type: ignore[attr-defined]
    job = queries.job_for_team(team, pk)
    if job is None:
        raise Http404("no such job in your team")
    try:
        again = rerun_job(job, user=request.user)
    except ValidationError as exc:
        messages.error(request, f"Job #{job.pk} was not run again: " + " ".join(exc.messages))
        return redirect("dashboard:job", pk=job.pk)
    messages.success(request, f"Queued job #{again.pk}: the same model, device and settings as job #{job.pk}.")
    return redirect("dashboard:job", pk=again.pk)


def _job_operators(request: HttpRequest, pk: int) -> tuple[ProfilingJob, queries.Breakdown]:
    """The team's job ``pk`` and its operator breakdown; 404 for another team's job or one without a result."""
    job = queries.job_for_team(request.team, pk)  # type: ignore[attr-defined]
    if job is None:
        raise Http404("no such job in your team")
    result = queries.result_of(job)
    if result is None:
        raise Http404(f"job #{job.pk} has no result ({job.state}): no operator table to download")
    return job, queries.operator_breakdown(result)


@require_GET
@team_page
def job_operators_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """The job's operator table as CSV (units in the column names)."""
    job, breakdown = _job_operators(request, pk)
    response = HttpResponse(operator_export.operators_csv(breakdown), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="job-{job.pk}-operators.csv"'
    return response


@require_GET
@team_page
def job_operators_json(request: HttpRequest, pk: int) -> JsonResponse:
    """The job's operator table as JSON: the job, what each column holds, and the rows."""
    job, breakdown = _job_operators(request, pk)
    response = JsonResponse(operator_export.operators_document(job, breakdown), json_dumps_params={"indent": 1})
    response["Content-Disposition"] = f'attachment; filename="job-{job.pk}-operators.json"'
    return response


# -- comparison --------------------------------------------------------------------------------


def _label(job: ProfilingJob) -> str:
    return f"#{job.pk} {job.title} on {job.device.name}"


@require_GET
@team_page
def compare(request: HttpRequest) -> HttpResponse:
    """Two of the team's jobs side by side, with per-type and per-operator deltas."""
    team = request.team  # type: ignore[attr-defined]
    a_id, b_id = _int_param(request, "a"), _int_param(request, "b")
    context: dict[str, Any] = {"choices": list(queries.comparable_jobs(team)), "a_id": a_id, "b_id": b_id}
    if a_id is None or b_id is None:
        return render(request, "dashboard/compare.html", context)
    a_job, b_job = queries.job_for_team(team, a_id), queries.job_for_team(team, b_id)
    if a_job is None or b_job is None:
        raise Http404("no such job in your team")
    a_res, b_res = queries.result_of(a_job), queries.result_of(b_job)
    context.update({"a_job": a_job, "b_job": b_job})
    if a_res is None or b_res is None:
        context["not_ready"] = [j for j, r in ((a_job, a_res), (b_job, b_res)) if r is None]
        return render(request, "dashboard/compare.html", context)
    a_ops, b_ops = queries.operator_breakdown(a_res), queries.operator_breakdown(b_res)
    comparison = queries.compare(a_job, a_ops, b_job, b_ops)
    a_label, b_label = f"A: {_label(a_job)}", f"B: {_label(b_job)}"
    top = [d for d in comparison.ops if d.delta is not None][:TOP_DELTAS]
    context.update(
        {
            "a": a_res,
            "b": b_res,
            "cmp": comparison,
            "e2e_delta": b_res.e2e_central - a_res.e2e_central,
            "e2e_ratio": b_res.e2e_central / a_res.e2e_central if a_res.e2e_central else None,
            "swap_url": reverse("dashboard:compare") + f"?a={b_job.pk}&b={a_job.pk}",
            "by_type_chart": figures.compare_by_op_type(
                [t.op_type for t in comparison.by_type],
                [t.a_ms for t in comparison.by_type],
                [t.b_ms for t in comparison.by_type],
                "A",
                "B",
            ),
            "delta_chart": figures.operator_deltas(
                [d.label for d in top], [d.op_type for d in top], [d.delta or 0.0 for d in top]
            )
            if top
            else None,
            "hist_chart": figures.compare_histograms(a_res.samples_ms, b_res.samples_ms, "A", "B")
            if a_res.samples_ms or b_res.samples_ms
            else None,
            "a_label": a_label,
            "b_label": b_label,
        }
    )
    return render(request, "dashboard/compare.html", context)
