"""The submit form's phone settings: the delegates, core clusters and cool-down the online phones
declared, carried on each device's checkbox for the page to narrow, and checked per device when
the form is sent (a cluster name becomes each phone's own core ids)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import Capabilities
from server.devices.models import Device
from server.profiling.models import ProfilingJob
from tests.server.phone_factories import make_phone

pytestmark = pytest.mark.django_db

CPU = Capabilities(precisions=("fp32",), max_threads=2, pins_cores=True, cores=(0, 1), formats=("onnx",))


def _form(models: list[Any], devices: list[Any], **settings: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"threads": 1, "runs": 30, "warmup_runs": 5, "cores": "", "precision": "fp32"}
    data.update(settings)
    data["models"] = [m.pk for m in models]
    data["devices"] = [d.pk for d in devices]
    return data


def _checkbox(html: str, device: Any) -> str:
    m = re.search(rf'<input type="checkbox" name="devices" value="{device.pk}"[^>]*>', html)
    assert m, f"no checkbox for device #{device.pk}"
    return m.group(0)


def test_the_form_offers_what_the_online_phones_declared(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    phone = make_phone(make_device)
    cpu = make_device(capabilities=CPU)
    resp = web_client(me).get("/jobs/new/")
    html = resp.content.decode()
    form = resp.context["form"]
    assert [c for c, _ in form.fields["delegate"].choices] == ["", "cpu", "xnnpack", "gpu", "nnapi"]
    assert [c for c, _ in form.fields["core_cluster"].choices] == ["", "big", "little", "mid"]
    assert 'id="phone-settings"' in html
    for name in ("delegate", "core_cluster", "cooldown_c", "cooldown_max_s"):
        assert f'name="{name}"' in html, name

    phone_box, cpu_box = _checkbox(html, phone), _checkbox(html, cpu)
    assert 'data-delegates="cpu xnnpack gpu nnapi"' in phone_box
    assert 'data-core-clusters="big little mid"' in phone_box and 'data-cools-down="true"' in phone_box
    assert (
        'data-delegates=""' in cpu_box and 'data-core-clusters=""' in cpu_box and 'data-cools-down="false"' in cpu_box
    )


def test_a_lab_without_phones_shows_no_phone_settings(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    make_device(capabilities=CPU)
    html = web_client(me).get("/jobs/new/").content.decode()
    assert 'id="phone-settings"' not in html and 'name="delegate"' not in html


def test_a_phone_job_takes_its_delegate_cluster_and_cool_down(
    make_member: Callable, web_client: Callable, make_device: Callable, make_network: Callable
) -> None:
    me = make_member()
    phone = make_phone(make_device)
    # A second phone whose "big" cluster is other cores: each job gets its own phone's ids.
    other = make_phone(make_device, name="pixel-7-b")
    caps = dict(other.capabilities)
    caps["core_clusters"] = {"little": [0, 1, 2, 3], "big": [4, 5, 6, 7]}
    Device.objects.filter(pk=other.pk).update(capabilities=caps)
    model = make_network(me.team)
    resp = web_client(me).post(
        "/jobs/new/",
        _form([model], [phone, other], delegate="xnnpack", core_cluster="big", cooldown_c="40", cooldown_max_s="120"),
    )
    assert resp.status_code == 302, resp.context["form"].errors if resp.context else resp
    jobs = {j.device_id: j for j in ProfilingJob.objects.all()}
    assert set(jobs) == {phone.pk, other.pk}
    assert jobs[phone.pk].settings["cores"] == [6, 7] and jobs[other.pk].settings["cores"] == [4, 5, 6, 7]
    for job in jobs.values():
        assert job.settings["delegate"] == "xnnpack" and job.settings["backend"] == "android"
        assert job.settings["cooldown_c"] == 40.0 and job.settings["cooldown_max_s"] == 120.0


@pytest.mark.parametrize(
    "chosen,field,words",
    [
        ({"delegate": "gpu"}, "delegate", ["the-cpu", "'gpu' is not offered", "none (leave delegate empty)"]),
        ({"core_cluster": "big"}, "core_cluster", ["the-cpu", "no core cluster 'big'"]),
        ({"cooldown_c": "40"}, "cooldown_c", ["the-cpu", "no thermal cool-down"]),
        ({"core_cluster": "big", "cores": "0-1"}, "core_cluster", ["CPU cores or a core cluster, not both"]),
    ],
)
def test_a_phone_setting_a_chosen_device_lacks_is_refused_on_its_field(
    make_member: Callable,
    web_client: Callable,
    make_device: Callable,
    make_network: Callable,
    chosen: dict[str, str],
    field: str,
    words: list[str],
) -> None:
    me = make_member()
    phone = make_phone(make_device)
    cpu = make_device(capabilities=CPU, name="the-cpu")
    resp = web_client(me).post("/jobs/new/", _form([make_network(me.team)], [phone, cpu], **chosen))
    assert resp.status_code == 200
    errors = resp.context["form"].errors
    assert field in errors, errors
    for word in words:
        assert word in errors[field][0], errors[field]
    assert not ProfilingJob.objects.exists()
