"""Predictor actions: request a new version, train it, fail it.

The API, the CLI and the trainer's task call these. ``request_predictor`` checks that there is
data to train on (a 400 with the reason otherwise), creates the next version as ``queued`` and
hands it to the trainer queue when the transaction commits; ``run_training`` claims a queued
row with a conditional update, trains and evaluates it (``training.train_and_evaluate``) and
stores the artifact, or fails the row saying why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection
from django.utils import timezone

from devicelab.backends.base import DELEGATES, UnsupportedSetting
from devicelab.graph import GraphError
from devicelab.predict.artifacts import predictor_to_dict
from devicelab.predict.errors import PredictorError
from devicelab.predict.models import SEARCHES
from devicelab.predict.predictor import OVERHEADS, Scenario
from server.accounts.models import Team
from server.devices.models import Device, DeviceKind
from server.leases import LeaseKeeper, lease_lapsed, sweep_lapsed
from server.predictors.models import (
    ImportedMeasurement,
    Predictor,
    PredictorMethod,
    PredictorSource,
    PredictorState,
)
from server.predictors.qed_import import SOURCE as QED_SOURCE
from server.predictors.records import count_networks
from server.predictors.training import MIN_NETWORKS, train_and_evaluate
from server.predictors.versions import create_predictor_version
from server.taskqueue import send_after_commit, send_table, send_training, try_send

log = logging.getLogger(__name__)


def find_device(handle: str | int) -> Device:
    """A device by id, name or identity (``pixel4`` also finds ``qed:pixel4``); ``ValidationError`` if none
    or several match."""
    text = str(handle).strip()
    if text.isdigit():
        device = Device.objects.filter(pk=int(text)).first()
        if device is not None:
            return device
    for lookup in ({"identity": text}, {"name": text}, {"identity": f"qed:{text}"}):
        rows = list(Device.objects.filter(**lookup)[:2])
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            raise ValidationError({"device": f"several devices are called {text!r}; give the id (GET /api/devices/)"})
    raise ValidationError({"device": f"there is no device {text!r} (GET /api/devices/)"})


# A phone's delegate -> the backend of its predictors (NNAPI has none: see _phone_scenario).
PHONE_BACKENDS = {"cpu": "tflite_cpu", "xnnpack": "tflite_cpu", "gpu": "tflite_gpu"}
# A training whose trainer was lost this many times fails: a predictor that kills its trainer
# (out of memory) must not take every trainer down in turn.
MAX_TRAINING_ATTEMPTS = 3


def _phone_scenario(device: Device, threads: int, cores: list[int], precision: str, delegate: str) -> Scenario:
    """The scenario of a phone's predictor: one delegate's jobs (``tflite_cpu`` for the builtin
    kernels and XNNPACK, ``tflite_gpu`` for the GPU delegate); ``ValidationError`` for NNAPI."""
    if not delegate:
        raise ValidationError(
            {
                "delegate": f"device {device.name!r} is a phone: name the delegate its predictor is for (cpu, xnnpack or gpu)"
            }
        )
    if delegate == "nnapi":
        # NNAPI hands the model to the vendor's driver, which splits it over accelerators we
        # cannot see (DSP, NPU, GPU, CPU) with kernels no one documents; the tool times whole
        # NNAPI partitions. No deduction can say what runs, so no predictor is offered.
        raise ValidationError(
            {
                "delegate": "no predictor for the nnapi delegate: NNAPI hands the model to the phone vendor's driver, "
                "which picks accelerators and kernels nothing reports (benchmark_model times whole NNAPI partitions), "
                "so no kernel deduction exists; train one for cpu, xnnpack or gpu"
            }
        )
    if delegate not in PHONE_BACKENDS:
        raise ValidationError(
            {"delegate": f"unknown delegate {delegate!r}; a phone's predictor is for cpu, xnnpack or gpu"}
        )
    gpu = str((device.hardware or {}).get("gpu", "")) if delegate == "gpu" else ""
    return Scenario(
        PHONE_BACKENDS[delegate], device.identity, threads, tuple(cores), precision, gpu=gpu, delegate=delegate
    )


def _scenario(
    device: Device, threads: int, cores: list[int], precision: str, delegate: str = ""
) -> tuple[str, Scenario]:
    """The data source and scenario a predictor of ``device`` trains for, or ``ValidationError``."""
    hardware = device.hardware or {}
    if delegate and device.kind != DeviceKind.ANDROID:
        raise ValidationError(
            {"delegate": f"device {device.name!r} is a {device.kind} device; a delegate names a phone's"}
        )
    if device.kind == DeviceKind.ANDROID:
        return PredictorSource.TIMINGS, _phone_scenario(device, threads, cores, precision, delegate)
    if device.kind == DeviceKind.IMPORTED:
        if hardware.get("source") != QED_SOURCE:
            raise ValidationError({"device": f"device {device.name!r} holds no measurements a predictor can read"})
        if threads != 1 or cores or precision not in ("fp32", "fp16"):
            raise ValidationError(
                {
                    "threads": f"device {device.name!r} was measured on its GPU (fp16) only: no threads, cores or precision"
                }
            )
        scenario = Scenario(
            "tflite_gpu",
            device.identity,
            precision="fp16",
            runtime="tflite gpu delegate (qed data)",
            gpu=str(hardware.get("gpu_name", "")),
        )
        return PredictorSource.QED, scenario
    if device.kind == DeviceKind.CPU:
        return PredictorSource.TIMINGS, Scenario("cpu", device.identity, threads, tuple(cores), precision)
    if device.kind == DeviceKind.OPENCL:
        gpu = str(hardware.get("gpu_name", ""))
        return PredictorSource.TIMINGS, Scenario("opencl", device.identity, threads, tuple(cores), precision, gpu=gpu)
    raise ValidationError(
        {
            "device": f"device {device.name!r} is a {device.kind} device; predictors exist for cpu, opencl, android "
            "and imported devices"
        }
    )


def _core_ids(device: Device, cores: list[int] | str | None) -> list[Any]:
    """Core ids as given, or those of a named cluster of the device (jobs store the ids)."""
    if not isinstance(cores, str):
        return list(cores or [])
    capabilities = device.declared_capabilities()
    if capabilities is None or not capabilities.core_clusters:
        raise ValidationError({"cores": f"device {device.name!r} has no named core clusters; give core ids"})
    try:
        return list(capabilities.cluster_cores(cores))
    except UnsupportedSetting as exc:
        raise ValidationError({"cores": f"device {device.name!r}: {exc}"}) from None


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError({name: f"{name} must be an integer >= {minimum}, got {value!r}"})
    return value


def _data_check(
    team: Team | None, device: Device, source: str, threads: int, cores: list[int], precision: str, delegate: str
) -> None:
    if source == PredictorSource.QED:
        n = ImportedMeasurement.objects.filter(device=device).count()
        if n < MIN_NETWORKS:
            raise ValidationError(
                {
                    "device": f"device {device.name!r} has {n} imported network(s); at least {MIN_NETWORKS} are needed "
                    "(latencylab qed import)"
                }
            )
        return
    assert team is not None
    n = count_networks(team, device, threads, cores, precision, delegate)
    if n < MIN_NETWORKS:
        on = f", delegate {delegate}" if delegate else ""
        raise ValidationError(
            {
                "device": f"your team has {n} network(s) profiled on device {device.name!r} (#{device.pk}) with "
                f"threads={threads}, cores={cores or 'any'}, {precision}{on}; a predictor needs at least "
                f"{MIN_NETWORKS} (profile more, e.g. latencylab trainset build)"
            }
        )


def _dispatch_training(predictor_id: int) -> bool:
    """Send the training of a queued predictor; False, logged, when the broker cannot take it (the
    row stays queued, the truth, and the idle trainer sends it again)."""
    return try_send(
        send_training,
        predictor_id,
        what=f"predictor {predictor_id} stays queued",
        then="the idle trainer sends its training again",
    )


def resend_queued_predictors(requested_before: datetime) -> list[int]:
    """Send again the training of every predictor still queued that was requested before
    ``requested_before`` (the idle trainer does: its message was lost); returns their ids."""
    ids = list(
        Predictor.objects.filter(state=PredictorState.QUEUED, created_at__lt=requested_before)
        .order_by("created_at")
        .values_list("pk", flat=True)
    )
    sent = [pk for pk in ids if _dispatch_training(pk)]
    if sent:
        log.warning("sent again the training of queued predictor(s) %s, whose message(s) seemed lost", sent)
    return sent


def request_predictor(
    team: Team | None,
    device: Device,
    method: str = "gbdt",
    threads: int = 1,
    seed: int = 0,
    search: str = "paper",
    overhead: str = "constant",
    cores: list[int] | str | None = None,
    precision: str = "fp32",
    user: Any = None,
    enqueue: bool = True,
    delegate: str = "",
) -> Predictor:
    """Create the next version of a predictor as ``queued`` (and enqueue its training on commit).

    A predictor of an imported (qed) phone trains on lab-wide data. It is shared (no team: it
    answers every team) only when a lab admin asks for it (a staff user, or no user: the command
    line on the server); a team member's is the team's own, like one of a lab device, which trains
    on ``team``'s timings: only that team sees it and only that team's predictions use it. So no
    team can change another team's answers. Versions are counted per owner.

    A phone's predictor is for one ``delegate`` (cpu, xnnpack, gpu) and trains on that
    delegate's jobs only; ``cores`` may name one of its clusters (``big``), as a job's may.
    """
    if method not in PredictorMethod.values:
        raise ValidationError({"method": f"unknown method {method!r}; the methods are {PredictorMethod.values}"})
    if search not in SEARCHES:
        raise ValidationError({"search": f"unknown search {search!r}; use one of {list(SEARCHES)}"})
    if overhead not in OVERHEADS:
        raise ValidationError({"overhead": f"unknown overhead model {overhead!r}; use one of {list(OVERHEADS)}"})
    threads = _check_int("threads", threads, 1)
    seed = _check_int("seed", seed, 0)
    cores = [_check_int("cores", c, 0) for c in _core_ids(device, cores)]
    if not isinstance(delegate, str) or (delegate and delegate not in DELEGATES):
        raise ValidationError({"delegate": f"unknown delegate {delegate!r}; the delegates are {list(DELEGATES)}"})
    source, scenario = _scenario(device, threads, cores, precision, delegate)
    lab_admin = user is None or bool(getattr(user, "is_staff", False))
    owner = None if source == PredictorSource.QED and lab_admin else team
    if owner is None and source == PredictorSource.TIMINGS:
        raise ValidationError({"team": "a predictor trained on profiling jobs needs the team whose jobs it reads"})
    if owner is None and source == PredictorSource.QED and team is None and not lab_admin:
        raise ValidationError({"team": "only a lab admin can train a shared predictor"})
    _data_check(owner, device, source, threads, cores, precision, delegate)
    params = {
        "threads": threads,
        "cores": cores,
        "precision": scenario.precision,
        **({"delegate": delegate} if delegate else {}),
        "seed": seed,
        "search": search,
        "overhead": overhead,
    }
    return create_predictor_version(
        owner, device, source=source, method=method, scenario=scenario, params=params, user=user, enqueue=enqueue
    )


def run_training(
    predictor_id: int,
    progress: Callable[[str], object] | None = None,
    reraise: tuple[type[BaseException], ...] = (),
    enqueue_table: bool | None = None,
) -> Predictor | None:
    """Train a queued predictor; returns its row (None if it no longer exists).

    Expected failures (no data, a kernel nobody can deduce, an artifact that does not check)
    fail the row with their message; anything else fails it as an internal error and is
    logged. ``reraise`` lists exceptions that must propagate untouched (a task's time limit).
    A ready predictor's NB201 table is then queued for the trainer when ``enqueue_table`` is
    true (default: ``LATENCYLAB_PREDICT_NB201_TABLE``).
    """
    row = Predictor.objects.select_related("device", "team").filter(pk=predictor_id).first()
    if row is None:
        return None
    if row.state == PredictorState.TRAINING:
        # A second delivery of the message: another trainer is at it, or was lost, and then its
        # lease runs out and the sweeper queues the training again (sweep_lost_trainings).
        return row
    lease = float(django_settings.LATENCYLAB_TRAINING_LEASE_SECONDS)
    if not row.claim(lease):
        return row
    with LeaseKeeper(lambda: row.renew_lease(lease), lease / 4, f"predictor {row.pk}"):
        return _train(row, progress, reraise, enqueue_table)


def _train(
    row: Predictor,
    progress: Callable[[str], object] | None,
    reraise: tuple[type[BaseException], ...],
    enqueue_table: bool | None,
) -> Predictor:
    """The training of a claimed predictor, to its end (ready or failed)."""
    predictor_id = row.pk

    def report(message: str) -> None:
        try:
            row.report(message)
        except DatabaseError:
            # A progress note is not worth the training: the next query opens a new connection.
            log.warning("predictor %s: progress not recorded (the database connection dropped)", predictor_id)
            _reconnect()
        if progress is not None:
            progress(message)

    try:
        outcome = train_and_evaluate(row, report)
        report("checking the artifact")
        artifact = predictor_to_dict(outcome.predictor)
        _check_artifact(artifact)
    except reraise:
        raise
    except (PredictorError, GraphError, ValidationError) as exc:
        text = " ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        row.fail(text)
        return row
    except DatabaseError as exc:
        # The database dropped the connection (a restart, a failover): not the training's fault.
        _reconnect()
        _training_lost_to_the_database(predictor_id, exc)
        return row
    except Exception as exc:  # noqa: BLE001 - the row must say why, whatever went wrong
        log.exception("training predictor %s failed", predictor_id)
        row.fail(f"internal error while training: {type(exc).__name__}: {exc}")
        return row
    meta = {**outcome.predictor.meta, **outcome.meta}
    meta.pop("training_samples", None)  # in the artifact; the row keeps the summary
    if enqueue_table is None:
        enqueue_table = django_settings.LATENCYLAB_PREDICT_NB201_TABLE
    if row.succeed(artifact, outcome.evaluation, meta, outcome.n_train) and enqueue_table:
        send_after_commit(
            send_table,
            row.pk,
            what=f"predictor {row.pk} has no NB-201 table",
            then="its predictions of NB-201 cells are computed cell by cell",
        )
    return row


def sweep_lost_trainings(now: datetime | None = None) -> list[int]:
    """Predictors whose training lease ran out (their trainer was killed, ran out of memory or
    restarted) are queued again and their training sent, or failed, saying why, after
    ``MAX_TRAINING_ATTEMPTS`` attempts. Returns their ids. Run by every trainer's sweeper; the
    conditional updates make two sweeps at once do the work once."""
    now = now or timezone.now()
    return sweep_lapsed(
        lease_lapsed(Predictor.objects.filter(state=PredictorState.TRAINING), now),
        held_by="attempts",
        attempts="attempts",
        max_attempts=MAX_TRAINING_ATTEMPTS,
        lost="the trainer stopped while training",
        requeued=lambda why: {"state": PredictorState.QUEUED, "progress_message": why, "lease_until": None},
        failed=lambda why: {
            "state": PredictorState.FAILED,
            "failure_reason": f"{why}: request a new version",
            "lease_until": None,
        },
        dispatch=_dispatch_training,
    )


def _reconnect() -> None:
    """Let the next query open a new connection (outside a transaction: one cannot go on)."""
    if not connection.in_atomic_block:
        connection.close()


def _training_lost_to_the_database(predictor_id: int, exc: DatabaseError) -> None:
    """A training whose database connection dropped is queued again at once, saying so, with
    its attempt counted (failed after ``MAX_TRAINING_ATTEMPTS``), instead of holding its lease
    until the sweeper takes it for a lost trainer."""
    attempts = Predictor.objects.filter(pk=predictor_id).values_list("attempts", flat=True).first() or 0
    held = Predictor.objects.filter(pk=predictor_id, state=PredictorState.TRAINING, attempts=attempts)
    why = f"attempt {attempts} lost: the database connection dropped while training ({type(exc).__name__}: {exc})"
    if attempts >= MAX_TRAINING_ATTEMPTS:
        held.update(
            state=PredictorState.FAILED,
            failure_reason=f"{why}; it was attempted {attempts} times (limit {MAX_TRAINING_ATTEMPTS}), so it is "
            "not retried: request a new version",
            lease_until=None,
        )
    elif held.update(state=PredictorState.QUEUED, progress_message=f"{why}; queued again"[:200], lease_until=None):
        log.warning("predictor %s: %s; queued again", predictor_id, why)
        _dispatch_training(predictor_id)


def _check_artifact(artifact: dict[str, Any]) -> None:
    """Load what is about to be stored, so a predictor that could not be served never turns ready."""
    from devicelab.predict.artifacts import predictor_from_dict

    predictor_from_dict(artifact)


def fail_predictor(predictor_id: int, reason: str) -> bool:
    """Fail a queued or training predictor with ``reason``; False if it had already finished."""
    row = Predictor.objects.filter(pk=predictor_id).first()
    return row is not None and row.fail(reason)


__all__ = ["fail_predictor", "find_device", "request_predictor", "run_training"]
