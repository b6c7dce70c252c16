"""The trainer's tasks: train a predictor, compute its NAS-Bench-201 table.

They run on their own queue (``predictors``, behind ``LATENCYLAB_QUEUE_PREFIX``), consumed by
the trainer process (``latencylab trainer`` / ``python -m server.trainer``), never by a
device's process: training takes a core for minutes and would disturb the measurements a
device process makes. Thin like the profiling task: each takes the predictor's id, and the
services claim the row with a conditional update, so a duplicate message does nothing.
"""

from __future__ import annotations

import logging

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

from server.taskqueue import TABLE_TASK, TRAINING_TASK, app

log = logging.getLogger("latencylab.trainer")


def _limit_reason(task: Task) -> str:
    limit = task.time_limit or app.conf.task_time_limit
    return f"training ran past the time limit of {limit} s (LATENCYLAB_TASK_TIME_LIMIT) and was stopped"


class TrainingTask(Task):  # type: ignore[misc]
    """Fails the predictor when the task itself dies of its hard time limit."""

    def on_failure(self, exc: BaseException, task_id: str, args: object, kwargs: object, einfo: object) -> None:
        """Turn a killed training into a failed predictor."""
        from server.predictors.services import fail_predictor

        if isinstance(exc, TimeLimitExceeded) and args:
            fail_predictor(int(args[0]), _limit_reason(self))  # type: ignore[index]


@app.task(
    bind=True,
    base=TrainingTask,
    name=TRAINING_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def train_predictor(self: Task, predictor_id: int) -> str:
    """Train predictor ``predictor_id``; returns its state afterwards."""
    from server.predictors.services import fail_predictor, run_training

    try:
        row = run_training(predictor_id, reraise=(SoftTimeLimitExceeded,))
    except SoftTimeLimitExceeded:
        fail_predictor(predictor_id, _limit_reason(self))
        return "failed"
    return "missing" if row is None else str(row.state)


@app.task(
    bind=True,
    name=TABLE_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def build_architecture_table(self: Task, predictor_id: int) -> str:
    """Compute a ready predictor's NAS-Bench-201 table; returns what happened, in a word."""
    from server.predictors.models import ArchitectureTable, Predictor, PredictorState
    from server.predictors.tables import NB201, build_nb201_table

    row = Predictor.objects.filter(pk=predictor_id, state=PredictorState.READY).first()
    if row is None:
        return "not-ready"
    if ArchitectureTable.objects.filter(predictor=row, space=NB201, artifact_sha256=row.artifact_sha256).exists():
        return "exists"
    table = build_nb201_table(row)
    log.info("predictor %s: NB201 table with %d values in %.0f s", predictor_id, table.computed, table.seconds)
    return "built"
