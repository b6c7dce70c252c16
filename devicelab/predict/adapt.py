"""A predictor for a device with only a few end-to-end measurements ("shots"), from the predictors
of other devices (the "sources"): HELP (NeurIPS'21) and MAPLE-Edge's setting, with kernel-level
knowledge of the new device.

The target's kernels are deduced with its own deducer (its GPU family's kernel choices). Each
source prices those kernels with its own per-kernel-type models; the priced kernels are summed
per *kernel group* (``kernel_group``: the kernel's kind, for convolutions and depthwise
convolutions also 1x1 or wider and small or large output). On the shots, per source, the target's
end-to-end latency is fitted as ``sum_g c_g * X_g + T`` minimizing the relative squared error, the
group scales ``c_g`` drawn towards their common mean by a ridge penalty (``RIDGE``): with ten
shots a scale per group would chase noise, one scale for all groups ignores that kernel costs do
not transfer alike between GPU families (a depthwise kernel is relatively cheaper on one GPU, a
wide convolution on another). The sources' fitted predictions are averaged with weights
``1 / LOO_MAPE^2`` (each source's leave-one-out error on the shots): a source whose kernels
transfer well to the target gets the say.

How good it is, leave-one-phone-out on the qed phones, and what each part contributes:
``benchmarks/predictor_adapt.py`` and ``docs/predictors.md`` ("A predictor for a new device").
The method and ``RIDGE`` were chosen on three phones (pixel4, a03s, iphone7) and draws with seeds
100-109; the reported numbers use seeds 0-49.

``distil`` turns an adapted predictor into an ordinary ``ScenarioPredictor`` (per-kernel-type
models trained on the adapted kernel latencies of many networks, the sources' weighted overhead
as its constant), so it is stored, served and warned about like any other predictor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from devicelab.graph.ir import Graph
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import kind_of
from devicelab.predict.kernels import Deducer, Kernel
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor
from devicelab.predict.samples import Sample

# The ridge drawing each source's group scales towards their mean (chosen on the development
# phones and seeds, see the module's docs: 0.1-0.3 were equal there, 1 and 3 slightly worse).
RIDGE = 0.3
MIN_SHOTS = 3
# Output height up to which a convolution counts as "small" (7x7 and 14x14 stages: many channels,
# few pixels; a GPU's occupancy differs there from the large early stages).
SMALL_OUTPUT_HW = 14
_CONV_KINDS = ("conv2d", "winograd", "grouped_conv2d")
_DW_KINDS = ("depthwise_conv2d", "dw_conv_plus_1x1")
_KERNEL_HW, _OUTPUT_HW = 5, 2  # positions in ``features.RAW_NAMES``


def kernel_group(kernel: Kernel, fine: bool = True) -> str:
    """The group a kernel's adapted scale belongs to: ``conv1x1`` / ``convkxk`` / ``depthwise``
    with ``/small`` or ``/large`` output, else the kind (``fully_connected``, ``pooling``, ...);
    with ``fine=False`` only ``conv``, ``depthwise`` and ``other`` (the ablation's coarse groups)."""
    kind = kind_of(kernel.type)
    if kind in _CONV_KINDS:
        group = "conv"
        if fine:
            group += "1x1" if kernel.raw[_KERNEL_HW] == 1 else "kxk"
    elif kind in _DW_KINDS:
        group = "depthwise"
    else:
        return kind if fine else "other"
    if fine:
        group += "/small" if kernel.raw[_OUTPUT_HW] <= SMALL_OUTPUT_HW else "/large"
    return group


def group_sums(
    source: ScenarioPredictor, kernel_lists: Sequence[Sequence[Kernel]], groups: Sequence[str], fine: bool = True
) -> np.ndarray:
    """``[network, group]``: the source's predicted latency (ms) of each network's kernels, summed
    per ``kernel_group`` (kernels it leaves in its overhead or cannot price count nothing)."""
    out = np.zeros((len(kernel_lists), len(groups)))
    index = {g: i for i, g in enumerate(groups)}
    predictions = source.predict_kernels(kernel_lists, breakdown=True, on_missing="zero")
    for n, (p, kernels) in enumerate(zip(predictions, kernel_lists, strict=True)):
        for kp, k in zip(p.kernels or (), kernels, strict=True):
            if kp.model in ("overhead", "missing"):
                continue
            out[n, index[kernel_group(k, fine)]] += kp.latency_ms
    return out


def groups_of(kernel_lists: Sequence[Sequence[Kernel]], fine: bool = True) -> tuple[str, ...]:
    """The kernel groups the networks use, sorted."""
    return tuple(sorted({kernel_group(k, fine) for ks in kernel_lists for k in ks}))


def fit_groups(x: np.ndarray, e2e: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """``[c_1..c_G, T]`` minimizing ``sum(((x @ c + T - E) / E)^2) + ridge * sum((c_g - mean(c))^2)``."""
    n, g = x.shape
    a = np.column_stack([x, np.ones(n)]) / e2e[:, None]
    b = np.ones(n)
    if ridge > 0 and g > 1:
        # (c_g - mean c): the identity minus 1/G in the scale columns, nothing on T
        penalty = np.zeros((g, g + 1))
        penalty[:, :g] = np.eye(g) - 1.0 / g
        a = np.vstack([a, np.sqrt(ridge) * penalty])
        b = np.concatenate([b, np.zeros(g)])
    coef: np.ndarray = np.linalg.lstsq(a, b, rcond=None)[0]
    return coef


def apply_groups(coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """End-to-end latencies (ms) of ``fit_groups`` coefficients on ``[network, group]`` sums."""
    out: np.ndarray = x @ coef[:-1] + coef[-1]
    return out


def loo_mape(x: np.ndarray, e2e: np.ndarray, ridge: float = RIDGE) -> float:
    """Leave-one-out MAPE (fraction) of ``fit_groups`` on the shots."""
    errors = []
    for j in range(len(e2e)):
        keep = np.arange(len(e2e)) != j
        coef = fit_groups(x[keep], e2e[keep], ridge)
        errors.append(abs(float(apply_groups(coef, x[j : j + 1])[0]) - e2e[j]) / e2e[j])
    return float(np.mean(errors))


@dataclass(frozen=True)
class Adaptation:
    """The fitted adaptation: per source its group scales, overhead, shot LOO error and weight."""

    groups: tuple[str, ...]
    coefs: np.ndarray  # [source, group + 1]: the group scales, then T (ms)
    source_loo: np.ndarray  # [source]: each source's leave-one-out MAPE on the shots
    weights: np.ndarray  # [source], summing to 1

    def predict(self, sums: np.ndarray) -> np.ndarray:
        """End-to-end latencies from ``[source, network, group]`` sums."""
        per_source = np.stack([apply_groups(c, s) for c, s in zip(self.coefs, sums, strict=True)])
        out: np.ndarray = self.weights @ per_source
        return out


def fit_adaptation(
    sums: np.ndarray, e2e: np.ndarray, groups: Sequence[str], ridge: float = RIDGE, weighted: bool = True
) -> Adaptation:
    """The adaptation from the shots' ``[source, shot, group]`` sums and measured latencies (ms)."""
    e2e = np.asarray(e2e, dtype=np.float64)
    if len(e2e) < MIN_SHOTS:
        raise PredictorError(f"adapting needs at least {MIN_SHOTS} measured networks, got {len(e2e)}")
    if np.any(e2e <= 0):
        raise PredictorError("every measured latency must be positive")
    coefs = np.stack([fit_groups(s, e2e, ridge) for s in sums])
    loo = np.array([loo_mape(s, e2e, ridge) for s in sums])
    # A source's say falls with the square of its shot error (floored: a perfect fit on a handful
    # of shots is luck, not a reason to silence the rest).
    weights = 1.0 / np.maximum(loo, 1e-3) ** 2 if weighted else np.ones(len(loo))
    return Adaptation(tuple(groups), coefs, loo, weights / weights.sum())


def adaptation_loo(sums: np.ndarray, e2e: np.ndarray, groups: Sequence[str], ridge: float = RIDGE) -> list[float]:
    """Each shot's latency (ms) predicted by the whole adaptation (weights included) fitted without
    it: the adapted predictor's stated uncertainty is their error."""
    out = []
    for j in range(len(e2e)):
        keep = np.arange(len(e2e)) != j
        fitted = fit_adaptation(sums[:, keep], e2e[keep], groups, ridge)
        out.append(float(fitted.predict(sums[:, j : j + 1])[0]))
    return out


@dataclass(frozen=True)
class Shot:
    """One network measured end to end on the target: its deduced kernels and latency (ms)."""

    name: str
    kernels: tuple[Kernel, ...]
    latency_ms: float


@dataclass
class AdaptedPredictor:
    """A target device's predictor from a few shots and the sources' predictors."""

    scenario: Scenario
    deducer: Deducer
    sources: tuple[ScenarioPredictor, ...]
    source_names: tuple[str, ...]
    adaptation: Adaptation
    shots: tuple[Shot, ...]
    shot_predictions: tuple[float, ...]  # each shot's latency (ms) predicted without it

    @property
    def shot_errors(self) -> tuple[float, ...]:
        """Each shot's leave-one-out relative error."""
        return tuple(
            abs(p - s.latency_ms) / s.latency_ms for p, s in zip(self.shot_predictions, self.shots, strict=True)
        )

    @property
    def loo_mape(self) -> float:
        """The leave-one-out MAPE on the shots (fraction): the stated uncertainty."""
        return float(np.mean(self.shot_errors))

    def sums(self, kernel_lists: Sequence[Sequence[Kernel]]) -> np.ndarray:
        """``[source, network, group]`` sums of the networks' kernels."""
        return np.stack([group_sums(s, kernel_lists, self.adaptation.groups) for s in self.sources])

    def predict_kernels(self, kernel_lists: Sequence[Sequence[Kernel]]) -> np.ndarray:
        """End-to-end latencies (ms) of networks given as the target's deduced kernels."""
        self._check_groups(kernel_lists)
        return self.adaptation.predict(self.sums(kernel_lists))

    def predict(self, graphs: Sequence[Graph]) -> np.ndarray:
        """End-to-end latencies (ms) of graphs (kernels deduced by the target's deducer)."""
        return self.predict_kernels([self.deducer.kernels(g) for g in graphs])

    def kernel_latencies(self, kernel_lists: Sequence[Sequence[Kernel]]) -> list[np.ndarray]:
        """Per network, each kernel's adapted latency (ms): the sources' prices, scaled per group
        and weighted (one batch per source)."""
        self._check_groups(kernel_lists)
        index = {g: i for i, g in enumerate(self.adaptation.groups)}
        rows = [np.asarray([index[kernel_group(k)] for k in ks], dtype=np.int64) for ks in kernel_lists]
        out = [np.zeros(len(ks)) for ks in kernel_lists]
        for source, coef, weight in zip(self.sources, self.adaptation.coefs, self.adaptation.weights, strict=True):
            predictions = source.predict_kernels(kernel_lists, breakdown=True, on_missing="zero")
            for n, p in enumerate(predictions):
                priced = np.asarray(
                    [0.0 if kp.model in ("overhead", "missing") else kp.latency_ms for kp in p.kernels or ()]
                )
                if len(priced):
                    out[n] += weight * coef[rows[n]] * priced
        return out

    @property
    def overhead_ms(self) -> float:
        """The weighted overhead ``T`` of the sources' fits (ms)."""
        return float(self.adaptation.weights @ self.adaptation.coefs[:, -1])

    def provenance(self) -> dict[str, Any]:
        """What it was made from and how: shots, sources with their weights and scales, errors."""
        a = self.adaptation
        return {
            "method": "adapted",
            "ridge": RIDGE,
            "groups": list(a.groups),
            "shots": [
                {"name": s.name, "latency_ms": s.latency_ms, "loo_predicted_ms": p, "loo_error": e}
                for s, p, e in zip(self.shots, self.shot_predictions, self.shot_errors, strict=True)
            ],
            "sources": [
                {
                    "name": name,
                    "weight": float(w),
                    "loo_mape": float(loo),
                    "scales": {g: float(c) for g, c in zip(a.groups, coef[:-1], strict=True)},
                    "overhead_ms": float(coef[-1]),
                }
                for name, w, loo, coef in zip(self.source_names, a.weights, a.source_loo, a.coefs, strict=True)
            ],
            "loo_mape": self.loo_mape,
        }

    def _check_groups(self, kernel_lists: Sequence[Sequence[Kernel]]) -> None:
        unknown = sorted(set(groups_of(kernel_lists)) - set(self.adaptation.groups))
        if unknown:
            raise PredictorError(f"kernel groups {unknown} were in no measured network: add a shot that runs them")


def adapt(
    sources: Sequence[ScenarioPredictor],
    shots: Sequence[Shot],
    scenario: Scenario,
    deducer: Deducer,
    source_names: Sequence[str] | None = None,
    extra_groups: Sequence[Sequence[Kernel]] = (),
) -> AdaptedPredictor:
    """Fit the target's adapted predictor on its shots from the sources' predictors.

    ``extra_groups``: kernel lists of networks it will be asked about, whose groups the shots may
    not all cover (a group no shot has keeps the common scale: the ridge gives it the mean)."""
    if not sources:
        raise PredictorError("adapting needs at least one source predictor")
    kernel_lists = [s.kernels for s in shots]
    groups = groups_of([*kernel_lists, *extra_groups])
    sums = np.stack([group_sums(s, kernel_lists, groups) for s in sources])
    e2e = np.asarray([s.latency_ms for s in shots], dtype=np.float64)
    adaptation = fit_adaptation(sums, e2e, groups)
    names = tuple(source_names) if source_names is not None else tuple(s.scenario.key for s in sources)
    return AdaptedPredictor(
        scenario, deducer, tuple(sources), names, adaptation, tuple(shots), tuple(adaptation_loo(sums, e2e, groups))
    )


def distil(
    adapted: AdaptedPredictor,
    networks: Sequence[tuple[str, Sequence[Kernel]]],
    method: str = "rf",
    seed: int = 0,
    search: str = "fast",
) -> ScenarioPredictor:
    """An ordinary ``ScenarioPredictor`` answering as ``adapted`` does: per-kernel-type models
    trained on the adapted latencies of the networks' kernels (the shots' included), its constant
    overhead the sources' weighted ``T``; ``meta["adapted"]`` holds the provenance."""
    pool = [(s.name, s.kernels) for s in adapted.shots] + [(n, tuple(ks)) for n, ks in networks]
    samples = []
    pool = [(name, kernels) for name, kernels in pool if kernels]
    for (name, kernels), latencies in zip(pool, adapted.kernel_latencies([ks for _, ks in pool]), strict=True):
        labelled = tuple(
            dataclasses.replace(k, latency_ms=float(v)) for k, v in zip(kernels, latencies, strict=True) if v > 0
        )
        if labelled:
            e2e = float(sum(k.latency_ms or 0.0 for k in labelled)) + adapted.overhead_ms
            samples.append(Sample(name, labelled, e2e, tuple(kernels)))
    if not samples:
        raise PredictorError("no network to distil the adapted predictor on")
    return train_predictor(
        samples,
        adapted.deducer,
        adapted.scenario,
        method,
        seed=seed,
        search=search,
        # kinds a source leaves in its overhead (the qed phones' element-wise kernels) stay there
        overhead_kinds=tuple(sorted({k for s in adapted.sources for k in s.overhead_kinds})),
        extra_meta={"adapted": adapted.provenance()},
        overhead="constant",
    )


__all__ = [
    "MIN_SHOTS",
    "RIDGE",
    "Adaptation",
    "AdaptedPredictor",
    "Shot",
    "adapt",
    "adaptation_loo",
    "apply_groups",
    "distil",
    "fit_adaptation",
    "fit_groups",
    "group_sums",
    "groups_of",
    "kernel_group",
    "loo_mape",
]
