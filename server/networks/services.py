"""Network actions: uploading a model file, parsing it (now or in the trainer), reading back its graph.

An upload up to ``LATENCYLAB_PARSE_INLINE_MAX_BYTES`` (and, for ONNX, ``PARSE_INLINE_MAX_NODES``
nodes) is parsed while its request waits (``upload_model``). A bigger one is only stored (``receive_model`` answers a row in state
``parsing`` at once) and the trainer parses it (``parse_stored_model``, sent by name through
``server.taskqueue.send_model_parse``): parsing a 75 MB graph JSON takes half a minute of a
core and gigabytes of memory, which a web worker must not spend while other requests wait.
The row is the truth: the trainer re-sends the parse of every row still ``parsing`` when it
starts (``resend_parsing_models``), so a lost message only delays a parse.

A parse that fails leaves the row ``failed`` with the reason a synchronous upload would have
answered (node and operator named) and removes the stored file, which no job can use; the same
bytes uploaded again replace the failed row. Deleting a row deletes its file (``signals``).
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile, File
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from devicelab.graph import (
    Graph,
    GraphError,
    ImportLimits,
    LimitExceeded,
    detect_format,
    graph_from_dict,
    graph_to_dict,
    load_graph,
)
from devicelab.graph.limits import NO_LIMITS
from devicelab.graph.opaque import opaque_refusal
from server.accounts.models import Team
from server.api.parsers import MAX_JSON_DEPTH
from server.leases import LeaseKeeper, sweep_lapsed
from server.networks.models import ModelState, NetworkModel
from server.taskqueue import send_after_commit, send_model_parse, try_send

log = logging.getLogger(__name__)

# Multipart framing and a form's other fields ride on top of the model file itself.
UPLOAD_FRAMING_BYTES = 64 * 1024
# An ONNX file under LATENCYLAB_PARSE_INLINE_MAX_BYTES can still hold 10**5 nodes (4 MB), and an
# import takes time linear in its nodes (70 us each, storing the graph as much again: 33 s of a
# web request for 10**5): a request parses at most this many nodes, and leaves a bigger model to
# the trainer as it does a bigger file. The inline bound is one of work, not of bytes.
PARSE_INLINE_MAX_NODES = 10_000
# Parses whose trainer was lost (its lease ran out) are sent again this many times in all.
MAX_PARSE_ATTEMPTS = 3
# How much of a file ``detect_format`` needs to tell the formats apart (leading whitespace of JSON).
_HEAD_BYTES = 4096


class UploadTooLarge(ValidationError):
    """An upload over ``LATENCYLAB_MAX_UPLOAD_BYTES`` (the API answers 413)."""

    http_status = 413  # read by server/api/exceptions.py


class BadModel(ValidationError):
    """A file LatencyLab cannot read as a network; ``graph_error`` says where and why."""

    def __init__(self, message: str, graph_error: GraphError | None = None) -> None:
        super().__init__(message, code="bad_model")
        self.graph_error = graph_error

    def api_details(self) -> dict[str, Any]:
        """What the API's 400 adds beside ``detail`` (server/api/exceptions.py): the node, op and reason."""
        return {} if self.graph_error is None else {"error": self.graph_error.as_dict()}


# Which setting raises each import limit, named in the refusal so an admin knows what to change.
LIMIT_SETTINGS = {
    "max_tensor_elements": "LATENCYLAB_MAX_MODEL_ELEMENTS",
    "max_folded_elements": "LATENCYLAB_MAX_FOLDED_ELEMENTS",
    "max_operators": "LATENCYLAB_MAX_MODEL_OPERATORS",
}


def import_limits() -> ImportLimits:
    """The bounds of every model import on this server, from its settings."""
    return ImportLimits(
        max_tensor_elements=settings.LATENCYLAB_MAX_MODEL_ELEMENTS,
        max_folded_elements=settings.LATENCYLAB_MAX_FOLDED_ELEMENTS,
        max_operators=settings.LATENCYLAB_MAX_MODEL_OPERATORS,
    )


def too_large_message(size: int) -> str:
    """The one refusal of an upload over the limit (API, dashboard, by declared or real size)."""
    limit = settings.LATENCYLAB_MAX_UPLOAD_BYTES
    return f"the upload is {size} bytes; the limit is {limit} bytes (LATENCYLAB_MAX_UPLOAD_BYTES)"


def check_upload_size(size: int) -> None:
    """Raise ``UploadTooLarge`` naming the limit when ``size`` bytes is over it."""
    if size > settings.LATENCYLAB_MAX_UPLOAD_BYTES:
        raise UploadTooLarge(too_large_message(size), code="too_large")


def check_declared_size(content_length: str | None) -> None:
    """Raise ``UploadTooLarge`` when a request's ``Content-Length`` is over the limit with room for
    multipart framing and a form's other fields: checked before the body is read, so nobody
    receives 2 GB to say it is too big."""
    try:
        declared = int(content_length or 0)
    except ValueError:
        return  # the server reading the body finds out its real size
    if declared > settings.LATENCYLAB_MAX_UPLOAD_BYTES + UPLOAD_FRAMING_BYTES:
        raise UploadTooLarge(too_large_message(declared), code="too_large")


def _parse(data: bytes, filename: str, reraise: tuple[type[BaseException], ...] = ()) -> tuple[Graph, str]:
    """The graph and format of uploaded bytes, or ``BadModel`` with a reason a person can act on.

    ``reraise``: exceptions that pass through unchanged (a task's soft time limit).
    """
    if not data:
        raise BadModel(f"the file {filename!r} is empty")
    try:
        fmt = detect_format(data, filename)
        return load_graph(data, filename=filename, fmt=fmt, limits=import_limits()), fmt
    except reraise:
        raise
    except LimitExceeded as exc:
        raise BadModel(
            f"cannot read {filename!r} as a network: {exc} ({LIMIT_SETTINGS[exc.limit]})", graph_error=exc
        ) from None
    except GraphError as exc:
        raise BadModel(f"cannot read {filename!r} as a network: {exc}", graph_error=exc) from None
    except RecursionError:
        # graph JSON nested past Python's recursion limit: the API's depth limit says what to fix
        raise BadModel(
            f"cannot read {filename!r} as a network: it nests more than {MAX_JSON_DEPTH} levels deep"
        ) from None
    except Exception as exc:  # noqa: BLE001 - a reader's bug must still give the uploader a 4xx
        # The readers promise GraphError for bad input; anything else is logged as their bug,
        # while the uploader still learns that the file was refused and why.
        log.exception("model reader failed on %r", filename)
        raise BadModel(f"cannot read {filename!r} as a network: {type(exc).__name__}: {exc}") from None


def _graph_fields(graph: Graph) -> dict[str, Any]:
    """The columns a parsed graph fills in: the graph itself, its summary and its costs."""
    summary = graph.summary()
    return {
        "graph": graph_to_dict(graph),
        "summary": summary,
        "macs": summary["macs"],
        "flops": summary["flops"],
        "params": summary["params"],
        "num_operators": summary["num_operators"],
    }


def _clean_filename(filename: str | None) -> str:
    return (Path(filename or "model").name or "model")[:255]


def _existing(team: Team, digest: str) -> NetworkModel | None:
    """The team's row for these bytes; a failed one is deleted (the new upload replaces it: the
    limits may have been raised since) and None returned."""
    existing = NetworkModel.objects.filter(team=team, sha256=digest).first()
    if existing is not None and existing.state == ModelState.FAILED:
        existing.delete()
        return None
    return existing


def _uploader(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def upload_model(
    team: Team, user: Any, data: bytes, filename: str, name: str | None = None
) -> tuple[NetworkModel, bool]:
    """Store a network for ``team``, parsed now; return ``(model, created)``.

    Parses the bytes (ONNX, TFLite or graph JSON) and refuses them with ``BadModel`` naming
    the node, operator and reason; the same bytes already uploaded by the team return the
    existing row with ``created=False``.
    """
    check_upload_size(len(data))
    filename = _clean_filename(filename)
    digest = hashlib.sha256(data).hexdigest()
    existing = _existing(team, digest)
    if existing is not None:
        return existing, False
    graph, fmt = _parse(data, filename)
    model = NetworkModel(
        team=team,
        name=(name or "").strip()[:200] or graph.name or Path(filename).stem,
        filename=filename,
        format=fmt,
        size_bytes=len(data),
        sha256=digest,
        state=ModelState.READY,
        parsed_at=timezone.now(),
        created_by=_uploader(user),
        **_graph_fields(graph),
    )
    model.file.save(f"{digest}.{fmt}", ContentFile(data), save=False)
    try:
        with transaction.atomic():
            model.save()
    except IntegrityError:
        # A concurrent upload of the same bytes won the unique (team, sha256): use its row.
        model.file.delete(save=False)
        return NetworkModel.objects.get(team=team, sha256=digest), False
    return model, True


def receive_model(
    team: Team, user: Any, source: bytes | File, filename: str, name: str | None = None
) -> tuple[NetworkModel, bool]:
    """Store a network for ``team`` (bytes, or an uploaded file Django may have spooled to disk);
    return ``(model, created)``.

    Up to ``LATENCYLAB_PARSE_INLINE_MAX_BYTES`` it is ``upload_model``: parsed now, refused with
    ``BadModel``. A bigger one is hashed and stored without being read into memory (a spooled
    upload is moved, not copied), and its row answered in state ``parsing``; the trainer parses
    it once the row is committed. Its name is ``name``, else the file's name.
    """
    size = len(source) if isinstance(source, bytes) else int(source.size or 0)
    check_upload_size(size)
    if size <= settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES or size == 0:
        data = source if isinstance(source, bytes) else source.read()
        if not _too_much_work_inline(data, filename):
            return upload_model(team, user, data, filename, name=name)
    filename = _clean_filename(filename)
    content = ContentFile(source) if isinstance(source, bytes) else source
    hasher = hashlib.sha256()
    head = b""
    content.seek(0)
    for chunk in content.chunks():
        hasher.update(chunk)
        if len(head) < _HEAD_BYTES:
            head += chunk[: _HEAD_BYTES - len(head)]
    digest = hasher.hexdigest()
    existing = _existing(team, digest)
    if existing is not None:
        return existing, False
    fmt = detect_format(head, filename)
    model = NetworkModel(
        team=team,
        name=(name or "").strip()[:200] or Path(filename).stem,
        filename=filename,
        format=fmt,
        size_bytes=size,
        sha256=digest,
        state=ModelState.PARSING,
        created_by=_uploader(user),
    )
    model.file.save(f"{digest}.{fmt}", content, save=False)
    try:
        with transaction.atomic():
            model.save()
            send_after_commit(send_model_parse, model.pk, **_parse_pending(model.pk))
    except IntegrityError:
        model.file.delete(save=False)
        return NetworkModel.objects.get(team=team, sha256=digest), False
    return model, True


def _too_much_work_inline(data: bytes, filename: str) -> bool:
    """Whether parsing ``data`` would hold a web request too long (an ONNX model of more than
    ``PARSE_INLINE_MAX_NODES`` nodes): the trainer parses it instead."""
    try:
        if detect_format(data[:_HEAD_BYTES], filename) != "onnx":
            return False
    except GraphError:
        return False
    from devicelab.graph.onnx import count_onnx_nodes  # onnx is a heavy import; only uploads need it

    nodes = count_onnx_nodes(data, PARSE_INLINE_MAX_NODES)
    return nodes is not None and nodes > PARSE_INLINE_MAX_NODES


def dispatch_parse(model_id: int) -> bool:
    """Send the parse of a stored upload to the trainer; False (logged) when the broker cannot
    take it: the row stays ``parsing`` and the trainer sends it again when it starts."""
    return try_send(send_model_parse, model_id, **_parse_pending(model_id))


def _parse_pending(model_id: int) -> dict[str, str]:
    """What a parse that could not be sent leaves behind, and who sends it again."""
    return {"what": f"model {model_id} stays parsing", "then": "the trainer sends its parse again when it starts"}


def resend_parsing_models(uploaded_before: datetime | None = None) -> list[int]:
    """Send the parse of every network still ``parsing`` that no trainer holds again (uploaded
    before ``uploaded_before``, when given): the trainer does at its start, and while it is idle
    (a message lost with a broker restart must not leave a row parsing forever). A parse a
    trainer holds is the sweep's (``sweep_lost_parses``) once its lease runs out."""
    pending = NetworkModel.objects.waiting_for_parse()
    if uploaded_before is not None:
        pending = pending.filter(created_at__lt=uploaded_before)
    ids = list(pending.order_by("created_at").values_list("pk", flat=True))
    sent = [pk for pk in ids if dispatch_parse(pk)]
    if ids:
        log.info("re-sent the parse of %d network(s) still parsing: %s", len(sent), sent)
    return sent


def delete_stored_file(name: str) -> None:
    """Remove a stored model file once the transaction that let go of it committed."""

    def delete() -> None:
        try:
            NetworkModel.file.field.storage.delete(name)  # type: ignore[attr-defined]
        except OSError as exc:
            log.warning("could not delete the stored model file %s: %s", name, exc)

    if name:
        transaction.on_commit(delete, robust=True)


def fail_model_parse(model_id: int, reason: str) -> bool:
    """Mark a network still ``parsing`` as ``failed`` with ``reason`` and remove its stored file;
    False when it was no longer parsing (parsed, failed or deleted meanwhile)."""
    row = NetworkModel.objects.filter(pk=model_id).only("pk", "file").first()
    failed = NetworkModel.objects.filter(pk=model_id, state=ModelState.PARSING).update(
        state=ModelState.FAILED, failure_reason=reason, file="", parsed_at=timezone.now()
    )
    if failed and row is not None:
        delete_stored_file(row.file.name or "")
        log.info("model %s: parse failed: %s", model_id, reason)
    return bool(failed)


def parse_stored_model(model_id: int, reraise: tuple[type[BaseException], ...] = ()) -> NetworkModel | None:
    """Parse a stored upload (the trainer's task): the row becomes ``ready`` with its graph, or
    ``failed`` with the reason a synchronous upload would have been refused with. None when no
    row of that id is parsing (done already: a duplicate message does nothing).

    ``reraise``: exceptions that pass through unchanged (the task's soft time limit).
    """
    lease = float(settings.LATENCYLAB_TRAINING_LEASE_SECONDS)
    waiting = NetworkModel.objects.waiting_for_parse().filter(pk=model_id)
    if not waiting.update(
        parse_attempts=F("parse_attempts") + 1, parse_lease_until=timezone.now() + timedelta(seconds=lease)
    ):
        return None  # parsed, failed, deleted, or another trainer holds it
    row = NetworkModel.objects.get(pk=model_id)
    with LeaseKeeper(
        lambda: _renew_parse_lease(model_id, lease), every=lease / 4, what=f"the parse of model {model_id}"
    ):
        _parse_held(row, reraise)
    return NetworkModel.objects.listed().filter(pk=model_id).first()


def _renew_parse_lease(model_id: int, lease: float) -> bool:
    """Extend the lease of a parse in progress; False once it is no longer parsing."""
    return bool(
        NetworkModel.objects.parsing()
        .filter(pk=model_id, parse_lease_until__isnull=False)
        .update(parse_lease_until=timezone.now() + timedelta(seconds=lease))
    )


def _parse_held(row: NetworkModel, reraise: tuple[type[BaseException], ...]) -> None:
    """Parse the stored upload of ``row`` (whose lease this trainer holds): ready with its graph,
    or failed saying why."""
    model_id = row.pk
    filename = row.filename or Path(row.file.name or "model").name
    try:
        try:
            with row.file.open("rb") as f:
                data = f.read()
        except (OSError, ValueError) as exc:
            raise BadModel(f"the stored file of {filename!r} cannot be read ({exc}); upload it again") from None
        graph, _ = _parse(data, filename, reraise=reraise)
        del data
        fields = _graph_fields(graph)
        del graph
        try:
            NetworkModel.objects.filter(pk=model_id, state=ModelState.PARSING).update(
                state=ModelState.READY, failure_reason="", parsed_at=timezone.now(), **fields
            )
        except DatabaseError as exc:
            raise BadModel(f"the graph of {filename!r} was read but could not be stored: {exc}") from None
    except BadModel as exc:
        fail_model_parse(model_id, " ".join(exc.messages))
    except reraise:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever stopped it, the row must not stay parsing
        log.exception("model %s: parsing %r stopped", model_id, filename)
        fail_model_parse(model_id, f"parsing {filename!r} stopped on a server error ({type(exc).__name__}: {exc})")


def sweep_lost_parses(now: datetime | None = None) -> list[int]:
    """Parses whose lease ran out (their whole trainer was killed or restarted mid-parse; a pool
    process that dies fails its parse at once, ``server.networks.tasks``) are sent again, or
    failed saying why after ``MAX_PARSE_ATTEMPTS`` attempts. Returns their ids. Run by every
    trainer's sweeper; the conditional updates do the work once."""
    now = now or timezone.now()
    return sweep_lapsed(
        NetworkModel.objects.parsing().filter(parse_lease_until__lt=now),
        held_by="parse_attempts",
        attempts="parse_attempts",
        max_attempts=MAX_PARSE_ATTEMPTS,
        lost="the trainer stopped while parsing",
        requeued=lambda why: {"parse_lease_until": None},
        failed=lambda why: {
            "state": ModelState.FAILED,
            "failure_reason": f"{why}: the file may be what stops it; check it, or upload it again",
            "parsed_at": now,
            "parse_lease_until": None,
        },
        dispatch=dispatch_parse,
        on_failed=_drop_stored_file,
    )


def _drop_stored_file(model_id: int) -> None:
    """Remove the stored file of a network whose parse failed (a failed network keeps no file)."""
    row = NetworkModel.objects.filter(pk=model_id).only("pk", "file").first()
    if row is not None and row.file.name:
        NetworkModel.objects.filter(pk=model_id).update(file="")
        delete_stored_file(row.file.name)


def model_not_ready_message(model: NetworkModel) -> str:
    """Why no job can profile ``model`` yet (parsing) or at all (failed)."""
    if model.state == ModelState.PARSING:
        return (
            f"model #{model.pk} ({model.name}) is still being parsed; submit the job once it is ready "
            f"(GET /api/models/{model.pk}/ shows its state)"
        )
    return (
        f"model #{model.pk} ({model.name}) could not be parsed: {model.failure_reason}; "
        "upload a file LatencyLab can read"
    )


# What a device registered before devices declared capabilities runs, by kind (else the IR).
_FORMATS_BY_KIND = {"android": ("tflite",), "cpu": ("onnx",)}


def check_model_runs_on(model: NetworkModel, device: Any) -> None:
    """Refuse (``ValidationError`` on ``model``) a job of a model with operators outside the graph
    IR on a device that does not run the uploaded file itself (OpenCL), naming the operator."""
    if model.graph is None or "opaque" not in ((model.summary or {}).get("op_types") or {}):
        return
    capabilities = device.declared_capabilities()
    formats = capabilities.formats if capabilities is not None else _FORMATS_BY_KIND.get(device.kind, ("ir",))
    reason = opaque_refusal(model.graph.get("operators") or [], model.format, formats)
    if reason is not None:
        raise ValidationError(
            {"model": f"device {device.name!r} (#{device.pk}) cannot run model #{model.pk}: {reason}"}
        )


def model_graph(model: NetworkModel) -> Graph:
    """The stored graph of a network as a devicelab ``Graph``, to show (see ``NO_LIMITS``)."""
    return graph_from_dict(model.graph, NO_LIMITS)


def operator_table_shown(model: NetworkModel) -> bool:
    """Whether pages and the API show a model's operator table: it is parsed and has at most
    ``LATENCYLAB_OPERATOR_TABLE_MAX`` operators. A table of a million operators would take one
    request tens of seconds and gigabytes; the totals and counts per type are shown instead."""
    count = model.num_operators or 0
    return model.is_ready and count <= settings.LATENCYLAB_OPERATOR_TABLE_MAX


def operator_table(model: NetworkModel) -> list[dict[str, Any]]:
    """One row per operator (index, name, type, shapes, attrs, MACs, FLOPs, params); empty until
    the network is parsed, and for a model too big to show (``operator_table_shown``)."""
    if not operator_table_shown(model) or model.graph is None:
        return []
    return model_graph(model).op_table()
