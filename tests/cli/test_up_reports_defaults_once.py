"""``latencylab up`` on embedded defaults tells the user once which defaults it uses, not once per
process it starts, and its Celery processes do not warn about a missing broker host."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.cli.test_demo_command import _free_port
from tests.cli.test_service_commands import _embedded_env
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


def test_up_reports_each_embedded_default_once(tmp_path: Path) -> None:
    log = tmp_path / "up.log"
    env = _embedded_env(tmp_path)
    env.pop("SECRET_KEY", None)  # as on a fresh clone: the key is made under var/
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "latencylab.cli", "up", "--port", str(_free_port())],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        # Up once the device's Celery worker and the trainer's say they are ready (each has made
        # its broker connections by then); gunicorn has loaded the settings before the API answers.

        def both_ready() -> bool:
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            return log.read_text(errors="replace").count(" ready.") >= 2

        wait_for(both_ready, 180, lambda: log.read_text(errors="replace")[-3000:], interval=0.5)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 4  # gunicorn, the worker and its device process, the trainer
        inherited = {p.environ().get("LATENCYLAB_DEFAULTS_REPORTED") for p in children}
        assert inherited == {"CELERY_BROKER_URL,DATABASE_URL,SECRET_KEY"}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=90)
    text = log.read_text(errors="replace")
    for name in ("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"):
        assert text.count(f"{name} is not set; using the embedded default") == 1, text[-3000:]
    assert "No hostname was supplied" not in text
    # One key for every process: the parent made it before starting them.
    assert len((tmp_path / "var" / "secret_key").read_text().strip()) > 40
