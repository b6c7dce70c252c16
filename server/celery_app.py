"""The trainer's side of the Celery app: the project's app (``server.taskqueue``) with the
server's task modules, which the trainer process (``server.trainer``) registers.

The web server sends these tasks by name and does not import their modules; the trainer imports
this module, whose ``imports`` makes its Celery worker import the three task modules and so know
every task by the name the web server sends. The lab worker's tasks are not here: it has its own app
(``workers.celery_app``).
"""

from __future__ import annotations

from server.taskqueue import app

app.conf.imports = ("server.predictors.tasks", "server.networks.tasks", "server.selection.tasks")


__all__ = ["app"]
