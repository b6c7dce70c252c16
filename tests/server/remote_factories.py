"""A remote run as a worker reports it, for the API, client, CLI, page and conformance tests:
``remote_on_device``'s result built from devicelab's own dataclasses and functions
(``RemoteRequest``, ``RemoteScenario``, ``summarize_profile``) with made-up timings, and a helper
that finishes a queued remote run through the services (claim, ingest) as its worker does.

The run: 5 requests per profile under ``unshaped`` and the ``lte`` preset, a 162,893-byte JPEG.
Unshaped, a request is 0.1 ms up, 20 to 24 ms on the server, 1.3 ms down; under LTE 160 to 200 ms
up and 100 to 120 ms down: the network is 92 % of LTE's end to end. Each request has a remainder
(the time none of the three parts holds) of 0.5 ms, 0.7 under LTE."""

from __future__ import annotations

from typing import Any

from devicelab.measure.stats import summarize
from devicelab.remote.client import RemoteMeasurement, RemoteRequest, RemoteScenario, profile_link
from devicelab.remote.on_device import summarize_profile
from devicelab.remote.results import RemoteRunRecord
from devicelab.remote.spec import RemoteSpec
from devicelab.selection.network_profiles import PRESETS

PROFILES = ("unshaped", "lte")
REQUESTS = 5
PAYLOAD_BYTES = 162_893
STAGES = {"decode_ms": 4.0, "resize_crop_ms": 3.0, "normalize_ms": 1.0, "compute_ms": 11.0, "postprocess_ms": 0.2}
TOP5 = [(409, 0.31), (530, 0.12), (892, 0.08), (426, 0.05), (999, 0.04)]


def _requests(profile: str) -> list[RemoteRequest]:
    out = []
    for i in range(REQUESTS):
        shaped = profile != "unshaped"
        upload, server, download = (160.0 + 10 * i, 20.0 + i, 100.0 + 5 * i) if shaped else (0.1, 20.0 + i, 1.3)
        remainder = 0.7 if shaped else 0.5
        out.append(
            RemoteRequest(
                upload_ms=upload,
                server_ms=server,
                download_ms=download,
                e2e_ms=upload + server + download + remainder,
                remainder_ms=remainder,
                upload_bytes=PAYLOAD_BYTES + 160,
                download_bytes=620,
                shape=profile_link(PRESETS[profile], 1.0 + 0.1 * i) if shaped else None,
                **STAGES,
            )
        )
    return out


def _measurement(profile: str) -> RemoteMeasurement:
    reqs = _requests(profile)
    return RemoteMeasurement(
        url="http://127.0.0.1:40000",
        content_type="image/jpeg",
        requests=reqs,
        upload=summarize([r.upload_ms for r in reqs]),
        server=summarize([r.server_ms for r in reqs]),
        download=summarize([r.download_ms for r in reqs]),
        e2e=summarize([r.e2e_ms for r in reqs]),
        compute=summarize([r.compute_ms for r in reqs]),
        top5=TOP5,
        warmup=1,
        remainder=summarize([r.remainder_ms for r in reqs]),
    )


def remote_spec() -> RemoteSpec:
    """The run's spec: unshaped and LTE, 5 requests, 1 warm-up, the JPEG."""
    return RemoteSpec(
        profiles=PROFILES, network_profiles={"unshaped": None, "lte": PRESETS["lte"]}, requests=REQUESTS, warmup=1
    )


def remote_result(model_name: str = "tiny_classifier", spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """``remote_on_device``'s result for the run (``spec``: the job's settings, to match them)."""
    spec = spec or remote_spec().as_dict()
    names = list(spec["profiles"])
    measured = {n: _measurement("unshaped" if n == "unshaped" else "lte") for n in names}
    scenario = RemoteScenario(
        model=model_name,
        load_ms=42.0,
        content_type="image/jpeg",
        payload_bytes=PAYLOAD_BYTES,
        results=measured,
        environment={"runtime": "onnxruntime 1.32.0", "threads": 1, "cores": [], "requests": spec["requests"]},
    )
    out = scenario.as_dict()
    out.update(
        {
            "spec": spec,
            "payload": spec["payload"],
            "summaries": [summarize_profile(n, measured[n]).as_dict() for n in names],
            "elapsed_s": 3.5,
        }
    )
    return out


def finish_remote(job: Any) -> Any:
    """Claim a queued remote run and store ``remote_result`` for it, as its worker does."""
    from server.profiling.services import claim_job
    from server.remote.services import ingest_remote

    token = f"test-remote-{job.pk}"
    assert claim_job(job.pk, token) is not None
    stored = ingest_remote(job.pk, token, RemoteRunRecord.from_dict(remote_result(job.model.name, job.settings)))
    assert stored is not None
    job.refresh_from_db()
    return stored
