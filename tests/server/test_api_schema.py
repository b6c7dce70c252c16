"""The OpenAPI schema generates cleanly and the docs page works offline (assets served locally)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_schema_generates_without_warnings() -> None:
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", stdout=out)
    assert '"/api/jobs/{id}/cancel/"' in out.getvalue()
    assert '"tokenAuth"' in out.getvalue()


def test_schema_endpoint_is_public() -> None:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    schema: dict[str, Any] = response.json()
    assert {"/api/models/", "/api/jobs/", "/api/devices/", "/api/models/{id}/"} <= set(schema["paths"])
    upload = schema["paths"]["/api/models/"]["post"]["requestBody"]["content"]
    assert {"multipart/form-data", "application/json"} <= set(upload)


def test_docs_page_loads_its_assets_from_our_own_static_files() -> None:
    page = APIClient().get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn." not in html and "unpkg" not in html and "jsdelivr" not in html
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    asset = APIClient().get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert asset.status_code == 200
    assert APIClient().get("/api/redoc/").status_code == 200
