"""Guessing lab tokens is bounded per address, with the same count as guessing API tokens."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_an_address_that_guesses_lab_tokens_is_locked_out(
    settings: Any, add_lab: Callable[..., Any], lab_view: Callable[..., Any]
) -> None:
    settings.LATENCYLAB_TOKEN_FAILURE_LIMIT = 5
    _, token = add_lab()
    for i in range(5):
        answer = lab_view(f"Lab guess-{i}")
        assert answer.status_code == 401 and answer.data["detail"] == "invalid lab token"
        assert answer["WWW-Authenticate"] == "Lab"
    locked = lab_view("Lab guess-5")
    assert locked.status_code == 429 and "Too many bad lab tokens" in locked.data["detail"]
    assert int(locked["Retry-After"]) > 0
    # Its bad tokens are refused for the window, a valid lab token from the same address is not.
    assert lab_view("Lab guess-6").status_code == 429
    assert lab_view(f"Lab {token}").status_code == 200


def test_bad_api_tokens_and_bad_lab_tokens_share_one_count(
    settings: Any, client: Any, add_lab: Callable[..., Any], lab_view: Callable[..., Any]
) -> None:
    settings.LATENCYLAB_TOKEN_FAILURE_LIMIT = 4
    _, token = add_lab()
    for i in range(2):
        assert (
            client.get("/api/jobs/", HTTP_AUTHORIZATION=f"Token guess-{i}", REMOTE_ADDR="10.0.0.1").status_code == 401
        )
        assert lab_view(f"Lab guess-{i}", address="10.0.0.1").status_code == 401
    assert lab_view("Lab guess-9", address="10.0.0.1").status_code == 429
    assert lab_view(f"Lab {token}", address="10.0.0.1").status_code == 200
    api = client.get("/api/jobs/", HTTP_AUTHORIZATION="Token guess-9", REMOTE_ADDR="10.0.0.1")
    assert api.status_code == 429 and "Too many bad API tokens" in api.json()["detail"]


@pytest.mark.parametrize("header", ["Lab", "Lab a b", "lab"])
def test_a_malformed_lab_header_is_401(header: str, lab_view: Callable[..., Any]) -> None:
    answer = lab_view(header)
    assert answer.status_code == 401 and "Authorization: Lab <key>" in answer.data["detail"]


def test_no_header_is_401_asking_for_a_lab_token(lab_view: Callable[..., Any]) -> None:
    answer = lab_view(None)
    assert answer.status_code == 401 and answer["WWW-Authenticate"] == "Lab"
