"""Shortening messages without losing their cause, for every room (Django-free, so the server,
the CLI and the dashboard cut a failure reason the same way).

A failure reason names the cause last: ``job failed: cannot build the kernel: CL_OUT_OF_RESOURCES``,
a traceback's last line, the tail of a tool's output. Cutting the end keeps the context and loses
the cause, so these helpers cut in the middle and keep more of the end than of the start.
"""

from __future__ import annotations

MARKER = " ... "


def clip_middle(text: str, limit: int, marker: str = MARKER) -> str:
    """``text`` in at most ``limit`` characters: its start, ``marker``, and its end (two thirds of
    what is kept), or ``text`` itself when it fits."""
    if limit < len(marker) + 2:
        raise ValueError(f"limit={limit} leaves no room for the text around {marker!r}")
    if len(text) <= limit:
        return text
    kept = limit - len(marker)
    head = kept // 3
    return text[:head] + marker + text[len(text) - (kept - head) :]


def one_line(text: str, width: int, marker: str = MARKER) -> str:
    """``text`` on one line (runs of whitespace and newlines become one space) in at most ``width``
    characters, cut in the middle: for a table cell or a list."""
    return clip_middle(" ".join(str(text).split()), width, marker)
