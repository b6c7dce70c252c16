"""The list of a team's remote runs (``/remote/``), and the page of one remote run: where a request's time goes under each network profile (stacked
bars of the medians: upload, the server's stages, download), each profile's end-to-end times as a
box, and the table of medians.

A remote run is a job (``ProfilingJob`` of kind ``remote_scenario``): while it is queued or
running its page shows the live progress bar, and when it finishes the result part is swapped in
(``run_result``, as the sharing pages do). Reads go through ``server.remote.services``, charts
through ``remote_figures``. Another team's job answers 404, as everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import remote_figures as charts
from dashboard.access import team_page
from dashboard.job_pages import page_url, render_kind_page, result_url
from server.profiling.models import JobKind, ProfilingJob
from server.remote.models import RemoteProfileSummary, RemoteScenarioResult
from server.remote.services import profile_summaries, stored_run


@dataclass(frozen=True)
class ProfileRow:
    """One profile in the page's table: its summary, and where its profile came from."""

    summary: RemoteProfileSummary
    kind: str  # preset, recorded, user, or unshaped
    source: str
    network_median_ms: float  # upload + download medians


def _profile_rows(stored: RemoteScenarioResult, summaries: list[RemoteProfileSummary]) -> list[ProfileRow]:
    profiles = (stored.spec or {}).get("network_profiles") or {}
    rows = []
    for s in summaries:
        profile = profiles.get(s.profile) or {}
        rows.append(
            ProfileRow(
                s,
                str(profile.get("kind") or "unshaped"),
                str(profile.get("source") or ""),
                s.upload_median_ms + s.download_median_ms,
            )
        )
    return rows


def _charts(stored: RemoteScenarioResult, summaries: list[RemoteProfileSummary]) -> dict[str, str]:
    bars = [
        charts.ProfileBar(
            s.profile,
            {
                "upload": s.upload_median_ms,
                "download": s.download_median_ms,
                "remainder": s.remainder_median_ms or 0.0,
                **dict(s.stages_ms or {}),
            },
        )
        for s in summaries
    ]
    results = (stored.data or {}).get("results") or {}
    e2e = {
        s.profile: [float(r["e2e_ms"]) for r in (results.get(s.profile) or {}).get("requests") or []] for s in summaries
    }
    return {"breakdown": charts.time_breakdown(bars), "e2e": charts.e2e_boxes(e2e)}


def _settings_items(settings: dict[str, Any]) -> list[tuple[str, str]]:
    items = []
    for key, label in (("requests", "requests"), ("warmup", "warm-up"), ("payload", "payload"), ("seed", "seed")):
        if settings.get(key) is not None:
            items.append((label, str(settings[key])))
    if settings.get("threads", 1) != 1:
        items.append(("threads", str(settings["threads"])))
    if settings.get("cores"):
        items.append(("cores", ",".join(str(c) for c in settings["cores"])))
    return items


def _run_context(job: ProfilingJob) -> dict[str, Any]:
    settings = dict(job.settings or {})
    context: dict[str, Any] = {
        "job": job,
        "profiles": list(settings.get("profiles") or []),
        "settings_items": _settings_items(settings),
        "result_url": result_url(job),
        "run": None,
    }
    stored = stored_run(job)
    if stored is None:
        return context
    summaries = list(profile_summaries(stored))
    context.update(
        {
            "run": stored,
            "rows": _profile_rows(stored, summaries),
            "charts": _charts(stored, summaries),
        }
    )
    return context


RUNS_PER_PAGE = 50


@dataclass(frozen=True)
class RunListRow:
    """One run in the list: the job, its page, its profiles and, once stored, each profile's summary."""

    job: ProfilingJob
    url: str
    profiles: list[str]
    summaries: list[RemoteProfileSummary]


def _stored(job: ProfilingJob) -> RemoteScenarioResult | None:
    try:
        return job.remote_scenario  # type: ignore[no-any-return]
    except ObjectDoesNotExist:
        return None


@require_GET
@team_page
def run_list(request: HttpRequest) -> HttpResponse:
    """The team's remote runs, newest first: model, profiles, device, state and each profile's
    median end to end."""
    team = request.team  # type: ignore[attr-defined]
    jobs = (
        ProfilingJob.objects.for_team(team)
        .filter(kind=JobKind.REMOTE_SCENARIO)
        .select_related("device", "model", "remote_scenario")
        .defer("remote_scenario__data", "remote_scenario__spec", "remote_scenario__environment")
        .prefetch_related("remote_scenario__profiles")
    )
    page = Paginator(jobs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    rows = []
    for job in page.object_list:
        stored = _stored(job)
        rows.append(
            RunListRow(
                job,
                page_url(job),
                [str(p) for p in (job.settings or {}).get("profiles") or []],
                list(stored.profiles.all()) if stored is not None else [],
            )
        )
    return render(request, "dashboard/remote_list.html", {"page": page, "rows": rows})


@require_GET
@team_page
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One remote run: live progress while active; then the time per part under each profile, the
    end-to-end distributions and the table of medians."""
    return render_kind_page(request, pk, JobKind.REMOTE_SCENARIO, "dashboard/remote_run.html", _run_context)


@require_GET
@team_page
def run_result(request: HttpRequest, pk: int) -> HttpResponse:
    """The result part of a run's page alone: swapped in when a watched run finishes."""
    return render_kind_page(request, pk, JobKind.REMOTE_SCENARIO, "dashboard/remote_run_result.html", _run_context)


__all__ = ["RunListRow", "run_detail", "run_list", "run_result"]
