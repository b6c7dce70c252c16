"""``latencylab predictors train`` passes a phone scenario's delegate, cores and precision on."""

from __future__ import annotations

import argparse
from typing import Any

from latencylab.commands.predictor_cmds import _cores, predictors_train
from tests.server.phone_factories import make_phone


def train_args(device: Any, team: Any, **over: Any) -> argparse.Namespace:
    base = dict(
        device=str(device.pk),
        team=team.name,
        method="lasso",
        threads=1,
        cores=None,
        precision="fp32",
        delegate="",
        seed=0,
        search="fast",
        overhead="constant",
        inline=True,
        wait=False,
        no_table=True,
    )
    return argparse.Namespace(**{**base, **over})


def test_cores_are_ids_or_a_cluster_name() -> None:
    assert _cores("6,7") == [6, 7] and _cores("big") == "big" and _cores(None) is None


def test_a_phone_scenario_reaches_the_service(make_device: Any, make_member: Any, capsys: Any) -> None:
    team = make_member().team
    phone = make_phone(make_device)
    assert predictors_train(train_args(phone, team, delegate="nnapi")) == 2
    assert "no predictor for the nnapi delegate" in capsys.readouterr().err
    # an xnnpack scenario on the big cluster is accepted as a scenario, and refused for want of data
    assert predictors_train(train_args(phone, team, delegate="xnnpack", cores="big", threads=2)) == 2
    err = capsys.readouterr().err
    assert "nnapi" not in err and ("network" in err or "measured" in err), err
