"""The embedded broker's transport: kombu's filesystem transport, whose messages appear whole.

Without a broker server (the embedded defaults of ``server/settings.py``, and a worker on the
server's host, ``workers/celery_app.py``) a message is a file ``<ms>_<uuid>.<queue>.msg`` in the
queue folder. kombu (5.x, ``kombu/transport/filesystem.py``) creates that file under its final
name and then writes it, holding an ``flock`` that its reader never asks for; the reader moves the
file away and parses it. A consumer polling while a big message was being written read half of it:
``JSONDecodeError`` in a device's process, and the message gone until it was sent again.

Here the writer writes to a name no reader takes (``.<final name>.part``, in the same folder) and
renames it into place with ``os.replace``, atomic within a folder: a ``.msg`` file is complete from
the moment it can be listed. The reader claims a message by renaming it within the queue folder
(one consumer wins; kombu's move to the temporary folder is a copy when that folder is on another
file system, which two consumers can both make), reads it under kombu's shared lock, and puts back
a file that does not parse yet (a writer that writes in place, kombu's own, may still be at it).

Celery selects it by name: ``broker_transport = TRANSPORT`` with a ``filesystem://`` URL.
This module is shared by the server and the lab side, so it lives below both (kombu only).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import uuid
from contextlib import suppress
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

log = logging.getLogger(__name__)

# What Celery's ``broker_transport`` setting names (kombu resolves a dotted "module:Class").
TRANSPORT = "devicelab.fsbroker:Transport"

# A message that does not parse is given back to the queue this long after it was last written
# (its writer may still be writing it in place); older, it is set aside as ``<name>.bad``.
INCOMPLETE_GRACE_SECONDS = 60.0


def message_name(queue: str) -> str:
    """kombu's name of a new message on ``queue``: ``<ms>_<uuid>.<queue>.msg``. Its readers
    (``_get``, ``_size``, ``_purge``) take a file whose name after the first dot is ``<queue>.msg``,
    and ``_get`` takes the oldest first by sorting the names."""
    return f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"


def is_message_of(filename: str, queue: str) -> bool:
    """Whether ``filename`` is a complete message of ``queue`` (kombu's test, which a partial
    file's or a claimed file's name never passes: they start with a dot)."""
    return filename.partition(".")[2] == f"{queue}.msg"


class Channel(filesystem.Channel):
    """kombu's filesystem channel with an atomic write and a claim by rename."""

    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]  # kombu: payload here, message in its base
        """Write the message under a hidden name, then rename it into place."""
        name = message_name(queue)
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))  # type: ignore[no-untyped-call]
            # No fsync: like kombu's, the embedded broker survives a process's crash, not the machine's.
            os.replace(partial, final)
        except OSError as exc:
            with suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        """The oldest complete message of ``queue``; ``Empty`` when there is none."""
        folder = self.data_folder_in
        for filename in sorted(os.listdir(folder)):
            if not is_message_of(filename, queue):
                continue
            path = os.path.join(folder, filename)
            claimed = os.path.join(folder, f".{filename}.{uuid.uuid4().hex}.claimed")
            try:
                os.rename(path, claimed)  # atomic: of two consumers, one takes it
            except OSError:
                continue  # another consumer took it meanwhile
            try:
                payload = self._read(claimed)
            except OSError as exc:
                raise ChannelError(f"Cannot read file {path!r} from queue.") from exc
            if payload is None:
                self._give_back(claimed, path)
                continue
            self._dispose(claimed, filename)
            return payload
        raise Empty()

    @staticmethod
    def _read(path: str) -> Any:
        """The message in ``path``, read under kombu's shared lock (a writer that writes in place
        holds its exclusive lock while it writes); None when it does not parse (yet)."""
        with open(path, "rb") as f:
            filesystem.lock(f, filesystem.LOCK_SH)  # type: ignore[no-untyped-call]
            try:
                data = f.read()
            finally:
                filesystem.unlock(f)  # type: ignore[no-untyped-call]
        try:
            return loads(bytes_to_str(data))  # type: ignore[no-untyped-call]
        except ValueError:
            return None

    def _give_back(self, claimed: str, path: str) -> None:
        """Put an incomplete message back for a later poll, or set it aside once it is old."""
        age = time.time() - os.stat(claimed).st_mtime
        if age < INCOMPLETE_GRACE_SECONDS:
            os.rename(claimed, path)
            return
        os.rename(claimed, f"{path}.bad")
        log.error("broker message %s does not parse %.0f s after it was written: set aside as .bad", path, age)

    def _dispose(self, claimed: str, filename: str) -> None:
        """Keep a read message in the processed folder when asked to (kombu's option), else delete it."""
        if self.store_processed:
            shutil.move(claimed, os.path.join(self.processed_folder, filename))
        else:
            os.remove(claimed)


class Transport(filesystem.Transport):
    """kombu's filesystem transport with ``Channel`` above."""

    Channel = Channel
