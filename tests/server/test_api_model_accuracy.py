"""PATCH /api/models/{id}/ sets what a network scores, which model selection trades against
latency: percentages, top-5 never below top-1, null forgets, another team's model is 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from server.networks.models import NetworkModel
from tests.server.factories import graph_bytes, tiny_graph

pytestmark = pytest.mark.django_db


def _upload(api: Any, name: str) -> int:
    response = api.post(
        "/api/models/", {"file": SimpleUploadedFile(f"{name}.json", graph_bytes(tiny_graph(name)))}, format="multipart"
    )
    assert response.status_code == 201, response.json()
    return int(response.json()["id"])


def test_set_read_and_forget_a_models_accuracy(api: Any) -> None:
    pk = _upload(api, "scored")
    assert api.get(f"/api/models/{pk}/").json()["top1_accuracy"] is None
    response = api.patch(f"/api/models/{pk}/", {"top1_accuracy": 71.9, "top5_accuracy": 90.4}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["top1_accuracy"], response.json()["top5_accuracy"]) == (71.9, 90.4)
    listed = {m["id"]: m for m in api.get("/api/models/").json()["results"]}
    assert listed[pk]["top1_accuracy"] == 71.9
    forgot = api.patch(f"/api/models/{pk}/", {"top5_accuracy": None}, format="json")
    assert forgot.status_code == 200 and forgot.json()["top5_accuracy"] is None
    stored = NetworkModel.objects.get(pk=pk)
    assert (stored.top1_accuracy, stored.top5_accuracy) == (71.9, None)


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"top1_accuracy": 101}, "top1_accuracy", "100"),
        ({"top1_accuracy": -1}, "top1_accuracy", "0"),
        ({"top1_accuracy": 80, "top5_accuracy": 70}, "top5_accuracy", "below top-1"),
        ({"top1_accuracy": "high"}, "top1_accuracy", "number"),
        ({"top5_accuracy": False}, "top5_accuracy", "number"),
    ],
)
def test_bad_accuracies_are_refused_and_change_nothing(api: Any, body: dict[str, Any], field: str, says: str) -> None:
    pk = _upload(api, "refused")
    response = api.patch(f"/api/models/{pk}/", body, format="json")
    assert response.status_code == 400
    assert says in str(response.json()), response.json()
    stored = NetworkModel.objects.get(pk=pk)
    assert (stored.top1_accuracy, stored.top5_accuracy) == (None, None)


def test_a_stored_top5_bounds_a_new_top1(api: Any) -> None:
    pk = _upload(api, "bounded")
    assert api.patch(f"/api/models/{pk}/", {"top5_accuracy": 60}, format="json").status_code == 200
    response = api.patch(f"/api/models/{pk}/", {"top1_accuracy": 75}, format="json")
    assert response.status_code == 400 and "below top-1" in str(response.json())
    assert NetworkModel.objects.get(pk=pk).top1_accuracy is None


def test_another_teams_model_is_not_found(api: Any, make_member: Any, client_for: Any) -> None:
    pk = _upload(api, "mine")
    stranger = client_for(make_member())
    assert stranger.patch(f"/api/models/{pk}/", {"top1_accuracy": 50}, format="json").status_code == 404


def test_an_empty_patch_changes_nothing(api: Any) -> None:
    pk = _upload(api, "untouched")
    response = api.patch(f"/api/models/{pk}/", {}, format="json")
    assert response.status_code == 200 and response.json()["top1_accuracy"] is None
    for content_type in ("", "text/plain"):  # no body (a server may name its type): nothing to change
        bare = api.generic("PATCH", f"/api/models/{pk}/", content_type=content_type)
        assert bare.status_code == 200 and bare.json()["top1_accuracy"] is None


def test_a_form_body_is_refused_as_the_wrong_media_type(api: Any) -> None:
    pk = _upload(api, "formed")
    response = api.patch(f"/api/models/{pk}/", {"top1_accuracy": "70"}, format="multipart")
    assert response.status_code == 415 and "application/json" in response.json()["detail"]
