"""Throttling is caught however the phone shows it (issue 34 item 3): the used cores' current
frequency sampled during the run (a phone that lowers ``scaling_cur_freq`` under load, its cap
untouched), cpufreq cooling devices at a non-zero state, and Android's thermal status from
``dumpsys thermalservice``; a result measured so is flagged ``throttled``."""

from __future__ import annotations

import pytest

from devicelab.backends.android import phone_state
from tests.adb_double.server import AdbDouble
from tests.devicelab.backends.android.test_backend_on_double import farm, net, pixel, run

__all__ = ["farm"]  # the fixture, shared with the backend's other tests

# ThermalManagerService's dump on a Samsung phone (Android 14), as printed.
DUMPSYS_THERMALSERVICE = """IsStatusOverride: false
ThermalEventListeners:
\tcallbacks: 2
\tkilled: false
\tbroadcasts count: -1
ThermalStatusListeners:
\tcallbacks: 5
\tkilled: false
\tbroadcasts count: -1
Thermal Status: 1
Cached temperatures:
\tTemperature{mValue=38.1, mType=0, mName=AP, mStatus=0}
\tTemperature{mValue=38.0, mType=3, mName=SKIN, mStatus=1}
HAL Ready: true
HAL connection:
\tThermalHAL AIDL 1  connected: yes
"""


def test_the_thermal_status_is_read_from_dumpsys_thermalservice() -> None:
    assert phone_state.parse_thermal_status(DUMPSYS_THERMALSERVICE) == 1
    assert phone_state.thermal_status_name(1) == "LIGHT"
    assert phone_state.parse_thermal_status("Can't find service: thermalservice\n") is None


def _frequency_samples(khz: list[int], core: str = "6") -> list[phone_state.FrequencySample]:
    return [phone_state.FrequencySample({core: k}, {core: 2850000}) for k in khz]


def test_samples_held_below_the_maximum_are_throttling_and_an_idle_core_alone_is_not() -> None:
    top = {"6": 2850000}
    assert phone_state.throttled_during(_frequency_samples([997000, 997000, 2850000]), top, all_busy=True)
    assert not phone_state.throttled_during(_frequency_samples([2850000, 2850000, 997000]), top, all_busy=True)
    # not every core is busy: one core at its maximum in a sample is enough
    mixed = [phone_state.FrequencySample({"0": 300000, "6": 2850000}, {}) for _ in range(3)]
    assert not phone_state.throttled_during(mixed, {"0": 1803000, **top}, all_busy=False)
    assert phone_state.throttled_during(mixed, {"0": 1803000, **top}, all_busy=True)


@pytest.mark.slow
def test_a_phone_that_lowers_only_its_current_frequency_under_load_is_flagged(farm: AdbDouble) -> None:
    info, phone = pixel(farm)
    phone.throttle_via = "frequency"  # the cap and the cooling devices stay as they are
    phone.thermal_status_override = 0  # and its thermal HAL says nothing
    phone.cooling_time_scale = 0.0
    phone.time_scale = 600.0
    phone.set_temperature("BIG", 95.0)  # 20 °C above its trip: the big cores run at 35 %
    r = run(info, net(), cores=[6, 7], threads=2, runs=40, cooldown_c=119.0, cooldown_max_s=0.0)
    during = r.environment["frequencies_khz_during"]
    assert during["6"]["samples"] >= 2 and during["6"]["max_khz"] < 0.5 * 2850000, during
    assert r.environment["frequency_caps_khz_after"]["6"] == 2850000  # the cap never showed it
    (flag,) = [f for f in r.flags if f.startswith("throttled:")]
    assert "cpu6 ran at" in flag and "during the run" in flag and "capped" not in flag


def test_cooling_devices_and_androids_thermal_status_flag_a_hot_phone(farm: AdbDouble) -> None:
    info, phone = pixel(farm)
    phone.cooling_time_scale = 0.0
    phone.set_temperature("BIG", 88.0)  # 13 °C above its trip: SEVERE
    r = run(info, net(), cores=[6, 7], threads=2, cooldown_c=119.0, cooldown_max_s=0.0)
    env = r.environment
    assert env["thermal_status_before"] == 3 and env["thermal_status_after"] == 3
    assert env["cooling_devices_before"]["thermal-cpufreq-6"][0] > 0
    assert env["cooling_devices_before"]["thermal-cpufreq-0"] == [0, 20]
    (flag,) = [f for f in r.flags if f.startswith("throttled:")]
    assert "cooling devices active: thermal-cpufreq-6" in flag and "Android thermal status SEVERE (3)" in flag


def test_a_cool_phone_is_not_flagged(farm: AdbDouble) -> None:
    info, _ = pixel(farm)
    r = run(info, net(), cores=[6, 7], threads=2)
    assert r.environment["thermal_status_before"] == 0
    assert all(state == 0 for state, _ in r.environment["cooling_devices_after"].values())
    assert not [f for f in r.flags if f.startswith("throttled:")]


def test_under_the_gpu_delegate_low_cpu_frequencies_are_recorded_not_judged(farm: AdbDouble) -> None:
    info, phone = pixel(farm)
    phone.throttle_via = "frequency"
    phone.thermal_status_override = 0
    phone.cooling_time_scale = 0.0
    phone.time_scale = 20.0
    phone.set_temperature("BIG", 95.0)
    r = run(info, net(), cores=[6, 7], threads=2, runs=3, delegate="gpu", cooldown_c=119.0, cooldown_max_s=0.0)
    assert r.environment["frequencies_khz_during"]["6"]["samples"] >= 1
    assert not [f for f in r.flags if f.startswith("throttled:")]
