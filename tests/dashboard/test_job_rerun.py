"""Running a finished job again from its page: a new job of the same model, device and settings
through the submit service; a refusal is shown on the old job's page; "Change and run" opens the
submit form filled in with the job's choices."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import Capabilities
from server.devices.models import DeviceStatus
from server.profiling.models import JobState, ProfilingJob
from server.profiling.services import cancel_job, claim_job, fail_job

pytestmark = pytest.mark.django_db

PHONE_LIKE = Capabilities(
    precisions=("fp32", "fp16"), max_threads=8, pins_cores=True, cores=(0, 1, 2, 3), max_cold_runs=5
)


def test_run_again_queues_the_same_model_device_and_settings(
    make_member: Callable[..., Any],
    web_client: Callable[..., Any],
    make_job: Callable[..., Any],
    make_device: Callable[..., Any],
) -> None:
    me = make_member()
    device = make_device(capabilities=PHONE_LIKE)
    job = make_job(me.team, device=device, settings={"threads": 2, "runs": 12, "cores": [0, 1], "cold_runs": 3})
    assert cancel_job(job)
    client = web_client(me)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'action="/jobs/{job.pk}/rerun/" id="rerun-form"' in page

    resp = client.post(f"/jobs/{job.pk}/rerun/")
    again = ProfilingJob.objects.exclude(pk=job.pk).get()
    assert resp.status_code == 302 and resp["Location"] == f"/jobs/{again.pk}/"
    assert (again.state, again.model_id, again.device_id) == (JobState.QUEUED, job.model_id, job.device_id)
    assert again.settings == job.settings and again.settings["cold_runs"] == 3
    assert again.created_by_id == me.user.pk
    assert f"Queued job #{again.pk}" in client.get(resp["Location"]).content.decode()


def test_a_refused_rerun_says_why_on_the_old_jobs_page(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    me = make_member()
    job = make_job(me.team)
    assert claim_job(job.pk, "run-1") is not None and fail_job(job.pk, "run-1", "onnxruntime refused it")
    type(job.device).objects.filter(pk=job.device_id).update(status=DeviceStatus.OFFLINE)
    resp = web_client(me).post(f"/jobs/{job.pk}/rerun/", follow=True)
    assert resp.redirect_chain == [(f"/jobs/{job.pk}/", 302)]
    html = resp.content.decode()
    assert f"Job #{job.pk} was not run again" in html and "is offline" in html
    assert ProfilingJob.objects.count() == 1


def test_an_active_job_or_another_teams_job_is_not_run_again(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    me, other = make_member(), make_member()
    queued, theirs = make_job(me.team), make_job(other.team)
    assert cancel_job(theirs)
    client = web_client(me)
    assert client.post(f"/jobs/{theirs.pk}/rerun/").status_code == 404
    assert client.get(f"/jobs/{queued.pk}/rerun/").status_code == 405
    html = client.post(f"/jobs/{queued.pk}/rerun/", follow=True).content.decode()
    assert "is still queued" in html
    assert 'id="rerun-form"' not in html  # an active job offers Cancel, not Run again
    assert ProfilingJob.objects.count() == 2


def test_change_and_run_fills_the_submit_form_with_the_jobs_choices(
    make_member: Callable[..., Any],
    web_client: Callable[..., Any],
    make_job: Callable[..., Any],
    make_device: Callable[..., Any],
) -> None:
    me = make_member()
    device = make_device(capabilities=PHONE_LIKE)
    job = make_job(me.team, device=device, settings={"threads": 4, "runs": 17, "cores": [0, 1, 2], "cold_runs": 2})
    assert cancel_job(job)
    client = web_client(me)
    assert f'href="/jobs/new/?from={job.pk}"' in client.get(f"/jobs/{job.pk}/").content.decode()
    html = client.get(f"/jobs/new/?from={job.pk}").content.decode()

    def value(name: str) -> str:
        m = re.search(rf'<input[^>]*name="{name}"[^>]*>', html)
        assert m, name
        v = re.search(r'value="([^"]*)"', m.group(0))
        return v.group(1) if v else ""

    assert (value("threads"), value("runs"), value("cores"), value("cold_runs")) == ("4", "17", "0-2", "2")
    assert re.search(rf'<input[^>]*name="models"[^>]*value="{job.model_id}"[^>]*checked', html)
    assert re.search(rf'<input[^>]*name="devices"[^>]*value="{device.pk}"[^>]*checked', html)
