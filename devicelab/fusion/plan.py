"""The fusion planner: which independent kernels of one or more graphs to launch fused together
(beyond seed paper 000: its section 7 asks for "a policy that maximizes the end-to-end throughput
to group independent operators").

**The kernels** are the planned kernels of each graph, as its ``GraphRunner`` launches them
(``PlanKernel``), in one valid topological order over every graph: round-robin over the graphs
(``interleave``), each graph in its own launch order. Each kernel names the earlier kernels it
must follow (``after``). Within a graph they come from the buffers the kernels touch
(``buffer_dependencies``: it reads what an earlier one writes, or writes what an earlier one reads
or writes), so a buffer that two tensors share, or that several kernels write (a concat's parts),
orders them too. Kernels of different graphs share no buffer and are independent.

**Steps.** A kernel is *ready* once every kernel it follows has run. Two ready kernels never
depend on each other, so any set of them may be fused. Each step of a schedule is one launch: a
ready kernel alone, or a group of ready kernels fused (``PlanStep``). Three schedules:

* ``plan_sequential``: every kernel alone, in the interleaved order (the reference);
* ``plan_fusion`` (the planner): a greedy list schedule. At each step it predicts, for every group
  of 2 to ``max_group`` ready kernels, the time of its fused launch and of its kernels launched
  alone (``plan_model``: a sweep's measured throughput for the group's kinds where there is one,
  the latency model where not; the fused launch's padding as the fuser lays the group out,
  ``padding_of``, else as the paper's layout would), and launches the group that saves the most
  predicted time, if the fuser accepts it (``accept``). A group predicted no faster than its kernels alone
  (throughput <= 1) is never fused. With no such group, the first ready kernel in the interleaved
  order runs alone, and the ready set is looked at again after every launch, so kernels that
  become ready later can meet kernels that waited;
* ``plan_fuse_all``: at each step every ready kernel is fused: the ready kernels in order join one
  group while the fuser accepts it, those it refuses form the next group, and so on; then the
  kernels that became ready are taken the same way.

The greedy choice is myopic: it does not wait for a kernel that would make a better group later.
The planner looks at the first ``max_ready`` ready kernels (12 by default), so a step stays cheap
with many graphs. Everything is decided from the kernels' order, so the same inputs give the same
plan. No OpenCL driver is needed here (``plan_run`` executes the schedules).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from devicelab.fusion.launch import plan_layout
from devicelab.fusion.plan_model import ALONE, MEASURED, MODEL, LatencyModel, MeasuredBenefit, MeasuredTable
from devicelab.fusion.spec import DEFAULT_MAX_GROUP

SEQUENTIAL = "sequential"
PLAN = "plan"
FUSE_ALL = "fuse_all"
STRATEGIES = (SEQUENTIAL, PLAN, FUSE_ALL)
DEFAULT_MAX_READY = 12

AcceptFn = Callable[[tuple[int, ...]], bool]  # whether the fuser takes this group of kernel indices
# the fused launch's padding and all its work-items, as the fuser lays the group out (None: refused)
PaddingFn = Callable[[tuple[int, ...]], tuple[int, int] | None]


@dataclass(frozen=True)
class PlanKernel:
    """One planned kernel of one graph, as the planner sees it."""

    index: int  # its place in the interleaved order (the plan's kernel list)
    graph: str  # the graph run it belongs to (the model's name, "#2" on a second copy)
    model: str  # the graph's (model's) name
    name: str  # the planned kernel's name (its anchor operator's, "#i" for a part)
    kernel: str  # the kernel function
    kind: str | None  # its operator kind (``kinds``), None for kernels of no kind (concat copies...)
    mflops: float
    mbytes: float  # MB it reads and writes (activations and weights)
    global_size: tuple[int, ...]  # its logical work size
    local_size: tuple[int, ...] | None
    after: tuple[int, ...] = ()  # the earlier kernels it must follow
    measured_ms: float | None = None  # its own time alone on the device, when timed

    @property
    def label(self) -> str:
        """``graph/name``, for reports."""
        return f"{self.graph}/{self.name}"

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "index": self.index,
            "graph": self.graph,
            "model": self.model,
            "name": self.name,
            "kernel": self.kernel,
            "kind": self.kind,
            "mflops": self.mflops,
            "mbytes": self.mbytes,
            "global_size": list(self.global_size),
            "local_size": None if self.local_size is None else list(self.local_size),
            "after": list(self.after),
            "measured_ms": self.measured_ms,
        }


def buffer_dependencies(accesses: Sequence[tuple[Collection[Hashable], Collection[Hashable]]]) -> list[tuple[int, ...]]:
    """For kernels in program order, each given as (buffers it reads, buffers it writes), the
    earlier kernels each one must follow: it reads a buffer an earlier one writes, or writes one
    that an earlier one reads (since its last write) or writes."""
    last_writer: dict[Hashable, int] = {}
    readers: dict[Hashable, list[int]] = {}
    out = []
    for i, (reads, writes) in enumerate(accesses):
        deps: set[int] = set()
        for b in reads:
            if b in last_writer:
                deps.add(last_writer[b])
        for b in writes:
            if b in last_writer:
                deps.add(last_writer[b])
            deps.update(readers.get(b, ()))
        deps.discard(i)
        for b in reads:
            readers.setdefault(b, []).append(i)
        for b in writes:
            last_writer[b] = i
            readers[b] = []
        out.append(tuple(sorted(deps)))
    return out


def interleave(counts: Sequence[int]) -> list[tuple[int, int]]:
    """Round-robin over graphs with these kernel counts: (graph, position) in launch order, the
    first kernel of each graph, then the second of each, and so on."""
    out: list[tuple[int, int]] = []
    for position in range(max(counts, default=0)):
        out.extend((g, position) for g, n in enumerate(counts) if position < n)
    return out


def check_kernels(kernels: Sequence[PlanKernel]) -> None:
    """``ValueError`` unless the kernels are numbered in order and each follows earlier ones only
    (the list is then a topological order)."""
    for i, k in enumerate(kernels):
        if k.index != i:
            raise ValueError(f"kernel {k.label} has index {k.index}, at position {i}")
        late = [a for a in k.after if not 0 <= a < i]
        if late:
            raise ValueError(f"kernel {k.label} follows {late}, which are not earlier kernels")


@dataclass(frozen=True)
class GroupPrediction:
    """What the planner predicts for one launch: its kernels alone against one fused launch."""

    sequential_ms: float  # the kernels launched alone, one after another
    predicted_ms: float  # this launch (fused, or the kernel alone)
    source: str  # MEASURED, MODEL or ALONE
    padding: int  # work-items of the fused launch that belong to no kernel (0 alone)
    padding_fraction: float
    measured: MeasuredBenefit | None = None

    @property
    def throughput(self) -> float:
        """Predicted throughput relative to sequential (> 1: fusing wins)."""
        return self.sequential_ms / self.predicted_ms if self.predicted_ms > 0 else float("inf")

    @property
    def saving_ms(self) -> float:
        """Predicted time saved by fusing."""
        return self.sequential_ms - self.predicted_ms


class Predictor:
    """Predictions for groups of kernels (remembered per group), from a measured table and the
    latency model (``plan_model``)."""

    def __init__(
        self,
        kernels: Sequence[PlanKernel],
        model: LatencyModel,
        measured: MeasuredTable | None,
        wave_size: int,
        round_to_wave: bool,
        padding_of: PaddingFn | None = None,
    ) -> None:
        self.kernels = kernels
        self.model = model
        self.measured = measured or MeasuredTable()
        self.wave_size = wave_size
        self.round_to_wave = round_to_wave
        self.padding_of = padding_of
        self._memo: dict[tuple[int, ...], GroupPrediction] = {}

    def kernel_ms(self, i: int) -> float:
        """A kernel's own time: measured alone where it was, else estimated."""
        k = self.kernels[i]
        return k.measured_ms if k.measured_ms is not None else self.model.estimate_ms(k.mflops, k.mbytes)

    def padding(self, group: tuple[int, ...]) -> tuple[int, int]:
        """Padding work-items and all work-items of the group's fused launch: as the fuser lays it
        out (``padding_of``), else as the paper's layout would (``launch.plan_layout``: the launch
        less every kernel's part)."""
        if self.padding_of is not None:
            laid_out = self.padding_of(group)
            if laid_out is not None:
                return laid_out
        ks = [self.kernels[i] for i in group]
        layout = plan_layout(
            [k.global_size for k in ks], [k.local_size for k in ks], self.wave_size, self.round_to_wave
        )
        total = _items(layout.global_size)
        return total - sum(_items(region) for region in layout.regions), total

    def predict(self, group: tuple[int, ...]) -> GroupPrediction:
        """The prediction for launching ``group`` (one kernel: alone; more: fused)."""
        hit = self._memo.get(group)
        if hit is not None:
            return hit
        alone = [self.kernel_ms(i) for i in group]
        sequential = sum(self.model.alone_ms(ms) for ms in alone)
        if len(group) == 1:
            pred = GroupPrediction(sequential, sequential, ALONE, 0, 0.0)
        else:
            padding, total = self.padding(group)
            measured = self.measured.lookup([self.kernels[i].kind for i in group])
            if measured is not None:
                pred = GroupPrediction(
                    sequential, sequential / measured.throughput, MEASURED, padding, padding / total, measured
                )
            else:
                fused = self.model.fused_ms(alone, padding)
                pred = GroupPrediction(sequential, fused, MODEL, padding, padding / total)
        self._memo[group] = pred
        return pred


def _items(size: Sequence[int]) -> int:
    n = 1
    for x in size:
        n *= int(x)
    return n


@dataclass(frozen=True)
class PlanStep:
    """One launch of a schedule: a kernel alone or a group fused, with its prediction."""

    index: int
    kernels: tuple[int, ...]  # indices into the plan's kernels, in the order they are fused
    ready: int  # how many kernels were ready when it was decided
    prediction: GroupPrediction

    @property
    def fused(self) -> bool:
        """Whether it fuses several kernels."""
        return len(self.kernels) > 1


@dataclass(frozen=True)
class FusionPlan:
    """A schedule of every kernel of the graphs: which run alone and which fused, in which order."""

    strategy: str  # SEQUENTIAL, PLAN or FUSE_ALL
    kernels: tuple[PlanKernel, ...]
    steps: tuple[PlanStep, ...]
    wave_size: int
    round_to_wave: bool
    max_group: int | None  # the planner's largest group (None: the fuser's limits)

    @property
    def launches(self) -> int:
        """How many launches it makes."""
        return len(self.steps)

    @property
    def fused_launches(self) -> int:
        """How many of them are fused."""
        return sum(1 for s in self.steps if s.fused)

    @property
    def predicted_ms(self) -> float:
        """The predicted device time of the whole schedule."""
        return sum(s.prediction.predicted_ms for s in self.steps)

    @property
    def sources(self) -> dict[str, int]:
        """Of the fused launches, how many were predicted from measurements and how many by the model."""
        counted = Counter(s.prediction.source for s in self.steps if s.fused)
        return {MEASURED: counted[MEASURED], MODEL: counted[MODEL]}

    def step_of(self) -> dict[int, int]:
        """Each kernel's step (its group)."""
        return {k: s.index for s in self.steps for k in s.kernels}

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (kernels are referred to by index into the comparison's list)."""
        steps = []
        for s in self.steps:
            p = s.prediction
            steps.append(
                {
                    "index": s.index,
                    "kernels": list(s.kernels),
                    "labels": [self.kernels[i].label for i in s.kernels],
                    "kinds": [self.kernels[i].kind for i in s.kernels],
                    "fused": s.fused,
                    "ready": s.ready,
                    "predicted_sequential_ms": p.sequential_ms,
                    "predicted_ms": p.predicted_ms,
                    "predicted_throughput": p.throughput,
                    "source": p.source,
                    "padding": p.padding,
                    "padding_fraction": p.padding_fraction,
                    "measured_rows": None if p.measured is None else p.measured.rows,
                }
            )
        return {
            "strategy": self.strategy,
            "launches": self.launches,
            "fused_launches": self.fused_launches,
            "kernels_fused": sum(len(s.kernels) for s in self.steps if s.fused),
            "predicted_ms": self.predicted_ms,
            "sources": self.sources,
            "max_group": self.max_group,
            "round_to_wave": self.round_to_wave,
            "steps": steps,
        }


ChooseFn = Callable[[list[int]], list[tuple[int, ...]]]


def _schedule(kernels: Sequence[PlanKernel], predictor: Predictor, choose: ChooseFn) -> list[PlanStep]:
    """Run a list schedule: ``choose`` picks one or more disjoint groups of ready kernels (in
    interleaved order) to launch next; the ready set is then brought up to date."""
    check_kernels(kernels)
    waiting = [len(set(k.after)) for k in kernels]
    followers: list[list[int]] = [[] for _ in kernels]
    for k in kernels:
        for a in set(k.after):
            followers[a].append(k.index)
    ready = sorted(k.index for k in kernels if not waiting[k.index])
    steps: list[PlanStep] = []
    while ready:
        launches = choose(list(ready))
        taken = [i for g in launches for i in g]
        if not launches or len(set(taken)) != len(taken) or not set(taken) <= set(ready):
            raise ValueError(f"a schedule chose {launches} from the ready kernels {ready}")
        count = len(ready)
        for group in launches:
            steps.append(PlanStep(len(steps), group, count, predictor.predict(group)))
        done = set(taken)
        ready = [i for i in ready if i not in done]
        for i in taken:
            for f in followers[i]:
                waiting[f] -= 1
                if not waiting[f]:
                    ready.append(f)
        ready.sort()
    if sum(len(s.kernels) for s in steps) != len(kernels):
        raise ValueError("the kernels' dependencies have a cycle")
    return steps


def plan_sequential(
    kernels: Sequence[PlanKernel],
    model: LatencyModel,
    *,
    wave_size: int,
    measured: MeasuredTable | None = None,
    round_to_wave: bool = True,
    padding_of: PaddingFn | None = None,
) -> FusionPlan:
    """Every kernel alone, in the interleaved order."""
    predictor = Predictor(kernels, model, measured, wave_size, round_to_wave, padding_of)
    steps = _schedule(kernels, predictor, lambda ready: [(ready[0],)])
    return FusionPlan(SEQUENTIAL, tuple(kernels), tuple(steps), wave_size, round_to_wave, 1)


def plan_fusion(
    kernels: Sequence[PlanKernel],
    model: LatencyModel,
    *,
    wave_size: int,
    measured: MeasuredTable | None = None,
    max_group: int = DEFAULT_MAX_GROUP,
    round_to_wave: bool = True,
    accept: AcceptFn | None = None,
    max_ready: int = DEFAULT_MAX_READY,
    padding_of: PaddingFn | None = None,
    min_throughput: float = 1.0,
) -> FusionPlan:
    """The greedy plan (see the module docstring): at each step, the accepted group of ready
    kernels with the largest predicted saving, or the first ready kernel alone. A group is fused
    only when its predicted throughput is above ``min_throughput`` (1: any predicted gain; more
    asks the gain to clear the predictions' own error)."""
    if max_group < 1 or max_ready < 1:
        raise ValueError(f"max_group and max_ready must be at least 1, not {max_group} and {max_ready}")
    if min_throughput < 1.0:
        raise ValueError(f"min_throughput must be at least 1 (never fuse a predicted loss), not {min_throughput}")
    predictor = Predictor(kernels, model, measured, wave_size, round_to_wave, padding_of)

    def choose(ready: list[int]) -> list[tuple[int, ...]]:
        looked_at = ready[:max_ready]
        candidates = []
        for size in range(2, min(max_group, len(looked_at)) + 1):
            for group in itertools.combinations(looked_at, size):
                p = predictor.predict(group)
                if p.throughput > min_throughput and p.saving_ms > 0:
                    candidates.append((-p.saving_ms, group))
        for _, group in sorted(candidates):
            if accept is None or accept(group):
                return [group]
        return [(ready[0],)]

    steps = _schedule(kernels, predictor, choose)
    return FusionPlan(PLAN, tuple(kernels), tuple(steps), wave_size, round_to_wave, max_group)


def plan_fuse_all(
    kernels: Sequence[PlanKernel],
    model: LatencyModel,
    *,
    wave_size: int,
    measured: MeasuredTable | None = None,
    round_to_wave: bool = True,
    accept: AcceptFn | None = None,
    padding_of: PaddingFn | None = None,
) -> FusionPlan:
    """Every ready kernel fused at every step, in as few groups as the fuser accepts."""
    predictor = Predictor(kernels, model, measured, wave_size, round_to_wave, padding_of)

    def choose(ready: list[int]) -> list[tuple[int, ...]]:
        out = []
        left = ready
        while left:
            group, refused = [left[0]], []
            for i in left[1:]:
                if accept is None or accept((*group, i)):
                    group.append(i)
                else:
                    refused.append(i)
            out.append(tuple(group))
            left = refused
        return out

    steps = _schedule(kernels, predictor, choose)
    return FusionPlan(FUSE_ALL, tuple(kernels), tuple(steps), wave_size, round_to_wave, None)


__all__ = [
    "DEFAULT_MAX_GROUP",
    "DEFAULT_MAX_READY",
    "FUSE_ALL",
    "PLAN",
    "SEQUENTIAL",
    "STRATEGIES",
    "AcceptFn",
    "PaddingFn",
    "FusionPlan",
    "GroupPrediction",
    "PlanKernel",
    "PlanStep",
    "Predictor",
    "buffer_dependencies",
    "check_kernels",
    "interleave",
    "plan_fuse_all",
    "plan_fusion",
    "plan_sequential",
]
