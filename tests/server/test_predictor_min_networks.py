"""Training refuses a kernel type seen in too few networks (``LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL``)
when no other model can stand in for it, naming each such type with its count; at the default the
shared test data still trains, and no model of its own is learned from fewer networks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from devicelab.predict.features import stand_in_types
from tests.server.predictor_data import store_profiles

pytestmark = pytest.mark.django_db


def test_kernel_types_in_too_few_networks_are_refused_by_name_and_count(
    member: Any, make_device: Any, settings: Any
) -> None:
    from server.predictors.models import PredictorState
    from server.predictors.services import request_predictor, run_training

    device = make_device("cpu")
    store_profiles(member.team, device)  # 7 networks

    # At the default minimum (5) the data trains: thin types are priced by a model of their kind
    # or group, and none gets a model of its own from fewer than 5 networks.
    assert settings.LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL == 5
    row = run_training(request_predictor(member.team, device, method="lasso", search="fast").pk)
    assert row is not None and row.artifact is not None
    assert row.state == PredictorState.READY, row.failure_reason
    # ready, but tested on one held-out network: never its device's best (test_predictor_ranking)
    assert row.n_test == row.evaluation["n_test"] == 1 and not row.rankable and "1 test network(s)" in row.rank_reason
    networks = row.meta["kernel_networks"]
    assert row.meta["min_networks"] == 5 and row.meta["uncovered"] == {}
    models = set(row.artifact["models"])
    assert {t for t, n in networks.items() if n < 5} & models == set()
    assert {t for t, n in networks.items() if n < 5} <= set(row.meta["stood_in"])

    # Asked for all seven, types that fewer ran and that nothing of their kind or group covers are named.
    settings.LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL = 7
    messages: list[str] = []
    refused = run_training(request_predictor(member.team, device, method="gbdt").pk, progress=messages.append)
    assert refused is not None and refused.state == PredictorState.FAILED
    reason = refused.failure_reason
    assert reason.startswith(f"training refused: among the 7 networks measured on device {device.name!r}")
    assert "fewer than 7 training networks" in reason and "LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL" in reason
    named = {t: int(n) for t, n in re.findall(r"'([^']+)' in (\d+) networks?", reason)}
    covered = {t for t, n in networks.items() if n >= 7}
    expected = {t: n for t, n in networks.items() if n < 7 and not stand_in_types(t, covered)}
    assert expected and named == expected
    # refused before any evaluation: the gbdt search never ran
    assert not any(m.startswith("evaluating") for m in messages)
