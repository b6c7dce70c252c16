"""The Celery app, configured from Django settings (``CELERY_*``).

The broker comes from ``CELERY_BROKER_URL``: Redis in production, or the embedded kombu
filesystem transport under ``var/broker`` when it is unset (see ``server/settings.py``). There is
no result backend and no eager mode: the job row is the truth, and a real worker process runs
every task.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

app = Celery("latencylab")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Listed, not autodiscovered: the web process must register the task modules too, so that
# enqueue_job / enqueue_training send tasks the workers know by the same names.
app.conf.imports = ("workers.tasks", "workers.training_tasks")


def uses_filesystem_broker() -> bool:
    """Whether the embedded filesystem transport carries the messages (no broker server)."""
    return str(app.conf.broker_url or "").startswith("filesystem:")


if uses_filesystem_broker():
    # The filesystem transport is polled: a quarter second keeps a job's queue delay and a
    # worker's shutdown short at the cost of a few directory listings per second. Remote control
    # would poll a second (broadcast) queue per worker, and nothing here uses it.
    app.conf.broker_transport_options = {"polling_interval": 0.25, **(app.conf.broker_transport_options or {})}
    app.conf.worker_enable_remote_control = False


__all__ = ["app", "uses_filesystem_broker"]
