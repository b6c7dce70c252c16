"""``latencylab qed import``, ``predictors train --inline``, ``predictors list`` and ``trainset build``
as a user runs them, on the embedded defaults in a fresh folder."""

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


def test_qed_import_reads_the_public_dataset_as_published(tmp_path):
    from tests.devicelab.predict.qed_published import write_published

    clone = tmp_path / "mobile-ml-benchmark"
    ops, e2e = write_published(clone, ["resnet10", "mobilenetv2_wd4", "squeezenet_v1_1"])
    env = _embedded_env(tmp_path)
    done = _cli("qed", "import", "--data", str(clone), env=env)
    assert done.returncode == 0, done.stderr
    assert f"imported qed measurements from {ops}, {e2e}" in done.stdout
    for phone in ("pixel4", "s10", "mi8se", "a03s", "iphone7", "iphonexs"):
        row = next(line for line in done.stdout.splitlines() if f" {phone} " in line)
        assert "created" in row and " 3 " in row
    missing = _cli("qed", "import", "--data", str(tmp_path / "empty"), env=env)
    assert missing.returncode != 0 and "does not exist or is not a folder" in missing.stderr


@pytest.mark.slow
def test_qed_import_then_train_a_phone_predictor_inline(tmp_path):
    env = _embedded_env(tmp_path)
    first = _cli("qed", "import", env=env)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    for phone in ("pixel4", "s10", "mi8se", "a03s", "iphone7", "iphonexs"):
        row = next(line for line in lines if f" {phone} " in line)
        assert "created" in row and " 67 " in row
    again = _cli("qed", "import", env=env)
    assert again.returncode == 0, again.stderr
    assert all(" kept " in line for line in again.stdout.splitlines()[3:])
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
    listed = _cli("predictors", "list", env=env)
    assert listed.returncode == 0 and "(shared)" in listed.stdout and "ready" in listed.stdout
    (artifact,) = db.execute("select artifact from predictors_predictor where state = 'ready'").fetchone()
    assert json.loads(artifact)["format"] == "latencylab.predictor"

    _cli("user", "add", "alice", "--team", "vision", env=env)
    refused = _cli("trainset", "build", "--device", "s10", "--team", "vision", "--synthetic", "2", env=env)
    assert refused.returncode == 2 and "imported device" in refused.stderr
    unknown = _cli("predictors", "train", "--device", "nope", env=env)
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
    assert _cli("qed", "import", env=env).returncode == 0
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

        devices = wait_for(devices_or_none, 240, "the web server to come up", interval=0.5)
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
