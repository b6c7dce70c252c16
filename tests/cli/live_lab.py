"""What the CLI tests against a live server share: waiting for the database to show something,
and running one ``latencylab`` command with its output captured."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from latencylab.cli import main


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0) -> Any:
    """``predicate()``'s first truthy value within ``timeout`` seconds; ``AssertionError`` after."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """One ``latencylab`` command: its exit status, stdout and stderr."""
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err
