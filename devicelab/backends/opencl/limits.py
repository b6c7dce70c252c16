"""What an OpenCL device reports about itself, as plain data.

Apart from ``devices`` (which queries the driver) so that planning and tiling, which read these
limits, import without pyopencl.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class DeviceLimits:
    """What one OpenCL device reports about itself (all from driver queries)."""

    platform: str
    platform_version: str
    name: str
    vendor: str
    device_type: str  # cpu, gpu, accelerator or other
    driver_version: str
    device_version: str
    opencl_c_version: str
    compute_units: int
    max_clock_mhz: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    wave_size: int  # preferred work-group size multiple
    local_mem_size: int
    local_mem_is_global: bool  # local memory emulated in global memory (CPU devices)
    global_mem_size: int
    max_mem_alloc_size: int
    max_parameter_size: int
    preferred_vector_width_float: int
    fp16: bool  # cl_khr_fp16
    fp64: bool  # cl_khr_fp64
    profiling_timer_resolution_ns: int
    extensions: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (the device's ``hardware`` description)."""
        d = asdict(self)
        d["max_work_item_sizes"] = list(self.max_work_item_sizes)
        d["extensions"] = list(self.extensions)
        # The names the lab uses for every kind of device (and the server's equivalence check).
        d["gpu_name"] = self.name
        d["driver"] = self.driver_version
        d["opencl_version"] = self.device_version
        return d


__all__ = ["DeviceLimits"]
