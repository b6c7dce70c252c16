"""``GET /api/health/``: a cheap, unauthenticated, unthrottled probe that says nothing but ok."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import OperationalError
from django.test import Client
from rest_framework.test import APIClient
from rest_framework.throttling import AnonRateThrottle

pytestmark = pytest.mark.django_db


def test_health_answers_ok_without_a_token_and_without_a_session() -> None:
    response = Client().get("/api/health/")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "Set-Cookie" not in response.headers
    assert "no-cache" in response["Cache-Control"]


def test_health_is_not_throttled() -> None:
    # Anonymous API requests are limited per address; a probe every few seconds must never be.
    client = Client()
    with mock.patch.object(AnonRateThrottle, "THROTTLE_RATES", {"anon": "2/min"}):
        assert [client.get("/api/docs/").status_code for _ in range(3)] == [200, 200, 429]  # the rate applies
        assert [client.get("/api/health/").status_code for _ in range(10)] == [200] * 10


def test_health_refuses_writes() -> None:
    assert Client().post("/api/health/").status_code == 405
    assert Client().head("/api/health/").status_code == 200


def test_health_says_unavailable_without_the_cause_when_the_database_fails() -> None:
    secret = "could not connect to server at db.internal:5432 as user latencylab"
    with mock.patch("server.api.health.connection.cursor", side_effect=OperationalError(secret)):
        response = Client().get("/api/health/")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable"}
    assert b"db.internal" not in response.content


def test_health_is_left_out_of_the_schema_on_purpose() -> None:
    schema = APIClient().get("/api/schema/?format=json").json()
    assert "/api/health/" not in schema["paths"]
