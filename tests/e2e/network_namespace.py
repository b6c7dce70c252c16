"""A lab machine's network, made on this host: a network namespace joined to the host by a veth
pair, from which only the ports forwarded into it can be reached (the server's HTTP port and the
broker), and nothing else of the host: not its PostgreSQL, not its loopback.

Needs root (``ip netns``); ``available()`` says whether this machine allows it.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


def available() -> bool:
    """Whether this process may make network namespaces (root, with ``ip``)."""
    return os.geteuid() == 0 and shutil.which("ip") is not None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class Forward:
    """Forwards TCP connections from ``listen`` to ``target``, both (host, port), in threads."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(listen)
        self.port = int(self.server.getsockname()[1])
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Stop accepting (connections in flight end with their peers)."""
        self.closed = True
        self.server.close()


class Namespace:
    """A network namespace ``name`` whose only way out is ``host_ip`` on its veth."""

    def __init__(self, name: str, host_ip: str, inner_ip: str) -> None:
        self.name, self.host_ip, self.inner_ip = name, host_ip, inner_ip
        self.forwards: list[Forward] = []

    def forward(self, target: tuple[str, int]) -> int:
        """Make ``target`` (a host address) reachable from inside at ``host_ip:<port>``; the port."""
        fwd = Forward((self.host_ip, 0), target)
        self.forwards.append(fwd)
        return fwd.port

    def prefix(self) -> list[str]:
        """The command prefix that runs a program inside."""
        return ["ip", "netns", "exec", self.name]

    def can_connect(self, host: str, port: int) -> bool:
        """Whether a TCP connection to (host, port) from inside succeeds."""
        probe = (
            "import socket,sys\n"
            "s=socket.socket(); s.settimeout(3)\n"
            f"sys.exit(0 if s.connect_ex(({host!r}, {port})) == 0 else 1)\n"
        )
        return subprocess.run([*self.prefix(), "python3", "-c", probe], capture_output=True).returncode == 0


@contextmanager
def lab_network() -> Iterator[Namespace]:
    """A fresh namespace with a veth to the host (10.231.N.0/30), removed at the end."""
    n = random.randrange(1, 250)
    tag = f"{os.getpid() % 10000}{n}"
    name, outer, inner = f"ll{tag}", f"llh{tag}"[:15], f"lln{tag}"[:15]
    ns = Namespace(name, f"10.231.{n}.1", f"10.231.{n}.2")
    _ip("netns", "add", name)
    try:
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", name)
        _ip("addr", "add", f"{ns.host_ip}/30", "dev", outer)
        _ip("link", "set", outer, "up")
        _ip("netns", "exec", name, "ip", "addr", "add", f"{ns.inner_ip}/30", "dev", inner)
        _ip("netns", "exec", name, "ip", "link", "set", inner, "up")
        _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield ns
    finally:
        for fwd in ns.forwards:
            fwd.close()
        with suppress(subprocess.CalledProcessError):
            _ip("link", "del", outer)
        with suppress(subprocess.CalledProcessError):
            _ip("netns", "del", name)
