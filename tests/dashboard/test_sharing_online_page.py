"""An online-scheduling run's page: the job page sends it there; while queued it shows the spec
and progress; once stored, t1 and the units it set and one row per policy (attainment, throughput,
latency, batch size, the output check), a memory-bound policy saying so; the sharing list links it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.tenancy.online_on_device import OnlineRunRecord
from server.tenancy.services import ingest_online, submit_online_run
from tests.server.fusion_factories import claim
from tests.server.sharing_factories import ONLINE_SPEC as SPEC
from tests.server.sharing_factories import online_record

pytestmark = pytest.mark.django_db


def test_a_run_is_drawn_on_its_own_page(
    make_member: Callable[..., Any], make_device: Callable[..., Any], web_client: Callable[..., Any]
) -> None:
    me = make_member()
    job = submit_online_run(me.team, make_device(kind="opencl", name="pocl-cpu"), {"spec": SPEC.as_dict()})
    client = web_client(me)
    assert client.get(f"/jobs/{job.pk}/").url == f"/sharing/online/{job.pk}/"
    queued = client.get(f"/sharing/online/{job.pk}/").content.decode()
    assert "Online scheduling #" in queued and "256x128x1152" in queued and 'id="progress-card"' in queued
    assert 'id="online-comparison"' not in queued

    token = claim(job)
    assert ingest_online(job.pk, token, OnlineRunRecord.from_dict(online_record().as_dict())) is not None
    html = client.get(f"/sharing/online/{job.pk}/").content.decode()
    assert 'id="progress-card"' not in html and "1.000 ms" in html and "800 requests/s" in html
    rows = {p: html.split(f'data-policy="{p}"')[1].split("</tr>")[0] for p in ("time_only", "space_time")}
    assert "50 %" in rows["time_only"] and "1.00" in rows["time_only"]
    assert "88 %" in rows["space_time"] and "2.50" in rows["space_time"] and "correct" in rows["space_time"]
    assert "memory_bound" in html.split('data-policy="space_time_native"')[1].split("</tr>")[0]
    assert client.get(f"/sharing/online/{job.pk}/result/").status_code == 200
    listed = client.get("/sharing/").content.decode().split('id="online-jobs"')[1]
    assert f'href="/sharing/online/{job.pk}/"' in listed and "space_time <b>88 %</b>" in listed
    other = make_member()
    assert web_client(other).get(f"/sharing/online/{job.pk}/").status_code == 404
