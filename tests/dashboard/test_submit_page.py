"""Submitting jobs: models x devices with one set of settings, all queued or none."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from server.devices.models import DeviceStatus
from server.profiling.models import ProfilingJob


def _form(models: list[Any], devices: list[Any], **settings: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"threads": 1, "runs": 30, "warmup_runs": 5, "cores": "", "precision": "fp32"}
    data.update(settings)
    data["models"] = [m.pk for m in models]
    data["devices"] = [d.pk for d in devices]
    return data


@pytest.mark.django_db
def test_one_submission_fans_out_to_every_model_and_device(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable
) -> None:
    me = make_member()
    models = [make_network(me.team), make_network(me.team)]
    devices = [make_device(), make_device(kind="opencl")]
    resp = web_client(me).post("/jobs/new/", _form(models, devices, threads=2, runs=50, cores="0-1"), follow=True)
    jobs = list(ProfilingJob.objects.for_team(me.team))
    assert len(jobs) == 4
    assert {(j.model_id, j.device_id) for j in jobs} == {(m.pk, d.pk) for m in models for d in devices}
    assert all(j.created_by == me.user and j.state == "queued" for j in jobs)
    by_kind = {j.device.kind: j.settings for j in jobs}
    assert by_kind["cpu"]["backend"] == "cpu" and by_kind["opencl"]["backend"] == "opencl"
    assert by_kind["cpu"]["threads"] == 2 and by_kind["cpu"]["runs"] == 50 and by_kind["cpu"]["cores"] == [0, 1]
    assert resp.redirect_chain[-1][0] == "/jobs/"
    assert "Queued 4 jobs" in resp.content.decode()


@pytest.mark.django_db
def test_a_single_job_opens_its_page(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable
) -> None:
    me = make_member()
    resp = web_client(me).post("/jobs/new/", _form([make_network(me.team)], [make_device()]))
    job = ProfilingJob.objects.get(team=me.team)
    assert resp.status_code == 302 and resp["Location"] == f"/jobs/{job.pk}/"


@pytest.mark.django_db
def test_a_device_that_stopped_heart_beating_refuses_the_whole_submission_inline(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable
) -> None:
    me = make_member()
    online, silent = make_device(name="still-here"), make_device(name="gone-quiet")
    # Still marked online, but its worker fell silent long ago: submission finds out.
    type(silent).objects.filter(pk=silent.pk).update(last_heartbeat=timezone.now() - timedelta(hours=1))
    resp = web_client(me).post("/jobs/new/", _form([make_network(me.team)], [online, silent]))
    assert resp.status_code == 200
    errors = " ".join(resp.context["form"].errors["devices"])
    assert "'gone-quiet'" in errors and "offline" in errors
    assert not ProfilingJob.objects.exists()


@pytest.mark.django_db
def test_a_device_marked_offline_after_the_form_was_drawn_is_named(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable
) -> None:
    me = make_member()
    gone = make_device(name="gone-away")
    type(gone).objects.filter(pk=gone.pk).update(status=DeviceStatus.OFFLINE)
    resp = web_client(me).post("/jobs/new/", _form([make_network(me.team)], [gone]))
    assert f"device #{gone.pk} is not online any more" in " ".join(resp.context["form"].errors["devices"])
    assert not ProfilingJob.objects.exists()


@pytest.mark.django_db
def test_the_form_offers_only_the_teams_models_and_online_devices(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable
) -> None:
    me, other = make_member(), make_member()
    ours, theirs = make_network(me.team), make_network(other.team)
    online, offline = make_device(), make_device()
    type(offline).objects.filter(pk=offline.pk).update(status=DeviceStatus.OFFLINE)
    client = web_client(me)
    form = client.get("/jobs/new/").context["form"]
    assert [m.pk for m in form.fields["models"].queryset] == [ours.pk]
    assert [d.pk for d in form.fields["devices"].queryset] == [online.pk]

    resp = client.post("/jobs/new/", _form([theirs], [online]))
    assert "Select a valid choice" in " ".join(resp.context["form"].errors["models"])
    assert not ProfilingJob.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("cores", "0-x", "not a core id"), ("cores", "3-1", "runs backwards"), ("runs", "0", "greater than or equal")],
)
def test_bad_settings_are_shown_next_to_their_field(
    make_member: Callable,
    web_client: Callable,
    make_network: Callable,
    make_device: Callable,
    field: str,
    value: str,
    message: str,
) -> None:
    me = make_member()
    resp = web_client(me).post("/jobs/new/", _form([make_network(me.team)], [make_device()], **{field: value}))
    assert message in " ".join(resp.context["form"].errors[field])
    assert not ProfilingJob.objects.exists()


@pytest.mark.django_db
def test_links_preselect_a_model_and_a_device(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable
) -> None:
    me = make_member()
    model, device = make_network(me.team), make_device()
    html = web_client(me).get(f"/jobs/new/?model={model.pk}&device={device.pk}").content.decode()
    assert f'value="{model.pk}" id="id_models_0" checked' in html or f'value="{model.pk}" checked' in html
