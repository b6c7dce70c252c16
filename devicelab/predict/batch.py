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
from devicelab.predict.ranges import warning_share

log = logging.getLogger(__name__)

KEYS = ("graph", "nb201", "onnx_base64")
# The NAS-Bench-201 space's other settings an ``nb201`` architecture may give: (the benchmark's
# value, smallest, largest). A cell at the benchmark's values is answered by the fast paths (a
# lookup table, ``nb201_kernels``); another variant is built as a graph and deduced whole. The
# bounds keep one request's graph within what a request may cost; a larger variant goes as graph JSON.
NB201_SETTINGS: dict[str, tuple[int, int, int]] = {
    "channels": (16, 1, 256),
    "cells_per_stage": (5, 1, 20),
    "resolution": (32, 8, 512),
    "classes": (10, 1, 10000),
}

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
    unknown = sorted(set(item) - {"name", *KEYS, *NB201_SETTINGS})
    if unknown:
        raise ValueError(
            f"unknown key(s) {unknown}; an architecture has 'name' and one of graph, nb201, onnx_base64 "
            f"(an nb201 one may add {', '.join(NB201_SETTINGS)})"
        )
    if len(given) != 1:
        raise ValueError(f"give exactly one of 'graph', 'nb201', 'onnx_base64' (got {given or 'none'})")
    settings = {k: item[k] for k in NB201_SETTINGS if k in item}
    if settings and given[0] != "nb201":
        raise ValueError(f"{', '.join(settings)} go with an nb201 architecture, not with {given[0]}")
    arch = Arch(index, name)
    try:
        if given[0] == "nb201":
            arch.cell = nb201.parse(item["nb201"])
            variant = nb201_variant(settings)
            if variant is not None:
                # another variant of the space: no table or three-cell shortcut holds its kernels
                arch.graph = nb201.from_string(nb201.to_string(arch.cell), name=name, **variant)
                arch.cell = None
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


def nb201_variant(settings: dict[str, Any]) -> dict[str, int] | None:
    """``nb201.from_string``'s arguments for an architecture's space settings, or None when they
    are the benchmark's own; ``ValueError`` for a setting that is not a whole number within
    ``NB201_SETTINGS``'s bounds (saying that such a variant goes as graph JSON)."""
    values = {}
    for key, (default, low, high) in NB201_SETTINGS.items():
        value = settings.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{key} must be a whole number, not {value!r}")
        if not low <= value <= high:
            raise ValueError(
                f"{key}={value} is outside {low}..{high}, what an nb201 architecture may ask; "
                "send such a variant of the space as graph JSON (devicelab.graph.nas.nb201.from_string builds it)"
            )
        values[key] = value
    if all(values[k] == d for k, (d, _, _) in NB201_SETTINGS.items()):
        return None
    return {
        "C": values["channels"],
        "N": values["cells_per_stage"],
        "input_size": values["resolution"],
        "num_classes": values["classes"],
    }


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
        warnings = [w.to_dict(latency) for w in prediction.warnings] if prediction is not None else []
    else:  # a lookup table's: each warning's share of this latency, from its kernels' time
        warnings = [{**w, "share": warning_share(w.get("kernels_ms"), latency)} for w in warnings]
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


def warning_summary(results: Sequence[Result]) -> dict[str, Any]:
    """A request's warnings at a glance: how many architectures have any and, per code and
    kernel type, how many have it and the largest share of a predicted latency it concerns (and,
    out of the training range, the farthest factor outside it)."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    warned = 0
    for r in results:
        found = r.get("warnings") or []
        warned += bool(found)
        for w in found:
            g = groups.setdefault(
                (w["code"], w["kernel_type"]),
                {"code": w["code"], "kernel_type": w["kernel_type"], "architectures": 0, "largest_share": None},
            )
            g["architectures"] += 1
            share = w.get("share")
            if share is not None and (g["largest_share"] is None or share > g["largest_share"]):
                g["largest_share"] = share
            factors = [f["factor"] for f in w.get("outside") or () if f.get("factor") is not None]
            if factors:
                g["largest_factor"] = max([g.get("largest_factor") or 0.0, *factors])
    shares = [g["largest_share"] for g in groups.values() if g["largest_share"] is not None]
    return {
        "architectures": len(results),
        "with_warnings": warned,
        "largest_share": max(shares) if shares else None,
        "by_kind": sorted(groups.values(), key=lambda g: (g["code"], g["kernel_type"])),
    }


__all__ = [
    "NB201_SETTINGS",
    "Arch",
    "answer_archs",
    "answer_items",
    "error",
    "nb201_variant",
    "parse_item",
    "read_item",
    "result",
    "warning_summary",
]
