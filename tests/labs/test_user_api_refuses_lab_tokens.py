"""A lab token gets nothing from the user API (no models, no jobs, no devices, no staff list),
and a user's API token is not a lab token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings

from server.labs.authentication import LabTokenAuthentication

pytestmark = pytest.mark.django_db

USER_ENDPOINTS = [
    ("get", "/api/models/"),
    ("get", "/api/jobs/"),
    ("get", "/api/devices/"),
    ("get", "/api/predictors/"),
    ("get", "/api/fusion/sweeps/"),
    ("get", "/api/remote/runs/"),
    ("get", "/api/labs/"),
    ("post", "/api/jobs/"),
    ("post", "/api/labs/"),
]


def test_the_lab_scheme_is_not_among_the_api_defaults() -> None:
    defaults = settings.REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]
    assert not any("labs" in path for path in defaults)


@pytest.mark.parametrize(("method", "path"), USER_ENDPOINTS)
def test_a_lab_token_cannot_use_the_user_api(
    method: str, path: str, client: Any, add_lab: Callable[..., Any], member: Any, make_job: Callable[..., Any]
) -> None:
    make_job(member.team)
    _, token = add_lab()
    for header in (f"Lab {token}", f"Token {token}"):
        answer = getattr(client, method)(path, HTTP_AUTHORIZATION=header, content_type="application/json", data={})
        assert answer.status_code in (401, 403), (header, path, answer.status_code)
        assert "results" not in answer.json()


def test_a_lab_token_cannot_read_a_job(
    client: Any, add_lab: Callable[..., Any], member: Any, make_job: Callable[..., Any]
) -> None:
    job = make_job(member.team)
    _, token = add_lab()
    answer = client.get(f"/api/jobs/{job.pk}/", HTTP_AUTHORIZATION=f"Lab {token}")
    assert answer.status_code in (401, 403) and "state" not in answer.json()


def test_a_user_api_token_is_not_a_lab_token(member: Any, lab_view: Callable[..., Any]) -> None:
    answer = lab_view(f"Lab {member.key}")
    assert answer.status_code == 401 and answer.data["detail"] == "invalid lab token"


def test_the_lab_scheme_leaves_a_user_token_header_alone(member: Any) -> None:
    from rest_framework.test import APIRequestFactory

    request = APIRequestFactory().get("/api/lab/x/", HTTP_AUTHORIZATION=f"Token {member.key}")
    assert LabTokenAuthentication().authenticate(request) is None  # another scheme: not ours to judge
