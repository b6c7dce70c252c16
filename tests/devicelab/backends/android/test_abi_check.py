"""A phone the configured benchmark_model cannot run on takes no jobs (issue 34 item 5): the
binary's ELF header is read once, compared with each phone's ``ro.product.cpu.abilist``, and a
phone that lacks the binary's ABI declares it in its capabilities (the server refuses its jobs at
submission) and its hardware (the device page says why)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devicelab.backends.android import backend, tool_run
from devicelab.backends.base import Capabilities, ProfileSettings, UnsupportedSetting
from tests.adb_double import elf
from tests.adb_double.benchmark_tool import benchmark_model_binary
from tests.adb_double.phones import Phone
from tests.adb_double.server import AdbDouble, running_adb_double

X86_PROPS = {
    "ro.product.cpu.abi": "x86_64",
    "ro.product.cpu.abilist": "x86_64,x86",
    "ro.product.model": "sdk_gphone64_x86_64",
}


@pytest.fixture
def farm(monkeypatch: pytest.MonkeyPatch) -> Iterator[AdbDouble]:
    pixel = Phone("PIXEL7-ABI")
    pixel.time_scale = 0.05
    emulator = Phone("EMULATOR-5554", props=X86_PROPS)
    emulator.time_scale = 0.05
    with running_adb_double(pixel, emulator) as double:
        monkeypatch.setenv("LATENCYLAB_ADB_SERVER", double.address)
        yield double


def configure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data: bytes, name: str = "benchmark_model") -> None:
    tool = tmp_path / name
    tool.write_bytes(data)
    monkeypatch.setenv(backend.TOOL_ENV, str(tool))


@pytest.mark.parametrize("abi", sorted(elf.ABIS))
def test_the_abi_is_read_from_the_elf_header(abi: str) -> None:
    assert tool_run.binary_abi(elf.header(abi)) == abi
    assert tool_run.binary_abi(b"#!/bin/sh\necho hi\n") is None
    assert tool_run.binary_abi(benchmark_model_binary()) is None  # the double's headerless binary: unknown


def test_an_arm64_binary_leaves_an_x86_64_phone_without_jobs_and_says_why(
    farm: AdbDouble, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    configure(monkeypatch, tmp_path, elf.built_for("arm64-v8a", benchmark_model_binary()))
    found = {d.identity: d for d in backend.discover()}
    pixel, emulator = found["android:PIXEL7-ABI"], found["android:EMULATOR-5554"]

    assert pixel.capabilities is not None and pixel.capabilities.refuses == ""
    assert pixel.hardware["abilist"] == ["arm64-v8a", "armeabi-v7a", "armeabi"]
    assert pixel.hardware["tool_abi"] == "arm64-v8a"
    caps = emulator.capabilities
    assert caps is not None and "arm64-v8a binary" in caps.refuses and "x86_64, x86" in caps.refuses
    assert "takes no jobs" in emulator.hardware["runtime"]
    # what the server checks at submission, through the capabilities the device registered
    declared = Capabilities.from_dict(emulator.as_dict()["capabilities"])
    with pytest.raises(UnsupportedSetting, match="takes no jobs: the configured benchmark_model is an arm64-v8a"):
        declared.check(ProfileSettings(backend="android"))

    # the arm64 phone runs it; the x86_64 one would not have (Android's shell refuses the binary)
    from tests.devicelab.backends.android.test_backend_on_double import net

    result = backend.profile(pixel, net(), ProfileSettings.from_dict({"backend": "android", "runs": 3}))
    assert result.e2e.n == 3
    with pytest.raises(ValueError, match="takes no jobs"):
        backend.profile(emulator, net(), ProfileSettings.from_dict({"backend": "android", "runs": 3}))
    from devicelab.backends.android import adb

    link = adb.PhoneLink(adb.client(), "EMULATOR-5554")
    link.run(f"mkdir -p {tool_run.REMOTE_DIR}")
    link.push(elf.built_for("arm64-v8a", benchmark_model_binary()), tool_run.REMOTE_TOOL, 0o755)
    out = link.run(f"{tool_run.REMOTE_TOOL} --help")
    assert out.exit_code == 126 and "not executable: 64-bit ELF file" in out.stderr


def test_an_x86_64_binary_serves_the_emulator_and_not_the_arm_phone(
    farm: AdbDouble, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    configure(monkeypatch, tmp_path, elf.built_for("x86_64", benchmark_model_binary()), "benchmark_model_x86_64")
    found = {d.identity: d for d in backend.discover()}
    assert found["android:EMULATOR-5554"].capabilities.refuses == ""  # type: ignore[union-attr]
    assert "x86_64 binary" in found["android:PIXEL7-ABI"].capabilities.refuses  # type: ignore[union-attr]
