"""``latencylab predictors adapt`` asks the server for an adapted predictor: a user's phone that is not
in the lab, measured on a few zoo networks, adapted from the lab's shared qed predictor; a shot it
cannot read is refused before anything is sent."""

from __future__ import annotations

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


def test_adapt_queues_an_adapted_predictor_for_a_new_device(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from server.predictors.models import Predictor
    from server.predictors.qed_import import ensure_qed_device

    source = ready_predictor(ensure_qed_device("s10")[0])
    argv = ["predictors", "adapt", "--new-device", "My Phone", "--soc", "Snapdragon 855", "--gpu", "Adreno 640"]
    shots = ["--shot", "mobilenet_v2=7.5", "--shot", "resnet18=15.2", "--shot", "squeezenet_1_1=4.1"]

    rc, out, err = run_cli([*argv, *shots, *lab["server"]], capsys)

    assert rc == 0, err
    row = Predictor.objects.get(source="adapted")
    assert (row.state, row.method, row.device.identity) == ("queued", "rf", "user:my-phone")
    assert row.params["sources"] == [source.pk]
    assert [s["latency_ms"] for s in row.params["shots"]] == [7.5, 15.2, 4.1]
    assert f"predictor #{row.pk}: adapted rf v1 for 'My Phone' from s10" in out

    rc, out, err = run_cli([*argv, "--shot", "mobilenet_v2", *lab["server"]], capsys)
    assert rc == 2 and "expected MODEL=MS" in err
    rc, out, err = run_cli(["predictors", "adapt", *shots, *lab["server"]], capsys)
    assert rc == 2 and "give --device" in err
    assert Predictor.objects.filter(source="adapted").count() == 1
