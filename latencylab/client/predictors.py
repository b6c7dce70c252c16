"""Latency predictors: list them, read one's evaluation, train a new version and wait for it,
predict a batch of architectures."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from latencylab.client.architectures import chunks, encode_architecture, is_graph
from latencylab.client.devices import DevicesMixin
from latencylab.client.errors import ClientError, InputError, WaitTimeout

# The client's own bound on one POST /api/predict/; the server accepts more (LATENCYLAB_PREDICT_MAX_BATCH),
# but smaller requests keep each answer well under a request timeout and under the upload size limit.
PREDICT_CHUNK = 1000
PREDICT_CHUNK_BYTES = 32 * 1024 * 1024


class Predictions(list[dict[str, Any]]):
    """Per-architecture predictions in input order, each with its ``warnings`` (kernels outside the
    predictor's training range, kernels another type's model priced); ``predictor`` is the
    predictor that answered: id, version, test MAPE (``e2e_mape`` on ``n_test`` networks),
    ``rankable`` / ``rank_reason`` and ``chosen_as``; ``answered_by`` what answered them (the
    NB-201 table: ``from_table``, or the general path: ``computed``) and ``warning_summary`` their
    warnings at a glance, both over every chunk the batch was sent in."""

    def __init__(
        self,
        results: Iterable[dict[str, Any]] = (),
        predictor: dict[str, Any] | None = None,
        answered_by: dict[str, Any] | None = None,
        warning_summary: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(results)
        self.predictor = predictor
        self.answered_by = answered_by
        self.warning_summary = warning_summary

    def add_answer(self, answer: dict[str, Any]) -> None:
        """One chunk's answer: its results, and its ``answered_by`` and ``warning_summary`` merged in."""
        self.extend(answer.get("results") or [])
        said = answer.get("answered_by")
        if said:
            if self.answered_by is None:
                self.answered_by = dict(said)
            else:
                for key in ("from_table", "computed"):
                    self.answered_by[key] = self.answered_by.get(key, 0) + said.get(key, 0)
                if self.answered_by.get("nb201_table") == "no_nb201_cells":
                    self.answered_by["nb201_table"] = said.get("nb201_table")
        summary = answer.get("warning_summary")
        if summary:
            self.warning_summary = _merged_summary(self.warning_summary, summary)


class PredictorsMixin(DevicesMixin):
    """``Client``'s predictor calls."""

    def predictors(
        self, device: int | str | dict[str, Any] | None = None, method: str | None = None
    ) -> list[dict[str, Any]]:
        """Predictors your team can use (its own and the lab's shared ones), with each version's MAPE."""
        params: dict[str, Any] = {}
        if device is not None:
            params["device"] = self._device_id(device)
        if method:
            params["method"] = method
        return self._list("predictors/", params)

    def predictor(self, predictor_id: int) -> dict[str, Any]:
        """One predictor with its evaluation (scatter points, MAPE per kernel type and training size)."""
        return dict(self._request("GET", f"predictors/{int(predictor_id)}/"))

    def train_predictor(
        self,
        device: int | str | dict[str, Any],
        method: str = "gbdt",
        threads: int = 1,
        cores: list[int] | str | None = None,
        precision: str = "fp32",
        delegate: str = "",
        seed: int = 0,
        search: str = "paper",
        overhead: str = "constant",
    ) -> dict[str, Any]:
        """Queue the training of the next predictor version of ``device`` for the server's trainer;
        the new predictor (``state`` ``queued``). It trains on your team's timings of the scenario
        (``threads``, ``cores`` as ids or a phone's cluster name, ``precision``, a phone's ``delegate``),
        or on an imported phone's measurements; the server says why when there is too little data."""
        body: dict[str, Any] = {
            "device": self._device_id(device),
            "method": method,
            "threads": threads,
            "precision": precision,
            "delegate": delegate,
            "seed": seed,
            "search": search,
            "overhead": overhead,
        }
        if cores:
            body["cores"] = cores
        return dict(self._request("POST", "predictors/", json=body))

    def adapt_predictor(
        self,
        shots: list[dict[str, Any]],
        device: int | str | dict[str, Any] | None = None,
        new_device: dict[str, str] | None = None,
        sources: list[int] | None = None,
        backend: str = "tflite_gpu",
        precision: str = "fp16",
        method: str = "rf",
        seed: int = 0,
    ) -> dict[str, Any]:
        """Queue an adapted predictor for ``device`` (or ``new_device``: ``{"name", "soc", "gpu"}`` of a
        device that is not in the lab) from a few measured networks (``shots``: ``{"job": id}`` or
        ``{"model": id or zoo name, "latency_ms": x}``) and other devices' predictors (``sources``:
        ids; default every other device's best of the backend and precision); the new predictor
        (``state`` ``queued``). Its ``e2e_mape`` is the leave-one-out error on the shots."""
        body: dict[str, Any] = {
            "shots": shots,
            "backend": backend,
            "precision": precision,
            "method": method,
            "seed": seed,
        }
        if device is not None:
            body["device"] = self._device_id(device)
        if new_device is not None:
            body["new_device"] = new_device
        if sources:
            body["sources"] = sources
        return dict(self._request("POST", "predictors/adapt/", json=body))

    def wait_for_predictor(
        self,
        predictor: int | dict[str, Any],
        timeout: float | None = None,
        poll: float = 1.0,
        on_progress: Callable[[dict[str, Any]], Any] | None = None,
    ) -> dict[str, Any]:
        """Poll until the predictor is ``ready`` or ``failed``; the predictor with its evaluation.
        ``on_progress(predictor)`` is called when its state or progress message changed;
        ``WaitTimeout`` after ``timeout`` seconds (it keeps training on the server: wait again)."""
        pk = int(predictor["id"] if isinstance(predictor, dict) else predictor)
        deadline = None if timeout is None else time.monotonic() + timeout
        shown = None
        while True:
            data = self.predictor(pk)
            now = (data.get("state"), data.get("progress_message"))
            if on_progress is not None and now != shown:
                on_progress(data)
            shown = now
            if data["state"] in ("ready", "failed"):
                return data
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(
                    f"predictor #{pk} is still {data['state']} after {timeout:g} s; it keeps training on the server "
                    "(wait again)",
                    data,
                )
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))

    def predict(
        self,
        architectures: Iterable[Any],
        device: int | str | dict[str, Any] | None = None,
        predictor: int | None = None,
        method: str | None = None,
        breakdown: bool = False,
        chunk_size: int = PREDICT_CHUNK,
    ) -> Predictions:
        """Predicted latency of each architecture on ``device`` (its best ready predictor, or its
        ``method`` one) or by ``predictor``; a list of ``{"name", "latency_ms", "kernels_ms",
        "overhead_ms", "warnings"[, "kernels"]}`` in input order, with ``.predictor`` naming who
        answered, its version and test MAPE, and whether it is rankable (a device without a
        rankable predictor is answered by an unranked one: ``chosen_as == "unranked"``).

        Architectures are sent ``chunk_size`` (at most 1000) at a time; see ``encode_architecture``
        for what an item may be.
        """
        if isinstance(architectures, str | bytes | dict | os.PathLike) or is_graph(architectures):
            raise InputError("predict() takes a list of architectures; wrap a single one in [...]")
        if (device is None) == (predictor is None):
            raise InputError("predict() needs a device or a predictor (one of them)")
        if predictor is not None and method:
            raise InputError("method= chooses among a device's predictors; it cannot go with predictor=")
        items = [encode_architecture(a, i) for i, a in enumerate(architectures)]
        target: dict[str, Any] = (
            {"predictor": int(predictor)} if predictor is not None else {"device": self._device_id(device)}  # type: ignore[arg-type]
        )
        if method:
            target["method"] = method
        out = Predictions()
        for offset, chunk in chunks(items, max(1, min(chunk_size, PREDICT_CHUNK)), PREDICT_CHUNK_BYTES):
            try:
                answer = self._request(
                    "POST", "predict/", json={**target, "architectures": chunk, "breakdown": breakdown}
                )
            except ClientError as exc:
                raise _shifted(exc, offset) from None
            results = answer.get("results") or []
            if len(results) != len(chunk):
                raise ClientError(
                    None, f"the server answered {len(results)} predictions for {len(chunk)} architectures"
                )
            if out.predictor is None:
                out.predictor = answer.get("predictor")
                # Every chunk is answered by the predictor that answered the first, even if a new
                # version becomes ready meanwhile: one batch, one model of the device.
                if out.predictor and out.predictor.get("id") is not None:
                    target = {"predictor": out.predictor["id"]}
            out.add_answer(answer)
        return out


def _bigger(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def _merged_summary(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Two chunks' ``warning_summary`` as one."""
    if a is None:
        return {**b, "by_kind": [dict(k) for k in b.get("by_kind") or []]}
    kinds = {(k["code"], k["kernel_type"]): k for k in a["by_kind"]}
    for k in b.get("by_kind") or []:
        mine = kinds.get((k["code"], k["kernel_type"]))
        if mine is None:
            kinds[(k["code"], k["kernel_type"])] = dict(k)
            continue
        mine["architectures"] += k["architectures"]
        mine["largest_share"] = _bigger(mine.get("largest_share"), k.get("largest_share"))
        if "largest_factor" in k or "largest_factor" in mine:
            mine["largest_factor"] = _bigger(mine.get("largest_factor"), k.get("largest_factor"))
    return {
        "architectures": a["architectures"] + b["architectures"],
        "with_warnings": a["with_warnings"] + b["with_warnings"],
        "largest_share": _bigger(a.get("largest_share"), b.get("largest_share")),
        "by_kind": sorted(kinds.values(), key=lambda k: (k["code"], k["kernel_type"])),
    }


def _shifted(exc: ClientError, offset: int) -> ClientError:
    """A refused chunk's error with indices counted from the start of the whole batch."""
    if not exc.errors:
        return exc
    body = dict(exc.body)
    body["errors"] = [{**e, "index": int(e.get("index", 0)) + offset} for e in exc.errors]
    first = body["errors"][0]
    more = f" (and {len(body['errors']) - 1} more)" if len(body["errors"]) > 1 else ""
    detail = f"{exc.detail}: architecture {first['index']} ({first.get('name')}): {first.get('error')}{more}"
    return ClientError(exc.status, detail, body)


__all__ = ["PREDICT_CHUNK", "PREDICT_CHUNK_BYTES", "Predictions", "PredictorsMixin"]
