"""``devicelab.tenancy.spec`` writes the strategies' names out (so the command line builds its
flags without pyopencl); they are the strategies the sweep runs, in its order."""

from __future__ import annotations

from devicelab.tenancy.gemm_strategies import GEMM_STRATEGIES
from devicelab.tenancy.network_strategies import NETWORK_STRATEGIES
from devicelab.tenancy.spec import DEFAULT_STRATEGIES, STRATEGIES


def test_the_declared_strategies_are_the_ones_the_sweep_runs() -> None:
    assert STRATEGIES == (*GEMM_STRATEGIES, *(s for s in NETWORK_STRATEGIES if s not in GEMM_STRATEGIES))
    assert set(DEFAULT_STRATEGIES) == set(STRATEGIES) - {"space_time_clblast"}
