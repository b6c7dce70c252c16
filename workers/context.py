"""What a device's Celery process must know about the agent that started it.

The agent hands it over in one environment variable: the worker's name, the run token that its
claims carry, the devices this process serves (row id -> the ``DeviceInfo`` the backend
discovered, whose identity the backend checks; the row's identity may carry an instance suffix),
and the time limit the server gave its jobs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from devicelab.backends.base import DeviceInfo

ENV_VAR = "LATENCYLAB_WORKER_CONTEXT"


class NotAnAgentProcess(RuntimeError):
    """The task runs in a Celery worker that ``latencylab worker`` did not start."""


@dataclass(frozen=True)
class WorkerContext:
    """The identity of one worker run, as its device processes see it."""

    name: str
    token: str
    devices: dict[int, DeviceInfo] = field(default_factory=dict)
    task_time_limit: int = 3600

    def to_env(self) -> dict[str, str]:
        """The environment entry that carries this context to a child process."""
        doc = {
            "name": self.name,
            "token": self.token,
            "devices": {str(pk): info.as_dict() for pk, info in self.devices.items()},
            "task_time_limit": self.task_time_limit,
        }
        return {ENV_VAR: json.dumps(doc)}

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> WorkerContext:
        """The context this process was started with; ``NotAnAgentProcess`` when there is none."""
        raw = (os.environ if environ is None else environ).get(ENV_VAR)
        if not raw:
            raise NotAnAgentProcess(
                f"{ENV_VAR} is not set: profiling jobs run only in the device processes that "
                "`latencylab worker` (python -m workers.run) starts, not in a bare `celery worker`"
            )
        doc = json.loads(raw)
        devices = {int(pk): DeviceInfo.from_dict(info) for pk, info in doc["devices"].items()}
        return cls(
            name=doc["name"], token=doc["token"], devices=devices, task_time_limit=int(doc.get("task_time_limit", 3600))
        )
