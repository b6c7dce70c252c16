"""End-to-end fixtures: real worker processes (``python -m workers.run``) against the test database
and the real broker.

The mode follows the environment the suite was started with: PostgreSQL + Redis when
``DATABASE_URL`` and ``CELERY_BROKER_URL`` are set, else the embedded defaults (SQLite file and
the kombu filesystem transport). Each test session sends its messages to queues behind a unique
``LATENCYLAB_QUEUE_PREFIX``, so two sessions sharing a broker never see each other's messages,
and removes what it left in the broker at the end.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.e2e.helpers import HEARTBEAT_SECONDS, OFFLINE_AFTER_SECONDS, RESEND_AFTER_SECONDS
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
TASK_TIME_LIMIT = 60  # the smallest the settings allow; the soft limit is 30 s
SHUTDOWN_GRACE_SECONDS = 5
_serial = itertools.count(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every end-to-end test starts real worker processes: mark them slow."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.slow)


def database_url() -> str:
    """A URL for the test database pytest-django created, for the worker processes."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    if connection.vendor == "postgresql":
        auth = quote(s.get("USER") or "", safe="")
        if s.get("PASSWORD"):
            auth += ":" + quote(s["PASSWORD"], safe="")
        host = s.get("HOST") or "127.0.0.1"
        port = s.get("PORT") or 5432
        return f"postgres://{auth}@{host}:{port}/{s['NAME']}"
    raise RuntimeError(f"no worker database URL for vendor {connection.vendor!r}")


@pytest.fixture(scope="session")
def queue_prefix() -> Iterator[str]:
    """A queue prefix of this test session; its leftovers are removed from the broker at the end."""
    prefix = f"e2e-{uuid.uuid4().hex[:12]}."
    yield prefix
    from server.taskqueue import purge_queues

    purge_queues(prefix)


@pytest.fixture(autouse=True)
def e2e_settings(settings: Any, queue_prefix: str) -> None:
    """This process sees the same queue prefix and timings as the workers it starts."""
    settings.LATENCYLAB_QUEUE_PREFIX = queue_prefix
    settings.LATENCYLAB_HEARTBEAT_SECONDS = HEARTBEAT_SECONDS
    settings.LATENCYLAB_OFFLINE_AFTER_SECONDS = OFFLINE_AFTER_SECONDS
    settings.LATENCYLAB_RESEND_AFTER_SECONDS = RESEND_AFTER_SECONDS


class WorkerProcess:
    """One ``python -m workers.run`` process (the agent and its device processes, one group)."""

    def __init__(
        self, name: str, env: dict[str, str], log_path: Path, instance: str | None = None, kinds: str = "cpu"
    ) -> None:
        self.name = name
        self.kinds = kinds
        self.env = env
        self.log_path = log_path
        self.instance = instance
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at: datetime | None = None
        self.frozen = False

    def start(self) -> WorkerProcess:
        """Start (or restart) the worker; it logs to ``log_path``."""
        from django.utils import timezone

        cmd = [
            sys.executable,
            "-m",
            "workers.run",
            "--name",
            self.name,
            "--kinds",
            self.kinds,
            "--shutdown-grace",
            str(SHUTDOWN_GRACE_SECONDS),
            "--loglevel",
            "INFO",
        ]
        if self.instance:
            cmd += ["--instance", self.instance]
        self.started_at = timezone.now() - timedelta(milliseconds=1)
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start {' '.join(cmd)}\n".encode())
            # Its own process group, so that kill/freeze reach the agent and every device process.
            self.proc = subprocess.Popen(
                cmd, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def devices(self, timeout: float = 90) -> list[Any]:
        """Wait until this run registered its devices; return their rows."""
        from server.devices.models import Device

        def registered() -> list[Any]:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            return list(Device.objects.online().filter(worker=self.name, last_heartbeat__gte=self.started_at))

        return wait_for(registered, timeout, f"worker {self.name} to register its devices")

    def device(self, timeout: float = 90) -> Any:
        """The one device this worker serves (the host CPU unless started with other kinds)."""
        rows = self.devices(timeout)
        assert len(rows) == 1, rows
        return rows[0]

    def group_pids(self) -> list[int]:
        """Pids of every live process of this worker (agent, Celery processes, pool processes)."""
        import psutil

        if self.proc is None:
            return []
        pids = []
        for p in psutil.process_iter(["pid"]):
            try:
                if os.getpgid(p.pid) == self.proc.pid and p.status() != psutil.STATUS_ZOMBIE:
                    pids.append(p.pid)
            except (ProcessLookupError, psutil.NoSuchProcess):
                continue
        return pids

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM to the agent, as a service manager stops it; returns its exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL to every process of the worker at once, as a crash or the OOM killer would."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)
        # Device and pool processes are reparented when the agent dies: wait until they are gone.
        wait_for(lambda: not self.group_pids(), 30, f"the processes of worker {self.name} to die")

    def freeze(self) -> None:
        """SIGSTOP the whole worker: it stops heart-beating without shutting anything down."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGSTOP)
        self.frozen = True

    def log_tail(self, lines: int = 60) -> str:
        """The end of the worker's log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@pytest.fixture
def start_worker(transactional_db: None, queue_prefix: str, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """Factory: ``start_worker(instance=None, name=None, kinds="cpu", broker_url=None, extra_env=None)``
    -> a started ``WorkerProcess`` (on the session's broker unless ``broker_url`` names another;
    ``extra_env`` adds to its environment, e.g. the adb server of a phone farm).

    Every worker it started is killed at teardown (before the test database is flushed), and
    its log is printed, so a failing test shows what the worker said.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "server.settings",
            "DATABASE_URL": database_url(),
            "LATENCYLAB_QUEUE_PREFIX": queue_prefix,
            "LATENCYLAB_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
            "LATENCYLAB_OFFLINE_AFTER_SECONDS": str(OFFLINE_AFTER_SECONDS),
            "LATENCYLAB_RESEND_AFTER_SECONDS": str(RESEND_AFTER_SECONDS),
            "LATENCYLAB_TASK_TIME_LIMIT": str(TASK_TIME_LIMIT),
            "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
    )
    workers: list[WorkerProcess] = []

    def start(
        instance: str | None = None,
        name: str | None = None,
        kinds: str = "cpu",
        broker_url: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> WorkerProcess:
        name = name or f"e2e-worker-{next(_serial)}-{uuid.uuid4().hex[:6]}"
        own_env = {**env, "CELERY_BROKER_URL": broker_url} if broker_url else dict(env)
        own_env.update(extra_env or {})
        w = WorkerProcess(name, own_env, tmp_path / f"{name}.log", instance=instance, kinds=kinds).start()
        workers.append(w)
        return w

    yield start
    for w in workers:
        w.kill()
        print(f"----- log of worker {w.name} -----\n{w.log_tail(200)}")


@pytest.fixture
def e2e_api(make_member: Callable[..., Any], client_for: Callable[[Any], Any]) -> Any:
    """An API client of a fresh team member."""
    member = make_member()
    client = client_for(member)
    client.member = member
    return client
