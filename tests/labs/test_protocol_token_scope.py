"""The lab API and the user API do not share credentials: a lab token reads no models or jobs,
and a user's API token (or a signed-in browser, even a staff one's) makes no lab call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.lab_protocol import Heartbeat, as_json
from server.devices.models import Device

pytestmark = pytest.mark.django_db

HEARTBEAT = as_json(Heartbeat("rack", "run-1", ["cpu:rack"]))


@pytest.mark.parametrize("path", ["/api/models/", "/api/jobs/"])
def test_a_lab_token_reads_nothing_of_the_user_api(
    path: str, api: Any, add_lab: Callable[..., Any], member: Any, make_job: Callable[..., Any]
) -> None:
    from rest_framework.test import APIClient

    make_job(member.team)
    assert api.get(path).json()["count"] == 1  # there is something to see, with a user's token
    _, token = add_lab("rack")

    answer = APIClient().get(path, HTTP_AUTHORIZATION=f"Lab {token}")

    assert answer.status_code in (401, 403)
    assert "results" not in answer.json()


def test_a_user_api_token_makes_no_lab_call(
    client_for: Callable[[Any], Any], staff: Any, add_lab: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    add_lab("rack")
    make_device(worker="rack", identity="cpu:rack")
    before = Device.objects.get(identity="cpu:rack").last_heartbeat

    answer = client_for(staff).post("/api/lab/heartbeat", HEARTBEAT, format="json")

    assert answer.status_code in (401, 403)
    assert "devices" not in answer.json()
    assert Device.objects.get(identity="cpu:rack").last_heartbeat == before


def test_a_user_api_token_sent_as_a_lab_token_is_invalid(member: Any, client: Any) -> None:
    answer = client.post(
        "/api/lab/heartbeat", HEARTBEAT, content_type="application/json", HTTP_AUTHORIZATION=f"Lab {member.key}"
    )
    assert answer.status_code == 401 and answer.json()["detail"] == "invalid lab token"


def test_a_signed_in_browser_makes_no_lab_call(staff: Any, web_client: Callable[[Any], Any]) -> None:
    answer = web_client(staff).post("/api/lab/heartbeat", HEARTBEAT, content_type="application/json")
    assert answer.status_code in (401, 403)
    assert "devices" not in answer.json()
