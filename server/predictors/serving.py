"""Answering predictions: which predictor, loading it once per process, and a batch of architectures.

A request names a predictor, or a device (then the device's best predictor the team may use
answers, optionally of one method: the rankable one with the lowest end-to-end MAPE, or, when
the device has no rankable one, the lowest-MAPE unranked one, and the answer says so). Every
answer names the predictor (id, version), its test MAPE and whether it is rankable, and every
architecture's result carries its warnings (``devicelab.predict.ranges``). The loaded ``ScenarioPredictor`` is
kept per process, keyed by row id, artifact SHA-256 and lookup table, so a request reads one
small row and parses no artifact. Loading checks the artifact and the row's digest of it
(``artifacts.load_row``): a predictor that cannot be loaded answers 409 with the reason, never
a number.

Architectures come as graph JSON, NAS-Bench-201 cell strings or base64 ONNX files. Every one
is checked before anything is predicted; a bad one fails the whole batch with its index, name
and what is wrong. NAS-Bench-201 cells are answered from the predictor's lookup table when it
has one (``tables``), the rest by building the graph, deducing its kernels and predicting them.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import OuterRef, QuerySet, Subquery

from devicelab.graph.nas import nb201, nb201_cells
from devicelab.predict import nb201_kernels
from devicelab.predict.batch import Arch, answer_items, read_item, result, warning_summary
from devicelab.predict.errors import PredictorError
from devicelab.predict.parallel import BatchPool
from devicelab.predict.predictor import ScenarioPredictor
from server.accounts.models import Team
from server.devices.models import Device
from server.networks.services import import_limits
from server.predictors.artifacts import load_row
from server.predictors.models import ArchitectureTable, Predictor, PredictorState, rank_reason
from server.predictors.tables import NB201, decode_warnings, nb201_index, table_values

log = logging.getLogger(__name__)

CACHE_SIZE = 16


class PredictorNotFound(Exception):
    """No such predictor or device for this team (the API answers 404)."""


class PredictorUnavailable(Exception):
    """Nothing can answer: no ready predictor, or one that cannot be loaded (the API answers 409)."""


class ArchitectureErrors(Exception):
    """Some architectures of a batch are bad; ``errors`` says which and why (the API answers 400)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} architecture(s) cannot be predicted")
        self.errors = errors


# How the answering predictor was chosen (``describe``'s ``chosen_as``).
NAMED = "named"  # the request named it
BEST = "best"  # the device's best: rankable, lowest end-to-end MAPE
UNRANKED = "unranked"  # the device has no rankable predictor: its lowest-MAPE unranked one


@dataclass(frozen=True)
class LoadedPredictor:
    """A ready predictor as it answers: the row's identity and test figures, the predictor, its
    NB201 table and the warnings of the table's cells."""

    id: int
    version: int
    method: str
    device_id: int
    scenario: dict[str, Any]
    predictor: ScenarioPredictor
    nb201: np.ndarray | None
    artifact_sha256: str = ""
    e2e_mape: float | None = None
    n_test: int = 0
    nb201_warnings: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def describe(self, chosen_as: str = NAMED) -> dict[str, Any]:
        """What the API says answered: which predictor, its test MAPE and whether it is rankable."""
        reason = rank_reason(PredictorState.READY, self.n_test, self.e2e_mape)
        return {
            "id": self.id,
            "version": self.version,
            "method": self.method,
            "device": self.device_id,
            "scenario": self.scenario,
            "e2e_mape": self.e2e_mape,
            "n_test": self.n_test,
            "rankable": not reason,
            "rank_reason": reason,
            "chosen_as": chosen_as,
        }


def chosen_as(row: Predictor, named: bool) -> str:
    """``NAMED``, ``BEST`` or ``UNRANKED``: how ``resolve`` came to ``row``."""
    if named:
        return NAMED
    return UNRANKED if row.rank_reason else BEST


_cache: OrderedDict[tuple[int, str, int | None], LoadedPredictor] = OrderedDict()
_lock = threading.Lock()


_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False
_gc_last_pass = 0.0  # time.monotonic() of the last collection made while paused or when pausing
# With threaded web workers, overlapping prediction requests could keep the collector paused for
# as long as predictions keep coming, and cycles made by every other request would pile up: a
# request that ends while others still hold the pause runs one pass if the last was this long ago.
MAX_GC_PAUSE_SECONDS = 10.0
# A body smaller than this (a NAS loop's few cells) is answered with the collector on: its pause
# would save nothing, and under many such requests at once (20 clients on 8 threads) the pauses
# overlapped, the collector stayed off for every request of the process, and the collections that
# finally ran were the long ones (api_under_load.py: a worker stopped up to 0.2 s at a time).
GC_PAUSE_MIN_BYTES = 32 * 1024


@contextmanager
def gc_paused(body_bytes: int | None = None) -> Iterator[None]:
    """No cyclic garbage collection while a batch is read and predicted (a request body of
    ``body_bytes``, when known, of at least ``GC_PAUSE_MIN_BYTES``; else nothing changes).

    A batch of 1,000 graphs builds a few million small objects that all stay alive until the
    answer is sent; every collection pass walks all of them, and with the collector on, reading
    such a batch takes twice as long. Nothing in a batch forms reference cycles that must be
    freed early; reference counting frees it all when the request ends. Nested and concurrent
    pauses (threads of one process) re-enable the collector only when the last one ends."""
    global _gc_pauses, _gc_was_enabled, _gc_last_pass
    if body_bytes is not None and body_bytes < GC_PAUSE_MIN_BYTES:
        yield
        return
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            _gc_last_pass = time.monotonic()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        collect = False
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()
            elif _gc_pauses > 0 and _gc_was_enabled and time.monotonic() - _gc_last_pass > MAX_GC_PAUSE_SECONDS:
                _gc_last_pass = time.monotonic()
                collect = True
        if collect:  # outside the lock: a pass over a big batch takes a while
            gc.collect()


def clear_cache() -> None:
    """Forget every loaded predictor of this process."""
    with _lock:
        _cache.clear()


def _light(rows: QuerySet[Predictor]) -> QuerySet[Predictor]:
    """Rows without their large JSON, with the id of their current NB201 table (one that stores its
    cells' warnings: an older one is not used, its cells are computed)."""
    table = ArchitectureTable.objects.filter(
        predictor=OuterRef("pk"), space=NB201, artifact_sha256=OuterRef("artifact_sha256"), warnings__isnull=False
    ).values("pk")[:1]
    return rows.defer("artifact", "evaluation", "meta").annotate(nb201_table_id=Subquery(table))


def loaded(row: Predictor) -> LoadedPredictor:
    """The loaded predictor of a ready row (from ``resolve``), from this process's cache if it can."""
    table_id = getattr(row, "nb201_table_id", None)
    key = (row.pk, row.artifact_sha256, table_id)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    full = Predictor.objects.get(pk=row.pk)
    try:
        predictor = load_row(full)
        values = None
        warnings: dict[int, list[dict[str, Any]]] = {}
        if table_id is not None:
            table = ArchitectureTable.objects.get(pk=table_id)
            values = table_values(table)
            warnings = decode_warnings(table.warnings, f"the {table.space} table #{table.pk}")
    except PredictorError as exc:
        raise PredictorUnavailable(str(exc)) from None
    entry = LoadedPredictor(
        full.pk,
        full.version,
        full.method,
        full.device_id,
        full.scenario,
        predictor,
        values,
        full.artifact_sha256,
        full.e2e_mape,
        full.n_test,
        warnings,
    )
    # the batch workers start now, beside this request, not on the first large batch, and the
    # predictor's NB-201 kernels are checked against the general path (``nb201_kernels``, ~0.3 s)
    threading.Thread(target=batch_pool().start, name="batch-pool-start", daemon=True).start()
    threading.Thread(
        target=nb201_kernels.verified, args=(predictor.deducer,), name="nb201-kernels-check", daemon=True
    ).start()
    with _lock:
        for old in [k for k in _cache if k[0] == row.pk]:
            del _cache[old]
        _cache[key] = entry
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return entry


def resolve(
    team: Team,
    device_id: int | None = None,
    predictor_id: int | None = None,
    method: str | None = None,
    backend: str | None = None,
) -> Predictor:
    """The ready predictor that answers for ``team``: the one named, else the device's best
    (optionally of one ``method`` and one scenario ``backend``, e.g. ``tflite_gpu``): rankable
    ones first (``PredictorQuerySet.best_first``), so an unranked one answers only when the
    device has no rankable one (``chosen_as`` tells which)."""
    visible = _light(Predictor.objects.visible_to(team))
    if predictor_id is not None:
        row = visible.filter(pk=predictor_id).first()
        if row is None:
            raise PredictorNotFound(f"there is no predictor #{predictor_id} (GET /api/predictors/)")
        if device_id is not None and row.device_id != device_id:
            raise ValidationError({"predictor": f"predictor #{predictor_id} is not a predictor of device #{device_id}"})
        if method is not None and row.method != method:
            raise ValidationError({"method": f"predictor #{predictor_id} is a {row.method} predictor, not {method}"})
        if row.state != PredictorState.READY:
            why = f": {row.failure_reason}" if row.failure_reason else ""
            raise PredictorUnavailable(f"predictor #{predictor_id} is {row.state}{why}")
        return row
    if device_id is None:
        raise ValidationError({"device": "give a device or a predictor"})
    device = Device.objects.filter(pk=device_id).first()
    if device is None:
        raise PredictorNotFound(f"there is no device #{device_id} (GET /api/devices/)")
    ready = Predictor.objects.visible_to(team).ready().filter(device=device)
    if method is not None:
        ready = ready.filter(method=method)
    if backend is not None:
        ready = ready.filter(scenario__backend=backend)
    row = _light(ready.best_first()).first()
    if row is None:
        which = "".join(f"{x} " for x in (method, backend) if x)
        raise PredictorUnavailable(
            f"device {device.name!r} (#{device.pk}) has no ready {which}predictor you can use; "
            "train one with POST /api/predictors/"
        )
    return row


# -- a process's start ---------------------------------------------------------------------------

WARM_PREDICTORS = 4  # ready predictors a web process loads when it starts


def warm_up(load_predictors: bool = True) -> None:
    """Pay now what the first prediction of a process would: the worker processes that share a
    large batch are started and, in a background thread, the best ready predictor of each of the
    (at most ``WARM_PREDICTORS``) most recently trained devices is loaded from its row (gunicorn's
    ``post_worker_init`` calls this). Without it the first request of a web process waited
    for all of it. Nothing here can fail a start: a predictor that cannot be loaded is left to
    its first request, which answers why."""
    nb201_cells.from_cell(("none",) * len(nb201.EDGES))  # the skeleton's operators, checked once
    threading.Thread(target=batch_pool().start, name="batch-pool-start", daemon=True).start()
    if load_predictors:
        threading.Thread(target=_load_recent, name="predictor-warm-up", daemon=True).start()


def _load_recent() -> None:
    from django.db import connection

    try:
        rows = _light(Predictor.objects.ready().order_by("-trained_at", "-pk"))
        seen: set[tuple[int, int | None]] = set()
        for row in rows[: WARM_PREDICTORS * 4]:
            key = (row.device_id, row.team_id)
            if key in seen:
                continue
            seen.add(key)
            same = Predictor.objects.ready().filter(device_id=row.device_id)
            same = same.filter(team__isnull=True) if row.team_id is None else same.filter(team_id=row.team_id)
            best = _light(same.best_first()).first()
            if best is not None:
                loaded(best)
            if len(seen) >= WARM_PREDICTORS:
                break
    except Exception:  # noqa: BLE001 - a warm-up never fails a start; the first request says what is wrong
        log.warning("predictors were not loaded at start", exc_info=True)
    finally:
        connection.close()


# -- architectures ------------------------------------------------------------------------------

_pool: BatchPool | None = None
_pool_lock = threading.Lock()


def batch_pool() -> BatchPool:
    """This process's pool for large batches (``LATENCYLAB_PREDICT_PROCESSES`` processes)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool.processes != settings.LATENCYLAB_PREDICT_PROCESSES:
            if _pool is not None:
                _pool.close()
            _pool = BatchPool(settings.LATENCYLAB_PREDICT_PROCESSES)
        return _pool


def _predictor_key(entry: LoadedPredictor) -> str:
    return f"{entry.id}:{entry.artifact_sha256}:{id(entry.predictor)}"


def predict_architectures(entry: LoadedPredictor, items: Any, breakdown: bool = False) -> list[dict[str, Any]]:
    """Predicted latency of each architecture, in request order; ``ArchitectureErrors`` when any is bad.

    NAS-Bench-201 cells in the predictor's table are answered here; the rest are read, deduced
    and predicted (``devicelab.predict.batch``), a batch of at least
    ``LATENCYLAB_PREDICT_PARALLEL_MIN`` of them on ``LATENCYLAB_PREDICT_PROCESSES`` processes."""
    return predict_and_say(entry, items, breakdown)[0]


# What answered a request's NAS-Bench-201 cells (``answered_by["nb201_table"]``).
TABLE_USED = "used"  # the predictor's table answered every cell it holds
TABLE_NOT_BUILT = "not_built"  # no table yet (the trainer builds it after training): cells were computed
TABLE_SKIPPED = "skipped_for_breakdown"  # a kernel breakdown is computed, never read from a table
TABLE_NOT_ASKED = "no_nb201_cells"  # nothing the table could answer was asked


def predict_and_say(
    entry: LoadedPredictor, items: Any, breakdown: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``predict_architectures`` and what answered: how many architectures the NB-201 table
    answered and how many were computed, and the table's state (a table still being built
    makes 1,000 cells take seconds instead of a fraction of one: a NAS tool can see why)."""
    limit = settings.LATENCYLAB_PREDICT_MAX_BATCH
    if not isinstance(items, list) or not items:
        raise ValidationError({"architectures": "architectures must be a non-empty list"})
    if len(items) > limit:
        raise ValidationError(
            {"architectures": f"{len(items)} architectures is over the limit of {limit} (LATENCYLAB_PREDICT_MAX_BATCH)"}
        )
    p = entry.predictor
    limits = import_limits()  # a hostile ONNX or graph document is refused before it is computed
    results: dict[int, dict[str, Any]] = {}
    live: list[tuple[int, Any]] = []
    table = entry.nb201 if not breakdown else None
    cells = 0  # default-size NB-201 cells: what a table can answer
    for i, item in enumerate(items):
        if isinstance(item, dict) and "nb201" in item:
            read = read_item(i, item, limits)
            # a bad one goes with the rest: ``answer_items`` names every bad architecture at once
            if isinstance(read, Arch) and read.cell is not None:
                cells += 1
                if table is not None:
                    index = nb201_index(read.cell)
                    value = float(table[index])
                    if value == value:  # not NaN
                        cell_warnings = entry.nb201_warnings.get(index, [])
                        results[i] = result(read.name, p.end_to_end(value), value, warnings=cell_warnings)
                        continue
        live.append((i, item))
    from_table = len(results)
    if live:
        if len(live) >= settings.LATENCYLAB_PREDICT_PARALLEL_MIN:
            answered, errors = batch_pool().answer(_predictor_key(entry), p, live, breakdown, limits)
        else:
            answered, errors = answer_items(p, live, breakdown, limits)
        if errors:
            raise ArchitectureErrors(errors)
        results.update(answered)
    if not cells:
        state = TABLE_NOT_ASKED
    elif breakdown:
        state = TABLE_SKIPPED
    else:
        state = TABLE_USED if entry.nb201 is not None else TABLE_NOT_BUILT
    said = {"nb201_table": state, "from_table": from_table, "computed": len(items) - from_table}
    return [results[i] for i in range(len(items))], said


def predict_for_team(
    team: Team,
    items: Any,
    device_id: int | None = None,
    predictor_id: int | None = None,
    method: str | None = None,
    breakdown: bool = False,
) -> dict[str, Any]:
    """The API's answer: which predictor answered, one result per architecture, what answered
    them (the NB-201 table or the general path) and a summary of their warnings."""
    row = resolve(team, device_id, predictor_id, method)
    entry = loaded(row)
    results, said = predict_and_say(entry, items, breakdown)
    return {
        "predictor": entry.describe(chosen_as(row, named=predictor_id is not None)),
        "answered_by": said,
        "warning_summary": warning_summary(results),
        "results": results,
    }


__all__ = [
    "ArchitectureErrors",
    "LoadedPredictor",
    "PredictorNotFound",
    "PredictorUnavailable",
    "batch_pool",
    "chosen_as",
    "clear_cache",
    "gc_paused",
    "loaded",
    "predict_and_say",
    "predict_architectures",
    "predict_for_team",
    "resolve",
    "warm_up",
]
