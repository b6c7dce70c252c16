"""The jobs list: the team's jobs, newest first, filtered by state, model or device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.dashboard.factories import graph_with_ops


@pytest.mark.django_db
def test_the_list_shows_only_the_teams_jobs_with_their_medians(
    make_member: Callable, web_client: Callable, make_job: Callable, finished_job: Callable, make_network: Callable
) -> None:
    me, other = make_member(), make_member()
    done = finished_job(me.team)
    queued = make_job(me.team)
    finished_job(other.team, model=make_network(other.team, graph_with_ops(9, name="their-net")))
    resp = web_client(me).get("/jobs/")
    jobs = list(resp.context["page"].object_list)
    assert [j.pk for j in jobs] == [queued.pk, done.pk]
    assert jobs[1].median_ms == pytest.approx(done.result.e2e_median) and jobs[0].median_ms is None
    html = resp.content.decode()
    assert "their-net" not in html
    assert f'data-job-id="{queued.pk}"' in html  # a live bar for the queued job only
    assert f'data-job-id="{done.pk}"' not in html


@pytest.mark.django_db
def test_filters_by_state_model_and_device(
    make_member: Callable, web_client: Callable, make_job: Callable, finished_job: Callable
) -> None:
    me = make_member()
    done = finished_job(me.team)
    queued = make_job(me.team)
    client = web_client(me)

    def ids(query: str) -> list[int]:
        return [j.pk for j in client.get(f"/jobs/?{query}").context["page"].object_list]

    assert ids("state=succeeded") == [done.pk]
    assert ids("state=queued") == [queued.pk]
    assert ids(f"model={done.model_id}") == [done.pk]
    assert ids(f"device={queued.device_id}") == [queued.pk]
    assert ids("state=bogus") == [queued.pk, done.pk]  # an unknown state filters nothing


@pytest.mark.django_db
def test_the_list_is_paged_in_a_fixed_number_of_queries(
    make_member: Callable,
    web_client: Callable,
    make_job: Callable,
    make_network: Callable,
    make_device: Callable,
    django_assert_max_num_queries: Any,
) -> None:
    me = make_member()
    model, device = make_network(me.team), make_device()
    for _ in range(55):
        make_job(me.team, model=model, device=device)
    client = web_client(me)
    with django_assert_max_num_queries(6):
        first = client.get("/jobs/")
    assert len(first.context["page"].object_list) == 50 and first.context["page"].has_next()
    assert len(client.get("/jobs/?page=2").context["page"].object_list) == 5
