"""A fused kernel computes what its sub-kernels compute run one after another (issue 20, item 2):
every kernel of the library in every pair, in seeded triples that cover every kernel, identical
kernels fused N at a time, with the device's wave size and a GPU-sized one, rounding on and off,
in the packed layout and in the paper's.

Every work size of the library cases is odd or smaller than a wave, so rounding pads every part
and, without rounding, every boundary between two parts falls inside a work-group."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from devicelab.fusion.cache import PROGRAMS_BY_SOURCE
from tests.devicelab.fusion.library import CASES

KERNELS = sorted(CASES)
# The kernels that run the paper's operator kinds (C, C_1x1, P, DWC, DWC_s1, FC, element-wise):
# every pair of them is fused; the other kernels each meet a few seeded partners. All 171 pairs
# pass too, but building them all takes PoCL about three minutes from a cold kernel cache.
PAPER_KINDS = (
    "binary",
    "conv2d",
    "conv2d_1x1",
    "conv2d_flat",
    "depthwise_conv2d",
    "depthwise_conv2d_flat",
    "fully_connected",
    "pool2d",
)
SEED = 20
GPU_WAVE = 64  # an Adreno/AMD-sized wave: larger units and work-groups than PoCL's


def sampled_pairs(kernels: list[str], core: tuple[str, ...], seed: int, partners: int) -> list[tuple[str, str]]:
    """Every pair within ``core``, and for every other kernel ``partners`` seeded partners."""
    rng = random.Random(seed)
    pairs = set(itertools.combinations(core, 2))
    for k in kernels:
        if k not in core:
            pairs.update(
                (min(k, other), max(k, other)) for other in rng.sample([o for o in kernels if o != k], partners)
            )
    return sorted(pairs)


def covering_triples(kernels: list[str], seed: int, extra: int) -> list[tuple[str, str, str]]:
    """Seeded triples in which every kernel appears (a shuffled deck dealt three at a time, the
    last hand filled up at random), plus ``extra`` more drawn at random."""
    rng = random.Random(seed)
    deck = list(kernels)
    rng.shuffle(deck)
    short = -len(deck) % 3
    deck += rng.sample(deck[: len(deck) - (3 - short)], short) if short else []
    triples = {tuple(sorted(deck[i : i + 3])) for i in range(0, len(deck), 3)}
    pool = [t for t in itertools.combinations(kernels, 3) if t not in triples]
    triples.update(rng.sample(pool, extra))
    return sorted(triples)  # type: ignore[arg-type]


PAIRS = sampled_pairs(KERNELS, PAPER_KINDS, SEED, partners=3)
TRIPLES = covering_triples(KERNELS, SEED, extra=5)


def test_the_cases_cover_every_kernel_of_the_library() -> None:
    from devicelab.backends.opencl.plan import KERNELS as LIBRARY

    assert KERNELS == sorted(LIBRARY)
    assert {k for p in PAIRS for k in p} == set(LIBRARY)
    assert {k for t in TRIPLES for k in t} == set(LIBRARY)
    assert all(len(set(t)) == 3 for t in TRIPLES)


LAYOUTS = ("packed", "paper")


def items(case) -> int:
    """The work-items of a case's logical range (its part, linearised, in the packed layout)."""
    return math.prod(case.sub.global_size)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_every_pair_fused_matches_sequential(library, check_fused, pair, layout) -> None:
    cases = [library[k] for k in pair]
    rounded = check_fused(cases, layout=layout)
    assert rounded.fused.rounded and all(o % u == 0 for o, u in zip(rounded.fused.offsets, rounded.fused.units))
    touching = check_fused(cases, round_to_wave=False, layout=layout)
    first = items(cases[0]) if layout == "packed" else cases[0].sub.global_size[0]
    assert touching.fused.offsets[1] == first  # the parts touch: no rounding
    assert not touching.built_now  # rounding changes sizes and offsets only: the same program
    if layout == "packed":
        assert len(rounded.fused.global_size) == 1 and rounded.fused.sizes[0] == cases[0].sub.global_size


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("triple", TRIPLES, ids=["+".join(t) for t in TRIPLES])
def test_seeded_triples_fused_match_sequential(library, check_fused, triple, layout) -> None:
    cases = [library[k] for k in triple]
    big = check_fused(cases, wave_size=GPU_WAVE, layout=layout)
    assert all(u % GPU_WAVE == 0 for u in big.fused.units)
    assert big.fused.global_size[0] % GPU_WAVE == 0 and big.fused.local_size[0] == GPU_WAVE
    touching = check_fused(cases, wave_size=GPU_WAVE, round_to_wave=False, layout=layout)
    sizes = [items(c) for c in cases] if layout == "packed" else triple_sizes(cases)
    assert touching.fused.offsets == (0, sizes[0], sizes[0] + sizes[1])


def triple_sizes(cases) -> list[int]:
    return [c.sub.global_size[0] for c in cases]


@pytest.mark.parametrize("kernel,n", [("conv2d_1x1", 3), ("depthwise_conv2d", 2)])
def test_identical_kernels_fused(found, library, check_fused, kernel, n) -> None:
    """Figure 9's experiment: N identical operators (the same kernel on N distinct graphs, whose
    weights and inputs differ), with and without rounding."""
    from devicelab.backends.opencl.runner import GraphRunner
    from devicelab.fusion.graph_launches import subkernels_for_graph_ops
    from devicelab.measure.inputs import make_inputs
    from tests.devicelab.fusion.conftest import LoadedCase

    extra = []
    try:
        for seed in range(1, n):
            runner = GraphRunner(found, CASES[kernel](), weight_seed=seed)
            sub = subkernels_for_graph_ops(runner)[0]
            extra.append(LoadedCase(kernel, runner, sub, make_inputs(runner.graph, seed)))
        cases = [library[kernel], *extra]
        for layout in LAYOUTS:
            for rounding in (True, False):
                result = check_fused(cases, round_to_wave=rounding, layout=layout)
                assert len(result.fused.offsets) == n and len(set(result.sequential[0].tolist())) > 1
    finally:
        for case in extra:
            case.runner.release()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_combination_is_built_once_per_device_and_layout(library, check_fused, layout) -> None:
    cases = [library["softmax"], library["transpose"]]
    first = check_fused(cases, layout=layout)
    before = len(PROGRAMS_BY_SOURCE)
    again = check_fused(cases, wave_size=GPU_WAVE, layout=layout)  # other sizes, offsets and work-group
    assert not again.built_now and len(PROGRAMS_BY_SOURCE) == before
    assert again.fused.source == first.fused.source
    assert again.fused.offsets != first.fused.offsets
    other = check_fused(cases, layout="paper" if layout == "packed" else "packed")
    assert other.fused.source != first.fused.source  # the cache keys on the source: one program per layout
    assert len(PROGRAMS_BY_SOURCE) == before + int(other.built_now)


def test_the_default_packs_every_library_kernel(library) -> None:
    """No kernel of the library tells its work-group, so packing is exact for every one of them
    and ``layout="auto"`` never falls back to the paper layout for our kernels."""
    from devicelab.fusion.fuse import fuse
    from devicelab.fusion.parse import parse_kernel

    for kernel, case in library.items():
        sub = case.sub
        assert parse_kernel(sub.source, sub.options, sub.name).group_dependence() == (), kernel
    fused = fuse([case.sub for case in library.values()], 8)
    assert fused.layout == "packed" and fused.layout_note == "" and not fused.work_group_fixed


def test_builtins_read_the_same_packed_as_alone(found, queue) -> None:
    """Table 2's packed rows on the device: probes that record every work-item built-in (and use
    the work-group ones, so their groups are kept whole) read the same fused as alone."""
    import numpy as np
    import pyopencl as cl

    from devicelab.fusion.fuse import fuse
    from devicelab.fusion.run import enqueue_launches, ready_fused, ready_subkernel
    from tests.devicelab.fusion.test_table2_on_device import FIELDS, probe, read

    unit = 2 * found.limits.wave_size
    shapes = [((21, 3), (unit, 1)), ((3 * unit + 5,), (unit,)), ((unit - 1, 2), (unit, 1))]
    probes = [probe(found, gs, local) for gs, local in shapes]
    alone = []
    for s, buf in probes:
        cl.enqueue_fill_buffer(queue, buf, np.full(1, -1, np.int32), 0, buf.size)
        enqueue_launches(queue, [ready_subkernel(found, s)])
        alone.append(read(queue, buf))
    fused = fuse([s for s, _ in probes], found.limits.wave_size, layout="packed")
    assert fused.local_size == (unit,) and fused.work_group_fixed
    assert fused.sizes[0] == (-(-21 // unit) * unit, 3)  # linearised over its launch size: whole groups per row
    for _, buf in probes:
        cl.enqueue_fill_buffer(queue, buf, np.full(1, -1, np.int32), 0, buf.size)
    enqueue_launches(queue, [ready_fused(found, fused)])
    for (s, buf), want in zip(probes, alone, strict=True):
        assert (want != -1).all(), f"{s.label}: the launch of its own left work-items out"
        np.testing.assert_array_equal(read(queue, buf).reshape(-1, FIELDS), want.reshape(-1, FIELDS), err_msg=s.label)
