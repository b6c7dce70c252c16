"""docker-compose.yml describes the production shape (no Docker engine runs here, so the file is
checked for what `docker compose up` relies on: services, health checks, volumes, settings)."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_services_and_health_checks():
    services = _compose()["services"]
    assert set(services) == {"postgres", "redis", "web", "worker"}
    for name, service in services.items():
        assert "healthcheck" in service, f"{name} has no health check"


def test_web_and_worker_use_postgres_and_redis_and_wait_for_them():
    services = _compose()["services"]
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379")
    assert services["web"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["worker"]["depends_on"]["web"]["condition"] == "service_healthy"
    assert "gunicorn" in services["web"]["command"] and "migrate" in services["web"]["command"]
    assert services["worker"]["command"][:2] == ["latencylab", "worker"]


def test_named_volumes_keep_data():
    compose = _compose()
    assert {"pgdata", "redisdata", "media"} <= set(compose["volumes"])
    assert "pgdata:/var/lib/postgresql/data" in compose["services"]["postgres"]["volumes"]


def test_image_installs_pocl_and_the_project():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "pocl-opencl-icd" in dockerfile and "pip install" in dockerfile
    for folder in ("devicelab", "server", "workers", "latencylab", "migrations"):
        assert f"COPY {folder} {folder}" in dockerfile
