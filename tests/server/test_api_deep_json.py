"""JSON bodies nested deeper than any document of ours are refused with a 400, never a 500."""

from __future__ import annotations

from typing import Any

import pytest

from server.api.parsers import MAX_JSON_DEPTH, json_depth_exceeds

pytestmark = pytest.mark.django_db


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("path", ["/api/jobs/", "/api/predictors/", "/api/predict/"])
@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 950, 5000])
def test_a_deeply_nested_body_is_a_400(api: Any, make_device: Any, path: str, levels: int) -> None:
    device = make_device()
    body = f'{{"device": {device.pk}, "model": 1, "settings": {_nested(levels)}}}'
    response = api.post(path, data=body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    detail = response.json()["detail"]
    assert "levels deep" in detail or "depth limit exceeded" in detail


def test_the_depth_check_counts_containers_only() -> None:
    assert not json_depth_exceeds({"a": [1, {"b": [2, 3]}], "c": "[[[[[["}, 4)
    assert json_depth_exceeds({"a": [1, {"b": [[2]]}]}, 4)
    assert not json_depth_exceeds(7, 1)


def test_a_body_as_deep_as_our_documents_is_fine(api: Any, make_device: Any, member: Any, make_network: Any) -> None:
    model = make_network(member.team)
    response = api.post(
        "/api/jobs/", {"model": model.pk, "device": make_device().pk, "settings": {"runs": 3}}, format="json"
    )
    assert response.status_code == 201, response.json()
