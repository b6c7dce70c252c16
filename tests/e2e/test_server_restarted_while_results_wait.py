"""The server goes down (SIGKILL, as a crash) while a lab machine measures a job: the machine keeps
the result on its disk, posts it with back-off, and once a new server process answers the job
succeeds with exactly one result; nothing is measured twice."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.conftest import REPO, database_url
from tests.e2e.helpers import (
    HEARTBEAT_SECONDS,
    OFFLINE_AFTER_SECONDS,
    RESEND_AFTER_SECONDS,
    long_graph,
    submit,
    upload,
    wait_finished,
    wait_running,
)
from tests.waiting import wait_for


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """The web server (gunicorn) as its own process on the test database; killed and started again."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it and wait until it answers."""
        cmd = [
            sys.executable,
            "-m",
            "gunicorn",
            "server.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--config",
            "python:server.gunicorn_conf",
            "--workers",
            "1",
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

        def answers() -> bool:
            try:
                return requests.get(f"{self.url}/api/lab/hello", timeout=2).status_code == 401
            except requests.RequestException:
                return False

        wait_for(answers, 90, "the server process to answer")

    def kill(self) -> None:
        """SIGKILL the whole server (master and workers)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture
def server_process(transactional_db: None, queue_prefix: str, tmp_path: Path, settings: Any) -> Iterator[ServerProcess]:
    """A gunicorn server on the test database with this session's queues and timings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "server.settings",
            "DATABASE_URL": database_url(),
            "SECRET_KEY": str(settings.SECRET_KEY),
            "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "LATENCYLAB_QUEUE_PREFIX": queue_prefix,
            "LATENCYLAB_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
            "LATENCYLAB_OFFLINE_AFTER_SECONDS": str(OFFLINE_AFTER_SECONDS),
            "LATENCYLAB_RESEND_AFTER_SECONDS": str(RESEND_AFTER_SECONDS),
            "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
    )
    server = ServerProcess(env, tmp_path / "server.log")
    server.start()
    yield server
    server.kill()


@pytest.mark.django_db(transaction=True)
def test_results_wait_on_the_lab_machine_while_the_server_is_down(
    server_process: ServerProcess, start_worker: Any, e2e_api: Any
) -> None:
    from server.profiling.models import JobResult, ProfilingJob

    worker = start_worker(server_url=server_process.url)
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, long_graph("restart-net")), device.pk, {"runs": 120, "warmup_runs": 2})
    wait_running(job_id, timeout=90)

    server_process.kill()
    # The job finishes while no server answers: its result waits on the lab machine's disk.
    wait_for(lambda: "its result waits in" in worker.log_tail(200), 240, "the result to wait on the lab machine")
    outbox = list((Path(worker.env["LATENCYLAB_LAB_DIR"]) / "outbox").glob("job-*.json"))
    assert [p.name for p in outbox] == [f"job-{job_id}-attempt-1.json"]

    server_process.start()
    job = wait_finished(job_id, timeout=120)
    assert job.state == "succeeded", job.failure_reason
    assert job.attempts == 1
    assert JobResult.objects.filter(job_id=job_id).count() == 1
    assert JobResult.objects.get(job_id=job_id).e2e_n == 120
    wait_for(
        lambda: not any((Path(worker.env["LATENCYLAB_LAB_DIR"]) / "outbox").glob("job-*.json")),
        30,
        "the outbox to empty",
    )
    assert ProfilingJob.objects.get(pk=job_id).claimed_by
