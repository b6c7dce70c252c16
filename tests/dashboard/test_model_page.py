"""A model's page: operator table, MACs and parameters per operator type, its jobs."""

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
def test_model_page_has_the_operator_table_and_macs_by_type(
    make_member: Callable, web_client: Callable, make_network: Callable, finished_job: Callable
) -> None:
    me = make_member()
    graph = graph_with_ops(24, name="blocks")
    model = make_network(me.team, graph)
    job = finished_job(me.team, model=model)
    resp = web_client(me).get(f"/models/{model.pk}/")
    assert resp.status_code == 200
    assert len(resp.context["operators"]) == 24
    html = resp.content.decode()
    assert html.count('<tr data-op-type="') == 24
    fig = _figure(html, "chart-macs-by-type")
    (trace,) = fig["data"]
    macs = dict(zip(trace["y"], trace["x"], strict=True))
    conv_macs = sum(c.macs for o, c in graph.costs() if o.type == "conv2d")
    assert macs["conv2d"] == pytest.approx(conv_macs / 1e6)
    assert trace["y"][0] == "conv2d"  # the most MACs on top
    assert fig["layout"]["xaxis"]["title"]["text"] == "MACs (millions)"
    assert _figure(html, "chart-params-by-type")["data"][0]["x"]
    assert [j.pk for j in resp.context["jobs"]] == [job.pk]


@pytest.mark.django_db
def test_another_teams_model_is_404(make_member: Callable, web_client: Callable, make_network: Callable) -> None:
    me, other = make_member(), make_member()
    theirs = make_network(other.team)
    client = web_client(me)
    assert client.get(f"/models/{theirs.pk}/").status_code == 404
    assert client.get("/models/987654/").status_code == 404
    assert web_client(other).get(f"/models/{theirs.pk}/").status_code == 200


@pytest.mark.django_db
def test_model_page_takes_a_fixed_number_of_queries(
    make_member: Callable,
    web_client: Callable,
    make_network: Callable,
    make_job: Callable,
    django_assert_max_num_queries: Any,
) -> None:
    me = make_member()
    model = make_network(me.team, graph_with_ops(200))
    for _ in range(5):
        make_job(me.team, model=model)
    client = web_client(me)
    with django_assert_max_num_queries(6):
        resp = client.get(f"/models/{model.pk}/")
    assert len(resp.context["jobs"]) == 5
