"""The submit page profiles zoo networks directly (each becomes one of the team's models through
``upload_model``, once), asks for N cold starts within what the chosen devices measure, and
carries what its list filters read (kind and attributes) on every row."""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from devicelab.backends.base import MAX_COLD_RUNS, Capabilities
from devicelab.graph import zoo
from server.networks.models import NetworkModel
from server.profiling.models import ProfilingJob

pytestmark = pytest.mark.django_db

ONE_COLD_START = Capabilities(precisions=("fp32",), max_threads=4, formats=("onnx",))
FRESH_PROCESSES = Capabilities(precisions=("fp32",), max_threads=4, formats=("onnx",), max_cold_runs=10)


def _form(
    devices: Sequence[Any], models: Sequence[Any] = (), zoo_names: Sequence[str] = (), **settings: Any
) -> dict[str, Any]:
    data: dict[str, Any] = {"threads": 1, "runs": 30, "warmup_runs": 5, "cores": "", "precision": "fp32"}
    data.update(settings)
    data["models"] = [m.pk for m in models]
    data["zoo"] = list(zoo_names)
    data["devices"] = [d.pk for d in devices]
    return data


def _field_error(html: str, field: str) -> str:
    m = re.search(rf'id="id_{field}-error">(.*?)</div>\s*</div>', html, re.S)
    assert m, f"no error on {field}"
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", m.group(1)))


def test_zoo_networks_are_profiled_without_an_upload_and_added_once(
    make_member: Callable[..., Any],
    web_client: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
    media_in_tmp: None,
) -> None:
    me = make_member()
    device = make_device(capabilities=ONE_COLD_START)
    own = make_network(me.team)
    client = web_client(me)
    resp = client.post("/jobs/new/", _form([device], [own], ["mobilenet_v2", "resnet18"]), follow=True)
    assert "Queued 3 jobs" in resp.content.decode()
    added = {m.name: m for m in NetworkModel.objects.for_team(me.team).exclude(pk=own.pk)}
    assert set(added) == {"mobilenet_v2", "resnet18"}
    mnv2 = added["mobilenet_v2"]
    assert (mnv2.format, mnv2.filename, mnv2.created_by_id) == ("json", "mobilenet_v2.json", me.user.pk)
    assert mnv2.num_operators == len(zoo.build("mobilenet_v2").operators) and mnv2.is_ready
    jobs = ProfilingJob.objects.for_team(me.team)
    assert {j.model_id for j in jobs} == {own.pk, mnv2.pk, added["resnet18"].pk}

    # Picked again (even with its own row also ticked): the same model row, a new job.
    resp = client.post("/jobs/new/", _form([device], [mnv2], ["mobilenet_v2"]))
    assert resp.status_code == 302
    assert NetworkModel.objects.for_team(me.team).filter(name="mobilenet_v2").count() == 1
    assert jobs.filter(model=mnv2).count() == 2


def test_the_page_lists_the_zoo_with_what_its_filters_read(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    me = make_member()
    make_device(capabilities=ONE_COLD_START, hardware={"cpu_model": "Ryzen 9 7950X", "arch": "x86_64"})
    make_device(kind="opencl")
    html = web_client(me).get("/jobs/new/").content.decode()
    names = re.findall(r'name="zoo" value="([^"]+)"', html)
    assert names == sorted(zoo.entries())
    assert re.search(r'name="zoo" value="resnet18"[^>]*data-kind="resnet"', html)
    assert "resnet18 (zoo: resnet, 11.69 M params, 1.81 G MACs)" in html
    # Device rows carry their kind and hardware; the filters are hidden until the script runs them.
    assert re.search(r'name="devices"[^>]*data-kind="cpu" data-search="cpu ryzen 9 7950x · x86_64"', html)
    assert html.count('data-list-tools="') == 2  # zoo and devices (no models of its own yet)
    assert re.search(r'data-list-tools="devices-list" hidden>', html)
    kinds = re.search(r'<select aria-label="Kind of devices" data-list-kind="devices-list">(.*?)</select>', html, re.S)
    assert kinds and re.findall(r'<option value="([^"]*)"', kinds.group(1)) == ["", "cpu", "opencl"]


def test_nothing_chosen_is_refused_on_the_models_field(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    me = make_member()
    html = web_client(me).post("/jobs/new/", _form([make_device()])).content.decode()
    assert "choose at least one of your models or a zoo network" in html
    assert not ProfilingJob.objects.exists()


def test_cold_starts_are_asked_for_within_what_the_devices_measure(
    make_member: Callable[..., Any],
    web_client: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
) -> None:
    me = make_member()
    fresh = make_device(capabilities=FRESH_PROCESSES, name="fresh-cpu")
    single = make_device(capabilities=ONE_COLD_START, name="single-cpu")
    model = make_network(me.team)
    client = web_client(me)
    html = client.get("/jobs/new/").content.decode()
    field = re.search(r'<input[^>]*name="cold_runs"[^>]*>', html)
    assert field and 'max="10"' in field.group(0) and 'value="1"' in field.group(0)
    assert f'value="{fresh.pk}"' in html and 'data-max-cold-runs="10"' in html and 'data-max-cold-runs="1"' in html

    resp = client.post("/jobs/new/", _form([fresh], [model], cold_runs=7))
    assert resp.status_code == 302
    assert ProfilingJob.objects.get(team=me.team).settings["cold_runs"] == 7

    html = client.post("/jobs/new/", _form([fresh, single], [model], cold_runs=3)).content.decode()
    error = _field_error(html, "cold_runs")
    assert "'single-cpu'" in error and "3 is more than this device's 1" in error
    html = client.post("/jobs/new/", _form([fresh], [model], cold_runs=MAX_COLD_RUNS + 1)).content.decode()
    assert f"less than or equal to {MAX_COLD_RUNS}" in _field_error(html, "cold_runs")
    assert ProfilingJob.objects.count() == 1

    # Left out (an older page, a script): the one cold start every profile measures.
    data = _form([single], [model])
    resp = client.post("/jobs/new/", data)
    assert resp.status_code == 302 and ProfilingJob.objects.latest("pk").settings["cold_runs"] == 1


def test_the_noise_policy_is_asked_on_the_page_and_reaches_the_job(
    make_member: Callable[..., Any],
    web_client: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
) -> None:
    me = make_member()
    fresh = make_device(capabilities=FRESH_PROCESSES, name="fresh-cpu")
    model = make_network(me.team)
    client = web_client(me)
    html = client.get("/jobs/new/").content.decode()
    assert re.search(r'<select[^>]*name="on_noise"', html) and 'name="noise_reruns"' in html
    resp = client.post("/jobs/new/", _form([fresh], [model], on_noise="rerun", noise_reruns=4))
    assert resp.status_code == 302
    settings = ProfilingJob.objects.get(team=me.team).settings
    assert (settings["on_noise"], settings["noise_reruns"]) == ("rerun", 4)
    html = client.post("/jobs/new/", _form([fresh], [model], on_noise="rerun", noise_reruns=9)).content.decode()
    assert "less than or equal to 5" in _field_error(html, "noise_reruns")
    # left out (an older page, a script): flagged, as before
    resp = client.post("/jobs/new/", _form([fresh], [model]))
    assert resp.status_code == 302 and ProfilingJob.objects.latest("pk").settings["on_noise"] == "flag"
