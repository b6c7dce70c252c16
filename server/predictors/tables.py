"""Lookup tables: a predictor's answer for every NAS-Bench-201 cell, computed once by the trainer.

NAS tools ask for thousands of NAS-Bench-201 architectures at a time. Building one such graph
and deducing its kernels costs a few milliseconds of Python, so 1,000 of them take seconds;
the space has only 15625 cells, so the trainer computes every one once after training
(``build_nb201_table``; a few minutes of one core) and the API answers them from the table. A
value is what ``ScenarioPredictor.predict_kernels`` gives for that cell's graph (the sum of its
kernel latencies); the end-to-end latency is then ``ScenarioPredictor.end_to_end(value)`` as the
predictor computes it. Cells the predictor cannot answer are NaN and go the slow way, which
reports why. Each cell's warnings (kernels outside the predictor's training range, kernels
another type's model priced: ``devicelab.predict.ranges``) are stored with the table, each
distinct warning once, so a table answer carries the warnings a computed one would.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from devicelab.graph import GraphError
from devicelab.graph.nas import nb201, nb201_cells
from devicelab.predict.errors import PredictorError
from devicelab.predict.kernels import Kernel
from devicelab.predict.predictor import ScenarioPredictor
from devicelab.predict.ranges import PredictionWarning
from server.predictors.artifacts import load_row
from server.predictors.models import ArchitectureTable, Predictor

NB201 = "nb201"
NB201_SIZE = nb201.NUM_CELLS
_BASE = len(nb201.OPS)
_OP_INDEX = {op: i for i, op in enumerate(nb201.OPS)}


def nb201_index(ops: Sequence[str]) -> int:
    """The position of a cell (its six edge ops, ``nb201.parse`` order) in the table."""
    index = 0
    for op in reversed(ops):
        index = index * _BASE + _OP_INDEX[op]
    return index


def nb201_ops(index: int) -> tuple[str, ...]:
    """The cell at a table position."""
    ops = []
    for _ in nb201.EDGES:
        index, r = divmod(index, _BASE)
        ops.append(nb201.OPS[r])
    return tuple(ops)


def compute_nb201_values(
    predictor: ScenarioPredictor,
    indices: Iterable[int] | None = None,
    chunk: int = 250,
    progress: Callable[[int, int], object] | None = None,
) -> np.ndarray:
    """Kernel-latency sums (ms) of the benchmark's networks for ``indices`` (default: every
    cell); NaN elsewhere and where the predictor has no answer."""
    return compute_nb201_table(predictor, indices, chunk, progress)[0]


def compute_nb201_table(
    predictor: ScenarioPredictor,
    indices: Iterable[int] | None = None,
    chunk: int = 250,
    progress: Callable[[int, int], object] | None = None,
) -> tuple[np.ndarray, dict[int, tuple[PredictionWarning, ...]]]:
    """``compute_nb201_values`` and the warnings of each answered cell that has any."""
    wanted = list(range(NB201_SIZE)) if indices is None else sorted(set(indices))
    values = np.full(NB201_SIZE, np.nan)
    warnings: dict[int, tuple[PredictionWarning, ...]] = {}
    for start in range(0, len(wanted), chunk):
        part = wanted[start : start + chunk]
        kept: list[int] = []
        kernel_lists: list[list[Kernel]] = []
        for i in part:
            try:
                graph = nb201_cells.from_cell(nb201_ops(i))
                kernel_lists.append(predictor.deducer.kernels(graph))
            except (GraphError, PredictorError):
                continue
            kept.append(i)
        for i, p in zip(kept, predictor.predict_kernels(kernel_lists, on_missing="zero")):
            if not p.missing:
                values[i] = p.kernels_ms
                if p.warnings:
                    warnings[i] = p.warnings
        if progress is not None:
            progress(start + len(part), len(wanted))
    return values, warnings


def encode_warnings(warnings: dict[int, tuple[PredictionWarning, ...]]) -> dict[str, Any]:
    """The cells' warnings as stored: each distinct warning once, and each distinct list of them
    with the cells that have it (a few dozen lists cover a space's 15625 cells) and, per cell, the
    predicted time of each warning's kernels (``kernels_ms``: what differs from cell to cell)."""
    distinct: dict[PredictionWarning, int] = {}
    sets: dict[tuple[int, ...], list[int]] = {}
    spent: dict[tuple[int, ...], list[list[float | None]]] = {}
    for index, found in sorted(warnings.items()):
        key = tuple(distinct.setdefault(w, len(distinct)) for w in found)
        sets.setdefault(key, []).append(index)
        spent.setdefault(key, []).append([w.kernels_ms for w in found])
    return {
        "distinct": [w.to_data() for w in distinct],
        "sets": [{"warnings": list(key), "cells": cells, "kernels_ms": spent[key]} for key, cells in sets.items()],
    }


def decode_warnings(data: Any, where: str) -> dict[int, list[dict[str, Any]]]:
    """Per cell, the warnings as the API answers them (``encode_warnings`` data), each with its
    kernels' predicted time where the table stored it (``share`` is added per answer, from the
    cell's latency); ``PredictorError`` naming ``where`` when the data is not that."""
    try:
        distinct = [PredictionWarning.from_data(d).to_dict() for d in data["distinct"]]
        cells: dict[int, list[dict[str, Any]]] = {}
        for group in data["sets"]:
            found = [distinct[i] for i in group["warnings"]]
            spent = group.get("kernels_ms")
            if spent is None:  # a table stored before the kernels' time was: no share is known
                for index in group["cells"]:
                    cells[int(index)] = found
                continue
            for index, times in zip(group["cells"], spent, strict=True):
                cells[int(index)] = [{**w, "kernels_ms": t} for w, t in zip(found, times, strict=True)]
        return cells
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise PredictorError(f"{where}: its stored warnings are malformed ({type(exc).__name__}: {exc})") from None


def build_nb201_table(
    row: Predictor,
    indices: Iterable[int] | None = None,
    progress: Callable[[int, int], object] | None = None,
) -> ArchitectureTable:
    """Compute and store a ready predictor's NAS-Bench-201 table (replacing an older one for
    the same artifact)."""
    started = time.perf_counter()
    values, warnings = compute_nb201_table(load_row(row), indices, progress=progress)
    table, _ = ArchitectureTable.objects.update_or_create(
        predictor=row,
        space=NB201,
        artifact_sha256=row.artifact_sha256,
        defaults={
            "values": values.astype("<f8").tobytes(),
            "warnings": encode_warnings(warnings),
            "computed": int(np.count_nonzero(~np.isnan(values))),
            "seconds": time.perf_counter() - started,
        },
    )
    return table


def table_values(table: ArchitectureTable) -> np.ndarray:
    """A stored table's values (read-only)."""
    values = np.frombuffer(bytes(table.values), dtype="<f8")
    if values.shape != (NB201_SIZE,):
        raise PredictorError(f"the {table.space} table #{table.pk} holds {values.size} values, not {NB201_SIZE}")
    return values


__all__ = [
    "NB201",
    "NB201_SIZE",
    "build_nb201_table",
    "compute_nb201_table",
    "compute_nb201_values",
    "decode_warnings",
    "encode_warnings",
    "nb201_index",
    "nb201_ops",
    "table_values",
]
