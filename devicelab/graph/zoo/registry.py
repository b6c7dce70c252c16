"""The zoo's registry: each family module registers its builders here with a decorator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph


@dataclass(frozen=True)
class ZooEntry:
    """One zoo model: how to build it and the published numbers it must match."""

    name: str
    family: str
    input_shape: tuple[int, ...]
    build: Callable[[], Graph]
    reference_params: int  # published parameter count
    reference_macs: int | None  # published multiply-adds, where the source gives them
    source: str  # where the reference numbers come from
    table1: bool = False  # one of the six networks of ParallelFusion's Table 1
    top1: float | None = None  # published ImageNet top-1 accuracy (%), where the source gives it
    top5: float | None = None  # published ImageNet top-5 accuracy (%)
    accuracy_source: str = ""  # where the accuracy numbers come from


_ENTRIES: dict[str, ZooEntry] = {}


def register(
    name: str,
    family: str,
    input_shape: tuple[int, ...],
    *,
    params: int,
    macs: int | None,
    source: str,
    table1: bool = False,
    top1: float | None = None,
    top5: float | None = None,
    accuracy_source: str = "",
) -> Callable[[Callable[[], Graph]], Callable[[], Graph]]:
    """Decorator: add a zero-argument graph builder to the zoo under ``name``."""
    if (top1 is not None or top5 is not None) and not accuracy_source:
        raise ValueError(f"zoo model {name!r}: published accuracy needs its accuracy_source")

    def wrap(fn: Callable[[], Graph]) -> Callable[[], Graph]:
        if name in _ENTRIES:
            raise ValueError(f"zoo model {name!r} is registered twice")
        _ENTRIES[name] = ZooEntry(
            name, family, input_shape, fn, params, macs, source, table1, top1, top5, accuracy_source
        )
        return fn

    return wrap


def entries() -> dict[str, ZooEntry]:
    """All registered zoo models by name."""
    return dict(_ENTRIES)


def build(name: str) -> Graph:
    """Build one zoo model's graph."""
    try:
        entry = _ENTRIES[name]
    except KeyError:
        raise GraphError(f"no zoo model named {name!r}; `latencylab zoo list` shows them") from None
    graph = entry.build()
    graph.name = name
    return graph
