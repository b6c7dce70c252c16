"""Which job kinds have a page of their own, and where it is.

A fusion sweep or plan, a sharing sweep and a remote run are jobs (``ProfilingJob.kind``) drawn
by their own pages, not by the profiling job page: ``/jobs/<pk>/`` (and its result part, which the
live progress bar fetches when a job ends) sends such a job to its kind's page. One table for every
kind, so that a new kind of page is one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from server.profiling.models import JobKind, ProfilingJob

# kind -> (its page, the result part of its page), as URL names
_PAGES: dict[str, tuple[str, str]] = {
    JobKind.FUSION_SWEEP: ("dashboard:fusion_sweep", "dashboard:fusion_sweep_result"),
    JobKind.FUSION_PLAN: ("dashboard:fusion_plan", "dashboard:fusion_plan_result"),
    JobKind.SHARING_SWEEP: ("dashboard:sharing_sweep", "dashboard:sharing_sweep_result"),
    JobKind.REMOTE_SCENARIO: ("dashboard:remote_run", "dashboard:remote_run_result"),
    JobKind.ONLINE_SCHEDULE: ("dashboard:sharing_online", "dashboard:sharing_online_result"),
}


def has_page(job: ProfilingJob) -> bool:
    """Whether the job's kind has a page of its own."""
    return job.kind in _PAGES


def page_url(job: ProfilingJob) -> str:
    """The job's page: its kind's own page, else the job page."""
    name = _PAGES[job.kind][0] if job.kind in _PAGES else "dashboard:job"
    return reverse(name, args=[job.pk])


def result_url(job: ProfilingJob) -> str:
    """The result part of the job's page, as the live progress bar fetches it when the job ends."""
    name = _PAGES[job.kind][1] if job.kind in _PAGES else "dashboard:job_result"
    return reverse(name, args=[job.pk])


def team_job(request: HttpRequest, pk: int) -> ProfilingJob:
    """The caller's team's job ``pk`` with its device; 404 for another team's, as everywhere."""
    job = ProfilingJob.objects.for_team(request.team).select_related("device").filter(pk=pk).first()  # type: ignore[attr-defined]
    if job is None:
        raise Http404("no such job in your team")
    return job


def render_kind_page(
    request: HttpRequest, pk: int, kind: str, template: str, context: Callable[[ProfilingJob], dict[str, Any]]
) -> HttpResponse:
    """The team's job ``pk`` drawn by ``template`` with ``context(job)`` when it is of ``kind``; a
    job of another kind is sent to its own page."""
    job = team_job(request, pk)
    if job.kind != kind:
        return redirect(page_url(job))
    return render(request, template, context(job))


__all__ = ["has_page", "page_url", "render_kind_page", "result_url", "team_job"]
