"""Comparing two jobs: one model on two devices, or two models on one device."""

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
def test_one_model_on_two_devices_matches_operators_by_graph_position(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable, finished_job: Callable
) -> None:
    me = make_member()
    model = make_network(me.team, graph_with_ops(24, name="shared-net"))
    fast = finished_job(me.team, model=model, device=make_device(name="fast-cpu"))
    slow = finished_job(me.team, model=model, device=make_device(name="slow-cpu"), scale=2.0)
    resp = web_client(me).get(f"/compare/?a={fast.pk}&b={slow.pk}")
    assert resp.status_code == 200
    cmp = resp.context["cmp"]
    assert cmp.matched_by == "graph position"
    timed = [d for d in cmp.ops if d.delta is not None]
    assert cmp.matched == 24 and len(timed) == len([r for r in cmp.a.rows if r.timed])
    for d in timed:  # every operator took twice as long on B
        assert d.ratio == pytest.approx(2.0, rel=0.12)
    assert [abs(d.delta) for d in timed] == sorted((abs(d.delta) for d in timed), reverse=True)
    assert resp.context["e2e_delta"] == pytest.approx(slow.result.e2e_median - fast.result.e2e_median)

    html = resp.content.decode()
    types = _figure(html, "chart-compare-types")
    assert [t["name"] for t in types["data"]] == ["A", "B"]
    assert sum(types["data"][1]["x"]) == pytest.approx(2 * sum(types["data"][0]["x"]), rel=0.12)
    assert len(_figure(html, "chart-compare-deltas")["data"][0]["x"]) == min(25, len(timed))
    hist = _figure(html, "chart-compare-samples")
    assert len(hist["data"][0]["x"]) == fast.result.e2e_n
    assert html.count('<tr data-op-type="') == len(cmp.ops)


@pytest.mark.django_db
def test_two_models_on_one_device_match_operators_by_name(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable, finished_job: Callable
) -> None:
    me = make_member()
    device = make_device()
    small = finished_job(me.team, model=make_network(me.team, graph_with_ops(15, name="small")), device=device)
    big = finished_job(me.team, model=make_network(me.team, graph_with_ops(33, name="big")), device=device)
    resp = web_client(me).get(f"/compare/?a={small.pk}&b={big.pk}")
    cmp = resp.context["cmp"]
    assert cmp.matched_by == "operator name"
    assert cmp.matched == 15  # the small graph's names all occur in the big one
    only_b = [d for d in cmp.ops if d.a_note == "absent"]
    assert len(only_b) == 33 - 15
    assert resp.context["swap_url"] == f"/compare/?a={big.pk}&b={small.pk}"


@pytest.mark.django_db
def test_a_job_without_a_result_is_named_instead_of_compared(
    make_member: Callable, web_client: Callable, make_job: Callable, finished_job: Callable
) -> None:
    me = make_member()
    done, queued = finished_job(me.team), make_job(me.team)
    resp = web_client(me).get(f"/compare/?a={done.pk}&b={queued.pk}")
    assert resp.status_code == 200 and "cmp" not in resp.context
    assert f"Job #{queued.pk} is queued and has no result yet" in resp.content.decode()


@pytest.mark.django_db
def test_another_teams_job_is_404_on_either_side(
    make_member: Callable, web_client: Callable, finished_job: Callable
) -> None:
    me, other = make_member(), make_member()
    mine, theirs = finished_job(me.team), finished_job(other.team)
    client = web_client(me)
    assert client.get(f"/compare/?a={mine.pk}&b={theirs.pk}").status_code == 404
    assert client.get(f"/compare/?a={theirs.pk}&b={mine.pk}").status_code == 404
    picker = client.get("/compare/")
    assert picker.status_code == 200 and [j.pk for j in picker.context["choices"]] == [mine.pk]


@pytest.mark.django_db
def test_comparison_takes_a_fixed_number_of_queries(
    make_member: Callable,
    web_client: Callable,
    make_network: Callable,
    finished_job: Callable,
    django_assert_max_num_queries: Any,
) -> None:
    me = make_member()
    model = make_network(me.team, graph_with_ops(300))
    a, b = finished_job(me.team, model=model), finished_job(me.team, model=model, scale=1.5)
    client = web_client(me)
    with django_assert_max_num_queries(8):
        resp = client.get(f"/compare/?a={a.pk}&b={b.pk}")
    assert resp.context["cmp"].matched == 300
