"""The commands that open the lab's database (``user add``, ``manage``, ``predictors train
--inline``) refuse, in one line that says what to do, when LATENCYLAB_URL says the lab is a server
elsewhere and the database here would be a local file, or when no database is configured at all;
they create nothing in the folder they run in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from latencylab.commands import server_host
from tests.cli.live_lab import run_cli
from tests.cli.server_lab import client_env, run_latencylab


@pytest.mark.parametrize(
    "argv",
    [
        ["user", "add", "alice", "--team", "vision"],
        ["manage", "migrate"],
        ["predictors", "train", "--device", "s10", "--inline"],
    ],
)
def test_with_a_server_url_they_refuse_to_open_a_local_database(argv: list[str], tmp_path: Path) -> None:
    env = client_env("http://lab.example:8000", "some-token")
    env["LATENCYLAB_VAR_DIR"] = str(tmp_path / "var")

    done = run_latencylab(*argv, env=env, cwd=tmp_path)

    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "runs on the server host, but LATENCYLAB_URL is set (http://lab.example:8000)" in line
    assert "where LATENCYLAB_URL is unset" in line and "set DATABASE_URL to the server's database" in line
    assert list(tmp_path.iterdir()) == []


def test_with_nothing_configured_they_refuse_instead_of_making_a_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("DATABASE_URL", "LATENCYLAB_VAR_DIR", "LATENCYLAB_URL"):
        monkeypatch.delenv(name, raising=False)
    missing = tmp_path / "var" / "latencylab.sqlite3"
    monkeypatch.setattr(server_host, "_embedded_database", lambda: missing)
    monkeypatch.chdir(tmp_path)

    rc, out, err = run_cli(["user", "add", "alice", "--team", "vision"], capsys)

    assert rc == 2 and out == ""
    assert f"none is configured here: DATABASE_URL and LATENCYLAB_VAR_DIR are unset and there is no {missing}" in err
    assert "start a lab here first with `latencylab up`" in err
    assert list(tmp_path.iterdir()) == []


def test_a_server_database_or_the_servers_own_folder_is_allowed(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("LATENCYLAB_URL", "http://lab.example:8000")
    monkeypatch.setenv("DATABASE_URL", "postgres://lab@db:5432/latencylab")
    assert server_host.database_refusal("manage") is None
    monkeypatch.delenv("LATENCYLAB_URL")
    monkeypatch.setenv("DATABASE_URL", "sqlite:////srv/lab/latencylab.sqlite3")
    assert server_host.database_refusal("manage") is None
    monkeypatch.delenv("DATABASE_URL")
    monkeypatch.setenv("LATENCYLAB_VAR_DIR", str(tmp_path))
    assert server_host.database_refusal("manage") is None
