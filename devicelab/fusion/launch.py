"""Where each sub-kernel's work goes in a fused kernel's ND-range, and the fused launch's sizes.

ParallelFusion puts the sub-kernels' work one after another along dimension 0 (figure 5): sub-
kernel ``i`` owns the work-items whose global id 0 lies in ``[offset_i, offset_i + size_i)``.
A wave (the device's preferred work-group size multiple, from the device query) whose work-
items straddle two sub-kernels runs both branches, masked (figure 7), so section 4.2 rounds
every size and offset up to the wave size ``WS``:

    global_work_size = sum_{i=0}^{n-1} WS * ceil(global_work_size_i / WS)        (formula 1)
    offset_i         = sum_{j=0}^{i-1} WS * ceil(global_work_size_j / WS)        (formula 2)

**The rounding unit.** Where a sub-kernel's own work-group is wider along dimension 0 than a
wave (our planner grows work-groups up to four waves), its part is rounded to that width
instead: the unit ``u_i`` of sub-kernel ``i`` is the larger of the wave size and its work-group
size along dimension 0 (their least common multiple, which is the larger one whenever one
divides the other, as powers of two do). The formulas above then read with ``u_i`` for ``WS``.

**The fused work-group** is ``(L0, 1, ...)`` with ``L0`` the greatest common divisor of the units:
it divides every offset and the total, so with rounding no work-group (hence no wave) holds work
of two sub-kernels, and table 2's group built-ins stay exact. It runs one row per work-group, so
a wave never spans rows either. ``fit_local_size`` narrows it when a built kernel allows fewer
work-items per group (halving keeps it a divisor).

**Without rounding** (the paper's comparison, figure 9's dotted series) the parts are packed at
their exact sizes, offsets are the plain prefix sums, and only the total is rounded up to
``L0`` (the work-items past the last part take no branch). The same work-group shape is used, so
the two variants differ only in where the boundaries fall.

Other dimensions are not concatenated: the fused extent is the largest sub-kernel's, and each
sub-kernel skips the work-items past its own (figure 6's ``SKIP_ID``). That is the **paper
layout** (``plan_layout``).

**The packed layout** (``plan_packed_layout``) removes the padding the paper layout leaves in
the other dimensions. The fused launch is 1-D, and each sub-kernel's whole N-D range is
linearised into its part of dimension 0: part ``i`` holds ``W_i = prod_d size_d_i`` work-items,
and its body recovers its own ids from ``l = get_global_id(0) - offset_i`` (``l % size0``,
``l / size0 % size1``...). The two formulas read with ``W_i`` for ``global_work_size_i``::

    global_work_size = sum_i u_i * ceil(W_i / u_i)
    offset_i         = sum_{j<i} u_j * ceil(W_j / u_j)

and the unit ``u_i`` is the larger of the wave size and the number of work-items of the
sub-kernel's own work-group (its width once linearised, ``prod_d local_d_i``). The fused work-
group is ``(gcd(u_i),)``, so, rounded, no work-group and no wave holds two parts, and a sub-
kernel whose own work-group is ``(L0, 1, ...)`` with ``L0`` equal to it keeps its work-groups.
Without rounding the parts touch at ``W_i`` and only the total is rounded to the work-group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from devicelab.fusion.spec import PACKED, PAPER


def round_up(n: int, unit: int) -> int:
    """``unit * ceil(n / unit)``."""
    return -(-n // unit) * unit


def rounding_unit(wave_size: int, local_size: Sequence[int] | None) -> int:
    """The unit a sub-kernel's work and offset are rounded to: the larger of the wave size and
    its own work-group's size along dimension 0 (their least common multiple)."""
    if wave_size < 1:
        raise ValueError(f"wave size must be at least 1, not {wave_size}")
    own = int(local_size[0]) if local_size else 1
    if own < 1:
        raise ValueError(f"work-group size must be at least 1, not {own}")
    return math.lcm(wave_size, own)


def packed_rounding_unit(wave_size: int, local_size: Sequence[int] | None) -> int:
    """The packed layout's unit: the larger of the wave size and the number of work-items of the
    sub-kernel's own work-group, which is its width once linearised (their least common multiple)."""
    return rounding_unit(wave_size, (math.prod(int(x) for x in local_size),) if local_size else None)


def fused_work_size(sizes: Sequence[int], units: Sequence[int]) -> int:
    """Section 4.2, formula 1: the fused kernel's work along dimension 0."""
    return sum(round_up(g, u) for g, u in zip(sizes, units, strict=True))


def fused_offsets(sizes: Sequence[int], units: Sequence[int]) -> tuple[int, ...]:
    """Section 4.2, formula 2: where each sub-kernel starts along dimension 0."""
    return tuple(fused_work_size(sizes[:i], units[:i]) for i in range(len(sizes)))


@dataclass(frozen=True)
class FusedLayout:
    """The fused kernel's launch and each sub-kernel's part of it."""

    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    offsets: tuple[int, ...]  # along dimension 0
    # per sub-kernel, the extent in each dimension its body sees (its ``global_size_dim*``): the
    # rounded part in the paper layout, its own range in the packed one
    regions: tuple[tuple[int, ...], ...]
    units: tuple[int, ...]  # per sub-kernel, its rounding unit (also when rounding is off)
    rounded: bool
    parts: tuple[int, ...]  # per sub-kernel, the extent of its part along dimension 0
    kind: str = PAPER  # PAPER or PACKED


def plan_layout(
    global_sizes: Sequence[Sequence[int]],
    local_sizes: Sequence[Sequence[int] | None],
    wave_size: int,
    round_to_wave: bool = True,
) -> FusedLayout:
    """The paper's layout of sub-kernels with these logical work sizes and work-groups on a device
    with this wave size (see the module docstring)."""
    dims, sizes = _padded(global_sizes)
    units = tuple(rounding_unit(wave_size, ls) for ls in local_sizes)
    group = math.gcd(*units)
    dim0 = [g[0] for g in sizes]
    if round_to_wave:
        offsets = fused_offsets(dim0, units)
        firsts = [round_up(g, u) for g, u in zip(dim0, units, strict=True)]
        total = fused_work_size(dim0, units)
    else:
        ones = [1] * len(dim0)
        offsets, firsts, total = fused_offsets(dim0, ones), dim0, round_up(fused_work_size(dim0, ones), group)
    regions = tuple((first, *g[1:]) for first, g in zip(firsts, sizes, strict=True))
    others = tuple(max(g[d] for g in sizes) for d in range(1, dims))
    return FusedLayout(
        global_size=(total, *others),
        local_size=(group,) + (1,) * (dims - 1),
        offsets=offsets,
        regions=regions,
        units=units,
        rounded=round_to_wave,
        parts=tuple(firsts),
        kind=PAPER,
    )


def plan_packed_layout(
    global_sizes: Sequence[Sequence[int]],
    local_sizes: Sequence[Sequence[int] | None],
    wave_size: int,
    round_to_wave: bool = True,
) -> FusedLayout:
    """The packed layout (see the module docstring): a 1-D launch in which part ``i`` holds the
    ``prod(global_sizes[i])`` work-items of sub-kernel ``i``'s linearised range."""
    dims, sizes = _padded(global_sizes)
    units = tuple(packed_rounding_unit(wave_size, ls) for ls in local_sizes)
    group = math.gcd(*units)
    work = [math.prod(g) for g in sizes]
    if round_to_wave:
        offsets = fused_offsets(work, units)
        parts = tuple(round_up(w, u) for w, u in zip(work, units, strict=True))
        total = fused_work_size(work, units)
    else:
        ones = [1] * len(work)
        offsets, parts, total = fused_offsets(work, ones), tuple(work), round_up(sum(work), group)
    return FusedLayout(
        global_size=(total,),
        local_size=(group,),
        offsets=offsets,
        regions=tuple(sizes),
        units=units,
        rounded=round_to_wave,
        parts=parts,
        kind=PACKED,
    )


def _padded(global_sizes: Sequence[Sequence[int]]) -> tuple[int, list[tuple[int, ...]]]:
    """The largest dimension count, and every size padded with 1s to it (checked positive)."""
    if not global_sizes:
        raise ValueError("no sub-kernels to lay out")
    dims = max(len(g) for g in global_sizes)
    sizes = [tuple(int(x) for x in g) + (1,) * (dims - len(g)) for g in global_sizes]
    if any(x < 1 for g in sizes for x in g):
        raise ValueError(f"work sizes must be positive: {[list(g) for g in global_sizes]}")
    return dims, sizes


def fit_local_size(
    local_size: Sequence[int], max_work_group_size: int, max_work_items_dim0: int | None = None
) -> tuple[int, ...]:
    """The work-group narrowed (halved along dimension 0) until a kernel allowing
    ``max_work_group_size`` work-items per group takes it, and ``L0`` is within the device's
    largest work-group extent along dimension 0 when given; a half of ``L0`` still divides every
    offset. Refuses when an odd ``L0`` would have to shrink."""
    l0, rest = int(local_size[0]), tuple(int(x) for x in local_size[1:])
    widest = l0 if max_work_items_dim0 is None else max_work_items_dim0
    while l0 * math.prod(rest) > max_work_group_size or l0 > widest:
        if l0 % 2:
            raise ValueError(
                f"work-group {list(local_size)} exceeds the kernel's {max_work_group_size} work-items "
                f"(or {widest} along dimension 0)"
            )
        l0 //= 2
    return (l0, *rest)


__all__ = [
    "PACKED",
    "PAPER",
    "FusedLayout",
    "fit_local_size",
    "fused_offsets",
    "fused_work_size",
    "packed_rounding_unit",
    "plan_layout",
    "plan_packed_layout",
    "round_up",
    "rounding_unit",
]
