"""``latencylab predictors train`` asks the server for the next version: the predictor is queued
there for the trainer (its message on the trainer's queue), for the token's team; the server's
refusal (too little data, a team flag without ``--inline``) is one line on stderr."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.live_lab import run_cli
from tests.cli.server_lab import lab
from tests.server import conftest as server_fixtures
from tests.server.predictor_data import store_profiles

make_device = server_fixtures.make_device
media_in_tmp = server_fixtures.media_in_tmp
__all__ = ["lab", "make_device", "media_in_tmp"]

pytestmark = pytest.mark.django_db(transaction=True)


def test_train_queues_a_predictor_on_the_server(
    lab: dict[str, Any], make_device: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import redis
    from django.conf import settings

    from server.predictors.models import Predictor
    from server.taskqueue import trainer_queue

    store_profiles(lab["member"].team, lab["device"])
    argv = ["predictors", "train", "--device", "host-test", "--method", "lasso", "--search", "fast"]

    rc, out, err = run_cli([*argv, *lab["server"]], capsys)

    assert rc == 0, err
    row = Predictor.objects.get()
    assert (row.state, row.method, row.team, row.device) == ("queued", "lasso", lab["member"].team, lab["device"])
    assert row.params["search"] == "fast"
    assert f"predictor #{row.pk}: lasso v1 for 'host-test' ({row.scenario_key})" in out
    assert "queued for the trainer" in out
    assert redis.Redis.from_url(settings.CELERY_BROKER_URL).llen(trainer_queue()) == 1

    empty = make_device("cpu", name="empty-test")
    rc, out, err = run_cli(["predictors", "train", "--device", str(empty.pk), *lab["server"]], capsys)
    assert rc == 2 and err.startswith("latencylab: error: HTTP 400")
    rc, out, err = run_cli([*argv, "--team", "vision", *lab["server"]], capsys)
    assert rc == 2 and "--team goes with --inline" in err
    assert Predictor.objects.count() == 1
