"""Phones of one model side by side: measured phones and the qed phones imported for that model.

A phone measured here (kind ``android``) and a qed phone (kind ``imported``) of the same model are
different devices with different data: the qed phone's GPU kernels were timed one by one with an
instrumented TFLite of 2022, the measured phone's with today's ``benchmark_model``, on its own
thermal state. ``same_model_devices`` finds, for either, the others of its model
(``devicelab.predict.phone_models.phone_model_key``: ``Pixel 4`` and qed's ``pixel4`` are one
model, so are ``SM-G973F`` and ``s10``), and ``side_by_side`` answers, for each of them, which
ready predictor would answer and, given architectures, what it predicts: the API's
``POST /api/predict/side-by-side/``.
"""

from __future__ import annotations

from typing import Any

from devicelab.predict.phone_models import phone_model_key
from server.accounts.models import Team
from server.devices.models import Device, DeviceKind
from server.predictors.qed_import import SOURCE as QED_SOURCE
from server.predictors.serving import (
    PredictorNotFound,
    PredictorUnavailable,
    chosen_as,
    loaded,
    predict_architectures,
    resolve,
)

PHONE_KINDS = (DeviceKind.ANDROID, DeviceKind.IMPORTED)


def phone_model_of(device: Device) -> str | None:
    """The phone model key of a measured or imported (qed) phone; None for any other device."""
    hardware = device.hardware or {}
    if device.kind == DeviceKind.ANDROID:
        return phone_model_key(str(hardware.get("model", "")), str(hardware.get("manufacturer", ""))) or None
    if device.kind == DeviceKind.IMPORTED and hardware.get("source") == QED_SOURCE:
        return phone_model_key(str(hardware.get("qed_device", ""))) or None
    return None


def same_model_devices(device: Device) -> list[Device]:
    """The other phones, measured or imported, of ``device``'s model (imported ones first, then by
    name); none for a device that is not a phone."""
    key = phone_model_of(device)
    if key is None:
        return []
    others = Device.objects.filter(kind__in=PHONE_KINDS).exclude(pk=device.pk).order_by("name", "pk")
    mine = [d for d in others if phone_model_of(d) == key]
    return sorted(mine, key=lambda d: d.kind != DeviceKind.IMPORTED)


def _device_summary(device: Device) -> dict[str, Any]:
    return {"id": device.pk, "name": device.name, "kind": device.kind, "identity": device.identity}


def side_by_side(
    team: Team,
    device_id: int,
    items: Any = None,
    method: str | None = None,
    backend: str | None = None,
    breakdown: bool = False,
) -> dict[str, Any]:
    """For ``device`` and every phone of its model: the ready predictor that answers for ``team``
    (optionally of one method and scenario backend, e.g. ``tflite_gpu`` to compare GPU with GPU)
    and, when ``items`` (architectures) are given, its predictions. A device none of whose
    predictors can answer says why in ``detail``. ``PredictorNotFound`` for an unknown device,
    ``serving.ArchitectureErrors`` for bad architectures."""
    device = Device.objects.filter(pk=device_id).first()
    if device is None:
        raise PredictorNotFound(f"there is no device #{device_id} (GET /api/devices/)")
    answers = []
    for d in [device, *same_model_devices(device)]:
        answer: dict[str, Any] = {"device": _device_summary(d), "predictor": None, "detail": "", "results": []}
        try:
            row = resolve(team, d.pk, method=method, backend=backend)
            entry = loaded(row)
        except PredictorUnavailable as exc:
            answer["detail"] = str(exc)
            answers.append(answer)
            continue
        answer["predictor"] = entry.describe(chosen_as(row, named=False))
        if items is not None:
            answer["results"] = predict_architectures(entry, items, breakdown)
        answers.append(answer)
    return {"device": device.pk, "phone_model": phone_model_of(device), "answers": answers}


__all__ = ["phone_model_of", "same_model_devices", "side_by_side"]
