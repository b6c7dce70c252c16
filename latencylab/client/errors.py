"""What the client raises: the server's refusals, what cannot be sent, and jobs that failed or
did not finish in time."""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """An error answer of the server (``status`` is its HTTP status) or a failure to reach it (``status`` None)."""

    def __init__(self, status: int | None, detail: str, body: Any = None) -> None:
        self.status = status
        self.detail = detail
        self.body = body
        super().__init__(f"HTTP {status}: {detail}" if status is not None else detail)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Per-item errors of a refused batch (``[{"index", "name", "error"}]``), else empty."""
        errors = self.body.get("errors") if isinstance(self.body, dict) else None
        return list(errors) if isinstance(errors, list) else []


class InputError(ClientError, ValueError):
    """What the caller passed cannot be sent (no such file, unknown device name, bad architecture)."""

    def __init__(self, detail: str) -> None:
        super().__init__(None, detail)


class JobFailed(ClientError):
    """A profiling job ended failed or cancelled; ``job`` holds its last state from the server."""

    def __init__(self, detail: str, job: dict[str, Any]) -> None:
        super().__init__(None, detail, job)
        self.job = job


class ModelFailed(ClientError):
    """An uploaded model could not be parsed (a big upload is parsed after its answer); ``model``
    holds its row from the server, ``failure_reason`` naming the node."""

    def __init__(self, detail: str, model: dict[str, Any]) -> None:
        super().__init__(None, detail, model)
        self.model = model


class WaitTimeout(ClientError):
    """A job (or an upload being parsed) did not finish within the time it was given; it goes on
    on the server. ``job`` holds its last state."""

    def __init__(self, detail: str, job: dict[str, Any]) -> None:
        super().__init__(None, detail, job)
        self.job = job


__all__ = ["ClientError", "InputError", "JobFailed", "ModelFailed", "WaitTimeout"]
