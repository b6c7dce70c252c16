"""How numbers and hardware read on the pages: milliseconds, MACs, parameters, sizes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.timesince import timesince


def ms(value: float | None) -> str:
    """Milliseconds with precision that suits their size ('' for None)."""
    if value is None:
        return ""
    if value < 1:
        return f"{value:.3f}"
    if value < 100:
        return f"{value:.2f}"
    return f"{value:.1f}"


def si(value: float | int | None, unit: str = "") -> str:
    """A count with a k/M/G/T suffix: ``si(3.5e9, "MACs")`` -> '3.50 GMACs'."""
    if value is None:
        return ""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.2f} {prefix}{unit}".rstrip()
    return f"{value:g} {unit}".rstrip()


def size(num_bytes: int | None) -> str:
    """A byte count in KiB/MiB/GiB."""
    if num_bytes is None:
        return ""
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def ratio(value: float | None) -> str:
    """A ratio with three significant digits: '1.35×', '0.0035×'."""
    if value is None:
        return ""
    return f"{value:.3g}×"


def percent(fraction: float | None, digits: int = 1) -> str:
    """A fraction as a percentage."""
    if fraction is None:
        return ""
    return f"{fraction * 100:.{digits}f}%"


def shapes(value: Any) -> str:
    """Tensor shapes as '1x3x224x224, 1x64'."""
    if not value:
        return ""
    return ", ".join("x".join(str(d) for d in shape) for shape in value)


def _clusters(clusters: list[dict[str, Any]]) -> str:
    parts = []
    for c in clusters:
        cores = c.get("cores") or []
        freq = c.get("max_freq_khz")
        at = f" @ {freq / 1e6:.2f} GHz" if freq else ""
        parts.append(f"{len(cores)} cores{at}")
    return " + ".join(parts)


# The hardware keys workers report (DeviceInfo.hardware), in reading order, with their labels.
_HARDWARE_LABELS = {
    "cpu_model": "CPU",
    "arch": "Architecture",
    "physical_cores": "Physical cores",
    "logical_cores": "Logical cores",
    "clusters": "Core clusters",
    "memory_bytes": "Memory",
    "gpu_name": "GPU",
    "driver": "Driver",
    "opencl_version": "OpenCL",
    "wave_size": "Wave size",
    "model": "Model",
    "soc": "SoC",
    "runtime": "Runtime",
}


def hardware_rows(hardware: dict[str, Any]) -> list[tuple[str, str]]:
    """A device's hardware as (label, value) rows: known keys first, then the rest as reported."""
    rows = []
    keys = [k for k in _HARDWARE_LABELS if k in hardware] + sorted(k for k in hardware if k not in _HARDWARE_LABELS)
    for key in keys:
        value = hardware[key]
        if value in (None, "", [], {}):
            continue
        if key == "clusters" and isinstance(value, list):
            text = _clusters(value)
        elif key == "memory_bytes" and isinstance(value, int):
            text = size(value)
        elif isinstance(value, dict):
            text = ", ".join(f"{k} {v}" for k, v in value.items())
        elif isinstance(value, list):
            text = ", ".join(str(v) for v in value)
        else:
            text = str(value)
        rows.append((_HARDWARE_LABELS.get(key, key.replace("_", " ").capitalize()), text))
    return rows


def hardware_summary(hardware: dict[str, Any]) -> str:
    """One line naming a device's hardware, for tables."""
    parts = []
    for key in ("cpu_model", "gpu_name", "model", "soc", "arch"):
        value = hardware.get(key)
        if value and str(value) not in parts:
            parts.append(str(value))
    cores = hardware.get("logical_cores")
    if cores:
        parts.append(f"{cores} threads")
    return " · ".join(parts)


def attrs(value: Any) -> str:
    """Operator attributes compactly: 'kernel=3x3 stride=2x2 out_channels=32'."""
    if not value:
        return ""
    parts = []
    for key, v in value.items():
        if isinstance(v, list | tuple):
            sep = "x" if key in ("kernel", "stride", "dilation", "size") else ","
            v = sep.join(str(x) for x in v)
        parts.append(f"{key}={v}")
    return " ".join(parts)


_SETTING_LABELS = {
    "backend": "backend",
    "threads": "threads",
    "cores": "cores",
    "precision": "precision",
    "warmup_runs": "warm-up runs",
    "runs": "runs",
}


def settings_items(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """Job settings as (label, value) pairs in a fixed order; no cores means the OS decides."""
    items = []
    for key, label in _SETTING_LABELS.items():
        if key not in settings:
            continue
        value = settings[key]
        if key == "cores":
            value = ",".join(str(c) for c in value) if value else "any"
        items.append((label, str(value)))
    return items


def ago(when: datetime | None) -> str:
    """'just now', '3 minutes ago', or 'never'."""
    if when is None:
        return "never"
    if (timezone.now() - when).total_seconds() < 60:
        return "just now"
    return f"{timesince(when)} ago"
