"""The developer's question, answered over a range of SLAs: for each candidate model served remotely
over a network profile (and, where given, run on the device itself), the probability of meeting
the SLA, its expected accuracy and its accuracy within the SLA; and the same for the selection
policy that picks per request (CNNSelect, lab or paper reading) and for greedy.

Every number comes from one seeded stream of requests: the same uploads, downloads and execution
times as ``simulate`` draws for the profile, so the table's policy rows are ``simulate``'s points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from devicelab.selection.cnnselect import DEFAULT_SELECT_POLICY, DEFAULT_THRESHOLD_MS, ModelProfile, check_models
from devicelab.selection.network_profiles import PAPER_REQUEST_BYTES, PAPER_RESPONSE_BYTES, NetworkProfile
from devicelab.selection.scenarios import check_profiles, check_sla_targets
from devicelab.selection.simulate import draw_execution_ms, simulate

# The simulation's name of each reading of CNNSelect.
_SIMULATED = {"lab": "cnnselect_lab", "paper": "cnnselect"}


@dataclass(frozen=True)
class OptionAtSla:
    """One way of serving every request at one SLA: a fixed model (remote or on the device) or a policy."""

    option: str  # the model's name, or the policy's
    kind: str  # "remote", "on_device" or "policy"
    sla_ms: float
    p_meet: float  # share of requests whose end to end met the SLA
    expected_accuracy: float  # %: the accuracy a request gets, misses included at their model's accuracy
    accuracy_within_sla: float  # %: a miss counts 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class SlaTable:
    """The answer for one network profile over a range of SLA targets."""

    profile: str
    policy: str
    threshold_ms: float
    requests: int
    seed: int
    request_bytes: int
    response_bytes: int
    sla_targets_ms: tuple[float, ...]
    rows: tuple[OptionAtSla, ...]

    def at(self, option: str, sla_ms: float) -> OptionAtSla:
        """The row of ``option`` at ``sla_ms``."""
        for r in self.rows:
            if r.option == option and r.sla_ms == float(sla_ms):
                return r
        raise KeyError(f"no row ({option}, {sla_ms})")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        d = asdict(self)
        d["sla_targets_ms"] = list(self.sla_targets_ms)
        d["rows"] = [r.as_dict() for r in self.rows]
        return d


def sla_table(
    models: Sequence[ModelProfile],
    *,
    sla_targets_ms: Sequence[float],
    profile: NetworkProfile | str,
    on_device: Sequence[ModelProfile] = (),
    policy: str = DEFAULT_SELECT_POLICY,
    threshold_ms: float = DEFAULT_THRESHOLD_MS,
    request_bytes: int = PAPER_REQUEST_BYTES,
    response_bytes: int = PAPER_RESPONSE_BYTES,
    requests: int = 4000,
    seed: int = 0,
) -> SlaTable:
    """Per SLA target: each remote model's and each on-device option's chance of meeting the SLA,
    expected accuracy and accuracy within the SLA, then the policy's and greedy's (``simulate``).

    ``on_device`` profiles are execution times on the phone or CPU itself, no network (cold start
    included by the caller when the app loads the model per request).
    """
    remote = check_models(models)
    local = check_models(on_device) if len(on_device) else ()
    if policy not in _SIMULATED:
        raise ValueError(f"policy must be one of {', '.join(_SIMULATED)}, got {policy!r}")
    (prof,) = check_profiles([profile])
    slas = check_sla_targets(sla_targets_ms)
    sim = simulate(
        remote,
        sla_targets_ms=slas,
        profiles=[prof],
        threshold_ms=threshold_ms,
        requests=requests,
        seed=seed,
        policies=(_SIMULATED[policy], "greedy"),
        request_bytes=request_bytes,
        response_bytes=response_bytes,
    )
    # The same stream simulate drew for its first profile: the rows of fixed models and of the
    # policies are measured on the same requests.
    gen = np.random.default_rng([seed, 0])
    upload, download = prof.sample_exchange_ms(request_bytes, response_bytes, requests, gen)
    remote_e2e = (upload + download)[:, None] + draw_execution_ms(remote, requests, gen)
    local_e2e = draw_execution_ms(local, requests, np.random.default_rng([seed, 1]))
    rows: list[OptionAtSla] = []
    for sla in slas:
        for j, m in enumerate(remote):
            p = float(np.mean(remote_e2e[:, j] <= sla))
            rows.append(OptionAtSla(m.name, "remote", sla, p, m.accuracy, m.accuracy * p))
        for j, m in enumerate(local):
            p = float(np.mean(local_e2e[:, j] <= sla))
            rows.append(OptionAtSla(m.name, "on_device", sla, p, m.accuracy, m.accuracy * p))
        for name in sim.policies:
            pt = sim.point(name, sla, prof.name)
            rows.append(OptionAtSla(name, "policy", sla, pt.attainment, pt.effective_accuracy, pt.accuracy_within_sla))
    return SlaTable(
        profile=prof.name,
        policy=policy,
        threshold_ms=sim.threshold_ms,
        requests=requests,
        seed=seed,
        request_bytes=request_bytes,
        response_bytes=response_bytes,
        sla_targets_ms=slas,
        rows=tuple(rows),
    )


__all__ = ["OptionAtSla", "SlaTable", "sla_table"]
