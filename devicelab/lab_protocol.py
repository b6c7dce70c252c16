"""The lab protocol: what a lab machine and the server say to each other over HTTP.

A lab machine holds a server URL and a lab token (``Authorization: Lab <token>``) and nothing
else of the server's: no database, no shared folder. Celery still carries the job ids to the
device queues; everything else is one of these records, posted as JSON to ``/api/lab/...`` and
read back with ``devicelab.wire`` (a missing, mistyped or unknown key is refused naming its path).

The calls, in the order a worker makes them:

* ``GET /api/lab/hello`` (-> ``Hello``): the token is good; the machine's name as the server knows it.
* ``POST /api/lab/devices`` (``Registration`` -> ``Registered``): the devices it found, under the
  machine's name (``NAME`` or ``NAME#instance``); at a run's start the server also re-queues what
  an earlier run of the machine left running.
* ``POST /api/lab/heartbeat`` (``Heartbeat`` -> ``HeartbeatAnswer``), every
  ``heartbeat_seconds``; ``POST /api/lab/devices/gone`` (``DevicesGone``) for a phone unplugged or
  a machine stopping.
* ``POST /api/lab/jobs/<id>/claim`` (``Claim`` -> ``ClaimAnswer``): the conditional claim
  (``queued -> running`` once) and, when it is this run's, what the job needs (``ClaimedJob``).
* ``GET /api/lab/files/<sha256>``: the model file of a job the run holds, streamed.
* ``POST /api/lab/jobs/<id>/progress`` (``Progress`` -> ``ProgressAnswer``): ``go_on`` false when
  the job was cancelled or taken over.
* ``POST /api/lab/jobs/<id>/result`` (``ResultPost`` -> ``ResultAnswer``): one result per claimed
  attempt, idempotent; ``.../fail`` and ``.../retry`` (``Outcome``) for the other ends of a job.
* ``POST /api/lab/results`` (``ResultBatch`` -> ``ResultBatchAnswer``): several results at once,
  stored in one transaction, each answered on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from devicelab.backends.base import DeviceInfo
from devicelab.wire import JsonDict, JsonRecord, OwnJson

PROTOCOL_VERSION = 1
AUTH_KEYWORD = "Lab"

# The task the server sends with a job id on a device's queue; the lab machine registers it.
PROFILING_TASK = "workers.tasks.run_profiling_job"

# The kinds of job a lab machine runs, and so the kinds of result it posts.
JobKind = Literal["profile", "fusion_sweep", "fusion_plan", "sharing_sweep", "remote_scenario", "online_schedule"]


@dataclass(frozen=True)
class Hello(JsonRecord):
    """Who the token belongs to: the lab machine's name, which its workers register under."""

    machine: str
    version: int = PROTOCOL_VERSION

    json_name = "hello"


@dataclass(frozen=True)
class Registration(JsonRecord):
    """Devices a lab machine serves (``start``: the first registration of a run, whose earlier
    runs' unfinished jobs go back to the queue)."""

    worker: str  # the machine's name, or NAME#instance for a second agent on the machine
    run: str  # this run's token: its claims carry it
    devices: list[Annotated[DeviceInfo, OwnJson("a device")]]
    start: bool = False
    version: int = PROTOCOL_VERSION

    json_name = "registration"


@dataclass(frozen=True)
class RegisteredDevice(JsonRecord):
    """A device row the server holds for a registered device."""

    pk: int
    identity: str
    queue: str  # the Celery queue its jobs arrive on


@dataclass(frozen=True)
class Registered(JsonRecord):
    """The server's answer to a registration, with the timings the machine must keep."""

    worker: str
    devices: list[RegisteredDevice]
    requeued: list[int]  # jobs an earlier run left running, queued again
    heartbeat_seconds: int
    offline_after_seconds: int
    task_time_limit: int  # seconds a job may run before its process is killed

    json_name = "registration answer"


@dataclass(frozen=True)
class Heartbeat(JsonRecord):
    """The devices of a machine that are there now; ``restarting``: those of them whose measuring
    process is down, waiting out its restart back-off (nothing in their queue is lost: it waits
    for the process, so the server sends no message of theirs again)."""

    worker: str
    run: str
    identities: list[str]
    restarting: list[str] = field(default_factory=list)

    json_name = "heartbeat"


@dataclass(frozen=True)
class HeartbeatAnswer(JsonRecord):
    """How many of the devices the server heard of; ``gone``: those of the named devices it holds
    offline because this machine said they left it (a run found its phone unplugged). A heartbeat
    does not bring such a device back, as the machine's list may predate the unplug: the machine
    looks again and registers the device anew if it is there."""

    devices: int
    gone: list[str] = field(default_factory=list)

    json_name = "heartbeat answer"


@dataclass(frozen=True)
class DevicesGone(JsonRecord):
    """Devices that left (device pk as text -> why), or every device when the machine stops."""

    worker: str
    run: str
    reasons: dict[str, str]

    json_name = "devices gone"


@dataclass(frozen=True)
class Claim(JsonRecord):
    """A run asks for a job its device's queue delivered. ``peek``: only ask whether the claim
    would be worth making (answered ``claimable``, or the refusal a claim would get, changing
    nothing): a device process asks so before it spends a process on the message. ``key``: one
    per claiming call, the same when the call is made again because its answer was lost: the
    server answers it again instead of taking it for an attempt whose process died."""

    run: str
    device: int
    peek: bool = False
    key: str = ""

    json_name = "claim"


@dataclass(frozen=True)
class ModelRef(JsonRecord):
    """The uploaded file a job runs as uploaded, fetched by its hash."""

    sha256: str
    size: int
    format: str
    filename: str

    def path(self) -> str:
        """Where the file is fetched from, under the server's URL."""
        return f"/api/lab/files/{self.sha256}"


@dataclass(frozen=True)
class ClaimedJob(JsonRecord):
    """What a claimed job needs on the lab machine."""

    id: int
    kind: JobKind
    attempt: int
    device: int
    settings: JsonDict
    graph: JsonDict | None  # the model's graph (a profile, a remote scenario)
    model: ModelRef | None  # the uploaded file, for a device that runs uploads as they are
    graphs: list[JsonDict] = field(default_factory=list)  # a fusion job's networks
    plan_rows: list[JsonDict] | None = None  # a fusion plan's sweep rows (None: measure its own)
    import_limits: dict[str, int] = field(default_factory=dict)  # the server's model-import bounds
    claim_seconds: int = 0  # how long the claim holds: a result posted later is refused
    # The run reports progress at least every quarter of this (again the last, when the backend
    # says nothing new): a running job silent for longer is taken for lost and queued again.
    lease_seconds: int = 0

    json_name = "claimed job"


ClaimOutcome = Literal["claimed", "claimable", "missing", "elsewhere", "not-queued", "lost", "offline"]


@dataclass(frozen=True)
class ClaimAnswer(JsonRecord):
    """Whether the run got the job: ``claimed`` (with ``job``), or why not."""

    outcome: ClaimOutcome
    message: str = ""
    job: ClaimedJob | None = None

    json_name = "claim answer"


@dataclass(frozen=True)
class Progress(JsonRecord):
    """How far a claimed job has come."""

    run: str
    fraction: float
    message: str = ""

    json_name = "progress"


@dataclass(frozen=True)
class ProgressAnswer(JsonRecord):
    """False: the job was cancelled or is no longer the run's: stop."""

    go_on: bool


@dataclass(frozen=True)
class ResultPost(JsonRecord):
    """The result of a claimed attempt; ``result`` is the kind's record (``ProfileRecord``,
    ``FusionSweepRecord``, ``FusionPlanRecord``, ``SharingSweepRecord``, ``RemoteRunRecord``)."""

    run: str
    attempt: int
    kind: JobKind
    result: JsonDict

    json_name = "result"

    def as_dict(self) -> JsonDict:
        """Plain data for JSON; ``result`` is already the record's JSON and is not walked again
        (a 300-operator profile holds some 20,000 values)."""
        return {"run": self.run, "attempt": self.attempt, "kind": self.kind, "result": self.result}


ResultOutcome = Literal["stored", "already-stored", "not-yours"]


@dataclass(frozen=True)
class ResultAnswer(JsonRecord):
    """``stored``, ``already-stored`` (a repeated post), or ``not-yours`` (the job was cancelled
    or re-queued and taken by another run: the result is dropped)."""

    outcome: ResultOutcome
    message: str = ""


@dataclass(frozen=True)
class BatchedResult(JsonRecord):
    """One result of a batch: the job's id and what ``ResultPost`` carries."""

    job: int
    run: str
    attempt: int
    kind: JobKind
    result: JsonDict

    json_name = "batched result"

    @classmethod
    def of(cls, job_id: int, post: ResultPost) -> BatchedResult:
        """The batch item of a job's post."""
        return cls(job_id, post.run, post.attempt, post.kind, post.result)

    def post(self) -> ResultPost:
        """The post it carries."""
        return ResultPost(self.run, self.attempt, self.kind, self.result)

    def as_dict(self) -> JsonDict:
        """Plain data for JSON, ``result`` not walked again (``ResultPost.as_dict``)."""
        return {"job": self.job, **self.post().as_dict()}


@dataclass(frozen=True)
class ResultBatch(JsonRecord):
    """Several results posted at once (a lab machine's outbox after the server was away): stored
    in one transaction, each answered on its own."""

    results: list[BatchedResult]

    json_name = "results"

    def as_dict(self) -> JsonDict:
        """Plain data for JSON, the results' records not walked again."""
        return {"results": [item.as_dict() for item in self.results]}


# A batch's answer per result: a single post's outcomes, ``refused`` for what a single post would
# have been refused (400/403: dropped, not posted again), and ``unstored`` when the server failed
# to store it (a single post's 5xx: posted again later).
BatchedOutcome = Literal["stored", "already-stored", "not-yours", "refused", "unstored"]


@dataclass(frozen=True)
class BatchedAnswer(JsonRecord):
    """What became of one result of a batch."""

    job: int
    outcome: BatchedOutcome
    message: str = ""


@dataclass(frozen=True)
class ResultBatchAnswer(JsonRecord):
    """One answer per result of the batch, in its order."""

    answers: list[BatchedAnswer]


@dataclass(frozen=True)
class Ending(JsonRecord):
    """A claimed job that ends without a result: failed, or given back for another attempt."""

    run: str
    reason: str

    json_name = "ending"


@dataclass(frozen=True)
class Outcome(JsonRecord):
    """What became of the job (``failed``, ``retried``, ``not-mine``), or of a device's running
    jobs (``offline``, ``ended``: retried or failed; ``jobs``)."""

    outcome: str
    jobs: list[int] = field(default_factory=list)


def as_json(record: Any) -> JsonDict:
    """A record's JSON object."""
    data = record.as_dict()
    assert isinstance(data, dict)
    return data


__all__ = [
    "AUTH_KEYWORD",
    "BatchedAnswer",
    "BatchedOutcome",
    "BatchedResult",
    "PROFILING_TASK",
    "PROTOCOL_VERSION",
    "Claim",
    "ClaimAnswer",
    "ClaimOutcome",
    "ClaimedJob",
    "DevicesGone",
    "Ending",
    "Heartbeat",
    "HeartbeatAnswer",
    "Hello",
    "JobKind",
    "ModelRef",
    "Outcome",
    "Progress",
    "ProgressAnswer",
    "Registered",
    "RegisteredDevice",
    "Registration",
    "ResultAnswer",
    "ResultBatch",
    "ResultBatchAnswer",
    "ResultOutcome",
    "ResultPost",
    "as_json",
]
