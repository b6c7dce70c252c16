"""Emulated Android phones for the adb double: properties, an in-memory filesystem, a toybox-ish shell.

The shell answers the few commands a backend runs, with the exit codes and stderr lines a real
phone's ``/system/bin/sh`` gives, so code written against this double behaves the same on a phone.
"""

from __future__ import annotations

import hashlib
import shlex
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

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
    output: bytes = b""  # stdout and stderr interleaved per command, as shell v1 (a pty) shows them


class FileSystem:
    """A flat path -> File map plus a set of directories; enough for push, pull, stat, ls, cat."""

    def __init__(self) -> None:
        self.files: dict[str, File] = {}
        self.dirs: set[str] = {"/"}
        self.lock = threading.RLock()
        for d in ("/data/local/tmp", "/sdcard", "/proc", "/system/bin"):
            self.mkdir(d)

    @staticmethod
    def norm(path: str) -> str:
        """Normalise a path: absolute, no trailing slash, no duplicate slashes."""
        parts = [p for p in path.split("/") if p and p != "."]
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
}

# Pixel 7 (Tensor G2): 4 little, 2 mid, 2 big cores.
DEFAULT_CPU_MAX_KHZ = (1803000,) * 4 + (2348000,) * 2 + (2850000,) * 2


class Phone:
    """One emulated phone: serial, adb state, properties, files and a shell."""

    def __init__(
        self,
        serial: str,
        *,
        props: dict[str, str] | None = None,
        state: str = DEVICE,
        cpu_max_khz: tuple[int, ...] = DEFAULT_CPU_MAX_KHZ,
        mem_total_kb: int = 7_800_000,
        temps_c: dict[str, float] | None = None,
    ) -> None:
        self.serial = serial
        self.props = {**DEFAULT_PROPS, **(props or {})}
        self._state = state
        self.fs = FileSystem()
        self.commands: dict[str, Callable[[Phone, list[str]], ShellResult]] = dict(BUILTINS)
        self.history: list[str] = []
        self._on_change: Callable[[], None] | None = None
        self.temps_c = dict(temps_c or {"battery": 30.0, "cpu-0-0": 35.0, "gpu": 33.0})
        for cpu, khz in enumerate(cpu_max_khz):
            base = f"/sys/devices/system/cpu/cpu{cpu}/cpufreq"
            self.fs.write(f"{base}/cpuinfo_max_freq", f"{khz}\n".encode())
            self.fs.write(f"{base}/scaling_cur_freq", f"{khz}\n".encode())
            self.fs.write(f"{base}/scaling_governor", b"schedutil\n")
        self.fs.write("/sys/devices/system/cpu/possible", f"0-{len(cpu_max_khz) - 1}\n".encode())
        self.fs.write(
            "/proc/meminfo",
            f"MemTotal:       {mem_total_kb} kB\nMemFree:        {mem_total_kb // 4} kB\n"
            f"MemAvailable:   {mem_total_kb // 2} kB\n".encode(),
        )
        for i, zone in enumerate(self.temps_c):
            base = f"/sys/class/thermal/thermal_zone{i}"
            self.fs.write(f"{base}/type", f"{zone}\n".encode())
            self.fs.write(f"{base}/temp", self._temp_reader(zone))

    def _temp_reader(self, zone: str) -> Callable[[], bytes]:
        return lambda: f"{round(self.temps_c[zone] * 1000)}\n".encode()

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

    def set_temperature(self, zone: str, celsius: float) -> None:
        """Set a thermal zone's temperature (read live from its ``temp`` file)."""
        self.temps_c[zone] = celsius

    def devices_l_tags(self) -> str:
        """The ``product: model: device:`` tags of ``adb devices -l``."""
        model = self.props["ro.product.model"].replace(" ", "_")
        return f"product:{self.props['ro.product.name']} model:{model} device:{self.props['ro.product.device']}"

    def features(self) -> str:
        """What ``host-serial:<serial>:features`` reports."""
        return "shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,fixed_push_symlink_timestamp,abb_exec"

    def run(self, line: str) -> ShellResult:
        """Run a shell command line: ``;``, ``&&``, ``||``, ``$?`` and ``>`` redirection."""
        self.history.append(line)
        out = ShellResult()
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|>")
        lexer.whitespace_split = True
        tokens = list(lexer)
        status, skip, i = 0, False, 0
        while i < len(tokens):
            j = i
            while j < len(tokens) and tokens[j] not in (";", "&&", "||"):
                j += 1
            words, sep = tokens[i:j], tokens[j] if j < len(tokens) else ";"
            if words and not skip:
                res = self._run_simple([w.replace("$?", str(status)) for w in words])
                out.stdout += res.stdout
                out.stderr += res.stderr
                out.output += res.stdout + res.stderr
                status = res.exit_code
            skip = (sep == "&&" and status != 0) or (sep == "||" and status == 0)
            i = j + 1
        out.exit_code = status
        return out

    def _run_simple(self, words: list[str]) -> ShellResult:
        redirect = None
        if ">" in words:
            k = words.index(">")
            redirect = words[k + 1] if k + 1 < len(words) else None
            words = words[:k] + words[k + 2 :]
        if words and words[-1] == "2" and redirect == "/dev/null":  # `cmd 2>/dev/null`
            res = self._dispatch(words[:-1])
            return ShellResult(res.stdout, b"", res.exit_code)
        res = self._dispatch(words)
        if redirect and redirect != "/dev/null":
            self.fs.write(redirect, res.stdout)
            res = ShellResult(b"", res.stderr, res.exit_code)
        elif redirect == "/dev/null":
            res = ShellResult(b"", res.stderr, res.exit_code)
        return res

    def _dispatch(self, words: list[str]) -> ShellResult:
        if not words:
            return ShellResult()
        name = words[0].rsplit("/", 1)[-1] if words[0].startswith("/system/bin/") else words[0]
        command = self.commands.get(name)
        if command is None:
            return ShellResult(b"", f"/system/bin/sh: {words[0]}: not found\n".encode(), 127)
        return command(self, words[1:])


def _missing(tool: str, path: str) -> ShellResult:
    return ShellResult(b"", f"{tool}: {path}: No such file or directory\n".encode(), 1)


def _getprop(phone: Phone, args: list[str]) -> ShellResult:
    if args:
        return ShellResult(f"{phone.props.get(args[0], args[1] if len(args) > 1 else '')}\n".encode())
    return ShellResult("".join(f"[{k}]: [{v}]\n" for k, v in sorted(phone.props.items())).encode())


def _cat(phone: Phone, args: list[str]) -> ShellResult:
    res = ShellResult()
    for path in args:
        f = phone.fs.get(path)
        if f is None:
            bad = _missing("cat", path)
            res.stderr += bad.stderr
            res.exit_code = 1
        else:
            res.stdout += f.read()
    return res


def _ls(phone: Phone, args: list[str]) -> ShellResult:
    res = ShellResult()
    for path in [a for a in args if not a.startswith("-")] or ["/"]:
        if phone.fs.is_dir(path):
            res.stdout += "".join(f"{n}\n" for n in phone.fs.listdir(path)).encode()
        elif phone.fs.get(path) is not None:
            res.stdout += f"{path}\n".encode()
        else:
            res.stderr += _missing("ls", path).stderr
            res.exit_code = 1
    return res


def _echo(phone: Phone, args: list[str]) -> ShellResult:
    if args[:1] == ["-n"]:
        return ShellResult(" ".join(args[1:]).encode())
    return ShellResult((" ".join(args) + "\n").encode())


def _rm(phone: Phone, args: list[str]) -> ShellResult:
    force = any(a.startswith("-") and "f" in a for a in args)
    res = ShellResult()
    for path in [a for a in args if not a.startswith("-")]:
        if not phone.fs.remove(path) and not force:
            res.stderr += f"rm: {path}: No such file or directory\n".encode()
            res.exit_code = 1
    return res


def _chmod(phone: Phone, args: list[str]) -> ShellResult:
    if len(args) < 2:
        return ShellResult(b"", b"chmod: Need 2 arguments\n", 1)
    res = ShellResult()
    for path in args[1:]:
        f = phone.fs.get(path)
        if f is None:
            res.stderr += f"chmod: {path}: No such file or directory\n".encode()
            res.exit_code = 1
        elif args[0] == "+x":
            f.mode |= 0o111
        else:
            f.mode = int(args[0], 8)
    return res


def _sha256sum(phone: Phone, args: list[str]) -> ShellResult:
    res = ShellResult()
    for path in args:
        f = phone.fs.get(path)
        if f is None:
            res.stderr += _missing("sha256sum", path).stderr
            res.exit_code = 1
        else:
            res.stdout += f"{hashlib.sha256(f.read()).hexdigest()}  {path}\n".encode()
    return res


def _mkdir(phone: Phone, args: list[str]) -> ShellResult:
    for path in [a for a in args if not a.startswith("-")]:
        phone.fs.mkdir(path)
    return ShellResult()


BUILTINS: dict[str, Callable[[Phone, list[str]], ShellResult]] = {
    "getprop": _getprop,
    "cat": _cat,
    "ls": _ls,
    "echo": _echo,
    "rm": _rm,
    "chmod": _chmod,
    "sha256sum": _sha256sum,
    "mkdir": _mkdir,
    "true": lambda phone, args: ShellResult(),
    "false": lambda phone, args: ShellResult(exit_code=1),
    "exit": lambda phone, args: ShellResult(exit_code=int(args[0]) if args else 0),
}
