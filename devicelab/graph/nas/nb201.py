"""NAS-Bench-201 architectures as graphs: the cell string, the official macro skeleton, a sampler.

The skeleton follows the benchmark's code (D-X-Y/AutoDL-Projects, ``xautodl/models/cell_infers/
tiny_network.py`` and ``cells.py``): a 3x3 conv stem with BN; three stages of ``N`` cells with
``C``, ``2C`` and ``4C`` channels; between stages a ResNet basic block with stride 2
(ReLU-Conv3x3(s2)-BN, ReLU-Conv3x3-BN, plus a 2x2 average pool and 1x1 conv shortcut); then BN,
ReLU, global average pooling and a fully connected classifier.

A cell has nodes 0..3 (0 is the cell input, 3 its output); node j is the sum of one edge from
every earlier node, each edge one of ``OPS``: ``none`` (no edge), ``skip_connect`` (identity),
``nor_conv_1x1`` / ``nor_conv_3x3`` (ReLU-Conv-BN) and ``avg_pool_3x3`` (stride 1, pad 1, padding
not counted).

The graph holds the compute that reaches the cell's output, as an exported model runs it:

* A node with no edge from a live node is identically zero, and so are edges that leave it: they
  are dropped, as the benchmark's own ``Structure.to_unique_str(consider_zero=True)`` treats them.
  (A conv of zeros gives BN's constant shift, not zero; we drop it like the benchmark does.)
* Nodes that do not lead to the output are dropped (dead code an exporter would remove).
* A cell whose output node is zero (``Structure.check_valid()`` is false, e.g. all ``none``) is
  kept as ``mul(x, 0)``, as the benchmark's ``Zero`` op computes, so every one of the 15625 cells
  gives a valid graph whose skeleton still runs; its output does not depend on the input.

So the parameter count equals the benchmark's for every cell without dead edges, and is lower
where the benchmark's model holds convolutions whose result never reaches the output.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph

SPACE = "nb201"
OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
NUM_NODES = 4
# (target node, source node) of the six edges, in the order the string lists them.
EDGES = ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2))
NUM_CELLS = len(OPS) ** len(EDGES)  # 15625


def parse(arch: str) -> tuple[str, ...]:
    """The six edge ops of a cell string, in ``EDGES`` order; ``GraphError`` saying what is wrong."""
    if not isinstance(arch, str):
        raise GraphError(f"a NAS-Bench-201 architecture must be a string, got {type(arch).__name__}")
    text = arch.strip()
    hint = "expected e.g. '|nor_conv_3x3~0|+|skip_connect~0|none~1|+|avg_pool_3x3~0|nor_conv_1x1~1|none~2|'"
    parts = text.split("+")
    if len(parts) != NUM_NODES - 1:
        raise GraphError(
            f"architecture {arch!r} has {len(parts)} node groups separated by '+', expected {NUM_NODES - 1}; {hint}"
        )
    chosen: dict[tuple[int, int], str] = {}
    for node, part in enumerate(parts, start=1):
        if len(part) < 2 or not part.startswith("|") or not part.endswith("|"):
            raise GraphError(f"node {node} group {part!r} of {arch!r} must start and end with '|'; {hint}")
        entries = part[1:-1].split("|")
        if len(entries) != node:
            raise GraphError(
                f"node {node} group {part!r} of {arch!r} has {len(entries)} edges, expected {node} "
                f"(one from each of nodes 0..{node - 1})"
            )
        for entry in entries:
            op, sep, source = entry.partition("~")
            if not sep:
                raise GraphError(f"edge {entry!r} of node {node} in {arch!r} must be 'op~source'")
            if op not in OPS:
                raise GraphError(
                    f"edge {entry!r} of node {node} in {arch!r} has unknown op {op!r}; the ops are {list(OPS)}"
                )
            if not (source.isascii() and source.isdigit()) or int(source) >= node:
                raise GraphError(
                    f"edge {entry!r} of node {node} in {arch!r} has source {source!r}; "
                    f"it must be one of the earlier nodes 0..{node - 1}"
                )
            key = (node, int(source))
            if key in chosen:
                raise GraphError(f"node {node} of {arch!r} lists an edge from node {source} twice")
            chosen[key] = op
    return tuple(chosen[e] for e in EDGES)


def to_string(ops: Sequence[str]) -> str:
    """The canonical cell string of six edge ops in ``EDGES`` order."""
    ops = list(ops)
    if len(ops) != len(EDGES) or any(op not in OPS for op in ops):
        raise GraphError(f"a cell needs {len(EDGES)} ops from {list(OPS)}, got {ops!r}")
    groups = []
    for node in range(1, NUM_NODES):
        entries = [f"{ops[k]}~{src}" for k, (dst, src) in enumerate(EDGES) if dst == node]
        groups.append("|" + "|".join(entries) + "|")
    return "+".join(groups)


def _live_edges(ops: Sequence[str]) -> tuple[list[tuple[int, int, str]], bool]:
    """Edges (src, dst, op) that carry a nonzero value to the output; whether the output is live."""
    live = {0}
    for node in range(1, NUM_NODES):
        if any(dst == node and src in live and op != "none" for (dst, src), op in zip(EDGES, ops, strict=True)):
            live.add(node)
    out = NUM_NODES - 1
    if out not in live:
        return [], False
    needed = {out}
    for node in range(out, 0, -1):
        if node in needed:
            needed |= {
                src for (dst, src), op in zip(EDGES, ops, strict=True) if dst == node and src in live and op != "none"
            }
    edges = [
        (src, dst, op)
        for (dst, src), op in zip(EDGES, ops, strict=True)
        if op != "none" and src in live and dst in needed
    ]
    return edges, True


def _relu_conv_bn(b: GraphBuilder, x: str, cout: int, kernel: int, stride: int = 1) -> str:
    return b.bn(b.conv(b.relu(x), cout, kernel, stride=stride, bias=False))


def _cell(b: GraphBuilder, x: str, ops: Sequence[str]) -> str:
    edges, connected = _live_edges(ops)
    if not connected:
        # x * 0, as the benchmark's Zero op: the skeleton around the cell still runs.
        return b.op("mul", [x], "zero", const_shape=[1], const_value=0.0)
    value = {0: x}
    cout = b.channels(x)
    for node in range(1, NUM_NODES):
        terms = []
        for src, dst, op in edges:
            if dst != node:
                continue
            with b.scope(f"edge{src}to{dst}"):
                if op == "skip_connect":
                    terms.append(value[src])
                elif op == "nor_conv_1x1":
                    terms.append(_relu_conv_bn(b, value[src], cout, 1))
                elif op == "nor_conv_3x3":
                    terms.append(_relu_conv_bn(b, value[src], cout, 3))
                else:
                    terms.append(b.avg_pool(value[src], 3, 1, pad=1, count_include_pad=False))
        if terms:
            total = terms[0]
            for term in terms[1:]:
                total = b.add(total, term, name=f"node{node}_sum")
            value[node] = total
    return value[NUM_NODES - 1]


def _reduction(b: GraphBuilder, x: str, cout: int) -> str:
    a = _relu_conv_bn(b, x, cout, 3, stride=2)
    a = _relu_conv_bn(b, a, cout, 3)
    with b.scope("shortcut"):
        r = b.conv(b.avg_pool(x, 2, 2), cout, 1, bias=False)
    return b.add(r, a)


def _positive(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GraphError(f"{what} must be a positive integer, got {value!r}")
    return value


def from_string(
    arch: str, C: int = 16, N: int = 5, num_classes: int = 10, input_size: int = 32, name: str | None = None
) -> Graph:
    """The NAS-Bench-201 network of a cell string (defaults: the benchmark's CIFAR-10 networks)."""
    ops = parse(arch)
    _positive(C, "C")
    _positive(N, "N")
    _positive(num_classes, "num_classes")
    # The reduction block's shortcut (2x2 pool) and main path (3x3 conv, stride 2, pad 1) agree
    # on the output size only for even sizes, and there are two of them.
    if _positive(input_size, "input_size") % 4:
        raise GraphError(f"input_size must be a multiple of 4 (two stride-2 reductions), got {input_size}")
    b = GraphBuilder(name or SPACE, (1, 3, input_size, input_size))
    with b.scope("stem"):
        x = b.bn(b.conv(b.input, C, 3, bias=False))
    for stage in range(3):
        if stage:
            with b.scope(f"reduce{stage}"):
                x = _reduction(b, x, C * 2**stage)
        for i in range(N):
            with b.scope(f"stage{stage}/cell{i}"):
                x = _cell(b, x, ops)
    with b.scope("head"):
        x = b.relu(b.bn(x))
        x = b.classifier(x, num_classes)
    return b.build(x)


def sample_strings(n: int, seed: int) -> list[str]:
    """``n`` cell strings drawn uniformly over the 15625 cells (each edge's op uniform)."""
    if not isinstance(n, int) or n < 0:
        raise GraphError(f"the number of samples must be a non-negative integer, got {n!r}")
    out = []
    for i in range(n):
        # One SHA-512-seeded stream per sample: stable across runs, and a prefix of a larger draw.
        rng = random.Random(f"{SPACE}/{seed}/{i}")
        out.append(to_string([rng.choice(OPS) for _ in EDGES]))
    return out


def sample(n: int, seed: int, C: int = 16, N: int = 5, num_classes: int = 10, input_size: int = 32) -> list[Graph]:
    """``n`` networks with uniformly drawn cells, named ``nb201-<seed>-<i>``."""
    return [
        from_string(arch, C, N, num_classes, input_size, name=f"{SPACE}-{seed}-{i}")
        for i, arch in enumerate(sample_strings(n, seed))
    ]
