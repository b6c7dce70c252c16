"""Why a job failed, decided once: the model's fault, the device's (lost: try again), a setting
the device cannot honour, a cancel, or our own bug.

The task retries only the named transient errors (``TRANSIENT_ERRORS``) before it claims a job;
once a claimed job raises, ``classify`` says what becomes of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from devicelab.backends.base import BackendError, DeviceInfo, DeviceLost
from devicelab.fusion.errors import FusionError
from devicelab.graph import GraphError
from workers.device_lock import DeviceBusy
from workers.server_api import ServerUnreachable


class DeviceOffline(RuntimeError):
    """The job's device is marked offline although this worker holds it (transient: its next
    heartbeat brings it back)."""


class JobStopped(Exception):
    """The job was cancelled, or another run took it over: stop measuring."""


# Retried by the task with backoff before the job is claimed; never the job's fault (the server
# not answering the claim: down, restarting, or a 5xx).
TRANSIENT_ERRORS = (DeviceBusy, DeviceOffline, ServerUnreachable)


@dataclass(frozen=True)
class Failure:
    """What to do with a claimed job that raised: stop quietly, try it again, or fail it saying why."""

    action: Literal["stop", "retry", "fail"]
    reason: str
    # an error none of our checks names: logged with its traceback
    unexpected: bool = False


def readable(exc: BaseException) -> str:
    """An exception as one line a person can act on."""
    text = str(exc).strip() or type(exc).__name__
    return text if isinstance(exc, GraphError | BackendError) else f"{type(exc).__name__}: {text}"


def classify(exc: BaseException, info: DeviceInfo, *, stopped: bool = False) -> Failure:
    """What becomes of a job on ``info`` whose run raised ``exc`` (``stopped``: its progress
    reporter already saw the cancel)."""
    from devicelab.backends.registry import BackendUnavailable

    if stopped or isinstance(exc, JobStopped):
        return Failure("stop", "cancelled or taken over")
    if isinstance(exc, DeviceLost):
        # the device or the way to it failed, not the model: another attempt, here or on an
        # equivalent device (the agent takes a vanished phone offline and moves its jobs)
        return Failure("retry", str(exc))
    if isinstance(exc, GraphError):
        return Failure("fail", f"the model cannot be profiled: {exc}")
    if isinstance(exc, BackendError | BackendUnavailable | FusionError):
        return Failure("fail", str(exc))
    if isinstance(exc, ValueError | LookupError):
        # The backend's own checks: settings it cannot honour, a device it no longer sees.
        return Failure("fail", f"device {info.name!r} ({info.identity}) cannot run this job: {readable(exc)}")
    return Failure("fail", f"internal error while running the job: {readable(exc)}", unexpected=True)
