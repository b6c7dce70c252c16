"""What the CLI tests against a live server share: running one ``latencylab`` command with its output
captured (waiting for the database is ``tests.waiting.wait_for``)."""

from __future__ import annotations

import pytest

from latencylab.cli import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """One ``latencylab`` command: its exit status, stdout and stderr."""
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err
