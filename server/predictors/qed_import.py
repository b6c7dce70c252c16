"""The qed importer: the six phones of the latency paper as devices, with their GPU measurements.

``import_qed`` reads the qed files (``devicelab.predict.qed``; see ``../shared/data/README.md``)
under our names or as the public repository publishes them (``qed.find_files``),
creates one device of kind ``imported`` per phone (offline, held by no worker, hardware naming
its GPU, the Algorithm 3.2 GPU family and the source) and stores, per phone and network, the
operator rows as the source lists them, the kernels that ran, and the mean end-to-end GPU
latency. Re-running it changes nothing unless the files changed (rows are matched by device,
source and network; their SHA-256 says whether the data differs).

``qed_samples`` turns a phone's stored rows back into training samples with the same functions
the qed reader uses (``qed.ir_view``, ``qed.measured_kernels``, ``qed.deduce_rows``), so the
operator view and kernel deduction always come from the current code, not from the import.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from devicelab.predict import qed
from devicelab.predict.errors import PredictorError
from devicelab.predict.samples import Sample
from server.devices.models import Device, DeviceKind, DeviceStatus
from server.predictors.models import ImportedMeasurement, MeasurementSource

SOURCE = "qed"
DATASET = "qed-usc/mobile-ml-benchmark@40ba833 (dataset/tflite_cnn_*.csv)"
# The SoCs the data's README names for each phone.
SOCS = {
    "pixel4": "Snapdragon 855",
    "s10": "Exynos 9820",
    "mi8se": "Snapdragon 710",
    "a03s": "Helio P35",
    "iphone7": "Apple A10",
    "iphonexs": "Apple A12",
}


def identity_of(qed_device: str) -> str:
    """The device identity of a qed phone."""
    return f"qed:{qed_device}"


def qed_device_of(device: Device) -> str:
    """The qed name of an imported phone (``PredictorError`` if the device is not one)."""
    name = (device.hardware or {}).get("qed_device")
    if device.kind != DeviceKind.IMPORTED or (device.hardware or {}).get("source") != SOURCE or name not in qed.DEVICES:
        raise PredictorError(f"device {device.name!r} (#{device.pk}) is not a phone imported from the qed data")
    return str(name)


@dataclass
class DeviceImport:
    """What one import did for one phone."""

    device: Device
    device_created: bool
    created: int = 0
    updated: int = 0
    unchanged: int = 0

    @property
    def networks(self) -> int:
        """Networks stored for the phone."""
        return self.created + self.updated + self.unchanged


@dataclass
class QedImport:
    """What one import did."""

    data_dir: Path
    devices: list[DeviceImport] = field(default_factory=list)
    files: tuple[Path, ...] = ()  # the ops and end-to-end files read


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _hardware(name: str) -> dict[str, Any]:
    gpu, family = qed.DEVICES[name]
    return {
        "gpu_name": gpu,
        "gpu_family": family,
        "soc": SOCS.get(name, ""),
        "source": SOURCE,
        "dataset": DATASET,
        "qed_device": name,
        "runtime": "TFLite GPU delegate, fp16",
    }


@transaction.atomic
def ensure_qed_device(name: str) -> tuple[Device, bool]:
    """The phone's device row: created, or brought back to what the importer says it is."""
    defaults = {
        "kind": DeviceKind.IMPORTED,
        "name": name,
        "hardware": _hardware(name),
        "status": DeviceStatus.OFFLINE,
        "worker": "",
        "last_heartbeat": None,
    }
    device = Device.objects.select_for_update().filter(identity=identity_of(name)).first()
    if device is None:
        return Device.objects.create(identity=identity_of(name), **defaults), True
    changed = [k for k, v in defaults.items() if getattr(device, k) != v]
    if changed:
        for k in changed:
            setattr(device, k, defaults[k])
        device.save(update_fields=changed)
    return device, False


def import_qed(data_dir: Path | str | None = None) -> QedImport:
    """Create the six qed phones as devices and store their GPU measurements (idempotent)."""
    folder = Path(data_dir) if data_dir is not None else qed.default_data_dir()
    ops_path, e2e_path = qed.find_files(folder)  # ours, or the public dataset's names as published
    rows = qed.read_ops(ops_path)
    e2e = qed.read_e2e(e2e_path)
    files = [ops_path.name, e2e_path.name]
    per_model = qed.by_model(rows)
    outcome = QedImport(folder, files=(ops_path, e2e_path))
    for name in qed.DEVICES:
        mean_col, std_col = f"{name}|gpu|float|mean", f"{name}|gpu|float|std"
        with transaction.atomic():
            device, created = ensure_qed_device(name)
            done = DeviceImport(device, created)
            existing = {
                m.network: m
                for m in ImportedMeasurement.objects.filter(device=device, source=MeasurementSource.QED).only(
                    "pk", "network", "data_sha256"
                )
            }
            for model, model_rows in per_model.items():
                mine = [r for r in model_rows if name in r.kernel]
                if not mine or mean_col not in e2e.get(model, {}):
                    continue
                operators = [
                    {
                        "row": r.row,
                        "operation": r.operation,
                        "feature": r.feature,
                        "latency_us": r.latency_us[name],
                        "kernel": r.kernel[name],
                    }
                    for r in mine
                ]
                kernels = [
                    {"type": k.type, "name": k.name, "ops": list(k.ops), "latency_ms": k.latency_ms}
                    for k in qed.measured_kernels(mine, name)
                ]
                values = {
                    "operators": operators,
                    "kernels": kernels,
                    "e2e_ms": e2e[model][mean_col] / 1000.0,
                    "e2e_std_ms": e2e[model][std_col] / 1000.0 if std_col in e2e[model] else None,
                    "extra": {"files": files, "dataset": DATASET},
                }
                digest = _digest(values)
                row = existing.get(model)
                if row is None:
                    ImportedMeasurement.objects.create(
                        device=device, source=MeasurementSource.QED, network=model, data_sha256=digest, **values
                    )
                    done.created += 1
                elif row.data_sha256 != digest:
                    ImportedMeasurement.objects.filter(pk=row.pk).update(
                        data_sha256=digest, updated_at=timezone.now(), **values
                    )
                    done.updated += 1
                else:
                    done.unchanged += 1
        outcome.devices.append(done)
    return outcome


def import_qed_files(files: dict[str, Iterable[bytes]]) -> QedImport:
    """``import_qed`` of files a client sent, ``{file name: chunks}``: an ops and an end-to-end file
    named as one pair of ``qed.FILE_NAMES`` (the names are part of each row's recorded source)."""
    names = tuple(sorted(files, key=lambda n: "_ops_" not in n))
    if names not in qed.FILE_NAMES:
        pairs = "; ".join(f"{a} + {b}" for a, b in qed.FILE_NAMES)
        raise PredictorError(f"the qed files must be one of these pairs: {pairs}; got {' + '.join(names) or 'none'}")
    with tempfile.TemporaryDirectory(prefix="latencylab-qed-") as folder:
        for name, chunks in files.items():
            with (Path(folder) / name).open("wb") as out:
                for chunk in chunks:
                    out.write(chunk)
        return import_qed(folder)


def qed_samples(device: Device) -> list[Sample]:
    """Training samples of an imported phone from its stored rows: measured kernels, end-to-end
    latency, and the kernels deduced for its GPU family (one sample per network)."""
    name = qed_device_of(device)
    family = qed.DEVICES[name][1]
    samples = []
    for m in ImportedMeasurement.objects.filter(device=device, source=MeasurementSource.QED).order_by("network"):
        rows = []
        for op in m.operators:
            where = f"stored qed row {op.get('row')} of {m.network!r} on {name}"
            op_type, ins, outs, attrs = qed.ir_view(op["operation"], op["feature"], where)
            rows.append(
                qed.QedOp(
                    m.network,
                    int(op["row"]),
                    op["operation"],
                    op["feature"],
                    op_type,
                    tuple(ins),
                    tuple(outs),
                    attrs,
                    {name: float(op["latency_us"])},
                    {name: str(op["kernel"])},
                )
            )
        samples.append(
            Sample(m.network, tuple(qed.measured_kernels(rows, name)), m.e2e_ms, tuple(qed.deduce_rows(rows, family)))
        )
    return samples


__all__ = [
    "DeviceImport",
    "QedImport",
    "ensure_qed_device",
    "identity_of",
    "import_qed",
    "import_qed_files",
    "qed_device_of",
    "qed_samples",
]
