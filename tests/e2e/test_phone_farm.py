"""Phones end to end: a real worker follows an adb server (our double on loopback, spoken to by
adbutils over TCP), profiles models on emulated phones through the REST API, and survives a phone
unplugged mid-job and a binary that crashes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from devicelab.graph import zoo
from devicelab.graph.tflite import graph_to_tflite_bytes
from tests.adb_double.benchmark_tool import benchmark_model_binary
from tests.adb_double.phones import Phone
from tests.adb_double.server import AdbDouble, running_adb_double
from tests.e2e.helpers import submit, tiny_graph, upload, wait_finished
from tests.waiting import wait_for

PHONE_RUN = {"runs": 5, "warmup_runs": 1, "cooldown_c": 60, "cooldown_max_s": 5}


@pytest.fixture
def farm() -> Iterator[AdbDouble]:
    with running_adb_double() as double:
        yield double


def phone_env(double: AdbDouble, tmp_path: Path, binary: bytes | None = None) -> dict[str, str]:
    tool = tmp_path / "benchmark_model"
    tool.write_bytes(binary if binary is not None else benchmark_model_binary())
    return {
        "LATENCYLAB_ADB_SERVER": double.address,
        "LATENCYLAB_TFLITE_BENCHMARK_MODEL": str(tool),
        "LATENCYLAB_ADB_POLL_SECONDS": "0.5",
    }


def upload_tflite(api: Any, name: str, data: bytes) -> int:
    resp = api.post("/api/models/", {"file": SimpleUploadedFile(name, data)}, format="multipart")
    assert resp.status_code in (200, 201), resp.content
    return int(resp.json()["id"])


@pytest.mark.django_db(transaction=True)
def test_a_zoo_model_and_an_uploaded_tflite_are_profiled_on_a_phone(
    farm: AdbDouble, start_worker: Any, e2e_api: Any, tmp_path: Path
) -> None:
    farm.plug(Phone("PIXEL7-0001"))
    worker = start_worker(kinds="android", extra_env=phone_env(farm, tmp_path))
    device = worker.device()
    hw = device.hardware
    assert device.kind == "android" and device.identity == "android:PIXEL7-0001"
    assert (hw["manufacturer"], hw["model"], hw["abi"]) == ("Google", "Pixel 7", "arm64-v8a")
    assert hw["soc"] and hw["gpu"] and hw["ram_mb"] > 1000
    assert [c["name"] for c in hw["cpu_clusters"]] == ["little", "mid", "big"]
    assert device.capabilities["delegates"] and device.capabilities["core_clusters"]["big"] == [6, 7]

    # a zoo graph runs through our TFLite writer, on the big cores
    graph = zoo.build("mobilenet_v2")
    job = wait_finished(
        submit(e2e_api, upload(e2e_api, graph), device.pk, {**PHONE_RUN, "delegate": "xnnpack", "cores": "big"}),
        timeout=180,
    )
    assert job.state == "succeeded", job.failure_reason
    body = e2e_api.get(f"/api/jobs/{job.pk}/").json()
    result = body["result"]
    env = result["environment"]
    assert result["e2e"]["n"] == PHONE_RUN["runs"] and result["e2e"]["mean"] > 0
    # the tool prints aggregates: LiteRT's count= line has a median, never a p90
    assert result["e2e"]["median"] > 0 and result["e2e"]["p90"] is None
    assert result["cold"]["load_ms"] > 0 and result["cold"]["first_run_ms"] > 0
    assert env["delegate"] == "xnnpack" and env["cluster"] == "big" and env["taskset_mask"] == "c0"
    assert env["temperatures_before_c"] and env["temperatures_after_c"] and env["governors"]
    assert env["model_format"].startswith("tflite written by latencylab")
    assert job.result.peak_memory_mb and job.result.peak_memory_mb > 0
    ops = [o for o in result["operators"] if o["index"] is not None]
    assert len(ops) == len(graph.operators)
    timed = [o for o in ops if o["mean"] is not None]
    assert timed and all(o["n"] == PHONE_RUN["runs"] for o in timed)
    assert all(o["fused_into"] for o in ops if o["mean"] is None)

    # an uploaded .tflite runs as uploaded, here on the plain CPU kernels
    data = graph_to_tflite_bytes(tiny_graph("phone-upload"))
    model_id = upload_tflite(e2e_api, "phone-upload.tflite", data)
    job = wait_finished(submit(e2e_api, model_id, device.pk, {**PHONE_RUN, "delegate": "cpu"}), timeout=120)
    assert job.state == "succeeded", job.failure_reason
    env = job.result.environment
    assert env["model_format"] == "tflite as uploaded" and env["delegate"] == "cpu"
    kernels = set(job.result.operators.exclude(kernel="").values_list("kernel", flat=True))
    assert "CONV_2D" in kernels


@pytest.mark.django_db(transaction=True)
def test_a_phone_unplugged_mid_job_loses_nothing(
    farm: AdbDouble, start_worker: Any, e2e_api: Any, tmp_path: Path
) -> None:
    from server.devices.models import Device
    from server.profiling.models import JobResult

    slow = Phone("PIXEL7-SLOW")
    slow.time_scale = 400.0  # its runs take seconds: time to pull the cable
    farm.plug(slow)
    farm.plug(Phone("PIXEL7-SPARE"))
    # The agent looks at the adb list only every 5 s (a loaded machine's agent is that late): the
    # run finds the phone gone first, and the agent's heartbeats, which still name it, must not
    # bring it back to burn the job's attempts on it.
    env = {**phone_env(farm, tmp_path), "LATENCYLAB_ADB_POLL_SECONDS": "5"}
    worker = start_worker(kinds="android", extra_env=env)
    wait_for(lambda: len(worker.devices()) == 2 or None, 60, "both phones to register")
    devices = {d.identity: d for d in worker.devices()}
    victim = devices["android:PIXEL7-SLOW"]

    job_id = submit(e2e_api, upload(e2e_api, tiny_graph("unplug")), victim.pk, {**PHONE_RUN, "runs": 20})
    wait_for(
        lambda: "benchmark_model running" in _message(job_id) or None,
        90,
        "the benchmark to be running on the phone",
    )
    farm.unplug("PIXEL7-SLOW")

    job = wait_finished(job_id, timeout=180)
    assert job.state == "succeeded", job.failure_reason
    assert JobResult.objects.filter(job_id=job_id).count() == 1
    assert job.result.environment["serial"] == "PIXEL7-SPARE"  # moved to the equivalent phone
    assert "PIXEL7-SLOW" in job.moved_from or "went offline" in job.moved_from
    # one unplug costs one attempt: the second ran on the spare, not at once on the gone phone
    assert job.attempts == 2, job.moved_from
    gone = Device.objects.get(pk=victim.pk)
    assert gone.status == "offline" and "unplugged" in gone.offline_reason

    # plugged back in, it is served again
    farm.plug(Phone("PIXEL7-SLOW"))
    wait_for(lambda: Device.objects.get(pk=victim.pk).is_online or None, 60, "the phone to come back")


def _message(job_id: int) -> str:
    from server.profiling.models import ProfilingJob

    return ProfilingJob.objects.get(pk=job_id).progress_message or ""


@pytest.mark.django_db(transaction=True)
def test_a_crashing_binary_fails_the_job_once_with_its_message(
    farm: AdbDouble, start_worker: Any, e2e_api: Any, tmp_path: Path
) -> None:
    farm.plug(Phone("PIXEL7-CRASH"))
    binary = benchmark_model_binary(crash="abort")
    device = start_worker(kinds="android", extra_env=phone_env(farm, tmp_path, binary)).device()
    job = wait_finished(submit(e2e_api, upload(e2e_api, tiny_graph("crash")), device.pk, PHONE_RUN), timeout=120)
    assert job.state == "failed"
    assert job.attempts == 1
    assert "benchmark_model failed" in job.failure_reason and "exit status" in job.failure_reason
