"""The kernels of a NAS-Bench-201 network, deduced on a network of three cells per stage.

Every network of the space is the same skeleton (stem, three stages of five copies of its cell,
two reductions, head; ``nb201_cells``). A deducer decides each kernel from the operators around
it: inside a stage, cells 1, 2 and 3 each read the output of a copy of themselves and are read
by one, so they run the same kernels. The network with three cells per stage (first, middle,
last) holds every context a cell has: its kernels, with the middle cell's run of kernels three
times, are the kernels of the five-cell network, in the same order, with the same types and
features. That is ~100 operators to build and deduce instead of ~155.

A deducer takes part when it says where each kernel sits (``sited_kernels``: the operator that
places it in the list). A kernel's name and operator indices are those of the three-cell
network, so ``cell_kernels`` serves predictions without a kernel breakdown (``batch`` sends a
breakdown through the general path). Locality is a property of a deducer's rules, and the CPU
and TFLite CPU deducers learn theirs: each deducer is compared with the general path on
``CHECK_CELLS`` (every pattern of ``none`` edges: dead nodes, edges that never reach the output,
the all-zero cell) the first time its rules are used in a process (``verified``, ~0.2 s; a server
checks a predictor when it loads it and hands the answer to its batch workers), and one that
differs is answered by the general path. A slow test of
tests/devicelab/predict/test_nb201_kernels.py (a Mali GPU) and ``benchmarks/predict_batch.py
--all-cells`` (the host CPU's learned rules and Mali) compare all 15,625 cells.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import orjson

from devicelab.graph.ir import Graph
from devicelab.graph.nas import nb201, nb201_cells
from devicelab.predict.kernels import Deducer, Kernel

log = logging.getLogger(__name__)

CELLS = 3  # per stage in the network that is deduced: first, middle, last
_MIDDLE = "/cell1/"
_LIVE_OPS = ("nor_conv_3x3", "avg_pool_3x3", "skip_connect", "nor_conv_1x1")


class SitedDeducer(Deducer, Protocol):
    """A deducer that says which operator places each kernel in its list."""

    def sited_kernels(self, graph: Graph) -> list[tuple[Kernel, int]]:
        """``kernels``, each with the operator index that places it (``len(operators)``: the end)."""
        ...


def _check_cells() -> list[tuple[str, ...]]:
    """Every pattern of ``none`` edges (the others filled with each live op in turn), and each
    op on all six edges."""
    out = []
    for n, pattern in enumerate(itertools.product((True, False), repeat=len(nb201.EDGES))):
        out.append(tuple("none" if dead else _LIVE_OPS[(n + e) % 4] for e, dead in enumerate(pattern)))
    out += [(op,) * len(nb201.EDGES) for op in _LIVE_OPS]
    return out


CHECK_CELLS = _check_cells()


def _middle_stages(graph: Graph) -> list[int]:
    """Per operator (and one more for a graph output's site): the stage whose middle cell holds
    it, or -1."""
    out = []
    for o in graph.operators:
        n = o.name  # "stage<s>/cell<i>/...": the scopes ``nb201_cells`` gives
        out.append(int(n[5]) if n.startswith("stage") and n[6:13] == _MIDDLE else -1)
    out.append(-1)
    return out


def cell_kernels(deducer: SitedDeducer, cell_ops: Sequence[str]) -> list[Kernel]:
    """The kernel types and features, in order, that ``deducer.kernels`` gives for the default-size
    network of ``cell_ops`` (names and operator indices are the three-cell network's)."""
    graph = nb201_cells.from_cell(cell_ops, cells_per_stage=CELLS)
    stage_of = _middle_stages(graph)
    repeat = nb201_cells.N - CELLS + 1
    out: list[Kernel] = []
    run: list[Kernel] = []
    run_stage = -1
    for kernel, site in deducer.sited_kernels(graph):
        stage = stage_of[site]
        if stage != run_stage:
            if run:
                out += run * repeat
                run = []
            run_stage = stage
        if stage < 0:
            out.append(kernel)
        else:
            run.append(kernel)
    out += run * repeat
    return out


def _same(a: Sequence[Kernel], b: Sequence[Kernel]) -> bool:
    return len(a) == len(b) and all(x.type == y.type and x.raw == y.raw for x, y in zip(a, b))


def agrees(deducer: SitedDeducer, cells: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """The cells of ``cells`` whose ``cell_kernels`` differ from the five-cell network's kernels."""
    return [tuple(c) for c in cells if not _same(cell_kernels(deducer, c), deducer.kernels(nb201_cells.from_cell(c)))]


_verified: OrderedDict[int, tuple[Deducer, bool]] = OrderedDict()
_by_rules: OrderedDict[bytes, bool] = OrderedDict()
_lock = threading.Lock()
_KEEP = 16


def known(deducer: Deducer) -> bool | None:
    """``verified``'s answer for ``deducer`` if it is known in this process, else None."""
    with _lock:
        hit = _verified.get(id(deducer))
    return hit[1] if hit is not None and hit[0] is deducer else None


def remember(deducer: Deducer, ok: bool) -> None:
    """Take ``verified``'s answer from the process that checked it (a batch worker is handed it)."""
    with _lock:
        _verified[id(deducer)] = (deducer, ok)
        while len(_verified) > _KEEP:
            _verified.popitem(last=False)


def _rules_key(deducer: Deducer) -> bytes | None:
    """What a deducer deduces from (its ``to_dict``, which rebuilds it), or None if it cannot say."""
    try:
        return f"{type(deducer).__qualname__}:".encode() + orjson.dumps(deducer.to_dict(), option=orjson.OPT_SORT_KEYS)
    except (TypeError, ValueError, AttributeError):
        return None


def verified(deducer: Deducer) -> bool:
    """Whether ``cell_kernels`` answers for ``deducer``: it says where its kernels sit, and it
    agreed with the general path on ``CHECK_CELLS`` (checked once per set of rules in a process,
    ~0.2 s: two loaded copies of one predictor share the answer)."""
    key = id(deducer)
    with _lock:
        hit = _verified.get(key)
        if hit is not None and hit[0] is deducer:
            _verified.move_to_end(key)
            return hit[1]
    rules = _rules_key(deducer)
    with _lock:
        same = _by_rules.get(rules) if rules is not None else None
    if same is not None:
        remember(deducer, same)
        return same
    ok = callable(getattr(deducer, "sited_kernels", None))
    if ok:
        try:
            differ = agrees(deducer, CHECK_CELLS)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a deducer that cannot deduce a cell says so on the general path
            log.warning("the %s deducer fails on NB-201 cells; they take the general path", deducer.kind, exc_info=True)
            differ = [()]
        if differ:
            log.warning(
                "the %s deducer's NB-201 kernels depend on more than a cell's neighbours (%d of %d check cells, "
                "e.g. %s); its cells take the general path",
                deducer.kind,
                len(differ),
                len(CHECK_CELLS),
                differ[0],
            )
            ok = False
    remember(deducer, ok)
    if rules is not None:
        with _lock:
            _by_rules[rules] = ok
            while len(_by_rules) > _KEEP:
                _by_rules.popitem(last=False)
    return ok


__all__ = ["CELLS", "CHECK_CELLS", "SitedDeducer", "agrees", "cell_kernels", "known", "remember", "verified"]
