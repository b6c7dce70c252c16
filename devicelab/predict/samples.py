"""Training and test samples: one network's measured kernels, its end-to-end latency, and the
kernels the deducer predicts for it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from devicelab.predict.kernels import Kernel


@dataclass(frozen=True)
class Sample:
    """One network measured in one scenario."""

    name: str  # the network (the group of grouped cross-validation)
    measured: tuple[Kernel, ...]  # kernels as the runtime ran them, each with ``latency_ms``
    e2e_ms: float  # measured end-to-end latency
    deduced: tuple[Kernel, ...] | None = None  # kernels deduced without running (prediction input)

    @property
    def kernel_sum_ms(self) -> float:
        """Sum of the measured kernel latencies."""
        return float(sum(k.latency_ms or 0.0 for k in self.measured))

    def prediction_input(self) -> tuple[Kernel, ...]:
        """What a predictor gets for this network: the deduced kernels, else the measured ones."""
        return self.deduced if self.deduced is not None else self.measured


def data_hash(samples: Sequence[Sample]) -> str:
    """SHA-256 of the training data (names, kernel types, features, latencies), order included."""
    h = hashlib.sha256()
    for s in samples:
        rows = [[k.type, list(k.raw), k.latency_ms] for k in s.measured]
        h.update(json.dumps([s.name, s.e2e_ms, rows], separators=(",", ":")).encode())
    return h.hexdigest()


__all__ = ["Sample", "data_hash"]
