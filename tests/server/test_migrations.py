"""The migrations in migrations/ match the models (no model change without its migration)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_missing_migrations() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # makemigrations --check exits 1 when a migration is missing
        pytest.fail(
            f"models changed without a migration (run `python -m server makemigrations`):\n{out.getvalue()}"
            f" (exit {exc.code})"
        )
