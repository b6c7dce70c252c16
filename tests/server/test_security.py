"""Security settings and limits: a server on a real database needs a secret of its own; the
production settings pass ``check --deploy``; bad API tokens and log-ins are locked out; every
page carries a Content-Security-Policy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _settings_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "LATENCYLAB_", "SECRET_KEY"))}
    env.update({"DJANGO_SETTINGS_MODULE": "server.settings", "LATENCYLAB_VAR_DIR": str(tmp_path / "var")})
    env.pop("DATABASE_URL", None)
    env.update(extra)
    return env


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "django", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_server_on_a_real_database_refuses_to_start_without_a_secret(tmp_path: Path) -> None:
    env = _settings_env(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:5432/nothing")
    done = _manage(env, "check")
    assert done.returncode != 0
    assert "SECRET_KEY is not set" in done.stderr


def test_embedded_defaults_make_a_key_of_their_own_once(tmp_path: Path) -> None:
    env = _settings_env(tmp_path)
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    first = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    second = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    assert len(key) >= 50 and key == second.stdout.strip()
    path = tmp_path / "var" / "secret_key"
    assert path.read_text().strip() == key and (path.stat().st_mode & 0o777) == 0o600
    other = _settings_env(tmp_path / "elsewhere")
    third = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=REPO, env=other,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert third.stdout.strip() != key  # every installation its own


def test_the_production_settings_pass_check_deploy(tmp_path: Path) -> None:
    env = _settings_env(
        tmp_path,
        SECRET_KEY="a-long-random-production-secret-0123456789-abcdefghijklmnop",
        ALLOWED_HOSTS="lab.example.org",
        LATENCYLAB_BEHIND_TLS_PROXY="true",
    )
    done = _manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout
    # Without the TLS settings the same check warns: the test could fail.
    env.pop("LATENCYLAB_BEHIND_TLS_PROXY")
    assert _manage(env, "check", "--deploy", "--fail-level", "WARNING").returncode != 0


@pytest.mark.django_db
def test_an_address_that_guesses_tokens_is_locked_out(client: Any, settings: Any, member: Any) -> None:
    settings.LATENCYLAB_TOKEN_FAILURE_LIMIT = 5
    for i in range(5):
        resp = client.get("/api/jobs/", HTTP_AUTHORIZATION=f"Token guess-{i}")
        assert resp.status_code == 401
    locked = client.get("/api/jobs/", HTTP_AUTHORIZATION="Token guess-5")
    assert locked.status_code == 429 and "Too many bad API tokens" in locked.json()["detail"]
    assert int(locked["Retry-After"]) > 0
    # Its bad tokens are refused for the window, a valid token from the same address is not.
    assert client.get("/api/jobs/", HTTP_AUTHORIZATION="Token guess-6").status_code == 429
    assert client.get("/api/jobs/", HTTP_AUTHORIZATION=f"Token {member.key}").status_code == 200


@pytest.mark.django_db
def test_repeated_failed_log_ins_lock_the_user_out(client: Any, make_member: Any, settings: Any) -> None:
    member = make_member()
    member.user.set_password("the right password 42")
    member.user.save()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        wrong = client.post("/accounts/login/", {"username": member.user.username, "password": "wrong"})
        assert wrong.status_code in (200, 429)
    right = client.post("/accounts/login/", {"username": member.user.username, "password": "the right password 42"})
    assert right.status_code == 429  # locked out: even the right password waits for the cool-off
    assert client.get("/").status_code == 302  # not signed in


@pytest.mark.django_db
def test_pages_and_api_answers_carry_a_content_security_policy(client: Any, member: Any, api: Any) -> None:
    client.force_login(member.user)
    page = client.get("/")
    assert page.status_code == 200
    policy = page["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-eval" not in policy
    assert "Content-Security-Policy" in api.get("/api/jobs/").headers


@pytest.mark.django_db
def test_a_server_error_is_logged_with_its_traceback(
    api: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from server.devices.api.views import DeviceViewSet

    def broken(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in a view")

    monkeypatch.setattr(DeviceViewSet, "list", broken)
    api.raise_request_exception = False
    logger = logging.getLogger("django.request")  # configured not to propagate: listen on it directly
    logger.addHandler(caplog.handler)
    try:
        response = api.get("/api/devices/")
    finally:
        logger.removeHandler(caplog.handler)
    assert response.status_code == 500
    (record,) = [r for r in caplog.records if r.name == "django.request" and r.levelno >= logging.ERROR]
    assert record.exc_info is not None and "a bug in a view" in str(record.exc_info[1])
    from django.conf import settings

    assert "console" in settings.LOGGING["loggers"]["django.request"]["handlers"]
