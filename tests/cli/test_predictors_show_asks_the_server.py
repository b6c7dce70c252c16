"""``latencylab predictors show ID`` prints the predictor the server has (evaluation without its
scatter points, how it was made); another team's predictor is not found, as the API says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cli.live_lab import run_cli
from tests.cli.server_lab import lab
from tests.server import conftest as server_fixtures
from tests.server.predictor_data import ready_predictor

make_device = server_fixtures.make_device
media_in_tmp = server_fixtures.media_in_tmp
__all__ = ["lab", "make_device", "media_in_tmp"]

pytestmark = pytest.mark.django_db(transaction=True)


def test_show_prints_the_servers_predictor(
    lab: dict[str, Any], make_member: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    row = ready_predictor(lab["device"], lab["member"].team)
    row.evaluation = {**row.evaluation, "points": [[1.0, 1.1]]}
    row.save(update_fields=["evaluation"])

    rc, out, err = run_cli(["predictors", "show", str(row.pk), *lab["server"]], capsys)

    assert rc == 0, err
    shown = json.loads(out)
    assert shown["id"] == row.pk and shown["device_name"] == "host-test" and shown["state"] == "ready"
    assert shown["scenario_key"] == row.scenario_key and shown["artifact_sha256"] == row.artifact_sha256
    assert shown["evaluation"] == {"e2e_mape": 0.1, "kernel_mape": {"conv2d": 0.1}, "protocol": "test", "n_test": 67}

    other = make_member()
    rc, out, err = run_cli(["predictors", "show", str(row.pk), "--url", lab["url"], "--token", other.key], capsys)
    assert rc == 2 and out == ""
    assert err.startswith("latencylab: error: HTTP 404")
