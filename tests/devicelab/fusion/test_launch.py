"""Section 4.2's two rounding formulas, the rounding unit, and the fused launch's layout."""

from __future__ import annotations

import pytest

from devicelab.fusion.launch import (
    fit_local_size,
    fused_offsets,
    fused_work_size,
    packed_rounding_unit,
    plan_layout,
    plan_packed_layout,
    rounding_unit,
)


def test_the_two_formulas_with_the_wave_size() -> None:
    sizes, units = [10, 33, 7], [8, 8, 8]
    assert fused_work_size(sizes, units) == 16 + 40 + 8  # sum of WS * ceil(g_i / WS)
    assert fused_offsets(sizes, units) == (0, 16, 56)  # the same sum over the sub-kernels before i
    assert fused_work_size([], []) == 0


def test_the_formulas_with_per_sub_kernel_units() -> None:
    assert fused_offsets([10, 33, 7], [32, 8, 64]) == (0, 32, 72)
    assert fused_work_size([10, 33, 7], [32, 8, 64]) == 32 + 40 + 64


@pytest.mark.parametrize(
    "wave,local,unit",
    [
        (8, None, 8),  # no work-group of its own: the wave
        (8, (4, 2), 8),  # narrower than a wave: the wave
        (8, (32, 1), 32),  # four waves wide: its own width
        (64, (16, 4), 64),
        (12, (16, 1), 48),  # neither divides the other: their least common multiple
    ],
)
def test_the_rounding_unit_is_the_larger_of_wave_and_own_work_group(wave, local, unit) -> None:
    assert rounding_unit(wave, local) == unit


def test_a_rounding_unit_needs_positive_sizes() -> None:
    with pytest.raises(ValueError):
        rounding_unit(0, None)
    with pytest.raises(ValueError):
        rounding_unit(8, (0, 1))


def test_layout_with_rounding() -> None:
    layout = plan_layout([(10, 3), (33, 5), (7, 1)], [(4, 2), (16, 1), None], wave_size=8)
    assert layout.units == (8, 16, 8)
    assert layout.offsets == (0, 16, 64)
    assert layout.regions == ((16, 3), (48, 5), (8, 1))
    assert layout.global_size == (72, 5)  # dimension 1: the largest sub-kernel's
    assert layout.local_size == (8, 1)  # the units' greatest common divisor
    assert all(o % layout.local_size[0] == 0 for o in layout.offsets) and layout.rounded
    assert layout.parts == (16, 48, 8) and layout.kind == "paper"


def test_layout_without_rounding_packs_the_parts() -> None:
    layout = plan_layout([(10, 3), (33, 5), (7, 1)], [(4, 2), (16, 1), None], wave_size=8, round_to_wave=False)
    assert layout.offsets == (0, 10, 43)
    assert layout.regions == ((10, 3), (33, 5), (7, 1))
    assert layout.global_size == (56, 5)  # 50 rounded up to the work-group only
    assert layout.local_size == (8, 1) and not layout.rounded


def test_layout_of_sub_kernels_with_fewer_dimensions() -> None:
    layout = plan_layout([(10,), (3, 4, 5)], [None, (1, 1, 1)], wave_size=4)
    assert layout.regions == ((12, 1, 1), (4, 4, 5))
    assert layout.global_size == (16, 4, 5) and layout.local_size == (4, 1, 1)


def test_layout_refuses_empty_or_non_positive_work() -> None:
    with pytest.raises(ValueError):
        plan_layout([], [], 8)
    with pytest.raises(ValueError):
        plan_layout([(0, 1)], [None], 8)


def test_fit_local_size_halves_dimension_0() -> None:
    assert fit_local_size((64, 1), 256) == (64, 1)
    assert fit_local_size((64, 1), 16) == (16, 1)
    assert fit_local_size((256,), 1024, 128) == (128,)  # the device's widest work-group along dimension 0
    with pytest.raises(ValueError):
        fit_local_size((24, 1), 2)  # 24 -> 12 -> 6 -> 3: odd and still too wide


@pytest.mark.parametrize(
    "wave,local,unit",
    [
        (8, None, 8),
        (8, (4, 2), 8),  # 8 work-items: one wave
        (8, (8, 4), 32),  # 32 work-items: four waves, though 8 wide along dimension 0
        (64, (16, 4), 64),
        (64, (64, 4), 256),
    ],
)
def test_the_packed_unit_counts_the_whole_work_group(wave, local, unit) -> None:
    assert packed_rounding_unit(wave, local) == unit


def test_packed_layout_with_rounding() -> None:
    # a long row beside a block: the paper layout spans 13 x 2890, the packed one the work itself
    layout = plan_packed_layout([(2890, 1), (13, 1024), (7,)], [(32, 1), (4, 8), None], wave_size=8)
    assert layout.kind == "packed" and layout.rounded
    assert layout.units == (32, 32, 8)
    assert layout.parts == (2912, 13312, 8)  # 2890, 13 * 1024 and 7 work-items, each up to its unit
    assert layout.offsets == (0, 2912, 2912 + 13312)  # formula 2 with prod(sizes_i)
    assert layout.global_size == (2912 + 13312 + 8,)  # formula 1, in one dimension
    assert layout.regions == ((2890, 1), (13, 1024), (7, 1))  # what each body sees as its own range
    assert layout.local_size == (8,) and all(o % 8 == 0 for o in layout.offsets)
    paper = plan_layout([(2890, 1), (13, 1024), (7,)], [(32, 1), (4, 8), None], wave_size=8)
    assert paper.global_size == (2912 + 16 + 8, 1024)  # 2936 x 1024, of which 15,210 work-items do work


def test_packed_layout_without_rounding_touches_the_parts() -> None:
    layout = plan_packed_layout([(10, 3), (33, 5), (7, 1)], [(4, 2), (16, 1), None], wave_size=8, round_to_wave=False)
    assert layout.offsets == (0, 30, 195) and layout.parts == (30, 165, 7)
    assert layout.global_size == (208,) and layout.local_size == (8,)  # 202, up to the work-group
    with pytest.raises(ValueError):
        plan_packed_layout([(3, 0)], [None], 8)
