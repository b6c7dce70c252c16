"""A predictor requested through the API is trained by a real trainer process (``python -m
server.trainer``, its own queue) and then answers predictions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import REPO, TASK_TIME_LIMIT, database_url
from tests.e2e.helpers import RESEND_AFTER_SECONDS
from tests.waiting import wait_for

CELL = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


@pytest.fixture
def start_trainer(transactional_db: None, queue_prefix: str, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Factory: start a trainer process on this session's queues; killed (and its log shown) at teardown."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "server.settings",
            "DATABASE_URL": database_url(),
            "LATENCYLAB_QUEUE_PREFIX": queue_prefix,
            "LATENCYLAB_TASK_TIME_LIMIT": str(TASK_TIME_LIMIT),
            "LATENCYLAB_RESEND_AFTER_SECONDS": str(RESEND_AFTER_SECONDS),
            # The NB201 table takes minutes of CPU; the API tests cover it.
            "LATENCYLAB_PREDICT_NB201_TABLE": "0",
            "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
    )
    log_path = tmp_path / "trainer.log"
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "server.trainer", "--loglevel", "INFO"],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
    print("----- trainer log -----\n" + (log_path.read_text(errors="replace")[-6000:] if log_path.exists() else ""))


@pytest.mark.django_db(transaction=True)
def test_a_requested_predictor_is_trained_by_the_trainer_process(start_trainer: Any, e2e_api: Any) -> None:
    from server.predictors.models import Predictor
    from server.predictors.qed_import import import_qed
    from server.predictors.serving import clear_cache

    clear_cache()
    phone = next(d.device for d in import_qed().devices if d.device.name == "mi8se")
    trainer = start_trainer()

    resp = e2e_api.post(
        "/api/predictors/", {"device": phone.pk, "method": "rf", "search": "fast", "seed": 1}, format="json"
    )
    assert resp.status_code == 202, resp.content
    pk = resp.json()["id"]

    def finished() -> Any:
        if trainer.poll() is not None:
            raise AssertionError(f"the trainer exited with {trainer.returncode}")
        row = Predictor.objects.get(pk=pk)
        return row if row.state in ("ready", "failed") else None

    row = wait_for(finished, 240, f"predictor {pk} to be trained")
    assert row.state == "ready", row.failure_reason
    assert row.started_at is not None and row.trained_at is not None
    assert row.evaluation["protocol"] == "grouped 5-fold cv" and row.e2e_mape > 0

    body = e2e_api.get(f"/api/predictors/{pk}/").json()
    assert body["state"] == "ready" and body["evaluation"]["e2e_mape"] == row.e2e_mape
    answer = e2e_api.post("/api/predict/", {"device": phone.pk, "architectures": [{"nb201": CELL}]}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["predictor"]["id"] == pk and answer.json()["results"][0]["latency_ms"] > 0
