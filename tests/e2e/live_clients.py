"""API clients of pytest-django's live server that leave no database connection behind.

The live server answers each kept-alive HTTP connection in its own thread, and that thread
holds a database connection (``CONN_MAX_AGE``) until the client hangs up. A client left open, or
a thread not yet scheduled after the hang-up, keeps the test database busy, and dropping it at
the end of the session fails. So every client is closed and the serving threads are waited for.
"""

from __future__ import annotations

import threading

from latencylab.client import Client
from tests.waiting import wait_for


def wait_for_request_threads(timeout: float = 15) -> None:
    """Wait until no live-server thread is still serving a connection (they end once clients hang up)."""

    def serving() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if "process_request_thread" in t.name]

    wait_for(lambda: not serving(), timeout, lambda: f"{len(serving())} live-server connection(s) to close", 0.05)


class LiveClients:
    """``clients(token)`` -> a ``Client`` of the live server; ``close()`` closes them all and waits
    for the server's threads (also those of clients made elsewhere, such as the CLI's)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.clients: list[Client] = []

    def __call__(self, token: str) -> Client:
        self.clients.append(Client(self.url, token))
        return self.clients[-1]

    def close(self) -> None:
        """Hang up every client, then wait for the server side to let go of the database."""
        for c in self.clients:
            c.close()
        wait_for_request_threads()
