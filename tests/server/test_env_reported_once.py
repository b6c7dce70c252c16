"""A child of ``latencylab up`` does not repeat the embedded defaults its parent reported."""

from __future__ import annotations

import logging

import pytest

from server import env


@pytest.fixture
def fresh_reports(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(env, "_reported", set())
    monkeypatch.delenv(env.REPORTED_VARIABLE, raising=False)
    return monkeypatch


def test_a_parent_passes_what_it_reported(fresh_reports: pytest.MonkeyPatch) -> None:
    assert env.reported_defaults() == {}
    env.note_embedded_default("SECRET_KEY", "a key in var/")
    env.note_embedded_default("DATABASE_URL", "SQLite")
    assert env.reported_defaults() == {env.REPORTED_VARIABLE: "DATABASE_URL,SECRET_KEY"}


def test_a_child_stays_quiet_about_what_its_parent_reported(
    fresh_reports: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fresh_reports.setenv(env.REPORTED_VARIABLE, "DATABASE_URL,SECRET_KEY")
    with caplog.at_level(logging.WARNING, logger="latencylab.settings"):
        env.note_embedded_default("SECRET_KEY", "a key in var/")
        env.note_embedded_default("CELERY_BROKER_URL", "the filesystem broker")
    # Only what the parent did not report; and the child passes both on to its own children.
    assert [r.getMessage() for r in caplog.records] == [
        "CELERY_BROKER_URL is not set; using the embedded default: the filesystem broker"
    ]
    assert env.reported_defaults() == {env.REPORTED_VARIABLE: "CELERY_BROKER_URL,SECRET_KEY"}
