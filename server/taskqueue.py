"""The Celery app, and how the server hands work out: by task name, on a named queue.

Two kinds of process consume the queues. A lab worker (``workers``, on a lab machine) runs the
profiling task; the server never imports ``workers`` and sends that task by the name the worker
registers it under (``PROFILING_TASK``). The trainer (``server.trainer``, with the server) runs
the server's own slow tasks: predictor trainings and tables (``server.predictors.tasks``), parses
of big uploads (``server.networks.tasks``) and model-selection simulations
(``server.selection.tasks``), which ``server.celery_app`` registers; the web process sends those
by name too and never imports them. A message carries nothing but a row id; the job, predictor,
model or simulation row is the truth, and the task reloads it.

Every device has its own queue (``device.<pk>``), consumed only by that device's process; the
trainer consumes ``predictors`` and ``models`` (big uploads to parse). All sit behind
``LATENCYLAB_QUEUE_PREFIX``, so installations or test sessions sharing one broker never see each
other's messages.

The broker comes from ``CELERY_BROKER_URL``: Redis in production, or the embedded kombu
filesystem transport under ``var/broker`` when it is unset (see ``server/settings.py``). There is
no result backend and no eager mode: a real worker process runs every task.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from celery import Celery
from django.conf import settings
from django.db import transaction

from devicelab.lab_protocol import PROFILING_TASK

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

log = logging.getLogger(__name__)

app = Celery("latencylab")
app.config_from_object("django.conf:settings", namespace="CELERY")

# The name the lab worker registers its task under (workers/tasks.py).
# The names of the trainer's tasks (server/predictors/tasks.py, server/networks/tasks.py,
# server/selection/tasks.py).
TRAINING_TASK = "server.predictors.tasks.train_predictor"
TABLE_TASK = "server.predictors.tasks.build_architecture_table"
MODEL_PARSE_TASK = "server.networks.tasks.parse_model"
SIMULATION_TASK = "server.selection.tasks.run_selection_simulation"


def uses_filesystem_broker() -> bool:
    """Whether the embedded filesystem transport carries the messages (no broker server)."""
    return str(app.conf.broker_url or "").startswith("filesystem:")


if uses_filesystem_broker():
    # The filesystem transport is polled: a quarter second keeps a job's queue delay and a
    # worker's shutdown short at the cost of a few directory listings per second. Remote control
    # would poll a second (broadcast) queue per worker, and nothing here uses it.
    app.conf.broker_transport_options = {"polling_interval": 0.25, **(app.conf.broker_transport_options or {})}
    app.conf.worker_enable_remote_control = False


def device_queue(device_id: int) -> str:
    """The queue of one device: ``device.<pk>``, behind ``LATENCYLAB_QUEUE_PREFIX`` when set."""
    return f"{settings.LATENCYLAB_QUEUE_PREFIX}device.{device_id}"


def trainer_queue() -> str:
    """The queue of the trainer: ``predictors``, behind ``LATENCYLAB_QUEUE_PREFIX`` when set."""
    return f"{settings.LATENCYLAB_QUEUE_PREFIX}predictors"


def models_queue() -> str:
    """The queue of model parses (the trainer consumes it): ``models``, behind ``LATENCYLAB_QUEUE_PREFIX``."""
    return f"{settings.LATENCYLAB_QUEUE_PREFIX}models"


def send_profiling_job(job_id: int, device_id: int) -> None:
    """Wake the process of the job's device: the profiling task, with the job id, on its queue.

    Sending the same job twice is harmless: the task claims the job with a conditional update
    before it runs it. A string queue goes through the anonymous direct exchange with the queue's
    name as routing key, so the message lands in the device's queue even before its worker first
    declared it.
    """
    app.send_task(PROFILING_TASK, args=[job_id], queue=device_queue(device_id))


def send_training(predictor_id: int) -> None:
    """Ask the trainer to train a queued predictor."""
    app.send_task(TRAINING_TASK, args=[predictor_id], queue=trainer_queue())


def send_simulation(simulation_id: int) -> None:
    """Ask the trainer to run a queued model-selection simulation (it takes a core for a while,
    so it runs beside the trainings, never in a device's process)."""
    app.send_task(SIMULATION_TASK, args=[simulation_id], queue=trainer_queue())


def send_table(predictor_id: int) -> None:
    """Ask the trainer to compute a ready predictor's NAS-Bench-201 table."""
    app.send_task(TABLE_TASK, args=[predictor_id], queue=trainer_queue())


def send_model_parse(model_id: int) -> None:
    """Ask the trainer to parse a stored upload (a network row in state ``parsing``).

    Sending it twice is harmless: the task finishes the row with a conditional update.
    """
    app.send_task(MODEL_PARSE_TASK, args=[model_id], queue=models_queue())


def try_send(send: Callable[..., object], *args: Any, what: str, then: str) -> bool:
    """Call ``send(*args)`` (one of the ``send_*`` above, or a step that sends one); whether the
    message went out.

    False, with a warning ``"<what>: its message could not be sent (<error>); <then>"``, when the
    broker cannot take it (down, restarting): the row stays in the database, the truth, and
    whoever ``then`` names sends it again. The caller says what stays pending (``"job 7 stays
    queued"``) and who picks it up.
    """
    try:
        send(*args)
    except Exception as exc:  # noqa: BLE001 - kombu, redis and socket errors alike: the row keeps the work
        log.warning("%s: its message could not be sent (%s: %s); %s", what, type(exc).__name__, exc, then)
        return False
    return True


def send_after_commit(send: Callable[..., object], *args: Any, what: str, then: str) -> None:
    """``try_send(send, *args, ...)`` once the current transaction commits (at once outside one),
    so a worker never reads a row that is not there yet. ``robust``: an error of the send never
    undoes the request that made the row."""
    transaction.on_commit(partial(try_send, send, *args, what=what, then=then), robust=True)


def purge_queues(prefix: str) -> int:
    """Delete every queue, binding and pending message whose queue name starts with ``prefix``;
    returns how many broker entries went.

    For runs that used a private ``LATENCYLAB_QUEUE_PREFIX`` (a test session, a benchmark) to
    leave the shared broker as they found it. Refuses an empty prefix: that would be every queue.
    """
    if not prefix:
        raise ValueError("purge_queues needs a non-empty prefix")
    url = str(app.conf.broker_url)
    removed = 0
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(url)
        # The queue's list and kombu's binding sets all carry the queue name in their key.
        for key in client.scan_iter(match=f"*{prefix}*"):
            removed += client.delete(key)
        # Delivered but unacknowledged messages wait in one hash for the whole broker.
        for tag, raw in client.hgetall("unacked").items():
            if str(json.loads(raw)[2]).startswith(prefix):
                removed += client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)
    elif url.startswith("filesystem"):
        options = app.conf.broker_transport_options or {}
        for folder, pattern in (
            (options.get("data_folder_in"), f"*.{prefix}*.msg"),
            (options.get("control_folder"), f"{prefix}*.exchange"),
        ):
            for path in Path(folder).glob(pattern) if folder else ():
                path.unlink(missing_ok=True)
                removed += 1
    return removed


__all__ = [
    "MODEL_PARSE_TASK",
    "PROFILING_TASK",
    "SIMULATION_TASK",
    "TABLE_TASK",
    "TRAINING_TASK",
    "app",
    "device_queue",
    "models_queue",
    "purge_queues",
    "send_after_commit",
    "send_model_parse",
    "send_profiling_job",
    "send_simulation",
    "send_table",
    "send_training",
    "trainer_queue",
    "try_send",
    "uses_filesystem_broker",
]
