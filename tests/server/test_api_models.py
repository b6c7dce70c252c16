"""Uploading networks through the API and reading them back with their operator table."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from server.networks.models import NetworkModel
from tests.server.factories import graph_bytes, tiny_graph

pytestmark = pytest.mark.django_db


def upload(api: Any, data: bytes, filename: str = "net.json", **extra: Any) -> Any:
    return api.post("/api/models/", {"file": SimpleUploadedFile(filename, data), **extra}, format="multipart")


def test_upload_graph_json_file_then_read_its_operator_table(api: Any, member: Any) -> None:
    graph = tiny_graph("tinynet")
    created = upload(api, graph_bytes(graph), name="my tiny net")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["name"], body["format"], body["num_operators"]) == ("my tiny net", "json", len(graph.operators))
    assert (body["macs"], body["params"]) == (graph.macs, graph.params)
    detail = api.get(f"/api/models/{body['id']}/").json()
    table = detail["operators"]
    assert [row["name"] for row in table] == [op.name for op in graph.operators]
    assert table[0]["type"] == "conv2d" and table[0]["output_shapes"] == [[1, 8, 8, 8]]
    assert table[0]["macs"] == graph.op_cost(graph.operators[0]).macs
    stored = NetworkModel.objects.get(pk=body["id"])
    assert stored.created_by == member.user and stored.file.read() == graph_bytes(graph)


def test_same_bytes_again_answer_the_existing_model(api: Any) -> None:
    data = graph_bytes()
    first = upload(api, data)
    second = upload(api, data, filename="renamed.json")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert NetworkModel.objects.count() == 1


def test_upload_graph_json_as_the_request_body(api: Any) -> None:
    doc = json.loads(graph_bytes(tiny_graph("from-body")))
    response = api.post("/api/models/", doc, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["name"] == "from-body"


def test_upload_onnx(api: Any) -> None:
    export = pytest.importorskip("devicelab.graph.onnx")
    graph = tiny_graph("onnxnet")
    response = upload(api, export.graph_to_onnx_bytes(graph), filename="onnxnet.onnx")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["format"] == "onnx" and body["macs"] == graph.macs


def test_list_is_paginated_newest_first(api: Any) -> None:
    for channels in (4, 8, 16):
        upload(api, graph_bytes(tiny_graph(f"c{channels}", channels=channels)))
    page = api.get("/api/models/?page_size=2").json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
    assert [m["name"] for m in page["results"]] == ["c16", "c8"]
    assert "operators" not in page["results"][0]


def test_the_graph_json_declaration_is_the_readers_format() -> None:
    """The schema's graph document has the writer's keys, and validating it runs the reader."""
    from devicelab.graph import graph_to_dict
    from server.networks.api.serializers import GraphDocumentSerializer

    graph = tiny_graph("declared")
    doc = graph_to_dict(graph)
    declared = GraphDocumentSerializer()
    assert set(declared.fields) == set(doc)
    assert set(declared.fields["inputs"].child.fields) == set(doc["inputs"][0])
    assert set(declared.fields["operators"].child.fields) == set(doc["operators"][0])
    incoming = GraphDocumentSerializer(data=doc)
    assert incoming.is_valid(), incoming.errors
    assert incoming.validated_data.operators == graph.operators
    doc["operators"][2]["type"] = "frobnicate"
    incoming = GraphDocumentSerializer(data=doc)
    assert not incoming.is_valid()
    (message,) = incoming.errors["non_field_errors"]
    assert "frobnicate" in message and doc["operators"][2]["name"] in message
