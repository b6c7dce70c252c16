"""The backend interface: capabilities as plain data and their check, typed backends from the
registry, and a clear error for a backend module that does not implement the interface."""

from __future__ import annotations

import sys
import types

import pytest

from devicelab.backends import registry
from devicelab.backends.base import (
    Backend,
    Capabilities,
    DeviceInfo,
    ProfileSettings,
    UnsupportedSetting,
)

CPU = Capabilities(precisions=("fp32",), max_threads=4, pins_cores=True, cores=(0, 1, 2, 3), formats=("onnx",))


def test_capabilities_and_device_info_round_trip_through_plain_data() -> None:
    info = DeviceInfo("cpu", "cpu:x", "X", {"arch": "x86_64"}, CPU)
    back = DeviceInfo.from_dict(info.as_dict())
    assert back == info
    assert DeviceInfo.from_dict(DeviceInfo("cpu", "cpu:y", "Y").as_dict()).capabilities is None
    # A newer worker may declare more than this version knows: ignored, not an error.
    assert Capabilities.from_dict({**CPU.as_dict(), "delegates_v2": ["npu"]}) == CPU


@pytest.mark.parametrize(
    ("settings", "setting", "words"),
    [
        (ProfileSettings(precision="fp16"), "precision", "runs fp32"),
        (ProfileSettings(threads=5), "threads", "4"),
        (ProfileSettings(cores=(7,)), "cores", "[7]"),
    ],
)
def test_check_names_the_setting_and_what_the_device_offers(
    settings: ProfileSettings, setting: str, words: str
) -> None:
    with pytest.raises(UnsupportedSetting) as caught:
        CPU.check(settings)
    assert caught.value.setting == setting and words in str(caught.value)


def test_check_accepts_what_the_device_offers() -> None:
    CPU.check(ProfileSettings(threads=4, cores=(0, 3), runs=100))
    with pytest.raises(UnsupportedSetting, match="cannot pin cores"):
        Capabilities(max_threads=8).check(ProfileSettings(cores=(0,)))
    with pytest.raises(UnsupportedSetting, match="settings.runs"):
        Capabilities(max_runs=10).check(ProfileSettings(runs=11))


@pytest.mark.parametrize("bad", [{"runs": 10**30}, {"warmup_runs": 10**12}, {"threads": 10**6}])
def test_settings_have_universal_bounds(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        ProfileSettings(**bad)  # type: ignore[arg-type]


def test_the_registry_hands_out_typed_backends() -> None:
    cpu = registry.backend_for("cpu")
    assert isinstance(cpu, Backend) and cpu.kind == "cpu"


def test_a_backend_module_without_a_backend_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("fake_backend_without_interface")
    fake.discover = lambda: []  # type: ignore[attr-defined]  # a bare module, as backends used to be
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setitem(registry.BACKEND_MODULES, "fake", fake.__name__)
    with pytest.raises(TypeError, match="BACKEND must be a devicelab.backends.base.Backend"):
        registry.backend_for("fake")


def test_a_backend_missing_a_method_cannot_be_made() -> None:
    class Half(Backend):
        kind = "half"

        def discover(self) -> list[DeviceInfo]:
            return []

    with pytest.raises(TypeError, match="profile"):
        Half()  # type: ignore[abstract]
