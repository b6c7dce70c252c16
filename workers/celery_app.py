"""The lab machine's Celery app: the device queues' consumer, configured from the environment
alone (``workers.lab_settings``), with no Django.

The server sends ``workers.tasks.run_profiling_job`` by name with a job id on a device's queue
(``server.taskqueue``, by the name in ``devicelab.lab_protocol``); a device process started with ``-A workers.celery_app`` registers that
task (``imports``). The broker is ``CELERY_BROKER_URL``: Redis (``redis://`` or, with TLS,
``rediss://``), or the server's embedded filesystem folder for a worker on the server's own host.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

from celery import Celery

from devicelab.fsbroker import TRANSPORT as FILESYSTEM_TRANSPORT
from workers.context import WorkerContext
from workers.lab_settings import BROKER_DIR_ENV, BROKER_ENV

# Seconds a job may run when the context does not say (the server's default).
DEFAULT_TASK_TIME_LIMIT = 3600


def broker_options(url: str, task_time_limit: int, broker_dir: str | None) -> dict[str, Any]:
    """Celery's broker settings for ``url``."""
    conf: dict[str, Any] = {"broker_url": url, "broker_connection_retry_on_startup": True}
    if url.startswith("filesystem:"):
        folder = broker_dir or ""
        # kombu's transport with messages written whole (a consumer read half of one).
        conf["broker_transport"] = FILESYSTEM_TRANSPORT
        conf["broker_transport_options"] = {
            "data_folder_in": os.path.join(folder, "queue"),
            "data_folder_out": os.path.join(folder, "queue"),
            "processed_folder": os.path.join(folder, "processed"),
            "control_folder": os.path.join(folder, "control"),
            "store_processed": False,
            "polling_interval": 0.25,
        }
        conf["worker_enable_remote_control"] = False
    else:
        # The visibility timeout must outlast the longest task, or a slow job is delivered twice.
        conf["broker_transport_options"] = {"visibility_timeout": task_time_limit + 600}
    if url.startswith("rediss://") and "ssl_cert_reqs" not in url:
        # TLS to the broker checks the broker's certificate unless the URL says otherwise.
        conf["broker_use_ssl"] = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    return conf


def make_app(environ: dict[str, str] | None = None) -> Celery:
    """The app of one device process, from its environment."""
    env = os.environ if environ is None else environ
    try:
        limit = WorkerContext.from_env(dict(env)).task_time_limit
    except Exception:  # noqa: BLE001 - a bare import (a test, a tool) has no context: the defaults do
        limit = DEFAULT_TASK_TIME_LIMIT
    celery = Celery("latencylab-lab")
    celery.conf.update(
        broker_options(env.get(BROKER_ENV, "") or "memory://", limit, env.get(BROKER_DIR_ENV)),
        accept_content=["json"],
        task_serializer="json",
        result_serializer="json",
        timezone="UTC",
        task_ignore_result=True,
        result_backend=None,
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        task_reject_on_worker_lost=True,
        task_time_limit=limit,
        task_soft_time_limit=limit - 30,
        imports=("workers.tasks",),
    )
    return celery


app = make_app()


__all__ = ["app", "broker_options", "make_app"]
