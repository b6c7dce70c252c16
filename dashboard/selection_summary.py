"""A stored selection simulation read for its page: per network profile, each policy's series over
the SLA targets, CNNSelect's model usage, the table's rows, and CNNSelect's gain over greedy.

Plain data in (``SelectionSimulation.result``, devicelab's ``SimulationResult.as_dict()``), plain
data out: no database, no request. Every comparison with greedy comes from devicelab's
``compare_policies`` over the stored points, the number the CLI prints too: the paper's "88.5%
more" is a relative improvement in SLA attainment (requests that met their SLA under CNNSelect
over those under greedy, minus one), so it is computed that way per point and pooled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devicelab.selection import NetworkProfile, SimulationResult, compare_policies, shortfalls
from devicelab.selection.simulate import PolicyComparison

POLICY_LABELS = {
    "cnnselect": "CNNSelect (paper)",
    "cnnselect_lab": "CNNSelect (lab)",
    "greedy": "greedy",
    "greedy_budget": "greedy on the budget",
    "fastest": "fastest",
    "oracle": "oracle",
}
# Seed 002, abstract and section 6: "maintaining SLA attainment in 88.5% more cases than a greedy baseline".
PAPER_IMPROVEMENT_PCT = 88.5


def policy_label(policy: str) -> str:
    """How a policy reads on the page."""
    return POLICY_LABELS.get(policy, policy)


@dataclass(frozen=True)
class PolicySeries:
    """One policy's points under one profile, in SLA order."""

    policy: str
    label: str
    sla_ms: tuple[float, ...]
    attainment: tuple[float, ...]  # fractions
    effective_accuracy: tuple[float, ...]  # %
    mean_e2e_ms: tuple[float, ...]
    p25_e2e_ms: tuple[float, ...]
    p75_e2e_ms: tuple[float, ...]
    p99_e2e_ms: tuple[float, ...]

    @property
    def over_sla_pct(self) -> tuple[float, ...]:
        """Figure 12's left axis: the percentage of requests over the SLA."""
        return tuple(100.0 * (1.0 - a) for a in self.attainment)


@dataclass(frozen=True)
class ModelUsage:
    """One model's share of CNNSelect's requests at each SLA target (figure 13(b))."""

    model: str
    index: int  # the model's place among the simulation's candidates (its colour)
    accuracy: float
    mu_ms: float
    share: tuple[float, ...]  # fractions, in SLA order


@dataclass(frozen=True)
class TableCell:
    """One policy at one SLA target, as the table shows it."""

    policy: str
    attainment: float
    effective_accuracy: float


@dataclass(frozen=True)
class TableRow:
    """One SLA target: every policy's attainment and effective accuracy, CNNSelect's relative
    improvement in attainment over greedy (None where greedy met none or either is missing)."""

    sla_ms: float
    cells: tuple[TableCell, ...]
    improvement_pct: float | None


@dataclass(frozen=True)
class ProfileView:
    """Everything a profile's part of the page draws."""

    profile: NetworkProfile
    mean_network_ms: float
    requests: int
    policies: tuple[str, ...]
    series: dict[str, PolicySeries]
    usage: tuple[ModelUsage, ...]  # CNNSelect's, fastest model first; models it never chose left out
    never_chosen: tuple[str, ...]
    rows: tuple[TableRow, ...]
    comparison: PolicyComparison | None  # CNNSelect against greedy, pooled over the profile's points

    @property
    def name(self) -> str:
        """The profile's name."""
        return self.profile.name


@dataclass(frozen=True)
class SimulationView:
    """A stored result read for its page: one view per profile and the overall comparison."""

    result: SimulationResult
    profiles: tuple[ProfileView, ...]
    overall: PolicyComparison | None
    lab: PolicyComparison | None = None  # the lab's reading against greedy, when both ran
    lab_shortfalls: int = 0  # points where the lab's reading fell short of greedy (``shortfalls``)

    def profile(self, name: str) -> ProfileView | None:
        """The view of the profile named ``name``."""
        return next((p for p in self.profiles if p.name == name), None)


def _compares(result: SimulationResult) -> bool:
    return "cnnselect" in result.policies and "greedy" in result.policies


def _series(result: SimulationResult, policy: str, profile: str) -> PolicySeries:
    points = [result.point(policy, t, profile) for t in result.sla_targets_ms]
    return PolicySeries(
        policy=policy,
        label=policy_label(policy),
        sla_ms=result.sla_targets_ms,
        attainment=tuple(p.attainment for p in points),
        effective_accuracy=tuple(p.effective_accuracy for p in points),
        mean_e2e_ms=tuple(p.mean_e2e_ms for p in points),
        p25_e2e_ms=tuple(p.p25_e2e_ms for p in points),
        p75_e2e_ms=tuple(p.p75_e2e_ms for p in points),
        p99_e2e_ms=tuple(p.p99_e2e_ms for p in points),
    )


def _usage(result: SimulationResult, profile: str) -> tuple[tuple[ModelUsage, ...], tuple[str, ...]]:
    if "cnnselect" not in result.policies:
        return (), ()
    points = [result.point("cnnselect", t, profile) for t in result.sla_targets_ms]
    used, never = [], []
    for index, m in enumerate(result.models):
        share = tuple(float(p.usage.get(m.name, 0.0)) for p in points)
        if any(s > 0 for s in share):
            used.append(ModelUsage(m.name, index, m.accuracy, m.mu_ms, share))
        else:
            never.append(m.name)
    used.sort(key=lambda u: (u.mu_ms, -u.accuracy, u.index))
    return tuple(used), tuple(never)


def _rows(result: SimulationResult, profile: str) -> tuple[TableRow, ...]:
    rows = []
    for sla in result.sla_targets_ms:
        cells = []
        for policy in result.policies:
            p = result.point(policy, sla, profile)
            cells.append(TableCell(policy, p.attainment, p.effective_accuracy))
        improvement = (
            compare_policies(result, profiles=[profile], sla_min_ms=sla, sla_max_ms=sla).attainment_improvement_pct
            if _compares(result)
            else None
        )
        rows.append(TableRow(sla, tuple(cells), improvement))
    return tuple(rows)


def profile_view(result: SimulationResult, profile: NetworkProfile) -> ProfileView:
    """One network profile's series, usage, table and comparison."""
    name = profile.name
    first = result.point(result.policies[0], result.sla_targets_ms[0], name)
    usage, never = _usage(result, name)
    return ProfileView(
        profile=profile,
        mean_network_ms=first.mean_network_ms,  # one request stream per profile: the same at every point
        requests=result.requests,
        policies=result.policies,
        series={p: _series(result, p, name) for p in result.policies},
        usage=usage,
        never_chosen=never,
        rows=_rows(result, name),
        comparison=compare_policies(result, profiles=[name]) if _compares(result) else None,
    )


def simulation_view(data: Mapping[str, Any]) -> SimulationView:
    """A stored result (``SimulationResult.as_dict()``) read for its page; ValueError when it is
    not one."""
    result = SimulationResult.from_dict(data)
    lab = "cnnselect_lab" in result.policies and "greedy" in result.policies
    return SimulationView(
        result=result,
        profiles=tuple(profile_view(result, p) for p in result.profiles),
        overall=compare_policies(result) if _compares(result) else None,
        lab=compare_policies(result, "cnnselect_lab", "greedy") if lab else None,
        lab_shortfalls=len(shortfalls(result, "cnnselect_lab", "greedy")) if lab else 0,
    )


__all__ = [
    "PAPER_IMPROVEMENT_PCT",
    "ModelUsage",
    "PolicySeries",
    "ProfileView",
    "SimulationView",
    "TableCell",
    "TableRow",
    "policy_label",
    "profile_view",
    "simulation_view",
]
