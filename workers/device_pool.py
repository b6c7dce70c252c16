"""The pool of a device process: a fresh process for every job, and a warm one waiting for it.

Every job runs in a pool process of its own (``--max-tasks-per-child 1``): a runtime that sizes
its thread pool once per process (PoCL's ``POCL_MAX_PTHREAD_COUNT``) honours each job's thread
count, and nothing a job leaves behind (a leak, a wedged driver context, a crashed runtime) can
touch the next one. Celery's prefork pool replaces a finished process only at its maintenance
tick (every 5 s) when the process's exit is not noticed at once, which on a loaded machine was
most of the time: a job waited seconds for a process to be forked for it.

``DevicePool`` keeps the fresh process per job without the wait. It holds one process more than
the consumer runs jobs at once: the consumer still starts one job at a time (its slots count the
concurrency, one), so one process measures while the other has been forked and initialized
already and takes the next job the moment it arrives; the consumer's prefetch counts both, so
the next message is already taken from the broker (acknowledged late, as every message) when
the job before it ends, and it is looked at (``workers.stale_messages``) only then. The finished process is
replaced while the next job is set up (its claim, its model, its runtime session), before its
warm-up runs; the pool also looks for exited processes every ``MAINTAIN_SECONDS`` instead of 5 s.

The device lock (``workers.device_lock``) still keeps a second job off a device that is measuring,
whatever the pool holds.
"""

from __future__ import annotations

from typing import Any

from celery.concurrency.asynpool import AsynPool
from celery.concurrency.prefork import TaskPool

# How often the pool looks for exited processes to replace (Celery's default: every 5 s).
MAINTAIN_SECONDS = 0.05
# Processes held beyond the jobs run at once: forked and initialized, waiting for the next job.
WARM_SPARES = 1


class _PromptAsynPool(AsynPool):  # type: ignore[misc]  # Celery ships no types
    """Celery's event-loop pool, replacing exited processes within ``MAINTAIN_SECONDS``, and never
    handing a job to a process that is leaving."""

    @property
    def timers(self) -> dict[Any, float]:
        return {self.maintain_pool: MAINTAIN_SECONDS}

    def on_job_ready(self, job: Any, i: Any, obj: Any, inqW_fd: int) -> None:
        """A process finished its job. Celery marks it free for the next job; one that ran its
        last job (``--max-tasks-per-child 1``: each) is leaving, and a job written to it waits
        until its exit is noticed and the job is given to another process (about 150 ms, every
        other job). It stays marked busy until it is gone: the next job goes to the warm one."""
        if self._maxtasksperchild == 1:
            return
        super().on_job_ready(job, i, obj, inqW_fd)


class DevicePool(TaskPool):  # type: ignore[misc]
    """Celery's prefork pool with ``WARM_SPARES`` processes beyond its concurrency. The consumer
    still starts one job at a time (its slots are the concurrency, ``--concurrency 1``); its
    prefetch counts the processes, so the next message is already at hand when a job ends."""

    Pool = _PromptAsynPool

    def on_start(self) -> None:
        self.limit += WARM_SPARES
        try:
            super().on_start()
        finally:
            self.limit -= WARM_SPARES


__all__ = ["MAINTAIN_SECONDS", "WARM_SPARES", "DevicePool"]
