"""Shared fixtures: teams, members with API tokens, and an API client that sends the token.

Django imports stay inside the fixtures, so the devicelab tests run without Django set up.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

_serial = itertools.count(1)

# Jobs skip the time breakdown (seconds of photo decoding per job) unless a test asks for it
# (``settings: {"breakdown": true}``): its own tests do. Worker and server processes the tests
# start inherit this; this process's settings were read before this file, hence pytest_configure.
os.environ.setdefault("LATENCYLAB_TIME_BREAKDOWN", "false")

# The suite runs in parallel processes (pytest -n, each a PYTEST_XDIST_WORKER): each locks its
# devices in a folder of its own (workers/device_lock.py), as one machine each, so that one's host
# CPU job never finds the device "busy" with another's. Worker processes the tests start inherit it.
# Each also keeps numpy's and scikit-learn's BLAS and OpenMP pools to one thread: two test
# processes on two cores each spinning up a pool per core made one MLP fit 100 s instead of 6 s.
# (The backends' own thread settings, onnxruntime's and PoCL's, are untouched.)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["LATENCYLAB_LOCK_DIR"] = str(
        Path(tempfile.gettempdir()) / f"latencylab-device-locks-{os.environ['PYTEST_XDIST_WORKER']}-{os.getpid()}"
    )
    for _pool in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_pool, "1")
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests spread evenly through the run (the end-to-end conftest marks its tests slow
    before this runs). ``make test`` splits the list into one contiguous share per process and an
    idle process takes the tail of another's (pytest-xdist's worksteal): spread out, every share
    holds as many slow tests, and what is stolen at the end is quick."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if not slow or len(slow) == len(items):
        return
    quick = [item for item in items if item.get_closest_marker("slow") is None]
    step = len(items) / len(slow)
    slots = {int(i * step) for i in range(len(slow))}
    slow_left, quick_left = iter(slow), iter(quick)
    items[:] = [next(slow_left) if i in slots else next(quick_left) for i in range(len(items))]


def pytest_configure(config: pytest.Config) -> None:
    """This process's settings follow the test default above, and its live servers answer at once."""
    from django.conf import settings
    from django.core.servers.basehttp import WSGIRequestHandler

    from server.env import env_bool

    # Django's test server writes a response's headers and body in separate sends; with Nagle's
    # algorithm on, the body waits for the client's delayed ACK of the headers: 40 ms a request
    # (schemathesis' 4,000 requests spent 200 s so). gunicorn, which serves real requests, sets
    # TCP_NODELAY itself.
    WSGIRequestHandler.disable_nagle_algorithm = True

    settings.LATENCYLAB_TIME_BREAKDOWN = env_bool("LATENCYLAB_TIME_BREAKDOWN", True)


@dataclass
class Member:
    """A user in a team, with a plain API key."""

    user: Any
    team: Any
    key: str


@pytest.fixture
def make_member(db: None) -> Callable[..., Member]:
    """Factory: ``make_member(team_name=None, username=None)`` -> a new user in a (new) team, with a key."""
    from server.accounts.services import create_user_with_token

    def make(team_name: str | None = None, username: str | None = None) -> Member:
        n = next(_serial)
        user, key = create_user_with_token(username or f"user{n}", team_name or f"team{n}")
        return Member(user=user, team=user.memberships.get(team__name=team_name or f"team{n}").team, key=key)

    return make


@pytest.fixture
def member(make_member: Callable[..., Member]) -> Member:
    """A user in their own team."""
    return make_member()


@pytest.fixture
def client_for() -> Callable[[Member], Any]:
    """Factory: an API client that authenticates as ``member`` with ``Authorization: Token <key>``."""
    from rest_framework.test import APIClient

    def make(m: Member) -> Any:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {m.key}")
        return client

    return make


@pytest.fixture
def api(member: Member, client_for: Callable[[Member], Any]) -> Any:
    """An API client for ``member``."""
    return client_for(member)


@pytest.fixture(autouse=True)
def _fresh_rate_limits() -> None:
    """Every test starts with no rate-limit or lockout counts (they live in the cache, which the
    tests' settings keep in process memory)."""
    from django.core.cache import cache

    cache.clear()
