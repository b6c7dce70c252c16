"""App config for accounts."""

from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Teams, memberships and API tokens."""

    name = "server.accounts"
    label = "accounts"
    verbose_name = "Accounts"
