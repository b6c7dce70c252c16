"""Small helpers the sub-commands share for printing."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any


def print_json(data: Any) -> None:
    """Print data as indented JSON on stdout."""
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print rows as an aligned text table."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def human(n: int) -> str:
    """An integer with a K/M/G suffix."""
    for unit, size in (("G", 10**9), ("M", 10**6), ("K", 10**3)):
        if abs(n) >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)


def fail(message: str, status: int = 2) -> int:
    """Print an error for a person on stderr and return the exit status."""
    print(f"latencylab: error: {message}", file=sys.stderr)
    return status
