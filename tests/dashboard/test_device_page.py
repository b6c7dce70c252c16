"""A device's page: hardware, queue, the team's jobs on it and each model's latency over time."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.dashboard.factories import graph_with_ops


def _figure(html: str, element_id: str) -> dict[str, Any]:
    m = re.search(rf'id="{element_id}" data-figure><script type="application/json">(.*?)</script>', html, re.S)
    assert m, f"no figure {element_id}"
    return json.loads(m.group(1))


@pytest.mark.django_db
def test_device_page_shows_hardware_and_latency_over_time_of_our_models(
    make_member: Callable, web_client: Callable, make_device: Callable, make_network: Callable, finished_job: Callable
) -> None:
    me = make_member()
    device = make_device(
        hardware={"cpu_model": "Kryo 585", "arch": "arm64", "logical_cores": 8, "memory_bytes": 8 * 1024**3}
    )
    model = make_network(me.team, graph_with_ops(12, name="mnv-tiny"))
    first = finished_job(me.team, model=model, device=device)
    second = finished_job(me.team, model=model, device=device, scale=1.2)
    resp = web_client(me).get(f"/devices/{device.pk}/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "Kryo 585" in html and "8.0 GiB" in html
    fig = _figure(html, "chart-latency-history")
    (trace,) = fig["data"]
    assert trace["name"].startswith("mnv-tiny") and len(trace["y"]) == 2
    assert [c[0] for c in trace["customdata"]] == [first.pk, second.pk]
    assert fig["layout"]["yaxis"]["title"]["text"] == "median latency (ms)"


@pytest.mark.django_db
def test_another_teams_jobs_on_the_device_stay_hidden(
    make_member: Callable, web_client: Callable, make_device: Callable, make_network: Callable, finished_job: Callable
) -> None:
    me, other = make_member(), make_member()
    device = make_device()
    mine = finished_job(me.team, device=device)
    theirs = finished_job(
        other.team, model=make_network(other.team, graph_with_ops(9, name="rival-net")), device=device
    )
    resp = web_client(me).get(f"/devices/{device.pk}/")
    assert [j.pk for j in resp.context["jobs"]] == [mine.pk]
    html = resp.content.decode()
    assert "rival-net" not in html and f'href="/jobs/{theirs.pk}/"' not in html
    assert resp.context["running"] is None and not resp.context["busy_elsewhere"]
    assert len(_figure(html, "chart-latency-history")["data"]) == 1


@pytest.mark.django_db
def test_the_running_job_is_named_only_to_its_team(
    make_member: Callable, web_client: Callable, make_device: Callable, make_network: Callable, make_job: Callable
) -> None:
    from server.profiling.services import claim_job

    me, other = make_member(), make_member()
    device = make_device()
    job = make_job(other.team, model=make_network(other.team, graph_with_ops(9, name="rival-running")), device=device)
    assert claim_job(job.pk, "run-1") is not None
    mine = web_client(me).get(f"/devices/{device.pk}/")
    assert mine.context["running"] is None and mine.context["busy_elsewhere"]
    assert "rival-running" not in mine.content.decode() and "another team's job" in mine.content.decode()
    theirs = web_client(other).get(f"/devices/{device.pk}/")
    assert theirs.context["running"].pk == job.pk and "rival-running" in theirs.content.decode()


@pytest.mark.django_db
def test_an_unknown_device_is_404(make_member: Callable, web_client: Callable) -> None:
    assert web_client(make_member()).get("/devices/987654/").status_code == 404


@pytest.mark.django_db
def test_device_page_takes_a_fixed_number_of_queries(
    make_member: Callable,
    web_client: Callable,
    make_device: Callable,
    finished_job: Callable,
    make_job: Callable,
    django_assert_max_num_queries: Any,
) -> None:
    me = make_member()
    device = make_device()
    for _ in range(6):
        finished_job(me.team, device=device)
    make_job(me.team, device=device)
    client = web_client(me)
    with django_assert_max_num_queries(8):
        resp = client.get(f"/devices/{device.pk}/")
    assert len(resp.context["jobs"]) == 7 and resp.context["series_count"] == 6
