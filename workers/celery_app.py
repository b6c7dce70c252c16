"""The worker side of the Celery app: the project's app (``server.taskqueue``) with the task
modules a worker process registers.

The server sends tasks by name and never imports these modules; a worker process started with
``-A workers.celery_app`` imports them (``imports``) and so knows every task by the name the
server sends.
"""

from __future__ import annotations

from server.taskqueue import app, uses_filesystem_broker

app.conf.imports = ("workers.tasks",)


__all__ = ["app", "uses_filesystem_broker"]
