"""The submit form offers only what the online devices declared they can run, and refuses a
setting a chosen device cannot honour on the field it concerns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import Capabilities
from server.profiling.models import ProfilingJob

pytestmark = pytest.mark.django_db

CPU = Capabilities(precisions=("fp32",), max_threads=2, pins_cores=True, cores=(0, 1), formats=("onnx",))
GPU = Capabilities(precisions=("fp32", "fp16"), max_threads=8, formats=("ir",))


def _form(models: list[Any], devices: list[Any], **settings: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"threads": 1, "runs": 30, "warmup_runs": 5, "cores": "", "precision": "fp32"}
    data.update(settings)
    data["models"] = [m.pk for m in models]
    data["devices"] = [d.pk for d in devices]
    return data


def test_a_cpu_only_lab_offers_fp32_only(make_member: Callable, web_client: Callable, make_device: Callable) -> None:
    me = make_member()
    make_device(capabilities=CPU)
    html = web_client(me).get("/jobs/new/").content.decode()
    assert '<option value="fp32"' in html
    assert '<option value="fp16"' not in html and '<option value="int8"' not in html
    assert 'data-precisions="fp32"' in html and 'data-pins-cores="true"' in html and 'data-max-threads="2"' in html


def test_a_lab_with_a_gpu_offers_fp16_too(make_member: Callable, web_client: Callable, make_device: Callable) -> None:
    me = make_member()
    make_device(capabilities=CPU)
    make_device(kind="opencl", capabilities=GPU)
    html = web_client(me).get("/jobs/new/").content.decode()
    assert '<option value="fp16"' in html and '<option value="int8"' not in html
    assert 'data-precisions="fp32 fp16"' in html and 'data-pins-cores="false"' in html


def test_fp16_on_a_cpu_is_refused_on_the_precision_field(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable
) -> None:
    me = make_member()
    cpu = make_device(capabilities=CPU, name="the-cpu")
    make_device(kind="opencl", capabilities=GPU)
    resp = web_client(me).post("/jobs/new/", _form([make_network(me.team)], [cpu], precision="fp16"))
    assert resp.status_code == 200
    form = resp.context["form"]
    assert "precision" in form.errors and "the-cpu" in form.errors["precision"][0]
    assert "runs fp32" in form.errors["precision"][0]
    assert not ProfilingJob.objects.exists()


def test_a_core_the_cpu_lacks_is_refused_on_the_cores_field(
    make_member: Callable, web_client: Callable, make_network: Callable, make_device: Callable
) -> None:
    me = make_member()
    cpu = make_device(capabilities=CPU)
    resp = web_client(me).post("/jobs/new/", _form([make_network(me.team)], [cpu], cores="0-5"))
    assert "cores" in resp.context["form"].errors
    assert "[2, 3, 4, 5]" in resp.context["form"].errors["cores"][0]
    assert not ProfilingJob.objects.exists()
