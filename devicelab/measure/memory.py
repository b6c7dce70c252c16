"""How much memory a run took: the process's peak resident set while a model loads and runs.

Qualcomm AI Hub leads a profile with peak memory; a phone's ``benchmark_model`` reports its own
footprint. On the host the lab measures the process: ``PeakRss`` resets Linux's high-water mark
of the resident set (``VmHWM``, by writing 5 to ``/proc/self/clear_refs``), so that the peak it
reads back belongs to what ran since, not to anything the worker did before. Where that is not
possible (another OS, a kernel that refuses) it samples the resident set with psutil at the
checkpoints it is given, a lower bound, and says so (``method``).

The peak is reported above a baseline read at the start: the model's own memory (the runtime's
session, its arena, weights, the inputs), not the interpreter and the libraries already loaded.
Before that reading, memory the process freed earlier goes back to the system (glibc's
``malloc_trim``): kept resident for reuse, it would hold a run's allocations without the resident
set growing, and a process that ran something bigger before would see the run take nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from dataclasses import dataclass
from pathlib import Path

import psutil

from devicelab.measure.environment import MemoryRecord

MB = 1024 * 1024
CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")
_HWM = re.compile(r"^VmHWM:\s+(\d+)\s+kB", re.M)

HIGH_WATER_MARK = "VmHWM reset"  # exact: the kernel's own peak since the reset
SAMPLED = "sampled"  # a lower bound: the largest of the checkpoints' readings


def _vm_hwm_bytes() -> int | None:
    try:
        found = _HWM.search(STATUS.read_text())
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def _return_freed_memory() -> None:
    """Give the memory the C allocator keeps for reuse back to the system (glibc; elsewhere nothing)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


def _reset_high_water_mark() -> bool:
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class MemoryPeak:
    """A run's memory: the baseline, the peak, and how the peak was read."""

    baseline_mb: float
    peak_mb: float
    method: str

    @property
    def above_baseline_mb(self) -> float:
        """What the run added at its peak (MB)."""
        return max(0.0, self.peak_mb - self.baseline_mb)

    def as_dict(self) -> MemoryRecord:
        """Plain data for JSON."""
        return {
            "rss_baseline_mb": round(self.baseline_mb, 3),
            "rss_peak_mb": round(self.peak_mb, 3),
            "above_baseline_mb": round(self.above_baseline_mb, 3),
            "method": self.method,
        }


class PeakRss:
    """The process's peak resident set from now on (see the module)."""

    def __init__(self) -> None:
        self._process = psutil.Process()
        _return_freed_memory()
        self.baseline = self._process.memory_info().rss
        self.exact = _reset_high_water_mark() and _vm_hwm_bytes() is not None
        self._sampled = self.baseline

    def checkpoint(self) -> None:
        """Read the resident set now (what the sampled method keeps; harmless with the exact one)."""
        self._sampled = max(self._sampled, self._process.memory_info().rss)

    def peak(self) -> MemoryPeak:
        """The peak so far."""
        self.checkpoint()
        hwm = _vm_hwm_bytes() if self.exact else None
        if hwm is not None:
            return MemoryPeak(self.baseline / MB, max(hwm, self._sampled) / MB, HIGH_WATER_MARK)
        return MemoryPeak(self.baseline / MB, self._sampled / MB, SAMPLED)


__all__ = ["HIGH_WATER_MARK", "SAMPLED", "MemoryPeak", "PeakRss"]
