"""The overview: the fleet with queue depths and current jobs, and the team's recent jobs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.profiling.services import claim_job
from tests.dashboard.factories import graph_with_ops


@pytest.mark.django_db
def test_fleet_shows_state_queue_depth_and_our_current_job(
    make_member: Callable, web_client: Callable, make_device: Callable, make_network: Callable, make_job: Callable
) -> None:
    me, other = make_member(), make_member()
    mine, shared = make_device(name="cpu-mine"), make_device(name="cpu-shared")
    make_device(name="cpu-idle")
    running = make_job(me.team, model=make_network(me.team, graph_with_ops(8, name="our-net")), device=mine)
    assert claim_job(running.pk, "run-1") is not None
    make_job(me.team, device=mine)
    theirs = make_job(other.team, model=make_network(other.team, graph_with_ops(8, name="their-secret")), device=shared)
    assert claim_job(theirs.pk, "run-2") is not None
    for _ in range(2):
        make_job(other.team, device=shared)
    make_job(me.team, device=shared)

    resp = web_client(me).get("/")
    assert resp.status_code == 200
    rows = {r.device.name: r for r in resp.context["fleet"]}
    assert (rows["cpu-mine"].queued, rows["cpu-mine"].queued_ours) == (1, 1)
    assert rows["cpu-mine"].current_job.pk == running.pk and not rows["cpu-mine"].busy_elsewhere
    assert (rows["cpu-shared"].queued, rows["cpu-shared"].queued_ours) == (3, 1)
    assert rows["cpu-shared"].current_job is None and rows["cpu-shared"].busy_elsewhere
    assert (rows["cpu-idle"].queued, rows["cpu-idle"].current_job, rows["cpu-idle"].busy_elsewhere) == (0, None, False)
    assert resp.context["fleet_counts"]["busy"] == 2 and resp.context["fleet_counts"]["queued"] == 4

    html = resp.content.decode()
    assert "our-net" in html and "another team's job" in html
    assert "Test CPU 3000" in html  # the hardware column


@pytest.mark.django_db
def test_recent_jobs_are_only_the_teams_own(
    make_member: Callable, web_client: Callable, make_network: Callable, make_job: Callable
) -> None:
    me, other = make_member(), make_member()
    ours = make_job(me.team, model=make_network(me.team, graph_with_ops(8, name="ours-net")))
    make_job(other.team, model=make_network(other.team, graph_with_ops(8, name="not-ours-net")))
    resp = web_client(me).get("/")
    assert [j.pk for j in resp.context["recent_jobs"]] == [ours.pk]
    html = resp.content.decode()
    assert "ours-net" in html and "not-ours-net" not in html
    assert resp.context["model_count"] == 1


@pytest.mark.django_db
def test_overview_takes_a_fixed_number_of_queries(
    make_member: Callable,
    web_client: Callable,
    make_device: Callable,
    make_job: Callable,
    django_assert_max_num_queries: Any,
) -> None:
    me, other = make_member(), make_member()
    devices = [make_device() for _ in range(25)]
    for i, device in enumerate(devices[:10]):
        job = make_job(me.team if i % 2 else other.team, device=device)
        claim_job(job.pk, f"run-{i}")
        make_job(me.team, device=device)
    client = web_client(me)
    with django_assert_max_num_queries(8):
        resp = client.get("/")
    assert len(resp.context["fleet"]) == 25 and len(resp.context["recent_jobs"]) == 15
