"""NAS search spaces as graph samplers: the latency paper's synthetic space and NAS-Bench-201."""

from __future__ import annotations

from collections.abc import Callable

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph
from devicelab.graph.nas import nb201, synthetic

SAMPLERS: dict[str, Callable[[int, int], list[Graph]]] = {
    synthetic.SPACE: synthetic.sample,
    nb201.SPACE: nb201.sample,
}
SPACES = tuple(SAMPLERS)


def sample(space: str, n: int, seed: int) -> list[Graph]:
    """``n`` graphs drawn uniformly from a named space (``synthetic`` or ``nb201``) with ``seed``."""
    try:
        sampler = SAMPLERS[space]
    except (KeyError, TypeError):
        raise GraphError(f"unknown NAS space {space!r}; the spaces are {list(SPACES)}") from None
    return sampler(n, seed)


__all__ = ["SPACES", "nb201", "sample", "synthetic"]
