"""Our own Redis, restarted without persistence mid-run and down during a submission: every job
still runs exactly once, because the job rows are the truth and the server sends the message of
a queued job again, on a heartbeat of its machine, once its device is idle."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker
from tests.e2e.helpers import LONG, QUICK, job_row, long_graph, submit, tiny_graph, upload, wait_finished, wait_running
from tests.waiting import wait_for

REDIS_SERVER = shutil.which("redis-server")


class OwnRedis:
    """A redis-server of this test alone, on its own port, keeping nothing on disk."""

    def __init__(self, folder: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.folder = folder
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS_SERVER is not None
        cmd = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(cmd, cwd=self.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_for(listening, 20, "our own redis-server to listen")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


@pytest.fixture
def own_redis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OwnRedis]:
    """Our own Redis, with this process's Celery app sending through it for the test."""
    if REDIS_SERVER is None:
        pytest.skip("needs redis-server on PATH (Debian package redis-server) to restart a broker of its own")
    server = OwnRedis(tmp_path)
    server.start()
    try:
        with broker(monkeypatch, server.url):
            yield server
    finally:
        server.stop()


@pytest.mark.django_db(transaction=True)
def test_jobs_survive_a_broker_restart_without_persistence_and_a_submission_while_it_is_down(
    start_worker: Any, e2e_api: Any, own_redis: OwnRedis, server_log: pytest.LogCaptureFixture
) -> None:
    worker = start_worker(broker_url=own_redis.url)
    device = worker.device()
    long_id = submit(e2e_api, upload(e2e_api, long_graph("during-restart")), device.pk, LONG)
    wait_running(long_id)
    model_id = upload(e2e_api, tiny_graph("lost-in-restart"))
    waiting = [submit(e2e_api, model_id, device.pk, QUICK) for _ in range(5)]

    own_redis.stop()  # every message in it is gone with it
    while_down = submit(e2e_api, model_id, device.pk, QUICK)
    assert job_row(while_down).state == "queued"
    assert f"job {while_down} stays queued: its message could not be sent" in server_log.text
    own_redis.start()

    for job_id in [long_id, *waiting, while_down]:
        job = wait_finished(job_id, timeout=240)
        assert job.state == "succeeded", job.failure_reason
    assert all(job_row(j).attempts == 1 for j in [*waiting, while_down])
    # The server sends them again, on a heartbeat of the machine (its live server thread logs it).
    assert "sent again the message" in server_log.text
