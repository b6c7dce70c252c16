"""The Android backend against emulated phones on our adb double (real adbutils over TCP): it
discovers and describes phones, measures zoo graphs and uploaded .tflite files on each delegate,
cools down, flags hot phones, reads an old tool's text tables, and tells a lost phone (retry)
from a model the tool refuses (no retry)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devicelab.backends.android import backend
from devicelab.backends.android.benchmark_output import gpu_dispatch_nodes
from devicelab.backends.base import BackendError, DeviceInfo, DeviceLost, ModelFile, ProfileSettings
from devicelab.graph import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.tflite import graph_to_tflite_bytes
from tests.adb_double.benchmark_tool import benchmark_model_binary
from tests.adb_double.phones import UNAUTHORIZED, Phone
from tests.adb_double.server import AdbDouble, running_adb_double

QUICK = {"backend": "android", "runs": 5, "warmup_runs": 1, "cooldown_c": 80.0, "cooldown_max_s": 2.0}


def net(name: str = "phone-net") -> Graph:
    b = GraphBuilder(name, (1, 3, 32, 32))
    x = b.relu6(b.conv(b.input, 16, 3, stride=2, name="conv0"), name="act0")
    x = b.relu6(b.dwconv(x, 3, name="dw1"), name="act1")
    x = b.relu(b.conv(x, 32, 1, name="pw1"), name="act2")
    x = b.flatten(b.global_avg_pool(x, name="gap"), name="flat")
    return b.build(b.fc(x, 10, name="fc"))


@pytest.fixture
def farm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[AdbDouble]:
    pixel = Phone("PIXEL7-1")
    pixel.time_scale = 0.05
    pixel.cooling_time_scale = 50.0
    locked = Phone("LOCKED-1", state=UNAUTHORIZED)
    tool = tmp_path / "benchmark_model"
    tool.write_bytes(benchmark_model_binary())
    monkeypatch.setenv(backend.TOOL_ENV, str(tool))
    with running_adb_double(pixel, locked) as double:
        monkeypatch.setenv("LATENCYLAB_ADB_SERVER", double.address)
        yield double


def pixel(farm: AdbDouble) -> tuple[DeviceInfo, Phone]:
    found = backend.discover()
    assert [d.identity for d in found] == ["android:PIXEL7-1"]  # the unauthorized phone cannot be described
    phone = next(p for p in farm.phones() if p.serial == "PIXEL7-1")
    return found[0], phone


def run(info: DeviceInfo, graph: Graph, model_file: ModelFile | None = None, **settings: Any) -> Any:
    progress: list[tuple[float, str]] = []
    result = backend.profile(
        info, graph, ProfileSettings.from_dict({**QUICK, **settings}), lambda f, m: progress.append((f, m)), model_file
    )
    assert [f for f, _ in progress] == sorted(f for f, _ in progress) and progress[-1][0] == 1.0
    return result


def test_a_phone_is_described_as_users_pick_phones(farm: AdbDouble) -> None:
    info, _ = pixel(farm)
    hw = info.hardware
    assert (hw["manufacturer"], hw["model"], hw["abi"], hw["android_version"], hw["sdk"]) == (
        "Google",
        "Pixel 7",
        "arm64-v8a",
        "14",
        34,
    )
    assert hw["soc"] and "Mali" in hw["gpu"] and hw["ram_mb"] > 1000
    assert [(c["name"], c["cores"]) for c in hw["cpu_clusters"]] == [
        ("little", [0, 1, 2, 3]),
        ("mid", [4, 5]),
        ("big", [6, 7]),
    ]
    caps = info.capabilities
    assert caps is not None and caps.delegates == ("cpu", "xnnpack", "gpu", "nnapi")
    assert caps.core_clusters["big"] == (6, 7) and caps.cools_down and caps.formats == ("tflite",)


def test_each_delegate_gives_end_to_end_cold_start_memory_and_every_operator(farm: AdbDouble) -> None:
    info, phone = pixel(farm)
    graph = net()
    for delegate in ("cpu", "xnnpack", "gpu", "nnapi"):
        r = run(info, graph, delegate=delegate, threads=2)
        env = r.environment
        assert env["delegate"] == delegate and env["op_profile_mode"] == "csv"
        assert r.e2e.n == 5 and r.e2e.mean > 0 and r.e2e.min <= r.e2e.mean <= r.e2e.max
        assert r.samples_ms == []  # the tool prints aggregates only
        assert r.cold.load_ms > 0 and r.cold.first_run_ms > 0 and r.peak_memory_mb and r.peak_memory_mb > 0
        rows = [t for t in r.ops if t.index is not None]
        assert [t.index for t in rows] == list(range(len(graph.operators)))
        timed = [t for t in rows if t.stats is not None]
        assert timed and all(t.stats.n == 5 and t.stats.mean > 0 for t in timed)
        assert all(t.fused_into for t in rows if t.stats is None)
        assert env["temperatures_before_c"] and env["temperatures_after_c"] and env["governors"]
        assert env["charging"] in ("ac", "usb", "wireless", "none", "unknown") and env["screen_on"] in (True, False)
        load = env["machine_load"]  # the phone's own, beside the CV on the job page
        assert len(load["load_average"]) == 3 and load["cores_online"] == 8 and "the phone's load" in load["summary"]
    # builtin kernels keep the graph's names, a fused activation names its conv
    cpu = run(info, graph, delegate="cpu")
    by_name = {graph.operators[t.index].name: t for t in cpu.ops if t.index is not None}
    assert by_name["pw1"].kernel == "CONV_2D" and by_name["act2"].fused_into == "pw1"
    # a convolution whose padding TFLite's SAME cannot express runs as PAD then CONV_2D: both count
    assert by_name["conv0"].kernel == "PAD+CONV_2D" and by_name["act0"].fused_into == "conv0"
    # today's LiteRT times the GPU delegate dispatch by dispatch (the fp16 weights' DEQUANTIZE
    # nodes are folded into constants, no dispatch of their own)
    gpu = run(info, graph, delegate="gpu", precision="fp16")
    timed = [t for t in gpu.ops if t.stats is not None]
    assert len(timed) > 1 and all(gpu_dispatch_nodes(k) for t in timed for k in t.kernel.split("+"))
    # conv0's PAD and CONV_2D are two dispatches, both its time
    assert [t.kernel for t in timed][:2] == ["pad 0+convolution_2d 1", "depthwise_convolution 2"]
    assert "--gpu_precision_loss_allowed=true" in gpu.environment["command"]


def test_the_tool_and_the_model_are_pushed_only_when_they_changed(farm: AdbDouble) -> None:
    info, phone = pixel(farm)
    run(info, net())
    pushes = len([c for c in phone.history if "chmod 755" in c])
    run(info, net())
    assert len([c for c in phone.history if "chmod 755" in c]) == pushes == 1


def test_cores_by_cluster_name_are_pinned_with_toybox_taskset(farm: AdbDouble) -> None:
    info, _ = pixel(farm)
    r = run(info, net(), cores=[6, 7], threads=2)
    assert r.environment["taskset_mask"] == "c0" and r.environment["cluster"] == "big"
    assert r.environment["command"].startswith("taskset c0 ")
    assert set(r.environment["governors"]) == {"6", "7"}


def test_cold_runs_are_each_a_fresh_benchmark_model_process(farm: AdbDouble) -> None:
    from devicelab.measure.cold_starts import FRESH_PROCESS

    info, phone = pixel(farm)
    assert info.capabilities is not None and info.capabilities.max_cold_runs > 1
    before = len(phone.history)
    r = run(info, net(), cores=[6, 7], threads=2, delegate="gpu", cold_runs=3)
    starts = r.cold_starts
    assert starts is not None and starts.source == FRESH_PROCESS and len(starts.samples) == 3
    assert all(s.load_ms > 0 and s.first_run_ms > 0 for s in starts.samples)
    tool_runs = [c for c in phone.history[before:] if "benchmark_model" in c and "--graph=" in c]
    # the profile's run, the GPU's end-to-end run without op profiling, one process per cold start
    assert len(tool_runs) == 5
    profiled, _, *cold = tool_runs
    assert "--enable_op_profiling=true" in profiled
    for command in cold:  # the same model, delegate and cores; one warm-up and one run, nothing profiled
        assert command.startswith("taskset c0 ") and "--use_gpu=true" in command
        assert "--warmup_runs=1" in command and "--num_runs=1" in command and "op_profiling" not in command
    assert r.cold_distribution() is starts


def test_an_uploaded_tflite_runs_as_uploaded(farm: AdbDouble) -> None:
    from devicelab.graph.tflite import graph_from_tflite_bytes

    info, _ = pixel(farm)
    data = graph_to_tflite_bytes(net("uploaded"))
    graph = graph_from_tflite_bytes(data, "uploaded")
    r = run(info, graph, ModelFile("tflite", data, "uploaded.tflite"), delegate="cpu")
    assert r.environment["model_format"] == "tflite as uploaded"
    rows = [t for t in r.ops if t.index is not None]
    assert len(rows) == len(graph.operators) and any(t.kernel == "CONV_2D" and t.stats for t in rows)


@pytest.mark.slow
def test_a_hot_phone_is_waited_for_then_flagged_when_it_stays_hot(farm: AdbDouble) -> None:
    info, phone = pixel(farm)
    for zone in phone.temps_c:
        phone.set_temperature(zone, 70.0)
    r = run(info, net(), cooldown_c=40.0, cooldown_max_s=0.0)
    assert r.environment["cooldown"]["reached"] is False
    assert any(f.startswith("hot:") for f in r.flags)
    # it cools (fast here): a patient job waits and measures cool
    cooled = run(info, net(), cooldown_c=45.0, cooldown_max_s=120.0)
    assert cooled.environment["cooldown"]["waited_s"] > 0 and cooled.environment["cooldown"]["reached"] is True
    assert not any(f.startswith("hot: ") and "at start" in f for f in cooled.flags)


def test_an_old_tool_without_csv_mode_is_read_from_its_text_tables(
    farm: AdbDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "benchmark_model_tf28"
    old.write_bytes(benchmark_model_binary(generation="tf2.8"))
    info, _ = pixel(farm)
    monkeypatch.setenv(backend.TOOL_ENV, str(old))
    r = run(info, net(), delegate="cpu")
    assert r.environment["op_profile_mode"] == "text"
    assert r.environment["tool_version"] == "tflite-2.x-start-column"
    assert any(t.stats for t in r.ops)


def test_a_crashing_tool_is_the_models_failure_and_no_binary_says_so(
    farm: AdbDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info, _ = pixel(farm)
    crashing = tmp_path / "crashing"
    crashing.write_bytes(benchmark_model_binary(crash="abort"))
    monkeypatch.setenv(backend.TOOL_ENV, str(crashing))
    with pytest.raises(BackendError, match=r"benchmark_model failed .*exit status 134 \(SIGABRT\)"):
        run(info, net())
    monkeypatch.delenv(backend.TOOL_ENV)
    with pytest.raises(BackendError, match="no benchmark_model configured"):
        run(info, net())


def _unplugged_mid_run(farm: AdbDouble, info: Any, phone: Any) -> list[BaseException]:
    """Start a long run on ``phone``, pull it once the tool runs, and return what the run raised."""
    phone.time_scale = 50.0
    errors: list[BaseException] = []

    def measure() -> None:
        try:
            run(info, net(), runs=50)
        except BaseException as e:  # noqa: BLE001 - the test reads it
            errors.append(e)

    t = threading.Thread(target=measure)
    t.start()
    deadline = time.monotonic() + 60
    while not any("benchmark_model" in c and "--graph" in c for c in phone.history) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    farm.unplug(phone.serial)
    t.join(60)
    return errors


def test_a_phone_unplugged_mid_run_is_a_lost_device(farm: AdbDouble) -> None:
    info, phone = pixel(farm)
    errors = _unplugged_mid_run(farm, info, phone)
    assert len(errors) == 1 and isinstance(errors[0], DeviceLost)
    assert "PIXEL7-1" in str(errors[0])


def test_many_files_are_read_in_commands_short_enough_for_any_adbd(farm: AdbDouble) -> None:
    from devicelab.backends.android import adb, phone_state

    _, phone = pixel(farm)
    paths = [f"/sys/devices/system/cpu/cpu{c % 8}/cpufreq/cpuinfo_max_freq" for c in range(200)] + ["/nope"]
    before = len(phone.history)
    values = phone_state.read_files(adb.PhoneLink(adb.client(), "PIXEL7-1"), paths)
    assert values["/nope"] is None and values[paths[7]] == "2850000" and values[paths[0]] == "1803000"
    commands = phone.history[before:]
    assert len(commands) > 1 and all(len(c) < 4096 for c in commands)


def test_the_photos_preparation_is_timed_on_the_phone_by_tflites_evaluation_tool(
    farm: AdbDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from devicelab.backends.android import image_eval
    from tests.adb_double.imagenet_eval import imagenet_eval_binary

    info, phone = pixel(farm)
    tool = tmp_path / "run_eval"
    tool.write_bytes(imagenet_eval_binary())
    monkeypatch.setenv(image_eval.TOOL_ENV, str(tool))
    progress: list[tuple[float, str]] = []
    settings = ProfileSettings.from_dict({**QUICK, "runs": 3, "cores": [6, 7], "threads": 2})
    result = backend.BACKEND.profile_job(info, net(), settings, lambda f, m: progress.append((f, m)))
    assert [f for f, _ in progress] == sorted(f for f, _ in progress) and progress[-1] == (1.0, "done")
    assert "the phone's load" in result.environment["machine_load"]["summary"]  # not this machine's
    assert result.environment["noise"]["policy"] == "flag"
    breakdown = result.breakdown
    assert breakdown is not None and breakdown.applicable and breakdown.host_side
    jpeg, png = (next(p for p in breakdown.pipelines if p.image.format == f) for f in ("jpeg", "png"))
    assert [(s.name, s.where) for s in jpeg.stages] == [
        ("preprocess", "device"),
        ("model_load", "device"),
        ("inference", "device"),
        ("postprocess", "host"),
    ]
    prep = jpeg.stages[0]
    # 12 megapixels at the double's 5 ns a pixel: about 61 ms a photo, as the tool's mean of 3
    assert prep.stats.n == 3 and 45 < prep.stats.mean < 80 and prep.samples_ms == []
    assert [s.name for s in png.stages][:3] == ["decode", "resize_crop", "normalize"]  # the tool reads JPEG only
    assert "measured on the phone" in breakdown.note
    record = breakdown.environment["phone_preparation"]
    assert record["images"] == 3 and record["command"].startswith("taskset c0 ")
    assert "--num_interpreter_threads=2" in record["command"] and record["inference_avg_ms"] > 0
    copies = [c for c in phone.history if c.startswith("cp ")]
    assert copies and copies[-1].count(" && cp ") == 2  # the photo, pushed once, copied per image
    # a tool that fails leaves the worker's measurement in place and says why
    tool.write_bytes(b"#!/system/bin/sh\necho 'ERROR: Could not run the task evaluation!'\nexit 3\n")
    failed = backend.BACKEND.profile_job(info, net(), settings, lambda f, m: None)
    assert failed.breakdown is not None
    stages = [s.name for s in failed.breakdown.pipelines[0].stages]
    assert stages[:3] == ["decode", "resize_crop", "normalize"]
    assert "evaluation tool failed" in failed.breakdown.note and "exit 3" in failed.breakdown.note
    assert "Could not run the task evaluation" in failed.breakdown.environment["phone_preparation_error"]


def test_an_unplugged_phone_is_absent_before_its_attempt_and_gone_when_pulled_mid_run(farm: AdbDouble) -> None:
    # issue 34 item 4: the run that lost the phone says it is gone (so the worker takes it offline
    # at once), and the check before the next attempt finds it absent (so no attempt is spent)
    info, phone = pixel(farm)
    assert backend.BACKEND.absent(info) is None
    errors = _unplugged_mid_run(farm, info, phone)
    assert len(errors) == 1 and isinstance(errors[0], DeviceLost) and errors[0].gone, errors
    reason = backend.BACKEND.absent(info)
    assert reason is not None and "unplugged" in reason
    locked = DeviceInfo("android", "android:LOCKED-1", "locked")
    assert "unauthorized" in (backend.BACKEND.absent(locked) or "")
