"""The sharing kernels' programs: built once per device from source, then from that binary in every
other context (time-only tenants each have a context of their own).

The kernels live in ``devicelab/tenancy/kernels/`` rather than beside the backend's library
(``devicelab/backends/opencl/kernels/``): the library's contract is one 2-D kernel per file that
the graph planner plans and ParallelFusion may fuse, while these are 3-D (the third axis is the
tenant) and are launched by the sharing strategies only. They keep the rest of that contract:
global sizes as arguments, only ``get_global_id``, no local memory, no barriers, nothing PoCL
only, and their limits (work-group size, preferred multiple) are queried from the built kernel.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import cast

import pyopencl as cl

from devicelab.backends.opencl.build import build_program
from devicelab.backends.opencl.devices import FoundDevice

GEMM_SOURCE = "sgemm_batched"
IM2COL_SOURCE = "im2col_batched"
SOURCES = (GEMM_SOURCE, IM2COL_SOURCE)


@cache
def kernel_source(name: str) -> str:
    """The OpenCL C source ``kernels/<name>.cl``."""
    if name not in SOURCES:
        raise KeyError(f"no tenancy kernel source {name!r}; known: {list(SOURCES)}")
    return resources.files("devicelab.tenancy").joinpath("kernels", f"{name}.cl").read_text()


@dataclass(frozen=True)
class KernelInfo:
    """What a built kernel allows on its device (clGetKernelWorkGroupInfo)."""

    max_work_group_size: int
    preferred_multiple: int


class ProgramBuilds:
    """Programs by (context, source, options). The first build of a (device, source, options)
    compiles the source; any other context of that device loads the binary it produced, which is
    the same code (so every tenant's kernel computes the same bits) and costs milliseconds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._programs: dict[tuple[int, str, tuple[str, ...]], cl.Program] = {}
        self._binaries: dict[tuple[str, str, tuple[str, ...]], bytes] = {}
        self._info: dict[tuple[str, str, str, tuple[str, ...]], KernelInfo] = {}

    def program(
        self, found: FoundDevice, ctx: cl.Context, source: str, options: tuple[str, ...], text: str | None = None
    ) -> cl.Program:
        """The program of ``source`` built with ``options`` in ``ctx``: one of ours by name, or a
        generated ``text`` that ``source`` names (a backend kernel with a tenant axis)."""
        key = (ctx.int_ptr, source, options)
        with self._lock:
            hit = self._programs.get(key)
            if hit is not None:
                return hit
            binary = self._binaries.get((found.identity, source, options))
            program: cl.Program  # pyopencl's build() returns its program untyped
            with warnings.catch_warnings():  # a successful build's log (PoCL's loop remarks) is noise
                warnings.simplefilter("ignore", cl.CompilerWarning)
                if binary is None:
                    code = kernel_source(source) if text is None else text
                    program = build_program(ctx, code, options)
                    binaries = cast("list[bytes]", program.get_info(cl.program_info.BINARIES))  # one per device
                    self._binaries[(found.identity, source, options)] = binaries[0]
                else:
                    program = cl.Program(ctx, [found.device], [binary]).build(options=list(options))
            self._programs[key] = program
            return program

    def forget_context(self, ctx: cl.Context) -> None:
        """Drop the programs built in a context that is going away (the binaries stay)."""
        with self._lock:
            for key in [k for k in self._programs if k[0] == ctx.int_ptr]:
                del self._programs[key]

    def kernel(
        self,
        found: FoundDevice,
        ctx: cl.Context,
        source: str,
        name: str,
        options: tuple[str, ...],
        text: str | None = None,
    ) -> tuple[cl.Kernel, KernelInfo]:
        """A new kernel object (its own arguments) of ``name`` and what it allows on the device."""
        kernel = cl.Kernel(self.program(found, ctx, source, options, text), name)
        key = (found.identity, source, name, options)
        with self._lock:
            info = self._info.get(key)
            if info is None:
                wg = cl.kernel_work_group_info
                info = self._info[key] = KernelInfo(
                    max_work_group_size=int(kernel.get_work_group_info(wg.WORK_GROUP_SIZE, found.device)),
                    preferred_multiple=int(
                        kernel.get_work_group_info(wg.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, found.device)
                    ),
                )
        return kernel, info


BUILDS = ProgramBuilds()

__all__ = ["BUILDS", "GEMM_SOURCE", "IM2COL_SOURCE", "KernelInfo", "ProgramBuilds", "kernel_source"]
