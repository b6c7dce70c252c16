"""The kept database connection's health check (server/postgres/base.py): a live connection is
taken as usable without a query, one the server ended is found and replaced before the request's
first query."""

from __future__ import annotations

import time
from collections.abc import Iterator
from unittest import mock

import pytest
from django.db import connection, connections
from django.db.backends.postgresql import base as django_postgres

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL backend (set DATABASE_URL)"),
]


@pytest.fixture
def kept() -> Iterator:
    """A second connection to the test database, as a web worker keeps one between requests."""
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def _ended_by_the_server(wrapper) -> None:
    pid = wrapper.connection.get_backend_pid()
    with connection.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s)", [pid])
        assert cur.fetchone() == (True,)
    time.sleep(0.2)  # the server's goodbye reaches the socket


def test_the_backend_is_ours() -> None:
    assert type(connections["default"]).__module__ == "server.postgres.base"


def test_a_live_connection_is_usable_without_a_round_trip(kept) -> None:
    with mock.patch.object(django_postgres.DatabaseWrapper, "is_usable", side_effect=AssertionError("asked")) as asked:
        assert kept.is_usable() is True
    assert not asked.called


def test_a_connection_the_server_ended_is_found_and_replaced(kept) -> None:
    old_pid = kept.connection.get_backend_pid()
    _ended_by_the_server(kept)
    assert kept.is_usable() is False
    # As before a request's first query: the dead connection is closed, a new one is opened.
    kept.health_check_done = False
    kept.health_check_enabled = True
    kept.close_if_health_check_failed()
    assert kept.connection is None
    with kept.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        (new_pid,) = cur.fetchone()
    assert new_pid != old_pid


def test_a_closed_connection_is_not_usable(kept) -> None:
    kept.connection.close()
    assert kept.is_usable() is False
