"""A fused kernel computes what its sub-kernels compute run one after another (issue 20, item 2):
every kernel of the library in every pair, in seeded triples that cover every kernel, identical
kernels fused N at a time, with the device's wave size and a GPU-sized one, rounding on and off.

Every work size of the library cases is odd or smaller than a wave, so rounding pads every part
and, without rounding, every boundary between two parts falls inside a work-group."""

from __future__ import annotations

import itertools
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
            pairs.update(tuple(sorted((k, other))) for other in rng.sample([o for o in kernels if o != k], partners))
    return sorted(pairs)  # type: ignore[arg-type]


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


@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_every_pair_fused_matches_sequential(library, check_fused, pair) -> None:
    cases = [library[k] for k in pair]
    rounded = check_fused(cases)
    assert rounded.fused.rounded and all(o % u == 0 for o, u in zip(rounded.fused.offsets, rounded.fused.units))
    packed = check_fused(cases, round_to_wave=False)
    assert packed.fused.offsets[1] == cases[0].sub.global_size[0]  # the parts touch: no rounding
    assert not packed.built_now  # rounding changes sizes and offsets only: the same program


@pytest.mark.parametrize("triple", TRIPLES, ids=["+".join(t) for t in TRIPLES])
def test_seeded_triples_fused_match_sequential(library, check_fused, triple) -> None:
    cases = [library[k] for k in triple]
    big = check_fused(cases, wave_size=GPU_WAVE)
    assert all(u % GPU_WAVE == 0 for u in big.fused.units)
    assert big.fused.global_size[0] % GPU_WAVE == 0 and big.fused.local_size[0] == GPU_WAVE
    packed = check_fused(cases, wave_size=GPU_WAVE, round_to_wave=False)
    assert packed.fused.offsets == (0, triple_sizes(cases)[0], sum(triple_sizes(cases)[:2]))


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
        for rounding in (True, False):
            result = check_fused(cases, round_to_wave=rounding)
            assert len(result.fused.offsets) == n and len(set(result.sequential[0].tolist())) > 1
    finally:
        for case in extra:
            case.runner.release()


def test_a_combination_is_built_once_per_device(library, check_fused) -> None:
    cases = [library["softmax"], library["transpose"]]
    first = check_fused(cases)
    before = len(PROGRAMS_BY_SOURCE)
    again = check_fused(cases, wave_size=GPU_WAVE)  # other sizes, offsets and work-group
    assert not again.built_now and len(PROGRAMS_BY_SOURCE) == before
    assert again.fused.source == first.fused.source
    assert again.fused.offsets != first.fused.offsets
