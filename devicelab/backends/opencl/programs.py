"""The OpenCL backend's kernel sources, and their programs built once per device and cached.

The kernel contract (``kernels/<name>.cl``), kept so a later step can fuse independent kernels
source-to-source (ParallelFusion, section 4.2):

* one file per kernel, holding exactly one ``__kernel`` function named like the file (plus the
  shared helpers below);
* a 2-D ND-range; the first two arguments ``gs0, gs1`` are the logical global sizes and the
  body starts with ``if (get_global_id(0) >= gs0 || get_global_id(1) >= gs1) return;``, so a
  launch may round its global size up to any work-group multiple;
* only ``get_global_id`` among the work-item built-ins; no barriers, no local memory (a fused
  kernel may cut work-groups anywhere, and CPU devices emulate local memory in global memory:
  the kernels get their reuse from register tiles instead, see ``plan``);
* types, widths and tiling come from build options: ``real`` (float or half), ``real_v`` /
  ``vload_v`` / ``vstore_v`` / ``VW`` (the vector of ``VW`` reals), ``int_v`` with ``LANES``
  (0 .. VW-1) and ``EVEN_LANES`` (0, 2, .. 2VW-2) for masks and shuffles, ``idx_v`` with
  ``IDX_LANES`` (32-bit lane coordinates), ``to_mask`` (their compares as an ``int_v`` mask),
  ``float_v`` (float math at that width), ``to_idx_v`` / ``to_float_v`` / ``to_real_v``
  (conversions at that width), and the tiling: ``NV`` (vectors per work-item), ``OCB`` (output channels per
  work-item), ``KW`` (kernel width: the tap loop along a row unrolls), ``SW`` (horizontal stride of row-tiled loads),
  ``RB`` (output rows per work-item), and ``KH``, ``SH``, ``DH``, ``DW`` (kernel height, vertical stride,
  dilation: compile-time for the kernels whose row loop unrolls, 1 where a kernel has none).
  fp16 prepends the ``cl_khr_fp16`` pragma;
* shared helpers (``ll_act``, ``ll_load``) are plain functions whose text is identical in every
  file that has them, so a fusing step keeps one copy of each.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import pyopencl as cl

from devicelab.backends.base import BackendError
from devicelab.backends.opencl.build import build_program
from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.backends.opencl.plan import KERNELS

_KERNEL_DEF = re.compile(r"__kernel\s+void\s+(\w+)\s*\(")
_FP16_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
PRECISIONS = {"fp32": "float", "fp16": "half"}


@cache
def kernel_source(name: str) -> str:
    """The OpenCL C source of one kernel, as stored in ``kernels/<name>.cl``."""
    if name not in KERNELS:
        raise KeyError(f"no opencl kernel {name!r}; known: {list(KERNELS)}")
    return resources.files("devicelab.backends.opencl").joinpath("kernels", f"{name}.cl").read_text()


def kernel_functions(source: str) -> list[str]:
    """Names of the ``__kernel`` functions a source defines."""
    return _KERNEL_DEF.findall(source)


def build_options(precision: str, attrs: dict[str, Any]) -> tuple[str, ...]:
    """The compiler options that fix one kernel's types and tiling, from its planned ``attrs``
    (``vector_width`` and, for the convolutions and pooling, ``pixel_vectors``,
    ``out_channels_per_item``, ``kernel_size``, ``stride_w``, and for the row-blocked depthwise and
    pooling kernels ``rows_per_item``, ``stride_h``, ``dilation``; 1 where a kernel has none)."""
    try:
        real = PRECISIONS[precision]
    except KeyError:
        raise BackendError(f"opencl backend: precision {precision!r} is not one of {sorted(PRECISIONS)}") from None
    vw = int(attrs["vector_width"])
    kh, kw = attrs.get("kernel_size", (1, 1))
    dh, dw = attrs.get("dilation", (1, 1))
    # select() and shuffle2() want integer vectors with the reals' element size; lane
    # coordinates (idx_v) are 32-bit whatever the precision, and to_mask narrows their compares
    lane_int, lane_uint = ("short", "ushort") if precision == "fp16" else ("int", "uint")
    lanes = ",".join(str(i) for i in range(vw))
    even = ",".join(str(2 * i) for i in range(vw))
    return (
        "-cl-mad-enable",
        f"-Dreal={real}",
        f"-Dreal_v={real}{vw}",
        f"-Dvload_v=vload{vw}",
        f"-Dvstore_v=vstore{vw}",
        f"-DVW={vw}",
        f"-DNV={int(attrs.get('pixel_vectors', 1))}",
        f"-DOCB={int(attrs.get('out_channels_per_item', 1))}",
        f"-DKH={int(kh)}",
        f"-DKW={int(kw)}",
        f"-DSH={int(attrs.get('stride_h', 1))}",
        f"-DSW={int(attrs.get('stride_w', 1))}",
        f"-DDH={int(dh)}",
        f"-DDW={int(dw)}",
        f"-DRB={int(attrs.get('rows_per_item', 1))}",
        f"-Dint_v={lane_int}{vw}",
        f"-Didx_v=int{vw}",
        f"-Dto_mask=convert_{lane_int}{vw}",
        f"-Dto_idx_v=convert_int{vw}",
        f"-Dfloat_v=float{vw}",
        f"-Dto_float_v=convert_float{vw}",
        f"-Dto_real_v=convert_{real}{vw}",
        f"-DLANES=({lane_int}{vw})({lanes})",
        f"-DIDX_LANES=(int{vw})({lanes})",
        f"-DEVEN_LANES=({lane_uint}{vw})({even})",
        # pooling's kind is compile-time; only its programs carry the macro
        *([f"-DPOOL_AVG={int(attrs['pool_avg'])}"] if "pool_avg" in attrs else []),
    )


def program_source(name: str, precision: str) -> str:
    """What is compiled: the kernel's source, behind the fp16 pragma when half precision."""
    source = kernel_source(name)
    return _FP16_PRAGMA + source if precision == "fp16" else source


@dataclass(frozen=True)
class KernelLimits:
    """What a built kernel allows on its device (clGetKernelWorkGroupInfo)."""

    max_work_group_size: int
    preferred_multiple: int


@dataclass
class BuiltProgram:
    """A program built for one device, with the build's cost."""

    program: cl.Program
    name: str
    options: tuple[str, ...]
    build_ms: float
    limits: KernelLimits


class ProgramCache:
    """Programs by (device, kernel, options), built on first request and then reused.

    Programs of the device's shared context (``context_for``) are keyed as above; programs of a
    private context (a tenant's own, see ``GraphRunner``'s ``context``) are keyed by that context
    object too. The key holds the context itself, not its ``id``: a dead context's id may be
    reused by a new one, and a ``cl.Program`` keeps its context alive anyway (so a weak key would
    never die). Whoever made a private context calls ``forget`` when it is done with it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (private context or None for the shared one, device identity, kernel, options)
        self._programs: dict[tuple[cl.Context | None, str, str, tuple[str, ...]], BuiltProgram] = {}

    def get(
        self,
        found: FoundDevice,
        name: str,
        options: tuple[str, ...],
        precision: str = "fp32",
        context: cl.Context | None = None,
    ) -> tuple[BuiltProgram, bool]:
        """The built program in ``context`` (default: the device's shared one) and whether this
        call built it (False: it came from the cache)."""
        with self._lock:
            shared = context_for(found)
            ctx = shared if context is None else context
            # pyopencl compares contexts by their cl_context
            key = (None if ctx == shared else ctx, found.identity, name, options)
            hit = self._programs.get(key)
            if hit is not None:
                return hit, False
            built = self._programs[key] = self._build(found, ctx, name, options, precision)
            return built, True

    @staticmethod
    def _build(
        found: FoundDevice, ctx: cl.Context, name: str, options: tuple[str, ...], precision: str
    ) -> BuiltProgram:
        t0 = time.perf_counter_ns()
        try:
            program = build_program(ctx, program_source(name, precision), options)
        except cl.RuntimeError as e:  # a build failure: the log says why
            raise BackendError(
                f"opencl backend: kernel {name!r} does not build on {found.limits.name!r} "
                f"with {' '.join(options)}: {str(e).strip()[:2000]}"
            ) from e
        build_ms = (time.perf_counter_ns() - t0) / 1e6
        kernel = cl.Kernel(program, name)
        info = cl.kernel_work_group_info
        limits = KernelLimits(
            max_work_group_size=int(kernel.get_work_group_info(info.WORK_GROUP_SIZE, found.device)),
            preferred_multiple=int(kernel.get_work_group_info(info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, found.device)),
        )
        return BuiltProgram(program, name, options, build_ms, limits)

    def forget(self, context: cl.Context) -> int:
        """Drop the programs of a private context (so the context can die); how many."""
        with self._lock:
            keys = [k for k in self._programs if k[0] is not None and k[0] == context]
            for k in keys:
                del self._programs[k]
            return len(keys)

    def clear(self) -> None:
        """Forget every program (the next request builds again)."""
        with self._lock:
            self._programs.clear()


PROGRAMS = ProgramCache()
