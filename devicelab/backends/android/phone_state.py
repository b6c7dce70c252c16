"""What a phone is and how it is now, read through its own shell.

``describe`` reads what a user picks phones by (manufacturer, model, SoC, ABI, Android version,
CPU clusters, GPU, RAM) from ``getprop``, sysfs, ``/proc/meminfo`` and ``dumpsys SurfaceFlinger``.
``snapshot`` reads what a measurement depends on (thermal zones and the battery's temperature,
CPU governors and frequencies, screen and charging state), before and after each job.

Files are read in one shell command each time, every file announced by an ``echo`` marker, so a
file that is missing (a core taken offline, a zone without ``temp``) leaves a gap, never a shift.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import Any

from devicelab.backends.android.adb import PhoneLink

CPU_DIR = "/sys/devices/system/cpu"
THERMAL_DIR = "/sys/class/thermal"
_MARK = "@@latencylab@@"
MAX_COMMAND_BYTES = 3_000
# Cluster names by count of distinct max frequencies, slowest first.
CLUSTER_NAMES = {1: ("all",), 2: ("little", "big"), 3: ("little", "mid", "big"), 4: ("little", "mid", "big", "prime")}
# Thermal zones that speak for the CPU and SoC (the cool-down waits on these and the battery).
_CPU_ZONE = re.compile(r"cpu|cluster|soc|big|little|mid|prime|tsens|mtktscpu|(?:^|[-_])ap(?:[-_]|$)", re.IGNORECASE)


def read_files(link: PhoneLink, paths: Sequence[str]) -> dict[str, str | None]:
    """Each path's content (stripped), or None where it cannot be read; one shell command per
    ``MAX_COMMAND_BYTES`` of command line (older adbd refuses service requests past 4 KiB)."""
    values: dict[str, str | None] = dict.fromkeys(paths)
    parts = [f"echo {_MARK}{i}; cat {p} 2>/dev/null" for i, p in enumerate(paths)]
    batch: list[str] = []
    for part in [*parts, None]:
        if part is not None and (not batch or sum(len(b) + 2 for b in batch) + len(part) < MAX_COMMAND_BYTES):
            batch.append(part)
            continue
        if batch:
            for chunk in link.run("; ".join(batch)).stdout.split(_MARK)[1:]:
                head, _, body = chunk.partition("\n")
                if head.strip().isdigit() and int(head) < len(paths):
                    text = body.strip()
                    values[paths[int(head)]] = text if text else None
        batch = [part] if part is not None else []
    return values


def parse_getprop(text: str) -> dict[str, str]:
    """``[key]: [value]`` lines of ``getprop``."""
    return dict(re.findall(r"^\[([^\]]+)\]: \[(.*)\]\s*$", text, re.MULTILINE))


def parse_cpu_list(text: str) -> list[int]:
    """A sysfs CPU list (``0-3,6``) as core ids."""
    cores: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cores.extend(range(int(lo), int(hi or lo) + 1))
    return cores


def clusters_of(max_khz: dict[int, int]) -> list[dict[str, Any]]:
    """Cores grouped by max frequency, slowest first, named little / (mid) / big (/ prime)."""
    groups: dict[int, list[int]] = {}
    for core, khz in sorted(max_khz.items()):
        groups.setdefault(khz, []).append(core)
    ordered = sorted(groups.items())
    names = CLUSTER_NAMES.get(len(ordered), tuple(f"cluster{i}" for i in range(len(ordered))))
    return [{"name": n, "cores": cores, "max_khz": khz} for n, (khz, cores) in zip(names, ordered, strict=True)]


def _int(value: str | None) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def gles_renderer(surfaceflinger: str) -> str:
    """The ``GLES: vendor, renderer, version`` line of ``dumpsys SurfaceFlinger`` (empty if none)."""
    m = re.search(r"^\s*GLES:\s*(.+?)\s*$", surfaceflinger, re.MULTILINE)
    return m.group(1) if m else ""


@dataclass(frozen=True)
class PhoneDescription:
    """A phone's identity and hardware, as registered."""

    serial: str
    name: str
    hardware: dict[str, Any]
    clusters: list[dict[str, Any]]
    cores: list[int]


def describe(link: PhoneLink) -> PhoneDescription:
    """Read a phone's identity and hardware."""
    props = parse_getprop(link.run("getprop").stdout)
    possible = read_files(link, [f"{CPU_DIR}/possible"])[f"{CPU_DIR}/possible"] or "0"
    cores = parse_cpu_list(possible)
    max_paths = {c: f"{CPU_DIR}/cpu{c}/cpufreq/cpuinfo_max_freq" for c in cores}
    files = read_files(link, [*max_paths.values(), "/proc/meminfo"])
    max_khz = {c: khz for c, p in max_paths.items() if (khz := _int(files[p])) is not None}
    mem = re.search(r"MemTotal:\s*(\d+)\s*kB", files["/proc/meminfo"] or "")
    gpu = gles_renderer(link.run("dumpsys SurfaceFlinger", timeout=30).stdout)
    if not gpu:  # no SurfaceFlinger answer (a headless board): what the vendor properties say
        gpu = props.get("ro.hardware.egl", "") or props.get("ro.hardware.vulkan", "")
    manufacturer = props.get("ro.product.manufacturer", "")
    model = props.get("ro.product.model", "") or link.serial
    soc = props.get("ro.soc.model") or props.get("ro.board.platform") or props.get("ro.hardware", "")
    clusters = clusters_of(max_khz)
    hardware: dict[str, Any] = {
        "serial": link.serial,
        "manufacturer": manufacturer,
        "model": model,
        "device": props.get("ro.product.device", ""),
        "soc": soc,
        "soc_manufacturer": props.get("ro.soc.manufacturer", ""),
        "abi": props.get("ro.product.cpu.abi", ""),
        # every ABI the phone executes, preferred first (a 64-bit phone also runs 32-bit ARM)
        "abilist": [a for a in props.get("ro.product.cpu.abilist", "").split(",") if a.strip()]
        or [a for a in (props.get("ro.product.cpu.abi", ""),) if a],
        "android_version": props.get("ro.build.version.release", ""),
        "sdk": _int(props.get("ro.build.version.sdk")),
        "build": props.get("ro.build.fingerprint", ""),
        "cpu_clusters": clusters,
        "cpu_cores": len(cores),
        "gpu": gpu,
        "ram_mb": int(mem.group(1)) // 1024 if mem else None,
    }
    name = " ".join(x for x in (manufacturer, model) if x) + f" ({link.serial})"
    return PhoneDescription(link.serial, name, hardware, clusters, cores)


@dataclass(frozen=True)
class Snapshot:
    """A phone's thermal and power state at one moment."""

    temperatures_c: dict[str, float]  # zone type (made unique) -> °C; "battery" from dumpsys battery
    governors: dict[str, str] = field(default_factory=dict)  # core -> cpufreq governor
    cur_khz: dict[str, int] = field(default_factory=dict)
    max_khz: dict[str, int] = field(default_factory=dict)  # cpuinfo_max_freq
    cap_khz: dict[str, int] = field(default_factory=dict)  # scaling_max_freq (lowered when throttled)
    screen_on: bool | None = None
    charging: str = "unknown"  # ac, usb, wireless, none
    battery_level: int | None = None
    # cooling device (type, made unique) -> (cur_state, max_state) from /sys/class/thermal
    cooling: dict[str, tuple[int, int]] = field(default_factory=dict)
    thermal_status: int | None = None  # Android's thermal status (``dumpsys thermalservice``), None: unknown

    def watched_c(self) -> float | None:
        """The hottest of the battery and the CPU/SoC zones (all zones when none is named so)."""
        cpu = [v for k, v in self.temperatures_c.items() if k == "battery" or _CPU_ZONE.search(k)]
        values = cpu or list(self.temperatures_c.values())
        return max(values) if values else None

    def throttled(self, cores: Sequence[int]) -> list[str]:
        """What says the phone throttles: cores (of ``cores``) whose frequency cap sits below their
        maximum, cooling devices at a non-zero state, an Android thermal status above NONE."""
        out = []
        for c in cores:
            cap, top = self.cap_khz.get(str(c)), self.max_khz.get(str(c))
            if cap is not None and top is not None and cap < top:
                out.append(f"cpu{c} capped at {cap / 1e6:.2f} of {top / 1e6:.2f} GHz")
        active = [f"{name} {cur}/{top}" for name, (cur, top) in sorted(self.cooling.items()) if cur > 0]
        if active:
            out.append("cooling devices active: " + ", ".join(active))
        if self.thermal_status:
            out.append(f"Android thermal status {thermal_status_name(self.thermal_status)} ({self.thermal_status})")
        return out


# android.os.PowerManager's THERMAL_STATUS_* values, as ``dumpsys thermalservice`` prints them.
THERMAL_STATUSES = ("NONE", "LIGHT", "MODERATE", "SEVERE", "CRITICAL", "EMERGENCY", "SHUTDOWN")


def thermal_status_name(status: int) -> str:
    """The name of an Android thermal status (``THERMAL_STATUS_LIGHT`` -> ``LIGHT``)."""
    return THERMAL_STATUSES[status] if 0 <= status < len(THERMAL_STATUSES) else f"status {status}"


def parse_thermal_status(text: str) -> int | None:
    """The ``Thermal Status: N`` line of ``dumpsys thermalservice`` (ThermalManagerService's dump,
    Android 10 onward), or None where the service is missing or prints none."""
    m = re.search(r"^\s*Thermal Status:\s*(\d+)\s*$", text, re.MULTILINE)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class FrequencySample:
    """The used cores' ``scaling_cur_freq`` and ``scaling_max_freq`` at one moment of a run (kHz)."""

    cur_khz: dict[str, int]
    cap_khz: dict[str, int]


# A core counts as held below its maximum in a sample when it runs under this share of it: the
# governor's frequency steps are a few percent apart, and a loaded core sits at the top one.
BELOW_MAX = 0.95
# ... and as throttled during the run when at least this share of the samples found it so (a
# sample taken as the tool reads its model, or between runs, may catch an idle core).
THROTTLED_SHARE = 0.5


def frequency_sample(link: PhoneLink, cores: Sequence[int]) -> FrequencySample:
    """One reading of the cores' current frequency and cap (one shell command)."""
    paths = {(c, k): f"{CPU_DIR}/cpu{c}/cpufreq/{k}" for c in cores for k in ("scaling_cur_freq", "scaling_max_freq")}
    files = read_files(link, list(paths.values()))
    cur = {str(c): v for (c, k), p in paths.items() if k == "scaling_cur_freq" and (v := _int(files[p])) is not None}
    cap = {str(c): v for (c, k), p in paths.items() if k == "scaling_max_freq" and (v := _int(files[p])) is not None}
    return FrequencySample(cur, cap)


def throttled_during(samples: Sequence[FrequencySample], max_khz: dict[str, int], all_busy: bool) -> list[str]:
    """What the samples taken during the run say of throttling: under load a core that runs below
    its maximum (``cpuinfo_max_freq``) most of the time is throttled, whether its cap
    (``scaling_max_freq``) was lowered or only its current frequency. ``all_busy``: every sampled
    core runs a thread of the tool (pinned, threads >= cores), so each is judged alone; otherwise
    an idle core may sit low by right, and the run counts as throttled when in most samples not
    one of the cores ran at its maximum."""
    cores = sorted((c for c in max_khz if max_khz[c] > 0), key=int)
    if all_busy:
        out = []
        for core in cores:
            seen = [s.cur_khz[core] for s in samples if core in s.cur_khz]
            low = [v for v in seen if v < BELOW_MAX * max_khz[core]]
            if seen and len(low) >= THROTTLED_SHARE * len(seen):
                out.append(
                    f"cpu{core} ran at {min(seen) / 1e6:.2f}-{max(seen) / 1e6:.2f} of {max_khz[core] / 1e6:.2f} GHz "
                    f"during the run ({len(low)} of {len(seen)} samples below {BELOW_MAX:.0%})"
                )
        return out
    best = [
        max(s.cur_khz[c] / max_khz[c] for c in cores if c in s.cur_khz) for s in samples if set(cores) & set(s.cur_khz)
    ]
    slow = [b for b in best if b < BELOW_MAX]
    if best and len(slow) >= THROTTLED_SHARE * len(best):
        return [
            f"no core of {', '.join(f'cpu{c}' for c in cores)} reached {BELOW_MAX:.0%} of its maximum in {len(slow)} "
            f"of {len(best)} samples during the run (the fastest at {max(best):.0%})"
        ]
    return []


def summarize_samples(samples: Sequence[FrequencySample]) -> dict[str, dict[str, int]]:
    """Per core: how many samples, and the lowest and highest current frequency seen (kHz)."""
    out: dict[str, dict[str, int]] = {}
    for s in samples:
        for core, v in s.cur_khz.items():
            row = out.setdefault(core, {"samples": 0, "min_khz": v, "max_khz": v})
            row["samples"] += 1
            row["min_khz"], row["max_khz"] = min(row["min_khz"], v), max(row["max_khz"], v)
    return out


def _unique(name: str, taken: Container[str]) -> str:
    """``name``, or ``name#2``, ``name#3``, ... when phones name two sensors alike."""
    candidate, k = name, 1
    while candidate in taken:
        k += 1
        candidate = f"{name}#{k}"
    return candidate


def _celsius(raw: str | None) -> float | None:
    """A thermal zone reading in °C (zones report millidegrees, a few degrees); None if unusable."""
    value = _int(raw)
    if value is None:
        return None
    c = value / 1000.0 if abs(value) >= 1000 else float(value)
    return c if -40.0 < c < 150.0 else None  # disabled zones read -273 °C or absurd values


def parse_battery(text: str) -> tuple[float | None, str, int | None]:
    """(temperature °C, charging source, level %) from ``dumpsys battery``."""
    fields = dict(re.findall(r"^\s*([A-Za-z ]+):\s*(.*?)\s*$", text, re.MULTILINE))
    temp = _int(fields.get("temperature"))
    charging = "none"
    for source in ("AC", "USB", "Wireless", "Dock"):
        if fields.get(f"{source} powered", "").lower() == "true":
            charging = source.lower()
            break
    if not fields:
        charging = "unknown"
    return (temp / 10.0 if temp is not None else None), charging, _int(fields.get("level"))


def parse_screen(text: str) -> bool | None:
    """Whether the screen is on, from ``dumpsys power`` (mWakefulness, else Display Power)."""
    m = re.search(r"mWakefulness=(\w+)", text)
    if m:
        return m.group(1) == "Awake"
    m = re.search(r"Display Power: state=(\w+)", text)
    return m.group(1) == "ON" if m else None


def load_average(link: PhoneLink) -> tuple[float, float, float] | None:
    """The phone's load average (1, 5, 15 min) from ``/proc/loadavg``, or None where unreadable."""
    text = read_files(link, ["/proc/loadavg"])["/proc/loadavg"]
    try:
        one, five, fifteen = (float(x) for x in (text or "").split()[:3])
    except ValueError:
        return None
    return one, five, fifteen


def snapshot(link: PhoneLink, cores: Sequence[int]) -> Snapshot:
    """Read temperatures, the governors and frequencies of ``cores``, screen and charging state."""
    listing = link.run(f"ls {THERMAL_DIR}").stdout.split()
    zones = sorted((z for z in listing if z.startswith("thermal_zone")), key=lambda z: _int(z[12:]) or 0)
    coolers = sorted((d for d in listing if d.startswith("cooling_device")), key=lambda d: _int(d[14:]) or 0)
    paths: list[str] = []
    for z in zones:
        paths += [f"{THERMAL_DIR}/{z}/type", f"{THERMAL_DIR}/{z}/temp"]
    for d in coolers:
        paths += [f"{THERMAL_DIR}/{d}/{k}" for k in ("type", "cur_state", "max_state")]
    kinds = ("scaling_governor", "scaling_cur_freq", "cpuinfo_max_freq", "scaling_max_freq")
    for c in cores:
        paths += [f"{CPU_DIR}/cpu{c}/cpufreq/{k}" for k in kinds]
    files = read_files(link, paths)
    temps: dict[str, float] = {}
    for z in zones:
        celsius = _celsius(files[f"{THERMAL_DIR}/{z}/temp"])
        if celsius is None:
            continue
        temps[_unique(files[f"{THERMAL_DIR}/{z}/type"] or z, temps)] = celsius
    cooling: dict[str, tuple[int, int]] = {}
    for d in coolers:
        cur = _int(files[f"{THERMAL_DIR}/{d}/cur_state"])
        if cur is None:
            continue
        cooling[_unique(files[f"{THERMAL_DIR}/{d}/type"] or d, cooling)] = (
            cur,
            _int(files[f"{THERMAL_DIR}/{d}/max_state"]) or 0,
        )
    battery_c, charging, level = parse_battery(link.run("dumpsys battery").stdout)
    if battery_c is not None:
        temps["battery"] = battery_c
    snap = Snapshot(
        temperatures_c=temps,
        screen_on=parse_screen(link.run("dumpsys power").stdout),
        charging=charging,
        battery_level=level,
        cooling=cooling,
        thermal_status=parse_thermal_status(link.run("dumpsys thermalservice").stdout),
    )
    for c in cores:
        base = f"{CPU_DIR}/cpu{c}/cpufreq"
        if (g := files[f"{base}/scaling_governor"]) is not None:
            snap.governors[str(c)] = g
        for key, target in (
            ("scaling_cur_freq", snap.cur_khz),
            ("cpuinfo_max_freq", snap.max_khz),
            ("scaling_max_freq", snap.cap_khz),
        ):
            if (v := _int(files[f"{base}/{key}"])) is not None:
                target[str(c)] = v
    return snap


__all__ = [
    "THERMAL_STATUSES",
    "FrequencySample",
    "PhoneDescription",
    "Snapshot",
    "frequency_sample",
    "parse_thermal_status",
    "summarize_samples",
    "thermal_status_name",
    "throttled_during",
    "clusters_of",
    "describe",
    "gles_renderer",
    "parse_battery",
    "parse_cpu_list",
    "parse_getprop",
    "parse_screen",
    "read_files",
    "snapshot",
]
