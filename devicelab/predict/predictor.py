"""A scenario's latency predictor: kernel deduction, one model per kernel type, the overhead.

End-to-end latency of a network (paper 001, section 4.2) is ``T_overhead + sum_c f_c(x_c)``
over the kernels ``c`` the deducer says will run, ``f_c`` the model of ``c``'s kernel type and
``T_overhead`` the mean, over the training networks, of measured end-to-end latency minus the
sum of their measured kernel latencies (``overhead="constant"``, the paper's).

``overhead="affine"`` (our extension, off by default) learns ``a * (sum + c * n) + T_overhead``
instead (``n`` the number of kernels), by least squares on the relative error over the training
networks. It is for runtimes whose per-kernel timings understate their time inside the whole run
by a share rather than a constant (a GPU whose gap between end-to-end and kernel sum grows with
the network). ``c`` is a cost per kernel of either sign: a GPU driver's launch cost outside the
kernels' event times, or, negative, a profiler's own cost inside each profiled kernel that the
unprofiled run does not pay (the constant ``T`` removes that only at the training networks' mean
kernel count, so a network of many small kernels would be predicted high). A kernel's prediction
plus ``c`` is never below 0.

``overhead="calibrated"`` (ours too) learns ``a * P**b + T`` where ``P`` is the predictor's *own*
kernel sum of each training network (not the measured one), each kernel's prediction raised by a
launch cost ``c`` (an OpenCL driver spends microseconds per kernel outside the kernels' event
times), by least squares on the relative error. On a CPU the same kernel runs slower inside a
larger network (its weights and inputs are less often still in the caches), which per-kernel
features cannot see; the calibration learns how the predicted sum maps to the whole network's
time, and with ``b`` near 1 how that grows with size. docs/predictors.md has the measurements
behind both.

Where the training data leaves kernel kinds in the overhead (``overhead_kinds``: the qed files
list no element-wise kernel), both also learn ``d``, a cost per activation element each kernel
reads or writes, added to its prediction like ``c`` (``devicelab.predict.traffic``): the unlisted
kernels' time grows with the activations the network moves.

Whatever the overhead model, a prediction is never below ``min_e2e_ratio`` times the predicted
kernel sum: the smallest ratio of end-to-end latency to measured kernel sum among the training
networks, at most 1. It only matters when the fitted ``T`` is negative (profiled kernels that add
up to more than the unprofiled runs, e.g. a profiler's own cost per kernel): a constant negative
``T`` learned on larger networks would otherwise make a small network's latency negative.

A kernel type with fewer than ``MIN_OWN_ROWS`` training rows gets no model of its own when
another type of the same kind has enough, and neither does a type seen in fewer than
``min_networks`` training networks when a model of its kind or feature group can stand in
(``devicelab.predict.coverage``; ``meta["stood_in"]`` lists them): it is then handled as a type
without a model.

Each model's training range (per feature, the smallest and largest value it was trained on) is
stored with the predictor, and every prediction carries warnings for kernels outside it and for
kernels another type's model priced (``devicelab.predict.ranges``).

A kernel type without a model of its own is handled, in order, by: a kind whose time the
training data left in the overhead (``overhead_kinds``: the qed data lists no element-wise
kernels) contributes 0; a model of the same kind, else of the same Table 3 feature group, else
(a grouped convolution) the ordinary convolution's (``features.stand_in_types``) stands in (the
one trained on the most rows; the breakdown and the warnings name it); else the prediction
fails with a ``PredictorError`` naming the type (or, with ``on_missing="zero"``, counts 0 and
lists it).
"""

from __future__ import annotations

import dataclasses
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from devicelab.graph.ir import Graph
from devicelab.predict import models as model_fns
from devicelab.predict.coverage import MIN_NETWORKS_PER_KERNEL, MIN_OWN_ROWS, plan_models
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import (
    FEATURES,
    feature_group,
    feature_matrix,
    kind_of,
    stand_in_types,
    work_column,
)
from devicelab.predict.kernels import Deducer, Kernel
from devicelab.predict.models import FittedModel
from devicelab.predict.ranges import (
    OPAQUE_OPERATORS,
    RANGE_UNKNOWN,
    STAND_IN,
    FeatureRange,
    PredictionWarning,
    outside_warnings,
)
from devicelab.predict.samples import Sample, data_hash
from devicelab.predict.traffic import fit_traffic, kernels_moved, moved

BACKENDS = ("cpu", "tflite_gpu", "opencl", "tflite_cpu")  # tflite_*: phones (and qed) through TFLite
OVERHEADS = ("constant", "affine", "calibrated")


@dataclass(frozen=True)
class Scenario:
    """Where latencies are predicted: backend, device, threads / cores, precision, runtime, and on a
    phone the TFLite delegate (``cpu`` and ``xnnpack`` are both backend ``tflite_cpu``)."""

    backend: str
    device: str  # device identity (or a data set's device name, e.g. qed's "pixel4")
    threads: int = 1
    cores: tuple[int, ...] = ()
    precision: str = "fp32"
    runtime: str = ""  # e.g. "onnxruntime 1.31.1", "tflite gpu delegate (qed data)"
    gpu: str = ""  # GPU name, for GPU backends
    delegate: str = ""  # a phone's TFLite delegate (cpu, xnnpack, gpu); "" elsewhere

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise PredictorError(f"unknown backend {self.backend!r}; the backends are {list(BACKENDS)}")

    @property
    def key(self) -> str:
        """A readable unique key, e.g. ``cpu:<id>|threads=2|cores=0,1|fp32`` (a phone's ends with
        ``|delegate=xnnpack``; keys without a delegate are as they always were)."""
        cores = ",".join(str(c) for c in self.cores) or "any"
        key = f"{self.backend}:{self.device}|threads={self.threads}|cores={cores}|{self.precision}"
        return f"{key}|delegate={self.delegate}" if self.delegate else key

    def to_dict(self) -> dict[str, Any]:
        """Plain data (``delegate`` only when set, so other scenarios' data is unchanged)."""
        d: dict[str, Any] = {
            "backend": self.backend,
            "device": self.device,
            "threads": self.threads,
            "cores": list(self.cores),
            "precision": self.precision,
            "runtime": self.runtime,
            "gpu": self.gpu,
        }
        if self.delegate:
            d["delegate"] = self.delegate
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scenario:
        """From ``to_dict`` data."""
        return cls(
            str(d["backend"]),
            str(d["device"]),
            int(d.get("threads", 1)),
            tuple(int(c) for c in d.get("cores", ())),
            str(d.get("precision", "fp32")),
            str(d.get("runtime", "")),
            str(d.get("gpu", "")),
            str(d.get("delegate", "")),
        )


@dataclass(frozen=True)
class KernelPrediction:
    """One kernel's predicted latency, and which model gave it."""

    name: str
    type: str
    ops: tuple[int, ...]
    latency_ms: float
    model: str  # the kernel type whose model predicted it; "overhead" or "missing" when none


@dataclass(frozen=True)
class Prediction:
    """A network's predicted end-to-end latency."""

    name: str
    latency_ms: float
    kernels_ms: float  # sum over kernels
    overhead_ms: float
    kernels: tuple[KernelPrediction, ...] | None = None  # with ``breakdown=True``
    missing: tuple[str, ...] = ()  # kernel types no model covered (``on_missing="zero"``)
    warnings: tuple[PredictionWarning, ...] = ()  # kernels outside the training range, stand-ins


@dataclass
class ScenarioPredictor:
    """Per-kernel-type models + ``T_overhead`` + the deducer, for one scenario and method."""

    scenario: Scenario
    method: str
    deducer: Deducer
    models: dict[str, FittedModel]
    t_overhead_ms: float
    overhead_kinds: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    kernel_scale: float = 1.0  # ``a`` of the affine / calibrated overhead; 1 for the paper's constant
    kernel_power: float = 1.0  # ``b`` of the calibrated overhead
    per_kernel_ms: float = 0.0  # ``c`` of the affine / calibrated overhead: added to every predicted kernel
    # ``d`` of the affine / calibrated overhead where kinds are left in it: ms per activation
    # element a kernel reads or writes, added to its prediction (``devicelab.predict.traffic``)
    per_element_ms: float = 0.0
    min_e2e_ratio: float = 0.0  # the floor: end-to-end >= this * kernel sum (see the module's docs)
    # per model (kernel type), the range of each feature it was trained on; None: trained before
    # ranges were recorded (every prediction then says its range is unknown)
    training_ranges: dict[str, FeatureRange] | None = None

    def end_to_end(self, kernels_ms: float) -> float:
        """End-to-end latency from a network's predicted kernel sum: ``a * sum**b + T``, never below
        ``min_e2e_ratio * sum`` (nor 0)."""
        if self.kernel_power == 1.0 or kernels_ms <= 0:
            value = self.kernel_scale * kernels_ms + self.t_overhead_ms
        else:
            value = self.kernel_scale * kernels_ms**self.kernel_power + self.t_overhead_ms
        return max(value, self.min_e2e_ratio * kernels_ms, 0.0)

    # -- resolving kernel types to models ------------------------------------------------------

    def resolve(self, kernel_type: str) -> str | None:
        """The kernel type whose model predicts ``kernel_type``: itself, a stand-in, ``"overhead"``
        (its time is in ``T_overhead``), or None."""
        if kernel_type in self.models:
            return kernel_type
        kind = kind_of(kernel_type)
        if kind in self.overhead_kinds:
            return "overhead"
        try:
            pool = stand_in_types(kernel_type, self.models)
        except KeyError:
            return None
        if not pool:
            return None
        return max(pool, key=lambda t: (self.models[t].n_train, t))

    # -- prediction ----------------------------------------------------------------------------

    def predict(self, graphs: Sequence[Graph], breakdown: bool = False, on_missing: str = "error") -> list[Prediction]:
        """Predicted end-to-end latency of each graph (kernels deduced by the scenario's deducer)."""
        kernel_lists = [self.deducer.kernels(g) for g in graphs]
        predictions = self.predict_kernels(kernel_lists, [g.name for g in graphs], breakdown, on_missing)
        return [with_opaque_warning(p, g) for p, g in zip(predictions, graphs, strict=True)]

    def predict_kernels(
        self,
        kernel_lists: Sequence[Sequence[Kernel]],
        names: Sequence[str] | None = None,
        breakdown: bool = False,
        on_missing: str = "error",
    ) -> list[Prediction]:
        """Predicted end-to-end latency from already deduced kernel lists (one per network)."""
        if on_missing not in ("error", "zero"):
            raise PredictorError(f"on_missing must be 'error' or 'zero', not {on_missing!r}")
        names = list(names) if names is not None else [f"network-{i}" for i in range(len(kernel_lists))]
        owner: list[int] = []
        flat: list[Kernel] = []
        for n, ks in enumerate(kernel_lists):
            flat.extend(ks)
            owner.extend([n] * len(ks))
        owner_a = np.asarray(owner, dtype=np.int64)
        lat = np.zeros(len(flat))
        used: list[str] = [""] * len(flat)
        by_type: dict[str, list[int]] = {}
        for i, k in enumerate(flat):
            by_type.setdefault(k.type, []).append(i)
        missing: dict[str, set[int]] = {}
        warned: list[tuple[int, PredictionWarning]] = []
        for ktype, idx in by_type.items():
            target = self.resolve(ktype)
            if target is None:
                if on_missing == "error":
                    raise PredictorError(
                        f"the {self.method} predictor for {self.scenario.key} has no model for kernel type "
                        f"{ktype!r} (models: {sorted(self.models)}); train it on networks that run such kernels"
                    )
                for i in idx:
                    used[i] = "missing"
                    missing.setdefault(ktype, set()).add(owner[i])
                continue
            for i in idx:
                used[i] = target
            if target == "overhead":
                continue
            group = feature_group(target)
            # A batch of NAS candidates runs the same kernels over and over (1,000 NB-201 cells:
            # 82,000 kernels, a few hundred distinct rows): the rows are read once each.
            distinct: dict[tuple[float, ...], int] = {}
            inverse = np.fromiter(
                (distinct.setdefault(tuple(flat[i].raw), len(distinct)) for i in idx), dtype=np.int64, count=len(idx)
            )
            raws = np.asarray(list(distinct), dtype=np.float64)
            model = self.models[target]
            if model.row_by_row:
                # each distinct row is predicted once (a GBDT walked every tree for every
                # kernel: seconds) and handed to every kernel that has it, the same numbers
                x_distinct = feature_matrix(group, raws)
                predicted = model.predict(x_distinct)[inverse]
                x = x_distinct[inverse]
            else:
                # a matrix product's last bits depend on the rows it is given and on their
                # layout in memory: every kernel's row goes in, laid out as it always was
                x = feature_matrix(group, raws[inverse])
                predicted = model.predict(x)
            # ``c`` may be negative (a profiler's cost inside each measured kernel): never below 0
            added = self.per_kernel_ms + (self.per_element_ms * moved(raws)[inverse] if self.per_element_ms else 0.0)
            lat[idx] = np.maximum(predicted + added, 0.0)
            owners = owner_a[idx]
            if target != ktype:
                warned += self._stand_in_warnings(ktype, target, owners)
            ranges = self.training_ranges
            if ranges is not None and target in ranges:
                warned += outside_warnings(ktype, target, FEATURES[group], x, owners, ranges[target], lat[idx])
        by_network: dict[int, list[PredictionWarning]] = {}
        for n, w in warned:
            by_network.setdefault(n, []).append(w)
        unknown = (PredictionWarning(RANGE_UNKNOWN),) if self.training_ranges is None else ()
        kernel_sums = (
            np.bincount(owner_a, weights=lat, minlength=len(kernel_lists)) if flat else np.zeros(len(kernel_lists))
        )
        out = []
        start = 0
        for n, ks in enumerate(kernel_lists):
            total = float(kernel_sums[n])
            details = None
            if breakdown:
                details = tuple(
                    KernelPrediction(k.name, k.type, k.ops, float(lat[start + j]), used[start + j])
                    for j, k in enumerate(ks)
                )
            miss = tuple(sorted(t for t, owners in missing.items() if n in owners))
            e2e = self.end_to_end(total)
            found = sorted(by_network.get(n, ()), key=_warning_order)
            out.append(Prediction(names[n], e2e, total, e2e - total, details, miss, (*unknown, *found)))
            start += len(ks)
        return out

    def _stand_in_warnings(self, ktype: str, target: str, owners: np.ndarray) -> list[tuple[int, PredictionWarning]]:
        """(network, warning) per network whose ``ktype`` kernels the ``target`` model priced."""
        if "kernel_networks" in self.meta:
            seen: int | None = int(self.meta["kernel_networks"].get(ktype, 0))
        else:  # trained before networks were counted: a stood-in type was seen, every other never
            seen = None if ktype in self.meta.get("stood_in", {}) else 0
        networks, counts = np.unique(owners, return_counts=True)
        return [
            (int(n), PredictionWarning(STAND_IN, ktype, int(c), target, train_networks=seen))
            for n, c in zip(networks, counts)
        ]

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary: scenario, method, overhead, models with their sizes and searches."""
        return {
            "scenario": self.scenario.to_dict(),
            "method": self.method,
            "t_overhead_ms": self.t_overhead_ms,
            "kernel_scale": self.kernel_scale,
            "kernel_power": self.kernel_power,
            "per_kernel_ms": self.per_kernel_ms,
            "per_element_ms": self.per_element_ms,
            "overhead_kinds": list(self.overhead_kinds),
            "models": {
                t: {"method": m.method, "n_train": m.n_train, "hyper": m.hyper, "cv_mspe": m.cv_mspe}
                for t, m in sorted(self.models.items())
            },
            "meta": self.meta,
        }


def with_opaque_warning(prediction: Prediction, graph: Graph | None) -> Prediction:
    """The prediction, warned that the graph's opaque operators (outside the graph IR: a TFLite
    ARG_MAX, a custom operator) are not in it: the deducers predict no kernel for them."""
    opaque = graph.opaque_operators() if graph is not None else []
    if not opaque:
        return prediction
    names = ", ".join(sorted({str(o.attrs.get("op", o.name)) for o in opaque}))
    warning = PredictionWarning(OPAQUE_OPERATORS, names, len(opaque))
    return replace(prediction, warnings=(*prediction.warnings, warning))


def _warning_order(w: PredictionWarning) -> tuple[str, str]:
    return (w.code, w.kernel_type)


def library_versions() -> dict[str, str]:
    """Versions of what trained a predictor (stored for reproducibility, not needed to load it)."""
    import sklearn

    versions = {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__}
    try:
        import scipy

        versions["scipy"] = scipy.__version__
    except ImportError:  # pragma: no cover - scikit-learn depends on it
        pass
    return versions


def train_predictor(
    samples: Sequence[Sample],
    deducer: Deducer,
    scenario: Scenario,
    method: str,
    seed: int = 0,
    search: str = "paper",
    overhead_kinds: Sequence[str] = (),
    mlp_trials: int = 8,
    extra_meta: dict[str, Any] | None = None,
    overhead: str = "constant",
    min_networks: int = MIN_NETWORKS_PER_KERNEL,
) -> ScenarioPredictor:
    """Train one model per kernel type on the samples' measured kernels, and ``T_overhead``.

    A type seen in fewer than ``min_networks`` samples is stood in for by a model of its kind or
    feature group where there is one (``coverage.plan_models``); where there is none it keeps a
    model of its own and ``meta["uncovered"]`` names it (the server refuses such a predictor)."""
    if not samples:
        raise PredictorError("no training samples")
    if overhead not in OVERHEADS:
        raise PredictorError(f"unknown overhead model {overhead!r}; use one of {list(OVERHEADS)}")
    if method not in model_fns.METHODS:
        raise PredictorError(f"unknown method {method!r}; the methods are {list(model_fns.METHODS)}")
    plan = plan_models(samples, min_networks)
    started = time.perf_counter()
    models: dict[str, FittedModel] = {}
    ranges: dict[str, FeatureRange] = {}
    for ktype in sorted([*plan.own, *plan.uncovered]):
        # a type of ``plan.stood_in`` gets none: a constant fitted to a kernel or two would price
        # every kernel of the type, of any size, like those seen; ``resolve`` picks the model
        # that follows the work
        ks = plan.rows[ktype]
        group = feature_group(ktype)
        x = feature_matrix(group, [k.raw for k in ks])
        y = np.asarray([k.latency_ms for k in ks], dtype=np.float64)
        models[ktype] = model_fns.fit(
            method, x, y, seed=seed, search=search, mlp_trials=mlp_trials, work=work_column(group)
        )
        ranges[ktype] = FeatureRange.of(x)
    meta = {
        "seed": seed,
        "search": search,
        "overhead": overhead,
        "n_train_samples": len(samples),
        "stood_in": plan.stood_in,  # kernel type -> its few rows, predicted by another type's model
        "min_networks": min_networks,
        "kernel_networks": plan.networks,  # kernel type -> training networks that ran it
        "uncovered": plan.uncovered,  # kernel type -> its networks: too few, and nothing stands in
        "training_data_sha256": data_hash(samples),
        "training_samples": [s.name for s in samples][:2000],
        "libraries": library_versions(),
        "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "train_seconds": round(time.perf_counter() - started, 3),
        **(extra_meta or {}),
    }
    plain = ScenarioPredictor(
        scenario, method, deducer, models, 0.0, tuple(overhead_kinds), meta, training_ranges=ranges
    )
    return with_overhead(plain, samples, overhead)


def with_overhead(
    predictor: ScenarioPredictor, samples: Sequence[Sample], overhead: str, traffic: bool | None = None
) -> ScenarioPredictor:
    """The same kernel models with the ``overhead`` model fitted on the training ``samples``, as
    ``train_predictor(overhead=...)`` fits it: overhead models compare without retraining.
    ``traffic``: whether the affine / calibrated overhead may learn the activation-traffic term
    (``devicelab.predict.traffic``); by default where the predictor leaves kinds in the overhead."""
    if overhead not in OVERHEADS:
        raise PredictorError(f"unknown overhead model {overhead!r}; use one of {list(OVERHEADS)}")
    # Paper 001, section 4.2: the mean gap between end-to-end latency and the kernels' sum.
    t_overhead = float(np.mean([s.e2e_ms - s.kernel_sum_ms for s in samples]))
    traffic = bool(predictor.overhead_kinds) if traffic is None else traffic
    scale, power, per_kernel, per_element = 1.0, 1.0, 0.0, 0.0
    e2e = [s.e2e_ms for s in samples]
    if overhead == "affine":
        scale, per_kernel, t_overhead = fit_affine_overhead(samples, t_overhead)
        if traffic:
            measured = [[k for k in s.measured if k.latency_ms] for s in samples]
            scale, power, per_kernel, per_element, t_overhead = fit_traffic(
                [s.kernel_sum_ms for s in samples],
                [len(ks) for ks in measured],
                [kernels_moved(ks) for ks in measured],
                e2e,
                (scale, 1.0, per_kernel, t_overhead),
                fit_power=False,
            )
    elif overhead == "calibrated":
        plain = dataclasses.replace(
            predictor, kernel_scale=1.0, kernel_power=1.0, per_kernel_ms=0.0, per_element_ms=0.0, t_overhead_ms=0.0
        )
        predicted = plain.predict_kernels([s.prediction_input() for s in samples], on_missing="zero")
        priced = [[k for k in s.prediction_input() if plain.resolve(k.type) not in (None, "overhead")] for s in samples]
        sums = [p.kernels_ms for p in predicted]
        scale, power, per_kernel, t_overhead = fit_calibration(sums, [len(ks) for ks in priced], e2e, t_overhead)
        if traffic:
            scale, power, per_kernel, per_element, t_overhead = fit_traffic(
                sums,
                [len(ks) for ks in priced],
                [kernels_moved(ks) for ks in priced],
                e2e,
                (scale, power, per_kernel, t_overhead),
                fit_power=True,
            )
    return dataclasses.replace(
        predictor,
        t_overhead_ms=t_overhead,
        meta={**predictor.meta, "overhead": overhead},
        kernel_scale=scale,
        kernel_power=power,
        per_kernel_ms=per_kernel,
        per_element_ms=per_element,
        min_e2e_ratio=min_e2e_ratio(samples),
    )


def min_e2e_ratio(samples: Sequence[Sample]) -> float:
    """The smallest end-to-end / measured kernel sum ratio of the training networks, at most 1
    (0 when no network has a kernel sum)."""
    ratios = [s.e2e_ms / s.kernel_sum_ms for s in samples if s.kernel_sum_ms > 0]
    return min(1.0, min(ratios)) if ratios else 0.0


def fit_affine_overhead(samples: Sequence[Sample], fallback: float) -> tuple[float, float, float]:
    """``(a, c, T)`` minimizing ``sum(((a * (S + c * n) + T - E) / E)^2)`` over the training
    networks (S: sum of measured kernels, n: their number, E: end-to-end), ``a > 0`` and ``c``
    of either sign: a launch cost per kernel outside the kernels' times (GPU drivers), or a
    profiler's own cost inside each measured kernel that the unprofiled run does not pay (ONNX
    Runtime on the CPU). Without a kernel count that fits (all networks of one
    size, or a degenerate solution): ``(a, 0, T)``; without that either, ``(1, 0, fallback)``."""
    s = np.asarray([x.kernel_sum_ms for x in samples])
    n = np.asarray([sum(1 for k in x.measured if k.latency_ms) for x in samples], dtype=np.float64)
    e = np.asarray([x.e2e_ms for x in samples])
    if len(samples) < 3 or np.ptp(s) <= 0:
        return 1.0, 0.0, fallback
    ones = np.ones_like(e)
    if len(samples) >= 5 and np.ptp(n) > 0:
        x = np.stack([s, n, ones], axis=1) / e[:, None]
        if np.linalg.matrix_rank(x) == 3:
            a, an, t = np.linalg.lstsq(x, ones, rcond=None)[0]
            if np.isfinite(a) and np.isfinite(an) and np.isfinite(t) and a > 0:
                return float(a), float(an / a), float(t)
    a, t = np.linalg.lstsq(np.stack([s, ones], axis=1) / e[:, None], ones, rcond=None)[0]
    if not (np.isfinite(a) and np.isfinite(t)) or a <= 0:
        return 1.0, 0.0, fallback
    return float(a), 0.0, float(t)


POWERS = np.round(np.arange(0.80, 1.3001, 0.005), 3)  # the grid of ``b`` the calibration searches
# and of ``c``: a launch cost of 0.1 us to 100 us per kernel, or a profiler's cost of 0.1 us to 10 us
PER_KERNEL_MS = np.concatenate([[0.0], np.geomspace(1e-4, 0.1, 31), -np.geomspace(1e-4, 0.01, 21)])


def fit_calibration(
    predicted: Sequence[float], kernels: Sequence[int], e2e: Sequence[float], fallback: float
) -> tuple[float, float, float, float]:
    """``(a, b, c, T)`` minimizing ``sum(((a * (P + c * n)**b + T - E) / E)^2)`` over the training
    networks (P: the predictor's kernel sum, n: its number of predicted kernels, E: measured
    end-to-end), ``a > 0``, ``b`` on ``POWERS`` and ``c`` on ``PER_KERNEL_MS`` (a launch cost per
    kernel, e.g. an OpenCL driver's, or negative: a profiler's cost inside each measured
    kernel; ``P + c * n`` must stay positive); the constant ``(1, 1, 0, fallback)`` when there are
    too few networks or nothing fits."""
    p = np.asarray(predicted, dtype=np.float64)
    n = np.asarray(kernels, dtype=np.float64)
    e = np.asarray(e2e, dtype=np.float64)
    if len(p) < 5 or np.any(p <= 0) or np.ptp(p) <= 0:
        return 1.0, 1.0, 0.0, fallback
    best: tuple[float, float, float, float, float] | None = None
    ones = np.ones_like(e)
    for c in PER_KERNEL_MS:
        base = p + c * n
        if np.any(base <= 0):
            continue
        for b in POWERS:
            x = np.stack([base**b, ones], axis=1) / e[:, None]
            (a, t), *_ = np.linalg.lstsq(x, ones, rcond=None)
            if not (np.isfinite(a) and np.isfinite(t)) or a <= 0:
                continue
            err = float(np.sum((x @ np.array([a, t]) - 1) ** 2))
            if best is None or err < best[0]:
                best = (err, float(a), float(b), float(c), float(t))
    if best is None:
        return 1.0, 1.0, 0.0, fallback
    return best[1], best[2], best[3], best[4]


__all__ = [
    "BACKENDS",
    "MIN_OWN_ROWS",
    "OVERHEADS",
    "KernelPrediction",
    "Prediction",
    "Scenario",
    "ScenarioPredictor",
    "fit_affine_overhead",
    "fit_calibration",
    "library_versions",
    "min_e2e_ratio",
    "train_predictor",
    "with_overhead",
]
