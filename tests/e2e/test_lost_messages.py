"""The database is the truth, messages are hints: a queued job whose message is lost still runs.

A message taken by a device process that was then killed waits in the broker's unacked set until
its visibility timeout (over an hour); the server sends such a job again, on a heartbeat of its
machine, once its device is idle and its queue empty. A worker stopped for longer than the offline window leaves its queued jobs waiting, and
they run when it comes back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tests.e2e.conftest import REPO as REPO_ROOT
from tests.e2e.helpers import (
    LONG,
    OFFLINE_AFTER_SECONDS,
    QUICK,
    job_row,
    long_graph,
    submit,
    tiny_graph,
    upload,
    wait_finished,
    wait_running,
)

# A process that takes one message from a queue without acknowledging it, says so, and waits to
# be killed: a device process that died after the broker handed it a message.
TAKE_AND_HANG = textwrap.dedent(
    """
    import sys, time
    from workers.celery_app import app
    with app.connection_for_read() as conn:
        queue = conn.SimpleQueue(sys.argv[1], no_ack=False)
        message = queue.get(timeout=60)
        print("took", message.headers.get("task"), message.decode()[0], flush=True)
        time.sleep(600)
    """
)


def _take_and_die(queue: str) -> str:
    """Have a separate process take the next message of ``queue`` and SIGKILL it; what it took."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "server.settings", "PYTHONPATH": str(REPO_ROOT)}
    env = {k: v for k, v in env.items() if not k.startswith("PYTEST")}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import django; django.setup()\n" + TAKE_AND_HANG, queue],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert line.startswith("took"), f"the taker took nothing (exit {proc.returncode})"
    return line


@pytest.mark.django_db(transaction=True)
def test_a_job_whose_message_died_with_its_taker_still_runs(
    start_worker: Any, e2e_api: Any, server_log: pytest.LogCaptureFixture
) -> None:
    from server.taskqueue import device_queue

    worker = start_worker()
    device = worker.device()
    # The device's one consumer holds the long job; the next job's message waits in the queue.
    long_id = submit(e2e_api, upload(e2e_api, long_graph("holder")), device.pk, LONG)
    wait_running(long_id)
    lost_id = submit(e2e_api, upload(e2e_api, tiny_graph("lost-message")), device.pk, QUICK)
    took = _take_and_die(device_queue(device.pk))
    assert f"[{lost_id}]" in took.replace(" ", "")

    assert e2e_api.post(f"/api/jobs/{long_id}/cancel/").status_code == 200
    # Nothing in the queue any more, the message in the unacked set for an hour: the server sends
    # the job again on a heartbeat of the machine, once its device is idle.
    job = wait_finished(lost_id, timeout=120)
    assert job.state == "succeeded", job.failure_reason
    assert job.attempts == 1
    assert f"sent again the message(s) of queued job(s) [{lost_id}]" in server_log.text


@pytest.mark.django_db(transaction=True)
def test_a_worker_down_longer_than_the_offline_window_loses_no_queued_job(start_worker: Any, e2e_api: Any) -> None:
    import time

    worker = start_worker()
    device = worker.device()
    long_id = submit(e2e_api, upload(e2e_api, long_graph("interrupted")), device.pk, LONG)
    wait_running(long_id)
    model_id = upload(e2e_api, tiny_graph("waits"))
    queued = [submit(e2e_api, model_id, device.pk, QUICK) for _ in range(3)]

    assert worker.stop() == 0  # a routine restart: SIGTERM
    assert job_row(queued[0]).device.status == "offline"
    time.sleep(OFFLINE_AFTER_SECONDS + 2)  # longer than the offline window
    assert [job_row(j).state for j in queued] == ["queued"] * 3, "jobs must wait for their device"

    worker.start()
    for job_id in [long_id, *queued]:
        job = wait_finished(job_id, timeout=180)
        assert job.state == "succeeded", job.failure_reason
        assert job.device_id == device.pk
