"""The guard of the commands that open the lab's database directly (``user add``, ``manage``,
``predictors train --inline``): they run on the server host only.

Every other command that reads or changes the lab speaks to the server's REST API. Without this
guard a command run on a client machine would open Django's embedded default, a fresh SQLite file
under the checkout's ``var/``, and answer from an empty lab instead of the server's.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from latencylab.commands.output import fail


def _embedded_database() -> Path:
    """Where ``server/settings.py`` puts the SQLite file when neither DATABASE_URL nor
    LATENCYLAB_VAR_DIR is set (``var/`` beside the code); found without importing the settings,
    which would create the folder."""
    spec = importlib.util.find_spec("server")
    origin = Path(spec.origin if spec is not None and spec.origin else "server/__init__.py")
    return origin.resolve().parent.parent / "var" / "latencylab.sqlite3"


def database_refusal(command: str) -> str | None:
    """Why ``latencylab <command>`` must not open a database here (one line), or None when it may:
    DATABASE_URL names a server database, or this is the server host (its var folder is set or
    its embedded database exists) and LATENCYLAB_URL does not say the lab is elsewhere."""
    database_url = os.environ.get("DATABASE_URL", "").strip()
    server_url = os.environ.get("LATENCYLAB_URL", "").strip()
    if database_url and not database_url.startswith("sqlite"):
        return None
    if server_url:
        return (
            f"`latencylab {command}` opens the lab's database and runs on the server host, but LATENCYLAB_URL is "
            f"set ({server_url}), so the lab is that server and the database here would be a local SQLite file: "
            "run it on the server host (where LATENCYLAB_URL is unset), or set DATABASE_URL to the server's database"
        )
    if database_url or os.environ.get("LATENCYLAB_VAR_DIR", "").strip():
        return None
    embedded = _embedded_database()
    if embedded.is_file():
        return None
    return (
        f"`latencylab {command}` opens the lab's database, and none is configured here: DATABASE_URL and "
        f"LATENCYLAB_VAR_DIR are unset and there is no {embedded}; run it on the server host, set DATABASE_URL "
        "(or LATENCYLAB_VAR_DIR to the server's var folder), or start a lab here first with `latencylab up`"
    )


def server_host_only(command: str) -> int | None:
    """Say why and return the exit status 2 when ``database_refusal`` refuses; None to go on."""
    refusal = database_refusal(command)
    return None if refusal is None else fail(refusal)


__all__ = ["database_refusal", "server_host_only"]
