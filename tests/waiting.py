"""The one way a test waits for something another process or thread does: poll, then fail
naming what it waited for."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 60.0,
    what: str | Callable[[], str] = "the condition",
    interval: float = 0.1,
) -> Any:
    """``predicate()``'s first truthy value, polled every ``interval`` seconds; ``AssertionError``
    naming ``what`` after ``timeout`` seconds. ``what`` may be a callable, called only on a
    timeout (for a log's tail); the predicate may assert itself to fail at once (a process that
    exited)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g} s waiting for {said}")
        time.sleep(interval)


__all__ = ["wait_for"]
