"""``adduser_token NAME --team TEAM``: create a user in a team and print a new API key."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from server.accounts.services import create_user_with_token


class Command(BaseCommand):
    """Create (or reuse) a user and team and print a fresh API key."""

    help = "Create a user in a team (both created when missing) and print a new API token."

    def add_arguments(self, parser: CommandParser) -> None:
        """NAME and --team."""
        parser.add_argument("username")
        parser.add_argument("--team", required=True, help="team name (created when missing)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Print the key on its own line, so scripts can capture it."""
        try:
            user, key = create_user_with_token(options["username"], options["team"])
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stderr.write(f"user {user.username} in team {options['team']}: API token (shown once):")
        self.stdout.write(key)
