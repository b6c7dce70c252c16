"""Settings from the environment: typed helpers, loud failures, embedded defaults logged once."""

from __future__ import annotations

import logging
import runpy
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from server import env
from server.env import env_bool, env_int, env_list, env_str

SETTINGS = Path(__file__).resolve().parents[2] / "server" / "settings.py"

ENV_VARS = (
    "DEBUG",
    "SECRET_KEY",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "LATENCYLAB_VAR_DIR",
    "LATENCYLAB_MAX_UPLOAD_BYTES",
    "LATENCYLAB_HEARTBEAT_SECONDS",
    "LATENCYLAB_OFFLINE_AFTER_SECONDS",
    "ALLOWED_HOSTS",
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No settings variables set, and var/ in a temporary folder."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LATENCYLAB_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setattr(env, "_reported", set())
    return monkeypatch


def load_settings() -> dict[str, Any]:
    """Execute settings.py afresh (Django's own settings stay untouched)."""
    return runpy.run_path(str(SETTINGS))


def test_helpers_return_defaults_when_unset_or_empty(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LL_EMPTY", "  ")
    assert env_str("LL_UNSET", "d") == "d"
    assert env_str("LL_EMPTY", "d") == "d"
    assert env_int("LL_UNSET", 7) == 7
    assert env_bool("LL_EMPTY", True) is True
    assert env_list("LL_UNSET", ["a"]) == ["a"]


def test_helpers_parse_values(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LL_INT", "1_000")
    clean_env.setenv("LL_BOOL", "Off")
    clean_env.setenv("LL_LIST", "a, b,,c ")
    assert env_int("LL_INT", 0) == 1000
    assert env_bool("LL_BOOL", True) is False
    assert env_list("LL_LIST", []) == ["a", "b", "c"]


@pytest.mark.parametrize(
    "name,value,call,expected",
    [
        ("LL_INT", "ten", lambda: env_int("LL_INT", 1), "LL_INT='ten' is not an integer"),
        ("LL_INT", "0", lambda: env_int("LL_INT", 1, minimum=1), "LL_INT='0' must be >= 1"),
        ("LL_INT", "99", lambda: env_int("LL_INT", 1, maximum=10), "LL_INT='99' must be <= 10"),
        ("LL_BOOL", "maybe", lambda: env_bool("LL_BOOL", False), "LL_BOOL='maybe' is not a boolean"),
    ],
)
def test_bad_values_name_the_variable_and_value(
    clean_env: pytest.MonkeyPatch, name: str, value: str, call: Any, expected: str
) -> None:
    clean_env.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=expected):
        call()


def test_embedded_defaults_are_logged_once(clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="latencylab.settings"):
        env.note_embedded_default("LL_THING", "the default")
        env.note_embedded_default("LL_THING", "the default")
    assert [r.getMessage() for r in caplog.records] == ["LL_THING is not set; using the embedded default: the default"]


def test_settings_on_embedded_defaults(
    clean_env: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="latencylab.settings"):
        s = load_settings()
    var = tmp_path / "var"
    db = s["DATABASES"]["default"]
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["NAME"] == str(var / "latencylab.sqlite3")
    # A file, so a worker process can open the same test database.
    assert db["TEST"]["NAME"] == str(var / "test_latencylab.sqlite3")
    assert s["CELERY_BROKER_URL"] == "filesystem://localhost/"  # a host, so kombu does not warn
    options = s["CELERY_BROKER_TRANSPORT_OPTIONS"]
    assert options["data_folder_in"] == options["data_folder_out"]
    assert Path(options["data_folder_in"]).is_dir() and Path(options["processed_folder"]).is_dir()
    assert s["MEDIA_ROOT"] == var / "media"
    assert s["LATENCYLAB_MAX_UPLOAD_BYTES"] == 100 * 1024 * 1024
    assert s["DATA_UPLOAD_MAX_MEMORY_SIZE"] > s["LATENCYLAB_MAX_UPLOAD_BYTES"]
    assert (s["LATENCYLAB_HEARTBEAT_SECONDS"], s["LATENCYLAB_OFFLINE_AFTER_SECONDS"]) == (10, 30)
    assert s["CELERY_TASK_ACKS_LATE"] and s["CELERY_TASK_REJECT_ON_WORKER_LOST"] and s["CELERY_TASK_IGNORE_RESULT"]
    assert s["CELERY_WORKER_PREFETCH_MULTIPLIER"] == 1 and s["CELERY_TASK_SERIALIZER"] == "json"
    logged = " ".join(r.getMessage() for r in caplog.records)
    for name in ("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"):
        assert f"{name} is not set; using the embedded default" in logged


def test_settings_from_production_variables(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("DATABASE_URL", "postgres://lab:secret@db.internal:5432/latencylab")
    clean_env.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
    clean_env.setenv("SECRET_KEY", "k" * 50)
    clean_env.setenv("ALLOWED_HOSTS", "lab.example.org")
    s = load_settings()
    db = s["DATABASES"]["default"]
    assert (db["ENGINE"], db["HOST"], db["NAME"]) == ("server.postgres", "db.internal", "latencylab")
    assert s["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/0"
    assert s["CELERY_BROKER_TRANSPORT_OPTIONS"]["visibility_timeout"] > s["CELERY_TASK_TIME_LIMIT"]
    assert s["ALLOWED_HOSTS"] == ["lab.example.org"]


@pytest.mark.parametrize(
    "name,value,expected",
    [
        ("DATABASE_URL", "foo://x", "DATABASE_URL='foo://x' is not a usable database URL"),
        ("DATABASE_URL", "mysql://u@h/db", "DATABASE_URL uses engine"),
        ("DEBUG", "sure", "DEBUG='sure' is not a boolean"),
        ("LATENCYLAB_MAX_UPLOAD_BYTES", "100MB", "LATENCYLAB_MAX_UPLOAD_BYTES='100MB' is not an integer"),
        ("LATENCYLAB_OFFLINE_AFTER_SECONDS", "5", "LATENCYLAB_OFFLINE_AFTER_SECONDS=5 must be greater than"),
        ("CELERY_BROKER_URL", "localhost", "CELERY_BROKER_URL='localhost' is not a URL"),
    ],
)
def test_malformed_settings_fail_at_start_up(
    clean_env: pytest.MonkeyPatch, name: str, value: str, expected: str
) -> None:
    clean_env.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=expected):
        load_settings()


def test_database_url_error_hides_the_password(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("DATABASE_URL", "foo://user:hunter2@host/db")
    with pytest.raises(ImproperlyConfigured) as info:
        load_settings()
    assert "hunter2" not in str(info.value)
