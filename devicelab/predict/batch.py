"""A batch of architectures as a NAS tool sends them, answered by one predictor.

An architecture is a JSON object with a ``name`` and one of ``graph`` (graph JSON), ``nb201``
(a NAS-Bench-201 cell string) or ``onnx_base64`` (an ONNX file). ``answer_items`` reads every
one, deduces its kernels and predicts them; a bad architecture becomes an error naming its
index, its name and what is wrong, and nothing is predicted while any is unreadable. The REST
API (``server/predictors/serving.py``) answers with it, in this process or, for a large batch,
split over worker processes (``devicelab.predict.parallel``); both give the same answers.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from devicelab.graph import DEFAULT_LIMITS, Graph, GraphError, ImportLimits, graph_from_dict, load_graph
from devicelab.graph.nas import nb201, nb201_cells
from devicelab.predict import nb201_kernels
from devicelab.predict.errors import PredictorError
from devicelab.predict.kernels import Kernel
from devicelab.predict.predictor import Prediction, ScenarioPredictor, with_opaque_warning

log = logging.getLogger(__name__)

KEYS = ("graph", "nb201", "onnx_base64")

Result = dict[str, Any]
Error = dict[str, Any]


@dataclass
class Arch:
    """One architecture of a batch, read: a graph, or a NAS-Bench-201 cell."""

    index: int
    name: str
    graph: Graph | None = None
    cell: tuple[str, ...] | None = None  # NAS-Bench-201 edge ops
    kernels: list[Kernel] | None = None


def error(index: int, name: str, text: str) -> Error:
    """What the API says about one bad architecture."""
    return {"index": index, "name": name, "error": text}


def parse_item(index: int, item: Any, limits: ImportLimits = DEFAULT_LIMITS) -> Arch:
    """One architecture of a request, read within ``limits``; ``ValueError`` saying what is wrong."""
    if not isinstance(item, dict):
        raise ValueError(f"an architecture is a JSON object, not {type(item).__name__}")
    name = item.get("name", f"architecture-{index}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    given = [k for k in KEYS if k in item]
    unknown = sorted(set(item) - {"name", *KEYS})
    if unknown:
        raise ValueError(f"unknown key(s) {unknown}; an architecture has 'name' and one of graph, nb201, onnx_base64")
    if len(given) != 1:
        raise ValueError(f"give exactly one of 'graph', 'nb201', 'onnx_base64' (got {given or 'none'})")
    arch = Arch(index, name)
    try:
        if given[0] == "nb201":
            arch.cell = nb201.parse(item["nb201"])
        elif given[0] == "graph":
            if not isinstance(item["graph"], dict):
                raise ValueError(f"graph must be a graph JSON object, not {type(item['graph']).__name__}")
            arch.graph = graph_from_dict(item["graph"], limits)
        else:
            text = item["onnx_base64"]
            if not isinstance(text, str):
                raise ValueError(f"onnx_base64 must be a string, not {type(text).__name__}")
            try:
                data = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ValueError(f"onnx_base64 is not valid base64: {exc}") from None
            if not data:
                raise ValueError("onnx_base64 holds an empty file")
            arch.graph = load_graph(data, filename=f"{name}.onnx", fmt="onnx", limits=limits)
    except GraphError as exc:
        raise ValueError(f"{given[0]}: {exc}") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{given[0]}: malformed: {type(exc).__name__}: {exc}") from None
    return arch


def read_item(index: int, item: Any, limits: ImportLimits = DEFAULT_LIMITS) -> Arch | Error:
    """``parse_item``, or the error that names the architecture."""
    try:
        return parse_item(index, item, limits)
    except ValueError as exc:
        name = item.get("name") if isinstance(item, dict) else None
        return error(index, name if isinstance(name, str) else "", str(exc))
    except Exception as exc:  # noqa: BLE001 - a reader's bug must still name the architecture
        log.exception("reading architecture %s failed", index)
        return error(index, "", f"cannot be read: {type(exc).__name__}: {exc}")


def result(
    name: str,
    latency: float,
    kernels: float,
    prediction: Prediction | None = None,
    warnings: list[dict[str, Any]] | None = None,
) -> Result:
    """What the API says about one predicted architecture: its latency, its warnings (the
    prediction's, or ``warnings`` when it comes from a lookup table) and its kernels when asked."""
    out: Result = {"name": name, "latency_ms": latency, "kernels_ms": kernels, "overhead_ms": latency - kernels}
    if warnings is None:
        warnings = [w.to_dict() for w in prediction.warnings] if prediction is not None else []
    out["warnings"] = warnings
    if prediction is not None and prediction.kernels is not None:
        out["kernels"] = [
            {"name": k.name, "type": k.type, "ops": list(k.ops), "latency_ms": k.latency_ms, "model": k.model}
            for k in prediction.kernels
        ]
    return out


def answer_archs(
    p: ScenarioPredictor, archs: Sequence[Arch], breakdown: bool = False
) -> tuple[dict[int, Result], list[Error]]:
    """Deduce and predict read architectures: results by index, or the errors of those that cannot be."""
    errors: list[Error] = []
    # NB-201 cells without a breakdown: kernels from three cells per stage (``nb201_kernels``),
    # each distinct cell of the batch once
    by_cell = not breakdown and any(a.graph is None for a in archs) and nb201_kernels.verified(p.deducer)
    cell_kernels: dict[tuple[str, ...], list[Kernel]] = {}
    for a in archs:
        try:
            if a.graph is None and a.cell is not None:
                if by_cell:
                    known = cell_kernels.get(a.cell)
                    if known is None:
                        known = cell_kernels[a.cell] = nb201_kernels.cell_kernels(p.deducer, a.cell)  # type: ignore[arg-type]
                    a.kernels = known
                    continue
                a.graph = nb201_cells.from_cell(a.cell, name=a.name)
            assert a.graph is not None
            a.kernels = p.deducer.kernels(a.graph)
        except (GraphError, PredictorError) as exc:
            errors.append(error(a.index, a.name, f"cannot deduce its kernels for {p.scenario.key}: {exc}"))
    if errors:
        return {}, errors
    results: dict[int, Result] = {}
    if not archs:
        return results, errors
    predictions = p.predict_kernels(
        [a.kernels or [] for a in archs], [a.name for a in archs], breakdown=breakdown, on_missing="zero"
    )
    for a, pred in zip(archs, predictions):
        if pred.missing:
            errors.append(
                error(
                    a.index,
                    a.name,
                    f"runs kernel type(s) {list(pred.missing)} that this {p.method} predictor has no model for "
                    f"(it has {sorted(p.models)}); train it on networks that run them",
                )
            )
        pred = with_opaque_warning(pred, a.graph)
        results[a.index] = result(a.name, pred.latency_ms, pred.kernels_ms, pred)
    return results, errors


def answer_items(
    p: ScenarioPredictor,
    items: Sequence[tuple[int, Any]],
    breakdown: bool = False,
    limits: ImportLimits = DEFAULT_LIMITS,
) -> tuple[dict[int, Result], list[Error]]:
    """Read (within ``limits``), deduce and predict (index, architecture) pairs: results by index, and errors.

    Nothing is predicted while any architecture is unreadable: the errors are then those of
    reading."""
    archs: list[Arch] = []
    errors: list[Error] = []
    for index, item in items:
        read = read_item(index, item, limits)
        if isinstance(read, Arch):
            archs.append(read)
        else:
            errors.append(read)
    if errors:
        return {}, errors
    return answer_archs(p, archs, breakdown)


__all__ = ["Arch", "answer_archs", "answer_items", "error", "parse_item", "read_item", "result"]
