"""Network actions: uploading a model file and reading back its graph."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction

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
from server.accounts.models import Team
from server.networks.models import NetworkModel

log = logging.getLogger(__name__)


class UploadTooLarge(ValidationError):
    """An upload over ``LATENCYLAB_MAX_UPLOAD_BYTES`` (the API answers 413)."""


class BadModel(ValidationError):
    """A file LatencyLab cannot read as a network; ``graph_error`` says where and why."""

    def __init__(self, message: str, graph_error: GraphError | None = None) -> None:
        super().__init__(message, code="bad_model")
        self.graph_error = graph_error


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


def check_upload_size(size: int) -> None:
    """Raise ``UploadTooLarge`` naming the limit when ``size`` bytes is over it."""
    limit = settings.LATENCYLAB_MAX_UPLOAD_BYTES
    if size > limit:
        raise UploadTooLarge(
            f"the upload is {size} bytes; the limit is {limit} bytes (LATENCYLAB_MAX_UPLOAD_BYTES)", code="too_large"
        )


def _parse(data: bytes, filename: str) -> tuple[Graph, str]:
    """The graph and format of uploaded bytes, or ``BadModel`` with a reason a person can act on."""
    if not data:
        raise BadModel(f"the file {filename!r} is empty")
    try:
        fmt = detect_format(data, filename)
        return load_graph(data, filename=filename, fmt=fmt, limits=import_limits()), fmt
    except LimitExceeded as exc:
        raise BadModel(
            f"cannot read {filename!r} as a network: {exc} ({LIMIT_SETTINGS[exc.limit]})", graph_error=exc
        ) from None
    except GraphError as exc:
        raise BadModel(f"cannot read {filename!r} as a network: {exc}", graph_error=exc) from None
    except Exception as exc:  # noqa: BLE001 - a reader's bug must still give the uploader a 4xx
        # The readers promise GraphError for bad input; anything else is logged as their bug,
        # while the uploader still learns that the file was refused and why.
        log.exception("model reader failed on %r", filename)
        raise BadModel(f"cannot read {filename!r} as a network: {type(exc).__name__}: {exc}") from None


def upload_model(
    team: Team, user: Any, data: bytes, filename: str, name: str | None = None
) -> tuple[NetworkModel, bool]:
    """Store a network for ``team``; return ``(model, created)``.

    Parses the bytes (ONNX, TFLite or graph JSON) and refuses them with ``BadModel`` naming
    the node, operator and reason; the same bytes already uploaded by the team return the
    existing row with ``created=False``.
    """
    check_upload_size(len(data))
    filename = Path(filename or "model").name or "model"
    digest = hashlib.sha256(data).hexdigest()
    existing = NetworkModel.objects.filter(team=team, sha256=digest).first()
    if existing is not None:
        return existing, False
    graph, fmt = _parse(data, filename)
    summary = graph.summary()
    model = NetworkModel(
        team=team,
        name=(name or "").strip()[:200] or graph.name or Path(filename).stem,
        format=fmt,
        size_bytes=len(data),
        sha256=digest,
        graph=graph_to_dict(graph),
        summary=summary,
        macs=summary["macs"],
        flops=summary["flops"],
        params=summary["params"],
        num_operators=summary["num_operators"],
        created_by=user if getattr(user, "is_authenticated", False) else None,
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


def model_graph(model: NetworkModel) -> Graph:
    """The stored graph of a network as a devicelab ``Graph``, to show (see ``NO_LIMITS``)."""
    return graph_from_dict(model.graph, NO_LIMITS)


def operator_table(model: NetworkModel) -> list[dict[str, Any]]:
    """One row per operator (index, name, type, shapes, attrs, MACs, FLOPs, params)."""
    return model_graph(model).op_table()
