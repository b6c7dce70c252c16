"""A model with more operators than LATENCYLAB_OPERATOR_TABLE_MAX is shown by its totals and
counts per type: neither the API's detail nor the dashboard's page builds its table."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.factories import tiny_graph

pytestmark = pytest.mark.django_db


@pytest.fixture
def model(member: Any, make_network: Any) -> Any:
    return make_network(member.team, tiny_graph("capped"))


def test_the_api_leaves_out_the_table_of_a_model_over_the_limit(api: Any, model: Any, settings: Any) -> None:
    full = api.get(f"/api/models/{model.pk}/").json()
    assert len(full["operators"]) == model.num_operators > 1 and full["operators_omitted"] is False
    settings.LATENCYLAB_OPERATOR_TABLE_MAX = model.num_operators - 1
    capped = api.get(f"/api/models/{model.pk}/").json()
    assert capped["operators"] == [] and capped["operators_omitted"] is True
    assert capped["summary"]["op_types"] == full["summary"]["op_types"]


def test_the_dashboard_shows_counts_per_type_instead(client: Any, member: Any, model: Any, settings: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(member.user)
    settings.LATENCYLAB_OPERATOR_TABLE_MAX = model.num_operators - 1
    with CaptureQueriesContext(connection) as queries:
        page = client.get(f"/models/{model.pk}/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="table-omitted"' in html and 'id="model-ops"' not in html
    assert f"{model.num_operators} operators" in html
    assert not any('"graph"' in q["sql"] for q in queries.captured_queries), "the page read the graph column"
    settings.LATENCYLAB_OPERATOR_TABLE_MAX = model.num_operators
    assert 'id="model-ops"' in client.get(f"/models/{model.pk}/").content.decode()
