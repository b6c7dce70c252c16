"""The zoo's networks that the numeric tests run: the fewest, cheapest ones whose operators, taken
together, include every operator configuration of the whole zoo.

A configuration is an operator's type with the attributes that choose a kernel's code path
(window, stride, dilation, padding pattern, dense / grouped / depthwise, ceil mode, resize mode,
equal or unequal splits, ...), not the sizes a width multiplier changes. Every configuration of
the zoo is checked by the tests; every *network* of the zoo is checked numerically by
``benchmarks/zoo_numerics.py``, which takes minutes of kernel compilation on a fresh machine.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from devicelab.graph import zoo
from devicelab.graph.ir import Graph, Operator

# Attributes that are sizes, not code paths.
_SIZES = {"out_channels", "out_features", "epsilon", "size", "scales", "shape", "value"}


def _padding(pads: list[int], kernel: list[int] | None) -> str:
    if not any(pads):
        return "none"
    half = len(pads) == 4 and kernel is not None and pads[:2] == pads[2:] and pads[:2] == [k // 2 for k in kernel]
    if half:
        return "half"
    return "symmetric" if pads[: len(pads) // 2] == pads[len(pads) // 2 :] else "asymmetric"


def _window(kernel: Any) -> str:
    """A window's shape; one past 7 (a global window written as a pool) is 'large'."""
    return "large" if max(kernel) > 7 else str(kernel)


def configuration(graph: Graph, op: Operator) -> tuple[str, ...]:
    """The code-path attributes of one operator, as a hashable key."""
    a = op.attrs
    key = [op.type]
    for name in sorted(a):
        value = a[name]
        if name in _SIZES:
            continue
        if name == "kernel":
            key.append(f"kernel={_window(value)}")
        elif name == "pads":
            key.append(f"pads={_padding(list(value), a.get('kernel'))}")
        elif name == "groups":
            channels = graph.input_shapes(op)[0][1]
            key.append("groups=" + ("dense" if value == 1 else "depthwise" if value == channels else "grouped"))
        elif name == "sizes":
            key.append("split=" + ("equal" if len(set(value)) == 1 else "unequal"))
        elif name == "stride" and "kernel" in a and max(a["kernel"]) > 7:
            key.append("stride=window")
        else:
            key.append(f"{name}={value}")
    return tuple(key)


@functools.cache
def representatives() -> tuple[str, ...]:
    """Zoo names whose operators cover every configuration of the zoo, chosen greedily by new
    configurations per square root of MACs (so a cheap network is preferred), in name order."""
    configurations: dict[str, set[tuple[str, ...]]] = {}
    macs: dict[str, int] = {}
    for name in sorted(zoo.entries()):
        graph = zoo.build(name)
        configurations[name] = {configuration(graph, op) for op in graph.operators}
        macs[name] = graph.macs
    left = set().union(*configurations.values())
    chosen: list[str] = []
    while left:
        best = max(
            (n for n in configurations if n not in chosen),
            key=lambda n: (len(configurations[n] & left) / math.sqrt(macs[n] + 10**7), n),
        )
        chosen.append(best)
        left -= configurations[best]
    return tuple(sorted(chosen))
