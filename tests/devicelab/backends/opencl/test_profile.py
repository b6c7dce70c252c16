"""profile(): the CPU backend's result shape from OpenCL event timings, cold start measured apart,
progress reported, the kernel plan and thread settings recorded, bad requests refused clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from devicelab.backends.base import BackendError, ProfileSettings
from devicelab.backends.opencl.backend import device_info, profile
from devicelab.backends.opencl.plan import KERNELS
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph


def small_net() -> Graph:
    """Conv + BN + ReLU, a depthwise block with a residual add, a concat, pooling and a classifier."""
    b = GraphBuilder("small", (1, 3, 24, 24))
    x = b.relu(b.bn(b.conv(b.input, 8, 3, stride=2, name="stem"), name="stem_bn"), name="stem_relu")
    y = b.relu6(b.bn(b.dwconv(x, 3, name="dw"), name="dw_bn"), name="dw_relu6")
    y = b.bn(b.conv(y, 8, 1, name="pw"), name="pw_bn")
    x = b.add(x, y, name="residual")
    x = b.concat([x, b.max_pool(x, 3, stride=1, pad=1, name="pool")], name="cat")
    return b.build(b.classifier(x, 10))


SETTINGS = ProfileSettings(backend="opencl", threads=1, warmup_runs=1, runs=3)


@pytest.fixture(scope="module")
def result(found):
    events: list[tuple[float, str]] = []
    res = profile(device_info(found), small_net(), SETTINGS, lambda f, m: events.append((f, m)))
    return res, events


def test_result_shape_matches_the_cpu_backend(found, result) -> None:
    res, _ = result
    assert res.device.identity == found.identity and res.settings == SETTINGS
    assert res.e2e.n == SETTINGS.runs == len(res.samples_ms)
    assert all(s > 0 for s in res.samples_ms)
    assert res.cold.load_ms > 0 and res.cold.first_run_ms > 0
    graph = small_net()
    assert [r.name for r in res.ops] == [o.name for o in graph.operators]
    assert [r.index for r in res.ops] == list(range(len(graph.operators)))
    json.dumps(res.environment)


def test_every_operator_is_timed_or_fused_into_a_planned_kernel(result) -> None:
    res, _ = result
    plan = {k["name"]: k for k in res.environment["plan"]}
    rows = {r.name: r for r in res.ops}
    for r in res.ops:
        if r.stats is not None:
            assert r.fused_into is None and r.kernel in KERNELS
            assert r.stats.n == SETTINGS.runs and r.stats.mean >= 0
        else:
            assert r.fused_into in plan and r.kernel == plan[r.fused_into]["kernel"]
    assert rows["stem_bn"].fused_into == rows["stem_relu"].fused_into == "stem"
    assert rows["pw_bn"].fused_into == "pw" and rows["stem"].kernel == "conv2d"
    assert rows["flatten_0"].fused_into == "global_avg_pool_0"  # a view: no kernel of its own
    assert rows["cat"].stats is not None  # two copy kernels, summed into the concat's row
    assert [k["ops"][0] for k in res.environment["plan"]].count("cat") == 2


def test_kernel_times_fit_inside_the_device_span_and_the_wall_time(result) -> None:
    res, _ = result
    env = res.environment
    kernel_sum = env["kernel_sum_mean_ms"]
    assert kernel_sum > 0
    assert kernel_sum <= env["device_span"]["mean"] * 1.001 + 1e-3  # in-order queue: kernels never overlap
    assert env["device_span"]["mean"] <= res.e2e.mean * 1.001 + 1e-3
    timed = sum(r.stats.mean for r in res.ops if r.stats is not None)
    assert timed == pytest.approx(kernel_sum, rel=1e-6)


def test_progress_is_monotonic_and_ends_done(result) -> None:
    _, events = result
    fractions = [f for f, _ in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and events[-1][1] == "done"
    assert any("timed run" in m for _, m in events)


def test_environment_records_settings_build_and_plan(result) -> None:
    res, _ = result
    env = res.environment
    for key in (
        "runtime",
        "device",
        "driver_version",
        "precision",
        "threads_requested",
        "compute_units",
        "POCL_MAX_PTHREAD_COUNT",
        "build_options",
        "programs_built",
        "programs_cached",
        "buffer_bytes",
        "weight_bytes",
        "kernels",
        "plan",
        "device_span",
        "kernel_config",
    ):
        assert key in env, key
    distinct = {(k["kernel"], k["attrs"]["variant"]) for k in env["plan"]}
    assert env["programs_built"] + env["programs_cached"] == len(distinct) == len(env["build_options"])
    assert env["kernels"] == len(env["plan"]) and env["threads_requested"] == 1
    for k in env["plan"]:
        assert all(n % loc == 0 for n, loc in zip(k["launch_size"], k["local_size"], strict=True))
    # the device memory the run held: every activation buffer and every weight uploaded
    assert env["memory"]["device_bytes"] == env["buffer_bytes"] + env["weight_bytes"] > 0
    assert res.peak_memory_mb == pytest.approx(env["memory"]["device_bytes"] / 2**20)


def test_programs_are_cached_for_the_device(found, result) -> None:
    again = profile(device_info(found), small_net(), ProfileSettings(backend="opencl", warmup_runs=0, runs=1))
    assert again.environment["programs_built"] == 0
    assert again.environment["programs_cached"] == len(again.environment["build_options"])


@pytest.mark.parametrize(
    "settings,match",
    [
        (ProfileSettings(backend="cpu", runs=1), "backend"),
        (ProfileSettings(backend="opencl", cores=(0,), runs=1), "cores"),
        (ProfileSettings(backend="opencl", precision="int8", runs=1), "int8"),
    ],
)
def test_bad_settings_are_refused(found, settings, match) -> None:
    with pytest.raises(ValueError, match=match):
        profile(device_info(found), small_net(), settings)


def test_unknown_device_is_refused(found) -> None:
    info = device_info(found)
    with pytest.raises(ValueError, match="no OpenCL device"):
        profile(type(info)("opencl", "opencl:elsewhere/x/y", "y"), small_net(), SETTINGS)
    with pytest.raises(ValueError, match="cannot profile"):
        profile(type(info)("cpu", info.identity, "y"), small_net(), SETTINGS)


def test_fp16_needs_the_device_extension(found) -> None:
    settings = ProfileSettings(backend="opencl", precision="fp16", warmup_runs=0, runs=1)
    if found.limits.fp16:
        res = profile(device_info(found), small_net(), settings)
        assert res.environment["precision"] == "fp16"
    else:
        with pytest.raises(BackendError, match="fp16"):
            profile(device_info(found), small_net(), settings)


def test_a_graph_the_backend_cannot_run_is_a_backend_error(found) -> None:
    b = GraphBuilder("ints", (1, 4), dtype="int32")
    graph = b.build(b.op("add", [b.input], name="plus", const_shape=[1], const_value=1))
    with pytest.raises(BackendError, match="int32"):
        profile(device_info(found), graph, SETTINGS)


def test_threads_apply_when_opencl_starts_in_the_process(found) -> None:
    code = (
        "from devicelab.backends.base import DeviceInfo, ProfileSettings\n"
        "from devicelab.backends.opencl.backend import profile\n"
        "from tests.devicelab.backends.opencl.test_profile import small_net\n"
        "s = ProfileSettings(backend='opencl', threads=1, warmup_runs=0, runs=1)\n"
        "info = DeviceInfo('opencl', " + repr(found.identity) + ", 'device')  # OpenCL untouched so far\n"
        "env = profile(info, small_net(), s).environment\n"
        "print(env['POCL_MAX_PTHREAD_COUNT'], env['compute_units'], 'threads_note' in env)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "POCL_MAX_PTHREAD_COUNT"},
    )
    assert done.returncode == 0, done.stderr
    env_value, units, noted = done.stdout.split()
    assert env_value == "1"
    if _is_pocl_cpu(found):
        assert (units, noted) == ("1", "False")  # PoCL's CPU device sized its thread pool from the setting


def test_threads_cannot_change_once_opencl_is_up_and_the_result_says_so(found, result) -> None:
    res, _ = result  # this process initialized OpenCL before asking for one thread
    env = res.environment
    assert env["compute_units"] == found.limits.compute_units
    if _is_pocl_cpu(found) and found.limits.compute_units != 1:
        assert "threads_note" in env


def _is_pocl_cpu(found) -> bool:
    """The device is PoCL's CPU device, whose thread pool POCL_MAX_PTHREAD_COUNT sizes."""
    return "Portable Computing Language" in found.limits.platform and found.limits.device_type == "cpu"
