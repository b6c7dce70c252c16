"""Phones through the API: ``?kind=android`` lists them with their hardware and what they offer,
an offline phone says why, and a phone's result shows its aggregates (median and p90 null, no
samples), flags, peak memory and measuring conditions; the schema documents all of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from server.devices.models import Device, DeviceStatus
from tests.server.factories import tiny_graph
from tests.server.phone_factories import PIXEL_7_HARDWARE, finish_phone_job, make_phone

pytestmark = pytest.mark.django_db

HOT_FLAG = "hot: 46.2 °C at start > 40 °C"


def test_devices_of_kind_android_are_the_phones_with_their_hardware_and_offer(
    api: Any, make_device: Callable[..., Any]
) -> None:
    phone = make_phone(make_device)
    make_device("cpu")
    response = api.get("/api/devices/", {"kind": "android"})
    assert response.status_code == 200
    (row,) = response.json()["results"]
    assert row["id"] == phone.pk and row["kind"] == "android" and row["offline_reason"] == ""
    hardware = row["hardware"]
    for key in ("manufacturer", "model", "soc", "abi", "android_version", "sdk", "gpu", "ram_mb"):
        assert hardware[key] == PIXEL_7_HARDWARE[key], key
    assert hardware["cpu_clusters"][2] == {"name": "big", "cores": [6, 7], "max_khz": 2850000}
    caps = row["capabilities"]
    assert caps["delegates"] == ["cpu", "xnnpack", "gpu", "nnapi"] and caps["cools_down"] is True
    assert caps["core_clusters"] == {"little": [0, 1, 2, 3], "mid": [4, 5], "big": [6, 7]}


def test_an_offline_phone_says_why(api: Any, make_device: Callable[..., Any]) -> None:
    phone = make_phone(make_device)
    make_phone(make_device, name="still-here")
    reason = "unplugged: adb no longer lists serial 28021FDH2000AB"
    Device.objects.filter(pk=phone.pk).update(status=DeviceStatus.OFFLINE, offline_reason=reason)
    rows = api.get("/api/devices/", {"kind": "android", "status": "offline"}).json()["results"]
    assert [(r["id"], r["offline_reason"]) for r in rows] == [(phone.pk, reason)]
    assert api.get(f"/api/devices/{phone.pk}/").json()["offline_reason"] == reason


def test_a_phone_result_shows_aggregates_flags_memory_and_conditions(
    api: Any, member: Any, make_device: Callable[..., Any], make_network: Callable[..., Any]
) -> None:
    phone = make_phone(make_device)
    graph = tiny_graph("phone-api")
    model = make_network(member.team, graph)
    created = api.post(
        "/api/jobs/",
        {
            "model": model.pk,
            "device": phone.pk,
            "settings": {"delegate": "xnnpack", "cores": "big", "cooldown_c": 40, "cooldown_max_s": 120},
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    settings = created.json()["settings"]
    assert settings["delegate"] == "xnnpack" and settings["cores"] == [6, 7] and settings["cooldown_c"] == 40

    from server.profiling.models import ProfilingJob

    job = finish_phone_job(ProfilingJob.objects.get(pk=created.json()["id"]), graph, flags=[HOT_FLAG])
    result = api.get(f"/api/jobs/{job.pk}/").json()["result"]
    e2e = result["e2e"]
    assert e2e["median"] is None and e2e["p90"] is None
    assert e2e["mean"] == pytest.approx(job.result.e2e_mean) and e2e["n"] == 30
    assert e2e["std"] == pytest.approx(job.result.e2e_mean * 0.02) and e2e["cv"] == pytest.approx(0.02)
    assert result["samples_ms"] == []
    assert result["flags"] == [HOT_FLAG] and result["peak_memory_mb"] == pytest.approx(41.9)
    env = result["environment"]
    assert env["delegate"] == "xnnpack" and env["cluster"] == "big"
    assert env["temperatures_before_c"]["cpu-1-2"] == 38.5
    assert env["cooldown"] == {"threshold_c": 40.0, "max_s": 120.0, "waited_s": 12.5, "reached": True}
    timed = [o for o in result["operators"] if o["mean"] is not None]
    assert timed and all(o["median"] is None and o["n"] == 30 for o in timed)
    folded = [o for o in result["operators"] if o["mean"] is None]
    assert folded and all(o["fused_into"] for o in folded)


def test_a_cpu_result_has_no_flags_and_no_peak_memory(
    api: Any, member: Any, make_job: Callable[..., Any], make_network: Callable[..., Any]
) -> None:
    from server.profiling.services import claim_job, ingest_result
    from tests.dashboard.factories import measured_result

    graph = tiny_graph("cpu-api")
    job = make_job(member.team, model=make_network(member.team, graph))
    assert claim_job(job.pk, "t") and ingest_result(job.pk, "t", measured_result(graph, samples=12))
    result = api.get(f"/api/jobs/{job.pk}/").json()["result"]
    assert result["flags"] == [] and result["peak_memory_mb"] is None
    assert result["e2e"]["median"] is not None and len(result["samples_ms"]) == 12


def test_the_schema_documents_offline_reasons_flags_memory_and_null_medians() -> None:
    schema = APIClient().get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    device = components["Device"]["properties"]
    assert {"offline_reason", "capabilities", "hardware"} <= set(device)
    assert "android_version" in device["hardware"]["description"]
    result = components["JobResult"]["properties"]
    assert result["flags"]["type"] == "array" and result["flags"]["readOnly"] is True
    assert result["peak_memory_mb"]["nullable"] is True
    assert "temperatures_before_c" in result["environment"]["description"]
    e2e = components["E2EStats"]["properties"]
    assert e2e["median"]["nullable"] is True and "aggregates only" in e2e["median"]["description"]
    assert e2e["p90"]["nullable"] is True
    listing = schema["paths"]["/api/devices/"]["get"]
    assert "?kind=android" in listing["description"]
