"""The models page: the upload form (refusals inline) and the team's models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from devicelab.graph import graph_to_json
from server.networks.models import NetworkModel
from tests.dashboard.factories import graph_with_ops


def _upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


@pytest.mark.django_db
def test_uploading_a_model_stores_it_and_opens_its_page(make_member: Callable, web_client: Callable) -> None:
    me = make_member()
    client = web_client(me)
    data = graph_to_json(graph_with_ops(15, name="edge-net")).encode()
    resp = client.post("/models/", {"file": _upload("edge-net.json", data), "name": "Edge net v2"})
    model = NetworkModel.objects.get(team=me.team)
    assert resp.status_code == 302 and resp["Location"] == f"/models/{model.pk}/"
    assert (model.name, model.num_operators, model.created_by) == ("Edge net v2", 15, me.user)

    again = client.post("/models/", {"file": _upload("copy.json", data)}, follow=True)
    assert NetworkModel.objects.filter(team=me.team).count() == 1
    assert f"already uploaded as Edge net v2 (#{model.pk})" in again.content.decode()


@pytest.mark.django_db
def test_a_model_outside_the_vocabulary_is_refused_next_to_the_file_field(
    make_member: Callable, web_client: Callable
) -> None:
    me = make_member()
    text = graph_to_json(graph_with_ops(8, name="odd")).replace('"type": "relu"', '"type": "frobnicate"', 1)
    resp = web_client(me).post("/models/", {"file": _upload("odd.json", text.encode())})
    assert resp.status_code == 200
    errors = resp.context["form"].errors["file"]
    assert len(errors) == 1 and "frobnicate" in errors[0] and "relu_0" in errors[0]
    assert 'class="field-error"' in resp.content.decode()
    assert not NetworkModel.objects.filter(team=me.team).exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("filename", "data", "expected"),
    [
        ("empty.onnx", b"", "empty"),
        ("garbage.onnx", b"\x08\x01not really a protobuf", "cannot read 'garbage.onnx'"),
    ],
)
def test_unreadable_files_are_refused_with_a_reason(
    make_member: Callable, web_client: Callable, filename: str, data: bytes, expected: str
) -> None:
    resp = web_client(make_member()).post("/models/", {"file": _upload(filename, data)})
    assert resp.status_code == 200
    assert expected in " ".join(resp.context["form"].errors["file"])


@pytest.mark.django_db
def test_an_upload_over_the_size_limit_is_refused(make_member: Callable, web_client: Callable, settings: Any) -> None:
    settings.LATENCYLAB_MAX_UPLOAD_BYTES = 100
    resp = web_client(make_member()).post("/models/", {"file": _upload("big.json", b"{" + b" " * 200 + b"}")})
    assert "the limit is 100 bytes" in " ".join(resp.context["form"].errors["file"])


@pytest.mark.django_db
def test_the_list_shows_only_the_teams_models(
    make_member: Callable, web_client: Callable, make_network: Callable, make_job: Callable
) -> None:
    me, other = make_member(), make_member()
    ours = make_network(me.team, graph_with_ops(10, name="ours-model"))
    make_job(me.team, model=ours)
    make_network(other.team, graph_with_ops(10, name="their-model"))
    resp = web_client(me).get("/models/")
    assert [(m.pk, m.jobs) for m in resp.context["models"]] == [(ours.pk, 1)]
    html = resp.content.decode()
    assert "ours-model" in html and "their-model" not in html


@pytest.mark.django_db
def test_the_list_takes_a_fixed_number_of_queries(
    make_member: Callable, web_client: Callable, make_network: Callable, django_assert_max_num_queries: Any
) -> None:
    me = make_member()
    for i in range(12):
        make_network(me.team, graph_with_ops(8 + i, name=f"m{i}"), user=me.user)
    client = web_client(me)
    with django_assert_max_num_queries(6):
        resp = client.get("/models/")
    assert len(resp.context["models"]) == 12
