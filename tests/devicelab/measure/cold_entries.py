"""Entry functions a fresh cold-start process runs in the tests (``module:function`` strings)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any


def fixed(payload: dict[str, Any]) -> dict[str, float]:
    """The times the payload names, after a banner on stdout like a driver's."""
    print("some driver banner on stdout")
    return {"load_ms": payload["load_ms"], "first_run_ms": payload["first_run_ms"]}


def own_pid(payload: dict[str, Any]) -> dict[str, float]:
    """This process's id as the load time: each sample shows which process made it."""
    return {"load_ms": float(os.getpid()), "first_run_ms": 1.0}


def failing(payload: dict[str, Any]) -> dict[str, float]:
    """A load that fails, saying why on stderr."""
    print("the model could not be loaded: out of device memory", file=sys.stderr)
    raise SystemExit(3)


def sleeping(payload: dict[str, Any]) -> dict[str, float]:
    """A load that hangs."""
    time.sleep(30)
    return {"load_ms": 0.0, "first_run_ms": 0.0}
