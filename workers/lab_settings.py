"""What a lab machine is told by its environment: the server's URL, its lab token, the broker,
and its own folder. Nothing of the server's (no database, no secret key, no shared folder).

* ``LATENCYLAB_SERVER_URL`` (``--server``): the LatencyLab server, ``https://lab.example.org``.
* ``LATENCYLAB_LAB_TOKEN`` (``--token``): the token ``latencylab lab add NAME`` printed.
* ``CELERY_BROKER_URL``: the queue, ``redis://host:6379/0`` or, with TLS and a password,
  ``rediss://user:password@host:6380/0`` (``?ssl_cert_reqs=required`` by default; see the
  README). ``filesystem://`` only for a worker on the server's own host (the embedded demo),
  with ``LATENCYLAB_BROKER_DIR`` naming the server's broker folder.
* ``LATENCYLAB_LAB_DIR``: the machine's own folder (model cache, results waiting for the
  server, device locks); ``~/.cache/latencylab-lab`` by default.
* ``LATENCYLAB_MODEL_CACHE_MB``: the model cache's bound (default 2048).
* ``LATENCYLAB_HOST_LOCK``: one measurement at a time on the host's processors (default on).
* ``LATENCYLAB_TASK_TIME_LIMIT``: seconds a job may run here, if less than the server allows.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

SERVER_URL_ENV = "LATENCYLAB_SERVER_URL"
TOKEN_ENV = "LATENCYLAB_LAB_TOKEN"
BROKER_ENV = "CELERY_BROKER_URL"
BROKER_DIR_ENV = "LATENCYLAB_BROKER_DIR"
LAB_DIR_ENV = "LATENCYLAB_LAB_DIR"
CACHE_ENV = "LATENCYLAB_MODEL_CACHE_MB"
HOST_LOCK_ENV = "LATENCYLAB_HOST_LOCK"
TIME_LIMIT_ENV = "LATENCYLAB_TASK_TIME_LIMIT"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class LabConfigError(ValueError):
    """A lab machine's setting is missing or malformed; the message names it."""


def env_flag(name: str, default: bool, environ: dict[str, str] | None = None) -> bool:
    """A yes/no setting; ``LabConfigError`` for anything else."""
    raw = (os.environ if environ is None else environ).get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise LabConfigError(f"{name}={raw!r} is not a yes/no value (true/false, 1/0, on/off)")


@dataclass(frozen=True)
class LabSettings:
    """A lab machine's settings, read once at start."""

    server_url: str
    token: str
    broker_url: str
    lab_dir: Path
    broker_dir: Path | None = None
    model_cache_bytes: int = 2048 * 1024 * 1024
    host_lock: bool = True
    time_limit_cap: int | None = None  # seconds; the server's limit applies when it is lower

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> LabSettings:
        """The settings from the environment; ``LabConfigError`` naming what is missing or wrong."""
        env = dict(os.environ if environ is None else environ)
        url = env.get(SERVER_URL_ENV, "").strip().rstrip("/")
        token = env.get(TOKEN_ENV, "").strip()
        broker = env.get(BROKER_ENV, "").strip()
        if not url:
            raise LabConfigError(f"no server URL: pass --server URL or set {SERVER_URL_ENV}")
        if not re.match(r"^https?://[^/]+", url):
            raise LabConfigError(f"{SERVER_URL_ENV}={url!r} must start with http:// or https://")
        if not token:
            raise LabConfigError(
                f"no lab token: pass --token TOKEN or set {TOKEN_ENV} (on the server: latencylab lab add NAME)"
            )
        if not broker:
            raise LabConfigError(f"no broker: set {BROKER_ENV} (e.g. redis://host:6379/0 or rediss://user:pass@host)")
        if "://" not in broker:
            raise LabConfigError(f"{BROKER_ENV}={broker!r} is not a URL (e.g. redis://host:6379/0)")
        broker_dir = Path(env[BROKER_DIR_ENV]) if env.get(BROKER_DIR_ENV) else None
        if broker.startswith("filesystem:") and broker_dir is None:
            raise LabConfigError(
                f"{BROKER_ENV}={broker!r} is the embedded filesystem broker: set {BROKER_DIR_ENV} to the "
                "server's broker folder (a lab machine on another host needs Redis)"
            )
        lab_dir = Path(env.get(LAB_DIR_ENV) or Path.home() / ".cache" / "latencylab-lab")
        try:
            cache_mb = int(env.get(CACHE_ENV, "2048"))
        except ValueError:
            raise LabConfigError(f"{CACHE_ENV}={env.get(CACHE_ENV)!r} is not a whole number of MB") from None
        if cache_mb < 1:
            raise LabConfigError(f"{CACHE_ENV} must be at least 1 (MB)")
        cap: int | None = None
        if env.get(TIME_LIMIT_ENV):
            try:
                cap = int(env[TIME_LIMIT_ENV])
            except ValueError:
                raise LabConfigError(
                    f"{TIME_LIMIT_ENV}={env[TIME_LIMIT_ENV]!r} is not a whole number of seconds"
                ) from None
            if cap < 60:
                raise LabConfigError(f"{TIME_LIMIT_ENV} must be at least 60 (seconds)")
        return cls(
            server_url=url,
            token=token,
            broker_url=broker,
            lab_dir=lab_dir,
            broker_dir=broker_dir,
            model_cache_bytes=cache_mb * 1024 * 1024,
            host_lock=env_flag(HOST_LOCK_ENV, True, env),
            time_limit_cap=cap,
        )

    @property
    def cache_dir(self) -> Path:
        """Where fetched model files are kept, by hash."""
        return self.lab_dir / "models"

    @property
    def outbox_dir(self) -> Path:
        """Where results wait while the server cannot take them."""
        return self.lab_dir / "outbox"


__all__ = ["LabConfigError", "LabSettings", "env_flag"]
