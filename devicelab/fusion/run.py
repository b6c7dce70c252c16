"""Launching sub-kernels one after another and their fused kernel, on one device.

The comparison ParallelFusion makes (and a sweep times): the sequential side enqueues every
sub-kernel, each with its own launch size and work-group, one after another on one in-order
queue; the fused side enqueues the fused kernel once. Both take their programs from
``cache.PROGRAMS_BY_SOURCE`` and return the ``cl.Event`` of every launch, so a caller on a
profiling queue reads device time from the events (``device_span_ms``) and host time around
``queue.finish()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.fusion.cache import PROGRAMS_BY_SOURCE, BuiltKernel
from devicelab.fusion.errors import FusionError
from devicelab.fusion.fuse import FusedKernel, SubKernel
from devicelab.fusion.launch import fit_local_size


@dataclass(frozen=True)
class ReadyLaunch:
    """A kernel object with its arguments set, and the sizes to enqueue it with."""

    kernel: cl.Kernel
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    built: BuiltKernel
    built_now: bool  # this call built the program (False: it came from the cache)
    label: str


def _argument_bytes(found: FoundDevice, args: Sequence[Any]) -> int:
    pointer = int(getattr(found.device, "address_bits", 64)) // 8
    return sum(int(a.nbytes) if isinstance(a, np.generic) else pointer for a in args)


def _ready(
    found: FoundDevice,
    source: str,
    name: str,
    options: tuple[str, ...],
    args: Sequence[Any],
    global_size: tuple[int, ...],
    local_size: tuple[int, ...] | None,
    label: str,
    work_group_fixed: bool = False,
) -> ReadyLaunch:
    limit = found.limits.max_parameter_size
    if _argument_bytes(found, args) > limit:
        raise FusionError(
            f"{label}: {len(args)} arguments take {_argument_bytes(found, args)} bytes, more than the "
            f"device's {limit} (CL_DEVICE_MAX_PARAMETER_SIZE)"
        )
    built, fresh = PROGRAMS_BY_SOURCE.get(found, source, name, options)
    kernel = built.kernel()
    try:
        kernel.set_args(*args)
    except cl.Error as e:
        raise FusionError(f"{label}: arguments refused: {e}") from e
    if local_size is not None:
        widest = found.limits.max_work_item_sizes[0] if found.limits.max_work_item_sizes else None
        fitted = fit_local_size(local_size, built.limits.max_work_group_size, widest)
        if work_group_fixed and fitted != tuple(local_size):
            raise FusionError(
                f"{label}: a sub-kernel tells its work-group {list(local_size)}, and the built fused kernel "
                f"allows only {built.limits.max_work_group_size} work-items per group"
            )
        local_size = fitted
    return ReadyLaunch(kernel, global_size, local_size, built, fresh, label)


def ready_subkernel(found: FoundDevice, sub: SubKernel) -> ReadyLaunch:
    """A sub-kernel ready for a launch of its own (its logical size rounded to its work-group)."""
    return _ready(
        found, sub.source, sub.name, sub.options, sub.args, sub.launch_size, sub.local_size, sub.label or sub.name
    )


def ready_fused(found: FoundDevice, fused: FusedKernel) -> ReadyLaunch:
    """A fused kernel ready to launch, in either layout. Its work-group is narrowed if the built
    kernel (or the device, along dimension 0) allows fewer work-items, unless a sub-kernel tells
    its work-group (``FusedKernel.work_group_fixed``): then it is refused."""
    return _ready(
        found,
        fused.source,
        fused.kernel_name,
        fused.options,
        fused.args,
        fused.global_size,
        fused.local_size,
        " + ".join(fused.labels),
        fused.work_group_fixed,
    )


def enqueue_launches(queue: cl.CommandQueue, launches: Sequence[ReadyLaunch]) -> list[cl.Event]:
    """Enqueue launches one after another (on an in-order queue each starts after the last ends)."""
    return [cl.enqueue_nd_range_kernel(queue, r.kernel, r.global_size, r.local_size) for r in launches]


def device_span_ms(events: Sequence[cl.Event]) -> float:
    """First start to last end on the device clock, in ms (the queue must have profiling on and
    the events must be complete)."""
    if not events:
        return 0.0
    start = min(e.profile.start for e in events)
    end = max(e.profile.end for e in events)
    return max(0, end - start) / 1e6


def device_busy_ms(events: Sequence[cl.Event]) -> float:
    """The sum of each event's own start-to-end time, in ms: the device's time in the kernels, the
    gaps between launches left out (the queue must have profiling on and the events be complete)."""
    return sum(max(0, e.profile.end - e.profile.start) for e in events) / 1e6


__all__ = ["ReadyLaunch", "device_busy_ms", "device_span_ms", "enqueue_launches", "ready_fused", "ready_subkernel"]
