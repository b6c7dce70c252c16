"""A large batch of architectures answered on several cores.

Reading graph JSON, deducing kernels and walking the models is Python work of a few
microseconds per operator: 1,000 NAS candidates of ~55 operators keep one core busy for most
of a second. ``BatchPool`` splits such a batch into contiguous chunks, one per process: the
calling process answers the first chunk itself while worker processes answer the others, and
the answers are merged in request order. The answers are those of ``batch.answer_items`` in
one process (the same code on the same predictor; a model's matrix product over a different set
of rows may round the last bits differently).

Workers come from a ``forkserver``: clean processes that share nothing with the caller (no
database connections, no threads), started on first use and kept. Each task carries the
predictor's pickled bytes (made once per predictor in the caller, with whether its NB-201
kernels may come from three cells per stage, ``nb201_kernels.verified``; a worker
unpickles them only the first time it sees that predictor, and keeps the last few) and its architectures as JSON.
Pickle is only the in-memory hand-over between processes of one installation, never a stored
artifact.

A worker that dies or cannot be started loses nothing: its chunk is answered in the calling
process and the next batch starts a fresh pool.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import logging
import multiprocessing
import os
import pickle
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import orjson

from devicelab.graph.limits import DEFAULT_LIMITS, ImportLimits
from devicelab.predict import nb201_kernels
from devicelab.predict.batch import Error, Result, answer_items
from devicelab.predict.predictor import ScenarioPredictor

log = logging.getLogger(__name__)

WORKER_PREDICTORS = 4  # predictors a worker process keeps loaded
_CALLER_PAYLOADS = 8  # pickled predictors the calling process keeps

_worker_predictors: OrderedDict[str, ScenarioPredictor] = OrderedDict()


def _start_worker() -> None:
    """A worker collects garbage itself, between chunks (``_answer_chunk``): a chunk's millions of
    small objects are freed by reference counting, and a collection pass in the middle of reading
    them would walk them all, again and again."""
    gc.disable()


def _answer_chunk(
    key: str, payload: bytes, items: bytes, breakdown: bool, limits: ImportLimits = DEFAULT_LIMITS
) -> tuple[dict[int, Result], list[Error]]:
    """In a worker process: answer one chunk (``items``: JSON of its (index, architecture)
    pairs, read within ``limits``) with the predictor ``key``, unpickled from ``payload`` the first time."""
    gc.collect(1)  # the last chunk's cycles, if it left any; what lives on is the predictors
    p = _worker_predictors.get(key)
    if p is None:
        p, local = pickle.loads(payload)
        _worker_predictors[key] = p
        nb201_kernels.remember(p.deducer, local)  # the caller checked its NB-201 kernels
        while len(_worker_predictors) > WORKER_PREDICTORS:
            _worker_predictors.popitem(last=False)
    else:
        _worker_predictors.move_to_end(key)
    return answer_items(p, [(int(i), item) for i, item in orjson.loads(items)], breakdown, limits)


def _pid() -> int:
    return os.getpid()


def chunks(items: Sequence[Any], parts: int) -> list[list[Any]]:
    """``items`` in at most ``parts`` contiguous chunks of nearly equal length (none empty)."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for k in range(parts):
        end = start + size + (1 if k < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return out


class BatchPool:
    """``processes`` processes answer a batch together: this one and ``processes - 1`` workers."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError(f"processes must be at least 1, got {processes}")
        self.processes = processes
        self._executor: cf.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._payloads: OrderedDict[str, bytes] = OrderedDict()
        self.chunks_answered: Counter[str] = Counter()  # by "caller", "worker", "fallback"

    # -- the workers ---------------------------------------------------------------------------

    def _pool(self) -> cf.ProcessPoolExecutor | None:
        if self.processes < 2:
            return None
        with self._lock:
            if self._executor is None:
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(["devicelab.predict.parallel"])
                self._executor = cf.ProcessPoolExecutor(
                    max_workers=self.processes - 1, mp_context=context, initializer=_start_worker
                )
            return self._executor

    def _drop(self, executor: cf.ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is executor:
                self._executor = None
        executor.shutdown(wait=False, cancel_futures=True)

    def start(self) -> None:
        """Start the workers now (a server calls this when it loads a predictor), not on the first batch."""
        executor = self._pool()
        if executor is None:
            return
        try:
            for _ in range(self.processes - 1):
                executor.submit(_pid)
        except (BrokenProcessPool, RuntimeError, OSError) as exc:
            log.warning("batch workers cannot start (%s); batches are answered in one process", exc)
            self._drop(executor)

    def worker_pids(self) -> list[int]:
        """The process ids of the live workers (for tests and diagnostics)."""
        executor = self._pool()
        if executor is None:
            return []
        self.start()
        processes = getattr(executor, "_processes", None) or {}
        return sorted(p.pid for p in processes.values() if p.is_alive())

    def close(self) -> None:
        """Stop the workers."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    # -- answering -----------------------------------------------------------------------------

    def _payload(self, key: str, predictor: ScenarioPredictor) -> bytes:
        with self._lock:
            data = self._payloads.get(key)
            if data is not None:
                self._payloads.move_to_end(key)
                return data
        # checked here once (a server has checked it when it loaded the predictor), not in every worker
        local = nb201_kernels.verified(predictor.deducer)
        data = pickle.dumps((predictor, local), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            self._payloads[key] = data
            while len(self._payloads) > _CALLER_PAYLOADS:
                self._payloads.popitem(last=False)
        return data

    def answer(
        self,
        key: str,
        predictor: ScenarioPredictor,
        items: Sequence[tuple[int, Any]],
        breakdown: bool = False,
        limits: ImportLimits = DEFAULT_LIMITS,
    ) -> tuple[dict[int, Result], list[Error]]:
        """``batch.answer_items`` of (index, architecture) pairs (read within ``limits``), on up to
        ``processes`` processes.

        ``key`` names the predictor (the same key, the same predictor). Errors come sorted by
        index; nothing of a chunk is predicted while any of its architectures is unreadable."""
        executor = self._pool()
        parts = chunks(items, self.processes if executor is not None else 1)
        futures: list[tuple[list[tuple[int, Any]], cf.Future[tuple[dict[int, Result], list[Error]]] | None]] = []
        if executor is not None and len(parts) > 1:
            payload = self._payload(key, predictor)
            try:
                for part in parts[1:]:
                    # JSON travels four times faster than pickle here, and a batch is JSON already
                    data = orjson.dumps(part)
                    futures.append((part, executor.submit(_answer_chunk, key, payload, data, breakdown, limits)))
            except TypeError:  # not JSON data (a Python caller's own objects): this process answers
                futures += [(part, None) for part in parts[1 + len(futures) :]]
            except (BrokenProcessPool, RuntimeError, OSError) as exc:
                log.warning("batch workers are gone (%s); answering in this process", exc)
                self._drop(executor)
                futures += [(part, None) for part in parts[1 + len(futures) :]]
        else:
            futures = [(part, None) for part in parts[1:]]
        results, errors = answer_items(predictor, parts[0], breakdown, limits)
        where = ["caller"]
        for part, future in futures:
            if future is None:
                r, e = answer_items(predictor, part, breakdown, limits)
                where.append("caller")
            else:
                try:
                    r, e = future.result()
                    where.append("worker")
                except (BrokenProcessPool, cf.CancelledError, OSError, EOFError, pickle.PickleError) as exc:
                    log.warning(
                        "a batch worker failed (%s: %s); answering its chunk in this process", type(exc).__name__, exc
                    )
                    if executor is not None:
                        self._drop(executor)
                    r, e = answer_items(predictor, part, breakdown, limits)
                    where.append("fallback")
            results.update(r)
            errors += e
        with self._lock:
            self.chunks_answered.update(where)
        errors.sort(key=lambda err: err["index"])
        return results, errors


__all__ = ["BatchPool", "WORKER_PREDICTORS", "chunks"]
