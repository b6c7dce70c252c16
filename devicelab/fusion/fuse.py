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
off). The source depends only on which kernels (and compile-time variants) are fused and on the
layout (and, packed, on which ranges are one row), not on their sizes, so one program serves
every instance of a combination (``cache``).

**Two layouts.** The paper's (above) concatenates the parts along dimension 0 and spans the
largest sub-kernel's extent in every other dimension. The **packed** one launches in one
dimension and gives each sub-kernel a part of ``prod(sizes_i)`` work-items, its whole N-D range
linearised: the branch of sub-kernel ``i`` is taken while ``get_global_id(0) <
offset_{i+1}``, computes ``linear_id_i = get_global_id(0) - offset_i``, leaves past its
``WORK_ITEMS``, and recovers its own ids ``global_id{d}_i`` from it, which table 2's packed rows
put in the body. It wastes no work-item on the other dimensions' padding.

Packing regroups the work-items: a work-group of the fused launch holds consecutive linear ids,
not the sub-kernel's own rectangle of them. That is invisible to a kernel that cannot tell its
work-group: one that calls no work-group built-in and has no ``__local`` memory (barriers and
collectives are refused in any layout), which is every kernel of our library. A kernel that can
tell is packed only when its own work-group is ``(L0, 1, ...)`` and is kept whole: rounding on,
the fused work-group ``L0``, and its range linearised over its launch size (whole rows of
``L0``-wide groups), so that every fused work-group is one of its own. ``layout="auto"`` packs
when that holds for every sub-kernel and falls back to the paper layout otherwise (the reason in
``FusedKernel.layout_note``); ``layout="packed"`` refuses instead.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from devicelab.fusion.errors import FusionError
from devicelab.fusion.launch import FusedLayout, plan_layout, plan_packed_layout, round_up
from devicelab.fusion.parse import ParsedKernel, parse_kernel, split_options
from devicelab.fusion.rewrite import (
    FusedNames,
    apply_edits,
    builtin_edits,
    fused_names,
    plan_renames,
    rename_edits,
)
from devicelab.fusion.spec import AUTO, LAYOUTS, PACKED, PAPER


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
    # each sub-kernel's extent per dimension (its global_size_dim*): its part in the paper layout,
    # its own range in the packed one
    sizes: tuple[tuple[int, ...], ...]
    units: tuple[int, ...]  # each sub-kernel's rounding unit
    args: tuple[Any, ...]  # per sub-kernel: offset, extents, then its own arguments
    rounded: bool  # sizes and offsets rounded up to the units (section 4.2)
    labels: tuple[str, ...]  # the sub-kernels, in order
    layout: str = PAPER  # PAPER (figure 5's, along dimension 0) or PACKED (1-D, ranges linearised)
    layout_note: str = ""  # why ``layout="auto"`` did not pack ("" when it did, or was not asked)
    # a sub-kernel tells its work-group: the launch must use ``local_size`` as it is, not narrowed
    work_group_fixed: bool = False
    work_items: tuple[int, ...] = ()  # each sub-kernel's logical work: the product of its global size

    @property
    def padding(self) -> int:
        """Work-items of the launch that belong to no sub-kernel's logical work: rounding's, and,
        in the paper layout, those past a sub-kernel's extent in the other dimensions."""
        total = 1
        for g in self.global_size:
            total *= g
        work = self.work_items or tuple(int(np.prod(s)) for s in self.sizes)
        return total - sum(work)


@dataclass(frozen=True)
class FusedSource:
    """The generated kernel: its text, name and build options."""

    source: str
    kernel_name: str
    options: tuple[str, ...]
    params: tuple[int, ...]  # each sub-kernel's own parameter count


def fuse(
    subkernels: Sequence[SubKernel], wave_size: int, round_to_wave: bool = True, *, layout: str = AUTO
) -> FusedKernel:
    """Fuse independent sub-kernels into one kernel for a device with this wave size (its
    preferred work-group size multiple), rounding each part to the wave size or not, in the
    packed layout, the paper's, or (``"auto"``) the packed one wherever it is exact."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {list(LAYOUTS)}, not {layout!r}")
    if not subkernels:
        raise FusionError("nothing to fuse")
    parts = tuple((s.name, s.source, s.options, s.dims) for s in subkernels)
    parsed = [parse_kernel(s.source, s.options, s.name) for s in subkernels]
    _common_options(parsed, [s.options for s in subkernels])
    for s, p in zip(subkernels, parsed, strict=True):
        if len(s.args) != len(p.params):
            what = f"kernel {s.name!r}" + (f" ({s.label})" if s.label else "")
            raise FusionError(f"{what} takes {len(p.params)} arguments, {len(s.args)} were given")
    _check_independent(subkernels, parsed)
    note = ""
    if layout != PAPER:
        try:
            packed = _packed_layout(subkernels, parsed, wave_size, round_to_wave)
        except FusionError as e:
            if layout == PACKED:
                raise FusionError(f"the packed layout is not exact here: {e}") from e
            note = str(e)
        else:
            live = tuple(tuple(d for d, x in enumerate(region) if x > 1) for region in packed.regions)
            try:
                return _fused_kernel(subkernels, parsed, fused_source(parts, PACKED, live), packed)
            except FusionError as e:  # e.g. a helper that reads a global id, which packing rewrites
                if layout == PACKED:
                    raise
                note = str(e)
    planned = plan_layout(
        [s.global_size for s in subkernels], [s.local_size for s in subkernels], wave_size, round_to_wave
    )
    try:
        _check_group_builtins(subkernels, parsed, planned)
        fused = _fused_kernel(subkernels, parsed, fused_source(parts, PAPER), planned)
    except FusionError as e:
        raise FusionError(f"{e}; nor in the packed layout: {note}" if note else str(e)) from e
    return dataclasses.replace(fused, layout_note=note)


def _fused_kernel(
    subkernels: Sequence[SubKernel], parsed: Sequence[ParsedKernel], fused: FusedSource, layout: FusedLayout
) -> FusedKernel:
    """The fused kernel of this source and layout, with every argument value."""
    if layout.global_size[0] >= 2**32:
        raise FusionError(f"the fused launch spans {layout.global_size[0]} work-items: offsets are 32-bit")
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
        layout=layout.kind,
        work_group_fixed=any(p.group_dependence() for p in parsed),
        work_items=tuple(math.prod(s.global_size) for s in subkernels),
    )


def _packed_layout(
    subkernels: Sequence[SubKernel], parsed: Sequence[ParsedKernel], wave_size: int, round_to_wave: bool
) -> FusedLayout:
    """The packed layout, when it is exact: ``FusionError`` saying why not otherwise. A sub-kernel
    that can tell its work-group is linearised over its launch size, whole work-groups per row."""
    telling = [p.group_dependence() for p in parsed]
    extents = [s.launch_size if tells else s.global_size for s, tells in zip(subkernels, telling, strict=True)]
    layout = plan_packed_layout(extents, [s.local_size for s in subkernels], wave_size, round_to_wave)
    for s, tells in zip(subkernels, telling, strict=True):
        if not tells:
            continue  # any grouping of its work-items computes the same
        what = f"kernel {s.name!r} uses {', '.join(tells)}"
        if s.local_size is None:
            raise FusionError(f"{what} and its work-group is the driver's choice")
        if any(x != 1 for x in s.local_size[1:]):
            raise FusionError(f"{what} and its work-group {list(s.local_size)} spans more than dimension 0")
        if not round_to_wave:
            raise FusionError(f"{what}: without rounding its part does not start on a work-group boundary")
        if layout.local_size[0] != s.local_size[0]:
            raise FusionError(
                f"{what}: it needs its own work-group {list(s.local_size)} and the packed launch has "
                f"work-group {list(layout.local_size)}"
            )
    return layout


def _check_independent(subkernels: Sequence[SubKernel], parsed: Sequence[ParsedKernel]) -> None:
    """Refuse sub-kernels where one writes a buffer another touches (their order would matter).
    A parameter that is a pointer to non-const memory counts as written."""

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


def _check_group_builtins(subkernels: Sequence[SubKernel], parsed: Sequence[ParsedKernel], layout: FusedLayout) -> None:
    """In the paper layout, work-group built-ins (and ``__local`` memory) are exact only when the
    sub-kernel keeps its own work-group shape and its part starts on a work-group boundary
    (rounding on)."""
    for s, p in zip(subkernels, parsed, strict=True):
        used = p.group_dependence()
        if not used:
            continue
        own = tuple(s.local_size or ()) + (1,) * (len(layout.local_size) - len(s.local_size or ()))
        if not layout.rounded or own != layout.local_size:
            raise FusionError(
                f"kernel {s.name!r} uses {list(used)}: it needs its own work-group {list(own)} and rounded "
                f"offsets, and the fused launch has work-group {list(layout.local_size)}"
                f"{'' if layout.rounded else ' without rounding'}"
            )


@lru_cache(maxsize=256)
def fused_source(
    parts: tuple[tuple[str, str, tuple[str, ...], int], ...],
    layout: str = PAPER,
    live_dims: tuple[tuple[int, ...], ...] = (),
) -> FusedSource:
    """The fused kernel for sub-kernels given as (kernel name, source, build options, dimensions),
    in the paper or the packed layout. In the packed one, ``live_dims`` gives, per sub-kernel,
    the dimensions in which its range has an extent above 1 (by default all its own): its ids
    are recovered in those and are 0 in the others, which spares divisions and keeps a one-row
    range's row id uniform."""
    if layout not in (PAPER, PACKED):
        raise ValueError(f"a fused source's layout is {PAPER!r} or {PACKED!r}, not {layout!r}")
    live_dims = live_dims or tuple(tuple(range(d)) for *_, d in parts)
    parsed = [parse_kernel(source, options, name) for name, source, options, _ in parts]
    others = _common_options(parsed, [options for _, _, options, _ in parts])
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
        edits += builtin_edits(p, i, own_dims, names, layout, live_dims[i])
        params.append(f"const uint {names.offset(i)}")
        params.append(f"{names.macro('GLOBAL_SIZE')}({i})")
        params.extend(apply_edits(p.text, q.start, q.end, edits) for q in p.params)
        body = apply_edits(p.text, p.body_start, p.body_end, edits)
        if layout == PACKED:
            branches.append(_packed_branch(i, len(parts), live_dims[i], names, body))
        else:
            branches.append(_branch(i, names, body))

    labels = ", ".join(f"{p.name} [{i}]" for i, p in enumerate(parsed))
    source = "\n".join(
        [
            f"// ParallelFusion (section 4.2) of {labels}, {layout} layout, generated by devicelab.fusion.",
            *pragmas,
            "",
            *(_packed_macros(names) if layout == PACKED else _macros(names)),
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
    return FusedSource(source, names.kernel, others, tuple(len(p.params) for p in parsed))


def _common_options(parsed: Sequence[ParsedKernel], options: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """The build options (other than macros) every sub-kernel shares, which the fused program
    is built with; ``FusionError`` when they differ or a kernel carries attributes."""
    for p in parsed:
        if p.kernel_attributes:
            raise FusionError(f"kernel {p.name!r} has attributes (a fused kernel cannot keep them)")
    others = {split_options(o)[1] for o in options}
    if len(others) > 1:
        raise FusionError(f"the sub-kernels are built with different compiler options: {sorted(others)}")
    return next(iter(others))


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


def _packed_macros(names: FusedNames) -> list[str]:
    """The packed layout's definitions: a sub-kernel's extents (as figure 6's) and how many
    work-items its range holds."""
    pre, dims = names.prefix, names.dims
    sizes = ", ".join(f"const uint {pre}global_size_dim{d}_##i" for d in range(dims))
    product = " * ".join(f"{pre}global_size_dim{d}_##i" for d in range(dims))
    return [
        f"#define {names.macro('GLOBAL_SIZE')}(i) {sizes}",
        f"#define {names.macro('WORK_ITEMS')}(i) ({product})",
    ]


def _packed_branch(i: int, count: int, live: tuple[int, ...], names: FusedNames, body: str) -> str:
    """Sub-kernel ``i``'s branch in the packed layout: taken below the next part's offset (the
    last one unconditionally); its ids in the ``live`` dimensions (those of extent above 1, the
    others are 0 in its body) recovered from its linear id, the first fastest. The arithmetic
    is 32-bit (``fuse`` keeps the launch below 2^32 work-items): a 64-bit division costs a CPU
    two to three times as much, and one division gives both ids of a 2-D range."""
    linear = names.linear_id(i)
    lines = [
        f"const uint {linear} = (uint)(get_global_id(0) - (size_t){names.offset(i)});",
        f"if ({linear} >= {names.macro('WORK_ITEMS')}({i})) {{ return; }}",
    ]
    live = live or (0,)  # a range of one work-item: its id 0 is its linear id, 0
    for k in range(len(live) - 1, 0, -1):
        below = " * ".join(names.size(d, i) for d in live[:k])
        quotient = f"{linear} / {below}" if k == 1 else f"{linear} / ({below})"
        value = quotient if k == len(live) - 1 else f"({quotient}) % {names.size(live[k], i)}"
        lines.append(f"const uint {names.global_id(live[k], i)} = {value};")
    first, size = names.global_id(live[0], i), names.size(live[0], i)
    if len(live) == 1:
        lines.append(f"const uint {first} = {linear};")
    elif len(live) == 2:
        lines.append(f"const uint {first} = {linear} - {names.global_id(live[1], i)} * {size};")
    else:
        lines.append(f"const uint {first} = {linear} % {size};")
    indented = body.replace("\n", "\n        ")
    head = f"if (get_global_id(0) < (size_t){names.offset(i + 1)}) " if i < count - 1 else ""
    inner = "".join(f"        {line}\n" for line in lines)
    return f"{head}{{\n{inner}        {indented}\n    }}"


__all__ = ["AUTO", "LAYOUTS", "FusedKernel", "FusedSource", "SubKernel", "fuse", "fused_source"]
