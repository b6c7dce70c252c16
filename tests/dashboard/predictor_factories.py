"""Predictor rows for the dashboard tests, made directly with the ORM.

The evaluation is built by the trainer's own ``_report_dict`` from a ``Report``, so its shape is
the one a trained predictor stores; a ready row carries an artifact with its SHA-256 (the
model's check constraint), though the pages never load it.
"""

from __future__ import annotations

import hashlib
import itertools
from typing import Any

from django.utils import timezone

from devicelab.predict.evaluate import Report
from devicelab.predict.predictor import Scenario
from server.devices.models import Device, DeviceKind, DeviceStatus
from server.predictors.models import Predictor, PredictorSource, PredictorState
from server.predictors.training import _report_dict

_serial = itertools.count(1)

KERNEL_MAPE = {"conv2d": 0.031, "depthwise_conv2d": 0.058, "fully_connected": 0.12, "pool": 0.02}


def evaluation(
    e2e_mape: float = 0.042,
    points: int = 12,
    kernel_mape: dict[str, float] | None = None,
    curve: list[tuple[int, float]] | None = None,
    protocol: str = "holdout 20%",
) -> dict[str, Any]:
    """An evaluation as ``training.train_from_timings`` stores it: ``points`` test networks (the
    i-th measured at 2 + i ms, predicted 3 % high), MAPE per kernel type and vs training size."""
    kernels = KERNEL_MAPE if kernel_mape is None else kernel_mape
    predictions = [(f"net-{i}", (2.0 + i) * 1.03, 2.0 + i) for i in range(points)]
    report = Report(
        e2e_mape=e2e_mape,
        n_networks=points,
        kernel_mape=dict(kernels),
        kernel_count={k: 10 + i for i, k in enumerate(kernels)},
        predictions=predictions,
    )
    out = _report_dict(report, protocol)
    out["by_training_size"] = [
        {"n": n, "e2e_mape": m} for n, m in (curve if curve is not None else [(30, 0.09), (100, 0.06), (160, e2e_mape)])
    ]
    return out


def imported_device(name: str | None = None) -> Device:
    """A phone known only from imported measurements (like the qed phones)."""
    name = name or f"phone{next(_serial)}"
    return Device.objects.create(
        identity=f"qed:{name}",
        name=name,
        kind=DeviceKind.IMPORTED,
        status=DeviceStatus.OFFLINE,
        hardware={"gpu_name": "Adreno 640", "source": "qed"},
    )


def make_predictor(
    device: Device,
    team: Any = None,
    method: str = "gbdt",
    version: int | None = None,
    state: str = PredictorState.READY,
    threads: int = 1,
    e2e_mape: float | None = 0.042,
    **fields: Any,
) -> Predictor:
    """A predictor row of ``device`` (shared when ``team`` is None), with an evaluation, meta and,
    when ready, an artifact; ``fields`` override any column."""
    backend = "tflite_gpu" if device.kind == DeviceKind.IMPORTED else str(device.kind)
    scenario = Scenario(backend, device.identity, threads, precision="fp16" if backend == "tflite_gpu" else "fp32")
    ready = state == PredictorState.READY
    digest = hashlib.sha256(f"artifact-{next(_serial)}".encode()).hexdigest()
    values: dict[str, Any] = {
        "team": team,
        "device": device,
        "source": PredictorSource.TIMINGS if team is not None else PredictorSource.QED,
        "method": method,
        "scenario": scenario.to_dict(),
        "scenario_key": scenario.key,
        "version": version if version is not None else next(_serial),
        "params": {"threads": threads, "cores": [], "precision": scenario.precision, "seed": 0, "search": "paper"},
        "state": state,
        "artifact": {"format": "latencylab-predictor", "sha256": digest} if ready else None,
        "artifact_sha256": digest if ready else "",
        "evaluation": evaluation(e2e_mape) if ready and e2e_mape is not None else {},
        "e2e_mape": e2e_mape if ready else None,
        "meta": {
            "seed": 0,
            "training_data_sha256": hashlib.sha256(b"data").hexdigest(),
            "libraries": {"numpy": "2.2.0", "scikit-learn": "1.6.1"},
            "networks": 200,
            "jobs": list(range(1, 201)),
        }
        if ready
        else {},
        "n_train": 160 if ready else 0,
        "n_test": 12 if ready and e2e_mape is not None else 0,  # the evaluation's points: rankable
        "trained_at": timezone.now() if ready else None,
        "progress_message": "ready" if ready else "",
    }
    values.update(fields)
    return Predictor.objects.create(**values)
