"""An adb server of our own on loopback that speaks the adb host protocol to real clients (adbutils).

Framing follows adb's OVERVIEW.TXT / SERVICES.TXT / SYNC.TXT: a request is 4 hex digits of length
then the service name; the answer is ``OKAY`` or ``FAIL`` + 4 hex digits + message. After
``host:transport:<serial>`` (or ``host:tport:serial:<serial>``, which also returns an 8-byte
transport id) the same socket carries one device service: ``shell:``, ``shell,v2:`` or ``sync:``.
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from tests.adb_double.phones import DEVICE, UNAUTHORIZED, Phone

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
            phone._on_change = self._notify
        self._notify()
        return phone

    def unplug(self, serial: str) -> Phone:
        """Detach a phone, as if its USB cable were pulled."""
        with self._changed:
            phone = self._phones.pop(serial)
            self._transport_ids.pop(serial, None)
            phone._on_change = None
        self._notify()
        return phone

    def unplug_all(self) -> None:
        """A dead hub: every phone gone at once."""
        with self._changed:
            for phone in self._phones.values():
                phone._on_change = None
            self._phones.clear()
            self._transport_ids.clear()
        self._notify()

    def phones(self) -> list[Phone]:
        """The attached phones."""
        with self._changed:
            return list(self._phones.values())

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
                self._device_service(sock, phone, request)
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

    def _device_service(self, sock: socket.socket, phone: Phone, request: str) -> None:
        if request.startswith("shell,v2") or request.startswith("shell,raw,v2"):
            res = phone.run(request.split(":", 1)[1])
            sock.sendall(b"OKAY")
            for packet_id, data in ((1, res.stdout), (2, res.stderr)):
                if data:
                    sock.sendall(bytes([packet_id]) + struct.pack("<I", len(data)) + data)
            sock.sendall(bytes([3]) + struct.pack("<I", 1) + bytes([res.exit_code & 0xFF]))
        elif request.startswith("shell:"):
            res = phone.run(request[len("shell:") :])
            sock.sendall(b"OKAY" + res.output)  # v1 merges both streams, no exit code
        elif request == "sync:":
            sock.sendall(b"OKAY")
            self._sync(sock, phone)
        else:
            sock.sendall(_fail(f"unknown device service '{request}'"))
        sock.shutdown(socket.SHUT_WR)

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
