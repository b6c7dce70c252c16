"""The API refuses what no client means: numbers out of any real range, nulls where a value or
nothing is meant, and bodies nested deeper than the code that reads them can go."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from server.api.parsers import MAX_JSON_DEPTH
from server.selection.models import StoredNetworkProfile

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("latency_ms", 1e30),
        ("latency_ms", 3_600_001),  # over an hour per transfer
        ("latency_ms", None),
        ("throughput_mbps", 1e30),
        ("cv", 1e30),
        ("cv", None),
    ],
)
def test_a_custom_network_profile_out_of_range_is_refused_naming_the_field(api: Any, field: str, value: Any) -> None:
    body = {"name": "absurd", "latency_ms": 20, "throughput_mbps": 50, "cv": 0.2, field: value}
    response = api.post("/api/network-profiles/", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json() and field in response.json()[field][0]
    assert not StoredNetworkProfile.objects.exists()


def test_a_custom_network_profile_at_the_bounds_is_stored(api: Any) -> None:
    body = {"name": "satellite at worst", "latency_ms": 3_600_000, "throughput_mbps": 1_000_000, "cv": 10}
    response = api.post("/api/network-profiles/", body, format="json")
    assert response.status_code == 201, response.json()
    # null throughput still means unlimited, as documented
    unlimited = api.post(
        "/api/network-profiles/", {"name": "lan", "latency_ms": 1, "throughput_mbps": None}, format="json"
    )
    assert unlimited.status_code == 201, unlimited.json()


def test_side_by_side_refuses_null_architectures(api: Any, make_device: Any) -> None:
    device = make_device()
    left_out = api.post("/api/predict/side-by-side/", {"device": device.pk}, format="json")
    assert left_out.status_code == 200, left_out.json()
    null = api.post("/api/predict/side-by-side/", {"device": device.pk, "architectures": None}, format="json")
    assert null.status_code == 400
    assert null.json()["architectures"] == ["architectures must be a non-empty list, or left out (not null)"]


def test_a_recursion_error_is_a_400_naming_the_depth_limit_logged_as_one_warning(
    api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    from server.api.exceptions import exception_handler

    request = Request(APIRequestFactory().post("/api/predict/", b"[]", content_type="application/json"))
    logger = logging.getLogger("server")
    logger.addHandler(caplog.handler)  # the "server" logger does not propagate to the root
    try:
        with caplog.at_level(logging.DEBUG):
            answer = exception_handler(RecursionError("maximum recursion depth exceeded"), {"request": request})
    finally:
        logger.removeHandler(caplog.handler)
    assert answer is not None and answer.status_code == 400
    assert f"more than {MAX_JSON_DEPTH} levels" in answer.data["detail"]
    assert "RecursionError" not in answer.data["detail"]
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.levelno, r.exc_info) for r in records] == [(logging.WARNING, None)]
    assert "POST /api/predict/" in records[0].getMessage()


@pytest.mark.parametrize("path", ["/api/predict/", "/api/network-profiles/", "/api/predict/side-by-side/"])
def test_a_body_nested_10000_deep_is_refused_naming_the_apis_depth_limit(api: Any, path: str) -> None:
    # Past orjson's own limit (1,024 levels): the answer names the limit a client must keep.
    response = api.post(path, b"[" * 10_000 + b"]" * 10_000, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"] == f"JSON parse error - the body nests more than {MAX_JSON_DEPTH} levels deep"


def test_a_graph_json_upload_nested_10000_deep_is_refused_naming_the_depth_limit(
    api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    nested = b'{"name": "deep", "extra": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    with caplog.at_level(logging.ERROR):
        response = api.post("/api/models/", {"file": SimpleUploadedFile("deep.json", nested)}, format="multipart")
    assert response.status_code == 400
    body = response.content.decode()
    assert f"more than {MAX_JSON_DEPTH} levels deep" in body and "RecursionError" not in body
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no traceback logged
