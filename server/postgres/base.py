"""Django's PostgreSQL backend, with a connection health check that asks the socket, not the server.

With ``CONN_HEALTH_CHECKS`` Django checks a kept connection before each request's first query by
running ``SELECT 1``: a round trip per request, and under a threaded web worker each round trip
is also a wait for the interpreter lock while another request holds it. A connection the server
ended (``pg_terminate_backend``, a restart, an idle timeout) is told apart without asking: the
server says goodbye (an error message, then the socket's end), so there is something to read on
a connection that should be silent between requests. Only then is ``SELECT 1`` run, as Django
would; a silent socket is taken as usable. What this cannot see, a peer gone without a word (a
host powered off), ``SELECT 1`` could not see quicker either: it would wait for TCP to give up.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    """``is_usable`` polls the connection's socket before falling back to ``SELECT 1``."""

    def is_usable(self) -> bool:
        if self.connection is None or self.connection.closed:
            return False
        try:
            readable, _, _ = select.select([self.connection.fileno()], [], [], 0)
        except (OSError, ValueError):  # the descriptor is gone
            return False
        if not readable:
            return True
        return bool(super().is_usable())
