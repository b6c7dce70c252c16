"""Pointing this test process's Celery app at another broker for a while (our own Redis, or a
port where nothing listens), and back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def broker(monkeypatch: pytest.MonkeyPatch, url: str) -> Iterator[None]:
    """Send through ``url`` inside the block.

    Celery reads ``CELERY_BROKER_URL`` from the environment before its own setting, so both
    change. kombu keeps its connection and producer pools in process-wide registries keyed by
    the broker's URL: on the way out the block's pools are closed and the registries emptied, or
    the next test in this process to name the same URL would be handed a closed pool ("Acquire on
    closed pool" instead of the broker's own refusal). The session broker's pools are made anew.
    """
    import kombu.pools

    from server.taskqueue import app

    def switch(to: str) -> None:
        app.conf.broker_url = to
        app._pool = None
        app.amqp._producer_pool = None

    before = app.conf.broker_url
    with monkeypatch.context() as m:
        m.setenv("CELERY_BROKER_URL", url)
        switch(url)
        try:
            yield
        finally:
            app.pool.force_close_all()
            kombu.pools.reset()
    switch(before)
    assert app.conf.broker_url == before
