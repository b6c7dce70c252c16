"""The bad-token lockout slows whoever sends bad tokens and never refuses a valid one; its count
is shared by every web process; anonymous bursts are throttled."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
NAT = "10.44.0.1"  # a lab's NAT or proxy: every member's requests come from this one address


def _jobs(client: Any, key: str, address: str = NAT) -> Any:
    return client.get("/api/jobs/", HTTP_AUTHORIZATION=f"Token {key}", REMOTE_ADDR=address)


def test_a_valid_token_works_from_an_address_past_the_limit(client: Any, settings: Any, make_member: Any) -> None:
    settings.LATENCYLAB_TOKEN_FAILURE_LIMIT = 3
    colleague = make_member()
    for i in range(3):
        assert _jobs(client, f"guess-{i}").status_code == 401
    locked = _jobs(client, "guess-3")
    assert locked.status_code == 429 and "Too many bad API tokens" in locked.json()["detail"]
    # Someone else's bad tokens never stand between a colleague and the API, nor between the
    # colleague and a second valid request.
    assert _jobs(client, colleague.key).status_code == 200
    assert _jobs(client, colleague.key).status_code == 200
    # and the guesser is still refused
    assert _jobs(client, "guess-4").status_code == 429


def test_a_locked_out_answer_says_how_long_is_left_of_the_window(client: Any, settings: Any) -> None:
    settings.LATENCYLAB_TOKEN_FAILURE_LIMIT = 1
    settings.LATENCYLAB_TOKEN_LOCKOUT_SECONDS = 600
    assert _jobs(client, "guess-0").status_code == 401
    locked = _jobs(client, "guess-1")
    assert locked.status_code == 429
    assert 590 <= int(locked["Retry-After"]) <= 600
    assert "(1 within 600 s): Invalid or revoked token." in locked.json()["detail"]


def test_the_failure_limit_counts_bad_tokens_exactly(client: Any, settings: Any) -> None:
    settings.LATENCYLAB_TOKEN_FAILURE_LIMIT = 20
    answers = [_jobs(client, f"guess-{i}").status_code for i in range(22)]
    assert answers == [401] * 20 + [429] * 2


# Run in a second process with the same environment (so the same settings) on this test's
# database: it authenticates five bad tokens from one address, as a second web process would.
_OTHER_WEB_PROCESS = textwrap.dedent(
    """
    import django
    django.setup()
    from django.conf import settings
    from rest_framework.exceptions import AuthenticationFailed
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory
    from server.accounts.authentication import ApiTokenAuthentication
    for i in range(5):
        sent = APIRequestFactory().get("/api/jobs/", HTTP_AUTHORIZATION=f"Token guess-{{i}}", REMOTE_ADDR={address!r})
        try:
            ApiTokenAuthentication().authenticate(Request(sent))
        except AuthenticationFailed:
            pass
    print(settings.CACHES["default"]["BACKEND"] + "|" + settings.CACHES["default"].get("LOCATION", ""))
    """
)


def _database_url() -> str:
    """The URL of this test process's database (the test database, not the one it is named after)."""
    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return (
        f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"
    )


@pytest.mark.django_db(transaction=True)
def test_two_web_processes_add_to_one_count(client: Any, settings: Any) -> None:
    settings.LATENCYLAB_TOKEN_FAILURE_LIMIT = 5
    address = "10.44.0.2"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "server.settings", "DATABASE_URL": _database_url()}
    done = subprocess.run(
        [sys.executable, "-c", _OTHER_WEB_PROCESS.format(address=address)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    backend, _, location = done.stdout.strip().splitlines()[-1].partition("|")
    broker = os.environ.get("CELERY_BROKER_URL", "")
    if broker.startswith(("redis://", "rediss://")) or os.environ.get("LATENCYLAB_CACHE_URL"):
        # The settings' default with a Redis broker: the broker's Redis, so the other process's
        # five bad tokens are this process's too, and its sixth is past the limit.
        assert backend == "server.cache.PrefixedRedisCache"
        assert location == os.environ.get("LATENCYLAB_CACHE_URL", broker)
        assert _jobs(client, "guess-6", address).status_code == 429
    else:
        # Embedded defaults (no servers): each process counts on its own, as documented.
        assert backend == "django.core.cache.backends.locmem.LocMemCache"
        assert _jobs(client, "guess-6", address).status_code == 401


def test_clearing_the_redis_cache_leaves_the_brokers_keys(settings: Any) -> None:
    from django.core.cache import cache

    if settings.CACHES["default"]["BACKEND"] != "server.cache.PrefixedRedisCache":
        assert not os.environ.get("CELERY_BROKER_URL", "").startswith("redis")
        return
    redis = cache._cache.get_client(None, write=True)  # type: ignore[attr-defined]
    foreign = f"test-token-lockout-foreign-{os.getpid()}"
    redis.set(foreign, b"a broker's message", ex=60)
    cache.set("mine", 1)
    try:
        cache.clear()
        assert cache.get("mine") is None
        assert redis.get(foreign) == b"a broker's message"
    finally:
        redis.delete(foreign)


def test_an_anonymous_burst_is_throttled(client: Any, settings: Any, make_member: Any) -> None:
    # The rate the settings give (LATENCYLAB_ANON_RATE, 300/min unless set): past it, anonymous
    # requests are answered 429 with the seconds to wait, though the view would refuse them anyway.
    number = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["anon"].partition("/")[0]
    answers = [client.get("/api/jobs/", REMOTE_ADDR=NAT) for _ in range(int(number) + 2)]
    codes = [a.status_code for a in answers]
    assert codes[: int(number)] == [401] * int(number)
    assert codes[int(number) :] == [429, 429]
    assert int(answers[-1]["Retry-After"]) > 0 and "throttled" in answers[-1].json()["detail"]
    # A member behind the same address is not anonymous, so not throttled with them.
    assert _jobs(client, make_member().key).status_code == 200
