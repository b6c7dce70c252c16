"""ParallelFusion's fused kernel (section 4.2, figures 5 and 6): independent kernels of our
library, with their launch configurations and argument values, become one OpenCL kernel.

The fused source is put together from the sub-kernels' own code (``parse``: each expanded with
its own build options), renamed and rewritten (``rewrite``: suffixes on colliding names, table 2
on the work-item built-ins):

* the file-scope pragmas, once each, then figure 6's macros, then the helper functions (a helper
  identical in several sub-kernels once, the others under their renamed names);
* one ``__kernel`` whose parameters are, for each sub-kernel ``i`` in order, ``offset_i``, its
  ``GLOBAL_SIZE_<D>_DIMS(i)`` extents and its own parameters;
* a body that is a chain ``if GLOBAL_ID_CONDITION_<D>_DIMS(0) {...} else if ...(1) {...}``: a
  work-item takes the branch of the first sub-kernel whose part (in ascending offsets) ends past
  its global id 0, leaves at ``SKIP_ID`` if it is past that sub-kernel's extent in any dimension,
  and otherwise runs the sub-kernel's body, where ``get_global_id(0)`` now reads
  ``get_global_id(0) - offset_i``. A ``return`` in a body leaves the fused kernel, which is what it
  did in the sub-kernel, as nothing follows the chain.

Within its part, each sub-kernel sees what a launch of its own with global size
``global_size_dim*_i`` would show it, so a kernel that stays correct for any launch covering its
logical size (ours return early past ``gs0, gs1``) computes the same numbers fused. Where the
parts go and the launch sizes are ``launch``'s (section 4.2's two formulas, rounding switchable
off). The source depends only on which kernels (and compile-time variants) are fused, not on
their sizes, so one program serves every instance of a combination (``cache``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from devicelab.fusion.errors import FusionError
from devicelab.fusion.launch import FusedLayout, plan_layout, round_up
from devicelab.fusion.parse import GROUP_BUILTINS, parse_kernel, split_options
from devicelab.fusion.rewrite import (
    FusedNames,
    apply_edits,
    builtin_edits,
    fused_names,
    plan_renames,
    rename_edits,
)


@dataclass(frozen=True)
class SubKernel:
    """One kernel of our library with its launch configuration and its argument values.

    ``global_size`` is the logical work size (what the kernel's ``gs0, gs1`` arguments hold): the
    kernel must stay correct for any launch that covers it, as ours do (they return early past
    it), because rounding gives it a larger part. ``args`` are the values in parameter order, as
    ``set_args`` takes them (numpy scalars, ``cl.Buffer``s)."""

    name: str  # the __kernel function
    source: str  # its OpenCL C source, as compiled (with the fp16 pragma when half precision)
    options: tuple[str, ...]  # its build options: ``-D`` macros fix its types and tiling
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    args: tuple[Any, ...]
    label: str = ""  # what it computes, for reports (the planned kernel's name)

    @property
    def dims(self) -> int:
        """Its number of work dimensions."""
        return len(self.global_size)

    @property
    def launch_size(self) -> tuple[int, ...]:
        """The global size of a launch of its own: the logical size rounded up to the work-group."""
        if self.local_size is None:
            return self.global_size
        return tuple(round_up(g, ls) for g, ls in zip(self.global_size, self.local_size, strict=True))


@dataclass(frozen=True)
class FusedKernel:
    """A fused kernel ready to build and launch: source, sizes and every argument value."""

    source: str
    kernel_name: str
    options: tuple[str, ...]  # build options of the fused program (the sub-kernels' non-macro ones)
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    offsets: tuple[int, ...]  # where each sub-kernel starts along dimension 0
    sizes: tuple[tuple[int, ...], ...]  # each sub-kernel's extent per dimension (its global_size_dim*)
    units: tuple[int, ...]  # each sub-kernel's rounding unit
    args: tuple[Any, ...]  # per sub-kernel: offset, extents, then its own arguments
    rounded: bool  # sizes and offsets rounded up to the units (section 4.2)
    labels: tuple[str, ...]  # the sub-kernels, in order

    @property
    def padding(self) -> int:
        """Work-items of the launch that belong to no sub-kernel's logical work."""
        total = 1
        for g in self.global_size:
            total *= g
        return total - sum(int(np.prod(s)) for s in self.sizes)


@dataclass(frozen=True)
class FusedSource:
    """The generated kernel: its text, name and build options."""

    source: str
    kernel_name: str
    options: tuple[str, ...]
    params: tuple[int, ...]  # each sub-kernel's own parameter count


def fuse(subkernels: Sequence[SubKernel], wave_size: int, round_to_wave: bool = True) -> FusedKernel:
    """Fuse independent sub-kernels into one kernel for a device with this wave size (its
    preferred work-group size multiple), rounding each part to the wave size or not."""
    if not subkernels:
        raise FusionError("nothing to fuse")
    fused = fused_source(tuple((s.name, s.source, s.options, s.dims) for s in subkernels))
    for s, count in zip(subkernels, fused.params, strict=True):
        if len(s.args) != count:
            what = f"kernel {s.name!r}" + (f" ({s.label})" if s.label else "")
            raise FusionError(f"{what} takes {count} arguments, {len(s.args)} were given")
    _check_independent(subkernels)
    layout = plan_layout(
        [s.global_size for s in subkernels], [s.local_size for s in subkernels], wave_size, round_to_wave
    )
    _check_group_builtins(subkernels, layout)
    args: list[Any] = []
    for s, offset, region in zip(subkernels, layout.offsets, layout.regions, strict=True):
        args.append(np.uint32(offset))
        args.extend(np.uint32(x) for x in region)
        args.extend(s.args)
    return FusedKernel(
        source=fused.source,
        kernel_name=fused.kernel_name,
        options=fused.options,
        global_size=layout.global_size,
        local_size=layout.local_size,
        offsets=layout.offsets,
        sizes=layout.regions,
        units=layout.units,
        args=tuple(args),
        rounded=layout.rounded,
        labels=tuple(s.label or s.name for s in subkernels),
    )


def _check_independent(subkernels: Sequence[SubKernel]) -> None:
    """Refuse sub-kernels where one writes a buffer another touches (their order would matter).
    A parameter that is a pointer to non-const memory counts as written."""
    parsed = [parse_kernel(s.source, s.options, s.name) for s in subkernels]

    def buffers(i: int, written: bool) -> set[int]:
        out = set()
        for param, value in zip(parsed[i].params, subkernels[i].args, strict=False):
            handle = getattr(value, "int_ptr", None)  # an OpenCL memory object
            if handle is not None and (param.writes or not written):
                out.add(int(handle))
        return out

    for i in range(len(subkernels)):
        mine = buffers(i, written=True)
        for j in range(len(subkernels)):
            if j != i and mine & buffers(j, written=False):
                raise FusionError(
                    f"{subkernels[i].label or subkernels[i].name} writes a buffer that "
                    f"{subkernels[j].label or subkernels[j].name} uses: they are not independent"
                )


def _check_group_builtins(subkernels: Sequence[SubKernel], layout: FusedLayout) -> None:
    """Work-group built-ins are exact only when the sub-kernel keeps its own work-group shape and
    its part starts on a work-group boundary (rounding on)."""
    for s in subkernels:
        used = parse_kernel(s.source, s.options, s.name).builtins_used() & GROUP_BUILTINS
        if not used:
            continue
        own = tuple(s.local_size or ()) + (1,) * (len(layout.local_size) - len(s.local_size or ()))
        if not layout.rounded or own != layout.local_size:
            raise FusionError(
                f"kernel {s.name!r} uses {sorted(used)}: it needs its own work-group {list(own)} and rounded "
                f"offsets, and the fused launch has work-group {list(layout.local_size)}"
                f"{'' if layout.rounded else ' without rounding'}"
            )


@lru_cache(maxsize=256)
def fused_source(parts: tuple[tuple[str, str, tuple[str, ...], int], ...]) -> FusedSource:
    """The fused kernel for sub-kernels given as (kernel name, source, build options, dimensions)."""
    parsed = [parse_kernel(source, options, name) for name, source, options, _ in parts]
    for p in parsed:
        if p.kernel_attributes:
            raise FusionError(f"kernel {p.name!r} has attributes (a fused kernel cannot keep them)")
    others = {split_options(options)[1] for _, _, options, _ in parts}
    if len(others) > 1:
        raise FusionError(f"the sub-kernels are built with different compiler options: {sorted(others)}")
    dims = max(d for *_, d in parts)
    names = fused_names(
        "fused_" + "_".join(p.name for p in parsed), dims, len(parts), set().union(*(p.identifiers for p in parsed))
    )
    plan = plan_renames(parsed, names.all_for(len(parts)))

    pragmas: list[str] = []
    helpers: list[str] = []
    emitted_shared: set[str] = set()
    params: list[str] = []
    branches: list[str] = []
    for i, (p, (_, _, _, own_dims)) in enumerate(zip(parsed, parts, strict=True)):
        for j, item in enumerate(p.items):
            text = p.text[item.start : item.end]
            if item.kind == "pragma":
                if text not in pragmas:
                    pragmas.append(text)
            elif item.is_kernel:
                continue  # the kernel is placed below; other kernels of the file are not called
            elif item.name in plan.shared:
                if item.name not in emitted_shared:
                    emitted_shared.add(item.name)
                    helpers.append(text)
            else:
                helpers.append(apply_edits(p.text, item.start, item.end, rename_edits(p, j, plan.file_scope[i])))
        edits = rename_edits(p, p.kernel_item, {**plan.file_scope[i], **plan.params[i]})
        edits += builtin_edits(p, i, own_dims, names)
        params.append(f"const uint {names.offset(i)}")
        params.append(f"{names.macro('GLOBAL_SIZE')}({i})")
        params.extend(apply_edits(p.text, q.start, q.end, edits) for q in p.params)
        branches.append(_branch(i, names, apply_edits(p.text, p.body_start, p.body_end, edits)))

    labels = ", ".join(f"{p.name} [{i}]" for i, p in enumerate(parsed))
    source = "\n".join(
        [
            f"// ParallelFusion (section 4.2) of {labels}, generated by devicelab.fusion.",
            *pragmas,
            "",
            *_macros(names),
            "",
            *(h + "\n" for h in helpers),
            f"__kernel void {names.kernel}(",
            ",\n".join(f"    {q}" for q in params),
            ")",
            "{",
            "    " + "\n    else ".join(branches),
            "}",
            "",
        ]
    )
    return FusedSource(source, names.kernel, next(iter(others)), tuple(len(p.params) for p in parsed))


def _macros(names: FusedNames) -> list[str]:
    """Figure 6's pre-processor definitions for ``names.dims`` dimensions. The condition tests
    only the upper end of a part: the branches are tried in ascending offsets."""
    pre, dims = names.prefix, names.dims
    ids = ", ".join(f"id{d}" for d in range(dims))
    sizes = ", ".join(f"const uint {pre}global_size_dim{d}_##i" for d in range(dims))
    past = " || ".join(f"(id{d}) >= {pre}global_size_dim{d}_##i" for d in range(dims))
    return [
        f"#define {names.macro('GLOBAL_SIZE')}(i) {sizes}",
        f"#define {names.macro('GLOBAL_ID_CONDITION')}(i) "
        f"(get_global_id(0) < (size_t){pre}offset_##i + {pre}global_size_dim0_##i)",
        f"#define {names.macro('SKIP_ID')}(i, {ids}) if ({past}) {{ return; }}",
    ]


def _branch(i: int, names: FusedNames, body: str) -> str:
    """Figure 5's branch of sub-kernel ``i``, its body one block deeper."""
    ids = [f"get_global_id(0) - (size_t){names.offset(i)}"] + [f"get_global_id({d})" for d in range(1, names.dims)]
    indented = body.replace("\n", "\n        ")
    return (
        f"if {names.macro('GLOBAL_ID_CONDITION')}({i}) {{\n"
        f"        {names.macro('SKIP_ID')}({i}, {', '.join(ids)});\n"
        f"        {indented}\n"
        "    }"
    )


__all__ = ["FusedKernel", "FusedSource", "SubKernel", "fuse", "fused_source"]
