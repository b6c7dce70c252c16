"""The emulated benchmark_model, driven like a real phone with real adbutils over TCP.

A test pushes the tool and a .tflite model, runs the tool through shell v2 (reading packets as
they arrive), pulls the CSV it wrote with sync and reads everything with our production parser
(``devicelab.backends.android.benchmark_output``). Phones run with a small ``time_scale`` so a
benchmark of a simulated second takes milliseconds.
"""

from __future__ import annotations

import queue
import struct
import threading
import time
from collections.abc import Iterator

import adbutils
import pytest

from devicelab.backends.android import benchmark_output as bo
from tests.adb_double.benchmark_tool import FAKE_BENCHMARK_MODEL_MARKER, benchmark_model_binary
from tests.adb_double.op_profiling import Stat
from tests.adb_double.phones import DEVICE, OFFLINE, UNAUTHORIZED, Phone
from tests.adb_double.server import AdbDouble, running_adb_double
from tests.devicelab.graph.tflite_writer import TFLiteWriter

DIR = "/data/local/tmp/ll"
TOOL = f"{DIR}/benchmark_model"
MODEL = f"{DIR}/model.tflite"
CSV = f"{DIR}/ops.csv"
FAST = "--warmup_runs=2 --warmup_min_secs=0 --num_runs=10 --min_secs=0"


def small_cnn(with_argmax: bool = False) -> bytes:
    """A MobileNet-like stack: conv, depthwise + pointwise blocks, pool, FC, softmax."""
    w = TFLiteWriter()
    x = w.input("input", [1, 64, 64, 3])
    y = w.conv2d(x, 16, 3, stride=2, act="RELU6", name="conv0")
    y = w.dwconv(y, 3, act="RELU6", name="dw1")
    y = w.conv2d(y, 32, 1, act="RELU6", name="pw1")
    y = w.dwconv(y, 3, stride=2, act="RELU6", name="dw2")
    y = w.conv2d(y, 64, 1, act="RELU6", name="pw2")
    y = w.pool("AVERAGE_POOL_2D", y, 16, 16, name="pool")
    y = w.reshape(y, [1, 64], name="flat")
    y = w.fc(y, 10, name="logits")
    y = w.softmax(y, name="probs")
    if with_argmax:
        axis = w.const("argmax/axis", [1], [1], dtype="int32")
        out = w.tensor("argmax", [1], "int32")
        w.op("ARG_MAX", [y, axis], [out], ("ArgMaxOptions", {"OutputType": 2}))
        y = out
    w.outputs.append(y)
    return w.to_bytes()


@pytest.fixture
def double() -> Iterator[AdbDouble]:
    phone, other = Phone("PIXEL7"), Phone("GALAXY", props={"ro.product.model": "SM-S918B"})
    for p in (phone, other):
        p.time_scale = 0.01
    with running_adb_double(phone, other) as d:
        yield d


@pytest.fixture
def client(double: AdbDouble) -> adbutils.AdbClient:
    return adbutils.AdbClient(host=double.host, port=double.port, socket_timeout=10)


@pytest.fixture
def dev(client: adbutils.AdbClient) -> adbutils.AdbDevice:
    """The Pixel with the tool and the model pushed, as a backend would set it up."""
    d = client.device("PIXEL7")
    d.shell(f"mkdir -p {DIR}")
    d.sync.push(benchmark_model_binary(), TOOL, mode=0o644)
    assert d.shell2(f"chmod 755 {TOOL}", v2=True).returncode == 0
    d.sync.push(small_cnn(), MODEL, mode=0o644)
    return d


def phone_of(double: AdbDouble, serial: str) -> Phone:
    return next(p for p in double.phones() if p.serial == serial)


def stream_v2(d: adbutils.AdbDevice, command: str) -> Iterator[tuple[int, bytes]]:
    """shell,v2 packets (1 stdout, 2 stderr, 3 exit) as they arrive."""
    c = d.open_transport(timeout=10)
    try:
        c.send_command(f"shell,v2:{command}")
        c.check_okay()
        while True:
            kind, size = struct.unpack("<BI", c.read_exact(5))
            data = c.read_exact(size) if size else b""
            yield kind, data
            if kind == 3:
                return
    finally:
        c.close()


def run_v2(d: adbutils.AdbDevice, command: str) -> tuple[int, str, str]:
    r = d.shell2(command, v2=True, timeout=20)
    return r.returncode, r.stdout, r.stderr


def summary_and_profile(d: adbutils.AdbDevice, flags: str) -> tuple[bo.RunSummary, bo.OperatorProfile, str]:
    code, out, err = run_v2(
        d,
        f"{TOOL} --graph={MODEL} {flags} --enable_op_profiling=true --op_profiling_output_mode=csv "
        f"--op_profiling_output_file={CSV}",
    )
    assert code == 0, err
    csv = d.sync.read_bytes(CSV).decode()
    return bo.parse_summary(out), bo.parse_op_profile(csv), err


# -- running files -----------------------------------------------------------------------------


def test_missing_and_non_executable_files_fail_like_mksh(dev: adbutils.AdbDevice) -> None:
    code, _, err = run_v2(dev, f"{DIR}/nope --graph={MODEL}")
    assert (code, err) == (127, f"/system/bin/sh: {DIR}/nope: inaccessible or not found\n")
    dev.sync.push(benchmark_model_binary(), f"{DIR}/plain", mode=0o644)
    code, _, err = run_v2(dev, f"{DIR}/plain --graph={MODEL}")
    assert (code, err) == (126, f"/system/bin/sh: {DIR}/plain: can't execute: Permission denied\n")
    code, out, _ = run_v2(dev, f"cd {DIR} && chmod +x plain && ./plain --graph=model.tflite {FAST}")
    assert code == 0 and "INFO: Loaded model model.tflite\n" in out
    assert dev.sync.read_bytes(TOOL).startswith(FAKE_BENCHMARK_MODEL_MARKER)


def test_output_streams_line_by_line_with_the_exit_code_last(dev: adbutils.AdbDevice, double: AdbDouble) -> None:
    phone_of(double, "PIXEL7").time_scale = 0.2  # the warm-up second really takes ~0.1 s
    packets = list(stream_v2(dev, f"{TOOL} --graph={MODEL} --num_threads=2 --warmup_min_secs=0.5 --min_secs=0.5"))
    assert packets[-1] == (3, b"\x00")
    stdout = [data.decode() for kind, data in packets if kind == 1]
    assert stdout[0] == "INFO: STARTING!\n"
    # Each log line is its own write, so a reader sees the warm-up line before the timed one.
    warmup = next(i for i, line in enumerate(stdout) if line.startswith("INFO: count="))
    timed = next(i for i in range(warmup + 1, len(stdout)) if stdout[i].startswith("INFO: count="))
    assert warmup < timed < next(i for i, line in enumerate(stdout) if line.startswith("INFO: Inference timings"))
    stderr = b"".join(data for kind, data in packets if kind == 2).decode()
    assert "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n" in stderr
    # shell v1 streams too (one raw byte stream, stdout and stderr merged, no exit code).
    conn = dev.shell(f"{TOOL} --graph={MODEL} {FAST}", stream=True)
    first = conn.conn.recv(64)
    rest = conn.read_until_close(encoding="utf-8")
    conn.close()
    assert first.startswith(b"INFO: STARTING!\n") and "Inference timings in us" in rest


def test_counts_follow_runs_and_min_secs_like_the_real_loop(dev: adbutils.AdbDevice) -> None:
    summary, profile, _ = summary_and_profile(dev, FAST)
    assert summary.warmup is not None and summary.inference is not None
    assert (summary.warmup.count, summary.inference.count) == (2, 10)
    assert profile.mode is bo.OutputMode.CSV and profile.version is bo.ToolVersion.LITERT_NO_START
    assert profile.skipped_init_table
    csv = dev.sync.read_bytes(CSV).decode()
    assert "Timings (microseconds): count=10 " in csv.split(bo.RUN_SECTION)[1]
    # min_secs keeps running past num_runs until a second of (phone) time has gone by.
    summary, _, _ = summary_and_profile(dev, "--warmup_runs=1 --warmup_min_secs=0 --num_runs=3 --min_secs=0.05")
    inference = summary.inference
    assert inference is not None and inference.avg_us is not None and inference.count > 3
    assert inference.count * inference.avg_us >= 50_000 > (inference.count - 2) * inference.avg_us
    # Without warm-up time the defaults still warm up for 0.5 s (warmup_min_secs).
    summary, _, _ = summary_and_profile(dev, "--num_runs=5 --min_secs=0")
    assert summary.warmup is not None and summary.warmup.count > 1 and summary.inference.count == 5  # type: ignore[union-attr]


def test_delegates_show_in_the_profile_as_the_real_tool_shows_them(dev: adbutils.AdbDevice) -> None:
    _, cpu, _ = summary_and_profile(dev, f"{FAST} --use_xnnpack=false")
    assert [r.node_type for r in cpu.rows][:3] == ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"]
    assert cpu.rows[0].name == "[conv0]:0" and cpu.rows[-1].name == "[probs]:8"

    _, xnn, err = summary_and_profile(dev, f"{FAST} --use_xnnpack=true --num_threads=4")
    assert [r.node_type for r in xnn.rows][:2] == ["Convolution (NHWC, F32) IGEMM", "Convolution (NHWC, F32) DWConv"]
    # the CSV has tabs where the names had commas; the parser gives the commas back
    assert xnn.rows[0].name == "Delegate/Convolution (NHWC, F32) IGEMM:0"
    assert all(r.times_called == 1 for r in xnn.rows) and len(xnn.rows) == 9
    assert "VERBOSE: Replacing 9 out of 9 node(s) with delegate (TfLiteXNNPackDelegate) node" in err

    # today's LiteRT: one row per OpenCL dispatch, named by the GPU node's label, no partition row
    summary, gpu, err = summary_and_profile(dev, f"{FAST} --use_gpu=true")
    assert [r.node_type for r in gpu.rows][:3] == ["convolution_2d 0", "depthwise_convolution 1", "convolution_2d 2"]
    assert gpu.rows[0].name == "Delegate/convolution_2d 0:0" and len(gpu.rows) == 9
    assert "INFO: Created TensorFlow Lite delegate for GPU.\n" in err
    assert summary.init_ms is not None and summary.init_ms > 50  # shader compilation

    _, nnapi, _ = summary_and_profile(dev, f"{FAST} --use_nnapi=true")
    assert [(r.node_type, r.name) for r in nnapi.rows] == [("TfLiteNnapiDelegate", "[probs]:9")]


def test_the_gpu_delegate_refuses_what_it_cannot_run(dev: adbutils.AdbDevice) -> None:
    dev.sync.push(small_cnn(with_argmax=True), MODEL, mode=0o644)
    code, out, err = run_v2(dev, f"{TOOL} --graph={MODEL} --use_gpu=true {FAST} --enable_op_profiling=true")
    assert code == 0
    assert (
        "ERROR: Following operations are not supported by GPU delegate:\n"
        "ARG_MAX: Operation is not supported.\n"
        "9 operations will run on the GPU, and the remaining 1 operations will run on the CPU.\n"
    ) in err
    assert (
        "INFO: Explicitly applied GPU delegate, and the model graph will be partially executed by the delegate w/ 1 delegate kernels.\n"
        in out
    )
    rows = bo.parse_op_profile(out).rows
    assert all(bo.gpu_dispatch_nodes(r.node_type) for r in rows[:-1]) and len(rows) == 10
    assert (rows[-1].node_type, rows[-1].name) == ("ARG_MAX", "[argmax]:9")
    # a build without the per-dispatch events shows the delegate as one partition row
    dev.sync.push(benchmark_model_binary(gpu_rows="partition"), TOOL, mode=0o755)
    code, out, _ = run_v2(dev, f"{TOOL} --graph={MODEL} --use_gpu=true {FAST} --enable_op_profiling=true")
    rows = bo.parse_op_profile(out).rows
    assert [(r.node_type, r.name) for r in rows] == [("TfLiteGpuDelegateV2", "[probs]:10"), ("ARG_MAX", "[argmax]:9")]


def test_tf28_generation_prints_text_tables_with_a_start_column(dev: adbutils.AdbDevice) -> None:
    dev.sync.push(benchmark_model_binary("tf2.8"), TOOL, mode=0o755)
    code, out, _ = run_v2(
        dev,
        f"{TOOL} --graph={MODEL} {FAST} --enable_op_profiling=true --op_profiling_output_mode=csv "
        f"--op_profiling_output_file={CSV}",
    )
    assert code == 0
    assert out.startswith("STARTING!\n")  # TF 2.8's tool logs without "INFO: "
    assert f"Unconsumed cmdline flags: --op_profiling_output_mode=csv --op_profiling_output_file={CSV}\n" in out
    assert dev.sync.exists(CSV) is False
    profile = bo.parse_op_profile(out)
    assert profile.version is bo.ToolVersion.TFLITE_START_COLUMN and profile.mode is bo.OutputMode.TEXT
    assert [(r.node_type, r.name) for r in profile.rows] == [("TfLiteXNNPackDelegate", "[probs]:9")]
    summary = bo.parse_summary(out)
    assert summary.inference is not None and summary.inference.count == 10
    assert "p5=" not in out  # tsl::Stat without percentiles


# -- taskset, heat, throttling -------------------------------------------------------------------


def avg_us(d: adbutils.AdbDevice, prefix: str, flags: str = "--num_threads=1") -> float:
    code, out, err = run_v2(d, f"{prefix}{TOOL} --graph={MODEL} --use_xnnpack=true {flags} {FAST}")
    assert code == 0, err
    return bo.parse_summary(out).inference_avg_us


def test_taskset_limits_the_cores_the_tool_runs_on(dev: adbutils.AdbDevice) -> None:
    big, little = avg_us(dev, "taskset c0 "), avg_us(dev, "taskset 0f ")
    assert little > 2.5 * big  # an A55 at 1.8 GHz against an X1 at 2.85 GHz
    assert run_v2(dev, "taskset 3 nproc") == (0, "2\n", "")
    code, _, err = run_v2(dev, f"taskset 100 {TOOL}")
    assert (
        code == 1 and err.startswith("taskset: failed to set pid ") and err.endswith("'s affinity: Invalid argument\n")
    )
    assert run_v2(dev, "taskset -c 0-3 ls") == (1, "", "taskset: Unknown option 'c' (see \"taskset --help\")\n")
    assert run_v2(dev, "taskset f0") == (1, "", "taskset: Needs 2 args\n")
    assert run_v2(dev, "taskset zz ls") == (1, "", "taskset: bad mask 'zz'\n")


def zone_index(d: adbutils.AdbDevice, name: str) -> int:
    types = d.shell("cat /sys/class/thermal/thermal_zone*/type").split()
    return types.index(name)


def temp_c(d: adbutils.AdbDevice, zone: int) -> float:
    return int(d.shell(f"cat /sys/class/thermal/thermal_zone{zone}/temp")) / 1000


def test_zones_heat_with_work_and_cool_over_time(dev: adbutils.AdbDevice, double: AdbDouble) -> None:
    phone = phone_of(double, "PIXEL7")
    phone.time_scale = 0.002
    big = zone_index(dev, "BIG")
    idle = temp_c(dev, big)
    avg_us(dev, "taskset 0f ", "--num_threads=4 --min_secs=20")  # 20 s on the little cores
    after_little = temp_c(dev, big)
    avg_us(dev, "taskset c0 ", "--num_threads=2 --min_secs=20")  # 20 s on both big cores
    after_big = temp_c(dev, big)
    assert idle < after_little < after_big and after_big - after_little > 5 * (after_little - idle)
    phone.cooling_time_scale = 200.0  # a wall-clock 0.1 s is 20 s of cooling
    time.sleep(0.1)
    cooled = temp_c(dev, big)
    assert idle <= cooled < after_big - 5


def test_a_hot_phone_throttles_its_big_cores_and_the_tool_slows_down(
    dev: adbutils.AdbDevice, double: AdbDouble
) -> None:
    phone = phone_of(double, "PIXEL7")
    cool = avg_us(dev, "taskset 80 ")
    max_khz = int(dev.shell("cat /sys/devices/system/cpu/cpu7/cpufreq/cpuinfo_max_freq"))
    assert int(dev.shell("cat /sys/devices/system/cpu/cpu7/cpufreq/scaling_cur_freq")) == max_khz
    phone.cooling_time_scale = 0.0  # stays hot for the test
    phone.set_temperature("BIG", 95.0)
    throttled_khz = int(dev.shell("cat /sys/devices/system/cpu/cpu7/cpufreq/scaling_cur_freq"))
    assert throttled_khz < 0.5 * max_khz
    assert int(dev.shell("cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")) == 1803000
    hot = avg_us(dev, "taskset 80 ")
    assert hot > 1.6 * cool


def test_battery_power_and_gpu_services(dev: adbutils.AdbDevice, double: AdbDouble) -> None:
    phone = phone_of(double, "PIXEL7")
    phone.set_temperature("battery", 30.1)
    phone.cooling_time_scale = 0.0
    battery = dev.shell("dumpsys battery")
    assert battery.startswith("Current Battery Service state:\n  AC powered: false\n  USB powered: true\n")
    assert "\n  temperature: 301\n" in battery and "\n  status: 2\n" in battery and "\n  level: 85\n" in battery
    assert dev.shell("cat /sys/class/power_supply/battery/temp") == "301"
    dev.shell("dumpsys battery unplug")
    assert "(UPDATES STOPPED -- use 'reset' to restart)\n  AC powered: false\n  USB powered: false" in dev.shell(
        "dumpsys battery"
    )
    assert "  status: 3\n" in dev.shell("dumpsys battery")
    assert dev.shell("dumpsys power | grep mWakefulness=").strip() == "mWakefulness=Awake"
    dev.shell("input keyevent KEYCODE_SLEEP")
    assert "  mWakefulness=Asleep\n" in dev.shell("dumpsys power")
    gles = dev.shell("dumpsys SurfaceFlinger | grep '^GLES: '")
    assert gles == "GLES: ARM, Mali-G710, OpenGL ES 3.2 v1.r38p1-01eac0.c1a71ccca2acf211eb87c5db5322f569"
    assert dev.shell2("dumpsys nosuch", v2=True).stderr == "Can't find service: nosuch\n"


# -- faults ----------------------------------------------------------------------------------------


def follow(
    d: adbutils.AdbDevice, command: str
) -> tuple[queue.Queue[tuple[int, bytes] | BaseException], threading.Thread]:
    """Run a command in a thread, handing its packets (or the error that ended the stream) over."""
    events: queue.Queue[tuple[int, bytes] | BaseException] = queue.Queue()

    def run() -> None:
        try:
            for packet in stream_v2(d, command):
                events.put(packet)
        except (adbutils.AdbError, EOFError, OSError) as exc:
            events.put(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return events, thread


def wait_for_line(events: queue.Queue[tuple[int, bytes] | BaseException], text: bytes) -> None:
    while True:
        item = events.get(timeout=10)
        assert isinstance(item, tuple), item
        if text in item[1]:
            return


def drain(events: queue.Queue[tuple[int, bytes] | BaseException]) -> list[tuple[int, bytes] | BaseException]:
    items = []
    while True:
        item = events.get(timeout=10)
        items.append(item)
        if isinstance(item, BaseException) or item[0] == 3:
            return items


@pytest.mark.parametrize("how", ["unplug", OFFLINE, UNAUTHORIZED])
def test_losing_the_phone_mid_run_ends_the_stream_and_the_tool(
    dev: adbutils.AdbDevice, double: AdbDouble, client: adbutils.AdbClient, how: str
) -> None:
    phone = phone_of(double, "PIXEL7")
    phone.time_scale = 1.0  # a 100 s benchmark: only losing the phone ends it
    events, thread = follow(dev, f"{TOOL} --graph={MODEL} --min_secs=100")
    wait_for_line(events, b"Running benchmark for at least 1 iterations")
    if how == "unplug":
        double.unplug("PIXEL7")
    else:
        phone.state = how
    ending = drain(events)
    assert isinstance(ending[-1], BaseException)  # EOF before any exit-code packet
    assert not any(isinstance(i, tuple) and i[0] == 3 for i in ending)
    thread.join(timeout=10)
    deadline = time.monotonic() + 5
    while phone.processes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert phone.processes == {}  # the tool was stopped
    assert client.device("GALAXY").shell("echo still here") == "still here"
    if how != "unplug":
        phone.state = DEVICE
        assert client.device("PIXEL7").shell("echo back") == "back"


def test_pidof_and_kill_stop_a_running_tool(dev: adbutils.AdbDevice, client: adbutils.AdbClient) -> None:
    events, _ = follow(dev, f"{TOOL} --graph={MODEL} --min_secs=1000")
    wait_for_line(events, b"Running benchmark")
    pid = client.device("PIXEL7").shell("pidof benchmark_model")
    assert pid.isdigit()
    assert client.device("PIXEL7").shell2(f"kill {pid}", v2=True).returncode == 0
    ending = drain(events)
    assert ending[-1] == (3, bytes([143]))
    assert (2, b"Terminated \n") in ending


@pytest.mark.parametrize(
    ("crash", "code", "stderr_part"),
    [
        ("abort", 134, "Aborted \n"),
        ("segfault", 139, "Segmentation fault \n"),
        (
            "unsupported_op",
            1,
            "ERROR: Didn't find op for builtin opcode 'CONV_2D' version '1'. An older version of this builtin might "
            "be supported. Are you using an old TFLite binary with a newer model?\n\nERROR: Registration failed.\n\n"
            "ERROR: Failed to initialize the interpreter\nERROR: Benchmarking failed.\n",
        ),
        ("xnnpack", 1, "ERROR: Failed to apply XNNPACK delegate.\nERROR: Benchmarking failed.\n"),
        ("gpu_init", 1, "ERROR: Failed to apply GPU delegate.\nERROR: Benchmarking failed.\n"),
    ],
)
def test_faults_fail_like_the_real_tool(dev: adbutils.AdbDevice, crash: str, code: int, stderr_part: str) -> None:
    dev.sync.push(benchmark_model_binary(crash=crash), TOOL, mode=0o755)
    delegate = {"xnnpack": "--use_xnnpack=true", "gpu_init": "--use_gpu=true"}.get(crash, "")
    got, out, err = run_v2(dev, f"{TOOL} --graph={MODEL} {delegate} {FAST}")
    assert got == code and stderr_part in err
    assert out.startswith("INFO: STARTING!\n") and "Inference timings" not in out


def test_phone_fault_and_bad_inputs(dev: adbutils.AdbDevice, double: AdbDouble) -> None:
    phone = phone_of(double, "PIXEL7")
    phone.tool_fault = "abort"
    assert run_v2(dev, f"{TOOL} --graph={MODEL} {FAST}")[0] == 134
    phone.tool_fault = None
    dev.sync.push(b"not a model at all", f"{DIR}/junk.tflite")
    code, _, err = run_v2(dev, f"{TOOL} --graph={DIR}/junk.tflite")
    assert code == 1 and err == (
        "ERROR: The model is not a valid Flatbuffer buffer\n"
        f"ERROR: Failed to load model {DIR}/junk.tflite\nERROR: Benchmarking failed.\n"
    )
    code, _, err = run_v2(dev, f"{TOOL} --graph={DIR}/missing.tflite")
    assert code == 1 and err.startswith(f"ERROR: Could not open '{DIR}/missing.tflite'.\n")
    code, _, err = run_v2(dev, f"{TOOL} --num_threads=four --graph={MODEL}")
    assert code == 1 and err.startswith("ERROR: Failed to parse flag 'num_threads' against argv '--num_threads=four'\n")
    assert run_v2(dev, TOOL)[2] == (
        "ERROR: Please specify the name of your TF Lite input file with --graph\nERROR: Benchmarking failed.\n"
    )


def test_closing_the_connection_hangs_up_the_tool(dev: adbutils.AdbDevice, double: AdbDouble) -> None:
    phone = phone_of(double, "PIXEL7")
    c = dev.open_transport(timeout=10)
    c.send_command(f"shell,v2:{TOOL} --graph={MODEL} --min_secs=1000")
    c.check_okay()
    assert c.read_exact(5)[0] == 1  # STARTING! arrived: the tool runs
    assert phone.processes
    c.close()
    deadline = time.monotonic() + 5
    while phone.processes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert phone.processes == {}


def test_a_detached_run_survives_the_cable_and_leaves_its_log(dev: adbutils.AdbDevice, double: AdbDouble) -> None:
    log = f"{DIR}/run.log"
    pid = dev.shell(f"cd {DIR} && nohup ./benchmark_model --graph=model.tflite --min_secs=2 > {log} 2>&1 & echo $!")
    assert pid.isdigit()
    phone = double.unplug("PIXEL7")
    assert int(pid) in phone.processes  # still running on the phone
    double.plug(phone)
    deadline = time.monotonic() + 10
    while int(pid) in phone.processes and time.monotonic() < deadline:
        time.sleep(0.02)
    text = dev.sync.read_bytes(log).decode()
    assert "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." in text  # stderr went there too
    summary = bo.parse_summary(text)
    assert summary.inference is not None and summary.inference.count >= 50


def test_proto_output_mode_writes_a_benchmark_profiling_data_message(dev: adbutils.AdbDevice) -> None:
    out_file = f"{DIR}/ops.pb"
    code, out, _ = run_v2(
        dev,
        f"{TOOL} --graph={MODEL} {FAST} --enable_op_profiling=true --op_profiling_output_mode=proto "
        f"--op_profiling_output_file={out_file}",
    )
    assert code == 0 and bo.RUN_SECTION not in out
    data = dev.sync.read_bytes(out_file)
    assert data[0] == 0x12  # field 2 (init_profile), length-delimited; then 0x1a, runtime_profile
    assert b"ModifyGraphWithDelegate/0" in data and b"Delegate/Softmax (NC, F32):8" in data


def test_count_lines_are_printed_as_tsl_stat_prints_them() -> None:
    assert Stat([10, 20, 30]).output(percentiles=True) == (
        "count=3 first=10 curr=30 min=10 max=30 avg=20 std=8 p5=10 median=20 p95=30"
    )
    assert Stat([2989660, 2912978, 2727203]).output() == (
        "count=3 first=2989660 curr=2727203 min=2727203 max=2989660 avg=2.87661e+06 std=110189"
    )
    # Equal runs (a tiny model at µs resolution): "(all same)" glued to curr=, LiteRT's
    # percentiles after it.
    assert Stat([15, 15, 15]).output(percentiles=True) == "count=3 curr=15(all same) p5=15 median=15 p95=15"
    assert Stat([15]).output() == "count=1 curr=15"
    assert Stat([]).output(percentiles=True) == "count=0 p5=0 median=0 p95=0"
