"""How numbers and hardware read on the pages: milliseconds, MACs, parameters, sizes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.timesince import timesince

from devicelab.text import one_line
from server.devices.models import DeviceKind


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


def celsius(value: float | None) -> str:
    """A temperature: '41.3 °C' ('' for None)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return f"{value:.1f} °C"


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


def core_ranges(cores: Any) -> str:
    """Core ids as ranges, the way the submit form takes them: [0, 1, 2, 3, 6] -> '0-3,6'."""
    ids = sorted({int(c) for c in cores or ()})
    parts: list[str] = []
    start = prev = None
    for c in [*ids, None]:
        if c is not None and prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = c
    return ",".join(parts)


def ghz(khz: Any) -> str:
    """A frequency in kHz (as Linux reports it) in GHz: 2850000 -> '2.85 GHz' ('' when unknown)."""
    if isinstance(khz, bool) or not isinstance(khz, int | float) or khz <= 0:
        return ""
    return f"{khz / 1e6:.2f} GHz"


def _clusters(clusters: list[dict[str, Any]]) -> str:
    parts = []
    for c in clusters:
        cores = c.get("cores") or []
        freq = c.get("max_freq_khz")
        at = f" @ {freq / 1e6:.2f} GHz" if freq else ""
        parts.append(f"{len(cores)} cores{at}")
    return " + ".join(parts)


def _cpu_clusters(clusters: list[dict[str, Any]]) -> str:
    """A phone's clusters: 'little: cores 0-3 @ 1.80 GHz · big: cores 6-7 @ 2.85 GHz'."""
    parts = []
    for c in clusters:
        if not isinstance(c, dict):
            continue
        cores = c.get("cores") or []
        at = ghz(c.get("max_khz"))
        name = str(c.get("name") or "cluster")
        parts.append(f"{name}: core{'s' if len(cores) != 1 else ''} {core_ranges(cores)}" + (f" @ {at}" if at else ""))
    return " · ".join(parts)


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
    "manufacturer": "Manufacturer",
    "model": "Model",
    "soc": "SoC",
    "abi": "ABI",
    "android_version": "Android",
    "sdk": "SDK",
    "cpu_clusters": "CPU clusters",
    "gpu": "GPU",
    "ram_mb": "RAM",
    "gpu_family": "GPU family",
    "runtime": "Runtime",
    "serial": "Serial",
    "qed_device": "Name in the data",
    "source": "Source",
    "dataset": "Dataset",
}


def hardware_rows(hardware: dict[str, Any]) -> list[tuple[str, str]]:
    """A device's hardware as (label, value) rows: known keys first, then the rest as reported."""
    rows = []
    keys = [k for k in _HARDWARE_LABELS if k in hardware] + sorted(k for k in hardware if k not in _HARDWARE_LABELS)
    for key in keys:
        value = hardware[key]
        if value in (None, "", [], {}):
            continue
        if key == "sdk" and hardware.get("android_version"):
            continue  # shown with the Android version
        if key == "clusters" and isinstance(value, list):
            text = _clusters(value)
        elif key == "cpu_clusters" and isinstance(value, list):
            text = _cpu_clusters(value)
        elif key == "memory_bytes" and isinstance(value, int):
            text = size(value)
        elif key == "ram_mb" and isinstance(value, int | float) and not isinstance(value, bool):
            text = size(int(value * 1024 * 1024))
        elif key == "android_version" and hardware.get("sdk"):
            text = f"{value} (SDK {hardware['sdk']})"
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
    model, maker = str(hardware.get("model") or ""), str(hardware.get("manufacturer") or "")
    if maker and model and not model.lower().startswith(maker.lower()):
        model = f"{maker} {model}"
    for value in (
        hardware.get("cpu_model"),
        hardware.get("gpu_name"),
        model,
        hardware.get("soc"),
        hardware.get("arch"),
    ):
        if value and str(value) not in parts:
            parts.append(str(value))
    if hardware.get("abi"):
        parts.append(str(hardware["abi"]))
    if hardware.get("android_version"):
        parts.append(f"Android {hardware['android_version']}")
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
    "delegate": "delegate",
    "threads": "threads",
    "cores": "cores",
    "precision": "precision",
    "warmup_runs": "warm-up runs",
    "runs": "runs",
    "cooldown_c": "cool down below",
    "cooldown_max_s": "cool-down limit",
}


def settings_items(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """Job settings as (label, value) pairs in a fixed order; no cores means the OS decides; an
    empty delegate and unset cool-down (the device's defaults) are left out."""
    items = []
    for key, label in _SETTING_LABELS.items():
        value = settings.get(key)
        if key not in settings or (key in ("delegate", "cooldown_c", "cooldown_max_s") and value in ("", None)):
            continue
        if key == "cores":
            value = ",".join(str(c) for c in value) if value else "any"
        elif key == "cooldown_c":
            value = f"{value:g} °C"
        elif key == "cooldown_max_s":
            value = f"{value:g} s"
        items.append((label, str(value)))
    return items


# How much of a failure reason a list shows: whole up to this length, else its start and its end.
REASON_CHARS = 240


def reason(text: str | None, limit: int = REASON_CHARS) -> str:
    """A failure reason short enough for a list, keeping its end: reasons name what failed first
    and the cause last ("... failed on device 'x' after 3 attempts: <cause>"), so a long one keeps
    its first third and its last two thirds around an ellipsis (the whole reason goes in a title)."""
    return one_line(text or "", limit, marker=" … ")


def flag_name(flag: str) -> str:
    """The kind of a result's flag: 'hot: 46.2 °C at start > 40 °C' -> 'hot'."""
    return flag.split(":", 1)[0].strip()


def device_state(device: Any) -> tuple[str, str]:
    """A device's state as (key, label) for its badge: its status, or "dataset" for a device known
    only from imported measurements (no worker holds it, so "offline" would read as broken)."""
    if device.kind == DeviceKind.IMPORTED:
        return "dataset", "dataset"
    return str(device.status), str(device.get_status_display()).lower()


def ago(when: datetime | None) -> str:
    """'just now', '3 minutes ago', or 'never'."""
    if when is None:
        return "never"
    if (timezone.now() - when).total_seconds() < 60:
        return "just now"
    return f"{timesince(when)} ago"
