"""Results waiting on the lab machine's disk for the server to take them.

A device process that cannot post a result (the server is down or restarting) keeps it here, one
file per claimed attempt, written atomically. The agent posts what waits at its start and then
with growing pauses until the server answers, or until the claim has expired (the server has by
then given the job to another attempt, and would refuse it). The post is idempotent, so a result
whose answer was lost is posted again safely: it is answered ``already-stored``. Several waiting
results go to the server together (``POST /api/lab/results``), which stores them in one
transaction and answers each.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from devicelab.lab_protocol import BatchedResult, ResultBatch, ResultPost, as_json
from workers.server_api import LabServer, Refused, ServerUnreachable, Unsendable

log = logging.getLogger("latencylab.workers")

# The pauses between two rounds of posting what waits, growing while the server stays away.
BACKOFF_SECONDS = (1.0, 60.0)
# Results posted in one batch at most (a 300-operator profile is some 60 KB of JSON).
BATCH_RESULTS = 20


@dataclass(frozen=True)
class Waiting:
    """One result on the disk."""

    path: Path
    job_id: int
    post: ResultPost
    expires_at: float  # time.time() after which the server will have re-queued the job


class Outbox:
    """A folder of results the server has not taken yet."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.pause = BACKOFF_SECONDS[0]
        self.next_round = 0.0

    def keep(self, job_id: int, post: ResultPost, expires_at: float) -> Path:
        """Keep a result until the server takes it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"job-{job_id}-attempt-{post.attempt}.json"
        doc = {"job": job_id, "expires_at": expires_at, "post": as_json(post)}
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".part-")
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(doc))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return path

    def holds(self, job_id: int) -> bool:
        """Whether a result of job ``job_id`` waits here."""
        return any(self.folder.glob(f"job-{job_id}-attempt-*.json"))

    def waiting(self) -> list[Waiting]:
        """The results on the disk, oldest first (unreadable files are set aside, not lost)."""
        found = []
        for path in sorted(self.folder.glob("job-*.json"), key=lambda p: p.stat().st_mtime):
            try:
                doc = json.loads(path.read_text())
                found.append(
                    Waiting(path, int(doc["job"]), ResultPost.from_dict(doc["post"]), float(doc["expires_at"]))
                )
            except (OSError, ValueError, KeyError) as exc:
                log.error("outbox file %s cannot be read (%s); moved aside", path, exc)
                path.rename(path.with_suffix(".unreadable"))
        return found

    def deliver(self, server: LabServer, now: float | None = None) -> int:
        """Post what waits; returns how many are still waiting (the server did not answer). Several
        go in batches (``POST /api/lab/results``: one transaction on the server, one answer each);
        a server that refuses the batch (one that predates it) gets them one by one."""
        live = []
        for w in self.waiting():
            if (now or time.time()) > w.expires_at:
                log.error(
                    "job %s: its result waited past its claim (the server was unreachable); dropped %s",
                    w.job_id,
                    w.path.name,
                )
                w.path.unlink(missing_ok=True)
            else:
                live.append(w)
        if len(live) < 2:
            return self._post_each(server, live)
        left = 0
        for start in range(0, len(live), BATCH_RESULTS):
            chunk = live[start : start + BATCH_RESULTS]
            batch = ResultBatch([BatchedResult.of(w.job_id, w.post) for w in chunk])
            try:
                answers = server.post_results(batch).answers
            except ServerUnreachable as exc:
                log.warning("%d waiting results: the server still does not take them (%s)", len(chunk), exc)
                left += len(chunk)
                continue
            except (Refused, Unsendable) as exc:
                log.info("%d waiting results cannot go as a batch (%s); posting them one by one", len(chunk), exc)
                left += self._post_each(server, chunk)
                continue
            if [a.job for a in answers] != [w.job_id for w in chunk]:  # not this batch's answer: one by one
                left += self._post_each(server, chunk)
                continue
            for w, answer in zip(chunk, answers, strict=True):
                left += self._settle(w, answer.outcome, answer.message)
        return left

    def _post_each(self, server: LabServer, waiting: list[Waiting]) -> int:
        """Post results one by one; returns how many are still waiting."""
        left = 0
        for w in waiting:
            try:
                answer = server.post_result(w.job_id, w.post)
            except ServerUnreachable as exc:
                log.warning("job %s: the server still does not take its result (%s)", w.job_id, exc)
                left += 1
                continue
            except (Refused, Unsendable) as exc:
                left += self._settle(w, "refused", str(exc))
                continue
            left += self._settle(w, answer.outcome, answer.message)
        return left

    def _settle(self, w: Waiting, outcome: str, message: str) -> int:
        """Act on the server's answer about one result: 1 when it still waits, else 0 (dropped)."""
        if outcome == "unstored":  # the server failed to store it: posted again next round
            log.warning("job %s: the server could not store its waiting result (%s); kept", w.job_id, message)
            return 1
        if outcome == "refused":
            log.error("job %s: its waiting result cannot be posted: %s; dropped", w.job_id, message)
        else:
            log.info("job %s: its waiting result was delivered: %s", w.job_id, outcome)
        w.path.unlink(missing_ok=True)
        return 0

    def due(self) -> bool:
        """Whether a round of posting is due (growing pauses while the server stays away)."""
        return time.monotonic() >= self.next_round and any(self.folder.glob("job-*.json"))

    def round(self, server: LabServer) -> int:
        """One round of ``deliver`` that sets the pause before the next; returns what is left."""
        left = self.deliver(server)
        self.pause = BACKOFF_SECONDS[0] if not left else min(self.pause * 2, BACKOFF_SECONDS[1])
        self.next_round = time.monotonic() + self.pause
        return left


__all__ = ["BACKOFF_SECONDS", "BATCH_RESULTS", "Outbox", "Waiting"]
