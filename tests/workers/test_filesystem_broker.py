"""The embedded broker's transport (``devicelab.fsbroker``): a consumer polling while a producer
in another process writes big messages gets every one whole, in order; a message file that is
still being written in place is left for a later poll, not read half."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from kombu import Connection

from devicelab.fsbroker import TRANSPORT, Channel, message_name
from workers.celery_app import broker_options, make_app

MESSAGES = 40
BLOB_BYTES = 3_000_000  # about 4 MB a file once kombu has base64-encoded the body


def _options(folder: Path) -> dict[str, Any]:
    return {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
        "polling_interval": 0.001,  # the reader lists the folder as often as it can
    }


def _connection(folder: Path) -> Connection:
    return Connection("filesystem://localhost/", transport=TRANSPORT, transport_options=_options(folder))


def _blob(i: int) -> str:
    return (hashlib.sha256(str(i).encode()).hexdigest() * (BLOB_BYTES // 64 + 1))[:BLOB_BYTES]


def _produce(folder: str, ready: Any) -> None:
    """The writer, in a process of its own."""
    with _connection(Path(folder)) as conn, conn.SimpleQueue("big") as queue:
        ready.wait(30)
        for i in range(MESSAGES):
            blob = _blob(i)
            queue.put({"i": i, "blob": blob, "sha256": hashlib.sha256(blob.encode()).hexdigest()})


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for sub in ("queue", "processed", "control"):
        (tmp_path / sub).mkdir()
    return tmp_path


def test_a_reader_polling_during_big_writes_gets_every_message_whole(folder: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    with _connection(folder) as conn, conn.SimpleQueue("big") as queue:  # declared before the writer sends
        writer = ctx.Process(target=_produce, args=(str(folder), ready))
        writer.start()
        try:
            ready.set()
            got = []
            for _ in range(MESSAGES):
                message = queue.get(block=True, timeout=60)
                payload = message.payload
                assert hashlib.sha256(payload["blob"].encode()).hexdigest() == payload["sha256"]
                got.append(payload["i"])
                message.ack()
        finally:
            writer.join(60)
        assert writer.exitcode == 0
    assert got == list(range(MESSAGES))
    assert os.listdir(folder / "queue") == []  # no partial or claimed file left behind


def _channel(folder: Path) -> tuple[Connection, Channel]:
    conn = _connection(folder)
    channel = conn.default_channel
    assert isinstance(channel, Channel)
    return conn, channel


def test_a_message_written_in_place_is_left_until_it_is_whole(folder: Path) -> None:
    # kombu's own writer (or any other) creates the final name first and writes after: the reader
    # must not take the file before its end is there.
    conn, channel = _channel(folder)
    whole = json.dumps({"body": "x" * 1000, "properties": {}}).encode()
    path = folder / "queue" / message_name("jobs")
    path.write_bytes(whole[:500])
    with pytest.raises(Empty):
        channel._get("jobs")
    assert path.read_bytes() == whole[:500]  # given back under its own name
    path.write_bytes(whole)
    assert channel._get("jobs") == json.loads(whole)
    assert os.listdir(folder / "queue") == []
    conn.release()


def test_a_message_that_never_parses_is_set_aside(folder: Path) -> None:
    conn, channel = _channel(folder)
    path = folder / "queue" / message_name("jobs")
    path.write_bytes(b'{"body": "trunc')
    old = time.time() - 3600
    os.utime(path, (old, old))
    with pytest.raises(Empty):
        channel._get("jobs")
    assert os.listdir(folder / "queue") == [f"{path.name}.bad"]
    assert channel._size("jobs") == 0
    conn.release()


def test_the_lab_worker_uses_it_on_the_filesystem_broker(folder: Path) -> None:
    assert broker_options("filesystem://localhost/", 600, str(folder))["broker_transport"] == TRANSPORT
    assert "broker_transport" not in broker_options("redis://localhost:6379/0", 600, None)
    app = make_app({"CELERY_BROKER_URL": "filesystem://localhost/", "LATENCYLAB_BROKER_DIR": str(folder)})
    with app.connection_for_write() as conn:
        assert isinstance(conn.default_channel, Channel)


def test_the_server_uses_it_on_its_embedded_defaults(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "LATENCYLAB_QUEUE_PREFIX", "DJANGO_SETTINGS_MODULE")
    }
    env["LATENCYLAB_VAR_DIR"] = str(tmp_path / "var")
    code = "from server.taskqueue import app\nwith app.connection_for_write() as c: print(type(c.default_channel))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "devicelab.fsbroker.Channel" in done.stdout
