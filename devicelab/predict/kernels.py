"""Kernels: what really runs for a graph in one scenario, and the interface of the deducers that say so.

A *kernel* is one unit of work a runtime dispatches: an anchor operator plus what the runtime
fused into it (a convolution with its batch norm and ReLU), or a kernel the runtime inserted on
its own (a layout reorder). Latency predictors are trained and applied per *kernel type*
(``conv2d``, ``winograd``, ``conv2d/nchwc``, ...), the paper's "operation-wise" unit (001,
section 4.1): a GPU's Winograd convolution and its direct convolution get separate models.

A *deducer* turns a graph into its kernel list without running it, for one backend:
``deduce_tflite_gpu.TfliteGpuDeducer`` (Algorithms 3.1 and 3.2 per GPU family),
``deduce_cpu.CpuDeducer`` (the host runtime's fusions, learned from what it recorded),
``deduce_opencl.OpenclDeducer`` (the lab OpenCL backend's own plan), and for phones
``deduce_tflite_cpu.TfliteCpuDeducer`` (TFLite's CPU kernels, learned from ``benchmark_model``
records) and ``tflite_gpu_records.TfliteGpuRecordDeducer`` (the GPU deduction, with partition
times split over its kernels). Deducers serialize to
plain data so a predictor artifact carries the deduction it was trained with; ``deducers``
picks the deducer of a scenario and rebuilds one from that data. This module imports none of
them, so every deducer can import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from devicelab.graph.ir import Graph
from devicelab.predict.features import feature_group


@dataclass(frozen=True)
class Kernel:
    """One kernel: its type (the predictor key), the IR operators it computes, its features."""

    type: str  # e.g. "conv2d", "winograd", "conv2d/nchwc", "reorder_output/nchwc"
    ops: tuple[int, ...]  # indices of the IR operators it computes, anchor first (empty: runtime-inserted)
    raw: tuple[float, ...]  # ``features.raw_features`` of the anchor (or of the tensor a runtime kernel moves)
    name: str = ""  # a readable label, e.g. "convolution_2d_3_linked_:_relu_4"
    latency_ms: float | None = None  # measured latency, for training and evaluation

    @property
    def group(self) -> str:
        """The Table 3 feature group of this kernel's type."""
        return feature_group(self.type)


class Deducer(Protocol):
    """Deduces the kernels a backend runs for a graph."""

    @property
    def kind(self) -> str:
        """The deducer's name in artifacts (``cpu``, ``tflite_gpu``, ``opencl``)."""
        ...

    def kernels(self, graph: Graph) -> list[Kernel]:
        """The kernels that run for ``graph``, in launch order."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Plain data (with ``kind``) from which ``deducer_from_dict`` rebuilds this deducer."""
        ...


__all__ = ["Deducer", "Kernel"]
