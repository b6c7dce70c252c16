"""End-to-end fixtures: real lab worker processes (``python -m workers.run``) that reach the server
only as a lab machine would: over HTTP with a lab token (the live server of this test process, on
the test database) and through the real broker. Their environment holds no database settings, no
secret key and no Django settings module, and each has a folder of its own.

The mode follows the environment the suite was started with: PostgreSQL + Redis when
``DATABASE_URL`` and ``CELERY_BROKER_URL`` are set, else the embedded defaults (SQLite file and
the kombu filesystem transport). Each test session sends its messages to queues behind a unique
``LATENCYLAB_QUEUE_PREFIX``, so two sessions sharing a broker never see each other's messages,
and removes what it left in the broker at the end.
"""

from __future__ import annotations

import itertools
import logging
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

from tests.e2e.helpers import HEARTBEAT_SECONDS, OFFLINE_AFTER_SECONDS, RESEND_AFTER_SECONDS, TRAINING_LEASE_SECONDS
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
        self,
        name: str,
        env: dict[str, str],
        log_path: Path,
        instance: str | None = None,
        kinds: str = "cpu",
        prefix: list[str] | None = None,
    ) -> None:
        self.prefix = prefix or []  # runs the worker through this (a network namespace's ``ip netns exec``)
        self.machine = name
        # the worker name its devices are registered under: the lab machine's, with its instance
        self.name = f"{name}#{instance}" if instance else name
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
            self.machine,
            "--kinds",
            self.kinds,
            "--shutdown-grace",
            str(SHUTDOWN_GRACE_SECONDS),
            "--loglevel",
            "INFO",
        ]
        if self.instance:
            cmd += ["--instance", self.instance]
        cmd = [*self.prefix, *cmd]
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


# What a lab worker must not see: the server's own settings.
SERVER_ONLY = ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE", "LATENCYLAB_VAR_DIR", "LATENCYLAB_QUEUE_PREFIX")


def lab_worker_env(server_url: str, token: str, lab_dir: Path, broker_url: str | None = None) -> dict[str, str]:
    """A lab machine's environment: this process's, less the server's settings, plus the server's
    URL, the lab token, the broker and the machine's own folder."""
    from django.conf import settings

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST") and k not in SERVER_ONLY}
    broker = broker_url or str(settings.CELERY_BROKER_URL)
    env.update(
        {
            "LATENCYLAB_SERVER_URL": server_url,
            "LATENCYLAB_LAB_TOKEN": token,
            "CELERY_BROKER_URL": broker,
            "LATENCYLAB_LAB_DIR": str(lab_dir),
            # the lab machine caps its jobs below the server's limit
            "LATENCYLAB_TASK_TIME_LIMIT": str(TASK_TIME_LIMIT),
            "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
    )
    if broker.startswith("filesystem:"):
        env["LATENCYLAB_BROKER_DIR"] = str(settings.BROKER_DIR)
    return env


@pytest.fixture
def start_worker(
    transactional_db: None, queue_prefix: str, tmp_path: Path, live_server: Any
) -> Iterator[Callable[..., WorkerProcess]]:
    """Factory: ``start_worker(instance=None, name=None, kinds="cpu", broker_url=None, extra_env=None,
    server_url=None, prefix=None)`` -> a started ``WorkerProcess``: a lab machine ``name`` (made now, with its
    token) reaching this process's live server (or ``server_url``) over HTTP, on the session's broker unless ``broker_url`` names another;
    ``extra_env`` adds to its environment, e.g. the adb server of a phone farm.

    Every worker it started is killed at teardown (before the test database is flushed), and
    its log is printed, so a failing test shows what the worker said.
    """
    from server.labs.services import add_lab_machine

    workers: list[WorkerProcess] = []
    lab_tokens: dict[str, str] = {}

    def start(
        instance: str | None = None,
        name: str | None = None,
        kinds: str = "cpu",
        broker_url: str | None = None,
        extra_env: dict[str, str] | None = None,
        server_url: str | None = None,
        prefix: list[str] | None = None,
    ) -> WorkerProcess:
        name = name or f"e2e-worker-{next(_serial)}-{uuid.uuid4().hex[:6]}"
        # a worker started again under its name (a restart) keeps its machine's token
        token = lab_tokens.get(name) or add_lab_machine(name)[1]
        lab_tokens[name] = token
        own_env = lab_worker_env(server_url or live_server.url, token, tmp_path / f"lab-{name}", broker_url)
        own_env.update(extra_env or {})
        w = WorkerProcess(
            name, own_env, tmp_path / f"{name}.log", instance=instance, kinds=kinds, prefix=prefix
        ).start()
        workers.append(w)
        return w

    yield start
    for w in workers:
        w.kill()
        print(f"----- log of worker {w.name} -----\n{w.log_tail(200)}")


@pytest.fixture
def server_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """``caplog`` with what the server side logged during the test: the live server thread
    answering the lab workers (each heartbeat's lab sweep and resends of lost messages) and this
    process's sends. The ``server`` loggers keep their records from the root logger (settings'
    LOGGING), so the handler joins them there."""
    logger = logging.getLogger("server")
    logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)


@pytest.fixture
def e2e_api(make_member: Callable[..., Any], client_for: Callable[[Any], Any]) -> Any:
    """An API client of a fresh team member."""
    member = make_member()
    client = client_for(member)
    client.member = member
    return client


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
            # the lab's clocks, as the live server of these tests has them (the trainer sweeps the lab)
            "LATENCYLAB_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
            "LATENCYLAB_OFFLINE_AFTER_SECONDS": str(OFFLINE_AFTER_SECONDS),
            "LATENCYLAB_TRAINING_LEASE_SECONDS": str(TRAINING_LEASE_SECONDS),
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
