"""Heat, cooling and throttling of an emulated phone, evaluated lazily from timestamps.

Each thermal zone relaxes exponentially towards a steady state: its idle temperature when nothing
runs, plus (°C per W) × (W drawn by the parts it sits next to) while a load runs. Loads are
reported by the emulated programs in *simulated* seconds (a benchmark that really sleeps 10 ms
for 1 s of phone time heats the phone for 1 s); idle cooling follows the wall clock, sped up by
``Phone.cooling_time_scale``. A CPU cluster's zone above its trip temperature caps the cluster's
frequency (``scaling_cur_freq``/``scaling_max_freq`` drop), and the programs slow down with it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# Relative work per cycle of the cluster kinds (in-order little cores do far less per GHz).
IPC = {"LITTLE": 0.35, "MID": 0.75, "BIG": 1.0}
# Watts one busy core of each kind draws at its maximum frequency; the GPU and NPU as a whole.
CORE_WATTS = {"LITTLE": 0.18, "MID": 0.7, "BIG": 1.6}
GPU_WATTS, NPU_WATTS = 2.4, 1.2
THROTTLE_SPAN_C = 25.0  # the cap falls linearly from 100% at the trip point to its floor 25 °C above
THROTTLE_FLOOR = 0.35


def cluster_kinds(cpu_max_khz: tuple[int, ...]) -> list[str]:
    """The kind (LITTLE, MID or BIG) of every core, told by its cluster's maximum frequency."""
    freqs = sorted(set(cpu_max_khz))
    kinds = {}
    for rank, khz in enumerate(freqs):
        if rank == len(freqs) - 1:
            kinds[khz] = "BIG"
        elif rank == 0:
            kinds[khz] = "LITTLE"
        else:
            kinds[khz] = "MID"
    return [kinds[khz] for khz in cpu_max_khz]


@dataclass
class Zone:
    """One thermal zone: how it heats (°C/W per power source), how fast it settles, its trip."""

    name: str
    idle_c: float
    tau_s: float
    coupling: dict[str, float]  # power source ("cpu:BIG", "gpu", "npu", "total") -> °C per W
    trip_c: float | None = None
    cluster: str | None = None  # the CPU cluster this zone throttles


def zone_for(name: str, idle_c: float) -> Zone:
    """A zone with the behaviour its (kernel) type name suggests: a CPU cluster, the GPU, the battery..."""
    upper = name.upper()
    if upper in IPC:
        others = {f"cpu:{k}": 2.0 for k in IPC if k != upper}
        trip = {"BIG": 75.0, "MID": 80.0, "LITTLE": 85.0}[upper]
        return Zone(name, idle_c, 8.0, {f"cpu:{upper}": 12.0, **others, "gpu": 2.0}, trip, upper)
    lower = name.lower()
    if lower in ("g3d", "gpu") or lower.startswith("gpuss"):
        return Zone(name, idle_c, 10.0, {"gpu": 10.0, "cpu:BIG": 1.5, "cpu:MID": 1.0}, 90.0)
    if lower in ("tpu", "npu") or "nsp" in lower:
        return Zone(name, idle_c, 10.0, {"npu": 10.0}, 90.0)
    if lower == "battery":
        return Zone(name, idle_c, 400.0, {"total": 1.5})
    return Zone(name, idle_c, 90.0, {"total": 3.0})  # skin / board thermistors


class Thermal:
    """The zones' temperatures now, advanced lazily; loads heat, the wall clock cools."""

    def __init__(self, zones: list[Zone], cooling_scale: Callable[[], float]) -> None:
        self.zones = {z.name: z for z in zones}
        self.temps = {z.name: z.idle_c for z in zones}
        self._cooling_scale = cooling_scale
        self._stamp = time.monotonic()
        self._lock = threading.Lock()

    def _cool_until(self, now: float) -> None:
        dt = max(0.0, now - self._stamp) * self._cooling_scale()
        self._stamp = max(self._stamp, now)
        if dt <= 0:
            return
        for name, zone in self.zones.items():
            self.temps[name] = zone.idle_c + (self.temps[name] - zone.idle_c) * math.exp(-dt / zone.tau_s)

    def temperature(self, zone: str) -> float:
        """The zone's temperature now (°C)."""
        with self._lock:
            self._cool_until(time.monotonic())
            return self.temps[zone]

    def set_temperature(self, zone: str, celsius: float) -> None:
        """Force a zone's temperature now; it relaxes from there."""
        with self._lock:
            self._cool_until(time.monotonic())
            self.temps[zone] = celsius

    def apply_load(self, watts: dict[str, float], sim_seconds: float, started: float) -> None:
        """A load drew ``watts`` per source for ``sim_seconds`` of phone time, starting (wall
        clock) at ``started``: cool until then, heat for the load, and count the wall time the
        load took as spent (so it is not cooled again)."""
        if sim_seconds <= 0:
            return
        with self._lock:
            self._cool_until(started)
            total = sum(watts.values())
            sources = {**watts, "total": total}
            for name, zone in self.zones.items():
                steady = zone.idle_c + sum(r * sources.get(src, 0.0) for src, r in zone.coupling.items())
                self.temps[name] = steady + (self.temps[name] - steady) * math.exp(-sim_seconds / zone.tau_s)
            self._stamp = max(self._stamp, time.monotonic())

    def cap(self, cluster: str) -> float:
        """The frequency cap (fraction of the maximum) thermal throttling puts on a cluster."""
        factor = 1.0
        for zone in self.zones.values():
            if zone.cluster == cluster and zone.trip_c is not None:
                over = self.temperature(zone.name) - zone.trip_c
                if over > 0:
                    factor = min(factor, max(THROTTLE_FLOOR, 1.0 - over / THROTTLE_SPAN_C))
        return factor
