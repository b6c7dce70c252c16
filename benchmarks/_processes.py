"""The real processes of a small lab that ``benchmarks/faults.py`` starts, breaks and starts again:
a Redis of its own (the broker), the trainer (``python -m server.trainer``) and a lab worker
(``python -m workers.run``: the agent and one Celery process per device). The web server is
``queue_delay._start_web`` (gunicorn).

Each process runs in a session of its own, so a kill of its process group reaches every process
it started (the worker's device and pool processes, the trainer's pool process) and none of ours.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
REDIS_SERVER = "/usr/bin/redis-server"

# What a lab worker must not see: the server's own settings (tests/e2e/conftest.py SERVER_ONLY).
SERVER_ONLY = ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE", "LATENCYLAB_VAR_DIR", "LATENCYLAB_QUEUE_PREFIX")


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """``predicate()``'s first truthy value, polled every ``interval`` s; ``TimeoutError`` naming
    ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
    return value


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def group_pids(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    pids = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                pids.append(p.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return pids


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to every process of ``proc``'s group at once (a crash, the OOM killer), and wait
    until they are all gone (the children of a killed parent are reparented, not reaped)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
    wait_until(lambda: not group_pids(proc.pid), 30, f"the processes of group {proc.pid} to die")


def tail(path: Path, lines: int = 40) -> str:
    """The end of a log file."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class OwnRedis:
    """A redis-server of the benchmark alone, on a port of its own, keeping nothing on disk: a
    restart loses every message it held, as a broker without persistence does."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The broker URL of this server."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it and wait until it listens."""
        self.folder.mkdir(parents=True, exist_ok=True)
        cmd = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(cmd, cwd=self.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: _listening(self.port), 20, "our own redis-server to listen")

    def stop(self) -> None:
        """Stop it (SIGTERM; with ``--save ''`` nothing is written) and wait until it is gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.proc = None


class Trainer:
    """The trainer process (``python -m server.trainer``), on the server's environment."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Trainer:
        """Start a trainer (again); it logs to ``log_path``."""
        with open(self.log_path, "ab") as log:
            log.write(b"\n===== start python -m server.trainer\n")
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "server.trainer", "--loglevel", "INFO"],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def kill(self) -> None:
        """SIGKILL to the trainer and its pool process."""
        if self.proc is not None:
            kill_group(self.proc)


class LabWorker:
    """One lab machine's worker (``python -m workers.run``): the agent, its device processes and
    their pool processes, in one process group."""

    def __init__(self, name: str, env: dict[str, str], log_path: Path, shutdown_grace: float) -> None:
        self.name = name
        self.env = env
        self.log_path = log_path
        self.shutdown_grace = shutdown_grace
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0  # time.time() of the last start

    def start(self) -> LabWorker:
        """Start (or start again) the worker for the host CPU; it logs to ``log_path``."""
        cmd = [sys.executable, "-m", "workers.run", "--name", self.name, "--kinds", "cpu"]
        cmd += ["--shutdown-grace", str(self.shutdown_grace), "--loglevel", "INFO"]
        self.started_at = time.time()
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start {' '.join(cmd)}\n".encode())
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def running(self) -> bool:
        """Whether the agent is alive."""
        return self.proc is not None and self.proc.poll() is None

    def device_process(self) -> psutil.Process:
        """The device's Celery main process (a child of the agent), once it runs."""
        assert self.proc is not None
        agent = psutil.Process(self.proc.pid)

        def find() -> psutil.Process | None:
            for p in agent.children():
                try:
                    if "workers.device_process" in " ".join(p.cmdline()):
                        return p
                except psutil.Error:  # exited between listing and reading
                    continue
            return None

        found: psutil.Process = wait_until(find, 30, "the device process")
        return found

    def kill(self) -> None:
        """SIGKILL to every process of the worker at once."""
        if self.proc is not None:
            kill_group(self.proc)

    def terminate(self, timeout: float = 90) -> int:
        """SIGTERM to the agent, as a service manager stops it; its exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)


def lab_environment(server_env: dict[str, str], server_url: str, token: str, lab_dir: Path) -> dict[str, str]:
    """A lab machine's environment: the server's less what only the server may hold, plus the
    server's URL, the lab token and the machine's own folders (its lock folder too, so that no
    other process on this host measuring the CPU makes its jobs wait)."""
    env = {k: v for k, v in server_env.items() if k not in SERVER_ONLY}
    env.update(
        LATENCYLAB_SERVER_URL=server_url,
        LATENCYLAB_LAB_TOKEN=token,
        LATENCYLAB_LAB_DIR=str(lab_dir),
        LATENCYLAB_LOCK_DIR=str(lab_dir / "locks"),
    )
    return env


__all__ = [
    "LabWorker",
    "OwnRedis",
    "Trainer",
    "free_port",
    "group_pids",
    "kill_group",
    "lab_environment",
    "tail",
    "wait_until",
]
