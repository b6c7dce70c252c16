"""A finished job and its results are read-only in the admin; a job still queued can be changed."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from server.networks.services import model_graph
from server.profiling.models import JobResult, JobState, OperatorTiming, ProfilingJob
from server.profiling.services import cancel_job, claim_job, fail_job, ingest_result
from tests.server.factories import profile_result

pytestmark = pytest.mark.django_db


def _succeeded(member: Any, make_job: Any) -> ProfilingJob:
    job = make_job(member.team)
    assert claim_job(job.pk, "run-1") is not None
    assert ingest_result(job.pk, "run-1", profile_result(model_graph(job.model))) is not None
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    return job


def _failed(member: Any, make_job: Any) -> ProfilingJob:
    job = make_job(member.team)
    assert claim_job(job.pk, "run-1") is not None
    assert fail_job(job.pk, "run-1", "the device went away")
    job.refresh_from_db()
    return job


def _cancelled(member: Any, make_job: Any) -> ProfilingJob:
    job = make_job(member.team)
    assert cancel_job(job)
    job.refresh_from_db()
    return job


def _change_form(admin_client: Client, url: str) -> dict[str, Any]:
    """The fields the change page would post back, as a browser would send them unchanged."""
    page = admin_client.get(url)
    assert page.status_code == 200, url
    form = page.context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        data[name] = field.prepare_value(value) if value is not None else ""
    return data


@pytest.mark.parametrize("finish", [_succeeded, _failed, _cancelled])
def test_a_change_post_does_not_change_a_finished_job(
    admin_client: Client, member: Any, make_job: Any, finish: Any
) -> None:
    job = finish(member, make_job)
    url = f"/admin/profiling/profilingjob/{job.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    assert b'name="_save"' not in page.content  # a view page, no form to save
    before = ProfilingJob.objects.values().get(pk=job.pk)
    posted = admin_client.post(url, {"settings": '{"runs": 999}', "kind": "profile", "_save": "Save"})
    assert posted.status_code == 403
    assert ProfilingJob.objects.values().get(pk=job.pk) == before


def test_the_results_of_a_finished_job_are_read_only(admin_client: Client, member: Any, make_job: Any) -> None:
    job = _succeeded(member, make_job)
    result = JobResult.objects.get(job=job)
    timing = OperatorTiming.objects.filter(result=result).order_by("pk").first()
    assert timing is not None
    for url, data, model, pk in (
        (f"/admin/profiling/jobresult/{result.pk}/change/", {"e2e_mean": "0.001"}, JobResult, result.pk),
        (f"/admin/profiling/operatortiming/{timing.pk}/change/", {"mean": "0.001"}, OperatorTiming, timing.pk),
    ):
        assert admin_client.get(url).status_code == 200
        before = model.objects.values().get(pk=pk)
        assert admin_client.post(url, {**data, "_save": "Save"}).status_code == 403, url
        assert model.objects.values().get(pk=pk) == before, url


def test_a_queued_job_can_still_be_changed(admin_client: Client, member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    url = f"/admin/profiling/profilingjob/{job.pk}/change/"
    data = _change_form(admin_client, url)
    data["settings"] = '{"runs": 7}'
    posted = admin_client.post(url, {**data, "_save": "Save"})
    assert posted.status_code == 302, posted.content[:2000]
    job.refresh_from_db()
    assert job.settings == {"runs": 7}
