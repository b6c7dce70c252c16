"""``latencylab trainset build`` asks the server to upload the set's networks as the token's team's
and queue their jobs; run again, it queues nothing it already has; a device that cannot be
profiled is the server's one-line refusal."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.live_lab import run_cli
from tests.cli.server_lab import lab
from tests.server import conftest as server_fixtures

make_device = server_fixtures.make_device
media_in_tmp = server_fixtures.media_in_tmp
__all__ = ["lab", "make_device", "media_in_tmp"]

pytestmark = pytest.mark.django_db(transaction=True)


def test_build_queues_the_sets_jobs_on_the_server(lab: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from server.predictors.qed_import import ensure_qed_device
    from server.profiling.models import ProfilingJob

    argv = ["trainset", "build", "--device", "host-test", "--synthetic", "2", "--zoo", "mobilenet_v2"]
    argv += ["--rounds", "2", "--runs", "3", "--no-probes", *lab["server"]]

    rc, out, err = run_cli(argv, capsys)

    assert rc == 0, err
    assert "6 job(s) submitted, 0 already measured or queued, on device 'host-test'" in out
    jobs = ProfilingJob.objects.filter(device=lab["device"]).select_related("model")
    assert len(jobs) == 6
    assert {j.team for j in jobs} == {lab["member"].team} and {j.state for j in jobs} == {"queued"}
    assert {j.settings["runs"] for j in jobs} == {3}
    assert {j.model.name for j in jobs} == {"synthetic-0-0", "synthetic-0-1", "mobilenet_v2"}

    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, err
    assert "0 job(s) submitted, 6 already measured or queued" in out

    ensure_qed_device("s10")
    rc, out, err = run_cli(["trainset", "build", "--device", "s10", "--synthetic", "1", *lab["server"]], capsys)
    assert rc == 2 and "imported device" in err and "a training set is profiled on cpu, opencl or android" in err
    assert ProfilingJob.objects.count() == 6
