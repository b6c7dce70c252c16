"""The adb double answers real adbutils over TCP exactly as an adb server would."""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Iterator
from pathlib import Path

import adbutils
import pytest

from tests.adb_double.phones import OFFLINE, UNAUTHORIZED, Phone
from tests.adb_double.server import AdbDouble, running_adb_double


@pytest.fixture
def double() -> Iterator[AdbDouble]:
    with running_adb_double(Phone("PIXEL7A"), Phone("GALAXY", props={"ro.product.model": "SM-S918B"})) as d:
        yield d


@pytest.fixture
def client(double: AdbDouble) -> adbutils.AdbClient:
    return adbutils.AdbClient(host=double.host, port=double.port, socket_timeout=5)


def test_version_and_device_list_with_states(double: AdbDouble, client: adbutils.AdbClient) -> None:
    assert client.server_version() == 41
    double.plug(Phone("LOCKED", state=UNAUTHORIZED))
    states = {info.serial: info.state for info in client.list()}
    assert states == {"PIXEL7A": "device", "GALAXY": "device", "LOCKED": "unauthorized"}
    assert sorted(d.serial for d in client.device_list()) == ["GALAXY", "PIXEL7A"]
    tags = {info.serial: info.tags for info in client.list(extended=True)}
    assert tags["GALAXY"]["model"] == "SM-S918B"
    assert client.device("PIXEL7A").get_state() == "device"


def test_props_and_getprop(client: adbutils.AdbClient) -> None:
    dev = client.device("GALAXY")
    assert dev.prop.model == "SM-S918B"
    assert dev.getprop("ro.product.cpu.abi") == "arm64-v8a"
    assert dev.getprop("ro.build.version.sdk") == "34"
    assert "[ro.soc.model]: [GS201]" in dev.shell("getprop")


def test_shell_output_and_exit_codes_v1_and_v2(client: adbutils.AdbClient) -> None:
    dev = client.device("PIXEL7A")
    assert dev.shell("echo hello world") == "hello world"
    assert "MemTotal" in dev.shell("cat /proc/meminfo")
    assert dev.shell("cat /sys/devices/system/cpu/cpu7/cpufreq/cpuinfo_max_freq") == "2850000"
    assert dev.shell("cat /sys/class/thermal/thermal_zone0/temp") == "30000"
    v1 = dev.shell2("nosuchtool --x")
    assert v1.returncode == 127 and "/system/bin/sh: nosuchtool: not found" in v1.output
    v2 = dev.shell2("echo out; cat /missing", v2=True, rstrip=True)
    assert (v2.returncode, v2.stdout, v2.stderr) == (1, "out", "cat: /missing: No such file or directory")
    assert dev.shell2("mkdir -p /data/local/tmp/ll && ls /data/local/tmp", v2=True).stdout == "ll\n"


def test_push_stat_pull_and_sha256(client: adbutils.AdbClient, tmp_path: Path) -> None:
    dev = client.device("PIXEL7A")
    payload = bytes(range(256)) * 700  # several DATA chunks
    src = tmp_path / "model.tflite"
    src.write_bytes(payload)
    dev.sync.push(src, "/data/local/tmp/model.tflite", mode=0o644)
    info = dev.sync.stat("/data/local/tmp/model.tflite")
    assert info.size == len(payload) and info.mode & 0o777 == 0o644
    assert dev.sync.read_bytes("/data/local/tmp/model.tflite") == payload
    assert "model.tflite" in [f.path for f in dev.sync.list("/data/local/tmp")]
    dev.sync.pull("/data/local/tmp/model.tflite", tmp_path / "back.tflite")
    assert (tmp_path / "back.tflite").read_bytes() == payload
    digest = hashlib.sha256(payload).hexdigest()
    assert dev.shell("sha256sum /data/local/tmp/model.tflite") == f"{digest}  /data/local/tmp/model.tflite"
    assert dev.shell2("rm /data/local/tmp/model.tflite").returncode == 0
    assert dev.sync.exists("/data/local/tmp/model.tflite") is False
    with pytest.raises(adbutils.AdbError):
        dev.sync.read_bytes("/data/local/tmp/model.tflite")


def test_track_devices_sees_plug_and_unplug(double: AdbDouble, client: adbutils.AdbClient) -> None:
    events: queue.Queue[adbutils.DeviceEvent] = queue.Queue()

    def follow() -> None:
        try:
            for event in client.track_devices():
                events.put(event)
        except (adbutils.AdbError, OSError, EOFError):
            pass

    threading.Thread(target=follow, daemon=True).start()
    initial = {events.get(timeout=5).serial for _ in range(2)}
    assert initial == {"PIXEL7A", "GALAXY"}
    double.plug(Phone("NEWONE"))
    event = events.get(timeout=5)
    assert (event.present, event.serial, event.status) == (True, "NEWONE", "device")
    double.unplug("PIXEL7A")
    event = events.get(timeout=5)
    assert (event.present, event.serial, event.status) == (False, "PIXEL7A", "absent")


def test_commands_on_gone_offline_or_unauthorized_phones_raise(double: AdbDouble, client: adbutils.AdbClient) -> None:
    dev = client.device("PIXEL7A")
    double.unplug("PIXEL7A")
    with pytest.raises(adbutils.AdbError, match="not found"):
        dev.shell("echo hi")
    galaxy = double.phones()[0]
    galaxy.state = OFFLINE
    assert {i.serial: i.state for i in client.list()} == {"GALAXY": "offline"}
    with pytest.raises(adbutils.AdbError, match="offline"):
        client.device("GALAXY").shell("echo hi")
    galaxy.state = UNAUTHORIZED
    with pytest.raises(adbutils.AdbError, match="unauthorized"):
        client.device("GALAXY").sync.stat("/proc/meminfo")
