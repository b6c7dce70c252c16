"""Creating users with API tokens, from the service and the management command."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from server.accounts.models import ApiToken, Membership
from server.accounts.services import create_user_with_token, current_team

pytestmark = pytest.mark.django_db


def test_new_user_and_team(django_user_model: type) -> None:
    user, key = create_user_with_token("alice", "vision")
    assert current_team(user).name == "vision"  # type: ignore[union-attr]
    assert Membership.objects.get(user=user).role == Membership.Role.OWNER
    assert not user.has_usable_password()
    assert ApiToken.objects.filter(user=user).count() == 1 and key.startswith("ll_")


def test_again_issues_another_key_and_keeps_the_first_team() -> None:
    user, first = create_user_with_token("bob", "speech")
    _, second = create_user_with_token("bob", "vision")
    assert first != second and ApiToken.objects.filter(user=user).count() == 2
    assert current_team(user).name == "speech"  # type: ignore[union-attr]
    assert Membership.objects.get(user=user, team__name="vision").role == Membership.Role.OWNER


def test_second_member_of_a_team_is_a_member() -> None:
    create_user_with_token("carol", "nlp")
    dave, _ = create_user_with_token("dave", "nlp")
    assert Membership.objects.get(user=dave).role == Membership.Role.MEMBER


@pytest.mark.parametrize(
    "username,team,message",
    [
        ("", "t", "the user name is empty"),
        ("bad name!", "t", "is not a valid user name"),
        ("erin", "  ", "the team name is empty"),
    ],
)
def test_bad_names_are_refused(username: str, team: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        create_user_with_token(username, team)


def test_management_command_prints_a_working_key() -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command("adduser_token", "frank", "--team", "lab", stdout=out, stderr=err)
    key = out.getvalue().strip()
    assert "API token (shown once)" in err.getvalue()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/models/").status_code == 200
    with pytest.raises(CommandError, match="not a valid user name"):
        call_command("adduser_token", "no spaces", "--team", "lab", stdout=out, stderr=err)
