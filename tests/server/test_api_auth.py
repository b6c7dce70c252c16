"""API authentication: hashed token keys, 401 without a valid one, 403 without a team."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from server.accounts.models import ApiToken, hash_token_key
from server.accounts.services import issue_token

pytestmark = pytest.mark.django_db


def test_token_is_stored_only_as_its_hash(member: Any) -> None:
    token = ApiToken.objects.get(user=member.user)
    assert token.key_hash == hash_token_key(member.key) and member.key not in token.key_hash
    assert member.key.startswith(token.prefix)


def test_valid_token_is_accepted_and_use_is_recorded(api: Any, member: Any) -> None:
    assert api.get("/api/models/").status_code == 200
    assert ApiToken.objects.get(user=member.user).last_used_at is not None


@pytest.mark.parametrize("header", [None, "Token ll_not-a-real-key", "Token", "Token a b"])
def test_missing_or_bad_token_is_401(header: str | None) -> None:
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/jobs/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["detail"]


def test_revoked_token_is_401(api: Any, member: Any) -> None:
    ApiToken.objects.filter(user=member.user).update(revoked_at=timezone.now())
    assert api.get("/api/jobs/").status_code == 401


def test_user_without_team_is_403_with_the_fix(client_for: Any, member: Any) -> None:
    loner = get_user_model().objects.create(username="loner")
    member.key = issue_token(loner)
    response = client_for(member).get("/api/models/")
    assert response.status_code == 403
    assert "belongs to no team" in response.json()["detail"]
