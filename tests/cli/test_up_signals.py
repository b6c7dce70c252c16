"""``latencylab up`` stops on SIGINT even when started with SIGINT ignored (as a shell starts
background jobs), stops on SIGTERM, restarts a child that dies, and leaves no orphan when it is
killed itself."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.cli.test_demo_command import _free_port
from tests.cli.test_service_commands import _embedded_env
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


class Up:
    """One ``latencylab up`` on embedded defaults, in a session of its own."""

    def __init__(self, tmp_path: Path, ignore_sigint: bool = False) -> None:
        self.port = _free_port()
        self.db = tmp_path / "var" / "latencylab.sqlite3"
        self.log = tmp_path / "up.log"

        def prepare() -> None:
            if ignore_sigint:  # what `cmd &` does in a non-interactive shell
                signal.signal(signal.SIGINT, signal.SIG_IGN)

        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "latencylab.cli", "up", "--port", str(self.port)],
                env=_embedded_env(tmp_path),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=prepare,
            )

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def wait_serving(self, timeout: float = 180) -> None:
        """Until the API answers and the worker's CPU is online."""

        def serving() -> bool:
            assert self.proc.poll() is None, f"up exited with {self.proc.returncode}:\n{self.tail()}"
            return self.api_answers() and self.online_cpus() == 1

        wait_for(serving, timeout, lambda: f"up to come up:\n{self.tail()}", interval=0.5)

    def api_answers(self) -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/schema/", timeout=5).read()
            return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def online_cpus(self) -> int:
        try:
            query = "select count(*) from devices_device where status != 'offline' and kind = 'cpu'"
            return int(sqlite3.connect(self.db).execute(query).fetchone()[0])
        except sqlite3.Error:
            return 0

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def child(self, word: str) -> psutil.Process:
        """The direct child whose command line contains ``word`` (``gunicorn``, ``worker``, ``trainer``)."""
        for p in psutil.Process(self.proc.pid).children():
            try:
                if p.status() != psutil.STATUS_ZOMBIE and word in p.cmdline():
                    return p
            except psutil.Error:  # gone, or a zombie not reaped yet (a child just killed)
                continue
        raise AssertionError(f"no live child {word!r} of up")

    def kill_group(self) -> None:
        """SIGKILL its whole group, and any process of its var folder that left the group: no
        test leaves anything running."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)
        for p in psutil.process_iter():
            try:
                if p.environ().get("LATENCYLAB_VAR_DIR") == str(self.db.parent):
                    p.kill()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue


@pytest.fixture
def start_up(tmp_path: Path) -> Iterator[type[Up]]:
    """Factory of ``Up``; every one is killed with its whole group at teardown, whatever happened."""
    started: list[Up] = []

    def start(ignore_sigint: bool = False) -> Up:
        up = Up(tmp_path, ignore_sigint=ignore_sigint)
        started.append(up)
        return up

    yield start  # type: ignore[misc]
    for up in started:
        up.kill_group()


def _gone(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """The processes still alive after ``timeout`` seconds."""
    _, alive = psutil.wait_procs(processes, timeout=timeout)

    def running(p: psutil.Process) -> bool:
        try:
            return p.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    return [p for p in alive if running(p)]


def test_sigint_stops_up_even_when_it_was_started_with_sigint_ignored(start_up: type[Up]) -> None:
    up = start_up(ignore_sigint=True)
    up.wait_serving()
    children = up.descendants()
    assert len(children) >= 3
    up.proc.send_signal(signal.SIGINT)
    assert up.proc.wait(timeout=90) == 0, up.tail()
    assert _gone(children, 30) == [], "children of up outlived it"
    assert up.online_cpus() == 0  # the worker took its device offline on its way out


def test_sigterm_stops_up_and_a_killed_worker_is_started_again(start_up: type[Up]) -> None:
    up = start_up()
    up.wait_serving()
    worker = up.child("worker")
    worker.kill()  # SIGKILL: its device processes follow it (parent-death signal)

    def restarted() -> bool:
        try:
            return up.child("worker").pid != worker.pid
        except AssertionError:  # no worker child right now
            return False

    wait_for(restarted, 120, lambda: f"the worker to be started again:\n{up.tail()}", interval=0.5)
    assert up.proc.poll() is None and up.api_answers(), "one dead worker took the service down"
    # the whole log: the restarted worker's banner can push the line out of the tail
    assert "the worker was killed by SIGKILL; starting it again" in up.log.read_text(errors="replace")
    up.wait_serving()

    children = up.descendants()
    up.proc.send_signal(signal.SIGTERM)
    assert up.proc.wait(timeout=90) == 0, up.tail()
    assert _gone(children, 30) == []


def test_devices_of_a_worker_that_died_go_offline_when_up_stops(start_up: type[Up]) -> None:
    up = start_up()
    up.wait_serving()
    up.child("worker").kill()  # dead before it could take its devices offline
    up.proc.send_signal(signal.SIGTERM)  # within up's 1 s back-off: no worker runs at the stop
    assert up.proc.wait(timeout=90) == 0, up.tail()
    assert up.online_cpus() == 0, up.tail()
    left = sqlite3.connect(up.db).execute("select count(*) from devices_device where status != 'offline'")
    assert left.fetchone()[0] == 0, up.tail()


def test_a_killed_up_leaves_no_orphan(start_up: type[Up]) -> None:
    up = start_up()
    up.wait_serving()
    children = up.descendants()
    os.kill(up.proc.pid, signal.SIGKILL)
    up.proc.wait(timeout=30)
    assert _gone(children, 60) == [], [p.cmdline() for p in children if p.is_running()]
