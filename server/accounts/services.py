"""Account actions: who belongs to which team, and issuing API tokens."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction

from server.accounts.models import TEAM_NAME_MAX_LENGTH, ApiToken, Membership, Team


def current_team(user: Any) -> Team | None:
    """The team a user acts for in the API: their first membership, or None."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    membership = Membership.objects.filter(user=user).select_related("team").order_by("created_at", "pk").first()
    return membership.team if membership else None


def add_member(user: Any, team: Team, role: str = Membership.Role.MEMBER) -> Membership:
    """Put ``user`` in ``team`` (a no-op when they already are)."""
    membership, _ = Membership.objects.get_or_create(user=user, team=team, defaults={"role": role})
    return membership


def issue_token(user: Any, name: str = "") -> str:
    """A new API key for ``user``; only its hash is stored, so show it now or lose it."""
    _, key = ApiToken.issue(user, name=name)
    return key


@transaction.atomic
def create_user_with_token(username: str, team_name: str) -> tuple[Any, str]:
    """Create (or reuse) a user and team, make the user a member, and issue an API key.

    Backs ``latencylab user add NAME --team TEAM`` and ``adduser_token``. A new team's first
    member becomes its owner. Running it again for the same user issues another key.
    """
    username = username.strip()
    team_name = team_name.strip()
    if not username:
        raise ValidationError({"username": "the user name is empty"})
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        raise ValidationError(
            {"username": f"{username!r} is not a valid user name: use letters, digits and @/./+/-/_ only"}
        ) from None
    if not team_name:
        raise ValidationError({"team": "the team name is empty"})
    if len(team_name) > TEAM_NAME_MAX_LENGTH:
        raise ValidationError({"team": f"the team name is longer than {TEAM_NAME_MAX_LENGTH} characters"})
    User = get_user_model()
    user, user_created = User.objects.get_or_create(username=username)
    if user_created:
        # API users authenticate with tokens; an admin sets a password for the web login.
        user.set_unusable_password()
        user.save(update_fields=["password"])
    team, team_created = Team.objects.get_or_create(name=team_name)
    add_member(user, team, Membership.Role.OWNER if team_created else Membership.Role.MEMBER)
    return user, issue_token(user, name=f"created for {username} in {team_name}")
