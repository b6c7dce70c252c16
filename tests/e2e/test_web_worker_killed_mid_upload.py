"""A gunicorn worker killed in the middle of an upload (its timeout, the OOM killer, ``kill -9``)
leaves Django's temporary file of the upload behind; a web worker that starts once the file is
stale removes it (``server/wsgi.py``), and never one that a live request may still be writing."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from server.networks.tempfiles import STALE_AFTER_SECONDS
from tests.e2e.conftest import REPO, database_url
from tests.waiting import wait_for

SPOOLED = 12 * 1024 * 1024  # over FILE_UPLOAD_MAX_MEMORY_SIZE (10 MB): Django writes it to var/tmp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/models/", timeout=5)  # noqa: S310 - our own server
    except urllib.error.HTTPError:
        return True  # 401: a worker answered
    except OSError:
        return False
    return True


def _workers(proc: subprocess.Popen[bytes]) -> list[int]:
    import psutil

    return [c.pid for c in psutil.Process(proc.pid).children() if c.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.django_db(transaction=True)
def test_a_killed_workers_upload_file_is_removed_once_stale(e2e_api: Any, tmp_path: Path) -> None:
    var, port = tmp_path / "var", _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "server.settings",
            "DATABASE_URL": database_url(),
            "LATENCYLAB_VAR_DIR": str(var),
            "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
    )
    log_path = tmp_path / "gunicorn.log"
    cmd = [sys.executable, "-m", "gunicorn", "server.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    cmd += ["--config", "python:server.gunicorn_conf", "--workers", "1"]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    sock = None
    try:
        wait_for(lambda: _answers(port), 60, "gunicorn to answer")
        boundary = "llboundary"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.json"\r\n'
            "Content-Type: application/json\r\n\r\n"
        ).encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        length = len(head) + 2 * SPOOLED + len(tail)
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(
            (
                f"POST /api/models/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Authorization: Token {e2e_api.member.key}\r\n"
                f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length}\r\n\r\n"
            ).encode()
            + head
            + b" " * SPOOLED  # half the file, then the client stalls
        )
        tmp = var / "tmp"

        def spooled() -> list[Path]:
            return [p for p in tmp.glob("*.upload*") if p.stat().st_size >= SPOOLED // 2]

        [left] = wait_for(spooled, 60, "Django to spool the upload to var/tmp")
        first = _workers(proc)
        os.kill(first[0], signal.SIGKILL)  # mid-request: no chance to delete its file
        sock.close()
        wait_for(lambda: _workers(proc) and _workers(proc) != first and _answers(port), 60, "a new worker")
        assert left.exists(), "a young upload file may belong to a live request: it stays"

        then = time.time() - STALE_AFTER_SECONDS - 60
        os.utime(left, (then, then))
        second = _workers(proc)
        os.kill(second[0], signal.SIGKILL)
        wait_for(lambda: not left.exists(), 60, "the next worker to remove the stale upload file")
        assert _answers(port)
    finally:
        if sock is not None:
            sock.close()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
        print("----- gunicorn log -----\n" + log_path.read_text(errors="replace")[-4000:])
