"""The job page says which model file ran: the upload as it is (with its SHA-256), our export of
its graph, or (OpenCL) the IR on our kernels."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.dashboard.factories import graph_with_ops

pytestmark = pytest.mark.django_db

SHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def test_an_uploaded_model_shows_its_format_and_sha256(
    make_member: Callable, web_client: Callable, make_network: Callable, finished_job: Callable
) -> None:
    me = make_member()
    job = finished_job(me.team, model=make_network(me.team, graph_with_ops(8, name="net4")))
    job.result.environment = {"runtime": "test", "model_format": "onnx as uploaded", "model_sha256": SHA}
    job.result.save(update_fields=["environment"])
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="model-that-ran"' in html and "Model that ran: onnx as uploaded" in html
    assert f'<span class="mono" id="model-sha256">{SHA}</span>' in html


def test_opencl_says_it_ran_the_ir_without_a_file(
    make_member: Callable, web_client: Callable, make_network: Callable, finished_job: Callable
) -> None:
    me = make_member()
    job = finished_job(me.team, model=make_network(me.team, graph_with_ops(8, name="net4b")))
    job.result.environment = {"model_format": "IR run by latencylab's OpenCL kernels", "model_sha256": None}
    job.result.save(update_fields=["environment"])
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert "IR run by latencylab&#x27;s OpenCL kernels" in html and 'id="model-sha256"' not in html


def test_a_result_without_a_model_format_shows_no_line(
    make_member: Callable, web_client: Callable, make_network: Callable, finished_job: Callable
) -> None:
    me = make_member()
    job = finished_job(me.team, model=make_network(me.team, graph_with_ops(8, name="net4c")))
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="model-that-ran"' not in html
