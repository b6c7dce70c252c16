"""The way to the phones: the lab machine's adb server, through adbutils.

Every adb failure (the server gone, a phone unplugged, a transport reset, a timeout) becomes a
``DeviceLost`` that names the phone and what failed, so the worker retries the job on the same
or an equivalent phone; the model is never blamed for the cable.

The long ``benchmark_model`` run is read over the shell v2 protocol packet by packet
(``stream``): its output arrives as it is printed, the exit code comes at the end, and between
packets the caller gets a tick (progress, cancellation). A stream that ends without an exit
packet is a lost phone.
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import adbutils

from devicelab.backends.base import DeviceLost

ADB_SERVER_ENV = "LATENCYLAB_ADB_SERVER"
DEFAULT_ADB_SERVER = "127.0.0.1:5037"
COMMAND_TIMEOUT_S = 60.0
TICK_S = 0.5  # the longest a streamed run stays silent towards its caller

# shell v2 packet ids (adb's shell_protocol.h)
_STDOUT, _STDERR, _EXIT = 1, 2, 3


def adb_server(environ: Mapping[str, str] | None = None) -> tuple[str, int]:
    """``(host, port)`` of the adb server, from ``LATENCYLAB_ADB_SERVER`` (``host:port``)."""
    raw = (os.environ if environ is None else environ).get(ADB_SERVER_ENV, "").strip() or DEFAULT_ADB_SERVER
    host, sep, port = raw.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{ADB_SERVER_ENV}={raw!r} is not host:port (for example {DEFAULT_ADB_SERVER})")
    return host.strip("[]"), int(port)


class _Client(adbutils.AdbClient):  # type: ignore[misc]  # adbutils' client is untyped here
    """An adbutils client that never starts an adb server of its own.

    adbutils answers a refused connection by running its bundled ``adb start-server``: on a lab
    machine that would hide a server the admin stopped, and for a remote ``host:port`` it would
    start one on the wrong machine. Here a server that does not answer is a ``DeviceLost``."""

    def make_connection(self, timeout: float | None = None) -> Any:
        try:
            with socket.create_connection((self.host, self.port), timeout=5):
                pass
        except OSError as e:
            raise adbutils.AdbError(
                f"no adb server answers at {self.host}:{self.port} ({e.strerror or e}); start it with "
                "`adb start-server` on that machine, or set " + ADB_SERVER_ENV
            ) from None
        return super().make_connection(timeout)


def client(timeout: float = COMMAND_TIMEOUT_S, environ: Mapping[str, str] | None = None) -> adbutils.AdbClient:
    """An adbutils client of the configured adb server (no connection is made yet)."""
    host, port = adb_server(environ)
    return _Client(host=host, port=port, socket_timeout=timeout)


@dataclass(frozen=True)
class Attached:
    """One line of ``adb devices``: a serial and its state (device, offline, unauthorized, ...)."""

    serial: str
    state: str


def attached(adb: adbutils.AdbClient) -> list[Attached]:
    """Every phone the adb server lists, whatever its state; ``DeviceLost`` if the server is unreachable."""
    try:
        return [Attached(d.serial, d.state) for d in adb.list()]
    except (adbutils.AdbError, OSError) as e:
        host, port = adb_server()
        raise DeviceLost(f"the adb server at {host}:{port} cannot be reached: {_why(e)}") from e


@dataclass(frozen=True)
class ShellOutput:
    """What a command printed and returned on the phone."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        """stdout, then stderr."""
        return self.stdout + self.stderr


_STATE_REASONS = {
    "absent": "unplugged: no longer listed by the adb server",
    "offline": "adb lists it 'offline' (the USB link or adbd is not answering)",
    "unauthorized": "adb lists it 'unauthorized': accept the USB debugging prompt on the phone",
}


def state_reason(state: str) -> str:
    """Why a phone in this adb state (``absent`` when not listed) cannot be used, in words a lab
    admin can act on."""
    return _STATE_REASONS.get(state, f"adb lists it {state!r}, not 'device'")


def _why(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class PhoneLink:
    """Commands, files and long runs on one phone, by serial."""

    def __init__(self, adb: adbutils.AdbClient, serial: str) -> None:
        self.adb = adb
        self.serial = serial
        self.device = adb.device(serial)

    @contextmanager
    def _lost_on_adb_errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except DeviceLost:
            raise
        except (adbutils.AdbError, OSError, EOFError, struct.error) as e:
            raise DeviceLost(f"phone {self.serial}: {what} failed over adb: {_why(e)}") from e

    def state(self) -> str:
        """The phone's adb state now (``device``, ``offline``, ``unauthorized``), or ``absent``."""
        for d in attached(self.adb):
            if d.serial == self.serial:
                return d.state
        return "absent"

    def check_ready(self) -> None:
        """``DeviceLost`` unless the phone is attached and authorized."""
        state = self.state()
        if state != "device":
            raise DeviceLost(f"phone {self.serial} is not ready: {state_reason(state)}", gone=True)

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT_S) -> ShellOutput:
        """Run a short command (shell v2: separate stdout/stderr and the exit code)."""
        with self._lost_on_adb_errors(f"`{command[:80]}`"):
            r = self.device.shell2(command, timeout=timeout, v2=True)
        return ShellOutput(int(r.returncode), r.stdout or r.output, r.stderr or "")

    def read_bytes(self, path: str) -> bytes:
        """A file's content, pulled with adb sync."""
        with self._lost_on_adb_errors(f"reading {path}"):
            data: bytes = self.device.sync.read_bytes(path)
            return data

    def exists(self, path: str) -> bool:
        """Whether a file exists on the phone (adb sync stat)."""
        with self._lost_on_adb_errors(f"stat {path}"):
            return bool(self.device.sync.exists(path))

    def push(self, data: bytes, path: str, mode: int = 0o644) -> None:
        """Write ``data`` to ``path`` on the phone with adb sync."""
        import io

        with self._lost_on_adb_errors(f"pushing {len(data)} bytes to {path}"):
            self.device.sync.push(io.BytesIO(data), path, mode=mode)

    def stream(
        self,
        command: str,
        on_output: Callable[[str], None],
        tick: Callable[[], None],
        timeout: float,
    ) -> ShellOutput:
        """Run a long command over shell v2, handing each chunk of stdout+stderr to ``on_output``
        as it arrives and calling ``tick`` at least every ``TICK_S`` (it may raise to stop the
        run: the connection is closed, which ends the command on the phone). ``DeviceLost`` when
        the stream ends without an exit code or the run outlives ``timeout``."""
        deadline = time.monotonic() + timeout
        out: list[str] = []
        err: list[str] = []
        with self._lost_on_adb_errors(f"running `{command[:80]}`"):
            conn = self.device.open_transport(timeout=COMMAND_TIMEOUT_S)
            try:
                conn.send_command(f"shell,v2:{command}")
                conn.check_okay()
                sock: socket.socket = conn.conn
                sock.settimeout(TICK_S)
                buffer = b""
                decoder = {_STDOUT: _Utf8(), _STDERR: _Utf8()}
                while True:
                    while len(buffer) >= 5:
                        kind, length = buffer[0], int.from_bytes(buffer[1:5], "little")
                        if len(buffer) < 5 + length:
                            break
                        payload, buffer = buffer[5 : 5 + length], buffer[5 + length :]
                        if kind == _EXIT:
                            code = payload[0] if payload else 255
                            return ShellOutput(code, "".join(out), "".join(err))
                        if kind in decoder:
                            text = decoder[kind].feed(payload)
                            (out if kind == _STDOUT else err).append(text)
                            if text:
                                on_output(text)
                    if time.monotonic() > deadline:
                        raise DeviceLost(
                            f"phone {self.serial}: `{command[:80]}` ran past its time limit of {timeout:.0f} s"
                        )
                    try:
                        chunk = sock.recv(65536)
                    except TimeoutError:
                        tick()
                        continue
                    if not chunk:
                        raise DeviceLost(
                            f"phone {self.serial}: the connection ended during `{command[:80]}` without an exit "
                            "status (unplugged, or adb lost the transport)"
                        )
                    buffer += chunk
                    tick()
            finally:
                conn.close()


class _Utf8:
    """Incremental UTF-8 decoding: a character split across packets is kept for the next."""

    def __init__(self) -> None:
        import codecs

        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self._decoder.decode(data)


def _remote_sha256(link: PhoneLink, path: str) -> str | None:
    out = link.run(f"sha256sum {path} 2>/dev/null")
    head = out.stdout.split()
    return head[0] if out.exit_code == 0 and head else None


def ensure_file(link: PhoneLink, data: bytes, path: str, mode: int) -> bool:
    """Push ``data`` to ``path`` unless the phone has it already (by sha256); True if pushed."""
    if _remote_sha256(link, path) == hashlib.sha256(data).hexdigest():
        return False
    link.push(data, path, mode=mode)
    if mode & 0o111:
        link.run(f"chmod {mode:o} {path}")
    if _remote_sha256(link, path) != hashlib.sha256(data).hexdigest():
        raise DeviceLost(f"phone {link.serial}: {path} does not hold what was pushed (transfer cut short?)")
    return True


__all__ = [
    "ensure_file",
    "ADB_SERVER_ENV",
    "DEFAULT_ADB_SERVER",
    "Attached",
    "PhoneLink",
    "ShellOutput",
    "adb_server",
    "attached",
    "client",
]
