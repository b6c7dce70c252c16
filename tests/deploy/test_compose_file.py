"""docker-compose.yml describes the production shape (no Docker engine runs here, so the file is
checked for what `docker compose up` relies on: services, health checks, volumes, settings, and
commands that the image really has)."""

from __future__ import annotations

import importlib.util
import shlex
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
APP_SERVICES = ("web", "worker", "trainer")


def _compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def _command_lines(command: str | list[str]) -> list[list[str]]:
    """The commands a service runs: its exec form, or each `&&` step of an `sh -c` script."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if argv[:2] != ["sh", "-c"]:
        return [argv]
    return [shlex.split(step) for step in argv[2].split("&&")]


def _assert_real_command(argv: list[str]) -> None:
    """Fail unless ``argv`` is a command the image has: a `latencylab` sub-command or gunicorn on our WSGI app."""
    from django.core.management import get_commands

    from latencylab.cli import build_parser

    program, *args = argv
    if program == "latencylab":
        try:
            parsed = build_parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"`{shlex.join(argv)}` is not a command of the latencylab CLI")
        assert callable(parsed.func)
        if args[0] == "manage":
            assert parsed.args and parsed.args[0] in get_commands(), f"no management command {parsed.args[:1]}"
    elif program == "gunicorn":
        scripts = {ep.name for ep in metadata.entry_points(group="console_scripts")}
        assert "gunicorn" in scripts, "gunicorn is not installed"
        app = next(a for a in args if ":" in a and not a.startswith("-"))
        module, _, attribute = app.partition(":")
        assert importlib.util.find_spec(module) is not None, f"{module} does not exist"
        assert attribute == "application"
    else:
        pytest.fail(f"`{shlex.join(argv)}`: the image has no such command")


def test_services_and_health_checks():
    services = _compose()["services"]
    assert set(services) == {"postgres", "redis", *APP_SERVICES}
    for name, service in services.items():
        assert "healthcheck" in service, f"{name} has no health check"


def test_the_app_services_use_postgres_and_redis_and_wait_for_them():
    services = _compose()["services"]
    for name in APP_SERVICES:
        assert services[name]["build"] == "."
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379")
        assert "media:/var/lib/latencylab" in services[name]["volumes"]
        # No secret ships with the file: compose refuses to start until SECRET_KEY is set.
        assert env["SECRET_KEY"].startswith("${SECRET_KEY:?"), env["SECRET_KEY"]
    assert services["web"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["web"]["depends_on"]["redis"]["condition"] == "service_healthy"
    # The web service migrates; the others start once it answers.
    for name in ("worker", "trainer"):
        assert services[name]["depends_on"]["web"]["condition"] == "service_healthy"


def test_web_migrates_then_serves_worker_profiles_and_trainer_trains():
    services = _compose()["services"]
    web = [argv[:3] for argv in _command_lines(services["web"]["command"])]
    assert web == [["latencylab", "manage", "migrate"], ["gunicorn", "server.wsgi:application", "--bind"]]
    assert services["worker"]["command"][:2] == ["latencylab", "worker"]
    assert services["trainer"]["command"][:2] == ["latencylab", "trainer"]
    for name in ("worker", "trainer"):
        # The health check looks for the process that the service's command starts.
        pattern = services[name]["healthcheck"]["test"][1].split("'")[1]
        assert pattern in shlex.join(services[name]["command"])


def test_every_app_command_is_a_real_command():
    services = _compose()["services"]
    for name in APP_SERVICES:
        for argv in _command_lines(services[name]["command"]):
            _assert_real_command(argv)
    dockerfile = (REPO / "Dockerfile").read_text()
    cmd = next(line for line in dockerfile.splitlines() if line.startswith("CMD "))
    _assert_real_command(yaml.safe_load(cmd.removeprefix("CMD ")))


def test_named_volumes_keep_data():
    compose = _compose()
    assert {"pgdata", "redisdata", "media"} <= set(compose["volumes"])
    assert "pgdata:/var/lib/postgresql/data" in compose["services"]["postgres"]["volumes"]


def test_image_installs_pocl_and_the_whole_build_context_less_dockerignore():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "pocl-opencl-icd" in dockerfile and "pip install --no-cache-dir ." in dockerfile
    # The packages come from pyproject.toml alone: the image copies the context, .dockerignore trims it
    # (tests/deploy/test_image.py replays both and starts the result).
    assert "COPY . ." in dockerfile
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "var", "tests", "docs"} <= set(ignored)
