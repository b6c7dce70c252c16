"""Recording a network profile from real transfers between this machine and the lab server.

Ogden & Guo (``../shared/seeds/002_*``, figure 10) measure the network time of real requests
under each condition. ``latencylab network record`` does the same for the path a user's client
takes to the lab: uploads and downloads of a ladder of sizes to the server's network probe
(``/api/network-probe/``), each timed from the first byte sent to the last byte received, in
rounds whose order of sizes is shuffled (seeded) so a burst of other traffic lands on every size
alike. One transfer first, dropped, opens the connection; every timed transfer reuses it, as a
client that keeps its connection to the serving machine does.

The transfers, ``(bytes, seconds)`` each, are what a recorded profile stores: the server fits the
line of time on size (latency and throughput) and keeps the spread of the transfers around it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

UPLOAD = "upload"
DOWNLOAD = "download"
DIRECTIONS = (UPLOAD, DOWNLOAD)
DEFAULT_SIZES = (16 * 1024, 128 * 1024, 512 * 1024, 2 * 1024 * 1024)
DEFAULT_ROUNDS = 3
MAX_ROUNDS = 50
MIN_SIZE = 1
MAX_SIZE = 8 * 1024 * 1024  # the server's probe sends and takes at most this much
WARMUP_BYTES = 1024

Transfer = Callable[[str, int], float]  # (direction, bytes) -> seconds
Progress = Callable[[int, int], None]  # (done, total)

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)[iI]?[bB]?\s*$")
_UNITS = {"": 1, "k": 1024, "m": 1024 * 1024}


@dataclass(frozen=True)
class TimedTransfer:
    """One timed transfer."""

    direction: str
    nbytes: int
    seconds: float


def parse_size(text: str) -> int:
    """``"512K"``, ``"2M"``, ``"1.5MiB"`` or ``"4096"`` as bytes (K and M are binary); ``ValueError``
    naming the text, and the probe's limits."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size (bytes, or with K or M: 512K, 2M)")
    n = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if not MIN_SIZE <= n <= MAX_SIZE:
        raise ValueError(f"{text!r} is {n} bytes; a probe transfer is {MIN_SIZE} to {MAX_SIZE} bytes")
    return n


def check_plan(sizes: Sequence[int], rounds: int) -> None:
    """``ValueError`` for a plan the probe cannot record a line from."""
    if len(set(sizes)) < 2:
        raise ValueError(f"give at least two different sizes (a line needs two), got {list(sizes)}")
    for n in sizes:
        if not MIN_SIZE <= n <= MAX_SIZE:
            raise ValueError(f"size {n}: a probe transfer is {MIN_SIZE} to {MAX_SIZE} bytes")
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ValueError(f"rounds must be between 1 and {MAX_ROUNDS}, got {rounds}")


def record(
    transfer: Transfer,
    sizes: Sequence[int] = DEFAULT_SIZES,
    rounds: int = DEFAULT_ROUNDS,
    *,
    directions: Sequence[str] = DIRECTIONS,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[TimedTransfer]:
    """``rounds`` rounds of every size in every direction, in a seeded shuffled order per round,
    after one dropped transfer that opens the connection."""
    check_plan(sizes, rounds)
    unknown = [d for d in directions if d not in DIRECTIONS]
    if unknown or not directions:
        raise ValueError(f"directions are {list(DIRECTIONS)}, got {list(directions)}")
    rng = random.Random(seed)
    plan = [(d, n) for d in directions for n in sizes]
    total = rounds * len(plan)
    transfer(directions[0], WARMUP_BYTES)
    out: list[TimedTransfer] = []
    for _ in range(rounds):
        order = plan[:]
        rng.shuffle(order)
        for direction, n in order:
            out.append(TimedTransfer(direction, n, transfer(direction, n)))
            if progress is not None:
                progress(len(out), total)
    return out


def describe(transfers: Sequence[TimedTransfer], url: str, host: str, when: str) -> str:
    """The stored profile's ``source``: what was timed, between which machines, when."""
    ups = sum(t.direction == UPLOAD for t in transfers)
    downs = len(transfers) - ups
    sizes = sorted({t.nbytes for t in transfers})
    return (
        f"recorded by latencylab network record on {when}: {ups} uploads and {downs} downloads of "
        f"{', '.join(_human(n) for n in sizes)} between {host} and {url}"
    )[:500]


def _human(n: int) -> str:
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n >= size and n % (size // 16) == 0:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def throughput_mbps(transfers: Sequence[TimedTransfer], direction: str) -> float | None:
    """The least-squares throughput of one direction's transfers (Mbit/s), None when they cannot
    give a line (fewer than two sizes, or time that does not grow with size)."""
    rows = [(t.nbytes, t.seconds) for t in transfers if t.direction == direction]
    if len({b for b, _ in rows}) < 2:
        return None
    mean_b = sum(b for b, _ in rows) / len(rows)
    mean_s = sum(s for _, s in rows) / len(rows)
    cov = sum((b - mean_b) * (s - mean_s) for b, s in rows)
    var = sum((b - mean_b) ** 2 for b, _ in rows)
    slope = cov / var
    return None if slope <= 0 else 8.0 / slope / 1e6


__all__ = [
    "DEFAULT_ROUNDS",
    "DEFAULT_SIZES",
    "DIRECTIONS",
    "DOWNLOAD",
    "MAX_SIZE",
    "UPLOAD",
    "TimedTransfer",
    "check_plan",
    "describe",
    "parse_size",
    "record",
    "throughput_mbps",
]
