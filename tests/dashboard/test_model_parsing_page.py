"""A big upload through the dashboard is stored and shown ``parsing`` (the page reloads itself
until the trainer made it ready), a failed one with its reason; lists never load a graph and
only parsed models can be profiled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from server.networks.models import NetworkModel
from server.networks.services import parse_stored_model
from tests.dashboard.factories import graph_with_ops
from tests.server.big_graphs import relu_chain_json

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_inline_limit(settings: Any) -> Any:
    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = 4000
    with mock.patch("server.networks.services.send_model_parse") as send:
        yield send


def _upload(client: Any, data: bytes, name: str = "chain.json") -> Any:
    return client.post("/models/", {"file": SimpleUploadedFile(name, data)}, follow=True)


def test_a_big_upload_shows_parsing_then_its_operators(make_member: Callable, web_client: Callable) -> None:
    me = make_member()
    client = web_client(me)
    resp = _upload(client, relu_chain_json(200))
    model = NetworkModel.objects.get(team=me.team)
    assert resp.redirect_chain == [(f"/models/{model.pk}/", 302)]
    html = resp.content.decode()
    assert "it is being parsed" in html and 'id="parsing-card"' in html
    assert '<meta http-equiv="refresh" content="3">' in html and 'data-model-state="parsing"' in html
    assert "Profile this model" not in html and "chain.json" in html

    listed = client.get("/models/").content.decode()
    assert 'data-model-state="parsing"' in listed and f"/jobs/new/?model={model.pk}" not in listed

    parse_stored_model(model.pk)
    html = client.get(f"/models/{model.pk}/").content.decode()
    assert "http-equiv" not in html and "parsing-card" not in html
    assert html.count('<tr data-op-type="') == 200 and "Profile this model" in html


def test_a_failed_model_shows_why(make_member: Callable, web_client: Callable) -> None:
    me = make_member()
    client = web_client(me)
    _upload(client, relu_chain_json(200, bad_at=7))
    model = NetworkModel.objects.get(team=me.team)
    parse_stored_model(model.pk)
    html = client.get(f"/models/{model.pk}/").content.decode()
    assert 'id="failure"' in html and "node &#x27;r7&#x27;" in html and "frobnicate" in html
    assert "http-equiv" not in html and "Profile this model" not in html
    assert 'data-model-state="failed"' in client.get("/models/").content.decode()


def test_only_parsed_models_are_offered_for_profiling(
    make_member: Callable, web_client: Callable, make_network: Callable
) -> None:
    me = make_member()
    ready = make_network(me.team, graph_with_ops(8, name="ready-net"))
    client = web_client(me)
    _upload(client, relu_chain_json(200))
    parsing = NetworkModel.objects.get(team=me.team, state="parsing")
    offered = [m.pk for m in client.get("/jobs/new/").context["form"].fields["models"].queryset]
    assert offered == [ready.pk] and parsing.pk not in offered


def test_the_models_page_does_not_select_any_graph(
    make_member: Callable, web_client: Callable, make_network: Callable
) -> None:
    me = make_member()
    for i in range(3):
        make_network(me.team, graph_with_ops(8 + i, name=f"m{i}"))
    client = web_client(me)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get("/models/").status_code == 200
    sql = "\n".join(q["sql"] for q in ctx.captured_queries)
    assert "networks_networkmodel" in sql and '"networks_networkmodel"."graph"' not in sql
