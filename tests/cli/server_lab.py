"""What the tests of the lab commands that go through the server share: a live server with a member
and a device, a private queue prefix (the commands that queue jobs or trainings leave the shared
broker as they found it), and ``latencylab`` run as a user runs it, in a subprocess, with only
the server's URL and token: no database settings at all."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.live_clients import wait_for_request_threads

# The variables that would let a command reach a database or a broker without the server.
_LOCAL_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "LATENCYLAB_QUEUE_PREFIX", "LATENCYLAB_VAR_DIR")


@pytest.fixture
def lab(
    live_server: Any, settings: Any, make_member: Callable[..., Any], make_device: Callable[..., Any]
) -> Iterator[dict[str, Any]]:
    """A member, an online cpu device, the CLI's server arguments, and a private queue prefix."""
    from server.taskqueue import purge_queues

    prefix = f"cli-api-{uuid.uuid4().hex[:12]}."
    settings.LATENCYLAB_QUEUE_PREFIX = prefix
    member = make_member()
    device = make_device("cpu", name="host-test")
    yield {
        "member": member,
        "device": device,
        "url": live_server.url,
        "server": ["--url", live_server.url, "--token", member.key],
    }
    wait_for_request_threads()
    purge_queues(prefix)


def client_env(url: str, token: str) -> dict[str, str]:
    """The environment of a client machine: the server's URL and a token, no database or broker."""
    env = {k: v for k, v in os.environ.items() if k not in _LOCAL_VARIABLES}
    env.update({"LATENCYLAB_URL": url, "LATENCYLAB_TOKEN": token})
    return env


def run_latencylab(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``latencylab ARGS`` in a fresh process in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "latencylab.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
