"""``latencylab user add`` and ``latencylab up`` as a user runs them."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.cli.test_demo_command import _free_port
from tests.waiting import wait_for


def _embedded_env(tmp_path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "LATENCYLAB_QUEUE_PREFIX", "DJANGO_SETTINGS_MODULE")
    }
    env["LATENCYLAB_VAR_DIR"] = str(tmp_path / "var")
    return env


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "latencylab.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_user_add_prints_a_token_that_the_api_accepts(tmp_path):
    env = _embedded_env(tmp_path)
    done = _cli("user", "add", "alice", "--team", "vision", env=env)
    assert done.returncode == 0, done.stderr
    assert "user alice in team vision" in done.stdout
    token = done.stdout.split("token: ")[1].strip()
    assert len(token) > 20
    again = _cli("user", "add", "alice", "--team", "vision", env=env)
    assert again.returncode == 0 and again.stdout.split("token: ")[1].strip() != token
    db = sqlite3.connect(tmp_path / "var" / "latencylab.sqlite3")
    (teams,) = db.execute("select count(*) from accounts_team where name = 'vision'").fetchone()
    assert teams == 1


def test_user_add_rejects_a_bad_name(tmp_path):
    done = _cli("user", "add", "no spaces please", "--team", "vision", env=_embedded_env(tmp_path))
    assert done.returncode == 2
    assert "not a valid user name" in done.stderr


@pytest.mark.slow
def test_up_serves_the_api_with_a_registered_worker_and_stops_on_ctrl_c(tmp_path):
    env = _embedded_env(tmp_path)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "latencylab.cli", "up", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def schema_or_none() -> bytes | None:
            try:
                return bytes(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/schema/", timeout=5).read())
            except OSError:
                return None

        schema = wait_for(schema_or_none, 120, "the API of latencylab up", interval=0.5)
        assert b"/api/jobs/" in schema
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/jobs/", timeout=5)
        assert denied.value.code == 401
        db = tmp_path / "var" / "latencylab.sqlite3"

        def online_cpus() -> int:
            (count,) = (
                sqlite3.connect(db)
                .execute("select count(*) from devices_device where status = 'online' and kind = 'cpu'")
                .fetchone()
            )
            return int(count)

        assert wait_for(online_cpus, 120, "the host CPU to come online", interval=0.5) == 1
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-2000:]
    (left,) = (
        sqlite3.connect(tmp_path / "var" / "latencylab.sqlite3")
        .execute("select count(*) from devices_device where status != 'offline'")
        .fetchone()
    )
    assert left == 0, out[-4000:]
