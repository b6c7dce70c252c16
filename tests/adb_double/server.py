"""An adb server of our own on loopback that speaks the adb host protocol to real clients (adbutils).

Framing follows adb's OVERVIEW.TXT / SERVICES.TXT / SYNC.TXT: a request is 4 hex digits of length
then the service name; the answer is ``OKAY`` or ``FAIL`` + 4 hex digits + message. After
``host:transport:<serial>`` (or ``host:tport:serial:<serial>``, which also returns an 8-byte
transport id) the same socket carries one device service: ``shell:``, ``shell,v2:``, ``exec:`` or
``sync:``. Shell output is sent as it is printed (raw bytes for ``shell:``/``exec:``, stdout/stderr
packets then the exit-code packet for ``shell,v2:``), each connection in its own thread. Pulling a
phone's cable (``unplug``) or its going offline or unauthorized closes every connection open to
it, as adb does when the USB device disappears, and kills the commands they were running.
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.adb_double.phones import DEVICE, UNAUTHORIZED, Phone
from tests.adb_double.shell import Session

ADB_SERVER_VERSION = 41  # what adb 1.0.41 reports; adbutils then uses host:tport
SYNC_DATA_MAX = 64 * 1024


class _Closed(Exception):
    """The client went away."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise _Closed
        buf += chunk
    return buf


def _block(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return f"{len(data):04x}".encode() + data


def _fail(message: str) -> bytes:
    return b"FAIL" + _block(message)


class AdbDouble:
    """A threaded adb server on 127.0.0.1 holding emulated phones; use as a context manager."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._phones: dict[str, Phone] = {}
        self._transport_ids: dict[str, int] = {}
        self._next_id = 1
        self._changed = threading.Condition()
        self._generation = 0
        self._stopping = False
        # Connections bound to a phone's transport: closed when the phone goes away.
        self._links: dict[str, set[tuple[socket.socket, Session]]] = {}
        self._links_lock = threading.Lock()
        double = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    double._serve(self.request)
                except (_Closed, ConnectionError, OSError):
                    pass

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server((host, port), Handler)
        address = self._server.server_address
        self.host: str = str(address[0])
        self.port: int = int(address[1])
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> AdbDouble:
        """Start serving in a background thread."""
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and wake up every track-devices connection so it closes."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> AdbDouble:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def address(self) -> str:
        """``host:port``, the form of ``LATENCYLAB_ADB_SERVER``."""
        return f"{self.host}:{self.port}"

    # -- fault injection -------------------------------------------------------------------------

    def plug(self, phone: Phone) -> Phone:
        """Attach a phone (the device list and track-devices follow)."""
        with self._changed:
            self._phones[phone.serial] = phone
            self._transport_ids[phone.serial] = self._next_id
            self._next_id += 1
            phone._on_change = lambda: self._phone_changed(phone)
        self._notify()
        return phone

    def unplug(self, serial: str) -> Phone:
        """Detach a phone, as if its USB cable were pulled."""
        with self._changed:
            phone = self._phones.pop(serial)
            self._transport_ids.pop(serial, None)
            phone._on_change = None
        self._drop_links(serial)
        self._notify()
        return phone

    def unplug_all(self) -> None:
        """A dead hub: every phone gone at once."""
        with self._changed:
            for phone in self._phones.values():
                phone._on_change = None
            serials = list(self._phones)
            self._phones.clear()
            self._transport_ids.clear()
        for serial in serials:
            self._drop_links(serial)
        self._notify()

    def phones(self) -> list[Phone]:
        """The attached phones."""
        with self._changed:
            return list(self._phones.values())

    def _phone_changed(self, phone: Phone) -> None:
        if phone.state != DEVICE:
            self._drop_links(phone.serial)
        self._notify()

    def _drop_links(self, serial: str) -> None:
        """Close every connection bound to this phone and kill what they run."""
        with self._links_lock:
            links = self._links.pop(serial, set())
        for sock, session in links:
            session.cancel()
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _notify(self) -> None:
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    def _device_list(self, long: bool) -> str:
        with self._changed:
            phones = list(self._phones.values())
        lines = []
        for p in phones:
            line = f"{p.serial}\t{p.state}"
            if long:
                line = f"{p.serial:<22} {p.state}"
                if p.state == DEVICE:
                    line += f" usb:1-{self._transport_ids.get(p.serial, 0)} {p.devices_l_tags()}"
                line += f" transport_id:{self._transport_ids.get(p.serial, 0)}"
            lines.append(line + "\n")
        return "".join(lines)

    # -- protocol --------------------------------------------------------------------------------

    def _serve(self, sock: socket.socket) -> None:
        phone: Phone | None = None
        while True:
            size = int(_recv_exact(sock, 4), 16)
            request = _recv_exact(sock, size).decode()
            if phone is not None:
                self._bound_service(sock, phone, request)
                return
            if request == "host:version":
                sock.sendall(b"OKAY" + _block(f"{ADB_SERVER_VERSION:04x}"))
            elif request in ("host:devices", "host:devices-l"):
                sock.sendall(b"OKAY" + _block(self._device_list(request.endswith("-l"))))
            elif request == "host:track-devices":
                sock.sendall(b"OKAY")
                self._track(sock)
                return
            elif request == "host:kill":
                sock.sendall(b"OKAY")
                return
            elif request.startswith(("host:transport:", "host:tport:serial:")):
                serial = request.rsplit(":", 1)[1]
                phone, error = self._find(serial)
                if phone is None:
                    sock.sendall(_fail(error))
                    return
                sock.sendall(b"OKAY")
                if request.startswith("host:tport:"):
                    sock.sendall(struct.pack("<Q", self._transport_ids.get(serial, 0)))
            elif request.startswith("host-serial:"):
                self._host_serial(sock, request)
                return
            else:
                sock.sendall(_fail(f"unknown host service '{request}'"))
                return

    def _find(self, serial: str) -> tuple[Phone | None, str]:
        with self._changed:
            phone = self._phones.get(serial)
        if phone is None:
            return None, f"device '{serial}' not found"
        if phone.state == UNAUTHORIZED:
            return None, (
                "device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set\n"
                "Try 'adb kill-server' if that seems wrong.\n"
                "Otherwise check for a confirmation dialog on your device."
            )
        if phone.state != DEVICE:
            return None, "device offline"
        return phone, ""

    def _host_serial(self, sock: socket.socket, request: str) -> None:
        _, rest = request.split(":", 1)
        serial, command = rest.rsplit(":", 1)
        with self._changed:
            phone = self._phones.get(serial)
        if phone is None:
            sock.sendall(_fail(f"device '{serial}' not found"))
        elif command == "get-state":
            sock.sendall(b"OKAY" + _block(phone.state))
        elif command == "get-serialno":
            sock.sendall(b"OKAY" + _block(phone.serial))
        elif command == "get-devpath":
            sock.sendall(b"OKAY" + _block(f"usb:1-{self._transport_ids.get(serial, 0)}"))
        elif command == "features":
            sock.sendall(b"OKAY" + _block(phone.features()))
        else:
            sock.sendall(_fail(f"unknown host service '{request}'"))

    def _track(self, sock: socket.socket) -> None:
        seen = -1
        while True:
            with self._changed:
                while self._generation == seen and not self._stopping:
                    self._changed.wait(timeout=0.5)
                if self._stopping:
                    return
                seen = self._generation
            sock.sendall(_block(self._device_list(False)))

    def _bound_service(self, sock: socket.socket, phone: Phone, request: str) -> None:
        session = Session()
        link = (sock, session)
        with self._links_lock:
            self._links.setdefault(phone.serial, set()).add(link)
        try:
            if phone.state != DEVICE or self._phones.get(phone.serial) is not phone:
                return  # gone between the transport request and the service request
            self._device_service(sock, phone, request, session)
        finally:
            with self._links_lock:
                self._links.get(phone.serial, set()).discard(link)

    @staticmethod
    def _hang_up_on_close(sock: socket.socket, session: Session) -> threading.Event:
        """Watch the client's side: when it closes the connection while the command runs, the
        command gets SIGHUP, as adbd hangs up a shell whose socket went away."""
        finished = threading.Event()

        def watch() -> None:
            try:
                while sock.recv(4096):
                    pass
            except OSError:
                pass
            if not finished.is_set():
                session.cancel()

        threading.Thread(target=watch, daemon=True).start()
        return finished

    def _device_service(self, sock: socket.socket, phone: Phone, request: str, session: Session) -> None:
        if request.startswith(("shell:", "shell,", "exec:")):
            finished = self._hang_up_on_close(sock, session)
            try:
                self._shell_service(sock, phone, request, session)
            finally:
                finished.set()
            if session.cancelled.is_set():
                return
        elif request == "sync:":
            sock.sendall(b"OKAY")
            self._sync(sock, phone)
        else:
            sock.sendall(_fail(f"unknown device service '{request}'"))
        sock.shutdown(socket.SHUT_WR)

    def _shell_service(self, sock: socket.socket, phone: Phone, request: str, session: Session) -> None:
        sock.sendall(b"OKAY")
        command = request.split(":", 1)[1]
        if request.startswith(("shell,v2", "shell,raw,v2")):

            def packet(packet_id: int) -> Callable[[bytes], None]:
                return lambda data: sock.sendall(bytes([packet_id]) + struct.pack("<I", len(data)) + data)

            code = phone.execute(command, packet(1), packet(2), session)
            if not session.cancelled.is_set():
                sock.sendall(bytes([3]) + struct.pack("<I", 1) + bytes([code & 0xFF]))
        else:
            # v1 (and exec:) is a raw byte stream of both outputs, with no exit code.
            phone.execute(command, sock.sendall, sock.sendall, session)

    def _sync(self, sock: socket.socket, phone: Phone) -> None:
        fs = phone.fs
        while True:
            try:
                ident, size = struct.unpack("<4sI", _recv_exact(sock, 8))
            except _Closed:
                return
            if ident == b"QUIT":
                return
            path = _recv_exact(sock, size).decode()
            if ident == b"STAT":
                sock.sendall(b"STAT" + struct.pack("<III", *fs.stat(path)))
            elif ident == b"LIST":
                for name in fs.listdir(path):
                    mode, fsize, mtime = fs.stat(f"{path.rstrip('/')}/{name}")
                    raw = name.encode()
                    sock.sendall(b"DENT" + struct.pack("<IIII", mode, fsize, mtime, len(raw)) + raw)
                sock.sendall(b"DONE" + struct.pack("<IIII", 0, 0, 0, 0))
            elif ident == b"SEND":
                target, _, mode_text = path.rpartition(",")
                chunks: list[bytes] = []
                while True:
                    kind, n = struct.unpack("<4sI", _recv_exact(sock, 8))
                    if kind == b"DATA":
                        chunks.append(_recv_exact(sock, n))
                    elif kind == b"DONE":
                        fs.write(target, b"".join(chunks), int(mode_text or "644") & 0o7777, mtime=n)
                        sock.sendall(b"OKAY" + struct.pack("<I", 0))
                        break
                    else:
                        self._sync_fail(sock, f"invalid data message '{kind.decode(errors='replace')}'")
                        return
            elif ident == b"RECV":
                f = fs.get(path)
                if f is None:
                    self._sync_fail(sock, "No such file or directory")
                    continue
                data = f.read()
                for i in range(0, len(data), SYNC_DATA_MAX):
                    chunk = data[i : i + SYNC_DATA_MAX]
                    sock.sendall(b"DATA" + struct.pack("<I", len(chunk)) + chunk)
                sock.sendall(b"DONE" + struct.pack("<I", 0))
            else:
                self._sync_fail(sock, f"unknown sync request '{ident.decode(errors='replace')}'")
                return

    @staticmethod
    def _sync_fail(sock: socket.socket, message: str) -> None:
        raw = message.encode()
        sock.sendall(b"FAIL" + struct.pack("<I", len(raw)) + raw)


@contextmanager
def running_adb_double(*phones: Phone) -> Iterator[AdbDouble]:
    """Start an adb double with these phones plugged in, stop it afterwards."""
    with AdbDouble() as double:
        for phone in phones:
            double.plug(phone)
        yield double


@contextmanager
def discovered_phone(phone: Phone, tool: bytes, tool_dir: Path) -> Iterator[Any]:
    """``phone`` alone on an adb double, with ``tool`` as the configured ``benchmark_model``
    (written under ``tool_dir``): the DeviceInfo the Android backend discovers for it."""
    import pytest

    from devicelab.backends.android import backend

    path = Path(tool_dir) / "benchmark_model"
    path.write_bytes(tool)
    with pytest.MonkeyPatch.context() as mp, running_adb_double(phone) as double:
        mp.setenv(backend.TOOL_ENV, str(path))
        mp.setenv("LATENCYLAB_ADB_SERVER", double.address)
        (info,) = backend.discover()
        yield info
