"""docker-compose.yml describes the production shape, docker-compose.lab.yml a lab machine elsewhere
(no Docker engine runs here, so the files are checked for what `docker compose up` relies on:
services, health checks, volumes, settings, and commands that the image really has)."""

from __future__ import annotations

import importlib.util
import shlex
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from workers.lab_settings import BROKER_ENV, LAB_DIR_ENV, SERVER_URL_ENV, TOKEN_ENV

REPO = Path(__file__).resolve().parents[2]
APP_SERVICES = ("web", "worker", "trainer")
SERVER_SERVICES = ("web", "trainer")
# What a lab machine is told, and all it is told (workers/lab_settings.py).
LAB_VARIABLES = {SERVER_URL_ENV, TOKEN_ENV, BROKER_ENV, LAB_DIR_ENV}
SERVER_ONLY = {"DATABASE_URL", "SECRET_KEY", "LATENCYLAB_VAR_DIR", "DJANGO_SETTINGS_MODULE"}


def _compose(name: str = "docker-compose.yml") -> dict[str, Any]:
    return yaml.safe_load((REPO / name).read_text())


def _lab_worker() -> dict[str, Any]:
    return _compose("docker-compose.lab.yml")["services"]["lab-worker"]


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


def test_the_server_services_use_postgres_and_redis_and_wait_for_them():
    services = _compose()["services"]
    for name in SERVER_SERVICES:
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


def test_the_worker_is_a_lab_machine_with_a_url_a_token_and_the_broker_only():
    worker = _compose()["services"]["worker"]
    env = worker["environment"]
    assert set(env) == LAB_VARIABLES, "the worker is told only what a lab machine is told"
    assert not SERVER_ONLY & set(env)
    assert env[SERVER_URL_ENV] == "http://web:8000"
    assert env[BROKER_ENV] == "redis://redis:6379/0"
    # No token ships with the file: compose refuses to start until one is made and set, and says how.
    assert env[TOKEN_ENV].startswith("${LATENCYLAB_LAB_TOKEN:?")
    assert "latencylab lab add compose-worker" in env[TOKEN_ENV]
    # Its own folder, not the server's media.
    assert worker["volumes"] == [f"labdata:{env[LAB_DIR_ENV]}"]
    assert worker["build"] == "."
    assert worker["depends_on"]["redis"]["condition"] == "service_healthy"


def test_the_web_service_answers_to_the_name_the_worker_uses():
    services = _compose()["services"]
    allowed = services["web"]["environment"]["ALLOWED_HOSTS"]
    host = services["worker"]["environment"][SERVER_URL_ENV].split("://")[1].split(":")[0]
    # The default after `${ALLOWED_HOSTS:-` and anything set: the worker's host is always there.
    assert host in allowed.split("${")[0].split(","), allowed


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
    assert {"pgdata", "redisdata", "media", "labdata"} <= set(compose["volumes"])
    assert "pgdata:/var/lib/postgresql/data" in compose["services"]["postgres"]["volumes"]


def test_the_lab_compose_file_runs_one_worker_told_the_lab_variables_only():
    compose = _compose("docker-compose.lab.yml")
    assert set(compose["services"]) == {"lab-worker"}
    lab = _lab_worker()
    assert lab["build"] == "."
    env = lab["environment"]
    assert set(env) == LAB_VARIABLES
    assert not SERVER_ONLY & set(env)
    # The three that join the machine come from its .env, and compose names what is missing.
    for name in (SERVER_URL_ENV, TOKEN_ENV, BROKER_ENV):
        assert env[name].startswith("${" + name + ":?"), env[name]
    assert "rediss://" in env[BROKER_ENV]
    volumes = [v for v in lab["volumes"] if isinstance(v, str)]
    assert volumes == [f"labdata:{env[LAB_DIR_ENV]}"] and "labdata" in compose["volumes"]
    assert "depends_on" not in lab, "a lab machine's server and broker are elsewhere"


def test_the_lab_compose_file_has_a_real_command_and_a_health_check_on_it():
    lab = _lab_worker()
    _assert_real_command(lab["command"])
    assert lab["command"][:2] == ["latencylab", "worker"]
    pattern = lab["healthcheck"]["test"][1].split("'")[1]
    assert pattern in shlex.join(lab["command"])


def test_the_lab_compose_file_says_how_to_pass_phones_and_gpus():
    text = (REPO / "docker-compose.lab.yml").read_text()
    assert "LATENCYLAB_ADB_SERVER: host.docker.internal:5037" in text
    assert "/dev/dri" in text


def test_image_installs_pocl_and_the_whole_build_context_less_dockerignore():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "pocl-opencl-icd" in dockerfile and "pip install --no-cache-dir ." in dockerfile
    # The packages come from pyproject.toml alone: the image copies the context, .dockerignore trims it
    # (tests/deploy/test_image.py replays both and starts the result).
    assert "COPY . ." in dockerfile
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "var", "tests", "docs"} <= set(ignored)
