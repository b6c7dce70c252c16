"""``latencylab predictors train --inline`` on the server host, and ``up``'s trainer training what
``qed import`` and the API ask for, as a user runs them, on the embedded defaults in a fresh
folder. (The commands through the API against a live server: tests/cli/test_predictors_*,
test_trainset_build_through_the_api.py, test_qed_import_through_the_api.py.)"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from typing import Any

import pytest

from tests.cli.test_demo_command import _free_port
from tests.cli.test_service_commands import _cli, _embedded_env
from tests.waiting import wait_for


@pytest.mark.slow
def test_qed_phones_then_train_a_phone_predictor_inline(tmp_path):
    env = _embedded_env(tmp_path)
    # On the server host, the importer the API calls (``qed import`` itself asks a server).
    assert _cli("manage", "migrate", "--verbosity", "0", env=env).returncode == 0
    first = _cli("manage", "shell", "-c", "from server.predictors.qed_import import import_qed; import_qed()", env=env)
    assert first.returncode == 0, first.stderr
    db = sqlite3.connect(tmp_path / "var" / "latencylab.sqlite3")
    assert db.execute("select count(*) from devices_device where kind = 'imported'").fetchone() == (6,)
    assert db.execute("select count(*) from predictors_importedmeasurement").fetchone() == (6 * 67,)

    trained = _cli(
        "predictors",
        "train",
        "--device",
        "s10",
        "--method",
        "lasso",
        "--search",
        "fast",
        "--inline",
        "--no-table",
        env=env,
    )
    assert trained.returncode == 0, trained.stderr
    assert "ready: end-to-end MAPE" in trained.stdout and "grouped 5-fold cv" in trained.stdout
    assert "MAPE vs training networks: 30:" in trained.stdout
    (artifact,) = db.execute("select artifact from predictors_predictor where state = 'ready'").fetchone()
    assert json.loads(artifact)["format"] == "latencylab.predictor"

    unknown = _cli("predictors", "train", "--device", "nope", "--inline", env=env)
    assert unknown.returncode == 2 and "there is no device 'nope'" in unknown.stderr


def _api(port: int, token: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


@pytest.mark.slow
def test_up_runs_a_trainer_that_trains_requested_predictors(tmp_path):
    env = {**_embedded_env(tmp_path), "LATENCYLAB_PREDICT_NB201_TABLE": "false"}
    token = _cli("user", "add", "alice", "--team", "vision", env=env).stdout.split("token: ")[1].strip()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "latencylab.cli", "up", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def devices_or_none() -> Any:
            try:
                return _api(port, token, "devices/")
            except OSError:
                return None

        wait_for(devices_or_none, 240, "the web server to come up", interval=0.5)
        client = {**env, "LATENCYLAB_URL": f"http://127.0.0.1:{port}", "LATENCYLAB_TOKEN": token}
        imported = _cli("qed", "import", env=client)
        assert imported.returncode == 0, imported.stderr
        devices = _api(port, token, "devices/")
        phone = next(d for d in devices["results"] if d["name"] == "a03s")
        assert phone["kind"] == "imported" and phone["status"] == "offline"
        queued = _api(port, token, "predictors/", {"device": phone["id"], "method": "lasso", "search": "fast"})
        assert queued["state"] == "queued"
        state = queued

        def trained() -> bool:
            nonlocal state
            state = _api(port, token, f"predictors/{queued['id']}/")
            return state["state"] in ("ready", "failed")

        wait_for(trained, 240, lambda: f"the predictor, still {state['state']}: {state['progress_message']}", 1)
        assert state["state"] == "ready", state["failure_reason"]
        assert state["evaluation"]["protocol"] == "grouped 5-fold cv"
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-2000:]
