"""A list of models (or of jobs, which name their model) never loads a model's parsed graph:
megabytes per model, 3.6 s for one team's list before it was deferred."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.server.factories import tiny_graph

pytestmark = pytest.mark.django_db

GRAPH_COLUMN = '"networks_networkmodel"."graph"'


def _sql(client: Any, url: str) -> str:
    with CaptureQueriesContext(connection) as ctx:
        resp = client.get(url)
    assert resp.status_code == 200, resp.content
    return "\n".join(q["sql"] for q in ctx.captured_queries)


def test_the_model_list_does_not_select_the_graph(api: Any, member: Any, make_network: Callable[..., Any]) -> None:
    for i in range(3):
        make_network(member.team, tiny_graph(f"n{i}", channels=4 + i))
    listed = _sql(api, "/api/models/")
    assert "networks_networkmodel" in listed and GRAPH_COLUMN not in listed
    pk = make_network(member.team).pk
    assert GRAPH_COLUMN in _sql(api, f"/api/models/{pk}/"), "the detail reads the graph for its operator table"


def test_the_job_list_and_a_job_do_not_select_the_models_graph(
    api: Any, member: Any, make_job: Callable[..., Any]
) -> None:
    job = make_job(member.team)
    for url in ("/api/jobs/", f"/api/jobs/{job.pk}/"):
        sql = _sql(api, url)
        assert "networks_networkmodel" in sql and GRAPH_COLUMN not in sql, url
