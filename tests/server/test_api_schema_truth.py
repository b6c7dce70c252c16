"""What schemathesis found the API answering against its schema, one case each: ids out of the
database's range, page parameters read loosely, repeated parameters, form bodies where only JSON
makes sense, HTML 404s, error answers the schema did not list (test_api_conformance.py runs the
whole schema against a live server)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from server.api.fields import MAX_ID
from server.networks.models import NetworkModel
from server.networks.services import upload_model
from tests.server.factories import graph_bytes, tiny_graph

pytestmark = pytest.mark.django_db


def _schema() -> dict[str, Any]:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "url,param",
    [
        ("/api/jobs/?model=400914180476170806111602999296", "model"),
        ("/api/predictors/?device=9707818686955758026752", "device"),
        (f"/api/jobs/?device={MAX_ID + 1}", "device"),
        ("/api/jobs/?device=0", "device"),
        ("/api/jobs/?device=" + "9" * 5000, "device"),
    ],
)
def test_an_id_filter_out_of_the_databases_range_is_a_400_not_a_500(api: Any, url: str, param: str) -> None:
    response = api.get(url)
    assert response.status_code == 400, response.content[:300]
    assert list(response.json()) == [param]
    assert response.json()[param][0].startswith(f"{param} must be an id (a positive integer), got ")


def test_the_largest_id_is_an_empty_list(api: Any) -> None:
    response = api.get(f"/api/jobs/?device={MAX_ID}")
    assert response.status_code == 200 and response.json()["results"] == []


@pytest.mark.parametrize(
    "query,param",
    [
        ("page_size=abc", "page_size"),
        ("page_size=", "page_size"),
        ("page_size=0", "page_size"),
        ("page_size=501", "page_size"),
        ("page_size=-3", "page_size"),
        ("page_size=" + "1" * 5000, "page_size"),
        ("page_size=2&page_size=3", "page_size"),
        ("page=", "page"),
        ("page=0", "page"),
        ("page=last", "page"),
        ("page=1.5", "page"),
    ],
)
def test_page_parameters_are_read_as_strictly_as_the_schema_says(api: Any, query: str, param: str) -> None:
    response = api.get(f"/api/models/?{query}")
    assert response.status_code == 400, response.content[:300]
    assert list(response.json()) == [param]
    assert param in response.json()[param][0]


def test_page_size_within_bounds_and_a_page_past_the_end(api: Any, member: Any, make_network: Any) -> None:
    for _ in range(3):
        make_network(member.team)
    page = api.get("/api/models/?page_size=2&page=2").json()
    assert (page["count"], len(page["results"])) == (3, 1)
    assert len(api.get("/api/models/?page_size=500").json()["results"]) == 3
    past = api.get("/api/models/?page=3&page_size=2")
    assert past.status_code == 404 and past.json() == {"detail": "Invalid page."}


def test_a_filter_given_twice_is_a_400_and_an_empty_one_filters_nothing(api: Any) -> None:
    response = api.get("/api/jobs/?device=1&device=2&state=queued")
    assert response.status_code == 400
    assert response.json() == {"device": ["device is given 2 times; give it once"]}
    assert api.get("/api/jobs/?device=&state=").status_code == 200


@pytest.mark.parametrize("path", ["/api/jobs/", "/api/predictors/"])
def test_jobs_and_predictors_read_json_bodies_only(api: Any, make_device: Any, path: str) -> None:
    device = make_device()
    for fmt in ("multipart", None):
        kwargs: dict[str, Any] = {"format": fmt} if fmt else {"content_type": "application/x-www-form-urlencoded"}
        data: Any = {"model": 1, "device": device.pk} if fmt else f"model=1&device={device.pk}"
        response = api.post(path, data, **kwargs)
        assert response.status_code == 415, response.content[:300]
        assert "Unsupported media type" in response.json()["detail"]


@pytest.mark.parametrize(
    "path,body,key,message",
    [
        ("/api/jobs/", {"model": "1", "device": 1}, "model", "model must be an id (a positive integer), got '1'"),
        ("/api/jobs/", {"model": 1, "device": MAX_ID + 1}, "device", f"got {MAX_ID + 1}"),
        (
            "/api/predictors/",
            {"device": MAX_ID + 1},
            "device",
            f"device must be an id (a positive integer), got {MAX_ID + 1}",
        ),
        ("/api/predictors/", {"device": 2**70}, "device", "device must be an id (a positive integer), got "),
        ("/api/predictors/", {"device": 1, "seed": 2**32}, "seed", f"must be between 0 and {2**32 - 1}, got {2**32}"),
        ("/api/predictors/", {"device": 1, "threads": 1025}, "threads", "must be between 1 and 1024, got 1025"),
        ("/api/predictors/", {"device": 1, "threads": "2"}, "threads", "must be an integer, got '2'"),
    ],
)
def test_ids_and_numbers_in_bodies_are_json_integers_within_bounds(
    api: Any, path: str, body: dict[str, Any], key: str, message: str
) -> None:
    response = api.post(path, body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert message in response.json()[key][0]


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_path_no_route_takes_is_a_json_404(api: Any, method: str) -> None:
    response = getattr(api, method)("/api/jobs/0.5/cancel/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json" and response.json() == {"detail": "Not found."}
    assert api.get("/api/jobs").status_code == 301  # APPEND_SLASH still redirects


@pytest.mark.parametrize(
    "change",
    [{"schema_version": True}, {"inputs": [{"name": "x", "shape": [True, 3, 8, 8]}]}],
)
def test_a_graph_body_with_true_for_an_integer_is_refused(api: Any, change: dict[str, Any]) -> None:
    doc = {
        "schema_version": 1,
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8]}],
        "operators": [{"type": "relu", "inputs": ["x"], "outputs": ["y"]}],
    }
    assert api.post("/api/models/", {**doc}, format="json").status_code == 201
    response = api.post("/api/models/?name=other", {**doc, **change}, format="json")
    assert response.status_code == 400, response.content[:300]


def test_a_model_without_an_uploader_lists_as_the_schema_says(api: Any, member: Any) -> None:
    upload_model(member.team, None, graph_bytes(tiny_graph("anonymous")), "anonymous.json")
    (row,) = api.get("/api/models/").json()["results"]
    assert row["created_by"] is None
    assert _schema()["components"]["schemas"]["NetworkModel"]["properties"]["created_by"]["nullable"] is True
    assert NetworkModel.objects.get(pk=row["id"]).created_by is None


def test_every_operation_documents_the_errors_it_can_answer() -> None:
    schema = _schema()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            where = f"{method.upper()} {path}"
            params = {p["name"]: p for p in operation.get("parameters", [])}
            assert {"401", "403", "429"} <= codes, where
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= codes, where
                # the network probe alone takes raw bytes: its upload is what it times
                raw = {"application/octet-stream"} if path == "/api/network-probe/" else set()
                assert set(operation["requestBody"]["content"]) <= {"application/json", "multipart/form-data", *raw}
            if "page" in params:
                assert {"400", "404", "414"} <= codes, where
                assert params["page"]["schema"]["minimum"] == 1
                assert (params["page_size"]["schema"]["minimum"], params["page_size"]["schema"]["maximum"]) == (1, 500)
            if "id" in params:
                assert {"404", "414"} <= codes, where
                assert (params["id"]["schema"]["minimum"], params["id"]["schema"]["maximum"]) == (1, MAX_ID)
            for name in ("device", "model"):
                if name in params:
                    assert params[name]["allowEmptyValue"] is True, where
                    assert (params[name]["schema"]["minimum"], params[name]["schema"]["maximum"]) == (1, MAX_ID)
            for code, response in operation["responses"].items():
                if code.startswith("4") and code != "414":
                    assert "application/json" in response["content"], (where, code)
    bodies = schema["components"]["schemas"]
    assert bodies["JobCreateRequest"]["properties"]["model"]["minimum"] == 1
    assert bodies["PredictorCreateRequest"]["properties"]["seed"]["maximum"] == 2**32 - 1
    assert bodies["PredictRequestRequest"]["properties"]["architectures"]["minItems"] == 1
    assert bodies["GraphDocumentRequest"]["properties"]["operators"]["minItems"] == 1


def test_a_form_of_too_many_fields_is_a_json_400(api: Any, settings: Any) -> None:
    fields = {f"f{i}": "x" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)}
    response = api.post("/api/models/", fields, format="multipart")
    assert response.status_code == 400
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in response.json()["detail"]


def test_a_model_name_with_a_nul_character_is_a_400_not_a_500(api: Any) -> None:
    doc = {
        "schema_version": 1,
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8]}],
        "operators": [{"type": "relu", "inputs": ["x"], "outputs": ["y"]}],
    }
    response = api.post("/api/models/?name=a%00b", doc, format="json")
    assert response.status_code == 400
    assert response.json() == {"name": ["the name must not contain NUL characters"]}
