"""``python -m server <command>``: Django's manage.py for this project."""

from __future__ import annotations

import os
import sys


def main() -> None:
    """Run a Django management command with LatencyLab's settings."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line([f"{sys.executable} -m server", *sys.argv[1:]])


if __name__ == "__main__":
    main()
