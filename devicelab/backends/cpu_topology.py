"""What the host CPU is: model name, cores, frequency clusters, memory, a stable identity.

Read from Linux's /proc and /sys (with portable fallbacks), never from a runtime, so it imports
fast. The directories are parameters so a test can describe another machine, e.g. a big.LITTLE
phone whose cores report different ``cpuinfo_max_freq``.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_CPU_DIR = re.compile(r"^cpu(\d+)$")


@dataclass(frozen=True)
class CpuTopology:
    """The host CPU as the lab describes it."""

    model: str
    arch: str
    logical_cores: int
    physical_cores: int
    clusters: list[dict[str, Any]] = field(default_factory=list)  # [{"cores": [...], "max_freq_khz": int|None}]
    memory_bytes: int | None = None
    online: tuple[int, ...] = ()  # ids of the logical cores that exist and are online

    def as_hardware(self) -> dict[str, Any]:
        """The ``DeviceInfo.hardware`` fields this module knows (the runtime adds its own)."""
        return {
            "cpu_model": self.model,
            "arch": self.arch,
            "logical_cores": self.logical_cores,
            "physical_cores": self.physical_cores,
            "clusters": [dict(c, cores=list(c["cores"])) for c in self.clusters],
            "memory_bytes": self.memory_bytes,
        }


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def parse_cpu_list(text: str) -> list[int]:
    """Parse a kernel CPU list such as ``0-3,6,8-9`` into sorted ids."""
    ids: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            ids.update(range(int(lo), int(hi) + 1))
        else:
            ids.add(int(part))
    return sorted(ids)


def online_cpus(sys_cpu: Path = Path("/sys/devices/system/cpu")) -> list[int]:
    """Ids of the online logical CPUs (sysfs ``online``, else the ``cpuN`` folders, else os.cpu_count)."""
    text = _read(sys_cpu / "online")
    if text:
        return parse_cpu_list(text)
    found = sorted(int(m.group(1)) for p in _iter_dir(sys_cpu) if (m := _CPU_DIR.match(p.name)))
    if found:
        return found
    return list(range(os.cpu_count() or 1))


def _iter_dir(path: Path) -> list[Path]:
    try:
        return list(path.iterdir())
    except OSError:
        return []


def _cpuinfo_fields(proc: Path) -> list[dict[str, str]]:
    """/proc/cpuinfo as one dict per blank-line separated block."""
    text = _read(proc / "cpuinfo") or ""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        if ":" in line:
            key, value = line.split(":", 1)
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def cpu_model_name(proc: Path = Path("/proc")) -> str:
    """The CPU's marketing name: x86 ``model name``, ARM ``Hardware``/``Processor``, else platform."""
    blocks = _cpuinfo_fields(proc)
    # x86 puts "model name" in every per-core block; ARM kernels put "Hardware" (the SoC) in a
    # trailing block and sometimes a textual "Processor" line; lower-case "processor" is a core
    # index, hence case-sensitive keys.
    for key in ("model name", "Hardware", "cpu model", "Processor"):
        for block in blocks:
            value = block.get(key, "")
            if value and not value.isdigit():
                return value
    return platform.processor() or platform.machine() or "unknown CPU"


def physical_core_count(
    online: list[int], sys_cpu: Path = Path("/sys/devices/system/cpu"), proc: Path = Path("/proc")
) -> int:
    """Distinct (package, core) pairs among the online CPUs; SMT siblings count once."""
    pairs: set[tuple[str, str]] = set()
    for cpu in online:
        topo = sys_cpu / f"cpu{cpu}" / "topology"
        core = _read(topo / "core_id")
        if core is None:
            pairs.clear()
            break
        pairs.add((_read(topo / "physical_package_id") or "0", core))
    if pairs:
        return len(pairs)
    blocks = [b for b in _cpuinfo_fields(proc) if "core id" in b]
    if blocks:
        return len({(b.get("physical id", "0"), b["core id"]) for b in blocks})
    return len(online)


def frequency_clusters(online: list[int], sys_cpu: Path = Path("/sys/devices/system/cpu")) -> list[dict[str, Any]]:
    """Cores grouped by cpufreq max frequency, slowest cluster first; one ``None`` group if unknown.

    On big.LITTLE phones this recovers the little / big / prime clusters; on a VM or a desktop
    without cpufreq every core lands in one cluster whose frequency is unknown.
    """
    by_freq: dict[int | None, list[int]] = {}
    for cpu in online:
        text = _read(sys_cpu / f"cpu{cpu}" / "cpufreq" / "cpuinfo_max_freq")
        freq = int(text) if text and text.isdigit() else None
        by_freq.setdefault(freq, []).append(cpu)
    order = sorted(by_freq, key=lambda f: (f is None, f or 0))
    return [{"cores": sorted(by_freq[f]), "max_freq_khz": f} for f in order]


def memory_bytes(proc: Path = Path("/proc")) -> int | None:
    """Total RAM from /proc/meminfo, else sysconf, else None."""
    text = _read(proc / "meminfo") or ""
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    if m:
        return int(m.group(1)) * 1024
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


def machine_identity(id_files: tuple[Path, ...] = MACHINE_ID_FILES) -> str:
    """A per-machine id that survives restarts: systemd's machine-id, else D-Bus's, else the hostname."""
    for path in id_files:
        text = _read(path)
        if text:
            return text
    return socket.gethostname()


def read_topology(sys_cpu: Path = Path("/sys/devices/system/cpu"), proc: Path = Path("/proc")) -> CpuTopology:
    """Everything this module knows about the host CPU."""
    online = online_cpus(sys_cpu)
    return CpuTopology(
        model=cpu_model_name(proc),
        arch=platform.machine() or "unknown",
        logical_cores=len(online),
        physical_cores=physical_core_count(online, sys_cpu, proc),
        clusters=frequency_clusters(online, sys_cpu),
        memory_bytes=memory_bytes(proc),
        online=tuple(online),
    )
