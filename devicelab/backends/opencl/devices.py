"""Finding OpenCL devices and what they can do, from the driver's own queries.

Every device of every platform becomes one lab device. Its ``DeviceLimits`` come from
``clGetDeviceInfo`` (compute units, work-group and work-item limits, local memory, vector
widths, fp16 support, driver version) plus one query that needs a built kernel: the preferred
work-group size multiple, which the lab uses as the device's wave size (ParallelFusion rounds
every sub-kernel's work to it). Nothing here assumes a vendor: PoCL is only what CI runs.

PoCL's CPU device sizes its thread pool from ``POCL_MAX_PTHREAD_COUNT`` when the platform is
first initialized in the process, never afterwards. ``init_runtime`` is the one place that
initializes it, so the value that really applied is recorded (``runtime_environment``).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Final

import pyopencl as cl

from devicelab.backends import cpu_topology
from devicelab.backends.opencl.limits import DeviceLimits

log = logging.getLogger(__name__)

KIND = "opencl"
THREADS_ENV: Final = "POCL_MAX_PTHREAD_COUNT"
_DEVICE_TYPES = {cl.device_type.CPU: "cpu", cl.device_type.GPU: "gpu", cl.device_type.ACCELERATOR: "accelerator"}
_PROBE_SOURCE = "__kernel void probe(__global float* x) { x[get_global_id(0)] = 0.0f; }"


@dataclass(frozen=True)
class FoundDevice:
    """An OpenCL device with the lab identity it is registered under."""

    identity: str
    device: cl.Device
    limits: DeviceLimits


class _Runtime:
    """Process-wide OpenCL state: initialized once, then read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.initialized = False
        self.threads_env: str | None = None  # POCL_MAX_PTHREAD_COUNT when the platforms came up
        self.devices: dict[str, FoundDevice] | None = None
        self.contexts: dict[str, cl.Context] = {}


_RUNTIME = _Runtime()


def init_runtime(threads: int | None = None) -> dict[str, Any]:
    """Initialize the OpenCL platforms once, with ``POCL_MAX_PTHREAD_COUNT=threads`` if given and
    still possible; return what applied (later calls cannot change it)."""
    with _RUNTIME.lock:
        if not _RUNTIME.initialized:
            if threads is not None:
                os.environ[THREADS_ENV] = str(int(threads))
            _RUNTIME.threads_env = os.environ.get(THREADS_ENV)
            _RUNTIME.initialized = True
            try:
                cl.get_platforms()
            except cl.Error:
                pass  # no ICD or no platform: list_devices reports it
        return runtime_environment()


def runtime_environment() -> dict[str, Any]:
    """How the runtime was brought up: pyopencl version and the thread-pool setting in force."""
    return {
        "pyopencl": cl.VERSION_TEXT,
        "initialized": _RUNTIME.initialized,
        THREADS_ENV: _RUNTIME.threads_env,
    }


def _safe(device: cl.Device, attr: str, default: Any) -> Any:
    try:
        return getattr(device, attr)
    except (cl.Error, AttributeError):
        return default


def wave_size(device: cl.Device, context: cl.Context | None = None) -> int:
    """The device's preferred work-group size multiple (OpenCL 3.0 device query, else a probe kernel)."""
    try:
        reported: Any = device.get_info(cl.device_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE)
        if int(reported) > 0:
            return int(reported)
    except (cl.Error, AttributeError):
        pass
    ctx = context or cl.Context([device])
    kernel = cl.Program(ctx, _PROBE_SOURCE).build().probe
    multiple: Any = kernel.get_work_group_info(cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, device)
    return int(multiple)


def device_limits(device: cl.Device) -> DeviceLimits:
    """Query one device."""
    platform = device.platform
    extensions = tuple(sorted(device.extensions.split()))
    dtype = next((name for bit, name in _DEVICE_TYPES.items() if device.type & bit), "other")
    return DeviceLimits(
        platform=platform.name.strip(),
        platform_version=platform.version.strip(),
        name=device.name.strip(),
        vendor=device.vendor.strip(),
        device_type=dtype,
        driver_version=device.driver_version.strip(),
        device_version=device.version.strip(),
        opencl_c_version=_safe(device, "opencl_c_version", "").strip(),
        compute_units=int(device.max_compute_units),
        max_clock_mhz=int(_safe(device, "max_clock_frequency", 0)),
        max_work_group_size=int(device.max_work_group_size),
        max_work_item_sizes=tuple(int(s) for s in device.max_work_item_sizes),
        wave_size=wave_size(device),
        local_mem_size=int(device.local_mem_size),
        local_mem_is_global=int(device.local_mem_type) == int(cl.device_local_mem_type.GLOBAL),
        global_mem_size=int(device.global_mem_size),
        max_mem_alloc_size=int(device.max_mem_alloc_size),
        max_parameter_size=int(_safe(device, "max_parameter_size", 1024)),
        preferred_vector_width_float=int(_safe(device, "preferred_vector_width_float", 1)),
        fp16="cl_khr_fp16" in extensions,
        fp64="cl_khr_fp64" in extensions,
        profiling_timer_resolution_ns=int(_safe(device, "profiling_timer_resolution", 1)),
        extensions=extensions,
    )


def _identity(platform: str, name: str, ordinal: int) -> str:
    """``opencl:<machine>/<platform>/<device>``, with ``#n`` for the n-th identical device, so two
    lab machines with the same driver (or one with two identical GPUs) never share an identity."""
    suffix = f"#{ordinal}" if ordinal else ""
    return f"{KIND}:{cpu_topology.machine_identity()}/{platform}/{name}{suffix}"


def list_devices() -> dict[str, FoundDevice]:
    """Every device of every platform, by identity (queried once per process). Raises
    ``cl.Error`` when no OpenCL platform is installed."""
    init_runtime()
    with _RUNTIME.lock:
        if _RUNTIME.devices is not None:
            return dict(_RUNTIME.devices)
        found: dict[str, FoundDevice] = {}
        for platform in cl.get_platforms():
            try:
                devices = platform.get_devices()
            except cl.Error as e:  # a platform with no usable device (DEVICE_NOT_FOUND)
                log.info("OpenCL platform %r offers no device: %s", platform.name, e)
                continue
            for device in devices:
                try:
                    limits = device_limits(device)
                except cl.Error as e:
                    log.warning("OpenCL device %r could not be queried; skipping it: %s", device.name, e)
                    continue
                ordinal = 0
                while _identity(limits.platform, limits.name, ordinal) in found:
                    ordinal += 1
                identity = _identity(limits.platform, limits.name, ordinal)
                found[identity] = FoundDevice(identity, device, limits)
        _RUNTIME.devices = found
        return dict(found)


def find_device(identity: str) -> FoundDevice:
    """The device registered under ``identity``; ``ValueError`` naming the known ones otherwise."""
    devices = list_devices()
    try:
        return devices[identity]
    except KeyError:
        raise ValueError(f"no OpenCL device {identity!r} on this machine; found {sorted(devices)}") from None


def context_for(found: FoundDevice) -> cl.Context:
    """The one context per device (programs and buffers live in it, so it is shared)."""
    with _RUNTIME.lock:
        ctx = _RUNTIME.contexts.get(found.identity)
        if ctx is None:
            ctx = _RUNTIME.contexts[found.identity] = cl.Context([found.device])
        return ctx
