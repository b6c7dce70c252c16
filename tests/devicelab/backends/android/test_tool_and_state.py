"""The benchmark_model command line, the verdict on its exit, and what the phone's text says."""

from __future__ import annotations

import pytest

from devicelab.backends.android import phone_state, tool_run
from devicelab.backends.android.adb import ShellOutput, adb_server
from devicelab.backends.base import BackendError

DUMPSYS_BATTERY = """Current Battery Service state:
  AC powered: false
  USB powered: true
  Wireless powered: false
  Dock powered: false
  Max charging current: 500000
  status: 2
  health: 2
  present: true
  level: 87
  scale: 100
  voltage: 4312
  temperature: 301
  technology: Li-ion
"""


def test_the_command_pins_with_a_toybox_hex_mask_and_asks_for_exact_counts() -> None:
    cmd = tool_run.command_line(
        "/data/local/tmp/latencylab/models/m.tflite",
        "/data/local/tmp/latencylab/p.csv",
        delegate="gpu",
        threads=2,
        warmup_runs=3,
        runs=20,
        precision="fp16",
        cores=(7, 6),
    )
    assert cmd.mask == "c0"
    assert cmd.command.startswith("taskset c0 /data/local/tmp/latencylab/benchmark_model ")
    words = cmd.command.split()
    for flag in (
        "--num_threads=2",
        "--warmup_runs=3",
        "--num_runs=20",
        "--min_secs=0",
        "--warmup_min_secs=0",
        "--use_gpu=true",
        "--use_xnnpack=false",
        "--gpu_precision_loss_allowed=true",
        "--enable_op_profiling=true",
        "--op_profiling_output_mode=csv",
        "--op_profiling_output_file=/data/local/tmp/latencylab/p.csv",
    ):
        assert flag in words
    plain = tool_run.command_line(
        "m.tflite", "p.csv", delegate="cpu", threads=1, warmup_runs=0, runs=1, precision="fp32"
    )
    assert plain.mask is None and not plain.command.startswith("taskset")
    assert "--use_xnnpack=false" in plain.command.split()


def test_a_failed_run_is_the_models_failure_with_the_tools_own_message() -> None:
    out = ShellOutput(
        134,
        "INFO: STARTING!\nINFO: Loaded model m.tflite\n",
        "ERROR: Didn't find op for builtin opcode 'CONV_2D' version '9'\nERROR: Registration failed.\nAborted\n",
    )
    with pytest.raises(BackendError) as e:
        tool_run.check_exit(out, "SER1", "net")
    text = str(e.value)
    assert "SIGABRT" in text and "Didn't find op for builtin opcode 'CONV_2D'" in text and "SER1" in text
    tool_run.check_exit(ShellOutput(0, "ok", ""), "SER1", "net")  # no error
    with pytest.raises(BackendError, match="not found on the phone"):
        tool_run.check_exit(ShellOutput(127, "", "/system/bin/sh: x: not found"), "SER1", "net")


def test_phone_text_parsers() -> None:
    props = phone_state.parse_getprop("[ro.product.model]: [Pixel 7]\n[ro.build.version.sdk]: [34]\n[empty]: []\n")
    assert props == {"ro.product.model": "Pixel 7", "ro.build.version.sdk": "34", "empty": ""}
    assert phone_state.parse_cpu_list("0-3,6\n") == [0, 1, 2, 3, 6]
    clusters = phone_state.clusters_of({0: 1800, 1: 1800, 2: 2400, 3: 2900})
    assert [(c["name"], c["cores"]) for c in clusters] == [("little", [0, 1]), ("mid", [2]), ("big", [3])]
    assert phone_state.parse_battery(DUMPSYS_BATTERY) == (30.1, "usb", 87)
    assert phone_state.parse_screen("  mWakefulness=Asleep\n") is False
    assert phone_state.parse_screen("Display Power: state=ON\n") is True
    assert phone_state.parse_screen("nothing") is None
    assert phone_state.gles_renderer("x\nGLES: ARM, Mali-G710, OpenGL ES 3.2 v1.r36p0\n") == (
        "ARM, Mali-G710, OpenGL ES 3.2 v1.r36p0"
    )


def test_snapshot_watches_the_cpu_zones_and_flags_capped_cores() -> None:
    snap = phone_state.Snapshot(
        temperatures_c={"cpu-1-0": 44.0, "battery": 31.0, "pa-therm": 60.0},
        max_khz={"6": 2_850_000, "7": 2_850_000},
        cap_khz={"6": 2_850_000, "7": 1_200_000},
    )
    assert snap.watched_c() == 44.0  # a board sensor is not the CPU
    assert snap.throttled((6, 7)) == ["cpu7 capped at 1.20 of 2.85 GHz"]


def test_the_adb_server_address_comes_from_the_environment() -> None:
    assert adb_server({}) == ("127.0.0.1", 5037)
    assert adb_server({"LATENCYLAB_ADB_SERVER": "10.0.0.5:5038"}) == ("10.0.0.5", 5038)
    with pytest.raises(ValueError, match="host:port"):
        adb_server({"LATENCYLAB_ADB_SERVER": "nohost"})
