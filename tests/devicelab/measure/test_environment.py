"""ProfileEnvironment declares every key a backend writes: a tiny profiling job on the CPU backend,
the OpenCL backend and a phone of the adb double (through ``profile_job``, so the noise policy's
keys are there too) writes only declared keys, at every level of nesting, and the stored JSON is
those dicts as is."""

from __future__ import annotations

import json
import os
import re
import types
import typing
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest

from devicelab.backends import cpu
from devicelab.backends.profile_settings import ProfileSettings
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.measure.environment import (
    MachineLoadRecord,
    NoiseRecord,
    ProfileEnvironment,
    stored_environment,
)


def tiny() -> Graph:
    b = GraphBuilder("env-net", (1, 3, 16, 16))
    x = b.relu(b.conv(b.input, 8, 3))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 4))


def _shapes(declared: Any) -> list[type]:
    """The TypedDicts a declared type holds: itself, inside ``X | None``, or as a list's items."""
    if typing.is_typeddict(declared):
        return [declared]
    if get_origin(declared) in (Union, types.UnionType, list):
        return [s for arg in get_args(declared) for s in _shapes(arg)]
    return []


def undeclared(value: object, shape: type, path: str = "environment") -> list[str]:
    """The paths of keys in ``value`` (a JSON object) that ``shape`` (a TypedDict) does not declare."""
    assert isinstance(value, dict), f"{path} is not an object: {value!r:.80}"
    hints = get_type_hints(shape)
    found = [f"{path}.{key}" for key in value if key not in hints]
    for key, item in value.items():
        for inner in _shapes(hints.get(key)):
            items = item if isinstance(item, list) else [item] if item is not None else []
            for i, one in enumerate(items):
                where = f"{path}.{key}[{i}]" if isinstance(item, list) else f"{path}.{key}"
                found += undeclared(one, inner, where)
    return found


def test_the_check_finds_an_undeclared_key_at_any_depth() -> None:
    env = {
        "runtime": "x",
        "shiny_new_key": 1,
        "machine_load": {"summary": "idle", "others": [{"pid": 1, "name": "a", "cpu_percent": 1.0, "uid": 0}]},
        "noise": {"policy": "flag", "attempts": [{"cv": 0.01, "spread": 2}]},
    }
    assert undeclared(env, ProfileEnvironment) == [
        "environment.shiny_new_key",
        "environment.machine_load.others[0].uid",
        "environment.noise.attempts[0].spread",
    ]


def test_every_key_the_cpu_backend_writes_is_declared() -> None:
    device = cpu.discover()[0]
    cores = sorted(os.sched_getaffinity(0))[:1] if hasattr(os, "sched_getaffinity") else []
    settings = ProfileSettings(runs=3, warmup_runs=1, cores=cores, breakdown=False)
    result = cpu.BACKEND.profile_job(device, tiny(), settings)
    env = result.environment
    assert {"runtime", "kernel_owner", "memory", "machine_load", "noise", "blocks"} <= set(env)
    assert undeclared(env, ProfileEnvironment) == []
    assert json.loads(json.dumps(env)) == env  # plain JSON: stored exactly as written


def test_every_key_the_opencl_backend_writes_is_declared() -> None:
    from devicelab.backends.opencl import devices
    from devicelab.backends.opencl.backend import BACKEND, device_info

    try:
        found = list(devices.list_devices().values())
    except Exception as e:  # no ICD / no platform
        pytest.skip(f"no OpenCL platform: {e}")
    if not found:
        pytest.skip("no OpenCL device")
    settings = ProfileSettings(backend="opencl", threads=1, warmup_runs=1, runs=3, breakdown=False)
    result = BACKEND.profile_job(device_info(found[0]), tiny(), settings)
    env = result.environment
    assert {"runtime", "plan", "kernel_config", "device_span", "POCL_MAX_PTHREAD_COUNT", "noise"} <= set(env)
    assert undeclared(env, ProfileEnvironment) == []
    assert json.loads(json.dumps(env)) == env


def test_every_key_a_phone_writes_is_declared(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from devicelab.backends.android import backend
    from tests.adb_double.benchmark_tool import benchmark_model_binary
    from tests.adb_double.phones import Phone
    from tests.adb_double.server import running_adb_double

    phone = Phone("PIXEL7-1")
    phone.time_scale = 0.05
    tool = tmp_path / "benchmark_model"
    tool.write_bytes(benchmark_model_binary())
    monkeypatch.setenv(backend.TOOL_ENV, str(tool))
    settings = ProfileSettings(
        backend="android", runs=3, warmup_runs=1, cooldown_c=80.0, cooldown_max_s=2.0, breakdown=False
    )
    with running_adb_double(phone) as double:
        monkeypatch.setenv("LATENCYLAB_ADB_SERVER", double.address)
        result = backend.BACKEND.profile_job(backend.discover()[0], tiny(), settings)
    env = result.environment
    assert {"delegate", "cooldown", "temperatures_before_c", "memory_mb", "op_rows", "noise"} <= set(env)
    assert undeclared(env, ProfileEnvironment) == []
    assert json.loads(json.dumps(env)) == env


def test_what_the_pages_read_by_name_is_declared() -> None:
    """The job page's templates (``result.environment.X``) and the dashboard's database lookups
    (``result__environment__X__Y``) name keys mypy cannot see; each must be declared."""
    root = Path(__file__).resolve().parents[3] / "dashboard"
    read: set[tuple[str, ...]] = set()
    for path in [*root.rglob("*.html"), *root.rglob("*.py")]:
        text = path.read_text()
        read |= {tuple(m.split(".")) for m in re.findall(r"result\.environment\.(\w+)", text)}
        read |= {tuple(m.split("__")) for m in re.findall(r"result__environment__(\w+)", text)}
    assert ("noise",) in read and ("cooldown", "threshold_c") in read
    for keys in read:
        shape: Any = ProfileEnvironment
        for key in keys:
            assert shape is not None, (
                f"environment.{'.'.join(keys)}: {key!r} is read inside a value that is not an object"
            )
            hints = get_type_hints(shape)
            assert key in hints, f"the dashboard reads environment.{'.'.join(keys)}, which is not declared"
            inner = _shapes(hints[key])
            shape = inner[0] if inner else None


def test_a_stored_environment_reads_back_as_it_was_stored() -> None:
    load: MachineLoadRecord = {"summary": "idle", "cores_online": 2}
    noise: NoiseRecord = {"policy": "flag", "reruns_allowed": 0, "threshold_cv": 0.05, "kept": 0, "attempts": []}
    stored = {"runtime": "onnxruntime 1.0", "machine_load": load, "noise": noise, "an_old_workers_key": True}
    assert stored_environment(stored) == stored  # an older row's keys stay readable
    assert stored_environment(None) == {} and stored_environment("damaged") == {}
