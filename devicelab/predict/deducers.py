"""Which kernel deducer serves which scenario, and a deducer rebuilt from a predictor artifact.

The deducers (``deduce_cpu``, ``deduce_opencl``, ``deduce_tflite_gpu``, and for phones measured
here ``deduce_tflite_cpu`` and ``tflite_gpu_records``) know only ``kernels``;
this module knows all of them and none of them knows it, so the dispatch adds no import cycle.
A new backend's deducer is added here (``learn_deducer`` for a backend measured in the lab, the
artifact loader with ``register_deducer``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from devicelab.predict import cpu_rules, deduce_opencl, deduce_tflite_cpu, deduce_tflite_gpu
from devicelab.predict.cpu_learning import learn_cpu_deducer
from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.deduce_opencl import OpenclDeducer
from devicelab.predict.deduce_tflite_cpu import TfliteCpuDeducer, learn_tflite_cpu_deducer
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer, gpu_family
from devicelab.predict.errors import PredictorError
from devicelab.predict.kernels import Deducer
from devicelab.predict.records import ProfileRecord
from devicelab.predict.samples import Sample
from devicelab.predict.tflite_gpu_records import learn_tflite_gpu_deducer

# backends whose deducer comes from records measured here (tflite_*: phones)
RECORD_BACKENDS = ("cpu", "opencl", "tflite_cpu", "tflite_gpu")


class RecordDeducer(Deducer, Protocol):
    """A deducer of a backend measured here: it also types the kernels a record measured."""

    def samples(self, records: Sequence[ProfileRecord], statistic: str = "median") -> list[Sample]:
        """Training / test samples: measured kernels, end-to-end latency, deduced kernels."""
        ...


def learn_deducer(
    backend: str,
    records: Sequence[ProfileRecord],
    probes: Sequence[ProfileRecord] = (),
    seed: int = 0,
    gpu: str = "",
) -> RecordDeducer:
    """The deducer of ``backend`` for a training set: the CPU runtime's rules learned from its
    records and the probe graphs' (which teach rules only), the OpenCL backend's own plan, a
    phone's TFLite CPU rules learned from its records, or the TFLite GPU deduction for the family
    of ``gpu`` (the phone's GLES renderer) with the split of its partitions fitted on the records."""
    if backend == "cpu":
        return learn_cpu_deducer([*records, *probes], seed=seed)
    if backend == "opencl":
        return OpenclDeducer()
    if backend == "tflite_cpu":
        return learn_tflite_cpu_deducer(records)
    if backend == "tflite_gpu":
        return learn_tflite_gpu_deducer(records, gpu_family(gpu))
    raise PredictorError(f"no deducer learns from records of backend {backend!r}; the backends are {RECORD_BACKENDS}")


def deduction_agreement(deducer: Deducer, records: Sequence[ProfileRecord]) -> dict[str, float] | None:
    """How well a learned deducer reproduces what ``records`` measured (``CpuDeducer.agreement``,
    ``TfliteCpuDeducer.agreement``); None for a deducer that is the backend's own plan and agrees
    by construction, or whose records time no kernel (a phone's GPU partitions)."""
    if isinstance(deducer, CpuDeducer | TfliteCpuDeducer):
        return deducer.agreement(records)
    return None


def kernels_measured(deducer: Deducer) -> bool:
    """Whether the kernel latencies of the deducer's samples were measured one by one (False for
    a phone's GPU, whose kernels get shares of their partition's time)."""
    return bool(getattr(deducer, "kernels_measured", True))


_LOADERS: dict[str, Callable[[dict[str, Any]], Deducer]] = {
    cpu_rules.KIND: CpuDeducer.from_dict,
    deduce_opencl.KIND: lambda d: OpenclDeducer(),
    deduce_tflite_gpu.KIND: lambda d: TfliteGpuDeducer(str(d["family"])),
    deduce_tflite_cpu.KIND: TfliteCpuDeducer.from_dict,
}


def register_deducer(kind: str, loader: Callable[[dict[str, Any]], Deducer]) -> None:
    """Register how to rebuild a deducer of ``kind`` from its ``to_dict`` data."""
    _LOADERS[kind] = loader


def deducer_from_dict(data: dict[str, Any]) -> Deducer:
    """Rebuild a deducer from ``to_dict`` data; ``PredictorError`` if the kind is unknown or broken."""
    kind = data.get("kind") if isinstance(data, dict) else None
    loader = _LOADERS.get(kind) if isinstance(kind, str) else None
    if loader is None:
        raise PredictorError(f"unknown kernel deducer {kind!r}; known: {sorted(_LOADERS)}")
    try:
        return loader(data)
    except PredictorError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise PredictorError(f"the {kind} kernel deducer's data is broken: {type(e).__name__}: {e}") from None


__all__ = [
    "RECORD_BACKENDS",
    "RecordDeducer",
    "deducer_from_dict",
    "deduction_agreement",
    "kernels_measured",
    "learn_deducer",
    "register_deducer",
]
