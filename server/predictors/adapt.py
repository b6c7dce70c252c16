"""Adapted predictors: a device's predictor from a few end-to-end measurements and the predictors of
other devices (``devicelab.predict.adapt``: the method, its benchmark and what each part gives).

``request_adapted_predictor`` checks the request (the target: a lab device, or a device that is
not in the lab, named with its SoC and GPU, which is then registered as an imported device; the
shots: measured latencies of networks, each a lab profiling job or a typed-in ``{model,
latency_ms}`` with a model id or a zoo name; the sources: ready predictors of the same backend and
precision, by default the best of every other device) and queues a predictor row of source
``adapted`` for the trainer, its shots and sources in ``params`` (the provenance).

``train_adapted`` is what the trainer runs for such a row: it loads the sources, deduces the
shots' kernels for the target, fits the adaptation and stores it as an ordinary predictor
(``adapt.distil``, on the zoo's networks and the shots), so it is served, tabled and warned
about like any other. Its evaluation is the leave-one-out error on the shots: the only
measurements of the device there are, and its stated uncertainty.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from django.core.exceptions import ValidationError

from devicelab.graph import GraphError, zoo
from devicelab.graph.ir import Graph
from devicelab.predict import adapt
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer, gpu_family
from devicelab.predict.errors import PredictorError
from devicelab.predict.kernels import Deducer
from devicelab.predict.predictor import Scenario, ScenarioPredictor
from server.accounts.models import Team
from server.devices.models import Device, DeviceKind, DeviceStatus
from server.networks.models import NetworkModel
from server.networks.services import model_graph
from server.predictors.artifacts import load_row
from server.predictors.models import Predictor, PredictorMethod, PredictorSource, PredictorState
from server.predictors.versions import create_predictor_version
from server.profiling.models import ProfilingJob

MAX_SHOTS = 200
USER_DEVICE_PREFIX = "user:"  # identity of a device named by a user, not in the lab


def _invalid(field: str, message: str) -> ValidationError:
    return ValidationError({field: message})


def register_user_device(name: str, soc: str = "", gpu: str = "") -> Device:
    """The imported device row of a device that is not in the lab (created once per name)."""
    name = (name or "").strip()
    if not name:
        raise _invalid("new_device", "a device that is not in the lab needs a name")
    identity = USER_DEVICE_PREFIX + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    hardware = {"soc": soc, "gpu_name": gpu, "source": "user", "runtime": "measured by its user"}
    if gpu:
        hardware["gpu_family"] = gpu_family(gpu)
    device, _ = Device.objects.get_or_create(
        identity=identity,
        defaults={"kind": DeviceKind.IMPORTED, "name": name, "hardware": hardware, "status": DeviceStatus.OFFLINE},
    )
    return device


def _shot(team: Team | None, index: int, item: dict[str, Any]) -> dict[str, Any]:
    """One shot checked: ``{name, latency_ms}`` and where its graph comes from (model, zoo, job)."""
    where = f"shot {index}"
    job_id = item.get("job")
    if job_id is not None:
        job = ProfilingJob.objects.filter(pk=job_id).select_related("model").first()
        if job is None or (team is not None and job.team_id != team.pk):
            raise _invalid("shots", f"{where}: no profiling job #{job_id} of your team")
        result = getattr(job, "result", None)
        if result is None or job.model is None:
            raise _invalid("shots", f"{where}: job #{job_id} has no measured result of a network")
        return {"name": job.model.name, "model": job.model_id, "job": job.pk, "latency_ms": result.e2e_central}
    latency = item.get("latency_ms")
    if not isinstance(latency, int | float) or isinstance(latency, bool) or not latency > 0:
        raise _invalid("shots", f"{where}: latency_ms must be a positive number of milliseconds, not {latency!r}")
    model = item.get("model")
    if isinstance(model, int) and not isinstance(model, bool):
        row = NetworkModel.objects.listed().filter(pk=model).first()
        if row is None or (team is not None and row.team_id != team.pk) or not row.is_ready:
            raise _invalid("shots", f"{where}: no parsed model #{model} of your team")
        return {"name": row.name, "model": row.pk, "latency_ms": float(latency)}
    if isinstance(model, str) and model in zoo.entries():
        return {"name": model, "zoo": model, "latency_ms": float(latency)}
    raise _invalid(
        "shots", f"{where}: model must be a model id of your team or a zoo name (latencylab zoo list), not {model!r}"
    )


def default_sources(team: Team | None, target: Device, backend: str, precision: str) -> list[Predictor]:
    """Per other device, its best ready predictor of ``backend`` and ``precision`` (adapted ones aside)."""
    rows = Predictor.objects.ready().exclude(device=target).exclude(source=PredictorSource.ADAPTED)
    rows = rows.visible_to(team) if team is not None else rows.filter(team__isnull=True)
    chosen: dict[int, Predictor] = {}
    for row in rows.defer("artifact").best_first():
        s = row.scenario or {}
        if s.get("backend") == backend and s.get("precision") == precision and row.device_id not in chosen:
            chosen[row.device_id] = row
    return list(chosen.values())


def request_adapted_predictor(
    team: Team | None,
    device: Device | None,
    shots: Sequence[dict[str, Any]],
    sources: Sequence[int] | None = None,
    new_device: dict[str, str] | None = None,
    backend: str = "tflite_gpu",
    precision: str = "fp16",
    method: str = "rf",
    seed: int = 0,
    user: Any = None,
    enqueue: bool = True,
) -> Predictor:
    """Queue an adapted predictor for a device from its measured shots and other devices' predictors."""
    if method not in PredictorMethod.values:
        raise _invalid("method", f"unknown method {method!r}; the methods are {PredictorMethod.values}")
    if (device is None) == (not new_device):
        raise _invalid("device", "give either device (a lab device) or new_device (name, soc, gpu), not both")
    target = device if device is not None else register_user_device(**(new_device or {}))
    if not isinstance(shots, list | tuple) or not adapt.MIN_SHOTS <= len(shots) <= MAX_SHOTS:
        raise _invalid("shots", f"give between {adapt.MIN_SHOTS} and {MAX_SHOTS} measured networks")
    checked = [_shot(team, i, dict(item)) for i, item in enumerate(shots)]
    if sources:
        rows = list(Predictor.objects.ready().defer("artifact").filter(pk__in=list(sources)))
        rows = [r for r in rows if r.team_id is None or (team is not None and r.team_id == team.pk)]
        missing = sorted(set(sources) - {r.pk for r in rows})
        if missing:
            raise _invalid("sources", f"no ready predictor(s) {missing} that you can use")
    else:
        rows = default_sources(team, target, backend, precision)
    if not rows:
        raise _invalid("sources", f"no ready {backend} {precision} predictor of another device to adapt from")
    gpu = str(target.hardware.get("gpu_name") or "")
    if backend == "tflite_gpu" and not gpu:
        raise _invalid("device", f"device {target.name!r} has no GPU name: its kernels cannot be deduced")
    scenario = Scenario(
        backend, target.identity, precision=precision, runtime=f"adapted from {len(rows)} predictor(s)", gpu=gpu
    )
    params = {
        "precision": precision,
        "seed": seed,
        "shots": checked,
        "sources": [r.pk for r in rows],
        "source_devices": [r.device.name for r in rows],
    }
    return create_predictor_version(
        team,
        target,
        source=PredictorSource.ADAPTED,
        method=method,
        scenario=scenario,
        params=params,
        user=user,
        enqueue=enqueue,
    )


def _shot_graph(shot: dict[str, Any]) -> Graph:
    if shot.get("zoo"):
        return zoo.build(str(shot["zoo"]))
    model_id = shot.get("model")
    row = NetworkModel.objects.filter(pk=model_id).first() if isinstance(model_id, int) else None
    if row is None:
        raise PredictorError(f"shot {shot['name']!r}: its model #{shot.get('model')} no longer exists")
    return model_graph(row)


def _deducer(scenario: Scenario, sources: Sequence[ScenarioPredictor]) -> Deducer:
    """The target's kernels: its GPU family's TFLite GPU deduction, else the first source's deducer."""
    if scenario.backend == "tflite_gpu":
        return TfliteGpuDeducer(gpu_family(scenario.gpu))
    return sources[0].deducer


def _zoo_pool(deducer: Deducer) -> list[tuple[str, tuple[Any, ...]]]:
    """The zoo's networks as the target's kernels: what the stored predictor learns the adapted
    kernel latencies on (a network the deducer cannot take is left out, not a failure)."""
    pool = []
    for name in sorted(zoo.entries()):
        try:
            pool.append((name, tuple(deducer.kernels(zoo.build(name)))))
        except (PredictorError, GraphError):
            continue
    return pool


def train_adapted(
    row: Predictor, progress: Callable[[str], object]
) -> tuple[ScenarioPredictor, dict[str, Any], dict[str, Any], int]:
    """Fit an adapted predictor row's predictor: ``(predictor, evaluation, meta, n_train)`` for
    ``training.Outcome``; its evaluation is the shots' leave-one-out."""
    params = row.params or {}
    source_rows = {r.pk: r for r in Predictor.objects.filter(pk__in=params.get("sources", []))}
    ids = [int(i) for i in params.get("sources", [])]
    gone = [i for i in ids if i not in source_rows or source_rows[i].state != PredictorState.READY]
    if gone:
        raise PredictorError(f"source predictor(s) {gone} are no longer ready: request the adaptation again")
    progress(f"loading {len(ids)} source predictor(s)")
    sources = [load_row(source_rows[i]) for i in ids]
    scenario = Scenario.from_dict(row.scenario)
    deducer = _deducer(scenario, sources)
    progress(f"deducing the kernels of {len(params.get('shots', []))} measured network(s)")
    shots = [
        adapt.Shot(str(s["name"]), tuple(deducer.kernels(_shot_graph(s))), float(s["latency_ms"]))
        for s in params.get("shots", [])
    ]
    pool = _zoo_pool(deducer)
    progress("fitting the adaptation")
    names = [f"#{i} {source_rows[i].device.name}" for i in ids]
    adapted = adapt.adapt(sources, shots, scenario, deducer, names, extra_groups=[ks for _, ks in pool])
    progress(f"storing it as a {row.method} predictor")
    predictor = adapt.distil(adapted, pool, method=row.method, seed=int(params.get("seed", 0)))
    evaluation = {
        "protocol": f"leave-one-out on the {len(shots)} measured networks",
        "e2e_mape": adapted.loo_mape,
        "n_test": len(shots),
        "kernel_mape": {},
        "kernel_count": {},
        "missing": [],
        "points": [
            {"name": s.name, "predicted_ms": p, "measured_ms": s.latency_ms}
            for s, p in zip(adapted.shots, adapted.shot_predictions, strict=True)
        ],
    }
    meta = {"source": PredictorSource.ADAPTED, "adapted": adapted.provenance()}
    return predictor, evaluation, meta, len(shots)


__all__ = [
    "MAX_SHOTS",
    "default_sources",
    "register_user_device",
    "request_adapted_predictor",
    "train_adapted",
]
