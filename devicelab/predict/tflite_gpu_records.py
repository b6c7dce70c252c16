"""The TFLite GPU deduction on phones measured here, from partition rows or per-kernel rows.

``benchmark_model`` with the GPU delegate reports, depending on its version (see
``docs/phones.md``), either one row per delegate partition (``TfLiteGpuDelegateV2``: TensorFlow
Lite up to 2.13 and LiteRT 1.x, the time of a whole run of operators) or, with LiteRT 2.x's
OpenCL delegate, one row per OpenCL dispatch and no partition row (``convolution_2d 0``, named
``Delegate/convolution_2d 0:0``; ``benchmark_output.gpu_dispatch_nodes``). A dispatch row is a
measured kernel time: each such row is a "partition" of the deduced kernels whose anchor operator
it ran, without a partition cost (``fit_share_model(per_partition=False)``), so a row that ran one
deduced kernel gives it exactly its time, and such records make a deducer whose kernels are
measured (``kernels_measured = True``). From partition rows, the kernels are deduced as for the qed phones (``deduce_tflite_gpu``, Algorithms 3.1 and 3.2 for the
phone's GPU family), and what is measured is each partition's total. So a sample is made this
way, and it says so (``kernels_measured = False``; the trainer drops the kernel MAPE):

* the partition's measured time is split over the deduced kernels whose anchor operator it ran,
  in proportion to a *share model*: a cost per FLOP and per element read or written for each
  Table 3 feature group, a cost per kernel and a cost per partition, fitted with non-negative
  least squares on the relative error of the partition totals of the training records
  (``fit_share_model``). Only the split is modelled: each network's kernels add up to its
  partition's measured time less the fitted cost per partition, which stays in the overhead;
* a kernel the fit prices at nothing keeps ``FLOOR`` of the partition's mean kernel cost, so
  every kernel type the deduction names has rows to learn from;
* operators the delegate left to the CPU (their own builtin rows) and runtime rows are not
  kernels of the deduction: their time is part of the overhead.

The per-kernel-type models then learn the split like measured kernels; only the end-to-end error
of such a predictor is a measured error. Prediction needs only the deduction: the artifact's
deducer loads as a plain ``TfliteGpuDeducer`` (the share model is kept in it as a record of how
the samples were made).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from devicelab.backends.android.benchmark_output import gpu_dispatch_nodes
from devicelab.graph.ir import Graph
from devicelab.predict.deduce_tflite_gpu import KIND, TfliteGpuDeducer, deduce_kernels, sited_kernels
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import RAW_NAMES, feature_group
from devicelab.predict.kernels import Kernel
from devicelab.predict.records import ProfileRecord, stat
from devicelab.predict.samples import Sample
from devicelab.predict.tflite_anatomy import anatomy

FLOOR = 0.01  # a kernel priced at nothing keeps this share of the partition's mean kernel cost
MIN_PARTITIONS = 3  # fewer partition totals than this: the split follows the work alone
RIDGE = 1e-6  # makes the fit unique when feature groups always appear together, and barely shrinks it
_FLOPS = RAW_NAMES.index("flops")
_MOVED = tuple(RAW_NAMES.index(n) for n in ("input_size", "output_size", "param_size"))


def kernel_work(k: Kernel) -> tuple[float, float]:
    """A kernel's FLOPs and the elements it reads and writes (activations and weights)."""
    return float(k.raw[_FLOPS]), float(sum(k.raw[i] for i in _MOVED))


@dataclass(frozen=True)
class ShareModel:
    """How a partition's time is split over its kernels: a cost per kernel (ms) from its work."""

    per_flop: dict[str, float]  # feature group -> ms per FLOP
    per_element: dict[str, float]  # feature group -> ms per element read or written
    per_kernel_ms: float
    per_partition_ms: float  # the partition's own cost, left in the overhead
    how: str  # "nnls" (fitted per group) or "work" (one cost per FLOP and element for all)

    def cost(self, k: Kernel) -> float:
        """The modelled cost of one kernel (ms)."""
        g = feature_group(k.type)
        flops, moved = kernel_work(k)
        return self.per_flop.get(g, 0.0) * flops + self.per_element.get(g, 0.0) * moved + self.per_kernel_ms

    def split(self, kernels: Sequence[Kernel], partition_ms: float) -> list[float]:
        """The share of ``partition_ms`` each kernel gets (their sum is at most ``partition_ms``)."""
        if not kernels:
            return []
        costs = np.asarray([self.cost(k) for k in kernels], dtype=np.float64)
        positive = costs[costs > 0]
        floor = FLOOR * (float(positive.mean()) if positive.size else 1.0)
        costs = np.maximum(costs, floor)
        total = float(costs.sum()) + max(self.per_partition_ms, 0.0)
        return [float(c) for c in partition_ms * costs / total]

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "per_flop": dict(sorted(self.per_flop.items())),
            "per_element": dict(sorted(self.per_element.items())),
            "per_kernel_ms": self.per_kernel_ms,
            "per_partition_ms": self.per_partition_ms,
            "how": self.how,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShareModel:
        """From ``to_dict`` data."""
        return cls(
            {str(k): float(v) for k, v in d["per_flop"].items()},
            {str(k): float(v) for k, v in d["per_element"].items()},
            float(d["per_kernel_ms"]),
            float(d["per_partition_ms"]),
            str(d["how"]),
        )


Partition = tuple[Sequence[Kernel], float]  # the deduced kernels a partition ran, its measured time (ms)


def _nnls(columns: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Non-negative coefficients minimizing the relative error of ``columns @ x`` against the
    totals, with a small ridge (columns scaled to 1 first, so it weighs all alike)."""
    from scipy.optimize import nnls

    scale = columns.max(axis=0)
    scale[scale <= 0] = 1.0
    a = columns / scale / totals[:, None]
    a = np.vstack([a, np.sqrt(RIDGE) * np.eye(a.shape[1])])
    b = np.concatenate([np.ones(len(totals)), np.zeros(columns.shape[1])])
    x, _ = nnls(a, b, maxiter=50 * a.shape[1])
    return np.asarray(x / scale, dtype=np.float64)


def _work_model(partitions: Sequence[Partition]) -> ShareModel:
    """One cost per FLOP and per element for every kernel (few totals, or a fit that priced all
    the kernels of some partition at nothing)."""
    groups = sorted({feature_group(k.type) for ks, _ in partitions for k in ks})
    x = np.zeros(2)
    if len(partitions) >= 2:
        rows = np.asarray([[sum(kernel_work(k)[j] for k in ks) for j in (0, 1)] for ks, _ in partitions])
        x = _nnls(rows, np.asarray([p for _, p in partitions]))
    if not np.any(x > 0):  # nothing to fit: by the elements moved alone
        x = np.array([0.0, 1e-6])
    return ShareModel({g: float(x[0]) for g in groups}, {g: float(x[1]) for g in groups}, 0.0, 0.0, "work")


def fit_share_model(partitions: Sequence[Partition], per_partition: bool = True) -> ShareModel:
    """The share model fitted on partition totals (see the module's docs); ``per_partition=False``
    when the totals are kernel rows with no cost of their own (a GPU dispatch row)."""
    usable = [(ks, p) for ks, p in partitions if ks and p > 0]
    groups = sorted({feature_group(k.type) for ks, _ in usable for k in ks})
    if len(usable) < MIN_PARTITIONS:
        return _work_model(usable)
    rows = []
    for ks, _ in usable:
        row = np.zeros(2 * len(groups) + 2 if per_partition else 2 * len(groups) + 1)
        for k in ks:
            g = groups.index(feature_group(k.type))
            flops, moved = kernel_work(k)
            row[2 * g] += flops
            row[2 * g + 1] += moved
        if per_partition:
            row[-2] = len(ks)
            row[-1] = 1.0
        else:
            row[-1] = len(ks)
        rows.append(row)
    x = _nnls(np.asarray(rows), np.asarray([p for _, p in usable]))
    model = ShareModel(
        {g: float(x[2 * i]) for i, g in enumerate(groups)},
        {g: float(x[2 * i + 1]) for i, g in enumerate(groups)},
        float(x[-2] if per_partition else x[-1]),
        float(x[-1]) if per_partition else 0.0,
        "nnls",
    )
    if any(sum(model.cost(k) for k in ks) <= 0 for ks, _ in usable):
        return _work_model(usable)
    return model


@dataclass(frozen=True)
class TfliteGpuRecordDeducer:
    """The TFLite GPU deduction for one GPU family, with the share model that turns a phone
    record's partition times into kernel samples."""

    family: str
    shares: ShareModel
    kind: str = KIND
    kernels_measured: bool = False  # True: from per-dispatch rows; False: shares of a partition's time

    def __post_init__(self) -> None:
        TfliteGpuDeducer(self.family)  # checks the family

    def kernels(self, graph: Graph) -> list[Kernel]:
        """The kernels the delegate runs for ``graph``."""
        return deduce_kernels(graph, self.family)

    def sited_kernels(self, graph: Graph) -> list[tuple[Kernel, int]]:
        """``kernels``, each with the operator that places it in launch order."""
        return sited_kernels(graph, self.family)

    def measured(
        self, record: ProfileRecord, statistic: str = "median", deduced: Sequence[Kernel] | None = None
    ) -> list[Kernel]:
        """The deduced kernels of the record's partitions (``deduced``, else deduced now), each
        with its share of its partition's measured time."""
        kernels = self.kernels(record.graph) if deduced is None else deduced
        out: list[Kernel] = []
        for ks, ms in partitions_of(record, kernels, statistic):
            out.extend(replace(k, latency_ms=v) for k, v in zip(ks, self.shares.split(ks, ms), strict=True))
        return out

    def samples(self, records: Iterable[ProfileRecord], statistic: str = "median") -> list[Sample]:
        """Training / test samples: apportioned kernels, end-to-end latency, deduced kernels."""
        out = []
        for r in records:
            deduced = self.kernels(r.graph)
            measured = self.measured(r, statistic, deduced)
            out.append(Sample(r.graph.name, tuple(measured), r.e2e_ms(statistic), tuple(deduced)))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the artifact: what a ``TfliteGpuDeducer`` loads from, and the share model."""
        return {
            "kind": KIND,
            "family": self.family,
            "kernel_latencies": (
                "the GPU delegate's per-dispatch rows"
                if self.kernels_measured
                else "shares of the delegate partitions' measured times"
            ),
            "shares": self.shares.to_dict(),
        }


def is_gpu_dispatch(kernel: str) -> bool:
    """Whether a row's node type is one GPU delegate dispatch (``convolution_2d 0 -> add 1``)."""
    return gpu_dispatch_nodes(kernel) is not None


def dispatch_rows(record: ProfileRecord) -> set[int]:
    """The owners of a record whose row is a GPU delegate dispatch (LiteRT 2.x per-kernel rows)."""
    an = anatomy(record)
    return {a for a, row in an.rows.items() if is_gpu_dispatch(row.kernel)}


def partitions_of(record: ProfileRecord, kernels: Sequence[Kernel], statistic: str = "median") -> list[Partition]:
    """Each delegate partition of a record: the deduced kernels whose anchor operator it ran, and
    its measured time (ms). Kernels whose anchor ran elsewhere (on the CPU) belong to none. A
    record with GPU dispatch rows (no partition row) gives one "partition" per dispatch row."""
    an = anatomy(record)
    timed = an.partitions | {a for a, row in an.rows.items() if is_gpu_dispatch(row.kernel)}
    where = {i: a for i, a in an.owner.items() if a in timed}
    groups: dict[int, list[Kernel]] = {a: [] for a in timed}
    for k in kernels:
        if k.ops and k.ops[0] in where:
            groups[where[k.ops[0]]].append(k)
    out: list[Partition] = []
    for a in sorted(timed):
        stats = an.rows[a].stats
        assert stats is not None  # rows holds timed rows only
        out.append((groups[a], stat(stats, statistic)))
    return out


def learn_tflite_gpu_deducer(
    records: Sequence[ProfileRecord], family: str, statistic: str = "median"
) -> TfliteGpuRecordDeducer:
    """The GPU deduction of ``family`` with a share model fitted on the records' partitions."""
    if not records:
        raise PredictorError("no records to learn how TFLite GPU partitions split over kernels")
    TfliteGpuDeducer(family)
    parts = [p for r in records for p in partitions_of(r, deduce_kernels(r.graph, family), statistic)]
    if not parts:
        raise PredictorError(
            "none of the records ran an operator on the GPU delegate (no TfLiteGpuDelegate partition row and "
            "no GPU dispatch row such as 'convolution_2d 0'): nothing to train a GPU predictor on"
        )
    # Dispatch rows time kernels themselves: a mix with partition records keeps the share model's
    # partition cost and says the kernels are not all measured.
    per_kernel = all(dispatch_rows(r) and not anatomy(r).partitions for r in records)
    return TfliteGpuRecordDeducer(family, fit_share_model(parts, per_partition=not per_kernel), KIND, per_kernel)


__all__ = [
    "FLOOR",
    "ShareModel",
    "TfliteGpuRecordDeducer",
    "dispatch_rows",
    "fit_share_model",
    "is_gpu_dispatch",
    "kernel_work",
    "learn_tflite_gpu_deducer",
    "partitions_of",
]
