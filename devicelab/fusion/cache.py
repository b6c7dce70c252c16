"""Fused programs, built once per device and combination and then reused.

A fused kernel's source depends only on which kernels (and compile-time variants) it fuses and
on its layout (packed or the paper's), never on their sizes or arguments, so the key is the
device and the source's digest with the build options: every instance of a combination in one
layout on a device shares one program, and the two layouts of a combination are two programs. Sub-kernels run
on their own (the sequential side of a comparison) go through the same cache, by their source.
The backend's own ``ProgramCache`` is keyed by kernel file; this one by any source text.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass

import pyopencl as cl

from devicelab.backends.opencl.build import build_program
from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.backends.opencl.programs import KernelLimits
from devicelab.fusion.errors import FusionError


@dataclass(frozen=True)
class BuiltKernel:
    """A program built for one device, the kernel it holds and what that kernel allows."""

    program: cl.Program
    kernel_name: str
    options: tuple[str, ...]
    build_ms: float
    limits: KernelLimits

    def kernel(self) -> cl.Kernel:
        """A new kernel object (each launch configuration sets its own arguments)."""
        return cl.Kernel(self.program, self.kernel_name)


def source_digest(source: str) -> str:
    """What identifies a source in the cache."""
    return hashlib.sha256(source.encode()).hexdigest()


class ProgramsBySource:
    """Programs by (device, source digest, kernel name, options), built on first request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._built: dict[tuple[str, str, str, tuple[str, ...]], BuiltKernel] = {}

    def get(
        self, found: FoundDevice, source: str, kernel_name: str, options: tuple[str, ...]
    ) -> tuple[BuiltKernel, bool]:
        """The built program and whether this call built it (False: it came from the cache)."""
        key = (found.identity, source_digest(source), kernel_name, tuple(options))
        with self._lock:
            hit = self._built.get(key)
            if hit is not None:
                return hit, False
            t0 = time.perf_counter_ns()
            try:
                program = build_program(context_for(found), source, options)
            except cl.RuntimeError as e:
                raise FusionError(
                    f"kernel {kernel_name!r} does not build on {found.limits.name!r}: {str(e).strip()[:2000]}"
                ) from e
            build_ms = (time.perf_counter_ns() - t0) / 1e6
            info = cl.kernel_work_group_info
            probe = cl.Kernel(program, kernel_name)
            limits = KernelLimits(
                max_work_group_size=int(probe.get_work_group_info(info.WORK_GROUP_SIZE, found.device)),
                preferred_multiple=int(
                    probe.get_work_group_info(info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, found.device)
                ),
            )
            built = self._built[key] = BuiltKernel(program, kernel_name, tuple(options), build_ms, limits)
            return built, True

    def __len__(self) -> int:
        with self._lock:
            return len(self._built)

    def clear(self) -> None:
        """Forget every program (the next request builds again)."""
        with self._lock:
            self._built.clear()


PROGRAMS_BY_SOURCE = ProgramsBySource()

__all__ = ["BuiltKernel", "PROGRAMS_BY_SOURCE", "ProgramsBySource", "source_digest"]
