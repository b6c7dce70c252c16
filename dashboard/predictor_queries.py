"""The predictor pages' read queries: which predictor versions a team sees, and how they compare.

A team sees its own predictors and the shared (lab-wide) ones, the same rule as the API
(``Predictor.objects.visible_to``); another team's predictor is never read. Lists never load
the large JSON columns (the artifact, the evaluation with its points): the pages that compare
versions read only the evaluation's small keys, in the database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.db.models.fields.json import KT

from server.accounts.models import Team
from server.devices.models import Device
from server.predictors.models import Predictor, PredictorMethod, PredictorState, rank_reason

# Paper 001's order of the methods (section 4.2), and their short names on charts and tables.
METHOD_ORDER = {m: i for i, m in enumerate(PredictorMethod.values)}
METHOD_NAMES = {"lasso": "Lasso", "rf": "Random forest", "gbdt": "GBDT", "mlp": "MLP"}

PEERS_LIMIT = 100  # ready versions of one scenario shown on a predictor's page


def method_name(method: str) -> str:
    """A method's short name: 'GBDT', 'Lasso'."""
    return METHOD_NAMES.get(method, method)


def finite(value: Any) -> float | None:
    """A stored number as a float, or None when it is missing or not finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _best_key(p: Any) -> tuple[Any, ...]:
    # The order of PredictorQuerySet.best_first among rankable predictors: lowest e2e MAPE, newest version.
    mape = finite(p.e2e_mape)
    return (mape is None, mape if mape is not None else 0.0, -p.version, -p.pk)


# -- the list ----------------------------------------------------------------------------------


def predictor_list(team: Team) -> QuerySet[Predictor]:
    """The predictors a team sees, grouped by device then scenario and method, newest version first;
    without their artifact, evaluation and meta (one query)."""
    return (
        Predictor.objects.visible_to(team)
        .select_related("device")
        .defer("artifact", "evaluation", "meta", "device__hardware")
        .order_by("device__name", "device_id", "scenario_key", "method", "-version", "-pk")
    )


@dataclass(frozen=True)
class DevicePredictors:
    """One device on the predictors page: its predictor versions and the best ready one."""

    device: Device
    predictors: list[Predictor]
    best_id: int | None

    @property
    def ready_count(self) -> int:
        """How many of its versions can answer predictions."""
        return sum(1 for p in self.predictors if p.state == PredictorState.READY)


def best_of(predictors: list[Predictor]) -> Predictor | None:
    """The device's best: the rankable predictor ``POST /api/predict/`` with the device (and no
    method) uses; None when no ready one is rankable (an unranked one then answers, never "best")."""
    rankable = [p for p in predictors if p.rankable]
    return min(rankable, key=_best_key) if rankable else None


def predictors_by_device(team: Team) -> list[DevicePredictors]:
    """Every device with predictors the team sees, its versions and its best ready one (one query)."""
    groups: dict[int, list[Predictor]] = {}
    devices: dict[int, Device] = {}
    for p in predictor_list(team):
        groups.setdefault(p.device_id, []).append(p)
        devices[p.device_id] = p.device
    out = []
    for device_id, rows in groups.items():
        best = best_of(rows)
        out.append(DevicePredictors(devices[device_id], rows, best.pk if best is not None else None))
    return out


# -- one predictor -----------------------------------------------------------------------------


def predictor_for_team(team: Team, pk: int) -> Predictor | None:
    """One predictor the team sees, with its device, owner and evaluation (not its artifact)."""
    return (
        Predictor.objects.visible_to(team)
        .select_related("device", "team", "created_by")
        .defer("artifact")
        .filter(pk=pk)
        .first()
    )


def best_on_device(team: Team, device_id: int) -> int | None:
    """The id of the device's best predictor for the team: the rankable one its predictions use by
    default (one query); None when it has no rankable one."""
    return (
        Predictor.objects.visible_to(team)
        .ready()
        .rankable()
        .filter(device_id=device_id)
        .best_first()
        .values_list("pk", flat=True)
        .first()
    )


@dataclass(frozen=True)
class CurvePoint:
    """One point of MAPE vs training size: training networks and end-to-end MAPE (a fraction)."""

    n: int
    e2e_mape: float


def training_curve(raw: Any) -> list[CurvePoint]:
    """The evaluation's ``by_training_size`` list as points, smallest training set first."""
    points = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        n, mape = item.get("n"), finite(item.get("e2e_mape"))
        if isinstance(n, int) and not isinstance(n, bool) and mape is not None:
            points.append(CurvePoint(n, mape))
    points.sort(key=lambda p: p.n)
    return points


@dataclass
class Peer:
    """A ready version of one device and scenario, as the comparison table and curve show it."""

    pk: int
    method: str
    version: int
    e2e_mape: float | None
    n_train: int
    n_test: int
    trained_at: datetime | None
    shared: bool
    protocol: str
    curve: list[CurvePoint]
    current: bool = False
    best: bool = False
    # MAPE at each of the table's fixed training sizes (None where not evaluated).
    at_sizes: list[float | None] = field(default_factory=list)

    @property
    def label(self) -> str:
        """'GBDT v2'."""
        return f"{method_name(self.method)} v{self.version}"

    @property
    def rank_reason(self) -> str:
        """Why it cannot be ranked ("" when it can)."""
        return rank_reason(PredictorState.READY, self.n_test, self.e2e_mape)


@dataclass
class ScenarioComparison:
    """The ready versions of a predictor's device and scenario, methods in the paper's order."""

    peers: list[Peer]
    sizes: list[int]  # the fixed training sizes of the curves (the full size is e2e MAPE itself)


def scenario_peers(team: Team, predictor: Predictor) -> ScenarioComparison:
    """The ready predictors the team sees for the same device and scenario (one query, reading only
    the evaluation's protocol and training-size curve, never its points)."""
    rows = (
        Predictor.objects.visible_to(team)
        .ready()
        .filter(device_id=predictor.device_id, scenario_key=predictor.scenario_key)
        .order_by("-trained_at", "-pk")
        .values(
            "pk",
            "method",
            "version",
            "e2e_mape",
            "n_train",
            "n_test",
            "trained_at",
            "team_id",
            "evaluation__by_training_size",
        )
        .annotate(protocol=KT("evaluation__protocol"))[:PEERS_LIMIT]
    )
    peers = [
        Peer(
            pk=r["pk"],
            method=r["method"],
            version=r["version"],
            e2e_mape=finite(r["e2e_mape"]),
            n_train=r["n_train"],
            n_test=r["n_test"],
            trained_at=r["trained_at"],
            shared=r["team_id"] is None,
            protocol=r["protocol"] or "",
            curve=training_curve(r["evaluation__by_training_size"]),
            current=r["pk"] == predictor.pk,
        )
        for r in rows
    ]
    peers.sort(key=lambda p: (METHOD_ORDER.get(p.method, len(METHOD_ORDER)), -p.version, -p.pk))
    rankable = [p for p in peers if not p.rank_reason]
    if rankable:
        min(rankable, key=_best_key).best = True
    # The curve's last point is the full training set (its size differs between versions); the
    # smaller, fixed sizes (30, 100) get a column each.
    sizes = sorted({c.n for p in peers for c in p.curve[:-1]})
    for p in peers:
        by_n = {c.n: c.e2e_mape for c in p.curve[:-1]}
        p.at_sizes = [by_n.get(n) for n in sizes]
    return ScenarioComparison(peers, sizes)


@dataclass(frozen=True)
class EvaluationPoint:
    """One held-out network: its predicted and measured end-to-end latency (ms)."""

    name: str
    predicted_ms: float
    measured_ms: float

    @property
    def error(self) -> float:
        """Signed relative error, (predicted - measured) / measured."""
        return (self.predicted_ms - self.measured_ms) / self.measured_ms if self.measured_ms else 0.0


def evaluation_points(evaluation: dict[str, Any]) -> list[EvaluationPoint]:
    """The evaluation's predicted vs measured points (those with both numbers)."""
    points = []
    for item in evaluation.get("points") or []:
        if not isinstance(item, dict):
            continue
        predicted, measured = finite(item.get("predicted_ms")), finite(item.get("measured_ms"))
        if predicted is not None and measured is not None:
            points.append(EvaluationPoint(str(item.get("name", "")), predicted, measured))
    return points


@dataclass(frozen=True)
class KernelError:
    """MAPE of one kernel type on the test networks, and how many kernels it was measured on."""

    kernel_type: str
    mape: float
    count: int | None


def kernel_errors(evaluation: dict[str, Any]) -> list[KernelError]:
    """MAPE per kernel type, the largest error first."""
    mapes = evaluation.get("kernel_mape") or {}
    counts = evaluation.get("kernel_count") or {}
    rows = []
    for ktype, value in mapes.items() if isinstance(mapes, dict) else ():
        mape = finite(value)
        if mape is not None:
            count = counts.get(ktype) if isinstance(counts, dict) else None
            rows.append(KernelError(str(ktype), mape, count if isinstance(count, int) else None))
    rows.sort(key=lambda k: (-k.mape, k.kernel_type))
    return rows
