"""Teams own models and jobs; a membership ties a user to a team; tokens authenticate the API."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import models

TOKEN_PREFIX = "ll_"
TEAM_NAME_MAX_LENGTH = 100


class Team(models.Model):
    """A group of people who share uploaded networks and profiling results."""

    name = models.CharField(max_length=TEAM_NAME_MAX_LENGTH, unique=True)
    offline_wait_seconds = models.PositiveIntegerField(
        default=3600,
        help_text="How long a queued job waits for its offline device (or an equivalent) to come back "
        "before it fails with the reason.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's place in a team. A user's first membership is their current team for the API."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "team"],
                name="membership_user_team_unique",
                violation_error_message="This user is already a member of this team.",
            ),
            models.CheckConstraint(condition=models.Q(role__in=["owner", "member"]), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


def new_token_key(prefix: str = TOKEN_PREFIX) -> str:
    """A new random token key (256 bits) after ``prefix``, which tells the kinds of token apart."""
    return prefix + secrets.token_urlsafe(32)


def hash_token_key(key: str) -> str:
    """The stored form of a token key (keys are random and long, so a fast hash is enough)."""
    return hashlib.sha256(key.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    """Named queries on API tokens."""

    def active(self) -> ApiTokenQuerySet:
        """Tokens that have not been revoked and whose user is active."""
        return self.filter(revoked_at__isnull=True, user__is_active=True)


class ApiToken(models.Model):
    """An API key, stored only as its SHA-256; ``Authorization: Token <key>`` presents it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, help_text="The first characters of the key, to tell tokens apart.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @classmethod
    def issue(cls, user: Any, name: str = "") -> tuple[ApiToken, str]:
        """Create a token for ``user``; the plain key is returned once and never stored."""
        key = new_token_key()
        token = cls.objects.create(user=user, name=name, prefix=key[:10], key_hash=hash_token_key(key))
        return token, key
