"""The trainer's model-selection task: run a queued CNNSelect simulation.

Thin like the others: it takes the simulation's id and calls the service, which claims the row
with a conditional update (a duplicate message does nothing) and stores the result or the reason.
"""

from __future__ import annotations

import uuid

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

from server.taskqueue import SIMULATION_TASK, app


class SimulationTask(Task):  # type: ignore[misc]
    """Fails the simulation when the task itself dies of its hard time limit."""

    def on_failure(self, exc: BaseException, task_id: str, args: object, kwargs: object, einfo: object) -> None:
        """Turn a killed simulation into a failed one."""
        from server.selection.simulations import fail_simulation

        if isinstance(exc, TimeLimitExceeded) and args:
            fail_simulation(int(args[0]), "the simulation ran past the task time limit and was stopped")  # type: ignore[index]


@app.task(
    bind=True,
    base=SimulationTask,
    name=SIMULATION_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_selection_simulation(self: Task, simulation_id: int) -> str:
    """Run simulation ``simulation_id``; returns its state afterwards."""
    from server.selection.simulations import fail_simulation, run_simulation

    token = f"{self.request.hostname or 'trainer'}:{uuid.uuid4().hex[:12]}"
    try:
        row = run_simulation(simulation_id, token)
    except SoftTimeLimitExceeded:
        fail_simulation(simulation_id, "the simulation ran past the task's soft time limit and was stopped", token)
        return "failed"
    return "not-queued" if row is None else str(row.state)
