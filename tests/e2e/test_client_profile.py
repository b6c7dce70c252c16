"""``latencylab.client`` and ``latencylab profile`` against a live server and a real worker process:
devices, uploads, a profiling job with its progress, its per-operator result, failures and auth."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devicelab.graph import graph_to_json
from devicelab.graph.onnx import graph_to_onnx_bytes
from latencylab.cli import main
from latencylab.client import ClientError, JobFailed, WaitTimeout
from tests.e2e.helpers import long_graph, tiny_graph
from tests.e2e.live_clients import LiveClients

pytestmark = pytest.mark.django_db(transaction=True)

# About 1.5 s of measuring on this machine: long enough for a few progress reports (one per 0.5 s).
PROGRESS_SETTINGS = {"runs": 30, "warmup_runs": 1}


@pytest.fixture
def connect(live_server: Any) -> Iterator[LiveClients]:
    """Factory: ``connect(token)`` -> a client of the live server; all closed at teardown."""
    clients = LiveClients(live_server.url)
    yield clients
    clients.close()


def test_profile_waits_with_increasing_progress_and_returns_per_operator_results(
    connect: Any, start_worker: Any, make_member: Any
) -> None:
    device = start_worker().device()
    lab = connect(make_member().key)

    listed = {d["id"]: d for d in lab.devices()}
    assert listed[device.pk]["name"] == device.name and listed[device.pk]["status"] == "online"
    assert lab.device(device.name)["id"] == device.pk

    graph = long_graph("client-net")
    model_id = lab.upload(graph)
    assert model_id in [m["id"] for m in lab.models()]
    assert lab.upload(graph) == model_id  # the same bytes again: the same model

    job = lab.profile(model_id, device.name, PROGRESS_SETTINGS)
    assert job.state == "queued" and job.progress == 0.0
    fractions: list[float] = []
    result = job.wait(timeout=120, poll=0.05, on_progress=fractions.append)

    assert job.state == "succeeded"
    assert fractions[-1] == 1.0
    assert all(a < b for a, b in zip(fractions, fractions[1:])), fractions
    assert any(0.0 < f < 1.0 for f in fractions), fractions
    assert result["e2e"]["n"] == PROGRESS_SETTINGS["runs"] and result["e2e"]["mean"] > 0

    rows = lab.results(job)
    assert rows == result
    ops = [o for o in rows["operators"] if o["index"] is not None]
    assert {o["name"] for o in ops} == {op.name for op in graph.operators}
    convs = [o for o in ops if o["op_type"] == "conv2d"]
    assert convs and all(o["mean"] is not None and o["mean"] > 0 for o in convs)


def test_profile_of_a_file_that_fails_on_the_device_raises_with_the_reason(
    connect: Any, start_worker: Any, make_member: Any, tmp_path: Path
) -> None:
    device = start_worker().device()
    lab = connect(make_member().key)
    path = tmp_path / "tiny.onnx"
    path.write_bytes(graph_to_onnx_bytes(tiny_graph()))

    # This CPU has no core 4096: the capabilities its worker declared refuse it at submission.
    with pytest.raises(ClientError) as refused:
        lab.profile(path, device.pk, {"runs": 2, "warmup_runs": 0, "cores": [4096]})
    assert refused.value.status == 400 and "settings.cores" in refused.value.detail and "4096" in refused.value.detail

    # A row that declared nothing (registered by an older worker) takes it, and the worker's
    # backend fails the job, saying so.
    from server.devices.models import Device

    Device.objects.filter(pk=device.pk).update(capabilities={})
    job = lab.profile(path, device.pk, {"runs": 2, "warmup_runs": 0, "cores": [4096]})
    with pytest.raises(JobFailed) as failed:
        job.wait(timeout=90, poll=0.1)
    assert f"job #{job.id} failed" in str(failed.value) and "4096" in str(failed.value)
    assert failed.value.job["state"] == "failed"

    with pytest.raises(ClientError, match=rf"job #{job.id} is failed: .*4096.*no result"):
        lab.results(job.id)
    with pytest.raises(ClientError) as unknown:
        lab.profile(path, device.pk, {"runz": 3})
    assert unknown.value.status == 400 and "runz" in unknown.value.detail


def test_wait_gives_up_after_its_timeout_and_the_job_can_be_cancelled(
    connect: Any, start_worker: Any, make_member: Any
) -> None:
    device = start_worker().device()
    lab = connect(make_member().key)

    job = lab.profile(long_graph("slow-net"), device.pk, {"runs": 1000, "warmup_runs": 1})
    with pytest.raises(WaitTimeout, match=rf"job #{job.id} is still (queued|running) .* after 0.5 s"):
        job.wait(timeout=0.5, poll=0.1)
    job.cancel()
    assert job.state == "cancelled"
    with pytest.raises(JobFailed, match="was cancelled"):
        job.wait(timeout=10)


def test_bad_token_and_unknown_device_are_client_errors(connect: Any, make_member: Any) -> None:
    with pytest.raises(ClientError) as denied:
        connect("not-a-token").devices()
    assert denied.value.status == 401 and denied.value.detail

    lab = connect(make_member().key)
    with pytest.raises(ClientError, match="no device called 'nowhere'"):
        lab.profile(tiny_graph(), "nowhere")
    with pytest.raises(ClientError) as missing:
        lab.results(987654)
    assert missing.value.status == 404


def test_cli_profile_shows_progress_and_prints_the_result(
    live_server: Any, connect: Any, start_worker: Any, make_member: Any, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    device = start_worker().device()
    monkeypatch.setenv("LATENCYLAB_URL", live_server.url)
    monkeypatch.setenv("LATENCYLAB_TOKEN", make_member().key)
    path = tmp_path / "cli-net.json"
    path.write_text(graph_to_json(tiny_graph("cli-net")))

    assert main(["profile", str(path), "--device", device.name, "--runs", "4", "--warmup", "1"]) == 0
    out, err = capsys.readouterr()
    assert "100%" in err and "queued" in err
    assert f"cli-net on {device.name}" in out and "4 runs" in out
    assert "end-to-end ms: median" in out and "slowest operators by median" in out and "conv2d" in out
    assert "machine before the runs: load " in out  # read by the real worker before its timed runs
    table = out[out.index("slowest operators") :].splitlines()
    assert table[1].split()[3:] == ["median", "ms", "mean", "ms", "p90", "ms", "share"]

    assert main(["profile", str(path), "--device", device.name, "--runs", "2", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["state"] == "succeeded" and body["result"]["e2e"]["n"] == 2

    assert main(["profile", str(path), "--device", "nowhere"]) == 2
    assert "no device called 'nowhere'" in capsys.readouterr().err
