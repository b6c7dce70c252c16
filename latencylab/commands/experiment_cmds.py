"""What the experiment commands share (``latencylab fusion``, ``latencylab sharing``): the
``--wait``/``--timeout`` flags, refusing flags below their minimum before asking the server,
waiting for a queued job with a progress bar, and printing a job's state, its rows or its data as
JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from latencylab.commands.client_cmds import ProgressBar
from latencylab.commands.output import print_json


def add_wait_arguments(p: argparse.ArgumentParser) -> None:
    """``--wait`` and ``--timeout`` on a command that queues a job."""
    p.add_argument("--wait", action="store_true", help="wait for it to finish, showing progress, and print the result")
    p.add_argument("--timeout", type=float, help="with --wait: give up waiting after this many seconds")


def check_minimums(args: argparse.Namespace, flags: dict[str, int]) -> None:
    """Refuse flags below their minimum (``{"max-group": 2}``) before asking the server."""
    from latencylab.client import InputError

    for flag, minimum in flags.items():
        value = getattr(args, flag.replace("-", "_"))
        if value is not None and value < minimum:
            raise InputError(f"--{flag} must be at least {minimum}, got {value}")


def wait_for_job(handle: Any, args: argparse.Namespace) -> int | None:
    """Wait with a progress bar on stderr; Ctrl-C cancels. None when done, else the exit status."""
    bar = ProgressBar(sys.stderr)
    try:
        handle.wait(timeout=args.timeout, on_progress=lambda f: bar.update(f, handle.progress_message))
    except KeyboardInterrupt:
        bar.close()
        handle.cancel()
        print(f"cancelled job #{handle.id}", file=sys.stderr)
        return 130
    finally:
        bar.close()
    return None


def print_data(args: argparse.Namespace, data: Any, printer: Callable[[Any], None]) -> None:
    """``data`` as JSON with ``--json``, else as ``printer`` shows it to a person."""
    if args.json:
        print_json(data)
    else:
        printer(data)


def print_queued(handle: Any, args: argparse.Namespace, printer: Callable[[dict[str, Any]], None]) -> int:
    """Print a queued job, or with ``--wait`` wait for it and print its result; the exit status."""
    if args.wait:
        stopped = wait_for_job(handle, args)
        if stopped is not None:
            return stopped
    print_data(args, handle.data, printer)
    return 0


def print_found_rows(
    args: argparse.Namespace, rows: list[dict[str, Any]], printer: Callable[[list[dict[str, Any]]], None], legend: str
) -> None:
    """Rows as JSON with ``--json``, else ``printer``'s table and a line counting them with
    ``legend``; a note on stderr when no row matched."""
    if args.json:
        print_json(rows)
    elif not rows:
        print("no rows match", file=sys.stderr)
    else:
        printer(rows)
        print(f"\n{len(rows)} rows; {legend}")


def print_job_state(job: dict[str, Any]) -> None:
    """A job's progress while it is queued or running, and why it failed if it did."""
    if job["state"] in ("queued", "running"):
        print(f"progress: {job.get('progress', 0.0):.0%} {job.get('progress_message') or ''}".rstrip())
    if job.get("failure_reason"):
        print(f"failed: {job['failure_reason']}")


__all__ = [
    "add_wait_arguments",
    "check_minimums",
    "print_data",
    "print_found_rows",
    "print_job_state",
    "print_queued",
    "wait_for_job",
]
