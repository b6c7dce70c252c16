"""Phones on the dashboard: the fleet groups them by model beside the imported qed phones, a
phone's page shows its attributes, why it is offline and its thermal history, and results that
carry aggregates only (no median, no samples) appear in every list, chart and comparison."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import escape
from typing import Any

import pytest

from server.devices.models import Device, DeviceStatus
from server.predictors.qed_import import ensure_qed_device
from server.profiling.models import JobResult
from tests.dashboard.factories import graph_with_ops
from tests.server.phone_factories import GPU_NODE, finish_phone_job, make_phone

pytestmark = pytest.mark.django_db

HOT_FLAG = "hot: 46.2 °C at start > 40 °C"
THROTTLED_FLAG = "throttled: cpu7 at 1.2 of 2.85 GHz"


def _figure(html: str, element_id: str) -> dict[str, Any]:
    m = re.search(rf'id="{element_id}" data-figure><script type="application/json">(.*?)</script>', html, re.S)
    assert m, f"no figure {element_id}"
    return json.loads(m.group(1))


def _phone_job(team: Any, make_network: Callable, make_job: Callable, phone: Any, **kwargs: Any) -> Any:
    graph = graph_with_ops(15, name=kwargs.pop("name", "mobilenet-ish"))
    model = kwargs.pop("model", None) or make_network(team, graph)
    settings = {"delegate": kwargs.get("delegate", "xnnpack"), "cores": "big", "cooldown_c": 40, "cooldown_max_s": 120}
    job = make_job(team, model=model, device=phone, settings=settings)
    return finish_phone_job(job, graph, **kwargs)


def test_the_fleet_groups_phones_by_model_beside_imported_ones(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    pixel4 = make_phone(make_device, name="lab-pixel-4", model="Pixel 4", soc="SM8150")
    galaxy = make_phone(make_device, name="lab-s10", manufacturer="samsung", model="SM-G973F", soc="exynos9820")
    pixel7 = make_phone(make_device, name="lab-pixel-7")
    qed_pixel4, _ = ensure_qed_device("pixel4")
    qed_s10, _ = ensure_qed_device("s10")
    qed_iphone, _ = ensure_qed_device("iphone7")
    cpu = make_device()

    resp = web_client(me).get("/")
    groups = {g.model.name: g for g in resp.context["phone_groups"]}
    assert set(groups) == {"Google Pixel 4", "Samsung Galaxy S10", "Google Pixel 7", "Apple iPhone 7"}
    assert [d.pk for d in groups["Google Pixel 4"].measured] == [pixel4.pk]
    assert [d.pk for d in groups["Google Pixel 4"].imported] == [qed_pixel4.pk]
    assert [d.pk for d in groups["Samsung Galaxy S10"].measured] == [galaxy.pk]
    assert [d.pk for d in groups["Samsung Galaxy S10"].imported] == [qed_s10.pk]
    assert groups["Google Pixel 7"].imported == [] and [d.pk for d in groups["Google Pixel 7"].measured] == [pixel7.pk]
    assert groups["Apple iPhone 7"].measured == [] and [d.pk for d in groups["Apple iPhone 7"].imported] == [
        qed_iphone.pk
    ]
    assert all(cpu.pk not in [d.pk for d in [*g.measured, *g.imported]] for g in groups.values())

    html = resp.content.decode()
    row = re.search(r'<tr data-phone-model="qed:pixel4">(.*?)</tr>', html, re.S)
    assert row, "no row for the Pixel 4"
    assert "lab-pixel-4" in row.group(1) and f'href="/devices/{qed_pixel4.pk}/"' in row.group(1)
    assert "SM8150 / Snapdragon 855" in row.group(1)  # the phone's own SoC name beside the data's
    # The fleet table names a phone by maker, model, SoC, ABI and Android version.
    assert "Google Pixel 7 · GS201 · arm64-v8a · Android 14" in html


def test_a_cpu_only_lab_has_no_phones_section(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    make_device()
    resp = web_client(me).get("/")
    assert resp.context["phone_groups"] == [] and 'id="phones-by-model"' not in resp.content.decode()


def test_a_phone_page_shows_its_attributes_thermal_history_and_mean_latencies(
    make_member: Callable, web_client: Callable, make_device: Callable, make_network: Callable, make_job: Callable
) -> None:
    me = make_member()
    phone = make_phone(make_device)
    model = make_network(me.team, graph_with_ops(15, name="phone-net"))
    first = _phone_job(me.team, make_network, make_job, phone, model=model, finished_minutes_ago=30, hot_c=36.0)
    second = _phone_job(me.team, make_network, make_job, phone, model=model, finished_minutes_ago=5, hot_c=44.0)
    resp = web_client(me).get(f"/devices/{phone.pk}/")
    assert resp.status_code == 200
    html = resp.content.decode()
    for text in (
        "Google",
        "Pixel 7",
        "GS201",
        "arm64-v8a",
        "14 (SDK 34)",
        "little: cores 0-3 @ 1.80 GHz · mid: cores 4-5 @ 2.35 GHz · big: cores 6-7 @ 2.85 GHz",
        "ARM, Mali-G710, OpenGL ES 3.2 v1.r36p0",
        "7.4 GiB",
    ):
        assert text in html, text
    assert "<dt>SDK</dt>" not in html  # shown with the Android version

    thermal = _figure(html, "chart-thermal-history")
    traces = {t["name"]: t for t in thermal["data"]}
    assert set(traces) == {"hottest zone before", "hottest zone after", "battery before", "cool-down threshold"}
    assert traces["hottest zone before"]["y"] == [36.0, 44.0]
    assert traces["hottest zone after"]["y"] == [41.5, 49.5]
    assert [c[1] for c in traces["hottest zone before"]["customdata"]] == ["cpu-1-2", "cpu-1-2"]
    assert [c[0] for c in traces["hottest zone before"]["customdata"]] == [first.pk, second.pk]
    assert traces["battery before"]["y"] == [31.0, 31.0]
    assert traces["cool-down threshold"]["y"] == [40.0, 40.0]
    assert thermal["layout"]["yaxis"]["title"]["text"] == "temperature (°C)"

    # The latency history draws a phone's results at their mean (they have no median).
    latency = _figure(html, "chart-latency-history")
    (trace,) = latency["data"]
    assert trace["y"] == pytest.approx([first.result.e2e_mean, second.result.e2e_mean])
    assert "averages only" in trace["customdata"][0][1]
    assert latency["layout"]["yaxis"]["title"]["text"] == "latency (ms, median or mean)"
    assert 'id="same-model"' not in html  # no other Pixel 7 in the lab


def test_an_offline_phone_says_why_and_lists_its_model_twins(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    phone = make_phone(make_device, name="unplugged-pixel-4", model="Pixel 4")
    twin, _ = ensure_qed_device("pixel4")
    reason = "adb reports the phone 'unauthorized': accept the USB debugging prompt on it"
    Device.objects.filter(pk=phone.pk).update(status=DeviceStatus.OFFLINE, offline_reason=reason)
    client = web_client(me)
    html = client.get(f"/devices/{phone.pk}/").content.decode()
    assert 'id="offline-reason"' in html and "accept the USB debugging prompt" in html
    same = re.search(r'<section class="card" id="same-model">(.*?)</section>', html, re.S)
    assert same and f'href="/devices/{twin.pk}/"' in same.group(1) and "measurements from qed" in same.group(1)
    assert "Other Google Pixel 4 phones" in html
    # The imported twin's page points back at the measured phone.
    twin_html = client.get(f"/devices/{twin.pk}/").content.decode()
    assert f'href="/devices/{phone.pk}/"' in twin_html and "unauthorized" in twin_html
    # The fleet table says why too.
    assert "accept the USB debugging prompt" in client.get("/").content.decode()


def test_an_online_device_shows_no_stale_offline_reason(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    phone = make_phone(make_device)
    Device.objects.filter(pk=phone.pk).update(offline_reason="unplugged")  # it came back since
    assert 'id="offline-reason"' not in web_client(me).get(f"/devices/{phone.pk}/").content.decode()


def test_a_phone_job_page_shows_the_mean_conditions_memory_and_flags(
    make_member: Callable, web_client: Callable, make_device: Callable, make_network: Callable, make_job: Callable
) -> None:
    me = make_member()
    phone = make_phone(make_device)
    job = _phone_job(me.team, make_network, make_job, phone, flags=[HOT_FLAG, THROTTLED_FLAG], hot_c=46.2)
    result = job.result
    assert result.e2e_median is None and result.samples_ms == []
    resp = web_client(me).get(f"/jobs/{job.pk}/")
    assert resp.status_code == 200
    html = resp.content.decode()

    # No median, p90 or histogram: the mean, and why.
    tile = re.search(r'id="tile-mean-only">(.*?)</div></div>', html, re.S)
    assert tile and f"{result.e2e_mean:.2f}" in tile.group(1) and "the tool reports averages only" in tile.group(1)
    assert 'id="chart-samples"' not in html and 'id="no-samples"' in html
    assert ">p90<" not in html
    cold = _figure(html, "chart-cold-warm")["data"][0]
    assert cold["x"] == pytest.approx([result.load_ms, result.first_run_ms, result.e2e_mean])
    assert cold["y"][2] == "warm run (mean)"
    assert "against a mean of" in html

    # Settings, memory, flags.
    assert '<span class="muted">delegate</span> xnnpack' in html
    assert '<span class="muted">cool down below</span> 40 °C' in html
    assert '<span class="muted">cores</span> 6,7' in html  # the "big" cluster, resolved
    assert 'id="tile-peak-memory"' in html and "41.9" in html
    flags = re.search(r'id="tile-flags">(.*?)</section>', html, re.S)
    assert flags and '<span class="badge flag">hot</span>' in flags.group(1)
    assert escape(HOT_FLAG) in flags.group(1) and THROTTLED_FLAG in flags.group(1)

    # The conditions it was measured in.
    conditions = re.search(r'<section class="card" id="conditions">(.*?)</section>', html, re.S)
    assert conditions, "no conditions card"
    card = conditions.group(1)
    for text in (
        "<dt>Delegate</dt><dd>xnnpack</dd>",
        "TensorFlow Lite benchmark_model 2.16.1",
        "6-7 (big cluster), taskset mask c0",
        "<dt>Screen</dt><dd>off</dd>",
        "charging (usb)",
        "87%",
        "peak 41.9 MB",
        "init 54.30 ms · first inference 19.80 ms",
        "waited 12.5 s to cool below 40 °C (limit 120 s)",
        "hottest before: 46.2 °C (cpu-1-2)",
        "schedutil",
        "1.20 GHz",
    ):
        assert text in card, text
    assert card.count('class="below-max"') == 1  # cpu7 ended at 1.2 of 2.85 GHz

    # Operator rows: means, no medians; folded operators name the node that covers them.
    ops = resp.context["ops"]
    timed = [r for r in ops.rows if r.timed]
    assert timed and all(r.mean is not None and r.median is None for r in timed)
    assert any(r.kernel == "Convolution (NHWC, F32) IGEMM" for r in timed)


def test_a_gpu_delegate_job_shows_the_operators_folded_into_its_node(
    make_member: Callable, web_client: Callable, make_device: Callable, make_network: Callable, make_job: Callable
) -> None:
    me = make_member()
    job = _phone_job(me.team, make_network, make_job, make_phone(make_device), delegate="gpu")
    resp = web_client(me).get(f"/jobs/{job.pk}/")
    ops = resp.context["ops"]
    assert [r.name for r in ops.rows if r.timed] == [GPU_NODE]
    assert ops.fused == 15
    assert f'fused into <span class="mono">{GPU_NODE}</span>' in resp.content.decode()


def test_phone_results_appear_in_lists_progress_and_comparisons(
    make_member: Callable,
    web_client: Callable,
    make_device: Callable,
    make_network: Callable,
    make_job: Callable,
    finished_job: Callable,
) -> None:
    me = make_member()
    graph = graph_with_ops(15, name="both-net")
    model = make_network(me.team, graph)
    phone_job = finish_phone_job(
        make_job(me.team, model=model, device=make_phone(make_device)), graph, flags=[HOT_FLAG]
    )
    cpu_job = finished_job(me.team, model=model)
    phone = JobResult.objects.get(job=phone_job)
    client = web_client(me)

    jobs = {j.pk: j for j in client.get("/jobs/").context["page"].object_list}
    assert jobs[phone_job.pk].median_ms == pytest.approx(phone.e2e_mean) and jobs[phone_job.pk].central_is_mean
    assert jobs[phone_job.pk].p90_ms is None and jobs[phone_job.pk].result_flags == [HOT_FLAG]
    assert jobs[cpu_job.pk].median_ms == pytest.approx(cpu_job.result.e2e_median)
    assert not jobs[cpu_job.pk].central_is_mean
    html = client.get("/jobs/").content.decode()
    assert 'title="the mean: the tool reports averages only">avg</abbr>' in html
    assert f'<span class="badge flag" title="{escape(HOT_FLAG)}">hot</span>' in html

    progress = client.get(f"/jobs/progress/?ids={phone_job.pk}").json()["jobs"]
    assert progress[0]["median_ms"] == pytest.approx(phone.e2e_mean)

    resp = client.get(f"/compare/?a={cpu_job.pk}&b={phone_job.pk}")
    assert resp.status_code == 200
    assert resp.context["e2e_delta"] == pytest.approx(phone.e2e_mean - cpu_job.result.e2e_median)
    assert resp.context["cmp"].matched == 15
    compare_html = resp.content.decode()
    assert "mean (the tool reports averages only)" in compare_html
    hist = _figure(compare_html, "chart-compare-samples")  # the CPU job's runs, the phone has none
    assert len(hist["data"][0]["x"]) == cpu_job.result.e2e_n and hist["data"][1]["x"] == []
    choices = {j.pk: j for j in resp.context["choices"]}
    assert choices[phone_job.pk].median_ms == pytest.approx(phone.e2e_mean)

    other = finish_phone_job(make_job(me.team, model=model, device=phone_job.device), graph, scale=1.5)
    two_phones = client.get(f"/compare/?a={phone_job.pk}&b={other.pk}")
    assert two_phones.context["hist_chart"] is None
    assert "Neither job kept per-run samples" in two_phones.content.decode()
    assert two_phones.context["e2e_ratio"] == pytest.approx(other.result.e2e_mean / phone.e2e_mean)
