"""How busy the machine was when a measurement started: what a noisy result is read against.

A run on a shared machine is slower and more spread when other work shares its cores. Before the
timed runs the lab reads, and stores with the result:

* the load average (1, 5 and 15 minutes) and the number of online cores;
* over a short window (``WINDOW_S``), each core's busy share and the machine's CPU steal (time
  a hypervisor gave this VM's cores to another guest: Linux ``/proc/stat``'s eighth column);
* the other processes running on the cores the job is pinned to (all cores when it is not):
  their pid, name and CPU share over the same window, busiest first.

``psutil`` reads all of it on Linux, macOS and Windows; where a figure does not exist (no steal
outside Linux) it is None, never a made-up 0.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil

from devicelab.measure.environment import MachineLoadRecord

WINDOW_S = 0.5  # long enough to see a busy neighbour, short beside a job's runs
MAX_PROCESSES = 8  # the busiest others are listed; the rest are counted
BUSY_PROCESS_PERCENT = 5.0  # a process that used less of a core than this is not "running beside"


@dataclass(frozen=True)
class OtherProcess:
    """A process that ran on the job's cores during the window."""

    pid: int
    name: str
    cpu_percent: float  # of one core, over the window


@dataclass(frozen=True)
class MachineLoad:
    """The machine's load when the timed runs began."""

    load_average: tuple[float, float, float] | None
    cores_online: int
    cores_watched: list[int]
    busy_percent: dict[int, float]  # per watched core, over the window
    steal_percent: float | None  # of all cores' time over the window; None where the OS has no steal
    others: list[OtherProcess] = field(default_factory=list)
    others_not_listed: int = 0
    window_s: float = WINDOW_S

    @property
    def busiest_core_percent(self) -> float | None:
        """The busiest watched core's share (percent), or None."""
        return max(self.busy_percent.values()) if self.busy_percent else None

    def summary(self) -> str:
        """One line for a job page or a noise message: 'load 2.10 on 2 cores, cores 0-1 busy 95 %, steal 3 %, 2 other processes'."""
        parts = []
        if self.load_average is not None:
            parts.append(f"load {self.load_average[0]:.2f} on {self.cores_online} cores")
        if self.busy_percent:
            parts.append(f"busiest watched core {self.busiest_core_percent:.0f} % busy")
        if self.steal_percent is not None:
            parts.append(f"steal {self.steal_percent:.1f} %")
        count = len(self.others) + self.others_not_listed
        if count:
            names = ", ".join(f"{p.name} ({p.cpu_percent:.0f} %)" for p in self.others[:3])
            parts.append(f"{count} other process{'es' if count != 1 else ''} on its cores: {names}")
        else:
            parts.append("no other process on its cores")
        return "; ".join(parts)

    def as_dict(self) -> MachineLoadRecord:
        """Plain data for JSON (core ids as strings, as JSON keys are)."""
        return {
            "load_average": list(self.load_average) if self.load_average is not None else None,
            "cores_online": self.cores_online,
            "cores_watched": list(self.cores_watched),
            "busy_percent": {str(k): v for k, v in self.busy_percent.items()},
            "steal_percent": self.steal_percent,
            "others": [{"pid": o.pid, "name": o.name, "cpu_percent": o.cpu_percent} for o in self.others],
            "others_not_listed": self.others_not_listed,
            "window_s": self.window_s,
            "summary": self.summary(),
        }


def _steal(times: Any) -> float | None:
    return float(getattr(times, "steal", float("nan"))) if hasattr(times, "steal") else None


def _processes(exclude: set[int]) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["pid", "name"]):
        if p.pid in exclude or p.pid == 0:
            continue
        try:
            p.cpu_percent(None)  # primes the counter: the next call measures the window
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        out.append(p)
    return out


def _own_family() -> set[int]:
    me = psutil.Process()
    family = {me.pid}
    try:
        family.update(c.pid for c in me.children(recursive=True))
        family.update(p.pid for p in me.parents())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        pass
    return family


def read_load(cores: Iterable[int] = (), window_s: float = WINDOW_S) -> MachineLoad:
    """The machine's load now, watched over ``window_s`` on ``cores`` (all online cores when empty)."""
    online = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    watched = sorted(set(cores)) or list(range(online))
    family = _own_family()
    others = _processes(family)
    before_each = psutil.cpu_times(percpu=True)
    before_all = psutil.cpu_times()
    time.sleep(window_s)
    after_each = psutil.cpu_times(percpu=True)
    after_all = psutil.cpu_times()
    busy = {c: _busy(before_each[c], after_each[c]) for c in watched if c < len(after_each)}
    steal = None
    if _steal(after_all) is not None:
        total = sum(after_all) - sum(before_all)
        steal = 100.0 * (after_all.steal - before_all.steal) / total if total > 0 else 0.0
    running = _running_on(others, set(watched))
    load: tuple[float, float, float] | None
    try:
        one, five, fifteen = os.getloadavg()
        load = (float(one), float(five), float(fifteen))
    except (AttributeError, OSError):  # no load average on this OS
        load = None
    return MachineLoad(
        load_average=load,
        cores_online=int(online),
        cores_watched=watched,
        busy_percent=busy,
        steal_percent=steal,
        others=running[:MAX_PROCESSES],
        others_not_listed=max(0, len(running) - MAX_PROCESSES),
        window_s=window_s,
    )


def _busy(before: Any, after: Any) -> float:
    """A core's busy share (percent) between two ``cpu_times`` readings: all but idle and iowait."""
    total = float(sum(after) - sum(before))
    if total <= 0:
        return 0.0
    idle = float(after.idle - before.idle) + (getattr(after, "iowait", 0.0) - getattr(before, "iowait", 0.0))
    return max(0.0, min(100.0, 100.0 * (total - idle) / total))


def _running_on(processes: Sequence[psutil.Process], cores: set[int]) -> list[OtherProcess]:
    """The processes that used a share of a core over the window and may run on ``cores``, busiest first."""
    found = []
    for p in processes:
        try:
            share = p.cpu_percent(None)
            if share < BUSY_PROCESS_PERCENT:
                continue
            allowed = set(p.cpu_affinity()) if hasattr(p, "cpu_affinity") else cores
            if not allowed & cores:
                continue
            found.append(OtherProcess(p.pid, p.info.get("name") or str(p.pid), round(share, 1)))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return sorted(found, key=lambda o: -o.cpu_percent)


__all__ = ["MachineLoad", "OtherProcess", "read_load"]
