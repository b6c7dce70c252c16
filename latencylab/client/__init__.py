"""A Python client of the LatencyLab REST API for scripts and NAS tools: devices, uploads, profiling
jobs, batch latency predictions, fusion sweeps and plans, sharing sweeps, remote runs, and model selection.

    from latencylab.client import Client

    lab = Client("http://lab:8000", token)          # or LATENCYLAB_URL / LATENCYLAB_TOKEN
    result = lab.profile("net.onnx", device="host-cpu").wait(on_progress=print)
    latencies = lab.predict(["|nor_conv_3x3~0|+|none~0|skip_connect~1|+|...|"], device="pixel4")
    sweep = lab.fusion_sweep("pocl-cpu", zoo=["mobilenet_v2"], spec={"sizes": [2]}, wait=True)
    pairs = lab.fusion_rows(sweep, contains=["DWC"], variant="rounded")
    shared = lab.sharing_sweep("pocl-cpu", spec={"shapes": ["256x128x1152"], "tenants": [1, 2, 4]}, wait=True)
    table1 = shared.result["table1"]; tails = lab.sharing_rows(shared, strategy="space_time")
    pick = lab.select("host-cpu", models=[3, 4, 5], sla_ms=300, network_profile="lte")  # CNNSelect
    remote = lab.remote_run(3, "host-cpu", ["unshaped", "lte"], requests=20, wait=True).result["profiles"]
    sim = lab.wait_for_selection_simulation(lab.simulate_selection(scenario="paper", requests=1000), 600)

Every answer that is not 2xx raises ``ClientError`` carrying the HTTP status and the server's message.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

if TYPE_CHECKING:
    from devicelab.graph import Graph

URL_ENV = "LATENCYLAB_URL"
TOKEN_ENV = "LATENCYLAB_TOKEN"
# The client's own bound on one POST /api/predict/; the server accepts more (LATENCYLAB_PREDICT_MAX_BATCH),
# but smaller requests keep each answer well under a request timeout and under the upload size limit.
PREDICT_CHUNK = 1000
PREDICT_CHUNK_BYTES = 32 * 1024 * 1024
FINISHED = ("succeeded", "failed", "cancelled")
_WIRE_KEYS = ("graph", "nb201", "onnx_base64")


class ClientError(Exception):
    """An error answer of the server (``status`` is its HTTP status) or a failure to reach it (``status`` None)."""

    def __init__(self, status: int | None, detail: str, body: Any = None) -> None:
        self.status = status
        self.detail = detail
        self.body = body
        super().__init__(f"HTTP {status}: {detail}" if status is not None else detail)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Per-item errors of a refused batch (``[{"index", "name", "error"}]``), else empty."""
        errors = self.body.get("errors") if isinstance(self.body, dict) else None
        return list(errors) if isinstance(errors, list) else []


class InputError(ClientError, ValueError):
    """What the caller passed cannot be sent (no such file, unknown device name, bad architecture)."""

    def __init__(self, detail: str) -> None:
        super().__init__(None, detail)


class JobFailed(ClientError):
    """A profiling job ended failed or cancelled; ``job`` holds its last state from the server."""

    def __init__(self, detail: str, job: dict[str, Any]) -> None:
        super().__init__(None, detail, job)
        self.job = job


class ModelFailed(ClientError):
    """An uploaded model could not be parsed (a big upload is parsed after its answer); ``model``
    holds its row from the server, ``failure_reason`` naming the node."""

    def __init__(self, detail: str, model: dict[str, Any]) -> None:
        super().__init__(None, detail, model)
        self.model = model


class WaitTimeout(ClientError):
    """A job (or an upload being parsed) did not finish within the time it was given; it goes on
    on the server. ``job`` holds its last state."""

    def __init__(self, detail: str, job: dict[str, Any]) -> None:
        super().__init__(None, detail, job)
        self.job = job


class Predictions(list[dict[str, Any]]):
    """Per-architecture predictions in input order, each with its ``warnings`` (kernels outside the
    predictor's training range, kernels another type's model priced); ``predictor`` is the
    predictor that answered: id, version, test MAPE (``e2e_mape`` on ``n_test`` networks),
    ``rankable`` / ``rank_reason`` and ``chosen_as``."""

    def __init__(self, results: Iterable[dict[str, Any]] = (), predictor: dict[str, Any] | None = None) -> None:
        super().__init__(results)
        self.predictor = predictor


def _detail(resp: requests.Response) -> tuple[str, Any]:
    """The server's message in an error answer, as one line, and the decoded body."""
    try:
        body = resp.json()
    except ValueError:
        text = " ".join(resp.text.split())[:300]
        return text or resp.reason or "no message", resp.text
    if isinstance(body, dict):
        if isinstance(body.get("detail"), str):
            return body["detail"], body
        parts = []
        for key, value in body.items():
            msgs = value if isinstance(value, list) else [value]
            text = "; ".join(str(m) for m in msgs)
            parts.append(text if key == "non_field_errors" else f"{key}: {text}")
        return "; ".join(parts) or "no message", body
    if isinstance(body, list):
        return "; ".join(str(m) for m in body) or "no message", body
    return str(body), body


def _connection_reason(exc: Exception) -> str:
    """The useful end of a requests/urllib3 connection error ("[Errno 111] Connection refused")."""
    text = str(exc)
    found = re.search(r"\[Errno -?\d+\][^'\")]*", text)
    if found:
        return found.group(0).strip()
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return type(exc).__name__


def _probe_bytes(nbytes: int) -> bytes:
    """``nbytes`` that no compression on the way can shrink."""
    return os.urandom(nbytes)


def _is_graph(obj: Any) -> bool:
    from devicelab.graph import Graph

    return isinstance(obj, Graph)


def _read_json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable JSON file ({exc})") from None


def encode_architecture(item: Any, index: int = 0) -> dict[str, Any]:
    """One architecture in the wire form of ``POST /api/predict/``: ``{"name", "graph"|"nb201"|"onnx_base64"}``.

    ``item`` is a devicelab ``Graph``, an NB-201 cell string (it starts with ``|``), a path to an
    ``.onnx``, graph ``.json`` or ``.tflite`` file, ONNX or graph-JSON bytes, a graph JSON dict, or a
    dict already in the wire form (its name defaults to ``arch<index>``).
    """
    default = f"arch{index}"
    if isinstance(item, dict):
        if any(k in item for k in _WIRE_KEYS):
            return {"name": default, **item}
        if "operators" in item:
            return {"name": str(item.get("name") or default), "graph": item}
        raise InputError(
            f"architecture {index}: a dict must hold one of {list(_WIRE_KEYS)} (or be a graph JSON document)"
        )
    if isinstance(item, str) and item.strip().startswith("|"):
        return {"name": item.strip(), "nb201": item.strip()}
    if isinstance(item, bytes | bytearray):
        data = bytes(item)
        if data.lstrip()[:1] == b"{":
            try:
                return encode_architecture(json.loads(data), index)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise InputError(f"architecture {index}: bytes that start with '{{' but are not JSON ({exc})") from None
        return {"name": default, "onnx_base64": base64.b64encode(data).decode("ascii")}
    if isinstance(item, str | os.PathLike):
        path = Path(item)
        if not path.is_file():
            raise InputError(
                f"architecture {index}: {str(item)!r} is neither an NB-201 cell string (they start with '|') "
                "nor an existing file"
            )
        suffix = path.suffix.lower()
        if suffix == ".onnx":
            return {"name": path.stem, "onnx_base64": base64.b64encode(path.read_bytes()).decode("ascii")}
        if suffix == ".json":
            doc = _read_json_file(path)
            if not isinstance(doc, dict):
                raise InputError(f"{path}: a graph JSON file holds an object, not {type(doc).__name__}")
            return {"name": str(doc.get("name") or path.stem), "graph": doc}
        if suffix == ".tflite":
            # The predict API reads graph JSON, ONNX and NB-201: a TFLite file is converted here.
            from devicelab.graph import GraphError, graph_to_dict, load_graph_file

            try:
                return {"name": path.stem, "graph": graph_to_dict(load_graph_file(path))}
            except GraphError as exc:
                raise InputError(f"{path}: {exc}") from None
        raise InputError(f"{path}: unknown model file type {suffix or '(none)'!r}; expected .onnx, .json or .tflite")
    if _is_graph(item):
        from devicelab.graph import graph_to_dict

        return {"name": item.name, "graph": graph_to_dict(item)}
    raise InputError(
        f"architecture {index}: cannot send a {type(item).__name__}; pass a Graph, an NB-201 string, a file "
        "path, or a dict in the wire form"
    )


def _chunks(items: list[dict[str, Any]], max_items: int, max_bytes: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """``(offset, chunk)`` pairs of at most ``max_items`` items and about ``max_bytes`` of JSON each."""
    start, size = 0, 0
    for i, item in enumerate(items):
        n = len(json.dumps(item, separators=(",", ":")))
        if i > start and (i - start >= max_items or size + n > max_bytes):
            yield start, items[start:i]
            start, size = i, 0
        size += n
    if start < len(items):
        yield start, items[start:]


class JobHandle:
    """A profiling job on the server: ``refresh()`` it, ``wait()`` for its result, or ``cancel()`` it."""

    resource = "jobs"  # where refresh() reads it: /api/<resource>/<id>/

    def __init__(self, client: Client, data: dict[str, Any]) -> None:
        self.client = client
        self.data = data

    def __repr__(self) -> str:
        return f"<JobHandle #{self.id} {self.state} {self.progress:.0%}>"

    @property
    def id(self) -> int:
        """The job's id."""
        return int(self.data["id"])

    @property
    def state(self) -> str:
        """queued, running, succeeded, failed or cancelled (as of the last refresh)."""
        return str(self.data["state"])

    @property
    def progress(self) -> float:
        """Fraction done, 0..1 (as of the last refresh)."""
        return float(self.data.get("progress") or 0.0)

    @property
    def progress_message(self) -> str:
        """What the worker is doing ("warm-up 3/5", ...)."""
        return str(self.data.get("progress_message") or "")

    @property
    def failure_reason(self) -> str:
        """Why the job failed ("" unless it did)."""
        return str(self.data.get("failure_reason") or "")

    @property
    def finished(self) -> bool:
        """Whether the job reached a final state."""
        return self.state in FINISHED

    @property
    def result(self) -> dict[str, Any] | None:
        """The result once the job succeeded, else None."""
        result = self.data.get("result")
        return result if isinstance(result, dict) else None

    def refresh(self) -> JobHandle:
        """Read the job's current state from the server."""
        self.data = self.client._request("GET", f"{self.resource}/{self.id}/")
        return self

    def cancel(self) -> JobHandle:
        """Cancel the job if it is still queued or running (409 from the server when it already finished)."""
        self.client._request("POST", f"jobs/{self.id}/cancel/")
        return self.refresh()

    def wait(
        self,
        timeout: float | None = None,
        poll: float = 0.5,
        on_progress: Callable[[float], Any] | None = None,
    ) -> dict[str, Any]:
        """Poll until the job finished; return its result (end-to-end stats, per-operator rows).

        ``on_progress(fraction)`` is called each time the job's progress grew, and with 1.0 at the end.
        Raises ``JobFailed`` (with the server's failure reason) when the job failed or was cancelled,
        and ``WaitTimeout`` after ``timeout`` seconds (the job keeps running on the server).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        reported = -1.0
        while True:
            if on_progress is not None and self.progress > reported and self.state != "queued":
                reported = self.progress
                on_progress(reported)
            if self.state == "succeeded":
                if self.result is None:  # a list entry, or a body from before the result was stored
                    self.refresh()
                if on_progress is not None and reported < 1.0:
                    on_progress(1.0)
                assert self.result is not None, f"job #{self.id} succeeded without a result"
                return self.result
            if self.state == "failed":
                raise JobFailed(f"job #{self.id} failed: {self.failure_reason or 'no reason given'}", self.data)
            if self.state == "cancelled":
                raise JobFailed(f"job #{self.id} was cancelled", self.data)
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(
                    f"job #{self.id} is still {self.state} ({self.progress:.0%}) after {timeout:g} s; it keeps "
                    "running on the server (wait again, or cancel it)",
                    self.data,
                )
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))
            self.refresh()


class FusionHandle(JobHandle):
    """A fusion sweep or plan on the server (a job of kind ``fusion_sweep`` / ``fusion_plan``):
    ``wait()`` returns a sweep's result summary (with ``row_counts``) or a plan's comparison;
    ``cancel()`` cancels the job."""

    def __init__(self, client: Client, data: dict[str, Any]) -> None:
        super().__init__(client, data)
        self.resource = "fusion/plans" if data.get("kind") == "fusion_plan" else "fusion/sweeps"

    @property
    def kind(self) -> str:
        """fusion_sweep or fusion_plan."""
        return str(self.data.get("kind") or "")


class SharingHandle(JobHandle):
    """A sharing sweep on the server (a job of kind ``sharing_sweep``): ``wait()`` returns its
    result summary (workloads, ceiling, table 1, the largest R, notes, ``complete``,
    ``not_measured``, ``row_counts``); ``cancel()`` cancels the job."""

    resource = "sharing/sweeps"


class RemoteHandle(JobHandle):
    """A remote run on the server (a job of kind ``remote_scenario``): ``wait()`` returns what it
    measured (``profiles``: per network profile the upload, server, compute, download and
    end-to-end medians and p90 in ms, the server's stages, the network's share; ``data``: every
    request); ``cancel()`` cancels the job."""

    resource = "remote/runs"


class Client:
    """One LatencyLab server and an API token (``Authorization: Token <key>``)."""

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 60.0) -> None:
        url = url or os.environ.get(URL_ENV)
        token = token or os.environ.get(TOKEN_ENV)
        if not url:
            raise InputError(f"no server URL: pass url= or set {URL_ENV}")
        if not token:
            raise InputError(f"no API token: pass token= or set {TOKEN_ENV} (latencylab user add prints one)")
        self.url = url.rstrip("/")
        if not re.match(r"^https?://", self.url):
            raise InputError(f"the server URL must start with http:// or https://, got {url!r}")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})

    def __repr__(self) -> str:
        return f"<Client {self.url}>"

    def close(self) -> None:
        """Close the kept-alive connections to the server."""
        self.session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request to ``/api/<path>`` (or to an absolute URL); the decoded JSON answer."""
        resp = self._send(method, path, **kwargs)
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            raise ClientError(resp.status_code, f"{method} {resp.url} answered something that is not JSON") from None

    def _send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """Send one request to ``/api/<path>`` (or to an absolute URL); the answer, read whole,
        or ``ClientError`` with the server's reason."""
        url = path if path.startswith(("http://", "https://")) else f"{self.url}/api/{path.lstrip('/')}"
        kwargs.setdefault("timeout", self.timeout)
        try:
            resp = self.session.request(method, url, **kwargs)
        except requests.Timeout:
            raise ClientError(None, f"{method} {url}: no answer within {kwargs['timeout']} s") from None
        except requests.ConnectionError as exc:
            raise ClientError(None, f"cannot connect to {url}: {_connection_reason(exc)}") from None
        if not 200 <= resp.status_code < 300:
            status, (detail, body) = resp.status_code, _detail(resp)
            # The raised error's traceback keeps this frame: without the response in it, the
            # connection's socket is really closed when the session is.
            resp.close()
            del resp
            raise ClientError(status, detail, body)
        return resp

    def _list(self, path: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated list, following ``next``."""
        items: list[dict[str, Any]] = []
        page = self._request("GET", path, params={**(params or {}), "page_size": 500})
        while True:
            if isinstance(page, list):  # an unpaginated list
                return items + page
            items.extend(page["results"])
            if not page.get("next"):
                return items
            page = self._request("GET", page["next"])

    # -- devices and models ----------------------------------------------------------------------

    def devices(self, kind: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        """The lab's devices: ``{"id", "kind", "name", "hardware", "capabilities", "status",
        "offline_reason", ...}``; ``kind="android"`` for the phones, ``status="online"`` for the reachable."""
        params = {k: v for k, v in (("kind", kind), ("status", status)) if v is not None}
        return self._list("devices/", params or None)

    def device(self, device: int | str | dict[str, Any]) -> dict[str, Any]:
        """One device by id, name or identity; an online one wins when several share a name."""
        if isinstance(device, dict):
            return device
        if isinstance(device, int) and not isinstance(device, bool):
            return dict(self._request("GET", f"devices/{device}/"))
        if not isinstance(device, str) or not device:
            raise InputError(f"a device is an id or a name, not {device!r}")
        devices = self.devices()
        for key in ("name", "identity"):
            matches = [d for d in devices if d.get(key) == device]
            online = [d for d in matches if d.get("status") == "online"]
            if len(matches) == 1:
                return matches[0]
            if len(online) == 1:
                return online[0]
            if matches:
                ids = ", ".join(f"#{d['id']} ({d.get('status')})" for d in matches)
                raise InputError(f"{len(matches)} devices are called {device!r}: {ids}; pass the id instead")
        if device.isdigit():
            return self.device(int(device))
        names = ", ".join(sorted({str(d.get("name")) for d in devices})) or "none"
        raise InputError(f"no device called {device!r}; the devices are: {names}")

    def _device_id(self, device: int | str | dict[str, Any]) -> int:
        if isinstance(device, int) and not isinstance(device, bool):
            return device
        return int(self.device(device)["id"])

    def models(self) -> list[dict[str, Any]]:
        """Your team's uploaded models."""
        return self._list("models/")

    def upload(
        self,
        model: str | os.PathLike[str] | bytes | Graph | dict[str, Any],
        name: str | None = None,
        timeout: float = 3600.0,
    ) -> int:
        """Upload a model (a .onnx/.tflite/.json path, a devicelab Graph, a graph JSON dict, or file bytes);
        return its id once it is parsed. The same bytes uploaded again give the existing model's id.

        A big upload is answered ``parsing`` and parsed by the server's trainer: this waits (up to
        ``timeout`` seconds, else ``WaitTimeout``) until it is ready, and raises ``ModelFailed``
        with the server's reason when it could not be read.
        """
        if isinstance(model, dict) or _is_graph(model):
            if isinstance(model, dict):
                body = json.dumps(model).encode()
                name = name or model.get("name")
            else:
                from devicelab.graph import graph_to_json

                body = graph_to_json(model).encode()  # type: ignore[arg-type]
                name = name or model.name  # type: ignore[union-attr]
            answer = self._request(
                "POST",
                "models/",
                params={"name": name} if name else None,
                data=body,
                headers={"Content-Type": "application/json"},
            )
            return self._parsed(answer, timeout)
        if isinstance(model, bytes | bytearray):
            data, filename = bytes(model), "model"
        elif isinstance(model, str | os.PathLike):
            path = Path(model)
            if not path.is_file():
                raise InputError(f"no model file {str(model)!r}")
            data, filename = path.read_bytes(), path.name
            name = name or path.stem
        else:
            raise InputError(f"cannot upload a {type(model).__name__}; pass a file path, bytes or a Graph")
        answer = self._request(
            "POST", "models/", files={"file": (filename, data)}, data={"name": name} if name else None
        )
        return self._parsed(answer, timeout)

    def _parsed(self, answer: dict[str, Any], timeout: float) -> int:
        """The id of an uploaded model once the server parsed it (at once for a small upload)."""
        model_id = int(answer["id"])
        deadline = time.monotonic() + timeout
        pause = 0.5
        while answer.get("state") == "parsing":
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"model #{model_id} was still being parsed after {timeout:.0f} s", answer)
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 1.5, 5.0)
            answer = self._request("GET", f"models/{model_id}/")
        if answer.get("state") == "failed":
            reason = answer.get("failure_reason") or "no reason given"
            raise ModelFailed(f"model #{model_id} ({answer.get('name')}) could not be parsed: {reason}", answer)
        return model_id

    # -- profiling -------------------------------------------------------------------------------

    def profile(
        self,
        model: int | str | os.PathLike[str] | bytes | Graph | dict[str, Any],
        device: int | str | dict[str, Any],
        settings: dict[str, Any] | None = None,
    ) -> JobHandle:
        """Queue a profiling job of ``model`` (an id, or anything ``upload`` takes) on ``device`` (id or
        name) with ``settings`` (runs, warmup_runs, threads, cores, backend, precision; for phones also
        delegate, cooldown_c and cooldown_max_s, and cores may name a core cluster such as "big")."""
        if isinstance(model, bool):
            raise InputError(f"a model is an id, a file path, bytes or a Graph, not {model!r}")
        model_id = model if isinstance(model, int) else self.upload(model)
        body = {"model": model_id, "device": self._device_id(device), "settings": dict(settings or {})}
        return JobHandle(self, self._request("POST", "jobs/", json=body))

    def job(self, job: int | JobHandle) -> JobHandle:
        """A handle on an existing job."""
        return JobHandle(self, self._request("GET", f"jobs/{int(job.id if isinstance(job, JobHandle) else job)}/"))

    def results(self, job: int | JobHandle) -> dict[str, Any]:
        """A finished job's result: ``e2e`` statistics (ms), ``cold`` start, ``samples_ms``, ``operators``
        (one row per operator: name, op_type, kernel, mean/median/std ms, fused_into), ``flags`` (hot,
        throttled), ``peak_memory_mb`` and the environment. Where the runtime reports aggregates only
        (a phone's), ``e2e`` has no median or p90 (None) and ``samples_ms`` is empty: use the mean."""
        handle = self.job(job)
        if handle.state != "succeeded" or handle.result is None:
            reason = f": {handle.failure_reason}" if handle.failure_reason else ""
            raise ClientError(None, f"job #{handle.id} is {handle.state}{reason}; it has no result", handle.data)
        return handle.result

    # -- prediction ------------------------------------------------------------------------------

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
        if isinstance(architectures, str | bytes | dict | os.PathLike) or _is_graph(architectures):
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
        for offset, chunk in _chunks(items, max(1, min(chunk_size, PREDICT_CHUNK)), PREDICT_CHUNK_BYTES):
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
            out.extend(results)
        return out

    # -- fusion ----------------------------------------------------------------------------------

    def _networks(self, zoo: Iterable[str] | str | None, models: Iterable[int] | None) -> dict[str, Any]:
        """``zoo`` names and ``models`` ids as the request's keys (left out when not given)."""
        body: dict[str, Any] = {}
        if zoo is not None:
            if isinstance(zoo, str):
                raise InputError(f"zoo= takes a list of zoo names, not the string {zoo!r}; wrap it in [...]")
            body["zoo"] = list(zoo)
        if models is not None:
            ids = list(models)
            if not all(isinstance(m, int) and not isinstance(m, bool) for m in ids):
                raise InputError(f"models= takes model ids (integers), got {ids!r}; zoo names go in zoo=")
            body["models"] = ids
        return body

    def _wait_fusion(
        self,
        handle: FusionHandle,
        wait: bool,
        timeout: float | None,
        on_progress: Callable[[float], Any] | None,
    ) -> FusionHandle:
        if wait:
            handle.wait(timeout=timeout, on_progress=on_progress)
        return handle

    def fusion_sweep(
        self,
        device: int | str | dict[str, Any],
        *,
        zoo: Iterable[str] | None = None,
        models: Iterable[int] | None = None,
        precision: str | None = None,
        spec: dict[str, Any] | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> FusionHandle:
        """Queue a fusion sweep on an OpenCL ``device`` (id or name) over zoo networks (names) and
        your team's models (ids); neither: the six networks of ParallelFusion's table 1. ``spec``
        holds the sweep's keys (sizes, kinds, representatives, instances, max_combinations,
        identical_counts, identical_per_model, warmup, runs, rounding, layouts, wave_size,
        time_budget_s, seed; the rest take their defaults).

        With ``wait=True`` this returns once the sweep succeeded (``handle.result`` is its summary)
        and raises ``JobFailed`` / ``WaitTimeout`` like ``JobHandle.wait``."""
        body: dict[str, Any] = {"device": self._device_id(device), **self._networks(zoo, models)}
        if precision is not None:
            body["precision"] = precision
        if spec is not None:
            body["spec"] = dict(spec)
        handle = FusionHandle(self, self._request("POST", "fusion/sweeps/", json=body))
        return self._wait_fusion(handle, wait, timeout, on_progress)

    def fusion_sweeps(self) -> list[dict[str, Any]]:
        """Your team's fusion sweeps, newest first (state, progress, device, settings)."""
        return self._list("fusion/sweeps/")

    def fusion_sweep_status(self, sweep: int | FusionHandle) -> FusionHandle:
        """A sweep as it is now: state, progress, and once it succeeded ``result`` (networks, wave
        size, spec, combinations, notes, timings, ``row_counts``)."""
        return FusionHandle(self, self._request("GET", f"fusion/sweeps/{_job_id(sweep)}/"))

    def fusion_rows(
        self,
        sweep: int | FusionHandle,
        *,
        experiment: str | None = None,
        size: int | None = None,
        variant: str | None = None,
        kinds: Iterable[str] | str | None = None,
        contains: Iterable[str] | str | None = None,
        errors: bool | None = None,
        detail: bool = False,
    ) -> list[dict[str, Any]]:
        """A succeeded sweep's rows (every page), filtered: ``experiment`` (combination or
        identical), ``size``, ``variant`` (rounded or unrounded), the exact ``kinds`` (any order),
        rows that ``contains`` every given kind, with or without ``errors``. Each row: kinds,
        variant, layout, total_mflops, throughput (sequential / fused) and its noise, padding, the
        check; ``detail=True`` adds the whole row (raw samples) as ``data``."""
        handle = self.fusion_sweep_status(sweep)
        if handle.state != "succeeded":
            reason = f": {handle.failure_reason}" if handle.failure_reason else ""
            raise ClientError(None, f"sweep #{handle.id} is {handle.state}{reason}; it has no rows", handle.data)
        params: dict[str, Any] = {}
        for key, value in (("experiment", experiment), ("size", size), ("variant", variant)):
            if value is not None:
                params[key] = value
        for key, listed in (("kinds", kinds), ("contains", contains)):
            if listed is not None:
                params[key] = listed if isinstance(listed, str) else ",".join(listed)
        if errors is not None:
            params["errors"] = "true" if errors else "false"
        if detail:
            params["detail"] = "true"
        return self._list(f"fusion/sweeps/{handle.id}/rows/", params)

    def fusion_plan(
        self,
        device: int | str | dict[str, Any],
        *,
        zoo: Iterable[str] | None = None,
        models: Iterable[int] | None = None,
        precision: str | None = None,
        options: dict[str, Any] | None = None,
        sweep: int | JobHandle | bool | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> FusionHandle:
        """Queue a fusion plan on an OpenCL ``device``: the networks run together (neither ``zoo``
        nor ``models``: two MobileNet-V2, figure 11), planned from sweep ``sweep``'s measurements
        (an id or handle; None: the team's newest on the device; False: none, the latency model
        alone) and compared
        end to end with sequential and fuse-all runs. ``options``: max_group, warmup, runs,
        round_to_wave. ``wait=True`` returns once it succeeded (``handle.result``: the comparison)."""
        body: dict[str, Any] = {"device": self._device_id(device), **self._networks(zoo, models)}
        if precision is not None:
            body["precision"] = precision
        if options is not None:
            body["options"] = dict(options)
        if sweep is not None:
            body["sweep"] = False if sweep is False else _job_id(sweep)  # True: refused by _job_id
        handle = FusionHandle(self, self._request("POST", "fusion/plans/", json=body))
        return self._wait_fusion(handle, wait, timeout, on_progress)

    def fusion_plans(self) -> list[dict[str, Any]]:
        """Your team's fusion plans, newest first."""
        return self._list("fusion/plans/")

    def fusion_plan_status(self, plan: int | FusionHandle) -> FusionHandle:
        """A plan as it is now: state, progress, and once it succeeded ``result``."""
        return FusionHandle(self, self._request("GET", f"fusion/plans/{_job_id(plan)}/"))

    def fusion_plan_result(self, plan: int | FusionHandle) -> dict[str, Any]:
        """A succeeded plan's comparison: networks, sequential_ms, plan_ms, fuse_all_ms, plan_ratio,
        fuse_all_ratio (sequential / strategy: > 1 wins), correct, and the whole ``data``."""
        handle = self.fusion_plan_status(plan)
        if handle.state != "succeeded" or handle.result is None:
            reason = f": {handle.failure_reason}" if handle.failure_reason else ""
            raise ClientError(None, f"plan #{handle.id} is {handle.state}{reason}; it has no result", handle.data)
        return handle.result

    # -- sharing ---------------------------------------------------------------------------------

    def sharing_sweep(
        self,
        device: int | str | dict[str, Any],
        *,
        spec: dict[str, Any] | None = None,
        time_budget_s: float | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> SharingHandle:
        """Queue a sharing sweep on an OpenCL ``device`` (id or name): R tenants sharing it
        exclusively, time-only, space-only and space-time. ``spec`` holds ``SharingSpec``'s keys
        (shapes as ``[m, n, k]`` or ``"256x128x1152"``, networks, tenants, strategies, warmup, runs,
        seed, memory_cap_bytes, ceiling; the rest take their defaults: the paper's three shapes, R
        from 1 to 120, every strategy but CLBlast's). ``time_budget_s``: stop measuring after this
        long and keep what was measured (default and most: the server's task limit less 300 s).

        With ``wait=True`` this returns once the sweep succeeded (``handle.result`` is its summary)
        and raises ``JobFailed`` / ``WaitTimeout`` like ``JobHandle.wait``."""
        body: dict[str, Any] = {"device": self._device_id(device)}
        if spec is not None:
            body["spec"] = _sharing_spec(spec)
        if time_budget_s is not None:
            body["time_budget_s"] = time_budget_s
        handle = SharingHandle(self, self._request("POST", "sharing/sweeps/", json=body))
        if wait:
            handle.wait(timeout=timeout, on_progress=on_progress)
        return handle

    def sharing_sweeps(self) -> list[dict[str, Any]]:
        """Your team's sharing sweeps, newest first (state, progress, device, settings)."""
        return self._list("sharing/sweeps/")

    def sharing_sweep_status(self, sweep: int | SharingHandle) -> SharingHandle:
        """A sweep as it is now: state, progress, and once it succeeded ``result`` (device, spec,
        workloads, ceiling, table1, largest_tenants, notes, complete, not_measured, elapsed_s,
        ``row_counts``)."""
        return SharingHandle(self, self._request("GET", f"sharing/sweeps/{_job_id(sweep)}/"))

    def sharing_rows(
        self,
        sweep: int | SharingHandle,
        *,
        workload: str | None = None,
        strategy: str | None = None,
        tenants: int | None = None,
        status: str | None = None,
        detail: bool = False,
    ) -> list[dict[str, Any]]:
        """A succeeded sweep's rows (every page) in the order they were measured, filtered by
        ``workload`` (``"256x128x1152"`` or a network's name), ``strategy``, ``tenants`` (R) and
        ``status`` (ok, memory_bound, unsupported, error). Each row: throughput_gflops,
        throughput_per_s, latency_p50_ms, latency_p99_ms, straggler_gap_ms and its ratio,
        memory_bytes, correct, error; ``detail=True`` adds the whole row (samples) as ``data``."""
        handle = self.sharing_sweep_status(sweep)
        if handle.state != "succeeded":
            reason = f": {handle.failure_reason}" if handle.failure_reason else ""
            raise ClientError(None, f"sweep #{handle.id} is {handle.state}{reason}; it has no rows", handle.data)
        params: dict[str, Any] = {}
        for key, value in (("workload", workload), ("strategy", strategy), ("tenants", tenants), ("status", status)):
            if value is not None:
                params[key] = value
        if detail:
            params["detail"] = "true"
        return self._list(f"sharing/sweeps/{handle.id}/rows/", params)

    # -- remote runs -----------------------------------------------------------------------------

    def remote_run(
        self,
        model: int | str | os.PathLike[str] | bytes | Graph | dict[str, Any],
        device: int | str | dict[str, Any],
        profiles: Iterable[str],
        *,
        requests: int | None = None,
        warmup: int | None = None,
        payload: str | None = None,
        seed: int | None = None,
        threads: int | None = None,
        cores: Iterable[int] | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> RemoteHandle:
        """Queue a remote run: ``model`` (an id, or anything ``upload`` takes; an image model) served
        by the CPU ``device`` (id or name) and measured from a client under each of ``profiles``
        (1 to 8: presets such as campus_wifi, lte, cellular_hotspot; your team's stored profiles;
        ``unshaped``). ``requests`` per profile (server default 20), ``warmup`` (3), ``payload``
        (jpeg, the default: the lab's phone photo; png; tensor: the photo preprocessed on the
        client), ``seed`` (0), the server's ``threads`` and ``cores``.

        With ``wait=True`` this returns once the run succeeded (``handle.result`` is what it
        measured) and raises ``JobFailed`` / ``WaitTimeout`` like ``JobHandle.wait``."""
        if isinstance(profiles, str | bytes):
            raise InputError(f"profiles= takes a list of profile names, not the string {profiles!r}; wrap it in [...]")
        if isinstance(model, bool):
            raise InputError(f"a model is an id, a file path, bytes or a Graph, not {model!r}")
        model_id = model if isinstance(model, int) else self.upload(model)
        body: dict[str, Any] = {"model": model_id, "device": self._device_id(device), "profiles": list(profiles)}
        for key, value in (
            ("requests", requests),
            ("warmup", warmup),
            ("payload", payload),
            ("seed", seed),
            ("threads", threads),
        ):
            if value is not None:
                body[key] = value
        if cores is not None:
            body["cores"] = list(cores)
        handle = RemoteHandle(self, self._request("POST", "remote/runs/", json=body))
        if wait:
            handle.wait(timeout=timeout, on_progress=on_progress)
        return handle

    def remote_runs(self) -> list[dict[str, Any]]:
        """Your team's remote runs, newest first (state, progress, model, device, settings)."""
        return self._list("remote/runs/")

    def remote_run_status(self, run: int | RemoteHandle) -> RemoteHandle:
        """A run as it is now: state, progress, and once it succeeded ``result`` (model_name, payload,
        payload_bytes, load_ms, ``profiles`` in the order asked, ``data`` with every request)."""
        return RemoteHandle(self, self._request("GET", f"remote/runs/{_job_id(run)}/"))

    def wait_for_remote_run(
        self,
        run: int | RemoteHandle,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> dict[str, Any]:
        """Poll until the run finished; its result. Raises ``JobFailed`` with the server's failure
        reason, ``WaitTimeout`` after ``timeout`` seconds (it keeps running on the server)."""
        return self.remote_run_status(run).wait(timeout=timeout, on_progress=on_progress)

    # -- model selection -------------------------------------------------------------------------

    def select(
        self,
        device: int | str | dict[str, Any],
        models: Iterable[int],
        sla_ms: float,
        input_ms: float | None = None,
        network_profile: str | None = None,
        input_bytes: int | None = None,
        threshold_ms: float = 0,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """CNNSelect's choice for one request served on ``device`` (id or name) among your team's
        ``models`` (ids), T_input given as ``input_ms`` or estimated from ``network_profile`` (a
        preset: campus_wifi, lte, cellular_hotspot, prototype_wifi; or one of your team's) for an
        input of ``input_bytes`` (the server's default: 330 KB). The answer: ``chosen`` (model id
        and name), ``probabilities`` per candidate name, ``base`` (m*), ``exploration`` (M_E),
        ``t_budget``, ``t_lower``, ``t_upper``, ``t_explore``, ``fallback``, ``utilities``, ``why``
        and the ``candidates`` with their accuracy and latency profile and where each came from."""
        body: dict[str, Any] = {
            "device": self._device_id(device),
            "models": _model_ids(models),
            "sla_ms": sla_ms,
            "threshold_ms": threshold_ms,
        }
        for key, value in (
            ("input_ms", input_ms),
            ("network_profile", network_profile),
            ("input_bytes", input_bytes),
            ("seed", seed),
        ):
            if value is not None:
                body[key] = value
        return dict(self._request("POST", "select/", json=body))

    # -- network profiles ------------------------------------------------------------------------

    def network_profiles(self) -> list[dict[str, Any]]:
        """Every network profile a selection can name: the paper's presets, then your team's,
        each with its latency, throughput, spread, source and mean transfer of 330 KB."""
        return list(self._request("GET", "network-profiles/")["results"])

    def store_network_profile(self, name: str, **fields: Any) -> dict[str, Any]:
        """Store a profile for your team: ``transfers=[[bytes, seconds], ...]`` (recorded) or
        ``latency_ms``, ``throughput_mbps``, ``cv`` (custom); ``source`` says where it came from."""
        return dict(self._request("POST", "network-profiles/", json={"name": name, **fields}))

    def probe_transfer(self, direction: str, nbytes: int) -> float:
        """Seconds one transfer of ``nbytes`` to (``"upload"``) or from (``"download"``) the
        server's network probe took, from the first byte sent to the last received."""
        from latencylab.network_recording import DOWNLOAD, UPLOAD

        if direction == UPLOAD:
            body = _probe_bytes(nbytes)
            t0 = time.perf_counter()
            resp = self._send("POST", "network-probe/", data=body, headers={"Content-Type": "application/octet-stream"})
            seconds = time.perf_counter() - t0
            got = resp.json().get("bytes")
        elif direction == DOWNLOAD:
            t0 = time.perf_counter()
            resp = self._send("GET", "network-probe/", params={"bytes": nbytes})
            seconds = time.perf_counter() - t0
            got = len(resp.content)
        else:
            raise InputError(f"a probe transfer is an upload or a download, not {direction!r}")
        if got != nbytes:
            raise ClientError(None, f"the network probe's {direction} of {nbytes} bytes moved {got}: cut short")
        return seconds

    def record_network_profile(
        self,
        name: str,
        sizes: Sequence[int] | None = None,
        rounds: int | None = None,
        *,
        seed: int = 0,
        save: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Time real uploads and downloads between this machine and the server
        (``latencylab.network_recording``) and, with ``save``, store them as your team's recorded
        profile ``name``. The answer: ``transfers`` (direction, bytes, seconds), ``upload_mbps``
        and ``download_mbps`` (each direction's own line), and ``profile`` (the stored one, with
        the fitted latency, throughput and spread) or None."""
        from latencylab import network_recording as rec

        plan = tuple(sizes) if sizes is not None else rec.DEFAULT_SIZES
        count = rounds if rounds is not None else rec.DEFAULT_ROUNDS
        try:
            rec.check_plan(plan, count)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if save:  # a name the server would refuse is refused before any transfer is timed
            taken = {p["name"]: p["stored_kind"] for p in self.network_profiles()}
            if name in taken:
                what = "a built-in preset" if taken[name] == "preset" else "your team's already"
                raise InputError(f"network profile {name!r} is {what}; pick another name")
        timed = rec.record(self.probe_transfer, plan, count, seed=seed, progress=progress)
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        stored = None
        if save:
            source = rec.describe(timed, self.url, socket.gethostname(), when)
            stored = self.store_network_profile(name, transfers=[[t.nbytes, t.seconds] for t in timed], source=source)
        return {
            "name": name,
            "transfers": [{"direction": t.direction, "bytes": t.nbytes, "seconds": t.seconds} for t in timed],
            "upload_mbps": rec.throughput_mbps(timed, rec.UPLOAD),
            "download_mbps": rec.throughput_mbps(timed, rec.DOWNLOAD),
            "profile": stored,
        }

    def simulate_selection(self, **spec: Any) -> dict[str, Any]:
        """Queue a simulation of CNNSelect against greedy, fastest and an oracle (seed 002, section
        5.2); the queued simulation with its frozen ``spec``. ``scenario="paper"`` runs table 5's
        models; ``device=`` (id or name) with ``models=[ids]`` runs your models with their profiles
        on the device. Optional: ``sla_targets_ms``, ``profiles`` (network profile names),
        ``requests`` (per point, default 10,000), ``seed``, ``threshold_ms``, ``policies``,
        ``input_bytes``, ``title``. The trainer runs it: ``wait_for_selection_simulation(id)``."""
        body = dict(spec)
        if body.get("device") is not None:
            body["device"] = self._device_id(body["device"])
        if body.get("models") is not None:
            body["models"] = _model_ids(body["models"])
        for key in ("sla_targets_ms", "profiles", "policies"):
            if isinstance(body.get(key), str):
                raise InputError(f"{key}= takes a list, not the string {body[key]!r}; wrap it in [...]")
            if body.get(key) is not None:
                body[key] = list(body[key])
        return dict(self._request("POST", "selection/simulations/", json=body))

    def selection_simulations(self) -> list[dict[str, Any]]:
        """Your team's simulations, newest first (state, progress, title, times; no spec or result)."""
        return self._list("selection/simulations/")

    def selection_simulation(self, simulation: int | dict[str, Any]) -> dict[str, Any]:
        """A simulation as it is now: state, ``spec``, and once it succeeded ``result`` (``points``:
        per policy, SLA target and network profile, the attainment, effective accuracy, end-to-end
        statistics and model usage)."""
        return dict(self._request("GET", f"selection/simulations/{_simulation_id(simulation)}/"))

    def wait_for_selection_simulation(
        self, simulation: int | dict[str, Any], timeout: float | None = None, poll: float = 0.5
    ) -> dict[str, Any]:
        """Poll until the simulation finished; the succeeded simulation (with its ``result``).
        Raises ``JobFailed`` with the server's failure reason when it failed, ``WaitTimeout``
        after ``timeout`` seconds (it keeps running on the server: wait again)."""
        pk = _simulation_id(simulation)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            data = self.selection_simulation(pk)
            if data["state"] == "succeeded":
                return data
            if data["state"] == "failed":
                raise JobFailed(f"simulation #{pk} failed: {data.get('failure_reason') or 'no reason given'}", data)
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(
                    f"simulation #{pk} is still {data['state']} after {timeout:g} s; it keeps running on the "
                    "server (wait again)",
                    data,
                )
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))


def _model_ids(models: Iterable[int]) -> list[int]:
    """Candidate models as the API takes them: a list of ids."""
    if isinstance(models, str | bytes | dict):
        raise InputError(f"models= takes a list of model ids, not {models!r}")
    ids = list(models)
    if not all(isinstance(m, int) and not isinstance(m, bool) for m in ids):
        raise InputError(f"models= takes model ids (integers), got {ids!r}")
    return ids


def _simulation_id(simulation: int | dict[str, Any]) -> int:
    """The id of a simulation given as an id or as the server's answer."""
    if isinstance(simulation, dict):
        simulation = simulation.get("id")  # type: ignore[assignment]
    if isinstance(simulation, bool) or not isinstance(simulation, int):
        raise InputError(f"a simulation is an id (an integer) or the server's answer, not {simulation!r}")
    return simulation


_SHAPE = re.compile(r"^\s*([0-9]+)\s*x\s*([0-9]+)\s*x\s*([0-9]+)\s*$")


def _sharing_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A sharing spec as the API takes it: shapes given as ``"MxNxK"`` become ``[m, n, k]``."""
    if not isinstance(spec, dict):
        raise InputError(f"spec= takes a dict of SharingSpec keys, not {spec!r}")
    out = dict(spec)
    shapes = out.get("shapes")
    if isinstance(shapes, str):
        raise InputError(f"spec['shapes'] takes a list of shapes, not the string {shapes!r}; wrap it in [...]")
    if isinstance(shapes, list | tuple):
        normalized: list[Any] = []
        for shape in shapes:
            if isinstance(shape, str):
                match = _SHAPE.match(shape)
                if match is None:
                    raise InputError(f"a shape is MxNxK (256x128x1152) or [m, n, k], not {shape!r}")
                normalized.append([int(v) for v in match.groups()])
            else:
                normalized.append(list(shape) if isinstance(shape, tuple) else shape)
        out["shapes"] = normalized
    return out


def _job_id(job: int | JobHandle) -> int:
    """The id of a job given as an id or a handle."""
    if isinstance(job, JobHandle):
        return job.id
    if isinstance(job, bool) or not isinstance(job, int):
        raise InputError(f"a job is an id (an integer) or a handle, not {job!r}")
    return job


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


__all__ = [
    "Client",
    "ClientError",
    "FusionHandle",
    "InputError",
    "JobFailed",
    "JobHandle",
    "ModelFailed",
    "Predictions",
    "RemoteHandle",
    "SharingHandle",
    "WaitTimeout",
    "encode_architecture",
]
