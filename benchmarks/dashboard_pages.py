"""Server time of the dashboard's heaviest pages: a job of a 500-operator model and the overview
of a 200-device fleet (target: under 300 ms each).

    .venv/bin/python benchmarks/dashboard_pages.py
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/latencylab .venv/bin/python benchmarks/dashboard_pages.py

It works in a throw-away database (``<name>_dashboard_bench`` on PostgreSQL, a SQLite file under
var/ otherwise, dropped at the end). The job's result is stored through ``claim_job`` and
``ingest_result`` (100 raw samples, one timing per operator, batch norms and activations fused
as onnxruntime fuses them); the other jobs that fill the fleet's queues are plain rows, since
what is measured is reading pages. Each page is requested in-process with Django's test client
(no network): a few warm-up requests, then REQUESTS timed ones. Prints median and p90 and writes
<var>/benchmarks/dashboard_pages.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

from devicelab.backends.base import DeviceInfo  # noqa: E402
from devicelab.graph import graph_to_json  # noqa: E402
from tests.dashboard.factories import graph_with_ops, measured_result  # noqa: E402

TARGET_MS = 300.0
OPERATORS = 500
SAMPLES = 100
DEVICES = 200


def _populate() -> dict[str, str]:
    """The fleet, the teams, the 500-operator model and its measured job; returns the page URLs."""
    from server.accounts.services import create_user_with_token
    from server.devices.models import Device, DeviceStatus
    from server.devices.services import register_devices
    from server.networks.services import upload_model
    from server.profiling.models import JobState, ProfilingJob
    from server.profiling.services import claim_job, ingest_result

    user, _ = create_user_with_token("bench", "bench")
    other, _ = create_user_with_token("rival", "rival")
    team, rival_team = user.memberships.get().team, other.memberships.get().team

    infos = [
        DeviceInfo(
            ("cpu", "android", "opencl")[i % 3],
            f"bench:{i}",
            f"bench device {i:03d}",
            {
                "cpu_model": f"SoC {i % 7}",
                "arch": "arm64",
                "logical_cores": 8,
                "model": f"Phone {i % 5}",
                "soc": "sm8550",
            },
        )
        for i in range(DEVICES)
    ]
    devices = register_devices("bench-worker", infos)
    offline = [d.pk for d in devices[::10]]
    Device.objects.filter(pk__in=offline).update(status=DeviceStatus.OFFLINE, offline_since=timezone.now())
    online = [d for d in devices if d.pk not in offline]

    graph = graph_with_ops(OPERATORS, name="bench-500")
    assert len(graph.operators) == OPERATORS
    model, _ = upload_model(team, user, graph_to_json(graph).encode(), "bench-500.json")
    small, _ = upload_model(team, user, graph_to_json(graph_with_ops(30, name="bench-30")).encode(), "bench-30.json")
    rival_model, _ = upload_model(rival_team, other, graph_to_json(graph_with_ops(30, name="r")).encode(), "r.json")

    def job(team: Any, model: Any, device: Any) -> ProfilingJob:
        return ProfilingJob.objects.create(team=team, model=model, device=device, settings={"threads": 1, "runs": 100})

    measured = []
    for scale, device in ((1.0, online[0]), (1.4, online[1])):
        j = job(team, model, device)
        token = f"bench-{uuid.uuid4().hex[:8]}"
        assert claim_job(j.pk, token) is not None
        assert ingest_result(j.pk, token, measured_result(graph, samples=SAMPLES, scale=scale)) is not None
        measured.append(j)
    # Queues and current jobs across the fleet: both teams' jobs, some running.
    for i, device in enumerate(online[2:]):
        owner, net = (team, small) if i % 2 else (rival_team, rival_model)
        for _ in range(i % 4):
            job(owner, net, device)
        if i % 5 == 0:
            running = job(owner, net, device)
            ProfilingJob.objects.filter(pk=running.pk).update(
                state=JobState.RUNNING, claimed_by="bench", started_at=timezone.now(), progress=0.3
            )
    return {
        f"job page ({OPERATORS} operators, {SAMPLES} samples)": f"/jobs/{measured[0].pk}/",
        f"overview ({DEVICES} devices)": "/",
        f"comparison (2 x {OPERATORS} operators)": f"/compare/?a={measured[0].pk}&b={measured[1].pk}",
        f"model page ({OPERATORS} operators)": f"/models/{model.pk}/",
    }


def _time_page(client: Client, url: str, requests: int) -> dict[str, Any]:
    for _ in range(3):  # warm-up: template loading, plotly's validators, connection
        assert client.get(url).status_code == 200, url
    queries: list[str] = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        body = client.get(url).content
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        resp = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert resp.status_code == 200
    times.sort()
    return {
        "url": url,
        "median_ms": round(statistics.median(times), 1),
        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 1),
        "min_ms": round(times[0], 1),
        "queries": len(queries),
        "html_kib": round(len(body) / 1024, 1),
    }


def main() -> None:
    """Measure, print, and write <var>/benchmarks/dashboard_pages.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page")
    args = parser.parse_args()
    postgres = connection.vendor == "postgresql"
    test_settings = connection.settings_dict.setdefault("TEST", {})
    test_settings["NAME"] = (
        f"{connection.settings_dict['NAME']}_dashboard_bench"
        if postgres
        else str(settings.VAR_DIR / "benchmarks" / "dashboard_pages.sqlite3")
    )
    Path(settings.VAR_DIR, "benchmarks").mkdir(parents=True, exist_ok=True)
    original_name = connection.settings_dict["NAME"]
    media = tempfile.TemporaryDirectory(prefix="dashboard-bench-")
    settings.MEDIA_ROOT = media.name
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        from django.contrib.auth import get_user_model

        pages = _populate()
        client = Client(SERVER_NAME="localhost")
        client.force_login(get_user_model().objects.get(username="bench"))
        report: dict[str, Any] = {
            "database": connection.vendor,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "target_ms": TARGET_MS,
            "requests_per_page": args.requests,
            "pages": {},
        }
        for name, url in pages.items():
            timing = _time_page(client, url, args.requests)
            timing["under_target"] = timing["median_ms"] < TARGET_MS
            report["pages"][name] = timing
            print(
                f"{name:<40} median {timing['median_ms']:7.1f} ms  p90 {timing['p90_ms']:7.1f} ms  "
                f"{timing['queries']} queries  {timing['html_kib']} KiB",
                flush=True,
            )
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)
        media.cleanup()
    out = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "dashboard_pages.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
