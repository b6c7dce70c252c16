"""Android system services of the double's phones: battery, power (screen), GPU, and ``dumpsys``.

``dumpsys battery`` / ``power`` / ``SurfaceFlinger`` print the lines a real Android 13-15 phone
prints (a representative subset of the long ones, in their order and wording): ``temperature:``
in tenths of °C, ``AC powered:``/``USB powered:``, ``status:`` as BatteryManager's numbers,
``mWakefulness=Awake|Asleep``, and SurfaceFlinger's ``GLES: <vendor>, <renderer>, <version>``.
``dumpsys battery unplug|reset|set level N`` work as on a phone, and so do ``svc power stayon``
and ``input keyevent`` (wake up / sleep / power).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.adb_double.shell import Proc

if TYPE_CHECKING:
    from tests.adb_double.phones import Phone

# BatteryManager constants.
STATUS_CHARGING, STATUS_DISCHARGING, STATUS_NOT_CHARGING, STATUS_FULL = 2, 3, 4, 5
HEALTH_GOOD = 2
PLUG_TYPES = {None: 0, "ac": 1, "usb": 2, "wireless": 4}


@dataclass
class Battery:
    """The battery and what powers the phone (``plugged``: None, "ac", "usb" or "wireless")."""

    level: int = 85
    plugged: str | None = "usb"
    voltage_mv: int = 4213
    technology: str = "Li-ion"
    updates_stopped: bool = False  # after ``dumpsys battery unplug`` / ``set``
    forced_unplugged: bool = False

    @property
    def powered_by(self) -> str | None:
        """The power source as the battery service reports it (None after ``unplug``)."""
        return None if self.forced_unplugged else self.plugged

    @property
    def status(self) -> int:
        """BatteryManager status: charging, full, or discharging."""
        if self.powered_by is None:
            return STATUS_DISCHARGING
        return STATUS_FULL if self.level >= 100 else STATUS_CHARGING

    @property
    def status_text(self) -> str:
        """The ``/sys/class/power_supply/battery/status`` word."""
        return {STATUS_CHARGING: "Charging", STATUS_DISCHARGING: "Discharging", STATUS_FULL: "Full"}.get(
            self.status, "Not charging"
        )


@dataclass
class GpuInfo:
    """What SurfaceFlinger's RenderEngine reports for the GPU (GL_VENDOR, GL_RENDERER, GL_VERSION)."""

    vendor: str = "ARM"
    renderer: str = "Mali-G710"
    version: str = "OpenGL ES 3.2 v1.r38p1-01eac0.c1a71ccca2acf211eb87c5db5322f569"


def dumpsys(proc: Proc) -> int:
    """``dumpsys SERVICE [ARGS]`` for battery, power and SurfaceFlinger."""
    args = proc.argv[1:]
    phone = proc.phone
    if not args:
        proc.out("Currently running services:\n  SurfaceFlinger\n  battery\n  power\n  thermalservice\n")
        return 0
    service, rest = args[0], args[1:]
    if service == "battery":
        return _battery(proc, phone, rest)
    if service == "power":
        proc.out(_power(phone))
        return 0
    if service == "SurfaceFlinger":
        proc.out(_surface_flinger(phone))
        return 0
    if service == "thermalservice":
        proc.out(_thermal_service(phone))
        return 0
    proc.err(f"Can't find service: {service}\n")
    return 0


# android.os.Temperature's TYPE_* of the double's zone names (TYPE_CPU 0, GPU 1, BATTERY 2, SKIN 3, NPU 9).
_TEMPERATURE_TYPES = {"battery": 2, "g3d": 1, "gpu": 1, "tpu": 9, "npu": 9, "quiet_therm": 3}


def _thermal_service(phone: Phone) -> str:
    """``dumpsys thermalservice`` as ThermalManagerService.dumpInternal prints it (Android 11-15):
    the listeners, ``Thermal Status: N``, the cached and the HAL's temperatures and cooling devices
    (``Temperature{mValue=.., mType=.., mName=.., mStatus=..}``, ``CoolingDevice{...}``)."""
    status = phone.thermal_status()
    temps = []
    for name, zone in phone.thermal.zones.items():
        celsius = phone.temperature(name)
        kind = _TEMPERATURE_TYPES.get(name.lower(), 0)
        zone_status = 0
        if zone.trip_c is not None and celsius > zone.trip_c:
            zone_status = min(3, 1 + int((celsius - zone.trip_c) // 5))
        temps.append(f"\tTemperature{{mValue={celsius:.1f}, mType={kind}, mName={name}, mStatus={zone_status}}}")
    coolers = []
    for i, cluster in enumerate(dict.fromkeys(phone.core_kinds)):
        state = phone.fs.get(f"/sys/class/thermal/cooling_device{i}/cur_state")
        value = int(state.read().decode().strip()) if state is not None else 0
        coolers.append(
            f"\tCoolingDevice{{mValue={value}, mType=2, mName=thermal-cpufreq-{phone.core_kinds.index(cluster)}}}"
        )
    lines = [
        f"IsStatusOverride: {str(phone.thermal_status_override is not None).lower()}",
        "ThermalEventListeners:",
        "\tcallbacks: 2",
        "\tkilled: false",
        "\tbroadcasts count: -1",
        "ThermalStatusListeners:",
        "\tcallbacks: 3",
        "\tkilled: false",
        "\tbroadcasts count: -1",
        f"Thermal Status: {status}",
        "Cached temperatures:",
        *temps,
        "HAL Ready: true",
        "HAL connection:",
        "\tThermalHAL AIDL 1  connected: yes",
        "Current temperatures from HAL:",
        *temps,
        "Current cooling devices from HAL:",
        *coolers,
    ]
    return "\n".join(lines) + "\n"


def _battery(proc: Proc, phone: Phone, args: list[str]) -> int:
    battery = phone.battery
    if args[:1] == ["unplug"]:
        battery.forced_unplugged = battery.updates_stopped = True
        return 0
    if args[:1] == ["reset"]:
        battery.forced_unplugged = battery.updates_stopped = False
        return 0
    if args[:2] == ["set", "level"] and len(args) > 2 and args[2].isdigit():
        battery.level, battery.updates_stopped = int(args[2]), True
        return 0
    if args:
        proc.err(f"Unknown option: {args[0]}\n")
        return 0
    source = battery.powered_by
    sdk = int(phone.props.get("ro.build.version.sdk", "34"))
    lines = ["Current Battery Service state:"]
    if battery.updates_stopped:
        lines.append("  (UPDATES STOPPED -- use 'reset' to restart)")
    lines += [
        f"  AC powered: {str(source == 'ac').lower()}",
        f"  USB powered: {str(source == 'usb').lower()}",
        f"  Wireless powered: {str(source == 'wireless').lower()}",
        "  Dock powered: false",
        f"  Max charging current: {500000 if source else 0}",
        f"  Max charging voltage: {5000000 if source else 0}",
        f"  Charging counter: {battery.level * 45000}",
        f"  status: {battery.status}",
        f"  health: {HEALTH_GOOD}",
        "  present: true",
        f"  level: {battery.level}",
        "  scale: 100",
        f"  voltage: {battery.voltage_mv}",
        f"  temperature: {phone.battery_temp_tenths()}",
        f"  technology: {battery.technology}",
    ]
    if sdk >= 35:
        lines += ["  Charging state: 1", "  Charging policy: 1", "  Capacity level: -1"]
    proc.out("\n".join(lines) + "\n")
    return 0


def _power(phone: Phone) -> str:
    battery = phone.battery
    source = battery.powered_by
    awake = phone.awake
    return "\n".join(
        [
            "POWER MANAGER (dumpsys power)",
            "",
            "Power Manager State:",
            "  Settings power_manager_constants:",
            "    no_cached_wake_locks=true",
            "  mDirty=0x0",
            f"  mWakefulness={'Awake' if awake else 'Asleep'}",
            "  mWakefulnessChanging=false",
            f"  mIsPowered={str(source is not None).lower()}",
            f"  mPlugType={PLUG_TYPES[source]}",
            f"  mBatteryLevel={battery.level}",
            "  mBatteryLevelWhenDreamStarted=0",
            "  mDockState=0",
            f"  mStayOn={str(phone.stay_on and source is not None).lower()}",
            "  mProximityPositive=false",
            "  mBootCompleted=true",
            "  mSystemReady=true",
            "  mHalAutoSuspendModeEnabled=false",
            f"  mHalInteractiveModeEnabled={str(awake).lower()}",
            f"  mWakeLockSummary=0x{0x20 if awake else 0:x}",
            "  mNotifyLongScheduled=(none)",
            "  mNotifyLongDispatched=(none)",
            "  mNotifyLongNextCheck=(none)",
            "  mRequestWaitForNegativeProximity=false",
            "  mInterceptedPowerKeyForProximity=false",
            "  mSandmanScheduled=false",
            "  mBatteryLevelLow=false",
            "  mLightDeviceIdleMode=false",
            "  mDeviceIdleMode=false",
            "  mScreenBrightnessBoostInProgress=false",
            "  mHoldingWakeLockSuspendBlocker=false",
            f"  mHoldingDisplaySuspendBlocker={str(awake).lower()}",
            "",
            "Settings and Configuration:",
            "  mDecoupleHalAutoSuspendModeFromDisplayConfig=false",
            "  mDecoupleHalInteractiveModeFromDisplayConfig=true",
            "  mWakeUpWhenPluggedOrUnpluggedConfig=false",
            "  mTheaterModeEnabled=false",
            "  mDreamsSupportedConfig=true",
            "  mDreamsEnabledByDefaultConfig=true",
            f"  mStayOnWhilePluggedInSetting={7 if phone.stay_on else 0}",
            "  mScreenOffTimeoutSetting=30000",
            "  mSleepTimeoutSetting=-1",
            "  mMaximumScreenOffTimeoutFromDeviceAdmin=9223372036854775807 (enforced=false)",
            "",
            "Wake Locks: size=0",
            "",
            "Suspend Blockers: size=4",
            "  PowerManagerService.WakeLocks: ref count=0",
            f"  PowerManagerService.Display: ref count={1 if awake else 0}",
            "  PowerManagerService.Broadcasts: ref count=0",
            "  PowerManagerService.WirelessChargerDetector: ref count=0",
            "",
            f"Display Power: state={'ON' if awake else 'OFF'}",
            "",
        ]
    )


def _surface_flinger(phone: Phone) -> str:
    gpu = phone.gpu
    model = phone.props.get("ro.product.model", "")
    return "\n".join(
        [
            "SurfaceFlinger New Frontend Enabled:false",
            "Active Layers:",
            "Build configuration: [sf PRESENT_TIME_OFFSET=0 FORCE_HWC_FOR_RBG_TO_YUV=1 MAX_VIRT_DISPLAY_DIM=0 "
            "RUNNING_WITHOUT_SYNC_FRAMEWORK=0 NUM_FRAMEBUFFER_SURFACE_BUFFERS=3]",
            "",
            "Display identification data:",
            f'Display 4619827259835644672 (HWC display 0): port=0 pnpId=GGL displayName="{model} Panel"',
            "",
            "Wide-Color information:",
            "Device supports wide color: 1",
            "DisplayColorSetting: Managed",
            "",
            "Sync configuration: [using: EGL_ANDROID_native_fence_sync EGL_KHR_wait_sync]",
            "",
            "Scheduler:",
            "  refresh rate: 120 Hz",
            "",
            "RenderEngine supports protected context",
            "RenderEngine is in protected context",
            "------------RE GLES------------",
            "EGL implementation : 1.5 Android META-EGL",
            "EGL_ANDROID_front_buffer_auto_refresh EGL_ANDROID_get_native_client_buffer "
            "EGL_ANDROID_presentation_time EGL_EXT_surface_CTA861_3_metadata EGL_KHR_image_base",
            f"GLES: {gpu.vendor}, {gpu.renderer}, {gpu.version}",
            "GL_EXT_debug_marker GL_ARM_rgba8 GL_ARM_mali_shader_binary GL_OES_depth24 GL_OES_depth_texture",
            "RenderEngine program cache size for protected context: 0",
            "RenderEngine last dataspace conversion: (Unknown) to (Unknown)",
            "",
            "Display 4619827259835644672 (active) HWC layers:",
            "",
        ]
    )


def svc(proc: Proc) -> int:
    """``svc power stayon true|false|usb|ac|wireless``."""
    args = proc.argv[1:]
    if args[:2] == ["power", "stayon"] and len(args) > 2:
        proc.phone.stay_on = args[2] != "false"
        return 0
    proc.err("Available commands:\n    power\n")
    return 0


def input_(proc: Proc) -> int:
    """``input keyevent KEY``: WAKEUP (224), SLEEP (223) and POWER (26) change the screen state."""
    args = proc.argv[1:]
    if args[:1] == ["keyevent"] and len(args) > 1:
        key = args[1].removeprefix("KEYCODE_")
        if key in ("WAKEUP", "224"):
            proc.phone.awake = True
        elif key in ("SLEEP", "223"):
            proc.phone.awake = False
        elif key in ("POWER", "26"):
            proc.phone.awake = not proc.phone.awake
        return 0
    proc.err("Usage: input [<source>] <command> [<arg>...]\n")
    return 1
