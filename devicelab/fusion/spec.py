"""What a fusion experiment takes, declared once (``devicelab.spec``): a sweep's ``SweepSpec`` and
a plan's ``PlanOptions``, with the names they choose from (operator kinds, layouts, precisions).

The API's request bodies (``server.fusion.api.requests``) and ``latencylab fusion``'s flags are
derived from these declarations. This module imports nothing heavy (no numpy, no pyopencl): the
command line builds its parser from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from devicelab import spec as declared
from devicelab.backends.profile_settings import MAX_RUNS, MAX_WARMUP_RUNS
from devicelab.spec import MAX_SEED, Items, setting

OPENCL = "opencl"  # the device kind fusion runs on
PRECISIONS = ("fp32", "fp16")
# The operator kinds (devicelab.fusion.kinds says what each is), in the paper's order, then ours.
KINDS: tuple[str, ...] = ("C", "C_1x1", "S", "P", "DWC", "DWC_s1", "FC", "EW")
# The fused layouts (devicelab.fusion.launch): the paper's, packed, or packed where exact.
PAPER = "paper"
PACKED = "packed"
AUTO = "auto"
LAYOUTS = (AUTO, PACKED, PAPER)  # what ``fuse`` takes as ``layout``


def kind_order(kind: str) -> int:
    """Where a kind sorts (the paper's order, then ours)."""
    return KINDS.index(kind)


def check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """Known kinds in the canonical order, without repeats; ``ValueError`` naming unknown ones."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown operator kinds {unknown}; the kinds are {list(KINDS)}")
    return tuple(sorted(set(kinds), key=kind_order))


# Bounds of a sweep, whoever asks for one (the API, a benchmark): past them a sweep would hold
# its device for days. The most operators one fused kernel takes here: figure 9 fuses up to 8
# identical operators, figure 8 pairs and triples.
MAX_FUSED = 8
MAX_REPRESENTATIVES = 64
MAX_INSTANCES = 32
MAX_COMBINATIONS = 100_000
MAX_WAVE_SIZE = 4096


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep measures and how (``devicelab.fusion.sweep`` says how it runs); each field declared once, with
    its bounds and help, for the API's request body too (``devicelab.spec``)."""

    sizes: tuple[int, ...] = setting(
        (2, 3),
        items=Items(ge=1, le=MAX_FUSED),
        max_items=MAX_FUSED,
        unique=True,
        help="How many operators a combination of kinds fuses (default [2, 3]: figure 8's pairs and triples); "
        "[] skips the combinations.",
    )
    kinds: tuple[str, ...] = setting(
        KINDS,
        items=Items(choices=KINDS),
        min_items=1,
        unique=True,
        help="The operator kinds to combine (default: all eight). C, C_1x1, S (squeeze), P (pooling), DWC "
        "(depthwise, stride > 1), DWC_s1, FC, EW (element-wise).",
    )
    repeats: bool = setting(True, help="A kind may appear more than once in a combination (default true: C+C).")
    representatives: int = setting(3, ge=1, le=MAX_REPRESENTATIVES, help="Operators drawn per kind.")
    instances: int = setting(1, ge=1, le=MAX_INSTANCES, help="Operator draws per combination of kinds.")
    max_combinations: int | None = setting(
        None,
        ge=1,
        le=MAX_COMBINATIONS,
        help="Per size; more are sampled with the seed, and the result says so (default null: all).",
    )
    identical_counts: tuple[int, ...] = setting(
        tuple(range(1, 9)),
        items=Items(ge=1, le=MAX_FUSED),
        max_items=MAX_FUSED,
        unique=True,
        help="Figure 9's N identical operators fused (default 1..8); [] skips that experiment.",
    )
    identical_per_model: int = setting(1, ge=0, le=MAX_INSTANCES, help="Operators per network for figure 9.")
    warmup: int = setting(5, ge=0, le=MAX_WARMUP_RUNS, help="Rounds dropped (the paper: 5 warm-up iterations).")
    runs: int = setting(30, ge=1, le=MAX_RUNS, help="Rounds kept (the paper averages 100 inferences).")
    rounding: tuple[bool, ...] = setting(
        (True, False),
        min_items=1,
        max_items=2,
        unique=True,
        flag="",
        help="Fused variants: rounded to the wave (true), not rounded (false); default [true, false].",
    )
    layouts: tuple[str, ...] = setting(
        (AUTO,),
        items=Items(choices=LAYOUTS),
        min_items=1,
        max_items=len(LAYOUTS),
        unique=True,
        help="Fused layouts, each with every rounding (default [auto]): paper (parts side by side along "
        "dimension 0, spanning the largest extent in the others: section 4.2), packed (each part's whole range "
        "linearised in one dimension: no padding across dimensions), auto (packed where exact, else paper).",
    )
    wave_size: int | None = setting(
        None, ge=1, le=MAX_WAVE_SIZE, help="Override the device's wave size (default null: the device query's)."
    )
    time_budget_s: float | None = setting(
        None,
        ge=0,
        flag="--time-budget",
        help="Stop starting new sets after this many seconds (a seeded sample, said so); default and maximum "
        "on the server: LATENCYLAB_TASK_TIME_LIMIT less 300 s.",
    )
    seed: int = setting(0, ge=0, le=MAX_SEED, help="Seeds the draws of operators and the measuring order.")

    def __post_init__(self) -> None:
        declared.check(self)
        if not self.sizes and not self.identical_counts:
            raise ValueError(
                "a sweep measures combinations (sizes) or identical operators (identical_counts); both are empty"
            )
        object.__setattr__(self, "kinds", check_kinds(self.kinds))  # the canonical order

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return declared.as_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepSpec:
        """The spec from plain data (keys left out take their defaults); ``ValueError`` for an
        unknown key or a value that cannot run (``SpecError`` names the field)."""
        return declared.from_dict(cls, data, "spec")


DEFAULT_MAX_GROUP = 3  # the planner's largest group unless a plan says otherwise


@dataclass(frozen=True)
class PlanOptions:
    """How a plan groups kernels and how its three strategies (sequential, the plan, fuse-all) are
    timed (``devicelab.fusion.plan_run.compare_plan``); each option declared once."""

    max_group: int = setting(DEFAULT_MAX_GROUP, ge=2, le=MAX_FUSED, help="Most kernels fused into one launch.")
    warmup: int = setting(5, ge=0, le=MAX_WARMUP_RUNS, help="Rounds dropped per strategy.")
    runs: int = setting(30, ge=1, le=MAX_RUNS, help="Rounds kept per strategy.")
    round_to_wave: bool = setting(True, flag="--round", help="Round fused parts to the wave (section 4.2).")

    def __post_init__(self) -> None:
        declared.check(self)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return declared.as_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanOptions:
        """The options from plain data (keys left out take their defaults); ``ValueError`` for an
        unknown key, ``devicelab.spec.SpecError`` naming a value its declaration refuses."""
        return declared.from_dict(cls, data, "option")


__all__ = [
    "AUTO",
    "DEFAULT_MAX_GROUP",
    "KINDS",
    "LAYOUTS",
    "MAX_COMBINATIONS",
    "MAX_FUSED",
    "MAX_INSTANCES",
    "MAX_REPRESENTATIVES",
    "MAX_WAVE_SIZE",
    "OPENCL",
    "PACKED",
    "PAPER",
    "PRECISIONS",
    "PlanOptions",
    "SweepSpec",
    "check_kinds",
    "kind_order",
]
