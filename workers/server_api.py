"""The lab machine's side of the lab API: one method per call of ``devicelab.lab_protocol``, over
a kept-alive HTTP session with ``Authorization: Lab <token>``.

Errors say who can act on them: ``ServerUnreachable`` (no answer, or a 5xx from the server or a
proxy: try again later), ``TokenRevoked`` (401: the machine must stop; the message is the server's),
``Refused`` (any other 4xx: this request is wrong, the server says why).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import orjson
import requests

from devicelab import lab_protocol as wire

log = logging.getLogger("latencylab.workers")

R = TypeVar("R")

CHUNK_BYTES = 1 << 20


class ServerUnreachable(ConnectionError):
    """The server did not answer (down, restarting, or the network): keep what you have and retry."""


class TokenRevoked(PermissionError):
    """The server refused the lab token (revoked or unknown): the machine stops."""


class Refused(RuntimeError):
    """The server refused this call (a 4xx other than 401), saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"the server refused the call ({status}): {message}")
        self.status = status


class Unsendable(ValueError):
    """A record with no JSON form (a NaN or an infinity in it): this side's bug, not the server's
    absence, so keeping it to post again later would never help."""


class ChecksumMismatch(ValueError):
    """A downloaded file's bytes do not have the SHA-256 they were asked for."""


def _reason(exc: Exception) -> str:
    """The useful end of a requests error ("[Errno 111] Connection refused", "read timed out")."""
    text = str(exc)
    found = re.search(r"\[Errno -?\d+\][^'\")]*", text)
    if found:
        return found.group(0).strip()
    if isinstance(exc, requests.Timeout):
        return "timed out"
    return f"{type(exc).__name__}: {text[:200]}"


def _message(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return " ".join(resp.text.split())[:300] or resp.reason or "no message"
    if isinstance(body, dict) and "detail" in body:
        detail = body["detail"]
        return detail if isinstance(detail, str) else str(detail)
    return str(body)[:300]


class LabServer:
    """The LatencyLab server as a lab machine sees it."""

    def __init__(self, url: str, token: str, session: requests.Session | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()
        self.session.headers.update({"Authorization": f"{wire.AUTH_KEYWORD} {token}", "Accept": "application/json"})
        # The environment's proxies (HTTPS_PROXY, NO_PROXY, ...) and CA bundle are read once, here:
        # with trust_env requests reads them and ~/.netrc again on every call (half a millisecond
        # of each), and a ~/.netrc entry for the server's host would replace the lab token by its
        # login.
        self.session.trust_env = False
        self.session.proxies.update(requests.utils.get_environ_proxies(self.url))
        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        if bundle and self.session.verify is True:
            self.session.verify = bundle

    def __repr__(self) -> str:
        return f"<LabServer {self.url}>"

    def _send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        try:
            resp = self.session.request(method, self.url + path, timeout=self.timeout, **kwargs)
        except requests.exceptions.InvalidJSONError as exc:  # raised before anything is sent
            raise Unsendable(f"{method} {self.url}{path}: the body has no JSON form: {exc}") from None
        except requests.RequestException as exc:
            raise ServerUnreachable(f"{method} {self.url}{path}: {_reason(exc)}") from None
        if resp.status_code >= 500:
            # The server (or a proxy before it) failed, not the request: a database connection
            # dropped, a restart. What the machine holds (a result) waits and is posted again.
            raise ServerUnreachable(f"{method} {self.url}{path}: {resp.status_code} {resp.reason}")
        if resp.status_code == 401:
            raise TokenRevoked(_message(resp))
        if resp.status_code >= 400:
            raise Refused(resp.status_code, _message(resp))
        return resp

    def _call(self, path: str, record: Any, answer: type[R]) -> R:
        try:
            body = orjson.dumps(wire.as_json(record))
        except TypeError as exc:  # orjson.JSONEncodeError: a value with no JSON form
            raise Unsendable(f"POST {self.url}{path}: the body has no JSON form: {exc}") from None
        resp = self._send("POST", path, data=body, headers={"Content-Type": "application/json"})
        return answer.from_dict(resp.json())  # type: ignore[attr-defined,no-any-return]

    def hello(self) -> wire.Hello:
        """Check the token (``TokenRevoked`` if refused); the machine's name."""
        return wire.Hello.from_dict(self._send("GET", "/api/lab/hello").json())

    # -- devices
    def register(self, reg: wire.Registration) -> wire.Registered:
        """Register devices (``POST /api/lab/devices``)."""
        return self._call("/api/lab/devices", reg, wire.Registered)

    def heartbeat(self, hb: wire.Heartbeat) -> wire.HeartbeatAnswer:
        """Heart-beat the devices that are there."""
        return self._call("/api/lab/heartbeat", hb, wire.HeartbeatAnswer)

    def devices_gone(self, gone: wire.DevicesGone) -> wire.Outcome:
        """Devices left: they go offline now with their reasons."""
        return self._call("/api/lab/devices/gone", gone, wire.Outcome)

    def fail_running(self, device_pk: int, ending: wire.Ending) -> wire.Outcome:
        """A device's process died: this run's running jobs on it fail."""
        return self._call(f"/api/lab/devices/{device_pk}/fail-running", ending, wire.Outcome)

    # -- jobs
    def claim(self, job_id: int, claim: wire.Claim) -> wire.ClaimAnswer:
        """Claim a job the device's queue delivered."""
        return self._call(f"/api/lab/jobs/{job_id}/claim", claim, wire.ClaimAnswer)

    def progress(self, job_id: int, progress: wire.Progress) -> bool:
        """Report progress; False: stop (cancelled or taken over)."""
        return self._call(f"/api/lab/jobs/{job_id}/progress", progress, wire.ProgressAnswer).go_on

    def post_result(self, job_id: int, post: wire.ResultPost) -> wire.ResultAnswer:
        """Post an attempt's result (idempotent)."""
        return self._call(f"/api/lab/jobs/{job_id}/result", post, wire.ResultAnswer)

    def post_results(self, batch: wire.ResultBatch) -> wire.ResultBatchAnswer:
        """Post several results at once (idempotent), each answered; ``Refused`` (404) from a
        server that predates the call."""
        return self._call("/api/lab/results", batch, wire.ResultBatchAnswer)

    def fail(self, job_id: int, ending: wire.Ending) -> wire.Outcome:
        """The job failed here, saying why."""
        return self._call(f"/api/lab/jobs/{job_id}/fail", ending, wire.Outcome)

    def retry(self, job_id: int, ending: wire.Ending) -> wire.Outcome:
        """The attempt was lost to the device: queue the job again."""
        return self._call(f"/api/lab/jobs/{job_id}/retry", ending, wire.Outcome)

    # -- files
    def download(self, ref: wire.ModelRef, dest: Path) -> None:
        """Stream a model file to ``dest``, checking its SHA-256 as it arrives
        (``ChecksumMismatch``: the bytes are not the ones asked for; nothing is left at ``dest``)."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as out:
                resp = self._send("GET", ref.path(), stream=True)
                try:
                    for chunk in resp.iter_content(CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
                except requests.RequestException as exc:
                    raise ServerUnreachable(f"GET {ref.path()}: the download broke off: {exc}") from None
                finally:
                    resp.close()
            got = digest.hexdigest()
            if got != ref.sha256:
                raise ChecksumMismatch(
                    f"the file of model {ref.filename!r} arrived with sha256 {got}, not {ref.sha256}"
                )
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def close(self) -> None:
        """Close the kept-alive connections."""
        self.session.close()


__all__ = ["ChecksumMismatch", "LabServer", "Refused", "ServerUnreachable", "TokenRevoked", "Unsendable"]
