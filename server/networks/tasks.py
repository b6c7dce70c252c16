"""The trainer's task that parses a big upload: the model row is stored ``parsing`` by the web
server (``server.networks.services.receive_model``) and finished here, ``ready`` or ``failed``.

It runs on the ``models`` queue (behind ``LATENCYLAB_QUEUE_PREFIX``), consumed by the trainer
(``latencylab trainer`` / ``python -m server.trainer``): the process that is no device's, so a
parse that takes a core and gigabytes for half a minute never disturbs a measurement nor holds
a web worker. Thin: it takes the row's id, and the service finishes the row with a conditional
update, so a duplicate message (the trainer re-sends every parse still pending when it starts)
does nothing.

A file that kills the process parsing it (out of memory) must not come back forever: unlike a
profiling job, the message is acknowledged when the pool process is lost, and the row is failed
with the reason (``task_failure`` reaches the trainer's main process for a lost worker and a
hard time limit alike).
"""

from __future__ import annotations

from typing import Any

from billiard.exceptions import WorkerLostError
from celery import Task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from celery.signals import task_failure

from server.taskqueue import MODEL_PARSE_TASK, app


def _limit_reason(task: Task) -> str:
    limit = task.time_limit or app.conf.task_time_limit
    return f"parsing ran past the time limit of {limit} s (LATENCYLAB_TASK_TIME_LIMIT) and was stopped"


@app.task(
    bind=True,
    name=MODEL_PARSE_TASK,
    acks_late=True,
    # A lost pool process acknowledges the message (see the module's docstring).
    reject_on_worker_lost=False,
    ignore_result=True,
)
def parse_model(self: Task, model_id: int) -> str:
    """Parse stored upload ``model_id``; returns the row's state afterwards, in a word."""
    from server.networks.services import fail_model_parse, parse_stored_model

    try:
        row = parse_stored_model(model_id, reraise=(SoftTimeLimitExceeded,))
    except SoftTimeLimitExceeded:
        fail_model_parse(model_id, _limit_reason(self))
        return "failed"
    return "missing" if row is None else str(row.state)


@task_failure.connect(sender=parse_model, dispatch_uid="server.networks.tasks.parse_failed")
def _parse_process_died(sender: Task, task_id: str, exception: BaseException, args: Any, **kwargs: Any) -> None:
    """The process parsing a model died (out of memory, killed) or ran out of time: fail the row."""
    from server.networks.services import fail_model_parse

    if not args:
        return
    if isinstance(exception, TimeLimitExceeded):
        fail_model_parse(int(args[0]), _limit_reason(sender))
    elif isinstance(exception, WorkerLostError):
        fail_model_parse(
            int(args[0]),
            f"the process parsing the file died ({exception}); it may need more memory than the trainer has",
        )
