"""The fresh process of one cold start: ``python -m devicelab.measure.cold_process SPEC.json``.

``SPEC.json`` holds ``{"entry": "package.module:function", "payload": {...}}``. The process
imports the entry's module (timed: a first launch pays for importing the runtime too), calls
``function(payload)``, which loads the model with its backend and runs one inference, and prints
one line, ``MARKER`` followed by JSON: ``load_ms``, ``first_run_ms`` (what the function returned)
and ``import_ms``. Anything else on stdout (a driver's banner) is ignored by the reader.

This module imports nothing of the lab at module level, so that the import it times starts from a
bare interpreter (``devicelab.measure.cold_starts`` is the parent's side).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from pathlib import Path

MODULE = "devicelab.measure.cold_process"
MARKER = "LATENCYLAB_COLD_START "


def main(argv: list[str] | None = None) -> int:
    """Run the cold start that the spec file names; print its times after ``MARKER``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python -m {MODULE} SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text())
    module_name, _, function = str(spec["entry"]).partition(":")
    t0 = time.perf_counter_ns()
    module = importlib.import_module(module_name)
    import_ms = (time.perf_counter_ns() - t0) / 1e6
    times = getattr(module, function)(spec["payload"])
    out = {
        "load_ms": float(times["load_ms"]),
        "first_run_ms": float(times["first_run_ms"]),
        "import_ms": import_ms,
        "pid": os.getpid(),
    }
    print(MARKER + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
