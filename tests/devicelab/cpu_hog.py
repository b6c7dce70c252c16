"""A process that spins on one core, outside the test's own process family: the "other work" a
shared machine runs beside a measurement."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SPIN = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


@contextmanager
def spinning_on(core: int) -> Iterator[int]:
    """A process spinning on ``core`` while the block runs; yields its pid. A shell starts it and
    exits, so it is nobody's child here (a job's own children are not "other" processes)."""
    script = f"{shlex.quote(sys.executable)} -c {shlex.quote(SPIN)} {core} > /dev/null 2>&1 & echo $!"
    pid = int(subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout)
    try:
        yield pid
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
