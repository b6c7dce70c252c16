"""Model selection per request: CNNSelect (seed 002, Ogden & Guo, section 5), the network profiles it
budgets with, and the simulation of section 5.2 that compares it with greedy, fastest and an oracle.

Django-free and pure numpy: the server's ``POST /api/select/``, the CLI and the simulation job call
these functions and store what they return (``docs/selection.md``).
"""

from __future__ import annotations

from devicelab.selection.answer import OptionAtSla, SlaTable, sla_table
from devicelab.selection.cnnselect import (
    DEFAULT_SELECT_POLICY,
    DEFAULT_THRESHOLD_MS,
    SELECT_POLICIES,
    ModelProfile,
    Selection,
    dominated,
    select_model,
    time_range,
)
from devicelab.selection.network_profiles import PRESETS, NetworkProfile
from devicelab.selection.scenarios import Scenario, paper_models, paper_scenario
from devicelab.selection.simulate import (
    POLICIES,
    PointResult,
    SimulationResult,
    compare_policies,
    shortfalls,
    simulate,
)

__all__ = [
    "DEFAULT_SELECT_POLICY",
    "DEFAULT_THRESHOLD_MS",
    "POLICIES",
    "SELECT_POLICIES",
    "OptionAtSla",
    "SlaTable",
    "dominated",
    "shortfalls",
    "sla_table",
    "PRESETS",
    "ModelProfile",
    "NetworkProfile",
    "PointResult",
    "Scenario",
    "Selection",
    "SimulationResult",
    "compare_policies",
    "paper_models",
    "paper_scenario",
    "select_model",
    "simulate",
    "time_range",
]
