"""Emulated Android phones for the adb double: properties, an in-memory filesystem, a shell, heat.

The shell (``tests.adb_double.shell``) answers with the exit codes and stderr lines a real phone's
``/system/bin/sh`` (mksh) and toybox give, streams what long commands print, and runs pushed
files: an executable whose bytes start with ``benchmark_tool.FAKE_BENCHMARK_MODEL_MARKER`` runs
the emulated TensorFlow Lite ``benchmark_model``. Live ``/sys`` files follow the phone's thermal
state: zones heat while a program runs, cool over wall time, and hot clusters throttle.
"""

from __future__ import annotations

import functools
import math
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.adb_double import benchmark_tool, elf, imagenet_eval, services, toybox
from tests.adb_double.services import Battery, GpuInfo
from tests.adb_double.shell import SH, Proc, Program, Session, Shell
from tests.adb_double.thermal import CORE_WATTS, IPC, Thermal, cluster_kinds, zone_for

DEVICE = "device"
OFFLINE = "offline"
UNAUTHORIZED = "unauthorized"
STATES = (DEVICE, OFFLINE, UNAUTHORIZED)

Content = bytes | Callable[[], bytes]


@dataclass
class File:
    """A regular file: its content (bytes, or a callable for live files such as thermal zones)."""

    content: Content
    mode: int = 0o644
    mtime: int = field(default_factory=lambda: int(time.time()))

    def read(self) -> bytes:
        """Return the content now (live files are evaluated on each read)."""
        return self.content() if callable(self.content) else self.content


@dataclass
class ShellResult:
    """What one shell command line printed and returned."""

    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int = 0
    output: bytes = b""  # stdout and stderr interleaved as printed, as shell v1 shows them


class FileSystem:
    """A flat path -> File map plus a set of directories; enough for push, pull, stat, ls, cat."""

    def __init__(self) -> None:
        self.files: dict[str, File] = {}
        self.dirs: set[str] = {"/"}
        self.lock = threading.RLock()
        for d in ("/data/local/tmp", "/sdcard", "/proc", "/system/bin", "/dev"):
            self.mkdir(d)

    @staticmethod
    def norm(path: str) -> str:
        """Normalise a path: absolute, no trailing slash, no duplicate slashes, ``..`` resolved."""
        parts: list[str] = []
        for p in path.split("/"):
            if p == "..":
                if parts:
                    parts.pop()
            elif p and p != ".":
                parts.append(p)
        return "/" + "/".join(parts)

    def mkdir(self, path: str) -> None:
        """Create a directory and its parents (``mkdir -p``)."""
        path = self.norm(path)
        with self.lock:
            while path not in self.dirs:
                self.dirs.add(path)
                path = path.rsplit("/", 1)[0] or "/"

    def write(self, path: str, content: Content, mode: int = 0o644, mtime: int | None = None) -> None:
        """Create or replace a file, creating its parent directories."""
        path = self.norm(path)
        with self.lock:
            self.mkdir(path.rsplit("/", 1)[0] or "/")
            self.files[path] = File(content, mode & 0o7777, int(time.time()) if mtime is None else mtime)

    def append(self, path: str, data: bytes) -> None:
        """Append to a file (created empty if missing), as a redirected process writes it."""
        path = self.norm(path)
        with self.lock:
            f = self.files.get(path)
            if f is None:
                self.write(path, data)
            else:
                f.content = f.read() + data
                f.mtime = int(time.time())

    def get(self, path: str) -> File | None:
        """Return the file at ``path`` or None."""
        return self.files.get(self.norm(path))

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory."""
        return self.norm(path) in self.dirs

    def remove(self, path: str) -> bool:
        """Remove a file; False when there is none."""
        with self.lock:
            return self.files.pop(self.norm(path), None) is not None

    def rmtree(self, path: str) -> None:
        """Remove a directory and everything under it (``rm -r``)."""
        path = self.norm(path)
        prefix = path.rstrip("/") + "/"
        with self.lock:
            for name in [p for p in self.files if p.startswith(prefix)]:
                del self.files[name]
            self.dirs = {d for d in self.dirs if not d.startswith(prefix) and (d != path or d == "/")}

    def listdir(self, path: str) -> list[str]:
        """Names directly under a directory, sorted."""
        path = self.norm(path)
        prefix = path.rstrip("/") + "/"
        with self.lock:
            names = {p[len(prefix) :].split("/", 1)[0] for p in [*self.files, *self.dirs] if p.startswith(prefix)}
        names.discard("")
        return sorted(names)

    def stat(self, path: str) -> tuple[int, int, int]:
        """(mode, size, mtime) like sync STAT; (0, 0, 0) when the path does not exist."""
        f = self.get(path)
        if f is not None:
            return stat.S_IFREG | f.mode, len(f.read()), f.mtime
        if self.is_dir(path):
            return stat.S_IFDIR | 0o771, 4096, int(time.time())
        return 0, 0, 0


DEFAULT_PROPS = {
    "ro.product.manufacturer": "Google",
    "ro.product.model": "Pixel 7",
    "ro.product.name": "panther",
    "ro.product.device": "panther",
    "ro.board.platform": "gs201",
    "ro.soc.manufacturer": "Google",
    "ro.soc.model": "GS201",
    "ro.product.cpu.abi": "arm64-v8a",
    "ro.product.cpu.abilist": "arm64-v8a,armeabi-v7a,armeabi",
    "ro.build.version.release": "14",
    "ro.build.version.sdk": "34",
    "ro.hardware.egl": "mali",
}

COOLING_STEPS = 20  # a cluster cooling device's max_state (its frequency table's steps)

# Pixel 7 (Tensor G2): 4 little, 2 mid, 2 big cores.
DEFAULT_CPU_MAX_KHZ = (1803000,) * 4 + (2348000,) * 2 + (2850000,) * 2
# Thermal zones in sysfs order with their idle temperatures (°C): the battery first, then the
# Tensor SoC's cluster, GPU and TPU sensors and a skin thermistor, as on Pixel 6/7 kernels.
DEFAULT_TEMPS_C = {
    "battery": 30.0,
    "BIG": 35.0,
    "MID": 34.0,
    "LITTLE": 33.0,
    "G3D": 33.0,
    "TPU": 32.0,
    "quiet_therm": 31.0,
}


class Phone:
    """One emulated phone: serial, adb state, properties, files, a shell, thermal state."""

    def __init__(
        self,
        serial: str,
        *,
        props: dict[str, str] | None = None,
        state: str = DEVICE,
        cpu_max_khz: tuple[int, ...] = DEFAULT_CPU_MAX_KHZ,
        mem_total_kb: int = 7_800_000,
        temps_c: dict[str, float] | None = None,
        battery: Battery | None = None,
        gpu: GpuInfo | None = None,
    ) -> None:
        self.serial = serial
        self.props = {**DEFAULT_PROPS, **(props or {})}
        self._state = state
        self.fs = FileSystem()
        self.commands: dict[str, Program] = {
            **toybox.PROGRAMS,
            "dumpsys": services.dumpsys,
            "svc": services.svc,
            "input": services.input_,
        }
        self.history: list[str] = []
        self.processes: dict[int, Proc] = {}
        self.shell = Shell(self)
        self._on_change: Callable[[], None] | None = None
        # Wall-clock factor of what the emulated programs take (0.01: a 1 s benchmark sleeps 10 ms).
        self.time_scale = 1.0
        # Phone seconds of idle cooling per wall-clock second (100: cools 100 times faster).
        self.cooling_time_scale = 1.0
        # Makes the next benchmark_model runs fail like a real one (see benchmark_tool.FAULTS).
        self.tool_fault: str | None = None
        self.battery = battery or Battery()
        self.gpu = gpu or GpuInfo()
        self.awake = True
        self.stay_on = False
        self.cpu_max_khz = tuple(cpu_max_khz)
        self.core_kinds = cluster_kinds(self.cpu_max_khz)
        self.all_cores = frozenset(range(len(cpu_max_khz)))
        zones = [zone_for(name, c) for name, c in (temps_c or DEFAULT_TEMPS_C).items()]
        self.thermal = Thermal(zones, lambda: self.cooling_time_scale)
        # How thermal throttling shows: "cap" lowers scaling_max_freq (cpufreq cooling devices take
        # steps) and the current frequency with it; "frequency" lowers only scaling_cur_freq (a
        # vendor's firmware limit the kernel's cap and cooling devices do not show).
        self.throttle_via = "cap"
        self.thermal_status_override: int | None = None
        self._write_sysfs(mem_total_kb)

    # -- sysfs and procfs ------------------------------------------------------------------------

    def _write_sysfs(self, mem_total_kb: int) -> None:
        fs, n = self.fs, len(self.cpu_max_khz)
        for cpu, khz in enumerate(self.cpu_max_khz):
            base = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
            siblings = [i for i, k in enumerate(self.cpu_max_khz) if k == khz]
            fs.write(f"{base}/cpuinfo_max_freq", f"{khz}\n".encode())
            fs.write(f"{base}/cpuinfo_min_freq", f"{min(300000, khz)}\n".encode())
            fs.write(f"{base}/scaling_cur_freq", self._live(functools.partial(self._khz_text, cpu)))
            fs.write(f"{base}/scaling_max_freq", self._live(functools.partial(self._cap_text, cpu)))
            fs.write(f"{base}/scaling_min_freq", f"{min(300000, khz)}\n".encode())
            fs.write(f"{base}/scaling_governor", b"schedutil\n")
            fs.write(f"{base}/related_cpus", (" ".join(map(str, siblings)) + "\n").encode())
        for name in ("possible", "present", "online"):
            fs.write(f"/sys/devices/system/cpu/{name}", f"0-{n - 1}\n".encode())
        fs.write(
            "/proc/cpuinfo",
            "".join(f"processor\t: {i}\nBogoMIPS\t: 49.15\nCPU architecture: 8\n\n" for i in range(n)).encode(),
        )
        fs.write("/proc/loadavg", self._live(self._loadavg_text))
        fs.write(
            "/proc/meminfo",
            f"MemTotal:       {mem_total_kb} kB\nMemFree:        {mem_total_kb // 4} kB\n"
            f"MemAvailable:   {mem_total_kb // 2} kB\n".encode(),
        )
        for i, zone in enumerate(self.thermal.zones.values()):
            base = f"/sys/class/thermal/thermal_zone{i}"
            fs.write(f"{base}/type", f"{zone.name}\n".encode())
            fs.write(f"{base}/temp", self._live(functools.partial(self._millicelsius_text, zone.name)))
            fs.write(f"{base}/mode", b"enabled\n")
            if zone.trip_c is not None:
                fs.write(f"{base}/trip_point_0_temp", f"{round(zone.trip_c * 1000)}\n".encode())
                fs.write(f"{base}/trip_point_0_type", b"passive\n")
        # one cpufreq cooling device per cluster, as the kernel's cpufreq_cooling registers them
        # ("thermal-cpufreq-<first cpu>"): its state counts the frequency steps it took away
        for i, kind in enumerate(dict.fromkeys(self.core_kinds)):
            first = self.core_kinds.index(kind)
            base = f"/sys/class/thermal/cooling_device{i}"
            fs.write(f"{base}/type", f"thermal-cpufreq-{first}\n".encode())
            fs.write(f"{base}/max_state", f"{COOLING_STEPS}\n".encode())
            fs.write(f"{base}/cur_state", self._live(functools.partial(self._cooling_state_text, kind)))
        supply = "/sys/class/power_supply"
        battery = self.battery
        fs.write(f"{supply}/battery/temp", self._live(lambda: f"{self.battery_temp_tenths()}\n"))
        fs.write(f"{supply}/battery/capacity", self._live(lambda: f"{battery.level}\n"))
        fs.write(f"{supply}/battery/status", self._live(lambda: f"{battery.status_text}\n"))
        fs.write(f"{supply}/battery/health", b"Good\n")
        fs.write(f"{supply}/battery/present", b"1\n")
        fs.write(f"{supply}/battery/technology", f"{battery.technology}\n".encode())
        fs.write(f"{supply}/battery/voltage_now", self._live(lambda: f"{battery.voltage_mv * 1000}\n"))
        for source in ("usb", "ac", "wireless"):
            fs.write(f"{supply}/{source}/online", self._live(functools.partial(self._online_text, source)))

    def _loadavg_text(self) -> str:
        """``/proc/loadavg``: the tools running now count as the runnable load."""
        running = len(self.processes)
        return f"{running + 0.12:.2f} {running * 0.6 + 0.3:.2f} 0.41 {running + 1}/812 {4000 + running}\n"

    def _khz_text(self, cpu: int) -> str:
        return f"{self.cur_khz(cpu)}\n"

    def _cap_text(self, cpu: int) -> str:
        # a phone that throttles below the kernel's view keeps its cap at the maximum
        return f"{self.cpu_max_khz[cpu] if self.throttle_via == 'frequency' else self.cur_khz(cpu)}\n"

    def _cooling_state_text(self, kind: str) -> str:
        if self.throttle_via == "frequency":
            return "0\n"
        cap = self.thermal.cap(kind)
        return f"{min(COOLING_STEPS, math.ceil((1.0 - cap) * COOLING_STEPS - 1e-9))}\n"

    def thermal_status(self) -> int:
        """Android's thermal status (PowerManager.THERMAL_STATUS_*): the override when one is set
        (``cmd thermalservice override-status``), else from how far the hottest zone with a trip
        point is above it: LIGHT above it, MODERATE 5 °C above, SEVERE 10 °C above."""
        if self.thermal_status_override is not None:
            return self.thermal_status_override
        over = max(
            (self.temperature(z.name) - z.trip_c for z in self.thermal.zones.values() if z.trip_c is not None),
            default=-1.0,
        )
        return 0 if over <= 0 else 1 if over < 5 else 2 if over < 10 else 3

    def _millicelsius_text(self, zone: str) -> str:
        return f"{round(self.temperature(zone) * 1000)}\n"

    def _online_text(self, source: str) -> str:
        return f"{int(self.battery.plugged == source)}\n"

    @staticmethod
    def _live(text: Callable[[], str]) -> Callable[[], bytes]:
        return lambda: text().encode()

    # -- state -----------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """adb state: ``device``, ``offline`` or ``unauthorized``."""
        return self._state

    @state.setter
    def state(self, value: str) -> None:
        if value not in STATES:
            raise ValueError(f"unknown adb state {value!r}")
        self._state = value
        if self._on_change is not None:
            self._on_change()

    @property
    def temps_c(self) -> dict[str, float]:
        """Every thermal zone's temperature now (°C), by zone type."""
        return {name: self.temperature(name) for name in self.thermal.zones}

    def temperature(self, zone: str) -> float:
        """A thermal zone's temperature now (°C)."""
        return self.thermal.temperature(zone)

    def set_temperature(self, zone: str, celsius: float) -> None:
        """Set a thermal zone's temperature now (it then relaxes towards its idle temperature)."""
        self.thermal.set_temperature(zone, celsius)

    def battery_temp_tenths(self) -> int:
        """The battery temperature in tenths of °C (``dumpsys battery``'s ``temperature:``)."""
        zone = "battery" if "battery" in self.thermal.zones else next(iter(self.thermal.zones))
        return round(self.temperature(zone) * 10)

    def cur_khz(self, cpu: int) -> int:
        """A core's current frequency: its maximum, capped when its cluster is throttled."""
        cap = self.thermal.cap(self.core_kinds[cpu])
        return int(self.cpu_max_khz[cpu] * cap) // 1000 * 1000

    def core_speed(self, cpu: int) -> float:
        """A core's relative speed now: GHz × work per cycle of its kind."""
        return self.cur_khz(cpu) / 1e6 * IPC[self.core_kinds[cpu]]

    def core_watts(self, cpu: int) -> float:
        """What a busy core draws now (power falls faster than frequency when throttled)."""
        cap = self.cur_khz(cpu) / self.cpu_max_khz[cpu]
        return CORE_WATTS[self.core_kinds[cpu]] * cap**2

    def devices_l_tags(self) -> str:
        """The ``product: model: device:`` tags of ``adb devices -l``."""
        model = self.props["ro.product.model"].replace(" ", "_")
        return f"product:{self.props['ro.product.name']} model:{model} device:{self.props['ro.product.device']}"

    def features(self) -> str:
        """What ``host-serial:<serial>:features`` reports."""
        return "shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,fixed_push_symlink_timestamp,abb_exec"

    # -- the shell -------------------------------------------------------------------------------

    def execute(
        self,
        line: str,
        stdout: Callable[[bytes], None],
        stderr: Callable[[bytes], None],
        session: Session | None = None,
    ) -> int:
        """Run a command line, handing its output to ``stdout``/``stderr`` as it is printed."""
        self.history.append(line)
        return self.shell.run(line, stdout, stderr, session)

    def run(self, line: str) -> ShellResult:
        """Run a command line to its end and collect what it printed."""
        out = ShellResult()

        def to_stdout(data: bytes) -> None:
            out.stdout += data
            out.output += data

        def to_stderr(data: bytes) -> None:
            out.stderr += data
            out.output += data

        out.exit_code = self.execute(line, to_stdout, to_stderr)
        return out

    def find_program(self, proc: Proc, exec_from: str | None = None) -> Program | int:
        """What ``proc.argv[0]`` runs, or the exit status after printing why it cannot run.

        ``exec_from`` names a toybox tool exec()ing the command (``taskset``), which reports
        failures its own way instead of the shell's.
        """
        name = proc.argv[0]

        def fail(shell_message: str, errno_text: str, code: int) -> int:
            if exec_from:
                proc.err(f"{exec_from}: exec {name}: {errno_text}\n")
            else:
                proc.err(f"{SH}: {shell_message}\n")
            return code

        if "/" not in name:
            program = self.commands.get(name)
            if program is not None:
                return program
            return fail(f"{name}: not found", "No such file or directory", 127)
        path = proc.resolve(name)
        f = self.fs.get(path)
        if f is None:
            directory, _, base = path.rpartition("/")
            if directory in ("/system/bin", "/system/xbin", "/vendor/bin") and base in self.commands:
                return self.commands[base]
            if self.fs.is_dir(path):
                return fail(f"{name}: can't execute: Permission denied", "Permission denied", 126)
            return fail(f"{name}: inaccessible or not found", "No such file or directory", 127)
        if not f.mode & 0o111:
            return fail(f"{name}: can't execute: Permission denied", "Permission denied", 126)
        content = f.read()
        built = elf.read(content)
        if built is not None:
            abi, content = built
            if abi not in self.props.get("ro.product.cpu.abilist", "").split(","):
                bits = 64 if abi in ("arm64-v8a", "x86_64") else 32
                return fail(f"{name}: not executable: {bits}-bit ELF file", "Exec format error", 126)
        program = benchmark_tool.program_for(content) or imagenet_eval.program_for(content)
        if program is not None:
            return program
        if content[:4] == b"\x7fELF":
            bits = 32 * content[4] if len(content) > 4 else 0
            return fail(f"{name}: not executable: {bits}-bit ELF file", "Exec format error", 126)
        return lambda p: self._script(p, content)

    def _script(self, proc: Proc, content: bytes) -> int:
        status = 0
        for line in content.decode(errors="replace").splitlines():
            if line.strip() and not line.startswith("#!"):
                status = self.shell.run(line, proc.stdout, proc.stderr, proc.session)
        return status
