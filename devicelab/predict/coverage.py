"""Which kernel types of a training set get a model of their own, and which are covered too thinly.

A per-kernel model learned from the kernels of one or two networks knows those networks, not the
kernel type: a GBDT trained on six networks priced one kernel type 970 % off on the seventh. So
a kernel type seen in fewer than ``min_networks`` training networks gets no model of its own
when a model of its kind, else of its Table 3 feature group, else (a grouped convolution) of the
ordinary convolution (``features.stand_in_types``), can stand in for it (the one
``ScenarioPredictor.resolve`` picks at prediction time; the prediction's warnings say so). A
thin type that nothing can stand in for is *uncovered*: ``train_predictor`` still fits it (the
evaluation's smaller training sets need an answer), and the server refuses to train a predictor
whose full training set leaves any type uncovered (``LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL``),
naming each with its count of networks.

Independently of networks, a type with fewer than ``MIN_OWN_ROWS`` training kernels gets no
model of its own when another type of the same kind has enough (a constant fitted to one 3 ms
kernel would price every kernel of the type like it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from devicelab.predict.errors import PredictorError
from devicelab.predict.features import kind_of, stand_in_types
from devicelab.predict.kernels import Kernel
from devicelab.predict.samples import Sample

# The fewest training networks a kernel type needs for a model of its own: the library's default
# and the server's (``LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL``), so that a predictor trained
# with ``train_predictor``'s defaults is the one the server trains on the same data. With the
# library at 1 and the server at 5 they differed wherever a type was seen in 1-4 networks (a
# cross-validation fold of a qed phone without 3 of its 7 grouped-convolution networks: a model
# of its own in one, a stand-in in the other; the Galaxy S10's grouped 5-fold GBDT MAPE 13.6 %
# against 15.9 %).
MIN_NETWORKS_PER_KERNEL = 5
MIN_OWN_ROWS = 3  # fewer rows than this: the same kind's model predicts the type, if there is one


@dataclass(frozen=True)
class ModelPlan:
    """The kernel types of a training set: their rows and networks, and who models each."""

    rows: dict[str, list[Kernel]]  # type -> its measured kernels with a latency above 0
    networks: dict[str, int]  # type -> training networks that ran it
    own: tuple[str, ...]  # types with a model of their own
    stood_in: dict[str, int]  # type -> its rows; another type's model predicts it
    uncovered: dict[str, int]  # type -> its networks: below the minimum, and nothing can stand in

    def uncovered_text(self) -> str:
        """The uncovered types with their counts, e.g. ``'pooling/nchw' in 2 networks, ...``."""
        return ", ".join(f"{t!r} in {n} network{'s' if n != 1 else ''}" for t, n in sorted(self.uncovered.items()))


def plan_models(samples: Sequence[Sample], min_networks: int = 1) -> ModelPlan:
    """Sort the samples' kernel types into own models, stand-ins and uncovered types."""
    if min_networks < 1:
        raise PredictorError(f"min_networks must be at least 1, got {min_networks}")
    rows: dict[str, list[Kernel]] = {}
    nets: dict[str, set[int]] = {}
    for i, s in enumerate(samples):
        for k in s.measured:
            if k.latency_ms is None:
                raise PredictorError(f"sample {s.name!r}: kernel {k.name!r} has no measured latency")
            if k.latency_ms > 0:  # a kernel the profiler saw do no work teaches nothing about eq. (1)
                rows.setdefault(k.type, []).append(k)
                nets.setdefault(k.type, set()).add(i)
    covered = sorted(t for t in rows if len(nets[t]) >= min_networks)
    own: list[str] = []
    stood_in: dict[str, int] = {}
    for ktype in covered:
        sibling_rows = max(
            (len(rows[t]) for t in covered if t != ktype and kind_of(t) == kind_of(ktype)),
            default=0,
        )
        if len(rows[ktype]) < MIN_OWN_ROWS <= sibling_rows:
            stood_in[ktype] = len(rows[ktype])
        else:
            own.append(ktype)
    uncovered: dict[str, int] = {}
    for ktype in sorted(set(rows) - set(covered)):
        if stand_in_types(ktype, own):
            stood_in[ktype] = len(rows[ktype])
        else:
            uncovered[ktype] = len(nets[ktype])
    networks = {t: len(n) for t, n in sorted(nets.items())}
    return ModelPlan(rows, networks, tuple(own), stood_in, uncovered)


__all__ = ["MIN_NETWORKS_PER_KERNEL", "MIN_OWN_ROWS", "ModelPlan", "plan_models"]
